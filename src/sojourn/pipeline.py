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


#: gaps of an incomplete hypercube (an M/G/R law on a sub-grid): integer variables get these values
SIM_FILL = {"count": 0, "overflow": 0, "n_customers": 0, "occupancy_at_arrival": 0, "events": -1, "spec_hash": 0}


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
    """One cell as a block of one (see :func:`simulate_block`); cached under ``<cache_dir>/<service>/R~R/rho~ρ``."""
    return simulate_block(client, service=service, law=law, R=R, rhos=[rho], mu=mu, sim=sim, tg=tg, code=code,
                          output=output, cache_dir=Path(cache_dir) / service / f"R~{R}" / f"rho~{rho}", log=log)


#: engine attrs that differ between the cells of a block (kept per cell in the block's ``cell_attrs``)
CELL_SPECIFIC = ("model", "spec", "seed_entropy", "title")


def _cached_cells(cache_dir: Path, keys: dict) -> dict:
    """{ρ: (cell dataset, its attrs)} for the cells of earlier block files in ``cache_dir`` whose content
    key equals ``keys[ρ]`` (a block rerun because a ρ was added or replications grew reuses them)."""
    found = {}
    for f in sorted(cache_dir.glob("*.nc")) if cache_dir.is_dir() else []:
        if len(found) == len(keys):
            break
        try:
            old = read_netcdf(f)
            old_keys = json.loads(old.attrs.get("cell_keys", "{}"))
            old_attrs = json.loads(old.attrs.get("cell_attrs", "{}"))
        except (OSError, ValueError):
            continue  # an unreadable leftover: recompute
        for rho, key in keys.items():
            if rho not in found and old_keys.get(rho) == key:
                found[rho] = (old.sel(rho=[float(rho)]), old_attrs.get(rho, {}))
    return found


def _store_block(ds: xr.Dataset, cache_dir: Path, block_key: str, output, encoding) -> None:
    """Write the block to ``<cache_dir>/<block_key>.nc`` (atomic), hard-link ``output`` to it, drop other keys."""
    cache = cache_dir / f"{block_key}.nc"
    write_netcdf(ds, cache, encoding=encoding)
    _link(cache, output)
    for other in cache_dir.glob("*.nc"):
        if other != cache:
            other.unlink()


