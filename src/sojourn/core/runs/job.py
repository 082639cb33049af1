"""One convention for every pipeline job: each rule's ``run:`` is one call of :func:`run`.

``run("sojourn.<study>.jobs:<name>", log_path, **arguments)`` opens the job's log, routes the ``sojourn``
loggers of this thread to it, calls the study's job function, and ends the log with the job's duration and
result — or with the traceback of what went wrong (one line for a full device or an interrupt; then re-raised, so
the job fails as usual). A job
function logs with ``logging.getLogger(__name__).info(...)``; it never opens its log itself.

Snakemake runs the jobs of a workflow as threads of one process (``force-use-threads``), several at once, so
the routing is per thread: a record goes to the log of the job running in the thread that emitted it. Outside a
job (the Python API, the command line) the records go where the ``logging`` configuration sends them (by
default only warnings reach stderr).

A keyword argument ``client`` given as a callable (the workflow's shared-client factory) is called inside the
log, so that a cluster that fails to start fails the job with its reason in the log.
"""
from __future__ import annotations

import importlib
import logging
import threading
import time
import traceback

from ..files.integrity import Inconsistent, NoSpace, replaceable
from ..files.io import Interrupted, check_interrupted

#: the parent of every sojourn logger
LOGGER = logging.getLogger("sojourn")

_current = threading.local()
_installed = threading.Lock()


class _ToJobLog(logging.Handler):
    """Writes a record to the log file of the job running in the emitting thread (if any)."""

    def emit(self, record: logging.LogRecord) -> None:
        fh = getattr(_current, "log", None)
        if fh is None:
            # not a job's thread (e.g. the Dask cluster's event loop reporting a lost SLURM worker): a warning
            # goes to stderr, as it would without this handler (logging's last resort is not used once a
            # handler exists)
            if record.levelno >= logging.WARNING:
                import sys

                sys.stderr.write(self.format(record) + "\n")
            return
        try:
            fh.write(self.format(record) + "\n")
            fh.flush()
        except Exception:  # a full disk must not hide the job's own error
            self.handleError(record)


def _install() -> None:
    with _installed:
        if any(isinstance(h, _ToJobLog) for h in LOGGER.handlers):
            return
        handler = _ToJobLog()
        handler.setFormatter(logging.Formatter("%(message)s"))
        LOGGER.addHandler(handler)
        if LOGGER.level == logging.NOTSET or LOGGER.level > logging.INFO:
            LOGGER.setLevel(logging.INFO)


def entry_point(entry: str):
    """The function named by ``"package.module:function"``."""
    module, _, name = entry.partition(":")
    if not name:
        raise ValueError(f"a job entry is 'module:function'; got {entry!r}")
    return getattr(importlib.import_module(module), name)


def run(entry: str, log_path, **arguments):
    """Run the job function ``entry`` with ``arguments``, its log in ``log_path`` (module doc)."""
    check_interrupted(entry)  # Ctrl-C: start nothing new
    _install()
    with open(replaceable(log_path), "w") as fh:
        previous = getattr(_current, "log", None)
        _current.log = fh
        try:
            LOGGER.info(entry)
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                fn = entry_point(entry)
                if callable(arguments.get("client")):
                    arguments["client"] = arguments["client"]()
                result = fn(**arguments)
            except (NoSpace, Inconsistent, Interrupted) as exc:  # a full device, a damaged input set aside,
                # Ctrl-C: the one line says all (a full device may not fit more; a failed job's log is printed on
                # the terminal, show-failed-logs)
                try:
                    fh.write(f"{exc}\n")
                    fh.flush()
                except OSError:
                    pass
                raise
            except BaseException:
                fh.write(traceback.format_exc())
                fh.flush()
                raise
            # the CPU of this thread: the job's own work in this process (its Dask tasks run elsewhere;
            # benchmarks/paper_profile.py reads it)
            LOGGER.info(f"done in {time.perf_counter() - t0:.2f} s (CPU {time.thread_time() - c0:.2f} s in the job's "
                        f"thread): {_short(result)}")
        finally:
            _current.log = previous
    return result


def _short(result) -> str:
    text = str(result)
    return text if len(text) <= 2000 else text[:2000] + " …"
