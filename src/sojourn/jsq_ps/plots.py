"""Figures of the JSQ-PS study (matplotlib, Agg backend): one function per figure, each saved in every format with its
caption (``<stem>.rst``, :class:`sojourn.core.claims.Caption`) written from the data it draws.

Every comparison is against the best reference there (:func:`sojourn.jsq_ps.compare.against_reference`): exact where
it ran, else the simulation where it can tell (enough customers beyond the percentile, a run long enough), else none —
drawn as "reference too short" (:data:`sojourn.core.figures.REFERENCE_TOO_SHORT`), never as a value, and left out of
every statistic a caption or table states. A difference counts only beyond its CI (against the simulation) or beyond
the grid's resolution (against exact); the colour maps draw the rest as "no difference". Status marks (not run,
invalid fit, reference too short) sit in a strip above a panel or inside a map cell, never at a y that reads as data.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from ..core.claims import Caption, Claim, half_unit, listing, sig_tol
from ..core.figures import (
    METHOD_COLORS,
    NO_DIFFERENCE_CELL,
    REFERENCE_TOO_SHORT,
    TIME_UNIT,
    TOO_SHORT_CELL,
    Figure,
    instance,
    log_ticks,
    mark_cells,
    method_color,
    save,
    serialized,
    status_handles,
    status_strip,
    status_style,
)
from ..core.io import NETCDF_LOCK, read_netcdf
from ..core.reference import rule_words
from ..core.stats import TAIL_MIN, cdf_at_left_edges
from . import claims as Q
from .compare import (
    REF_EXACT,
    REF_SIMULATION,
    against_reference,
    exact_usable,
    fit_validity,
    reference_usable,
    run_usable,
    w_against_reference,
)

#: every figure of the study, declared once: the workflow's outputs and report captions come from here
#: (:func:`figures`), and the figure jobs draw exactly these (:func:`all_figures`, reproduction's figures)
FIGURES = (
    Figure("wasserstein_vs_rho", "wasserstein_vs_rho"),
    Figure("best_method_map", "best_method_map"),
    Figure("recommended_map", "recommended_map"),
    Figure("percentile_error_vs_rho", "percentile_error_vs_rho"),
    Figure("percentile_error_vs_rho_corrected", "percentile_error_vs_rho_corrected"),
    Figure("runtime_vs_R", "runtime_vs_R"),
    Figure("cdf_R~{R}_rho~{rho}", "cdf_cell"),
    Figure("mgr_laws", "mgr_laws"),
    Figure("reproduction_percentile_errors", "reproduction_percentile_errors", "reproduction"),
    Figure("reproduction_relative_errors", "reproduction_relative_errors", "reproduction"),
    Figure("reproduction_best_map", "reproduction_map", "reproduction"),
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
EXPONENTIAL = "exponential"
#: Wasserstein distances to exact below this (mean service times) are drawn on the bottom edge of their panel
W_FLOOR = 1e-3
#: the legend entries of the two references
AGAINST_EXACT = "filled: against exact"
AGAINST_SIMULATION = "hollow: against the simulation (exact did not run)"
NOISE_LABEL = "exact against the simulation: the run's own noise"
RULE = rule_words("customers")


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


def _groups(cmp: xr.Dataset) -> tuple[dict, dict]:
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


def _label(name: str, joined: dict) -> str:
    """A group's legend label: 'A* = B* = D* = E*', T's long name, or the method."""
    return joined.get(name) or (TAIL_LABEL if name == TAIL else name)


def _shown_R(Rv, most=5) -> np.ndarray:
    """At most ``most`` server counts, evenly spread from the first to the last (all of them if few)."""
    if len(Rv) <= most:
        return np.asarray(Rv)
    return np.asarray(Rv)[np.unique(np.round(np.linspace(0, len(Rv) - 1, most)).astype(int))]


def _shown_note(Rv, all_R) -> str:
    return "" if len(Rv) == len(all_R) else f"R = {', '.join(map(str, Rv))} of the {len(all_R)} that ran"


def _legend_entries(axes) -> tuple[list, list]:
    """(handles, labels) of every panel of ``axes``, each label once, in the order first seen."""
    handles, labels = [], []
    for ax in np.asarray(axes).flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
    return handles, labels


def _legend_below(fig, handles, labels, ncol=4, fontsize=8, y=0.0):
    """One legend under the figure with every entry (never over the data, never cut)."""
    if handles:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, y), ncol=min(ncol, len(labels)),
                   frameon=False, fontsize=fontsize, handlelength=2.2, columnspacing=1.4)


def _reference_handles():
    from matplotlib.lines import Line2D

    return ([Line2D([], [], ls="none", marker="o", color="0.3", ms=4),
             Line2D([], [], ls="none", marker="o", mfc="white", mec="0.3", ms=4)],
            [AGAINST_EXACT, AGAINST_SIMULATION])


def _rho_text(rhos) -> str:
    return ", ".join(f"{r:g}" for r in rhos)


def _cells_text(n) -> str:
    return f"{n} cell" + ("" if n == 1 else "s")


def _g(x, digits=2) -> str:
    """A positive number with ``digits`` significant digits, plainly (0.0031, 12, 0.25)."""
    if x is None or not np.isfinite(x):
        return "—"
    return f"{float(f'{x:.{digits}g}'):g}"


def _pct(x, digits=0, signed=True) -> str:
    """A relative value as '+12 %'."""
    return f"{100 * x:{'+' if signed else ''}.{digits}f} %"


# =========================================================================== Wasserstein distance
def _family_lines(cmp):
    """The two rows of the method figures: the paper's A–F, and the corrected chains with T (exact is the
    reference there, so it is no line of its own)."""
    rows = [("paper-faithful A–F", series(cmp, "faithful")),
            ("corrected A*–F* and T", [s for s in series(cmp, "corrected") if s.method != "exact"])]
    return [r for r in rows if r[1]]


def wasserstein_vs_rho(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Wasserstein distance W of each method to its best reference (exact where it ran, else the simulation) against
    ρ, one column per R that ran (at most five), one row per family; the simulation's own noise (exact against it)
    dashed grey; status marks in a strip above each panel."""
    from matplotlib.lines import Line2D

    c = cmp.sel(service=service)
    d = w_against_reference(cmp, service)
    methods = c["approximation"].values.tolist()
    rho, all_R = c["rho"].values, c["R"].values
    W, ref, status = d["W"].values, d["reference"].values, d["status"].values
    Rv = _shown_R(all_R)
    rows = _family_lines(cmp)
    noise = (c["wasserstein_mean"].sel(approximation="exact").where(run_usable(cmp).sel(service=service))
             .transpose("R", "rho").values if "exact" in methods else None)
    fig, axes = plt.subplots(len(rows), len(Rv), figsize=(2.45 * len(Rv) + 1.1, 3.0 * len(rows) + 0.4),
                             sharex=True, sharey=True, squeeze=False, gridspec_kw={"hspace": 0.55, "wspace": 0.12})
    kinds, floor_hit = set(), False
    for r, (title, lines) in enumerate(rows):
        for k, R in enumerate(Rv):
            ax, i = axes[r, k], int(np.nonzero(all_R == R)[0][0])
            strip = status_strip(ax)
            if noise is not None and np.isfinite(noise[i]).any():
                ok = np.isfinite(noise[i])
                ax.plot(rho[ok], noise[i][ok], color="0.55", ls=(0, (4, 2)), lw=1.3, marker="_", ms=7, label=NOISE_LABEL,
                        zorder=1)
            for sr in lines:
                m = methods.index(sr.method)
                y = W[i, :, m]
                ok = np.isfinite(y)
                yd = np.maximum(y, W_FLOOR)
                if ok.any():
                    ax.plot(rho[ok], yd[ok], sr.style, color=sr.color, lw=sr.lw, label=sr.label, zorder=3)
                    above = ok & (y >= W_FLOOR)
                    for rk, face in ((REF_EXACT, sr.color), (REF_SIMULATION, "white")):
                        sel = above & (ref[i, :, m] == rk)
                        ax.plot(rho[sel], y[sel], "o", ms=3.4, mfc=face, mec=sr.color, mew=1.0, ls="none", zorder=4)
                    below = ok & (y < W_FLOOR)
                    if below.any():
                        floor_hit = True
                        ax.plot(rho[below], np.full(below.sum(), W_FLOOR), "v", color=sr.color, ms=4.5, ls="none",
                                clip_on=False, zorder=4)
                for key in ("not_run", "invalid"):
                    strip.mark(sr.method, rho, status[i, :, m] == key, key, sr.color)
            too_short = np.any(np.stack([status[i, :, methods.index(sr.method)] == "too_short" for sr in lines]), 0)
            strip.mark("reference", rho, too_short, REFERENCE_TOO_SHORT.key)
            kinds |= strip.kinds
            ax.set_yscale("log")
            ax.grid(alpha=0.3)
            strip.finish(title=f"R = {R}")
        axes[r, 0].set_ylabel(f"{title}\nW ({TIME_UNIT})", fontsize=9)
    for ax in axes[-1, :]:
        ax.set_xlabel("load ρ", fontsize=9)
    axes[0, 0].set_ylim(bottom=W_FLOOR)
    log_ticks(axes[0, 0].yaxis)
    h, lab = _legend_entries(axes)
    rh, rl = _reference_handles()
    drawn_m = [methods.index(sr.method) for _, lines in rows for sr in lines]
    sub = ref[:, :, drawn_m][np.isin(all_R, Rv)]
    kinds_drawn = {REF_EXACT: bool((sub == REF_EXACT).any()), REF_SIMULATION: bool((sub == REF_SIMULATION).any())}
    for hh, ll, k in zip(rh, rl, (REF_EXACT, REF_SIMULATION)):
        if kinds_drawn[k]:
            h.append(hh)
            lab.append(ll)
    if floor_hit:
        h.append(Line2D([], [], ls="none", marker="v", color="0.3", ms=5))
        lab.append(f"W < {W_FLOOR:g} against exact (drawn on the bottom edge)")
    sh, sl = status_handles(kinds)
    _legend_below(fig, h + sh, lab + sl, ncol=4, y=0.02)
    fig.suptitle(f"How far each method's sojourn-time distribution is from the truth ({service} service)\n"
                 "Wasserstein distance W: lower = closer", y=0.995, va="bottom", fontsize=10.5)
    cap = _wasserstein_caption(cmp, d, service, Rv, all_R)
    return save(fig, stem, caption=cap, **kw)


def _best_of(W, methods, members):
    idx = [methods.index(m) for m in members if m in methods]
    if not idx:
        return np.full(W.shape[:2], np.nan)
    sub = W[:, :, idx]
    with np.errstate(all="ignore"):
        return np.where(np.isfinite(sub).any(-1), np.nanmin(np.where(np.isfinite(sub), sub, np.inf), -1), np.nan)


def _wasserstein_caption(cmp, d, service, Rv, all_R) -> Caption:
    c = cmp.sel(service=service)
    methods = c["approximation"].values.tolist()
    W = d["W"].values
    faith = [m for m in FAITHFUL if m in methods]
    corr = [m for m in methods if m.endswith("*") or m == TAIL]
    sel = {"service": service}
    w = Q.w_ref(cmp)
    findings, limits = [], []
    ex = exact_usable(c)
    if ex is not None and service == EXPONENTIAL:
        k = int(ex.sum())
        findings.append(Q.k_of_n(f"Exact ran at {k} of {int(ex.size)} cells; there every other method is set against "
                                 "exact (filled dots), elsewhere against the simulation (hollow).", k, int(ex.size),
                                 "usable.sel(approximation='exact') != 0", "isfinite(sim_run_valid)", sel))
    if faith and corr:
        bf, bc = _best_of(W, methods, faith), _best_of(W, methods, corr)
        both = np.isfinite(bf) & np.isfinite(bc)
        if both.any():
            k = int((bc < bf)[both].sum())
            ef = f"({w}).sel(approximation={Q.names(faith)}).min('approximation')"
            ec = f"({w}).sel(approximation={Q.names(corr)}).min('approximation')"
            where = f"isfinite({ef}) & isfinite({ec})"
            findings.append(Q.k_of_n(f"The closest corrected method (A*–F* or T) is closer than the closest of A–F at "
                                     f"{k} of {int(both.sum())} cells.", k, int(both.sum()), f"{ec} < {ef}", where, sel))
            ratio = float(np.median(bf[both] / bc[both]))
            findings.append(Claim(f"Over those cells the closest of A–F is a median {_g(ratio)} times farther from "
                                  f"the reference than the closest corrected method.", ratio,
                                  Q.query(f"{ef} / {ec}", (("median", None),), where, sel), sig_tol(ratio, 2)))
    if "exact" in methods:
        nz = c["wasserstein_mean"].sel(approximation="exact").where(run_usable(cmp).sel(service=service)).values
        nz = nz[np.isfinite(nz)]
        if nz.size:
            med = float(np.median(nz))
            findings.append(Claim(f"The simulation's own noise, exact's distance to it, is a median W = {_g(med)} "
                                  f"{TIME_UNIT} (dashed grey): a method on that line is as close as this run can tell.",
                                  med, Q.query("wasserstein_mean.sel(approximation='exact')", (("median", None),),
                                               Q.RUN_OK, sel), sig_tol(med, 2)))
    short = (c["sim_run_valid"] == 0).values if "sim_run_valid" in c else np.zeros(W.shape[:2], bool)
    if short.any():
        limits.append(Q.k_of_n(f"The run-length guard judged {int(short.sum())} of {int(short.size)} simulated cells "
                               "too short: there a method without exact has no reference (marked).", int(short.sum()),
                               int(short.size), "sim_run_valid == 0", "isfinite(sim_run_valid)", sel))
    if len(Rv) < len(all_R):
        limits.append(f"Panels show {_shown_note(Rv, all_R)} (every R is in comparison.nc).")
    return Caption(
        f"Wasserstein distance W = dt·Σ|F_ref − F_method| (paper eq. 27; in {TIME_UNIT}) between each method's sojourn-"
        f"time CDF and its reference, against the load ρ, one column per number of servers R; top: the paper's A–F, "
        f"bottom: the corrected chains (one line per group of identical CDFs) and T.",
        findings, limits,
        [("The reference is exact's CDF where exact ran (filled dots), else the simulated CDF (hollow; lines: mean over "
         "replications). The dashed grey line is exact against the simulation: the noise every comparison with this "
         f"simulation carries. Values below {W_FLOOR:g} against exact sit on the bottom edge (▼). The strip above a "
         "panel marks loads without a value: ○ not run (over budget), × not a CDF, ◇ reference too short "
         f"({RULE}). T lies above the truth in survival by construction (within its stated margin), so its W is no "
         "measure of its tail: see the percentile figures.")])


