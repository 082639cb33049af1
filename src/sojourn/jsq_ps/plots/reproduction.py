"""The reproduction of the paper's §6: the paper's values beside ours, and the best-method map."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import xarray as xr

from ...core.present.claims import Caption, Claim, half_unit, sig_tol
from ...core.present.figures import (
    NO_DIFFERENCE_CELL,
    REFERENCE_TOO_SHORT,
    TIME_UNIT,
    mark_cells,
    method_color,
    status_handles,
    status_strip,
)
from ..compare import (
    REF_EXACT,
    REF_SIMULATION,
)
from . import common  # save, looked up when called: tests replace common.save
from .common import _EXACT_COLOR, _TAIL_COLOR, RULE, TAIL, TAIL_LABEL, _cells_text, _g, _legend_below, _message_panel

# =========================================================================== reproduction of the paper's §6
REP_SOURCE = "reproduction.nc"
_FAMILY_STYLE = {"faithful": ("tab:blue", "o", "ours: best of A–F"),
                 "corrected": ("tab:orange", "s", "ours: best of A*–F*"),
                 "exact": (_EXACT_COLOR, "P", "ours: exact"),
                 TAIL: (_TAIL_COLOR, "^", f"ours: {TAIL_LABEL}")}  # T never ▼: it reads "below", T lies above


def _rq(expr, reduce=(("count", None),), where=None, sel=None) -> Claim:
    from ...core.present.claims import Query

    return Query(REP_SOURCE, expr, dict(sel or {}), where, [list(x) for x in reduce])


def _shared_points(present):
    """[(index of R, index of ρ)] of the paper's table cells this run has (present: (rho, R) bool)."""
    return [(k, b) for k in range(present.shape[1]) for b in range(present.shape[0]) if present[b, k]]


#: the paper's value in the reproduction figures: a wide black bar (unlike every status mark and every marker of ours)
_PAPER_MARK = {"ls": "none", "marker": "_", "color": "k", "ms": 16, "mew": 2.4}
#: the paper's value where the sign is told by the fill: a wide black bar, filled (conservative) or hollow
_PAPER_BAR = {"ls": "none", "marker": [(-1.0, -0.28), (1.0, -0.28), (1.0, 0.28), (-1.0, 0.28), (-1.0, -0.28)],
              "color": "k", "ms": 18, "mew": 1.6}
