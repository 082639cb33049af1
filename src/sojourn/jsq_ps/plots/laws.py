"""The M/G/R figure: how far each service law's sojourn time is from the exponential case, and the methods."""
from __future__ import annotations

import numpy as np
import xarray as xr

from ...core.estimates.stats import TAIL_MIN
from ...core.present.claims import Caption, Claim, listing, sig_tol
from ...core.present.figures import (
    REFERENCE_TOO_SHORT,
    TIME_UNIT,
    log_ticks,
    status_handles,
    status_strip,
)
from ...core.present.mpl import plt  # imported on first use (core/present/mpl.py)
from .. import claims as Q
from ..compare import (
    run_usable,
)
from . import common  # save, looked up when called: tests replace common.save
from .common import EXPONENTIAL, TAIL, _g, _legend_below, _message_panel

# =========================================================================== M/G/R laws
_BAND_GREY = "0.84"  # the ±5 % band of the M/G/R figure's error row
#: the system the M/G/R figures compare each law with, in their words: the JSQ-PS farm with exponential service
#: (M/M/R-JSQ-PS; round 17: a bare "M/M/R" reads as the central-queue M/M/c)
EXPO_SYSTEM = "JSQ-PS with exponential service"


def _pm(x, digits=0) -> str:
    """A signed number as printed ('+8', '−1' is the caller's minus), and a value that rounds to zero as '0' (never
    '−0' or '+0': round 15 read '−0' as a typo)."""
    s = f"{x:+.{digits}f}"
    return f"{0:.{digits}f}" if float(s) == 0 else s


def _scv_of(laws) -> dict:
    """{law name: its SCV} of the config's M/G/R law strings (rescaled to one mean, the SCV is unchanged)."""
    from ...core.laws.distributions import parse_law

    out = {}
    for spec in laws or ():
        try:
            law = parse_law(spec)
        except ValueError:
            continue
        out[law.name] = float(law.scv)
    return out


def _laws_by_scv(cmp, laws) -> list:
    """The comparison's non-exponential laws in order of their SCV (``laws``: the config's law strings; a law
    without one last, in the data's order): the M/G/R figures place and colour them so, the same in both, so that
    the distance reads against the SCV (round 15: deterministic, lognormal, uniform was SCV 0, 0.62, 0.33)."""
    scv = _scv_of(laws)
    services = [s for s in cmp["service"].values.tolist() if s != EXPONENTIAL]
    return sorted(services, key=lambda s: (s not in scv, scv.get(s, 0.0)))


def mgr_laws_distance(cmp: xr.Dataset, stem, laws=None, **kw):
    """M/G/R, first question: how far each service law's sojourn time is from that of JSQ-PS with exponential service
    at the same mean service time. One panel per R that ran, the loads as categories (:func:`_mgr_distance_row`): per
    law (colour) the Wasserstein distance of its simulation to the exponential simulation, the simulations' own noise
    shaded grey. The title states each law's median distance (the caption's claim). ``laws``: the config's law
    strings (their SCV in the legend; the laws in order of it)."""
    services = _laws_by_scv(cmp, laws)
    vs = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    have = np.isfinite(vs.values).any(axis=(0, 2))
    Rv = cmp["R"].values[have] if have.any() else cmp["R"].values
    fig, axes = plt.subplots(1, len(Rv), figsize=(3.4 * len(Rv) + 1.2, 5.0), squeeze=False, sharey=True)
    axes = list(axes[0])
    cmap = plt.get_cmap("tab10")
    kinds, noise_drawn = _mgr_distance_row(axes, cmp, services, Rv, cmap)
    handles, labels = _mgr_legend(services, _scv_of(laws), cmap, noise_drawn, marker=("o", _LAW_MS))  # as drawn
    sh, sl = status_handles(kinds)
    fig.subplots_adjust(left=0.1, right=0.98, top=0.8, bottom=0.33, wspace=0.12)
    _legend_below(fig, handles + sh, labels + sl, ncol=2, fontsize=10, y=0.17)
    cap = _mgr_distance_caption(cmp, services, kinds, by_scv=set(services) <= set(_scv_of(laws)))
    med = _law_medians(cmp, services)
    scv = _scv_of(laws)  # each law's SCV in the title too (round 17: a lognormal of SCV 0.62 < 1 is unusual)
    head = ("median W: " + ", ".join(f"{s}{f' (SCV {scv[s]:.2g})' if s in scv else ''} {_g(v)}"
                                     for s, v in sorted(med.items(), key=lambda kv: -kv[1]))
            if med else "no law has a usable simulation")
    fig.suptitle(f"How far each service law's sojourn time is from that of {EXPO_SYSTEM}, same mean service "
                 f"time\n{head} {TIME_UNIT if med else ''}".rstrip(), y=0.98, va="top", fontsize=11.5)
    return common.save(fig, stem, caption=cap, **kw)


