"""The run-time figure: each family's computing time against R."""
from __future__ import annotations

import textwrap

import numpy as np
import xarray as xr

from ...core.present.claims import Caption, Claim, listing, sig_tol
from ...core.present.figures import (
    log_ticks,
)
from ...core.present.mpl import plt  # imported on first use (core/present/mpl.py)
from .. import claims as Q
from . import common  # save, looked up when called: tests replace common.save
from .common import _EXACT_COLOR, _TAIL_COLOR, FAITHFUL, FAMILY_COLORS, TAIL, TAIL_LABEL, _g, skip_reason
from .maps import _budget_words


# =========================================================================== run time
def _families(cmp):
    present = cmp["approximation"].values.tolist()
    return [(name, ms, color) for name, ms, color in (
        ("paper-faithful A–F", [m for m in FAITHFUL if m in present], FAMILY_COLORS["faithful"]),
        ("corrected A*–F*", [m for m in present if m.endswith("*")], FAMILY_COLORS["corrected"]),
        ("exact", [m for m in present if m == "exact"], _EXACT_COLOR),
        (TAIL_LABEL, [m for m in present if m == TAIL], _TAIL_COLOR)) if ms]


def _short(label) -> str:
    """A family's short name: 'A–F', 'A*–F*', 'exact', 'method T' (never a bare T: it reads as the sojourn time)."""
    name = label.split(" (")[0].removeprefix("corrected ").removeprefix("paper-faithful ")
    return f"method {name}" if name == TAIL else name


def _title_name(label) -> str:
    """A family's name in the title's medians: as in its legend entry, method T without its long name."""
    return _short(label) if _short(label) == f"method {TAIL}" else label.split(" (")[0]


def _skipped_names(cmp, nr, fams) -> dict:
    """{family label: the name of what skipped loads in it}: the family's short name where each of its methods
    skipped some, else the methods that did — one chain as its identical group ('A* = B* = D* = E*', the others of
    the family ran there: round 15 read "A*–F*: loads not run" where C* = F* had run)."""
    from .common import series

    groups = {tuple(sr.members): sr.label for sr in series(cmp, "corrected")}
    out = {}
    for label, ms, _ in fams:
        did = [m for m in ms if bool((nr.sel(approximation=m) != 0).any())]
        if not did or len(did) == len(ms):
            out[label] = _short(label)
        else:
            out[label] = groups.get(tuple(did), ", ".join(did))
    return out


def _skip_why(label) -> str:
    """Why a family skipped a load, in the row under the axis: the one wording of every figure (skip_reason; round 21:
    the row and the legend named the reason differently)."""
    return skip_reason(short=True) if label == "exact" or label.startswith("corrected") else "not run"


#: the widest line of a long legend entry (characters): the legend stays inside the figure (round 21: its last line
#: touched the image's right edge)
_LEGEND_WRAP = 78


def _fill(text) -> str:
    """``text`` wrapped at :data:`_LEGEND_WRAP`, never inside a chain's name ('A* = B* = D* = E*' stays on one line)."""
    return textwrap.fill(text.replace(" = ", "\u00a0=\u00a0"), _LEGEND_WRAP).replace("\u00a0", " ")


def _common_cells(nr, fams):
    """(R, rho) bool: the cells where every method of every drawn family ran (none refused: skip_reason)
    — the cells on which the families' run times compare like with like."""
    every = [m for _, ms, _ in fams for m in ms]
    return (nr.sel(approximation=every) == 0).all("approximation").transpose("R", "rho")


