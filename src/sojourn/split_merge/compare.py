"""Split-merge: simulation beside the exact values, per experiment — the hypercube over (law, model, quorum,
replicas) of simulated means and percentiles with their CIs (t-interval across replications), the pooled
histograms, the per-replication means, and the exact values with ``is_exact`` and ``exact_method`` (never an
approximation presented as exact: where nothing exact exists the value is NaN and the method "none")."""
from __future__ import annotations

import json

import numpy as np
import xarray as xr

from ..core.checks.timegrid import grid_size, time_grid
from ..core.estimates.precision import variables as precision_variables
from ..core.estimates.runlength import FILL
from ..core.estimates.runlength import variables as run_variables
from ..core.estimates.stats import cdf_from_histogram, histogram_quantile, mean_ci
from .simulate import guard, recording_window

EXACT_METHODS = ("none", "pollaczek-khinchine", "erlang-c", "qbd")


#: units of the times of a split-merge dataset
_U = "time units of the replica law"
_DIMS = ("law", "model", "quorum", "replicas")
#: (long_name, units) of the per-cell variables
_META = {
    "arrival_rate": ("Poisson arrival rate lambda = load floor(n/r)/E[S_q:r]", "1/" + _U),
    "rho": ("load per super-server lambda E[S_q:r]/floor(n/r)", "1"),
    "hosts": ("hosts n", "1"),
    "mean_service": ("E[S_q:r] (exact: phase-type algebra or quadrature)", _U),
    "max_throughput": ("maximal throughput floor(n/r)/E[S_q:r] (exact)", "1/" + _U),
    "exact_mean_latency": ("exact mean latency (NaN: none available; see exact_method)", _U),
    "exact_mean_delay": ("exact mean delay (NaN: none available)", _U),
    "is_exact": ("1 if exact_mean_* are exact, 0 if no exact value exists (NaN)", "1"),
    "exact_method": ("method of exact_mean_*: " + ", ".join(f"{i}={m}" for i, m in enumerate(EXACT_METHODS)), "1"),
    "exact_latency_percentile": ("exact latency percentile (c = 1 with PH replicas, or Erlang C; else NaN)", _U),
    "sim_mean_latency": ("simulated mean latency, mean across replications", _U),
    "sim_mean_latency_hw": ("half-width of its t-interval across replications", _U),
    "sim_mean_delay": ("simulated mean delay, mean across replications", _U),
    "sim_mean_delay_hw": ("half-width of its t-interval across replications", _U),
    "sim_utilisation": ("fraction of host-time held by workunits", "1"),
    "sim_utilisation_hw": ("half-width of its t-interval across replications", "1"),
    "sim_computing": ("fraction of host-time computing replicas until the quorum", "1"),
    "sim_throughput": ("recorded workunits per unit time", "1/" + _U),
    "sim_latency_percentile": (
        "simulated latency percentile: mean across replications of each one's "
        "histogram percentile (interpolated within its bin: the CDF linear between bin edges)",
        _U,
    ),
    "sim_latency_percentile_hw": ("half-width of its t-interval across replications", _U),
    "rep_mean_latency": ("mean latency of each replication (NaN beyond the cell's replications)", _U),
    "rep_mean_delay": ("mean delay of each replication (NaN beyond the cell's replications)", _U),
    "workunits": ("recorded workunits per replication", "1"),
    "wall_time": ("total simulation wall time of the cell's replications (not reproducible)", "s"),
}


