"""Cell-level work of the Snakemake pipeline: simulate one cell on Dask, approximate one cell, write netCDF.

Called from the ``run:`` blocks in ``workflow/rules/jsq_ps.smk`` with the config *subsections* a rule
uses (so a change elsewhere in the config does not rerun it). The heavy lifting happens on Dask
workers: one task per replication (:func:`sojourn.simulate.api.simulate_replication`) and one task per
approximation cell (:func:`sojourn.analytic.approximate_all`).

Simulation cache. A cell's replications are stored under a content key (spec, run length, window,
grid, base seed, engine code hash) in ``<cache>/<service>/R~R/rho~ρ/<key>.nc``; the Snakemake output
is a hard link to that file. When a cell is rerun because ``simulation.replications`` grew, only the
missing replications are simulated (Snakemake deletes a job's outputs before it runs, so the cache
lives outside them). Replication k is bit-identical whether it was computed now or earlier, in any
worker, because its stream depends only on (seed, spec, k).
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np
import xarray as xr

from . import __version__
from . import datasets as _datasets
from .datasets import provenance

#: HDF5 (under netCDF4) is not thread-safe, and Snakemake runs the jobs of this module as threads of
#: one process: every netCDF read and write here goes through this lock.
NETCDF_LOCK = threading.RLock()


def read_netcdf(path) -> xr.Dataset:
    with NETCDF_LOCK:
        return _datasets.read_netcdf(path)


def write_netcdf(ds: xr.Dataset, path, encoding=None):
    with NETCDF_LOCK:
        return _datasets.write_netcdf(ds, path, encoding=encoding)
from .grid import format_rho, stable_key

# Variables of the simulation engine kept in the pipeline's files (wall_time is kept but documented
# as not reproducible; it is excluded from identity checks).
SIM_VARS = (
    "count", "overflow", "n_customers", "sum", "sumsq", "mean", "max",
    "occupancy_at_arrival", "mean_number_per_server", "events", "wall_time",
)


def spec_for(R: int, rho: float, law: str, mu: float = 1.0):
    """The JSQ-PS spec of a cell: R servers at load ρ, service law ``law`` rescaled to mean 1/μ."""
    from .models import JSQPS

    return JSQPS.from_load(int(R), float(rho), mu=float(mu), service=law)


def _log(log, text):
    stream = log if log is not None else sys.stderr
    print(text, file=stream, flush=True)


def _sim_kwargs(sim: dict, tg: dict) -> dict:
    cooldown = sim.get("cooldown")
    return dict(
        horizon=float(sim["horizon"]),
        warmup=float(sim["warmup"]),
        cooldown=float(cooldown) if cooldown is not None else None,
        backend=str(sim.get("backend", "fast")),
        dt=float(tg["dt"]),
        t_max=float(tg["t_max"]),
    )


def simulation_key(spec, sim: dict, tg: dict, code: str) -> str:
    """Content key of a cell's replications: everything that changes their values except their number."""
    kw = _sim_kwargs(sim, tg)
    return stable_key(spec.to_dict(), kw, int(sim["seed"]), code)


