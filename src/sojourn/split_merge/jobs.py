"""Every rule of the split-merge study (``workflow/rules/split_merge.smk``) calls one function here, through
:func:`sojourn.core.runs.job.run`; each function is its own rerun trigger (``sojourn.split_merge.jobs:<name>``), so
imports stay inside the functions.

* ``exact``: the exact values of one of the seed's experiments (a), (b), (c) (:mod:`sojourn.split_merge.config`),
  one Dask task per cell on the core's driver (:func:`sojourn.core.runs.protocol.run_step`), cached per cell;
* ``experiment``: the experiment's simulation: every replication of every cell one Dask task, cached per (cell,
  replication) under ``cache``; beside the exact values, one netCDF hypercube
  (:func:`sojourn.split_merge.compare.experiment_dataset`).
* ``figures``: every figure of the study's registry (:data:`sojourn.split_merge.plots.FIGURES`).
"""
from __future__ import annotations

import logging

LOG = logging.getLogger(__name__)


def exact(client, *, experiment: str, settings: dict, output, cache, code: str = ""):
    """The exact values of every cell of experiment ``experiment`` (``settings``: the sections experiment_<x> and
    comparison) into ``output`` (dim ``cell``): one Dask task per cell, cached by the cell's content key (its
    spec and the percentiles), so that a change of the run or of the replications recomputes none."""
    from ..core.runs.protocol import run_step
    from ..core.runs.runner import DaskExecutor
    from .exact import Exact

    step = Exact(experiment, settings, code)
    LOG.info(f"experiment {experiment}: exact values of {len(step.cells())} cells")
    _, done = run_step(step, DaskExecutor(client), cache=cache, output=output, prefix=f"sm-{experiment}-exact")
    fresh = sum(o.simulated for o in done.values())
    LOG.info(f"wrote {output}: {fresh} cells computed, {len(done) - fresh} from the cache")
    return output


def experiment(client, *, experiment: str, settings: dict, exact, output, cache, code: str = ""):
    """Experiment ``experiment`` ('a' | 'b' | 'c') of the study's ``settings`` (its config section) into
    ``output``, beside its cells' exact values (``exact``: the file of :func:`exact`):
    ``simulation.replications`` replications per cell, or with ``simulation.precision`` as many as each cell's
    target needs (the statistic is of the latency). The cache (``cache``) keeps every cell's replications under
    its content key, so a rerun — cells or replications added, a tighter target — simulates only replications
    not stored before."""
    import time

    from ..core.estimates.precision import attrs as precision_attrs
    from ..core.files.io import provenance, write_netcdf
    from ..core.runs.protocol import run_step
    from ..core.runs.runner import DaskExecutor, outcome_counts
    from .compare import experiment_dataset
    from .exact import read_exact
    from .experiment import Replications

    x, cfg = experiment, settings
    step = Replications(x, cfg, code)
    nrep, precision, sim = int(cfg["simulation"]["replications"]), step.precision, cfg["simulation"]
    conf = float(cfg["comparison"]["confidence"])
    LOG.info(f"experiment {x}: {len(step.cells())} cells x " + (
        f"{nrep} replications = {len(step.cells()) * nrep} Dask tasks" if precision is None else
        f"replications to the precision target ({precision.describe()}), one Dask task each"))
    t0 = time.perf_counter()
    block, done = run_step(step, DaskExecutor(client), cache=cache, replications=nrep, precision=precision,
                           prefix=f"sm-{x}")
    LOG.info(f"simulation done in {time.perf_counter() - t0:.2f} s")
    ds = experiment_dataset(x, step.cs, step.summaries(block, done), read_exact(exact, step.labels), step.ps, conf,
                            step.dt, step.t_max, decisions=[done[lab].decision for lab in step.labels],
                            precision=precision)
    if int((ds["run_valid"] == 0).sum()):  # the run-length guard (sojourn.core.estimates.runlength): said, not hidden
        LOG.warning(f"experiment {x}: {ds.attrs['run_length']}")
    extra = {"replications": nrep} if precision is None else {
        "replications": "precision-driven: see replications_used", **precision_attrs(precision),
        "precision_statistic_of": "latency"}
    ds.attrs.update(provenance(
        {"experiment": x, "settings": step.cfg, "simulation": sim, "comparison": cfg["comparison"]},
        title=f"split-merge experiment ({x})", code_fingerprint=code,
        result_kind="simulation (sim_*: mean and t-interval across replications) beside exact values (exact_*, "
                    "is_exact, exact_method; NaN and 'none' where no exact value exists)",
        seed=step.seed, dt=step.dt, t_max=step.t_max, confidence=conf, **extra,
        seed_recipe="replication k of a cell: sojourn.core.laws.seeds.replication_rng(seed, cell spec, k, \"sfc64\")"))
    write_netcdf(ds, output)
    simulated, reused = outcome_counts(done)
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
