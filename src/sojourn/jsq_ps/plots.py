"""Figures of the JSQ-PS study (matplotlib, Agg backend): one function per figure, each saved in every format with its
caption (``<stem>.rst``, :class:`sojourn.core.present.claims.Caption`) written from the data it draws.

Every comparison is against the best reference there (:func:`sojourn.jsq_ps.compare.against_reference`): exact where it
ran, else the simulation where it can tell (enough customers beyond the percentile, a run long enough), else none —
drawn as "reference too short" (:data:`sojourn.core.present.figures.REFERENCE_TOO_SHORT`), never as a value, and left
out of every statistic a caption or table states. A difference counts only beyond its CI (against the simulation) or
beyond the grid's resolution (against exact); the colour maps draw the rest as "no difference". Status marks (not run,
invalid fit, reference too short) sit in a strip above a panel or inside a map cell, never at a y that reads as data.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import xarray as xr

from ..core.estimates.reference import rule_words
from ..core.estimates.stats import TAIL_MIN, cdf_at_left_edges
from ..core.files.io import NETCDF_LOCK, read_netcdf
from ..core.present.claims import Caption, Claim, half_unit, listing, sig_tol
from ..core.present.figures import (
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
    """The figures (:class:`sojourn.core.present.figures.FigureFile`) the study's config section ``settings``
    produces in job ``job``: every figure of :data:`FIGURES`, a CDF figure per ``figures.cdf_cells`` entry, the M/G/R
    figure only with ``mgr.laws``."""
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
#: the Wasserstein figure's noise: a filled area (fill_between) in this colour, named so in its legend and caption
NOISE_FILL = "0.8"
NOISE_WORDS = "a grey area"
NOISE_LABEL = (f"{NOISE_WORDS.removeprefix('a ')}: the simulation's own noise, where a method is set against it (no "
               "method can look closer)")
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
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels and not lab.startswith("_"):
                handles.append(h)
                labels.append(lab)
    return handles, labels


def _balanced_ncol(n, choices=(4, 3, 5, 2)) -> int:
    """A legend's number of columns (of ``choices``, in order of preference) leaving the fewest empty slots in the
    last row (matplotlib fills column by column: even columns read as a table)."""
    return min(choices, key=lambda k: ((-n) % k, choices.index(k))) if n > 1 else 1


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


#: a W below the axis floor, drawn on the bottom edge: an arrow down (no method's marker)
_CLIP_MARK = {"marker": r"$\downarrow$", "ms": 10}


def wasserstein_vs_rho(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Wasserstein distance W of each method to its best reference (exact where it ran, else the simulation) against
    ρ, one column per R that ran (at most five), one row per family; where a method is set against the simulation,
    the simulation's own noise (``sim_noise_wasserstein``: no method can look closer) as a grey area; status
    marks in a strip above each panel, one labelled row per method (every panel keeps the same strip height)."""
    c = cmp.sel(service=service)
    d = w_against_reference(cmp, service)
    all_R = c["R"].values
    Rv = _shown_R(all_R)
    rows = _family_lines(cmp)
    fig, axes = plt.subplots(len(rows), len(Rv), figsize=(3.0 * len(Rv) + 1.2, 3.2 * len(rows) + 0.4),
                             sharex=True, sharey=True, squeeze=False, gridspec_kw={"hspace": 0.62, "wspace": 0.12})
    kinds, floor_hit, noise_drawn, strips = set(), False, False, []
    for r, (title, lines) in enumerate(rows):
        for k, R in enumerate(Rv):
            strip, hit, nz, low = _w_panel(axes[r, k], cmp, c, d, lines, int(np.nonzero(all_R == R)[0][0]))
            floor_hit, noise_drawn = floor_hit or hit, noise_drawn or nz
            kinds |= strip.kinds
            strips.append((strip, R, low))
        axes[r, 0].set_ylabel(f"{title}\nW ({TIME_UNIT})", fontsize=9)
    reserve = max(len(s.rows) for s, _, _ in strips)
    for (strip, R, low), ax in zip(strips, axes.ravel(), strict=True):  # every strip the same height: rows line up
        strip.finish(title=f"R = {R}", reserve=reserve, label_size=9)
        if low:  # the panel's only news, in a box where its lines would be
            ax.text(0.5, 0.5, f"every line here:\nW < {W_FLOOR:g} at every load\n(on exact)", transform=ax.transAxes,
                    ha="center", va="center", fontsize=9, color="0.2",
                    bbox={"boxstyle": "round,pad=0.6", "fc": "white", "ec": "0.6"})
    for ax in axes[-1, :]:
        ax.set_xlabel("load ρ", fontsize=9)
        ax.tick_params(axis="x", labelbottom=True, labelsize=7.5)
    for ax in axes[0, :]:
        ax.tick_params(axis="x", labelbottom=True, labelsize=7.5)
    axes[0, 0].set_ylim(bottom=W_FLOOR)
    log_ticks(axes[0, 0].yaxis)
    h, lab = _w_legend(rows, d, Rv, all_R, c["approximation"].values.tolist(), noise_drawn, floor_hit)
    sh, sl = status_handles(kinds)
    _legend_below(fig, h + sh, lab + sl, ncol=3, y=0.02)
    cap = _wasserstein_caption(cmp, d, service, Rv, all_R, noise_drawn)
    # the title's finding is the caption's (the same claim, from the same data)
    lead = next((getattr(c, "text", "") for c in cap.findings
                 if getattr(c, "text", "").startswith("The closest corrected method")), "")
    fig.suptitle(f"How far each method's sojourn-time distribution is from the truth ({service} service)\n"
                 "Wasserstein distance W to exact where it ran (filled), else to the simulation (hollow): lower = "
                 "closer" + (f"\n{lead}" if lead else ""), y=0.995, va="bottom", fontsize=10.5)
    return save(fig, stem, caption=cap, **kw)


def _w_panel(ax, cmp, c, d, lines, i):
    """One panel of the Wasserstein figure (R index ``i``) on a linear load axis (ticks at the grid loads): each
    line's W (filled against exact, hollow against the simulation; the line broken where W drops below
    :data:`W_FLOOR`, one arrow per load on the bottom edge there: :func:`_floor_arrows`). In the A–F row the six lines
    are thin and grey, and the closest of them at each load is one bold line with its letter at each point
    (:func:`_closest_line`); the simulation's noise as a grey area where a line is set against it, the status marks in
    the panel's strip (not finished). Returns (the strip, whether an arrow is drawn, whether the noise is drawn,
    whether every line lies below the floor)."""
    methods, rho = c["approximation"].values.tolist(), c["rho"].values
    xp = np.asarray(rho, dtype=float)
    W, ref, status = d["W"].values, d["reference"].values, d["status"].values
    strip = status_strip(ax)
    vs_sim = np.zeros(len(rho), bool)
    cols = [methods.index(sr.method) for sr in lines]
    below_all = np.isfinite(W[i][:, cols]) & (W[i][:, cols] < W_FLOOR)  # (rho, line)
    under = all(sr.method in FAITHFUL for sr in lines) and len(lines) > 1  # A–F: grey underlay, the closest bold
    shown = False
    for sr in lines:
        m = methods.index(sr.method)
        shown = _w_line(ax, xp, W[i, :, m], ref[i, :, m], sr, under) or shown
        vs_sim |= np.isfinite(W[i, :, m]) & (ref[i, :, m] == REF_SIMULATION)
        for key in ("not_run", "invalid"):
            strip.mark(sr.method, xp, status[i, :, m] == key, key, sr.color, sr.method)
    if under:
        _closest_line(ax, xp, W[i][:, cols], ref[i][:, cols], [sr.method for sr in lines])
    noise_drawn = _w_noise(ax, cmp, c, i, xp, vs_sim)
    too_short = np.any(np.stack([status[i, :, methods.index(sr.method)] == "too_short" for sr in lines]), 0)
    strip.mark("reference", xp, too_short, REFERENCE_TOO_SHORT.key, "0.3", "all")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    _linear_rho_axis(ax, xp)
    low = not shown and bool(np.isfinite(W[i][:, cols]).any())
    floor_hit = bool(below_all.any()) and not low  # a panel where every line is below says so in its strip instead
    if floor_hit:
        _floor_arrows(ax, xp, below_all, lines)
    return strip, floor_hit, noise_drawn, low


#: the Wasserstein figure's A–F row: each method thin and light grey behind the closest of them (bold)
_UNDERLAY = {"color": "0.8", "lw": 0.8, "zorder": 2}
_CLOSEST = {"color": "0.1", "lw": 2.4, "zorder": 4}


def _w_line(ax, xp, y, ref, sr, under) -> bool:
    """One method's W line (broken below :data:`W_FLOOR`), markers filled against exact, hollow against the
    simulation; ``under``: thin light grey without markers (the closest line is drawn over it). Returns whether any
    point lies above the floor."""
    from ..core.present.figures import METHOD_MARKERS

    ok = np.isfinite(y)
    above = ok & (y >= W_FLOOR)
    if not above.any():
        return False
    yy = np.where(above, y, np.nan)[ok]
    if under:
        ax.plot(xp[ok], yy, "-", **_UNDERLAY)
        return True
    ax.plot(xp[ok], yy, sr.style, color=sr.color, lw=sr.lw, label=sr.label, zorder=3)
    for rk, face in ((REF_EXACT, sr.color), (REF_SIMULATION, "white")):
        sel = above & (ref == rk)
        ax.plot(xp[sel], y[sel], METHOD_MARKERS.get(sr.method, "o"), ms=5.2, mfc=face, mec=sr.color, mew=1.2,
                ls="none", zorder=4)
    return True


def closest_letters(W, names, tol=None) -> list[str]:
    """Per load (row of ``W``: (load, method)): the closest method's letter with those within ``tol`` of it
    ('B=C'), '' where no W is finite or the closest lies below :data:`W_FLOOR`."""
    tol = W_COINCIDE if tol is None else tol
    out = []
    for row in W:
        fin = np.isfinite(row)
        if not fin.any() or np.nanmin(row) < W_FLOOR:
            out.append("")
            continue
        best = np.nanmin(row)
        out.append("=".join(n for n, v in zip(names, row, strict=True) if np.isfinite(v) and v <= best * (1 + tol)))
    return out


