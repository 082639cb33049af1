"""The Wasserstein-distance figure: each method's distance to the reference CDF against the load."""
from __future__ import annotations

import re

import numpy as np
import xarray as xr

from ...core.present.claims import Caption, Claim, listing, sig_tol
from ...core.present.figures import (
    METHOD_MARKERS,
    REFERENCE_TOO_SHORT,
    TIME_UNIT,
    log_ticks,
    status_strip,
)
from ...core.present.mpl import plt  # imported on first use (core/present/mpl.py)
from .. import claims as Q
from ..compare import (
    REF_EXACT,
    REF_SIMULATION,
    exact_usable,
    run_usable,
    w_against_reference,
)
from ..solve.tail import FLOOR as _T_FLOOR
from . import common  # save, looked up when called: tests replace common.save
from .common import (
    EXPONENTIAL,
    FAITHFUL,
    FAMILY_COLOR_WORDS,
    FAMILY_COLORS,
    NOISE_FILL,
    NOISE_WORDS,
    RULE,
    TAIL,
    TAIL_LABEL,
    W_FLOOR,
    _g,
    _shown_note,
    _shown_R,
    series,
    skip_reason,
)
from .maps import best_by_reference

# =========================================================================== Wasserstein distance
#: the Wasserstein figure's three lines: the best of each family at each load (by W to the reference), and T; the
#: families in their shades of grey (common.FAMILY_COLORS), never a method's colour
_BEST_FAITHFUL = {"color": FAMILY_COLORS["faithful"], "lw": 3.0, "ls": "-", "marker": "o", "ms": 11,
                  "label": "best of A–F (the paper's methods)"}
_BEST_CORRECTED = {"color": FAMILY_COLORS["corrected"], "lw": 2.0, "ls": "--", "marker": "s",
                   "label": "best of A*–F* (corrected)"}
#: a W below the axis floor: a ▼ just above the bottom edge in its line's colour, the lines side by side (points apart)
_FLOOR_MARK = {"marker": "v", "ms": 9, "ls": "none", "mec": "k", "mew": 0.5}
#: how far the ▼'s centre sits above the bottom edge (points): the whole marker inside the axes, clear of the load
#: tick labels under it (round 21: the ▼s at R = 1 sat on the labels 0.1 and 0.3)
FLOOR_LIFT_PT = _FLOOR_MARK["ms"] / 2 + 2.5
#: the lines of a panel are drawn this far apart (points) at every load, each with its markers: A–F's marker (11 pt)
#: and the corrected one beside it touch at most, never cover one another where the W's coincide
DODGE_PT = 10.0


def _dodge_pt(n, count) -> float:
    """Line ``n`` of ``count``'s horizontal offset (points): centred on the load, :data:`DODGE_PT` apart."""
    return DODGE_PT * (n - (count - 1) / 2)


#: the type size (pt) of every word a reader must read in the Wasserstein figure
_LETTER_PT = 10.5
#: a marker whose hollow form reads as its filled one at print size (T's ✖: a thin white slit) → the marker drawn
#: against the simulation instead, a shape of its own (round 15)
_AGAINST_SIM_MARKER = {"X": "+"}
#: the load axis's label: the scale named (round 15: "load ρ" over a −log10(1 − ρ) axis)
LOAD_LABEL = "load ρ (scale −log10(1 − ρ))"


def _against_sim_style(style) -> dict:
    """The marker of a line's point set against the simulation: hollow (white inside its edge), or where the hollow
    form would not read (:data:`_AGAINST_SIM_MARKER`) a line marker of another shape, bold."""
    marker = style["marker"]
    if marker in _AGAINST_SIM_MARKER:
        return {"marker": _AGAINST_SIM_MARKER[marker], "ms": style.get("ms", 7) + 3, "mew": 2.4,
                "mec": style["color"]}
    return {"marker": marker, "ms": style.get("ms", 7), "mfc": "white", "mec": style["color"], "mew": 1.5}


def _load_forward(rho):
    """The load axis's scale: −log10(1 − ρ), so that 0.9, 0.95 and 0.99 stand as far apart as 0.1, 0.5 and 0.9
    (high load, where the methods part, gets the room)."""
    with np.errstate(all="ignore"):
        return -np.log10(1.0 - np.minimum(np.asarray(rho, float), 1.0 - 1e-9))


def _load_inverse(u):
    return 1.0 - 10.0 ** (-np.asarray(u, float))


