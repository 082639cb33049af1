"""The pipeline's comparison job: simulated sweeps beside the product form, CIs, coverage and optima.

Per (semantics, restart rate): means over the stable replications with Student-t CIs of the mean
response time, its percentiles (``response_time_percentile``, one per level of ``comparison.percentiles``, per
replication from its histogram), the mean number of jobs, restarts per job and throughput; the product form at
the same rate; for signal semantics whether the CI covers the product form (and the z-score). Per semantics:
the restart rate of the sweep with the smallest mean response time (and smallest percentile, per level),
beside the product form's g*.
"""
from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from scipy import stats

from ..core.estimates.precision import present
from ..core.estimates.reference import too_few_beyond
from ..core.estimates.stats import TAIL_MIN, percentiles_per_replication
from ..core.files.io import provenance, read_netcdf, write_netcdf


def _ci(x, confidence):
    """Mean, half-width and count over the last axis, ignoring NaN (unstable replications)."""
    x = np.asarray(x, float)
    k = np.sum(np.isfinite(x), axis=-1)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = np.nanmean(x, axis=-1)
        s = np.nanstd(x, axis=-1, ddof=1)
        h = np.where(k >= 2, stats.t.ppf(0.5 + confidence / 2, np.maximum(k - 1, 1)) * s / np.sqrt(np.maximum(k, 1)),
                     np.nan)
    return m, h, k


def _percentile_variables(out: dict, q, beyond, here, confidence: float, dims: tuple) -> None:
    """The response-time percentiles over the replications present, with the jobs beyond them (too few: no
    estimate, sojourn.core.estimates.reference)."""
    qm, qh, _ = _ci(np.moveaxis(np.where(here[..., None], q, np.nan), -1, -2), confidence)  # (sem, rate, percentile)
    pdims = dims + ("percentile",)
    # jobs per replication beyond each percentile, over the replications present; too few: no estimate
    # (core.estimates.reference)
    b = np.moveaxis(np.where(here[..., None], beyond.astype(float), np.nan), -1, -2)  # (sem, rate, percentile, rep)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b_mean = np.nanmean(b, axis=-1)
        too_few = too_few_beyond(b, axis=-1) | ~np.isfinite(b_mean)
    out["response_time_percentile_beyond"] = (pdims, b_mean, {
        "long_name": "jobs per replication beyond the percentile (mean over replications)", "units": "1"})
    out["response_time_percentile_too_few"] = (pdims, np.where(np.isnan(qm), 1, too_few).astype(np.int8), {
        "long_name": f"1: fewer than {TAIL_MIN} jobs per replication beyond the percentile (or none in some "
                     "replication, or no estimate): too few to estimate it (sojourn.core.estimates.reference); "
                     "excluded from "
                     "best_rate_response_time_percentile", "units": "1"})
    out["response_time_percentile"] = (pdims, qm, {"long_name": "simulated percentile of the response time (mean "
                                                                "over replications of each one's histogram percentile)",
                                                   "units": "time"})
    out["response_time_percentile_half_width"] = (pdims, qh, {
        "long_name": f"half-width of the {100 * confidence:g}% Student-t CI of response_time_percentile",
        "units": "time"})


def _against_product_form(out: dict, pf: xr.Dataset, rates, k, confidence: float, dims: tuple) -> None:
    """The product form at signal rate = restart rate beside the simulated mean response time and number: z
    scores and CI coverage."""
    pf_at = pf.sel(signal_rate=rates)
    for name in ("response_time", "mean_number"):
        val = pf_at[name].values
        out[f"{name}_pf"] = ("restart_rate", val, {"long_name": f"product form {name} at signal rate = restart rate",
                                                   "units": pf[name].attrs["units"]})
        m, h = out[name][1], out[f"{name}_half_width"][1]
        with np.errstate(all="ignore"):
            se = h / stats.t.ppf(0.5 + confidence / 2, np.maximum(k - 1, 1))
            out[f"{name}_z"] = (dims, (m - val) / se, {"long_name": f"(simulated - product form)/standard error of "
                                                                    f"{name}", "units": "1"})
        out[f"{name}_covered"] = (
            dims,
            (np.abs(m - val) <= h).astype(np.int8),
            {"long_name": f"1 if the {100 * confidence:g}% CI covers the product form", "units": "1"},
        )


def _best_rate(out: dict, name: str, short, rates) -> None:
    """The sweep's best restart rate for ``name`` (smallest simulated value), never from a run too short or a
    percentile with too few jobs beyond it, and the value there."""
    m, h = out[name][1], out[f"{name}_half_width"][1]  # (semantics, rate[, percentile])
    extra = m.shape[2:]
    m2, h2 = m.reshape(m.shape[:2] + (-1,)), h.reshape(h.shape[:2] + (-1,))
    m2 = np.where(short[..., None], np.nan, m2)  # never the best from a run too short
    if extra:  # nor from a percentile with too few jobs beyond it
        m2 = np.where(out["response_time_percentile_too_few"][1].reshape(m2.shape) != 0, np.nan, m2)
    best = np.array([[np.nanargmin(m2[i, :, j]) if np.isfinite(m2[i, :, j]).any() else -1
                      for j in range(m2.shape[2])] for i in range(m2.shape[0])])  # (semantics, levels)

    def pick(a):  # the value at the best rate of each (semantics, level); NaN where none
        return np.array([[a[i, b, j] if b >= 0 else np.nan for j, b in enumerate(row)]
                         for i, row in enumerate(best)]).reshape((m.shape[0],) + extra)

    bdims = ("semantics",) + (("percentile",) if extra else ())
    out[f"best_rate_{name}"] = (
        bdims,
        np.where(best >= 0, rates[np.maximum(best, 0)], np.nan).reshape((m.shape[0],) + extra),
        {
            "long_name": f"restart rate of the sweep with the smallest {name} (among the "
            "points whose run is long enough, run_valid = 1, and for a percentile "
            "with enough jobs beyond it)",
            "units": "1/time",
        },
    )
    out[f"best_{name}"] = (bdims, pick(m2), {"long_name": f"smallest simulated {name} of the sweep",
                                             "units": "time"})
    out[f"best_{name}_half_width"] = (bdims, pick(h2), {"long_name": "its CI half-width", "units": "time"})


