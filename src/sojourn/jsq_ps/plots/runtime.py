"""The run-time figure: each family's computing time against R."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from ...core.present.claims import Caption, Claim, sig_tol
from ...core.present.figures import (
    log_ticks,
)
from .. import claims as Q
from . import common  # save, looked up when called: tests replace common.save
from .common import _EXACT_COLOR, _TAIL_COLOR, FAITHFUL, TAIL, TAIL_LABEL, _g
from .maps import _budget_words


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
    lo, hi = ax.dataLim.y0, ax.dataLim.y1  # both ends on a labelled decade: the longest whisker has one above it
    if 0 < lo < hi:
        ax.set_ylim(10.0 ** np.floor(np.log10(lo)), 10.0 ** np.ceil(np.log10(hi) + 0.02))
    log_ticks(ax.yaxis)
    ax.set_xscale("log")
    ax.set_xticks(Rv, [str(int(r)) for r in Rv])
    ax.minorticks_off()
    ax.set_xlabel("servers R (log scale)")
    ax.set_ylabel("run time of one (R, ρ) cell (s, wall clock)")
    ax.set_title("Run time of each method family per cell, where it ran (median over its methods and loads; whisker: "
                 "fastest to slowest cell)\nmedians: " + ", ".join(f"{lab.split(' (')[0]} {_g(v)} s"
                                                              for lab, (_, v) in meds.items()), fontsize=9.5)
    # (the medians rounded as in the caption's claims: one rounding for one number)
    handles = [Line2D([], [], ls="none", marker="o", ms=7, color=c_) for _, _, c_ in fams]
    labels = [lab for lab, _, _ in fams]
    if partial:
        handles.append(Line2D([], [], ls="none", marker="o", ms=7, mfc="white", mec="0.3", mew=1.8))
        bw = _budget_words(cmp)
        labels.append(f"hollow, k/{n_rho} beside it: ran at only k of the {n_rho} loads (the rest over budget"
                      + (f" — {bw} —" if bw else "") + ": left out, not counted as fast)")
    ax.legend(handles, labels, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    return common.save(fig, stem, caption=_runtime_caption(cmp, nr, meds, partial), **kw)


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