def simulate_block(client, *, service: str, law: str, R: int, rhos, mu: float, sim: dict, tg: dict, code: str,
                   output, cache_dir, log=None) -> Path:
    """Simulate ``sim['replications']`` replications of the cells (service, R, ρ), ρ in ``rhos``; write them
    as one file ``output`` (dims service, R, rho, replication, t, n).

    Every missing replication of every cell is one Dask task, all submitted at once and gathered in
    order. ``cache_dir`` is this block's cache: the file is stored there under the block's content key
    (``output`` is a hard link to it) together with each cell's content key, so a rerun of the block —
    a ρ added, replications added — simulates only cells and replications not stored before.
    """
    from .simulate.api import concat_replications, simulate_replication

    rhos = [str(r) for r in rhos]
    n_rep = int(sim["replications"])
    seed = int(sim["seed"])
    kw = _sim_kwargs(sim, tg)
    specs = {rho: spec_for(R, float(rho), law, mu) for rho in rhos}
    keys = {rho: simulation_key(specs[rho], sim, tg, code) for rho in rhos}
    cache_dir = Path(cache_dir)
    have: dict = {rho: {} for rho in rhos}
    cell_attrs: dict = {}
    for rho, (old, attrs) in _cached_cells(cache_dir, keys).items():
        cell_attrs[rho] = attrs
        for k in old["replication"].values.tolist():
            if k < n_rep:
                have[rho][int(k)] = old.sel(replication=[k]).drop_vars(["service", "R", "rho", "spec_hash"],
                                                                       errors="ignore").squeeze(
                    ["service", "R", "rho"], drop=True)
    missing = [(rho, k) for rho in rhos for k in range(n_rep) if k not in have[rho]]
    for rho in rhos:
        _log(log, f"cell {service} R={R} rho={rho}: {specs[rho].describe()}; key {keys[rho]}; "
                  f"{len(have[rho])} replications cached, {n_rep - len(have[rho])} to simulate")
    new = {}
    if missing:
        t0 = time.perf_counter()
        futures = client.map(
            simulate_replication, [specs[rho] for rho, _ in missing], [k for _, k in missing],
            [seed] * len(missing), pure=False,
            key=[f"sim-{service}-R{R}-rho{rho}-rep{k}-{keys[rho]}" for rho, k in missing], **kw,
        )
        progress(futures, lambda i, n: _log(log, f"  [{i}/{n}] replications done ({time.perf_counter() - t0:.2f} s)"))
        for mk, ds in zip(missing, client.gather(futures)):
            new[mk] = ds
    cells = []
    for rho in rhos:
        parts = [have[rho][k] if k in have[rho] else new[(rho, k)] for k in range(n_rep)]
        parts = [p[[v for v in SIM_VARS if v in p.data_vars]] for p in parts]
        fresh = [new[(rho, k)] for k in range(n_rep) if (rho, k) in new]
        attrs = dict(fresh[0].attrs) if fresh else dict(cell_attrs[rho])
        for p in parts:  # cached parts come from this block's own files (same content key): same attrs
            p.attrs = dict(attrs)
        ds = concat_replications(parts) if len(parts) > 1 else parts[0]
        ds = ds.expand_dims(service=[service], R=[int(R)], rho=[float(rho)])
        ds["spec_hash"] = xr.DataArray(
            np.array([[[int(json.loads(attrs["seed_entropy"])[1])]]], dtype=np.uint64),
            dims=("service", "R", "rho"),
            attrs={"long_name": "64-bit hash of the cell's spec (second entropy word of every replication's "
                                "SeedSequence)", "units": "1"})
        ds.attrs = {}
        cell_attrs[rho] = attrs
        cells.append(ds)
    block = cells[0] if len(cells) == 1 else xr.concat(
        cells, dim="rho", data_vars="all", coords="different", compat="equals", join="outer",
        fill_value=SIM_FILL, combine_attrs="drop")
    first = cell_attrs[rhos[0]]
    block.attrs = _cell_attrs({k: v for k, v in first.items() if k not in CELL_SPECIFIC}, sim=sim, tg=tg,
                              code=code, law=law)
    block.attrs["cell_keys"] = json.dumps(keys, sort_keys=True)
    block.attrs["cell_attrs"] = json.dumps({rho: cell_attrs[rho] for rho in rhos}, sort_keys=True, default=str)
    _store_block(block, cache_dir, stable_key(keys, n_rep), output, simulation_encoding(block))
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


#: histogram-like integer variables stored as int16 when every value fits, else int32
COUNT_VARS = ("count", "occupancy_at_arrival")


def simulation_var_encoding(name, dims, shape, dtype, disk=None, complevel: int = 5) -> dict:
    """Storage of one simulation variable: counts as ``disk`` (int16/int32) in one chunk per histogram,
    zlib + shuffle; small variables contiguous (used for cell/block files and for the merged cube)."""
    e = {"zlib": True, "complevel": complevel, "shuffle": True}
    if name in COUNT_VARS:
        e["dtype"] = str(np.dtype(disk if disk is not None else "int32"))
        e["chunksizes"] = tuple(1 for _ in shape[:-1]) + (shape[-1],)
    return _small(e, shape, dtype)


def simulation_encoding(ds: xr.Dataset, complevel: int = 5) -> dict:
    """Compact storage: counts as int16/int32, zlib + shuffle; small variables contiguous."""
    enc = {}
    for name, var in ds.data_vars.items():
        disk = None
        if name in COUNT_VARS:
            # counts of one 0.01-wide bin: int16 when every value fits (~13% smaller), else int32
            disk = "int16" if int(var.max()) < np.iinfo(np.int16).max else "int32"
        enc[name] = simulation_var_encoding(name, var.dims, var.shape, var.dtype, disk, complevel)
    enc.update(_coord_encoding(ds, complevel))
    return enc


def _small(e: dict, shape, dtype) -> dict:
    if int(np.prod(shape, dtype=np.int64)) < SMALL and np.dtype(dtype).kind in "iuf":
        return {k: v for k, v in e.items() if k == "dtype"} | {"contiguous": True}
    return e


#: variables smaller than this (elements) are stored contiguous and uncompressed: a chunked, filtered
#: HDF5 dataset costs ~3 kB of B-tree and header, which dominated the per-cell files (81 kB -> 48 kB)
SMALL = 4096


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