def simulate_cell(client, *, service: str, law: str, R: int, rho: str, mu: float, sim: dict, tg: dict,
                  code: str, output, cache_dir, log=None) -> Path:
    """Simulate ``sim['replications']`` replications of one cell on ``client``; write ``output``.

    Replications already in the cache (same content key) are reused; the others run as one Dask
    task each, gathered in replication order.
    """
    from .simulate.api import concat_replications, simulate_replication

    spec = spec_for(R, float(rho), law, mu)
    n_rep = int(sim["replications"])
    seed = int(sim["seed"])
    kw = _sim_kwargs(sim, tg)
    key = simulation_key(spec, sim, tg, code)
    cache = Path(cache_dir) / service / f"R~{R}" / f"rho~{rho}" / f"{key}.nc"
    have = {}
    if cache.exists():
        old = read_netcdf(cache)
        for k in old["replication"].values.tolist():
            if k < n_rep:
                have[int(k)] = old.sel(replication=[k]).drop_vars(["service", "R", "rho"]).squeeze(
                    ["service", "R", "rho"], drop=True)
    missing = [k for k in range(n_rep) if k not in have]
    _log(log, f"cell {service} R={R} rho={rho}: {spec.describe()}; key {key}; "
              f"{len(have)} replications cached, {len(missing)} to simulate")
    new = {}
    if missing:
        t0 = time.perf_counter()
        futures = client.map(
            simulate_replication, [spec] * len(missing), missing, [seed] * len(missing), pure=False,
            key=[f"sim-{service}-R{R}-rho{rho}-rep{k}-{key}" for k in missing], **kw,
        )
        progress(futures, lambda i, n: _log(log, f"  [{i}/{n}] replications done ({time.perf_counter() - t0:.2f} s)"))
        for k, ds in zip(missing, client.gather(futures)):
            new[k] = ds
    parts = [have.get(k, new.get(k)) for k in range(n_rep)]
    parts = [p[[v for v in SIM_VARS if v in p.data_vars]] for p in parts]
    attrs = dict(new[missing[0]].attrs) if missing else {k: v for k, v in old.attrs.items()}
    if missing:  # cached parts come from our own cell file: give them the engine's attrs (same content key)
        for p in parts:
            p.attrs = dict(attrs)
    ds = concat_replications(parts) if len(parts) > 1 else parts[0]
    ds = ds.expand_dims(service=[service], R=[int(R)], rho=[float(rho)])
    ds["spec_hash"] = xr.DataArray(
        np.array([[[int(json.loads(attrs["seed_entropy"])[1])]]], dtype=np.uint64), dims=("service", "R", "rho"),
        attrs={"long_name": "64-bit hash of the cell's spec (second entropy word of every replication's "
                            "SeedSequence)", "units": "1"})
    ds.attrs = _cell_attrs(attrs, sim=sim, tg=tg, code=code, key=key, law=law)
    write_netcdf(ds, cache, encoding=simulation_encoding(ds))
    _link(cache, output)
    for other in cache.parent.glob("*.nc"):  # keep one cached key per cell
        if other != cache:
            other.unlink()
    return Path(output)


def progress(futures, report) -> None:
    """Call ``report(done, total)`` as each future finishes (no default client needed); wait for all."""
    import queue

    q: queue.Queue = queue.Queue()
    for f in futures:
        f.add_done_callback(lambda fut: q.put(1))
    for i in range(1, len(futures) + 1):
        q.get()
        report(i, len(futures))


def _cell_attrs(engine_attrs: dict, **extra) -> dict:
    keep = ("Conventions", "source", "sojourn_version", "git_commit", "model", "spec", "backend", "kernel",
            "horizon", "warmup", "cooldown", "dt", "t_max", "seed", "seed_entropy", "seed_recipe",
            "histogram_convention", "title")
    out = {k: engine_attrs[k] for k in keep if k in engine_attrs}
    out["pipeline_config"] = json.dumps(extra, sort_keys=True, default=str)
    return out


def _link(src: Path, dst) -> None:
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.link.tmp")
    if tmp.exists():
        tmp.unlink()
    try:
        os.link(src, tmp)
    except OSError:  # another file system: copy
        import shutil

        shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def simulation_encoding(ds: xr.Dataset, complevel: int = 5) -> dict:
    """Compact storage: counts as int16/int32, zlib + shuffle; small variables contiguous."""
    enc = {}
    for name, var in ds.data_vars.items():
        e = {"zlib": True, "complevel": complevel, "shuffle": True}
        if name in ("count", "occupancy_at_arrival"):
            # counts of one 0.01-wide bin: int16 when every value fits (~13% smaller), else int32
            e["dtype"] = "int16" if int(var.max()) < np.iinfo(np.int16).max else "int32"
            e["chunksizes"] = tuple(1 if d != var.dims[-1] else var.sizes[d] for d in var.dims)
        enc[name] = e
    enc.update(_coord_encoding(ds, complevel))
    return _small_contiguous(ds, enc)


#: variables smaller than this (elements) are stored contiguous and uncompressed: a chunked, filtered
#: HDF5 dataset costs ~3 kB of B-tree and header, which dominated the per-cell files (81 kB -> 48 kB)
SMALL = 4096


def _small_contiguous(ds: xr.Dataset, enc: dict) -> dict:
    for name, var in ds.data_vars.items():
        if var.size < SMALL and var.dtype.kind in "iuf":
            enc[name] = {k: v for k, v in enc.get(name, {}).items() if k == "dtype"} | {"contiguous": True}
    return enc


def _coord_encoding(ds: xr.Dataset, complevel: int) -> dict:
    """Compress the long coordinates too (t alone is 146 kB per cell file uncompressed)."""
    return {name: {"zlib": True, "complevel": complevel, "shuffle": True}
            for name in ("t", "n") if name in ds.coords}


