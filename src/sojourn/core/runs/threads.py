"""Replications on the machine's cores inside one process: numba kernels compiled with ``nogil=True`` run in
threads side by side, each on its own random stream, so that a command's replications share one start-up (imports,
the kernels' cache load: about a second) instead of paying it per worker process. A replication's result depends only
on its stream (:mod:`sojourn.core.laws.seeds`), so the results are those of the serial loop, in the same order."""
from __future__ import annotations

import importlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .progress import steps


def available_cores() -> int:
    """The CPUs this process may run on (its affinity; the CPU count where the platform has none)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def threads_for(tasks: int, max_workers: int | None) -> int:
    """How many threads ``tasks`` tasks get: ``max_workers`` (0 or 1: the calling thread alone), by default one per
    available core, never more than the tasks."""
    cap = available_cores() if max_workers is None else max(1, int(max_workers))
    return max(1, min(int(tasks), cap))


def ordered_map(fn, items, what: str, workers: int) -> list:
    """``[fn(item) for item in items]`` on ``workers`` threads (1: in the calling thread), with progress ``what``.
    ``fn`` must release the GIL for the threads to run side by side (a ``nogil`` numba kernel) and share no mutable
    state between items. An exception (a KeyboardInterrupt too) cancels the items not started and returns at once."""
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        return [fn(item) for item in steps(items, what)]
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sojourn-replication")
    try:
        out = list(steps(pool.map(fn, items), what, total=len(items)))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return out


def import_in_background(names) -> threading.Thread:
    """Import the modules ``names`` (in order) in a thread of their own, started now, and return it: a process that
    will need them after its replications (``sojourn simulate``: xarray, pandas, scipy.special and the netCDF
    library, about 0.8 CPU seconds, for the Dataset, its summary and its file) imports them while ``nogil`` kernels
    run in :func:`ordered_map`'s threads, instead of before them on one core. The caller's own ``import`` of such
    a module later returns it at once, or waits for this thread to finish it (Python's import lock per module); an
    error here is left for that import to raise. The modules named must not need a module that the calling thread
    is importing meanwhile (else the two threads could wait for each other): third-party libraries, and modules of
    this package that the caller imports only after the replications."""
    def run():
        for name in names:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001  (the caller's own import raises it where it matters)
                return

    thread = threading.Thread(target=run, name="sojourn-imports")
    thread.start()
    return thread
