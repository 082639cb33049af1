"""The M/G/R figure: how far each service law's sojourn time is from the exponential case, and the methods."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
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
from .. import claims as Q
from ..compare import (
    run_usable,
)
from . import common  # save, looked up when called: tests replace common.save
from .common import EXPONENTIAL, TAIL, _g, _legend_below

# =========================================================================== M/G/R laws
_BAND_GREY = "0.84"  # the ±5 % band of the M/G/R figure's error row
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


def mgr_laws(cmp: xr.Dataset, stem, laws=None, **kw):
    """M/G/R: each law's sojourn time against the exponential case (same mean service time), one question per panel.
    Upper row, one panel per R that ran: per law (colour) the Wasserstein distance of its simulation to the
    exponential simulation (filled markers) and to the closest of the analytic methods (hollow markers; any method of
    the comparison but exact counts), the simulations' own noise shaded grey; under each, a table of the closest
    method per (law, load) (:func:`_closest_table`). Lower row, where the comparison has methods that take the law
    itself: the exponential model's T's percentile error beside theirs per (law, cell) point
    (:func:`_law_cells_panel`); the legend and the note on the R's without a value fill the row's first slot.
    ``laws``: the config's law strings (their SCV in the legend)."""
    services = [s for s in cmp["service"].values.tolist() if s != EXPONENTIAL]
    vs = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    have = np.isfinite(vs.values).any(axis=(0, 2))
    Rv = cmp["R"].values[have] if have.any() else cmp["R"].values
    cand = [m for m in cmp["approximation"].values.tolist() if m != "exact"]
    law_rows = "law_relative_error_mean" in cmp and cmp.sizes.get("law_method", 0) > 0
    full = [R for R in Rv if _law_row_has_values(cmp, services, R)] if law_rows else []
    empty = [R for R in Rv if R not in full] if law_rows else []
    ncol = max(len(Rv), 3) if law_rows else len(Rv)
    table_h = 0.26 * (len(services) + 2)
    heights = [3.1 + table_h + 0.55] + ([3.4] if law_rows else [])
    fig = plt.figure(figsize=(3.7 * ncol + 0.9, sum(heights) + 2.0))
    gs = fig.add_gridspec(len(heights), 1, height_ratios=heights, hspace=0.22)
    upper = gs[0].subgridspec(2, ncol, height_ratios=[3.1, table_h], hspace=0.55 / (3.1 + table_h) * 2 + 0.05,
                              wspace=0.3)
    axes = [fig.add_subplot(upper[0, j]) for j in range(len(Rv))]
    tables = [fig.add_subplot(upper[1, j]) for j in range(len(Rv))]
    cmap = plt.get_cmap("tab10")
    kinds, noise_drawn = _mgr_upper_row(axes, cmp, services, Rv, cand, cmap)
    for j, (tab, ax, R) in enumerate(zip(tables, axes, Rv, strict=True)):
        _closest_table(tab, ax, cmp, R, services, cand, cmap, names=j == 0, loads=_load_slots(cmp, services))
    handles, labels = _mgr_legend(services, _scv_of(laws), cmap, noise_drawn, law_rows)
    slot = None
    if law_rows:
        low = gs[1].subgridspec(1, ncol, wspace=0.35)
        slot = fig.add_subplot(low[0, 0])
        slot.set_axis_off()
        row_h, row_l, row_kinds = _law_cells_panel(fig.add_subplot(low[0, 1:]), cmp, services, full, cmap)
        handles, labels = handles + row_h, labels + row_l
    sh, sl = status_handles(kinds)  # legend entries only for marks drawn: the lower row's ◇ is a word in its title
    kinds = kinds | row_kinds if law_rows else kinds
    handles, labels = handles + sh, labels + sl
    top = 0.9 - 0.5 / fig.get_figheight()  # room for the marker key strip under the title
    fig.subplots_adjust(left=0.08, right=0.97, top=top, bottom=0.07 if law_rows else 0.22)
    _marker_key(fig, top + 0.65 / fig.get_figheight())
    if slot is not None:
        note = _empty_law_row_note(cmp, services, empty) if empty else ""
        if note:
            slot.text(-0.2, 1.08, note, transform=slot.transAxes, ha="left", va="top", fontsize=9.5, color="0.2",
                      bbox={"facecolor": "0.97", "edgecolor": "0.75"})
        slot.legend(handles, labels, loc="upper left", bbox_to_anchor=(-0.22, 0.66 if note else 1.08),
                    frameon=False, fontsize=9.5, handlelength=1.6, borderaxespad=0.0)
    else:
        _legend_below(fig, handles, labels, ncol=2, fontsize=9.5)
    head = _mgr_headline(cmp, services) if law_rows else ""
    fig.suptitle("How far each service law's sojourn time is from the exponential (M/M/R) case, at the same mean "
                 "service time" + (f"\n{head}" if head else ""), y=0.995, va="top", fontsize=11.5)
    return common.save(fig, stem, caption=_mgr_caption(cmp, services, cand, law_rows, kinds, empty), **kw)


