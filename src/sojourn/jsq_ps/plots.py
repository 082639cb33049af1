"""Figures of the pipeline (matplotlib, Agg backend): one function per figure, each saved in every format.

All functions take the merged datasets (``comparison.nc``, ``simulation.nc``, ``approximation.nc``)
and a path *stem*; :func:`save` writes ``<stem>.<fmt>`` for each requested format.

Cells whose approximated CDF is not a CDF (``fit_invalid`` in ``comparison.nc``, e.g. Gupta's fit at low
load) are never drawn as values (they would stretch a log axis over 40 decades): line plots omit the point
and put a × in the method's colour at the top of the panel, the CDF figure leaves the curve out, and
the titles say so.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from ..core.figures import (METHOD_COLORS, TIME_UNIT, Figure, instance, log_ticks, method_color, save,  # noqa: E402,F401
                            serialized, signed_log_ticks)  # (save: also the reproduction's)
from ..core.io import NETCDF_LOCK, read_netcdf  # noqa: E402
from ..core.stats import cdf_at_left_edges  # noqa: E402
from .compare import fit_validity  # noqa: E402

#: every figure of the study, declared once: the workflow's outputs and report captions come from here
#: (:func:`figures`), and the figure jobs draw exactly these (:func:`all_figures`, reproduction's figures)
FIGURES = (
    Figure("wasserstein_vs_rho", "wasserstein_vs_rho", "wasserstein_vs_rho"),
    Figure("best_method_map", "best_method_map", "best_method_map"),
    Figure("recommended_map", "recommended_map", "recommended_map"),
    Figure("percentile_error_vs_rho", "percentile_error_vs_rho", "percentile_error_vs_rho"),
    Figure("percentile_error_vs_rho_corrected", "percentile_error_vs_rho_corrected", "percentile_error_vs_rho_corrected"),
    Figure("runtime_vs_R", "runtime_vs_R", "runtime_vs_R"),
    Figure("cdf_R~{R}_rho~{rho}", "cdf_cell", "cdf_cell"),
    Figure("mgr_laws", "mgr_laws", "mgr_laws"),
    Figure("reproduction_percentile_errors", "reproduction_percentile_errors", "reproduction_percentile_errors",
           "reproduction"),
    Figure("reproduction_relative_errors", "reproduction_relative_errors", "reproduction_relative_errors",
           "reproduction"),
    Figure("reproduction_best_map", "reproduction_best_map", "reproduction_map", "reproduction"),
)


def figures(settings: dict, job: str = "figures") -> list:
    """The figures (:class:`sojourn.core.figures.FigureFile`) the study's config section ``settings`` produces in
    job ``job``: every figure of :data:`FIGURES`, a CDF figure per ``figures.cdf_cells`` entry, the M/G/R figure
    only with ``mgr.laws``."""
    dec = int(settings["grid"].get("rho_decimals", 2))
    out = []
    for f in FIGURES:
        if f.job != job:
            continue
        if f.draw == "cdf_cell":
            out += [instance(f, R=int(c["R"]), rho=f"{float(c['rho']):.{dec}f}")
                    for c in (settings.get("figures") or {}).get("cdf_cells") or []]
        elif f.draw == "mgr_laws":
            out += [instance(f)] if (settings.get("mgr") or {}).get("laws") else []
        else:
            out.append(instance(f))
    return out


FAITHFUL = ("A", "B", "C", "D", "E", "F")
_FAITHFUL_COLOR = {m: METHOD_COLORS[m] for m in FAITHFUL}
_EXACT_COLOR = METHOD_COLORS["exact"]
#: method T (sojourn.jsq_ps.solve.tail): its own colour and a dash-dot line in every figure that draws methods
TAIL = "T"
_TAIL_COLOR = METHOD_COLORS[TAIL]
TAIL_LABEL = "T (conservative tail chain)"
TIME_UNITS = f"{TIME_UNIT}, 1/μ"
#: how a method's missing value is drawn, and why (``unusable_reason`` of comparison.nc): a line's gap without a
#: mark is a load with no data (nothing simulated there)
STATUS_MARKS = {"invalid": ("x", "invalid fit (not a CDF)"),
                "not_run": ("o", "not run (over budget / truncation cap)")}
INVALID_NOTE = "×: invalid fit (not a CDF) · ○: not run (over budget) · gap without mark: no data"


class Series:
    """One drawn line: a method, or a group of corrected methods whose results are identical (A*–F* reduce
    to two distinct chains, reference §8.3), drawn once under one label."""

    def __init__(self, members, color, style, lw=1.2, label=None):
        self.members, self.color, self.style, self.lw = list(members), color, style, lw
        self.method = self.members[0]
        self.label = label or " = ".join(self.members)


def tail_series() -> Series:
    """T's line: the same colour, style and label in every figure."""
    return Series([TAIL], _TAIL_COLOR, "-.", lw=1.8, label=TAIL_LABEL)


def series(cmp: xr.Dataset, family: str) -> list[Series]:
    """The lines of a family: ``faithful`` → A–F one each; ``corrected`` → A*–F* grouped by identical
    approximated percentiles over the whole grid, then ``exact`` and ``T`` (:func:`tail_series`)."""
    present = cmp["approximation"].values.tolist()
    if family == "faithful":
        return [Series([m], _FAITHFUL_COLOR[m], "-") for m in FAITHFUL if m in present]
    key = cmp["approx_percentile"] if "approx_percentile" in cmp else None
    groups: list[list[str]] = []
    for m in (x for x in present if x.endswith("*")):
        for g in groups:
            if key is not None and np.array_equal(key.sel(approximation=g[0]).values, key.sel(approximation=m).values,
                                                  equal_nan=True):
                g.append(m)
                break
        else:
            groups.append([m])
    out = [Series(g, method_color(g[0]), "--") for g in groups]
    if "exact" in present:
        out.append(Series(["exact"], _EXACT_COLOR, "-", lw=2.0))
    if TAIL in present:
        out.append(tail_series())
    return out


def _usable(c: xr.Dataset) -> xr.DataArray:
    """(R, rho, approximation) True where a method's values may be drawn: the comparison's ``usable`` if it
    has one (any service), else not flagged by its ``fit_invalid`` bit mask, else everywhere."""
    if "usable" in c:
        u = c["usable"] != 0
        return u.all("service") if "service" in u.dims else u
    if "fit_invalid" in c:
        return c["fit_invalid"] == 0
    return xr.ones_like(c["approximation"], dtype=bool) & xr.ones_like(c["rho"], dtype=bool) \
        & xr.ones_like(c["R"], dtype=bool)


def _unusable(c: xr.Dataset, R, m) -> np.ndarray:
    """Over ρ at R: True where method ``m``'s values must not be drawn (see :func:`_usable`)."""
    return ~_usable(c).sel({"R": R, "approximation": m}).transpose("rho").values


