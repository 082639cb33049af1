"""The (R, ρ) maps: the method closest by Wasserstein distance, and the recommended method per percentile."""
from __future__ import annotations

import json
import math

import numpy as np
import xarray as xr

from ...core.present.claims import Caption, Claim, half_unit, listing
from ...core.present.figures import (
    REFERENCE_TOO_SHORT,
    TIME_UNIT,
    TOO_SHORT_CELL,
    mark_cells,
    method_color,
    status_handles,
    status_style,
)
from ...core.present.mpl import plt  # imported on first use (core/present/mpl.py)
from .. import claims as Q
from ..compare import (
    REF_EXACT,
    REF_SIMULATION,
    w_against_reference,
)
from . import common  # save, looked up when called: tests replace common.save
from .common import (
    EXPONENTIAL,
    RULE,
    TAIL,
    _cells_text,
    _groups,
    _label,
    _legend_below,
    _pct,
    _rgb,
    skip_reason,
)


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


def _on_exact(b, i) -> list:
    """The candidates within reach of exact in every cell of row ``i`` (one of :func:`_exact_rows`): those tied in
    each of its cells, in the candidates' order."""
    sets = [set(b["tied"][i, j].split("·")) for j in range(b["best"].shape[1]) if b["best"][i, j]]
    common_ = set.intersection(*sets) if sets else set()
    return [m for m in b["candidates"] if m in common_]


def _exact_row_words(b, Rv) -> list:
    """Per row of :func:`_exact_rows`: 'R = 1: A*, C* and T lie on exact, so no clear winner' (who, from the ties)."""
    out = []
    for R in _exact_rows(b, Rv):
        names = _on_exact(b, list(Rv).index(R))
        out.append(f"R = {R}: {listing(names)} lie on exact, so no clear winner" if names else
                   f"R = {R}: no clear winner")
    return out


def _tie_text(names: list) -> str:
    """A tie cell's word: "tie (k)", k the number of methods within reach (their names are in the caption:
    :func:`_tie_sentence`)."""
    return f"tie ({len(names)})"


def _tie_sentence(b, rho, Rv) -> str:
    """The caption's list of who ties where: per set of tied methods, its cells by R ('A*, C* and T at R = 1
    (ρ = 0.1, 0.3 and 0.5) and R = 2 (ρ = 0.1)'); '' without ties."""
    sets: dict[str, dict] = {}
    for (i, j), m in np.ndenumerate(b["best"]):
        if m and b["tie"][i, j] and not b["too_short"][i, j]:
            sets.setdefault(b["tied"][i, j], {}).setdefault(int(Rv[i]), []).append(f"{rho[j]:g}")
    if not sets:
        return ""
    parts = []
    for names, cells in sets.items():
        where = listing([f"R = {R} (ρ = {listing(r)})" for R, r in cells.items()])
        parts.append(f"{listing(names.split('·'))} at {where}")
    return "Tied methods: " + "; ".join(parts) + "."


#: method T in the maps' legends: "T (bound)", apart from the sojourn time (round 15: both read "T")
TAIL_BOUND = f"{TAIL} (bound, the conservative tail chain)"


#: the "∅ A*" badge at the top of a best-map cell where a candidate did not run: the same box in the legend
BADGE_BOX = {"facecolor": "w", "edgecolor": "0.3", "lw": 0.6, "pad": 0.8}


class _Badge:
    """A legend handle drawn as the best map's "∅ A*" badge (:class:`_BadgeHandler`)."""

    def __init__(self, text):
        self.text = text
        _register_badge()  # here, not at import: importing this module imports no matplotlib (core/present/mpl.py)


