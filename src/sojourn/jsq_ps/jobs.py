"""Every rule of the JSQ-PS study (``workflow/rules/jsq_ps.smk``) calls one function here, through
:func:`sojourn.core.job.run` (its log, timing and traceback). Each function is its own rerun trigger: its code
fingerprint (:func:`sojourn.core.fingerprint.fingerprint` of ``sojourn.jsq_ps.jobs:<name>``) covers the function,
the definitions of this module it uses and the modules they import — so imports stay inside the functions.

* ``simulate``: a block of cells (one service law, one R, the ρ of one interval), every replication of every
  cell one Dask task on the cell runner (:mod:`sojourn.core.runner`), cached per (cell, replication);
* ``approximate``: a block of M/M/R cells (one R, the ρ of one interval), one Dask task per cell running all
  its methods, cached per cell;
* ``approximate_laws``: a block of M/G/R cells (one law, one R, the ρ of one interval) by the methods that take a
  general service law (T), one Dask task per cell, cached per cell;
* ``merge_simulation``, ``merge_approximation``, ``merge_law_approximation``: the blocks into ``simulation.nc``,
  ``approximation.nc`` and ``law_approximation.nc``
  (streaming: memory is one block);
* ``compare``, ``accuracy``, ``figures``, ``reproduction``: the comparison and what is made from it.

Replication k of a cell is bit-identical whether computed now or earlier, in any worker, because its random
stream depends only on (seed, spec, k) (:mod:`sojourn.core.seeds`).
"""
from __future__ import annotations

import logging

LOG = logging.getLogger(__name__)

#: engine attrs that differ between the cells of a block (kept per cell in the block's ``cell_attrs``)
CELL_SPECIFIC = ("model", "spec", "seed_entropy", "title")

#: engine attrs a simulation block keeps (the rest is per replication or recomputable)
ENGINE_ATTRS = ("Conventions", "source", "sojourn_version", "git_commit", "model", "spec", "backend", "kernel",
                "horizon", "warmup", "cooldown", "dt", "t_max", "seed", "seed_entropy", "seed_recipe",
                "histogram_convention", "title")


def _run_window(simulation: dict, time_grid: dict) -> dict:
    """The simulation keywords of every replication of a block (the run window, backend and histogram grid)."""
    cooldown, warmup = simulation.get("cooldown"), simulation.get("warmup")  # null: the project's defaults
    return dict(horizon=float(simulation["horizon"]), warmup=float(warmup) if warmup is not None else None,
                cooldown=float(cooldown) if cooldown is not None else None,
                backend=str(simulation.get("backend", "fast")), dt=float(time_grid["dt"]),
                t_max=float(time_grid["t_max"]))