def _status(c: xr.Dataset, R, m) -> dict:
    """Over ρ at R, why method ``m`` has no value: {"not_run": mask, "invalid": mask} (``unusable_reason`` of the
    comparison: not computed = not run, e.g. exact over its budget; otherwise an invalid fit)."""
    from .solve.guards import OVER_BUDGET, TRUNCATION_NOT_REACHED

    bad = _unusable(c, R, m)
    not_run = np.zeros_like(bad)
    if "unusable_reason" in c:  # compare.NOT_COMPUTED: no CDF at all
        not_run |= (c["unusable_reason"].sel({"R": R, "approximation": m}).transpose("rho").values.astype(int) & 1) != 0
    if "validity_reason" in c:  # the approximation's own flags (approximation.nc; all_figures adds them)
        v = c["validity_reason"].sel({"R": R, "approximation": m}).transpose("rho").values.astype(int)
        not_run |= (v & (OVER_BUDGET | TRUNCATION_NOT_REACHED)) != 0
    not_run &= bad
    return {"not_run": not_run, "invalid": bad & ~not_run}


def _mark_status(ax, x, status: dict, color, row=0) -> set:
    """The marks of :data:`STATUS_MARKS` along the top edge of ``ax`` (axes coordinates: the y limits do not
    move), one row per method (``row``: its place in the legend); returns the kinds drawn."""
    drawn = set()
    y = 0.965 - 0.055 * row
    for kind, mask in status.items():
        if not np.any(mask):
            continue
        marker = STATUS_MARKS[kind][0]
        style = dict(mfc="none", mew=1.0, ms=3.5) if marker == "o" else dict(mew=1.3, ms=4.5)
        ax.plot(np.asarray(x)[mask], np.full(int(np.sum(mask)), y), marker, color=color, ls="none",
                transform=ax.get_xaxis_transform(), clip_on=False, **style)
        drawn.add(kind)
    return drawn


SHORT_RUN_LABEL = "simulation too short to trust (run-length guard)"


def _short_runs(c: xr.Dataset, R=None) -> np.ndarray | None:
    """Where the simulation was judged too short to trust (``sim_run_valid`` = 0 of a comparison that carries the
    run-length guard's verdict): over ρ at ``R``, or over (R, ρ); None without the verdict or without such a cell."""
    if "sim_run_valid" not in c:
        return None
    v = c["sim_run_valid"]
    v = (v.sel(R=R).transpose("rho") if R is not None else v.transpose("R", "rho")).values == 0
    return v if v.any() else None


def _shade_short_runs(ax, rho, short) -> bool:
    """A grey band over the loads whose simulation is too short to trust (its values are drawn but judge nothing)."""
    if short is None or not short.any():
        return False
    half = np.diff(rho).min() / 2 if len(rho) > 1 else 0.01
    for x in np.asarray(rho)[short]:
        ax.axvspan(x - half, x + half, color="0.75", alpha=0.5, lw=0, zorder=0)
    return True


def _status_handles(kinds) -> tuple[list, list]:
    """Legend entries (grey) explaining the marks of ``kinds``."""
    from matplotlib.lines import Line2D

    from matplotlib.patches import Patch

    out = [(Line2D([], [], ls="none", marker=STATUS_MARKS[k][0], color="0.3", mfc="none" if k == "not_run" else "0.3",
                   ms=5), STATUS_MARKS[k][1]) for k in ("invalid", "not_run") if k in kinds]
    if "short" in kinds:
        out.append((Patch(color="0.75", alpha=0.5), SHORT_RUN_LABEL))
    return [h for h, _ in out], [lab for _, lab in out]


def _grid(n, ncols=5, w=3.2, h=2.6, **kw):
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), squeeze=False, **kw)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)


def _legend_entries(axes) -> tuple[list, list]:
    """(handles, labels) of every panel of ``axes``, each label once, in the order first seen."""
    handles, labels = [], []
    for ax in np.asarray(axes).flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    return handles, labels


def _log_axis(ax):
    """Log y with plain labels (0.2, 0.5, 1, 2 …) instead of 2×10⁻¹, readable on ranges under a decade."""
    from matplotlib import ticker

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())


def _legend_below(fig, axes, ncol=None):
    handles, labels = [], []
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    fig.legend(handles, labels, loc="upper center", ncol=ncol or min(len(labels), 6), frameon=False,
               bbox_to_anchor=(0.5, 0.0))


def wasserstein_vs_rho(cmp: xr.Dataset, stem, service="exponential", **kw):
    """Mean Wasserstein distance (95 % CI band) vs ρ, one panel per R (five per row): first the paper's A–F,
    then the corrected chains, ``exact`` and ``T``; y shared (log) within each of the two blocks. Missing values
    are marked along the top of a panel by why (:data:`STATUS_MARKS`)."""
    c = cmp.sel(service=service)
    Rv = c["R"].values
    blocks = [("paper-faithful A–F", series(cmp, "faithful")), ("corrected A*–F*, exact, T", series(cmp, "corrected"))]
    blocks = [b for b in blocks if b[1]]
    ncols = min(5, len(Rv))
    per = math.ceil(len(Rv) / ncols)
    fig = plt.figure(figsize=(max(3.0 * ncols + 0.6, 9.0), 2.35 * per * len(blocks) + 1.0))
    sub = fig.subfigures(len(blocks), 1, squeeze=False)[:, 0]
    rho = c["rho"].values
    for sf, (title, lines) in zip(sub, blocks):
        axes = sf.subplots(per, ncols, squeeze=False, sharex=True, sharey=True)
        H = fig.get_figheight() / len(blocks)  # inches per block: 0.6 for its legend, 0.5 for the x labels
        sf.subplots_adjust(top=1.0 - 0.75 / H, bottom=0.5 / H, left=0.07, right=0.99,
                           hspace=0.35)
        for ax in axes.flat[len(Rv):]:
            ax.set_visible(False)
        kinds = set()
        for ax, R in zip(axes.flat, Rv):
            if _shade_short_runs(ax, rho, _short_runs(c, R)):
                kinds.add("short")
            for k, sr in enumerate(lines):
                d = c.sel({"R": R, "approximation": sr.method})
                st = _status(c, R, sr.method)
                kinds |= _mark_status(ax, rho, st, sr.color, k)
                bad = st["not_run"] | st["invalid"]
                y = np.where(bad, np.nan, d["wasserstein_mean"].values)
                if not np.isfinite(y).any():
                    continue
                ax.plot(rho, y, sr.style, color=sr.color, lw=sr.lw, label=sr.label)
                ax.fill_between(rho, np.where(bad, np.nan, d["wasserstein_ci_low"].values),
                                np.where(bad, np.nan, d["wasserstein_ci_high"].values), color=sr.color, alpha=0.15, lw=0)
            ax.set_yscale("log")
            ax.grid(alpha=0.3)
            ax.set_title(f"R = {R}", fontsize=9, loc="left")
        log_ticks(axes.flat[0].yaxis)
        for ax in axes[:, 0]:
            ax.set_ylabel(f"W ({TIME_UNIT})", fontsize=9)
        for ax in axes[-1, :]:
            ax.set_xlabel("load ρ", fontsize=9)
        h, lab = _legend_entries(axes)
        hs, ls = _status_handles(kinds)
        sf.legend(h + hs, lab + ls, loc="upper left", bbox_to_anchor=(0.0, 1.0), ncol=min(len(lab + ls), 8),
                  frameon=False, fontsize=8, handlelength=2.2, columnspacing=1.2, title=title, alignment="left",
                  title_fontproperties={"weight": "bold", "size": 10})
    fig.suptitle(f"Wasserstein distance W between each method's sojourn-time CDF and the simulation (lower = closer)\n"
                 f"{service} service; mean and 95% CI over replications", y=1.0, va="bottom", fontsize=10)
    return save(fig, stem, **kw)


