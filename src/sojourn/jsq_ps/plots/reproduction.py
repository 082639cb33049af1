"""The reproduction of the paper's §6: the paper's values beside ours, and the best-method map."""
from __future__ import annotations

import math
import textwrap
from types import SimpleNamespace

import numpy as np
import xarray as xr

from ...core.present.claims import Caption, Claim, half_unit, sig_tol
from ...core.present.figures import (
    METHOD_COLORS,
    NO_DIFFERENCE_CELL,
    REFERENCE_TOO_SHORT,
    TIME_UNIT,
    mark_cells,
    status_handles,
    status_strip,
)
from ...core.present.mpl import mticker, plt  # imported on first use (core/present/mpl.py)
from ..compare import (
    REF_EXACT,
    REF_SIMULATION,
)
from . import common  # save, looked up when called: tests replace common.save
from .common import (
    _EXACT_COLOR,
    _TAIL_COLOR,
    FAMILY_COLOR_WORDS,
    FAMILY_COLORS,
    RULE,
    TAIL,
    TAIL_LABEL,
    _balanced_ncol,
    _cells_text,
    _g,
    _legend_below,
    _message_panel,
)

# =========================================================================== reproduction of the paper's §6
REP_SOURCE = "reproduction.nc"
#: a family's (colour, marker, label): the families "best of …" in their shades of grey (common.FAMILY_COLORS), never
#: a method's colour; exact and T, single methods, in theirs
_FAMILY_STYLE = {"faithful": (FAMILY_COLORS["faithful"], "o", "ours: best of A–F"),
                 "corrected": (FAMILY_COLORS["corrected"], "s", "ours: best of A*–F*"),
                 "exact": (_EXACT_COLOR, "P", "ours: exact"),
                 TAIL: (_TAIL_COLOR, "^", f"ours: {TAIL_LABEL}")}  # T never ▼: it reads "below", T lies above


def _rq(expr, reduce=(("count", None),), where=None, sel=None) -> Claim:
    from ...core.present.claims import Query

    return Query(REP_SOURCE, expr, dict(sel or {}), where, [list(x) for x in reduce])


def _shared_points(present):
    """[(index of R, index of ρ)] of the paper's table cells this run has (present: (rho, R) bool)."""
    return [(k, b) for k in range(present.shape[1]) for b in range(present.shape[0]) if present[b, k]]


#: the paper's value in the §6.3 figure: a hollow black circle, left of ours in its cell (unlike every marker of ours
#: and every status mark; never a dash that hides under the zero line)
_PAPER_MARK = {"ls": "none", "marker": "o", "color": "k", "mfc": "white", "mec": "k", "ms": 9, "mew": 1.8}
#: in a §6.3 cell: the paper's circle this far left of the centre, ours from _OURS_FROM on, a family every _OURS_STEP
_PAPER_LEFT, _OURS_FROM, _OURS_STEP = 0.3, -0.08, 0.2


def _paper_beside_ours(rep, stem, *, prefix, pvar, ovar, refvar, fams, title, what, kw):
    """One panel per percentile: the paper's |value| (hollow black circle) beside ours per family at the (R, ρ)
    cells of the paper's table that this run has (x, in order of R then ρ), as |relative errors| (%), one y-range
    shared by the panels; where our reference is too short, a mark in the strip above the panel instead of a value
    (one row where every family's marks agree)."""
    P = rep[f"{prefix}_percentile"].values
    rhos, Rs = rep[f"{prefix}_rho"].values, rep[f"{prefix}_R"].values
    ref = rep[refvar]  # (family, percentile, rho, R)
    present = (ref.sel(family="faithful") != -1).any(f"{prefix}_percentile").transpose(f"{prefix}_rho",
                                                                                         f"{prefix}_R").values
    pts = _shared_points(present)
    fams = [f for f in fams if f in rep["family"].values.tolist()]
    width = max(6.5, 0.8 * len(pts) + 2.0)
    fig, axes = plt.subplots(len(P), 1, figsize=(width, 3.1 * len(P) + 0.4), squeeze=False, sharex=True,
                             sharey=True)
    beyond = rep["percentile_beyond_grid"].values if (prefix == "pct" and "percentile_beyond_grid" in rep) else None
    axes = axes[:, 0]
    kinds, drawn = set(), set()
    x = np.arange(len(pts))
    for a, (ax, p) in enumerate(zip(axes, P, strict=True)):
        if not pts:
            _message_panel(ax, "this run's grid shares no (R, ρ) cell\nwith the paper's table")
            continue
        strip = status_strip(ax)
        paper = 100.0 * np.abs(np.array([rep[pvar].values[a, b, k] for k, b in pts], float))
        ax.axhline(0, color="0.5", lw=0.7)
        ax.plot(x - _PAPER_LEFT, paper, **_PAPER_MARK, zorder=5)
        bg = (np.array([beyond[a, b, k] for k, b in pts]) != 0) if beyond is not None else np.zeros(len(pts), bool)
        missing = {}
        for f, fam in enumerate(fams):
            fi = rep["family"].values.tolist().index(fam)
            vals = [100.0 * np.array([rep[v].values[fi, a, b, k] for k, b in pts], float) for v in ovar]
            rk = np.array([ref.values[fi, a, b, k] for k, b in pts])
            drawn |= _ours_family(ax, fam, x + _OURS_FROM + f * _OURS_STEP, vals, rk)
            if prefix == "rel" and fam not in (TAIL, "exact") and "relative_error_method" in rep:  # its letter
                _method_letters(ax, rep, fi, pts, x + _OURS_FROM + f * _OURS_STEP, np.abs(vals[0]))
                if fam == "faithful" and "paper_relative_method" in rep:  # the paper's, where it is another
                    _paper_letters(ax, rep, fi, pts, x, paper, np.abs(vals[0]))
            if prefix == "rel" and fam == "faithful" and _rel_exact_at_one(rep).k:  # R = 1: ours exact (0) but
                # where the truncation cuts the tail (as the title says, only where ours is 0 somewhere at R = 1)
                _tail_cut_marks(ax, [Rs[k] for k, _ in pts], x + _OURS_FROM + f * _OURS_STEP, vals[0], rk)
            missing[fam] = rk == 0
        _no_value_marks(strip, fams, missing, x, bg)
        kinds |= strip.kinds
        ax.set_xticks(x, [f"R={Rs[k]}\nρ={rhos[b]:g}" for k, b in pts], fontsize=9.5)
        ax.tick_params(axis="y", labelsize=9.5)
        ax.tick_params(axis="x", labelbottom=True)
        ax.set_xlim(-0.6, len(pts) - 0.4)
        ax.grid(alpha=0.3, axis="y")
        ax.set_ylabel(what, fontsize=9.5)
        strip.finish(title=f"{p:g}th percentile", fontsize=10.5, label_size=9)
    if prefix == "rel" and pts:  # room above the highest dot for its method letter (the panels share y)
        lo, hi = axes[0].get_ylim()
        axes[0].set_ylim(lo, hi + 0.12 * (hi - lo))  # and for a "tail cut" above that
    axes[-1].set_xlabel("cells of the paper's table that this run has (servers R, load ρ)", fontsize=9.5)
    fig.tight_layout(h_pad=0.4)
    h, lab = _beside_legend(fams, prefix, drawn)
    if any(t.get_gid() == "tail_cut" for ax in axes for t in ax.texts):  # round 32: defined in the legend
        from matplotlib.patches import Patch

        h.append(Patch(facecolor="none", edgecolor="none"))
        lab.append("\"tail cut\" (R = 1): ours is not 0 there only because its truncated state space ends its tail")
    sh, sl = status_handles(kinds)
    _legend_below(fig, h + sh, lab + sl, ncol=1, fontsize=9.5)  # one column: each side's reference in words
    fig.suptitle(title, y=1.0, va="bottom", fontsize=11)
    return fig, pts


