"""Every rule of the restart study (``workflow/rules/restart.smk``) calls one function here, through
:func:`sojourn.core.runs.job.run`; each function is its own rerun trigger (``sojourn.restart.jobs:<name>``), so
imports stay inside the functions.

* ``solve``: one example's product form over a fine grid of signal rates, and g*, each rate and g* a cell of
  the cell runner cached by content key (a finer grid computes only its new rates);
* ``simulate``: one example's restart-rate sweep: for each semantics s (``signal``, ``timeout_exponential``,
  ``timeout_deterministic``) and restart rate r (:func:`sojourn.restart.simulate.spec_for`), every replication one
  Dask task on the cell runner (:mod:`sojourn.core.runs.runner`), cached per (point, replication) — a rate added to an
  explicit list of rates simulates only that rate's replications; one file with dims (semantics, restart_rate,
  replication, t, restarts, type, station, queue);
* ``compare``: the sweep beside the product form (CIs, coverage, optima);
* ``figures``: every figure of the study's registry for the example.

Replication k of a point depends only on (seed, spec, k), so results do not depend on the cluster.
"""
from __future__ import annotations

import logging

LOG = logging.getLogger(__name__)

def solve(*, name: str, example: dict, analytic: dict, code: str, output, cache, model: str = ""):
    """E[T], E[N], utilisation and restarts per unit time at ``analytic['points']`` log-spaced signal rates over
    the example's sweep range plus the sweep's own rates (dim ``signal_rate``), and g* (bounded search): each rate
    and g* a cell cached by content key under ``cache`` (a finer grid computes only its new rates)."""
    import json

    from ..core.files.io import provenance, write_netcdf
    from ..core.runs.protocol import run_step
    from ..core.runs.runner import LocalExecutor
    from .product_form import GStar, ProductForm

    points = ProductForm(example, analytic, code)
    ds, done = run_step(points, LocalExecutor(), cache=f"{cache}/points")
    opt, _ = run_step(GStar(example, analytic, code), LocalExecutor(), cache=f"{cache}/g_star")
    fresh = sum(o.simulated for o in done.values())
    LOG.info(f"{name}: {points.net.describe()}; product form at {len(points.grid)} signal rates ({fresh} computed, "
             f"{len(done) - fresh} from the cache); g* = {float(opt['g_star']):.6g}")
    bounds = json.loads(opt.attrs["cell_attrs"])["g*"]["bounds"]  # as the search took them
    ds = ds.merge(opt)
    ds.attrs = provenance({"example": example, "analytic": analytic}, title=f"Restart study, {name}: product form",
                          model=points.net.describe(), spec=points.net.to_json(), example=name, code_fingerprint=code,
                          bounds=list(bounds))
    write_netcdf(ds, output)
    return output


def simulate(client, *, name: str, example: dict, simulation: dict, time_grid: dict, code: str, output, cache,
             model: str = ""):
    """Simulate ``example`` (config entry: model, rates, semantics, run window) into ``output``:
    ``simulation['replications']`` replications per point, or with ``simulation['precision']`` as many as each
    point's target needs (:mod:`sojourn.core.estimates.precision`; the statistic is of the response time). Points that
    stop
    at different counts share the ``replication`` axis, padded beyond each point's ``replications_used``."""
    import time

    import numpy as np

    from ..core.estimates.runlength import format_length
    from ..core.runs.protocol import run_step
    from ..core.runs.runner import DaskExecutor, outcome_counts
    from .sweep import Sweep

    step = Sweep(name, example, simulation, time_grid, code)
    n_rep, precision = int(simulation["replications"]), step.precision
    what = (f"{n_rep} replications = {len(step.cells()) * n_rep} Dask tasks" if precision is None
            else f"replications to the precision target ({precision.describe()}), one Dask task each")
    LOG.info(f"{name}: {step.net.describe()}; {len(step.semantics)} semantics x {len(step.rates)} rates x {what}")
    t0 = time.perf_counter()
    out, done = run_step(step, DaskExecutor(client), cache=cache, output=output, replications=n_rep,
                         precision=precision, prefix=f"restart-{name}")
    valid = out["run_valid"].values.ravel()
    if not valid.all():
        needed = out["needed_window"].values.ravel()[valid == 0]
        need = needed[np.isfinite(needed)].max() if np.isfinite(needed).any() else float("nan")
        short = [c.label for c, ok in zip(step.cells(), valid, strict=True) if not ok]
        LOG.warning(f"{name}: {len(short)} of {len(valid)} points too short to trust (run_valid = 0, "
                    f"sojourn.core.estimates.runlength; kept, never the best rate): {', '.join(short)}; needs "
                    f"examples.{name}.horizon >= {format_length(need + _warm(step))} at "
                    "this replication count")
    simulated, reused = outcome_counts(done)
    LOG.info(f"{name}: done in {time.perf_counter() - t0:.1f} s; {simulated} replications simulated, {reused} from "
             f"the cache; {int((out['unstable'] > 0).sum())} stopped as unstable")
    return output


def _warm(step) -> float:
    """The warm-up plus cool-down of a sweep's replications (what a run adds to its recording window)."""
    from ..core.estimates.replications import check_window

    _, W, C = check_window(step.kw["horizon"], step.kw.get("warmup"), step.kw.get("cooldown"))
    return W + C


def compare(*, product_form, simulation, output, settings: dict, code: str = ""):
    """The sweep beside the product form (:func:`sojourn.restart.compare.write_comparison`)."""
    from .compare import write_comparison

    return write_comparison(product_form, simulation, output, settings)


def figures(*, product_form, comparison, outdir, examples, settings: dict, code: str = "", key_results=None):
    """Every example's figures (:data:`sojourn.restart.plots.FIGURES`) into ``outdir``, each with its caption, and its
    key-result table: ``product_form``, ``comparison``, ``key_results`` (stems) are lists in the order of
    ``examples``."""
    from ..core.files.io import read_netcdf
    from .plots import all_figures
    from .plots import key_results as table

    out = []
    for k, name in enumerate(examples):
        out += all_figures(product_form[k], comparison[k], outdir, name, formats=settings["formats"],
                           dpi=settings["dpi"])
        if key_results is not None:  # the report's opening table of the example (stem: <key_results>.csv/.html)
            out += table(read_netcdf(product_form[k]), read_netcdf(comparison[k]), key_results[k], name)
    return out