def simulate(client, *, service: str, law: str, R: int, rhos, mu: float, simulation: dict, time_grid: dict,
             code: str, output, cache):
    """Simulate the cells (service, R, ρ), ρ in ``rhos``: ``simulation['replications']`` replications each, or
    with ``simulation['precision']`` as many as each cell's target needs (:mod:`sojourn.core.precision`), into
    one file ``output`` (dims service, R, rho, replication, t, n). Cells that stop at different counts share the
    ``replication`` axis, padded (count 0, floats NaN, events -1) beyond each cell's ``replications_used``.
    ``cache``: this block's cache folder (:mod:`sojourn.core.runner`)."""
    import json

    import numpy as np
    import xarray as xr

    from ..core import precision as P
    from ..core import runner
    from .model import JSQPS
    from .naming import DEFAULT_PERCENTILE
    from ..core.runlength import format_length, from_dataset
    from .simulate import UNITS, concat_replications, simulate_replication, with_guard
    from .storage import SIM_FILL, SIM_VARS, select_rho, simulation_encoding

    sim, tg = simulation, time_grid
    rhos = [str(r) for r in rhos]
    n_rep = int(sim["replications"])
    precision = P.parse(sim.get("precision"), field="simulation.precision", t_max=float(tg["t_max"]),
                        default_at=DEFAULT_PERCENTILE)
    seed = int(sim["seed"])
    window = _run_window(sim, tg)
    specs = {rho: JSQPS.from_load(int(R), float(rho), mu=float(mu), service=law) for rho in rhos}
    cells = [runner.Cell(f"rho={rho}", runner.cell_key(specs[rho].to_dict(), window, seed, code), (specs[rho],))
             for rho in rhos]
    LOG.info(f"block {service} R={R} rho={','.join(rhos)}: {specs[rhos[0]].describe()}")

    def split(part, cell):
        used = int(part["replications_used"].values.ravel()[0]) if "replications_used" in part \
            else part.sizes["replication"]
        part = part[[v for v in SIM_VARS if v in part.data_vars]]
        return {int(k): part.sel(replication=[k]).squeeze(["service", "R", "rho"], drop=True)
                for k in part["replication"].values.tolist() if k < used}

    def estimate(cell, k, ds):
        edges = ds["t"].values + float(tg["dt"])
        return float(P.histogram_statistic(precision, ds["count"].values[0], ds["overflow"].values[0], edges,
                                           ds["mean"].values[0]))

    have, cached_attrs = runner.lookup(cache, cells, lambda ds, c: select_rho(ds, c.label[4:]), split)
    done = runner.run_cells(runner.DaskExecutor(client), cells, simulate_replication, replications=n_rep,
                            precision=precision, estimate=estimate, have=have, shared={"seed": seed, **window},
                            prefix=f"sim-{service}-R{R}")
    parts_by_cell, cell_attrs = [], {}
    for rho in rhos:
        results = done[f"rho={rho}"].results
        parts = [p[[v for v in SIM_VARS if v in p.data_vars]] for p in results]
        fresh = [p for k, p in enumerate(results) if k not in have.get(f"rho={rho}", {})]
        attrs = dict(fresh[0].attrs) if fresh else dict(cached_attrs[f"rho={rho}"])
        for p in parts:  # cached parts come from this block's own files (same content key): same attrs
            p.attrs = dict(attrs)
        ds = with_guard(concat_replications(parts) if len(parts) > 1 else parts[0], specs[rho])
        if not int(ds["run_valid"]):  # the run-length guard (sojourn.core.runlength): said, not hidden
            v = from_dataset(ds)
            need = format_length(v.needed_window + float(ds.attrs["warmup"]) + float(ds.attrs["cooldown"]))
            LOG.warning(f"{service} R={R} rho={rho}: run too short to trust ({v.describe()}; predicted relative "
                        f"standard error of the mean {100 * v.relative_se:.2g} %); needs jsq_ps.simulation.horizon >= "
                        f"{need} (same warm-up and cool-down) at {v.replications} replications, or more replications "
                        "(sojourn.core.runlength; the cell is kept, marked run_valid = 0)")
        ds = ds.expand_dims(service=[service], R=[int(R)], rho=[float(rho)])
        ds["spec_hash"] = xr.DataArray(
            np.array([[[int(json.loads(attrs["seed_entropy"])[1])]]], dtype=np.uint64), dims=("service", "R", "rho"),
            attrs={"long_name": "64-bit hash of the cell's spec (second entropy word of every replication's "
                                "SeedSequence)", "units": "1"})
        if precision is not None:
            decision = np.empty((1, 1, 1), dtype=object)
            decision[0, 0, 0] = done[f"rho={rho}"].decision
            for name, (dims, values, a) in P.variables(decision, ("service", "R", "rho"), precision, UNITS).items():
                ds[name] = (dims, values, a)
        ds.attrs = {}
        cell_attrs[rho] = attrs
        parts_by_cell.append(ds)
    block = parts_by_cell[0] if len(parts_by_cell) == 1 else xr.concat(
        parts_by_cell, dim="rho", data_vars="all", coords="different", compat="equals", join="outer",
        fill_value=SIM_FILL, combine_attrs="override")  # the variables keep their attrs; the block's are set below
    first = cell_attrs[rhos[0]]
    block.attrs = {k: first[k] for k in ENGINE_ATTRS if k in first and k not in CELL_SPECIFIC}
    block.attrs["pipeline_config"] = json.dumps({"code": code, "law": law, "sim": sim, "tg": tg}, sort_keys=True,
                                                default=str)
    if precision is not None:
        block.attrs.update(P.attrs(precision))
    block.attrs["cell_attrs"] = json.dumps({f"rho={rho}": cell_attrs[rho] for rho in rhos}, sort_keys=True,
                                           default=str)  # by cell label (sojourn.core.cache.cached_cells)
    runner.store(block, cache, cells, precision or n_rep, output, simulation_encoding(block))
    return output


