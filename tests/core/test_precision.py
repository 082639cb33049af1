"""Precision-driven replications (issue 14 part 5, sojourn.core.estimates.precision): the stopping rule and the batch
rule,
intervals over each cell's own replications, and — on real JSQ-PS simulations — cells of very different variance
reaching the requested half-width, the cap with its status, bit-identity with the fixed-count run of the same
count, and the cache supplying every replication a looser target already simulated (real Dask cluster)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
import xarray as xr
from scipy import stats as st

from sojourn import JSQPS
from sojourn.cli import main
from sojourn.core.cluster.cluster import dask_client
from sojourn.core.estimates.precision import (
    MAX_REPLICATIONS,
    STOP_REASONS,
    TARGET_MET,
    UNDEFINED,
    Precision,
    decide,
    histogram_statistic,
    next_count,
    parse,
    run_replications,
)
from sojourn.core.estimates.stats import cdf_from_histogram, interval, mean_ci, percentiles_per_replication
from sojourn.core.files.io import read_netcdf
from sojourn.jsq_ps.simulate import simulate, simulate_many

RUN = dict(horizon=10_000.0, warmup=200.0, dt=0.1, t_max=600.0)
MEAN = {"statistic": "mean", "relative_half_width": 0.1, "max_replications": 200}
PRECISION_VARS = ("replications_used", "precision_estimate", "achieved_half_width", "achieved_relative_half_width",
                  "stop_reason")


def _data(ds):
    """The simulated data of a dataset: everything but the wall times and the precision record."""
    return ds.drop_vars(["wall_time", *[v for v in PRECISION_VARS if v in ds]])


# -- the rule ---------------------------------------------------------------------------------
def test_half_width_is_the_student_t_interval_of_the_per_replication_values():
    x = np.array([1.0, 1.2, 0.9, 1.1, 1.05, 0.97])
    d = decide(x, Precision("mean", None, 0.5))
    h = st.t.ppf(0.975, 5) * x.std(ddof=1) / np.sqrt(6)  # Student-t interval, 95 %
    assert d.estimate == pytest.approx(x.mean(), rel=1e-14) and d.half_width == pytest.approx(h, rel=1e-12)
    assert d.relative_half_width == pytest.approx(h / x.mean(), rel=1e-12) and d.reason == TARGET_MET


def test_stopping_rule_statuses():
    p = Precision("mean", None, 0.05, max_replications=10, min_replications=5)
    assert decide([2.0] * 3, p).reason is None and decide([2.0] * 3, p).next == 5  # never before min_replications
    assert decide([2.0] * 5, p).reason == TARGET_MET
    assert decide([1.0, 2.0, np.nan, 1.0, 1.0], p).reason == UNDEFINED  # e.g. a percentile beyond the histogram
    wide = decide(np.arange(1.0, 11.0), p)
    assert wide.reason == MAX_REPLICATIONS and wide.replications == 10 and wide.relative_half_width > 0.05
    assert decide(np.arange(1.0, 6.0), p).reason is None
    # cdf: relative to the rarer side's probability, 1 - F near the tail
    q = Precision("cdf", 3.0, 0.05, min_replications=5)
    tail = decide([0.9990, 0.9992, 0.9988, 0.9991, 0.9989], q)
    assert tail.reason is None and tail.relative_half_width == pytest.approx(tail.half_width / (1 - tail.estimate))


def test_batch_rule_projects_but_at_most_doubles():
    p = Precision("mean", None, 0.05, max_replications=200, min_replications=5)
    tq = lambda n: st.t.ppf(0.975, n - 1)
    # sd chosen so that 12 replications are the first to meet the target: the projection jumps to 12 (<= 2n = 20)
    sd = 0.05 * 1.0 * np.sqrt(12) / tq(12) * (1 - 1e-9)
    assert next_count(10, sd, 1.0, p) == 12
    assert next_count(5, sd, 1.0, p) == 10  # would need 12: at most doubling
    assert next_count(100, 10.0, 1.0, p) == 200  # the cap
    assert next_count(150, 10.0, 1.0, p) == 200
    assert next_count(7, sd / 100, 1.0, p) == 8  # at least one more


def test_driver_submits_only_what_is_missing_and_reuses_the_cache():
    """A synthetic statistic (replication k of cell c draws from its own seeded stream): the driver asks for each
    replication once, takes the cached ones, and stops each cell by the rule."""
    p = Precision("mean", None, 0.02, max_replications=64, min_replications=5)
    sd = {"calm": 0.01, "noisy": 0.2}
    draw = lambda c, k: 1.0 + sd[c] * np.random.default_rng([7, len(c), k]).standard_normal()
    asked = []

    def submit(req):
        asked.extend(req)
        return [draw(c, k) for c, k in req]

    have = {"noisy": {k: draw("noisy", k) for k in range(20)}}
    out = run_replications(["calm", "noisy"], submit, precision=p, estimate=lambda c, k, r: r, have=have)
    assert len(asked) == len(set(asked))  # nothing twice
    assert not [r for r in asked if r[0] == "noisy" and r[1] < 20]  # the cached ones were not simulated again
    assert out["calm"].decision.reason == TARGET_MET and out["calm"].replications == 5
    noisy = out["noisy"]
    assert noisy.reused == 20 and noisy.simulated == noisy.replications - 20
    assert noisy.results == [draw("noisy", k) for k in range(noisy.replications)]
    assert noisy.decision.reason in (TARGET_MET, MAX_REPLICATIONS)
    if noisy.decision.reason == TARGET_MET:
        assert noisy.decision.relative_half_width <= 0.02


def test_interval_over_each_rows_own_replications():
    """Padded rows (a precision-driven cube): each row's interval is the interval of its own entries; full rows
    are computed as without padding; a NaN among the present entries still gives NaN."""
    rng = np.random.default_rng(3)
    x = rng.gamma(2.0, 1.0, size=(7, 9))
    used = np.array([9, 9, 6, 6, 4, 0, 9])
    x[5] = np.nan
    x[6, 2] = np.nan  # a real NaN (not padding) in a complete row
    pres = np.arange(9)[None, :] < used[:, None]
    xp = np.where(pres, x, np.nan)
    for ci in ("t", "auto"):
        cfg = {"confidence": 0.95, "ci": ci, "bootstrap_from": 20, "skew_threshold": 1.0, "n_resamples": 300}
        m, lo, hi, meth = interval(xp, cfg, seed=4, present=pres)
        for r in range(7):
            if used[r] == 0 or r == 6:
                assert np.isnan(m[r]) and np.isnan(lo[r])
                continue
            assert m[r] == pytest.approx(x[r, :used[r]].mean(), rel=1e-13)
            if ci == "t":
                ref = interval(x[r:r + 1, :used[r]], cfg, seed=4)
                assert (lo[r], hi[r]) == pytest.approx((ref[1][0], ref[2][0]), rel=1e-12)
            assert lo[r] <= m[r] <= hi[r]
        full = interval(xp[[0, 1, 6]], cfg, seed=4)  # the complete rows alone, unmasked
        for a, b in zip((m, lo, hi, meth), full, strict=True):
            np.testing.assert_array_equal(a[[0, 1, 6]], b)


def test_histogram_statistics_match_the_studies_conventions():
    rng = np.random.default_rng(0)
    dt, nb = 0.5, 41
    count = rng.integers(0, 50, size=(3, nb))
    overflow = np.array([0, 3, 200])
    t = np.arange(nb) * dt
    edges = t + dt
    F = cdf_from_histogram(count, overflow)
    pct = histogram_statistic(Precision("percentile", 90.0, 0.1), count, overflow, edges)
    # the summaries' percentile: interpolated within its bin, never above the paper's right edge
    np.testing.assert_array_equal(pct, percentiles_per_replication(count, overflow, t, dt, 0.9)[0][:, 0])
    right = edges[np.argmax(F[:2] > 0.9, axis=-1)]  # the paper's: the first right edge with F > 0.9
    assert np.all(pct[:2] <= right) and np.all(pct[:2] >= right - dt)
    assert np.isnan(pct[2])  # F never exceeds 0.9 on the grid: undefined
    cdf = histogram_statistic(Precision("cdf", 7.3, 0.1), count, overflow, edges)
    np.testing.assert_array_equal(cdf, F[:, 13])  # the last right edge <= 7.3 is 7.0 = edges[13]
    assert histogram_statistic(Precision("cdf", 7.0, 0.1), count, overflow, edges)[0] == F[0, 13]


def test_parse_defaults_and_errors_name_the_field():
    assert parse(None) is None
    p = parse({"statistic": "percentile"}, default_at=99.99)
    assert (p.at, p.relative_half_width, p.max_replications, p.min_replications, p.confidence) == \
        (99.99, 0.05, 200, 5, 0.95)
    for block, where in (({"statistic": "median"}, "precision.statistic"), ({"at": 100.0}, "precision.at"),
                         ({"statistic": "mean", "at": 3}, "precision.at"), ({"statistic": "cdf"}, "precision.at"),
                         ({"statistic": "cdf", "at": 900.0}, "precision.at"),
                         ({"relative_half_width": 0}, "precision.relative_half_width"),
                         ({"max_replications": 1}, "precision.max_replications"),
                         ({"min_replications": 9, "max_replications": 8}, "precision.min_replications"),
                         ({"relativ_half_width": 0.1}, "precision.relativ_half_width")):
        with pytest.raises(ValueError, match=re.escape(where)):
            parse(block, t_max=600.0, default_at=99.99)


# -- real simulations --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def low_high():
    """M/M/2-JSQ-PS at ρ = 0.1 and ρ = 0.95 to the same target on the mean sojourn time."""
    return simulate_many([JSQPS.from_rho(2, 0.1), JSQPS.from_rho(2, 0.95)], seed=3, precision=MEAN, **RUN)


def test_cells_of_very_different_variance_reach_the_requested_half_width(low_high):
    lo, hi = low_high
    for ds in (lo, hi):
        assert int(ds["stop_reason"]) == TARGET_MET
        n = int(ds["replications_used"])
        assert ds.sizes["replication"] == n and ds["replication"].values.tolist() == list(range(n))
        m, h = mean_ci(ds["mean"].values)  # recomputed from the dataset's own replications
        assert float(ds["precision_estimate"]) == pytest.approx(m, rel=1e-13)
        assert float(ds["achieved_half_width"]) == pytest.approx(h, rel=1e-12)
        assert h / m <= 0.1 and float(ds["achieved_relative_half_width"]) == pytest.approx(h / m, rel=1e-12)
        assert n >= 5
    # the quiet cell stops at the first batch, the heavy-traffic one needs many more
    assert int(lo["replications_used"]) == 5 and int(hi["replications_used"]) >= 30
    attrs = hi["stop_reason"].attrs
    assert attrs["flag_meanings"].split() == [STOP_REASONS[k] for k in sorted(STOP_REASONS)]
    assert list(attrs["flag_values"]) == sorted(STOP_REASONS)
    assert json.loads(hi.attrs["precision"])["relative_half_width"] == 0.1


def test_precision_run_is_bit_identical_to_the_fixed_count_run(low_high):
    for ds, rho in zip(low_high, (0.1, 0.95), strict=True):
        fixed = simulate(JSQPS.from_rho(2, rho), seed=3, replications=int(ds["replications_used"]), **RUN)
        xr.testing.assert_equal(_data(ds), _data(fixed))


def test_stops_at_the_cap_with_a_clear_status(tmp_path, capsys):
    ds = simulate(JSQPS.from_rho(2, 0.95), seed=3, precision={**MEAN, "relative_half_width": 0.005,
                                                               "max_replications": 8}, **RUN)
    assert int(ds["stop_reason"]) == MAX_REPLICATIONS and int(ds["replications_used"]) == 8
    assert float(ds["achieved_relative_half_width"]) > 0.005
    out = tmp_path / "cap.nc"
    rc = main(["simulate", "-R", "2", "--load", "0.95", "--horizon", "10000", "--warmup", "200", "--dt", "0.1",
               "--t-max", "600", "--seed", "3", "--precision", "mean", "--relative-half-width", "0.005",
               "--max-replications", "8", "--output", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "max replications after 8 replications" in text and "NOT met" in text
    written = read_netcdf(out)  # the simulation, and the CLI's summary beside it
    xr.testing.assert_equal(_data(written[list(ds.data_vars)]), _data(ds))


def test_undefined_statistic_stops_at_once():
    """The 99.9th percentile of ρ = 0.95 lies beyond a 20-unit histogram: no interval exists, so no more
    replications are spent on it."""
    ds = simulate(JSQPS.from_rho(2, 0.95), seed=3, horizon=3000.0, warmup=100.0, dt=0.1, t_max=20.0,
                  precision={"statistic": "percentile", "at": 99.9})
    assert int(ds["stop_reason"]) == UNDEFINED and int(ds["replications_used"]) == 5
    assert np.isnan(float(ds["achieved_half_width"]))


# -- the pipeline's cell job: padding, and the cache under a tighter target (real Dask) -----------
def _block(client, tmp_path, rel, cache, name):
    """The JSQ-PS simulation job as a rule runs it (sojourn.core.runs.job.run: its log)."""
    from sojourn.core.runs.job import run

    sim = {"window": {"length": 5000, "warmup": 200, "cooldown": 200}, "replications": 2, "seed": 0, "backend": "fast",
           "precision": {**MEAN, "relative_half_width": rel}}
    log = tmp_path / f"{name}.log"
    out = run("sojourn.jsq_ps.jobs:simulate", log, client=client, service="exponential", law="exponential", R=2,
              rhos=[0.1, 0.9], mu=1.0, simulation=sim, time_grid={"dt": 0.1, "t_max": 300.0}, code="test",
              output=tmp_path / f"{name}.nc", cache=tmp_path / cache)
    return read_netcdf(out), log.read_text()


@pytest.fixture(scope="module")
def client():
    with dask_client({"kind": "local"}, 2) as c:
        yield c


def test_block_pads_cells_and_a_tighter_target_simulates_only_the_extra_replications(client, tmp_path):
    loose, _ = _block(client, tmp_path, 0.1, "cache", "loose")
    used = loose["replications_used"].sel(service="exponential", R=2).values
    assert used[0] == 5 and used[1] > used[0]  # ρ = 0.1 stops at the first batch, ρ = 0.9 goes on
    assert loose.sizes["replication"] == used.max()
    low = loose.sel(service="exponential", R=2, rho=0.1)
    pad = low.sel(replication=slice(int(used[0]), None))
    assert (pad["n_customers"] == 0).all() and (pad["count"].sum("t") == 0).all() and (pad["events"] == -1).all()
    assert np.isnan(pad["mean"]).all() and (low["n_customers"][:used[0]] > 0).all()
    assert (loose["stop_reason"] == TARGET_MET).all()

    tight, log = _block(client, tmp_path, 0.05, "cache", "tight")
    new = tight["replications_used"].sel(service="exponential", R=2).values
    assert (new >= used).all() and new[1] > used[1]
    for rho, n_old, n_new in zip(("0.1", "0.9"), used, new, strict=True):  # a cell's label: rho=<its float>
        m = re.search(rf"cell rho={rho}: \w+ after {n_new} replications.*; (\d+) simulated, (\d+) from the cache", log)
        assert m, log
        assert (int(m.group(1)), int(m.group(2))) == (n_new - n_old, n_old)  # only the extra ones
    # what the cache supplied is exactly what a fresh run computes
    fresh, flog = _block(client, tmp_path, 0.05, "fresh-cache", "fresh")
    assert "from the cache" in flog and not re.search(r"[1-9]\d* replications cached", flog)
    xr.testing.assert_equal(tight.drop_vars("wall_time"), fresh.drop_vars("wall_time"))