#: corrected methods that are the same chain as another one (methods.py docstring; reference §8.3):
#: with ``share_corrected`` only A* and C* are computed and copied to these names
SHARED_CORRECTED = {"B*": "A*", "D*": "A*", "E*": "A*", "F*": "C*"}


def _approximate_task(R, rho, mu, methods, t, hyper, share_corrected=False):
    """Faithful methods with the config's L1 (Table 4) and L2; corrected methods and ``exact`` choose their
    own truncations (passing L1 to them would undo the correction), so they run as a second group.
    ``share_corrected``: B*, D*, E* are copies of A* and F* of C* (their run_time is the source's)."""
    from .analytic import approximate_all

    spec = spec_for(R, rho, "exponential", mu)
    faithful = [m for m in methods if not m.endswith("*") and m != "exact"]
    others = [m for m in methods if m not in faithful]
    alias = {m: SHARED_CORRECTED[m] for m in others if share_corrected and m in SHARED_CORRECTED}
    computed = list(dict.fromkeys(alias.get(m, m) for m in others))
    parts = []
    if faithful:
        parts.append(approximate_all(spec, faithful, t=t, **hyper))
    if computed:
        part = approximate_all(spec, computed, t=t)
        if alias:
            src = [alias.get(m, m) for m in others]
            part = part.sel({"method": src}).assign_coords({"method": np.array(others, dtype=str)})
            part.attrs["shared_corrected"] = json.dumps(alias, sort_keys=True)
        parts.append(part)
    if len(parts) == 1:
        return parts[0].sel({"method": list(methods)})
    out = xr.concat(parts, dim="method", data_vars="all", coords="different", compat="equals", join="outer",
                    combine_attrs="drop_conflicts")
    return out.sel({"method": list(methods)})


def approximation_key(R, rho, mu, methods, L1, L2, tg, code, share_corrected) -> str:
    """Content key of one approximation cell."""
    return stable_key("approximation", int(R), str(rho), float(mu), list(methods), int(L1), int(L2),
                      {k: tg[k] for k in sorted(tg)}, code, bool(share_corrected))


def approximate_block(client, *, R: int, rhos, mu: float, methods, L1: int, L2: int, tg: dict, code: str,
                      output, cache_dir, log=None, share_corrected=False) -> Path:
    """All ``methods`` for the M/M/R cells (R, ρ), ρ in ``rhos``: one Dask task per cell (its methods share
    building blocks), written as one file ``output``; cells stored before under the same content key
    in ``cache_dir`` are reused (see :func:`simulate_block`)."""
    from .analytic.grid import time_grid

    rhos = [str(r) for r in rhos]
    t = time_grid(float(tg["t_max"]), float(tg["dt"]))
    hyper = {"L1": int(L1), "L2": int(L2)}
    keys = {rho: approximation_key(R, rho, mu, methods, L1, L2, tg, code, share_corrected) for rho in rhos}
    cache_dir = Path(cache_dir)
    cached = _cached_cells(cache_dir, keys)
    todo = [rho for rho in rhos if rho not in cached]
    t0 = time.perf_counter()
    futures = [client.submit(_approximate_task, int(R), float(rho), float(mu), tuple(methods), t, hyper,
                             bool(share_corrected), pure=False, key=f"approx-R{R}-rho{rho}-{keys[rho]}")
               for rho in todo]
    cells, cell_attrs = {}, {}
    for rho, (old, attrs) in cached.items():
        cells[rho], cell_attrs[rho] = old, attrs
        _log(log, f"approximation R={R} rho={rho}: cached (key {keys[rho]})")
    for rho, fut in zip(todo, futures):
        ds = fut.result()
        _log(log, f"approximation R={R} rho={rho} methods={list(methods)} L1={L1} L2={L2}: "
                  f"done after {time.perf_counter() - t0:.2f} s")
        ds = to_storage(_fixed_n(ds, int(L2)).expand_dims(R=[int(R)], rho=[float(rho)]))
        for name, (long_name, units) in APPROX_ATTRS.items():
            if name in ds:
                ds[name].attrs = {**ds[name].attrs, "long_name": long_name, "units": units}
        cell_attrs[rho] = {k: v for k, v in ds.attrs.items() if k in ("title", "model", "spec", "hyper",
                                                                      "shared_corrected")}
        ds.attrs = {}
        cells[rho] = ds
    parts = [cells[rho] for rho in rhos]
    block = parts[0] if len(parts) == 1 else xr.concat(
        parts, dim="rho", data_vars="all", coords="different", compat="equals", join="outer",
        combine_attrs="drop")
    block.attrs = {**_base_provenance(),
                   "pipeline_config": json.dumps({"L1": int(L1), "L2": int(L2), "methods": list(methods),
                                                  "code": code, "time_grid": tg,
                                                  "share_corrected": bool(share_corrected)}, sort_keys=True),
                   "cell_keys": json.dumps(keys, sort_keys=True),
                   "cell_attrs": json.dumps({rho: cell_attrs[rho] for rho in rhos}, sort_keys=True, default=str)}
    _store_block(block, cache_dir, stable_key(keys), output, approximation_encoding(block))
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


