"""Every rule of the JSQ-PS study (``workflow/rules/jsq_ps.smk``) calls one function here, through
:func:`sojourn.core.runs.job.run` (its log, timing and traceback). Each function is its own rerun trigger: its code
fingerprint (:func:`sojourn.core.files.fingerprint.fingerprint` of ``sojourn.jsq_ps.jobs:<name>``) covers the function,
the definitions of this module it uses and the modules they import — so imports stay inside the functions.

* ``simulate``: a block of cells (one service law, one R, the ρ of one interval), every replication of every
  cell one Dask task on the cell runner (:mod:`sojourn.core.runs.runner`), cached per (cell, replication);
* ``approximate``: a block of M/M/R cells (one R, the ρ of one interval), one Dask task per cell running all
  its methods, cached per cell;
* ``approximate_laws``: a block of M/G/R cells (one law, one R, the ρ of one interval) by the methods that take a
  general service law (T), one Dask task per cell, cached per cell;
* ``merge_simulation``, ``merge_approximation``, ``merge_law_approximation``: the blocks into ``simulation.nc``,
  ``approximation.nc`` and ``law_approximation.nc``
  (streaming: memory is one block);
* ``compare``, ``accuracy``, ``figures``, ``reproduction``: the comparison and what is made from it.

Replication k of a cell is bit-identical whether computed now or earlier, in any worker, because its random
stream depends only on (seed, spec, k) (:mod:`sojourn.core.laws.seeds`).
"""
from __future__ import annotations

import logging

LOG = logging.getLogger(__name__)

def simulate(client, *, service: str, law: str, R: int, rhos, mu: float, simulation: dict, time_grid: dict,
             code: str, output, cache):
    """Simulate the cells (service, R, ρ), ρ in ``rhos``: ``simulation['replications']`` replications each, or
    with ``simulation['precision']`` as many as each cell's target needs (:mod:`sojourn.core.estimates.precision`), into
    one file ``output`` (dims service, R, rho, replication, t, n). Cells that stop at different counts share the
    ``replication`` axis, padded (count 0, floats NaN, events -1) beyond each cell's ``replications_used``.
    ``cache``: this block's cache folder (:mod:`sojourn.core.runs.runner`)."""
    from ..core.runs.protocol import run_step
    from ..core.runs.runner import DaskExecutor
    from .blocks import SimulationBlock

    step = SimulationBlock(service, law, R, rhos, mu, simulation, time_grid, code)
    LOG.info(f"block {service} R={R} rho={','.join(f'{r:g}' for r in step.rhos)}: {step.cells()[0].args[0].describe()}")
    run_step(step, DaskExecutor(client), cache=cache, output=output, replications=int(simulation["replications"]),
             precision=step.precision, prefix=f"sim-{service}-R{R}")
    return output


def approximate(client, *, R: int, rhos, mu: float, methods, L1: int, L2: int, time_grid: dict, code: str,
                share_corrected: bool, exact_budget: dict, output, cache):
    """All ``methods`` for the M/M/R cells (R, ρ), ρ in ``rhos``: one Dask task per cell
    (:func:`sojourn.jsq_ps.solve.cell.approximate_cell`), written as one file ``output`` that holds each distinct
    chain once (with ``share_corrected`` the copies B*, D*, E*, F* are left out and the merge writes them back:
    :func:`sojourn.jsq_ps.storage.stored_once`); cells stored before under the same content key in ``cache`` are
    reused."""
    from ..core.runs.protocol import run_step
    from ..core.runs.runner import DaskExecutor
    from .solve.blocks import ApproximationBlock

    step = ApproximationBlock(R, rhos, mu, methods, L1, L2, time_grid, code, share_corrected, exact_budget)
    run_step(step, DaskExecutor(client), cache=cache, output=output, prefix=f"approx-R{R}")
    return output


def approximate_laws(client, *, service: str, law: str, R: int, rhos, mu: float, methods, time_grid: dict, code: str,
                     output, cache):
    """The methods that take a general service law (``mgr.methods``: T, :mod:`sojourn.jsq_ps.solve.tail_ph`) at the
    M/G/R cells (service, R, ρ), ρ in ``rhos``: one Dask task per cell
    (:func:`sojourn.jsq_ps.solve.cell.approximate_law_cell`), one file ``output`` (dims service, R, rho,
    approximation, t, percentile), the CDF stored as its survival function like the M/M/R approximations; cells
    stored before under the same content key in ``cache`` are reused."""
    from ..core.runs.protocol import run_step
    from ..core.runs.runner import DaskExecutor
    from .solve.blocks import LawApproximationBlock

    step = LawApproximationBlock(service, law, R, rhos, mu, methods, time_grid, code)
    run_step(step, DaskExecutor(client), cache=cache, output=output, prefix=f"law-{service}-R{R}")
    return output


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
        from ..core.files.io import read_netcdf
        from .plots import key_results as table

        out += table(read_netcdf(comparison), key_results)
    return out


def reproduction(*, comparison, output, report, outdir, settings: dict, code: str = "", published: str = "",
                 caption=None):
    """The paper's §6 tables beside ours: ``reproduction.nc``, its figures and the report page with its caption."""
    from .reproduction import write_reproduction

    return write_reproduction(comparison, output, outdir, settings, report_path=report, caption_path=caption)
