"""netCDF I/O every study uses: provenance attrs, atomic writes, and one process-wide HDF5 lock.

HDF5 (under netCDF4) is not thread-safe, and Snakemake runs the pipeline's jobs as threads of one
process (``force-use-threads``): every netCDF read and write of sojourn goes through
:data:`NETCDF_LOCK` (re-entrant, so helpers may nest).
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np
import xarray as xr

from ..version import __version__
from .integrity import NETCDF_LOCK, no_space, release, replaceable, seal, sidecar  # noqa: F401  (NETCDF_LOCK: core.files.io's)


@functools.lru_cache(maxsize=1)
def git_commit() -> str:
    """The commit of the source tree this package was imported from, or 'unknown' (looked up once per process)."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        )
        return out.stdout.strip()
    except Exception:
        return "unknown"


def provenance(config=None, **extra) -> dict:
    """Attrs every dataset carries: CF conventions, package version, git commit, config as JSON.

    No timestamps: the same inputs give byte-identical files.
    """
    attrs = {
        "Conventions": "CF-1.11",
        "source": f"sojourn {__version__}",
        "sojourn_version": __version__,
        "git_commit": git_commit(),
    }
    if config is not None:
        attrs["config"] = config if isinstance(config, str) else json.dumps(config, sort_keys=True, default=_jsonable)
    for k, v in extra.items():
        attrs[k] = (
            v if isinstance(v, (str, int, float, np.ndarray)) else json.dumps(v, sort_keys=True, default=_jsonable)
        )
    return attrs


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if hasattr(x, "to_dict"):
        return x.to_dict()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def cf_flags(meanings: dict, *, masks: bool = False) -> dict:
    """The CF attributes of a flag variable from ``{value: meaning}``: ``flag_values`` (or ``flag_masks`` for bit
    masks, int8) and ``flag_meanings``."""
    return {"flag_masks" if masks else "flag_values": np.array(list(meanings), np.int8),
            "flag_meanings": " ".join(meanings.values())}


def cf_attrs(long_name: str, units: str = "1", *, flags: dict | None = None, **kw) -> dict:
    """The attributes of a data variable: ``long_name``, ``units``, any others, and a flag variable's
    ``{value: meaning}`` (:func:`cf_flags`)."""
    return {"long_name": long_name, "units": units, **kw, **(cf_flags(flags) if flags is not None else {})}


def default_encoding(ds: xr.Dataset, complevel: int = 4) -> dict:
    """zlib compression for every numeric data variable (shuffle on)."""
    enc = {}
    for name, var in ds.data_vars.items():
        if var.dtype.kind in "iuf" and var.ndim > 0:
            enc[name] = {"zlib": True, "complevel": complevel, "shuffle": True}
    return enc


