"""Values changed on the way to disk (issue 32): the paper run printed numpy's "overflow encountered in cast" ten
times, one per R, from approximation blocks whose float32 ``sf`` received values beyond float32's range — methods C
and F at ρ = 0.96, whose SQA chain diverges there (|1 − F| up to 1.6e308; flagged invalid). Such values are now
stored as ±inf on purpose: no warning, one line in the job's log naming the file, the variable and the count, the
variable's comment saying it, the result flagged by validity_reason with its excursion kept in float64
(validity_violation) — and the file's data identical to what the cast made of them before."""
from __future__ import annotations

import logging
import warnings

import netCDF4
import numpy as np
import xarray as xr

from sojourn.core.checks.timegrid import time_grid
from sojourn.core.files.io import write_netcdf
from sojourn.jsq_ps.solve.cell import approximate_cell
from sojourn.jsq_ps.solve.guards import describe
from sojourn.jsq_ps.storage import approximation_encoding, fixed_n, to_storage

F32_MAX = float(np.finfo(np.float32).max)


def _values(path, name):
    with netCDF4.Dataset(path) as nc:
        v = nc[name]
        v.set_auto_maskandscale(False)
        return np.asarray(v[...])


def test_a_diverged_approximation_is_stored_as_inf_on_purpose(tmp_path, caplog):
    """R = 1, ρ = 0.96, methods C and F (L1 = L2 = 130): the paper run's case at a small grid (t ≤ 60)."""
    ds = approximate_cell(1, 0.96, 1.0, ("C", "F", "A*"), time_grid(60.0, 0.5), {"L1": 130, "L2": 130}, True, None)
    sf = np.clip(1.0 - ds["cdf"].values, 0.0, None)  # as stored (to_storage)
    beyond = sf > F32_MAX
    assert beyond[:2].sum(axis=-1).min() > 50 and not beyond[2].any()  # C and F diverge, A* does not
    assert all(describe(int(r)) for r in ds["validity_reason"].values[:2])  # flagged invalid
    assert ds["validity_violation"].values[:2].min() > 1e300  # the excursion, kept in float64
    block = to_storage(fixed_n(ds, 130).expand_dims(R=[1], rho=[0.96]))
    enc = approximation_encoding(block)
    with warnings.catch_warnings(), caplog.at_level(logging.INFO, logger="sojourn"):
        warnings.simplefilter("error")  # no "overflow encountered in cast"
        write_netcdf(block, tmp_path / "new.nc", encoding=enc)
    lines = [r.getMessage() for r in caplog.records if "beyond the float32 range" in r.getMessage()]
    n = int((beyond & np.isfinite(sf)).sum())
    line = f"{tmp_path / 'new.nc'}: {n} value(s) of sf beyond the float32 range (|x| > {F32_MAX:.4g}) stored as +/-inf"
    assert lines == [line], lines
    stored = _values(tmp_path / "new.nc", "sf")[0, 0]
    assert np.array_equal(np.isinf(stored), beyond) and np.all(stored[beyond] > 0)
    # the data are what the cast made of them before (then with the warning)
    with warnings.catch_warnings(), np.errstate(over="ignore"):
        warnings.simplefilter("ignore")
        block.to_netcdf(tmp_path / "old.nc", engine="netcdf4", encoding=enc)
    for name in block.data_vars:
        assert np.array_equal(_values(tmp_path / "new.nc", name), _values(tmp_path / "old.nc", name),
                              equal_nan=True), name
    assert "stored as +/-inf" in xr.open_dataset(tmp_path / "new.nc")["sf"].attrs["comment"]


def test_any_narrowed_variable_and_only_beyond_its_range(tmp_path, caplog):
    x = np.array([1e300, -1e300, np.nan, np.inf, 1.5, 3e38])
    ds = xr.Dataset({"narrow": ("i", x), "wide": ("i", x)})
    with warnings.catch_warnings(), caplog.at_level(logging.INFO, logger="sojourn"):
        warnings.simplefilter("error")
        write_netcdf(ds, tmp_path / "x.nc", encoding={"narrow": {"dtype": "float32"}, "wide": {}})
    narrow, wide = _values(tmp_path / "x.nc", "narrow"), _values(tmp_path / "x.nc", "wide")
    assert narrow.dtype == np.float32 and wide.dtype == np.float64
    assert np.array_equal(narrow, np.array([np.inf, -np.inf, np.nan, np.inf, 1.5, 3e38], np.float32), equal_nan=True)
    assert np.array_equal(wide, x, equal_nan=True)  # float64 keeps what was computed
    assert sum("2 value(s) of narrow beyond the float32 range" in r.getMessage() for r in caplog.records) == 1
    assert ds["narrow"].values[0] == 1e300  # the caller's dataset is left as it was