def approximation_var_encoding(name, dims, shape, dtype, disk=None, complevel: int = 5) -> dict:
    """``sf`` float32 quantised (see :func:`to_storage`), λ_n and A_n float32, all zlib + shuffle."""
    e = {"zlib": True, "complevel": complevel, "shuffle": True}
    if name == "sf":
        e.update(dtype="float32", significant_digits=SF_BITS, quantize_mode="BitRound",
                 chunksizes=tuple(1 if d != "t" else n for d, n in zip(dims, shape)))
    elif name in ("lambda_n", "A_n"):
        e["dtype"] = "float32"
    return _small(e, shape, dtype)


def approximation_encoding(ds: xr.Dataset, complevel: int = 5) -> dict:
    enc = {name: approximation_var_encoding(name, var.dims, var.shape, var.dtype, None, complevel)
           for name, var in ds.data_vars.items() if var.dtype.kind in "iuf"}
    enc.update(_coord_encoding(ds, complevel))
    return enc


def block_path(root, kind: str, service: str | None, R, label) -> str:
    """``<root>/blocks/<kind>/[<service>/]R~<R>/rho~<label>.nc`` (the layout the rules use)."""
    parts = [str(root), "blocks", kind] + ([service] if service else []) + [f"R~{R}", f"rho~{label}.nc"]
    return "/".join(parts)


__all__ = [
    "spec_for", "simulate_block", "simulate_cell", "approximate_block", "simulation_key",
    "approximation_key", "simulation_encoding", "approximation_encoding", "merge_cells", "block_path",
    "format_rho", "__version__",
]


# -- merging -----------------------------------------------------------------------------------------


def merge_cells(paths, output, kind: str, config: dict) -> Path:
    """Merge block (or cell) files into ``output`` with provenance (config, version, commit, seeds).

    Streaming (:func:`sojourn.merge.merge_files`): memory is one input file, whatever the grid. Gaps
    of the hypercube (an M/G/R law on a sub-grid; ``exact`` only for small R) hold :data:`SIM_FILL`
    for the simulation's integers and NaN for floats; approximations span the configured method axis.
    """
    from .merge import merge_files

    paths = list(paths)
    extra = {}
    if kind == "simulation":
        with NETCDF_LOCK, xr.open_dataset(paths[0], engine="netcdf4") as first:
            extra = {"seed": int(config["simulation"]["seed"]),
                     "seed_recipe": first.attrs.get("seed_recipe", ""),
                     "histogram_convention": first.attrs.get("histogram_convention", "")}
        kw = dict(stack=("service", "R", "rho"), fill=SIM_FILL, encoding=simulation_var_encoding)
    else:
        # every cell on the configured method axis (exact runs only for small R): NaN elsewhere
        kw = dict(stack=("R", "rho"), encoding=approximation_var_encoding,
                  order={"method": [str(m) for m in config["approximation"]["methods"]]})
    attrs = provenance(config, title=f"sojourn pipeline: merged {kind} cells", **extra)
    merge_files(paths, output, attrs=attrs, lock=NETCDF_LOCK, **kw)
    return Path(output)


def write_comparison(sim_path, approx_path, output, config: dict) -> Path:
    from .compare import compare_files, comparison_encoding

    # streams over (R, rho) cells: bounded memory (reading both files whole took ~9.6 GB on the paper grid)
    ds = compare_files(sim_path, approx_path, config.get("comparison"), lock=NETCDF_LOCK)
    ds.attrs.update(provenance(config, title="sojourn pipeline: approximations vs simulation",
                               seed=int(config["simulation"]["seed"])))
    write_netcdf(ds, output, encoding=comparison_encoding(ds))
    return Path(output)