def _closest_line(ax, xp, W, ref, names) -> None:
    """The closest of ``names`` at each load as one bold line (filled marker against exact, hollow against the
    simulation), its letter (and those within :data:`W_COINCIDE`) above each point."""
    with np.errstate(all="ignore"):
        k = np.argmin(np.where(np.isfinite(W), W, np.inf), axis=1)
    best = W[np.arange(len(xp)), k]
    on = np.isfinite(best) & (best >= W_FLOOR)
    if not on.any():
        return
    ax.plot(xp, np.where(on, best, np.nan), "-", **_CLOSEST)
    vs_exact = on & (ref[np.arange(len(xp)), k] == REF_EXACT)
    ax.plot(xp[vs_exact], best[vs_exact], "o", ms=5, color=_CLOSEST["color"], zorder=5)
    ax.plot(xp[on & ~vs_exact], best[on & ~vs_exact], "o", ms=5, mfc="white", mec=_CLOSEST["color"], zorder=5)
    for x, y, text in zip(xp, best, closest_letters(W, names), strict=True):
        if text:
            ax.annotate(text, (x, y), xytext=(0, 5), textcoords="offset points", ha="center", va="bottom",
                        fontsize=7.5, fontweight="bold", color=_CLOSEST["color"], zorder=6,
                        bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none", "alpha": 0.7})


def _w_noise(ax, cmp, c, i, xp, vs_sim) -> bool:
    """The simulation's noise (``sim_noise_wasserstein``) as a light area from the bottom up, at the load positions
    ``xp`` where a line is set against the simulation: no line can be told apart from exact in it. Returns whether
    it is drawn."""
    if "sim_noise_wasserstein" not in c:
        return False
    noise = c["sim_noise_wasserstein"].where(run_usable(cmp).sel(service=c["service"].item())).transpose(
        "R", "rho").values[i]
    sel = vs_sim & np.isfinite(noise)
    if not sel.any():
        return False
    x = xp[sel]
    x = np.repeat(x, 2) + np.tile([-0.02, 0.02], x.size) if x.size == 1 else x
    ax.fill_between(x, W_FLOOR, np.interp(x, xp[sel], noise[sel]), color=NOISE_FILL, edgecolor="0.7", lw=0.6,
                    zorder=1)
    return True


#: lines whose W differ by less than this share are named together as the closest ('B=C')
W_COINCIDE = 0.10


def _floor_arrows(ax, xp, below, lines) -> None:
    """One arrow on the bottom edge at each load position where a line has W < :data:`W_FLOOR`, the letters of those
    lines stacked to its right, each in its line's colour (one arrow per line would pile up; beside it, not above,
    the letters stay clear of a marker just above the edge)."""
    for j, x in enumerate(xp):
        who = [sr for sr, b in zip(lines, below[j], strict=True) if b]
        if not who:
            continue
        ax.plot([x], [W_FLOOR], ls="none", **_CLIP_MARK, color="0.3", clip_on=False, zorder=4)
        for k, sr in enumerate(who):
            ax.annotate(sr.method, (x, W_FLOOR), xytext=(6, 0.5 + 7 * k), textcoords="offset points", ha="left",
                        va="bottom", fontsize=6.5, color=sr.color, fontweight="bold", zorder=5)


def _w_legend(rows, d, Rv, all_R, methods, noise_drawn, floor_hit):
    """The Wasserstein figure's legend entries: the lines, the noise area, the two references, the bottom arrow."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from ..core.present.figures import METHOD_MARKERS

    h, lab = [], []
    for _, lines in rows:
        if len(lines) > 1 and all(sr.method in FAITHFUL for sr in lines):  # drawn as the closest over grey lines
            h += [Line2D([], [], marker="o", ms=5, **_CLOSEST), Line2D([], [], **_UNDERLAY)]
            lab += [f"bold: the closest of A–F at each load (its letter; B=C: within {W_COINCIDE:.0%})",
                    "thin grey: each of " + "–".join([lines[0].method, lines[-1].method])]
            continue
        for sr in lines:
            h.append(Line2D([], [], ls=sr.style, color=sr.color, lw=sr.lw, marker=METHOD_MARKERS.get(sr.method, "o"),
                            ms=5, mfc=sr.color))
            lab.append(sr.label)
    if noise_drawn:
        h.append(Patch(facecolor=NOISE_FILL, edgecolor="0.7", lw=0.6))
        lab.append(NOISE_LABEL)
    rh, rl = _reference_handles()
    ref = d["reference"].values
    sub = ref[:, :, [methods.index(sr.method) for _, lines in rows for sr in lines]][np.isin(all_R, Rv)]
    for hh, ll, k in zip(rh, rl, (REF_EXACT, REF_SIMULATION), strict=True):
        if (sub == k).any():
            h.append(hh)
            lab.append(ll)
    if floor_hit:
        h.append(Line2D([], [], ls="none", **_CLIP_MARK, color="0.3"))
        lab.append(f"arrow on the bottom edge: W < {W_FLOOR:g} against exact (the line breaks), for the letters "
                   "beside it")
    return h, lab


def _best_of(W, methods, members):
    idx = [methods.index(m) for m in members if m in methods]
    if not idx:
        return np.full(W.shape[:2], np.nan)
    sub = W[:, :, idx]
    with np.errstate(all="ignore"):
        return np.where(np.isfinite(sub).any(-1), np.nanmin(np.where(np.isfinite(sub), sub, np.inf), -1), np.nan)


def _wasserstein_caption(cmp, d, service, Rv, all_R, noise_drawn=False) -> Caption:
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
                                 "exact (filled), elsewhere against the simulation (hollow).", k, int(ex.size),
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
                                     f"{k} of {int(both.sum())} cells.", k, int(both.sum()), f"{ec} < {ef}", where,
                                     sel))
            ratio = float(np.median(bf[both] / bc[both]))
            findings.append(Claim(f"Over those cells the closest of A–F is a median {_g(ratio)} times farther from "
                                  f"the reference than the closest corrected method.", ratio,
                                  Q.query(f"{ef} / {ec}", (("median", None),), where, sel), sig_tol(ratio, 2)))
    if "exact" in methods:
        nz = c["wasserstein_mean"].sel(approximation="exact").where(run_usable(cmp).sel(service=service))
        v = nz.values
        if np.isfinite(v).any():
            med = float(np.nanmedian(v))
            i, j = np.unravel_index(int(np.nanargmax(v)), v.shape)
            loc = {"R": int(nz["R"].values[i]), "rho": float(nz["rho"].values[j]), "value": float(v[i, j])}
            findings.append(Claim(f"The simulation itself lies a median W = {_g(med)} {TIME_UNIT} from exact, and up "
                                  f"to W = {_g(loc['value'])} at R = {loc['R']}, ρ = {loc['rho']:g}: at high load a "
                                  "run this long cannot rank the methods, exact can.", [med, loc],
                                  [Q.query("wasserstein_mean.sel(approximation='exact')", (("median", None),), Q.RUN_OK,
                                           sel),
                                   Q.query("wasserstein_mean.sel(approximation='exact')", (("argmax", None),),
                                           Q.RUN_OK, sel)], max(sig_tol(med, 2), sig_tol(loc["value"], 2))))
    short = (c["sim_run_valid"] == 0).values if "sim_run_valid" in c else np.zeros(W.shape[:2], bool)
    if short.any():
        limits.append(Q.k_of_n(f"The run-length guard judged {int(short.sum())} of {int(short.size)} simulated cells "
                               "too short: there a method without exact has no reference (◇).", int(short.sum()),
                               int(short.size), "sim_run_valid == 0", "isfinite(sim_run_valid)", sel))
    if len(Rv) < len(all_R):
        limits.append(f"Panels show {_shown_note(Rv, all_R)} (every R is in comparison.nc).")
    return Caption(
        f"Wasserstein distance W = dt·Σ|F_ref − F_method| (paper eq. 27; in {TIME_UNIT}) between each method's sojourn-"
        f"time CDF and its reference, against the load ρ, one column per number of servers R; top: the paper's A–F, "
        f"bottom: the corrected chains (one line per group of identical CDFs) and T.",
        findings, limits,
        [("The reference is exact's CDF where exact ran (filled markers, no noise), else the simulated CDF (hollow; "
         "the mean W over replications)."
         + (f" {NOISE_WORDS[0].upper()}{NOISE_WORDS[1:]} from the bottom edge up to the simulation's own noise, "
            "at the loads where a method is set against the simulation (sim_noise_wasserstein, estimated from the "
            "replications alone): such a method cannot come closer than about this, even if it were exact."
            if noise_drawn else "")
         + f" Below W = {W_FLOOR:g} against exact a line breaks off; one ↓ on the bottom edge marks the load, the "
         "letters of the methods there beside it (a panel with nothing above it says so in a box). The load axis "
         "is linear, ticked at the grid's loads. In the top row each of A–F is a thin grey line and the closest of "
         "them at each load one bold line, its letter above each point (with those within "
         f"{W_COINCIDE:.0%} of it: 'B=C'). The strip above a panel marks loads "
         "without a value, one row per method: ∅ not run (over budget), × not a CDF, ◇ reference too short "
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
            for di, dj, seg in ((-1, 0, ([j - .5, j + .5], [i - .5, i - .5])),
                                (1, 0, ([j - .5, j + .5], [i + .5, i + .5])),
                                (0, -1, ([j - .5, j - .5], [i - .5, i + .5])),
                                (0, 1, ([j + .5, j + .5], [i - .5, i + .5]))):
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
    w_best = np.full((NR, NP), np.nan)
    for i in range(NR):
        for j in range(NP):
            ok = np.isfinite(W[i, j])
            if not ok.any():
                continue
            b = int(np.nanargmin(np.where(ok, W[i, j], np.inf)))
            best[i, j], cref[i, j], w_best[i, j] = cand[b], ref[i, j, b], W[i, j, b]
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
            "candidates": cand, "W_best": w_best}


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


def _exact_rows(b, Rv) -> list:
    """The server counts R whose every cell with a reference is a tie against exact with the closest method within the
    grid's resolution of it (the corrected chains and T are exact there, e.g. R = 1: M/M/1-PS)."""
    out = []
    for i, R in enumerate(Rv):
        if (b["best"][i] != "").all() and b["tie"][i].all() and (b["W_best"][i] <= b["w_tie"]).all():
            out.append(int(R))
    return out


def _tie_text(names: list) -> str:
    """A tie cell's text: every method within reach, three to a line."""
    rows = ["·".join(names[k:k + 3]) for k in range(0, len(names), 3)]
    return "tie\n" + "\n".join(rows)


def best_method_map(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Which method is closest to the truth per (R, ρ) cell by W (:func:`best_by_reference`): a clear winner in its
    colour, a tie in light grey with every tied method named, a cell without a reference grey with the
    reference-too-short mark; the cells set against the simulation (exact did not run) hatched."""
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
    vs_sim = (b["reference"] == REF_SIMULATION) & (best != "")
    small = best.size <= 150
    w = min(11.5, max(6.5, 0.8 * len(rho) + 2.4)) if small else 11.0
    fig, ax = plt.subplots(figsize=(w, 0.55 * len(Rv) + 1.9) if small else (w, 0.3 * len(Rv) + 2.0))
    _cell_map(ax, rgb, rho, Rv)
    if small:
        for (i, j), m in np.ndenumerate(best):
            if not m or too_short[i, j]:
                continue
            if tie[i, j]:
                ax.text(j, i, _tie_text(b["tied"][i, j].split("·")), ha="center", va="center", fontsize=7.5,
                        color="0.1", linespacing=0.95, zorder=6,
                        bbox={"facecolor": "0.93", "edgecolor": "none", "pad": 1.0} if vs_sim[i, j] else None)
            else:
                dark = np.mean(_rgb(method_color(m))) < 0.55
                ax.text(j, i, m, ha="center", va="center", fontsize=9, color="w" if dark else "k", fontweight="bold",
                        zorder=6, bbox={"facecolor": method_color(m), "edgecolor": "none", "pad": 1.0}
                        if vs_sim[i, j] else None)
    mark_cells(ax, too_short, REFERENCE_TOO_SHORT.key)
    ii, jj = np.nonzero(vs_sim)  # a dot in the corner (as in the percentile maps): hides no label, reads as no value
    ax.plot(jj + 0.37, ii - 0.3, **_SIM_DOT, zorder=7)
    handles = [Patch(color=method_color(m)) for m in winners]
    labels = [(_label(m, joined)[:-1] + "; clear winner)") if _label(m, joined).endswith(")") else
              _label(m, joined) + " (clear winner)" for m in winners]
    if tie.any():
        handles.append(Patch(facecolor="0.93", edgecolor="0.6"))
        groups = ", ".join(v for v in joined.values())
        labels.append("tie: no clear winner; the cell names every method within the CI (against exact: within "
                      f"{b['w_tie']:g} {TIME_UNIT})\nof the closest — A–F the paper's methods"
                      + (f"; {listing(list(joined))} the corrected groups ({groups})" if groups else ""))
    if vs_sim.any():
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], **{**_SIM_DOT, "mec": "0.6"}))
        labels.append("dot in a cell's corner: judged against the simulation (exact did not run); elsewhere against "
                      "exact")
    if too_short.any():
        sh, sl = status_handles([REFERENCE_TOO_SHORT.key])
        handles += sh
        labels += sl
    fig.tight_layout()
    _legend_below(fig, handles, labels, ncol=1, fontsize=8)
    n = int((best != "").sum())
    k_clear = int(((best != "") & ~tie).sum())
    exact_rows = _exact_rows(b, Rv)
    note = (f"; at R = {listing(exact_rows)} every cell ties: the corrected methods and T are exact there"
            if exact_rows else "")
    t_note = (f"\nwhere {TAIL} wins by W, its tail still lies above the truth by construction (safe, not exact: see "
              "the tail figures)" if TAIL in winners else "")
    fig.suptitle(f"Which method's sojourn-time CDF is closest to the truth? ({service} service, Wasserstein distance)\n"
                 f"a clear winner at {k_clear} of {n} cells, a tie at {n - k_clear}{note}{t_note}", fontsize=10, y=1.0,
                 va="bottom")
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
        findings.append(Q.k_of_n(f"No method is clearly closest at {k} of {n} cells (a tie: the methods named there "
                                 "are within the CI of the closest, or against exact within "
                                 f"{b['w_tie']:g} {TIME_UNIT}).", k, n, tie_q, has, sel))
        Rv = cmp["R"].values
        rows = _exact_rows(b, Rv)
        if rows:
            flags = {str(int(R)): int(R) in rows for R in Rv}
            findings.append(Claim(f"At R = {listing(rows)} every cell is such a tie, all within {b['w_tie']:g} "
                                  f"{TIME_UNIT} of exact: the corrected methods and T are exact there (M/M/1-PS at "
                                  "R = 1), so no method can win.", flags,
                                  Q.query(f"({Wr}.min('approximation') <= {b['w_tie']!r}) & {tie_q}",
                                          (("all", ["rho"]),), None, sel)))
        k_sim = int(((b["reference"] == REF_SIMULATION) & (best != "")).sum())
        findings.append(Q.k_of_n(f"{k_sim} of the {n} cells are judged against the simulation (a dot in the corner: "
                                 "exact did not run there); the rest against exact.", k_sim, n,
                                 "~(usable.sel(approximation='exact') != 0)" if Q.has_exact(cmp) else "(R == R)", has,
                                 sel))
    if too_short.any():
        k = int(too_short.sum())
        limits.append(Claim(f"{_cells_text(k).capitalize()} without exact and with a simulation the run-length guard "
                            "judged too short have no reference (grey, ◇).", k,
                            Q.query(f"~({has}) & (sim_run_valid == 0)", (("count", None),), None, sel)))
    groups = "; ".join(f"{k} stands for {v}" for k, v in joined.items())
    return Caption(
        f"Each (R, ρ) cell names the method whose sojourn-time CDF is closest to the truth by Wasserstein distance "
        f"({service} service): to exact's CDF where exact ran, else to the simulated CDF (cells with a dot in the "
        "corner); exact itself is the reference and no candidate.", findings, limits,
        [f"Identical methods count once ({groups})." if groups else "",
         ("A clear winner is drawn in its colour; a light grey cell is a tie and names every method within reach: "
         "against the simulation, another method's 95% CI of W reaches the winner's; against exact, another method "
         f"is within {b['w_tie']:g} {TIME_UNIT} (a tenth of the grid step). A method whose CDF is not a CDF is never "
         "a candidate. W weighs the body of the distribution; for the tail, see the recommendation and percentile "
         "figures.")])


def recommended_map(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """The headline: per percentile, the method to use over (R, ρ) — exact where it ran, else T where the comparison
    found it never below exact, else the most accurate method that does not underestimate the percentile beyond its
    CI; "simulate" where none qualifies, split by why (no method qualifies, or the reference too short to judge)."""
    from .compare import SIMULATE, STATUS_RUN_TOO_SHORT, STATUS_TOO_FEW

    c = cmp.sel(service=service)
    P, rho, Rv = c["percentile"].values, c["rho"].values, c["R"].values
    rec = c["recommended"].transpose("R", "rho", "percentile").values.astype(str)
    status = c["recommendation_status"].transpose("R", "rho", "percentile").values
    short = np.isin(status, [STATUS_TOO_FEW, STATUS_RUN_TOO_SHORT])
    none = (rec == SIMULATE) & ~short
    names = [m for m in cmp["approximation"].values.tolist() if (rec == m).any()]
    beyond = np.zeros(rec.shape, bool)  # exact ran, but its percentile lies beyond the time grid (not recommended)
    if "exact" in cmp["approximation"].values.tolist():
        beyond = ((c["usable"].sel(approximation="exact").values != 0)[..., None]
                  & ~np.isfinite(c["approx_percentile"].sel(approximation="exact").transpose("R", "rho",
                                                                                            "percentile").values))
    panels = _identical_panels(len(P), (rec, short, none, beyond))  # identical maps share one panel
    wide = len(rho) > 12
    ncols = 2 if ((wide and len(panels) > 1) or len(panels) > 3) else len(panels)  # four panels: 2 × 2
    nrows = math.ceil(len(panels) / ncols)
    cw = (0.5 if len(panels) == 1 else 0.34) if not wide else 5.0 / len(rho)
    fig, axes = plt.subplots(nrows, ncols, figsize=(ncols * (cw * len(rho) + 0.9) + 0.4, nrows * (0.3 * len(Rv) + 1.3)),
                             squeeze=False, sharey=True)
    for n_panel, g in enumerate(panels):
        k, ax = g[0], axes.flat[n_panel]
        title = (f"{P[k]:g}th percentile" if len(g) == 1 else
                 f"identical for the {listing([f'{P[x]:g}th' for x in g])} percentiles" if len(g) < len(P) else
                 f"identical for all {len(P)} percentiles ({listing([f'{P[x]:g}th' for x in g])})")
        rgb = np.ones((len(Rv), len(rho), 3))
        for (i, j), m in np.ndenumerate(rec[..., k]):
            if short[i, j, k]:
                rgb[i, j] = _rgb(TOO_SHORT_CELL)
            elif m in names:
                rgb[i, j] = _rgb(method_color(m))
        _cell_map(ax, rgb, rho, Rv, title=title, ylabel=n_panel % ncols == 0, max_xticks=8 if not wide else 10)
        for i, j in zip(*np.nonzero(none[..., k]), strict=True):
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="////", lw=0, color="0.35"))
        mark_cells(ax, short[..., k] & ~beyond[..., k], REFERENCE_TOO_SHORT.key, ms=4.5 if not wide else 2.5)
        mark_cells(ax, beyond[..., k], "beyond_grid", ms=6 if not wide else 3)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    fig.tight_layout()
    handles, labels = _recommended_legend(cmp, c, names, rec, short, none, beyond)
    _legend_below(fig, handles, labels, ncol=1, fontsize=8)
    fig.suptitle(f"Which method to use for each tail percentile ({service} service)", fontsize=10.5, y=1.0,
                 va="bottom")
    return save(fig, stem, caption=_recommended_caption(cmp, service, rec, short & ~beyond, none, beyond), **kw)


def _identical_panels(n, arrays) -> list[list[int]]:
    """Groups of the last-axis indices 0..n-1 whose slices of every array of ``arrays`` are identical (in order)."""
    panels: list[list[int]] = []
    for k in range(n):
        for g in panels:
            if all(np.array_equal(a[..., g[0]], a[..., k]) for a in arrays):
                g.append(k)
                break
        else:
            panels.append([k])
    return panels


def _recommended_legend(cmp, c, names, rec, short, none, beyond) -> tuple[list, list]:
    """The recommended map's legend: each method's colour with when it is used (exact's budget and truncation, T's
    margin over exact where both ran, from the data), the hatch of "simulate", the too-short and beyond-grid marks."""
    from matplotlib.patches import Patch

    from .compare import SIMULATE

    handles = [Patch(color=method_color(m)) for m in names]
    words = {"exact": "exact: where it ran (" + (_budget_words(cmp) or "within its budget") + ") and its percentile "
             "lies on the time grid" + _exact_truncation_words(cmp).replace("; ", ";\n", 1)}
    if TAIL in names and "exact" in cmp["approximation"].values.tolist():  # T's margin over exact where both ran
        d = c["percentile_error_vs_exact"].sel(approximation=TAIL).values
        xe = c["approx_percentile"].sel(approximation="exact").values
        ok = np.isfinite(d) & np.isfinite(xe) & (xe > 0)
        hi = float((d[ok] / xe[ok]).max()) if ok.any() else float("nan")
        n_below = int((d[ok] < -float(cmp.attrs.get("time_step", 0.01)) * (1 + 1e-6)).sum())
        words[TAIL] = (f"{TAIL_LABEL}: where exact is over budget; "
                       + ("never below exact" if n_below == 0 else f"below exact at {n_below} points")
                       + f", at most {_pct(hi, 2, signed=False)} above it where both ran" if np.isfinite(hi) else
                       f"{TAIL_LABEL}: where exact is over budget")
    labels = [words.get(m, TAIL_LABEL if m == TAIL else m) for m in names]
    if none.any():
        handles.append(Patch(facecolor="w", edgecolor="0.35", hatch="////"))
        labels.append("simulate: no method is accurate without underestimating the percentile")
    if (short & ~beyond).any():
        sh, sl = status_handles([REFERENCE_TOO_SHORT.key])
        handles += sh
        labels += [sl[0] + ": simulate longer"]
    if beyond.any():
        from matplotlib.lines import Line2D

        tm = cmp.attrs.get("t_max")
        grid = f"time grid (t_max = {float(tm):g})" if tm is not None else "time grid"
        handles.append((Patch(facecolor=TOO_SHORT_CELL, edgecolor="0.7"), Line2D([], [], **status_style(
            "beyond_grid", ms=6))))  # the grey cell with its mark, as drawn
        labels.append(("simulate longer, or rerun exact with a larger t_max: " if (rec[beyond] == SIMULATE).all()
                       else "") + f"this percentile lies beyond exact's {grid}"
                      + ("; no method has it and the simulation is too short" if (rec[beyond] == SIMULATE).all()
                         else "; the colour is the method used instead"))
    return handles, labels


def _budget_words(cmp) -> str:
    """exact's budget in words ("predicted ≤ 2,000,000 states and ≤ 10 s"), from the run's config (``exact_budget``
    in the attributes, set by :func:`all_figures`); "" where the run had none."""
    try:
        b = json.loads(cmp.attrs.get("exact_budget") or "{}")
    except ValueError:
        return ""
    parts = ([f"≤ {int(b['max_states']):,} states"] if b.get("max_states") else []) + \
        ([f"≤ {float(b['max_seconds']):g} s"] if b.get("max_seconds") else [])
    return ("predicted " + " and ".join(parts)) if parts else ""


def _exact_truncation_words(cmp) -> str:
    """"; probability mass at its truncation ≤ X" over the cells where exact ran (``truncation_mass``), else ""."""
    if "truncation_mass" not in cmp or "exact" not in cmp["approximation"].values.tolist():
        return ""
    m = cmp["truncation_mass"].sel(approximation="exact").where(cmp["usable"].sel(approximation="exact") != 0).values
    m = m[np.isfinite(m)]
    return f"; probability mass at its truncation ≤ {m.max():.1e} (its CDF error is of that order)" if m.size else ""


def _recommended_caption(cmp, service, rec, short, none, beyond=None) -> Caption:
    from .compare import SIMULATE

    c = cmp.sel(service=service)
    methods = c["approximation"].values.tolist()
    sel = {"service": service}
    findings, limits = [], []
    counts = {m: int((rec == m).sum()) for m in sorted(set(rec.ravel().tolist())) if m}
    n = int(sum(counts.values()))
    order = sorted(counts, key=lambda m: -counts[m])
    findings.append(Claim(f"Of the {n} (R, ρ, percentile) points, the method to use is "
                          + listing([f"{m} at {counts[m]}" for m in order if m != SIMULATE])
                          + (f"; no method at {counts[SIMULATE]} ({_simulate_words(rec, beyond)})"
                             if SIMULATE in counts else "") + ".", counts,
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
    if "exact" in methods:  # exact ran, but its percentile lies beyond the time grid: it is not recommended there
        ex = "(usable.sel(approximation='exact') != 0) & ~isfinite(approx_percentile.sel(approximation='exact'))"
        kb = int(beyond.sum()) if beyond is not None else 0
        if kb:
            tm = float(cmp.attrs.get("t_max", np.nan))
            got = {m: int(((rec == m) & beyond).sum()) for m in sorted(set(rec[beyond].tolist()))}
            limits.append(Claim(f"At {kb} point{'s' if kb != 1 else ''} exact ran but its percentile lies beyond its "
                                "time grid"
                                + (f" (t_max = {tm:g})" if np.isfinite(tm) else "") + ", so it cannot give it (▸): "
                                + listing([f"{m} at {got[m]}" if m != SIMULATE else f"no method at {got[m]} (simulate "
                                           "longer, or rerun exact with a larger t_max)" for m in got]) + " instead.",
                                [kb, got], [Q.query(ex, (("count", None),), None, sel),
                                            Q.query("recommended", (("unique", None),), ex, sel)]))
    if short.any():
        from .compare import STATUS_RUN_TOO_SHORT, STATUS_TOO_FEW

        k = int(short.sum())
        limits.append(Claim(f"At {k} points no method is exact or T and the simulation is too short to judge the "
                            f"others ({RULE}): simulate, longer.", k,
                            Q.query(f"(recommendation_status == {STATUS_TOO_FEW}) | (recommendation_status == "
                                    f"{STATUS_RUN_TOO_SHORT})", (("count", None),),
                                    "~((usable.sel(approximation='exact') != 0) & ~isfinite(approx_percentile.sel("
                                    "approximation='exact')))" if "exact" in methods else None, sel)))
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


def _simulate_words(rec, beyond) -> str:
    """What the recommended map's legend says at its points without a method, in the caption's words."""
    from .compare import SIMULATE

    at = rec == SIMULATE
    if beyond is not None and at.any() and beyond[at].all():
        return "simulate longer, or rerun exact with a larger t_max: ▸"
    return "simulate" + (", or rerun exact with a larger t_max where ▸" if beyond is not None and (beyond & at).any()
                         else "")


def _status(name: str) -> int:
    from . import compare

    return int(getattr(compare, name))


# =========================================================================== percentile errors
#: the colour scale of both percentile-error maps, in %: signed-logarithmic (linear within ±LIN_PCT, then
#: logarithmic to ±REL_CLIP, beyond which it saturates), so +100 % and +800 % differ in colour and a shade means the
#: same error in both figures
REL_CLIP = 1000.0
LIN_PCT = 5.0
REL_TICKS = (-100, -50, -20, -5, 0, 5, 20, 100, 500)
#: a map cell's fill where a method has no value: ∅ not run mid-grey, × not a CDF dark grey (the same in every map)
STATUS_FILL = {"not_run": "0.72", "invalid": "0.42"}
#: the two percentile-error maps' palettes (colour map, word for below, word for above): each its own, so that a shade
#: of one (±1000 %) is never read on the other's scale (±20 %)
PALETTES = {"faithful": ("RdBu", "red", "blue"), "corrected": ("PuOr", "orange", "purple")}


def _error_norm(clip=REL_CLIP):
    """The maps' colour norm to ±``clip`` (%): f(x) = sign(x)·log(1 + |x|/LIN_PCT) / log(1 + clip/LIN_PCT)."""
    from matplotlib.colors import FuncNorm

    top = np.log1p(clip / LIN_PCT)

    def fwd(x):
        x = np.clip(np.asarray(x, dtype=float), -clip, clip)
        return np.sign(x) * np.log1p(np.abs(x) / LIN_PCT) / top

    def inv(y):
        y = np.asarray(y, dtype=float)
        return np.sign(y) * LIN_PCT * np.expm1(np.abs(y) * top)

    return FuncNorm((fwd, inv), vmin=-clip, vmax=clip)


#: the colour ranges a percentile-error map may take (%): the smallest that holds every error that counts
_CLIP_STEPS = (10.0, 20.0, 50.0, 100.0, 200.0, 500.0, REL_CLIP)


def _colour_range(m, rows, panels) -> float:
    """The map's colour range: the smallest of :data:`_CLIP_STEPS` that holds every drawn error that counts (rows
    ``rows``, percentile indices ``panels``), so that a figure of small errors is not all pale."""
    vals = [abs(m["err"][i, :, j, k][m["sig"][i, :, j, k] & (m["ref"][i, :, j, k] != 0)]) for j, i in rows
            for k in panels]
    top = max((float(np.nanmax(v)) for v in vals if v.size and np.isfinite(v).any()), default=0.0)
    return next((c for c in _CLIP_STEPS if top <= c), REL_CLIP)


def _shown_percentiles(P, have) -> list:
    """The panels of a percentile-error map: the lowest and the highest percentile with a reference somewhere (all
    of them if two or fewer), so that each panel stays readable."""
    idx = [k for k in range(len(P)) if have[k]] or list(range(len(P)))
    return idx if len(idx) <= 2 else [idx[0], idx[-1]]


def _error_text(v: float) -> str:
    """A cell's error in % as printed: whole percent from ±0.95, else one decimal, "<0.1" where it rounds to zero
    (|error| below 0.05 %), "0" where it is zero."""
    if v == 0:
        return "0"
    if abs(v) >= 0.95:
        return f"{v:+.0f}"
    if abs(v) < 0.05:
        return "<0.1"
    return f"{v:+.1f}"


def _error_map(ax, err, sig, ref, status, rows, ncols, cmap, norm, small, group_colors, sizes, corners=True, ci=None):
    """One panel of a percentile-error map: ``rows`` (row index → (method index, R index)); every cell with a reference
    shows its error (bold, black or white on its colour, where it counts; grey italic on white where it lies within
    the noise); a cell set against the simulation gets a dot (white ring) in its corner; status cells a grey fill and
    their mark (in black). ``ci``: (low, high) in % — each value's CI printed under it (the check panel)."""
    kinds = set()
    rgb = np.ones((len(rows), ncols, 3))
    for r, (m, i) in enumerate(rows):
        for j in range(ncols):
            st = status[i, j, m]
            if st in ("too_short", "beyond_grid"):
                rgb[r, j] = _rgb(TOO_SHORT_CELL)
            elif st in STATUS_FILL:  # unlike the white "within noise", the light "too short" and each other
                rgb[r, j] = _rgb(STATUS_FILL[st])
            elif ref[i, j, m] and sig[i, j, m]:
                rgb[r, j] = norm_rgb(cmap, norm, err[i, j, m])
            else:
                rgb[r, j] = _rgb(NO_DIFFERENCE_CELL)
    ax.imshow(rgb, aspect="auto", origin="upper", interpolation="nearest")
    for r, (m, i) in enumerate(rows):
        for key, st in (("not_run", "not_run"), ("invalid", "invalid"), (REFERENCE_TOO_SHORT.key, "too_short"),
                        ("beyond_grid", "beyond_grid")):
            jj = np.nonzero(status[i, :, m] == st)[0]
            if jj.size:
                kinds.add(key)
                ax.plot(jj, np.full(jj.size, r), **status_style(key, "0.15", ms=sizes["mark"]))
        for j in np.nonzero(ref[i, :, m] != 0)[0]:
            _error_cell(ax, r, j, err[i, j, m], bool(sig[i, j, m]), corners and ref[i, j, m] == REF_SIMULATION, norm,
                        small, sizes, None if ci is None else (ci[0][i, j, m], ci[1][i, j, m]))
    for g, _ in group_colors:
        ax.axhline(g - 0.5, color="k", lw=1.0)
    return kinds


def _error_cell(ax, r, j, v, significant, against_sim, norm, small, sizes, ci) -> None:
    """A map cell's marks: the dot of a cell set against the simulation, its number (bold where it counts, grey
    italic within the noise) and CI."""
    if against_sim:  # a dot with a white ring in the corner: against the simulation (exact did not run)
        ax.plot([j + 0.37], [r - 0.27], **_SIM_DOT, zorder=4)
    if not (small and np.isfinite(v)):
        return
    txt = _error_text(v)
    if ci is not None and np.isfinite(ci[0]) and np.isfinite(ci[1]):
        txt += f"\n[{_error_text(ci[0])}, {_error_text(ci[1])}]"
    dark = significant and abs(norm(v) - 0.5) > 0.33
    style = ({"color": "w" if dark else "k", "fontweight": "bold"} if significant else
             {"color": "0.5", "style": "italic"})
    ax.text(j, r, txt, ha="center", va="center", fontsize=sizes["text"] - (1.3 if ci is not None else 0),
            linespacing=0.95, **style)


#: the corner dot of a map cell set against the simulation: large enough to see on a coloured cell, a white ring
_SIM_DOT = {"marker": "o", "ls": "none", "color": "0.1", "mec": "w", "mew": 1.2, "ms": 5.0}


def norm_rgb(cmap, norm, v):
    return np.asarray(cmap(norm(v)))[:3]


def _row_label(label: str) -> str:
    """A method row's name in the maps: at most two names a line, broken after ' = ' (never inside a name), and a
    parenthesis on its own line."""
    head, _, tail = label.partition(" (")
    names = head.split(" = ")
    lines = [" = ".join(names[k:k + 2]) for k in range(0, len(names), 2)]
    return " =\n".join(lines) + (f"\n({tail}" if tail else "")


def _percentile_error_figure(cmp, stem, lines, what, service, exact_check=False, palette="faithful", **kw):
    """Maps of each method's relative percentile error against its reference: one panel per shown percentile (the
    lowest and the highest: :func:`_shown_percentiles`), rows = (method, R), columns = ρ; coloured by ``palette``
    (:data:`PALETTES`: its first colour optimistic, below the reference), white with a grey number = no difference
    (within the CI, or within the grid step of exact), grey ◇ = reference too short. ``exact_check``: exact against
    the simulation where the simulation can tell (the check of both), stated in the caption."""
    if not lines:  # the run computed none of these methods (approximation.methods): say so, draw no empty map
        fig, ax = plt.subplots(figsize=(6.5, 2.0))
        _message_panel(ax, f"this run computed none of {what}\n(approximation.methods in the config)")
        return save(fig, stem, caption=Caption(
            f"Relative percentile error of {what} against the best reference ({service} service).", [],
            [f"This run computed none of {what} (approximation.methods in the config): nothing to draw."], []), **kw)
    c = cmp.sel(service=service)
    a = against_reference(cmp, service)
    methods = c["approximation"].values.tolist()
    P, rho, Rv = c["percentile"].values, c["rho"].values, c["R"].values
    m = {"err": 100 * a["error"].values, "sig": a["significant"].values, "ref": a["reference"].values,
         "status": a["status"].values}
    rows = [(methods.index(sr.method), int(np.nonzero(Rv == R)[0][0])) for sr in lines for R in Rv]
    have = [any(m["ref"][i, :, j, k].any() for j, i in rows) for k in range(len(P))]
    shown = _shown_percentiles(P, have)
    e_idx = methods.index("exact") if (exact_check and "exact" in methods) else None
    check = [k for k in range(len(P)) if e_idx is not None and (m["ref"][:, :, e_idx, k] == REF_SIMULATION).any()]
    small = len(rho) <= 12 and len(rows) <= 40
    rh = 0.24 if len(rows) <= 30 else max(0.1, 7.0 / len(rows))
    sizes = {"text": 6.8 if small else 5, "mark": 4.0 if small else 2}
    width = len(shown) * ((0.44 if len(rho) <= 12 else min(0.07, 3.0 / len(rho))) * len(rho) + 0.35) + 2.6
    fig, axes = plt.subplots(1, len(shown), figsize=(width, rh * len(rows) + 2.3), squeeze=False,
                             gridspec_kw={"wspace": 0.08})
    axes = list(axes[0])
    clip = _colour_range(m, rows, shown)
    norm, cmap = _error_norm(clip), plt.get_cmap(PALETTES[palette][0])
    kinds = set()
    for ax, k in zip(axes, shown, strict=True):
        kinds |= _error_map(ax, m["err"][..., k], m["sig"][..., k], m["ref"][..., k], m["status"][..., k], rows,
                            len(rho), cmap, norm, small, [(g * len(Rv), sr.color) for g, sr in enumerate(lines) if g],
                            sizes)
        step = max(1, math.ceil(len(rho) / 8))
        ax.set_xticks(range(0, len(rho), step), [f"{x:g}" for x in rho[::step]], fontsize=7.5,
                      rotation=0 if len(rho) <= 12 else 90)
        ax.set_xlabel("load ρ", fontsize=9)
        ax.set_title(f"{P[k]:g}th percentile", fontsize=10)
        ax.set_yticks(range(len(rows)), [f"R = {Rv[i]}" for _, i in rows] if ax is axes[0] else [],
                      fontsize=7 if len(rows) > 20 else 7.5)
    for g, sr in enumerate(lines):
        axes[0].annotate(_row_label(sr.label), xy=(0, (g + 0.5) * len(Rv) - 0.5), xycoords=("axes fraction", "data"),
                         xytext=(-40, 0), textcoords="offset points", ha="right", va="center", fontsize=8.5,
                         fontweight="bold", color=sr.color)
    _error_colorbar(fig, norm, cmap, clip, PALETTES[palette][1])
    fig.subplots_adjust(left=0.2 if len(lines) > 1 else 0.12, right=0.88, top=1 - 0.4 / fig.get_figheight(),
                        bottom=0.6 / fig.get_figheight())
    _error_legend(fig, m, rows, kinds, float(cmp.attrs.get("time_step", 0.01)))
    rest = [P[k] for k in range(len(P)) if k not in shown and have[k]]
    cap = _percentile_error_caption(cmp, a, lines, what, service, [P[k] for k in shown],
                                    [P[k] for k in range(len(P)) if not have[k]], kinds, rest,
                                    [P[k] for k in check], clip, PALETTES[palette])
    fig.suptitle(_pe_title(a, lines, what, service, [P[k] for k in shown], clip, PALETTES[palette][1]), fontsize=10,
                 y=1.0, va="bottom")
    return save(fig, stem, caption=cap, **kw)


def _pe_title(a, lines, what, service, shown, clip, below) -> str:
    """The percentile-error map's title: what it shows with its colour range, and its finding from the drawn points —
    T never (or k times) significantly below its reference, the others' most optimistic error and where."""
    A = a.sel(approximation=[sr.method for sr in lines], percentile=shown)
    err, sig = 100 * A["error"].values, A["significant"].values & (A["reference"].values != 0)
    names = A["approximation"].values.tolist()
    head = []
    if TAIL in names:
        t = names.index(TAIL)
        below_t = int((sig[:, :, t] & (err[:, :, t] < 0)).sum())
        head.append("T is never optimistic" if below_t == 0 else f"T is optimistic at {below_t} points")
    others = [k for k, n in enumerate(names) if n != TAIL]
    v = np.where(sig[:, :, others] & (err[:, :, others] < 0), err[:, :, others], np.nan)
    if np.isfinite(v).any():
        idx = np.unravel_index(int(np.nanargmin(v)), v.shape)
        word = "the others" if TAIL in names else "the methods"
        head.append(f"{word} optimistic by up to {_pct(v[idx] / 100, 0)} (at the {shown[idx[3]]:g}th percentile)")
    return (f"Tail-percentile error of {what} against the best reference ({service} service); "
            f"colour range ±{clip:g} %, {below}: optimistic"
            + (f"\n{head[0][0].upper()}{'; '.join(head)[1:]}" if head else ""))


def _error_colorbar(fig, norm, cmap, clip=REL_CLIP, below="red") -> None:
    """The maps' colour bar to ±``clip`` (its range named; ``below``: the colour of optimistic), its linear band
    (±LIN_PCT) marked."""
    cax = fig.add_axes([0.91, 0.3, 0.014, 0.5])
    cb = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), cax=cax)
    ticks = sorted({t for t in REL_TICKS if -min(100.0, clip) <= t <= clip} | {int(clip), -int(min(100.0, clip))})
    cb.set_ticks(ticks, labels=[f"{t:+d}" if t else "0" for t in ticks])
    cb.set_label(f"error (%), {below}: optimistic\ncolour range {-min(100.0, clip):g} to +{clip:g} % in this figure\n"
                 f"black lines at ±{LIN_PCT:g} %: linear between, logarithmic beyond", fontsize=8.5)
    cb.ax.tick_params(labelsize=7.5)
    cb.ax.set_ylim(-min(100.0, clip), clip)  # no error lies below −100 %
    for y in (-LIN_PCT, LIN_PCT):
        cb.ax.axhline(y, color="k", lw=1.0)


