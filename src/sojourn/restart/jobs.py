"""Every rule of the restart study (``workflow/rules/restart.smk``) calls one function here, through
:func:`sojourn.core.job.run`; each function is its own rerun trigger (``sojourn.restart.jobs:<name>``), so
imports stay inside the functions.

* ``solve``: one example's product form over a fine grid of signal rates, and g*;
* ``simulate``: one example's restart-rate sweep: for each semantics s (``signal``, ``timeout_exponential``,
  ``timeout_deterministic``) and restart rate r (:func:`sojourn.restart.simulate.spec_for`), every replication one
  Dask task on the cell runner (:mod:`sojourn.core.runner`), cached per (point, replication) — a rate added to an
  explicit list of rates simulates only that rate's replications; one file with dims (semantics, restart_rate,
  replication, t, restarts, type, station, queue);
* ``compare``: the sweep beside the product form (CIs, coverage, optima);
* ``figures``: every figure of the study's registry for the example.

Replication k of a point depends only on (seed, spec, k), so results do not depend on the cluster.
"""
from __future__ import annotations

import logging

LOG = logging.getLogger(__name__)

#: per-replication variables kept in the sweep file (the rest is recomputable)
SIM_VARS = ("count", "overflow", "n_customers", "sum", "sumsq", "mean", "max", "restart_count", "mean_restarts",
            "mean_number_type", "mean_number_station", "mean_number", "throughput", "restarts_per_time",
            "signal_hit_rate", "timeout_rate", "events", "unstable", "wall_time")


def point_label(semantics: str, rate: float) -> str:
    return f"{semantics}/r{rate:.6g}"


def solve(*, name: str, example: dict, analytic: dict, code: str, output, model: str = ""):
    """E[T], E[N], utilisation and restarts per unit time at ``analytic['points']`` log-spaced signal rates over
    the example's sweep range plus the sweep's own rates (dim ``signal_rate``), and g* (bounded search)."""
    import numpy as np
    import xarray as xr

    from ..core.io import provenance, write_netcdf
    from .config import restart_rates
    from .files import load_model
    from .solve import optimal_signal_rate, solve as solve_network

    net = load_model(example["model"])
    rates = restart_rates(example["rates"])
    grid = np.unique(np.concatenate([np.geomspace(rates[0], rates[-1], int(analytic["points"])), rates]))
    sols = [solve_network(net.with_signal_rate(float(g))) for g in grid]
    opt = optimal_signal_rate(net, bounds=tuple(analytic["bounds"]))
    LOG.info(f"{name}: {net.describe()}; product form at {len(grid)} signal rates; g* = {opt.signal_rate:.6g}")
    ds = xr.Dataset(
        {
            "response_time": ("signal_rate", [s.response_time for s in sols],
                              {"long_name": "product-form network mean response time E[T]", "units": "time"}),
            "mean_number": ("signal_rate", [float(s.mean_number.sum()) for s in sols],
                            {"long_name": "product-form mean number of jobs E[N]", "units": "1"}),
            "utilisation": ("signal_rate", [float(s.queue_load.sum()) for s in sols],
                            {"long_name": "utilisation (sum of loads rho)", "units": "1"}),
            "restart_rate": ("signal_rate", [s.restart_rate for s in sols],
                             {"long_name": "successful restarts per unit time", "units": "1/time"}),
            "mean_number_station": (("signal_rate", "station"), np.array([s.mean_number_station for s in sols]),
                                    {"long_name": "product-form mean number of jobs of (queue, class)", "units": "1"}),
            "g_star": ((), opt.signal_rate, {"long_name": "optimal signal rate g* (bounded search)", "units": "1/time"}),
            "response_time_at_g_star": ((), opt.response_time, {"long_name": "E[T] at g*", "units": "time"}),
            "response_time_no_restart": ((), opt.response_time_without,
                                         {"long_name": "E[T] without restart signals", "units": "time"}),
        },
        coords={"signal_rate": ("signal_rate", grid, {"long_name": "restart signal rate g", "units": "1/time"}),
                "station": ("station", list(net.layout.station_labels), {"long_name": "queue/class"})},
    )
    ds.attrs = provenance({"example": example, "analytic": analytic}, title=f"Restart study, {name}: product form",
                          model=net.describe(), spec=net.to_json(), example=name, code_fingerprint=code,
                          bounds=list(opt.bounds))
    write_netcdf(ds, output)
    return output


