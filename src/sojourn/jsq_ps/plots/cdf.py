"""One cell's distribution: the CDF body, the tail and the tail ratio of every method against the reference."""
from __future__ import annotations

import numpy as np
import xarray as xr

from ...core.estimates.stats import TAIL_MIN, cdf_at_left_edges
from ...core.present.claims import Caption, Claim, half_unit, listing, sig_tol
from ...core.present.figures import (
    METHOD_MARKERS,
    TIME_UNIT,
    method_color,
)
from ...core.present.mpl import mticker, plt  # imported on first use (core/present/mpl.py)
from .. import claims as Q
from ..compare import (
    REF_EXACT,
    fit_validity,
    reference_usable,
    w_against_reference,
)
from ..solve.tail import FLOOR as _T_FLOOR
from . import common  # save, looked up when called: tests replace common.save
from .common import (
    _EXACT_COLOR,
    _FAITHFUL_COLOR,
    EXPONENTIAL,
    FAITHFUL,
    TAIL,
    TAIL_LABEL,
    TIME_UNITS,
    W_FLOOR,
    Series,
    _balanced_ncol,
    _g,
    _legend_below,
    _pct,
    skip_reason,
    tail_series,
)


# =========================================================================== one cell's distribution
def _cdf_style(sr, c) -> dict:
    """A method line's width, alpha and layer in the CDF figures, the same in every panel: one width for all, except
    a line that a later one covers (``c.under``, :func:`_under`; its legend entry says "under …"): wide and faint
    underneath (solid: a wide dashed line would break up), so both show where they coincide; also its line style."""
    mark = {"marker": METHOD_MARKERS[sr.method], "ms": 4.5, "markevery": (0.03 * (FAITHFUL.index(sr.method) + 1), 0.12),
            "mfc": "w", "mew": 1.1} if sr.method in FAITHFUL else {}  # B, C, D apart where hues are close
    if sr.method in getattr(c, "under", ()):
        return {"ls": "-", "lw": 5.0, "alpha": 0.45, "zorder": 2, "solid_capstyle": "butt", **mark}
    corrected = sr.method.endswith("*")  # the corrected chains: heavier than A–F, so that they stand out
    return {"ls": sr.style, "lw": 2.3 if corrected else 1.5, "alpha": 1.0, "zorder": 4 if corrected else 3, **mark}


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
    c.x2 = x2 = _tail_end(c, cmp)
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
    c.steep = _steep_points(c, body, x1)  # T's start below 0, named in its legend entry (round 15)
    h, lab = _cdf_tail(ax2, c, n2, x2, {sr.method: _cdf_label(c, sr, covered) for sr in c.lines})
    _deep_mark(ax2, c, survival=True)
    if c.use_exact:
        c.ratio_end = _cdf_ratio(axes[2], c, n2, x2)
        _deep_mark(axes[2], c)
    for ax in axes:
        ax.set_xlabel(f"t ({TIME_UNITS}); S: the sojourn time", fontsize=9.5)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    shown = [m for sr in c.lines for m in sr.members]
    hidden = [m for m in c.methods if c.ok[m] and m not in shown]
    not_run = [m for m in c.methods if not c.ran[m]]
    from matplotlib.lines import Line2D

    for names, words in ((hidden, "computed, farther by W: not drawn"), (c.omitted, "not a CDF here: not drawn"),
                         (not_run, "not run here")):
        if names:
            h.append(Line2D([], [], ls="none"))
            lab.append(f"{listing(names)}: {words}")
    k = _balanced_ncol(len(lab), choices=(4, 3))  # no wider than the panels (five columns shrank the PNG)
    _legend_below(fig, _row_major(h, k), _row_major(lab, k), ncol=k, fontsize=9.5)
    cap = _cdf_caption(cmp, c, R, float(rho), service, x1, hidden, not_run)
    if steep := _steep_start(c, body, x1):
        cap.how.append(steep)
    head = _cdf_findings(cmp, c.w_ref, R, float(rho), service, c.faithful)[0] if cmp is not None else []
    k = next((i for i, h in enumerate(head) if h.startswith("corrected")), len(head))
    head = "\n".join("; ".join(part) for part in (head[:k], head[k:]) if part)  # A–F, then the corrected chains
    fig.suptitle(f"Sojourn-time distribution at R = {R}, ρ = {float(rho):.2f} ({service} service)"
                 + (f"\n{head}" if head else ""), fontsize=10.5, y=1.0, va="bottom")
    return common.save(fig, stem, caption=cap, **kw)