def comparison(pf: xr.Dataset, sim: xr.Dataset, confidence: float, percentiles=(99.0,)) -> xr.Dataset:
    """``percentiles``: levels in percent."""
    levels = [float(p) for p in np.atleast_1d(percentiles)]
    dt = float(sim.attrs["dt"])
    count = sim["count"].transpose("semantics", "restart_rate", "replication", "t").values
    overflow = sim["overflow"].transpose("semantics", "restart_rate", "replication").values
    q, beyond = percentiles_per_replication(count, overflow, sim["t"].values, dt, np.array(levels) / 100.0)
    # (semantics, restart_rate, replication, percentile): each replication's percentile and the jobs beyond it
    # a precision-driven sweep: points with different replication counts, padded (sojourn.core.estimates.precision)
    here = present(sim["replication"].values, sim["replications_used"].transpose("semantics", "restart_rate").values) \
        if "replications_used" in sim else np.ones(overflow.shape, bool)
    stopped = (sim["unstable"].transpose("semantics", "restart_rate", "replication").values > 0) & here
    # a point counts only if every replication ran to the end: one stopped replication means the run is not
    # stationary there (timeout semantics can be unstable), and the others would give a biased mean
    partial = stopped.any(axis=-1, keepdims=True)
    q = np.where(partial[..., None], np.nan, q)
    dims = ("semantics", "restart_rate")
    out = {}
    series = {
        "response_time": (sim["mean"], "mean response time", "time"),
        "mean_number": (sim["mean_number"].sum("queue", skipna=False), "time-average number of jobs", "1"),
        "mean_restarts": (sim["mean_restarts"], "successful restarts per job", "1"),
        "throughput": (sim["throughput"], "jobs leaving per unit time", "1/time"),
    }
    for name, (da, long_name, units) in series.items():
        x = np.where(partial, np.nan, da.transpose("semantics", "restart_rate", "replication").values)
        x = np.where(here, x, np.nan)  # padding never counts (_ci ignores NaN)
        m, h, k = _ci(x, confidence)
        out[name] = (dims, m, {"long_name": f"simulated {long_name} (mean over replications)", "units": units})
        out[f"{name}_half_width"] = (dims, h, {"long_name": f"half-width of the {100 * confidence:g}% Student-t CI "
                                                           f"of {name}", "units": units})
    _percentile_variables(out, q, beyond, here, confidence, dims)
    out["replications_stable"] = (dims, (~stopped & here).sum(axis=-1).astype(np.int64),
                                  {"long_name": "replications that ran to the end (not stopped as unstable); "
                                                "measures are NaN unless all did", "units": "1"})
    if "replications_used" in sim:
        out["replications_used"] = (dims, sim["replications_used"].transpose(*dims).values.astype(np.int64),
                                    {"long_name": "replications of the point (precision-driven sweep)", "units": "1"})
    rates = sim["restart_rate"].values
    _against_product_form(out, pf, rates, k, confidence, dims)
    # the run-length guard (sojourn.core.estimates.runlength): a point too short to trust is kept, marked, and never
    # picked
    short = (
        (sim["run_valid"].transpose(*dims).values == 0) if "run_valid" in sim else np.zeros(overflow.shape[:2], bool)
    )
    out["run_valid"] = (dims, (~short).astype(np.int8), {
        "long_name": "1 = the point's run is long enough to trust (the simulation's run_valid); 0: its values are "
                     "kept but excluded from best_rate_*", "units": "1"})
    for name in ("response_time", "response_time_percentile"):
        _best_rate(out, name, short, rates)
    ds = xr.Dataset(out, coords={"semantics": sim["semantics"], "restart_rate": sim["restart_rate"],
                                 "percentile": ("percentile", np.array(levels),
                                                {"long_name": "percentile level", "units": "percent"})})
    for v in ("g_star", "response_time_at_g_star", "response_time_no_restart"):
        ds[v] = pf[v]
    ds["best_rate_ratio"] = (("semantics",), ds["best_rate_response_time"].values / float(pf["g_star"]),
                             {"long_name": "restart rate minimising the simulated mean / g*", "units": "1"})
    return ds


def write_comparison(pf_path, sim_path, output, settings: dict):
    pf, sim = read_netcdf(pf_path), read_netcdf(sim_path)
    ds = comparison(pf, sim, float(settings["confidence"]), settings["percentiles"])
    flagged = int((ds["run_valid"] == 0).sum())
    ds.attrs = provenance(settings, title=f"Restart study, {sim.attrs.get('example', '')}: simulation vs product form",
                          model=sim.attrs.get("model", ""), example=sim.attrs.get("example", ""),
                          run_length=f"{flagged} of {ds['run_valid'].size} points too short to trust (run_valid = 0, "
                                     "sojourn.core.estimates.runlength): kept, excluded from best_rate_*")
    write_netcdf(ds, output)
    return output