def _tail_cut_marks(ax, Rs, xs, ys, rk) -> None:
    """The §6.3 panel's "tail cut" under our best of A–F at R = 1 where its error is not 0 (there A–F are M/M/1-PS up
    to their truncated state space, which cuts the tail: round 30 wanted the cause beside the points)."""
    for R, xv, yv, r in zip(Rs, xs, ys, rk, strict=True):
        if R == 1 and r > 0 and np.isfinite(yv) and abs(yv) > 100 * _REL_ZERO:
            ax.annotate("tail cut", (xv, abs(yv)), xytext=(-3, 17), textcoords="offset points", ha="left",
                        va="bottom", fontsize=7.5, color="0.3", gid="tail_cut")  # above its letter, away from the
            # paper's circle on the left (round 32: centred, it ran into it)


def _method_letters(ax, rep, fi, pts, xs, ys) -> None:
    """The §6.3 panel's letter of the family's best method (relative_error_method) above each of its drawn dots."""
    for (k, b), xv, yv in zip(pts, xs, ys, strict=True):
        m = str(rep["relative_error_method"].values[fi, b, k])
        if m and np.isfinite(yv):
            ax.annotate(m, (xv, yv), xytext=(0, 6), textcoords="offset points", ha="center", va="bottom",
                        fontsize=8, color=_FAMILY_STYLE[rep["family"].values[fi]][0], gid="method_letter")


def _paper_letters(ax, rep, fi, pts, x, paper, ours) -> None:
    """The §6.3 panel's letter of the paper's best method beside its circle where it is not our best of A–F's
    (drawn by the §6.1/§6.2 dot plot's helper, on the circle's side away from ours)."""
    for (k, b), xv, pv, ov in zip(pts, x, paper, ours, strict=True):
        mine = str(rep["relative_error_method"].values[fi, b, k])
        theirs = str(rep["paper_relative_method"].values[b, k])
        if mine and theirs and theirs != mine and np.isfinite(pv) and np.isfinite(ov):
            _pct_letters(ax, (xv - _PAPER_LEFT, pv, theirs), (xv + _OURS_FROM, ov, ""), False)


def _rel_letters_differ(rep) -> tuple[int, int]:
    """(k, n): of the n §6.3 cells with a value of ours (best of A–F) and a letter of the paper's, its method is
    another than ours at k (the letters drawn beside its circles)."""
    mine = rep["relative_error_method"].sel(family="faithful").values.astype(str)
    theirs = rep["paper_relative_method"].values.astype(str)
    cells = _rel_compared(rep).any(0) & (mine != "") & (theirs != "")
    return int((cells & (mine != theirs)).sum()), int(cells.sum())


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


#: a §6.3 value of ours against our simulation (exact did not run): its marker half filled (the top half white),
#: never hollow — hollow is the paper's circle (round 15)
_AGAINST_SIM = {"fillstyle": "bottom", "markerfacecoloralt": "white"}
_AGAINST_SIM_WORDS = "half-filled (top half white)"


def _ours_family(ax, fam, xs, vals, rk) -> set:
    """One family of ours in a §6.3 panel: its |(mean, low, high)| ``vals`` at ``xs`` (the CI folded at 0), filled
    against exact, half-filled with its CI against the simulation. Returns the reference kinds drawn."""
    color, marker, label = _FAMILY_STYLE.get(fam, ("0.4", "d", fam))
    m, lo, hi = vals
    a_, b_ = np.abs(lo), np.abs(hi)
    straddle = (lo <= 0) & (hi >= 0)
    lo, hi, m = np.where(straddle, 0.0, np.minimum(a_, b_)), np.maximum(a_, b_), np.abs(m)
    ok = np.isfinite(m)
    drawn = set()
    for rkind, style in ((REF_EXACT, {}), (REF_SIMULATION, _AGAINST_SIM)):
        sel = ok & (rk == rkind)
        if sel.any():
            drawn.add(rkind)
            err = np.vstack([np.maximum(m[sel] - lo[sel], 0), np.maximum(hi[sel] - m[sel], 0)])
            ax.errorbar(xs[sel], m[sel], yerr=err, fmt=marker, color=color, mfc=color, mec=color, ms=6.5, lw=1,
                        capsize=2, label=label if rkind == REF_EXACT or not (ok & (rk == REF_EXACT)).any() else None,
                        gid=f"ours_{rkind}", **style)
    return drawn


def _rel_against_sim(rep) -> bool:
    """Whether the §6.3 figure draws a value of ours against our simulation (a family it draws, a value there)."""
    fams = [f for f in _REL_FAMILIES if f in rep["family"].values.tolist()]
    sim = rep["relative_error_reference"].sel(family=fams) == REF_SIMULATION
    return bool((sim & np.isfinite(rep["relative_error"].sel(family=fams))).any())


def _beside_legend(fams, prefix, drawn) -> tuple[list, list]:
    """The §6.3 panels' legend: plain markers (no error-bar glyph: against exact there is no interval)."""
    from matplotlib.lines import Line2D

    h = [Line2D([], [], **_PAPER_MARK)]
    lab = ["paper, against its own simulation (one seed): hollow black circle"
           + ("; its letter left of it where its best method is not ours" if prefix == "rel" else "")]
    for fam in fams:
        color, marker, label = _FAMILY_STYLE.get(fam, ("0.4", "d", fam))
        h.append(Line2D([], [], ls="none", marker=marker, color=color, ms=6.5))
        where = " where filled" if REF_SIMULATION in drawn else ""
        lab.append(f"{label}, against exact{where}" + ("" if fam in (TAIL, "exact") else
                                                      " (its best method by W: the letter above)"))
    if REF_SIMULATION in drawn:
        h.append(Line2D([], [], ls="none", marker="s", color="0.3", ms=6.5, **_AGAINST_SIM))
        lab.append(f"{_AGAINST_SIM_WORDS}, with its 95% CI: ours against our simulation (exact did not run); "
                   "filled: against exact")
    return h, lab


def _paper_larger(rep, family="faithful") -> tuple[int, int]:
    """(k, n): at k of the n (percentile, cell) points where both exist, the paper's percentile error is larger in
    size than ours (best of ``family``, against the best reference)."""
    ours, paper = rep["percentile_error"].sel(family=family).values, rep["paper_percentile_error"].values
    both = _compared(rep, family)
    return int((np.abs(paper[both]) > np.abs(ours[both])).sum()), int(both.sum())


def _compared(rep, family) -> np.ndarray:
    """(percentile, rho, R) bool: the points where the paper's percentile error and ours (best of ``family``, with
    a usable reference) both exist — the points every §6.1/§6.2 count is over."""
    ours = rep["percentile_error"].sel(family=family).values
    ref = rep["percentile_error_reference"].sel(family=family).values
    return np.isfinite(ours) & np.isfinite(rep["paper_percentile_error"].values) & (ref > 0)


def _same_method(rep) -> int:
    """At how many of the points :func:`_paper_larger` counts for A–F our best method is the paper's."""
    both = _compared(rep, "faithful")
    same = rep["percentile_error_method"].sel(family="faithful").values == rep["paper_percentile_method"].values
    return int((both & same).sum())


def _reference_words(rep, family="faithful") -> str:
    """Which references our errors of ``family`` use at the points :func:`_paper_larger` counts: "exact at 16,
    our simulation at 4" (round 22: A–F are the same methods in the paper and here, so there the gap between the
    two errors is the reference's: the paper's one-seed simulation against ours)."""
    from ..compare import REF_EXACT, REF_SIMULATION

    ref = rep["percentile_error_reference"].sel(family=family).values
    both = _compared(rep, family)
    k_ex, k_sim = int((both & (ref == REF_EXACT)).sum()), int((both & (ref == REF_SIMULATION)).sum())
    return ", ".join(w for k, w in ((k_ex, f"exact at {k_ex}"), (k_sim, f"our simulation at {k_sim}")) if k)


def _cells_in_run(rep, prefix, refvar) -> tuple[int, int]:
    """(cells of the paper's table this run has, cells of the table)."""
    have = (rep[refvar].sel(family="faithful") != -1).any(f"{prefix}_percentile").values
    return int(have.sum()), int(have.size)


