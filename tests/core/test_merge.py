"""sojourn.core.files.merge.merge_files: streaming merge of block files = xarray's outer-join combine, atomically."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from sojourn.core.files.merge import merge_files
from sojourn.jsq_ps.config import Blocks, block_label, blocks


def _block(service, R, rhos, n_max, seed, reps=2, nt=7):
    rng = np.random.default_rng(seed)
    k = len(rhos)
    ds = xr.Dataset(
        {
            "count": (("service", "R", "rho", "replication", "t"),
                      rng.integers(0, 50, (1, 1, k, reps, nt)).astype(np.int16), {"units": "1", "long_name": "c"}),
            "occ": (("service", "R", "rho", "replication", "n"), rng.integers(1, 9, (1, 1, k, reps, n_max + 1))),
            "mean": (("service", "R", "rho", "replication"), rng.random((1, 1, k, reps)), {"units": "s"}),
            "flag": (("service", "R", "rho"), np.ones((1, 1, k), np.int8)),
        },
        coords={"service": [service], "R": [R], "rho": list(rhos), "replication": np.arange(reps),
                "t": np.arange(nt) * 0.5, "n": np.arange(n_max + 1)},
    )
    ds["t"].attrs = {"units": "time"}
    return ds


def _combine(dss, fill):
    # (combine_by_coords refuses blocks that interleave along rho; combine_first places them by coordinates)
    out = dss[0]
    for ds in dss[1:]:
        out = out.combine_first(ds)
    return out.fillna(fill).sortby(["service", "R", "rho"])


@pytest.fixture
def blocks_on_disk(tmp_path):
    # an incomplete cube: 'b' only at R=1 and one rho; n differs between blocks; rho 0.3 (law b) sits
    # between rho 0.2 and 0.4 of law a's block, so that block is not contiguous in the merged rho axis
    dss = [_block("a", 1, [0.2, 0.4], 3, 1), _block("a", 2, [0.2, 0.4], 5, 2), _block("b", 1, [0.3], 2, 3),
           _block("a", 1, [0.6], 4, 4)]
    paths = []
    for i, ds in enumerate(dss):
        p = tmp_path / f"b{i}.nc"
        ds.to_netcdf(p, encoding={"count": {"zlib": True, "chunksizes": (1, 1, 1, 1, ds.sizes["t"])}})
        paths.append(p)
    return dss, paths


def test_equals_an_outer_join_combine(blocks_on_disk, tmp_path):
    dss, paths = blocks_on_disk
    fill = {"count": 0, "occ": 0}
    out = merge_files(paths[::-1], tmp_path / "m.nc", fill=fill, attrs={"title": "merged", "seed": 3})
    got = xr.open_dataset(out).load()
    want = _combine(dss, fill)
    assert got["rho"].values.tolist() == [0.2, 0.3, 0.4, 0.6]
    assert got.attrs["title"] == "merged" and int(got.attrs["seed"]) == 3
    for name in ("count", "occ", "mean"):
        w = want[name].transpose(*got[name].dims)
        np.testing.assert_array_equal(got[name].values, w.values.astype(got[name].dtype), err_msg=name)
    assert got["count"].dtype == np.int16 and got["count"].attrs == {"units": "1", "long_name": "c"}
    assert int(got["count"].sel(service="b", R=2).sum()) == 0  # gap, filled with 0 (not masked)
    assert np.isnan(got["mean"].sel(service="b", R=2)).all()
    # an int variable with gaps but no fill value becomes float with NaN, as in an outer join
    assert got["flag"].dtype.kind == "f" and np.isnan(got["flag"].sel(service="b", R=2)).all()
    assert float(got["flag"].sel(service="a", R=1, rho=0.2)) == 1
    assert got["t"].attrs == {"units": "time"}


def test_overlapping_inputs_are_an_error_and_leave_nothing(blocks_on_disk, tmp_path):
    _, paths = blocks_on_disk
    target = tmp_path / "m.nc"
    with pytest.raises(ValueError, match="overlaps"):
        merge_files([paths[0], paths[0]], target, fill={"count": 0, "occ": 0})
    assert not target.exists() and not list(tmp_path.glob(".m.nc*"))


def test_method_order_and_nan_gaps(tmp_path):
    paths = []
    for i, (R, methods) in enumerate(((1, ["A", "exact"]), (3, ["A"]))):
        ds = xr.Dataset({"L1": (("R", "rho", "approximation"), np.full((1, 1, len(methods)), 7, np.int64)),
                         "sf": (("R", "rho", "approximation", "t"), np.full((1, 1, len(methods), 4), 0.5))},
                        coords={"R": [R], "rho": [0.5], "approximation": methods, "t": np.arange(4.0)})
        paths.append(tmp_path / f"a{i}.nc")
        ds.to_netcdf(paths[-1])
    got = xr.open_dataset(merge_files(paths, tmp_path / "m.nc", stack=("R", "rho"),
                                      order={"approximation": ["exact", "A", "B"]})).load()
    assert got["approximation"].values.tolist() == ["exact", "A", "B"]
    assert got["L1"].sel({"R": 1, "approximation": "exact"}).item() == 7
    assert np.isnan(got["L1"].sel({"R": 3, "approximation": "exact"}).item())
    assert np.isnan(got["sf"].sel({"approximation": "B"})).all()
    assert float(got["sf"].sel({"R": 3, "approximation": "A"}).max()) == 0.5


def test_values_stored_once_are_written_under_each_name(tmp_path):
    """copies={dim: {target: source}}: a block holding "A*" but not "B*" (the same chain) gets A*'s values under
    B* in the merged cube; a block that holds B* itself keeps its own; integer variables stay integers."""
    paths = []
    for i, (R, methods) in enumerate(((1, ["A", "A*"]), (2, ["A", "B*"]))):
        vals = np.arange(len(methods), dtype=np.int64)[None, None, :] + 10 * R
        ds = xr.Dataset({"L1": (("R", "rho", "approximation"), vals),
                         "sf": (("R", "rho", "approximation", "t"), np.repeat(vals[..., None] / 100.0, 4, axis=-1))},
                        coords={"R": [R], "rho": [0.5], "approximation": methods, "t": np.arange(4.0)})
        paths.append(tmp_path / f"b{i}.nc")
        ds.to_netcdf(paths[-1])
    got = xr.open_dataset(merge_files(paths, tmp_path / "m.nc", stack=("R", "rho"), fill={"L1": -1},
                                      order={"approximation": ["A", "A*", "B*"]},
                                      copies={"approximation": {"B*": "A*"}})).load()
    assert got["L1"].dtype.kind == "i"
    assert got["L1"].sel(R=1, rho=0.5).values.tolist() == [10, 11, 11]  # B* = A*'s
    assert got["L1"].sel(R=2, rho=0.5).values.tolist() == [20, -1, 21]  # its own B*; no A*: the gap
    np.testing.assert_array_equal(got["sf"].sel(R=1, approximation="B*"), got["sf"].sel(R=1, approximation="A*"))


def test_block_labels_and_grouping():
    assert block_label(0.5, 0.1, 2) == "0.50-0.60" and block_label(0.99, 0.1, 2) == "0.90-1.00"
    assert block_label(0.3, 0.1, 2) == "0.30-0.40" and block_label(0.7, 0.1, 2) == "0.70-0.80"  # float edges
    assert block_label(0.25, 0.25, 2) == "0.25-0.50" and block_label(0.42, 0.001, 2) == "0.42"
    cfg = {"grid": {"R": [1, 2], "rho": [0.1, 0.15, 0.5], "rho_decimals": 2, "rho_block": 0.1},
           "mgr": {"laws": ["deterministic"], "R": [2], "rho": [0.15]}}
    b = blocks(cfg)
    assert isinstance(b, Blocks)
    assert b.simulation == {("deterministic", 2, "0.10-0.20"): [0.15],
                            ("exponential", 1, "0.10-0.20"): [0.1, 0.15],
                            ("exponential", 1, "0.50-0.60"): [0.5],
                            ("exponential", 2, "0.10-0.20"): [0.1, 0.15],
                            ("exponential", 2, "0.50-0.60"): [0.5]}
    assert b.approximation == {(1, "0.10-0.20"): [0.1, 0.15], (1, "0.50-0.60"): [0.5],
                               (2, "0.10-0.20"): [0.1, 0.15], (2, "0.50-0.60"): [0.5]}
    assert all(type(r) is float for rhos in b.simulation.values() for r in rhos)  # typed: no label read back