def _error_legend(fig, m, rows, kinds, dt) -> None:
    """The maps' legend: the frame, the white "no difference" cell (with the grid-step rule), the corner dot and
    the status marks drawn."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles, labels = [], []
    if any((m["sig"][i, :, j, :] & (m["ref"][i, :, j, :] != 0)).any() for j, i in rows):
        handles.append(Patch(facecolor="#f4d6c8", edgecolor="none"))
        labels.append("coloured cell, bold number: the difference counts (beyond the CI, or beyond one time step "
                      "of exact), however pale its colour")
    if any(((m["ref"][i, :, j, :] != 0) & ~m["sig"][i, :, j, :]).any() for j, i in rows):
        handles.append(Patch(facecolor=NO_DIFFERENCE_CELL, edgecolor="0.5"))
        labels.append(f"white cell, grey italic number: no difference — inside the simulation's 95 % CI, or "
                      f"(against exact) the two percentiles at most one time step Δt = {dt:g} apart\n(so the same % "
                      "counts at a long percentile and not at a short one)")
    if any((m["ref"][i, :, j, :] == REF_SIMULATION).any() for j, i in rows):
        handles.append(Line2D([], [], **{**_SIM_DOT, "mec": "0.6"}))
        labels.append("dot in a cell's corner: against the simulation (exact did not run); elsewhere against exact")
    sh, sl = status_handles(kinds)
    for h in sh:
        h.set_color("0.15")
        if h.get_markerfacecolor() != "none":
            h.set_markerfacecolor("0.15")
        h.set_markeredgecolor("0.15")
    _legend_below(fig, handles + sh, labels + sl, ncol=1, fontsize=7.5)


_MARK_WORDS = {"not_run": "∅ not run (over budget)", "invalid": "× not a CDF",
               REFERENCE_TOO_SHORT.key: "grey ◇ reference too short", "beyond_grid": "grey ▸ the percentile lies "
               "beyond the time grid (t_max)"}


def _percentile_error_caption(cmp, a, lines, what, service, shown, without, kinds, rest, check, clip=REL_CLIP,
                              palette=PALETTES["faithful"]) -> Caption:
    dt = float(cmp.attrs.get("time_step", 0.01))
    methods = [sr.method for sr in lines]
    rel, sig_q, kind_q = Q.rel_ref(cmp), Q.significant(cmp, dt), Q.ref_kind(cmp)
    sel = {"service": service, "approximation": methods, "percentile": [float(p) for p in shown]}
    A = a.sel(approximation=methods, percentile=shown)
    err, sig, ref, status = A["error"].values, A["significant"].values, A["reference"].values, A["status"].values
    findings = []
    n_ref = int((ref != 0).sum())
    pw = listing([f"{p:g}th" for p in shown])
    if n_ref:
        k = int(sig.sum())
        findings.append(Q.k_of_n(f"At the {pw} percentile{'s' if len(shown) > 1 else ''}: a difference beyond the "
                                 f"reference's noise at {k} of the {n_ref} (method, R, ρ, percentile) points with a "
                                 "reference.", k, n_ref, sig_q, f"{kind_q} != 0", sel))
    findings += _pe_extreme_claims(A, rel, sig_q, sel)
    if TAIL in methods:
        m = methods.index(TAIL)
        has = ref[:, :, m, :] != 0
        if has.any():
            s1 = {**sel, "approximation": TAIL}
            below = int((sig[:, :, m, :] & (err[:, :, m, :] < 0)).sum())
            text = (f"T is significantly below its reference at {below} of its {int(has.sum())} points"
                    + (": it errs on the safe side." if below == 0 else "."))
            findings.append(Q.k_of_n(text, below, int(has.sum()), f"({sig_q}) & ({rel} < 0)", f"{kind_q} != 0", s1))
    if check:
        findings.append(_pe_check_claim(cmp, a, service, check))
    marks = "; ".join(_MARK_WORDS[k] for k in _MARK_WORDS if k in kinds)
    return Caption(
        f"Relative percentile error (x_method − x_ref) / x_ref of {what} at the {pw} percentile (one panel each), per "
        "number of servers R (rows, grouped by method) and load ρ (columns)"
        + ("; the check of both, exact against the simulation, is not drawn: its numbers are the last finding."
           if check else "."), findings,
        _pe_limits(cmp, status, sel, without, rest),
        [("The reference is exact's percentile where exact ran (no noise: a difference counts beyond one grid step) "
         "and the mean simulated percentile elsewhere (a dot in the cell's corner; a difference counts where the "
         "95% CI of the mean error excludes 0). Every cell with a reference shows its error in %: coloured where it "
         f"counts ({palette[1]}: the method promises shorter sojourns than the reference, optimistic; "
         f"{palette[2]}: longer; the number in bold, however pale the colour), grey italic on white where it lies "
         "within the reference's noise; \"<0.1\": "
         f"|error| below 0.05 %. Colour range up to ±{clip:g} % in this figure (the smallest of "
         f"{', '.join(f'{c:g}' for c in _CLIP_STEPS)} % that holds every error that counts), linear within "
         f"±{LIN_PCT:g} %, logarithmic beyond; the palette ({palette[0]}) is this figure's own: the paper's A–F and "
         "the corrected methods each have theirs, so that a shade of one is not read on the other's scale."
         + (f" Marks: {marks}" + "".join(f"; {w}" for k, w in (("not_run", "∅ on mid-grey"),
                                                                 ("invalid", "× on dark grey")) if k in kinds)
            + "." if marks else ""))])


def _pe_extreme_claims(A, rel, sig_q, sel) -> list:
    """The percentile-error caption's most optimistic and most conservative significant point (if on that side)."""
    err, sig, ref = A["error"].values, A["significant"].values, A["reference"].values
    dims = A["error"].dims
    out = []
    for op, word in (("argmin", "Most below its reference (optimistic)"), ("argmax", "Most above")):
        v = np.where(sig, err, np.nan)
        if not np.isfinite(v).any():
            continue
        idx = np.unravel_index(int(np.nanargmin(v) if op == "argmin" else np.nanargmax(v)), v.shape)
        loc = {d: (float(A[d].values[x]) if A[d].dtype.kind == "f" else
                   (int(A[d].values[x]) if A[d].dtype.kind in "iu" else str(A[d].values[x])))
               for d, x in zip(dims, idx, strict=True)}
        loc["value"] = float(v[idx])
        if (op == "argmin" and loc["value"] >= 0) or (op == "argmax" and loc["value"] <= 0):
            continue
        out.append(Claim(f"{word}: {loc['approximation']} by {_pct(loc['value'], 0)} at R = {loc['R']}, "
                         f"ρ = {loc['rho']:g}, the {loc['percentile']:g}th percentile (against "
                         f"{'exact' if ref[idx] == REF_EXACT else 'the simulation'}).", loc,
                         Q.query(f"where({sig_q}, {rel}, nan)", ((op, None),), None, sel), half_unit(0, 100)))
    return out


def _pe_check_claim(cmp, a, service, check) -> Claim:
    """The check's claim: at how many points exact differs from the simulation beyond its CI, and by how much."""
    dt = float(cmp.attrs.get("time_step", 0.01))
    rel, sig_q, kind_q = Q.rel_ref(cmp), Q.significant(cmp, dt), Q.ref_kind(cmp)
    E = a.sel(approximation="exact", percentile=check)
    has = E["reference"].values != 0
    sg = E["significant"].values & has
    e = E["error"].values[sg]
    s1 = {"service": service, "approximation": "exact", "percentile": [float(p) for p in check]}
    text = (f"The check: exact differs from the simulation beyond the simulation's 95% CI at {int(sg.sum())} of "
            f"the {int(has.sum())} points where the simulation can tell (about one in 20 would by chance)"
            + ("." if not e.size else f", by {_pct(e.min(), 0)}." if _pct(e.min(), 0) == _pct(e.max(), 0) else
               f", by {_pct(e.min(), 0)} to {_pct(e.max(), 0)}."))
    cl = Q.k_of_n(text, int(sg.sum()), int(has.sum()), sig_q, f"{kind_q} != 0", s1)
    if e.size:
        cl.value += [float(e.min()), float(e.max())]
        cl.query += [Q.query(rel, ((op, None),), f"({kind_q} != 0) & ({sig_q})", s1) for op in ("min", "max")]
        cl.tol = half_unit(0, 100)
    return cl


def _pe_limits(cmp, status, sel, without, rest) -> list:
    """What the percentile-error maps cannot show: points without a reference, beyond the time grid, percentiles
    without any reference or left out."""
    kind_q = Q.ref_kind(cmp)
    everywhere = "(usable >= 0) & (percentile > 0)"
    limits = []
    n_short = int((status == "too_short").sum())
    if n_short:
        limits.append(Q.k_of_n(f"No reference at {n_short} of the {int(status.size)} points drawn: exact did not run "
                               f"there and the simulation is too short ({RULE}); grey ◇.", n_short, int(status.size),
                               f"(usable != 0) & ({kind_q} == 0) & ~{Q.beyond_grid(cmp)}", everywhere, sel))
    n_beyond = int((status == "beyond_grid").sum())
    if n_beyond:
        limits.append(Q.k_of_n(f"At {n_beyond} of the {int(status.size)} points drawn the percentile lies beyond the "
                               "time grid (t_max) and no reference remains (▸).", n_beyond, int(status.size),
                               f"(usable != 0) & ({kind_q} == 0) & {Q.beyond_grid(cmp)}", everywhere, sel))
    if without:
        limits.append(f"No method has a reference at the {listing([f'{p:g}th' for p in without])} percentile"
                      f"{'s' if len(without) > 1 else ''} in this run: "
                      f"{'it is' if len(without) == 1 else 'they are'} not drawn.")
    if rest:
        limits.append(f"The {listing([f'{p:g}th' for p in rest])} percentile{'s are' if len(rest) > 1 else ' is'} "
                      "left out of the figure to keep it readable: comparison.nc and accuracy.csv hold "
                      f"{'them' if len(rest) > 1 else 'it'}.")
    return limits