#: the §6.1/§6.2 dot plot's x axis (symlog) is linear within ± this (mean service times), logarithmic beyond
_PCT_LINTHRESH = 0.1
#: the §6.1/§6.2 dot plot's panels: (family, panel title)
_PCT_PANELS = (("faithful", "ours: best of A–F (the paper's methods)"), ("corrected", "ours: best of A*–F*"),
               (TAIL, "ours: method T"))
#: a row's two marks: the paper's (hollow black circle) and ours (a filled dot in its family's colour)
_PCT_PAPER = {"ls": "none", "marker": "o", "ms": 9, "mfc": "white", "mec": "k", "mew": 1.6, "zorder": 4}
_PCT_OURS = {"ls": "none", "marker": "o", "ms": 7.5, "mec": "k", "mew": 0.5, "zorder": 5}
#: within a row the paper's ○ sits this far above the row's centre and ours ● as far below (never one over the other)
_PCT_OFFSET = 0.17
#: "ours not nearer to 0 than the paper's": a glyph of its own at the row's right end (countable, unlike an edge)
_PCT_NOT_NEARER = {"ls": "none", "marker": "X", "ms": 8, "color": "tab:red", "mec": "w", "mew": 0.6, "zorder": 6}
#: the glyph's x as a fraction of the panel's width: in the margin right of the axes, outside the data's range
_PCT_ROW_END = 1.045


def _pct_rows(rep) -> list:
    """The §6.1/§6.2 dot plot's rows: (percentile index, ρ index, R index) of each point of the paper's table in this
    run where the paper has a value and some family of ours has one, in table order (R, then ρ, then percentile)."""
    paper = rep["paper_percentile_error"].values
    ref = rep["percentile_error_reference"].sel(family="faithful").values
    ours = np.isfinite(rep["percentile_error"].values).any(0)
    a, b, k = np.nonzero((ref != -1) & np.isfinite(paper) & ours)
    return sorted(zip(a.tolist(), b.tolist(), k.tolist(), strict=True), key=lambda t: (t[2], t[1], t[0]))


def reproduction_percentile_errors(rep: xr.Dataset, stem, **kw):
    """§6.1/§6.2 as a dot plot: one row per (R, ρ, percentile) point of the paper's table where we have a value, one
    panel per family of ours (best of A–F, best of A*–F*, T) sharing the rows; x the signed percentile error
    (method − reference, mean service times) on one symlog scale for every panel, the paper's ○ and ours ● (its
    family's colour) joined by a thin line, a vertical line at 0 — ours is the smaller where its ● is the nearer to
    0; a red ✖ at the row's end where it is not. The title's counts are each panel's; the points where we have no
    reference are named once under the panels (never drawn)."""
    fams = [(f, t) for f, t in _PCT_PANELS if f in rep["family"].values.tolist()]
    P, Rs, rhos = (rep[v].values for v in ("pct_percentile", "pct_R", "pct_rho"))
    paper = rep["paper_percentile_error"].values  # (percentile, rho, R)
    rows = _pct_rows(rep)
    n = max(len(rows), 4)
    # room for the A–F panel's two lines on the reference and for the title's second line (round 22)
    extra = 1.05 if any(f == "faithful" for f, _ in fams) and _paper_larger(rep)[1] else 0.0
    fig, axes = plt.subplots(1, len(fams), figsize=(3.8 * len(fams) + 1.7, 0.3 * n + 3.4 + extra), squeeze=False,
                             sharey=True, sharex=True)
    axes = axes[0]
    section = "§6.1 (99.99th) and §6.2 (99.999th percentile)"
    if not rows:
        for ax in axes:
            _message_panel(ax, "this run's grid shares no (R, ρ) cell\nwith the paper's table")
        fig.suptitle("Paper §6.1/§6.2: percentile error of the best method", fontsize=11.5)
        return common.save(fig, stem, caption=_reproduction_caption(rep, "pct", "percentile_error_reference", [],
                                                                    section), **kw)
    vals = [paper[tuple(np.array(rows).T)]] + [rep["percentile_error"].sel(family=f).values for f, _ in fams]
    allv = np.concatenate([np.ravel(v) for v in vals])
    allv = np.abs(allv[np.isfinite(allv)])
    lim = 10 ** math.ceil(math.log10(max(float(allv.max()) * 1.3, 1.0)))
    ci_drawn = False
    for ax, (fam, title) in zip(axes, fams, strict=True):
        ci_drawn |= _pct_dot_panel(ax, rep, fam, rows, lim)
        kl, nl = _paper_larger(rep, fam)
        head = f"{title}\nsmaller than the paper's at {kl} of {nl} points"
        if fam == "faithful" and nl:  # the paper's pick and ours, each against its own reference
            same = (f"the same method at {_same_method(rep)} of them (letters),\n"
                    if _PCT_METHOD_VARS <= set(rep.data_vars) else "")
            head += (f"\n{same}against another reference (paper: one-seed\n"
                     f"simulation; ours: {_reference_words(rep)})")
        ax.set_title(head, fontsize=10.5 if fam != "faithful" else 10, loc="left")
    axes[0].set_yticks(range(len(rows)), [f"R = {Rs[k]}, ρ = {rhos[b]:g}, {P[a]:g}th" for a, b, k in rows],
                       fontsize=9.5)
    axes[0].set_ylim(len(rows) - 0.4, -0.6)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    h = [Line2D([], [], **{k: v for k, v in _PCT_PAPER.items() if k != "zorder"})]
    lab = ["the paper's error (its best method; its letter beside it in the A–F panel)"]
    h += [Patch(facecolor=_FAMILY_STYLE[f][0], edgecolor="none") for f, _ in fams]
    lab += [f"ours ●: {t.removeprefix('ours: ')}" + (" (letter: our pick)" if f in _PCT_LETTERED else "")
            for f, t in fams]
    h.append(Line2D([], [], **{k: v for k, v in _PCT_NOT_NEARER.items() if k != "zorder"}))  # as drawn
    lab.append("✖ right of a panel, at a row: ours not nearer to 0 than the paper's")
    h.append(Line2D([], [], color="0.45", lw=0.9, ls=":"))
    lab.append(f"dotted: ±{_PCT_LINTHRESH:g} (linear inside, logarithmic beyond)")
    if ci_drawn:
        h.append(Line2D([], [], color="0.3", lw=1.4))
        lab.append("bar: 95 % CI (ours against our simulation)")
    bottom_in = 1.55
    fig.subplots_adjust(left=1.75 / fig.get_figwidth(), right=0.985, top=1 - (1.15 + extra) / fig.get_figheight(),
                        bottom=bottom_in / fig.get_figheight(), wspace=0.1)
    fig.legend(h, lab, loc="upper center", bbox_to_anchor=(0.5, 0.9 / fig.get_figheight()),
               ncol=_balanced_ncol(len(h), (4, 3)), frameon=False, fontsize=9.5, handlelength=1.6,
               columnspacing=1.2)
    note = _pct_missing_note(rep)
    if note:
        fig.text(0.5, 0.08 / fig.get_figheight(), note, ha="center", va="bottom", fontsize=9, color="0.25")
    head, sub = _pct_title(rep)
    fig.suptitle(head, y=1 - 0.12 / fig.get_figheight(), va="top", fontsize=11.5)
    fig.text(0.5, 1 - (0.5 + 0.25 * ("\n" in head)) / fig.get_figheight(), sub, ha="center", va="top", fontsize=9.5,
             color="0.3")
    inrun = rep["percentile_error_reference"].sel(family="faithful").values != -1
    pts = [(k, b) for k in range(len(Rs)) for b in range(len(rhos)) if inrun[:, b, k].any()]
    return common.save(fig, stem, caption=_reproduction_caption(rep, "pct", "percentile_error_reference", pts,
                                                                section), **kw)


#: the §6.1/§6.2 panels that print each error's method letter (the paper's in the A–F panel only: the same there)
_PCT_LETTERED = ("faithful", "corrected")
#: the method letters' variables (a reproduction written before them has none: no letters, no "same method" count)
_PCT_METHOD_VARS = {"paper_percentile_method", "percentile_error_method"}