# -- approximations --------------------------------------------------------------------------------
APPROX_ATTRS = {
    "run_time": ("run time of the method on this cell (its share of shared building blocks; not reproducible)", "s"),
    "L1": ("Markov-chain truncation per server used by the method", "1"),
    "L2": ("sum range / truncation level used by the method", "1"),
    "faithful": ("1 = paper-faithful method (A-F), 0 = corrected or exact", "1"),
    "truncation_mass": ("probability mass lost to truncation (NaN if not reported)", "1"),
}
_PROVENANCE: dict = {}


def _base_provenance() -> dict:
    """Version and commit attrs, computed once per process (git is asked once, not once per cell)."""
    if not _PROVENANCE:
        _PROVENANCE.update(provenance(None))
    return dict(_PROVENANCE)


def _approximate_task(R, rho, mu, methods, t, hyper):
    """Faithful methods with the config's L1 (Table 4) and L2; corrected methods and ``exact`` choose their
    own truncations (passing L1 to them would undo the correction), so they run as a second group."""
    from .analytic import approximate_all

    spec = spec_for(R, rho, "exponential", mu)
    faithful = [m for m in methods if not m.endswith("*") and m != "exact"]
    others = [m for m in methods if m not in faithful]
    parts = []
    if faithful:
        parts.append(approximate_all(spec, faithful, t=t, **hyper))
    if others:
        parts.append(approximate_all(spec, others, t=t))
    if len(parts) == 1:
        return parts[0]
    out = xr.concat(parts, dim="method", data_vars="all", coords="different", compat="equals", join="outer",
                    combine_attrs="drop_conflicts")
    return out.sel({"method": list(methods)})


def approximate_cell(client, *, R: int, rho: str, mu: float, methods, L1: int, L2: int, tg: dict, code: str,
                     output, log=None) -> Path:
    """All ``methods`` for the M/M/R cell (R, ρ) as one Dask task (they share building blocks)."""
    from .analytic.grid import time_grid

    t = time_grid(float(tg["t_max"]), float(tg["dt"]))
    hyper = {"L1": int(L1), "L2": int(L2)}
    t0 = time.perf_counter()
    fut = client.submit(_approximate_task, int(R), float(rho), float(mu), tuple(methods), t, hyper, pure=False,
                        key=f"approx-R{R}-rho{rho}-{code}")
    ds = fut.result()
    _log(log, f"approximation R={R} rho={rho} methods={list(methods)} L1={L1} L2={L2}: "
              f"{time.perf_counter() - t0:.2f} s")
    ds = to_storage(_fixed_n(ds, int(L2)).expand_dims(R=[int(R)], rho=[float(rho)]))
    for name, (long_name, units) in APPROX_ATTRS.items():
        if name in ds:
            ds[name].attrs = {**ds[name].attrs, "long_name": long_name, "units": units}
    keep = {k: v for k, v in ds.attrs.items() if k not in ("config",)}
    ds.attrs = {**_base_provenance(), **{k: v for k, v in keep.items() if k in ("title", "model", "spec", "hyper")},
                "pipeline_config": json.dumps({"L1": int(L1), "L2": int(L2), "methods": list(methods),
                                               "code": code, "time_grid": tg}, sort_keys=True)}
    write_netcdf(ds, output, encoding=approximation_encoding(ds))
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


#: tail probabilities below this are stored as 0 (they change no percentile ≤ 99.999 and W by < 1e-6)
SF_FLOOR = 1e-9
#: mantissa bits kept in the stored survival function (relative error ≤ 2^-13 ≈ 1.2e-4)
SF_BITS = 12


def to_storage(ds: xr.Dataset) -> xr.Dataset:
    """Store an approximation as ``sf`` = 1 − F (float32, quantised to relative precision, tiny tails
    zeroed) instead of ``cdf``: a CDF in float32 has absolute resolution 6e-8 near 1 and quantising it
    would destroy the 99.999th percentile, while the survival function keeps relative precision in the
    tail and compresses ~4x better. :func:`read_approximation` restores ``cdf``."""
    if "cdf" not in ds:
        return ds
    sf = (1.0 - ds["cdf"].astype(np.float64)).clip(min=0.0)
    sf = sf.where(sf >= SF_FLOOR, 0.0)
    out = ds.drop_vars("cdf")
    out["sf"] = sf
    out["sf"].attrs = {"long_name": "approximated survival function 1 - F(t) = P(S >= t) (read_approximation "
                                    "adds cdf = 1 - sf)", "units": "1",
                       "comment": f"float32 with {SF_BITS} mantissa bits (BitRound); values < {SF_FLOOR:g} stored as 0"}
    return out