class _BadgeHandler:
    """Draws a :class:`_Badge` in a legend: its text in its box, as in the cells."""

    def legend_artist(self, legend, orig_handle, fontsize, handlebox):
        from matplotlib.text import Text

        x0, y0 = handlebox.xdescent, handlebox.ydescent
        t = Text(x0 + handlebox.width / 2, y0 + handlebox.height / 2, orig_handle.text, ha="center", va="center",
                 fontsize=fontsize, color="0.1", bbox=BADGE_BOX)
        t.set_transform(handlebox.get_transform())
        handlebox.add_artist(t)
        return t


def _register_badge():
    from matplotlib.legend import Legend

    Legend.update_default_handler_map({_Badge: _BadgeHandler()})


#: the frame of a best-map cell judged against the simulation (exact did not run there): a dark inner border
SIM_FRAME = {"edgecolor": "0.1", "lw": 2.4, "ls": (0, (3, 1.5)), "inset": 0.05}


def _absent(cmp, cand, service) -> np.ndarray:
    """(R, ρ, candidate) bool: the candidates that did not run there (skip_reason): no
    competitor, so the cell's winner did not beat them."""
    if "not_run" not in cmp:
        return np.zeros((cmp.sizes["R"], cmp.sizes["rho"], len(cand)), bool)
    nr = cmp["not_run"].sel(approximation=cand)
    if "service" in nr.dims:
        nr = nr.sel(service=service)
    return nr.transpose("R", "rho", "approximation").values != 0


def _absent_marks(ax, cmp, b, service, small) -> tuple[np.ndarray, list]:
    """"∅ A*" at the top edge of each cell of the best-method map where a candidate did not run (never under the
    winner's name, moved down there). Returns ((R, ρ) bool: such a cell with a winner, the candidates named)."""
    absent = _absent(cmp, b["candidates"], service)
    gone = absent.any(-1) & (b["best"] != "")
    for i, j in zip(*np.nonzero(gone), strict=True):  # the badge alone marks the cell (one encoding)
        ax.text(j, i + 0.36, "∅ " + "·".join(m for m, a in zip(b["candidates"], absent[i, j], strict=True) if a),
                ha="center", va="top", fontsize=8.5 if small else 5, color="0.1", zorder=7,
                bbox=BADGE_BOX)
    return gone, [m for k, m in enumerate(b["candidates"]) if absent[..., k][gone].any()]


def _starred_meaning(label: str) -> str:
    """A legend label with what a starred method is (round 30: "A*" was nowhere defined in the figure):
    'A* = B* = D* = E*' → 'A* = B* = D* = E*: the paper's A, B, D, E, corrected'; other labels as they are."""
    names = [n.strip() for n in label.split("=")]
    if not all(n.endswith("*") for n in names):
        return label
    return f"{label}: the paper's {', '.join(n.rstrip('*') for n in names)}, corrected"


def _best_cell_texts(ax, b, gone, alone) -> None:
    """The best-method map's cell words: a clear winner's name in bold; a tie's "tie (k)" (the k names are in the
    caption); moved down under a ∅ badge (a candidate did not run); dark on a winner drawn lighter (``alone``)."""
    best, tie, too_short = b["best"], b["tie"], b["too_short"]
    for (i, j), m in np.ndenumerate(best):
        if not m or too_short[i, j]:
            continue
        y = i - (0.17 if gone[i, j] else 0.0)
        if tie[i, j]:
            ax.text(j, y, _tie_text(b["tied"][i, j].split("·")), ha="center", va="center", fontsize=9.5,
                    color="0.25", style="italic", zorder=6)
        else:
            dark = np.mean(_lighter(method_color(m)) if alone[i, j] else _rgb(method_color(m))) < 0.55
            ax.text(j, y, m, ha="center", va="center", fontsize=11, color="w" if dark else "k",
                    fontweight="bold", zorder=6)