def _pct_letters(ax, paper, ours, valued) -> None:
    """The method letters of a row's two marks, each on the side away from the other mark (ours on the side away
    from its printed value where it has one): ``paper``, ``ours`` = (x, y, letter)."""
    (x0, yp, m0), (x1, yo, m1) = paper, ours
    if m0:
        left = x0 <= x1
        ax.annotate(m0, (x0, yp), xytext=(-8 if left else 8, 0), textcoords="offset points",
                    ha="right" if left else "left", va="center", fontsize=8, color="k", gid="paper_letter")
    if m1:
        left = (x1 > 0) if valued else (x1 < x0)
        ax.annotate(m1, (x1, yo), xytext=(-7 if left else 7, 0), textcoords="offset points",
                    ha="right" if left else "left", va="center", fontsize=8, color="0.15", fontweight="bold",
                    gid="ours_letter")


def _pct_dot_panel(ax, rep, fam, rows, lim) -> bool:
    """One family's panel of the §6.1/§6.2 dot plot: per row the paper's ○ (above the row's centre) and ours ●
    (below it) joined by a thin line, our simulation's 95 % CI as a bar under ours, a red ✖ at the row's right end
    where ours is not the smaller in size; the x axis symlog from −lim to lim. Returns whether a CI is drawn."""
    paper = rep["paper_percentile_error"].values
    ours = rep["percentile_error"].sel(family=fam).values
    ref = rep["percentile_error_reference"].sel(family=fam).values
    cl, ch = (rep[f"percentile_error_ci_{s}"].sel(family=fam).values for s in ("low", "high"))
    color = _FAMILY_STYLE[fam][0]
    ci = False
    for y, (a, b, k) in enumerate(rows):
        x0, x1 = paper[a, b, k], ours[a, b, k]
        if y % 2 == 0:
            ax.axhspan(y - 0.5, y + 0.5, color="0.95", lw=0, zorder=0)
        if not (ref[a, b, k] > 0 and np.isfinite(x1)):
            continue
        yp, yo = y - _PCT_OFFSET, y + _PCT_OFFSET  # the y axis is inverted: the paper's above, ours below
        ax.plot([x0, x1], [yp, yo], color="0.6", lw=1.0, zorder=2)
        if ref[a, b, k] == REF_SIMULATION and np.isfinite(cl[a, b, k]) and np.isfinite(ch[a, b, k]):
            ax.plot([cl[a, b, k], ch[a, b, k]], [yo, yo], color=color, lw=1.4, zorder=3)
            ci = True
        ax.plot([x0], [yp], **_PCT_PAPER, gid="paper")
        ax.plot([x1], [yo], **_PCT_OURS, color=color, gid="ours")
        if _PCT_LINTHRESH < abs(x1) < 1:  # the symlog's log part below 1 looks far from 0: the value as text
            ax.annotate(f"{x1:+.2g}".replace("-", "−"), (x1, yo), xytext=(6 if x1 > 0 else -6, 0),
                        textcoords="offset points", ha="left" if x1 > 0 else "right", va="center", fontsize=9,
                        color="0.2", gid="ours_value")
        if abs(x1) >= abs(x0):  # in the margin right of the axes (round 31: inside, on the +100 line, it read as
            ax.plot([_PCT_ROW_END], [y], **_PCT_NOT_NEARER, gid="not_nearer",  # a point with error +100)
                    transform=ax.get_yaxis_transform(), clip_on=False)
        # which method each error is of (round 23: the paper's pick and ours differ row by row)
        lettered = fam in _PCT_LETTERED and _PCT_METHOD_VARS <= set(rep.data_vars)
        m0 = str(rep["paper_percentile_method"].values[a, b, k]) if lettered and fam == "faithful" else ""
        if lettered:
            m1 = str(rep["percentile_error_method"].sel(family=fam).values[a, b, k])
            _pct_letters(ax, (x0, yp, m0), (x1, yo, m1), _PCT_LINTHRESH < abs(x1) < 1)
        if _PCT_LINTHRESH < abs(x0) < 1:  # the paper's value as text too (round 32: +0.23 read as about +2), beyond
            off = (18 if m0 else 8) * (-1 if x0 <= x1 else 1)  # its letter, on the side away from ours
            ax.annotate(f"{x0:+.2g}".replace("-", "−"), (x0, yp), xytext=(off, 0), textcoords="offset points",
                        ha="right" if off < 0 else "left", va="center", fontsize=8.5, color="0.2", gid="paper_value")
    ax.set_xscale("symlog", linthresh=_PCT_LINTHRESH, linscale=0.6)
    ax.set_xlim(-1.8 * lim, 1.8 * lim)  # room beside the end ticks' labels
    ax.axvline(0, color="k", lw=1.0, zorder=1)
    for v in (-_PCT_LINTHRESH, _PCT_LINTHRESH):
        ax.axvline(v, color="0.45", lw=0.9, ls=":", zorder=1)
    # the switch points ±linthresh labelled too (round 16: +0.23 just past the unlabelled dotted line read as +3)
    ticks = sorted(t for t in (-1000, -100, -10, -1, 0, 1, 10, 100, 1000, -_PCT_LINTHRESH, _PCT_LINTHRESH)
                   if -lim <= t <= lim)
    ax.set_xticks(ticks, [f"{t:+g}".replace("-", "−") if t else "0" for t in ticks])
    for t, lab in zip(ticks, ax.get_xticklabels(), strict=True):
        if abs(t) == _PCT_LINTHRESH:
            lab.set_fontsize(7.5)
            lab.set_color("0.3")
    ax.xaxis.set_minor_locator(mticker.NullLocator())
    ax.tick_params(axis="x", labelsize=9.5)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", alpha=0.25)
    ax.set_xlabel(f"error: method − reference ({TIME_UNIT};\n< 0 optimistic; linear within ±{_PCT_LINTHRESH:g}, "
                  "log beyond)", fontsize=10)
    return ci


def _pct_missing_note(rep) -> str:
    """One line: the cells of the paper's §6.1/§6.2 table in this run where we have no value (no reference), per
    cell the percentiles without one."""
    ref = rep["percentile_error_reference"].sel(family="faithful").values
    P, Rs, rhos = (rep[v].values for v in ("pct_percentile", "pct_R", "pct_rho"))
    miss = {}
    for a, b, k in zip(*np.nonzero(ref == 0), strict=True):
        miss.setdefault((int(Rs[k]), float(rhos[b])), []).append(float(P[a]))
    if not miss:
        return ""
    nb = "\u00a0"  # a cell's words never split over two lines
    per_R = {}
    for (R, r), ps in sorted(miss.items()):
        per_R.setdefault(R, []).append(f"{r:g}" + ("" if len(ps) == len(P) else
                                                    f"{nb}({'/'.join(f'{p:g}' for p in ps)}th)"))
    cells = [f"R{nb}={nb}{R}:{nb}ρ{nb}={nb}" + f",{nb}".join(v) for R, v in per_R.items()]
    n = sum(len(v) for v in miss.values())
    return textwrap.fill(f"Not drawn — no value of ours (no reference: the simulation too short, or exact's percentile "
                         f"beyond its time grid) at {n} points: " + "; ".join(cells), 150)


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


