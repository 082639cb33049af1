"""The cell runner: cells × replications on an executor, cached, the one way every study computes its grid.

A *cell* is one point of a study's grid (one spec and the settings that change its values); a *replication*
is one independent run of it, whose random stream depends only on (seed, spec, k)
(:mod:`sojourn.core.laws.seeds`), so replication k is the same whenever and wherever it runs. A deterministic
cell (an analytic method) is a cell with a single replication.

What a study supplies, and nothing else:

* the replication task ``task(*cell.args, k, **shared)`` (deterministic cells: ``task(*cell.args, **shared)``;
  ``shared``: keyword arguments every cell of the job passes): one Dask task, picklable arguments, a small
  result;
* its estimate for a precision target, ``estimate(cell, k, result) -> float``
  (:func:`sojourn.core.estimates.precision.histogram_statistic` of the result);
* how a stored file holds cells: ``select(stored, cell)`` cuts a cell out of it and ``split(part, cell)``
  returns its replications as ``{k: result}`` in the form the task returns;
* the assembly of the job's results into one dataset (its own code, before :func:`store`).

What the runner owns, the same for every study: the cells' content keys and the cache lookup per
(cell, replication) (:func:`lookup`); submission with retries and the no-workers watchdog, progress, the
precision loop and the replication join (:func:`run_cells`); and the atomic, checksummed store of the
result under its cells' keys (:func:`store`). Executors: :class:`DaskExecutor` (the pipeline: a shared
Dask cluster) and :class:`LocalExecutor` (this process, or a pool of forked processes: the Python API and
``sojourn plan``). A study module never calls ``client.map`` itself (``tests/workflow/test_house.py``).

Storage. A job's result file is written once into its cache folder, under a key made of its cells' keys and
their counts, and the job's output is a hard link to it (a copy where the filesystem has no links): each
replication is stored once, with the sha256 sidecar of :mod:`sojourn.core.files.integrity` on both names. When the
job runs again — a cell added, replications added, a tighter target — :func:`lookup` reads the cells whose
key is unchanged back from the cache (Snakemake removes a job's outputs before it runs, the cache stays),
and only the missing (cell, replication) pairs are computed. Other entries of the folder are removed once the
new one is stored, so a folder holds one job's current data.
"""
from __future__ import annotations

import json
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..files.integrity import discard, recorded, seal, sidecar

if TYPE_CHECKING:
    from ..estimates.precision import Outcome, Precision

# xarray, scipy and distributed are imported where they are needed, not here: ``sojourn plan`` runs its
# replications on a LocalExecutor and must start fast

LOG = logging.getLogger("sojourn.runner")


@dataclass(frozen=True, eq=False)
class Cell:
    """One grid point of a job: ``label`` names it (unique within the job: logs, task names, the cache),
    ``key`` is the content key of everything that changes its values except the number of replications,
    ``args`` are the task's arguments before the replication index, ``coords`` the typed values it sits at in
    the stored file ({dim: value}, :class:`sojourn.core.runs.protocol.Layout`; never parsed back from the label)."""

    label: str
    key: str
    args: tuple = ()
    coords: dict = field(default_factory=dict)


def cell_key(*parts) -> str:
    """The content key of a cell (:func:`sojourn.core.files.cache.content_key` of its spec, settings, seed, code)."""
    from ..files.cache import content_key

    return content_key(*parts)