def percentile_error_vs_rho(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Relative percentile error of the paper's A–F against the best reference (maps, one panel per percentile)."""
    return _percentile_error_figure(cmp, stem, series(cmp, "faithful"), "the paper's methods A–F", service, **kw)


def percentile_error_vs_rho_corrected(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Relative percentile error of the corrected chains and T against the best reference (maps, one panel per
    shown percentile), in their own palette; exact against the simulation where the simulation can tell (the
    check) in the caption."""
    lines = [s for s in series(cmp, "corrected") if s.method != "exact"]
    return _percentile_error_figure(cmp, stem, lines, "the corrected methods and T", service,
                                    exact_check=service == EXPONENTIAL, palette="corrected", **kw)


# =========================================================================== run time
def _families(cmp):
    present = cmp["approximation"].values.tolist()
    return [(name, ms, color) for name, ms, color in (
        ("paper-faithful A–F", [m for m in FAITHFUL if m in present], "tab:blue"),
        ("corrected A*–F*", [m for m in present if m.endswith("*")], "#4d4d4d"),
        ("exact", [m for m in present if m == "exact"], _EXACT_COLOR),
        (TAIL_LABEL, [m for m in present if m == TAIL], _TAIL_COLOR)) if ms]


def runtime_vs_R(cmp: xr.Dataset, stem, **kw):
    """Run time per cell vs R per family (faithful A–F, corrected A*–F*, exact, T): the median over the family's
    methods and the loads where it ran (a cell refused as over budget or at its truncation cap counts nowhere: its
    time is the time to refuse), the whisker from the fastest to the slowest of those cells; a family that did not
    run at every load of an R is drawn hollow there with the count of cells that ran."""
    from matplotlib.lines import Line2D

    nr = cmp["not_run"] if "not_run" in cmp else xr.zeros_like(cmp["run_time"], dtype=np.int8)
    fig, ax = plt.subplots(figsize=(8.0, 5.0))
    Rv, n_rho, fams = cmp["R"].values, cmp.sizes["rho"], _families(cmp)
    meds, partial = _runtime_families(ax, cmp["run_time"], nr, fams, Rv, n_rho)
    ax.set_yscale("log")
    log_ticks(ax.yaxis)
    ax.set_xscale("log")
    ax.set_xticks(Rv, [str(int(r)) for r in Rv])
    ax.minorticks_off()
    ax.set_xlabel("servers R")
    ax.set_ylabel("run time of one (R, ρ) cell (s, wall clock)")
    ax.set_title("Run time of each method family per cell, where it ran (median over its methods and loads; whisker: "
                 "fastest to slowest cell)\nmedians: " + ", ".join(f"{lab.split(' (')[0]} {_g(v, 1)} s"
                                                              for lab, (_, v) in meds.items()), fontsize=9.5)
    handles = [Line2D([], [], ls="none", marker="o", ms=7, color=c_) for _, _, c_ in fams]
    labels = [lab for lab, _, _ in fams]
    if partial:
        handles.append(Line2D([], [], ls="none", marker="o", ms=7, mfc="white", mec="0.3", mew=1.8))
        bw = _budget_words(cmp)
        labels.append(f"hollow, k/{n_rho} beside it: ran at only k of the {n_rho} loads (the rest over budget"
                      + (f" — {bw} —" if bw else "") + ": left out, not counted as fast)")
    ax.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    return save(fig, stem, caption=_runtime_caption(cmp, nr, meds, partial), **kw)


def _runtime_families(ax, rt, nr, fams, Rv, n_rho):
    """The run-time figure's marks per family and R: the median (hollow, with k/n next to it, where the family
    did not run at every load) and the whisker. Returns ({family: (methods, median over all its cells)}, whether a
    hollow mark is drawn)."""
    meds, partial = {}, False
    for k, (label, ms, color) in enumerate(fams):
        d = rt.sel({"approximation": ms}).where(nr.sel({"approximation": ms}) == 0)
        dims = [x for x in d.dims if x != "R"]
        med = d.median(dims).values
        if not np.isfinite(med).any():
            continue
        # the loads where every method of the family ran
        full = (nr.sel({"approximation": ms}) == 0).all("approximation").sum("rho").values
        meds[label] = (ms, float(np.nanmedian(d.values)))
        x = Rv * 1.07 ** (k - (len(fams) - 1) / 2)  # side by side by a constant factor: even on the log axis
        ax.vlines(x, d.min(dims).values, d.max(dims).values, color=color, lw=2.2, alpha=0.55)
        for xi, m_, f_ in zip(x, med, full, strict=True):
            if not np.isfinite(m_):
                continue
            whole = f_ == n_rho
            partial |= not whole
            ax.plot([xi], [m_], "o", ms=7, color=color, mfc=color if whole else "white", mec=color, mew=1.8,
                    zorder=4)
            if not whole:  # next to its hollow marker, in its colour: under it, above it for every other family
                up = k % 2 == 1  # (neighbouring families' labels would touch)
                ax.annotate(f"{int(f_)}/{n_rho}", (xi, m_), xytext=(0, 7 if up else -7), textcoords="offset points",
                            fontsize=8, color=color, fontweight="bold", ha="center", va="bottom" if up else "top",
                            zorder=6,
                            bbox={"facecolor": "w", "edgecolor": "none", "pad": 0.4})
    return meds, partial


def _runtime_caption(cmp, nr, meds, partial) -> Caption:
    rt = cmp["run_time"]
    ran_q = "(not_run == 0)" if "not_run" in cmp else "isfinite(run_time)"
    findings = []
    for label, (ms, med) in meds.items():
        findings.append(Claim(f"{label}: median {_g(med)} s per cell where it ran.", med,
                              Q.query(f"where({ran_q}, run_time, nan).sel(approximation={Q.names(ms)})",
                                      (("median", None),), None, {}), sig_tol(med, 2)))
    limits = []
    if len(meds) > 1:
        fast = min(meds, key=lambda k: meds[k][1])
        slow = max(meds, key=lambda k: meds[k][1])
        both = meds[slow][0] + meds[fast][0]
        common = (nr.sel(approximation=both) == 0).all("approximation")
        vs, vf = (float(np.nanmedian(rt.sel(approximation=meds[x][0]).where(common).values)) for x in (slow, fast))
        r = vs / vf
        n_common = int(common.sum())
        cq = f"(not_run.sel(approximation={Q.names(both)}).max('approximation') == 0)" if "not_run" in cmp else \
            "(run_time == run_time)"
        findings.append(Claim(f"On the {n_common} cells where both ran, the fastest family ({fast}) is a median "
                              f"{_g(r)} times faster than the slowest ({slow}).", r,
                              Q.query(f"where({cq}, run_time, nan).sel(approximation={Q.names(meds[slow][0])})"
                                      ".median() "
                                      f"/ where({cq}, run_time, nan).sel(approximation={Q.names(meds[fast][0])})"
                                      ".median()", (("max", None),), None, {}), sig_tol(r, 2)))
    if partial:
        bw = _budget_words(cmp)
        limits.append("Families drawn hollow did not run at every load of that R (over budget or truncation cap"
                      + (f"; exact's budget: {bw}, its cost predicted before it runs" if bw else "") + "): their "
                      "median covers only the cells that ran, the cheaper ones, so it understates the cost of the "
                      "whole row.")
    limits.append("Run times are wall-clock times on the machine that ran the pipeline, measured once: they vary from "
                  "run to run and machine to machine.")
    return Caption("Run time of the analytic methods per (R, ρ) cell against the number of servers R, per family: the "
                   "median over the family's methods and the loads where they ran, the whisker from the fastest to the "
                   "slowest of those cells.", findings, limits,
                   [("Methods that share building blocks (A*–F* compute two distinct chains) report their own share. "
                     "A cell a method refused (over budget) counts nowhere: its time is the time to refuse.")])


# =========================================================================== one cell's distribution
def _cdf_style(sr, c) -> dict:
    """A method line's width, alpha and layer in the CDF figures, the same in every panel: one width for all, except
    a line that a later one covers (``c.under``, :func:`_under`; its legend entry says "under …"): wide and faint
    underneath (solid: a wide dashed line would break up), so both show where they coincide; also its line style."""
    if sr.method in getattr(c, "under", ()):
        return {"ls": "-", "lw": 5.0, "alpha": 0.45, "zorder": 2, "solid_capstyle": "butt"}
    return {"ls": sr.style, "lw": 1.5, "alpha": 1.0, "zorder": 3}


#: the corrected chains' line styles in the CDF figures: dashed, each distinct chain with its own dash pattern
_CHAIN_DASHES = ["--", (0, (1.5, 1.5)), (0, (7, 2, 1.5, 2, 1.5, 2)), (0, (10, 3))]


def _under(lines, curves, tol, panels) -> dict:
    """For each series of ``lines`` that a series drawn after it (on top) covers: (the top one's name, the panels
    where it does: all, or the names in ``panels`` it covers in). ``curves``: {method: [array per panel]} in the
    panels' y units, ``tol``: per panel, the largest gap that does not show."""
    out = {}
    for i, sr in enumerate(lines):
        for top in reversed(lines[i + 1:]):
            on = [np.nanmax(np.abs(a - b), initial=0.0) <= e for a, b, e in zip(curves[sr.method],
                                                                               curves[top.method], tol, strict=True)]
            if any(on):
                where = "" if all(on) else " in the " + " and ".join(p for p, o in zip(panels, on, strict=True) if o)
                out[sr.method] = top.label.split(" (")[0] + where
                break
    return out


def cdf_cell(sim: xr.Dataset, approx: xr.Dataset, R, rho, stem, service=EXPONENTIAL, cmp=None, **kw):
    """Simulated (pooled, with its 95 % CI over the replications in the tail) vs approximated CDFs of one cell: the
    body (each CDF minus the reference's, linear, over the window where the drawn lines' W lies:
    :func:`_body_window`) and the tail (log, up to the 99.999th percentile or the grid's end). The simulated tail is
    drawn solid where at least 100 customers per replication lie beyond t, dotted beyond (reference too short there).

    Drawn: ``exact``, ``T`` and each distinct corrected chain, plus the three paper methods closest to the reference
    by Wasserstein distance (exact where it ran, else the simulation; from ``cmp`` if given, else all six); the lines
    that lie on exact in both panels (:func:`_on_exact`) are drawn as one with it. Methods whose "CDF" is not a CDF
    are left out and named. ``sim``/``approx`` may be lazily opened files.
    """
    c = _cdf_data(sim, approx, R, rho, service, cmp)
    fig, axes = plt.subplots(1, 3 if c.use_exact else 2, figsize=(15.5 if c.use_exact else 11.5, 4.4))
    ax1, ax2 = axes[:2]
    x2 = min(max(1.1 * c.q(0.99999), 5 * float(c.t[1])), float(c.t[-1]))
    n2 = min(len(c.t), int(np.searchsorted(c.t, x2, side="right")) + 1)
    full = {sr.method: c.Fa[c.methods.index(sr.method)] - c.F_ref for sr in c.lines}
    tail = {sr.method: np.log10(np.clip(1 - c.Fa[c.methods.index(sr.method)][:n2], 1e-6, None)) for sr in c.lines}
    c.same = _on_exact(c, full, tail, x2)
    x1 = _body_window(c, full, x2)
    n1 = min(len(c.t), int(np.searchsorted(c.t, x1, side="right")) + 1)
    body = {m: _smooth(v[:n1], n1) for m, v in full.items()}
    order = [sr for sr in c.lines if sr.method == "exact"] + [sr for sr in c.lines if sr.method != "exact"]
    order = [sr for sr in order if sr.method not in c.same]
    lo, hi, pad = _body_range(c, body)
    covered = _under(order, {m: [body[m], tail[m]] for m in body}, (0.01 * 2.4 * ((hi - lo) / 2 + pad), 0.02),
                     ("body", "tail"))
    c.under = {m for m in covered if m != "exact"}  # exact is the wide light line anyway
    _cdf_body(ax1, c, body, n1, x1)
    h, lab = _cdf_tail(ax2, c, n2, x2, {sr.method: _cdf_label(c, sr, covered) for sr in c.lines})
    if c.use_exact:
        _cdf_ratio(axes[2], c, n2, x2)
    for ax in axes:
        ax.set_xlabel(f"sojourn time t ({TIME_UNITS})", fontsize=9.5)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    _legend_below(fig, h, lab, ncol=_balanced_ncol(len(lab)), fontsize=9.5)
    shown = [m for sr in c.lines for m in sr.members]
    hidden = [m for m in c.methods if c.ok[m] and m not in shown]
    not_run = [m for m in c.methods if not c.ran[m]]
    cap = _cdf_caption(cmp, c, R, float(rho), service, x1, hidden, not_run)
    head = _cdf_findings(cmp, c.w_ref, R, float(rho), service, c.faithful)[0] if cmp is not None else []
    k = next((i for i, h in enumerate(head) if h.startswith("corrected")), len(head))
    head = "\n".join("; ".join(part) for part in (head[:k], head[k:]) if part)  # A–F, then the corrected chains
    fig.suptitle(f"Sojourn-time distribution at R = {R}, ρ = {float(rho):.2f} ({service} service)"
                 + (f"\n{head}" if head else ""), fontsize=10.5, y=1.0, va="bottom")
    return save(fig, stem, caption=cap, **kw)


#: a corrected chain or T is drawn as one line with exact where its CDF is within this of exact's at every t and its
#: survival within :data:`_SAME_DECADES` decades of exact's down to 1e-6 over the tail panel (closer than exact's wide
#: line in either panel)
_SAME_CDF = 1e-3
_SAME_DECADES = 0.03
#: the body panel reaches to where this share of each separately drawn line's ∫|F − F_ref| dt (its W) lies
_BODY_SHARE = 0.95


def _on_exact(c, full, tail, x2) -> list:
    """The corrected chains and T (their first members) that lie on exact in both panels: drawn as one line with it
    (:data:`_SAME_CDF`, :data:`_SAME_DECADES`); none where exact is not the reference."""
    if not c.use_exact:
        return []
    out, drawn = [], c.t[:len(tail["exact"])] <= x2
    for sr in c.lines:
        if sr.method == "exact" or not (sr.method.endswith("*") or sr.method == TAIL):
            continue
        d_body = np.nanmax(np.abs(full[sr.method]), initial=0.0)
        d_tail = np.nanmax(np.abs(tail[sr.method] - tail["exact"])[drawn], initial=0.0)
        if d_body <= _SAME_CDF and d_tail <= _SAME_DECADES:
            out.append(sr.method)
    return out


def _body_window(c, full, x2) -> float:
    """The body panel's right end: at least 1.15 × the simulated 99th percentile, and far enough that
    :data:`_BODY_SHARE` of each separately drawn line's W lies inside (at most ``x2``, the tail panel's end)."""
    x = max(1.15 * c.q(0.99), 5 * float(c.t[1]))
    dt = np.diff(c.t, append=c.t[-1])
    for sr in c.lines:
        if sr.method == "exact" or sr.method in c.same:
            continue
        cum = np.cumsum(np.nan_to_num(np.abs(full[sr.method])) * dt)
        if cum[-1] > 0:
            x = max(x, float(c.t[min(len(c.t) - 1, int(np.searchsorted(cum, _BODY_SHARE * cum[-1])))]))
    return min(x, x2)


def _cdf_data(sim, approx, R, rho, service, cmp):
    """What the CDF figure of one cell draws: the grid ``t``, the methods' CDFs ``Fa`` (rows in order of
    ``methods``), the replications' ``Fr`` and the pooled ``Fp`` simulated CDFs with the pooled curve's 95 % CI
    half-width ``ci`` (Student t over the replications), the ``lines`` to draw, the reference ``F_ref`` of the body
    (exact where it ran, else the pooled simulation), where the simulated tail is a reference (``reliable``,
    ``t_end``) and each method's W to its reference (``w_ref``, from ``cmp``)."""
    from types import SimpleNamespace

    from scipy import stats

    s = sim[["count", "overflow"]].sel(service=service, R=R).sel(rho=rho, method="nearest")
    var = "cdf" if "cdf" in approx else "sf"
    c = SimpleNamespace(t=sim["t"].values, methods=approx["approximation"].values.tolist())
    Fa = approx[[var]].sel(R=R).sel(rho=rho, method="nearest")[var].transpose("approximation", "t").values
    c.Fa = Fa.astype(float) if var == "cdf" else 1.0 - Fa.astype(np.float64)
    count, overflow = s["count"].values.astype(float), s["overflow"].values.astype(float)
    c.Fr = cdf_at_left_edges(count, overflow)
    c.Fp = cdf_at_left_edges(count.sum(0), float(overflow.sum()))
    n_rep = count.sum(-1) + overflow
    n_rep = n_rep[n_rep > 0]
    rows = c.Fr[np.isfinite(c.Fr).any(-1)] if c.Fr.ndim > 1 else c.Fr[None]
    c.k = len(rows)
    c.ci = (stats.t.ppf(0.975, c.k - 1) * np.std(rows, axis=0, ddof=1) / np.sqrt(c.k) if c.k > 1
            else np.full(c.t.size, np.nan))
    flags, _ = fit_validity(c.Fa)
    c.ran = {m: bool(np.isfinite(F).any()) for m, F in zip(c.methods, c.Fa, strict=True)}
    c.ok = {m: c.ran[m] and not f for m, f in zip(c.methods, flags, strict=True)}
    c.omitted = [m for m in c.methods if c.ran[m] and not c.ok[m]]
    c.faithful = [m for m in FAITHFUL if m in c.methods and c.ok[m]]
    c.w_ref = None
    if cmp is not None:
        c.w_ref = w_against_reference(cmp, service).sel(R=R).sel(rho=float(rho), method="nearest")
        W = {m: float(c.w_ref["W"].sel(approximation=m)) for m in c.faithful}
        c.faithful = sorted(c.faithful, key=lambda m: (not np.isfinite(W[m]), W[m]))[:3]
    c.lines = _cdf_lines(c)
    c.q = lambda p: _first_above(c.t, c.Fp, p)
    # where the simulated tail stops being a reference: fewer than TAIL_MIN customers per replication beyond t
    c.reliable = (1.0 - c.Fp) * (n_rep.mean() if n_rep.size else 0.0) >= TAIL_MIN
    c.t_end = float(c.t[np.nonzero(c.reliable)[0][-1]]) if c.reliable.any() else 0.0
    c.use_exact = "exact" in c.methods and c.ok["exact"] and service == EXPONENTIAL
    c.F_ref = c.Fa[c.methods.index("exact")] if c.use_exact else c.Fp
    return c


def _first_above(t, F, p) -> float:
    """The first grid t where F > p, else the last t."""
    hit = np.nonzero(F > p)[0] if np.isfinite(F).any() else []
    return float(t[hit[0]]) if len(hit) else float(t[-1])


def _cdf_lines(c) -> list:
    """The CDF figure's lines: the three closest of A–F, each distinct corrected chain (identical CDFs drawn once,
    one dash pattern each), exact and T."""
    lines = [Series([m], _FAITHFUL_COLOR[m], "-") for m in c.faithful]
    chains: list[list[str]] = []
    for m in (x for x in c.methods if x.endswith("*") and c.ok[x]):
        i = c.methods.index(m)
        for g in chains:
            if np.array_equal(c.Fa[c.methods.index(g[0])], c.Fa[i], equal_nan=True):
                g.append(m)
                break
        else:
            chains.append([m])
    lines += [Series(g, method_color(g[0]), _CHAIN_DASHES[k % len(_CHAIN_DASHES)], lw=1.9 - 0.6 * k)
              for k, g in enumerate(chains)]
    if "exact" in c.methods and c.ok["exact"]:
        lines.append(Series(["exact"], _EXACT_COLOR, "-", lw=2.0))
    if TAIL in c.methods and c.ok[TAIL]:
        lines.append(tail_series())
    return lines


#: the body's method curves are smoothed over this share of the drawn points: their CDFs are stored with 12
#: significant bits (sojourn.jsq_ps.storage), whose rounding (≤ 1.2e-4) would show as steps at a ±0.005 scale
_SMOOTH_SHARE = 1 / 150


def _smooth(y, n):
    from scipy.ndimage import uniform_filter1d

    size = max(1, int(n * _SMOOTH_SHARE))
    ok = np.isfinite(y)
    if size < 2 or not ok.all():
        return y
    return uniform_filter1d(y, size, mode="nearest")


def _cdf_body(ax, c, body, n1, x1) -> None:
    """The body panel: each separately drawn method's CDF minus the reference's (smoothed: :data:`_SMOOTH_SHARE`);
    the simulation is not drawn there (the methods are judged against exact, which has no noise: the simulation is a
    check on exact, in the tail and ratio panels); the y-range follows the methods (:func:`_body_range`)."""
    t = c.t[:n1]
    ax.axhline(0.0, color=_EXACT_COLOR if c.use_exact else _SIM_GREY, lw=2.2, alpha=0.8, zorder=1)
    for sr in (sr for sr in c.lines if sr.method != "exact" and sr.method not in c.same):
        ax.plot(t, body[sr.method], color=sr.color, **_cdf_style(sr, c))
    lo, hi, pad = _body_range(c, body)
    ax.set_ylim(lo - pad, hi + pad)
    ax.set_xlim(0, x1)
    ref = "exact" if c.use_exact else "simulated"
    ax.set_ylabel(f"P(T ≤ t) − {ref} P(T ≤ t)", fontsize=9.5)
    ax.set_title(f"body: each CDF minus {ref}'s (area to 0 = W)", fontsize=10)


def _body_range(c, body) -> tuple[float, float, float]:
    """The body panel's data range (lo, hi) over the separately drawn lines, and its padding."""
    vals = [body[sr.method] for sr in c.lines if sr.method != "exact" and sr.method not in c.same]
    lo = min(float(np.nanmin(v, initial=0.0)) for v in vals)
    hi = max(float(np.nanmax(v, initial=0.0)) for v in vals)
    return lo, hi, 0.12 * max(hi - lo, 2e-3)


#: the pooled simulation's colour in the CDF figures (near black: the methods, not it, carry the colours)
_SIM_GREY = "0.2"


def _sim_tail(ax, c, t, y, ci=None) -> list:
    """The pooled simulation where it is a reference (at least TAIL_MIN customers per replication beyond t; nothing
    beyond): a near-black line with open circles (visible on top of exact) and its 95 % CI band; the handles."""
    good = c.reliable[:len(t)]
    out = [ax.plot(t, np.where(good, y, np.nan), color=_SIM_GREY, lw=1.0, marker="o", ms=3.2, mfc="white",
                   mew=0.8, markevery=0.045, zorder=6)[0]]
    if ci is not None and c.k > 1:
        lo, hi = (np.where(good, v, np.nan) for v in ci)
        out.append(ax.fill_between(t, lo, hi, color="0.55", alpha=0.3, lw=0, zorder=1))
    return out


def _cdf_tail(ax, c, n2, x2, labels) -> tuple[list, list]:
    """The tail panel: P(T > t) on a log scale, exact wide and light underneath (T dash-dot on it where they are drawn
    as one: one legend entry), the other methods on top, the pooled simulation with its 95 % CI where it is a
    reference (:func:`_sim_tail`). Returns the legend's (handles, labels)."""
    t = c.t[:n2]
    sf = 1 - c.Fp[:n2]
    ci = c.ci[:n2]
    handles = _sim_tail(ax, c, t, sf, (np.clip(sf - ci, 1e-7, None), sf + ci))
    names = ["simulation (pooled), where it is a reference", f"simulation's 95 % CI ({c.k} replications)"][
        :len(handles)]
    group = []
    for sr in c.lines:
        if sr.method in c.same and sr.method != TAIL:
            continue
        wide = sr.method == "exact"
        ln, = ax.plot(t, 1 - c.Fa[c.methods.index(sr.method)][:n2], color=sr.color,
                      **({"ls": sr.style, "lw": 4.0, "alpha": 0.45, "zorder": 2} if wide else _cdf_style(sr, c)))
        if wide:
            handles.append(ln)
            names.append("exact (the reference; wide, light)" if c.same else labels[sr.method])
        if c.same and (wide or sr.method in c.same):
            group.append(ln)
        elif not wide:
            handles.append(ln)
            names.append(labels[sr.method])
    if group:
        handles.append(tuple(group))
        names.append(labels["exact"])
    ax.set_xlim(0, x2)
    ax.set_yscale("log")
    ax.set_ylim(1e-6, 1.0)
    ax.set_ylabel("P(T > t)", fontsize=9.5)
    ax.set_title(f"tail: P(T > t); the simulation is a reference up to t ≈ {c.t_end:.3g}", fontsize=10)
    return handles, names


#: the ratio panel's y-range: at most this factor either side of 1
_RATIO_SPAN = 30.0


def _cdf_ratio(ax, c, n2, x2) -> None:
    """The tail-ratio panel (exact is the reference): each separately drawn method's P(T > t) over exact's, on a log
    scale, where exact's survival is at least 1e-6; the simulation's (with its CI) where it is a reference. Lines
    that are near-identical in the tail panel come apart here."""
    t = c.t[:n2]
    ex = 1 - c.Fa[c.methods.index("exact")][:n2]
    keep = ex >= 1e-6
    ratio = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for sr in c.lines:
            if sr.method == "exact" or (sr.method in c.same and sr.method != TAIL):
                continue
            ratio[sr] = np.where(keep, (1 - c.Fa[c.methods.index(sr.method)][:n2]) / ex, np.nan)
        sim = np.where(keep, (1 - c.Fp[:n2]) / ex, np.nan)
        ci = c.ci[:n2] / ex
    ax.axhline(1.0, color=_EXACT_COLOR, lw=4.0, alpha=0.45, zorder=2)
    for sr, r in ratio.items():
        ax.plot(t, np.clip(r, 1e-9, None), color=sr.color, **_cdf_style(sr, c))
    _sim_tail(ax, c, t, sim, (np.clip(sim - ci, 1e-9, None), sim + ci))
    vals = np.concatenate([r[np.isfinite(r) & (r > 0)] for r in ratio.values()] + [np.ones(1)])
    lo = max(float(vals.min()), 1 / _RATIO_SPAN) / 1.25
    hi = min(float(vals.max()), _RATIO_SPAN) * 1.25
    ax.set_yscale("log")
    lo, hi = min(lo, 0.8), max(hi, 1.25)
    ax.set_ylim(lo, hi)
    fine = (0.8, 1.25) if hi / lo < 4 else ()
    ticks = [v for v in (0.03, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20) + fine if lo <= v <= hi]
    ax.set_yticks(ticks, [f"{v:g}" for v in ticks])
    ax.yaxis.set_minor_formatter(mticker.NullFormatter())
    ax.set_xlim(0, float(t[keep][-1]) if keep.any() else x2)
    ax.set_ylabel("P(T > t) / exact's", fontsize=9.5)
    ax.set_title("tail ratio to exact: above 1 = conservative", fontsize=10)


def _cdf_label(c, sr, covered) -> str:
    """A line's legend entry: its name and its W (in mean service times) against the reference and, if another line
    covers it, which; exact's entry names the lines drawn as one with it (:func:`_on_exact`)."""
    if sr.method == "exact" and c.same:
        chains = [x for x in c.lines if x.method.endswith("*")]
        named = [x for x in c.lines if x.method in c.same]
        words = ("corrected chains" if chains and all(x.method in c.same for x in chains)
                 else " and ".join(x.label for x in named if x.method != TAIL))
        words = " + ".join(w for w in (words, TAIL if TAIL in c.same else "") if w)
        return f"{words} ≈ exact: {_w_words(c, c.same)}"
    text = sr.label
    w = _w_words(c, [sr.method])
    if w and not (sr.method == "exact" and c.use_exact):
        text += f": {w}"
    return text + (f" — under {covered[sr.method]}" if sr.method in covered else "")


def _w_words(c, methods) -> str:
    """'W = 0.2' (the largest of ``methods``' W to the reference), 'W < 0.001', or '' without W."""
    if c.w_ref is None:
        return ""
    ws = [float(c.w_ref["W"].sel(approximation=m)) for m in methods if m in c.w_ref["approximation"].values]
    ws = [w for w in ws if np.isfinite(w)]
    if not ws:
        return ""
    w = max(ws)
    return f"W < {W_FLOOR:g}" if w < W_FLOOR else f"W {'≤' if len(ws) > 1 else '='} {_g(w)}"


#: methods of A–F whose W is within this factor of the closest one's are named together, as nearly tied
_TIE = 1.15


def _cdf_findings(cmp, w_ref, R, rho, service, drawn) -> tuple[list, list]:
    """The CDF figure's findings, from the comparison: (short phrases for the title, claims for the caption) — the
    closest of A–F with those nearly tied to it (W within ×:data:`_TIE`), the drawn A–F's error at the highest
    percentile against exact (the direction of their tails), and the corrected chains' and T's largest W."""
    c = cmp.sel(service=service).sel(R=R).sel(rho=rho, method="nearest")
    sel = {"service": service, "R": R, "rho": float(c["rho"])}
    present = [m for m in FAITHFUL if m in c["approximation"].values]
    W = {m: float(w_ref["W"].sel(approximation=m)) for m in present}
    W = {m: v for m, v in W.items() if np.isfinite(v)}
    if not W:
        return [], []
    ref = "exact" if bool((w_ref["reference"] == REF_EXACT).any()) else "the simulation"
    wq = f"({Q.w_ref(cmp)})"
    tied = sorted((m for m in W if W[m] <= _TIE * min(W.values())), key=W.get)
    best = tied[0]
    first = Q.query(f"{wq}.sel(approximation={Q.names(present)})", (("argmin", None),), None, sel)
    if len(tied) == 1:
        claims = [Claim(f"Closest of the paper's A–F to {ref} by Wasserstein distance: {best} (W = {_g(W[best])} "
                        f"{TIME_UNIT}).", {"approximation": best, "value": W[best]}, first, sig_tol(W[best], 2))]
        head = [f"closest of A–F: {best} (W = {_g(W[best])})"]
    else:
        claims = [Claim(f"Closest of the paper's A–F to {ref} by Wasserstein distance: {listing(tied)}, nearly tied "
                        f"(W = {listing([_g(W[m]) for m in tied])} {TIME_UNIT}, within {100 * (_TIE - 1):.0f} % of "
                        "the closest).", [{"approximation": best, "value": W[best]}] + [W[m] for m in tied[1:]],
                        [first] + [Q.query(f"{wq}.sel(approximation={m!r})", (("max", None),), None, sel)
                                   for m in tied[1:]], max(sig_tol(W[m], 2) for m in tied))]
        head = [f"closest of A–F: {listing(tied)}, nearly tied (W {_g(W[tied[0]])}–{_g(W[tied[-1]])})"]
    ap = c["approx_percentile"]
    if ref == "exact" and "exact" in ap["approximation"].values:
        ok = [float(p) for p in c["percentile"].values if np.isfinite(float(ap.sel(approximation="exact",
                                                                                   percentile=p)))]
        ms = [m for m in drawn if m in W]
        if ok and ms:
            p = ok[-1]
            e = {m: float(ap.sel(approximation=m, percentile=p) / ap.sel(approximation="exact", percentile=p) - 1)
                 for m in ms}
            e = {m: v for m, v in e.items() if np.isfinite(v)}
            side = ("all optimistic (below exact)" if all(v < 0 for v in e.values()) else
                    "all conservative (above exact)" if all(v > 0 for v in e.values()) else "")
            words = listing([f"{m} {_pct(v)}" for m, v in e.items()])
            if e:
                claims.append(Claim(f"At the {p:g}th percentile the drawn A–F against exact: {words}"
                                    + (f", {side}." if side else "."), list(e.values()),
                                    [Q.query(f"approx_percentile.sel(approximation={m!r}) / approx_percentile.sel("
                                             "approximation='exact') - 1", (("max", None),), None,
                                             {**sel, "percentile": p}) for m in e], half_unit(0, 100)))
                head.append(f"their {p:g}th percentile vs exact: {words}" + (f" ({side.split(' (')[0]})" if side
                                                                             else ""))
    corr = [m for m in c["approximation"].values.tolist() if (m.endswith("*") or m == TAIL)
            and np.isfinite(float(w_ref["W"].sel(approximation=m)))]
    if corr:
        wmax = max(float(w_ref["W"].sel(approximation=m)) for m in corr)
        words = f"below {W_FLOOR:g}" if wmax < W_FLOOR else f"at most {_g(wmax)}"
        claims.append(Claim(f"The corrected chains and T ({listing(corr)}): W to {ref} {words} {TIME_UNIT}.",
                            wmax, Q.query(f"{wq}.sel(approximation={Q.names(corr)})", (("max", None),), None, sel),
                            W_FLOOR if wmax < W_FLOOR else sig_tol(wmax, 2)))
        if ref == "exact":  # the title states their deep tails (their W is in the legend)
            h, cl = _cdf_corrected_tail(c, sel, corr)
            head += h
            claims += cl
    return head, claims


def _cdf_corrected_tail(c, sel, corr) -> tuple[list, list]:
    """The corrected chains' and T's error at the deepest percentile exact has, against exact: the direction of their
    deep tails (the tail panel cannot show a few per cent). Methods with the same rounded error are named together."""
    ap = c["approx_percentile"]
    if "exact" not in ap["approximation"].values:
        return [], []
    ok = [float(p) for p in c["percentile"].values if np.isfinite(float(ap.sel(approximation="exact", percentile=p)))]
    if not ok:
        return [], []
    p = ok[-1]
    e = {m: float(ap.sel(approximation=m, percentile=p) / ap.sel(approximation="exact", percentile=p) - 1)
         for m in corr}
    e = {m: v for m, v in e.items() if np.isfinite(v)}
    if not e:
        return [], []
    groups: dict[str, list] = {}
    for m, v in e.items():
        groups.setdefault(_pct(v) if abs(v) >= 0.005 else "within ±0.5 %", []).append(m)
    words = "; ".join(f"{_span_names(ms)} {w}" for w, ms in groups.items())
    head = [f"corrected at the {p:g}th vs exact: " + _deep_tail_words(e)]
    claim = Claim(f"At the {p:g}th percentile the corrected chains and T against exact: {words}.", list(e.values()),
                  [Q.query(f"approx_percentile.sel(approximation={m!r}) / approx_percentile.sel(approximation='exact')"
                           " - 1", (("max", None),), None, {**sel, "percentile": p}) for m in e],
                  half_unit(0, 100))
    return head, [claim]


def _deep_tail_words(e) -> str:
    """The title's short form of the corrected chains' and T's errors ``e`` at the deepest percentile: the chains as
    one range where all lie on the same side ('−12 to −11 % (optimistic)'), else per group of equal rounded error
    with their names; then T's ('T within ±0.5 %')."""
    def side(v) -> str:
        return "optimistic" if all(x <= -0.005 for x in v) else "conservative" if all(x >= 0.005 for x in v) else ""

    def size(v) -> str:
        return "within ±0.5 %" if abs(v) < 0.005 else _pct(v)

    chains = {m: v for m, v in e.items() if m != TAIL}
    parts = []
    if chains and side(chains.values()):
        lo, hi = _pct(min(chains.values())), _pct(max(chains.values()))
        parts.append((lo if lo == hi else f"{lo.removesuffix(' %')} to {hi}") + f" ({side(chains.values())})")
    elif chains:
        groups: dict[str, list] = {}
        for m, v in chains.items():
            groups.setdefault(size(v), []).append(m)
        parts += [f"{_span_names(ms)} {w}" + (f" ({side([chains[m] for m in ms])})" if side([chains[m] for m in ms])
                                              else "") for w, ms in groups.items()]
    if TAIL in e:
        parts.append(f"{TAIL} {size(e[TAIL])}" + (f" ({side([e[TAIL]])})" if side([e[TAIL]]) else ""))
    return "; ".join(parts)


def _span_names(ms) -> str:
    """'A*–F*' for all six corrected chains, else their names joined by '='."""
    star = [f"{m}*" for m in FAITHFUL]
    if [m for m in ms if m in star] == star:
        return "A*–F*" + "".join(f", {m}" for m in ms if m not in star)
    return "=".join(ms)


def _cdf_caption(cmp, c, R, rho, service, x1, hidden, not_run) -> Caption:
    findings, limits = [], []
    if cmp is not None:
        findings += _cdf_findings(cmp, c.w_ref, R, rho, service, c.faithful)[1]
        findings += _cdf_reach_claims(cmp, R, rho, service, c.t_end)
    else:
        limits.append("Without the comparison the figure names no closest method.")
    limits += [f"Not run here (over budget / truncation cap): {listing(not_run)}."] if not_run else []
    limits += [f"Not drawn, not a CDF here: {listing(c.omitted)}."] if c.omitted else []
    limits += [f"Computed, not drawn (farther from the reference by W): {listing(hidden)}."] if hidden else []
    ref = "exact (pink line at 0)" if c.use_exact else "the pooled simulation"
    same = [sr.label for sr in c.lines if sr.method in c.same]
    how = [(f"First panel: the body, each CDF minus {ref}, from t = 0 to {x1:.3g}: at least the simulated 99th "
           f"percentile and far enough that {100 * _BODY_SHARE:.0f} % of each drawn line's W lies inside. The area "
           f"between a line and 0 over all t is its Wasserstein distance W ({TIME_UNIT}, in the legend). The methods' "
           "curves there are smoothed over 1/150 of the drawn range: their stored CDFs keep 12 significant bits, whose "
           "rounding would show as steps. The simulation is not drawn there: the methods are judged against exact, "
           "which has no noise; the simulation is only a check on exact (tail panels)."),
           ("Second panel: the tail P(T > t) on a log scale, exact wide and light under the others, the pooled "
           f"simulation (open circles) with its 95 % CI over the replications (grey band) where at least {TAIL_MIN} "
           "customers per replication lie beyond t; it ends there (no reference beyond).")]
    if c.use_exact:
        how.append("Third panel: each line's P(T > t) divided by exact's, on a log scale (1 = exact, below 1 = "
                   "optimistic), where exact's P(T > t) is at least 1e-6: tails that look alike in the second panel "
                   f"come apart there; the y-range is at most ×{_RATIO_SPAN:g} either side of 1, a tail that drops "
                   "to 0 leaves through the bottom.")
    if same:
        how.append(f"Drawn as one with exact (within {_SAME_CDF:g} of its CDF at every t and {_SAME_DECADES:g} "
                   f"decades of its survival down to 1e-6): {listing(same)}.")
    how.append("Drawn: the three of A–F closest to the reference by W, each distinct corrected chain (dashed, one "
               "dash pattern each), exact where it ran and T (dash-dot: the conservative tail chain, whose survival "
               "lies on or above the true one, so its body curve lies on or below 0). \"under X\": a line that X, "
               "drawn on top, covers (in the panel named, else in both). A paper method whose tail drops to 0 ends "
               "where its truncated state space runs out (a property of the method).")
    return Caption(f"Simulated against approximated sojourn-time distribution of one cell, R = {R}, ρ = {rho:.2f} "
                   f"({service} service; cells chosen in the config, figures.cdf_cells).", findings, limits, how)


def _cdf_reach_claims(cmp, R, rho, service, t_end) -> list:
    """The percentiles the simulation can estimate in this cell (and where its tail turns dotted), and exact against
    the simulation at the deepest of them."""
    c = cmp.sel(service=service).sel(R=R).sel(rho=rho, method="nearest")
    sel = {"service": service, "R": R, "rho": float(c["rho"])}
    ru = reference_usable(cmp).sel(service=service, R=R).sel(rho=rho, method="nearest")
    good = [float(p) for p, v in zip(ru["percentile"].values, ru.values, strict=True) if v]
    allp = [float(p) for p in ru["percentile"].values]
    words = f"the {listing([f'{p:g}th' for p in good])} percentile{'s' if len(good) > 1 else ''}" if good else "none"
    out = [Claim(f"Of the comparison's percentiles ({', '.join(f'{p:g}th' for p in allp)}), the simulation here can "
                 f"estimate {words} ({TAIL_MIN} or more customers per replication beyond it); its tail ends "
                 f"where it cannot (at t ≈ {t_end:.3g}).", good, Q.query("percentile", (("list", None),),
                                                                             Q.REF_SIM, sel))]
    if "exact" in c["approximation"].values.tolist() and good and bool(c["usable"].sel(approximation="exact")):
        p = good[-1]
        names = ("relative_percentile_error_mean", "relative_percentile_error_ci_low",
                 "relative_percentile_error_ci_high")
        m, lo, hi = (float(c.sel(percentile=p)[v].sel(approximation="exact")) for v in names)
        out.append(Claim(f"At the {p:g}th percentile exact and the simulation differ by {_pct(m, 1)} (95% CI "
                         f"{_pct(lo, 1)} to {_pct(hi, 1)}): {'within' if lo <= 0 <= hi else 'beyond'} the "
                         "simulation's noise.", [m, lo, hi],
                         [Q.query(f"{v}.sel(approximation='exact')", (("max", None),), None, {**sel, "percentile": p})
                          for v in names], half_unit(1, 100)))
    return out


# =========================================================================== M/G/R laws
_BAND_GREY = "0.84"  # the ±5 % band of the M/G/R figure's error row
def _scv_of(laws) -> dict:
    """{law name: its SCV} of the config's M/G/R law strings (rescaled to one mean, the SCV is unchanged)."""
    from ..core.laws.distributions import parse_law

    out = {}
    for spec in laws or ():
        try:
            law = parse_law(spec)
        except ValueError:
            continue
        out[law.name] = float(law.scv)
    return out


def mgr_laws(cmp: xr.Dataset, stem, laws=None, **kw):
    """M/G/R: each law's sojourn time against the exponential case (same mean service time), per R that ran: the
    Wasserstein distance of the law's simulation to the exponential simulation (solid), and to the closest of the
    analytic methods (dashed; generic over methods: any method in the comparison except exact counts, named per
    law and load at the dashed line's marker: :func:`_closest_letters`); colour = law; the simulations' own noise
    shaded grey. Below, where the comparison has methods that take the law itself, their percentile error and the
    exponential model's T's side by side in one panel of (R, ρ) cells (:func:`_law_cells_panel`); the legend and the
    note on the R's without a value fill the row's first slot. ``laws``: the config's law strings (their SCV in the
    legend)."""
    services = [s for s in cmp["service"].values.tolist() if s != EXPONENTIAL]
    vs = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    have = np.isfinite(vs.values).any(axis=(0, 2))
    Rv = cmp["R"].values[have] if have.any() else cmp["R"].values
    cand = [m for m in cmp["approximation"].values.tolist() if m != "exact"]
    law_rows = "law_relative_error_mean" in cmp and cmp.sizes.get("law_method", 0) > 0
    full = [R for R in Rv if _law_row_has_values(cmp, services, R)] if law_rows else []
    empty = [R for R in Rv if R not in full] if law_rows else []
    ncol = max(len(Rv), 3) if law_rows else len(Rv)
    fig = plt.figure(figsize=(3.4 * ncol + 1.0, 3.7 * (2 if law_rows else 1) + 2.2))
    gs = fig.add_gridspec(2 if law_rows else 1, 1, hspace=0.45)
    top = gs[0].subgridspec(1, ncol, wspace=0.32)
    axes = [fig.add_subplot(top[0, j]) for j in range(len(Rv))]
    cmap = plt.get_cmap("tab10")
    kinds, noise_drawn = _mgr_upper_row(axes, cmp, services, Rv, cand, cmap)
    handles, labels = _mgr_legend(services, _scv_of(laws), cmap, noise_drawn, law_rows)
    slot = None
    if law_rows:
        low = gs[1].subgridspec(1, ncol, wspace=0.38)
        slot = fig.add_subplot(low[0, 0])
        slot.set_axis_off()
        row_h, row_l, row_kinds = _law_cells_panel(fig.add_subplot(low[0, 1:]), cmp, services, full, cmap)
        handles, labels, kinds = handles + row_h, labels + row_l, kinds | row_kinds
    sh, sl = status_handles(kinds)
    handles, labels = handles + sh, labels + sl
    fig.subplots_adjust(left=0.08, right=0.97, top=0.88, bottom=0.07 if law_rows else 0.3)
    if slot is not None:
        note = _empty_law_row_note(cmp, services, empty) if empty else ""
        if note:
            slot.text(0.0, 1.12, note, transform=slot.transAxes, ha="left", va="top", fontsize=8.5, color="0.25",
                      bbox={"facecolor": "0.97", "edgecolor": "0.75"})
        slot.legend(handles, labels, loc="upper left", bbox_to_anchor=(-0.12, 0.86 if note else 1.12),
                    frameon=False, fontsize=8, handlelength=2.2, borderaxespad=0.0)
    else:
        _legend_below(fig, handles, labels, ncol=2, fontsize=8.5)
    head = _mgr_headline(cmp, services) if law_rows else ""
    fig.suptitle("How far each service law's sojourn time is from the exponential (M/M/R) case, at the same mean "
                 "service time" + (f"\n{head}" if head else "") + "\nupper row — solid: vs the M/M/R simulation; "
                 "dashed: vs the closest analytic method (its name at each marker)", y=0.995, va="top",
                 fontsize=10.5)
    return save(fig, stem, caption=_mgr_caption(cmp, services, cand, law_rows, kinds, empty), **kw)


def _mgr_upper_row(axes, cmp, services, Rv, cand, cmap):
    """The M/G/R figure's upper row, one panel per R (a shared log y): per law the W to the exponential simulation
    (solid) and to the closest method (dashed, hollow markers; its name at each marker: :func:`_closest_letters`),
    the solid lines' noise shaded.
    Returns (the status kinds drawn, whether the noise is drawn)."""
    for ax in axes[1:]:
        ax.sharey(axes[0])
    rho, run_ok = cmp["rho"].values, run_usable(cmp)
    vs = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    w = cmp["wasserstein_mean"].where(cmp["usable"] != 0).sel(approximation=cand)
    kinds, noise_fill, dashed = set(), [], {}
    for ax, R in zip(axes, Rv, strict=True):
        strip = status_strip(ax)
        for k, svc in enumerate(services):
            ok_run = run_ok.sel(service=svc, R=R).values
            y1 = np.where(ok_run, vs.sel(service=svc, R=R).values, np.nan)
            y2 = np.where(ok_run, w.sel(service=svc, R=R).min("approximation", skipna=True).values, np.nan)
            ok1, ok2 = np.isfinite(y1), np.isfinite(y2)
            if ok1.any():
                ax.plot(rho[ok1], y1[ok1], "-", color=cmap(k), marker="o", ms=3.5, lw=1.6)
            if ok2.any():
                ax.plot(rho[ok2], y2[ok2], "--", color=cmap(k), lw=1.1, marker="o", ms=3.5, mfc="white")
            dashed[R, svc] = y2
            simulated = np.isfinite(vs.sel(service=svc, R=R).values)
            strip.mark(svc, rho, simulated & ~ok_run, REFERENCE_TOO_SHORT.key, cmap(k))
        noise = _mgr_noise(cmp, R, services)
        okn = np.isfinite(noise) & np.isfinite(vs.sel(R=R).values).any(0)
        if okn.any():  # shaded below (once the limits are set): a W there is no difference this run can tell
            noise_fill.append((ax, rho[okn], noise[okn]))
            ax.plot(rho[okn], noise[okn], ":", color="0.45", lw=1.4, zorder=1)
        kinds |= strip.kinds
        ax.set_xlabel("load ρ")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        _linear_rho_axis(ax, rho[np.isfinite(vs.sel(R=R).values).any(0)])
        strip.finish(title=f"R = {R}")
    axes[0].set_ylabel(f"Wasserstein distance W\n({TIME_UNIT})")
    lo, hi = axes[0].get_ylim()  # the top on a labelled tick (1, 2, 5 × 10^k)
    e = 10.0 ** np.floor(np.log10(hi))
    axes[0].set_ylim(lo, 1.5 * min(v * e for v in (1, 2, 5, 10) if v * e >= hi * (1 - 1e-9)))
    log_ticks(axes[0].yaxis)
    for ax, x, y in noise_fill:
        ax.set_autoscale_on(False)
        ax.fill_between(x, lo, y, color="0.87", lw=0, zorder=0)
    for ax, R in zip(axes, Rv, strict=True):
        _closest_letters(ax, cmp, R, services, cand, cmap, {svc: dashed[R, svc] for svc in services})
    return kinds, bool(noise_fill)


def _mgr_noise(cmp, R, services):
    """The solid lines' noise at R per ρ (the largest over the laws): two pooled CDFs of K replications each, about
    sqrt(n_law² + n_exp²)/sqrt(K) (n: one replication's noise); NaN without sim_noise_wasserstein."""
    if "sim_noise_wasserstein" not in cmp:
        return np.full(cmp.sizes["rho"], np.nan)
    nz = cmp["sim_noise_wasserstein"].sel(R=R)
    k_rep = max(1, cmp.sizes.get("replication", 1))
    return (np.sqrt(nz.sel(service=services) ** 2 + nz.sel(service=EXPONENTIAL) ** 2).max("service").values
            / np.sqrt(k_rep))


def closest_methods(cmp, svc, R, cand) -> dict:
    """{ρ: the method of ``cand`` with the smallest W to the law ``svc``'s simulation at (R, ρ)} over the cells the
    M/G/R figure's dashed line draws (the simulation's run usable, some method with a value)."""
    ok_run = run_usable(cmp).sel(service=svc, R=R).values
    w = cmp["wasserstein_mean"].where(cmp["usable"] != 0).sel(service=svc, R=R, approximation=cand)
    out = {}
    for i, r in enumerate(cmp["rho"].values):
        v = w.isel(rho=i).values
        if ok_run[i] and np.isfinite(v).any():
            out[float(r)] = cand[int(np.nanargmin(v))]
    return out


def _closest_letters(ax, cmp, R, services, cand, cmap, y) -> None:
    """At each marker of a law's dashed line (``y``: {law: W per ρ}), the closest method's name
    (:func:`closest_methods`): small, unboxed, in the law's colour, just right of the marker."""
    for k, svc in enumerate(services):
        for r, m in closest_methods(cmp, svc, R, cand).items():
            j = int(np.argmin(np.abs(cmp["rho"].values - r)))
            if np.isfinite(y[svc][j]):
                ax.annotate(m, (r, y[svc][j]), xytext=(4, -1), textcoords="offset points", ha="left", va="top",
                            fontsize=7, color=cmap(k), fontweight="bold", zorder=6)


def _mgr_headline(cmp, services) -> str:
    """The M/G/R figure's main finding, for its title: the range of the exponential model's T's mean percentile error
    against the laws' simulations (its verdict where every cell lies on one side), and that of each method with the
    law itself (the numbers of :func:`_law_method_claims`)."""
    q = _law_row_percentile(cmp)
    parts = []
    e = _law_errors(cmp, services)
    if e.size:
        side = " (conservative)" if (e > 0).all() else " (optimistic)" if (e < 0).all() else ""
        parts.append(f"the exponential model's T errs by {e.min():+.0f} to {e.max():+.0f} %{side}")
    for m in cmp["law_method"].values.tolist():
        e = _law_errors(cmp, services, m)
        if e.size:
            parts.append(f"{m} with the law itself by {e.min():+.0f} to {e.max():+.0f} %")
    return f"At the {q:g}th percentile " + "; ".join(parts) if parts else ""


def _mgr_legend(services, scv, cmap, noise_drawn, law_rows):
    """The M/G/R figure's legend entries for the laws and the upper row."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Line2D([], [], color=cmap(k), lw=2.5) for k in range(len(services))]
    labels = [f"{s} service" + (f" (SCV {scv[s]:.2g})" if s in scv else "") for s in services]
    handles += [Line2D([], [], color="0.3", ls="-", marker="o", ms=3.5),
                Line2D([], [], color="0.3", ls="--", marker="o", ms=3.5, mfc="white")]
    labels += ["upper row, solid: vs the M/M/R simulation",
               "upper row, dashed: vs the closest analytic\nmethod (its name at each marker)"]
    if noise_drawn:
        handles.append(Patch(facecolor="0.85", edgecolor="0.45", ls=":"))
        labels.append("upper row, grey: the solid lines' own noise")
    if law_rows:
        handles.append(Patch(facecolor=_BAND_GREY, edgecolor="none"))
        labels.append("lower panel, grey band: ±5 % error")
    return handles, labels


def _empty_law_row_note(cmp, services, empty) -> str:
    """The one note for the M/G/R figure's lower-row panels left out (R's ``empty``): why they have no value."""
    q = _law_row_percentile(cmp)
    few = cmp["few_tail_customers"].sel(service=services, R=list(empty), percentile=q).values
    rs = listing([f"{r:g}" for r in empty])
    if (few != 0).all():
        return (f"R = {rs}: no {q:g}th-percentile error:\nthe simulation is too short (fewer than {TAIL_MIN}\n"
                f"customers per replication beyond it),\nfor every law at every load")
    return f"R = {rs}: no {q:g}th-percentile error at any load"


def _mgr_caption(cmp, services, cand, law_rows=False, kinds=(), empty=()) -> Caption:
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
        findings.append(Claim("Median distance of each law's sojourn time to the exponential case over the cells "
                              "that ran: " + listing([f"{s} {_g(med[s])}" for s in order]) + f" {TIME_UNIT}"
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
            findings.append(Claim("Median distance of each law's simulation to the closest analytic method: "
                                  + listing([f"{s} {_g(b[s])}" for s in order if s in b]) + f" {TIME_UNIT}.", b,
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
    if empty:  # the lower row's panels left out: the R's that have a value and the R's that ran, from the data
        q = _law_row_percentile(cmp)
        few = cmp["few_tail_customers"].sel(service=services, R=list(empty), percentile=q).values
        ran_r = [float(r) for r in cmp["R"].values if np.isfinite(ran.sel(R=r).values).any()]
        has_r = [r for r in ran_r if r not in [float(e) for e in empty]]
        why = (f"fewer than {TAIL_MIN} customers per replication lie beyond the {q:g}th percentile in every cell there"
               if (few != 0).all() else "no cell there has a value")
        sel = {"service": services, "percentile": q}
        limits.append(Claim(
            f"The {q:g}th-percentile error row shows R = {listing([f'{r:g}' for r in has_r]) or 'none'} of the R's "
            f"that ran ({listing([f'{r:g}' for r in ran_r])}): at R = {listing([f'{float(r):g}' for r in empty])} "
            f"{why}.",
            [has_r, ran_r],
            [Q.query(f"where({Q.RUN_OK} & (few_tail_customers == 0) & isfinite(law_relative_error_mean), R, nan)",
                     (("list", None),), None, sel),
             Q.query("where(isfinite(wasserstein_vs_exponential_sim), R, nan)", (("list", None),), None,
                     {"service": services})]))
    return Caption(
        "M/G/R: for each non-exponential service law (colour) with the same mean service time, the Wasserstein "
        f"distance (in {TIME_UNIT}) between its simulated sojourn-time CDF and the exponential law's (solid), and "
        "between it and the closest analytic method's CDF (dashed: the smallest over every method of the comparison "
        "but exact, which is the exponential M/M/R law itself and would repeat the solid line without its simulation "
        "noise; the closest method's name beside its marker at each load), against ρ, one panel per R that ran"
        + (f"; below, one panel of the (R, ρ) cells with a value (a category each, not a load axis): the error of the "
           f"{_law_row_percentile(cmp):g}th percentile against each law's simulation of T for exponential service (✕) "
           "and beside it of T with the law itself (filled markers; the ±5 % band shaded), each with its 95 % CI"
           if law_rows else "") + ".", findings, limits,
        [("The load axis is linear. The grey area up to the dotted line (where drawn) is the solid lines' own noise, "
          "from the replications alone (sim_noise_wasserstein): a solid line in it shows no difference this run can "
          "tell; a distance far above it is a real change of the sojourn-time law."
          + (" A simulated cell too short to be a reference (the run-length guard, or fewer than "
             f"{TAIL_MIN} customers per replication beyond the percentile) is marked ◇ (in the strip above an upper "
             "panel; named in the lower panel's title), not drawn." if REFERENCE_TOO_SHORT.key in set(kinds) else ""))])


def _linear_rho_axis(ax, ticks) -> None:
    """A linear load axis over ``ticks`` (the loads that ran, labelled) with minor ticks every 0.1, so that unequal
    gaps between the loads read as such."""
    from matplotlib.ticker import MultipleLocator

    ticks = np.asarray(ticks, float)
    if ticks.size:
        span = ticks.max() - ticks.min()
        pad = 0.04 + 0.05 * span
        ax.set_xlim(ticks.min() - pad, ticks.max() + pad)
        close = ticks.size > 1 and np.diff(np.sort(ticks)).min() < 0.08 * max(span, 1e-9)  # 0.9, 0.95: upright
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks], rotation=90 if close else 0)
    ax.xaxis.set_minor_locator(MultipleLocator(0.1))
    ax.tick_params(axis="x", which="minor", length=3)


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


def _law_row_series(cmp, svc, R, q) -> dict:
    """The M/G/R error row's values of law ``svc`` at R: {law method, or None for the exponential model's T:
    (mean, CI low, CI high) in % per ρ}, NaN where the simulation's run is unusable (or, for T, too few customers lie
    beyond the percentile ``q``)."""
    ok_run = run_usable(cmp).sel(service=svc, R=R).values
    few = cmp["few_tail_customers"].sel(service=svc, R=R, percentile=q).values
    out = {}
    for m in cmp["law_method"].values.tolist():
        d = cmp.sel(service=svc, R=R, law_method=m, percentile=q)
        out[m] = tuple(100.0 * np.where(ok_run, d[v].values, np.nan) for v in (
            "law_relative_error_mean", "law_relative_error_ci_low", "law_relative_error_ci_high"))
    if TAIL in cmp["approximation"].values.tolist():
        d = cmp.sel(service=svc, R=R, approximation=TAIL, percentile=q)
        out[None] = tuple(100.0 * np.where(ok_run & (few == 0), d[v].values, np.nan) for v in (
            "relative_percentile_error_mean", "relative_percentile_error_ci_low", "relative_percentile_error_ci_high"))
    return out


def _law_row_has_values(cmp, services, R) -> bool:
    q = _law_row_percentile(cmp)
    return any(np.isfinite(v[0]).any() for s in services for v in _law_row_series(cmp, s, R, q).values())


def _law_cells_panel(ax, cmp: xr.Dataset, services, Rv, cmap):
    """The M/G/R figure's lower panel: the error of :func:`_law_row_percentile` (method / simulation − 1, mean over
    replications with its 95 % CI) at each (R, ρ) cell with a value (categorical x, no load axis): per law (colour)
    the exponential model's T (✕) and beside it each method that takes the law itself (``law_method``: filled
    markers), the ±5 % band shaded; the title states both ranges (:func:`_law_panel_finding`). Cells without a value
    are named in the title. Returns the legend's (handles, labels) and the status kinds drawn."""
    from matplotlib.lines import Line2D

    q, rho = _law_row_percentile(cmp), cmp["rho"].values
    methods = cmp["law_method"].values.tolist()
    marks = ["^", "v", "P", "o"]  # never ◇: that is the reference-too-short mark
    vals = {R: {s: _law_row_series(cmp, s, R, q) for s in services} for R in Rv}
    cells = [(R, j) for R in Rv for j in range(rho.size)
             if any(np.isfinite(v[0][j]) for d in vals[R].values() for v in d.values())]
    keys = [m for m in ([None] if TAIL in cmp["approximation"].values.tolist() else []) + methods]
    width = 0.8 / max(1, len(services) * len(keys))
    ax.axhspan(-5.0, 5.0, color=_BAND_GREY, zorder=0)
    ax.axhline(0.0, color="0.5", lw=0.8)
    for x, (R, j) in enumerate(cells):
        for k, s in enumerate(services):
            for n, m in enumerate(keys):
                y, lo, hi = (v[j] for v in vals[R][s].get(m, (np.full(rho.size, np.nan),) * 3))
                if np.isfinite(y):
                    xx = x - 0.4 + width * (k * len(keys) + n + 0.5)
                    ax.errorbar([xx], [y], yerr=[[max(y - lo, 0)], [max(hi - y, 0)]], color=cmap(k), capsize=2,
                                marker="x" if m is None else marks[methods.index(m) % len(marks)], ms=5, lw=1.1)
        if x:
            ax.axvline(x - 0.5, color="0.8", lw=0.8)
    ax.set_xticks(range(len(cells)), [f"R = {R}\nρ = {rho[j]:g}" for R, j in cells], fontsize=8.5)
    ax.set_xlim(-0.5, len(cells) - 0.5)
    ax.grid(alpha=0.3, axis="y")
    ax.set_ylabel(f"{q:g}th percentile:\nmethod / simulation − 1 (%)", fontsize=9)
    merged = {(R, s): v for R in Rv for s, v in vals[R].items()}
    missing = [(R, float(r)) for R in Rv for j, r in enumerate(rho) if (R, j) not in cells
               and np.isfinite(cmp["wasserstein_vs_exponential_sim"].sel(R=R, service=services).values[:, j]).any()]
    ax.set_title(f"{q:g}th-percentile error\nT for exponential service (✕):"
                 + _law_panel_finding(merged, True).replace("\n", " ") + f"\n{listing(methods)} with the law itself:"
                 + _law_panel_finding(merged, False).replace("\n", " ")
                 + (f"\n◇ reference too short at {listing([f'R = {R}, ρ = {r:g}' for R, r in missing])} (not drawn)"
                    if missing else ""), fontsize=9, loc="left")
    handles = [Line2D([], [], color="0.3", marker=marks[j % len(marks)], ms=5, ls="none") for j in range(len(methods))]
    labels = [f"lower panel: {m} with the law itself (95 % CI)" for m in methods]
    if None in keys:
        handles.append(Line2D([], [], color="0.3", marker="x", ms=5, ls="none"))
        labels.append("lower panel: T for exponential service\n(the M/M/R model; 95 % CI)")
    return handles, labels, {REFERENCE_TOO_SHORT.key} if missing else set()