def mgr_laws_percentile(cmp: xr.Dataset, stem, laws=None, **kw):
    """M/G/R, second question: how wrong the exponential model's tail percentile is for each law, and how close
    a method that takes the law itself comes. One panel, one category per (law, cell) point with a value
    (:func:`_law_cells_panel`): the percentile error against the law's simulation of method T for exponential service
    (✕) beside each law method's (``law_method``, hollow markers), with 95 % CIs and the means printed above them; the
    title states both ranges (the caption's claims). Without law methods, or without a point with a value, the figure
    says so instead. ``laws``: the config's law strings (their SCV in the legend; the laws in order of it)."""
    services = _laws_by_scv(cmp, laws)
    vs = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    have = np.isfinite(vs.values).any(axis=(0, 2))
    Rv = cmp["R"].values[have] if have.any() else cmp["R"].values
    law_rows = "law_relative_error_mean" in cmp and cmp.sizes.get("law_method", 0) > 0
    full = [R for R in Rv if _law_row_has_values(cmp, services, R)] if law_rows else []
    empty = [R for R in Rv if R not in full]
    cmap = plt.get_cmap("tab10")
    n_pts = _law_point_count(cmp, services, full) if full else 0
    fig, ax = plt.subplots(figsize=(max(7.5, 1.25 * n_pts + 2.5), 5.6))
    if not full:
        _message_panel(ax, "no method that takes the service law itself ran in this comparison" if not law_rows else
                       f"no (law, cell) point has a {_law_row_percentile(cmp):g}th-percentile error:\n"
                       + _empty_law_row_note(cmp, services, empty))
        return common.save(fig, stem, caption=_mgr_percentile_caption(cmp, services, law_rows, set(), empty), **kw)
    handles, labels, kinds, missing = _law_cells_panel(ax, cmp, services, full, cmap)
    lh, ll = _mgr_legend(services, _scv_of(laws), cmap, False, band=True)
    fig.subplots_adjust(left=0.11, right=0.98, top=0.84, bottom=0.36)
    _legend_below(fig, handles + lh, labels + ll, ncol=2, fontsize=10, y=0.2)
    note = _missing_note(cmp, services, empty, missing)
    if note:
        fig.text(0.5, 0.015, note, ha="center", va="bottom", fontsize=9.5, color="0.25")
    fig.suptitle(_mgr_headline(cmp, services, full if empty else ()), y=0.98, va="top", fontsize=11.5)
    return common.save(fig, stem, caption=_mgr_percentile_caption(cmp, services, law_rows, kinds, empty), **kw)


def _law_medians(cmp, services) -> dict:
    """{law: median W of its simulation to the exponential one over the cells whose run is usable}."""
    run_ok = run_usable(cmp)
    med = {}
    for s in services:
        v = cmp["wasserstein_vs_exponential_sim"].sel(service=s).where(run_ok.sel(service=s)).values
        v = v[np.isfinite(v)]
        if v.size:
            med[s] = float(np.median(v))
    return med


def _law_point_count(cmp, services, Rv) -> int:
    q = _law_row_percentile(cmp)
    n = 0
    for R in Rv:
        for s in services:
            v = _law_row_series(cmp, s, R, q)
            n += int(np.any([np.isfinite(x[0]) for x in v.values()], axis=0).sum())
    return n


def _missing_note(cmp, services, empty, missing) -> str:
    """One line under the error figure: where the simulation is too short to give the percentile."""
    q = _law_row_percentile(cmp)
    parts = []
    if empty:
        parts.append(f"R = {listing([f'{float(r):g}' for r in empty])}: every cell")
    if missing:
        parts.append(listing([f"R = {R}, ρ = {r:g}" for R, r in missing]))
    return (f"No {q:g}th-percentile value (reference too short: fewer than {TAIL_MIN} customers per replication "
            f"beyond it) at {'; '.join(parts)}" if parts else "")


#: the M/G/R distance figure's markers (pt)
_LAW_MS = 9.0


def _law_dodge(services) -> dict:
    """{law: its markers' x offset} on the categorical load axis (one unit per load): the laws side by side inside
    their load's category, a quarter of it apart, so that markers of equal W do not hide one another and no marker
    leaves its load's category."""
    step = 0.25
    return {s: step * (k - (len(services) - 1) / 2) for k, s in enumerate(services)}