# =========================================================================== maps
def _cell_map(ax, rgb, rho, Rv, title=None, xlabel=True, ylabel=True, max_xticks=14):
    """An (R × ρ) image map with the grid that ran as its ticks."""
    ax.imshow(rgb, aspect="auto", origin="lower", interpolation="nearest")
    step = max(1, math.ceil(len(rho) / max_xticks))
    ax.set_xticks(range(0, len(rho), step), [f"{r:g}" for r in rho[::step]], fontsize=8,
                  rotation=0 if len(rho) <= 10 else 90)
    ax.set_yticks(range(len(Rv)), [str(r) for r in Rv], fontsize=8)
    ax.set_xticks(np.arange(-0.5, len(rho)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(Rv)), minor=True)
    ax.grid(which="minor", color="w", lw=0.6 if len(rho) <= 30 else 0)
    ax.tick_params(which="minor", length=0)
    for side in ax.spines.values():  # light: a black line in a map is an outline (e.g. where exact is the reference)
        side.set_color("0.7")
    if xlabel:
        ax.set_xlabel("load ρ", fontsize=9)
    if ylabel:
        ax.set_ylabel("servers R", fontsize=9)
    if title:
        ax.set_title(title, fontsize=9.5, loc="left")


def _outline(ax, mask, color="k", lw=1.6):
    """A line around the cells of an image map where ``mask`` holds (e.g. where exact is the reference)."""
    mask = np.asarray(mask, dtype=bool)
    n, m = mask.shape
    pad = np.pad(mask, 1)
    for i in range(n):
        for j in range(m):
            if not mask[i, j]:
                continue
            for di, dj, seg in ((-1, 0, ([j - .5, j + .5], [i - .5, i - .5])), (1, 0, ([j - .5, j + .5], [i + .5, i + .5])),
                                (0, -1, ([j - .5, j - .5], [i - .5, i + .5])), (0, 1, ([j + .5, j + .5], [i - .5, i + .5]))):
                if not pad[i + 1 + di, j + 1 + dj]:
                    ax.plot(*seg, color=color, lw=lw, solid_capstyle="projecting", zorder=5)


def _rgb(color):
    from matplotlib.colors import to_rgb

    return np.array(to_rgb(color))


def _candidates(cmp) -> list[str]:
    """The methods a best-method choice ranks: one per group of identical CDFs, exact excluded (it is the
    reference where it ran)."""
    group, _ = _groups(cmp)
    out = []
    for m in cmp["approximation"].values.tolist():
        g = group.get(m, m)
        if m != "exact" and g not in out:
            out.append(g)
    return out


def best_by_reference(cmp: xr.Dataset, service=EXPONENTIAL) -> dict:
    """Per (R, ρ) cell, the method (one per group of identical CDFs, exact excluded) closest to its reference by W
    (:func:`sojourn.jsq_ps.compare.w_against_reference`) and whether it is a clear winner: against exact, no other
    method within a tenth of the grid step (the distance's resolution); against the simulation, no other method
    whose 95% CI reaches the winner's. Returns arrays (R, ρ): ``best`` (its name, "" none), ``tie`` (bool),
    ``tied`` (the names within reach), ``reference`` (REF_*), ``too_short`` (no reference at all), and the
    resolution ``w_tie``."""
    d = w_against_reference(cmp, service)
    methods = d["approximation"].values.tolist()
    cand = _candidates(cmp)
    idx = [methods.index(m) for m in cand]
    W, lo, hi, ref = (d[v].values[:, :, idx] for v in ("W", "low", "high", "reference"))
    w_tie = float(cmp.attrs.get("time_step", 0.01)) / 10
    NR, NP = W.shape[:2]
    best = np.full((NR, NP), "", dtype=object)
    tied = np.full((NR, NP), "", dtype=object)
    tie = np.zeros((NR, NP), bool)
    cref = np.zeros((NR, NP), np.int8)
    for i in range(NR):
        for j in range(NP):
            ok = np.isfinite(W[i, j])
            if not ok.any():
                continue
            b = int(np.nanargmin(np.where(ok, W[i, j], np.inf)))
            best[i, j], cref[i, j] = cand[b], ref[i, j, b]
            if ref[i, j, b] == REF_EXACT:
                near = ok & (W[i, j] - W[i, j, b] <= w_tie)
            else:
                near = ok & (np.where(np.isfinite(lo[i, j]), lo[i, j], W[i, j]) <= (hi[i, j, b] if np.isfinite(
                    hi[i, j, b]) else W[i, j, b]))
            near[b] = True
            tie[i, j] = near.sum() > 1
            tied[i, j] = "·".join(cand[k] for k in np.nonzero(near)[0])
    status = d["status"].values
    too_short = (best == "") & (status == "too_short").any(-1)
    return {"best": best, "tie": tie, "tied": tied, "reference": cref, "too_short": too_short, "w_tie": w_tie,
            "candidates": cand}


def _best_queries(cmp, cand, w_tie):
    """The expressions (module claims) of the clear winner per cell and of a tie, as :func:`best_by_reference`."""
    w = Q.w_ref(cmp)
    names = Q.names(cand)
    Wr = f"({w}).sel(approximation={names})"
    lo = (f"where({Q.exact_ok_w(cmp)}, wasserstein_vs_exact, where({Q.RUN_OK}, where(isfinite(wasserstein_ci_low), "
          f"wasserstein_ci_low, wasserstein_mean), nan)).sel(approximation={names})")
    hi = (f"where({Q.exact_ok_w(cmp)}, wasserstein_vs_exact, where({Q.RUN_OK}, where(isfinite(wasserstein_ci_high), "
          f"wasserstein_ci_high, wasserstein_mean), nan)).sel(approximation={names})")
    at_best = f"where({Wr} == {Wr}.min('approximation'), {hi}, nan).max('approximation')"
    tie_exact = f"((({Wr} - {Wr}.min('approximation')) <= {w_tie!r}).sum('approximation') >= 2)"
    tie_sim = f"(({lo} <= {at_best}).sum('approximation') >= 2)"
    ex_cell = ("((service == 'exponential') & (usable.sel(approximation='exact') != 0))" if Q.has_exact(cmp)
               else "(sim_run_valid != sim_run_valid)")
    tie = f"where({ex_cell}, {tie_exact}, {tie_sim})"
    has = f"isfinite({Wr}.min('approximation'))"
    return Wr, tie, has