def _law_panel_finding(vals, exponential) -> str:
    """An error-row panel's finding for its title (a new line), from the values it draws: the range of the mean
    errors (%) over the laws and loads and its verdict — conservative / optimistic where every CI lies above / below
    0, else how many of the points lie within ±5 %."""
    pts = [(y, lo, hi) for v in vals.values() for m, (y, lo, hi) in v.items() if (m is None) == exponential]
    if not pts:
        return ""
    y, lo, hi = (np.concatenate([p[k] for p in pts]) for k in range(3))
    ok = np.isfinite(y)
    if not ok.any():
        return ""
    y, lo, hi = y[ok], lo[ok], hi[ok]
    verdict = ("conservative" if (lo > 0).all() else "optimistic" if (hi < 0).all()
               else f"{int((np.abs(y) <= 5.0).sum())} of {y.size} within ±5 %")
    return f"\n{float(y.min()):+.0f} to {float(y.max()):+.0f} % ({verdict})"


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
        per_law = sum(np.isfinite(_law_errors(cmp, [s], m)).any() for s in services) > 1  # ranges per law follow
        out.append(Claim(f"{m} with the law itself: {q:g}th-percentile error within ±5 % of the simulations in "
                         f"{inside} of {e.size} (law, cell) points (overall {e.min():+.1f} % to {e.max():+.1f} %"
                         + ("; per law below)." if per_law else ")."),
                         [float(e.min()) / 100, float(e.max()) / 100, inside, int(e.size)],
                         [Q.query(expr, (("min", None),), Q.RUN_OK, sel),
                          Q.query(expr, (("max", None),), Q.RUN_OK, sel),
                          Q.query(f"abs({expr}) <= 0.05", (("count", None),), f"{Q.RUN_OK} & isfinite({expr})", sel),
                          Q.query(f"isfinite({expr})", (("count", None),), Q.RUN_OK, sel)], 0.0006))
    if _law_errors(cmp, services).size:  # the exponential model's verdict first, the law methods' ranges per law last
        expo = _exponential_model_claims(cmp, services, q)
        out = expo[:1] + out + expo[1:]
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
    red = (("min", ["R", "rho"]),)
    if all(cons[s] == n[s] for s in laws):  # one verdict for every law: said once
        head = (f"The exponential model's {q:g}th percentile is conservative (its CI above the law's simulated value) "
                f"at all {sum(n.values())} (law, cell) points: ")
        parts = [f"{s} {100 * lo[s]:+.1f} % to {100 * hi[s]:+.1f} %" for s in laws]
    else:
        head = (f"The exponential model's {q:g}th percentile against each law's simulation (conservative: its CI "
                "above the simulation's value, optimistic: below): ")
        parts = [f"{s} {100 * lo[s]:+.1f} % to {100 * hi[s]:+.1f} % (conservative in {cons[s]}, optimistic in "
                 f"{opt[s]} of {n[s]} cells)" for s in laws]
    out = [Claim(head + listing(parts) + ".",
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
        if "truncation_mass" in approx:  # exact's truncation, stated in the recommended map's legend
            cmp["truncation_mass"] = approx["truncation_mass"].load().reindex_like(cmp["usable"])
        if "t" in approx.coords and approx.sizes.get("t", 0):  # the time grid's end: a percentile beyond it is none
            cmp.attrs["t_max"] = float(approx["t"].values[-1])
    budget = (settings.get("approximation") or {}).get("exact_budget")
    if budget:  # exact runs only where its predicted cost fits this (the maps and the runtime figure say so)
        cmp.attrs["exact_budget"] = json.dumps(budget, sort_keys=True)
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
        elif f.kind.draw == "mgr_laws":
            out += mgr_laws(cmp, stem, laws=(settings.get("mgr") or {}).get("laws"), **kw)
        else:
            out += globals()[f.kind.draw](cmp, stem, **kw)
    return out


# =========================================================================== reproduction of the paper's §6
REP_SOURCE = "reproduction.nc"
_FAMILY_STYLE = {"faithful": ("tab:blue", "o", "ours: best of A–F"),
                 "corrected": ("tab:orange", "s", "ours: best of A*–F*"),
                 "exact": (_EXACT_COLOR, "P", "ours: exact"),
                 TAIL: (_TAIL_COLOR, "^", f"ours: {TAIL_LABEL}")}  # T never ▼: it reads "below", T lies above


def _rq(expr, reduce=(("count", None),), where=None, sel=None) -> Claim:
    from ..core.present.claims import Query

    return Query(REP_SOURCE, expr, dict(sel or {}), where, [list(x) for x in reduce])


def _shared_points(present):
    """[(index of R, index of ρ)] of the paper's table cells this run has (present: (rho, R) bool)."""
    return [(k, b) for k in range(present.shape[1]) for b in range(present.shape[0]) if present[b, k]]


def _message_panel(ax, text):
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", fontsize=9.5, wrap=True, transform=ax.transAxes,
            bbox={"facecolor": "0.96", "edgecolor": "0.7"})


#: the paper's value in the reproduction figures: a wide black bar (unlike every status mark and every marker of ours)
_PAPER_MARK = {"ls": "none", "marker": "_", "color": "k", "ms": 16, "mew": 2.4}


def _paper_beside_ours(rep, stem, *, prefix, pvar, ovar, refvar, fams, relative_from, title, what, absolute, kw,
                       factor=100.0, floor=None, values=False):
    """One panel per percentile: the paper's value (black bars) beside ours per family at the (R, ρ) cells of
    the paper's table that this run has (x, in order of R then ρ), as relative errors (%), each panel its own
    y-range; where our reference is too short, a mark in the strip above the panel instead of
    a value (one row where every family's marks agree). ``floor``: sizes on a log axis from there up, each sign as
    + or − beside its point (:func:`_magnitude_axis`). ``values``: the paper's and our values printed (signed) under
    each cell (:func:`_value_rows`)."""
    P = rep[f"{prefix}_percentile"].values
    rhos, Rs = rep[f"{prefix}_rho"].values, rep[f"{prefix}_R"].values
    ref = rep[refvar]  # (family, percentile, rho, R)
    present = (ref.sel(family="faithful") != -1).any(f"{prefix}_percentile").transpose(f"{prefix}_rho",
                                                                                         f"{prefix}_R").values
    pts = _shared_points(present)
    fams = [f for f in fams if f in rep["family"].values.tolist()]
    fig, axes = plt.subplots(len(P), 1, figsize=(max(6.5, 0.5 * len(pts) + 1.8), (4.0 if values else 3.1) * len(P)
                                                 + 0.4), squeeze=False, sharex=True)
    beyond = rep["percentile_beyond_grid"].values if (prefix == "pct" and "percentile_beyond_grid" in rep) else None
    axes = axes[:, 0]
    kinds, drawn = set(), set()
    x = np.arange(len(pts))
    for a, (ax, p) in enumerate(zip(axes, P, strict=True)):
        if not pts:
            _message_panel(ax, "this run's grid shares no (R, ρ) cell\nwith the paper's table")
            continue
        strip = status_strip(ax)
        scale = relative_from(a) if relative_from is not None else None  # (rho, R) reference percentiles
        paper = np.array([rep[pvar].values[a, b, k] for k, b in pts], float)
        if scale is not None:
            sc = np.array([scale[b, k] for k, b in pts])
            paper = factor * paper / sc
        else:
            paper = factor * paper
        signed = {"paper": (x, paper)}
        if absolute or floor:
            paper = np.abs(paper)
        if not floor:
            ax.axhline(0, color="0.5", lw=0.7)
        ax.plot(x, paper if not floor else np.maximum(paper, floor), **_PAPER_MARK, zorder=5)
        bg = (np.array([beyond[a, b, k] for k, b in pts]) != 0) if beyond is not None else np.zeros(len(pts), bool)
        missing, table = {}, {}
        for f, fam in enumerate(fams):
            fi = rep["family"].values.tolist().index(fam)
            vals = [factor * np.array([rep[v].values[fi, a, b, k] for k, b in pts], float) / (1.0 if scale is None
                                                                                              else sc) for v in ovar]
            rk = np.array([ref.values[fi, a, b, k] for k, b in pts])
            xs = x + (f - (len(fams) - 1) / 2) * 0.26  # apart enough that markers at the same y (0) do not overlap
            drawn |= _ours_family(ax, fam, xs, vals, rk, absolute or bool(floor), floor)
            signed[fam] = (xs, vals[0])
            missing[fam] = rk == 0
            table[fam] = np.abs(vals[0]) if absolute else vals[0]  # printed under the cells (``values``)
        _no_value_marks(strip, fams, missing, x, bg)
        kinds |= strip.kinds
        ax.set_xticks(x, [f"R={Rs[k]}\nρ={rhos[b]:g}" for k, b in pts], fontsize=7.5)
        ax.tick_params(axis="x", labelbottom=True)
        ax.set_xlim(-0.6, len(pts) - 0.4)
        ax.grid(alpha=0.3, axis="y")
        ax.set_ylabel(what, fontsize=8.5)
        if floor:
            _magnitude_axis(ax, signed, floor)
        strip.finish(title=f"{p:g}th percentile")
        if values:
            _value_rows(ax, x, paper if absolute else signed["paper"][1], table)
    axes[-1].set_xlabel("cells of the paper's table that this run has (servers R, load ρ)", fontsize=8.5)
    if values:
        axes[-1].xaxis.labelpad = 70
    fig.tight_layout(h_pad=1.0)
    h, lab = _beside_legend(fams, prefix, drawn)
    sh, sl = status_handles(kinds)
    _legend_below(fig, h + sh, lab + sl, ncol=2, fontsize=8)
    fig.suptitle(title, y=1.0, va="bottom", fontsize=10)
    return fig, pts


def _no_value_marks(strip, fams, missing, x, bg) -> None:
    """The reproduction panel's strip: ◇ (or ▸ where ``bg``: the percentile lies beyond the time grid) where ours has
    no value — one row for every family where their marks agree, else a row per family."""
    if all(np.array_equal(missing[f], missing[fams[0]]) for f in fams):
        rows = [("ours", missing[fams[0]], None, "no value of ours")]
    else:
        rows = [(f, missing[f], _FAMILY_STYLE.get(f, ("0.4", "d", f))[0],
                 _FAMILY_STYLE.get(f, ("0.4", "d", f))[2].replace("ours: ", "")) for f in fams]
    for row, miss, color, label in rows:
        strip.mark(row, x, miss & ~bg, REFERENCE_TOO_SHORT.key, color, label)
        strip.mark(row, x, miss & bg, "beyond_grid", color, label)


def _value_rows(ax, x, paper, ours) -> None:
    """Under each cell of a reproduction panel, the paper's value (black) and each family's of ours (``ours``:
    {family: values}, in its colour), two significant digits, '·' where there is none: the numbers the log axis makes
    hard to read off."""
    import matplotlib.transforms as mtransforms

    tr = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    rows = [("paper", paper, "k")] + [(_FAMILY_STYLE.get(f, ("0.4", "d", f))[2].replace("ours: ", "ours, "), v,
                                        _FAMILY_STYLE.get(f, ("0.4", "d", f))[0]) for f, v in ours.items()]
    for r, (name, vals, c) in enumerate(rows):
        y = -0.3 - 0.085 * r
        ax.text(-0.02, y, name.split(" (")[0], transform=ax.transAxes, ha="right", va="center", fontsize=7.5, color=c,
                fontweight="bold")
        for xi, v in zip(x, vals, strict=True):
            ax.text(xi, y, _table_number(v), transform=tr, ha="center", va="center", fontsize=7.5, color=c)


def _table_number(v) -> str:
    """A value-table entry: two significant digits, '0' below 0.001 in size (no 6.7e-05), '·' where there is none."""
    if not np.isfinite(v):
        return "·"
    return "0" if abs(v) < 1e-3 else _g(v).replace("-", "−")


def _ours_family(ax, fam, xs, vals, rk, absolute, floor=None) -> set:
    """One family of ours in a reproduction panel: its (mean, low, high) ``vals`` at ``xs`` (filled against exact,
    hollow with its CI against the simulation; ``absolute``: |error|, its CI folded at 0; ``floor``: a log axis's
    bottom, a smaller value drawn on it). Returns the reference kinds drawn."""
    color, marker, label = _FAMILY_STYLE.get(fam, ("0.4", "d", fam))
    m, lo, hi = vals
    if absolute:
        a_, b_ = np.abs(lo), np.abs(hi)
        straddle = (lo <= 0) & (hi >= 0)
        lo, hi, m = np.where(straddle, 0.0, np.minimum(a_, b_)), np.maximum(a_, b_), np.abs(m)
    if floor:
        lo, hi, m = (np.maximum(v, floor) for v in (lo, hi, m))
    ok = np.isfinite(m)
    drawn = set()
    for rkind, face in ((REF_EXACT, color), (REF_SIMULATION, "white")):
        sel = ok & (rk == rkind)
        if sel.any():
            drawn.add(rkind)
            err = np.vstack([np.maximum(m[sel] - lo[sel], 0), np.maximum(hi[sel] - m[sel], 0)])
            ax.errorbar(xs[sel], m[sel], yerr=err, fmt=marker, color=color, mfc=face, ms=5, lw=1, capsize=2,
                        label=label if rkind == REF_EXACT or not (ok & (rk == REF_EXACT)).any() else None)
    return drawn


def _beside_legend(fams, prefix, drawn) -> tuple[list, list]:
    """The reproduction panels' legend: plain markers (no error-bar glyph: against exact there is no interval)."""
    from matplotlib.lines import Line2D

    h = [Line2D([], [], **_PAPER_MARK)]
    lab = ["paper (one simulation seed): black bar"]
    for fam in fams:
        color, marker, label = _FAMILY_STYLE.get(fam, ("0.4", "d", fam))
        h.append(Line2D([], [], ls="none", marker=marker, color=color, ms=5))
        lab.append(label + ("" if fam in (TAIL, "exact") else " (its best method at that percentile)"
                            if prefix == "pct" else " (its best method by W)"))
    if REF_SIMULATION in drawn:
        h.append(Line2D([], [], ls="none", marker="o", mfc="white", mec="0.3", ms=5))
        lab.append("hollow, with its 95% CI: ours against our simulation (exact did not run); filled: against exact")
    return h, lab


def _magnitude_axis(ax, signed, floor) -> None:
    """A log y axis of sizes from ``floor`` (its tick '<floor': a smaller size sits on it) to the decade above the
    largest, each point's sign as + or − beside it (``signed``: {'paper' or family: (x, signed values)}; the paper's
    left of its bar, ours above the marker; none on the floor, where the sign means nothing)."""
    ax.set_yscale("log")
    hi = max(float(np.nanmax(np.abs(v), initial=floor)) for _, v in signed.values())
    top = 10.0 ** math.ceil(math.log10(hi * 1.2))
    ax.set_ylim(floor / 1.6, top)
    dec = [floor * 10.0 ** k for k in range(round(math.log10(top / floor)) + 1)]
    ax.set_yticks(dec, [f"<{floor:g}" if d == floor else f"{d:g}" for d in dec])
    ax.yaxis.set_minor_formatter(mticker.NullFormatter())
    ax.axhline(floor, color="0.6", lw=0.7, ls=":")
    for name, (xs, v) in signed.items():
        color = "k" if name == "paper" else _FAMILY_STYLE.get(name, ("0.4",))[0]
        paper = name == "paper"  # its sign boxed left of the bar: a bare '−' there reads as the bar going on
        off, ha, va = ((-11, 0), "right", "center") if paper else ((0, 4), "center", "bottom")
        box = {"boxstyle": "round,pad=0.12", "fc": "white", "ec": "0.4", "lw": 0.6} if paper else None
        for xi, vi in zip(xs, v, strict=True):
            if np.isfinite(vi) and abs(vi) >= floor:
                ax.annotate("+" if vi > 0 else "−", (xi, abs(vi)), xytext=off, textcoords="offset points", ha=ha,
                            va=va, fontsize=7.5, fontweight="bold", color=color, zorder=6, bbox=box)


def _paper_larger(rep) -> tuple[int, int]:
    """(k, n): at k of the n (percentile, cell) points where both exist, the paper's percentile error is larger in
    size than ours (best of A–F, against the best reference)."""
    ours = rep["percentile_error"].sel(family="faithful").values
    paper = rep["paper_percentile_error"].values
    ref = rep["percentile_error_reference"].sel(family="faithful").values
    both = np.isfinite(ours) & np.isfinite(paper) & (ref > 0)
    return int((np.abs(paper[both]) > np.abs(ours[both])).sum()), int(both.sum())


def _cells_in_run(rep, prefix, refvar) -> tuple[int, int]:
    """(cells of the paper's table this run has, cells of the table)."""
    have = (rep[refvar].sel(family="faithful") != -1).any(f"{prefix}_percentile").values
    return int(have.sum()), int(have.size)


#: the §6.1/§6.2 figure's log axis starts here (a size below it is drawn on the bottom edge; the table prints 0)
PCT_FLOOR = 1e-3


def reproduction_percentile_errors(rep: xr.Dataset, stem, **kw):
    """§6.1/§6.2: the paper's signed percentile error of the best method for that percentile beside ours per family,
    as a share of the reference percentile (exact's where it ran, else our mean simulated one)."""
    fams = ["faithful", "corrected", TAIL]
    fig, pts = _paper_beside_ours(
        rep, stem, prefix="pct", pvar="paper_percentile_error",
        ovar=("percentile_error", "percentile_error_ci_low", "percentile_error_ci_high"),
        refvar="percentile_error_reference", fams=fams,
        relative_from=None, factor=1.0,  # in time units, as the paper's table: where our reference is missing (high
        # load) the paper's value still has its place
        title=_pct_title(rep), what=f"|method − reference| ({TIME_UNIT})\nlog; sign beside each point",
        absolute=False, kw=kw, floor=PCT_FLOOR, values=True)
    return save(fig, stem, caption=_reproduction_caption(rep, "pct", "percentile_error_reference", pts,
                                                         "§6.1 (99.99th) and §6.2 (99.999th percentile)"), **kw)


def _paper_where_ours_missing(rep) -> dict:
    """The paper's |percentile error| where we have no value of ours (our reference missing: ◇ or ▸) and where we
    have one, over the points of the paper's table in this run: {"missing"/"have": (count, median)}."""
    ref = rep["percentile_error_reference"].sel(family="faithful").values
    paper = np.abs(rep["paper_percentile_error"].values)
    out = {}
    for key, sel in (("missing", ref == 0), ("have", ref > 0)):
        v = paper[sel & np.isfinite(paper)]
        out[key] = (int(v.size), float(np.median(v)) if v.size else float("nan"))
    return out


def _pct_title(rep) -> str:
    """The §6.1/§6.2 figure's title: what it shows, and its headline — how often the paper's error is the larger one,
    and whether we lack a value where the paper's errors are largest (the same numbers as the caption's claims)."""
    have, total = _cells_in_run(rep, "pct", "percentile_error_reference")
    head = []
    kl, nl = _paper_larger(rep)
    if nl:
        head.append(f"the paper's error is the larger at {kl} of {nl} points")
    (km, mm), (kh, mh) = (miss := _paper_where_ours_missing(rep))["missing"], miss["have"]
    if km and kh:
        head.append(f"no value of ours at {km} points, where the paper's errors are "
                    + (f"largest (median |error| {_g(mm)} vs {_g(mh)})" if mm > mh else
                       f"not larger (median |error| {_g(mm)} vs {_g(mh)})"))
    lines = [f"{h[0].upper()}{h[1:]}." for h in head]  # one sentence a line
    return ("\n".join(["Paper §6.1/§6.2, percentile error of the best method"] + lines)
            + f"\n(higher = larger error; − optimistic, + conservative; {have} of the table's {total} cells "
               "in this run)")


def reproduction_relative_errors(rep: xr.Dataset, stem, **kw):
    """§6.3: the paper's |relative error| of the best method by Wasserstein distance beside ours per family."""
    fams = ["faithful", "corrected", TAIL]
    fig, pts = _paper_beside_ours(
        rep, stem, prefix="rel", pvar="paper_relative_error",
        ovar=("relative_error", "relative_error_ci_low", "relative_error_ci_high"),
        refvar="relative_error_reference", fams=fams, relative_from=None,
        title="Paper §6.3: |relative percentile error| of the best method by Wasserstein distance, the paper's beside "
              "ours\n(sizes only: the paper publishes them without sign; "
              + "{} of the table's {} cells are in this run)".format(
                  *_cells_in_run(rep, "rel", "relative_error_reference")),
        what="|method − reference| / reference (%)", absolute=True, kw=kw)
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
        findings.append(Claim(f"Of the {n} (percentile, cell) points of the paper's table in this run, ours (best of "
                              f"A–F) is measured against exact at {k_ex}, against our simulation at {k_sim}, and has "
                              f"no value at {k_none} (no reference of ours: ◇ or ▸).", [n, k_ex, k_sim, k_none],
                              [_rq(f"{refvar} != -1", sel=fam_sel), _rq(f"{refvar} == 1", sel=fam_sel),
                               _rq(f"{refvar} == 2", sel=fam_sel), _rq(f"{refvar} == 0", sel=fam_sel)]))
        bg = (rep["percentile_beyond_grid"].values != 0) & (ref == 0) if (
            prefix == "pct" and "percentile_beyond_grid" in rep) else np.zeros(ref.shape, bool)
        if k_none - int(bg.sum()):
            limits.append(Claim(f"At {k_none - int(bg.sum())} points our reference is too short ({RULE}): no value of "
                                "ours there (◇).", k_none - int(bg.sum()),
                                _rq(f"({refvar} == 0)" + (" & (percentile_beyond_grid == 0)" if bg.any() else ""),
                                    sel=fam_sel)))
        if bg.any():
            limits.append(Claim(f"At {int(bg.sum())} points exact ran but its percentile lies beyond the time grid "
                                "(t_max), and the simulation is too short: no value of ours there (▸).", int(bg.sum()),
                                _rq(f"({refvar} == 0) & (percentile_beyond_grid != 0)", sel=fam_sel)))
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
                kl, nl = _paper_larger(rep)
                findings.append(Claim(f"The paper's error is larger in size than ours at {kl} of those {nl} points.",
                                      [kl, nl], [_rq("abs(paper_percentile_error) > abs(percentile_error.sel("
                                                     "family='faithful'))", where=w), _rq(w)]))
            miss = _paper_where_ours_missing(rep)
            if miss["missing"][0] and miss["have"][0]:
                (km, mm), (kh, mh) = miss["missing"], miss["have"]
                wm = "(percentile_error_reference.sel(family='faithful') == 0) & isfinite(paper_percentile_error)"
                wh = "(percentile_error_reference.sel(family='faithful') > 0) & isfinite(paper_percentile_error)"
                limits.append(Claim(f"We have no value at {km} points of the paper's, where its |error| is a median "
                                    f"{_g(mm)} {TIME_UNIT}, against {_g(mh)} at the {kh} points where we have one: "
                                    "the comparison rests on the cells where the paper's errors are "
                                    + ("smaller." if mm > mh else "not smaller."), [km, mm, kh, mh],
                                    [_rq(wm), _rq("abs(paper_percentile_error)", (("median", None),), wm), _rq(wh),
                                     _rq("abs(paper_percentile_error)", (("median", None),), wh)],
                                    max(sig_tol(mm, 2), sig_tol(mh, 2))))
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
        "cells of its table this run has: the paper's value (black bars) and, per family, the best method of "
        "ours (blue A–F, orange A*–F*, teal T).", findings, limits,
        [("Ours is measured against the best reference: exact's percentile where exact ran (filled, no noise), else "
         "our mean simulated percentile (hollow, with its 95% CI); "
         + (f"both in {TIME_UNIT}, as the paper's table (method − its simulation), so the paper's value is drawn "
            "also where we have no reference. The axis is logarithmic in the size |method − reference| (higher = "
            "larger error), each sign beside its point (− optimistic, + conservative; the paper's boxed left of its "
            f"bar); a size below {PCT_FLOOR:g} sits on the bottom edge. " if prefix == "pct" else
            "both are shown as a share of that reference percentile, the paper's too. ")
         + "Where exact did not run (or its percentile lies beyond the time grid, ▸) and our simulation has too few "
         "customers beyond the percentile (◇), we have no reference and draw nothing of ours there.")])