#: a size below the log axis's floor (the value table prints 0): a "0" on the floor, in the family's colour
_ZERO_MARK = {"marker": "$0$", "ms": 8}


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
    width = max(6.5, (0.85 if floor else 0.66) * len(pts) + 2.0)  # log axis: the paper's bar and ours side by side
    fig, axes = plt.subplots(len(P), 1, figsize=(width, (3.9 if values else 3.1) * len(P) + 0.4), squeeze=False,
                             sharex=True)
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
        px = x - _PAPER_LEFT if floor else x  # on the log axis of sizes: the paper's bar left, ours right of it
        signed = {"paper": (px, paper)}
        if absolute or floor:
            paper = np.abs(paper)
        _paper_values(ax, px, paper, signed["paper"][1], floor)
        bg = (np.array([beyond[a, b, k] for k, b in pts]) != 0) if beyond is not None else np.zeros(len(pts), bool)
        missing, table = {}, {}
        for f, fam in enumerate(fams):
            fi = rep["family"].values.tolist().index(fam)
            vals = [factor * np.array([rep[v].values[fi, a, b, k] for k, b in pts], float) / (1.0 if scale is None
                                                                                              else sc) for v in ovar]
            rk = np.array([ref.values[fi, a, b, k] for k, b in pts])
            xs = (x + _OURS_FROM + f * _OURS_STEP if floor  # right of the paper's bar, clear of it
                  else x + (f - (len(fams) - 1) / 2) * 0.26)  # apart enough that markers at the same y do not overlap
            drawn |= _ours_family(ax, fam, xs, vals, rk, absolute or bool(floor), floor)
            signed[fam] = (xs, vals[0])
            missing[fam] = rk == 0
            table[fam] = np.abs(vals[0]) if absolute else vals[0]  # printed under the cells (``values``)
        _no_value_marks(strip, fams, missing, x, bg)
        kinds |= strip.kinds
        ax.set_xticks(x, [f"R={Rs[k]}\nρ={rhos[b]:g}" for k, b in pts], fontsize=9)
        ax.tick_params(axis="y", labelsize=9.5)
        ax.tick_params(axis="x", labelbottom=True)
        ax.set_xlim(-0.6, len(pts) - 0.4)
        ax.grid(alpha=0.3, axis="y")
        ax.set_ylabel(what, fontsize=9.5)
        if floor:
            _magnitude_axis(ax, signed, floor, fams)
        strip.finish(title=f"{p:g}th percentile", fontsize=10.5, label_size=9)
        if values:
            _value_rows(ax, x, paper if absolute else signed["paper"][1], table)
    axes[-1].set_xlabel("cells of the paper's table that this run has (servers R, load ρ)", fontsize=9.5)
    if values:
        axes[-1].xaxis.labelpad = 20 + 14 * (len(fams) + 1)
    fig.tight_layout(h_pad=0.4)
    h, lab = _beside_legend(fams, prefix, drawn, signed=bool(floor))
    sh, sl = status_handles(kinds)
    _legend_below(fig, h + sh, lab + sl, ncol=2, fontsize=9.5)
    fig.suptitle(title, y=1.0, va="bottom", fontsize=11)
    return fig, pts


#: on the §6.1/§6.2 log axis of sizes: the paper's bar this far left of its cell's centre, ours from _OURS_FROM right
#: of it, a family every _OURS_STEP (so that no marker of ours sits on the paper's bar)
_PAPER_LEFT, _OURS_FROM, _OURS_STEP = 0.2, 0.1, 0.17


def _sign(v) -> str:
    return "+" if v > 0 else "−"


def _signs_and_arrows(ax, signed, fams, floor) -> None:
    """On a log axis of sizes, what the axis cannot show: the sign of every value above ``floor`` written beside its
    mark ("+" conservative, "−" optimistic; the paper's left of its bar, ours right of the marker), and a grey arrow
    from the paper's bar to ours (best of A–F, the first of ``fams``) where both exist — pointing down where the
    paper's error is the larger, up where ours is (``signed``: {'paper' or family: (x, signed values)})."""
    px, pv = signed["paper"]
    for fam, (xs, v) in signed.items():
        color = "k" if fam == "paper" else _FAMILY_STYLE.get(fam, ("0.4",))[0]
        for xi, vi in zip(xs, v, strict=True):
            if np.isfinite(vi) and abs(vi) >= floor:
                ax.annotate(_sign(vi), (xi, abs(vi)), xytext=(-11, 0) if fam == "paper" else (6, 0),
                            textcoords="offset points", ha="right" if fam == "paper" else "left", va="center",
                            fontsize=10.5, fontweight="bold", color=color, zorder=7)
    if not fams or fams[0] not in signed:
        return
    xs, v = signed[fams[0]]
    for x0, p, x1, o in zip(px, pv, xs, v, strict=True):
        if np.isfinite(p) and np.isfinite(o):
            ax.annotate("", (x1, max(abs(o), floor)), xytext=(x0, max(abs(p), floor)),
                        arrowprops={"arrowstyle": "-|>", "color": "0.45", "lw": 1.0, "shrinkA": 6, "shrinkB": 6,
                                    "mutation_scale": 9}, zorder=3)