def _load_axis(ax, ticks) -> None:
    """A load axis on the scale −log10(1 − ρ) (:func:`_load_forward`), ticked and labelled at the grid's loads
    ``ticks`` (horizontal), a margin either side."""
    ax.set_xscale("function", functions=(_load_forward, _load_inverse))
    ticks = np.asarray(ticks, float)
    if ticks.size:
        u = _load_forward(ticks)
        pad = 0.07 * max(float(u.max() - u.min()), 0.3)
        ax.set_xlim(float(_load_inverse(u.min() - pad)), float(_load_inverse(u.max() + pad)))
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_locator(plt.NullLocator())


def _w_series(cmp, d, i) -> list:
    """The lines of R index ``i``: (style, W per load, reference kind per load, status rows) — the best of A–F, the
    best of A*–F* (each the smallest W of its members at each load), and T; a family that did not run at a load
    (every member not run, or not a CDF) has a status there instead."""
    methods = cmp["approximation"].values.tolist()
    W, ref, status = d["W"].values[i], d["reference"].values[i], d["status"].values[i]
    out = []
    faith = [m for m in FAITHFUL if m in methods]
    corr = [m for m in methods if m.endswith("*")]
    fams = [(_BEST_FAITHFUL, faith, "A–F"), (_BEST_CORRECTED, corr, "A*–F*")]
    if TAIL in methods:
        sr = series(cmp, "corrected")[-1]
        fams.append(({"color": sr.color, "lw": sr.lw + 0.4, "ls": sr.style,
                      "marker": METHOD_MARKERS.get(TAIL, "o"), "label": TAIL_LABEL}, [TAIL], TAIL))
    for style, members, name in fams:
        if not members:
            continue
        idx = [methods.index(m) for m in members]
        sub = W[:, idx]
        fin = np.isfinite(sub)
        with np.errstate(all="ignore"):
            k = np.argmin(np.where(fin, sub, np.inf), axis=1)
        y = np.where(fin.any(1), sub[np.arange(len(k)), k], np.nan)
        rk = np.where(fin.any(1), ref[np.arange(len(k)), np.asarray(idx)[k]], 0)
        st = status[:, idx]
        marks = {key: ~fin.any(1) & (st == key).all(1) for key in ("not_run", "invalid")}
        out.append((style, y, rk, marks, name))
    return out