#: the M/G/R upper row's markers: filled = W to the exponential (M/M/R) simulation, hollow = W to the closest method
_LAW_MS = 8.0


def _law_dodge(services) -> dict:
    """{law: its markers' x offset} on the categorical load axis (one unit per load): the laws side by side inside
    their load's category, a quarter of it apart (a law's filled and hollow marker a little left and right of its
    offset), so that markers of equal W do not hide one another and no marker leaves its load's category."""
    step = 0.25
    return {s: step * (k - (len(services) - 1) / 2) for k, s in enumerate(services)}


def _load_slots(cmp, services) -> np.ndarray:
    """The loads of the M/G/R upper row's categorical axis: those where some law's simulation has a distance."""
    vs = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    have = np.isfinite(vs.values).any(axis=(0, 1))
    return cmp["rho"].values[have] if have.any() else cmp["rho"].values


def _mgr_upper_row(axes, cmp, services, Rv, cand, cmap):
    """The M/G/R figure's upper row, one panel per R (a shared log y trimmed to the data): per law (colour, the laws
    side by side around each load) the W to the exponential simulation (filled markers; not joined: the load axis is
    categorical) and to the closest analytic method (hollow markers), the filled markers' noise shaded.
    Returns (the status kinds drawn, whether the noise is drawn)."""
    for ax in axes[1:]:
        ax.sharey(axes[0])
    rho, run_ok = cmp["rho"].values, run_usable(cmp)
    vs = cmp["wasserstein_vs_exponential_sim"].sel(service=services)
    w = cmp["wasserstein_mean"].where(cmp["usable"] != 0).sel(approximation=cand)
    dodge = _law_dodge(services)
    step = 2 * max(map(abs, dodge.values())) / max(1, len(services) - 1)
    slots = _load_slots(cmp, services)
    pos = np.array([int(np.argmin(np.abs(slots - r))) if np.isclose(slots, r).any() else -10 for r in rho], float)
    kinds, noise_fill, drawn = set(), [], []
    for ax, R in zip(axes, Rv, strict=True):
        strip = status_strip(ax)
        for k, svc in enumerate(services):
            ok_run = run_ok.sel(service=svc, R=R).values
            y1 = np.where(ok_run, vs.sel(service=svc, R=R).values, np.nan)
            y2 = np.where(ok_run, w.sel(service=svc, R=R).min("approximation", skipna=True).values, np.nan)
            ok1, ok2 = np.isfinite(y1), np.isfinite(y2)
            x, half = pos + dodge[svc], 0.3 * step
            if ok1.any():
                ax.plot(x[ok1] - half, y1[ok1], "o", color=cmap(k), ms=_LAW_MS, zorder=4)
            if ok2.any():
                ax.plot(x[ok2] + half, y2[ok2], "o", color=cmap(k), ms=_LAW_MS, mfc="white", mew=1.8, zorder=5)
            drawn += [y1[ok1], y2[ok2]]
            simulated = np.isfinite(vs.sel(service=svc, R=R).values)
            strip.mark(svc, rho, simulated & ~ok_run, REFERENCE_TOO_SHORT.key, cmap(k))
        noise = _mgr_noise(cmp, R, services)
        okn = np.isfinite(noise) & np.isfinite(vs.sel(R=R).values).any(0)
        if okn.any():  # shaded below (once the limits are set): a W there is no difference this run can tell
            noise_fill.append((ax, pos[okn], noise[okn]))
        kinds |= strip.kinds
        ax.set_xlabel("load ρ (one category each; laws side by side)", fontsize=10)
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=9.5)
        ax.set_xlim(-0.5, slots.size - 0.5)
        ax.set_xticks(range(slots.size), [f"{r:g}" for r in slots])
        for b in range(1, slots.size):
            ax.axvline(b - 0.5, color="0.6", lw=0.9, zorder=1)
        strip.finish(title=f"R = {R}", fontsize=11)
    axes[0].set_ylabel(f"Wasserstein distance W\n({TIME_UNIT})", fontsize=10)
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


