"""Dask worker plugins of the clusters sojourn starts (:func:`sojourn.core.cluster.cluster.dask_client`)."""
from __future__ import annotations

import logging
import signal
import threading

from distributed.diagnostics.plugin import WorkerPlugin


class IgnoreSigint(WorkerPlugin):
    """Local worker processes ignore SIGINT: Ctrl-C is for the process that owns the cluster.

    Ctrl-C in a terminal signals the whole foreground process group, so it reached the workers too: they
    died at once (with tracebacks), their nannies did not restart them, and Snakemake, which on Ctrl-C
    waits for its running job threads, waited for tasks no worker would run (until the no-workers
    watchdog, 300 s later). Now the owner handles the interrupt (Snakemake's jobs stop waiting:
    :data:`sojourn.core.files.io.INTERRUPTED`) and closes the cluster, which stops the workers; a worker whose
    parent is killed outright exits by itself (distributed watches the parent through a pipe).
    Registered on the cluster, the plugin also reaches workers that a nanny restarts later.

    It also drops distributed's "Failed to communicate with scheduler during heartbeat" record (an ERROR with a
    traceback): in a local cluster the scheduler is in the owner's process, so the heartbeat fails only when the
    owner is closing the cluster — a worker whose heartbeat was in flight as the scheduler stopped printed a
    traceback into a Ctrl-C'd run (seen once in four CI runs). A scheduler that really vanished is still met by
    the no-workers watchdog and the parent-process watch.
    """

    name = "sojourn-ignore-sigint"

    def setup(self, worker):
        if threading.current_thread() is threading.main_thread():  # a worker process runs its loop there
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        log = logging.getLogger("distributed.worker")
        if not any(isinstance(f, _HeartbeatAtClose) for f in log.filters):
            log.addFilter(_HeartbeatAtClose())


class _HeartbeatAtClose(logging.Filter):
    """Drops a local worker's heartbeat failure, which there means the cluster is closing (:class:`IgnoreSigint`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to communicate with scheduler during heartbeat")


class QuietRetirement(WorkerPlugin):
    """A worker that closed on purpose (retired at the end of a run, by adaptive scaling or at its ``--lifetime``)
    logs no "Worker process died unexpectedly" traceback (issue 35).

    After the worker has closed, its process's thread that waits for the nanny's stop message finds the pipe closed
    (a ``TypeError`` deep in ``multiprocessing``) and distributed logs that as an ERROR with a traceback, in every
    SLURM worker job's log at every clean retirement. The record is dropped only when the worker had already
    closed or was closing; a worker process whose nanny vanished while it was running still logs it."""

    name = "sojourn-quiet-retirement"

    def setup(self, worker):
        import weakref

        log = logging.getLogger("distributed.nanny")
        if not any(isinstance(f, _DiedAfterClose) for f in log.filters):
            log.addFilter(_DiedAfterClose(weakref.ref(worker)))


class _DiedAfterClose(logging.Filter):
    """Drops the nanny pipe's "died unexpectedly" record of a worker that had closed already
    (:class:`QuietRetirement`)."""

    def __init__(self, worker_ref):
        super().__init__()
        self.worker_ref = worker_ref

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Worker process died unexpectedly"):
            return True
        worker = self.worker_ref()
        return worker is not None and str(getattr(worker, "status", "")).split(".")[-1] not in (
            "closing", "closed", "closing_gracefully")