def wasserstein_vs_rho(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Wasserstein distance W to the best reference (exact where it ran, else the simulation) against ρ on a
    high-load-friendly axis (:func:`_load_axis`), one panel per R that ran (at most five): on the same axes the best
    of the paper's A–F at each load (bold grey), the best of the corrected A*–F* (black, dashed) and T, so that "the
    corrected methods are closer" is read inside each panel; filled markers against exact, hollow against the
    simulation, whose own noise is a grey area; a W below the floor a ▼ above the bottom edge; status marks in a strip
    above each panel (one labelled row per family). The legend fills the last slot."""
    c = cmp.sel(service=service)
    d = w_against_reference(cmp, service)
    all_R = c["R"].values
    Rv = _shown_R(all_R)
    ncol = 2 if len(Rv) > 1 else 1
    nrow = -(-(len(Rv) + 1) // ncol) if ncol == 2 else 2
    fig, axes = plt.subplots(nrow, ncol, figsize=(5.4 * ncol + 0.8, 3.3 * nrow + 1.3), sharex=True, sharey=True,
                             squeeze=False, gridspec_kw={"hspace": 0.55, "wspace": 0.2})
    flat = list(axes.ravel())
    kinds, floor_hit, noise_drawn, strips = set(), False, False, []
    for ax, R in zip(flat, Rv, strict=False):
        strip, hit, nz = _w_panel(ax, cmp, c, d, int(np.nonzero(all_R == R)[0][0]))
        floor_hit, noise_drawn = floor_hit or hit, noise_drawn or nz
        kinds |= strip.kinds
        strips.append((strip, R))
    reserve = max(len(s.rows) for s, _ in strips)
    for strip, R in strips:
        strip.finish(title=f"R = {R}", fontsize=_LETTER_PT + 0.5, reserve=reserve, label_size=9.5, row_pt=11)
    for ax in flat[: len(Rv)]:
        ax.tick_params(axis="both", labelsize=_LETTER_PT)
        ax.tick_params(axis="x", labelbottom=True, rotation=0)
        ax.set_xlabel(LOAD_LABEL, fontsize=_LETTER_PT)
    for row in axes:
        row[0].set_ylabel(f"W ({TIME_UNIT})", fontsize=_LETTER_PT)
    axes[0, 0].set_ylim(bottom=W_FLOOR, top=_w_top(cmp, d, [int(np.nonzero(all_R == R)[0][0]) for R in Rv]))
    log_ticks(axes[0, 0].yaxis)
    slot = flat[len(Rv)]
    for ax in flat[len(Rv):]:
        ax.set_axis_off()
    fig.subplots_adjust(left=0.09, right=0.97, top=1 - 1.0 / fig.get_figheight(), bottom=0.6 / fig.get_figheight())
    h, lab = _w_legend(cmp, noise_drawn, kinds, floor_hit, service)
    from matplotlib.legend_handler import HandlerTuple

    slot.legend(h, lab, loc="center", frameon=False, fontsize=_LETTER_PT, handlelength=2.6, borderaxespad=0.0,
                handler_map={tuple: HandlerTuple(ndivide=None, pad=0.6)})  # a key of two glyphs side by side
    cap = _wasserstein_caption(cmp, d, service, Rv, all_R, noise_drawn, kinds, floor_hit)
    # the title's finding is the caption's (the same claim, from the same data)
    lead = next((getattr(c, "text", "") for c in cap.findings
                 if getattr(c, "text", "").startswith("The closest corrected method")), "")
    lead = re.sub(r" \(\d+ within .*\)\.$", ".", lead)  # the title keeps the counts, the caption says why
    fig.suptitle((f"{lead.removesuffix('.')} ({service} service)\n" if lead else
                  f"How far each method's sojourn-time distribution is from the truth ({service} service)\n")
                 + f"W to exact where it ran (filled markers), else to the simulation (hollow{_open_words(cmp)}): "
                   "lower = closer",
                 y=1 - 0.15 / fig.get_figheight(), va="top", fontsize=_LETTER_PT + 1)
    return common.save(fig, stem, caption=cap, **kw)


def _w_top(cmp, d, rows) -> float | None:
    """The W axis's top: half a decade above the largest W drawn in the panels of R indices ``rows`` (the lines are
    drawn shifted in points, :func:`_dodge_pt`, which matplotlib's autoscaling does not follow); None: automatic."""
    ys = [y[np.isfinite(y) & (y >= W_FLOOR)] for i in rows for _, y, *_ in _w_series(cmp, d, i)]
    ys = np.concatenate(ys) if ys else np.array([])
    return float(ys.max()) * 10 ** 0.25 if ys.size else None


def _open_words(cmp) -> str:
    """'; method T: +' for each drawn line whose point against the simulation is not hollow
    (:data:`_AGAINST_SIM_MARKER`)."""
    tail = METHOD_MARKERS.get(TAIL)
    return f"; method {TAIL}: {_AGAINST_SIM_MARKER[tail]}" if tail in _AGAINST_SIM_MARKER and TAIL in cmp[
        "approximation"].values.tolist() else ""


def _w_panel(ax, cmp, c, d, i):
    """One panel of the Wasserstein figure (R index ``i``) on the load axis (:func:`_load_axis`): the three lines of
    :func:`_w_series` (filled markers against exact, hollow against the simulation; broken where W drops below
    :data:`W_FLOOR`, a ▼ in its colour just above the bottom edge there), the simulation's noise as a grey area where a
    line is set against it, the status marks in the panel's strip (not finished). Returns (the strip, whether a ▼ is
    drawn, whether the noise is drawn)."""
    from matplotlib.transforms import offset_copy

    rho = c["rho"].values
    xp = np.asarray(rho, dtype=float)
    strip = status_strip(ax)
    vs_sim = np.zeros(len(rho), bool)
    lines = _w_series(cmp, d, i)
    floor_hit = False
    for n, (style, y, rk, status_marks, name) in enumerate(lines):
        ok = np.isfinite(y)
        above = ok & (y >= W_FLOOR)
        vs_sim |= ok & (rk == REF_SIMULATION)
        kw = {k: style[k] for k in ("color", "lw", "ls")}
        # each line side by side at every load (never on one another where the W's coincide: round 20's reader)
        at = offset_copy(ax.transData, fig=ax.figure, x=_dodge_pt(n, len(lines)), units="points")
        if above.any():
            ax.plot(xp[ok], np.where(above, y, np.nan)[ok], **kw, zorder=3 + n, transform=at)
            marks = {REF_EXACT: {"marker": style["marker"], "ms": style.get("ms", 7), "mfc": style["color"],
                                 "mec": style["color"], "mew": 1.5}, REF_SIMULATION: _against_sim_style(style)}
            for rkind, mk in marks.items():
                sel = above & (rk == rkind)
                ax.plot(xp[sel], y[sel], **mk, color=style["color"], ls="none", zorder=4 + n, gid=f"{name}:{rkind}",
                        transform=at)
        below = ok & ~above
        if below.any():  # just above the bottom edge, the lines side by side (never on one another)
            up = offset_copy(ax.transData, fig=ax.figure, x=_dodge_pt(n, len(lines)), y=FLOOR_LIFT_PT, units="points")
            ax.plot(xp[below], np.full(int(below.sum()), W_FLOOR), transform=up, color=style["color"],
                    **_FLOOR_MARK, clip_on=False, zorder=6)
            floor_hit = True
        for key, mask in status_marks.items():
            strip.mark(name, xp, mask, key, style["color"], name)
    noise_drawn = _w_noise(ax, cmp, c, i, xp, vs_sim)
    status = d["status"].values[i]
    drawn_cols = [k for k, m in enumerate(c["approximation"].values.tolist()) if m != "exact"]
    # ◇ where a method lacks a reference and no line has a value (a line drawn there would contradict the mark)
    valueless = ~np.any([np.isfinite(y) for _, y, *_ in lines], axis=0)
    strip.mark("reference", xp, valueless & (status[:, drawn_cols] == "too_short").any(1), REFERENCE_TOO_SHORT.key,
               "0.3", "all")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    _load_axis(ax, xp)
    return strip, floor_hit, noise_drawn


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
    x = np.minimum(np.repeat(x, 2) + np.tile([-0.02, 0.02], x.size), 0.999) if x.size == 1 else x
    ax.fill_between(x, W_FLOOR, np.interp(x, xp[sel], noise[sel]), color=NOISE_FILL, edgecolor="0.7", lw=0.6,
                    zorder=1)
    return True


def _w_legend(cmp, noise_drawn, kinds=(), floor_hit=False, service=None):
    """The Wasserstein figure's legend: the three lines, the noise area, and every symbol drawn — the strip's marks
    (``kinds``: ×, ∅, ◇; the strip row's family named at its right end) and the ▼ above the bottom edge where a W lies
    below the floor (``floor_hit``); T's margin note from ``service``'s cells (default: the first service)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from ...core.present.figures import status_handles

    d = w_against_reference(cmp, service if service is not None else cmp["service"].values[0])
    h, lab = [], []
    for style, *_ in _w_series(cmp, d, 0):
        h.append(Line2D([], [], ls=style["ls"], color=style["color"], lw=style["lw"], marker=style["marker"],
                        ms=style.get("ms", 7), mfc=style["color"]))
        note = _t_margin_words(d) if style["label"] == TAIL_LABEL else ""
        lab.append(style["label"] + (f"\n({note})" if note else ""))
    hollow = Line2D([], [], ls="none", **_against_sim_style({"marker": "o", "color": "0.3"}))
    open_ = [st for st, *_ in _w_series(cmp, d, 0) if st["marker"] in _AGAINST_SIM_MARKER]
    if open_:  # the line marker a hollow form is replaced with, beside the hollow circle, named
        h.append((hollow, *(Line2D([], [], ls="none", color=st["color"], **_against_sim_style(st)) for st in open_)))
        names = ", ".join(f"{'method ' + TAIL if st['label'] == TAIL_LABEL else st['label']}: "
                          f"{_AGAINST_SIM_MARKER[st['marker']]}" for st in open_)
        lab.append(f"hollow ({names}): against the simulation\n(exact did not run)")
    else:
        h.append(hollow)
        lab.append("hollow: against the simulation\n(exact did not run)")
    if noise_drawn:
        h.append(Patch(facecolor=NOISE_FILL, edgecolor="0.7", lw=0.6))
        lab.append("grey area: the simulation's own noise\n(no method can look closer)")
    sh, sl = status_handles(kinds)
    h += sh
    lab += [f"strip mark: {t.removeprefix('∅: ')}" for t in sl]
    if floor_hit:
        h.append(Line2D([], [], color="0.4", **_FLOOR_MARK))
        lab.append(f"▼ just above the bottom edge: W < {W_FLOOR:g}\n(against exact; in the line's colour)")
    return h, lab


#: T's W counts as "at its margin" within this factor of FLOOR (T's survival carries a relative margin of FLOOR above
#: its best estimate, so against exact its W is about FLOOR·E[S], E[S] ≥ 1 mean service time: at low load all of it)
_T_MARGIN_WITHIN = 1.1


def _t_at_margin(d) -> tuple[int, int]:
    """(k, n): of the n cells where T is set against exact, how many have a W within :data:`_T_MARGIN_WITHIN` of
    T's built-in margin FLOOR (round 16: T's flat W ≈ 0.01 at low load read as a weak fit)."""
    if TAIL not in d["approximation"].values.tolist():
        return 0, 0
    t = d.sel(approximation=TAIL)
    on = (t["reference"].values == REF_EXACT) & np.isfinite(t["W"].values)
    w = t["W"].values[on]
    return int(((w >= _T_FLOOR / _T_MARGIN_WITHIN) & (w <= _T_FLOOR * _T_MARGIN_WITHIN)).sum()), int(on.sum())


def _t_margin_words(d) -> str:
    """The legend's note on T's W at its margin, or '' where no cell is at it."""
    k, n = _t_at_margin(d)
    return f"W ≈ {_T_FLOOR:g} at {k} of {n} cells: its built-in margin, not a weak fit" if k else ""


def _t_margin_caption(d) -> str:
    """The caption's sentence on T's margin: its relative size and the cells where T's W is at it (computed)."""
    k, n = _t_at_margin(d)
    if not n:
        return ""
    return (f" T's survival carries a relative margin of {_T_FLOOR:g} above its best estimate, so against exact its W "
            f"is about {_T_FLOOR:g}·E[S] by design (E[S] ≥ 1 in {TIME_UNIT}); at {k} of the {n} cells where T is set "
            f"against exact its W lies within ×{_T_MARGIN_WITHIN:g} of {_T_FLOOR:g}: the margin, not a weak fit.")