def simulate(client, *, name: str, example: dict, simulation: dict, time_grid: dict, code: str, output, cache,
             model: str = ""):
    """Simulate ``example`` (config entry: model, rates, semantics, run window) into ``output``:
    ``simulation['replications']`` replications per point, or with ``simulation['precision']`` as many as each
    point's target needs (:mod:`sojourn.core.precision`; the statistic is of the response time). Points that stop
    at different counts share the ``replication`` axis, padded beyond each point's ``replications_used``."""
    import time

    import numpy as np
    import xarray as xr

    from ..core import runner
    from ..core.io import provenance
    from ..core.precision import FILL as PRECISION_FILL
    from ..core.precision import attrs as precision_attrs
    from ..core.precision import histogram_statistic
    from ..core.precision import variables as precision_variables
    from ..core.timegrid import time_grid as grid
    from .config import precision_for, restart_rates, sim_kwargs
    from .files import load_model
    from ..core.replications import check_window
    from ..core.runlength import format_length
    from ..core.runlength import variables as run_variables
    from .simulate import guard as run_guard
    from .simulate import simulate_replication, spec_for

    sim = simulation
    net = load_model(example["model"])
    rates = restart_rates(example["rates"])
    sems = list(example["semantics"])
    n_rep, seed = int(sim["replications"]), int(sim["seed"])
    precision = precision_for(sim, time_grid)
    kw = sim_kwargs(sim, time_grid, example)
    points = [(s, r) for s in sems for r in rates]
    specs = {p: spec_for(net, p[0], p[1]) for p in points}
    cells = [runner.Cell(point_label(*p), runner.cell_key(specs[p].to_json(), kw, seed, code), (specs[p],))
             for p in points]
    by_label = {point_label(*p): p for p in points}
    what = (f"{n_rep} replications = {len(points) * n_rep} Dask tasks" if precision is None
            else f"replications to the precision target ({precision.describe()}), one Dask task each")
    LOG.info(f"{name}: {net.describe()}; {len(sems)} semantics x {len(rates)} rates x {what}")
    t0 = time.perf_counter()

    def split(part, cell):
        used = int(part["replications_used"]) if "replications_used" in part else part.sizes["replication"]
        part = part[list(SIM_VARS)].drop_vars(["semantics", "restart_rate"], errors="ignore")
        return {k: part.isel(replication=[k]) for k in range(used)}

    edges = grid(float(time_grid["t_max"]), float(time_grid["dt"])) + float(time_grid["dt"])

    def estimate(cell, k, ds):
        if int(ds["unstable"].values[0]) > 0:
            return np.nan  # stopped: no stationary measures, no interval
        return float(histogram_statistic(precision, ds["count"].values[0], ds["overflow"].values[0], edges,
                                         ds["mean"].values[0]))

    have, _ = runner.lookup(cache, cells, lambda ds, c: ds.sel(semantics=by_label[c.label][0],
                                                                 restart_rate=by_label[c.label][1]), split)
    done = runner.run_cells(runner.DaskExecutor(client), cells, simulate_replication, replications=n_rep,
                            precision=precision, estimate=estimate, have=have, shared={"seed": seed, **kw},
                            prefix=f"restart-{name}")
    by_point = {p: done[point_label(*p)] for p in points}
    ref = next((r for p in points for r in by_point[p].results if "seed_recipe" in r.attrs), None)
    ref = ref if ref is not None else by_point[points[0]].results[0]
    attrs_of = {v: dict(ref[v].attrs) for v in SIM_VARS}
    coord_attrs = {c: dict(ref[c].attrs) for c in ("t", "restarts", "type", "station", "queue", "replication")}
    fill = {"count": 0, "overflow": 0, "n_customers": 0, "restart_count": 0, "events": -1, "unstable": 0,
            **PRECISION_FILL}  # gap values where a point's replications stop before the longest one's
    rows, verdicts = [], {}
    H, W, C = check_window(kw["horizon"], kw.get("warmup"), kw.get("cooldown"))
    window = H - W - C
    for s in sems:
        row = [xr.concat([p[list(SIM_VARS)].drop_attrs() for p in by_point[(s, r)].results], dim="replication",
                         data_vars="all", coords="minimal", compat="override", join="exact") for r in rates]
        for r, part in zip(rates, row):  # the run-length guard of each point (sojourn.core.runlength)
            verdicts[(s, r)] = run_guard(specs[(s, r)], part, window)
        rows.append(xr.concat(row, dim=xr.DataArray(rates, dims="restart_rate", name="restart_rate"),
                              data_vars="all", coords="minimal", compat="override", join="outer", fill_value=fill))
    out = xr.concat(rows, dim=xr.DataArray(sems, dims="semantics", name="semantics"), data_vars="all",
                    coords="minimal", compat="override", join="outer", fill_value=fill)
    out = out.transpose("semantics", "restart_rate", "replication", ...)
    for v in SIM_VARS:
        out[v].attrs = attrs_of[v]
    for c, a in coord_attrs.items():
        out[c].attrs = a
    if precision is not None:
        dec = np.array([[by_point[(s, r)].decision for r in rates] for s in sems], dtype=object)
        for v, (dims, values, a) in precision_variables(dec, ("semantics", "restart_rate"), precision, "time").items():
            out[v] = (dims, values, a)
    guard_vars = {}
    for i, s in enumerate(sems):
        for j, r in enumerate(rates):
            for v, (_, value, a) in run_variables(verdicts[(s, r)]).items():
                guard_vars.setdefault(v, (np.empty((len(sems), len(rates)), dtype=np.asarray(value).dtype), a))
                guard_vars[v][0][i, j] = value
    for v, (values, a) in guard_vars.items():
        out[v] = (("semantics", "restart_rate"), values, {k: x for k, x in a.items() if k not in ("window", "replications")})
    short = [p for p in points if not verdicts[p].valid]
    if short:
        need = max(verdicts[p].needed_window for p in short if np.isfinite(verdicts[p].needed_window)) \
            if any(np.isfinite(verdicts[p].needed_window) for p in short) else float("nan")
        LOG.warning(f"{name}: {len(short)} of {len(points)} points too short to trust (run_valid = 0, "
                    f"sojourn.core.runlength; kept, never the best rate): {', '.join(point_label(*p) for p in short)}; "
                    f"needs examples.{name}.horizon >= {format_length(need + W + C)} at this replication count")
    out["restart_rate"].attrs = {"long_name": "restart rate r: signal rate g = r, exponential timeouts of rate r, "
                                              "deterministic timeouts tau = 1/r", "units": "1/time"}
    out["semantics"].attrs = {"long_name": "restart semantics"}
    out["wall_time"].attrs["long_name"] += " (varies run to run)"
    extra = {"replications": n_rep} if precision is None else {
        "replications": "precision-driven: see replications_used", **precision_attrs(precision),
        "precision_statistic_of": "response time"}
    out.attrs = provenance(
        {"example": example, "simulation": simulation, "time_grid": time_grid},
        title=f"Restart study, {name}: simulated restart-rate sweep",
        model=net.describe(), spec=net.to_json(), code_fingerprint=code, example=name,
        seed_recipe=ref.attrs["seed_recipe"], histogram_convention=ref.attrs["histogram_convention"],
        spec_recipe="spec = sojourn.restart.simulate.spec_for(model, semantics, restart_rate); replication k "
                    "uses sojourn.core.seeds.replication_rng(seed, spec, k)", seed=seed, **extra,
        **{k: v for k, v in kw.items()})
    unstable = int((out["unstable"] > 0).sum())
    simulated, reused = runner.outcome_counts(done)
    LOG.info(f"{name}: done in {time.perf_counter() - t0:.1f} s; {simulated} replications simulated, {reused} from "
             f"the cache; {unstable} stopped as unstable")
    runner.store(out, cache, cells, precision or n_rep, output)
    return output


def compare(*, product_form, simulation, output, settings: dict, code: str = ""):
    """The sweep beside the product form (:func:`sojourn.restart.compare.write_comparison`)."""
    from .compare import write_comparison

    return write_comparison(product_form, simulation, output, settings)


def figures(*, product_form, comparison, outdir, examples, figures: dict, code: str = "", key_results=None):
    """Every example's figures (:data:`sojourn.restart.plots.FIGURES`) into ``outdir``, each with its caption, and its
    key-result table: ``product_form``, ``comparison``, ``key_results`` (stems) are lists in the order of
    ``examples``."""
    from ..core.io import read_netcdf
    from .plots import all_figures
    from .plots import key_results as table

    out = []
    for k, name in enumerate(examples):
        out += all_figures(product_form[k], comparison[k], outdir, name, formats=figures["formats"], dpi=figures["dpi"])
        if key_results is not None:  # the report's opening table of the example (stem: <key_results>.csv/.html)
            out += table(read_netcdf(product_form[k]), read_netcdf(comparison[k]), key_results[k], name)
    return out