def _load_slots(cmp, services) -> np.ndarray:
    """The loads of the M/G/R distance figure's categorical axis: those where some law's simulation has a distance."""
    vs = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    have = np.isfinite(vs.values).any(axis=(0, 1))
    return cmp["rho"].values[have] if have.any() else cmp["rho"].values


def _mgr_distance_row(axes, cmp, services, Rv, cmap):
    """The M/G/R distance figure's panels, one per R (a shared log y trimmed to the data): per law (colour, the laws
    side by side around each load) the W of its simulation to the exponential simulation (not joined: the load axis is
    categorical), each load's noise shaded over its whole slot. Returns (the status kinds drawn, whether the noise
    is drawn)."""
    rho, run_ok = cmp["rho"].values, run_usable(cmp)
    vs = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    dodge = _law_dodge(services)
    slots = _load_slots(cmp, services)
    pos = np.array([int(np.argmin(np.abs(slots - r))) if np.isclose(slots, r).any() else -10 for r in rho], float)
    kinds, noise_fill, drawn = set(), [], []
    for ax, R in zip(axes, Rv, strict=True):
        strip = status_strip(ax)
        for k, svc in enumerate(services):
            ok_run = run_ok.sel(service=svc, R=R).values
            y = np.where(ok_run, vs.sel(service=svc, R=R).values, np.nan)
            ok = np.isfinite(y)
            if ok.any():
                ax.plot(pos[ok] + dodge[svc], y[ok], "o", color=cmap(k), ms=_LAW_MS, zorder=4)
            drawn.append(y[ok])
            simulated = np.isfinite(vs.sel(service=svc, R=R).values)
            strip.mark(svc, rho, simulated & ~ok_run, REFERENCE_TOO_SHORT.key, cmap(k))
        noise = _mgr_noise(cmp, R, services)
        okn = np.isfinite(noise) & np.isfinite(vs.sel(R=R).values).any(0)
        if okn.any():  # shaded below (once the limits are set): a W there is no difference this run can tell
            noise_fill.append((ax, pos[okn], noise[okn]))
        kinds |= strip.kinds
        ax.set_xlabel("load ρ", fontsize=10.5)
        ax.set_yscale("log")
        ax.grid(alpha=0.3, axis="y")
        ax.tick_params(labelsize=10)
        ax.set_xlim(-0.5, slots.size - 0.5)
        ax.set_xticks(range(slots.size), [f"{r:g}" for r in slots])
        for b in range(1, slots.size):
            ax.axvline(b - 0.5, color="0.75", lw=0.8, zorder=1)
        strip.finish(title=f"R = {R}", fontsize=11)
    axes[0].set_ylabel(f"Wasserstein distance W to exponential\nservice ({TIME_UNIT}; higher = farther)",
                       fontsize=10.5)
    vals = np.concatenate(drawn) if drawn else np.array([])
    vals = vals[np.isfinite(vals) & (vals > 0)]
    lo, hi = (vals.min() / 1.5, vals.max() * 1.5) if vals.size else axes[0].get_ylim()
    axes[0].set_ylim(lo, hi)  # trimmed to the markers: the noise below the axis is no difference to show
    log_ticks(axes[0].yaxis, minor_labels=np.log10(hi / lo) < 2.5)
    seen = False
    for ax, x, y in noise_fill:
        if (y > lo).any():
            ax.set_autoscale_on(False)
            for xi, yi in zip(x, y, strict=True):  # each load's noise across its whole category slot
                if yi > lo:
                    ax.fill_between([xi - 0.5, xi + 0.5], lo, min(yi, hi), color="0.87", lw=0, zorder=0)
                    ax.hlines(yi, xi - 0.5, xi + 0.5, colors="0.45", linestyles=":", lw=1.4, zorder=1)
            seen = True
    return kinds, seen


def _mgr_noise(cmp, R, services):
    """The distance's noise at R per ρ (the largest over the laws): two pooled CDFs of K replications each,
    about sqrt(n_law² + n_exp²)/sqrt(K) (n: one replication's noise); NaN without sim_noise_wasserstein."""
    if "sim_noise_wasserstein" not in cmp:
        return np.full(cmp.sizes["rho"], np.nan)
    nz = cmp["sim_noise_wasserstein"].sel(R=R)
    k_rep = max(1, cmp.sizes.get("replication", 1))
    return (np.sqrt(nz.sel(service=services) ** 2 + nz.sel(service=EXPONENTIAL) ** 2).max("service").values
            / np.sqrt(k_rep))