def runtime_vs_R(cmp: xr.Dataset, stem, **kw):
    """Run time per cell vs R per family (faithful A–F, corrected A*–F*, exact, T), over the loads where every drawn
    family ran (:func:`_common_cells`; a cell refused (skip_reason) has the time to refuse,
    and an R where a costly family skipped its costly loads would otherwise look cheap): the median over the
    family's methods and those loads, the whisker from the fastest to the slowest of those cells; at an R where some
    family did not run at every load, every family's marker is hollow and bold rows under the axis say how many
    loads the comparison covers and which family skipped how many."""
    from matplotlib.lines import Line2D

    nr = cmp["not_run"] if "not_run" in cmp else xr.zeros_like(cmp["run_time"], dtype=np.int8)
    fig, ax = plt.subplots(figsize=(9.0, 5.4))
    Rv, n_rho, fams = cmp["R"].values, cmp.sizes["rho"], _families(cmp)
    common_cells = _common_cells(nr, fams)
    per_r = {}
    meds, partial = _runtime_families(ax, cmp["run_time"], nr, fams, Rv, n_rho, common_cells,
                                      _skipped_names(cmp, nr, fams), per_r)
    ax.set_yscale("log")
    lo, hi = ax.dataLim.y0, ax.dataLim.y1  # both ends on a labelled decade: the longest whisker has one above it
    if 0 < lo < hi:
        ax.set_ylim(10.0 ** np.floor(np.log10(lo)), 10.0 ** np.ceil(np.log10(hi) + 0.02))
    log_ticks(ax.yaxis)
    ax.set_xscale("log")
    ax.set_xticks(Rv, [str(int(r)) for r in Rv])
    ax.minorticks_off()
    hidden = _hidden_whiskers(ax, cmp["run_time"], fams, Rv, common_cells)
    who = _skipped_names(cmp, nr, fams)
    strip_pt = _over_budget_marks(ax, nr, fams, Rv, who)
    skipped = strip_pt > 0
    skip_lines = max((len(t.get_text().splitlines()) for t in ax.texts if t.get_va() == "top"), default=0)
    ax.set_xlabel("servers R (log scale)", labelpad=3)  # right under the ticks; the count rows below it
    ax.set_ylabel("run time of one (R, ρ) cell (s, wall clock)")
    ax.set_title("Run time per cell of each method family, over the loads where every family ran (median; whisker: "
                 f"fastest to slowest cell)\n{_trend_words(per_r, Rv, common_cells.sum('rho').values, n_rho)}",
                 fontsize=9.5, pad=6 + strip_pt)  # above the strip of the loads not run
    # (the medians rounded as in the caption's claims: one rounding for one number)
    handles = [Line2D([], [], ls="none", marker="o", ms=7, color=c_) for _, _, c_ in fams]
    labels = [lab for lab, _, _ in fams]
    if partial:
        handles.append(Line2D([], [], ls="none", marker="o", ms=7, mfc="white", mec="0.3", mew=1.8))
        labels.append(_fill(f"hollow, on a grey band: a partial median — not every family ran at all {n_rho} "
                                    "loads of that R (the rows under the axis count them); every family there over "
                                    "the same, cheaper loads: not the trend with R"))
    if skipped:
        bw = _budget_words(cmp)
        handles.append(Line2D([], [], ls="none", marker="^", ms=9, color="0.5", mec="k", mew=0.6))
        labels.append(_fill(
            "▲ in the strip above the plot, with a count: the loads that "
            + listing([who[lab] for lab, ms, _ in fams if (nr.sel(approximation=ms) != 0).any()])
            + f" did not run, {skip_reason()}" + (f" (exact's: {bw})" if bw else "")
            + ", checked before it runs, not a time-out. Their cost is in no median."))
    ax.legend(handles, labels, fontsize=8.5, loc="upper center", ncol=2, frameon=False,
              bbox_to_anchor=(0.5, -0.2 - (0.045 * skip_lines if partial else 0.0)))
    ax.grid(alpha=0.3)
    return common.save(fig, stem, caption=_runtime_caption(cmp, nr, meds, partial, fams, common_cells, hidden,
                                                           per_r), **kw)


#: the run-time figure's median marker (points); a whisker shorter than this hides behind it
_MARKER_PT = 7.0


def _hidden_whiskers(ax, rt, fams, Rv, common_cells) -> list:
    """The whiskers (fastest to slowest cell) shorter than the median's marker, as drawn on ``ax`` (its y limits
    set): each gets its spread written beside the marker ('spread ×1.1': slowest over fastest), so that a whisker is
    never silently absent (round 15: T at R = 10). Returns [(family label, R, slowest / fastest)]."""
    out = []
    pt = 72.0 / ax.figure.dpi
    for k, (label, ms, color) in enumerate(fams):
        d = rt.sel(approximation=ms).where(common_cells)
        dims = [x for x in d.dims if x != "R"]
        lo, hi = d.min(dims).values, d.max(dims).values
        for R, xi, a, b in zip(Rv, Rv * 1.07 ** (k - (len(fams) - 1) / 2), lo, hi, strict=True):
            if not (np.isfinite(a) and np.isfinite(b) and a > 0):
                continue
            (_, ya), (_, yb) = ax.transData.transform([(xi, a), (xi, b)])
            if abs(yb - ya) * pt < _MARKER_PT:
                out.append((label, int(R), float(b / a)))
                ax.annotate(f"spread ×{_g(b / a, 3)}", (xi, np.sqrt(a * b)), xytext=(5, 0),
                            textcoords="offset points",
                            ha="left", va="center", fontsize=7.5, color=color)
    return out


#: the height of one row of the not-run strip above the run-time plot (points)
_STRIP_ROW_PT = 15.0