def _category_map(ax, labels2d, names, colors, rho, Rv, title, hatch_mask=None, pale_mask=None, letters=None):
    """A categorical (R × ρ) map: cell colour = ``labels2d`` (strings in ``names``, coloured ``colors``), white =
    none; ``pale_mask`` cells in a pale shade of their colour (weaker evidence: a tie, too few tail customers),
    ``hatch_mask`` cells hatched; ``letters``: write each cell's short label (small grids)."""
    from matplotlib.colors import to_rgb

    idx = {m: i for i, m in enumerate(names)}
    rgb = np.ones(labels2d.shape + (3,))
    for (i, j), v in np.ndenumerate(labels2d):
        if v in idx:
            c = np.array(to_rgb(colors[idx[v]]))
            rgb[i, j] = 0.45 * c + 0.55 if pale_mask is not None and pale_mask[i, j] else c
    ax.imshow(rgb, aspect="auto", origin="lower", interpolation="nearest")
    if hatch_mask is not None and hatch_mask.any():
        ii, jj = np.nonzero(hatch_mask)
        for i, j in zip(ii, jj):
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="////", lw=0, color="0.3"))
    if letters:
        for (i, j), v in np.ndenumerate(labels2d):
            if v:
                ax.text(j, i, v, ha="center", va="center", fontsize=7, color="k")
    step = max(1, len(rho) // 12)
    ax.set_xticks(range(0, len(rho), step), [f"{r:.2f}" for r in rho[::step]], fontsize=8)
    ax.set_yticks(range(len(Rv)), [str(r) for r in Rv], fontsize=8)
    ax.set_xlabel("load ρ")
    ax.set_ylabel("servers R")
    ax.set_title(title, fontsize=10, loc="left")


def _map_legend(fig, names, colors, extra=(), ncol=None, **kw):
    """One legend for a map: a patch per method (its short name), then ``extra`` (handle, text) pairs."""
    from matplotlib.patches import Patch

    handles = [Patch(color=c, label=n) for n, c in zip(names, colors)] + [h for h, _ in extra]
    labels = list(names) + [t for _, t in extra]
    return fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), frameon=False, fontsize=8,
                      ncol=ncol or min(len(labels), 7), **kw)


def _method_palette(names):
    """Colours of methods in maps: every method its colour of :data:`sojourn.core.figures.METHOD_COLORS`."""
    return [method_color(m) for m in names]


def _groups(cmp: xr.Dataset) -> dict:
    """method → its group's short name, the first member (B* → A* where A* = B* = D* = E*, see :func:`series`),
    and the groups of more than one method as {short name: "A* = B* = D* = E*"}."""
    out, joined = {}, {}
    for fam in ("faithful", "corrected"):
        for sr in series(cmp, fam):
            for m in sr.members:
                out[m] = sr.method
            if len(sr.members) > 1:
                joined[sr.method] = sr.label
    return out, joined


def best_method_map(cmp: xr.Dataset, stem, service="exponential", **kw):
    """Best method by mean Wasserstein distance (exact excluded) over (R, ρ), one short name per cell; pale = a
    tie: another method (not identical to the best) has a 95 % CI overlapping the best one's."""
    from matplotlib.patches import Patch

    c = cmp.sel(service=service)
    group, joined = _groups(cmp)
    best = np.vectorize(lambda m: group.get(m, m), otypes=[str])(c["best_method"].values.astype(str))
    order = [group.get(m, m) for m in cmp["approximation"].values.tolist() if m != "exact"]
    names = [g for i, g in enumerate(order) if g not in order[:i] and (best == g).any()]
    tied = c["tied_with_best"].transpose("R", "rho", "approximation").values != 0
    members = np.array([group.get(m, m) for m in c["approximation"].values.tolist()])
    ties = (tied & (members[None, None, :] != best[..., None])).any(-1)
    rho, Rv = c["rho"].values, c["R"].values
    fig, ax = plt.subplots(figsize=(max(6.5, 0.075 * len(rho) + 3), 0.36 * len(Rv) + 1.6))
    colors = _method_palette(names)
    short = _short_runs(c)
    _category_map(ax, best, names, colors, rho, Rv, f"Which method is closest to the simulation?\n(smallest mean "
                  f"Wasserstein distance, exact excluded; {service} service)", pale_mask=ties,
                  letters=best.size <= 150, hatch_mask=short)
    legend_names = [f"{n} = {joined[n].split(' = ', 1)[1]}" if n in joined else
                    (TAIL_LABEL if n == TAIL else n) for n in names]
    extra = [(Patch(facecolor="0.8", edgecolor="0.5"), "pale: a tie (another method's 95% CI overlaps)")]
    if short is not None:
        extra.append((Patch(facecolor="w", edgecolor="0.3", hatch="////"), f"hatched: {SHORT_RUN_LABEL}"))
    if ((best == "") | (best == "nan")).any():
        extra.append((Patch(facecolor="w", edgecolor="0.5"), "white: no valid method / no data"))
    fig.tight_layout()
    _map_legend(fig, legend_names, colors, extra, ncol=4)
    return save(fig, stem, **kw)


STATUS_NOTE = "hatched: no method is both valid and non-optimistic there: simulate"


def recommended_map(cmp: xr.Dataset, stem, service="exponential", **kw):
    """The headline: per percentile, the recommended method over (R, ρ) — exact where it ran, else T where the
    comparison found it never below exact (``tail_preferred``), else the most accurate method that does not
    underestimate the percentile beyond its CI."""
    from matplotlib.patches import Patch

    c = cmp.sel(service=service)
    P, rho, Rv = c["percentile"].values, c["rho"].values, c["R"].values
    rec = c["recommended"].transpose("R", "rho", "percentile").values.astype(str)
    names = [m for m in cmp["approximation"].values.tolist() if (rec == m).any()]
    colors = _method_palette(names)
    none = np.isin(rec, ["", "simulate"])
    few = (c["few_tail_customers"].transpose("R", "rho", "percentile").values != 0) if "few_tail_customers" in c \
        else np.zeros(rec.shape, bool)
    short = _short_runs(c)
    short = np.zeros(rec.shape[:2], bool) if short is None else short
    ncols = 2 if len(P) > 1 else 1
    nrows = math.ceil(len(P) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(ncols * max(6.0, 0.06 * len(rho) + 3.0),
                                                    nrows * (0.3 * len(Rv) + 1.5)), squeeze=False)
    for k, p in enumerate(P):
        _category_map(axes.flat[k], np.where(none[..., k], "", rec[..., k]), names, colors, rho, Rv,
                      f"{p:g}th percentile", hatch_mask=(none[..., k] & ~few[..., k]) | short, pale_mask=few[..., k],
                      letters=rec[..., k].size <= 150)
    for ax in axes.flat[len(P):]:
        ax.set_visible(False)
    fig.tight_layout()
    extra = [(Patch(facecolor="0.85", edgecolor="0.5"), "pale: the simulation saw < 100 customers per replication "
              "beyond the percentile (not checked)")]
    if (none & ~few).any():
        extra.append((Patch(facecolor="w", edgecolor="0.3", hatch="////"), "hatched: no method valid and not "
                      "optimistic: simulate" + (" (or the " + SHORT_RUN_LABEL + ")" if short.any() else "")))
    _map_legend(fig, [TAIL_LABEL if n == TAIL else n for n in names], colors, extra, ncol=3)
    tail = (f", else T where it never fell below exact ({cmp.attrs.get('tail_checked_points', 0)} points checked)"
            if cmp.attrs.get("tail_preferred") else "")
    fig.suptitle(f"Which method to use for each percentile ({service} service): exact where it runs within budget{tail}, "
                 "else the most accurate method that does not underestimate the percentile", fontsize=10, y=1.0,
                 va="bottom")
    return save(fig, stem, **kw)


