"""One approximation cell of the pipeline: every configured method at one (R, ρ), as one Dask task (the methods
share building blocks)."""
from __future__ import annotations

import json

import numpy as np
import xarray as xr

from ..model import JSQPS
from ..naming import FAITHFUL_METHODS, SHARED_CORRECTED
from .api import approximate_all


def approximate_cell(R, rho, mu, methods, t, hyper, share_corrected=False, exact_budget=None) -> xr.Dataset:
    """Faithful methods with the config's L1 (Table 4) and L2; corrected methods, ``exact`` and ``T`` choose their
    own truncations (passing L1 to them would undo the correction; T and exact accept none), so they run as a
    second group.
    ``share_corrected``: B*, D*, E* are copies of A* and F* of C* (their run_time is the source's).
    ``exact_budget``: ``exact`` runs where it fits, else NaN with ``validity_reason`` over_budget."""
    spec = JSQPS.from_load(int(R), float(rho), mu=float(mu))
    faithful = [m for m in methods if m in FAITHFUL_METHODS]
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
