"""What every study's simulator shares about runs and replications: the checks of a run's window and the
joining of replication datasets (each replication is one Dask task, see the studies' ``simulate_replication``)."""
from __future__ import annotations

import numpy as np
import xarray as xr

from .validate import finite_real


def check_window(horizon, warmup, cooldown) -> tuple[float, float, float]:
    """(horizon, warmup, cooldown) of a run, cool-down defaulting to the warm-up; ValueError naming the field
    unless 0 ≤ warmup, 0 ≤ cooldown and warmup + cooldown < horizon."""
    horizon = finite_real("horizon", horizon)
    warmup = finite_real("warmup", warmup)
    if warmup < 0:
        raise ValueError(f"warmup must be in [0, horizon); got {warmup!r}")
    cooldown = warmup if cooldown is None else finite_real("cooldown", cooldown)
    if cooldown < 0:
        raise ValueError(f"cooldown must be in [0, horizon - warmup); got {cooldown!r}")
    if not horizon > warmup + cooldown:
        raise ValueError(f"horizon must be > warmup + cooldown = {warmup + cooldown:g}; got {horizon!r}")
    return horizon, warmup, cooldown


def concat_replications(datasets, keys) -> xr.Dataset:
    """Join replication datasets (a ``replication`` dim each) sorted by replication index.

    All must agree on the attributes ``keys`` (the same spec and settings); duplicate replication indices
    are an error.
    """
    datasets = list(datasets)
    if not datasets:
        raise ValueError("datasets must be a non-empty sequence of replication datasets")
    ref = {k: datasets[0].attrs.get(k) for k in keys}
    for ds in datasets[1:]:
        for k in keys:
            if ds.attrs.get(k) != ref[k]:
                raise ValueError(f"datasets differ in attribute {k!r}: {ds.attrs.get(k)!r} != {ref[k]!r}")
    out = xr.concat(datasets, dim="replication", data_vars="minimal", coords="minimal", compat="override",
                    join="exact", combine_attrs="override")
    reps = out["replication"].values
    if len(np.unique(reps)) != len(reps):
        raise ValueError(f"duplicate replication indices: {sorted(reps.tolist())}")
    return out.sortby("replication")