REL_CLIP = 100.0  # % : relative percentile errors beyond ± this are drawn at the edge (▲/▼)


def _error_limit(c, lines) -> float:
    """y half-range (%) of a percentile-error figure: 1.2 × the 95th percentile of |error| over its lines'
    usable values, between 20 % and :data:`REL_CLIP` (±5 % stays readable when all lines are within ±20 %)."""
    ms = [sr.method for sr in lines]
    d = 100 * c["relative_percentile_error_mean"].sel(approximation=ms).where(_usable(c).sel(approximation=ms))
    v = np.abs(d.values[np.isfinite(d.values)])
    return float(np.clip(np.percentile(v, 95) * 1.2, 20.0, REL_CLIP)) if v.size else REL_CLIP


def _shown_R(Rv, most=5) -> np.ndarray:
    """At most ``most`` server counts, evenly spread from the first to the last (all of them if few)."""
    if len(Rv) <= most:
        return np.asarray(Rv)
    return np.asarray(Rv)[np.unique(np.round(np.linspace(0, len(Rv) - 1, most)).astype(int))]


def _percentile_error_figure(cmp, stem, lines, what, service, **kw):
    c = cmp.sel(service=service)
    P, rho = c["percentile"].values, c["rho"].values
    Rv = _shown_R(c["R"].values)
    clip = _error_limit(c, lines)
    fig, axes = plt.subplots(len(Rv), len(P), figsize=(3.0 * len(P) + 0.8, 1.9 * len(Rv) + 0.8), squeeze=False,
                             sharex=True, sharey=True)
    kinds, beyond = set(), False
    for a, R in enumerate(Rv):
        for b, p in enumerate(P):
            ax = axes[a, b]
            ax.axhspan(-clip * 1.08, 0, color="tab:red", alpha=0.06, lw=0)
            ax.axhline(0, color="k", lw=0.6)
            if _shade_short_runs(ax, rho, _short_runs(c, R)):
                kinds.add("short")
            for k, sr in enumerate(lines):
                d = c.sel({"R": R, "approximation": sr.method, "percentile": p})
                st = _status(c, R, sr.method)
                kinds |= _mark_status(ax, rho, st, sr.color, k)
                y = np.where(st["not_run"] | st["invalid"], np.nan, 100 * d["relative_percentile_error_mean"].values)
                if not np.isfinite(y).any():
                    continue
                hi = 100 * d["relative_percentile_error_ci_high"].values
                inside = np.where(np.abs(y) <= clip, y, np.nan)  # the line breaks where it leaves the panel
                ax.plot(rho, inside, sr.style, color=sr.color, lw=sr.lw * 0.9, label=sr.label)
                opt = np.isfinite(inside) & (hi < 0)  # optimistic beyond the CI: filled
                ax.plot(rho[opt], inside[opt], "o", color=sr.color, ms=2.2, ls="none")
                for sign, mk in ((1, "^"), (-1, "v")):
                    out = sign * y > clip
                    beyond |= bool(out.any())
                    ax.plot(rho[out], np.full(out.sum(), sign * clip * 1.04), mk, color=sr.color, ms=3, ls="none")
            ax.set_ylim(-clip * 1.08, clip * 1.08)
            ax.grid(alpha=0.3)
            if a == 0:
                ax.set_title(f"{p:g}th percentile", fontsize=10)
            if b == 0:
                ax.set_ylabel(f"R = {R}\nerror (%)")
            if a == len(Rv) - 1:
                ax.set_xlabel("load ρ")
    fig.tight_layout()
    from matplotlib.lines import Line2D

    h, lab = _legend_entries(axes)
    hs, ls = _status_handles(kinds)
    more = [(Line2D([], [], ls="none", marker="o", color="0.3", ms=3), "optimistic beyond the 95% CI")]
    if beyond:
        more.append((Line2D([], [], ls="none", marker="^", color="0.3", ms=4), f"beyond ±{clip:.0f}% (off the panel)"))
    fig.legend(h + hs + [m[0] for m in more], lab + ls + [m[1] for m in more], loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=min(5, len(lab) + len(ls) + len(more)), frameon=False, fontsize=9)
    shown = "" if len(Rv) == cmp.sizes["R"] else f"; R = {', '.join(map(str, Rv))} of {cmp.sizes['R']} (all in comparison.nc)"
    fig.suptitle(f"Relative percentile error (approx − sim)/sim of the {what}: below 0 (red) = optimistic, "
                 f"underestimates the tail\n({service} service, mean over replications{shown})", y=1.0, va="bottom",
                 fontsize=10)
    return save(fig, stem, **kw)


def percentile_error_vs_rho(cmp: xr.Dataset, stem, service="exponential", **kw):
    """Relative percentile error of the paper's A–F: rows = R, columns = percentiles."""
    return _percentile_error_figure(cmp, stem, series(cmp, "faithful"), "paper-faithful methods A–F", service, **kw)


def percentile_error_vs_rho_corrected(cmp: xr.Dataset, stem, service="exponential", **kw):
    """Relative percentile error of the corrected chains, ``exact`` and ``T``: rows = R, columns = percentiles."""
    return _percentile_error_figure(cmp, stem, series(cmp, "corrected"), "corrected methods, exact and T", service,
                                    **kw)