def _paper_values(ax, x, paper, signed, floor) -> None:
    """The paper's values in a reproduction panel: black bars at ``paper``; with ``floor`` (a log axis of sizes) the
    sign by the fill — filled conservative, hollow optimistic (``signed``: the signed values)."""
    if not floor:
        ax.axhline(0, color="0.5", lw=0.7)
        ax.plot(x, paper, **_PAPER_MARK, zorder=5)
        return
    for pos, face in ((True, "k"), (False, "white")):
        k = np.isfinite(signed) & ((signed > 0) == pos)
        ax.plot(x[k], np.maximum(paper[k], floor), **{**_PAPER_BAR, "mfc": face}, zorder=4)


def _no_value_marks(strip, fams, missing, x, bg) -> None:
    """The reproduction panel's strip: ◇ (or ▶ where ``bg``: the percentile lies beyond the time grid) where ours has
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

    rows = [("paper", paper, "k")] + [(_FAMILY_STYLE.get(f, ("0.4", "d", f))[2].replace("ours: ", "ours, "), v,
                                        _FAMILY_STYLE.get(f, ("0.4", "d", f))[0]) for f, v in ours.items()]
    for r, (name, vals, c) in enumerate(rows):
        dy = -42 - 14 * r  # points under the axis: below the two-line tick labels, one 9-pt row each
        at = mtransforms.offset_copy(mtransforms.blended_transform_factory(ax.transAxes, ax.transAxes), fig=ax.figure,
                                     y=dy, units="points")
        ax.text(-0.01, 0.0, name.split(" (")[0], transform=at, ha="right", va="center", fontsize=9, color=c,
                fontweight="bold")
        tr = mtransforms.offset_copy(mtransforms.blended_transform_factory(ax.transData, ax.transAxes), fig=ax.figure,
                                     y=dy, units="points")
        for xi, v in zip(x, vals, strict=True):
            ax.text(xi, 0.0, _table_number(v), transform=tr, ha="center", va="center", fontsize=9, color=c)


def _table_number(v) -> str:
    """A value-table entry: two significant digits, '0' below 0.001 in size (no 6.7e-05), '·' where there is none."""
    if not np.isfinite(v):
        return "·"
    return "0" if abs(v) < 1e-3 else _g(v).replace("-", "−")


def _ours_family(ax, fam, xs, vals, rk, absolute, floor=None) -> set:
    """One family of ours in a reproduction panel: its (mean, low, high) ``vals`` at ``xs``. Without ``floor``:
    filled against exact, hollow with its CI against the simulation (``absolute``: |error|, its CI folded at 0). With
    ``floor`` (a log axis of sizes from there up): the sign by the fill — filled conservative (above the reference),
    hollow optimistic — the CI whisker only where the reference is our simulation, and a size below the floor as
    :data:`_ZERO_MARK` on it. Returns the reference kinds drawn (and "zero" where a size lies below the floor)."""
    color, marker, label = _FAMILY_STYLE.get(fam, ("0.4", "d", fam))
    m, lo, hi = vals
    signed = np.asarray(m, float)
    if absolute or floor:
        a_, b_ = np.abs(lo), np.abs(hi)
        straddle = (lo <= 0) & (hi >= 0)
        lo, hi, m = np.where(straddle, 0.0, np.minimum(a_, b_)), np.maximum(a_, b_), np.abs(m)
    ok = np.isfinite(m)
    drawn = set()
    if floor:
        zero = ok & (m < floor)
        if zero.any():
            ax.plot(xs[zero], np.full(int(zero.sum()), floor), ls="none", color=color, **_ZERO_MARK, zorder=6)
            drawn.add("zero")
        lo, hi = np.maximum(lo, floor), np.maximum(hi, floor)
        for pos, face in ((True, color), (False, "white")):
            sel = ok & ~zero & ((signed > 0) == pos)
            if not sel.any():
                continue
            for rkind in (REF_EXACT, REF_SIMULATION):
                k = sel & (rk == rkind)
                if k.any():
                    drawn.add(rkind)
                    err = (np.vstack([np.maximum(m[k] - lo[k], 0), np.maximum(hi[k] - m[k], 0)])
                           if rkind == REF_SIMULATION else None)
                    ax.errorbar(xs[k], m[k], yerr=err, fmt=marker, color=color, mfc=face, mew=1.6, ms=7.5, lw=1.2,
                                capsize=3, zorder=5)
        return drawn
    for rkind, face in ((REF_EXACT, color), (REF_SIMULATION, "white")):
        sel = ok & (rk == rkind)
        if sel.any():
            drawn.add(rkind)
            err = np.vstack([np.maximum(m[sel] - lo[sel], 0), np.maximum(hi[sel] - m[sel], 0)])
            ax.errorbar(xs[sel], m[sel], yerr=err, fmt=marker, color=color, mfc=face, ms=6, lw=1, capsize=2,
                        label=label if rkind == REF_EXACT or not (ok & (rk == REF_EXACT)).any() else None)
    return drawn


def _beside_legend(fams, prefix, drawn, signed=False) -> tuple[list, list]:
    """The reproduction panels' legend: plain markers (no error-bar glyph: against exact there is no interval).
    ``signed``: the sign by the fill (filled conservative, hollow optimistic; :func:`_ours_family`)."""
    from matplotlib.lines import Line2D

    h = [Line2D([], [], **(_PAPER_BAR if signed else _PAPER_MARK))]
    lab = ["paper (one simulation seed): black bar"]
    for fam in fams:
        color, marker, label = _FAMILY_STYLE.get(fam, ("0.4", "d", fam))
        h.append(Line2D([], [], ls="none", marker=marker, color=color, ms=7.5 if signed else 5))
        lab.append(label + ("" if fam in (TAIL, "exact") else " (its best method at that percentile)"
                            if prefix == "pct" else " (its best method by W)"))
    if signed:
        h += [Line2D([], [], ls="none", marker="s", color="0.3", ms=7.5),
              Line2D([], [], ls="none", marker="s", color="0.3", mfc="white", mew=1.6, ms=7.5)]
        lab += ["filled, \"+\": conservative (above the reference)", "hollow, \"−\": optimistic (below the reference)"]
        h.append(Line2D([], [], ls="-", color="0.45", lw=1.0, marker=">", ms=5))
        lab.append("arrow: from the paper's error to ours (best of A–F);\npointing down: the paper's is the larger")
        if "zero" in drawn:
            h.append(Line2D([], [], ls="none", color="0.3", **_ZERO_MARK))
            lab.append(f"0 (below {PCT_FLOOR:g}), on the floor")
        if REF_SIMULATION in drawn:
            h.append(Line2D([], [], ls="-", marker="|", color="0.3", ms=8))
            lab.append("with a 95 % CI whisker: against our simulation (exact did not run)")
        return h, lab
    if REF_SIMULATION in drawn:
        h.append(Line2D([], [], ls="none", marker="o", mfc="white", mec="0.3", ms=5))
        lab.append("hollow, with its 95% CI: ours against our simulation (exact did not run); filled: against exact")
    return h, lab


def _magnitude_axis(ax, signed, floor, fams=()) -> None:
    """A log y axis of sizes from ``floor`` (a smaller size sits on it, drawn as :data:`_ZERO_MARK`) to just above the
    largest (``signed``: {'paper' or family: (x, signed values)}), labelled at the decades; the signs and the arrows
    from the paper's value to ours (:func:`_signs_and_arrows`, ``fams``: ours in order, best of A–F first)."""
    ax.set_yscale("log")
    hi = max(float(np.nanmax(np.abs(v), initial=floor)) for _, v in signed.values())
    top = hi * 2.0
    ax.set_ylim(floor / 1.8, top)
    dec = [floor * 10.0 ** k for k in range(math.floor(math.log10(top / floor) + 1e-9) + 1)]
    ax.set_yticks(dec, [f"{d:g}" for d in dec])
    ax.yaxis.set_minor_formatter(mticker.NullFormatter())
    ax.axhline(floor, color="0.6", lw=0.7, ls=":")
    _signs_and_arrows(ax, signed, list(fams), floor)


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
        title=_pct_title(rep), what=f"|method − reference|\n({TIME_UNIT}, log scale)",
        absolute=False, kw=kw, floor=PCT_FLOOR, values=True)
    return common.save(fig, stem, caption=_reproduction_caption(rep, "pct", "percentile_error_reference", pts,
                                                         "§6.1 (99.99th) and §6.2 (99.999th percentile)"), **kw)