def _best_of(W, methods, members):
    idx = [methods.index(m) for m in members if m in methods]
    if not idx:
        return np.full(W.shape[:2], np.nan)
    sub = W[:, :, idx]
    with np.errstate(all="ignore"):
        return np.where(np.isfinite(sub).any(-1), np.nanmin(np.where(np.isfinite(sub), sub, np.inf), -1), np.nan)


def _w_tie(cmp) -> float:
    """The distance's resolution against exact, as the best-method map takes it (a tenth of the grid step)."""
    return float(cmp.attrs.get("time_step", 0.01)) / 10


def family_verdict(cmp, service=EXPONENTIAL):
    """Per (R, ρ): (corrected clearly closer, tied, A–F clearly closer, the closest method's reference kind)
    between the closest of A–F and the closest corrected method (A*–F* or T), by the best-method map's own tie rule
    (:func:`best_by_reference`): the families tie where the methods within reach of the closest include both."""
    b = best_by_reference(cmp, service)
    has = b["best"] != ""
    fam = np.vectorize(lambda names: {n in FAITHFUL for n in names.split("·") if n}, otypes=[object])(b["tied"])
    tied = has & np.vectorize(lambda f: len(f) == 2, otypes=[bool])(fam)
    best_faith = np.vectorize(lambda n: n in FAITHFUL, otypes=[bool])(b["best"])
    return has & ~tied & ~best_faith, tied, has & ~tied & best_faith, b["reference"]