def runtime_vs_R(cmp: xr.Dataset, stem, **kw):
    """Run time per cell vs R per family (faithful A–F, corrected A*–F*, exact, T): median over methods and ρ,
    band = min–max."""
    rt = cmp["run_time"]
    present = cmp["approximation"].values.tolist()
    fams = [("paper-faithful A–F", [m for m in FAITHFUL if m in present], "tab:blue"),
            ("corrected A*–F*", [m for m in present if m.endswith("*")], "#4d4d4d"),
            ("exact", [m for m in present if m == "exact"], _EXACT_COLOR),
            (TAIL_LABEL, [m for m in present if m == TAIL], _TAIL_COLOR)]
    fig, ax = plt.subplots(figsize=(6, 4))
    Rv = cmp["R"].values
    for label, ms, color in fams:
        if not ms:
            continue
        d = rt.sel({"approximation": ms})
        dims = [x for x in d.dims if x != "R"]
        med = d.median(dims).values
        if not np.isfinite(med).any():
            continue
        ax.plot(Rv, med, "-", color=color, marker="o", ms=3, label=label)
        ax.fill_between(Rv, d.min(dims).values, d.max(dims).values, color=color, alpha=0.15, lw=0)
    ax.set_yscale("log")
    log_ticks(ax.yaxis)
    ax.set_xlabel("servers R")
    ax.set_ylabel("run time per cell (s, wall clock)")
    ax.set_title("Run time of one (R, ρ) cell per method family: the paper's A–F are ~10× faster than the\n"
                 "corrected chains, exact and T (median over methods and ρ; band = min–max)", fontsize=9)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    return save(fig, stem, **kw)


def cdf_cell(sim: xr.Dataset, approx: xr.Dataset, R, rho, stem, service="exponential", cmp=None, **kw):
    """Simulated (pooled, with the replication range) vs approximated CDFs of one cell: the body (linear, up to
    the simulated 99th percentile) and the tail (log, up to the 99.999th).

    Drawn: ``exact``, ``T`` and each distinct corrected chain, plus the three paper methods closest to the
    simulation by Wasserstein distance (from ``cmp`` if given, else all six); methods whose "CDF" is not
    a CDF are left out and named. ``sim``/``approx`` may be lazily opened files: only this cell is read.
    """
    s = sim[["count", "overflow"]].sel(service=service, R=R).sel(rho=rho, method="nearest")
    var = "cdf" if "cdf" in approx else "sf"
    a = approx[[var]].sel(R=R).sel(rho=rho, method="nearest")
    t = sim["t"].values
    count = s["count"].values.astype(float)
    overflow = s["overflow"].values.astype(float)
    Fa = a[var].transpose("approximation", "t").values
    Fa = Fa.astype(float) if var == "cdf" else 1.0 - Fa.astype(np.float64)
    Fr = cdf_at_left_edges(count, overflow)
    Fp = cdf_at_left_edges(count.sum(0), float(overflow.sum()))
    methods = approx["approximation"].values.tolist()
    flags, _ = fit_validity(Fa)
    ran = {m: bool(np.isfinite(F).any()) for m, F in zip(methods, Fa)}  # NaN throughout: not run at this cell
    ok = {m: ran[m] and not f for m, f in zip(methods, flags)}
    omitted = [m for m in methods if ran[m] and not ok[m]]
    faithful = [m for m in FAITHFUL if m in methods and ok[m]]
    if cmp is not None and faithful:
        w = cmp["wasserstein_mean"].sel(service=service, R=R).sel(rho=float(rho), method="nearest")
        faithful = sorted(faithful, key=lambda m: float(w.sel(approximation=m)))[:3]
    lines = [Series([m], _FAITHFUL_COLOR[m], "-") for m in faithful]
    chains: list[list[str]] = []
    for m in (x for x in methods if x.endswith("*") and ok[x]):
        i = methods.index(m)
        for g in chains:
            if np.array_equal(Fa[methods.index(g[0])], Fa[i], equal_nan=True):
                g.append(m)
                break
        else:
            chains.append([m])
    lines += [Series(g, method_color(g[0]), "--") for g in chains]
    if "exact" in methods and ok["exact"]:
        lines.append(Series(["exact"], _EXACT_COLOR, "-", lw=2.0))
    if TAIL in methods and ok[TAIL]:
        lines.append(tail_series())

    def q(p):  # first grid t with pooled F > p, else the last
        hit = np.nonzero(Fp > p)[0] if np.isfinite(Fp).any() else []
        return float(t[hit[0]]) if len(hit) else float(t[-1])

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, logy, xmax in ((ax1, False, max(1.15 * q(0.99), 5 * float(t[1]))),
                           (ax2, True, max(1.1 * q(0.99999), 5 * float(t[1])))):
        n = min(len(t), int(np.searchsorted(t, xmax, side="right")) + 1)  # only the visible part is drawn
        lo_r, hi_r = np.nanmin(Fr, 0)[:n], np.nanmax(Fr, 0)[:n]
        band = (lo_r, hi_r) if not logy else (1 - hi_r, 1 - lo_r)
        ax.fill_between(t[:n], band[0], band[1], color="0.7", alpha=0.6, lw=0, label="simulation (replication range)")
        ax.plot(t[:n], (Fp if not logy else 1 - Fp)[:n], color="k", lw=1.6, label="simulation (pooled)")
        for sr in lines:
            F = Fa[methods.index(sr.method)][:n]
            ax.plot(t[:n], F if not logy else 1 - F, sr.style, color=sr.color, lw=sr.lw, label=sr.label)
        ax.set_xlim(0, xmax)
        ax.set_xlabel(f"sojourn time t ({TIME_UNITS})", fontsize=9)
        ax.grid(alpha=0.3)
    ax1.set_ylim(-0.02, 1.02)
    ax1.set_ylabel("F(t) = P(S < t)")
    ax1.set_title("body (up to the simulated 99th percentile)", fontsize=9)
    ax2.set_yscale("log")
    ax2.set_ylim(1e-6, 1.0)
    ax2.set_ylabel("1 − F(t)")
    ax2.set_title("tail (up to the simulated 99.999th percentile)", fontsize=9)
    fig.tight_layout()
    _legend_below(fig, [ax1, ax2], ncol=4)
    shown = [m for sr in lines for m in sr.members]
    hidden = [m for m in methods if ok[m] and m not in shown]
    note = ""
    not_run = [m for m in methods if not ran[m]]
    if not_run:
        note += f"\nnot run here (over budget / truncation cap): {', '.join(not_run)}"
    if omitted:
        note += f"\nnot drawn, invalid fit (not a CDF) here: {', '.join(omitted)}"
    if hidden:
        note += f"\nnot drawn (farther from the simulation by W): {', '.join(hidden)}"
    fig.suptitle(f"Sojourn-time CDF, R = {R}, ρ = {float(rho):.2f} ({service} service){note}", fontsize=10,
                 y=1.0, va="bottom")
    return save(fig, stem, **kw)