def best_method_map(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Which method is closest to the truth per (R, ρ) cell by W (:func:`best_by_reference`): a clear winner in its
    colour, a tie in light grey with the tied methods named, a cell without a reference grey with the
    reference-too-short mark; the cells where exact is the reference outlined."""
    from matplotlib.patches import Patch

    c = cmp.sel(service=service)
    b = best_by_reference(cmp, service)
    _, joined = _groups(cmp)
    best, tie, too_short = b["best"], b["tie"], b["too_short"]
    rho, Rv = c["rho"].values, c["R"].values
    winners = [m for m in b["candidates"] if ((best == m) & ~tie).any()]
    rgb = np.ones(best.shape + (3,))
    for (i, j), m in np.ndenumerate(best):
        if too_short[i, j]:
            rgb[i, j] = _rgb(TOO_SHORT_CELL)
        elif m and tie[i, j]:
            rgb[i, j] = _rgb("0.93")
        elif m:
            rgb[i, j] = _rgb(method_color(m))
    small = best.size <= 150
    w = min(11.5, max(6.0, 0.62 * len(rho) + 2.2)) if small else 11.0
    fig, ax = plt.subplots(figsize=(w, 0.42 * len(Rv) + 1.9) if small else (w, 0.3 * len(Rv) + 2.0))
    _cell_map(ax, rgb, rho, Rv)
    if small:
        for (i, j), m in np.ndenumerate(best):
            if not m or too_short[i, j]:
                continue
            if tie[i, j]:
                names = b["tied"][i, j].split("·")
                txt = "tie\n" + ("·".join(names) if len(names) <= 3 else f"{len(names)} methods")
                ax.text(j, i, txt, ha="center", va="center", fontsize=6.5, color="0.25", linespacing=0.95)
            else:
                dark = np.mean(_rgb(method_color(m))) < 0.55
                ax.text(j, i, m, ha="center", va="center", fontsize=8.5, color="w" if dark else "k", fontweight="bold")
    mark_cells(ax, too_short, REFERENCE_TOO_SHORT.key)
    exact_cells = b["reference"] == REF_EXACT
    _outline(ax, exact_cells)
    handles = [Patch(color=method_color(m)) for m in winners]
    labels = [_label(m, joined) for m in winners]
    if tie.any():
        handles.append(Patch(facecolor="0.93", edgecolor="0.6"))
        labels.append("no clear winner: the methods named are within the CI (or, against exact, within "
                      f"{b['w_tie']:g}) of the closest")
    if exact_cells.any():
        handles.append(Patch(facecolor="w", edgecolor="k", lw=1.6))
        labels.append("inside the black outline: against exact; outside: against the simulation")
    if too_short.any():
        sh, sl = status_handles([REFERENCE_TOO_SHORT.key])
        handles += sh
        labels += sl
    fig.tight_layout()
    _legend_below(fig, handles, labels, ncol=2, fontsize=8)
    fig.suptitle(f"Which method's sojourn-time CDF is closest to the truth? ({service} service)\nsmallest Wasserstein "
                 "distance to exact where it ran, else to the simulation", fontsize=10, y=1.0, va="bottom")
    return save(fig, stem, caption=_best_map_caption(cmp, b, service), **kw)


def _best_map_caption(cmp, b, service) -> Caption:
    best, tie, too_short = b["best"], b["tie"], b["too_short"]
    cand = b["candidates"]
    _, joined = _groups(cmp)
    Wr, tie_q, has = _best_queries(cmp, cand, b["w_tie"])
    sel = {"service": service}
    findings, limits = [], []
    n = int((best != "").sum())
    clear = {m: int(((best == m) & ~tie).sum()) for m in cand if ((best == m) & ~tie).any()}
    if n:
        order = sorted(clear, key=lambda m: (-clear[m], cand.index(m)))
        words = listing([f"{m} in {clear[m]}" for m in order]) if order else "none"
        findings.append(Claim(f"Clear winners: {words} of the {n} cells with a reference.", clear,
                              Q.query(f"where({tie_q}, '', {Wr}.idxmin('approximation'))", (("unique", None),), has,
                                      sel)))
        k = int(tie[best != ""].sum())
        findings.append(Q.k_of_n(f"No method is clearly closest at {k} of {n} cells (a tie: the methods named there are "
                                 "within the CI of the closest, or against exact within "
                                 f"{b['w_tie']:g} {TIME_UNIT}).", k, n, tie_q, has, sel))
        k_ex = int((b["reference"] == REF_EXACT).sum())
        findings.append(Q.k_of_n(f"Exact is the reference at {k_ex} of those {n} cells (outlined); the rest are set "
                                 "against the simulation.", k_ex, n,
                                 "(usable.sel(approximation='exact') != 0)" if Q.has_exact(cmp) else "(R != R)", has,
                                 sel))
    if too_short.any():
        k = int(too_short.sum())
        limits.append(Claim(f"{_cells_text(k).capitalize()} without exact and with a simulation the run-length guard "
                            "judged too short have no reference (grey, ◇).", k,
                            Q.query(f"~({has}) & (sim_run_valid == 0)", (("count", None),), None, sel)))
    groups = "; ".join(f"{k} stands for {v}" for k, v in joined.items())
    return Caption(
        f"Each (R, ρ) cell names the method whose sojourn-time CDF is closest to the truth by Wasserstein distance "
        f"({service} service): to exact's CDF where exact ran (inside the black outline), else to the simulated CDF; "
        "exact itself is the reference and no candidate.", findings, limits,
        [f"Identical methods count once ({groups})." if groups else "",
         ("A clear winner is drawn in its colour; a light grey cell is a tie: against the simulation, another method's "
         "95% CI of W reaches the winner's; against exact, another method is within a tenth of the grid step. A method "
         "whose CDF is not a CDF is never a candidate. W weighs the body of the distribution; for the tail, see the "
         "recommendation and percentile figures.")])


def recommended_map(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """The headline: per percentile, the method to use over (R, ρ) — exact where it ran, else T where the comparison
    found it never below exact, else the most accurate method that does not underestimate the percentile beyond its
    CI; "simulate" where none qualifies, split by why (no method qualifies, or the reference too short to judge)."""
    from matplotlib.patches import Patch

    from .compare import SIMULATE, STATUS_RUN_TOO_SHORT, STATUS_TOO_FEW

    c = cmp.sel(service=service)
    P, rho, Rv = c["percentile"].values, c["rho"].values, c["R"].values
    rec = c["recommended"].transpose("R", "rho", "percentile").values.astype(str)
    status = c["recommendation_status"].transpose("R", "rho", "percentile").values
    short = np.isin(status, [STATUS_TOO_FEW, STATUS_RUN_TOO_SHORT])
    none = (rec == SIMULATE) & ~short
    names = [m for m in cmp["approximation"].values.tolist() if (rec == m).any()]
    # percentiles whose maps are identical share one panel
    panels: list[list[int]] = []
    for k in range(len(P)):
        for g in panels:
            if all(np.array_equal(a[..., g[0]], a[..., k]) for a in (rec, short, none)):
                g.append(k)
                break
        else:
            panels.append([k])
    wide = len(rho) > 12
    ncols = 2 if (wide and len(panels) > 1) else len(panels)
    nrows = math.ceil(len(panels) / ncols)
    cw = (0.5 if len(panels) == 1 else 0.34) if not wide else 5.0 / len(rho)
    fig, axes = plt.subplots(nrows, ncols, figsize=(ncols * (cw * len(rho) + 0.9) + 0.4, nrows * (0.3 * len(Rv) + 1.3)),
                             squeeze=False, sharey=True)
    for n_panel, g in enumerate(panels):
        k, ax = g[0], axes.flat[n_panel]
        title = (f"{P[k]:g}th percentile" if len(g) == 1 else
                 f"{listing([f'{P[x]:g}th' for x in g])} percentiles (the same)")
        rgb = np.ones((len(Rv), len(rho), 3))
        for (i, j), m in np.ndenumerate(rec[..., k]):
            if short[i, j, k]:
                rgb[i, j] = _rgb(TOO_SHORT_CELL)
            elif m in names:
                rgb[i, j] = _rgb(method_color(m))
        _cell_map(ax, rgb, rho, Rv, title=title, ylabel=n_panel % ncols == 0, max_xticks=8 if not wide else 10)
        for i, j in zip(*np.nonzero(none[..., k])):
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="////", lw=0, color="0.35"))
        mark_cells(ax, short[..., k], REFERENCE_TOO_SHORT.key, ms=4.5 if not wide else 2.5)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    fig.tight_layout()
    handles = [Patch(color=method_color(m)) for m in names]
    labels = [TAIL_LABEL if m == TAIL else m for m in names]
    if none.any():
        handles.append(Patch(facecolor="w", edgecolor="0.35", hatch="////"))
        labels.append("simulate: no method is accurate without underestimating the percentile")
    if short.any():
        sh, sl = status_handles([REFERENCE_TOO_SHORT.key])
        handles += sh
        labels += [sl[0] + ": simulate, longer"]
    _legend_below(fig, handles, labels, ncol=3, fontsize=8)
    fig.suptitle(f"Which method to use for each tail percentile ({service} service)", fontsize=10.5, y=1.0,
                 va="bottom")
    return save(fig, stem, caption=_recommended_caption(cmp, service, rec, short, none), **kw)


def _recommended_caption(cmp, service, rec, short, none) -> Caption:
    c = cmp.sel(service=service)
    methods = c["approximation"].values.tolist()
    sel = {"service": service}
    findings, limits = [], []
    counts = {m: int((rec == m).sum()) for m in sorted(set(rec.ravel().tolist())) if m}
    n = int(sum(counts.values()))
    order = sorted(counts, key=lambda m: -counts[m])
    findings.append(Claim(f"Of the {n} (R, ρ, percentile) points, the method to use is "
                          + listing([f"{m} at {counts[m]}" for m in order]) + ".", counts,
                          Q.query("recommended", (("unique", None),), None, sel)))
    if TAIL in methods and "exact" in methods:
        dt = float(cmp.attrs.get("time_step", 0.01))
        d = c["percentile_error_vs_exact"].sel(approximation=TAIL).values
        xe = c["approx_percentile"].sel(approximation="exact").values
        ok = np.isfinite(d)
        if ok.any():
            below = int((d[ok] < -dt * (1 + 1e-6)).sum())
            rel = d[ok] / xe[ok]
            lo, hi = float(rel.min()), float(rel.max())
            expr = "percentile_error_vs_exact.sel(approximation='T')"
            findings.append(Q.k_of_n(f"T is below exact by more than one grid step at {below} of the {int(ok.sum())} "
                                     "points where both ran", below, int(ok.sum()), f"{expr} < {-dt * (1 + 1e-6)!r}",
                                     f"isfinite({expr})", sel))
            rexpr = f"{expr} / approx_percentile.sel(approximation='exact')"
            findings.append(Claim(f"(T − exact from {_pct(lo, 2)} to {_pct(hi, 2)} of exact's percentile).", [lo, hi],
                                  [Q.query(rexpr, (("min", None),), f"isfinite({expr})", sel),
                                   Q.query(rexpr, (("max", None),), f"isfinite({expr})", sel)], half_unit(2, 100)))
    if short.any():
        from .compare import STATUS_RUN_TOO_SHORT, STATUS_TOO_FEW

        k = int(short.sum())
        limits.append(Claim(f"At {k} points no method is exact or T and the simulation is too short to judge the others "
                            f"({RULE}): simulate, longer.", k,
                            Q.query(f"(recommendation_status == {STATUS_TOO_FEW}) | (recommendation_status == "
                                    f"{STATUS_RUN_TOO_SHORT})", (("count", None),), None, sel)))
    if none.any():
        limits.append(Claim(f"At {int(none.sum())} points every method that could be judged underestimates the "
                            "percentile: simulate (hatched).", int(none.sum()),
                            Q.query("(recommended == 'simulate')", (("count", None),),
                                    f"(recommendation_status != {_status('STATUS_TOO_FEW')}) & (recommendation_status "
                                    f"!= {_status('STATUS_RUN_TOO_SHORT')})", sel)))
    return Caption(
        "The method to use for each tail percentile (one panel each) over (R, ρ) (recommended in comparison.nc): exact "
        "where it ran and is usable; else T, the conservative tail chain, where the comparison found it nowhere below "
        "exact (and the simulation does not show it optimistic where it can tell); else the most accurate usable "
        "method whose 95% CI of the percentile error does not lie entirely below 0.", findings, limits,
        [("Exact and T need no simulation to be trusted; every other method is judged against the simulation, so "
         "where its reference is too short nothing else can be recommended.")])


def _status(name: str) -> int:
    from . import compare

    return int(getattr(compare, name))


# =========================================================================== percentile errors
#: the largest colour bound (%) of the percentile-error maps; beyond it, the colour saturates (arrow on the bar)
REL_CLIP = 100.0


def _error_rows(lines, Rv):
    return [(sr, R) for sr in lines for R in Rv]


def _percentile_error_figure(cmp, stem, lines, what, service, **kw):
    """Maps of each method's relative percentile error against its reference: one panel per percentile with a
    value, rows = (method, R), columns = ρ; red = optimistic (below the reference), blue = above, white = no
    difference (within the CI, or within the grid step of exact), grey ◇ = reference too short."""
    from matplotlib import colors as mcolors
    from matplotlib.lines import Line2D

    c = cmp.sel(service=service)
    a = against_reference(cmp, service)
    methods = c["approximation"].values.tolist()
    P, rho, Rv = c["percentile"].values, c["rho"].values, c["R"].values
    err = 100 * a["error"].values
    sig, ref, status = a["significant"].values, a["reference"].values, a["status"].values
    rows = _error_rows(lines, Rv)
    ridx = [(methods.index(sr.method), int(np.nonzero(Rv == R)[0][0])) for sr, R in rows]
    have = [k for k in range(len(P)) if any(ref[i, :, m, k].any() for m, i in ridx)]
    shown = have or list(range(len(P)))
    vals = np.concatenate([np.abs(err[i, :, m, k][sig[i, :, m, k]]) for m, i in ridx for k in shown] + [np.zeros(0)])
    L = float(np.clip(np.percentile(vals, 95) * 1.1, 5.0, REL_CLIP)) if vals.size else 10.0
    L = float(np.ceil(L / 5) * 5)
    norm = mcolors.TwoSlopeNorm(vmin=-L, vcenter=0.0, vmax=L)
    cmap = plt.get_cmap("RdBu")
    small = len(rho) <= 12 and len(rows) <= 40
    cw = 0.3 if len(rho) <= 12 else min(0.06, 2.4 / len(rho))
    rh = 0.2 if len(rows) <= 30 else max(0.1, 6.0 / len(rows))
    fig, axes = plt.subplots(1, len(shown), figsize=(len(shown) * (cw * len(rho) + 0.35) + 2.3, rh * len(rows) + 1.9),
                             squeeze=False, sharey=True)
    axes = axes[0]
    kinds = set()
    for ax, k in zip(axes, shown):
        rgb = np.ones((len(rows), len(rho), 3))
        for r, (m, i) in enumerate(ridx):
            for j in range(len(rho)):
                st = status[i, j, m, k]
                if st in ("too_short", "beyond_grid"):
                    rgb[r, j] = _rgb(TOO_SHORT_CELL)
                elif st in ("not_run", "invalid"):
                    rgb[r, j] = _rgb("0.97")
                elif sig[i, j, m, k]:
                    rgb[r, j] = cmap(norm(np.clip(err[i, j, m, k], -L, L)))[:3]
                else:
                    rgb[r, j] = _rgb(NO_DIFFERENCE_CELL)
        ax.imshow(rgb, aspect="auto", origin="upper", interpolation="nearest")
        for r, (m, i) in enumerate(ridx):
            color = lines[r // len(Rv)].color
            for key in ("not_run", "invalid"):
                jj = np.nonzero(status[i, :, m, k] == key)[0]
                if jj.size:
                    kinds.add(key)
                    ax.plot(jj, np.full(jj.size, r), **status_style(key, color, ms=3.5 if small else 2))
            for key in (REFERENCE_TOO_SHORT.key, "beyond_grid"):
                jj = np.nonzero(status[i, :, m, k] == ("too_short" if key == REFERENCE_TOO_SHORT.key else key))[0]
                if jj.size:
                    kinds.add(key)
                    ax.plot(jj, np.full(jj.size, r), **status_style(key, ms=3.5 if small else 2))
            jj = np.nonzero(ref[i, :, m, k] == REF_SIMULATION)[0]
            ax.plot(jj + 0.3, np.full(jj.size, r - 0.25), ".", color="0.2", ms=2.5 if small else 1.2, ls="none")
            if small:
                for j in np.nonzero(sig[i, :, m, k])[0]:
                    v = err[i, j, m, k]
                    ax.text(j, r, f"{v:+.0f}" if abs(v) >= 0.95 else f"{v:+.1f}", ha="center", va="center",
                            fontsize=6.2, color="w" if abs(v) > 0.6 * L else "k")
        for g in range(1, len(lines)):
            ax.axhline(g * len(Rv) - 0.5, color="k", lw=1.0)
        step = max(1, math.ceil(len(rho) / 8))
        ax.set_xticks(range(0, len(rho), step), [f"{x:g}" for x in rho[::step]], fontsize=7.5,
                      rotation=0 if len(rho) <= 12 else 90)
        ax.set_xlabel("load ρ", fontsize=9)
        ax.set_title(f"{P[k]:g}th percentile", fontsize=9.5)
    axes[0].set_yticks(range(len(rows)), [f"R = {R}" for _, R in rows], fontsize=6.5 if len(rows) > 20 else 7.5)
    for g, sr in enumerate(lines):
        axes[0].annotate(sr.label if len(sr.label) < 16 else sr.label.replace(" = ", "=\n", 1).replace(" (", "\n("),
                         xy=(0, (g + 0.5) * len(Rv) - 0.5), xycoords=("axes fraction", "data"), xytext=(-40, 0),
                         textcoords="offset points", ha="right", va="center", fontsize=8, fontweight="bold",
                         color=sr.color)
    fig.tight_layout(rect=(0.0, 0.0, 0.92, 1.0))
    cax = fig.add_axes([0.935, 0.25, 0.012, 0.6])
    sm = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
    cb = fig.colorbar(sm, cax=cax, extend="both")
    cb.set_label("relative percentile error (%)\nred: below the reference (optimistic)", fontsize=8)
    cb.ax.tick_params(labelsize=7)
    from matplotlib.patches import Patch

    handles, labels = [], []
    if any(((ref[i, :, m, :] != 0) & ~sig[i, :, m, :]).any() for m, i in ridx):
        handles.append(Patch(facecolor=NO_DIFFERENCE_CELL, edgecolor="0.5"))
        labels.append("white: no difference (within the CI, or within one grid step of exact)")
    if any((ref[i, :, m, :] == REF_SIMULATION).any() for m, i in ridx):
        handles.append(Line2D([], [], ls="none", marker=".", color="0.2", ms=5))
        labels.append("dot in the corner: against the simulation (exact did not run); otherwise against exact")
    elif any((ref[i, :, m, :] == REF_EXACT).any() for m, i in ridx):
        handles.append(Patch(facecolor="w", edgecolor="w"))
        labels.append("every value against exact")
    sh, sl = status_handles(kinds)
    _legend_below(fig, handles + sh, labels + sl, ncol=2, fontsize=7.5)
    fig.suptitle(f"Tail-percentile error of {what} against the best reference\n(method − reference) / reference, "
                 f"{service} service", fontsize=10, y=1.0, va="bottom")
    cap = _percentile_error_caption(cmp, a, lines, what, service, [P[k] for k in shown],
                                    [P[k] for k in range(len(P)) if k not in have])
    return save(fig, stem, caption=cap, **kw)


def _percentile_error_caption(cmp, a, lines, what, service, shown, without) -> Caption:
    dt = float(cmp.attrs.get("time_step", 0.01))
    methods = [sr.method for sr in lines]
    rel, sig_q, kind_q = Q.rel_ref(cmp), Q.significant(cmp, dt), Q.ref_kind(cmp)
    sel = {"service": service, "approximation": methods}
    A = a.sel(approximation=methods)
    err, sig, ref, status = A["error"].values, A["significant"].values, A["reference"].values, A["status"].values
    findings, limits = [], []
    n_ref = int((ref != 0).sum())
    if n_ref:
        k = int(sig.sum())
        findings.append(Q.k_of_n(f"A difference beyond the reference's noise at {k} of the {n_ref} (method, R, ρ, "
                                 "percentile) points with a reference.", k, n_ref, sig_q, f"{kind_q} != 0", sel))
    dims = A["error"].dims

    def where_(arr, op):
        v = np.where(sig, arr, np.nan)
        if not np.isfinite(v).any():
            return None
        flat = int(np.nanargmin(v) if op == "argmin" else np.nanargmax(v))
        idx = np.unravel_index(flat, v.shape)
        loc = {d: (float(A[d].values[x]) if A[d].dtype.kind == "f" else
                   (int(A[d].values[x]) if A[d].dtype.kind in "iu" else str(A[d].values[x]))) for d, x in zip(dims, idx)}
        loc["value"] = float(v[idx])
        return loc, ref[idx]

    judged = [m for m in methods if m != "exact"]  # exact's row is the check of the simulation, not an error
    for op, word in (("argmin", "Most below its reference (optimistic)"), ("argmax", "Most above")):
        got = where_(np.where(np.array([m != "exact" for m in methods])[None, None, :, None], err, np.nan), op)
        if got is None:
            continue
        loc, rk = got
        if (op == "argmin" and loc["value"] >= 0) or (op == "argmax" and loc["value"] <= 0):
            continue
        findings.append(Claim(f"{word}: {loc['approximation']} by {_pct(loc['value'], 0)} at R = {loc['R']}, "
                              f"ρ = {loc['rho']:g}, the {loc['percentile']:g}th percentile (against "
                              f"{'exact' if rk == REF_EXACT else 'the simulation'}).", loc,
                              Q.query(f"where({sig_q}, {rel}, nan)", ((op, None),), None,
                                      {**sel, "approximation": judged}), half_unit(0, 100)))
    for sr in lines:
        if sr.method not in (TAIL, "exact"):
            continue
        m = methods.index(sr.method)
        has = ref[:, :, m, :] != 0
        if not has.any():
            continue
        s1 = {"service": service, "approximation": sr.method}
        below = int((sig[:, :, m, :] & (err[:, :, m, :] < 0)).sum())
        if sr.method == TAIL:
            text = (f"T is significantly below its reference at {below} of its {int(has.sum())} points: it errs on the "
                    "safe side.") if below == 0 else (f"T is significantly below its reference at {below} of its "
                                                      f"{int(has.sum())} points.")
        else:
            e = err[:, :, m, :][sig[:, :, m, :]]
            text = (f"Exact differs from the simulation beyond its CI at {int(sig[:, :, m, :].sum())} of the "
                    f"{int(has.sum())} points where the simulation can tell (at 95% confidence about one in 20 "
                    "would by chance)" + (f", by {_pct(e.min(), 0)} to {_pct(e.max(), 0)}." if e.size else "."))
        if sr.method == TAIL:
            findings.append(Q.k_of_n(text, below, int(has.sum()), f"({sig_q}) & ({rel} < 0)", f"{kind_q} != 0", s1))
        else:
            cl = Q.k_of_n(text, int(sig[:, :, m, :].sum()), int(has.sum()), sig_q, f"{kind_q} != 0", s1)
            if e.size:
                cl.value += [float(e.min()), float(e.max())]
                cl.query += [Q.query(rel, ((op, None),), f"({kind_q} != 0) & ({sig_q})", s1) for op in ("min", "max")]
                cl.tol = half_unit(0, 100)
            findings.append(cl)
    n_short = int((status == "too_short").sum())
    everywhere = "(usable >= 0) & (percentile > 0)"
    if n_short:
        limits.append(Q.k_of_n(f"No reference at {n_short} of the {int(status.size)} points: exact did not run there "
                               f"and the simulation is too short ({RULE}); grey ◇.", n_short, int(status.size),
                               f"(usable != 0) & ({kind_q} == 0) & ~{Q.beyond_grid(cmp)}", everywhere,
                               {"service": service, "approximation": methods}))
    n_beyond = int((status == "beyond_grid").sum())
    if n_beyond:
        limits.append(Q.k_of_n(f"At {n_beyond} of the {int(status.size)} points the percentile lies beyond the time grid "
                               "(t_max) and no reference remains (▸).", n_beyond, int(status.size),
                               f"(usable != 0) & ({kind_q} == 0) & {Q.beyond_grid(cmp)}", everywhere,
                               {"service": service, "approximation": methods}))
    if without:
        limits.append(f"No method has a reference at the {listing([f'{p:g}th' for p in without])} percentile"
                      f"{'s' if len(without) > 1 else ''} in this run: "
                      f"{'it is' if len(without) == 1 else 'they are'} not drawn.")
    return Caption(
        f"Relative percentile error (x_method − x_ref) / x_ref of {what} at each tail percentile (one panel each), "
        "per number of servers R (rows, grouped by method) and load ρ (columns).", findings, limits,
        [("The reference is exact's percentile where exact ran (no noise: a difference counts beyond one grid step) and "
         "the mean simulated percentile elsewhere (a dot in the cell's corner; a difference counts where the 95% CI of "
         "the mean error excludes 0). White: no difference; red: the method promises shorter sojourns than the "
         "reference (optimistic); blue: longer. Grey ◇: no reference (exact did not run and the simulation has too few "
         "customers beyond the percentile); ○ not run; × not a CDF. The colour bound holds 95% of the differences "
         "that count; beyond it the colour saturates.")])


def percentile_error_vs_rho(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Relative percentile error of the paper's A–F against the best reference (maps, one panel per percentile)."""
    return _percentile_error_figure(cmp, stem, series(cmp, "faithful"), "the paper's methods A–F", service, **kw)


def percentile_error_vs_rho_corrected(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Relative percentile error of the corrected chains and T against the best reference, and of exact against the
    simulation (maps, one panel per percentile)."""
    lines = [s for s in series(cmp, "corrected") if s.method != "exact"]
    lines += [s for s in series(cmp, "corrected") if s.method == "exact"]
    return _percentile_error_figure(cmp, stem, lines, "the corrected methods, T and exact", service, **kw)


# =========================================================================== run time
def _families(cmp):
    present = cmp["approximation"].values.tolist()
    return [(name, ms, color) for name, ms, color in (
        ("paper-faithful A–F", [m for m in FAITHFUL if m in present], "tab:blue"),
        ("corrected A*–F*", [m for m in present if m.endswith("*")], "#4d4d4d"),
        ("exact", [m for m in present if m == "exact"], _EXACT_COLOR),
        (TAIL_LABEL, [m for m in present if m == TAIL], _TAIL_COLOR)) if ms]


def runtime_vs_R(cmp: xr.Dataset, stem, **kw):
    """Run time per cell vs R per family (faithful A–F, corrected A*–F*, exact, T): median over methods and ρ,
    band = min–max."""
    rt = cmp["run_time"]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    Rv = cmp["R"].values
    meds = {}
    fams = _families(cmp)
    width = 0.12 * (np.min(np.diff(Rv)) if len(Rv) > 1 else 1.0)
    for k, (label, ms, color) in enumerate(fams):
        d = rt.sel({"approximation": ms})
        dims = [x for x in d.dims if x != "R"]
        med = d.median(dims).values
        if not np.isfinite(med).any():
            continue
        meds[label] = (ms, float(np.nanmedian(d.values)))
        x = Rv + (k - (len(fams) - 1) / 2) * width
        ax.plot(x, med, "-", color=color, marker="o", ms=4, label=label, lw=1.6)
        ax.vlines(x, d.min(dims).values, d.max(dims).values, color=color, lw=1.0, alpha=0.7)
    ax.set_yscale("log")
    log_ticks(ax.yaxis)
    ax.set_xticks(Rv)
    ax.set_xlabel("servers R")
    ax.set_ylabel("run time of one (R, ρ) cell (s, wall clock)")
    ax.set_title("Run time of each method family per cell\n(median over its methods and ρ; vertical line: fastest to "
                 "slowest cell)", fontsize=9.5)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    findings = []
    for label, (ms, med) in meds.items():
        findings.append(Claim(f"{label}: median {_g(med)} s per cell.", med,
                              Q.query(f"run_time.sel(approximation={Q.names(ms)})", (("median", None),), None, {}),
                              sig_tol(med, 2)))
    if len(meds) > 1:
        fast = min(meds, key=lambda k: meds[k][1])
        slow = max(meds, key=lambda k: meds[k][1])
        r = meds[slow][1] / meds[fast][1]
        findings.append(Claim(f"The fastest family ({fast}) is a median {_g(r)} times faster than the slowest ({slow}).",
                              r, Q.query(f"run_time.sel(approximation={Q.names(meds[slow][0])}).median() / "
                                         f"run_time.sel(approximation={Q.names(meds[fast][0])}).median()",
                                         (("max", None),), None, {}), sig_tol(r, 2)))
    cap = Caption("Run time of the analytic methods per (R, ρ) cell against the number of servers R, per family: the "
                  "median over the family's methods and loads, the vertical line from the fastest to the slowest cell.",
                  findings, [("Run times are wall-clock times on the machine that ran the pipeline, measured once: they "
                             "vary from run to run and machine to machine.")],
                  ["Methods that share building blocks (A*–F* compute two distinct chains) report their own share."])
    return save(fig, stem, caption=cap, **kw)


# =========================================================================== one cell's distribution
def cdf_cell(sim: xr.Dataset, approx: xr.Dataset, R, rho, stem, service=EXPONENTIAL, cmp=None, **kw):
    """Simulated (pooled, with the replication range) vs approximated CDFs of one cell: the body (linear, up to the
    simulated 99th percentile) and the tail (log, up to the 99.999th). The simulated tail is drawn solid where at
    least 100 customers per replication lie beyond t, dotted beyond (reference too short there).

    Drawn: ``exact``, ``T`` and each distinct corrected chain, plus the three paper methods closest to the reference
    by Wasserstein distance (exact where it ran, else the simulation; from ``cmp`` if given, else all six); methods
    whose "CDF" is not a CDF are left out and named. ``sim``/``approx`` may be lazily opened files.
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
    n_rep = count.sum(-1) + overflow
    n_rep = n_rep[n_rep > 0]
    methods = approx["approximation"].values.tolist()
    flags, _ = fit_validity(Fa)
    ran = {m: bool(np.isfinite(F).any()) for m, F in zip(methods, Fa)}
    ok = {m: ran[m] and not f for m, f in zip(methods, flags)}
    omitted = [m for m in methods if ran[m] and not ok[m]]
    faithful = [m for m in FAITHFUL if m in methods and ok[m]]
    w_ref = None
    if cmp is not None:
        d = w_against_reference(cmp, service)
        w_ref = d.sel(R=R).sel(rho=float(rho), method="nearest")
        if faithful:
            faithful = sorted(faithful, key=lambda m: (not np.isfinite(float(w_ref["W"].sel(approximation=m))),
                                                       float(w_ref["W"].sel(approximation=m))))[:3]
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

    # where the simulated tail stops being a reference: fewer than TAIL_MIN customers per replication beyond t
    per_rep = (1.0 - Fp) * (n_rep.mean() if n_rep.size else 0.0)
    reliable = per_rep >= TAIL_MIN
    t_end = float(t[np.nonzero(reliable)[0][-1]]) if reliable.any() else 0.0
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, logy, xmax in ((ax1, False, max(1.15 * q(0.99), 5 * float(t[1]))),
                           (ax2, True, max(1.1 * q(0.99999), 5 * float(t[1])))):
        n = min(len(t), int(np.searchsorted(t, xmax, side="right")) + 1)
        lo_r, hi_r = np.nanmin(Fr, 0)[:n], np.nanmax(Fr, 0)[:n]
        band = (lo_r, hi_r) if not logy else (1 - hi_r, 1 - lo_r)
        good = reliable[:n]
        ax.fill_between(t[:n], np.where(good, band[0], np.nan), np.where(good, band[1], np.nan), color="0.7",
                        alpha=0.6, lw=0, label="simulation (range over replications)")
        y = (Fp if not logy else 1 - Fp)[:n]
        ax.plot(t[:n], np.where(good, y, np.nan), color="k", lw=1.6, label="simulation (pooled)")
        if (~good).any() and logy:
            ax.plot(t[:n], np.where(~good, y, np.nan), color="k", lw=1.0, ls=":",
                    label=f"simulation where fewer than {TAIL_MIN} customers per replication lie beyond t "
                          "(reference too short)")
        for sr in lines:
            F = Fa[methods.index(sr.method)][:n]
            ax.plot(t[:n], F if not logy else 1 - F, sr.style, color=sr.color, lw=sr.lw, label=sr.label)
        ax.set_xlim(0, xmax)
        ax.set_xlabel(f"sojourn time t ({TIME_UNITS})", fontsize=9)
        ax.grid(alpha=0.3)
    ax1.set_ylim(-0.02, 1.02)
    ax1.set_ylabel("P(T ≤ t)")
    ax1.set_title("body: P(T ≤ t), up to the simulated 99th percentile", fontsize=9)
    ax2.set_yscale("log")
    ax2.set_ylim(1e-6, 1.0)
    ax2.set_ylabel("P(T > t)")
    ax2.set_title("tail: P(T > t) on a log scale, up to the simulated 99.999th percentile", fontsize=9)
    fig.tight_layout()
    h, lab = _legend_entries([ax1, ax2])
    _legend_below(fig, h, lab, ncol=3, fontsize=8)
    shown = [m for sr in lines for m in sr.members]
    hidden = [m for m in methods if ok[m] and m not in shown]
    not_run = [m for m in methods if not ran[m]]
    notes = []
    if not_run:
        notes.append(f"not run here (over budget / truncation cap): {', '.join(not_run)}")
    if omitted:
        notes.append(f"not drawn, not a CDF here: {', '.join(omitted)}")
    if hidden:
        notes.append(f"computed, not drawn (farther from the reference by W than those drawn): {', '.join(hidden)}")
    fig.suptitle(f"Sojourn-time distribution at R = {R}, ρ = {float(rho):.2f} ({service} service)"
                 + ("\n" + "; ".join(notes) if notes else ""), fontsize=10, y=1.0, va="bottom")
    cap = _cdf_caption(cmp, w_ref, R, float(rho), service, faithful, t_end, hidden, not_run, omitted)
    return save(fig, stem, caption=cap, **kw)


def _cdf_caption(cmp, w_ref, R, rho, service, faithful, t_end, hidden, not_run, omitted) -> Caption:
    findings, limits = [], []
    if cmp is not None:
        c = cmp.sel(service=service).sel(R=R).sel(rho=rho, method="nearest")
        rho_c = float(c["rho"])
        sel = {"service": service, "R": R, "rho": rho_c}
        ex = bool((w_ref["reference"] == REF_EXACT).any())
        if faithful:
            wv = {m: float(w_ref["W"].sel(approximation=m)) for m in faithful}
            findings.append(Claim(f"Closest of the paper's A–F to {'exact' if ex else 'the simulation'} by Wasserstein "
                                  f"distance: {faithful[0]} (W = {_g(wv[faithful[0]])} {TIME_UNIT}).",
                                  {"approximation": faithful[0], "value": wv[faithful[0]]},
                                  Q.query(f"({Q.w_ref(cmp)}).sel(approximation="
                                          f"{Q.names([m for m in FAITHFUL if m in c['approximation'].values])})",
                                          (("argmin", None),), None, sel), sig_tol(wv[faithful[0]], 2)))
        ru = reference_usable(cmp).sel(service=service, R=R).sel(rho=rho, method="nearest")
        good = [float(p) for p, v in zip(ru["percentile"].values, ru.values) if v]
        allp = [float(p) for p in ru["percentile"].values]
        words = (f"the {listing([f'{p:g}th' for p in good])} percentile{'s' if len(good) > 1 else ''}" if good
                 else "none")
        findings.append(Claim(f"Of the comparison's percentiles ({', '.join(f'{p:g}th' for p in allp)}), the simulation "
                              f"here can estimate {words} ({TAIL_MIN} or more customers per replication beyond it); "
                              f"its tail is dotted where it cannot (beyond t ≈ {t_end:.3g}).", good,
                              Q.query("percentile", (("list", None),), Q.REF_SIM, sel)))
        if "exact" in c["approximation"].values.tolist() and good and bool(c["usable"].sel(approximation="exact")):
            p = good[-1]
            e = c.sel(percentile=p)
            m, lo, hi = (float(e[v].sel(approximation="exact")) for v in (
                "relative_percentile_error_mean", "relative_percentile_error_ci_low",
                "relative_percentile_error_ci_high"))
            inside = bool(lo <= 0 <= hi)
            findings.append(Claim(f"At the {p:g}th percentile exact and the simulation differ by {_pct(m, 1)} (95% CI "
                                  f"{_pct(lo, 1)} to {_pct(hi, 1)}): {'within' if inside else 'beyond'} the "
                                  "simulation's noise.", [m, lo, hi],
                                  [Q.query(f"{v}.sel(approximation='exact')", (("max", None),), None,
                                           {**sel, "percentile": p}) for v in (
                                      "relative_percentile_error_mean", "relative_percentile_error_ci_low",
                                      "relative_percentile_error_ci_high")], half_unit(1, 100)))
    else:
        limits.append("Without the comparison the figure names no closest method.")
    return Caption(
        f"Simulated against approximated sojourn-time distribution of one cell, R = {R}, ρ = {rho:.2f} "
        f"({service} service; cells chosen in the config, figures.cdf_cells).", findings, limits,
        [("Left: the body P(T ≤ t) up to the simulated 99th percentile; right: the tail P(T > t) on a log scale up to "
         "the 99.999th. Black: the pooled simulation (dotted where fewer than 100 customers per replication lie "
         "beyond t: no reference there); grey band: the range over replications. Drawn: the three of A–F closest to "
         "the reference by W, each distinct corrected chain, exact where it ran and T (dash-dot: the conservative tail "
         "chain, whose survival lies on or above the true one). The title names the methods left out and why.")])


# =========================================================================== M/G/R laws
def mgr_laws(cmp: xr.Dataset, stem, **kw):
    """M/G/R: each law's sojourn time against the exponential case (same mean service time), per R that ran: the
    Wasserstein distance of the law's simulation to the exponential simulation (solid), and to the closest of the
    analytic methods (dashed; generic over methods: any method in the comparison except exact counts); colour = law."""
    from matplotlib.lines import Line2D

    services = [s for s in cmp["service"].values.tolist() if s != EXPONENTIAL]
    vs = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    have = np.isfinite(vs.values).any(axis=(0, 2))
    Rv = cmp["R"].values[have] if have.any() else cmp["R"].values
    cand = [m for m in cmp["approximation"].values.tolist() if m != "exact"]
    run_ok = run_usable(cmp)
    law_rows = "law_relative_error_mean" in cmp and cmp.sizes.get("law_method", 0) > 0
    # a second row where the comparison has methods that take the law itself: their percentile error
    nrows = 2 if law_rows else 1
    fig, grid = plt.subplots(nrows, len(Rv), figsize=(3.3 * len(Rv) + 1.0, 3.6 * nrows), squeeze=False)
    axes = list(grid[0])
    for ax in axes[1:]:
        ax.sharey(axes[0])
    err_axes = list(grid[1]) if law_rows else []
    cmap = plt.get_cmap("tab10")
    rho = cmp["rho"].values
    kinds = set()
    for ax, R in zip(axes, Rv):
        strip = status_strip(ax)
        for k, svc in enumerate(services):
            d = cmp.sel(service=svc, R=R)
            ok_run = run_ok.sel(service=svc, R=R).values
            y1 = np.where(ok_run, d["wasserstein_vs_exponential_sim"].values, np.nan)
            w = d["wasserstein_mean"].where(d["usable"] != 0).sel(approximation=cand)
            y2 = np.where(ok_run, w.min("approximation", skipna=True).values, np.nan)
            ok1, ok2 = np.isfinite(y1), np.isfinite(y2)
            if ok1.any():
                ax.plot(rho[ok1], y1[ok1], "-", color=cmap(k), marker="o", ms=3.5, lw=1.6)
            if ok2.any():
                ax.plot(rho[ok2], y2[ok2], "--", color=cmap(k), marker="s", ms=3, lw=1.1, mfc="white")
            simulated = np.isfinite(d["wasserstein_vs_exponential_sim"].values)
            strip.mark(svc, rho, simulated & ~ok_run, REFERENCE_TOO_SHORT.key, cmap(k))
        kinds |= strip.kinds
        ax.set_xlabel("load ρ")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.set_xticks(rho[np.isfinite(vs.sel(R=R).values).any(0)])
        strip.finish(title=f"R = {R}")
    axes[0].set_ylabel(f"Wasserstein distance W\n({TIME_UNIT})")
    log_ticks(axes[0].yaxis)
    extra_handles, extra_labels = ([], []) if not law_rows else _law_method_row(err_axes, cmp, services, Rv, cmap)
    for ax, R in zip(err_axes, Rv):
        ax.set_xticks(rho[np.isfinite(vs.sel(R=R).values).any(0)])
    fig.tight_layout()
    handles = [Line2D([], [], color=cmap(k), lw=2.5) for k in range(len(services))]
    labels = [f"{s} service" for s in services]
    handles += [Line2D([], [], color="0.3", ls="-", marker="o", ms=3.5),
                Line2D([], [], color="0.3", ls="--", marker="s", ms=3, mfc="white")]
    labels += ["the law's simulation against the M/M/R simulation (same mean service time)",
               "the law's simulation against the closest analytic method"]
    sh, sl = status_handles(kinds)
    _legend_below(fig, handles + extra_handles + sh, labels + extra_labels + sl, ncol=2, fontsize=8.5)
    fig.suptitle("How far each service law's sojourn time is from the exponential (M/M/R) case, at the same mean "
                 "service time", y=1.0, va="bottom", fontsize=10)
    return save(fig, stem, caption=_mgr_caption(cmp, services, cand, law_rows), **kw)


def _mgr_caption(cmp, services, cand, law_rows=False) -> Caption:
    findings, limits = [], []
    run_ok = run_usable(cmp)
    med = {}
    for s in services:
        v = cmp["wasserstein_vs_exponential_sim"].sel(service=s).where(run_ok.sel(service=s)).values
        v = v[np.isfinite(v)]
        if v.size:
            med[s] = float(np.median(v))
    if med:
        order = sorted(med, key=lambda s: -med[s])
        findings.append(Claim("Median distance of each law's sojourn time to the exponential case over the cells that ran: "
                              + listing([f"{s} {_g(med[s])}" for s in order]) + f" {TIME_UNIT}"
                              + (f" ({order[0]} is farthest, {order[-1]} closest)." if len(order) > 1 else "."),
                              med, Q.query("wasserstein_vs_exponential_sim", (("median", ["R", "rho"]),), Q.RUN_OK,
                                           {"service": order}), max(sig_tol(v, 2) for v in med.values())))
        b = {}
        for s in services:
            w = cmp["wasserstein_mean"].sel(service=s).where(cmp["usable"] != 0).sel(approximation=cand).min(
                "approximation", skipna=True).where(run_ok.sel(service=s)).values
            w = w[np.isfinite(w)]
            if w.size:
                b[s] = float(np.median(w))
        if b:
            findings.append(Claim("Median distance of each law's simulation to the closest analytic method: " + listing([f"{s} {_g(b[s])}" for s in order if s in b])
                                  + f" {TIME_UNIT}.", b,
                                  Q.query(f"where(usable != 0, wasserstein_mean, nan).sel(approximation="
                                          f"{Q.names(cand)}).min('approximation')", (("median", ["R", "rho"]),),
                                          Q.RUN_OK, {"service": [s for s in order if s in b]}),
                                  max(sig_tol(v, 2) for v in b.values())))
    if law_rows:
        findings += _law_method_claims(cmp, services)
    ran = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    cells = int(np.isfinite(ran.values).any(0).sum())
    limits.append(Claim(f"The laws ran on a sub-grid of {cells} (R, ρ) cells (mgr in the config): the figure shows no "
                        "other.", cells, Q.query(f"isfinite(wasserstein_vs_exponential_sim.sel(service="
                                                 f"{Q.names(services)})).any('service')",
                                                 (("count", None),), None, {})))
    return Caption(
        "M/G/R: for each non-exponential service law (colour) with the same mean service time, the Wasserstein distance "
        f"(in {TIME_UNIT}) between its simulated sojourn-time CDF and the exponential law's (solid), and between it "
        "and the closest analytic method's CDF (dashed: the smallest over every method of the comparison but exact), "
        "against ρ, one panel "
        "per R that ran"
        + (f"; below, the error of the {_law_row_percentile(cmp):g}th percentile against each law's simulation of "
           "T with the law itself (markers, 95 % CI) and of T for exponential service (dotted), the ±5 % band "
           "shaded" if law_rows else "") + ".", findings, limits,
        [("Small distances mean the M/M/R methods remain usable for that law. A cell whose simulation the run-length "
         "guard judged too short is marked ◇ in the strip above its panel, not drawn.")])


def _law_row_percentile(cmp) -> float:
    """The percentile the M/G/R figure's error row shows: the highest of the comparison's at 99.99 or below where some
    law method's error has a value (the simulation estimates it somewhere), else the highest at 99.99 or below."""
    pct = sorted((float(q) for q in cmp["percentile"].values if float(q) <= 99.99 + 1e-9), reverse=True)
    for q in pct:
        if np.isfinite(cmp["law_relative_error_mean"].sel(percentile=q).values).any():
            return q
    return pct[0] if pct else float(cmp["percentile"].values[-1])


def _law_errors(cmp, services, method=None):
    """(relative errors, in %, of a law method — or, with ``method`` None, of the exponential model's T — at the
    row's percentile over (service, R, rho), where the simulation's run is usable and the error has a value)."""
    q = _law_row_percentile(cmp)
    ok = run_usable(cmp).sel(service=services)
    if method is None:
        if "T" not in cmp["approximation"].values.tolist():
            return np.array([])
        e = cmp["relative_percentile_error_mean"].sel(service=services, approximation="T", percentile=q)
        e = e.where(cmp["few_tail_customers"].sel(service=services, percentile=q) == 0)
    else:
        e = cmp["law_relative_error_mean"].sel(service=services, law_method=method, percentile=q)
    v = 100.0 * e.where(ok).values
    return v[np.isfinite(v)]


def _law_method_row(axes, cmp: xr.Dataset, services, Rv, cmap):
    """The M/G/R figure's second row: per R, the relative error of :func:`_law_row_percentile` (method / simulation
    − 1, mean over replications with its 95 % CI) against ρ, for each method that takes the law itself
    (``law_method``: markers) and for the exponential model's T (dotted), colour = law, the ±5 % band shaded; cells
    whose simulation is too short, or has too few customers beyond the percentile, are left out. Returns the legend's
    (handles, labels) for the methods."""
    from matplotlib.lines import Line2D

    q = _law_row_percentile(cmp)
    rho = cmp["rho"].values
    methods = cmp["law_method"].values.tolist()
    marks = ["D", "^", "v", "P"]
    expo = "T" in cmp["approximation"].values.tolist()
    run_ok = run_usable(cmp)
    for ax, R in zip(axes, Rv):
        ax.axhspan(-5.0, 5.0, color="0.92", zorder=0)
        ax.axhline(0.0, color="0.5", lw=0.8)
        for k, svc in enumerate(services):
            ok_run = run_ok.sel(service=svc, R=R).values
            for j, m in enumerate(methods):
                d = cmp.sel(service=svc, R=R, law_method=m, percentile=q)
                y, lo, hi = (100.0 * np.where(ok_run, d[v].values, np.nan) for v in (
                    "law_relative_error_mean", "law_relative_error_ci_low", "law_relative_error_ci_high"))
                ok = np.isfinite(y)
                if ok.any():
                    ax.errorbar(rho[ok], y[ok], yerr=[np.maximum(y - lo, 0)[ok], np.maximum(hi - y, 0)[ok]],
                                color=cmap(k), marker=marks[j % len(marks)], ms=3.5, lw=1.2, capsize=2)
            if expo:
                d = cmp.sel(service=svc, R=R, approximation="T", percentile=q)
                y = 100.0 * np.where(ok_run & (d["few_tail_customers"].values == 0),
                                     d["relative_percentile_error_mean"].values, np.nan)
                ok = np.isfinite(y)
                if ok.any():
                    ax.plot(rho[ok], y[ok], ":", color=cmap(k), lw=1.3)
        ax.set_xlabel("load ρ")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(f"{q:g}th percentile:\nmethod / simulation − 1 (%)")
    handles = [Line2D([], [], color="0.3", marker=marks[j % len(marks)], ms=4) for j in range(len(methods))]
    labels = [f"{m} with the law itself: its {q:g}th-percentile error (95 % CI)" for m in methods]
    if expo:
        handles.append(Line2D([], [], color="0.3", ls=":"))
        labels.append(f"T for exponential service (the M/M/R model, same mean): its {q:g}th-percentile error")
    return handles, labels


def _law_method_claims(cmp, services) -> list:
    """The M/G/R caption's claims on its error row: each law method's error range and how many cells lie within
    ±5 %, and the exponential model's T's range."""
    q = _law_row_percentile(cmp)
    out = []
    sel = {"service": services, "percentile": q}
    for m in cmp["law_method"].values.tolist():
        e = _law_errors(cmp, services, m)
        if not e.size:
            continue
        expr = f"law_relative_error_mean.sel(law_method={m!r})"
        inside = int(np.sum(np.abs(e) <= 5.0))
        out.append(Claim(f"{m} with the law itself: {q:g}th-percentile error {e.min():+.1f} % to {e.max():+.1f} % "
                         f"against the simulations, within ±5 % in {inside} of {e.size} cells.",
                         [float(e.min()) / 100, float(e.max()) / 100, inside, int(e.size)],
                         [Q.query(expr, (("min", None),), Q.RUN_OK, sel), Q.query(expr, (("max", None),), Q.RUN_OK, sel),
                          Q.query(f"abs({expr}) <= 0.05", (("count", None),), f"{Q.RUN_OK} & isfinite({expr})", sel),
                          Q.query(f"isfinite({expr})", (("count", None),), Q.RUN_OK, sel)], 0.0006))
    if _law_errors(cmp, services).size:
        out += _exponential_model_claims(cmp, services, q)
    return out


def _exponential_model_claims(cmp, services, q) -> list:
    """The seed's question per law (issue 34): where the exponential model's percentile (T) is conservative (its CI
    against the law's simulation above 0) or optimistic (below 0), in how many cells and by how much, and, with
    several laws, each law method's range per law beside it."""
    pre = "sel(approximation='T')"
    where = f"{Q.RUN_OK} & (few_tail_customers == 0) & isfinite(relative_percentile_error_mean.{pre})"
    ok = run_usable(cmp).sel(service=services) & (cmp["few_tail_customers"].sel(service=services, percentile=q) == 0)
    d = cmp.sel(service=services, approximation="T", percentile=q)
    m = d["relative_percentile_error_mean"].where(ok)
    laws = [s for s in services if np.isfinite(m.sel(service=s).values).any()]
    if not laws:
        return []
    sel = {"service": laws, "percentile": q}
    m = m.sel(service=laws)
    n = {s: int(np.isfinite(m.sel(service=s).values).sum()) for s in laws}
    cons = {s: int(((d["relative_percentile_error_ci_low"].sel(service=s) > 0) & np.isfinite(m.sel(service=s))).sum())
            for s in laws}
    opt = {s: int(((d["relative_percentile_error_ci_high"].sel(service=s) < 0) & np.isfinite(m.sel(service=s))).sum())
           for s in laws}
    lo = {s: float(m.sel(service=s).min()) for s in laws}
    hi = {s: float(m.sel(service=s).max()) for s in laws}
    parts = [f"{s} {100 * lo[s]:+.1f} % to {100 * hi[s]:+.1f} % (conservative in {cons[s]}, optimistic in {opt[s]} "
             f"of {n[s]} cells)" for s in laws]
    red = (("min", ["R", "rho"]),)
    out = [Claim(f"The exponential model's {q:g}th percentile against each law's simulation (conservative: its CI "
                 "above the simulation's value, optimistic: below): " + listing(parts) + ".",
                 [lo, hi, cons, opt, n],
                 [Q.query(f"relative_percentile_error_mean.{pre}", red, where, sel),
                  Q.query(f"relative_percentile_error_mean.{pre}", (("max", ["R", "rho"]),), where, sel),
                  Q.query(f"relative_percentile_error_ci_low.{pre} > 0", (("count", ["R", "rho"]),), where, sel),
                  Q.query(f"relative_percentile_error_ci_high.{pre} < 0", (("count", ["R", "rho"]),), where, sel),
                  Q.query(f"isfinite(relative_percentile_error_mean.{pre})", (("count", ["R", "rho"]),), where, sel)],
                 0.0006)]
    for meth in cmp["law_method"].values.tolist() if len(laws) > 1 else []:  # one law: the range above says it
        e = cmp["law_relative_error_mean"].sel(service=laws, law_method=meth, percentile=q).where(
            run_usable(cmp).sel(service=laws))
        have = [s for s in laws if np.isfinite(e.sel(service=s).values).any()]
        if not have:
            continue
        lo2 = {s: float(e.sel(service=s).min()) for s in have}
        hi2 = {s: float(e.sel(service=s).max()) for s in have}
        expr = f"law_relative_error_mean.sel(law_method={meth!r})"
        sel2 = {"service": have, "percentile": q}
        out.append(Claim(f"{meth} with the law itself, per law: " + listing(
            [f"{s} {100 * lo2[s]:+.1f} % to {100 * hi2[s]:+.1f} %" for s in have]) + ".", [lo2, hi2],
            [Q.query(expr, red, Q.RUN_OK, sel2), Q.query(expr, (("max", ["R", "rho"]),), Q.RUN_OK, sel2)], 0.0006))
    return out


@serialized
def all_figures(cmp_path, sim_path, approx_path, outdir, settings: dict, formats=("png", "pdf"), dpi=120):
    """Every figure :func:`figures` lists for the study's config section ``settings`` into ``outdir``, each with its
    caption; returns the written paths."""
    cmp = read_netcdf(cmp_path)  # small: (service, R, rho, approximation, replication, percentile)
    with NETCDF_LOCK, xr.open_dataset(approx_path, engine="netcdf4") as approx:
        if "validity_reason" in approx:  # why a method has no value: over budget vs invalid (status marks)
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


# =========================================================================== reproduction of the paper's §6
REP_SOURCE = "reproduction.nc"
_FAMILY_STYLE = {"faithful": ("tab:blue", "o", "ours: best of A–F"), "corrected": ("tab:orange", "s", "ours: best of A*–F*"),
                 "exact": (_EXACT_COLOR, "^", "ours: exact"), TAIL: (_TAIL_COLOR, "v", f"ours: {TAIL_LABEL}")}


def _rq(expr, reduce=(("count", None),), where=None, sel=None) -> Claim:
    from ..core.claims import Query

    return Query(REP_SOURCE, expr, dict(sel or {}), where, [list(x) for x in reduce])


def _shared_points(present):
    """[(index of R, index of ρ)] of the paper's table cells this run has (present: (rho, R) bool)."""
    return [(k, b) for k in range(present.shape[1]) for b in range(present.shape[0]) if present[b, k]]


def _message_panel(ax, text):
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=9.5, wrap=True, transform=ax.transAxes,
            bbox={"facecolor": "0.96", "edgecolor": "0.7"})


def _paper_beside_ours(rep, stem, *, prefix, pvar, ovar, refvar, fams, relative_from, title, what, absolute, kw):
    """One panel per percentile: the paper's value (black diamonds) beside ours per family at the (R, ρ) cells of
    the paper's table that this run has (x, in order of R then ρ), as relative errors (%); where our reference is
    too short, a mark in the strip above the panel instead of a value."""
    from matplotlib.lines import Line2D

    P = rep[f"{prefix}_percentile"].values
    rhos, Rs = rep[f"{prefix}_rho"].values, rep[f"{prefix}_R"].values
    ref = rep[refvar]  # (family, percentile, rho, R)
    present = (ref.sel(family="faithful") != -1).any(f"{prefix}_percentile").transpose(f"{prefix}_rho", f"{prefix}_R").values
    pts = _shared_points(present)
    fams = [f for f in fams if f in rep["family"].values.tolist()]
    fig, axes = plt.subplots(len(P), 1, figsize=(max(6.5, 0.5 * len(pts) + 1.8), 3.1 * len(P) + 0.4), squeeze=False,
                             sharex=True)
    axes = axes[:, 0]
    kinds, drawn = set(), set()
    x = np.arange(len(pts))
    for a, (ax, p) in enumerate(zip(axes, P)):
        if not pts:
            _message_panel(ax, "this run's grid shares no (R, ρ) cell\nwith the paper's table")
            continue
        strip = status_strip(ax)
        scale = relative_from(a) if relative_from is not None else None  # (rho, R) reference percentiles
        paper = np.array([rep[pvar].values[a, b, k] for k, b in pts], float)
        if scale is not None:
            sc = np.array([scale[b, k] for k, b in pts])
            paper = 100 * paper / sc
        else:
            paper = 100 * paper
        if absolute:
            paper = np.abs(paper)
        ax.axhline(0, color="0.5", lw=0.7)
        ax.plot(x, paper, "D", mfc="none", color="k", ms=6.5, mew=1.3, label="paper (one simulation seed)", zorder=5)
        n = len(fams)
        for f, fam in enumerate(fams):
            color, marker, label = _FAMILY_STYLE.get(fam, ("0.4", "d", fam))
            fi = rep["family"].values.tolist().index(fam)
            vals = [np.array([rep[v].values[fi, a, b, k] for k, b in pts], float) for v in ovar]
            rk = np.array([ref.values[fi, a, b, k] for k, b in pts])
            if scale is not None:
                vals = [100 * v / sc for v in vals]
            else:
                vals = [100 * v for v in vals]
            m, lo, hi = vals
            if absolute:
                a_, b_ = np.abs(lo), np.abs(hi)
                straddle = (lo <= 0) & (hi >= 0)
                lo, hi, m = np.where(straddle, 0.0, np.minimum(a_, b_)), np.maximum(a_, b_), np.abs(m)
            xs = x + (f - (n - 1) / 2) * 0.16
            ok = np.isfinite(m)
            for rkind, face in ((REF_EXACT, color), (REF_SIMULATION, "white")):
                sel = ok & (rk == rkind)
                if sel.any():
                    drawn.add(rkind)
                    err = np.vstack([np.maximum(m[sel] - lo[sel], 0), np.maximum(hi[sel] - m[sel], 0)])
                    ax.errorbar(xs[sel], m[sel], yerr=err, fmt=marker, color=color, mfc=face, ms=5, lw=1, capsize=2,
                                label=label if rkind == REF_EXACT or not (ok & (rk == REF_EXACT)).any() else None)
            strip.mark(fam, x, rk == 0, REFERENCE_TOO_SHORT.key, color, label.replace("ours: ", ""))
        kinds |= strip.kinds
        ax.set_xticks(x, [f"R={Rs[k]}\nρ={rhos[b]:g}" for k, b in pts], fontsize=7.5)
        ax.tick_params(axis="x", labelbottom=True)
        ax.set_xlim(-0.6, len(pts) - 0.4)
        ax.grid(alpha=0.3, axis="y")
        ax.set_ylabel(what, fontsize=8.5)
        strip.finish(title=f"{p:g}th percentile")
    axes[-1].set_xlabel("cells of the paper's table that this run has (servers R, load ρ)", fontsize=8.5)
    h, lab = _legend_entries(axes)
    if REF_EXACT in drawn:
        h.append(Line2D([], [], ls="none", marker="o", color="0.3", ms=5))
        lab.append("filled: ours against exact (no noise)")
    if REF_SIMULATION in drawn:
        h.append(Line2D([], [], ls="none", marker="o", mfc="white", mec="0.3", ms=5))
        lab.append("hollow: ours against our simulation, with its 95% CI")
    fig.tight_layout(h_pad=1.5)
    sh, sl = status_handles(kinds)
    _legend_below(fig, h + sh, lab + sl, ncol=2, fontsize=8)
    fig.suptitle(title, y=1.0, va="bottom", fontsize=10)
    return fig, pts


def reproduction_percentile_errors(rep: xr.Dataset, stem, **kw):
    """§6.1/§6.2: the paper's signed percentile error of the best method for that percentile beside ours per family,
    as a share of the reference percentile (exact's where it ran, else our mean simulated one)."""
    fams = ["faithful", "corrected", TAIL]
    fig, pts = _paper_beside_ours(
        rep, stem, prefix="pct", pvar="paper_percentile_error",
        ovar=("percentile_error", "percentile_error_ci_low", "percentile_error_ci_high"),
        refvar="percentile_error_reference", fams=fams,
        relative_from=lambda a: rep["reference_percentile"].values[a],
        title="Paper §6.1/§6.2: error of the best method for each percentile,\nthe paper's beside ours (below 0: "
              "optimistic)", what="(method − reference) / reference (%)", absolute=False, kw=kw)
    return save(fig, stem, caption=_reproduction_caption(rep, "pct", "percentile_error_reference", pts,
                                                         "§6.1 (99.99th) and §6.2 (99.999th percentile)"), **kw)


def reproduction_relative_errors(rep: xr.Dataset, stem, **kw):
    """§6.3: the paper's |relative error| of the best method by Wasserstein distance beside ours per family."""
    fams = ["faithful", "corrected", TAIL]
    fig, pts = _paper_beside_ours(
        rep, stem, prefix="rel", pvar="paper_relative_error",
        ovar=("relative_error", "relative_error_ci_low", "relative_error_ci_high"),
        refvar="relative_error_reference", fams=fams, relative_from=None,
        title="Paper §6.3: |relative percentile error| of the best method by Wasserstein distance,\nthe paper's "
              "beside ours", what="|method − reference| / reference (%)", absolute=True, kw=kw)
    return save(fig, stem, caption=_reproduction_caption(rep, "rel", "relative_error_reference", pts,
                                                         "§6.3 (99th, 99.9th and 99.99th percentiles)"), **kw)


def _reproduction_caption(rep, prefix, refvar, pts, section) -> Caption:
    findings, limits = [], []
    ref = rep[refvar].sel(family="faithful").values  # (percentile, rho, R)
    n_cells = len(pts)
    n_total = rep.sizes[f"{prefix}_rho"] * rep.sizes[f"{prefix}_R"]
    fam_sel = {"family": "faithful"}
    limits.append(Claim(f"This run has {n_cells} of the {n_total} (R, ρ) cells of the paper's {section} table; the "
                        "others are not drawn.", n_cells,
                        _rq(f"({refvar} != -1).any('{prefix}_percentile')", sel=fam_sel)))
    inrun = ref != -1
    if inrun.any():
        k_ex, k_sim, k_none = (int((ref == v).sum()) for v in (REF_EXACT, REF_SIMULATION, 0))
        n = int(inrun.sum())
        findings.append(Claim(f"Of the {n} (percentile, cell) points of ours (best of A–F), {k_ex} are measured against "
                              f"exact and {k_sim} against our simulation.", [n, k_ex, k_sim],
                              [_rq(f"{refvar} != -1", sel=fam_sel), _rq(f"{refvar} == 1", sel=fam_sel),
                               _rq(f"{refvar} == 2", sel=fam_sel)]))
        if k_none:
            limits.append(Claim(f"At {k_none} points our reference is too short ({RULE}): no value of ours there (◇).",
                                k_none, _rq(f"{refvar} == 0", sel=fam_sel)))
        if prefix == "pct":
            ours = rep["percentile_error"].sel(family="faithful").values
            paper = rep["paper_percentile_error"].values
            both = np.isfinite(ours) & np.isfinite(paper) & (ref > 0)
            if both.any():
                k = int((np.sign(ours[both]) == np.sign(paper[both])).sum())
                w = "(percentile_error_reference.sel(family='faithful') > 0) & isfinite(paper_percentile_error)"
                findings.append(Claim(f"Ours and the paper's have the same sign (both optimistic or both above) at {k} "
                                      f"of those {int(both.sum())} points.", [k, int(both.sum())],
                                      [_rq("(percentile_error.sel(family='faithful') * paper_percentile_error) > 0",
                                           where=w), _rq(w)]))
        else:
            ours = np.abs(rep["relative_error"].sel(family="faithful").values)
            paper = rep["paper_relative_error"].values
            both = np.isfinite(ours) & np.isfinite(paper) & (ref > 0)
            if both.any():
                d = np.abs(ours[both] - paper[both])
                med = float(np.median(d))
                w = "(relative_error_reference.sel(family='faithful') > 0) & isfinite(paper_relative_error)"
                findings.append(Claim(f"Where both exist ({int(both.sum())} points) ours and the paper's |relative "
                                      f"error| differ by a median {100 * med:.1f} percentage points.", med,
                                      _rq("abs(abs(relative_error.sel(family='faithful')) - paper_relative_error)",
                                          (("median", None),), w), half_unit(1, 100)))
    return Caption(
        f"The paper's {section} (Palmer & Martín-Pérez, arXiv 2210.17227; one simulation seed) beside ours at the "
        "cells of its table this run has: the paper's value (black diamonds) and, per family, the best method of "
        "ours (blue A–F, orange A*–F*, teal T).", findings, limits,
        [("Ours is measured against the best reference: exact's percentile where exact ran (filled, no noise), else our "
         "mean simulated percentile (hollow, with its 95% CI); both are shown as a share of that reference percentile, "
         "the paper's too. Where our simulation has too few customers beyond the percentile and exact did not run, we "
         "have no reference and draw nothing (◇ in the strip).")])


def reproduction_map(rep: xr.Dataset, stem, **kw):
    """§6.4: the paper's best of A–F, ours with agreement marks, and how much the corrected methods gain."""
    from matplotlib.colors import ListedColormap

    from .claims import SAME, TIE, TOO_SHORT

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

    cmap = ListedColormap([plt.get_cmap("tab10")(i) for i in range(len(letters))]).with_extremes(bad="0.93")
    few = len(R) * len(rho) <= 150
    w = max(7.5, min(11.5, 0.13 * len(rho) + 3.5))
    fig, axes = plt.subplots(3, 1, figsize=(w, 3 * (0.3 * len(R) + 1.35)), squeeze=False)
    axes = axes[:, 0]
    step = max(1, math.ceil(len(rho) / 20))
    ours_shown = np.where(agree == TOO_SHORT, "", ours)
    for ax, Z, title in ((axes[0], codes(paper), "the paper (the authors' best.csv, one seed)"),
                         (axes[1], codes(ours_shown), "ours: best of A–F by mean W over replications")):
        im = ax.imshow(np.ma.masked_invalid(Z), aspect="auto", origin="lower", cmap=cmap, vmin=-0.5,
                       vmax=len(letters) - 0.5, interpolation="nearest")
        ax.set_title(title, fontsize=9.5, loc="left")
        cb = fig.colorbar(im, ax=ax, ticks=range(len(letters)), fraction=0.04, pad=0.01)
        cb.ax.set_yticklabels(letters)
        if few:
            L = paper if ax is axes[0] else ours_shown
            for (i, j), v in np.ndenumerate(L):
                if v:
                    ax.text(j, i, v, ha="center", va="center", fontsize=8, color="w", fontweight="bold")
    ii, jj = np.nonzero(agree == 0)
    axes[1].plot(jj, ii, "x", color="k", ms=6 if few else 4, mew=1.5 if few else 1.0, ls="none")
    pale = np.zeros(agree.shape + (4,))
    pale[..., :3], pale[..., 3] = 1.0, np.where(agree == TIE, 0.55, 0.0)
    axes[1].imshow(pale, aspect="auto", origin="lower", interpolation="nearest")
    short = agree == TOO_SHORT
    mark_cells(axes[1], short, REFERENCE_TOO_SHORT.key, ms=6 if few else 3)
    ratio = rep["best_wasserstein"].sel(family="corrected").values / rep["best_wasserstein"].sel(family="faithful").values
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.where(short, np.nan, np.log10(ratio))
    lim = max(0.5, float(np.nanmax(np.abs(lr)))) if np.isfinite(lr).any() else 1.0
    im = axes[2].imshow(np.ma.masked_invalid(lr), aspect="auto", origin="lower", cmap=plt.get_cmap("RdBu_r").with_extremes(
        bad="0.93"), vmin=-lim, vmax=lim, interpolation="nearest")
    mark_cells(axes[2], short, REFERENCE_TOO_SHORT.key, ms=6 if few else 3)
    cb = fig.colorbar(im, ax=axes[2], fraction=0.04, pad=0.01)
    cb.set_label("log10 of the ratio", fontsize=8)
    axes[2].set_title("W of the best corrected (A*–F*) / W of the best of A–F: blue = the corrected methods are closer",
                      fontsize=9.5, loc="left")
    for ax in axes:
        ax.set_xticks(range(0, len(rho), step), [f"{r:g}" for r in rho[::step]], rotation=0 if len(rho) <= 12 else 90,
                      fontsize=8)
        ax.set_yticks(range(len(R)), [str(r) for r in R], fontsize=8)
        ax.set_ylabel("servers R")
    axes[-1].set_xlabel("load ρ")
    fig.tight_layout()
    handles, labels = [], []
    if short.any():
        handles, labels = status_handles([REFERENCE_TOO_SHORT.key])
        labels = [labels[0] + ": no verdict, left out of the shares"]
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    more = []
    if (~short & ((paper == "") | (ours == ""))).any():
        more.append((Patch(facecolor="0.93", edgecolor="0.6"), "light grey: not in this run, or not in the paper's grid"))
    if (agree == 0).any():
        more.append((Line2D([], [], ls="none", marker="x", color="k", ms=6), "ours differs from the paper's beyond a tie"))
    if (agree == TIE).any():
        more.append((Patch(facecolor="0.9", edgecolor="0.6"), "pale: the paper's method ties with ours within the 95% CI"))
    handles = [h for h, _ in more] + list(handles)
    labels = [t for _, t in more] + list(labels)
    _legend_below(fig, handles, labels, ncol=2, fontsize=8)
    n = int(rep.attrs.get("agreement_cells", 0))
    k_same = int((agree == SAME).sum())
    k_tie = int((agree == TIE).sum())
    fig.suptitle(f"Paper §6.4: the best of A–F by Wasserstein distance, the paper's and ours ({n} cells in both):\n"
                 f"the same method in {k_same}, a tie within the 95% CI in {k_tie}, different in {n - k_same - k_tie}",
                 fontsize=10, y=1.0, va="bottom")
    return save(fig, stem, caption=_reproduction_map_caption(rep), **kw)


def _reproduction_map_caption(rep) -> Caption:
    from .claims import DISAGREE, SAME, TIE, TOO_SHORT

    ag = rep["agreement"].values
    n = int(((ag != -1) & (ag != TOO_SHORT)).sum())
    k = [int((ag == v).sum()) for v in (SAME, TIE, DISAGREE)]
    findings = [Claim(f"Of the {n} cells in both the paper's grid and this run (our simulation long enough), ours is the "
                      f"paper's method in {k[0]}, ties with it within the 95% CI in {k[1]} and differs in {k[2]}.",
                      [n] + k, [_rq("(agreement >= 0)"), _rq("agreement == 2"), _rq("agreement == 1"),
                                _rq("agreement == 0")])]
    ratio = rep["best_wasserstein"].sel(family="corrected").values / rep["best_wasserstein"].sel(family="faithful").values
    ok = np.isfinite(ratio) & (ag != TOO_SHORT)
    if ok.any():
        kc = int((ratio[ok] < 1).sum())
        findings.append(Claim(f"The best corrected method is closer to the simulation than the best of A–F at {kc} of "
                              f"{int(ok.sum())} cells.", [kc, int(ok.sum())],
                              [_rq("best_wasserstein.sel(family='corrected') < best_wasserstein.sel(family='faithful')",
                                   where="agreement != -2"),
                               _rq("isfinite(best_wasserstein.sel(family='corrected') / best_wasserstein.sel(family="
                                   "'faithful'))", where="agreement != -2")]))
    limits = []
    ks = int((ag == TOO_SHORT).sum())
    if ks:
        limits.append(Claim(f"At {_cells_text(ks)} our simulation is too short to trust (run-length guard): no verdict there "
                            "(◇), left out of the counts.", ks, _rq("agreement == -2")))
    return Caption(
        "Paper §6.4, best of the paper's methods A–F by Wasserstein distance per (R, ρ) cell. Top: the authors' "
        "published map (experiments/best.csv, one seed). Middle: ours, the best of A–F by mean Wasserstein distance "
        "over replications; a cross marks a disagreement, a pale cell a tie (the paper's method's 95% CI of W overlaps "
        "our best's: a difference one seed cannot resolve). Bottom: log10 of the best corrected method's W over the "
        "best of A–F's; blue = the corrected methods are closer.", findings, limits,
        [("Methods whose approximated CDF is not a CDF are never best; where the paper's method is not a CDF in our run "
         "the cell counts as a disagreement. Light grey: not in this run or not in the paper's grid.")])


# =========================================================================== key results (report tables)
RHO_BANDS = ((0.0, 0.5), (0.5, 0.8), (0.8, 0.9), (0.9, 1.0))
R_BANDS = ((1, 1), (2, 3), (4, 6), (7, 10), (11, 10**6))


def _bands(values, bands):
    """[(label, mask, (lo, hi))] of the ``bands`` (closed integer or half-open real intervals) that hold any of
    ``values``."""
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
            out.append((lab, m, (lo, hi)))
    return out


def _band_where(dim, lo, hi, integer):
    return f"(({dim} >= {lo!r}) & ({dim} <= {hi!r}))" if integer else f"(({dim} >= {lo!r}) & ({dim} < {hi!r}))"


def key_results(cmp: xr.Dataset, stem, service=EXPONENTIAL) -> list:
    """The study's key result as tables (``<stem>.csv``/``.html``) with the report's caption (``<stem>.rst``): the
    clearly closest method by Wasserstein distance to the best reference per (R, ρ) band; when to trust which method
    per load band and percentile (the recommendation and how the simulation checks it); and each method's error
    against the best reference per percentile. Points without a reference ("reference too short") count in no
    statistic."""
    from ..core.tables import write_table

    c = cmp.sel(service=service)
    b = best_by_reference(cmp, service)
    _, joined = _groups(cmp)
    best, tie, too_short = b["best"], b["tie"], b["too_short"]
    rb, pb = _bands(c["R"].values, R_BANDS), _bands(c["rho"].values, RHO_BANDS)
    header = ["servers R"] + [lab for lab, _, _ in pb]
    rows = []
    for rl, rm, _ in rb:
        row = [rl]
        for _, pm, _ in pb:
            sub, t, sh = best[np.ix_(rm, pm)], tie[np.ix_(rm, pm)], too_short[np.ix_(rm, pm)]
            clear = [m for m, x in zip(sub.ravel(), t.ravel()) if m and not x]
            n = int((sub != "").sum())
            if clear:
                u, k = np.unique(clear, return_counts=True)
                top = str(u[np.argmax(k)])
                cell = f"{top} ({int(k.max())} of {n})"
            else:
                cell = "no clear winner" if n else "—"
            extra = []
            if t.any():
                extra.append(f"{int(t[sub != ''].sum())} tie{'s' if t[sub != ''].sum() != 1 else ''}")
            if sh.any():
                extra.append(f"{int(sh.sum())} reference too short")
            row.append(cell + (f"; {', '.join(extra)}" if extra else ""))
        rows.append(row)
    # when to trust which method: the recommendation, and how the simulation checks it where it can
    from .compare import SIMULATE

    a = against_reference(cmp, service)
    rec = c["recommended"].transpose("R", "rho", "percentile").values.astype(str)
    methods = c["approximation"].values.tolist()
    err = a["error"].transpose("R", "rho", "approximation", "percentile").values
    refk = a["reference"].transpose("R", "rho", "approximation", "percentile").values
    ru = reference_usable(cmp).sel(service=service).transpose("R", "rho", "percentile").values
    trust = []
    for pl, pm, _ in pb:
        for k, p in enumerate(c["percentile"].values):
            r = rec[:, pm, k]
            ok = ~np.isin(r, ["", SIMULATE, "nan"])
            labels = r[ok]
            if labels.size:
                u, n = np.unique(labels, return_counts=True)
                order = np.argsort(-n)
                use = "; ".join(f"{u[i]} ({n[i]} of {r.size})" for i in order)
            else:
                use = "—"
            # the recommended method against the simulation, where the simulation is a usable reference
            vals = []
            for i in range(r.shape[0]):
                for j_, j in enumerate(np.nonzero(pm)[0]):
                    m = r[i, j_]
                    if m in methods and ru[i, j, k]:
                        e = c["relative_percentile_error_mean"].sel(approximation=m, percentile=p).transpose(
                            "R", "rho").values[i, j]
                        if np.isfinite(e):
                            vals.append(abs(float(e)))
            check = (f"{100 * np.median(vals):.1f} / {100 * np.max(vals):.1f} ({len(vals)} of {r.size} cells)" if vals
                     else f"reference too short (0 of {r.size} cells)")
            trust.append([pl, f"{p:g}", use, check, f"{100 * (1 - ok.mean()):.0f}"])
    # each method against the best reference, per percentile
    per = []
    P = c["percentile"].values
    for fam in ("faithful", "corrected"):
        for sr in series(cmp, fam):
            m = methods.index(sr.method)
            row = [sr.label]
            for k in range(len(P)):
                e = err[:, :, m, k]
                rk = refk[:, :, m, k]
                have = np.isfinite(e)
                if not have.any():
                    row.append("reference too short" if (a["status"].values[:, :, m, k] == "too_short").any()
                               else "—")
                    continue
                ne, ns = int((rk == REF_EXACT).sum()), int((rk == REF_SIMULATION).sum())
                src = ", ".join(x for x in ((f"{ne} vs exact" if ne else ""), (f"{ns} vs sim" if ns else "")) if x)
                row.append(f"{100 * np.median(np.abs(e[have])):.1f} / {100 * e[have].min():+.1f} ({src})")
            per.append(row)
    notes = [f"Table 1: per band of servers R and load ρ, the method most often clearly closest to the truth by "
             f"Wasserstein distance (to exact's CDF where exact ran, else to the simulated CDF; exact itself is the "
             f"reference and no candidate; {service} service), in how many of the band's cells with a reference; ties "
             "(another method within the CI, or within a tenth of the grid step of exact) and cells without a "
             "reference are counted apart and in no share. "
             + ("; ".join(f"{k} stands for {v}" for k, v in joined.items()) + " (identical CDFs)." if joined else ""),
             ("Table 2: the recommendation (exact where it ran; else T where the comparison found it never below exact; "
             "else the most accurate method that does not underestimate the percentile beyond its CI) and, as a check, "
             "the recommended method's median / largest |relative error| (%) against the simulated percentile at the "
             f"cells where the simulation is a usable reference ({RULE}); 'reference too short' where it is at none. "
             "Exact's own error is its computed truncation bound; T's is at most its stated margin."),
             ("Table 3: each method's median |relative percentile error| / its most negative error (%) against the best "
             "reference: exact's percentile where exact ran (no noise), else the simulated one where usable; the "
             "points of each kind in brackets; exact is set against the simulation. 'reference too short': no point "
             "with a reference.")]
    more = [("When to trust which method (all R)",
             ["load band", "percentile", "recommended (cells)", "check against the simulation: median / max |error| %",
              "no recommendation %"], trust),
            ("Each method against the best reference: median |error| / most negative error (%)",
             ["method"] + [f"{p:g}th" for p in P], per)]
    cap = _key_caption(cmp, service, b, rec, ru, trust, per)
    return write_table(stem, "Closest method per (R, ρ) band (Wasserstein distance to the best reference)", header,
                       rows, notes, more, caption=cap)


def _key_caption(cmp, service, b, rec, ru, trust, per) -> Caption:
    from .compare import SIMULATE

    c = cmp.sel(service=service)
    sel = {"service": service}
    findings, limits = [], []
    counts = {m: int((rec == m).sum()) for m in sorted(set(rec.ravel().tolist())) if m and m != SIMULATE}
    n = int(rec.size)
    if counts:
        order = sorted(counts, key=lambda m: -counts[m])
        findings.append(Claim(f"Use {listing([f'{m} at {counts[m]}' for m in order])} of the {n} (R, ρ, percentile) "
                              "points.", counts, Q.query("recommended", (("unique", None),),
                                                         "recommended != 'simulate'", sel)))
    sim_n = int((rec == SIMULATE).sum())
    if sim_n:
        limits.append(Claim(f"At {sim_n} points no method qualifies: simulate.", sim_n,
                            Q.query("recommended == 'simulate'", (("count", None),), None, sel)))
    P = c["percentile"].values
    dead = [float(p) for k, p in enumerate(P) if not ru[:, :, k].any()]
    findings_p = [float(p) for k, p in enumerate(P) if ru[:, :, k].any()]
    limits.append(Claim("The simulation is a usable reference at no cell for the "
                        + (listing([f"{p:g}th" for p in dead]) + " percentile" + ("s" if len(dead) > 1 else "")
                           if dead else "— (none)")
                        + f" ({RULE}): those rows show 'reference too short' and their errors count nowhere.",
                        dead, Q.query("percentile", (("list", None),),
                                      f"~({Q.REF_SIM}).any(['R', 'rho'])", sel))) if dead else None
    limits = [x for x in limits if x is not None]
    if findings_p:
        findings.append(Claim("The simulation can check the recommendation at the "
                              + listing([f"{p:g}th" for p in findings_p]) + " percentile"
                              + ("s" if len(findings_p) > 1 else "") + " (at some cells).", findings_p,
                              Q.query("percentile", (("list", None),), f"({Q.REF_SIM}).any(['R', 'rho'])", sel)))
    short = b["too_short"]
    if short.any():
        limits.append(Claim(f"{_cells_text(int(short.sum())).capitalize()} without exact and with a run too short to "
                            "trust have no closest method.", int(short.sum()),
                            Q.query("(sim_run_valid == 0) & (usable.sel(approximation='exact') == 0)"
                                    if Q.has_exact(cmp) else "(sim_run_valid == 0)", (("count", None),), None, sel)))
    return Caption(
        f"Key result of JSQ-PS ({service} service): which method is closest to the truth per band of servers R and "
        "load ρ; when to trust which method per load band and tail percentile, with how the simulation checks it; and "
        "each method's error against the best reference. CSV beside it: key_results.csv.", findings, limits,
        [("A simulated percentile counts only where at least 100 customers per replication lie beyond it and the run "
         "is long enough; elsewhere the tables say 'reference too short' and no number from there enters a median or "
         "maximum.")])


def page_caption(rep: xr.Dataset):
    """The caption of the reproduction page (:class:`sojourn.core.claims.Caption`): how much of the paper's §6 this
    run reproduces, from ``rep``."""
    from ..core.claims import Caption, Claim
    findings = list(_reproduction_map_caption(rep).findings[:1])
    limits = []
    ref = rep["percentile_error_reference"].sel(family="faithful").values
    inrun = ref != -1
    if inrun.any() and (ref == 0).any():
        k = int((ref == 0).sum())
        limits.append(Claim(f"Of our {int(inrun.sum())} §6.1/§6.2 points (best of A–F), {k} have no reference (exact "
                            "did not run and our simulation has too few customers beyond the percentile): 'reference "
                            "too short' in the tables.", [int(inrun.sum()), k],
                            [_rq("percentile_error_reference != -1", sel={"family": "faithful"}),
                             _rq("percentile_error_reference == 0", sel={"family": "faithful"})]))
    return Caption(
        "Reproduction of the paper's §6 tables (Palmer & Martín-Pérez, arXiv 2210.17227) from this run: §6.1/§6.2 the "
        "99.99th and 99.999th percentile errors of the best method per percentile beside the published values, §6.3 "
        "the relative errors of the best-by-Wasserstein method, §6.4 the best-of-A–F map, and the same for the "
        "corrected methods, exact and T.", findings, limits,
        [("Ours are measured against exact where it ran, else against our simulation where it is long enough (with "
         "95% CIs over replications). Cells of the paper's tables that this run's grid lacks are left empty. Data: "
         "reproduction.nc.")])