def _fill_cell(V, G, idx, c, reps, ex, conf, grid, dt, ps):
    """One cell's exact values, run-length verdict and simulated summaries into V and G at ``idx``; returns
    (the verdict, its pooled latency histogram, overflow and delay histogram)."""
    n = len(reps)
    spec = c["spec"]
    V["arrival_rate"][idx] = spec.arrival_rate
    V["rho"][idx] = spec.rho
    V["hosts"][idx] = spec.hosts
    V["mean_service"][idx] = ex["mean_service"]
    V["max_throughput"][idx] = ex["max_throughput"]
    V["exact_mean_latency"][idx] = ex["mean_latency"]
    V["exact_mean_delay"][idx] = ex["mean_delay"]
    V["is_exact"][idx] = float(ex["exact"])
    V["exact_method"][idx] = EXACT_METHODS.index(ex["delay_method"])
    V["exact_latency_percentile"][idx] = ex["latency_percentile"]
    V["workunits"][idx] = c["workunits"]
    verdict = guard(spec, recording_window(spec, c["workunits"], np.inf, 0.0), n)
    for name, (_, value, _) in run_variables(verdict).items():
        G[name][idx] = value
    G["needed_workunits"][idx] = np.ceil(verdict.needed_window * spec.arrival_rate)
    for name, key in (("mean_latency", "sim_mean_latency"), ("mean_delay", "sim_mean_delay"),
                      ("host_utilisation", "sim_utilisation")):
        m, h = mean_ci(np.array([r[0][name] for r in reps]), confidence=conf)
        V[key][idx], V[key + "_hw"][idx] = m, h
    V["sim_computing"][idx] = np.mean([r[0]["host_computing"] for r in reps])
    V["sim_throughput"][idx] = np.mean([r[0]["throughput"] for r in reps])
    V["wall_time"][idx] = np.sum([r[0]["wall_time"] for r in reps])
    V["rep_mean_latency"][idx][:n] = [r[0]["mean_latency"] for r in reps]  # NaN beyond the cell's n
    V["rep_mean_delay"][idx][:n] = [r[0]["mean_delay"] for r in reps]
    counts = np.array([r[1] for r in reps])
    over = np.array([r[2] for r in reps])
    per = histogram_quantile(cdf_from_histogram(counts, over), grid, dt, ps)  # (replication, p)
    m, h = mean_ci(per, confidence=conf)
    V["sim_latency_percentile"][idx], V["sim_latency_percentile_hw"][idx] = m, h
    return verdict, counts.sum(axis=0), over.sum(), np.array([r[3] for r in reps]).sum(axis=0)


def _guard_variables(ds: xr.Dataset, G: dict, verdict, cs, at) -> None:
    """The run-length guard's variables and the dataset's note of the cells too short to trust."""
    attrs = {name: a for name, (_, _, a) in run_variables(verdict).items()}
    for name, values in G.items():
        a = attrs.get(name, {"long_name": "recorded workunits per replication the run-length guard asks for at this "
                                          "replication count (needed_window x arrival_rate)", "units": "1"})
        a = {k: v for k, v in a.items() if k not in ("window", "replications", "basis")}
        data_units = _U if name in ("relaxation_time", "needed_window") else a.get("units", "1")
        ds[name] = (_DIMS, values, {**a, "units": data_units})
    short = [f"{c['law']}/{c['model']}/r={c['replicas']}/q={c['quorum']} (needs workunits >= "
             f"{int(G['needed_workunits'][at(c)]):,})" for c in cs if G["run_valid"][at(c)] == 0]
    ds.attrs["run_length"] = (f"{len(short)} of {len(cs)} cells too short to trust (run_valid = 0, "
                              "sojourn.core.estimates.runlength; their sim_* values are kept, marked)"
                              + (": " + ", ".join(short) if short else ""))