def reproduction_map(rep: xr.Dataset, stem, **kw):
    """§6.4: the paper's best of A–F, ours with agreement marks, and how much the corrected methods gain (a cell
    where the two families' 95 % CIs of W overlap is drawn as "no difference", hatched)."""
    from .claims import SAME, TIE, TOO_SHORT

    R, rho = rep["R"].values, rep["rho"].values
    agree = rep["agreement"].values
    few = len(R) * len(rho) <= 150
    w = max(7.5, min(11.5, 0.13 * len(rho) + 3.5))
    fig, grid = plt.subplots(3, 2, figsize=(w, 3 * (0.3 * len(R) + 1.35)), squeeze=False,
                             gridspec_kw={"width_ratios": [1, 0.025], "wspace": 0.03})
    axes = grid[:, 0]
    for cax in grid[:2, 1]:
        cax.set_axis_off()
    short = agree == TOO_SHORT
    more = _rep_best_panels(axes[:2], rep, short, few)
    noise = _rep_ratio_panel(axes[2], grid[2, 1], rep, short, few)
    step = max(1, math.ceil(len(rho) / 20))
    for ax in axes:
        ax.set_xticks(range(0, len(rho), step), [f"{r:g}" for r in rho[::step]], rotation=0 if len(rho) <= 12 else 90,
                      fontsize=8)
        ax.set_yticks(range(len(R)), [str(r) for r in R], fontsize=8)
        ax.set_ylabel("servers R")
    axes[-1].set_xlabel("load ρ")
    fig.subplots_adjust(hspace=0.42, top=0.95, bottom=0.07, left=0.1, right=0.9)
    from matplotlib.patches import Patch

    if noise:
        more.append((Patch(facecolor=NO_DIFFERENCE_CELL, edgecolor="0.6", hatch="...."),
                     "bottom, white dotted: the two W's 95 % CIs overlap — no difference this run can tell"))
    handles = [h for h, _ in more]
    labels = [t for _, t in more]
    if short.any():
        sh, sl = status_handles([REFERENCE_TOO_SHORT.key])
        handles += sh
        labels += [sl[0] + ": no verdict, left out of the shares"]
    _legend_below(fig, handles, labels, ncol=2, fontsize=8)
    n = int(rep.attrs.get("agreement_cells", 0))
    k_same = int((agree == SAME).sum())
    k_tie = int((agree == TIE).sum())
    fig.suptitle(f"Paper §6.4: the best of A–F by Wasserstein distance, the paper's and ours ({n} cells in both):\n"
                 f"the same method in {k_same}, a tie within the 95% CI in {k_tie}, different in {n - k_same - k_tie}",
                 fontsize=10, y=1.0, va="bottom")
    return save(fig, stem, caption=_reproduction_map_caption(rep), **kw)