def _paper_where_ours_missing(rep) -> dict:
    """The paper's |percentile error| where we have no value of ours (our reference missing: ◇ or ▶) and where we
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
        head.append(f"the paper's error is the larger at {kl} of {nl} points (arrows pointing down)")
    (km, mm), (kh, mh) = (miss := _paper_where_ours_missing(rep))["missing"], miss["have"]
    if km and kh:
        head.append(f"no value of ours at {km} points, where the paper's errors are "
                    + (f"largest (median |error| {_g(mm)} vs {_g(mh)})" if mm > mh else
                       f"not larger (median |error| {_g(mm)} vs {_g(mh)})"))
    first = f"{head[0][0].upper()}{head[0][1:]}" if head else "Paper §6.1/§6.2"
    rest = head[1:] + [f"{have} of the table's {total} cells in this run"]
    return (first + (" (§6.1/§6.2, percentile error of the best method)" if head else
                     ": percentile error of the best method") + f"\n{rest[0][0].upper()}{rest[0][1:]}"
            + "".join(f"; {r}" for r in rest[1:]))


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
    return common.save(fig, stem, caption=_reproduction_caption(rep, "rel", "relative_error_reference", pts,
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
                              f"no value at {k_none} (no reference of ours: ◇ or ▶).", [n, k_ex, k_sim, k_none],
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
                                "(t_max), and the simulation is too short: no value of ours there (▶).", int(bg.sum()),
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
        [("Ours is measured against the best reference: exact's percentile where exact ran (no noise), else our "
          "mean simulated percentile "
         + (f"(with its 95% CI whisker); both in {TIME_UNIT}, as the paper's table (method − its simulation), so the "
            "paper's value is drawn also where we have no reference. The axis is logarithmic in the size |method − "
            "reference| (higher = larger error); the sign is written beside every value and told by the fill, the "
            "paper's bar and ours alike: \"+\" and filled = conservative (above the reference), \"−\" and hollow = "
            "optimistic (below); a grey arrow runs from the paper's bar (left in its cell) to ours (best of A–F, "
            "right of it), pointing down where the paper's error is the larger; a size below "
            f"{PCT_FLOOR:g} is drawn as a 0 on the floor (no sign), and the table under each panel prints every "
            "signed value. " if prefix == "pct" else
            "(hollow, with its 95% CI; filled where against exact); both are shown as a share of that reference "
            "percentile, the paper's too. ")
         + "Where exact did not run (or its percentile lies beyond the time grid, ▶) and our simulation has too few "
         "customers beyond the percentile (◇), we have no reference and draw nothing of ours there.")])


def reproduction_map(rep: xr.Dataset, stem, **kw):
    """§6.4: the paper's best of A–F, ours with agreement marks, and how much the corrected methods gain (a cell
    where the two families' 95 % CIs of W overlap is drawn as "no difference", hatched)."""
    from ..claims import SAME, TIE, TOO_SHORT

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
    return common.save(fig, stem, caption=_reproduction_map_caption(rep), **kw)


def _rep_best_panels(axes, rep, short, few) -> list:
    """The §6.4 figure's top two maps: the paper's best of A–F and ours (a tie grey and hatched with both names, a
    disagreement crossed, a reference too short ◇). Returns the legend's (handle, label) pairs for them."""
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from ..claims import TIE

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
    from ..claims import DISAGREE, SAME, TIE, TOO_SHORT

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
