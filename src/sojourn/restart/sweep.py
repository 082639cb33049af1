"""The pipeline's simulation job: one example's restart-rate sweep, every replication one Dask task.

For each semantics s (``signal``, ``timeout_exponential``, ``timeout_deterministic``) and restart rate r
(:func:`sojourn.restart.simulate.spec_for`), ``replications`` replications are submitted at once with
:func:`sojourn.restart.simulate.simulate_replication` and gathered in order; the result is one file with
dims (semantics, restart_rate, replication, t, restarts, type, station, queue). Replication k of a point
depends only on (seed, spec, k), so results do not depend on the cluster.
"""
from __future__ import annotations

import json
import time

import numpy as np
import xarray as xr

from ..core.cache import cached_cells, content_key, store_block
from ..core.io import log_line, provenance, report_progress, write_netcdf
from ..core.precision import FILL as PRECISION_FILL
from ..core.precision import attrs as precision_attrs
from ..core.precision import histogram_statistic, run_replications
from ..core.precision import parse as parse_precision
from ..core.precision import variables as precision_variables
from ..core.timegrid import time_grid
from .files import load_model
from .grid import restart_rates, sim_kwargs
from .simulate import DEFAULT_PERCENTILE, simulate_replication, spec_for

#: per-replication variables kept in the sweep file (the rest is recomputable)
SIM_VARS = ("count", "overflow", "n_customers", "sum", "sumsq", "mean", "max", "restart_count", "mean_restarts",
            "mean_number_type", "mean_number_station", "mean_number", "throughput", "restarts_per_time",
            "signal_hit_rate", "timeout_rate", "events", "unstable", "wall_time")


#: gap values of the integer variables where a point's replications stop before the longest one's
SIM_FILL = {"count": 0, "overflow": 0, "n_customers": 0, "restart_count": 0, "events": -1, "unstable": 0,
            **PRECISION_FILL}


def point_label(semantics: str, rate: float) -> str:
    return f"{semantics}/r{rate:.6g}"


def precision_for(sim: dict):
    """The sweeps' precision target (None: a fixed count); ValueError naming the key."""
    return parse_precision(sim.get("precision"), field="simulation.precision", t_max=float(sim["t_max"]),
                           default_at=DEFAULT_PERCENTILE, default_statistic="mean")