def _closer_query(cmp, faith, corr) -> str:
    """The expression of :func:`family_verdict`'s "corrected clearly closer": the closest corrected method is the
    closer, and no method of A–F reaches it (against exact: within :func:`_w_tie`; against the simulation: its 95%
    CI of W reaches the closest corrected method's)."""
    t = _w_tie(cmp)
    ex, w = Q.exact_ok_w(cmp), Q.w_ref(cmp)
    lo = (f"where({ex}, wasserstein_vs_exact - {t!r}, where({Q.RUN_OK}, where(isfinite(wasserstein_ci_low), "
          "wasserstein_ci_low, wasserstein_mean), nan))")
    hi = (f"where({ex}, wasserstein_vs_exact, where({Q.RUN_OK}, where(isfinite(wasserstein_ci_high), "
          "wasserstein_ci_high, wasserstein_mean), nan))")
    wc = f"({w}).sel(approximation={Q.names(corr)})"
    wf = f"({w}).sel(approximation={Q.names(faith)})"
    hi_best = f"where({wc} == {wc}.min('approximation'), ({hi}).sel(approximation={Q.names(corr)}), nan)"
    return (f"({wc}.min('approximation') < {wf}.min('approximation')) & "
            f"(({lo}).sel(approximation={Q.names(faith)}).min('approximation') > {hi_best}.max('approximation'))")