def approximate(client, *, R: int, rhos, mu: float, methods, L1: int, L2: int, time_grid: dict, code: str,
                share_corrected: bool, exact_budget: dict, output, cache):
    """All ``methods`` for the M/M/R cells (R, ρ), ρ in ``rhos``: one Dask task per cell
    (:func:`sojourn.jsq_ps.solve.cell.approximate_cell`), written as one file ``output`` that holds each distinct
    chain once (with ``share_corrected`` the copies B*, D*, E*, F* are left out and the merge writes them back:
    :func:`sojourn.jsq_ps.storage.stored_once`); cells stored before under the same content key in ``cache`` are
    reused."""
    from ..core import runner
    from ..core.timegrid import time_grid as grid
    from .solve.cell import approximate_cell
    from .solve.guards import describe
    from .storage import APPROX_ATTRS, fixed_n, select_rho, stored_once, to_storage

    rhos = [str(r) for r in rhos]
    copies = stored_once(methods, share_corrected)
    t = grid(float(time_grid["t_max"]), float(time_grid["dt"]))
    hyper = {"L1": int(L1), "L2": int(L2)}
    tg = {k: time_grid[k] for k in sorted(time_grid)}
    budget = {k: exact_budget[k] for k in sorted(exact_budget)} if "exact" in methods and exact_budget else None

    def key(rho):
        parts = ["approximation", int(R), str(rho), float(mu), list(methods), int(L1), int(L2), tg, code,
                 bool(share_corrected), "stored once"]
        return runner.cell_key(*parts, *([budget] if budget is not None else []))

    cells = [runner.Cell(f"rho={rho}", key(rho), (int(R), float(rho), float(mu), tuple(methods), t, hyper,
                                                   bool(share_corrected), exact_budget)) for rho in rhos]
    have, cached_attrs = runner.lookup(cache, cells, lambda ds, c: select_rho(ds, c.label[4:]),
                                       lambda part, c: {0: part})
    done = runner.run_cells(runner.DaskExecutor(client), cells, approximate_cell, what="approximation cells",
                            prefix=f"approx-R{R}", have=have)
    def fresh(rho, ds):
        for m, reason in zip(ds["approximation"].values, ds["validity_reason"].values):
            if int(reason):
                LOG.info(f"  warning: {m} not valid at R={R} rho={rho}: {describe(int(reason))}")
        ds = ds.drop_sel(approximation=list(copies))  # each distinct chain stored once: the merge copies it back
        ds = to_storage(fixed_n(ds, int(L2)).expand_dims(R=[int(R)], rho=[float(rho)]))
        for name, (long_name, units) in APPROX_ATTRS.items():
            if name in ds:
                ds[name].attrs = {**ds[name].attrs, "long_name": long_name, "units": units}
        return ds, {k: v for k, v in ds.attrs.items() if k in ("title", "model", "spec", "hyper", "shared_corrected",
                                                               "exact_plan")}

    # the variables keep their attrs (sf's comment, units); the block's are set by _store_block
    config = {"L1": int(L1), "L2": int(L2), "methods": list(methods), "code": code, "time_grid": time_grid,
              "share_corrected": bool(share_corrected), "exact_budget": exact_budget}
    return _store_block(rhos, done, cached_attrs, fresh, "override", config, cache, cells, output)


def _store_block(rhos, done, cached_attrs, fresh, combine_attrs, config, cache, cells, output):
    """One approximation block from its cells (label ``rho=<ρ>``): a reused cell as cached, a new one through
    ``fresh(rho, ds) -> (ds, its attrs)``; concatenated along ρ, its provenance, pipeline config and cells' attrs
    set, stored with its cache entries (:func:`sojourn.core.runner.store`)."""
    import json

    import xarray as xr

    from ..core import runner
    from ..core.io import provenance
    from .storage import approximation_encoding

    parts, cell_attrs = [], {}
    for rho in rhos:
        ds = done[f"rho={rho}"].results[0]
        if done[f"rho={rho}"].reused:
            parts.append(ds)
            cell_attrs[rho] = cached_attrs[f"rho={rho}"]
            continue
        ds, cell_attrs[rho] = fresh(rho, ds)
        ds.attrs = {}
        parts.append(ds)
    block = parts[0] if len(parts) == 1 else xr.concat(
        parts, dim="rho", data_vars="all", coords="different", compat="equals", join="outer",
        combine_attrs=combine_attrs)
    block.attrs = {**provenance(None), "pipeline_config": json.dumps(config, sort_keys=True),
                   "cell_attrs": json.dumps({f"rho={rho}": cell_attrs[rho] for rho in rhos}, sort_keys=True,
                                            default=str)}
    runner.store(block, cache, cells, "cells", output, approximation_encoding(block))
    return output


