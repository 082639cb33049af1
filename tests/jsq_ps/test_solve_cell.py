"""The pipeline's approximation cell assembles its methods' datasets in numpy (issue 36): the same dataset as xarray's
concat, sel and assign_coords gave — values, dtypes, coordinates and every attribute."""
import json

import numpy as np
import pytest
import xarray as xr

from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.naming import FAITHFUL_METHODS, table4_L1
from sojourn.jsq_ps.solve.cell import approximate_cell, cell_parts

PAPER = ["A", "B", "C", "D", "E", "F", "A*", "B*", "C*", "D*", "E*", "F*", "exact", "T"]


def by_xarray(R, rho, methods, t, hyper, share_corrected, exact_budget):
    """approximate_cell's assembly as it was before issue 36 (xarray's concat and sel), on the same computed parts."""
    faithful, computed, alias = cell_parts(R, rho, 1.0, methods, t, hyper, share_corrected, exact_budget)
    parts = [] if faithful is None else [faithful]
    if computed is not None:
        if alias:
            others = [m for m in methods if m not in FAITHFUL_METHODS]
            src = [alias.get(m, m) for m in others]
            computed = computed.sel({"approximation": src}).assign_coords(
                {"approximation": np.array(others, dtype=str)})
            computed.attrs["shared_corrected"] = json.dumps(alias, sort_keys=True)
        parts.append(computed)
    if len(parts) == 1:
        return parts[0].sel({"approximation": list(methods)})
    out = xr.concat(parts, dim="approximation", data_vars="all", coords="different", compat="equals", join="outer",
                    combine_attrs="drop_conflicts")
    return out.sel({"approximation": list(methods)})


def same(a: xr.Dataset, b: xr.Dataset):
    drop = ["run_time"]  # measured
    a, b = a.drop_vars(drop), b.drop_vars(drop)
    timing = {"total_run_time"}
    a.attrs = {k: v for k, v in a.attrs.items() if k not in timing}
    b.attrs = {k: v for k, v in b.attrs.items() if k not in timing}
    xr.testing.assert_identical(a, b)
    assert list(a.attrs) == list(b.attrs)
    for v in a.variables:
        assert a[v].dtype == b[v].dtype and a[v].values.tobytes() == b[v].values.tobytes(), v


@pytest.mark.parametrize("R, rho, methods, share, budget", [
    (1, 0.5, PAPER, True, {"max_states": 600000, "max_seconds": 2}),
    (3, 0.95, PAPER, True, {"max_states": 600000, "max_seconds": 2}),
    (10, 0.3, PAPER, True, {"max_states": 1, "max_seconds": 2}),  # exact over budget: NaN A_n
    (2, 0.8, ["C*", "A", "T", "B*"], False, None),  # another order, nothing shared
    (4, 0.9, ["F", "D", "A"], True, None),  # faithful only
    (5, 0.7, ["F*", "D*", "exact"], True, None),  # copies only, no faithful part
])
def test_cell_assembly_is_xarrays(R, rho, methods, share, budget):
    t = time_grid(30.0, 0.05)
    hyper = {"L1": table4_L1(R), "L2": 130}
    same(approximate_cell(R, rho, 1.0, methods, t, hyper, share, budget),
         by_xarray(R, rho, methods, t, hyper, share, budget))