def mgr_laws(cmp: xr.Dataset, stem, **kw):
    """M/G/R: Wasserstein distance of each law's simulation to the exponential simulation (solid) and to the best
    exponential approximation (dashed), vs ρ per R; colour = law."""
    from matplotlib.lines import Line2D

    services = [s for s in cmp["service"].values.tolist() if s != "exponential"]
    # only the R the M/G/R laws ran at (they cover a sub-grid): no empty panels
    have = np.isfinite(cmp["wasserstein_vs_exponential_sim"].sel(service=services).values).any(axis=(0, 2))
    Rv = cmp["R"].values[have] if have.any() else cmp["R"].values
    law_rows = "law_relative_error_mean" in cmp and cmp.sizes.get("law_method", 0) > 0
    if law_rows:  # a second row: the law methods' percentile error (and the exponential model's), per R
        fig, grid = plt.subplots(2, len(Rv), figsize=(3.2 * len(Rv), 2 * 2.6), squeeze=False, sharex=True)
        axes, err_axes = list(grid[0]), list(grid[1])
        for ax in axes[1:]:
            ax.sharey(axes[0])
    else:
        fig, axes = _grid(len(Rv), sharex=True, sharey=True)
    cmap = plt.get_cmap("tab10")
    rho = cmp["rho"].values
    cand = [m for m in cmp["approximation"].values.tolist() if m != "exact"]
    for ax, R in zip(axes, Rv):
        for k, svc in enumerate(services):
            d = cmp.sel(service=svc, R=R)
            y1 = d["wasserstein_vs_exponential_sim"].values
            w = d["wasserstein_mean"]
            if "usable" in d:
                w = w.where(d["usable"] != 0)  # an invalid fit is never "the best approximation"
            elif "fit_invalid" in d:
                w = w.where(d["fit_invalid"] == 0)
            y2 = w.sel({"approximation": cand}).min("approximation", skipna=True).values
            ok1, ok2 = np.isfinite(y1), np.isfinite(y2)  # the laws' sub-grid: join its points, skip the gaps
            if ok1.any():
                ax.plot(rho[ok1], y1[ok1], "-", color=cmap(k), marker=".", ms=3)
            if ok2.any():
                ax.plot(rho[ok2], y2[ok2], "--", color=cmap(k), lw=1)
        ax.set_title(f"R = {R}", fontsize=10, loc="left")
        ax.set_xlabel("load ρ")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"Wasserstein distance W\n({TIME_UNIT})")
    log_ticks(axes[0].yaxis)
    extra_handles, extra_labels = ([], []) if not law_rows else _law_method_row(err_axes, cmp, services, Rv, cmap)
    fig.tight_layout()
    handles = [Line2D([], [], color=cmap(k), lw=2) for k in range(len(services))]
    handles += [Line2D([], [], color="0.3", ls="-", marker="."), Line2D([], [], color="0.3", ls="--")]
    labels = services + ["to the M/M/R simulation (same mean)", "to the best exponential approximation"]
    handles, labels = handles + extra_handles, labels + extra_labels
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), len(services) + 2, 5), frameon=False,
               bbox_to_anchor=(0.5, 0.0), fontsize=9)
    fig.suptitle("How far each service law's sojourn time is from the exponential case (same mean service time): "
                 "the further, the less an M/M/R method tells about it", y=1.0, va="bottom", fontsize=10)
    return save(fig, stem, **kw)


def _law_method_row(axes, cmp: xr.Dataset, services, Rv, cmap):
    """The M/G/R figure's second row: per R, the relative error of the highest percentile the comparison has at
    99.99 or below (method / simulation − 1, mean over replications with its CI) against ρ, for each method that
    takes the law itself (``law_method``: solid, one marker each) and for the exponential model's T (dotted), per law
    (colour); the ±5 % band shaded. Returns the legend's (handles, labels) for the methods."""
    from matplotlib.lines import Line2D

    pct = [float(q) for q in cmp["percentile"].values if float(q) <= 99.99 + 1e-9]
    q = max(pct) if pct else float(cmp["percentile"].values[-1])
    rho = cmp["rho"].values
    methods = cmp["law_method"].values.tolist()
    marks = ["o", "s", "^", "D"]
    expo = "T" in cmp["approximation"].values.tolist()
    for ax, R in zip(axes, Rv):
        ax.axhspan(-5.0, 5.0, color="0.92", zorder=0)
        ax.axhline(0.0, color="0.5", lw=0.8)
        for k, svc in enumerate(services):
            for j, m in enumerate(methods):
                d = cmp.sel(service=svc, R=R, law_method=m, percentile=q)
                y, lo, hi = (100.0 * d[v].values for v in ("law_relative_error_mean", "law_relative_error_ci_low",
                                                           "law_relative_error_ci_high"))
                ok = np.isfinite(y)
                if ok.any():
                    ax.errorbar(rho[ok], y[ok], yerr=[np.maximum(y - lo, 0)[ok], np.maximum(hi - y, 0)[ok]],
                                color=cmap(k), marker=marks[j % len(marks)], ms=3, lw=1.2, capsize=2)
            if expo:
                y = 100.0 * cmp["relative_percentile_error_mean"].sel(service=svc, R=R, approximation="T",
                                                                      percentile=q).values
                ok = np.isfinite(y)
                if ok.any():
                    ax.plot(rho[ok], y[ok], ":", color=cmap(k), lw=1.2)
        ax.set_xlabel("load ρ")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"{q:g}th percentile:\nmethod / simulation − 1 (%)")
    handles = [Line2D([], [], color="0.3", marker=marks[j % len(marks)], ms=4) for j in range(len(methods))]
    labels = [f"{m} with the law (its percentile error, 95 % CI)" for m in methods]
    if expo:
        handles.append(Line2D([], [], color="0.3", ls=":"))
        labels.append("T of the exponential model (same mean)")
    return handles, labels


@serialized
def all_figures(cmp_path, sim_path, approx_path, outdir, settings: dict, formats=("png", "pdf"), dpi=120):
    """Every figure :func:`figures` lists for the study's config section ``settings`` into ``outdir``; returns the
    written paths."""
    cmp = read_netcdf(cmp_path)  # small: (service, R, rho, approximation, replication, percentile)
    with NETCDF_LOCK, xr.open_dataset(approx_path, engine="netcdf4") as approx:
        if "validity_reason" in approx:  # why a method has no value: over budget vs invalid (STATUS_MARKS)
            cmp["validity_reason"] = approx["validity_reason"].load().reindex_like(cmp["usable"], fill_value=0)
    outdir = Path(outdir)
    kw = {"formats": tuple(formats), "dpi": dpi}
    out = []
    for f in figures(settings):
        stem = outdir / f.stem
        if f.kind.draw == "cdf_cell":
            # one cell each: read just its slices (the merged files are GBs once decompressed)
            R, rho = int(f.fields["R"]), float(f.fields["rho"])
            with NETCDF_LOCK, xr.open_dataset(sim_path, engine="netcdf4") as sim, \
                    xr.open_dataset(approx_path, engine="netcdf4") as approx:
                sim_c = sim[["count", "overflow"]].sel(R=[R]).sel(rho=[rho], method="nearest").load()
                var = "cdf" if "cdf" in approx else "sf"
                approx_c = approx[[var]].sel(R=[R]).sel(rho=[rho], method="nearest").load()
            out += cdf_cell(sim_c, approx_c, R, rho, stem, cmp=cmp, **kw)
        elif f.kind.draw == "recommended_map" and "recommended" not in cmp:
            raise ValueError(f"{cmp_path} has no recommendation: it comes from an older release; rerun the comparison")
        else:
            out += globals()[f.kind.draw](cmp, stem, **kw)
    return out