def _mgr_headline(cmp, services, only=()) -> str:
    """The M/G/R figure's main finding, for its title: the range of the exponential model's T's mean percentile error
    against the laws' simulations (its verdict where every cell lies on one side), and that of each method with the
    law itself (the numbers of :func:`_law_method_claims`); ``only``: the R values drawn where others have no point
    (round 26: "R = 10 only" stood in the footnote alone)."""
    q = _law_row_percentile(cmp)
    where = f" (R = {listing([int(R) for R in only])} only)" if len(only) else ""
    parts = []
    e = _law_errors(cmp, services)
    if e.size:
        side = " (conservative)" if (e > 0).all() else " (optimistic)" if (e < 0).all() else ""
        parts.append(f"the exponential model's method T errs by {_pm(e.min())} to {_pm(e.max())} %{side}")
    for m in cmp["law_method"].values.tolist():
        e, lo, hi = _law_errors(cmp, services, m, ci=True)
        if e.size:
            parts.append(f"method {m} with the law itself by {_pm(e.min())} to {_pm(e.max())} %"
                         + _noise_words(e, lo, hi))
    return f"At the {q:g}th percentile{where} " + ";\n".join(parts) if parts else ""


def _noise_words(e, lo, hi) -> str:
    """': k of n within ±5 %, the other(s) within noise (95 % CI spans 0)' — the verdict on a law method's points,
    from their means ``e`` and CIs (in %): a point beyond ±5 % whose CI spans 0 is no error this run can tell (round
    15: +8 % with a CI of −15 to +32 % was not said to be noise)."""
    out = np.abs(e) > 5.0
    k = int(out.sum())
    if not k:
        return f": all {e.size} within ±5 %"
    noise = int((out & (lo <= 0) & (hi >= 0)).sum())
    rest = "the other" if k == 1 else f"the other {k}"
    verdict = (f"{rest} within noise (95 % CI spans 0)" if noise == k else f"{rest} beyond it and beyond noise"
               if not noise else f"{noise} of {rest} within noise (95 % CI spans 0)")
    return f": {e.size - k} of {e.size} within ±5 %, {verdict}"


def _mgr_legend(services, scv, cmap, noise_drawn, band=False, marker=("s", 9)):
    """The M/G/R figures' legend entries for the laws (their SCV; ``marker``: the key's (shape, size) — the distance
    figure's own marker, a square colour key where the marker's shape is a method's), the noise area and the ±5 %
    band."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Line2D([], [], color=cmap(k), ls="none", marker=marker[0], ms=marker[1]) for k in range(len(services))]
    labels = [f"{s} service" + (f" (SCV {scv[s]:.2g})" if s in scv else "") for s in services]
    if noise_drawn:
        handles.append(Patch(facecolor="0.87", edgecolor="0.45", ls=":"))
        labels.append("grey: the simulations' noise (a W inside it is no difference; no grey: the noise lies below "
                      "the axis)")
    if band:
        handles.append(Patch(facecolor=_BAND_GREY, edgecolor="none"))
        labels.append("grey band: ±5 % error")
    return handles, labels


def _empty_law_row_note(cmp, services, empty) -> str:
    """Why the R's ``empty`` have no percentile error."""
    q = _law_row_percentile(cmp)
    few = cmp["few_tail_customers"].sel(service=services, R=list(empty), percentile=q).values
    rs = listing([f"{r:g}" for r in empty])
    if (few != 0).all():
        return (f"R = {rs}: the simulation is too short (fewer than {TAIL_MIN}\n"
                f"customers per replication beyond it), for every law at every load")
    return f"R = {rs}: no {q:g}th-percentile error at any load"