def _marker_key(fig, y) -> None:
    """The upper row's filled / hollow meaning, a key strip right above the row (top at figure height ``y``)."""
    from matplotlib.lines import Line2D

    fig.legend([Line2D([], [], color="0.3", ls="none", marker="o", ms=_LAW_MS),
               Line2D([], [], color="0.3", ls="none", marker="o", ms=_LAW_MS, mfc="white", mew=1.8)],
              ["upper row, filled: W to the exponential (M/M/R) simulation",
               "hollow: W to the closest analytic method (named in the table below)"],
              loc="upper center", bbox_to_anchor=(0.5, y), ncol=2, fontsize=10, frameon=True, edgecolor="0.75",
              handletextpad=0.3, borderaxespad=0.0)


def _mgr_noise(cmp, R, services):
    """The filled markers' noise at R per ρ (the largest over the laws): two pooled CDFs of K replications each,
    about sqrt(n_law² + n_exp²)/sqrt(K) (n: one replication's noise); NaN without sim_noise_wasserstein."""
    if "sim_noise_wasserstein" not in cmp:
        return np.full(cmp.sizes["rho"], np.nan)
    nz = cmp["sim_noise_wasserstein"].sel(R=R)
    k_rep = max(1, cmp.sizes.get("replication", 1))
    return (np.sqrt(nz.sel(service=services) ** 2 + nz.sel(service=EXPONENTIAL) ** 2).max("service").values
            / np.sqrt(k_rep))


def closest_methods(cmp, svc, R, cand) -> dict:
    """{ρ: the method of ``cand`` with the smallest W to the law ``svc``'s simulation at (R, ρ)} over the cells the
    M/G/R figure's hollow markers draw (the simulation's run usable, some method with a value)."""
    ok_run = run_usable(cmp).sel(service=svc, R=R).values
    w = cmp["wasserstein_mean"].where(cmp["usable"] != 0).sel(service=svc, R=R, approximation=cand)
    out = {}
    for i, r in enumerate(cmp["rho"].values):
        v = w.isel(rho=i).values
        if ok_run[i] and np.isfinite(v).any():
            out[float(r)] = cand[int(np.nanargmin(v))]
    return out


#: the closest-method table's type size (pt): legible at report size
_TABLE_PT = 10


def _closest_table(tab, ax, cmp, R, services, cand, cmap, names=True, loads=None) -> None:
    """Under the upper panel ``ax`` (x shared), a table in ``tab``: one row per law (its name and letters in its
    colour), one column per load at the load's x, the closest method's name (:func:`closest_methods`) — one cell per
    (law, load), so no two names can meet; "–" where the law has no hollow marker at that load; a header row names
    each column's load. ``names``: the laws' names left of the rows (the first panel's table; the others' rows in
    the same order and colours). ``loads``: the load at each of ``ax``'s x ticks (default: the ticks themselves)."""
    tab.set_xlim(ax.get_xlim())
    tab.set_ylim(len(services) - 0.5, -2.3)
    tab.set_axis_off()
    tab.text(0.0, -2.0, "closest method (hollow marker):", transform=tab.get_yaxis_transform(), ha="left",
             va="center", fontsize=_TABLE_PT - 0.5, color="0.25")
    ticks = ax.get_xticks()
    loads = ticks if loads is None else loads
    for x, r in zip(ticks, loads, strict=True):
        tab.text(x, -0.9, f"ρ = {r:g}", ha="center", va="center", fontsize=_TABLE_PT - 0.5, color="0.25")
    tab.axhline(-0.5, color="0.6", lw=0.8)
    for k, svc in enumerate(services):
        best = closest_methods(cmp, svc, R, cand)
        if names:
            tab.text(-0.02, k, svc, transform=tab.get_yaxis_transform(), ha="right", va="center",
                     fontsize=_TABLE_PT - 0.5, color=cmap(k))
        for x, r in zip(ticks, loads, strict=True):
            m = next((v for key, v in best.items() if abs(key - r) < 1e-9), "–")
            tab.text(x, k, m, ha="center", va="center", fontsize=_TABLE_PT, color=cmap(k),
                     fontweight="bold" if m != "–" else "normal")