# --------------------------------------------------------------------------- reproduction report (§6)
_FAMILY_STYLE = {"faithful": ("tab:blue", "o", "ours, best of A–F"), "corrected": ("tab:orange", "s", "ours, best of A*–F*"),
                 "exact": ("tab:green", "^", "ours, exact"), TAIL: (_TAIL_COLOR, "v", f"ours, {TAIL_LABEL}")}


def _family_errorbars(ax, x, rep_vals, fams, width=0.22, absolute=False):
    """One error bar per family at x + offset; ``rep_vals[f] = (mean, low, high)`` arrays over x."""
    n = len(fams)
    for f, fam in enumerate(fams):
        mean, lo, hi = (np.asarray(v, dtype=float) for v in rep_vals[f])
        if absolute:  # |mean| and the image of the CI under |.|
            a, b = np.abs(lo), np.abs(hi)
            straddle = (lo <= 0) & (hi >= 0)
            lo, hi = np.where(straddle, 0.0, np.minimum(a, b)), np.maximum(a, b)
            mean = np.abs(mean)
        ok = np.isfinite(mean)
        if not ok.any():
            continue
        color, marker, label = _FAMILY_STYLE.get(fam, ("tab:gray", "d", fam))
        xs = np.asarray(x, dtype=float)[ok] + (f - (n - 1) / 2) * width / max(n - 1, 1)
        err = np.vstack([np.where(np.isfinite(lo[ok]), mean[ok] - lo[ok], 0),
                         np.where(np.isfinite(hi[ok]), hi[ok] - mean[ok], 0)])
        ax.errorbar(xs, mean[ok], yerr=np.maximum(err, 0), fmt=marker, color=color, ms=4, lw=1, capsize=2, label=label)


def _legend_of_all_panels(fig, axes) -> None:
    """One legend below the figure with every label of every panel (a family absent from the first panel may
    appear in another)."""
    handles, labels = _legend_entries(axes)
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), frameon=False, bbox_to_anchor=(0.5, 0.0))


def _paper_beside_ours(rep: xr.Dataset, stem, *, prefix, paper, ours, ylabel, title, height, absolute=False,
                       symlog=False, **kw):
    """Panels (percentile × R) over the paper's load rows: the published value (black diamonds) beside ours per
    family (mean and CI: ``ours`` = the mean, low and high variables)."""
    fams = rep["family"].values.tolist()
    P, rhos, Rv = rep[f"{prefix}_percentile"].values, rep[f"{prefix}_rho"].values, rep[f"{prefix}_R"].values
    fig, axes = plt.subplots(len(P), len(Rv), figsize=(3.1 * len(Rv), height * len(P)), squeeze=False, sharey="row")
    x = np.arange(len(rhos))
    for a, p in enumerate(P):
        for k, R in enumerate(Rv):
            ax = axes[a, k]
            if symlog:
                ax.axhline(0, color="0.5", lw=0.6)
            ax.plot(x, rep[paper].values[a, :, k], "D", mfc="none", color="k", ms=6, mew=1.2, label="paper (one seed)")
            _family_errorbars(ax, x, [[rep[v].values[f, a, :, k] for v in ours] for f in range(len(fams))], fams,
                              absolute=absolute)
            if symlog:
                ax.set_yscale("symlog", linthresh=1.0)
                signed_log_ticks(ax.yaxis)
            ax.set_xticks(x, [f"{r:g}" for r in rhos], fontsize=8, **({"rotation": 45} if symlog else {}))
            ax.grid(alpha=0.3)
            if a == 0:
                ax.set_title(f"R = {R}")
            if k == 0:
                ax.set_ylabel(ylabel.format(p=p))
            if a == len(P) - 1:
                ax.set_xlabel("load ρ")
        if absolute:  # from 0, after every panel of the row (shared y)
            tops = [ax.dataLim.y1 for ax in axes[a] if ax.has_data() and np.isfinite(ax.dataLim.y1)]
            top = max(tops) if tops else 1.0
            axes[a, 0].set_ylim(0, 1.08 * top if top > 0 else 1.0)
    _legend_of_all_panels(fig, axes)
    fig.suptitle(title, y=1.02)
    return save(fig, stem, **kw)


def _panels(prefix, measure, **style):
    """The settings of one §6 figure that sets the published values beside ours (:func:`_paper_beside_ours`):
    the reproduction's ``<prefix>_*`` coordinates, its ``paper_<measure>`` and our ``<measure>`` with its CI."""
    return dict(prefix=prefix, paper=f"paper_{measure}", ours=(measure, f"{measure}_ci_low", f"{measure}_ci_high"),
                **style)


_PAPER_PANELS = {
    "percentile_errors": _panels(
        "pct", "percentile_error", symlog=True, height=3.0, ylabel="{p:g}th percentile error\n(approx − sim, " + TIME_UNIT + ")",
        title="Paper §6.1/§6.2: signed percentile error of the best method for that percentile; ours: mean and 95% CI "
              "over replications (negative = optimistic)"),
    "relative_errors": _panels(
        "rel", "relative_error", absolute=True, height=2.7, ylabel="{p:g}th percentile\n|relative error|",
        title="Paper §6.3: relative percentile error of the best method by Wasserstein distance; ours: |mean| over "
              "replications and the 95% CI of |·|"),
}


def reproduction_percentile_errors(rep: xr.Dataset, stem, **kw):
    """§6.1/§6.2: published signed percentile errors (black) vs ours per family (mean, 95% CI), per R."""
    return _paper_beside_ours(rep, stem, **_PAPER_PANELS["percentile_errors"], **kw)


def reproduction_relative_errors(rep: xr.Dataset, stem, **kw):
    """§6.3: published |relative error| of the best-by-Wasserstein method vs ours (|mean|, CI image)."""
    return _paper_beside_ours(rep, stem, **_PAPER_PANELS["relative_errors"], **kw)