def _wasserstein_caption(cmp, d, service, Rv, all_R, noise_drawn=False, kinds=(), floor_hit=True) -> Caption:
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
            closer, tied, _, rk = family_verdict(cmp, service)
            k, n, m = int(closer[both].sum()), int(both.sum()), int(tied[both].sum())
            ex_m = int((tied & both & (rk == REF_EXACT)).sum())
            ef = f"({w}).sel(approximation={Q.names(faith)}).min('approximation')"
            ec = f"({w}).sel(approximation={Q.names(corr)}).min('approximation')"
            where = f"isfinite({ef}) & isfinite({ec})"
            why = listing(([f"{ex_m} within {_w_tie(cmp):g} {TIME_UNIT} of each other against exact"] if ex_m else [])
                          + ([f"{m - ex_m} within the simulation's noise"] if m - ex_m else []))
            findings.append(Q.k_of_n(f"The closest corrected method (A*–F* or T) is closer than the closest of A–F at "
                                     f"{k} of {n} cells" + (f"; {m} tied ({why}: the best-method map's rule)"
                                                              if m else "") + ".",
                                     k, n, _closer_query(cmp, faith, corr), where, sel))
            ratio = float(np.median(bf[both] / bc[both]))
            findings.append(Claim(f"Over all {n} cells the closest of A–F is a median {_g(ratio)} times farther from "
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
                               "too short: there a method without exact has no reference"
                               + (" (◇)." if REFERENCE_TOO_SHORT.key in set(kinds) else "."), int(short.sum()),
                               int(short.size), "sim_run_valid == 0", "isfinite(sim_run_valid)", sel))
    if len(Rv) < len(all_R):
        limits.append(f"Panels show {_shown_note(Rv, all_R)} (every R is in comparison.nc).")
    return Caption(
        f"Wasserstein distance W = dt·Σ|F_ref − F_method| (paper eq. 27; in {TIME_UNIT}) between a method's sojourn-"
        "time CDF and its reference, against the load ρ, one panel per number of servers R; on the same axes the best "
        f"of the paper's A–F at each load (bold {FAMILY_COLOR_WORDS['faithful']} line), the best of the corrected "
        f"A*–F* ({FAMILY_COLOR_WORDS['corrected']}, dashed) and T (dash-dot). Which of A–F is the best at each cell "
        "is the best-method map's subject.",
        findings, limits,
        [("The reference is exact's CDF where exact ran (filled markers, no noise), else the simulated CDF (hollow"
         + _open_words(cmp).replace(": ", " a bold ") + "; the mean W over replications)."
         + (f" {NOISE_WORDS[0].upper()}{NOISE_WORDS[1:]} from the bottom edge up to the simulation's own noise, "
            "at the loads where a method is set against the simulation (sim_noise_wasserstein, estimated from the "
            "replications alone): such a method cannot come closer than about this, even if it were exact."
            if noise_drawn else "")
         + (f" Below W = {W_FLOOR:g} against exact a line breaks off; a ▼ in its colour just above the bottom edge "
            "marks the load." if floor_hit else "")
         + " The load axis is drawn on the scale −log10(1 − ρ) (so labelled; high loads, where the methods part, get "
         "the room), ticked at the grid's loads. The lines stand side by side, " f"{DODGE_PT:g} points apart at every "
         "load (the load is the tick under the middle line), so that markers of equal W never cover one another."
         + (" The strip above a panel marks loads where a whole family has no value, one row per family: "
            + ", ".join(w for k, w in (("not_run", f"∅ not run ({skip_reason()})"), ("invalid", "× not a CDF"),
                                        (REFERENCE_TOO_SHORT.key, f"◇ reference too short ({RULE})"))
                        if k in set(kinds)) + "." if set(kinds) else "")
         + " T lies above the truth in survival by construction (within its stated margin), so its W is no "
         "measure of its tail: see the percentile figures." + _t_margin_caption(d))])