def _mgr_distance_caption(cmp, services, kinds=(), by_scv=False) -> Caption:
    findings, limits = [], []
    med = _law_medians(cmp, services)
    if med:
        order = sorted(med, key=lambda s: -med[s])
        findings.append(Claim(f"Median distance of each law's sojourn time to that of {EXPO_SYSTEM} over the "
                              "cells that ran: " + listing([f"{s} {_g(med[s])}" for s in order]) + f" {TIME_UNIT}"
                              + (f" ({order[0]} is farthest, {order[-1]} closest)." if len(order) > 1 else "."),
                              med, Q.query("wasserstein_vs_exponential_sim", (("median", ["R", "rho"]),), Q.RUN_OK,
                                           {"service": order}), max(sig_tol(v, 2) for v in med.values())))
    ran = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    cells = int(np.isfinite(ran.values).any(0).sum())
    limits.append(Claim(f"The laws ran on a sub-grid of {cells} (R, ρ) cells (mgr in the config): the figure shows no "
                        "other.", cells, Q.query(f"isfinite(wasserstein_vs_exponential_sim.sel(service="
                                                 f"{Q.names(services)})).any('service')",
                                                 (("count", None),), None, {})))
    return Caption(
        "M/G/R: for each non-exponential service law (colour) with the same mean service time, the Wasserstein "
        f"distance (in {TIME_UNIT}) between its simulated sojourn-time CDF and that of {EXPO_SYSTEM} (M/M/R-JSQ-PS: "
        "the dispatcher's farm of R processor-sharing servers, not the central-queue M/M/c), against ρ, one panel per "
        "R that ran, the laws side by side around each load"
        + (" in order of their SCV (squared coefficient of variation of the service time; 1 for exponential)."
           if by_scv else "."), findings, limits,
        [("The load axis is categorical (one slot per load that ran, not to scale); the W axis is trimmed to the "
          "markers. The grey area up to the dotted line (where it reaches the axis) is the distance's own noise, from "
          "the replications alone (sim_noise_wasserstein): a marker in it shows no difference this run can tell; a "
          "distance far above it is a real change of the sojourn-time law. Which analytic method comes closest to "
          "each law is not shown: every method of this study assumes exponential service, so a method closest to a "
          "law's simulation is no model of that law; the methods that take the law itself are compared in the "
          "percentile figure (mgr_laws_percentile)."
          + (" A simulated cell too short to be a reference (the run-length guard) is not drawn: it is marked ◇ in "
             "the strip above its panel." if REFERENCE_TOO_SHORT.key in set(kinds) else ""))])


def _mgr_percentile_caption(cmp, services, law_rows, kinds=(), empty=()) -> Caption:
    findings, limits = [], []
    q = _law_row_percentile(cmp) if law_rows else None
    if law_rows:
        findings += _law_method_claims(cmp, services)
    if law_rows and empty:  # the R's without a value, from the data
        few = cmp["few_tail_customers"].sel(service=services, R=list(empty), percentile=q).values
        ran = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
        ran_r = [float(r) for r in cmp["R"].values if np.isfinite(ran.sel(R=r).values).any()]
        has_r = [r for r in ran_r if r not in [float(e) for e in empty]]
        why = (f"fewer than {TAIL_MIN} customers per replication lie beyond the {q:g}th percentile in every cell there"
               if (few != 0).all() else "no cell there has a value")
        sel = {"service": services, "percentile": q}
        limits.append(Claim(
            f"The figure has {q:g}th-percentile errors at R = {listing([f'{r:g}' for r in has_r]) or 'none'} of the "
            f"R's that ran ({listing([f'{r:g}' for r in ran_r])}): at R = "
            f"{listing([f'{float(r):g}' for r in empty])} {why}.",
            [has_r, ran_r],
            [Q.query(f"where({Q.RUN_OK} & (few_tail_customers == 0) & isfinite(law_relative_error_mean), R, nan)",
                     (("list", None),), None, sel),
             Q.query("where(isfinite(wasserstein_vs_exponential_sim), R, nan)", (("list", None),), None,
                     {"service": services})]))
    if law_rows:
        limits += _absent_cell_claims(cmp, services, empty)
    if not law_rows:
        limits.append("No method that takes the service law itself ran: the figure has nothing to compare.")
    return Caption(
        "M/G/R: the error of a tail percentile against each law's simulation (method / simulation − 1, mean over "
        "replications with its 95 % CI), one category per (law, cell) point with a value (not a load axis): method T "
        f"for {EXPO_SYSTEM} (✕), beside "
        + (_law_marker_words(cmp["law_method"].values.tolist()) if law_rows else "the methods with the law itself")
        + ", the law in phase-type form; each mean printed above its marker (with its 95 % CI where it lies beyond "
        "±5 %); the ±5 % band shaded.", findings, limits,
        [("A cell whose simulation is too short to estimate the percentile (the run-length guard, or fewer than "
          f"{TAIL_MIN} customers per replication beyond it) has no point: the line under the figure names those "
          "cells.")])


