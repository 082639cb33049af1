"""compare_files (streaming over cells from the merged files) equals compare (in memory)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import xarray as xr

from sojourn.core.files.io import read_netcdf
from sojourn.jsq_ps.compare import compare, compare_files, interval
from sojourn.jsq_ps.storage import read_approximation

SERVICES = ["deterministic", "exponential", "lognormal"]
RS = [1, 2]
RHOS = [0.3, 0.6, 0.9]
METHODS = ["A", "B", "exact"]
NT, NK = 400, 4


def _datasets(seed=0):
    rng = np.random.default_rng(seed)
    t = np.round(np.arange(NT) * 0.05, 12)
    count = np.zeros((len(SERVICES), len(RS), len(RHOS), NK, NT), np.int32)
    overflow = np.zeros(count.shape[:-1], np.int64)
    for s, svc in enumerate(SERVICES):
        for i in range(len(RS)):
            for j, rho in enumerate(RHOS):
                if svc != "exponential" and (i, j) != (1, 2):
                    continue  # a gap: zero-filled, as in the merged paper grid
                scale = 1.0 / (1.0 - rho)
                x = rng.gamma(1.0 + s, scale / (1.0 + s), size=(NK, int(rng.integers(200, 800))))
                for k in range(NK):
                    b = np.floor(x[k] / 0.05).astype(int)
                    count[s, i, j, k] = np.bincount(b[b < NT], minlength=NT)[:NT]
                    overflow[s, i, j, k] = int((b >= NT).sum())
    n_customers = count.sum(axis=-1) + overflow
    sim = xr.Dataset(
        {"count": (("service", "R", "rho", "replication", "t"), count),
         "overflow": (("service", "R", "rho", "replication"), overflow),
         "n_customers": (("service", "R", "rho", "replication"), n_customers),
         "spec_hash": (("service", "R", "rho"), (n_customers.sum(-1) > 0).astype(np.uint64) * 7)},
        coords={"service": SERVICES, "R": RS, "rho": RHOS, "replication": np.arange(NK), "t": t},
    )
    rates = np.array([0.8, 1.2, 1.0])
    sf = np.empty((len(RS), len(RHOS), len(METHODS), NT), np.float32)
    for i in range(len(RS)):
        for j, rho in enumerate(RHOS):
            for m, r in enumerate(rates):
                sf[i, j, m] = np.exp(-r * (1.0 - rho) * t)
    sf[0, 1, 1] = np.nan  # a failed method
    approx = xr.Dataset(
        {"sf": (("R", "rho", "approximation", "t"), sf),
         "run_time": (("R", "rho", "approximation"), rng.random((len(RS), len(RHOS), len(METHODS))))},
        coords={"R": RS, "rho": RHOS, "approximation": METHODS, "t": t},
    )
    return sim, approx


CFG = {"percentiles": [90, 99, 99.9], "n_resamples": 300, "bootstrap_from": 3}  # bootstrap CIs exercised too


@pytest.fixture()
def files(tmp_path):
    sim, approx = _datasets()
    sp, ap = tmp_path / "simulation.nc", tmp_path / "approximation.nc"
    sim.to_netcdf(sp, engine="netcdf4", encoding={
        "count": {"zlib": True, "chunksizes": (1, 1, 1, 1, NT)}})
    approx.to_netcdf(ap, engine="netcdf4", encoding={"sf": {"zlib": True, "chunksizes": (1, 1, 1, NT)}})
    return sp, ap


def test_compare_files_equals_compare(files):
    sp, ap = files
    expected = compare(read_netcdf(sp), read_approximation(ap), CFG)
    got = compare_files(sp, ap, CFG)
    xr.testing.assert_identical(got, expected)
    # the fixture exercises what matters: gaps, a failed method, bootstrap CIs
    assert np.isnan(got["wasserstein"].sel(service="lognormal", R=1)).all()
    assert np.isfinite(got["wasserstein"].sel(service="lognormal", R=2, rho=0.9)).all()
    assert (got["wasserstein_ci_method"] == 1).any()
    assert np.isnan(got["approx_percentile"].sel({"R": 1, "rho": 0.6, "approximation": "B"})).all()


def test_compare_files_holds_the_lock(files):
    sp, ap = files

    class CountingLock:
        def __init__(self):
            self.lock, self.entered = threading.RLock(), 0

        def __enter__(self):
            self.lock.__enter__()
            self.entered += 1

        def __exit__(self, *exc):
            return self.lock.__exit__(*exc)

    lock = CountingLock()
    got = compare_files(sp, ap, CFG, lock=lock)
    # per read, not for the whole run: at least one acquisition per (R, rho) cell
    assert lock.entered >= len(RS) * len(RHOS)
    xr.testing.assert_identical(got, compare_files(sp, ap, CFG))


def test_interval_skew_selection_with_gaps():
    """Rows with NaN (gaps) do not change which complete rows get a bootstrap CI."""
    rng = np.random.default_rng(3)
    x = rng.lognormal(0, 1.5, size=(40, 10))
    cfg = {"confidence": 0.95, "ci": "auto", "bootstrap_from": 10, "skew_threshold": 1.0, "n_resamples": 200}
    full = interval(x, cfg, seed=1)
    gaps = np.concatenate([x, np.full((25, 10), np.nan)])
    part = interval(gaps, cfg, seed=1)
    for a, b in zip(full, part, strict=True):
        np.testing.assert_array_equal(a, b[:40])
    assert (full[3] == 1).any() and (full[3] == 0).any()
    assert np.isnan(part[0][40:]).all()


def test_auto_bootstraps_only_from_enough_replications():
    """'auto' gives Student t below ``bootstrap_from`` replications (the bootstrap's intervals are too narrow there:
    benchmarks/ci_coverage.py), and BCa for a skewed sample from that many on; Student t's interval at five
    replications is the wider one."""
    from sojourn.core.estimates.stats import BOOTSTRAP_FROM, CI_BOOTSTRAP, CI_T

    rng = np.random.default_rng(5)
    cfg = {"confidence": 0.95, "ci": "auto", "skew_threshold": 1.0, "n_resamples": 300}
    few = rng.lognormal(0, 1.5, size=(30, 5))
    _, lo, hi, how = interval(few, cfg, seed=1)
    assert (how == CI_T).all()
    _, blo, bhi, bhow = interval(few, {**cfg, "ci": "bootstrap"}, seed=1)
    assert (bhow == CI_BOOTSTRAP).all() and np.median((hi - lo) / (bhi - blo)) > 1.2
    many = rng.lognormal(0, 1.5, size=(30, BOOTSTRAP_FROM))
    assert (interval(many, cfg, seed=1)[3] == CI_BOOTSTRAP).any()
    assert (interval(many[:, :-1], cfg, seed=1)[3] == CI_T).all()


def _break(approx, R, rho, method, how):
    """A copy of ``approx`` whose ``method`` CDF at (R, rho) is not a CDF (``sf`` = 1 − F)."""
    bad = approx.copy(deep=True)
    sf = bad["sf"].sel({"R": R, "rho": rho, "approximation": method}).values.astype(float)
    if how == "negative":
        sf = sf * 50.0  # F = 1 − 50·sf dives far below 0 (Gupta's fit at low load, §3.3)
    elif how == "dip":
        sf[100:120] = sf[99] + 1e-6  # F steps down by 1e-6 at t_100: beyond round-off
    else:
        sf[37] = np.nan
    bad["sf"].loc[{"R": R, "rho": rho, "approximation": method}] = sf.astype(bad["sf"].dtype)
    return bad


@pytest.mark.parametrize("how,bits", [("negative", 1), ("dip", 4), ("nan", 8)])
def test_fit_invalid_flags_and_never_wins(how, bits):
    """A method whose CDF is not a CDF is flagged, keeps its raw statistics, never wins; every other
    output of every other cell is unchanged (power control: the unbroken method in the same cell wins)."""
    sim, approx = _datasets()
    good = compare(sim, approx, CFG)
    assert int(good["fit_invalid"].sum()) == 0 and float(good["fit_violation"].max()) == 0.0
    # in the good run method A wins at (R=2, rho=0.9): break it there
    cell = {"R": 2, "rho": 0.9}
    assert good["best_method"].sel(service="exponential", **cell).item() == "A"
    got = compare(sim, _break(approx, 2, 0.9, "A", how), CFG)
    flag = int(got["fit_invalid"].sel({**cell, "approximation": "A"}))
    assert flag & bits and flag == int(got["fit_invalid"].sum())
    assert got["fit_invalid"].attrs["flag_meanings"] == "below_zero above_one non_monotone non_finite"
    at = {"service": "exponential", "approximation": "A", **cell}
    assert int(got["usable"].sel({**cell, "approximation": "A"})) == 0
    assert int(got["unusable_reason"].sel({**cell, "approximation": "A"})) == 2  # not_a_cdf
    # no value of the flagged method reads as an ordinary one: every statistic of it is NaN there
    for v in got.data_vars:
        if "approximation" in got[v].dims and got[v].dtype.kind == "f" and not v.startswith("raw_") \
                and v != "fit_violation" and v != "run_time":
            assert got[v].sel({k: x for k, x in at.items() if k in got[v].dims}).isnull().all(), v
    if how != "nan":  # raw numbers kept under raw_ (a NaN point makes the method absent from the statistics)
        assert np.isfinite(got["raw_wasserstein_mean"].sel(at))
        assert float(got["raw_wasserstein_mean"].sel(at)) != float(good["wasserstein_mean"].sel(at))
        assert float(got["fit_violation"].sel({**cell, "approximation": "A"})) >= (1e-6 if how == "dip" else 1.0)
    assert got["best_method"].sel(service="exponential", **cell).item() != "A"
    assert int(got["tied_with_best"].sel({"service": "exponential", "approximation": "A", **cell})) == 0
    assert (got["best_method_percentile"].sel(service="exponential", **cell) != "A").all()
    assert got["best_method"].sel(service="exponential", **cell).item() == "B"  # the other candidate
    rest = {"R": 1}
    for v in good.data_vars:
        if v in ("fit_invalid", "fit_violation"):
            continue
        xr.testing.assert_identical(got[v].sel(rest), good[v].sel(rest))
        xr.testing.assert_identical(got[v].sel(R=2, rho=[0.3, 0.6]), good[v].sel(R=2, rho=[0.3, 0.6]))
        if "approximation" in got[v].dims and v != "tied_with_best":  # B's tie in the broken cell: it is the best now
            xr.testing.assert_identical(
                got[v].sel({"approximation": ["B", "exact"]}), good[v].sel({"approximation": ["B", "exact"]})
            )


def test_fit_validity_tolerates_round_off_only():
    from sojourn.jsq_ps.compare import FIT_TOLERANCE, fit_validity

    t = np.linspace(0, 10, 1001)
    F = 1 - np.exp(-t)
    noisy = F + np.random.default_rng(0).uniform(-1e-12, 1e-12, F.size)
    flags, viol = fit_validity(np.stack([F, noisy, F - 2 * FIT_TOLERANCE, np.full_like(F, np.nan)]))
    assert flags.tolist() == [0, 0, 1, 0]  # below zero at t = 0 only beyond the tolerance
    assert viol[0] == 0 and viol[1] == 0 and viol[2] == pytest.approx(2 * FIT_TOLERANCE) and np.isnan(viol[3])