def _pct_title(rep) -> tuple[str, str]:
    """The §6.1/§6.2 figure's (title, subtitle): the result — per family how often the paper's error is the larger
    (each panel's count) — and the caveat: whether we lack a value where the paper's errors are largest (the same
    numbers as the caption's claims)."""
    have, total = _cells_in_run(rep, "pct", "percentile_error_reference")
    counts = [(t.removeprefix("ours: ").split(" (")[0], *_paper_larger(rep, f)) for f, t in _PCT_PANELS
              if f in rep["family"].values.tolist()]
    counts = [(t, k, n) for t, k, n in counts if n]
    first = ("Paper §6.1/§6.2: the paper's error is the larger at " + "; ".join(
        f"{k} of {n}{' points' if i == 0 else ''} (ours {t})" for i, (t, k, n) in enumerate(counts)) if counts else
             "Paper §6.1/§6.2: percentile error of the best method, the paper's against ours")
    if counts and "faithful" in rep["family"].values.tolist() and _paper_larger(rep)[1]:
        # what differs between the two errors (rounds 22-25): the reference, and for A–F which method is best
        same = (f"; our A–F pick is the paper's at {_same_method(rep)}" if _PCT_METHOD_VARS <= set(rep.data_vars)
                else "")
        first += (f"\nthe paper's errors are against its one-seed simulation, ours against "
                  f"{_reference_words(rep)}{same}")
    (km, mm), (kh, mh) = (miss := _paper_where_ours_missing(rep))["missing"], miss["have"]
    second = f"{have} of the table's {total} cells in this run; errors absolute ({TIME_UNIT}), not %"
    if km and kh:
        second = (f"no value of ours at {km} points, where the paper's errors are "
                  + ("largest" if mm > mh else "not larger") + f" (median |error| {_g(mm)} vs {_g(mh)}); " + second)
    return first, f"{second[0].upper()}{second[1:]}"


#: the families of ours the §6.3 figure draws
_REL_FAMILIES = ("faithful", "corrected", TAIL)


def reproduction_relative_errors(rep: xr.Dataset, stem, **kw):
    """§6.3: the paper's |relative error| of the best method by Wasserstein distance beside ours per family."""
    fams = list(_REL_FAMILIES)
    fig, pts = _paper_beside_ours(
        rep, stem, prefix="rel", pvar="paper_relative_error",
        ovar=("relative_error", "relative_error_ci_low", "relative_error_ci_high"),
        refvar="relative_error_reference", fams=fams, title=_rel_title(rep),
        what="|method − reference| / reference (%)\npaper: vs its simulation; ours: vs exact", kw=kw)
    return common.save(fig, stem, caption=_reproduction_caption(rep, "rel", "relative_error_reference", pts,
                                                         "§6.3 (99th, 99.9th and 99.99th percentiles)"), **kw)


def _rel_title(rep) -> str:
    """The §6.3 figure's title: the finding (the median gap between ours and the paper's; at R = 1 where ours is
    exact, what the paper's values there are), then which cells and which picks it shows."""
    n, med = _rel_gap(rep)
    lines = ["Paper §6.3: |relative percentile error| of the best method by W, the paper's beside ours"]
    if n:
        lines.append(f"ours (best of A–F) is within a median {100 * med:.1f} percentage points of the paper's "
                     f"({n} points)")
    one = _rel_exact_at_one(rep)
    if one.k:
        lines += _rel_one_lines(one)
    lines.append("({} of the table's {} cells in this run; ".format(
        *_cells_in_run(rep, "rel", "relative_error_reference"))
        + (_rel_pick_words(rep) + "; " if sum(_rel_pick_counts(rep)) else "")
        + "sizes only, as\u00a0the\u00a0paper\u00a0publishes\u00a0them)")
    return "\n".join(textwrap.fill(t, _REL_TITLE_WIDTH) for t in lines)


#: the §6.3 title's line length (characters): inside the figure's width at the default grid's 8 cells
_REL_TITLE_WIDTH = 92


def _rel_compared(rep) -> np.ndarray:
    """(percentile, rho, R) bool: the §6.3 points where the paper's |relative error| and ours (best of A–F, with a
    reference) both exist — the points its median gap and its R = 1 count are over."""
    ours = rep["relative_error"].sel(family="faithful").values
    ref = rep["relative_error_reference"].sel(family="faithful").values
    return np.isfinite(ours) & np.isfinite(rep["paper_relative_error"].values) & (ref > 0)


#: the §6.3 query of the points :func:`_rel_compared` marks
_REL_COMPARED = ("(relative_error_reference.sel(family='faithful') > 0) & isfinite(paper_relative_error) & "
                 "isfinite(relative_error.sel(family='faithful'))")
#: a relative error this small is exact's own (at R = 1 the methods A–F are the M/M/1-PS queue)
_REL_ZERO = 1e-9


def _rel_gap(rep) -> tuple[int, float]:
    """(points compared, median of ||ours| − the paper's|) over the §6.3 points :func:`_rel_compared` marks."""
    both = _rel_compared(rep)
    ours = np.abs(rep["relative_error"].sel(family="faithful").values)
    d = np.abs(ours[both] - rep["paper_relative_error"].values[both])
    return int(both.sum()), float(np.median(d)) if d.size else float("nan")


def _rel_exact_at_one(rep) -> SimpleNamespace:
    """At R = 1 of the §6.3 points: k of the n compared points where our |relative error| (best of A–F) is 0 (at
    most _REL_ZERO); lo, hi: the paper's values at those k points; others: the rest by load and percentile
    ("ρ = 0.8: 99.9th, 99.99th"; empty where k = n); ours, paper: the picks (letters) at those k points' cells."""
    none = SimpleNamespace(k=0, n=0, lo=float("nan"), hi=float("nan"), others="", ours="", paper="")
    if 1 not in rep["rel_R"].values.tolist():
        return none
    k1 = rep["rel_R"].values.tolist().index(1)
    both = _rel_compared(rep)[..., k1]  # (percentile, rho)
    small = np.abs(rep["relative_error"].sel(family="faithful").values[..., k1]) <= _REL_ZERO
    zero, rest = both & small, both & ~small
    paper = rep["paper_relative_error"].values[..., k1][zero]
    lo, hi = (float(paper.min()), float(paper.max())) if paper.size else (float("nan"), float("nan"))
    pcts, rhos = rep["rel_percentile"].values, rep["rel_rho"].values
    others = "; ".join(f"ρ = {rhos[j]:g}: " + ", ".join(f"{pcts[i]:g}th" for i in np.nonzero(rest[:, j])[0])
                       for j in np.nonzero(rest.any(0))[0])
    cells = zero.any(0)
    letters = lambda var: ", ".join(sorted({str(v) for v in var.values[cells] if v}))  # noqa: E731
    has = "relative_error_method" in rep and "paper_relative_method" in rep
    return SimpleNamespace(k=int(zero.sum()), n=int(both.sum()), lo=lo, hi=hi, others=others,
                           ours=letters(rep["relative_error_method"].sel(family="faithful", rel_R=1)) if has else "",
                           paper=letters(rep["paper_relative_method"].sel(rel_R=1)) if has else "")


def _rel_one_lines(one) -> list[str]:
    """The words of :func:`_rel_exact_at_one`'s finding, as the title's lines (the caption's claim joins them)."""
    where = f"all {one.n}" if one.k == one.n else f"{one.k} of {one.n}"
    cut = f"; at the other {one.n - one.k}, \"tail cut\": its truncation" if one.k < one.n else ""
    return [f"at R = 1 ours{f' ({one.ours})' * bool(one.ours)} is 0 at {where} points (exact up to its truncated "
            f"state space{cut}),",
            f"while the paper reports {100 * one.lo:.0f}–{100 * one.hi:.0f} % there against its one-seed "
            "simulation" + f" (its picks: {one.paper})" * bool(one.paper)]


def _rel_one_claim(rep) -> Claim:
    """:func:`_rel_exact_at_one` as a caption claim, re-derived from the dataset."""
    one = _rel_exact_at_one(rep)
    zero = f"{_REL_COMPARED} & (abs(relative_error.sel(family='faithful')) <= {_REL_ZERO:g})"
    sel = {"rel_R": 1}
    words = " ".join(_rel_one_lines(one)).replace(" is 0 at ", f" is 0 (|relative error| ≤ {_REL_ZERO:g} against "
                                                   "exact) at ", 1)
    return Claim(f"{words[0].upper()}{words[1:]}" + (f"; the other {one.n - one.k}: {one.others}." if one.k < one.n
                                                     else "."),
                 [one.k, one.n, one.lo, one.hi],
                 [_rq(f"abs(relative_error.sel(family='faithful')) <= {_REL_ZERO:g}", where=_REL_COMPARED, sel=sel),
                  _rq(_REL_COMPARED, sel=sel), _rq("paper_relative_error", (("min", None),), zero, sel=sel),
                  _rq("paper_relative_error", (("max", None),), zero, sel=sel)], half_unit(0, 100))