def absent_cells(cmp, services, empty=()) -> list:
    """The (R, ρ, why) of the M/G/R percentile figure's absent cells: the laws ran there (a W to the exponential
    simulation), but no (law, method) point has a value, at an R that has points elsewhere (not in ``empty``, the R's
    without any: their own sentence); ``why``: "guard" where the run-length guard judged every law's simulation too
    short, "few" where fewer than TAIL_MIN customers per replication lie beyond the percentile in every usable one,
    else "none"."""
    q = _law_row_percentile(cmp)
    ran = np.isfinite(cmp["wasserstein_vs_exponential_sim"].sel(service=services).values).any(0)  # (R, rho)
    usable = run_usable(cmp).sel(service=services).values
    few = (cmp["few_tail_customers"].sel(service=services, percentile=q) != 0).values
    out = []
    for i, R in enumerate(cmp["R"].values.tolist()):
        if float(R) in [float(e) for e in empty]:
            continue
        vals = {s: _law_row_series(cmp, s, R, q) for s in services}
        for j, rho in enumerate(cmp["rho"].values.tolist()):
            if not ran[i, j] or any(np.isfinite(v[0][j]) for s in services for v in vals[s].values()):
                continue
            why = ("guard" if not usable[:, i, j].any() else
                   "few" if few[:, i, j][usable[:, i, j]].all() else "none")
            out.append((R, float(rho), why))
    return out


_ABSENT_WHY = {"guard": "the run-length guard judged every law's simulation too short",
               "few": f"fewer than {TAIL_MIN} customers per replication lie beyond the percentile in every law's "
                      "simulation (reference too short)",
               "none": "no law has an error value there"}


def _absent_cell_claims(cmp, services, empty=()) -> list:
    """The caption's sentence on the cells the laws ran at without a point in the figure (:func:`absent_cells`), by
    reason, each re-derived from the comparison (round 20's reader: the note under the figure named R = 10, ρ = 0.5,
    the caption did not)."""
    q = _law_row_percentile(cmp)
    cells = absent_cells(cmp, services, empty)
    if not cells:
        return []
    names = Q.names(services)
    ran = f"isfinite(wasserstein_vs_exponential_sim.sel(service={names})).any('service')"
    t_val = ("(few_tail_customers == 0) & isfinite(relative_percentile_error_mean.sel(approximation='T'))"
             if TAIL in cmp["approximation"].values.tolist() else "False")
    has = (f"({Q.RUN_OK} & (isfinite(law_relative_error_mean).any('law_method') | ({t_val})))"
           f".sel(service={names}).any('service')")
    absent = f"{ran} & ~({has})" + "".join(f" & (R != {float(e)!r})" for e in empty)
    sel = {"percentile": q}
    groups = {w: [(R, r) for R, r, w2 in cells if w2 == w] for w in _ABSENT_WHY}
    text = "; ".join(f"at {listing([f'R = {R:g}, ρ = {r:g}' for R, r in at])} {_ABSENT_WHY[w]}"
                     for w, at in groups.items() if at)
    n = len(cells)
    subject = ("One cell of the sub-grid the laws ran at has" if n == 1 else
               f"{n} cells of the sub-grid the laws ran at have")
    return [Claim(f"{subject} no point in the figure: {text}.",
                  [n, sorted({R for R, _, _ in cells}), sorted({r for _, r, _ in cells})],
                  [Q.query(absent, (("count", None),), None, sel),
                   Q.query(f"where({absent}, R, nan)", (("list", None),), None, sel),
                   Q.query(f"where({absent}, rho, nan)", (("list", None),), None, sel)], 1e-9)]


def _law_row_percentile(cmp) -> float:
    """The percentile the M/G/R figure's error row shows: the highest of the comparison's at 99.99 or below where some
    law method's error has a value (the simulation estimates it somewhere), else the highest at 99.99 or below."""
    pct = sorted((float(q) for q in cmp["percentile"].values if float(q) <= 99.99 + 1e-9), reverse=True)
    for q in pct:
        if np.isfinite(cmp["law_relative_error_mean"].sel(percentile=q).values).any():
            return q
    return pct[0] if pct else float(cmp["percentile"].values[-1])


