"""The content-keyed cache of block files, shared by every study's cell jobs.

A block job computes a few cells; each cell has a *content key* (a hash of everything that changes its
values: spec, run length, grid, seed, code fingerprint). The block file is written under
``<cache_dir>/<block key>.nc`` with its cells' keys in the ``cell_keys`` attribute, and the job's output
is a copy of it. When the block is rerun (a cell added, replications added), cells whose key is
unchanged are read back from the cache instead of being computed again. Snakemake deletes a job's
outputs before it runs, which is why the cache lives beside them.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Callable

import xarray as xr

from .integrity import check, discard, seal
from .io import log_line, read_netcdf, write_netcdf


def content_key(*parts) -> str:
    """Short content hash (16 hex digits) of JSON-able parts."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_cells(cache_dir, keys: dict, select: Callable[[xr.Dataset, str], xr.Dataset], log=None) -> dict:
    """{label: (cell dataset, its attrs)} for the cells of earlier block files in ``cache_dir`` whose content
    key equals ``keys[label]``; ``select(ds, label)`` cuts a cell out of a block. An entry that does not
    match its checksum (damaged or altered), has none, or cannot be read is reported to ``log``, removed,
    and its cells are recomputed."""
    cache_dir = Path(cache_dir)
    found = {}
    for f in sorted(cache_dir.glob("*.nc")) if cache_dir.is_dir() else []:
        if len(found) == len(keys):
            break
        state = check(f)
        if state != "ok":
            log_line(log, f"cache entry {f} not used ({'no checksum' if state == 'unsealed' else state}): "
                          "removed, its cells are recomputed")
            discard(f)
            continue
        try:
            old = read_netcdf(f)
            old_keys = json.loads(old.attrs.get("cell_keys", "{}"))
            old_attrs = json.loads(old.attrs.get("cell_attrs", "{}"))
        except (OSError, ValueError) as exc:
            log_line(log, f"cache entry {f} not used (unreadable: {exc}): removed, its cells are recomputed")
            discard(f)
            continue
        for label, key in keys.items():
            if label not in found and old_keys.get(label) == key:
                found[label] = (select(old, label), old_attrs.get(label, {}))
    return found


def store_entry(ds: xr.Dataset, cache_dir, key: str, encoding=None) -> Path:
    """Write ``ds`` to ``<cache_dir>/<key>.nc`` (atomic, sealed) and drop the other entries: the cache of a job
    whose output is not the cached data itself (e.g. a summary of the replications)."""
    cache_dir = Path(cache_dir)
    cache = cache_dir / f"{key}.nc"
    write_netcdf(ds, cache, encoding=encoding)
    for other in cache_dir.glob("*.nc"):
        if other != cache:
            discard(other)
    return cache


def store_block(ds: xr.Dataset, cache_dir, block_key: str, output, encoding) -> Path:
    """Write ``ds`` to ``<cache_dir>/<block_key>.nc`` (atomic, sealed), copy it to ``output`` (sealed too:
    a copy, not a hard link, so that damage to one never reaches the other), drop other keys."""
    cache_dir = Path(cache_dir)
    cache = cache_dir / f"{block_key}.nc"
    write_netcdf(ds, cache, encoding=encoding)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.copy.tmp")
    shutil.copyfile(cache, tmp)
    seal(tmp, output)
    for other in cache_dir.glob("*.nc"):
        if other != cache:
            discard(other)
    return output