def _mgr_headline(cmp, services) -> str:
    """The M/G/R figure's main finding, for its title: the range of the exponential model's T's mean percentile error
    against the laws' simulations (its verdict where every cell lies on one side), and that of each method with the
    law itself (the numbers of :func:`_law_method_claims`)."""
    q = _law_row_percentile(cmp)
    parts = []
    e = _law_errors(cmp, services)
    if e.size:
        side = " (conservative)" if (e > 0).all() else " (optimistic)" if (e < 0).all() else ""
        parts.append(f"the exponential model's method T errs by {e.min():+.0f} to {e.max():+.0f} %{side}")
    for m in cmp["law_method"].values.tolist():
        e = _law_errors(cmp, services, m)
        if e.size:
            parts.append(f"method {m} with the law itself by {e.min():+.0f} to {e.max():+.0f} %")
    return f"At the {q:g}th percentile " + "; ".join(parts) if parts else ""


def _mgr_legend(services, scv, cmap, noise_drawn, law_rows):
    """The M/G/R figure's legend entries for the laws and the upper row."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Line2D([], [], color=cmap(k), ls="none", marker="s", ms=9) for k in range(len(services))]
    labels = [f"{s} service" + (f" (SCV {scv[s]:.2g})" if s in scv else "") for s in services]
    if noise_drawn:
        handles.append(Patch(facecolor="0.87", edgecolor="0.45", ls=":"))
        labels.append("upper, grey: the simulations' noise")
    if law_rows:
        handles.append(Patch(facecolor=_BAND_GREY, edgecolor="none"))
        labels.append("lower, grey band: ±5 % error")
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
        f"distance (in {TIME_UNIT}) between its simulated sojourn-time CDF and the exponential law's (filled markers), "
        "and between it and the closest analytic method's CDF (hollow markers: the smallest over every method of the "
        "comparison but exact, which is the exponential M/M/R law itself and would repeat the filled marker without "
        "its simulation noise), against ρ, one panel per R that ran, the laws side by side around each load (a law's "
        "filled marker just left of its hollow one, every marker inside its load's category); under each panel a "
        "table names the closest method per law (row) and load (column)"
        + (f"; below, one category per (law, cell) point with a value (not a load axis): the error of the "
           f"{_law_row_percentile(cmp):g}th percentile against the law's simulation of method T for exponential "
           "service (✕, left) and of method T with the law itself (filled marker, right; the ±5 % band shaded), "
           "each with its 95 % CI and its mean printed beside it" if law_rows else "") + ".", findings, limits,
        [("The load axis is categorical (one slot per load that ran, not to scale); the W axis is trimmed to the "
          "markers. The grey area up to the dotted line (where it reaches the axis) is the filled markers' own "
          "noise, from the replications alone (sim_noise_wasserstein): a filled marker in it shows no difference this "
          "run can tell; a distance far "
          "above it is a real change of the sojourn-time law."
          + (" A simulated cell too short to be a reference (the run-length guard, or fewer than "
             f"{TAIL_MIN} customers per replication beyond the percentile) is not drawn: in an upper panel it is "
             "marked ◇ in the strip above, in the lower panel "
             "named in its title." if REFERENCE_TOO_SHORT.key in set(kinds) else ""))])


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
    """The M/G/R figure's lower panel: one category per (law, cell) point with a value (no load axis), the error of
    :func:`_law_row_percentile` (method / simulation − 1, mean over replications with its 95 % CI) of the
    exponential model's T (✕, left) beside each method that takes the law itself (``law_method``: filled markers,
    right), in the law's colour, each mean printed beside its marker; the ±5 % band shaded; the title states both
    ranges (:func:`_law_panel_finding`). Cells without a value are named in the title. Returns the legend's
    (handles, labels) and the status kinds drawn."""
    from matplotlib.lines import Line2D

    q, rho = _law_row_percentile(cmp), cmp["rho"].values
    methods = cmp["law_method"].values.tolist()
    marks = ["^", "v", "P", "o"]  # never ◇: that is the reference-too-short mark
    vals = {R: {s: _law_row_series(cmp, s, R, q) for s in services} for R in Rv}
    keys = [m for m in ([None] if TAIL in cmp["approximation"].values.tolist() else []) + methods]
    points = [(R, j, k, s) for R in Rv for j in range(rho.size) for k, s in enumerate(services)
              if any(np.isfinite(v[0][j]) for v in vals[R][s].values())]
    width = 0.3 / max(1, len(keys) - 1)
    ax.axhspan(-5.0, 5.0, color=_BAND_GREY, zorder=0)
    ax.axhline(0.0, color="0.5", lw=0.8)
    for x, (R, j, k, s) in enumerate(points):
        for n, m in enumerate(keys):
            y, lo, hi = (v[j] for v in vals[R][s].get(m, (np.full(rho.size, np.nan),) * 3))
            if not np.isfinite(y):
                continue
            xx = x + (n - (len(keys) - 1) / 2) * width if len(keys) > 1 else x
            ax.errorbar([xx], [y], yerr=[[max(y - lo, 0)], [max(hi - y, 0)]], color=cmap(k), capsize=3, lw=1.3,
                        marker="x" if m is None else marks[methods.index(m) % len(marks)], ms=8, mew=2)
            left = n < (len(keys) - 1) / 2  # the outer side of its marker: the pair's labels never meet
            ax.annotate(f"{y:+.0f}".replace("-", "−"), (xx, y), xytext=(-11 if left else 11, 0),
                        textcoords="offset points", ha="right" if left else "left", va="center", fontsize=9.5,
                        color=cmap(k), bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5})
        if x and points[x - 1][:2] != (R, j):
            ax.axvline(x - 0.5, color="0.6", lw=1.0)
    ax.set_xticks(range(len(points)), [f"{s}\nR = {R}, ρ = {rho[j]:g}" for R, j, _, s in points], fontsize=9.5)
    for lab, (_, _, k, _) in zip(ax.get_xticklabels(), points, strict=True):
        lab.set_color(cmap(k))
    ax.set_xlim(-0.6, len(points) - 0.4)
    ax.tick_params(axis="y", labelsize=9.5)
    ax.grid(alpha=0.3, axis="y")
    ax.set_ylabel(f"{q:g}th percentile:\nmethod / simulation − 1 (%)", fontsize=10)
    merged = {(R, s): v for R in Rv for s, v in vals[R].items()}
    cells = {(R, j) for R, j, _, _ in points}
    missing = [(R, float(r)) for R in Rv for j, r in enumerate(rho) if (R, j) not in cells
               and np.isfinite(cmp["wasserstein_vs_exponential_sim"].sel(R=R, service=services).values[:, j]).any()]
    ax.set_title(f"{q:g}th-percentile error per (law, cell): method T for exponential service (✕)"
                 + _law_panel_finding(merged, True).replace("\n", " ") + f";\nmethod {listing(methods)} with the law "
                 "itself"
                 + _law_panel_finding(merged, False).replace("\n", " ")
                 + ("\nreference too short (no value) at "
                    + listing([f'R = {R}, ρ = {r:g}' for R, r in missing]) if missing else ""), fontsize=10, loc="left")
    handles = [Line2D([], [], color="0.3", marker=marks[j % len(marks)], ms=8, ls="none") for j in range(len(methods))]
    labels = [f"lower: method {m} with the law itself (95 % CI)" for m in methods]
    if None in keys:
        handles.insert(0, Line2D([], [], color="0.3", marker="x", ms=8, mew=2, ls="none"))
        labels.insert(0, "lower: method T for exponential service\n(the M/M/R model; 95 % CI)")
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
        out.append(Claim(f"Method {m} with the law itself: {q:g}th-percentile error within ±5 % of the simulations in "
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
        head = (f"The exponential model's {q:g}th percentile (method T) is conservative (its CI above the law's "
                f"simulated value) at all {sum(n.values())} (law, cell) points: ")
        parts = [f"{s} {100 * lo[s]:+.1f} % to {100 * hi[s]:+.1f} %" for s in laws]
    else:
        head = (f"The exponential model's {q:g}th percentile (method T) against each law's simulation (conservative: "
                "its CI above the simulation's value, optimistic: below): ")
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
        out.append(Claim(f"Method {meth} with the law itself, per law: " + listing(
            [f"{s} {100 * lo2[s]:+.1f} % to {100 * hi2[s]:+.1f} %" for s in have]) + ".", [lo2, hi2],
            [Q.query(expr, red, Q.RUN_OK, sel2), Q.query(expr, (("max", ["R", "rho"]),), Q.RUN_OK, sel2)], 0.0006))
    return out