# ---------------------------------------------------------------------------------------------
# executors
class DaskExecutor:
    """Tasks on a Dask cluster: retried ``TASK_RETRIES`` times (a lost worker), watched for a cluster with no
    worker at all (``cluster.no_workers_timeout``), gathered in submission order."""

    def __init__(self, client):
        self.client = client

    def slots(self) -> int | None:
        """The task slots (worker threads) of a local cluster, which run every task of this process; None for
        another cluster (one that adapts its size: tasks are not batched for it, :func:`batches`)."""
        from distributed import LocalCluster

        if not isinstance(getattr(self.client, "cluster", None), LocalCluster):
            return None
        return sum(w.get("nthreads", 1) for w in self.client.scheduler_info()["workers"].values()) or None

    def start(self, fn: Callable, calls: Sequence[tuple], names: Sequence[str], what: str,
              progress: Callable[[int, int], None] | None = None, kwargs: dict | None = None) -> Pending:
        """Submit ``fn(*call, **kwargs)`` for every call now; the results come from ``.result()``."""
        from ..cluster.cluster import cluster_dead, report_progress
        from ..files.io import TASK_RETRIES

        reason = cluster_dead(self.client)  # a scheduler already lost: fail now, not when the client gives up
        if reason is not None:
            raise RuntimeError(f"{what}: the Dask cluster cannot run them: {reason}")
        n = len(calls)
        futures = self.client.map(_call, [fn] * n, list(calls), [kwargs or {}] * n, pure=False,
                                  retries=TASK_RETRIES, key=list(names))

        def result():
            report_progress(futures, progress, self.client, what=what)
            return self.client.gather(futures)

        return Pending(result)

    def map(self, fn, calls, names, what, progress=None, kwargs=None) -> list:
        """The results of ``fn(*call, **kwargs)`` for every call, in order."""
        return self.start(fn, calls, names, what, progress, kwargs).result()


class LocalExecutor:
    """Tasks in this process, or in ``pool`` (a ``concurrent.futures`` executor, e.g. forked processes)."""

    def __init__(self, pool=None):
        self.pool = pool

    def slots(self) -> int | None:
        """No batching: a task here costs no scheduling or transfer."""
        return None

    def start(self, fn: Callable, calls: Sequence[tuple], names: Sequence[str], what: str,
              progress: Callable[[int, int], None] | None = None, kwargs: dict | None = None) -> Pending:
        kwargs = kwargs or {}
        calls = list(calls)
        if self.pool is not None:
            futures = [self.pool.submit(_call, fn, c, kwargs) for c in calls]
            return Pending(lambda: [f.result() for f in futures])

        def result():
            out = []
            for i, c in enumerate(calls):
                out.append(fn(*c, **kwargs))
                if progress is not None:
                    progress(i + 1, len(calls))
            return out

        return Pending(result)

    def map(self, fn, calls, names, what, progress=None, kwargs=None) -> list:
        return self.start(fn, calls, names, what, progress, kwargs).result()


class Pending:
    """Tasks started by an executor; ``result()`` waits for them (once) and returns their results in order."""

    def __init__(self, wait: Callable[[], list]):
        self._wait, self._done, self._value = wait, False, None

    def result(self) -> list:
        if not self._done:
            self._value, self._done = self._wait(), True
        return self._value


def _call(fn, args, kwargs):
    if fn is not _call_each and os.environ.get(TASK_CPU):
        return _call_each(fn, [args], kwargs)[0]
    return fn(*args, **kwargs)


#: environment variable naming a file to which every task appends a line "<function> <calls> <CPU s> <wall s>"
#: (the CPU of its thread; benchmarks/paper_profile.py sets it for the run it profiles)
TASK_CPU = "SOJOURN_TASK_CPU"


def _call_each(fn, calls, kwargs):
    """One task running several calls (a batch of replications of one cell), their results in order."""
    path = os.environ.get(TASK_CPU)
    if not path:
        return [fn(*args, **kwargs) for args in calls]
    t0, c0 = time.perf_counter(), time.thread_time()
    out = [fn(*args, **kwargs) for args in calls]
    cpu, wall = time.thread_time() - c0, time.perf_counter() - t0
    line = f"{fn.__module__}.{fn.__qualname__}\t{len(calls)}\t{cpu:.6f}\t{wall:.6f}\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)  # one short write: whole lines from any process
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return out


#: a job's replications travel to the workers of a local cluster in batches of one cell's replications: each
#: Dask task costs milliseconds of CPU in the scheduler, the worker's event loop and the result's transfer
#: (the paper config: 11 300 replication tasks, many of a millisecond's simulation), but a job keeps at
#: least this many tasks per task slot, so the slots stay balanced to the end
TASKS_PER_SLOT = 8