def _rel_pick_counts(rep) -> tuple[int, int]:
    """(cells of the §6.3 figure where ours (best of A–F) was picked against exact, against our simulation)."""
    if "relative_error_method_reference" not in rep:  # written before the pick said its reference
        return 0, 0
    pr = rep["relative_error_method_reference"].sel(family="faithful").values
    return int((pr == REF_EXACT).sum()), int((pr == REF_SIMULATION).sum())


def _rel_pick_words(rep) -> str:
    """The §6.3 title's words on which reference picked our best of A–F (the letter above each dot)."""
    k_ex, k_sim = _rel_pick_counts(rep)
    parts = [f"against exact at {k_ex}"] * bool(k_ex) + [f"against our simulation at {k_sim}"] * bool(k_sim)
    return "ours: the method of least W " + (" and ".join(parts) or "nowhere") + " cells, its letter above each dot"


def _rel_pick_claim(rep) -> Claim:
    """Which reference picked ours (best of A–F by W, its letter above each dot) at the §6.3 cells this run has."""
    k_ex, k_sim = _rel_pick_counts(rep)
    v = "relative_error_method_reference.sel(family='faithful')"
    return Claim(f"Ours (best of A–F) is the method of least W (its letter above each dot) against exact at {k_ex} "
                 f"cells and against our simulation (exact did not run) at {k_sim}, "
                 "as in the §6.4 map; the paper picked against its simulation.", [k_ex, k_sim],
                 [_rq(f"{v} == 1"), _rq(f"{v} == 2")])


def _signed_findings(rep, prefix, ref, findings, limits) -> None:
    """The section's sign, size and missing-value findings (appended to findings and limits)."""
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
        n, med = _rel_gap(rep)
        if n:
            findings.append(Claim(f"Where both exist ({n} points) ours and the paper's |relative "
                                  f"error| differ by a median {100 * med:.1f} percentage points.", [n, med],
                                  [_rq(_REL_COMPARED),
                                   _rq("abs(abs(relative_error.sel(family='faithful')) - paper_relative_error)",
                                       (("median", None),), _REL_COMPARED)], half_unit(1, 100)))
        if _rel_exact_at_one(rep).k:
            findings.append(_rel_one_claim(rep))
        if "paper_relative_method" in rep and _rel_letters_differ(rep)[1]:
            kd, nd = _rel_letters_differ(rep)
            w = (f"({_REL_COMPARED}).any('rel_percentile') & (relative_error_method.sel(family='faithful') != '') & "
                 "(paper_relative_method != '')")
            findings.append(Claim(f"The paper's best method is another than ours (best of A–F) at {kd} of the {nd} "
                                  "cells (its letter beside its circle there).", [kd, nd],
                                  [_rq("paper_relative_method != relative_error_method.sel(family='faithful')",
                                       where=w), _rq(w)]))


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
        glyph = (lambda g: "") if prefix == "pct" else (lambda g: f" ({g})")  # the scatter draws no status marks
        findings.append(Claim(f"Of the {n} (percentile, cell) points of the paper's table in this run, ours (best of "
                              f"A–F) is measured against exact at {k_ex}, against our simulation at {k_sim}, and has "
                              f"no value at {k_none} (no reference of ours" + ("" if prefix == "pct" else ": ◇ or ▶")
                              + ").", [n, k_ex, k_sim, k_none],
                              [_rq(f"{refvar} != -1", sel=fam_sel), _rq(f"{refvar} == 1", sel=fam_sel),
                               _rq(f"{refvar} == 2", sel=fam_sel), _rq(f"{refvar} == 0", sel=fam_sel)]))
        bg = (rep["percentile_beyond_grid"].values != 0) & (ref == 0) if (
            prefix == "pct" and "percentile_beyond_grid" in rep) else np.zeros(ref.shape, bool)
        if k_none - int(bg.sum()):
            limits.append(Claim(f"At {k_none - int(bg.sum())} points our reference is too short ({RULE}): no value of "
                                f"ours there{glyph('◇')}.", k_none - int(bg.sum()),
                                _rq(f"({refvar} == 0)" + (" & (percentile_beyond_grid == 0)" if bg.any() else ""),
                                    sel=fam_sel)))
        if bg.any():
            limits.append(Claim(f"At {int(bg.sum())} points exact ran but its percentile lies beyond the time grid "
                                f"(t_max), and the simulation is too short: no value of ours there{glyph('▶')}.",
                                int(bg.sum()),
                                _rq(f"({refvar} == 0) & (percentile_beyond_grid != 0)", sel=fam_sel)))
        if prefix == "rel" and "relative_error_method_reference" in rep:
            findings.append(_rel_pick_claim(rep))
        _signed_findings(rep, prefix, ref, findings, limits)
    what = (f"The paper's {section} (Palmer & Martín-Pérez, arXiv 2210.17227; one simulation seed) against ours at "
            "the cells of its table this run has: the paper's signed error of its "
            "best method beside ours, one row per (R, ρ, percentile) point, in table order (method − reference, in "
            + TIME_UNIT + "), one panel per family of ours (best of A–F, best of A*–F*, method T), the rows shared."
            if prefix == "pct" else
            f"The paper's {section} (Palmer & Martín-Pérez, arXiv 2210.17227; one simulation seed) beside ours at the "
            "cells of its table this run has: the paper's value (hollow black circle) and, per family, the best "
            f"method of ours ({FAMILY_COLOR_WORDS['faithful']} A–F, {FAMILY_COLOR_WORDS['corrected']} A*–F*, teal T).")
    if prefix == "pct":  # each other panel's count (the first panel's is the finding above)
        for fam in [f for f, _ in _PCT_PANELS[1:] if f in rep["family"].values.tolist()]:
            kl, nl = _paper_larger(rep, fam)
            if nl:
                w = (f"(percentile_error_reference.sel(family={fam!r}) > 0) & isfinite(paper_percentile_error) & "
                     f"isfinite(percentile_error.sel(family={fam!r}))")
                findings.append(Claim(f"Ours ({dict(_PCT_PANELS)[fam].removeprefix('ours: ').split(' (')[0]}) is "
                                      f"smaller in size than the paper's error at {kl} of {nl} points.", [kl, nl],
                                      [_rq(f"abs(paper_percentile_error) > abs(percentile_error.sel(family={fam!r}))",
                                           where=w), _rq(w)]))
    return Caption(what, findings, limits,
        [("Ours is measured against the best reference: exact's percentile where exact ran (no noise), else our "
          "mean simulated percentile "
         + (f"(with its 95% CI as a horizontal bar); both in {TIME_UNIT}, as the paper's table (method − its "
            "simulation). The x axis is symmetric-logarithmic (linear within ±" + f"{_PCT_LINTHRESH:g}" + ", "
            "logarithmic beyond), one scale for every panel: the paper's error is a hollow black circle, ours a "
            "filled dot in its family's colour just below it in the row, joined by a thin line (ours "
            f"between ±{_PCT_LINTHRESH:g} and ±1, whose distance from 0 the log part exaggerates, carries its value); "
            "ours is the smaller in size where its dot is the nearer to the vertical line at 0 (a red ✖ right of "
            "the panel, at the row, where it is not); left of 0 is optimistic (under the "
            "reference), right of 0 conservative. The paper's points where we have no value are not drawn; "
            "the line under the panels names them. " if prefix == "pct" else
            f"({_AGAINST_SIM_WORDS}, with its 95% CI{'' if _rel_against_sim(rep) else ' (none here)'}; filled where "
            "against exact); both are shown as a share of that reference percentile, the paper's too. ")
         + "Where exact did not run (or its percentile lies beyond the time grid) and our simulation has too few "
         "customers beyond the percentile, we have no reference and draw nothing of ours there.")])


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
        ax.set_xlabel("load ρ")
    fig.subplots_adjust(hspace=0.55, top=0.95, bottom=0.07, left=0.1, right=0.9)
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
    k_ex, _, k_diff = _pick_counts(rep)
    fig.suptitle(f"Paper §6.4: the best of A–F by Wasserstein distance, the paper's and ours ({n} cells in both).\n"
                 f"Against our simulation (the paper's reference) the same method in {k_same}, a tie within the 95% "
                 f"CI in {k_tie},\ndifferent in {n - k_same - k_tie}; against exact (no noise; it ran at {k_ex} of "
                 f"these cells) the best is another method at {k_diff} (\"exact X\")",
                 fontsize=10, y=1.0, va="bottom")
    return common.save(fig, stem, caption=_reproduction_map_caption(rep), **kw)