def _row_major(items, ncol) -> list:
    """``items`` reordered so that a legend of ``ncol`` columns (matplotlib fills column by column, the first columns
    one longer) reads them row by row, left to right (round 15: the six-column legend did not read in line order)."""
    n = len(items)
    rows = -(-n // ncol) if n else 0
    full = n - (rows - 1) * ncol  # the columns with an entry in the last row
    return [items[i * ncol + j] for j in range(ncol) for i in range(rows if j < full else rows - 1)]


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


#: the reference's deepest named percentile on the tail panels (round 20's reader: the title names the 99.999th, the
#: panels had no mark of it): a dotted line at its t (and at its level on the survival panel), a tick above the panel
_DEEP_LINE = {"color": "0.25", "ls": ":", "lw": 1.2, "zorder": 1.5}


def _deep_words(c) -> str:
    """The deepest named percentile of the reference, as its tick says it: "exact's 99.999th pct"."""
    return f"{'exact' if c.use_exact else 'simulation'}'s {100 * c.p_deep:g}th pct"


def _deep_mark(ax, c, survival=False) -> bool:
    """The reference's deepest named percentile (``c.q_deep``) on a tail panel: a dotted vertical line at its t, on
    the survival panel (``survival``) a dotted horizontal one at its level P(S > t) = 1 − p, and a tick above the
    panel naming it with its t. Returns whether drawn (not where the percentile lies beyond the panel's end)."""
    q = c.q_deep
    lo, hi = ax.get_xlim()
    if not (np.isfinite(q) and lo < q <= hi):
        return False
    ax.axvline(q, **_DEEP_LINE, gid="deep_percentile")
    if survival:
        ax.axhline(1.0 - c.p_deep, **_DEEP_LINE, gid="deep_level")
    top = ax.secondary_xaxis("top")
    top.set_xticks([q], [f"{_deep_words(c)}: t = {q:.3g}"])
    top.tick_params(labelsize=8.5, length=4, pad=1.5)
    top.set_gid("deep_tick")
    return True


def _tail_end(c, cmp) -> float:
    """The tail panels' end: 1.1 × the deepest percentile the figure names (the comparison's deepest, else the
    99.999th) of the simulation and of the reference (exact where it ran: the title's percentages are measured
    against its percentile, round 16), at least 5 grid steps, at most the stored grid's end. Sets ``c.p_deep``,
    ``c.q_deep`` (the reference's percentile, nan if the grid ends before it) for the caption."""
    c.p_deep = float(cmp["percentile"].max()) / 100 if cmp is not None else 0.99999
    reached = bool(np.isfinite(c.F_ref).any() and (c.F_ref > c.p_deep).any())
    c.q_deep = _first_above(c.t, c.F_ref, c.p_deep) if reached else float("nan")
    far = max(c.q(c.p_deep), c.q_deep if reached else float(c.t[-1]))
    return min(max(1.1 * far, 5 * float(c.t[1])), float(c.t[-1]))


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


#: method T in the CDF figures' legends, apart from the sojourn time S (round 15: both read "T")
TAIL_BOUND = TAIL_LABEL

#: the body's method curves are smoothed over this share of the drawn points: their CDFs are stored with 12
#: significant bits (sojourn.jsq_ps.storage), whose rounding (≤ 1.2e-4) would show as steps at a ±0.005 scale
_SMOOTH_SHARE = 1 / 150


def _smooth(y, n):
    """A centred moving average over :data:`_SMOOTH_SHARE` of ``n`` points whose half-width shrinks to the distance
    from either end, so the first and last points are kept as they are (a CDF difference stays exactly 0 at t = 0:
    a fixed window padded at the edge would average the curve's first steps into t = 0)."""
    half = max(1, int(n * _SMOOTH_SHARE)) // 2
    y = np.asarray(y, float)
    if half < 1 or not np.isfinite(y).all() or y.size < 3:
        return y
    i = np.arange(y.size)
    h = np.minimum(half, np.minimum(i, y.size - 1 - i))
    cum = np.concatenate([[0.0], np.cumsum(y)])
    return (cum[i + h + 1] - cum[i - h]) / (2 * h + 1)


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
    ax.set_ylabel(f"P(S ≤ t) − {ref} P(S ≤ t)", fontsize=9.5)
    ax.set_title(f"body: each CDF minus {ref}'s\n(> 0: optimistic; area to 0 = W)", fontsize=10)


#: a body curve "starts steeply" where it reaches half its largest |value| within this share of the body window
_STEEP_SHARE = 0.005


def _steep_points(c, body, x1) -> dict:
    """{method: (value, t)} of the body curves that leave 0 within :data:`_STEEP_SHARE` of the window (at least half
    their largest |value| there): the value they reach there and when."""
    t = c.t[:len(next(iter(body.values())))]
    near = t <= _STEEP_SHARE * x1
    out = {}
    for sr in (sr for sr in c.lines if sr.method != "exact" and sr.method not in c.same):
        y = np.nan_to_num(body[sr.method])
        top = np.abs(y).max(initial=0.0)
        k = np.nonzero(near & (np.abs(y) >= 0.5 * top))[0] if top > 0 else []
        if len(k):
            j = int(k[np.argmax(np.abs(y[k]))])
            out[sr.method] = (float(y[j]), float(t[j]))
    return out


def _steep_start(c, body, x1) -> str:
    """The caption's note on body curves that leave 0 within :data:`_STEEP_SHARE` of the window (every curve is 0 at
    t = 0, but at the panel's scale such a curve seems to start away from 0): which, how far, by when; '' if none."""
    out, steep = [], _steep_points(c, body, x1)
    for sr in c.lines:
        if sr.method in steep:
            y, tj = steep[sr.method]
            out.append(f"{sr.label} reaches {y:+.2g} by t = {tj:.2g}"
                       + (f" (by design: T's survival carries a relative margin of {_T_FLOOR:g} above its best "
                          f"estimate, so its CDF lies about {_T_FLOOR:g}·P(S > t) below, most right after 0)"
                          if sr.method == TAIL else ""))
    if not out:
        return ""
    return ("Every curve is 0 at t = 0; " + listing(out) + ": a difference of the CDFs right after 0, in the stored "
            "values, not an edge effect of the smoothing (which keeps t = 0 as it is).")


def _body_range(c, body) -> tuple[float, float, float]:
    """The body panel's data range (lo, hi) over the separately drawn lines, and its padding."""
    vals = [body[sr.method] for sr in c.lines if sr.method != "exact" and sr.method not in c.same]
    lo = min(float(np.nanmin(v, initial=0.0)) for v in vals)
    hi = max(float(np.nanmax(v, initial=0.0)) for v in vals)
    return lo, hi, 0.12 * max(hi - lo, 2e-3)


#: the pooled simulation's colour in the CDF figures (near black: the methods, not it, carry the colours)
_SIM_GREY = "0.2"


#: the ratio panel draws the simulation's CI band only where it lies within this factor of the simulated ratio
#: (round 15: a band from ×0.3 to ×1.7 was the panel's most prominent object), lighter than in the tail panel
_RATIO_CI_WITHIN = 2.0
_BAND_ALPHA = {"tail": 0.45, "ratio": 0.25}


def _sim_tail(ax, c, t, y, ci=None, where=None, alpha=_BAND_ALPHA["tail"]) -> list:
    """The pooled simulation where it is a reference (at least TAIL_MIN customers per replication beyond t; nothing
    beyond): a near-black line with open circles (visible on top of exact) and its 95 % CI band (only where
    ``where`` holds, if given); the handles."""
    good = c.reliable[:len(t)]
    out = [ax.plot(t, np.where(good, y, np.nan), color=_SIM_GREY, lw=1.0, marker="o", ms=3.2, mfc="white",
                   mew=0.8, markevery=0.045, zorder=6)[0]]
    if ci is not None and c.k > 1:
        band = good & (True if where is None else where)
        lo, hi = (np.where(band, v, np.nan) for v in ci)
        out.append(ax.fill_between(t, lo, hi, color="0.45", alpha=alpha, lw=0, zorder=1))
    return out


def _ratio_band(sim, ci) -> np.ndarray:
    """Where the ratio panel draws the simulation's CI band: within ×:data:`_RATIO_CI_WITHIN` of the ratio on both
    sides."""
    with np.errstate(invalid="ignore"):
        return (sim - ci >= sim / _RATIO_CI_WITHIN) & (sim + ci <= sim * _RATIO_CI_WITHIN)


def _cdf_tail(ax, c, n2, x2, labels) -> tuple[list, list]:
    """The tail panel: P(S > t) on a log scale, exact wide and light underneath (with the lines drawn as one with it —
    T dash-dot on it — under one legend entry that names them: one pink swatch, one entry), the other methods on top,
    the pooled simulation with its 95 % CI where it is a reference (:func:`_sim_tail`). Returns the legend's
    (handles, labels)."""
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
        if wide and not c.same:
            handles.append(ln)
            names.append(labels[sr.method])
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
    ax.set_ylabel("P(S > t)", fontsize=9.5)
    ax.set_title(f"tail: P(S > t)\n(the simulation is a reference up to t ≈ {c.t_end:.3g})", fontsize=10)
    return handles, names


#: the ratio panel's y-range: at most this factor either side of 1 (symmetric in log: :func:`_ratio_range`)
_RATIO_SPAN = 30.0


def _ratio_range(series) -> tuple[float, float]:
    """The ratio panel's y-range, symmetric in log around 1 (as far below as above: conservative and optimistic get
    the same room): the largest factor away from 1 over the finite positive values of ``series``, at most
    :data:`_RATIO_SPAN`, at least 1.25, with a margin."""
    vals = np.concatenate([np.asarray(r, float).ravel() for r in series] + [np.ones(1)])
    vals = vals[np.isfinite(vals) & (vals > 0)]
    span = min(float(np.exp(np.abs(np.log(vals)).max())), _RATIO_SPAN)
    span = max(span * 1.25, 1.25)
    return 1.0 / span, span


def _cdf_ratio(ax, c, n2, x2) -> float:
    """The tail-ratio panel (exact is the reference): each separately drawn method's P(S > t) over exact's, on a log
    scale, where exact's survival is at least 1e-6; the simulation's (with its CI) where it is a reference. Lines
    that are near-identical in the tail panel come apart here. Returns the panel's drawn end."""
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
    inside = _ratio_band(sim, ci)
    _sim_tail(ax, c, t, sim, (np.clip(sim - ci, 1e-9, None), sim + ci), where=inside, alpha=_BAND_ALPHA["ratio"])
    good = c.reliable[:n2] & (c.k > 1) & inside
    band = [v[good] for v in (sim - ci, sim + ci)]  # the simulation's CI band where drawn: never cut
    lo, hi = _ratio_range(list(ratio.values()) + band)
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    fine = (0.8, 1.25) if hi / lo < 4 else ()
    ticks = [v for v in (0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30) + fine if lo <= v <= hi]
    ax.set_yticks(ticks, [f"{v:g}" for v in ticks])
    ax.yaxis.set_minor_formatter(mticker.NullFormatter())
    end = float(t[keep][-1]) if keep.any() else x2
    ax.set_xlim(0, end)
    on = [x.method for x in c.lines if x.method in c.same and x.method != TAIL]  # drawn as one with exact
    every = len(on) == len([x for x in c.lines if x.method.endswith("*")])
    exact_name = "exact" + ((" = corrected chains" if every else " = " + listing(on)) if on else "")
    _end_labels(ax, [(exact_name, _EXACT_COLOR, np.where(keep, 1.0, np.nan))]
                + [(sr.method, sr.color, r) for sr, r in ratio.items()], lo, hi)
    ax.set_ylabel("P(S > t) / exact's", fontsize=9.5)
    ax.set_title("tail ratio to exact: above 1 = conservative\n(a ratio of probabilities, not of percentiles)",
                 fontsize=10)
    return end


#: the colour of a ratio end label shared by several lines ("D ≈ E ≈ F"): neutral, not the first line's (round 15)
_MERGED_LABEL = "0.3"


#: lines share one end label only when their ratios (clipped to the panel) stay within this factor of each other over
#: the whole drawn range, not only at the end (round 16: "D ≈ E ≈ F" hid D at ×20 where E and F were at ×30)
_ALIKE = 1.06


#: blank space after an end label: the saved image's tight box holds it (a text box's padding it does not), so the
#: label keeps a margin from the image's right edge (round 26: "exact = corrected chains ≈ T" touched it)
END_LABEL_PAD = "\u2002\u2002"


def _end_labels(ax, ratio, lo, hi) -> None:
    """Each ratio line's name at its right end, outside the panel, in its colour (``ratio``: (name, colour, ratio)
    per line); lines whose ratios, as drawn (clipped to the panel), stay within :data:`_ALIKE` of each other over the
    whole range share one label ("A* ≈ C*"). A line that has left the panel through the top or bottom before its end
    gets an arrow (↑/↓) and its label sits at that edge, the earlier exit outermost; labels are pushed apart to stay
    legible and inside the panel's height."""
    ends = []
    for name, color, r in ratio:
        ok = np.nonzero(np.isfinite(r) & (r > 0))[0]
        if ok.size:
            drawn = np.log(np.clip(np.where(np.isfinite(r) & (r > 0), r, np.nan), lo, hi))
            inside = np.nonzero((r[ok] >= lo) & (r[ok] <= hi))[0]
            last_in = int(ok[inside[-1]]) if inside.size else -1
            out = "" if last_in == ok[-1] else ("↑" if r[ok[-1]] > hi else "↓")
            # sort: by the end; at the top edge the earlier exit higher, at the bottom the earlier exit lower
            order = -last_in if out == "↑" else last_in if out == "↓" else 0
            ends.append((float(drawn[ok[-1]]), order, name, color, drawn, out))
    ends.sort(key=lambda e: e[:3])
    groups: list[list] = []
    for e in ends:
        g = groups[-1][0] if groups else None
        with np.errstate(invalid="ignore"):
            alike = g is not None and e[5] == g[5] and np.nanmax(np.abs(e[4] - g[4]), initial=0.0) <= np.log(_ALIKE)
        if alike:
            groups[-1].append(e)
        else:
            groups.append([e])
    gap = 0.075 * np.log(hi / lo)  # one label's height in log units
    ys: list[float] = []
    for g in groups:
        y = float(np.mean([e[0] for e in g]))
        ys.append(max(y, ys[-1] + gap) if ys else y)
    for k in range(len(ys) - 1, -1, -1):  # back inside the top, keeping the gaps
        ys[k] = min(ys[k], np.log(hi) if k == len(ys) - 1 else ys[k + 1] - gap)
    for g, y in zip(groups, ys, strict=True):
        ax.annotate(" ≈ ".join(e[2] for e in g) + (f" {g[0][5]}" if g[0][5] else "") + END_LABEL_PAD,
                    xy=(1.0, float(np.exp(y))),
                    xycoords=("axes fraction", "data"), xytext=(4, 0), textcoords="offset points", ha="left",
                    va="center", fontsize=9, fontweight="bold", color=g[0][3] if len(g) == 1 else _MERGED_LABEL,
                    annotation_clip=False, gid="end_label")


def _cdf_label(c, sr, covered) -> str:
    """A line's legend entry: its name and its W (in mean service times) against the reference and, if another line
    covers it, which; exact's entry names the lines drawn as one with it (:func:`_on_exact`)."""
    if sr.method == "exact" and c.same:
        chains = [x for x in c.lines if x.method.endswith("*")]
        named = [x for x in c.lines if x.method in c.same]
        words = ("corrected chains" if chains and all(x.method in c.same for x in chains)
                 else " and ".join(x.label for x in named if x.method != TAIL))
        words = " + ".join(w for w in (words, TAIL if TAIL in c.same else "") if w)
        return f"exact (the reference) = {words}: {_w_words(c, c.same)}"
    text = TAIL_BOUND if sr.method == TAIL else sr.label
    w = _w_words(c, [sr.method])
    if w and not (sr.method == "exact" and c.use_exact):
        text += f": {w}"
    if sr.method == TAIL and TAIL in getattr(c, "steep", {}):
        text += f" ({c.steep[TAIL][0]:+.1g} near t = 0: margin by design)"
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
    limits += [f"Not run here ({skip_reason()}): {listing(not_run)}."] if not_run else []
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
           ("Second panel: the tail P(S > t) on a log scale, exact wide and light under the others, the pooled "
           f"simulation (open circles) with its 95 % CI over the replications (grey band) where at least {TAIL_MIN} "
           f"customers per replication lie beyond t; it ends there (no reference beyond). {_tail_reach_words(c)}")]
    if c.use_exact:
        how.append("Third panel: each line's P(S > t) divided by exact's, on a log scale (1 = exact, below 1 = "
                   f"optimistic), where exact's P(S > t) is at least 1e-6 ({_ratio_end_words(c)}): tails that "
                   "look alike in the second panel "
                   f"come apart there; the y-range is at most ×{_RATIO_SPAN:g} either side of 1, a tail that drops "
                   "to 0 leaves through the bottom (an arrow ↑/↓ after a line's name at the right: it left through "
                   "that edge). It is a ratio of probabilities at the same t, not of "
                   "percentiles (far out in the tail a small shift of a percentile is a large factor in "
                   "probability). The simulation's 95 % CI band is drawn there, lighter, only where it lies within "
                   f"×{_RATIO_CI_WITHIN:g} of the simulated ratio on both sides.")
    if same:
        how.append(f"Drawn as one with exact (within {_SAME_CDF:g} of its CDF at every t and {_SAME_DECADES:g} "
                   f"decades of its survival down to 1e-6): {listing(same)}.")
    chains = [sr for sr in c.lines if sr.method.endswith("*") and sr.method not in c.same]
    wide = [sr.label for sr in chains if sr.method in c.under]
    dashed = "dashed, one dash pattern each" + (
        f"; {listing(wide)}, covered by a line on top, wide, light and solid underneath instead" if wide else "")
    how.append("Drawn: the three of A–F closest to the reference by W, each distinct corrected chain "
               f"({dashed if chains else 'each drawn as one with exact'}), exact where it ran and T (dash-dot: the "
               "conservative tail chain, whose survival lies on or above the true one, so its body curve lies on or "
               "below 0). \"under X\": a line that X, drawn on top, covers (in the panel named, else in both). A "
               "paper method whose tail drops to 0 ends where its truncated state space runs out (a property of the "
               "method).")
    return Caption(f"Simulated against approximated distribution of the sojourn time S of one cell, R = {R}, "
                   f"ρ = {rho:.2f} "
                   f"({service} service; cells chosen in the config, figures.cdf_cells).", findings, limits, how)


