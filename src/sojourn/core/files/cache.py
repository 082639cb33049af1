"""The content-keyed cache of the jobs' results, shared by every study (written and used by the cell runner,
:mod:`sojourn.core.runs.runner`).

A job computes a few cells; each cell has a *content key* (a hash of everything that changes its values: spec,
run length, grid, seed, code fingerprint). The job's result is written under ``<cache_dir>/<key>.nc`` with its
cells' keys in the ``cell_keys`` attribute (:func:`sojourn.core.runs.runner.store`). When the job is rerun (a cell
added, replications added), cells whose key is unchanged are read back from the cache instead of being computed
again (:func:`cached_cells`). Snakemake deletes a job's outputs before it runs, which is why the cache lives
beside them.
"""
from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from pathlib import Path

import xarray as xr

from .integrity import check, discard
from .io import log_line, read_netcdf

LOG = logging.getLogger(__name__)


def content_key(*parts) -> str:
    """Short content hash (16 hex digits) of JSON-able parts."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_cells(cache_dir, keys: dict, select: Callable[[xr.Dataset, str], xr.Dataset], log=None) -> dict:
    """{label: (cell dataset, its attrs)} for the cells of earlier block files in ``cache_dir`` whose content
    key equals ``keys[label]``; ``select(ds, label)`` cuts a cell out of a block. An entry that does not
    match its checksum (damaged or altered), has none, or cannot be read is reported to ``log`` (an open file;
    default: this module's logger, so the job's log), removed,
    and its cells are recomputed."""
    cache_dir = Path(cache_dir)
    report = LOG.info if log is None else (lambda text: log_line(log, text))
    found = {}
    for f in sorted(cache_dir.glob("*.nc")) if cache_dir.is_dir() else []:
        if len(found) == len(keys):
            break
        state = check(f)
        if state != "ok":
            report(f"cache entry {f} not used ({'no checksum' if state == 'unsealed' else state}): "
                          "removed, its cells are recomputed")
            discard(f)
            continue
        try:
            old = read_netcdf(f)
            old_keys = json.loads(old.attrs.get("cell_keys", "{}"))
            old_attrs = json.loads(old.attrs.get("cell_attrs", "{}"))
        except (OSError, ValueError) as exc:
            report(f"cache entry {f} not used (unreadable: {exc}): removed, its cells are recomputed")
            discard(f)
            continue
        for label, key in keys.items():
            if label not in found and old_keys.get(label) == key:
                found[label] = (select(old, label), old_attrs.get(label, {}))
    return found