def batches(requests: Sequence, slots: int | None) -> list[list[int]]:
    """The indices of ``requests`` ((cell label, k) pairs) as batches: runs of one cell's requests of at most
    len(requests) / (TASKS_PER_SLOT · slots) each; one request a batch without ``slots``."""
    size = 1 if not slots else max(1, len(requests) // (TASKS_PER_SLOT * slots))
    out: list[list[int]] = []
    for i, (label, _) in enumerate(requests):
        if out and len(out[-1]) < size and requests[out[-1][-1]][0] == label:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def _task_name(prefix: str, cell: Cell, k: int | str | None) -> str:
    label = re.sub(r"[^A-Za-z0-9_.=~-]+", "_", cell.label)
    return f"{prefix}-{label}" + ("" if k is None else f"-rep{k}") + f"-{cell.key}"


#: seconds at least between two progress lines of a job's log (the last line, all done, is always written)
PROGRESS_EVERY = 5.0
#: a job of more cells than this logs its cells in one line (each cell's key stays in the stored file's
#: ``cell_keys``); fewer get a line each, with its key
CELLS_LISTED = 12


def _progress(what: str, t0: float):
    """A progress line at a tenth of the tasks at most every :data:`PROGRESS_EVERY` seconds, and at the last: a
    phase of a second logs one line, a long one its pace."""
    last = [t0]

    def report(i: int, n: int) -> None:
        now = time.perf_counter()
        if i == n or (i % max(1, n // 10) == 0 and now - last[0] >= PROGRESS_EVERY):
            last[0] = now
            LOG.info(f"  [{i}/{n}] {what} done ({now - t0:.2f} s)")
    return report


def _log_cells(cells: Sequence[Cell], state: Callable, summary: str, what: str, fresh: Callable) -> None:
    """Each cell's key and ``state(cell)`` (what is cached, what to compute), one line each for a few cells;
    for many, one line: ``summary``, and the cells with something to compute (``fresh``) where some are cached."""
    if len(cells) <= CELLS_LISTED:
        for c in cells:
            LOG.info(f"{c.label}: key {c.key}; {state(c)}")
        return
    todo = [c.label for c in cells if fresh(c)]
    named = ("" if len(todo) in (0, len(cells))
             else f"; to compute: {', '.join(todo[:CELLS_LISTED])}{' …' * (len(todo) > CELLS_LISTED)}")
    LOG.info(f"{len(cells)} cells of {what} ({cells[0].label} … {cells[-1].label}): {summary}{named}")


# ---------------------------------------------------------------------------------------------
# the three steps of a job
def lookup(cache_dir, cells: Sequence[Cell], select: Callable, split: Callable) -> tuple[dict, dict]:
    """({label: {k: result}}, {label: stored attrs}) of the cells whose key an earlier entry of ``cache_dir``
    holds (damaged entries are reported, removed and recomputed: :func:`sojourn.core.files.cache.cached_cells`)."""
    if cache_dir is None:
        return {}, {}
    from ..files.cache import cached_cells

    by_label = {c.label: c for c in cells}
    found = cached_cells(cache_dir, {c.label: c.key for c in cells}, lambda ds, lab: select(ds, by_label[lab]))
    have = {lab: split(part, by_label[lab]) for lab, (part, _) in found.items()}
    return have, {lab: attrs for lab, (_, attrs) in found.items()}


def run_cells(executor, cells: Sequence[Cell], task: Callable, *, replications: int | None = None,
              precision: Precision | None = None, estimate: Callable | None = None, have: dict | None = None,
              shared: dict | None = None, what: str = "replications", prefix: str = "task") -> dict[str, Outcome]:
    """Every cell to ``replications`` replications, or to its precision target, or (both None) one
    deterministic task per cell; ``have`` {label: {k: result}} are taken instead of computed; ``shared``:
    keyword arguments of every task. Returns {label: :class:`sojourn.core.estimates.precision.Outcome`} (results in
    replication order)."""
    from ..estimates.precision import Outcome, run_replications

    cells = list(cells)
    by_label = {c.label: c for c in cells}
    if len(by_label) != len(cells):
        raise ValueError("cell labels must be unique within a job")
    have = have or {}
    t0 = time.perf_counter()
    if replications is None and precision is None:  # deterministic cells: one task each
        todo = [c for c in cells if 0 not in have.get(c.label, {})]
        fresh_labels = {c.label for c in todo}
        _log_cells(cells, lambda c: "to compute" if c.label in fresh_labels else "cached",
                   f"{len(todo)} to compute, {len(cells) - len(todo)} cached", what, lambda c: c.label in fresh_labels)
        results = executor.map(task, [c.args for c in todo], [_task_name(prefix, c, None) for c in todo],
                               f"{len(todo)} {what}", _progress(what, t0), shared) if todo else []
        new = dict(zip([c.label for c in todo], results, strict=True))
        out = {}
        for c in cells:
            fresh = c.label in new
            out[c.label] = Outcome([new[c.label] if fresh else have[c.label][0]], None, int(fresh), int(not fresh))
        return out
    cached = {c.label: sum(1 for k in have.get(c.label, {}) if precision is not None or k < replications)
              for c in cells}
    total = sum(cached.values())
    if precision is not None:
        todo = dict.fromkeys(cached, f"precision target: {precision.describe()}")
        summary = f"{total} replications cached, precision target: {precision.describe()}"
    else:
        todo = {lab: f"{replications - n} to simulate" for lab, n in cached.items()}
        summary = f"{total} replications cached, {replications * len(cells) - total} to simulate"
    _log_cells(cells, lambda c: f"{cached[c.label]} replications cached, {todo[c.label]}", summary, what,
               lambda c: precision is not None or cached[c.label] < replications)

    def submit(requests):
        groups = batches(requests, executor.slots())
        what_now = f"{what} of {len({lab for lab, _ in requests})} cell(s)"
        if len(groups) == len(requests):
            return executor.map(task, [by_label[lab].args + (k,) for lab, k in requests],
                                [_task_name(prefix, by_label[lab], k) for lab, k in requests], what_now,
                                _progress(what, t0), shared)
        calls = [(task, [by_label[requests[i][0]].args + (requests[i][1],) for i in g], shared) for g in groups]
        names = [_task_name(prefix, by_label[requests[g[0]][0]], f"{requests[g[0]][1]}-{requests[g[-1]][1]}")
                 for g in groups]
        done = executor.map(_call_each, calls, names, f"{what_now} in {len(groups)} batches", _progress(what, t0))
        return [r for rs in done for r in rs]

    return run_replications([c.label for c in cells], submit, precision=precision, replications=replications,
                            estimate=(lambda lab, k, r: estimate(by_label[lab], k, r)) if estimate else None,
                            have=have, log=LOG.info if precision is not None else None)


def store(ds, cache_dir, cells: Sequence[Cell], count, output=None, encoding=None) -> Path:
    """Write ``ds`` (the job's result, holding ``cells``) to its cache folder, sealed, under a key made of the
    cells' keys and ``count`` (the replications, or the precision target); ``output`` (optional) becomes a
    hard link to it (a sealed copy where links fail). Other entries of the folder are removed. Without a
    cache folder, ``ds`` is written to ``output``. Returns the path written (``output`` if given)."""
    from ..files.cache import content_key
    from ..files.io import write_netcdf

    keys = {c.label: c.key for c in cells}
    ds.attrs["cell_keys"] = json.dumps(keys, sort_keys=True)
    if cache_dir is None:
        return None if output is None else write_netcdf(ds, output, encoding=encoding)
    cache_dir = Path(cache_dir)
    entry = cache_dir / f"{content_key(keys, count.to_dict() if hasattr(count, 'to_dict') else count)}.nc"
    write_netcdf(ds, entry, encoding=encoding)
    for other in cache_dir.glob("*.nc"):
        if other != entry:
            discard(other)
    if output is None:
        return entry
    return link(entry, output)


def link(entry: Path, output) -> Path:
    """``output`` as a second name of the sealed file ``entry`` (with its own sidecar), or a sealed copy."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.link.tmp")
    for stale in (tmp, Path(sidecar(tmp))):
        if stale.exists():
            stale.unlink()
    try:
        os.link(entry, tmp)
        known = recorded(entry)  # the same bytes: the entry's digest, not read again
    except OSError:  # no hard links here (another filesystem, or none supported): a copy
        shutil.copyfile(entry, tmp)
        known = None
    seal(tmp, output, known)
    return output


def outcome_counts(done: dict) -> tuple[int, int]:
    """(simulated, reused) replications over the outcomes of :func:`run_cells`."""
    return sum(o.simulated for o in done.values()), sum(o.reused for o in done.values())
