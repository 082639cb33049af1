"""Merging the JSQ-PS block files into ``simulation.nc`` and ``approximation.nc`` (streaming,
:func:`sojourn.core.merge.merge_files`: memory is one input file, whatever the grid), with provenance.

Gaps of the hypercube (an M/G/R law on a sub-grid; ``exact`` only for small R) hold :data:`SIM_FILL`
for the simulation's integers and NaN for floats; approximations span the configured method axis.
The ``config`` attribute of a merged file holds the config sections that produced it.
"""
from __future__ import annotations

from pathlib import Path

import xarray as xr

from ..core.io import NETCDF_LOCK, provenance
from ..core.merge import merge_files
from .naming import COORD_ATTRS
from .storage import APPROX_FILL, SIM_FILL, approximation_var_encoding, simulation_var_encoding


def merge_simulation(paths, output, settings: dict) -> Path:
    """Simulation blocks → ``output``; ``settings``: the grid, mgr, time_grid and simulation sections."""
    paths = list(paths)
    with NETCDF_LOCK, xr.open_dataset(paths[0], engine="netcdf4") as first:
        extra = {"seed": int(settings["simulation"]["seed"]),
                 "seed_recipe": first.attrs.get("seed_recipe", ""),
                 "histogram_convention": first.attrs.get("histogram_convention", "")}
    attrs = provenance(settings, title="sojourn pipeline: merged simulation cells", **extra)
    merge_files(paths, output, stack=("service", "R", "rho"), fill=SIM_FILL, encoding=simulation_var_encoding,
                attrs=attrs, coord_attrs=COORD_ATTRS, lock=NETCDF_LOCK)
    return Path(output)


def merge_approximation(paths, output, settings: dict) -> Path:
    """Approximation blocks → ``output`` on the configured ``approximation`` axis; ``settings``: the grid, mgr,
    time_grid and approximation sections."""
    attrs = provenance(settings, title="sojourn pipeline: merged approximation cells")
    merge_files(list(paths), output, stack=("R", "rho"), fill=APPROX_FILL, encoding=approximation_var_encoding,
                order={"approximation": [str(m) for m in settings["approximation"]["methods"]]},
                attrs=attrs, coord_attrs=COORD_ATTRS, lock=NETCDF_LOCK)
    return Path(output)