def our_map_picks(rep) -> SimpleNamespace:
    """Our best of A–F per (R, ρ) as the §6.4 middle map draws it: ``pick`` (against exact where it ran, else
    against our simulation; ``best_method`` alone in a reproduction written before exact picked), ``ref``
    (REF_EXACT / REF_SIMULATION, -1 none), ``label`` (the pick and the methods tied with it, "D=E"), ``sim`` (our pick
    against the simulation, the paper's reference) and ``differs`` (True where that is neither the pick nor tied
    with it: the cell's "exact X" mark)."""
    from ..compare import REF_SIMULATION

    sim = rep["best_method"].sel(family="faithful").values.astype(str)
    if "best_method_by_reference" not in rep:
        ref = np.where(sim != "", REF_SIMULATION, -1)
        return SimpleNamespace(pick=sim, ref=ref, label=sim, sim=sim, differs=np.zeros(sim.shape, bool))
    pick = rep["best_method_by_reference"].sel(family="faithful").values.astype(str)
    ties = rep["best_method_ties"].sel(family="faithful").values.astype(str)
    label = np.vectorize(lambda p, t: "=".join([p] + t.split(",")) if p and t else p, otypes=[object])(pick, ties)
    differs = np.vectorize(lambda p, t, x: bool(p and x and x != p and x not in t.split(",")),
                           otypes=[bool])(pick, ties, sim)
    return SimpleNamespace(pick=pick, ref=rep["best_method_reference"].sel(family="faithful").values, label=label,
                           sim=sim, differs=differs)


def _rep_best_panels(axes, rep, short, few) -> list:
    """The §6.4 figure's top two maps: the paper's best of A–F and ours (picked against our simulation, coloured by
    that pick (the one compared with the paper's; "exact X" where exact's pick,
    without noise, is another method; ▾ where exact did not run); hatched a tie with the paper's,
    crossed a disagreement, both judged against the simulation, the paper's reference; ◇ a simulation too short).
    Returns the legend's (handle, label) pairs for them."""
    from matplotlib.colors import ListedColormap
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from ..claims import TIE
    from ..compare import REF_SIMULATION

    letters = list("ABCDEF")
    paper = rep["paper_best_method"].values
    ours = our_map_picks(rep)
    agree = rep["agreement"].values
    tie = agree == TIE
    ours_shown = np.where(short, "", ours.sim)  # coloured by the pick compared with the paper's (round 21)
    cmap = ListedColormap([_MAP_COLORS[m] for m in letters]).with_extremes(bad="0.93")
    codes = lambda L: np.vectorize(lambda v: letters.index(v) if v in letters else np.nan, otypes=[float])(L)
    for ax, L, title in ((axes[0], paper, "the paper (the authors' best.csv, one seed; against its simulation)"),
                         (axes[1], ours_shown, "ours: best of A–F by W against our simulation (the paper's "
                                               "reference); \"exact X\": exact (no noise) picks X")):
        ax.imshow(np.ma.masked_invalid(codes(L)), aspect="auto", origin="lower", cmap=cmap, vmin=-0.5,
                  vmax=len(letters) - 0.5, interpolation="nearest")
        ax.set_title(title, fontsize=9.5, loc="left")
        for (i, j), v in np.ndenumerate(L) if few else ():
            if not v:
                continue
            ink = _ink(_MAP_COLORS.get(v, "0.5"))
            if ax is axes[0]:
                ax.text(j, i, v, ha="center", va="center", fontsize=9, color=ink, fontweight="bold")
                continue
            lab = _sim_label(ours, i, j)
            if tie[i, j]:  # a tie with the paper's pick: hatched over our colour, and said (round 28: a hatch alone
                _hatch_tie(ax, i, j, ink)  # was invisible on a light cell, which read as a disagreement)
                head, *rest = lab.split("\n")
                lab = "\n".join([head, f"≈ paper {paper[i, j]}", *rest])
            box = {"facecolor": _MAP_COLORS.get(v, "0.9"), "edgecolor": "none", "pad": 0.6} if tie[i, j] else None
            ax.text(j, i, lab, ha="center", va="center", fontsize=(9, 8, 7)[min(lab.count("\n"), 2)],
                    color=ink, gid="tie_text" if tie[i, j] else None,
                    fontweight="bold", linespacing=1.0, bbox=box)  # on a hatched cell: its colour behind the text
    ii, jj = np.nonzero(agree == 0)
    axes[1].plot(jj - 0.36, ii - 0.28, "x", color="k", ms=6 if few else 4, mew=1.5 if few else 1.0, ls="none")
    ii, jj = np.nonzero((ours.ref == REF_SIMULATION) & (ours_shown != ""))
    axes[1].plot(jj + 0.4, ii + 0.3, "v", color="k", mec="white", mew=0.6, ms=5 if few else 3, ls="none")
    mark_cells(axes[1], short, REFERENCE_TOO_SHORT.key, ms=6 if few else 3)
    more = [(Patch(color=_MAP_COLORS[m]), m) for m in letters if (paper == m).any() or (ours_shown == m).any()]
    if _outside_cells(rep).any():
        more.append((Patch(facecolor="0.93", edgecolor="0.6"),
                     "light grey: not in this run, or not in the paper's grid"))
    if ((ours.ref == REF_SIMULATION) & (ours_shown != "")).any():
        more.append((Line2D([], [], ls="none", marker="v", color="k", ms=5),
                     "▾ (middle): exact did not run here (no noise-free check of the pick)"))
    if "=" in "".join(np.where(short, "", ours.label).ravel().tolist()):
        more.append((Patch(facecolor="none", edgecolor="none"),
                     "D=E: a tie (exact: W within 1e-4; simulation: 95% CIs overlap)"))
    if (ours.differs & ~short).any():
        more.append((Patch(facecolor="none", edgecolor="none"),
                     "exact X: against exact (no noise) the best is X — the sharper answer there"))
    if (agree == 0).any():
        more.append((Line2D([], [], ls="none", marker="x", color="k", ms=6),
                     "ours against the simulation differs from the paper's beyond a tie"))
    if tie.any():
        more.append((Patch(facecolor="0.9", edgecolor="0.35", hatch="///"),
                     "middle, hatched, \"≈ paper X\": a tie with the paper's X (95% CIs overlap)"))
    return more


def _hatch_tie(ax, i, j, ink) -> None:
    """A §6.4 map's cell (i, j) where our pick ties with the paper's: hatched over its colour (light lines where
    the cell's text ``ink`` is white)."""
    ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="none", hatch="///",
                               edgecolor="0.92" if ink in ("w", "white") else "0.1", lw=0, gid="tie"))


def _sim_label(ours, i, j) -> str:
    """The middle map's text at (i, j): our pick against the simulation first (the cell's colour), the methods tied
    with it ("D=E"), and "exact X" under it where exact's pick (no noise) is another method."""
    sim, label = ours.sim[i, j], ours.label[i, j]
    if ours.differs[i, j]:
        return f"{sim}\nexact {label}"
    tied = [m for m in str(label).split("=") if m and m != sim]
    return "=".join([sim] + tied) if sim else str(label)


