"""Precision-driven replications in the split-merge study (sojourn.core.estimates.precision on the latency): the
simulate
API stops at the requested half-width and equals the fixed-count run of the same count; the experiment job
(real Dask) pads cells that stop at different counts, summarises each over its own replications, and under a
tighter target simulates only the replications its cache does not hold."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from sojourn.core.checks.config import validate_config
from sojourn.core.cluster.cluster import dask_client
from sojourn.core.estimates.precision import MAX_REPLICATIONS, TARGET_MET
from sojourn.core.estimates.stats import mean_ci
from sojourn.core.files.io import read_netcdf
from sojourn.core.runs.job import run
from sojourn.split_merge.model import SplitMerge
from sojourn.split_merge.simulate import simulate

ROOT = Path(__file__).resolve().parents[2]
PH3 = "phasetype:alpha=0.5/0.3/0.2,T=-2/1/0.5|0.3/-1.5/0.2|0/0.4/-3"


def test_api_reaches_the_target_and_equals_the_fixed_count_run():
    spec = SplitMerge.from_rho(3, 3, 2, 0.8, PH3)
    ds = simulate(spec, workunits=3000, seed=2, precision={"statistic": "mean", "relative_half_width": 0.04})
    n = int(ds["replications_used"])
    assert int(ds["stop_reason"]) == TARGET_MET and n >= 5
    m, h = mean_ci(ds["mean_latency"].values)
    assert float(ds["achieved_half_width"]) == pytest.approx(h, rel=1e-12) and h / m <= 0.04
    fixed = simulate(spec, workunits=3000, seed=2, replications=n)
    keep = [v for v in fixed.data_vars if v != "wall_time"]
    xr.testing.assert_equal(ds[keep], fixed[keep])
    # a latency percentile, and the cap
    capped = simulate(spec, workunits=3000, seed=2, precision={"statistic": "percentile", "at": 99,
                                                               "relative_half_width": 0.001, "max_replications": 6})
    assert int(capped["stop_reason"]) == MAX_REPLICATIONS and int(capped["replications_used"]) == 6


def _settings(rel):
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["split_merge"]
    cfg = validate_config(copy.deepcopy(cfg), ROOT / "workflow" / "schemas" / "split_merge.schema.yaml", "split_merge")
    cfg["simulation"]["precision"] = {"statistic": "mean", "relative_half_width": rel, "max_replications": 60}
    cfg["experiment_b"].update(replicas=[1, 3], window={"length": 2000, "warmup": 200}, rho=0.5)
    return {k: cfg[k] for k in ("simulation", "comparison", "experiment_b")}


@pytest.fixture(scope="module")
def client():
    with dask_client({"kind": "local"}, 2) as c:
        yield c


def _exact(client, tmp_path, settings):
    """The experiment's exact values (their own job, as in the pipeline), computed once per folder."""
    path = tmp_path / "exact_b.nc"
    if not path.exists():
        run("sojourn.split_merge.jobs:exact", tmp_path / "exact_b.log", client=client, experiment="b",
            settings=settings, output=path, code="test", cache=tmp_path / "cache-exact")
    return path


def _run(client, tmp_path, rel, cache, name):
    log = tmp_path / f"{name}.log"
    settings = _settings(rel)
    out = run("sojourn.split_merge.jobs:experiment", log, client=client, experiment="b", settings=settings,
              exact=_exact(client, tmp_path, settings), output=tmp_path / f"{name}.nc", code="test",
              cache=tmp_path / cache)
    return read_netcdf(out), log.read_text()


def test_experiment_pads_cells_and_a_tighter_target_simulates_only_the_extra_ones(client, tmp_path):
    # 6.3 %: with these seeds the (q, r) = (1, 1) cell's 95 % half-width after 5 replications is 5.9 % of its
    # mean and the three others' 6.8-7.5 %, so the cells stop at different counts
    loose, _ = _run(client, tmp_path, 0.063, "cache", "loose")
    used = loose["replications_used"].sel(law="law", model="split_merge")  # (quorum, replicas); q > r: 0
    n = {(int(q), int(r)): int(used.sel(quorum=q, replicas=r)) for q in used.quorum for r in used.replicas}
    assert n[(2, 1)] == n[(3, 1)] == 0 and min(v for v in n.values() if v) >= 5
    assert len({v for v in n.values() if v}) > 1  # cells stopped at different counts: padding
    for (q, r), k in n.items():
        if not k:
            continue
        c = loose.sel(law="law", model="split_merge", quorum=q, replicas=r)
        reps = c["rep_mean_latency"].values
        assert np.isfinite(reps[:k]).all() and np.isnan(reps[k:]).all()
        m, h = mean_ci(reps[:k], confidence=_settings(0.063)["comparison"]["confidence"])  # the section's
        assert float(c["sim_mean_latency"]) == pytest.approx(m, rel=1e-13)  # its own replications only
        assert float(c["sim_mean_latency_hw"]) == pytest.approx(h, rel=1e-12)
        assert int(c["stop_reason"]) in (TARGET_MET, MAX_REPLICATIONS)

    tight, log = _run(client, tmp_path, 0.04, "cache", "tight")
    new = tight["replications_used"].sel(law="law", model="split_merge")
    grew = 0
    for q in new.quorum.values:
        for r in new.replicas.values:
            k0, k1 = n[(int(q), int(r))], int(new.sel(quorum=q, replicas=r))
            if not k0:
                continue
            label = f"law/split_merge/q{q}/r{r}"
            m = re.search(
                rf"cell {re.escape(label)}: \w+ after {k1} replications.*; (\d+) simulated, (\d+) from the cache", log
            )
            assert m, log
            assert (int(m.group(1)), int(m.group(2))) == (k1 - k0, k0)
            grew += k1 > k0
    assert grew
    fresh, _ = _run(client, tmp_path, 0.04, "fresh-cache", "fresh")
    xr.testing.assert_equal(tight.drop_vars("wall_time"), fresh.drop_vars("wall_time"))