def simulate_sweep(client, *, name: str, example: dict, sim: dict, code: str, output, log=None, cache_dir=None):
    """Simulate ``example`` (config entry: model, rates, semantics, horizon, warmup) and write ``output``.

    ``sim['replications']`` replications per point, or with ``sim['precision']`` as many as each point's
    target needs (:mod:`sojourn.core.precision`; the statistic is of the response time). Points that stop at
    different counts share the ``replication`` axis, padded beyond each point's ``replications_used``.
    ``cache_dir`` (optional): the output is stored there under its content key with each point's key, so a
    rerun — replications added, a tighter target — simulates only replications not stored before.
    """
    net = load_model(example["model"])
    rates = restart_rates(example["rates"])
    sems = list(example["semantics"])
    n_rep, seed = int(sim["replications"]), int(sim["seed"])
    precision = precision_for(sim)
    kw = sim_kwargs(sim, example)
    points = [(s, r) for s in sems for r in rates]
    specs = {p: spec_for(net, p[0], p[1]) for p in points}
    keys = {point_label(*p): content_key(specs[p].to_json(), kw, seed, code) for p in points}
    by_label = {point_label(*p): p for p in points}
    have: dict = {}
    if cache_dir is not None:
        select = lambda ds, lab: ds.sel(semantics=by_label[lab][0], restart_rate=by_label[lab][1])
        for lab, (old, _) in cached_cells(cache_dir, keys, select, log=log).items():
            used = int(old["replications_used"]) if "replications_used" in old else old.sizes["replication"]
            old = old[list(SIM_VARS)].drop_vars(["semantics", "restart_rate"], errors="ignore")
            have[by_label[lab]] = {k: old.isel(replication=[k]) for k in range(used)}
    cached = f"{sum(len(v) for v in have.values())} replications of {len(have)} points cached"
    what = (f"{n_rep} replications = {len(points) * n_rep} Dask tasks" if precision is None
            else f"replications to the precision target ({precision.describe()}), one Dask task each")
    log_line(log, f"{name}: {net.describe()}; {len(sems)} semantics x {len(rates)} rates x {what} ({cached})")
    t0 = time.perf_counter()

    def submit(jobs):
        futures = client.map(simulate_replication, [specs[p] for p, _ in jobs], [k for _, k in jobs],
                             [seed] * len(jobs), pure=False,
                             key=[f"restart-{name}-{p[0]}-r{p[1]:.6g}-rep{k}-{code[:8]}" for p, k in jobs], **kw)
        step = max(1, len(jobs) // 20)
        report_progress(futures, lambda i, n: (i % step == 0 or i == n) and log_line(
            log, f"  [{i}/{n}] replications done ({time.perf_counter() - t0:.1f} s)"))
        return client.gather(futures)

    edges = time_grid(float(sim["t_max"]), float(sim["dt"])) + float(sim["dt"])

    def estimate(_, k, ds):
        if int(ds["unstable"].values[0]) > 0:
            return np.nan  # stopped: no stationary measures, no interval
        return float(histogram_statistic(precision, ds["count"].values[0], ds["overflow"].values[0], edges,
                                         ds["mean"].values[0]))

    done = run_replications(points, submit, precision=precision, replications=n_rep, estimate=estimate, have=have,
                            log=(lambda text: log_line(log, text)) if precision is not None else None,
                            name=lambda p: point_label(*p))
    ref = next((r for p in points for r in done[p].results if "seed_recipe" in r.attrs), None)
    ref = ref if ref is not None else done[points[0]].results[0]
    attrs_of = {v: dict(ref[v].attrs) for v in SIM_VARS}
    coord_attrs = {c: dict(ref[c].attrs) for c in ("t", "restarts", "type", "station", "queue", "replication")}
    cells = []
    for s in sems:
        row = [xr.concat([p[list(SIM_VARS)].drop_attrs() for p in done[(s, r)].results], dim="replication",
                         data_vars="all", coords="minimal", compat="override", join="exact") for r in rates]
        cells.append(xr.concat(row, dim=xr.DataArray(rates, dims="restart_rate", name="restart_rate"),
                               data_vars="all", coords="minimal", compat="override", join="outer",
                               fill_value=SIM_FILL))
    out = xr.concat(cells, dim=xr.DataArray(sems, dims="semantics", name="semantics"), data_vars="all",
                    coords="minimal", compat="override", join="outer", fill_value=SIM_FILL)
    out = out.transpose("semantics", "restart_rate", "replication", ...)
    for v in SIM_VARS:
        out[v].attrs = attrs_of[v]
    for c, a in coord_attrs.items():
        out[c].attrs = a
    if precision is not None:
        dec = np.array([[done[(s, r)].decision for r in rates] for s in sems], dtype=object)
        for v, (dims, values, a) in precision_variables(dec, ("semantics", "restart_rate"), precision, "time").items():
            out[v] = (dims, values, a)
    out["restart_rate"].attrs = {"long_name": "restart rate r: signal rate g = r, exponential timeouts of rate r, "
                                              "deterministic timeouts tau = 1/r", "units": "1/time"}
    out["semantics"].attrs = {"long_name": "restart semantics"}
    out["wall_time"].attrs["long_name"] += " (varies run to run)"
    extra = {"replications": n_rep} if precision is None else {
        "replications": "precision-driven: see replications_used", **precision_attrs(precision),
        "precision_statistic_of": "response time"}
    out.attrs = provenance(
        {"example": example, "simulation": sim}, title=f"Restart study, {name}: simulated restart-rate sweep",
        model=net.describe(), spec=net.to_json(), code_fingerprint=code, example=name,
        seed_recipe=ref.attrs["seed_recipe"], histogram_convention=ref.attrs["histogram_convention"],
        spec_recipe="spec = sojourn.restart.simulate.spec_for(model, semantics, restart_rate); replication k "
                    "uses sojourn.core.seeds.replication_rng(seed, spec, k)", seed=seed, **extra,
        **{k: v for k, v in kw.items()})
    unstable = int((out["unstable"] > 0).sum())
    log_line(log, f"{name}: done in {time.perf_counter() - t0:.1f} s; {unstable} replications stopped as unstable")
    if cache_dir is not None:
        out.attrs["cell_keys"] = json.dumps({point_label(*p): keys[point_label(*p)] for p in points}, sort_keys=True)
        store_block(out, cache_dir, content_key(keys, n_rep if precision is None else precision.to_dict()), output,
                    None)
    else:
        write_netcdf(out, output)
    return output