def _over_budget_marks(ax, nr, fams, Rv, who) -> float:
    """The cells a family did not run (skip_reason), in a strip above the plot that shares
    its R axis (no time axis: a ▲ there is no run time): one row per family that skipped any, named at the left, a ▲
    in its colour at each R (at its marker's x) with the count beside it. Returns the strip's height in points (0:
    nothing skipped, no strip). A row is named for what skipped (``who``: the family, or the chain of it that did)."""
    rows = []
    for k, (label, ms, color) in enumerate(fams):
        n = (nr.sel(approximation=ms) != 0).any("approximation").sum("rho").sel(R=Rv).values
        if n.any():
            rows.append((who[label], color, Rv * 1.07 ** (k - (len(fams) - 1) / 2), n))
    if not rows:
        return 0.0
    h_pt = _STRIP_ROW_PT * (len(rows) + 0.6)
    panel_pt = ax.get_position().height * ax.figure.get_figheight() * 72.0
    strip = ax.inset_axes([0.0, 1.015, 1.0, h_pt / panel_pt], sharex=ax)
    for r, (_, color, x, n) in enumerate(rows):
        for xi, ni in zip(x, n, strict=True):
            if ni:
                strip.plot([xi], [r], "^", ms=8, color=color, mec="k", mew=0.6)
                strip.annotate(f"{int(ni)}", (xi, r), xytext=(6, 0), textcoords="offset points", ha="left",
                               va="center", fontsize=8, color=color, fontweight="bold")
    strip.set_ylim(len(rows) - 0.5, -0.5)
    strip.set_yticks(range(len(rows)), [f"{nm}: loads not run" for nm, *_ in rows], fontsize=7.5)
    strip.tick_params(axis="x", which="both", bottom=False, labelbottom=False)
    strip.tick_params(axis="y", length=0)
    strip.set_facecolor("0.96")
    return h_pt + 4.0


def _trend_words(per_r, Rv, n_at, n_rho) -> str:
    """The title's trend with R (round 24: medians pooled over every R hid it): each family's median per cell at the
    smallest and the largest R drawn, as the markers show them, the largest R named partial where a family skipped
    loads there."""
    parts, ends = [], None
    for label, med in per_r.items():
        ok = np.flatnonzero(np.isfinite(med))
        if ok.size == 0:
            continue
        i, j = int(ok[0]), int(ok[-1])
        ends = ends or (i, j)
        parts.append(f"{_title_name(label)} {_g(med[i])} → {_g(med[j])} s" if j != i else
                     f"{_title_name(label)} {_g(med[i])} s")
    if not parts:
        return ""
    i, j = ends
    head = (f"median per cell from R = {int(Rv[i])} to R = {int(Rv[j])}" if j != i else
            f"median per cell at R = {int(Rv[i])}") + (
        f" (R = {int(Rv[j])}: {int(n_at[j])} of {n_rho} loads, the cheaper ones)" if n_at[j] < n_rho else "")
    return f"{head}:\n" + ", ".join(parts)


def _runtime_families(ax, rt, nr, fams, Rv, n_rho, common_cells, who, per_r=None):
    """The run-time figure's marks per family and R over the cells ``common_cells`` (every family ran there): the
    median (hollow at an R where some family skipped a load) and the whisker; under the axis at such an R, bold
    rows: how many loads the comparison there covers and which family skipped how many. Returns ({family:
    (methods, median over its common cells)}, whether a hollow mark is drawn)."""
    import matplotlib.transforms as mtransforms

    meds, partial = {}, False
    n_at = common_cells.sum("rho").values  # loads compared per R
    for k, (label, ms, color) in enumerate(fams):
        d = rt.sel({"approximation": ms}).where(common_cells)
        dims = [x for x in d.dims if x != "R"]
        med = d.median(dims).values
        if not np.isfinite(med).any():
            continue
        meds[label] = (ms, float(np.nanmedian(d.values)))
        if per_r is not None:  # the markers' medians per R (the title's trend)
            per_r[label] = med
        x = Rv * 1.07 ** (k - (len(fams) - 1) / 2)  # side by side by a constant factor: even on the log axis
        ax.vlines(x, d.min(dims).values, d.max(dims).values, color=color, lw=2.2, alpha=0.55)
        for xi, m_, n_ in zip(x, med, n_at, strict=True):
            if np.isfinite(m_):
                ax.plot([xi], [m_], "o", ms=7, color=color, mfc=color if n_ == n_rho else "white", mec=color, mew=1.8,
                        zorder=4)
    if (n_at == n_rho).all():
        return meds, partial
    partial = True
    base = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    why = dict.fromkeys(_skip_why(lab) for lab, ms, _ in fams if bool((nr.sel(approximation=ms) != 0).any()))
    rows = (("loads compared", -38), (f"skipped ({' / '.join(why) or 'none'})", -50))
    for name, dy in rows:  # two rows under the tick labels: how many loads each R compares, who skipped how many
        ax.text(0.0, 0.0, name, transform=mtransforms.offset_copy(ax.transAxes, fig=ax.figure, x=-6, y=dy + 5,
                                                                  units="points"),
                ha="right", va="top", fontsize=8.5, color="0.3")
    for j, R in enumerate(Rv):
        full = n_at[j] == n_rho
        if not full:  # a partial median (fewer loads, the cheaper ones): a grey band and its word, not the trend
            ax.axvspan(R / 1.22, R * 1.22, color="0.92", zorder=0, lw=0)
        skipped = [(who[lab], int(n_rho - (nr.sel({"approximation": ms, "R": R}) == 0).all("approximation").sum()))
                   for lab, ms, _ in fams]
        for (_, dy), text in zip(rows, (f"{int(n_at[j])}/{n_rho}" + ("" if full else " partial"),
                                        "\n".join(f"{lab}: {n}" for lab, n in skipped if n) or "–"), strict=True):
            ax.text(R, 0.0, text, transform=mtransforms.offset_copy(base, fig=ax.figure, y=dy + 5, units="points"),
                    ha="center", va="top", fontsize=9 if dy == rows[0][1] else 8.5,
                    fontweight="normal" if full else "bold", color="0.45" if full else "0.1")
    return meds, partial