def _pick_counts(rep) -> tuple[int, int, int]:
    """(cells of the middle map picked against exact, against the simulation (▾), where our pick against the
    simulation differs: "exact X" in the middle map), over the cells drawn with a letter (not ◇)."""
    from ..claims import TOO_SHORT
    from ..compare import REF_EXACT, REF_SIMULATION

    ours = our_map_picks(rep)
    drawn = (rep["agreement"].values != TOO_SHORT) & (ours.pick != "")
    return (int((drawn & (ours.ref == REF_EXACT)).sum()), int((drawn & (ours.ref == REF_SIMULATION)).sum()),
            int((drawn & ours.differs).sum()))


def _outside_cells(rep) -> np.ndarray:
    """(R, rho) cells of the §6.4 maps drawn light grey without a mark: not in this run or not in the paper's grid
    (a cell in both whose simulation is too short is light grey too, but carries ◇)."""
    from ..claims import TOO_SHORT

    paper, ours = rep["paper_best_method"].values, rep["best_method"].sel(family="faithful").values
    return (rep["agreement"].values != TOO_SHORT) & ((paper == "") | (ours == ""))


#: the §6.4 map's colours of A–F: the one method palette of every figure (round 16: an own Okabe–Ito palette here put
#: F in exact's pink and D, C, E in colours the CDF figures give other methods)
_MAP_COLORS = {m: METHOD_COLORS[m] for m in "ABCDEF"}


def _ink(color) -> str:
    """Black or white, whichever reads better on ``color`` (its relative luminance)."""
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(color)
    return "k" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "w"


#: the ratio map's diverging colours (round 26: red there meant "corrected farther" while red is method D in the maps
#: above): purple (the corrected closer) through white to a greyish brown (farther), away from every A–F colour
RATIO_CMAP = ("#3f007d", "#807dba", "#f7f7f7", "#b59a8a", "#4a2c20")
#: the ratio map's colour-bar ticks (the ratio, drawn where inside the colour range)
_RATIO_TICKS = (1000, 300, 100, 30, 10, 3, 1, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)


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


def _ratio_cmap():
    """The ratio map's colour map (RATIO_CMAP)."""
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list("ratio", RATIO_CMAP)


def _rep_ratio_panel(ax, cax, rep, short, few) -> bool:
    """The §6.4 figure's bottom map: the best corrected W over the best of A–F's, ×ratio on a log colour scale
    symmetric about ×1; a cell whose two CIs overlap is white and dotted (no difference), its ratio in grey. Returns
    whether such a cell is drawn."""
    from matplotlib.colors import Normalize

    ratio, side = ratio_beyond_noise(rep)
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.where(short, np.nan, np.log10(ratio))
    noise = np.isfinite(lr) & (side == 0)
    # one log scale, symmetric about ×1 (×k and ×1/k equally strong; round 15: a two-slope scale read as one):
    # the data's largest factor either way, at least 2 (so that a ratio near 1 stays pale)
    hi_ = max(np.log10(2), float(np.nanmax(np.abs(lr)))) if np.isfinite(lr).any() else 1.0
    lo_ = -hi_
    im = ax.imshow(np.ma.masked_invalid(np.where(noise, np.nan, lr)), aspect="auto", origin="lower",
                   cmap=_ratio_cmap().with_extremes(bad="0.93"),
                   norm=Normalize(vmin=lo_, vmax=hi_), interpolation="nearest")
    for i, j in zip(*np.nonzero(noise), strict=True):
        ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=NO_DIFFERENCE_CELL, hatch="....",
                                   edgecolor="0.75", lw=0))
    mark_cells(ax, short, REFERENCE_TOO_SHORT.key, ms=6 if few else 3)
    # no tie hatching here (round 27: it hid which ratios are noise, and agreement with the paper belongs to the
    # maps above, not to a comparison of the corrected methods with A–F)
    for (i, j), v in np.ndenumerate(lr) if few else ():
        if np.isfinite(v):
            ax.text(j, i, f"×{10 ** v:.2g}", ha="center", va="center", fontsize=7.5,
                    color="0.45" if noise[i, j] else ("w" if abs(im.norm(v) - 0.5) > 0.3 else "k"),
                    style="italic" if noise[i, j] else "normal")
    cb = plt.gcf().colorbar(im, cax=cax)
    ticks = [np.log10(v) for v in _RATIO_TICKS if lo_ - 1e-9 <= np.log10(v) <= hi_ + 1e-9]
    cb.set_ticks(ticks, labels=[f"×{10 ** v:.2g}" for v in ticks])
    cb.set_label("W corrected / W A–F\n(log scale, symmetric about ×1)", fontsize=8)
    ax.set_title("W of the best corrected (A*–F*) / W of the best of A–F, both against the simulation:\npurple = the "
                 "corrected are closer; white dotted: the simulation's noise hides any difference", fontsize=9.5,
                 loc="left")
    return bool(noise.any())


def _reproduction_map_caption(rep) -> Caption:
    from ..claims import DISAGREE, SAME, TIE, TOO_SHORT

    ag = rep["agreement"].values
    n = int(((ag != -1) & (ag != TOO_SHORT)).sum())
    k = [int((ag == v).sum()) for v in (SAME, TIE, DISAGREE)]
    findings = [Claim(f"Of the {n} cells in both the paper's grid and this run (our simulation long enough), our "
                      f"pick against our simulation (the paper's reference) is the paper's method in {k[0]}, ties "
                      f"with it within the 95% CI in {k[1]} and differs in {k[2]}.",
                      [n] + k, [_rq("(agreement >= 0)"), _rq("agreement == 2"), _rq("agreement == 1"),
                                _rq("agreement == 0")])]
    if "best_method_by_reference" in rep:
        k_ex, k_sim, k_diff = _pick_counts(rep)
        fam = "sel(family='faithful')"
        findings.append(Claim(
            f"Our pick in the middle map is made against our simulation, the reference of the paper's map and of the "
            f"counts above; it is checked against exact, which has no noise, at {k_ex} cells (▾: no exact at "
            f"{k_sim}), and there exact's best is another method at {k_diff} (\"exact X\" under the letter).",
            [k_ex, k_sim, k_diff],
            [_rq(f"best_method_reference.{fam} == 1", where="agreement != -2"),
             _rq(f"best_method_reference.{fam} == 2", where="agreement != -2"),
             _rq(f"best_method_simulation_differs.{fam} == 1", where="agreement != -2")]))
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
                            "verdict there (light grey with ◇ in the middle and bottom maps), left out of the counts.",
                            ks, _rq("agreement == -2")))
    none = lambda k: " (none here)" if k == 0 else ""  # noqa: E731 - a mark the caption names but the map lacks
    grey = ("Light grey without a mark: not in this run or not in the paper's grid." if _outside_cells(rep).any()
            else "")
    return Caption(
        "Paper §6.4, best of the paper's methods A–F by Wasserstein distance per (R, ρ) cell. Top: the authors' "
        "published map (experiments/best.csv, one seed, picked against its simulation). Middle: ours, the best of "
        "A–F by mean W over replications against our simulation, the paper's reference (methods whose 95% CIs of W "
        "overlap tie, \"D=E\"); \"exact X\" under a letter: against exact, which has no noise, the best is X "
        "(methods within 1e-4 of W tie), the sharper answer there; ▾: exact did not run there. The comparison with "
        "the paper uses our pick against the simulation, its reference: a cross marks a disagreement"
        f"{none(k[2])}, a hatched cell a tie{none(k[1])} "
        "(the paper's method's 95% CI of W overlaps our pick's: a difference one seed cannot resolve). Bottom: "
        "the best corrected method's W over the best of A–F's, printed as ×ratio and coloured on a log scale "
        "symmetric about ×1; purple = the corrected methods are closer, brown farther (no red: red is method D in "
        "the maps above). Both W are "
        "against our simulation (the paper's reference), so where the two 95% CIs overlap the ratio says nothing: "
        "such a cell is white and dotted, its ratio in grey italics (the simulation's own noise there is as large as "
        "the gap between the two methods' distances). The Wasserstein figure, which uses exact where it ran, is the "
        "sharper comparison.", findings, limits,
        [("Methods whose approximated CDF is not a CDF are never best; where the paper's method is not a CDF in our "
         "run the cell counts as a disagreement. " + grey).strip()])
