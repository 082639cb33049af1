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

from .config import NO_WORKERS_TIMEOUT
from .integrity import seal
from .version import __version__

#: held around every netCDF access of sojourn (HDF5 is not thread-safe)
NETCDF_LOCK = threading.RLock()


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
        attrs[k] = v if isinstance(v, (str, int, float, np.ndarray)) else json.dumps(v, sort_keys=True, default=_jsonable)
    return attrs


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if hasattr(x, "to_dict"):
        return x.to_dict()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def default_encoding(ds: xr.Dataset, complevel: int = 4) -> dict:
    """zlib compression for every numeric data variable (shuffle on)."""
    enc = {}
    for name, var in ds.data_vars.items():
        if var.dtype.kind in "iuf" and var.ndim > 0:
            enc[name] = {"zlib": True, "complevel": complevel, "shuffle": True}
    return enc


def write_netcdf(ds: xr.Dataset, path, encoding: dict | None = None) -> Path:
    """Write ``ds`` to ``path`` atomically (a temporary file in the same folder, then rename) and sealed
    (:mod:`sojourn.core.integrity`: a sha256 sidecar; permissions from the umask).

    A crash never leaves a half-written file under the final name.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    enc = default_encoding(ds) if encoding is None else encoding
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        with NETCDF_LOCK:
            ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=enc)
        seal(tmp, path)  # sidecar checksum, umask permissions, then the rename
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def read_netcdf(path) -> xr.Dataset:
    """Load a dataset fully into memory and close the file (no lingering HDF5 locks)."""
    with NETCDF_LOCK, xr.open_dataset(path, engine="netcdf4") as ds:
        return ds.load()


def log_line(log, text: str) -> None:
    """One line to the open file ``log`` (a job's log), or to stderr; flushed at once."""
    print(text, file=log if log is not None else sys.stderr, flush=True)


#: times a Dask task is retried after an error, e.g. the loss of its worker (then the job fails)
TASK_RETRIES = 2


def report_progress(futures, report, client=None, what: str = "tasks") -> None:
    """Call ``report(done, total)`` as each future finishes; return when all have.

    With ``client``, a watchdog: if the cluster has had no worker at all for the dask config value
    ``sojourn.no-workers-timeout`` (seconds, default 300) while futures are unfinished, raise RuntimeError
    naming ``what`` instead of waiting forever (a cluster whose workers keep dying, or a queue that never
    starts them).
    """
    import queue
    import time

    import dask

    limit = float(dask.config.get(NO_WORKERS_TIMEOUT, 300))
    q: queue.Queue = queue.Queue()
    for f in futures:
        f.add_done_callback(lambda fut: q.put(1))
    done, since = 0, None
    while done < len(futures):
        try:
            q.get(timeout=1.0)
        except queue.Empty:
            if client is None:
                continue
            if client.scheduler_info().get("workers"):
                since = None
            elif since is None:
                since = time.monotonic()
            elif time.monotonic() - since > limit:
                raise RuntimeError(f"no Dask worker for {limit:g} s while {len(futures) - done} of {len(futures)} "
                                   f"{what} were unfinished: the cluster lost its workers or never started them "
                                   "(see cluster.no_workers_timeout)")
            continue
        done += 1
        if report is not None:
            report(done, len(futures))