def _law_errors(cmp, services, method=None, ci=False):
    """(relative errors, in %, of a law method — or, with ``method`` None, of the exponential model's T — at the
    row's percentile over (service, R, rho), where the simulation's run is usable and the error has a value); with
    ``ci`` (law methods only) (errors, their 95 % CIs' low ends, high ends)."""
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
    have = np.isfinite(v)
    if not ci:
        return v[have]
    lo, hi = (100.0 * cmp[f"law_relative_error_ci_{x}"].sel(service=services, law_method=method, percentile=q).values
              for x in ("low", "high"))
    return v[have], lo[have], hi[have]


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
    """The M/G/R percentile figure's panel: one category per (law, cell) point with a value (no load axis), the error
    of :func:`_law_row_percentile` (method / simulation − 1, mean over replications with its 95 % CI) of the
    exponential model's T (✕, left) beside each method that takes the law itself (``law_method``: hollow markers,
    right), in the law's colour, each mean printed above its CI (clear of the marker and of the axes' edges); the
    ±5 % band shaded. Returns the legend's (handles, labels), the status kinds drawn and the cells (R, ρ) that ran
    without a value."""
    from matplotlib.lines import Line2D

    q, rho = _law_row_percentile(cmp), cmp["rho"].values
    methods = cmp["law_method"].values.tolist()
    marks = list(_LAW_MARKS)
    vals = {R: {s: _law_row_series(cmp, s, R, q) for s in services} for R in Rv}
    keys = [m for m in ([None] if TAIL in cmp["approximation"].values.tolist() else []) + methods]
    points = [(R, j, k, s) for R in Rv for j in range(rho.size) for k, s in enumerate(services)
              if any(np.isfinite(v[0][j]) for v in vals[R][s].values())]
    width = 0.5 / max(1, len(keys) - 1)  # room for a CI label beside its neighbour's (round 17 draft: they touched)
    ax.axhspan(-5.0, 5.0, color=_BAND_GREY, zorder=0)
    ax.axhline(0.0, color="0.5", lw=0.8)
    tops = []
    for x, (R, j, k, s) in enumerate(points):
        for n, m in enumerate(keys):
            y, lo, hi = (v[j] for v in vals[R][s].get(m, (np.full(rho.size, np.nan),) * 3))
            if not np.isfinite(y):
                continue
            xx = x + (n - (len(keys) - 1) / 2) * width if len(keys) > 1 else x
            # the marker hollow and under its CI, the caps wider than the marker (round 16: a filled ▲ hid whether
            # its short CI reached 0)
            ax.plot([xx], [y], ls="none", color=cmap(k),
                    marker="x" if m is None else marks[methods.index(m) % len(marks)], ms=_LAW_MS,
                    mew=2 if m is None else 1.6, mfc=_LAW_FACE, zorder=4)
            ax.errorbar([xx], [y], yerr=[[max(y - lo, 0)], [max(hi - y, 0)]], fmt="none", color=cmap(k),
                        capsize=_LAW_CAP, lw=1.3, zorder=5)
            top = max(y, hi) if np.isfinite(hi) else y
            tops.append(top)
            ax.annotate(_mean_label(y, lo, hi, m is not None), (xx, top), xytext=(0, 5), textcoords="offset points",
                        ha="center", va="bottom", fontsize=10, color=cmap(k), zorder=5)
        if x and points[x - 1][:2] != (R, j):
            ax.axvline(x - 0.5, color="0.6", lw=1.0)
    ax.set_xticks(range(len(points)), [f"{s}\nR = {R}, ρ = {rho[j]:g}" for R, j, _, s in points], fontsize=9.5)
    for lab, (_, _, k, _) in zip(ax.get_xticklabels(), points, strict=True):
        lab.set_color(cmap(k))
    ax.set_xlim(-0.6, len(points) - 0.4)
    lo_, hi_ = ax.get_ylim()
    ax.set_ylim(lo_, max(hi_, max(tops, default=hi_)) + 0.12 * (hi_ - lo_))  # room for the labels above the CIs
    ax.tick_params(axis="y", labelsize=10)
    ax.grid(alpha=0.3, axis="y")
    ax.set_ylabel(f"{q:g}th-percentile error (%):\nmethod / simulation − 1", fontsize=10.5)
    cells = {(R, j) for R, j, _, _ in points}
    missing = [(R, float(r)) for R in Rv for j, r in enumerate(rho) if (R, j) not in cells
               and np.isfinite(cmp["wasserstein_vs_exponential_sim"].sel(R=R, service=services).values[:, j]).any()]
    ax.set_title(f"{q:g}th-percentile error against each law's simulation (mean, 95 % CI)", fontsize=10.5, loc="left")
    handles = [Line2D([], [], color="0.3", marker=marks[j % len(marks)], ms=8, mew=1.6, mfc=_LAW_FACE, ls="none")
               for j in range(len(methods))]
    labels = [f"method {m} with the law itself" for m in methods]
    if None in keys:
        handles.insert(0, Line2D([], [], color="0.3", marker="x", ms=8, mew=2, ls="none"))
        labels.insert(0, f"method T for {EXPO_SYSTEM}")
    return handles, labels, {REFERENCE_TOO_SHORT.key} if missing else set(), missing


