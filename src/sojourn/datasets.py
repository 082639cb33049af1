"""xarray/netCDF helpers shared by every writer: provenance attrs and atomic netCDF writes."""
from __future__ import annotations

import functools
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

from . import __version__


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
    """Write ``ds`` to ``path`` atomically: a temporary file in the same folder, then rename.

    A crash never leaves a half-written file under the final name.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    enc = default_encoding(ds) if encoding is None else encoding
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        ds.to_netcdf(tmp, engine="netcdf4", format="NETCDF4", encoding=enc)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def read_netcdf(path) -> xr.Dataset:
    """Load a dataset fully into memory and close the file (no lingering HDF5 locks)."""
    with xr.open_dataset(path, engine="netcdf4") as ds:
        return ds.load()
