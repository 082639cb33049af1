"""A worker killed during a split-merge experiment job is retried as in every study (the cell runner's retries,
sojourn.core.runs.runner.DaskExecutor): the job completes and its data equal an undisturbed run's. Real LocalCluster,
real SIGKILL."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
import yaml

from sojourn.core.checks.config import validate_config
from sojourn.core.cluster.cluster import dask_client
from sojourn.core.files.io import read_netcdf
from sojourn.core.runs.job import run
from support.faults import kill_a_worker_while

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def _settings():
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["split_merge"]
    cfg = validate_config(copy.deepcopy(cfg), ROOT / "workflow" / "schemas" / "split_merge.schema.yaml", "split_merge")
    cfg["simulation"]["replications"] = 6
    cfg["experiment_b"].update(replicas=[1, 2, 3], window={"length": 60_000, "warmup": 1000})
    return {k: cfg[k] for k in ("simulation", "comparison", "experiment_b")}


def test_a_killed_worker_is_retried_and_the_experiment_completes(tmp_path):
    with dask_client({"kind": "local"}, 2) as client:
        client.wait_for_workers(2, timeout=60)
        exact = run("sojourn.split_merge.jobs:exact", tmp_path / "exact.log", client=client, experiment="b",
                    settings=_settings(), output=tmp_path / "exact_b.nc", code="test", cache=tmp_path / "cache-exact")
        out, killed = kill_a_worker_while(client, lambda: run(
            "sojourn.split_merge.jobs:experiment", tmp_path / "killed.log", client=client, experiment="b",
            settings=_settings(), exact=exact, output=tmp_path / "killed.nc", code="test",
            cache=tmp_path / "cache-killed"), after=1.0)
        assert killed, "no worker was killed while the job ran"
        ref = run("sojourn.split_merge.jobs:experiment", tmp_path / "ref.log", client=client, experiment="b",
                  settings=_settings(), exact=exact, output=tmp_path / "ref.nc", code="test",
                  cache=tmp_path / "cache-ref")
    a, b = read_netcdf(out), read_netcdf(ref)
    for v in a.data_vars:
        if v != "wall_time":
            np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)