def experiment_dataset(x, cs, reps_by_cell, exact, ps, conf, dt, t_max, decisions=None, precision=None) -> xr.Dataset:
    """The experiment's hypercube (module doc) from its cells ``cs``, each one's replications (the task's
    summaries: :func:`sojourn.split_merge.simulate.replication_summary`) and exact values."""
    lawn = list(dict.fromkeys(c["law"] for c in cs))
    modn = list(dict.fromkeys(c["model"] for c in cs))
    qs = sorted({c["quorum"] for c in cs})
    rs = sorted({c["replicas"] for c in cs})
    shape = (len(lawn), len(modn), len(qs), len(rs))
    nrep = max(len(r) for r in reps_by_cell)
    nb = grid_size(t_max, dt)
    f = lambda *extra: np.full(shape + extra, np.nan)
    V = {k: f() for k in ("arrival_rate", "rho", "hosts", "mean_service", "max_throughput", "exact_mean_latency",
                          "exact_mean_delay", "is_exact", "exact_method", "sim_mean_latency", "sim_mean_latency_hw",
                          "sim_mean_delay", "sim_mean_delay_hw", "sim_utilisation", "sim_utilisation_hw",
                          "sim_computing", "sim_throughput", "workunits", "wall_time")}
    V["exact_latency_percentile"] = f(len(ps))
    V["sim_latency_percentile"] = f(len(ps))
    V["sim_latency_percentile_hw"] = f(len(ps))
    V["rep_mean_latency"] = f(nrep)
    V["rep_mean_delay"] = f(nrep)
    hl = np.zeros(shape + (nb,), np.int64)
    hd = np.zeros(shape + (nb,), np.int64)
    ol = np.zeros(shape, np.int64)
    dec = np.full(shape, None, dtype=object)
    G = {"run_valid": np.full(shape, FILL["run_valid"], np.int8),
         "run_validity_reason": np.full(shape, FILL["run_validity_reason"], np.int8),
         "relaxation_time": f(), "predicted_relative_se": f(), "needed_window": f(), "needed_workunits": f()}
    grid = time_grid(t_max, dt)
    for ci, c in enumerate(cs):
        idx = (lawn.index(c["law"]), modn.index(c["model"]), qs.index(c["quorum"]), rs.index(c["replicas"]))
        dec[idx] = decisions[ci] if decisions is not None else None
        verdict, hl[idx], ol[idx], hd[idx] = _fill_cell(V, G, idx, c, reps_by_cell[ci], exact[ci], conf, grid, dt, ps)
    data = {}
    for k, v in V.items():
        extra = ("percentile",) if "percentile" in k else (("replication",) if k.startswith("rep_") else ())
        data[k] = (_DIMS + extra, v, {"long_name": _META[k][0], "units": _META[k][1]})
    data["latency_count"] = (_DIMS + ("t",), hl, {"long_name": "pooled (all replications) workunits with latency in "
                                                              "[t, t + dt)", "units": "1"})
    data["latency_overflow"] = (_DIMS, ol, {"long_name": "pooled workunits with latency >= t_max + dt", "units": "1"})
    data["delay_count"] = (_DIMS + ("t",), hd,
                           {"long_name": "pooled workunits with delay in [t, t + dt)", "units": "1"})
    ds = xr.Dataset(data, coords={
        "law": ("law", np.array(lawn, dtype=object), {"long_name": "replica law name"}),
        "model": ("model", np.array(modn, dtype=object), {"long_name": "split_merge or fork_join (cancellation)"}),
        "quorum": ("quorum", np.array(qs), {"long_name": "quorum q", "units": "1"}),
        "replicas": ("replicas", np.array(rs), {"long_name": "replicas r", "units": "1"}),
        "percentile": ("percentile", ps, {"long_name": "probability level", "units": "1"}),
        "replication": ("replication", np.arange(nrep), {"long_name": "replication index (seed spawn key)",
                                                         "units": "1"}),
        "t": ("t", time_grid(t_max, dt), {"long_name": "time, left edge of histogram bin", "units": _U}),
    })
    at = lambda c: (lawn.index(c["law"]), modn.index(c["model"]), qs.index(c["quorum"]), rs.index(c["replicas"]))
    _guard_variables(ds, G, verdict, cs, at)
    if precision is not None:
        for name, (d, values, a) in precision_variables(dec, _DIMS, precision, _U).items():
            ds[name] = (d, values, a)
    ds.attrs["law_strings"] = json.dumps({c["law"]: str(c["spec"].replica_law) for c in cs})
    return ds
