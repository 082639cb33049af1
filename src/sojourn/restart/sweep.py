"""The pipeline's simulation job: one example's restart-rate sweep, every replication one Dask task.

For each semantics s (``signal``, ``timeout_exponential``, ``timeout_deterministic``) and restart rate r
(:func:`sojourn.restart.simulate.spec_for`), ``replications`` replications are submitted at once with
:func:`sojourn.restart.simulate.simulate_replication` and gathered in order; the result is one file with
dims (semantics, restart_rate, replication, t, restarts, type, station, queue). Replication k of a point
depends only on (seed, spec, k), so results do not depend on the cluster.
"""
from __future__ import annotations

import time

import numpy as np
import xarray as xr

from ..core.io import log_line, provenance, report_progress, write_netcdf
from .files import load_model
from .grid import restart_rates, sim_kwargs
from .simulate import concat_replications, simulate_replication, spec_for

#: per-replication variables kept in the sweep file (the rest is recomputable)
SIM_VARS = ("count", "overflow", "n_customers", "sum", "sumsq", "mean", "max", "restart_count", "mean_restarts",
            "mean_number_type", "mean_number_station", "mean_number", "throughput", "restarts_per_time",
            "signal_hit_rate", "timeout_rate", "events", "unstable", "wall_time")


def simulate_sweep(client, *, name: str, example: dict, sim: dict, code: str, output, log=None):
    """Simulate ``example`` (config entry: model, rates, semantics, horizon, warmup) and write ``output``."""
    net = load_model(example["model"])
    rates = restart_rates(example["rates"])
    sems = list(example["semantics"])
    n_rep, seed = int(sim["replications"]), int(sim["seed"])
    kw = sim_kwargs(sim, example)
    points = [(s, r) for s in sems for r in rates]
    specs = {p: spec_for(net, p[0], p[1]) for p in points}
    jobs = [(p, k) for p in points for k in range(n_rep)]
    log_line(log, f"{name}: {net.describe()}; {len(sems)} semantics x {len(rates)} rates x {n_rep} replications "
                  f"= {len(jobs)} Dask tasks")
    t0 = time.perf_counter()
    futures = client.map(simulate_replication, [specs[p] for p, _ in jobs], [k for _, k in jobs], [seed] * len(jobs),
                         pure=False, key=[f"restart-{name}-{p[0]}-r{p[1]:.6g}-rep{k}-{code[:8]}" for p, k in jobs],
                         **kw)
    step = max(1, len(jobs) // 20)
    report_progress(futures, lambda i, n: (i % step == 0 or i == n) and log_line(
        log, f"  [{i}/{n}] replications done ({time.perf_counter() - t0:.1f} s)"))
    results = client.gather(futures)
    by_point: dict = {}
    for (p, _), ds in zip(jobs, results):
        by_point.setdefault(p, []).append(ds[list(SIM_VARS)])
    cells = []
    for s in sems:
        row = [concat_replications(by_point[(s, r)]).drop_attrs() for r in rates]
        cells.append(xr.concat(row, dim=xr.DataArray(rates, dims="restart_rate", name="restart_rate"),
                               data_vars="all", coords="minimal", compat="override", join="exact"))
    out = xr.concat(cells, dim=xr.DataArray(sems, dims="semantics", name="semantics"), data_vars="all",
                    coords="minimal", compat="override", join="exact")
    for v in SIM_VARS:
        out[v].attrs = dict(results[0][v].attrs)
    for c in ("t", "restarts", "type", "station", "queue", "replication"):
        out[c].attrs = dict(results[0][c].attrs)
    out["restart_rate"].attrs = {"long_name": "restart rate r: signal rate g = r, exponential timeouts of rate r, "
                                              "deterministic timeouts tau = 1/r", "units": "1/time"}
    out["semantics"].attrs = {"long_name": "restart semantics"}
    out["wall_time"].attrs["long_name"] += " (varies run to run)"
    out.attrs = provenance(
        {"example": example, "simulation": sim}, title=f"Restart study, {name}: simulated restart-rate sweep",
        model=net.describe(), spec=net.to_json(), code_fingerprint=code, example=name,
        seed_recipe=results[0].attrs["seed_recipe"], histogram_convention=results[0].attrs["histogram_convention"],
        spec_recipe="spec = sojourn.restart.simulate.spec_for(model, semantics, restart_rate); replication k "
                    "uses sojourn.core.seeds.replication_rng(seed, spec, k)", seed=seed, replications=n_rep,
        **{k: v for k, v in kw.items()})
    unstable = int((out["unstable"] > 0).sum())
    log_line(log, f"{name}: done in {time.perf_counter() - t0:.1f} s; {unstable} replications stopped as unstable")
    write_netcdf(out, output)
    return output
