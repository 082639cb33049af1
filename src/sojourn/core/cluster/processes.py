"""Worker processes end with the command that started them (issue 32).

A command's pool of worker processes (Ciw's backend: spawned interpreters; ``sojourn plan --confirm``: forked ones)
used to outlive a SIGTERM or SIGHUP to the command — the kernel ends the main process at once and nothing told the
workers, which went on computing, orphaned — and a Ctrl-C made the main process wait in the pool's shutdown for every
queued task. Here, one mechanism for every pool:

* :class:`OwnedPool` (a ``concurrent.futures.ProcessPoolExecutor``): each worker asks the kernel to kill it when its
  parent ends (Linux ``PR_SET_PDEATHSIG``), whatever ends the parent (SIGTERM, SIGHUP, SIGKILL, a crash), and leaves
  Ctrl-C to its owner; leaving the pool's ``with`` block by an exception (a KeyboardInterrupt, an error) cancels
  the queued tasks and kills the workers instead of waiting for them.
* the ``sojourn`` command line (:func:`sojourn.cli.main`): Ctrl-C ends a command at once, as SIGTERM and SIGHUP do
  — Python would otherwise hold the KeyboardInterrupt until a numba kernel returns, minutes into a long replication.

The pipeline's local Dask workers end with their Snakemake process by distributed's own parent watch (a pipe each
worker reads); tests/workflow/test_signals.py sends each signal to each command and to a pipeline run.
"""
from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor

#: prctl(2) option: the signal a process receives when the thread that created it ends
PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int) -> None:
    """In a worker process: be killed (SIGKILL) when the parent ends, ignore Ctrl-C (the terminal sends it to the
    whole process group; the owner decides), and exit at once if the parent ``parent`` has ended already (before
    the request was made)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked while it started (OwnedPool.submit)
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the owner's with-block still ends the pool on an exception
        pass
    if os.getppid() != parent:
        os._exit(1)


class OwnedPool(ProcessPoolExecutor):
    """A process pool whose workers end with their owner (module doc): ``OwnedPool(workers, "spawn" | "fork")``.

    Left normally, the ``with`` block waits for the tasks as usual; left by an exception, it calls :meth:`stop`."""

    def __init__(self, workers: int, start_method: str = "spawn"):
        super().__init__(workers, mp_context=multiprocessing.get_context(start_method), initializer=die_with_parent,
                         initargs=(os.getpid(),))

    def submit(self, fn, /, *args, **kwargs):
        # the workers are started here: with SIGINT blocked, which they inherit, so that a Ctrl-C while an
        # interpreter starts (before die_with_parent ignores it) is not a KeyboardInterrupt traceback in the
        # terminal; here it stays pending until unblocked (as multiprocessing starts its resource tracker)
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            return super().submit(fn, *args, **kwargs)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            return super().__exit__(exc_type, exc, tb)
        self.stop()
        return False

    def stop(self) -> None:
        """Cancel the queued tasks and kill the workers now (their results are not wanted)."""
        processes = list((self._processes or {}).values())
        self.shutdown(wait=False, cancel_futures=True)
        for p in processes:
            if p.is_alive():
                p.kill()
        for p in processes:
            p.join(5)