def approximate_laws(client, *, service: str, law: str, R: int, rhos, mu: float, methods, time_grid: dict, code: str,
                     output, cache):
    """The methods that take a general service law (``mgr.methods``: T, :mod:`sojourn.jsq_ps.solve.tail_ph`) at the
    M/G/R cells (service, R, ρ), ρ in ``rhos``: one Dask task per cell
    (:func:`sojourn.jsq_ps.solve.cell.approximate_law_cell`), one file ``output`` (dims service, R, rho,
    approximation, t, percentile), the CDF stored as its survival function like the M/M/R approximations; cells
    stored before under the same content key in ``cache`` are reused."""
    from ..core import runner
    from ..core.timegrid import time_grid as grid
    from .solve.cell import approximate_law_cell
    from .storage import select_rho, to_storage

    rhos = [str(r) for r in rhos]
    t = grid(float(time_grid["t_max"]), float(time_grid["dt"]))
    tg = {k: time_grid[k] for k in sorted(time_grid)}
    cells = [runner.Cell(f"rho={rho}", runner.cell_key("law approximation", str(law), int(R), str(rho), float(mu),
                                                       list(methods), tg, code),
                         (str(law), int(R), float(rho), float(mu), tuple(methods), t)) for rho in rhos]
    have, cached_attrs = runner.lookup(cache, cells, lambda ds, c: select_rho(ds, c.label[4:]),
                                       lambda part, c: {0: part})
    done = runner.run_cells(runner.DaskExecutor(client), cells, approximate_law_cell, what="law approximation cells",
                            prefix=f"law-{service}-R{R}", have=have)
    def fresh(rho, ds):
        ds = to_storage(ds).expand_dims(service=[service], R=[int(R)], rho=[float(rho)])
        return ds, dict(ds.attrs)

    config = {"law": law, "methods": list(methods), "code": code, "time_grid": time_grid}
    return _store_block(rhos, done, cached_attrs, fresh, "drop", config, cache, cells, output)


def merge_law_approximation(*, inputs, output, settings: dict, code: str = ""):
    """Law-approximation blocks → ``output`` (``law_approximation.nc``)."""
    from .storage import merge_law_approximation as merge

    return merge(inputs, output, settings)


def merge_simulation(*, inputs, output, settings: dict, code: str = ""):
    """Simulation blocks → ``output``; ``settings``: the grid, mgr, time_grid and simulation sections."""
    from .storage import merge_simulation as merge

    return merge(inputs, output, settings)


def merge_approximation(*, inputs, output, settings: dict, code: str = ""):
    """Approximation blocks → ``output`` on the configured ``approximation`` axis."""
    from .storage import merge_approximation as merge

    return merge(inputs, output, settings)


def compare(*, simulation, approximation, output, settings: dict, code: str = "", law_approximation=None):
    """``comparison.nc``: Wasserstein distances, percentile errors with CIs, best and recommended methods; with
    ``law_approximation`` (the M/G/R cells' law methods) their percentile errors against each law's simulation."""
    from .compare import write_comparison

    return write_comparison(simulation, approximation, output, settings, law_approximation)


def accuracy(*, comparison, output, settings: dict, code: str = ""):
    """The accuracy table ``sojourn plan`` chooses its method from."""
    from .accuracy import accuracy_from_comparison

    return accuracy_from_comparison(comparison, output, settings)


def figures(*, comparison, simulation, approximation, outdir, settings: dict, code: str = "", key_results=None):
    """Every figure of the study's registry (:data:`sojourn.jsq_ps.plots.FIGURES`) its figures job draws for the
    config ``settings`` (the sections figures, grid, mgr)."""
    from .plots import all_figures

    out = all_figures(comparison, simulation, approximation, outdir, settings,
                      formats=settings["figures"]["formats"], dpi=settings["figures"]["dpi"])
    if key_results is not None:  # the report's opening table (stem: <key_results>.csv/.html)
        from ..core.io import read_netcdf
        from .plots import key_results as table

        out += table(read_netcdf(comparison), key_results)
    return out


def reproduction(*, comparison, output, report, outdir, settings: dict, code: str = "", published: str = "",
                 caption=None):
    """The paper's §6 tables beside ours: ``reproduction.nc``, its figures and the report page with its caption."""
    from .reproduction import write_reproduction

    return write_reproduction(comparison, output, outdir, settings, report_path=report, caption_path=caption)