def _rep_best_panels(axes, rep, short, few) -> list:
    """The §6.4 figure's top two maps: the paper's best of A–F and ours (a tie grey and hatched with both names, a
    disagreement crossed, a reference too short ◇). Returns the legend's (handle, label) pairs for them."""
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from .claims import TIE

    letters = list("ABCDEF")
    paper = rep["paper_best_method"].values
    ours = rep["best_method"].sel(family="faithful").values
    agree = rep["agreement"].values
    tie = agree == TIE
    ours_shown = np.where(short, "", ours)
    cmap = ListedColormap([method_color(m) for m in letters]).with_extremes(bad="0.93")
    codes = lambda L: np.vectorize(lambda v: letters.index(v) if v in letters else np.nan, otypes=[float])(L)
    for ax, L, Z, title in ((axes[0], paper, codes(paper), "the paper (the authors' best.csv, one seed)"),
                            (axes[1], ours_shown, codes(np.where(tie, "", ours_shown)),
                             "ours: best of A–F by mean W over replications")):
        ax.imshow(np.ma.masked_invalid(Z), aspect="auto", origin="lower", cmap=cmap, vmin=-0.5,
                  vmax=len(letters) - 0.5, interpolation="nearest")
        ax.set_title(title, fontsize=9.5, loc="left")
        for (i, j), v in np.ndenumerate(L) if few else ():
            if v and ax is axes[1] and tie[i, j]:  # a tie: grey, hatched, both names
                ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="0.9", hatch="///",
                                           edgecolor="0.65", lw=0))
                ax.text(j, i, f"tie\nours {v} ≈ {paper[i, j]}", ha="center", va="center", fontsize=7,
                        color="0.1", bbox={"facecolor": "0.9", "edgecolor": "none", "pad": 0.8})
            elif v:
                ax.text(j, i, v, ha="center", va="center", fontsize=8.5, color="w", fontweight="bold")
    ii, jj = np.nonzero(agree == 0)
    axes[1].plot(jj, ii, "x", color="k", ms=6 if few else 4, mew=1.5 if few else 1.0, ls="none")
    mark_cells(axes[1], short, REFERENCE_TOO_SHORT.key, ms=6 if few else 3)
    more = [(Patch(color=method_color(m)), m) for m in letters if (paper == m).any() or (ours_shown == m).any()]
    if (~short & ((paper == "") | (ours == ""))).any():
        more.append((Patch(facecolor="0.93", edgecolor="0.6"),
                     "light grey: not in this run, or not in the paper's grid"))
    if (agree == 0).any():
        more.append((Line2D([], [], ls="none", marker="x", color="k", ms=6),
                     "ours differs from the paper's beyond a tie"))
    if tie.any():
        more.append((Patch(facecolor="0.9", edgecolor="0.65", hatch="///"),
                     "middle, hatched: a tie — our best and the paper's within the 95% CI of each other"))
    return more


