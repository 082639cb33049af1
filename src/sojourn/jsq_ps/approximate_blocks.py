"""The JSQ-PS approximation cell job: a block of M/M/R cells (one R, several ρ), one Dask task per cell running
all its methods (they share building blocks), cached by content key (see :mod:`sojourn.core.cache`)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import xarray as xr

from ..core.cache import cached_cells, content_key, store_block
from ..core.io import TASK_RETRIES, report_progress
from ..core.io import log_line as _log
from ..core.io import provenance
from ..core.timegrid import time_grid
from .solve import approximate_all
from .solve.guards import describe
from .model import JSQPS
from .storage import APPROX_ATTRS, approximation_encoding, select_rho, to_storage


_PROVENANCE: dict = {}


def _base_provenance() -> dict:
    """Version and commit attrs, computed once per process (git is asked once, not once per cell)."""
    if not _PROVENANCE:
        _PROVENANCE.update(provenance(None))
    return dict(_PROVENANCE)


#: corrected methods that are the same chain as another one (methods.py docstring; reference §8.3):
#: with ``share_corrected`` only A* and C* are computed and copied to these names
SHARED_CORRECTED = {"B*": "A*", "D*": "A*", "E*": "A*", "F*": "C*"}


def _approximate_task(R, rho, mu, methods, t, hyper, share_corrected=False, exact_budget=None):
    """Faithful methods with the config's L1 (Table 4) and L2; corrected methods and ``exact`` choose their
    own truncations (passing L1 to them would undo the correction), so they run as a second group.
    ``share_corrected``: B*, D*, E* are copies of A* and F* of C* (their run_time is the source's).
    ``exact_budget``: ``exact`` runs where it fits, else NaN with ``validity_reason`` over_budget."""
    spec = JSQPS.from_load(int(R), float(rho), mu=float(mu))
    faithful = [m for m in methods if not m.endswith("*") and m != "exact"]
    others = [m for m in methods if m not in faithful]
    alias = {m: SHARED_CORRECTED[m] for m in others if share_corrected and m in SHARED_CORRECTED}
    computed = list(dict.fromkeys(alias.get(m, m) for m in others))
    parts = []
    if faithful:
        parts.append(approximate_all(spec, faithful, t=t, **hyper))
    if computed:
        extra = {"exact_budget": exact_budget} if "exact" in computed and exact_budget is not None else {}
        part = approximate_all(spec, computed, t=t, **extra)
        if alias:
            src = [alias.get(m, m) for m in others]
            part = part.sel({"approximation": src}).assign_coords({"approximation": np.array(others, dtype=str)})
            part.attrs["shared_corrected"] = json.dumps(alias, sort_keys=True)
        parts.append(part)
    if len(parts) == 1:
        return parts[0].sel({"approximation": list(methods)})
    out = xr.concat(parts, dim="approximation", data_vars="all", coords="different", compat="equals", join="outer",
                    combine_attrs="drop_conflicts")
    return out.sel({"approximation": list(methods)})


def approximation_key(R, rho, mu, methods, L1, L2, tg, code, share_corrected, exact_budget=None) -> str:
    """Content key of one approximation cell (the exact budget counts only where ``exact`` is asked for)."""
    parts = ["approximation", int(R), str(rho), float(mu), list(methods), int(L1), int(L2),
             {k: tg[k] for k in sorted(tg)}, code, bool(share_corrected)]
    if "exact" in methods and exact_budget is not None:
        parts.append({k: exact_budget[k] for k in sorted(exact_budget)})
    return content_key(*parts)


def approximate_block(client, *, R: int, rhos, mu: float, methods, L1: int, L2: int, tg: dict, code: str,
                      output, cache_dir, log=None, share_corrected=False, exact_budget=None) -> Path:
    """All ``methods`` for the M/M/R cells (R, ρ), ρ in ``rhos``: one Dask task per cell (its methods share
    building blocks), written as one file ``output``; cells stored before under the same content key
    in ``cache_dir`` are reused (see :func:`simulate_block`)."""
    rhos = [str(r) for r in rhos]
    t = time_grid(float(tg["t_max"]), float(tg["dt"]))
    hyper = {"L1": int(L1), "L2": int(L2)}
    keys = {rho: approximation_key(R, rho, mu, methods, L1, L2, tg, code, share_corrected, exact_budget)
            for rho in rhos}
    cache_dir = Path(cache_dir)
    cached = cached_cells(cache_dir, keys, select_rho, log=log)
    todo = [rho for rho in rhos if rho not in cached]
    t0 = time.perf_counter()
    futures = [client.submit(_approximate_task, int(R), float(rho), float(mu), tuple(methods), t, hyper,
                             bool(share_corrected), exact_budget, pure=False, retries=TASK_RETRIES,
                             key=f"approx-R{R}-rho{rho}-{keys[rho]}")
               for rho in todo]
    cells, cell_attrs = {}, {}
    for rho, (old, attrs) in cached.items():
        cells[rho], cell_attrs[rho] = old, attrs
        _log(log, f"approximation R={R} rho={rho}: cached (key {keys[rho]})")
    report_progress(futures, lambda i, n: _log(log, f"  [{i}/{n}] cells done ({time.perf_counter() - t0:.2f} s)"),
                    client, what=f"approximation cells R={R} rho={','.join(todo)}")
    for rho, fut in zip(todo, futures):
        ds = fut.result()
        _log(log, f"approximation R={R} rho={rho} methods={list(methods)} L1={L1} L2={L2}: "
                  f"done after {time.perf_counter() - t0:.2f} s")
        for m, reason in zip(ds["approximation"].values, ds["validity_reason"].values):
            if int(reason):
                _log(log, f"  warning: {m} not valid at R={R} rho={rho}: {describe(int(reason))}")
        ds = to_storage(_fixed_n(ds, int(L2)).expand_dims(R=[int(R)], rho=[float(rho)]))
        for name, (long_name, units) in APPROX_ATTRS.items():
            if name in ds:
                ds[name].attrs = {**ds[name].attrs, "long_name": long_name, "units": units}
        cell_attrs[rho] = {k: v for k, v in ds.attrs.items() if k in ("title", "model", "spec", "hyper",
                                                                      "shared_corrected", "exact_plan")}
        ds.attrs = {}
        cells[rho] = ds
    parts = [cells[rho] for rho in rhos]
    block = parts[0] if len(parts) == 1 else xr.concat(
        parts, dim="rho", data_vars="all", coords="different", compat="equals", join="outer",
        combine_attrs="drop")
    block.attrs = {**_base_provenance(),
                   "pipeline_config": json.dumps({"L1": int(L1), "L2": int(L2), "methods": list(methods),
                                                  "code": code, "time_grid": tg,
                                                  "share_corrected": bool(share_corrected),
                                                  "exact_budget": exact_budget}, sort_keys=True),
                   "cell_keys": json.dumps(keys, sort_keys=True),
                   "cell_attrs": json.dumps({rho: cell_attrs[rho] for rho in rhos}, sort_keys=True, default=str)}
    store_block(block, cache_dir, content_key(keys), output, approximation_encoding(block))
    return Path(output)


def _fixed_n(ds: xr.Dataset, n_store: int) -> xr.Dataset:
    """λ_n and A_n on n = 0..n_store−1 for every cell (cells differ in their own truncation, and a common
    ``n`` axis is what lets the cells merge); the A_n mass beyond is kept as ``A_n_tail_mass``."""
    if "n" not in ds.dims:
        return ds
    tail = ds["A_n"].where(ds["n"] >= n_store).sum("n", skipna=True)
    out = ds.reindex(n=np.arange(n_store), fill_value=np.nan)
    out["A_n_tail_mass"] = tail
    out["A_n_tail_mass"].attrs = {"long_name": f"sum of A_n over n >= {n_store} (not stored)", "units": "1"}
    out["lambda_n"].attrs = {"long_name": "arrival rate to a server with n customers (lambda_n)",
                             "units": "1/time unit"}
    out["A_n"].attrs = {"long_name": "probability that an arrival finds n customers at its server (A_n)",
                        "units": "1"}
    return out