def _tail_reach_words(c) -> str:
    """Where the tail panels end and why (computed): 1.1 × the reference's deepest named percentile, or the stored
    grid's end when that percentile lies beyond it (round 16: the axis stopped short of exact's 99.999th)."""
    ref = "exact's" if c.use_exact else "the simulation's"
    pct = f"{100 * c.p_deep:g}th percentile"
    if np.isfinite(c.q_deep) and c.x2 >= c.q_deep:
        why = (f"1.1 × the later of {ref} and the simulation's {pct}" if c.x2 < float(c.t[-1])
               else "the stored grid's end")
        return (f"The tail panels run to t = {c.x2:.4g} ({why}), past {ref} {pct} (t = {c.q_deep:.4g}), the "
                "deepest percentile the figure names: a dotted line and a tick above each tail panel mark it (on the "
                f"survival panel a dotted line at its level P(S > t) = {1 - c.p_deep:.2g} too).")
    sf = 1.0 - c.F_ref[np.nonzero(c.t <= c.x2)[0][-1]]
    return (f"The tail panels run to t = {c.x2:.4g}, the stored grid's end: {ref} {pct}, the deepest the figure "
            f"names, lies beyond it ({ref} P(S > t) there is {sf:.2g}).")


def _ratio_end_words(c) -> str:
    """The ratio panel's drawn end and exact's survival there (computed)."""
    i = int(np.nonzero(c.t <= c.ratio_end)[0][-1])
    sf = 1.0 - c.F_ref[i]
    why = "where it falls to 1e-6" if c.ratio_end < c.x2 else "the tail panels' end"
    return f"drawn to t = {c.ratio_end:.4g}, {why}; exact's P(S > t) there: {sf:.2g}"


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
