"""How the JSQ-PS study stores its cells: variables kept, gap values, compact encodings, the survival-function
form of the approximations (shared by the cell jobs and the merges), and the merges of the block files into
``simulation.nc`` and ``approximation.nc``.

Merging streams (:func:`sojourn.core.files.merge.merge_files`: memory is one input file, whatever the grid). Gaps of
the hypercube (an M/G/R law on a sub-grid; ``exact`` only for small R) hold :data:`SIM_FILL` for the
simulation's integers and NaN for floats; approximations span the configured method axis. The ``config``
attribute of a merged file holds the config sections that produced it."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from ..core.estimates.precision import FILL as PRECISION_FILL
from ..core.estimates.runlength import FILL as RUN_LENGTH_FILL
from ..core.files.io import NETCDF_LOCK, provenance, read_netcdf
from ..core.files.merge import merge_files
from .naming import COORD_ATTRS, SHARED_CORRECTED
from .solve.guards import OVER_BUDGET


def grid_cell(rho: float, key: str, args: tuple, **grid):
    """A block's cell at ρ and the other grid values ``grid`` (service, R), typed: ρ is its coordinate; its label
    ``rho=<ρ>`` names it in logs, task names and the cache, and is never read back."""
    from ..core.runs.runner import Cell

    return Cell(f"rho={rho!r}", key, args, {**grid, "rho": float(rho)})


SIM_VARS = (
    "count", "overflow", "n_customers", "sum", "sumsq", "mean", "max",
    "occupancy_at_arrival", "mean_number_per_server", "events", "wall_time",
)


#: gaps of an incomplete hypercube (an M/G/R law on a sub-grid): integer variables get these values
SIM_FILL = {
    "count": 0,
    "overflow": 0,
    "n_customers": 0,
    "occupancy_at_arrival": 0,
    "events": -1,
    "spec_hash": 0,
    **PRECISION_FILL,
    **RUN_LENGTH_FILL,
}  # the same values pad the replications beyond a cell's replications_used


#: histogram-like integer variables stored as int16 when every value fits, else int32
COUNT_VARS = ("count", "occupancy_at_arrival")


def simulation_var_encoding(name, dims, shape, dtype, disk=None, complevel: int = 5) -> dict:
    """Storage of one simulation variable: counts as ``disk`` (int16/int32) in one chunk per cell (its
    replications' histograms together: a chunk per histogram cost 12 MB of chunk index and headers in the paper
    run's 41 MB simulation.nc, and compressed worse), zlib + shuffle; small variables contiguous (used for the
    block files and for the merged cube)."""
    e = {"zlib": True, "complevel": complevel, "shuffle": True}
    if name in COUNT_VARS:
        e["dtype"] = str(np.dtype(disk if disk is not None else "int32"))
        e["chunksizes"] = tuple(n if d in ("replication", dims[-1]) else 1 for d, n in zip(dims, shape, strict=True))
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


#: integer variables of the merged approximations where a method did not run at a cell (``exact`` beyond its
#: budget): they stay integers, this value marks the gap
APPROX_FILL = {"L1": -1, "L2": -1, "faithful": -1, "valid": 0, "validity_reason": OVER_BUDGET}

APPROX_ATTRS = {
    "run_time": ("run time of the method on this cell (its share of shared building blocks; not reproducible)", "s"),
    "L1": ("Markov-chain truncation per server used by the method (-1: not run at this cell)", "1"),
    "L2": ("sum range / truncation level used by the method (-1: not run at this cell)", "1"),
    "faithful": ("1 = paper-faithful method (A-F), 0 = corrected, exact or T, -1 = not run at this cell", "1"),
    "truncation_mass": ("probability mass at the method's truncations (its chain's boundary, beyond its tail cut; "
                        "NaN if not reported); above the method's tolerance: validity_reason truncation_not_reached",
                        "1"),
    "valid": ("1 = the method's result passed every validity check (sojourn.jsq_ps.solve.guards)", "1"),
    "validity_reason": ("why the method's result is invalid: bit mask, 0 = valid (flag_meanings)", "1"),
    "validity_violation": ("largest excursion of the CDF below 0, above 1 or downwards (0 = none)", "1"),
}


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
    sf = sf.where((sf >= SF_FLOOR) | sf.isnull(), 0.0)  # NaN (a method not run: exact over budget) stays NaN
    out = ds.drop_vars("cdf")
    out["sf"] = sf
    out["sf"].attrs = {
        "long_name": "approximated survival function 1 - F(t) = P(S >= t) (read_approximation adds cdf = 1 - sf)",
        "units": "1",
        "comment": f"float32 with {SF_BITS} mantissa bits (BitRound); values < {SF_FLOOR:g} stored as 0; "
        "values beyond float32's range (|sf| > 3.4e38: a diverged result, flagged by "
        "validity_reason; validity_violation holds its excursion in float64) stored as +/-inf",
    }
    return out


def read_approximation(path) -> xr.Dataset:
    """An approximation file with ``cdf`` = 1 − ``sf`` restored (float64)."""
    ds = read_netcdf(path)
    if "sf" in ds and "cdf" not in ds:
        ds["cdf"] = 1.0 - ds["sf"].astype(np.float64)
        ds["cdf"].attrs = {"long_name": "approximated sojourn-time CDF F(t) on the grid t", "units": "1"}
    return ds


def approximation_var_encoding(name, dims, shape, dtype, disk=None, complevel: int = 5) -> dict:
    """``sf`` float32 quantised (see :func:`to_storage`), one chunk per cell (every method's curve together: 34
    instead of 53 MB for the paper run's approximation.nc, the methods' curves being alike), λ_n and A_n float32,
    all zlib + shuffle."""
    e = {"zlib": True, "complevel": complevel, "shuffle": True}
    if name == "sf":
        e.update(dtype="float32", significant_digits=SF_BITS, quantize_mode="BitRound",
                 chunksizes=tuple(n if d in ("approximation", "t") else 1 for d, n in zip(dims, shape, strict=True)))
    elif name in ("lambda_n", "A_n"):
        e["dtype"] = "float32"
    return _small(e, shape, dtype)


def approximation_encoding(ds: xr.Dataset, complevel: int = 5) -> dict:
    enc = {name: approximation_var_encoding(name, var.dims, var.shape, var.dtype, None, complevel)
           for name, var in ds.data_vars.items() if var.dtype.kind in "iuf"}
    enc.update(_coord_encoding(ds, complevel))
    return enc


def fixed_n(ds: xr.Dataset, n_store: int) -> xr.Dataset:
    """λ_n and A_n on n = 0..n_store−1 for every cell (cells differ in their own truncation, and a common
    ``n`` axis is what lets the cells merge); the A_n mass beyond is kept as ``A_n_tail_mass``."""
    if "n" not in ds.dims:
        return ds
    tail = ds["A_n"].where(ds["n"] >= n_store).sum("n", skipna=True)
    out = ds.reindex(n=np.arange(n_store), fill_value=np.nan)
    out["A_n_tail_mass"] = tail
    out["A_n_tail_mass"].attrs = {"long_name": f"sum of A_n over n >= {n_store} (not stored)", "units": "1"}
    beyond = ("float32; values beyond its range (|x| > 3.4e38: a diverged chain, flagged by validity_reason) "
              "stored as +/-inf")
    out["lambda_n"].attrs = {"long_name": "arrival rate to a server with n customers (lambda_n)",
                             "units": "1/time unit", "comment": beyond}
    out["A_n"].attrs = {"long_name": "probability that an arrival finds n customers at its server (A_n)",
                        "units": "1", "comment": beyond}
    return out


# ---------------------------------------------------------------------------------------------
# merges
def merge_simulation(paths, output, settings: dict) -> Path:
    """Simulation blocks → ``output``; ``settings``: the grid, mgr, time_grid and simulation sections."""
    paths = list(paths)
    with NETCDF_LOCK, xr.open_dataset(paths[0], engine="netcdf4") as first:
        extra = {"seed": int(settings["simulation"]["seed"]),
                 "seed_recipe": first.attrs.get("seed_recipe", ""),
                 "histogram_convention": first.attrs.get("histogram_convention", "")}
    attrs = provenance(settings, title="sojourn pipeline: merged simulation cells", **extra)
    from .config import blocks

    cells = {f"{s}/R~{R}/rho~{b}.nc": {"service": [s], "R": [R], "rho": rhos}
             for (s, R, b), rhos in blocks(settings).simulation.items()}
    merge_files(paths, output, stack=("service", "R", "rho"), fill=SIM_FILL, encoding=simulation_var_encoding,
                attrs=attrs, coord_attrs=COORD_ATTRS, lock=NETCDF_LOCK, expect=_expected(paths, cells))
    return Path(output)


def _expected(paths, cells: dict) -> dict:
    """{path: the coordinates its block job wrote} for the input ``paths`` whose name ends in a key of ``cells``
    ({"<service>/R~<R>/rho~<block>.nc" or "R~<R>/rho~<block>.nc": {dim: values}}, from the config; ρ the floats
    the block jobs stored)."""
    out = {}
    for p in map(str, paths):
        key = next((k for k in cells if p.endswith("/" + k) or p == k), None)
        if key is not None:
            out[p] = cells[key]
    return out


def stored_once(methods, share_corrected: bool) -> dict:
    """{method: the method whose result it is} for the methods a block stores once (``share_corrected``: B*, D*,
    E* are A*'s chain and F* is C*'s, reference §8.3; a copy is left out of the block when its source is there too,
    and the merge writes it back, :func:`merge_approximation`)."""
    methods = [str(m) for m in methods]
    if not share_corrected:
        return {}
    return {m: src for m, src in SHARED_CORRECTED.items() if m in methods and src in methods}


def merge_approximation(paths, output, settings: dict) -> Path:
    """Approximation blocks → ``output`` on the configured ``approximation`` axis; ``settings``: the grid, mgr,
    time_grid and approximation sections. Methods a block stores once (:func:`stored_once`) get their source's
    values back here: the merged file holds every configured method."""
    attrs = provenance(settings, title="sojourn pipeline: merged approximation cells")
    approx = settings["approximation"]
    copies = stored_once(approx["methods"], bool(approx.get("share_corrected", True)))
    from .config import blocks

    cells = {f"R~{R}/rho~{b}.nc": {"R": [R], "rho": rhos} for (R, b), rhos in blocks(settings).approximation.items()}
    merge_files(list(paths), output, stack=("R", "rho"), fill=APPROX_FILL, encoding=approximation_var_encoding,
                order={"approximation": [str(m) for m in approx["methods"]]}, copies={"approximation": copies},
                attrs=attrs, coord_attrs=COORD_ATTRS, lock=NETCDF_LOCK, expect=_expected(paths, cells))
    return Path(output)


def merge_law_approximation(paths, output, settings: dict) -> Path:
    """Law-approximation blocks (the M/G/R cells' methods, :func:`sojourn.jsq_ps.jobs.approximate_laws`) →
    ``output``, stacked by (service, R, rho); ``settings``: the mgr and time_grid sections."""
    attrs = provenance(settings, title="sojourn pipeline: merged M/G/R law-method cells")
    merge_files(list(paths), output, stack=("service", "R", "rho"), fill={**APPROX_FILL, "D": -1, "cstar": -1},
                encoding=approximation_var_encoding, attrs=attrs, coord_attrs=COORD_ATTRS, lock=NETCDF_LOCK)
    return Path(output)