#: the ratio map's colour-bar ticks (the ratio, drawn where inside the colour range)
_RATIO_TICKS = (2, 1, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)


def ratio_beyond_noise(rep):
    """(ratio of the best corrected W over the best of A–F's, where it is beyond the 95 % CIs of both: -1 closer,
    +1 farther, 0 within noise) over (R, rho); NaN ratio where either W is missing."""
    c, f = (rep[v].sel(family="corrected").values for v in ("best_wasserstein_ci_low", "best_wasserstein_ci_high"))
    fl, fh = (rep[v].sel(family="faithful").values for v in ("best_wasserstein_ci_low", "best_wasserstein_ci_high"))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = rep["best_wasserstein"].sel(family="corrected").values / rep["best_wasserstein"].sel(
            family="faithful").values
    side = np.where(f < fl, -1, np.where(c > fh, 1, 0))
    return ratio, side


def _rep_ratio_panel(ax, cax, rep, short, few) -> bool:
    """The §6.4 figure's bottom map: the best corrected W over the best of A–F's, ×ratio on a log colour scale
    centred at ×1; a cell whose two CIs overlap is white and dotted (no difference), its ratio in grey. Returns
    whether such a cell is drawn."""
    from matplotlib.colors import TwoSlopeNorm

    ratio, side = ratio_beyond_noise(rep)
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.where(short, np.nan, np.log10(ratio))
    noise = np.isfinite(lr) & (side == 0)
    # the colour's bounds: the data's, at least a factor 2 either way (so that a ratio near 1 stays pale)
    lo_ = min(-np.log10(2), float(np.nanmin(lr))) if np.isfinite(lr).any() else -1.0
    hi_ = max(np.log10(2), float(np.nanmax(lr))) if np.isfinite(lr).any() else 1.0
    im = ax.imshow(np.ma.masked_invalid(np.where(noise, np.nan, lr)), aspect="auto", origin="lower",
                   cmap=plt.get_cmap("RdBu_r").with_extremes(bad="0.93"),
                   norm=TwoSlopeNorm(vmin=lo_, vcenter=0.0, vmax=hi_), interpolation="nearest")
    for i, j in zip(*np.nonzero(noise), strict=True):
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=NO_DIFFERENCE_CELL, hatch="....",
                                   edgecolor="0.75", lw=0))
    mark_cells(ax, short, REFERENCE_TOO_SHORT.key, ms=6 if few else 3)
    for (i, j), v in np.ndenumerate(lr) if few else ():
        if np.isfinite(v):
            ax.text(j, i, f"×{10 ** v:.2g}", ha="center", va="center", fontsize=7.5,
                    color="0.45" if noise[i, j] else ("w" if abs(im.norm(v) - 0.5) > 0.3 else "k"),
                    style="italic" if noise[i, j] else "normal")
    cb = plt.gcf().colorbar(im, cax=cax)
    ticks = [np.log10(v) for v in _RATIO_TICKS if lo_ - 1e-9 <= np.log10(v) <= hi_ + 1e-9]
    cb.set_ticks(ticks, labels=[f"×{10 ** v:.2g}" for v in ticks])
    cb.set_label("W corrected / W A–F\n(log scale)", fontsize=8)
    ax.set_title("W of the best corrected (A*–F*) / W of the best of A–F: blue = the corrected methods are closer",
                 fontsize=9.5, loc="left")
    return bool(noise.any())


def _reproduction_map_caption(rep) -> Caption:
    from .claims import DISAGREE, SAME, TIE, TOO_SHORT

    ag = rep["agreement"].values
    n = int(((ag != -1) & (ag != TOO_SHORT)).sum())
    k = [int((ag == v).sum()) for v in (SAME, TIE, DISAGREE)]
    findings = [Claim(f"Of the {n} cells in both the paper's grid and this run (our simulation long enough), ours is "
                      f"the paper's method in {k[0]}, ties with it within the 95% CI in {k[1]} and differs in {k[2]}.",
                      [n] + k, [_rq("(agreement >= 0)"), _rq("agreement == 2"), _rq("agreement == 1"),
                                _rq("agreement == 0")])]
    ratio, side = ratio_beyond_noise(rep)
    ok = np.isfinite(ratio) & (ag != TOO_SHORT)
    if ok.any():
        kc, kf = int((side[ok] < 0).sum()), int((side[ok] > 0).sum())
        corr = "best_wasserstein_ci_{}.sel(family='corrected')"
        faith = "best_wasserstein_ci_{}.sel(family='faithful')"
        findings.append(Claim(f"The best corrected method is closer to the simulation than the best of A–F beyond "
                              f"both 95% CIs at {kc} of {int(ok.sum())} cells, farther at {kf}; the two lie within "
                              f"each other's CI (no difference this run can tell) at {int(ok.sum()) - kc - kf}.",
                              [kc, kf, int(ok.sum())],
                              [_rq(f"{corr.format('high')} < {faith.format('low')}", where="agreement != -2"),
                               _rq(f"{corr.format('low')} > {faith.format('high')}", where="agreement != -2"),
                               _rq("isfinite(best_wasserstein.sel(family='corrected') / best_wasserstein.sel(family="
                                   "'faithful'))", where="agreement != -2")]))
    limits = []
    ks = int((ag == TOO_SHORT).sum())
    if ks:
        limits.append(Claim(f"At {_cells_text(ks)} our simulation is too short to trust (run-length guard): no "
                            "verdict there (◇), left out of the counts.", ks, _rq("agreement == -2")))
    return Caption(
        "Paper §6.4, best of the paper's methods A–F by Wasserstein distance per (R, ρ) cell. Top: the authors' "
        "published map (experiments/best.csv, one seed). Middle: ours, the best of A–F by mean Wasserstein distance "
        "over replications; a cross marks a disagreement, a pale cell a tie (the paper's method's 95% CI of W overlaps "
        "our best's: a difference one seed cannot resolve). Bottom: the best corrected method's W over the best of "
        "A–F's, printed as ×ratio and coloured on a log scale; blue = the corrected methods are closer. Both W are "
        "against our simulation (the paper's reference), so where the two 95% CIs overlap the ratio says nothing: "
        "such a cell is white and dotted, its ratio in grey italics (the simulation's own noise there is as large as "
        "the gap between the two methods' distances). The Wasserstein figure, which uses exact where it ran, is the "
        "sharper comparison.", findings, limits,
        [("Methods whose approximated CDF is not a CDF are never best; where the paper's method is not a CDF in our "
         "run the cell counts as a disagreement. Light grey: not in this run or not in the paper's grid.")])


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
    from ..core.present.tables import write_table

    c = cmp.sel(service=service)
    b = best_by_reference(cmp, service)
    _, joined = _groups(cmp)
    pb = _bands(c["rho"].values, RHO_BANDS)
    header = ["servers R"] + [lab for lab, _, _ in pb]
    rows = _key_band_rows(b, _bands(c["R"].values, R_BANDS), pb)
    rec = c["recommended"].transpose("R", "rho", "percentile").values.astype(str)
    ru = reference_usable(cmp).sel(service=service).transpose("R", "rho", "percentile").values
    trust = _key_trust_rows(c, rec, ru, pb)
    per = _key_method_rows(cmp, service)
    P = c["percentile"].values
    notes = [f"Table 1: per band of servers R and load ρ, the method most often clearly closest to the truth by "
             f"Wasserstein distance (to exact's CDF where exact ran, else to the simulated CDF; exact itself is the "
             f"reference and no candidate; {service} service), in how many of the band's cells with a reference; ties "
             "(another method within the CI, or within a tenth of the grid step of exact) and cells without a "
             "reference are counted apart and in no share. "
             + ("; ".join(f"{k} stands for {v}" for k, v in joined.items()) + " (identical CDFs)." if joined else ""),
             ("Table 2: the recommendation (exact where it ran; else T where the comparison found it never below "
             "exact; else the most accurate method that does not underestimate the percentile beyond its CI) and, as a "
             "check, the recommended method's median / largest |relative error| (%) against the simulated percentile "
             f"at the cells where the simulation is a usable reference ({RULE}); 'reference too short' where it is at "
             "none. Exact's own error is its computed truncation bound; T's is at most its stated margin."),
             ("Table 3: each method's median |relative percentile error| / its most negative error (%) against the "
             "best reference: exact's percentile where exact ran (no noise), else the simulated one where usable; the "
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


def _key_band_rows(b, rb, pb) -> list:
    """Table 1 of the key results: per (R band, ρ band) the method most often clearly closest, with its count, the
    ties and the cells without a reference."""
    best, tie, too_short = b["best"], b["tie"], b["too_short"]
    rows = []
    for rl, rm, _ in rb:
        row = [rl]
        for _, pm, _ in pb:
            sub, t, sh = best[np.ix_(rm, pm)], tie[np.ix_(rm, pm)], too_short[np.ix_(rm, pm)]
            clear = [m for m, x in zip(sub.ravel(), t.ravel(), strict=True) if m and not x]
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
    return rows


def _key_trust_rows(c, rec, ru, pb) -> list:
    """Table 2 of the key results: per load band and percentile, the recommendation and how the simulation checks
    it where it is a usable reference."""
    from .compare import SIMULATE

    methods = c["approximation"].values.tolist()
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
    return trust


def _key_method_rows(cmp, service) -> list:
    """Table 3 of the key results: each method's median |error| and most negative error per percentile against
    the best reference, with how many points of each reference."""
    c = cmp.sel(service=service)
    a = against_reference(cmp, service)
    methods = c["approximation"].values.tolist()
    err = a["error"].transpose("R", "rho", "approximation", "percentile").values
    refk = a["reference"].transpose("R", "rho", "approximation", "percentile").values
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
    return per


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
    """The caption of the reproduction page (:class:`sojourn.core.present.claims.Caption`): how much of the paper's
    §6 this run reproduces, from ``rep``."""
    from ..core.present.claims import Caption, Claim
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