def _runtime_caption(cmp, nr, meds, partial, fams, common_cells, hidden=(), per_r=None) -> Caption:
    every = [m for _, ms, _ in fams for m in ms]
    ran_q = (f"(not_run.sel(approximation={Q.names(every)}).max('approximation') == 0)" if "not_run" in cmp
             else "isfinite(run_time)")
    n_common = int(common_cells.sum())
    findings = []
    for label, (ms, med) in meds.items():
        findings.append(Claim(f"{label}: median {_g(med)} s per cell over the {n_common} cells where every family "
                              "ran.", med,
                              Q.query(f"where({ran_q}, run_time, nan).sel(approximation={Q.names(ms)})",
                                      (("median", None),), None, {}), sig_tol(med, 2)))
    limits = []
    Rv = cmp["R"].values
    last = [int(np.flatnonzero(np.isfinite(m))[-1]) for m in (per_r or {}).values() if np.isfinite(m).any()]
    if len(meds) > 1 and last:
        j = max(last)  # the largest R drawn (round 25: a ratio pooled over every R hid exact's growth with R)
        at = {lab: float(per_r[lab][j]) for lab in meds if lab in per_r and np.isfinite(per_r[lab][j])}
        if len(at) > 1:
            fast, slow = min(at, key=at.get), max(at, key=at.get)
            r = at[slow] / at[fast]
            sel_r = f".sel(R={int(Rv[j])})"
            findings.insert(0, Claim(
                f"At the largest R drawn, R = {int(Rv[j])}, the slowest family is {slow} (median {_g(at[slow])} s per "
                f"cell) and the fastest {fast} ({_g(at[fast])} s), {_g(r)} times faster, over the loads where every "
                "family ran there.", r,
                Q.query(f"where({ran_q}, run_time, nan).sel(approximation={Q.names(meds[slow][0])}){sel_r}.median() "
                        f"/ where({ran_q}, run_time, nan).sel(approximation={Q.names(meds[fast][0])}){sel_r}.median()",
                        (("max", None),), None, {}), sig_tol(r, 2)))
    if partial:
        bw = _budget_words(cmp)
        limits.append(f"At an R drawn hollow some family did not run at every load ({skip_reason()}"
                      + (f"; exact's budget: {bw}, its cost predicted before it runs" if bw else "") + "): every "
                      "family's median there covers only the loads where all ran, the cheaper ones, so it "
                      "understates the cost of the whole row, most for the family that skipped them (the rows under "
                      "the axis at that R count the skipped loads; a ▲ in the family's colour in the strip above the "
                      "plot marks them too, with their count: their cost is in no median drawn).")
    if hidden:
        limits.append("A whisker shorter than its marker is hidden behind it; its spread (slowest over fastest cell) "
                      "is written beside the marker ('spread ×…'): " + "; ".join(f"{_short(lab)} at R = {R} ×{_g(r, 3)}"
                                                                   for lab, R, r in hidden) + ".")
    limits.append("Run times are wall-clock times on the machine that ran the pipeline, measured once: they vary from "
                  "run to run and machine to machine.")
    return Caption("Run time of the analytic methods per (R, ρ) cell against the number of servers R, per family: the "
                   "median over the family's methods and the loads where every family ran (at an R where one skipped "
                   "some, the others' are left out there too: like with like), the whisker from the fastest to the "
                   "slowest of those cells.", findings, limits,
                   [("Methods that share building blocks (A*–F* compute two distinct chains) report their own share. "
                     f"A cell a method refused ({skip_reason()}) counts nowhere: its time is the "
                     "time to refuse.")])