#: the percentile-error figure's marker size and CI cap half-width (points): caps wider than the marker
_LAW_MS, _LAW_CAP = 8, 6
#: the law methods' markers, drawn hollow (face :data:`_LAW_FACE`), in ``law_method`` order, with their names for the
#: caption (never ◇: that is the reference-too-short mark)
_LAW_MARKS = {"^": "triangle △", "v": "triangle ▽", "P": "plus", "o": "circle ○"}
_LAW_FACE = "white"


def _law_marker_words(methods) -> str:
    """The caption's words for the law methods' markers, as drawn by :func:`_law_cells_panel` (round 17: the caption
    said "filled marker" beside hollow triangles): 'method T with the law itself (hollow triangle △)'."""
    names = list(_LAW_MARKS.values())
    style = "hollow " if _LAW_FACE == "white" else "filled "
    return listing([f"method {m} with the law itself ({style}{names[k % len(names)]})" for k, m in enumerate(methods)])


def _mean_label(y, lo, hi, law_method) -> str:
    """A marker's printed mean; for a law method beyond ±5 % its 95 % CI under it (round 17: whether the CI of a +7 %
    spans 0 could not be read off its whisker), each end to the first digit that shows its sign."""
    text = _pm(y)
    if law_method and abs(y) > 5.0 and np.isfinite(lo) and np.isfinite(hi):
        end = [_pm(v, next((k for k in (0, 1, 2) if float(_pm(v, k)) != 0), 2)) for v in (lo, hi)]  # never a bare 0
        text += f"\nCI {end[0]}…{end[1]}"
    return text.replace("-", "−")


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
    return f"\n{_pm(float(y.min()))} to {_pm(float(y.max()))} % ({verdict})"


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
        out.append(Claim(f"Method {m} with the law itself: {q:g}th-percentile error within ±5 % of the simulations in "
                         f"{inside} of {e.size} (law, cell) points (overall {_pm(e.min(), 1)} % to {_pm(e.max(), 1)} %"
                         + ("; per law below)." if per_law else ")."),
                         [float(e.min()) / 100, float(e.max()) / 100, inside, int(e.size)],
                         [Q.query(expr, (("min", None),), Q.RUN_OK, sel),
                          Q.query(expr, (("max", None),), Q.RUN_OK, sel),
                          Q.query(f"abs({expr}) <= 0.05", (("count", None),), f"{Q.RUN_OK} & isfinite({expr})", sel),
                          Q.query(f"isfinite({expr})", (("count", None),), Q.RUN_OK, sel)], 0.0006))
        e, lo, hi = _law_errors(cmp, services, m, ci=True)
        out_ = int((np.abs(e) > 5.0).sum())
        if out_:  # the title's noise verdict (:func:`_noise_words`), re-derived from the data
            noise = int(((np.abs(e) > 5.0) & (lo <= 0) & (hi >= 0)).sum())
            ci = "law_relative_error_ci_{}.sel(law_method=" + repr(m) + ")"
            out.append(Claim(f"Of its {out_} point{'s' if out_ > 1 else ''} beyond ±5 %, {noise} "
                             f"ha{'ve' if noise != 1 else 's'} a 95 % CI that spans 0: within the simulations' noise, "
                             "no error this run can tell.", [out_, noise],
                             [Q.query(f"abs({expr}) > 0.05", (("count", None),), f"{Q.RUN_OK} & isfinite({expr})",
                                      sel),
                              Q.query(f"(abs({expr}) > 0.05) & ({ci.format('low')} <= 0) & ({ci.format('high')} >= 0)",
                                      (("count", None),), f"{Q.RUN_OK} & isfinite({expr})", sel)]))
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
        head = (f"The exponential model's {q:g}th percentile (method T) is conservative (its CI above the law's "
                f"simulated value) at all {sum(n.values())} (law, cell) points: ")
        parts = [f"{s} {_pm(100 * lo[s], 1)} % to {_pm(100 * hi[s], 1)} %" for s in laws]
    else:
        head = (f"The exponential model's {q:g}th percentile (method T) against each law's simulation (conservative: "
                "its CI above the simulation's value, optimistic: below): ")
        parts = [f"{s} {_pm(100 * lo[s], 1)} % to {_pm(100 * hi[s], 1)} % (conservative in {cons[s]}, optimistic in "
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
        out.append(Claim(f"Method {meth} with the law itself, per law: " + listing(
            [f"{s} {_pm(100 * lo2[s], 1)} % to {_pm(100 * hi2[s], 1)} %" for s in have]) + ".", [lo2, hi2],
            [Q.query(expr, red, Q.RUN_OK, sel2), Q.query(expr, (("max", ["R", "rho"]),), Q.RUN_OK, sel2)], 0.0006))
    return out