def reproduction_map(rep: xr.Dataset, stem, **kw):
    """§6.4: the paper's best of A–F, ours with agreement marks, and how much the corrected methods gain."""
    from matplotlib.colors import ListedColormap

    letters = list("ABCDEF")
    R, rho = rep["R"].values, rep["rho"].values
    paper = rep["paper_best_method"].values
    ours = rep["best_method"].sel(family="faithful").values
    agree = rep["agreement"].values

    def codes(L):
        Z = np.full(L.shape, np.nan)
        for (i, j), v in np.ndenumerate(L):
            if v in letters:
                Z[i, j] = letters.index(v)
        return Z

    cmap = ListedColormap([plt.get_cmap("tab10")(i) for i in range(len(letters))]).with_extremes(bad="0.9")
    few = len(R) * len(rho) <= 150  # small runs: letters written into the cells
    w = max(8.0, min(16.0, 0.13 * len(rho) + 3.5))
    fig, axes = plt.subplots(3, 1, figsize=(w, 3 * (0.32 * len(R) + 1.3)), squeeze=False)
    axes = axes[:, 0]
    step = max(1, len(rho) // 20)
    for ax, Z, title in ((axes[0], codes(paper), "paper (authors' best.csv, one seed)"),
                         (axes[1], codes(ours), "ours: best of A–F by mean W (× = differs from the paper; pale = the paper's method ties with ours within "
                          "the 95% CI)")):
        im = ax.imshow(np.ma.masked_invalid(Z), aspect="auto", origin="lower", cmap=cmap, vmin=-0.5,
                       vmax=len(letters) - 0.5, interpolation="nearest")
        ax.set_title(title, fontsize=10)
        cb = fig.colorbar(im, ax=ax, ticks=range(len(letters)), fraction=0.04, pad=0.01)
        cb.ax.set_yticklabels(letters)
        if few:
            L = paper if ax is axes[0] else ours
            for (i, j), v in np.ndenumerate(L):
                if v:
                    ax.text(j, i, v, ha="center", va="center", fontsize=8, color="w", fontweight="bold")
    ii, jj = np.nonzero(agree == 0)
    axes[1].plot(jj, ii, "x", color="k", ms=6 if few else 4, mew=1.5 if few else 1.0, ls="none")
    pale = np.zeros(agree.shape + (4,))
    pale[..., :3], pale[..., 3] = 1.0, np.where(agree == 1, 0.55, 0.0)  # ties: the cell's colour washed out
    axes[1].imshow(pale, aspect="auto", origin="lower", interpolation="nearest")
    ratio = rep["best_wasserstein"].sel(family="corrected").values / rep["best_wasserstein"].sel(family="faithful").values
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.log10(ratio)
    lim = max(0.5, float(np.nanmax(np.abs(lr)))) if np.isfinite(lr).any() else 1.0
    im = axes[2].imshow(np.ma.masked_invalid(lr), aspect="auto", origin="lower", cmap=plt.get_cmap("RdBu_r").with_extremes(
        bad="0.9"), vmin=-lim, vmax=lim, interpolation="nearest")
    cb = fig.colorbar(im, ax=axes[2], fraction=0.04, pad=0.01)
    cb.set_label("log10 ratio", fontsize=8)
    axes[2].set_title("W of the best corrected (A*–F*) / W of the best faithful (A–F): blue = corrected better",
                      fontsize=10)
    for ax in axes:
        ax.set_xticks(range(0, len(rho), step), [f"{r:.2f}" for r in rho[::step]], rotation=45, fontsize=8)
        ax.set_yticks(range(len(R)), [str(r) for r in R], fontsize=8)
        ax.set_ylabel("servers R")
    axes[-1].set_xlabel("load ρ")
    fig.tight_layout()  # before the suptitle (placed above the axes; the tight bbox takes it in)
    share = rep.attrs.get("agreement_share", float("nan"))
    same = rep.attrs.get("agreement_share_same_letter", float("nan"))
    n = rep.attrs.get("agreement_cells", 0)
    tie = share - same
    fig.suptitle(f"Best of the paper's A–F by Wasserstein distance (§6.4), {n} cells: the same method as the paper in "
                 f"{100 * same:.1f}% of cells; in another {100 * tie:.1f}% the paper's method ties with ours within the 95% "
                 f"CI; they differ in {100 * (1 - share):.1f}%\ngrey = not in this run or not in the paper's grid; "
                 "fit-invalid methods are never best", fontsize=10, y=1.0, va="bottom")
    return save(fig, stem, **kw)


# --------------------------------------------------------------------------- key results (report tables)
RHO_BANDS = ((0.0, 0.5), (0.5, 0.8), (0.8, 0.9), (0.9, 1.0))
R_BANDS = ((1, 1), (2, 3), (4, 6), (7, 10), (11, 10**6))


def _bands(values, bands):
    """[(label, mask)] of the ``bands`` (closed integer or half-open real intervals) that hold any of ``values``."""
    v = np.asarray(values)
    out = []
    for lo, hi in bands:
        if isinstance(lo, int):
            m = (v >= lo) & (v <= hi)
            lab = f"{lo}" if lo == hi else (f"{lo}–{int(v[m].max())}" if m.any() else "")
        else:
            m = (v >= lo) & (v < hi)
            lab = f"{lo:g} ≤ ρ < {hi:g}"
        if m.any():
            out.append((lab, m))
    return out


def _commonest(labels) -> tuple[str, float]:
    labels = [x for x in np.ravel(labels) if x not in ("", "nan", "None")]
    if not labels:
        return "—", 0.0
    u, n = np.unique(labels, return_counts=True)
    return str(u[np.argmax(n)]), float(n.max() / len(labels))


def key_results(cmp: xr.Dataset, stem, service="exponential") -> list:
    """The study's key result as tables (``<stem>.csv``/``.html``): the best method by Wasserstein distance per
    (R, ρ) band (the commonest and in what share of the band's cells), and when to trust which method per ρ band and
    percentile (the recommendation, its typical and worst |relative error| against simulation, how often the
    answer is 'simulate')."""
    from ..core.tables import write_table

    c = cmp.sel(service=service)
    group, joined = _groups(cmp)
    best = np.vectorize(lambda m: group.get(m, m), otypes=[str])(c["best_method"].transpose("R", "rho").values.astype(str))
    rb, pb = _bands(c["R"].values, R_BANDS), _bands(c["rho"].values, RHO_BANDS)
    header = ["servers R"] + [lab for lab, _ in pb]
    rows = []
    for rl, rm in rb:
        row = [rl]
        for _, pm in pb:
            m, share = _commonest(best[np.ix_(rm, pm)])
            row.append(f"{m} ({100 * share:.0f}%)" if m != "—" else m)
        rows.append(row)
    rec = c["recommended"].transpose("rho", "R", "percentile").values.astype(str)
    err = 100 * np.abs(c["recommended_relative_error"].transpose("rho", "R", "percentile").values)
    trust = []
    for pl, pm in pb:
        for k, p in enumerate(c["percentile"].values):
            r = rec[pm, :, k]
            ok = ~np.isin(r, ["", "simulate", "nan"])
            m, share = _commonest(r[ok])
            e = err[pm, :, k][ok]
            e = e[np.isfinite(e)]
            trust.append([pl, f"{p:g}", f"{m} ({100 * share:.0f}%)" if m != "—" else "—",
                          f"{np.median(e):.1f}" if e.size else "—", f"{np.max(e):.1f}" if e.size else "—",
                          f"{100 * (1 - ok.mean()):.0f}"])
    groups = "; ".join(f"{k} stands for {v} (identical CDFs)" for k, v in joined.items())
    notes = [f"Best method: the commonest method with the smallest mean Wasserstein distance to the simulated "
             f"sojourn-time CDF among the band's cells ({service} service, exact excluded), and in what share of "
             f"them it is best. {groups}.",
             "When to trust: the recommendation (exact where it ran, else T where it never fell below exact, else the "
             "most accurate method that does not underestimate the percentile), its median and largest |relative "
             "error| against the simulated percentile over the band's cells, and the share of cells where no method "
             "can be recommended (simulate, or too few simulated customers beyond the percentile to check)."]
    more = [("When to trust which method (all R)",
             ["load band", "percentile", "recommended (share)", "median |error| %", "max |error| %",
              "no recommendation %"], trust)]
    return write_table(stem, "Best method per (R, ρ) band (by Wasserstein distance)", header, rows, notes, more)
