"""Precision-driven replications in the restart study (sojourn.core.estimates.precision on the response time): the
simulate
API stops at the requested half-width and equals the fixed-count run of the same count; the sweep job (real Dask)
pads points that stop at different counts, the comparison counts each point's own replications, and a tighter
target simulates only the replications the cache does not hold."""
from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr

from sojourn.core.cluster.cluster import dask_client
from sojourn.core.estimates.precision import TARGET_MET
from sojourn.core.estimates.stats import mean_ci
from sojourn.core.files.io import read_netcdf
from sojourn.core.runs.job import run
from sojourn.restart.compare import comparison
from sojourn.restart.files import load_model
from sojourn.restart.simulate import simulate, spec_for
from sojourn.restart.solve import solve

EXAMPLE = {"model": "example2", "rates": {"start": 0.2, "stop": 20, "num": 3},
           "window": {"length": 20000, "warmup": 1000},
           "semantics": ["signal", "timeout_exponential"]}
SIM = {"replications": 2, "seed": 0, "restart_max": 50, "max_jobs": 100, "max_events": 50_000_000}
GRID = {"dt": 0.05, "t_max": 200.0}


def test_api_reaches_the_target_and_equals_the_fixed_count_run():
    spec = spec_for(load_model("example2"), "signal", 2.0)
    kw = dict(horizon=20000.0, warmup=1000.0, seed=4)
    ds = simulate(spec, precision={"statistic": "mean", "relative_half_width": 0.05}, **kw)
    n = int(ds["replications_used"])
    assert int(ds["stop_reason"]) == TARGET_MET and n >= 5
    m, h = mean_ci(ds["mean"].values)
    assert float(ds["achieved_half_width"]) == pytest.approx(h, rel=1e-12) and h / m <= 0.05
    fixed = simulate(spec, replications=n, **kw)
    keep = [v for v in fixed.data_vars if v != "wall_time"]
    xr.testing.assert_equal(ds[keep], fixed[keep])


@pytest.fixture(scope="module")
def client():
    with dask_client({"kind": "local"}, 2) as c:
        yield c


def _sweep(client, tmp_path, rel, cache, name):
    sim = {**SIM, "precision": {"statistic": "mean", "relative_half_width": rel, "max_replications": 80}}
    log = tmp_path / f"{name}.log"
    run("sojourn.restart.jobs:simulate", log, client=client, name="example2", example=EXAMPLE, simulation=sim,
        time_grid=GRID, code="test", output=tmp_path / f"{name}.nc", cache=tmp_path / cache)
    return read_netcdf(tmp_path / f"{name}.nc"), log.read_text()


def test_sweep_pads_points_and_a_tighter_target_simulates_only_the_extra_ones(client, tmp_path):
    loose, _ = _sweep(client, tmp_path, 0.1, "cache", "loose")
    used = loose["replications_used"].transpose("semantics", "restart_rate").values
    assert used.min() >= 5 and len(np.unique(used)) > 1  # points stopped at different counts: padding
    assert loose.sizes["replication"] == used.max()
    assert (loose["stop_reason"] == TARGET_MET).all()
    pad = loose["n_customers"].values[np.arange(loose.sizes["replication"])[None, None, :] >= used[..., None]]
    assert (pad == 0).all()
    # the comparison: each point's own replications, padding not counted as stable replications
    pf = solve(load_model("example2").with_signal_rate(1.0))
    pf_ds = xr.Dataset({"response_time": ("signal_rate", [pf.response_time] * 3, {"units": "time"}),
                        "mean_number": ("signal_rate", [float(pf.mean_number.sum())] * 3, {"units": "1"}),
                        "g_star": 1.0, "response_time_at_g_star": 1.0, "response_time_no_restart": 1.0},
                       coords={"signal_rate": loose["restart_rate"].values})
    cmp = comparison(pf_ds, loose, 0.99, [99])
    np.testing.assert_array_equal(cmp["replications_stable"].values, used)
    for i, s in enumerate(loose["semantics"].values):
        for j, r in enumerate(loose["restart_rate"].values):
            m, h = mean_ci(loose["mean"].values[i, j, :used[i, j]], confidence=0.99)
            assert float(cmp["response_time"].sel(semantics=s, restart_rate=r)) == pytest.approx(m, rel=1e-13)
            assert float(cmp["response_time_half_width"].sel(semantics=s, restart_rate=r)) == pytest.approx(
                h, rel=1e-12
            )

    tight, log = _sweep(client, tmp_path, 0.05, "cache", "tight")
    new = tight["replications_used"].transpose("semantics", "restart_rate").values
    assert (new >= used).all() and (new > used).any()
    for i, s in enumerate(tight["semantics"].values):
        for j, r in enumerate(tight["restart_rate"].values):
            m = re.search(rf"cell {s}/r{float(r):.6g}: \w+ after {new[i, j]} replications.*; (\d+) simulated, "
                          rf"(\d+) from the cache", log)
            assert m, log
            assert (int(m.group(1)), int(m.group(2))) == (new[i, j] - used[i, j], used[i, j])
    fresh, _ = _sweep(client, tmp_path, 0.05, "fresh-cache", "fresh")
    xr.testing.assert_equal(tight.drop_vars("wall_time"), fresh.drop_vars("wall_time"))