def best_method_map(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Which method is closest to the truth per (R, ρ) cell by W (:func:`best_by_reference`): a clear winner in its
    colour, a tie in light grey with every tied method named, a cell without a reference grey with the
    reference-too-short mark; the cells set against the simulation (exact did not run) hatched; "∅ A*" on a cell
    where a candidate did not run (skip_reason): the winner there is the closest of those that ran."""
    from matplotlib.patches import Patch

    c = cmp.sel(service=service)
    b = best_by_reference(cmp, service)
    _, joined = _groups(cmp)
    best, tie, too_short = b["best"], b["tie"], b["too_short"]
    rho, Rv = c["rho"].values, c["R"].values
    winners = [m for m in b["candidates"] if ((best == m) & ~tie).any()]
    alone = uncontested(cmp, b, service)
    rgb = np.ones(best.shape + (3,))
    for (i, j), m in np.ndenumerate(best):
        if too_short[i, j]:
            rgb[i, j] = _rgb(TOO_SHORT_CELL)
        elif m and tie[i, j]:
            rgb[i, j] = _rgb("0.93")
        elif m:  # lighter where a rival did not run (round 26: a solid C* there read as a clear win)
            rgb[i, j] = _lighter(method_color(m)) if alone[i, j] else _rgb(method_color(m))
    vs_sim = (b["reference"] == REF_SIMULATION) & (best != "")
    small = best.size <= 150
    w = min(11.5, max(6.5, 0.8 * len(rho) + 2.4)) if small else 11.0
    fig, ax = plt.subplots(figsize=(w, 0.72 * len(Rv) + 1.6) if small else (w, 0.3 * len(Rv) + 2.0))
    _cell_map(ax, rgb, rho, Rv)
    gone, out = _absent_marks(ax, cmp, b, service, small)
    if small:
        _best_cell_texts(ax, b, gone, alone)
    mark_cells(ax, too_short, REFERENCE_TOO_SHORT.key)
    fr = SIM_FRAME["inset"]
    for i, j in zip(*np.nonzero(vs_sim), strict=True):  # a dark dashed inner border: judged against the simulation
        ax.add_patch(plt.Rectangle((j - 0.5 + fr, i - 0.5 + fr), 1 - 2 * fr, 1 - 2 * fr, fill=False, zorder=6.5,
                                   **{k: v for k, v in SIM_FRAME.items() if k != "inset"}))
    handles = [Patch(color=method_color(m)) for m in winners]
    labels = [(f"{TAIL} (bound): its tail lies above the truth by construction" if m == TAIL else
               _starred_meaning(_label(m, joined)))
              + (" (clear winner" + (" by W)" if m == TAIL else ")") if ((best == m) & ~tie & ~alone).any()
                 else " (only where a rival did not run: lighter)") for m in winners]
    if tie.any():
        handles.append(Patch(facecolor="0.93", edgecolor="0.6"))
        labels.append("tie (k): no clear winner, k methods within the CI of the closest (against exact: within "
                      f"{b['w_tie']:g} {TIME_UNIT}; the caption names them)")
    if vs_sim.any():
        handles.append(Patch(facecolor="w", edgecolor=SIM_FRAME["edgecolor"], lw=SIM_FRAME["lw"] * 0.7,
                             ls=SIM_FRAME["ls"]))
        labels.append("dashed dark border: judged against the simulation (exact did not run there); elsewhere "
                      "against exact")
    if gone.any():
        handles.append(_Badge("∅ " + "·".join(out)))  # drawn as in the cells (round 15: a large bold ∅)
        labels.append(f"at a cell's top: {listing(out)} did not run there ({skip_reason()}) —\nthe name is the "
                      "closest of the methods that ran, not one that beat it: drawn lighter, not counted as a clear "
                      "winner")
    if too_short.any():
        sh, sl = status_handles([REFERENCE_TOO_SHORT.key])
        handles += sh
        labels += sl
    fig.tight_layout()
    _legend_below(fig, handles, labels, ncol=1, fontsize=8)
    n = int((best != "").sum())
    clear, lone = (_win_counts(b, mask) for mask in (~alone, alone))
    lead = listing([f"{m} at {clear[m]}" for m in clear]) or "none"
    n_tie = int(tie[best != ""].sum())
    note = [w + "." for w in _exact_row_words(b, Rv)]  # who lies on exact, from the ties (round 15: "all tie")
    n_gone = int(gone.sum())
    note += [f"∅: a method did not run at {n_gone} cell{'s' if n_gone != 1 else ''}."] if n_gone else []
    apart = (" Lighter, a rival did not run: " + listing([f"{m} at {lone[m]}" for m in lone]) + ".") if lone else ""
    # the finding first (the clear winners, as the caption counts them), short separate clauses under it
    fig.suptitle(f"Closest sojourn-time CDF by Wasserstein distance ({service} service)\n"
                 f"Clear winner: {lead} of {n} cells.{apart} Tie: {n_tie} cell{'s' if n_tie != 1 else ''}."
                 + ("\n" + " ".join(note) if note else ""), fontsize=10, y=1.0, va="bottom")
    return common.save(fig, stem, caption=_best_map_caption(cmp, b, service), **kw)


def uncontested(cmp, b, service) -> np.ndarray:
    """(R, ρ) bool: the best-method map's cells with a single closest method (no tie) where a rival candidate did
    not run: the closest of those that ran, no clear win (drawn lighter, counted apart)."""
    gone = _absent(cmp, b["candidates"], service).any(-1)
    return gone & (b["best"] != "") & ~b["tie"] & ~b["too_short"]


def _win_counts(b, mask) -> dict:
    """{method: cells} of the single closest methods (no tie) within ``mask``, most first (then candidate order)."""
    best, tie, cand = b["best"], b["tie"], b["candidates"]
    k = {m: int(((best == m) & ~tie & mask).sum()) for m in cand}
    return {m: k[m] for m in sorted((m for m in cand if k[m]), key=lambda m: (-k[m], cand.index(m)))}


#: the share of white in a winner's colour drawn lighter (a rival did not run there)
_LIGHTER = 0.6


def _lighter(color) -> np.ndarray:
    """``color`` mixed with white (_LIGHTER), as RGB."""
    return (1 - _LIGHTER) * np.asarray(_rgb(color)) + _LIGHTER


def _best_map_caption(cmp, b, service) -> Caption:
    best, tie, too_short = b["best"], b["tie"], b["too_short"]
    cand = b["candidates"]
    _, joined = _groups(cmp)
    Wr, tie_q, has = _best_queries(cmp, cand, b["w_tie"])
    sel = {"service": service}
    findings, limits = [], []
    n = int((best != "").sum())
    alone = uncontested(cmp, b, service)
    clear, lone = (_win_counts(b, mask) for mask in (~alone, alone))
    if n:
        words = listing([f"{m} in {clear[m]}" for m in clear]) if clear else "none"
        winner = f"where({tie_q}, '', {Wr}.idxmin('approximation'))"
        not_run = (f"(not_run.sel(approximation={Q.names(cand)}).max('approximation') != 0)" if "not_run" in cmp
                   else "(R != R)")
        findings.append(Claim(f"Clear winners: {words} of the {n} cells with a reference.", clear,
                              Q.query(winner, (("unique", None),), f"({has}) & ~{not_run}", sel)))
        if lone:
            findings.append(Claim("Closest of the methods that ran where a rival did not run (∅; drawn lighter, not a "
                                  "clear winner): " + listing([f"{m} in {lone[m]}" for m in lone]) + ".", lone,
                                  Q.query(winner, (("unique", None),), f"({has}) & {not_run}", sel)))
        k = int(tie[best != ""].sum())
        findings.append(Q.k_of_n(f"No method is clearly closest at {k} of {n} cells (a tie, \"tie (k)\": k methods "
                                 "within the CI of the closest, or against exact within "
                                 f"{b['w_tie']:g} {TIME_UNIT}).", k, n, tie_q, has, sel))
        Rv = cmp["R"].values
        rows = _exact_rows(b, Rv)
        if rows:
            flags = {str(int(R)): int(R) in rows for R in Rv}
            on = "; ".join(w.split(": ", 1)[1].removesuffix(", so no clear winner") + f" at R = {R}"
                           for R, w in zip(rows, _exact_row_words(b, Rv), strict=True))
            findings.append(Claim(f"At R = {listing(rows)} every cell is such a tie, the closest within {b['w_tie']:g} "
                                  f"{TIME_UNIT} of exact ({on}; the others tied at some loads only: \"Tied methods\" "
                                  "below), so no method can win.", flags,
                                  Q.query(f"({Wr}.min('approximation') <= {b['w_tie']!r}) & {tie_q}",
                                          (("all", ["rho"]),), None, sel)))
        k_sim = int(((b["reference"] == REF_SIMULATION) & (best != "")).sum())
        findings.append(Q.k_of_n(f"{k_sim} of the {n} cells are judged against the simulation (a dashed dark border: "
                                 "exact did not run there); the rest against exact.", k_sim, n,
                                 "~(usable.sel(approximation='exact') != 0)" if Q.has_exact(cmp) else "(R == R)", has,
                                 sel))
        absent = _absent(cmp, cand, service)
        gone = absent.any(-1) & (best != "")
        if gone.any():
            out = [m for k_, m in enumerate(cand) if absent[..., k_][gone].any()]
            findings.append(Q.k_of_n(
                f"At {int(gone.sum())} of the {n} cells {listing(out)} did not run ({skip_reason()}; "
                "∅ at the cell's top): no competitor there, so the method named is the closest of those that "
                "ran, not one that beat it.", int(gone.sum()), n,
                f"(not_run.sel(approximation={Q.names(cand)}).max('approximation') != 0)", has, sel))
    if too_short.any():
        k = int(too_short.sum())
        limits.append(Claim(f"{_cells_text(k).capitalize()} without exact and with a simulation the run-length guard "
                            "judged too short have no reference (grey, ◇).", k,
                            Q.query(f"~({has}) & (sim_run_valid == 0)", (("count", None),), None, sel)))
    groups = "; ".join(f"{k} stands for {v}" for k, v in joined.items())
    ties = _tie_sentence(b, cmp["rho"].values, cmp["R"].values)  # read off b, as the cells' "tie (k)"
    return Caption(
        f"Each (R, ρ) cell names the method whose sojourn-time CDF is closest to the truth by Wasserstein distance "
        f"({service} service): to exact's CDF where exact ran, else to the simulated CDF (cells with a dashed dark "
        "border); exact itself is the reference and no candidate.", findings, limits,
        [ties, "A–F: the paper's methods; " + (f"identical methods count once ({groups})." if groups else
                                                 "each method counts once."),
         ("A clear winner is drawn in its colour; a light grey cell \"tie (k)\" is a tie of k methods within reach "
          "(named under \"Tied methods\" above): "
         "against the simulation, another method's 95% CI of W reaches the winner's; against exact, another method "
         f"is within {b['w_tie']:g} {TIME_UNIT} (a tenth of the grid step). A method whose CDF is not a CDF is never "
         "a candidate. W weighs the body of the distribution; for the tail, see the recommendation and percentile "
         f"figures. Where {TAIL} wins by W, its tail still lies above the truth by construction (safe, not exact).")])


def recommended_map(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """The headline: per percentile, the method to use over (R, ρ) — exact where it ran, else T where the comparison
    found it never below exact, else the most accurate method that does not underestimate the percentile beyond its
    CI; "simulate" where none qualifies, split by why (no method qualifies, or the reference too short to judge)."""
    from ..compare import SIMULATE, STATUS_RUN_TOO_SHORT, STATUS_TOO_FEW

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
    fig.suptitle(f"Method to use per tail percentile ({service} service)\n{_recommended_answer(rec, beyond)}",
                 fontsize=10.5, y=1.0, va="bottom")
    return common.save(fig, stem, caption=_recommended_caption(cmp, service, rec, short & ~beyond, none, beyond), **kw)


def _recommended_answer(rec, beyond) -> str:
    """The recommended map's answer, counted from ``rec`` as the caption counts it (round 15: the title was a
    question): 'exact at 110 of 140 points, T where exact is over budget (20), none at 10 (▶)'."""
    from ..compare import SIMULATE

    counts = {m: int((rec == m).sum()) for m in sorted(set(rec.ravel().tolist())) if m}
    n = sum(counts.values())
    parts = []
    for m in sorted((m for m in counts if m != SIMULATE), key=lambda m: (m != "exact", -counts[m])):
        if m == TAIL and "exact" in counts:
            parts.append(f"{TAIL} where exact is over budget ({counts[m]})")
        else:
            parts.append(f"{m} at {counts[m]}" + ("" if parts else f" of {n} points"))
    if SIMULATE in counts:
        at = rec == SIMULATE
        parts.append(f"none at {counts[SIMULATE]}" + (" (▶)" if beyond[at].all() else " (simulate)"))
    return ", ".join(parts)


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

    from ..compare import SIMULATE

    handles = [Patch(color=method_color(m)) for m in names]
    words = {"exact": "exact: where it ran (" + (_budget_words(cmp) or "within its budget") + ")\nand its percentile "
             "lies on the time grid (same colours as the CDF figures)"}
    if TAIL in names and "exact" in cmp["approximation"].values.tolist():  # T's margin over exact where both ran
        d = c["percentile_error_vs_exact"].sel(approximation=TAIL).values
        xe = c["approx_percentile"].sel(approximation="exact").values
        ok = np.isfinite(d) & np.isfinite(xe) & (xe > 0)
        hi = float((d[ok] / xe[ok]).max()) if ok.any() else float("nan")
        n_below = int((d[ok] < -float(cmp.attrs.get("time_step", 0.01)) * (1 + 1e-6)).sum())
        words[TAIL] = (f"{TAIL_BOUND}: where exact is over budget; "
                       + ("never below exact" if n_below == 0 else f"below exact at {n_below} points")
                       + f",\nat most {_pct(hi, 2, signed=False)} above it where both ran" if np.isfinite(hi) else
                       f"{TAIL_BOUND}: where exact is over budget")
    labels = [words.get(m, TAIL_BOUND if m == TAIL else m) for m in names]
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
                      + (";\nno method has it and the simulation is too short" if (rec[beyond] == SIMULATE).all()
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
    from ..compare import SIMULATE

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
                                + (f" (t_max = {tm:g})" if np.isfinite(tm) else "") + ", so it cannot give it (▶): "
                                + listing([f"{m} at {got[m]}" if m != SIMULATE else f"no method at {got[m]} (simulate "
                                           "longer, or rerun exact with a larger t_max)" for m in got]) + " instead.",
                                [kb, got], [Q.query(ex, (("count", None),), None, sel),
                                            Q.query("recommended", (("unique", None),), ex, sel)]))
    if short.any():
        from ..compare import STATUS_RUN_TOO_SHORT, STATUS_TOO_FEW

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
         "where its reference is too short nothing else can be recommended."
          + (f" Exact truncates its state space: {_exact_truncation_words(cmp).removeprefix('; ')} over the cells "
             "where it ran." if _exact_truncation_words(cmp) else ""))])


def _simulate_words(rec, beyond) -> str:
    """What the recommended map's legend says at its points without a method, in the caption's words."""
    from ..compare import SIMULATE

    at = rec == SIMULATE
    if beyond is not None and at.any() and beyond[at].all():
        return "simulate longer, or rerun exact with a larger t_max: ▶"
    return "simulate" + (", or rerun exact with a larger t_max where ▶" if beyond is not None and (beyond & at).any()
                         else "")


def _status(name: str) -> int:
    from .. import compare

    return int(getattr(compare, name))