def read_approximation(path) -> xr.Dataset:
    """An approximation file with ``cdf`` = 1 − ``sf`` restored (float64)."""
    ds = read_netcdf(path)
    if "sf" in ds and "cdf" not in ds:
        ds["cdf"] = 1.0 - ds["sf"].astype(np.float64)
        ds["cdf"].attrs = {"long_name": "approximated sojourn-time CDF F(t) on the grid t", "units": "1"}
    return ds


def approximation_encoding(ds: xr.Dataset, complevel: int = 5) -> dict:
    """``sf`` float32 quantised (see :func:`to_storage`), other floats float32, all zlib + shuffle."""
    enc = {}
    for name, var in ds.data_vars.items():
        if var.dtype.kind not in "iuf":
            continue
        e = {"zlib": True, "complevel": complevel, "shuffle": True}
        if name == "sf":
            e.update(dtype="float32", significant_digits=SF_BITS, quantize_mode="BitRound",
                     chunksizes=tuple(1 if d != "t" else var.sizes[d] for d in var.dims))
        elif name in ("lambda_n", "A_n"):
            e["dtype"] = "float32"
        enc[name] = e
    enc.update(_coord_encoding(ds, complevel))
    return _small_contiguous(ds, enc)


def cell_path(root, kind: str, service: str | None, R, rho) -> str:
    """``<root>/cells/<kind>/[<service>/]R~<R>/rho~<rho>.nc`` (the layout the rules use)."""
    parts = [str(root), "cells", kind] + ([service] if service else []) + [f"R~{R}", f"rho~{rho}.nc"]
    return "/".join(parts)


__all__ = [
    "spec_for", "simulate_cell", "approximate_cell", "simulation_key", "simulation_encoding",
    "approximation_encoding", "cell_path", "format_rho", "__version__",
]


# -- merging -----------------------------------------------------------------------------------------
#: gaps of an incomplete hypercube (an M/G/R law on a sub-grid): integer variables get these values
SIM_FILL = {"count": 0, "overflow": 0, "n_customers": 0, "occupancy_at_arrival": 0, "events": -1, "spec_hash": 0}


def merge_cells(paths, output, kind: str, config: dict) -> Path:
    """Merge per-cell files into ``output`` with provenance (config subsection, version, commit, seeds)."""
    from .grid import combine_cells

    dss = [_object_strings(read_netcdf(p)) for p in paths]
    if kind == "simulation":
        merged = combine_cells(dss, fill_value=SIM_FILL)
        for name, value in SIM_FILL.items():  # outer join keeps ints only if the fill is an int
            if name in merged and merged[name].dtype.kind == "f":
                merged[name] = merged[name].fillna(value).astype(np.int64)
        enc = simulation_encoding(merged)
        extra = {"seed": int(config["simulation"]["seed"]),
                 "seed_recipe": dss[0].attrs.get("seed_recipe", ""),
                 "histogram_convention": dss[0].attrs.get("histogram_convention", "")}
    else:
        # every cell on the full method axis (exact runs only for small R): missing methods are NaN
        methods = list(config["approximation"]["methods"])
        dss = [d.reindex({"method": np.array(methods, dtype=object)}) for d in dss]
        merged = combine_cells(dss)
        enc = approximation_encoding(merged)
        extra = {}
    merged.attrs = provenance(config, title=f"sojourn pipeline: merged {kind} cells", **extra)
    write_netcdf(merged, output, encoding=enc)
    return Path(output)


def _object_strings(ds: xr.Dataset) -> xr.Dataset:
    """String coordinates as Python objects: combining fixed-width numpy strings of different widths
    (``<U11`` 'exponential', ``<U13`` 'deterministic') truncates them in an outer join."""
    for name in ("service", "method"):
        if name in ds.coords and ds[name].dtype.kind == "U":
            ds = ds.assign_coords({name: ds[name].values.astype(object)})
    return ds


def write_comparison(sim_path, approx_path, output, config: dict) -> Path:
    from .compare import compare_files, comparison_encoding

    # streams over (R, rho) cells: bounded memory (reading both files whole took ~9.6 GB on the paper grid)
    ds = compare_files(sim_path, approx_path, config.get("comparison"), lock=NETCDF_LOCK)
    ds.attrs.update(provenance(config, title="sojourn pipeline: approximations vs simulation",
                               seed=int(config["simulation"]["seed"])))
    write_netcdf(ds, output, encoding=comparison_encoding(ds))
    return Path(output)
