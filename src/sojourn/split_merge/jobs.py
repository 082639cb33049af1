"""Every rule of the split-merge study (``workflow/rules/split_merge.smk``) calls one function here, through
:func:`sojourn.core.job.run`; each function is its own rerun trigger (``sojourn.split_merge.jobs:<name>``), so
imports stay inside the functions.

* ``experiment``: one of the seed's experiments (a), (b), (c) (:mod:`sojourn.split_merge.config`): every
  replication of every cell one Dask task on the cell runner (:mod:`sojourn.core.runner`), cached per (cell,
  replication) under ``cache``; the cells' exact values as Dask tasks beside them; one netCDF hypercube
  (:func:`sojourn.split_merge.compare.experiment_dataset`).
* ``figures``: every figure of the study's registry (:data:`sojourn.split_merge.plots.FIGURES`).
"""
from __future__ import annotations

import logging

LOG = logging.getLogger(__name__)


def experiment(client, *, experiment: str, settings: dict, output, cache, code: str = ""):
    """Experiment ``experiment`` ('a' | 'b' | 'c') of the study's ``settings`` (its config section) into
    ``output``: ``simulation.replications`` replications per cell, or with ``simulation.precision`` as many as
    each cell's target needs (the statistic is of the latency). The cache (``cache``) keeps every cell's
    replications under its content key, so a rerun — cells or replications added, a tighter target —
    simulates only replications not stored before."""
    import time

    import numpy as np
    import xarray as xr

    from ..core import runner
    from ..core.io import provenance, write_netcdf
    from ..core.precision import attrs as precision_attrs
    from ..core.precision import histogram_statistic
    from ..core.timegrid import grid_size, time_grid
    from .compare import experiment_dataset
    from .config import cells as experiment_cells
    from .config import precision_for
    from .simulate import SUMMARY_SCALARS, replication_summary
    from .solve import exact_results

    x, cfg = experiment, settings
    e = cfg[f"experiment_{x}"]
    sim = cfg["simulation"]
    dt, t_max = float(e["time_grid"]["dt"]), float(e["time_grid"]["t_max"])
    nrep, seed = int(sim["replications"]), int(sim["seed"])
    precision = precision_for(cfg, x)
    ps = np.asarray(cfg["comparison"]["percentiles"], dtype=float) / 100.0
    conf = float(cfg["comparison"]["confidence"])
    cs = experiment_cells(cfg, x)
    cells = [runner.Cell(f"{c['law']}/{c['model']}/q{c['quorum']}/r{c['replicas']}",
                         runner.cell_key(c["spec"].to_dict(), c["workunits"], c["warmup"], dt, t_max, seed, code),
                         (c["spec"], c["workunits"], c["warmup"])) for c in cs]
    LOG.info(f"experiment {x}: {len(cells)} cells x " + (
        f"{nrep} replications = {len(cells) * nrep} Dask tasks" if precision is None else
        f"replications to the precision target ({precision.describe()}), one Dask task each"))
    t0 = time.perf_counter()

    def split(part, cell):
        used = int(part["replications_used"])
        return {k: ({v: float(part[v].values[k]) for v in SUMMARY_SCALARS},
                    part["latency_count"].values[k].astype(np.int64), int(part["latency_overflow"].values[k]),
                    part["delay_count"].values[k].astype(np.int64), int(part["delay_overflow"].values[k]))
                for k in range(used)}

    edges = time_grid(t_max, dt) + dt

    def estimate(cell, k, r):
        return float(histogram_statistic(precision, r[1], r[2], edges, r[0]["mean_latency"]))

    executor = runner.DaskExecutor(client)
    exact = executor.start(exact_results, [(c["spec"], ps) for c in cs],  # beside the replications
                           [f"sm-{x}-exact-{i}-{cell.key}" for i, cell in enumerate(cells)], "exact values")
    have, _ = runner.lookup(cache, cells, lambda ds, cell: ds.sel(cell=cell.label), split)
    done = runner.run_cells(executor, cells, replication_summary, replications=nrep, precision=precision,
                            estimate=estimate, have=have, shared={"seed": seed, "dt": dt, "t_max": t_max},
                            prefix=f"sm-{x}")
    LOG.info(f"simulation done in {time.perf_counter() - t0:.2f} s")
    exact = exact.result()
    LOG.info(f"exact values done in {time.perf_counter() - t0:.2f} s")
    labels = [c.label for c in cells]
    ds = experiment_dataset(x, cs, [done[lab].results for lab in labels], exact, ps, conf, dt, t_max,
                            decisions=[done[lab].decision for lab in labels], precision=precision)
    if int((ds["run_valid"] == 0).sum()):  # the run-length guard (sojourn.core.runlength): said, not hidden
        LOG.warning(f"experiment {x}: {ds.attrs['run_length']}")
    extra = {"replications": nrep} if precision is None else {
        "replications": "precision-driven: see replications_used", **precision_attrs(precision),
        "precision_statistic_of": "latency"}
    ds.attrs.update(provenance(
        {"experiment": x, "settings": e, "simulation": sim, "comparison": cfg["comparison"]},
        title=f"split-merge experiment ({x})", code_fingerprint=code,
        result_kind="simulation (sim_*: mean and t-interval across replications) beside exact values (exact_*, "
                    "is_exact, exact_method; NaN and 'none' where no exact value exists)",
        seed=seed, dt=dt, t_max=t_max, confidence=conf, **extra,
        seed_recipe="replication k of a cell: sojourn.core.seeds.replication_rng(seed, cell spec, k, \"sfc64\")"))
    write_netcdf(ds, output)
    # the replications themselves, kept for the next run (the output holds their summary)
    K = max(done[lab].replications for lab in labels)
    n, nb = len(labels), grid_size(t_max, dt)
    sc = {v: np.full((n, K), np.nan) for v in SUMMARY_SCALARS}
    counts = {v: np.zeros((n, K, nb), np.int32) for v in ("latency_count", "delay_count")}
    over = {v: np.zeros((n, K), np.int64) for v in ("latency_overflow", "delay_overflow")}
    for i, lab in enumerate(labels):
        for k, r in enumerate(done[lab].results):
            for v in SUMMARY_SCALARS:
                sc[v][i, k] = r[0][v]
            counts["latency_count"][i, k], over["latency_overflow"][i, k] = r[1], r[2]
            counts["delay_count"][i, k], over["delay_overflow"][i, k] = r[3], r[4]
    data = {v: (("cell", "replication"), a) for v, a in {**sc, **over}.items()}
    data.update({v: (("cell", "replication", "t"), a) for v, a in counts.items()})
    data["replications_used"] = (("cell",), np.array([done[lab].replications for lab in labels], np.int64))
    entry = xr.Dataset(data, coords={"cell": np.array(labels, dtype=object), "replication": np.arange(K)})
    encoding = {v: {"zlib": True, "complevel": 4, "shuffle": True,
                    **({"chunksizes": (1, 1, nb)} if entry[v].ndim == 3 else {})} for v in entry.data_vars}
    runner.store(entry, cache, cells, precision or nrep, encoding=encoding)
    simulated, reused = runner.outcome_counts(done)
    LOG.info(f"wrote {output} ({time.perf_counter() - t0:.2f} s; {simulated} replications simulated, {reused} "
             f"from the cache)")
    return output


def figures(*, inputs: dict, outdir, settings: dict, code: str = "", key_results=None):
    """Every figure of the study's registry (:data:`sojourn.split_merge.plots.FIGURES`) for the enabled experiments
    (``inputs``: 'a' | 'b' | 'c' → result file) into ``outdir``; ``settings``: the sections figures and
    experiment_a..c."""
    from .plots import all_figures

    out = all_figures(inputs, outdir, settings, formats=settings["figures"]["formats"], dpi=settings["figures"]["dpi"])
    if key_results is not None:  # the report's opening table (stem: <key_results>.csv/.html)
        from .plots import key_results as table

        out += table(inputs, key_results)
    return out