def write_netcdf(ds: xr.Dataset, path, encoding: dict | None = None) -> Path:
    """Write ``ds`` to ``path`` atomically (a temporary file in the same folder, then rename) and sealed
    (:mod:`sojourn.core.files.integrity`: a sha256 sidecar; permissions from the umask).

    A crash never leaves a half-written file under the final name; a full device raises
    :class:`sojourn.core.files.integrity.NoSpace` ("no space left on device: <path>"); a ``path`` (or sidecar) that is
    not a regular file (a device, a FIFO, a socket, a folder) is never replaced:
    :class:`sojourn.core.files.integrity.NotRegular`.
    """
    path = replaceable(path)  # never onto a device, a FIFO, a socket or a folder (seal checks again at the rename)
    replaceable(sidecar(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    enc = default_encoding(ds) if encoding is None else encoding
    ds = beyond_stored_range(ds, enc, path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        with NETCDF_LOCK:
            ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=enc)
        seal(tmp, path)  # sidecar checksum, umask permissions, then the rename
    except BaseException as exc:
        # a full device: one line naming the file (HDF5 says "NetCDF: HDF error"); the file is at most the
        # data's uncompressed size plus its metadata (1 MiB is ample)
        full = no_space(exc, path, need=ds.nbytes + (1 << 20)) if isinstance(exc, Exception) else None
        if os.path.exists(tmp):
            os.unlink(tmp)
        with NETCDF_LOCK:
            release(tmp)  # a handle HDF5 could not close: it would keep the space taken (integrity.release)
        if full is not None:
            raise full from None
        raise
    return path


def beyond_stored_range(ds: xr.Dataset, encoding: dict, path=None) -> xr.Dataset:
    """``ds`` with each value that its variable's encoding stores in a narrower float type (float32) but that
    lies beyond that type's range set to ±inf explicitly — what the cast would make of it, now said: one line
    per variable to the ``sojourn`` log (a job's log), naming the file, the variable and the count, and no
    numpy "overflow encountered in cast" warning. Such values come from results that diverged (e.g. an
    approximation's CDF of -1e308 at a load where its chain breaks down), which the writer's own validity flags
    mark; a variable that must keep them is stored in float64 instead. Returns ``ds`` itself when nothing is
    beyond range."""
    import logging

    out = None
    for name, e in (encoding or {}).items():
        target = e.get("dtype") if isinstance(e, dict) else None
        if target is None or name not in ds.variables:
            continue
        target, var = np.dtype(target), ds[name]
        if target.kind != "f" or var.dtype.kind != "f" or var.dtype.itemsize <= target.itemsize:
            continue
        x = var.values
        with np.errstate(invalid="ignore"):
            big = np.abs(x) > np.finfo(target).max  # NaN compares False, inf is already inf
        n = int(np.count_nonzero(big & np.isfinite(x)))
        if n == 0:
            continue
        out = ds.copy(deep=False) if out is None else out
        out[name] = var.copy(data=np.where(big, np.copysign(np.inf, x), x))
        logging.getLogger("sojourn.io").info(
            f"{path or 'netCDF file'}: {n} value(s) of {name} beyond the {target} range (|x| > "
            f"{np.finfo(target).max:.4g}) stored as +/-inf")
    return ds if out is None else out


def read_netcdf(path) -> xr.Dataset:
    """Load a dataset fully into memory and close the file (no lingering HDF5 locks)."""
    with NETCDF_LOCK, xr.open_dataset(path, engine="netcdf4") as ds:
        return ds.load()


def log_line(log, text: str) -> None:
    """One line to the open file ``log`` (a job's log), or to stderr; flushed at once."""
    print(text, file=log if log is not None else sys.stderr, flush=True)


#: times a Dask task is retried after an error, e.g. the loss of its worker (then the job fails)
TASK_RETRIES = 2

#: set by SIGINT once :func:`stop_waiting_on_interrupt` is installed (Snakemake's main process). Snakemake
#: runs the jobs as threads and, on Ctrl-C, waits for the running ones; only the main thread receives the
#: signal, so the jobs read this: :func:`sojourn.core.cluster.cluster.report_progress` cancels its Dask tasks and raises
#: :class:`Interrupted`, and a job starting afterwards fails at once (:func:`check_interrupted`). Snakemake
#: can also lose the KeyboardInterrupt itself (its log handler swallows one that lands while it writes a
#: line); the failing jobs then stop the run all the same.
INTERRUPTED = threading.Event()


class Interrupted(RuntimeError):
    """The run was interrupted (SIGINT) while this job waited for or was about to start its work."""


def check_interrupted(what: str) -> None:
    """Raise :class:`Interrupted` naming ``what`` if the process has received SIGINT."""
    if INTERRUPTED.is_set():
        raise Interrupted(f"interrupted (SIGINT): {what} stopped; a rerun redoes it")


def stop_waiting_on_interrupt() -> None:
    """From now on SIGINT also sets :data:`INTERRUPTED`, then does what it did before (KeyboardInterrupt in
    the main thread). Call from the main thread; a SIGINT that is ignored or not Python's stays as it is."""
    import signal

    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous) or getattr(previous, "sets_interrupted", False):
        return

    def on_sigint(signum, frame):
        INTERRUPTED.set()
        previous(signum, frame)

    on_sigint.sets_interrupted = True
    signal.signal(signal.SIGINT, on_sigint)


def sigterm_handler_in_a_thread() -> None:
    """Run the installed SIGTERM handler in a thread of its own instead of the main thread.

    Snakemake's SIGTERM handler (finish the running jobs, start no new one) takes its scheduler's lock,
    which the main thread, where Python runs signal handlers, may be holding when the signal lands (e.g.
    while it logs a finished job): the run then waited forever (seen with Snakemake 9.27). In a thread the
    handler waits for the lock instead. Call from the main thread once Snakemake's scheduler exists (the
    workflow's ``onstart:``).

    SIGHUP (the terminal or ssh session that started Snakemake is gone) gets the same handler, unless it is ignored
    (``nohup``): Snakemake left SIGHUP at its default, so a lost login session killed it at once (exit 129), leaving
    its lock and, on the SLURM executor route, its SLURM jobs running as orphans to their end; like SIGTERM it now
    cancels them (the executor's cancel: ``scancel``) and removes the lock (issue 35)."""
    import signal

    handler = signal.getsignal(signal.SIGTERM)
    if not callable(handler) or getattr(handler, "in_a_thread", False):
        return

    def on_sigterm(signum, frame):
        threading.Thread(target=handler, args=(signum, None), name="sigterm", daemon=True).start()

    on_sigterm.in_a_thread = True
    signal.signal(signal.SIGTERM, on_sigterm)
    if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) == signal.SIG_DFL:
        signal.signal(signal.SIGHUP, on_sigterm)
