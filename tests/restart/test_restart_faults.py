"""A worker killed during a restart sweep job is retried as in every study (the cell runner's retries,
sojourn.core.runs.runner.DaskExecutor): the job completes and its data equal an undisturbed run's. Real LocalCluster,
real SIGKILL."""
from __future__ import annotations

import numpy as np
import pytest

from sojourn.core.cluster.cluster import dask_client
from sojourn.core.files.io import read_netcdf
from sojourn.core.runs.job import run
from support.faults import kill_a_worker_while

pytestmark = pytest.mark.slow
EXAMPLE = {"model": "example2", "rates": [0.2, 2.0, 20.0], "window": {"length": 40000, "warmup": 1000},
           "semantics": ["signal", "timeout_exponential"]}
SIM = {"replications": 3, "seed": 0, "restart_max": 50, "max_jobs": 100, "max_events": 50_000_000}
GRID = {"dt": 0.05, "t_max": 200.0}


def _sweep(client, tmp_path, name):
    return run("sojourn.restart.jobs:simulate", tmp_path / f"{name}.log", client=client, name="example2",
               example=EXAMPLE, simulation=SIM, time_grid=GRID, code="test", output=tmp_path / f"{name}.nc",
               cache=tmp_path / f"cache-{name}")


def test_a_killed_worker_is_retried_and_the_sweep_completes(tmp_path):
    with dask_client({"kind": "local"}, 2) as client:
        client.wait_for_workers(2, timeout=60)
        out, killed = kill_a_worker_while(client, lambda: _sweep(client, tmp_path, "killed"), after=1.0)
        assert killed, "no worker was killed while the job ran"
        ref = _sweep(client, tmp_path, "ref")
    a, b = read_netcdf(out), read_netcdf(ref)
    for v in a.data_vars:
        if v != "wall_time":
            np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)
