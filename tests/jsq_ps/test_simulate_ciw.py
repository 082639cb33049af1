"""Fast (numba) backend vs the Ciw 3.2 reference on the same specs and windows.

Both backends run the same short window (so warm-up bias is shared); Ciw replications run in spawned
processes (one pool for all specs). Agreement: the Welch t-interval (level 1 − α/m, α = 1e-3, m checks per
spec) of the difference of per-replication means contains 0, for the mean sojourn, the per-replication
99th percentile and the mean number per server. A negative control shows the comparison can fail.
Sensitivity (Ciw is ~500x slower, so its replications are few and short): at R = 3, ρ = 0.8 the interval
half-width is about 11% of the mean sojourn and 19% of the 99th percentile (R = 2 lognormal: 19% / 28%);
many short replications (24 × 800 time units) gave ~1.8x tighter intervals than 8 × 1800 for the same CPU.
"""
import numpy as np
import pytest
from scipy import stats as st

from sojourn import JSQPS
from sojourn.core.estimates.stats import cdf_from_histogram, quantile
from sojourn.jsq_ps.simulate import simulate, simulate_many

WINDOW = dict(horizon=900.0, warmup=100.0, dt=0.125, t_max=100.0, occupancy_max=40)
CIW_REPS = 24
FAST_REPS = 60
CASES = {
    "R1-rho0.6": JSQPS.from_rho(1, 0.6),
    "R2-rho0.5": JSQPS.from_rho(2, 0.5),
    "R2-rho0.8": JSQPS.from_rho(2, 0.8),
    "R3-rho0.5": JSQPS.from_rho(3, 0.5),
    "R3-rho0.8": JSQPS.from_rho(3, 0.8),
    "R2-rho0.8-lognormal": JSQPS.from_rho(2, 0.8, service="lognormal"),
    "R3-rho0.7-limited2-jsq2": JSQPS.from_rho(3, 0.7, discipline="limited", ps_limit=2, dispatch="jsq-d",
                                               choices=2),
    "R2-rho0.7-roundrobin-uniform": JSQPS.from_rho(2, 0.7, service="uniform", dispatch="round-robin"),
    "R2-rho0.7-capacitated2-random-gamma": JSQPS.from_rho(2, 0.7, service="gamma", dispatch="random",
                                                           discipline="capacitated", ps_threshold=2.0),
}


@pytest.fixture(scope="module")
def ciw_runs():
    dss = simulate_many(list(CASES.values()), replications=CIW_REPS, seed=123, backend="ciw", max_workers=2,
                        **WINDOW)
    return dict(zip(CASES, dss, strict=True))


def summaries(ds):
    F = cdf_from_histogram(ds["count"].values, ds["overflow"].values)
    q99 = np.array([quantile(ds["t"].values + ds.attrs["dt"], f, 0.99) for f in F])
    assert np.isfinite(q99).all()
    return np.column_stack([ds["mean"].values, q99, ds["mean_number_per_server"].values])


def welch_ok(x, y, m, alpha=1e-3):
    vx, vy = x.var(axis=0, ddof=1) / len(x), y.var(axis=0, ddof=1) / len(y)
    df = (vx + vy) ** 2 / (vx**2 / (len(x) - 1) + vy**2 / (len(y) - 1))
    return np.abs(x.mean(axis=0) - y.mean(axis=0)) <= st.t.ppf(1 - alpha / (2 * m), df) * np.sqrt(vx + vy)


@pytest.mark.parametrize("name", list(CASES))
def test_fast_agrees_with_ciw(name, ciw_runs):
    spec = CASES[name]
    c = ciw_runs[name]
    assert c.attrs["backend"] == "ciw"
    assert (c["n_customers"].values > 0).all()
    np.testing.assert_array_equal(c["occupancy_at_arrival"].sum("n").values, c["n_customers"].values)
    f = simulate(spec, replications=FAST_REPS, seed=7, **WINDOW)
    sc, sf = summaries(c), summaries(f)
    assert welch_ok(sc, sf, m=sc.shape[1]).all(), (sc.mean(axis=0), sf.mean(axis=0))


def test_negative_control_detects_wrong_dispatch(ciw_runs):
    """Ciw JSQ vs fast *random* dispatch (R = 3, ρ = 0.8): the same comparison must reject."""
    f = simulate(JSQPS.from_rho(3, 0.8, dispatch="random"), replications=FAST_REPS, seed=7, **WINDOW)
    assert not welch_ok(summaries(ciw_runs["R3-rho0.8"])[:, :1], summaries(f)[:, :1], m=3).any()


def test_ciw_occupancy_at_arrival_mm1_like(ciw_runs):
    """Ciw queue_size_at_arrival counts customers present before the arrival: for R = 1 (M/M/1-PS) the
    histogram matches PASTA (1−ρ)ρ^n, like the fast backend's."""
    rho = 0.6
    occ = ciw_runs["R1-rho0.6"]["occupancy_at_arrival"].values
    p = occ[:, :3] / occ.sum(axis=1, keepdims=True)
    k = p.shape[0]
    hw = st.t.ppf(1 - 1e-3 / 6, k - 1) * p.std(axis=0, ddof=1) / np.sqrt(k)
    assert (np.abs(p.mean(axis=0) - (1 - rho) * rho ** np.arange(3)) <= hw).all()


def test_ciw_replication_reproducible_alone(ciw_runs):
    """Replication 2 run alone in a new pool equals replication 2 of the batch run with 7 other specs."""
    batch = ciw_runs["R2-rho0.8-lognormal"]
    alone = simulate(CASES["R2-rho0.8-lognormal"], replications=1, seed=123, backend="ciw", replication_offset=2,
                     **WINDOW)
    for v in ("count", "occupancy_at_arrival", "sum", "sumsq", "max", "n_customers", "mean_number_per_server"):
        np.testing.assert_array_equal(alone[v].values[0], batch[v].sel(replication=2).values)


def test_ciw_in_calling_process_equals_pool(ciw_runs):
    """max_workers=0 (no child processes) gives the same replication as the spawned pool."""
    inline = simulate(CASES["R1-rho0.6"], replications=1, seed=123, backend="ciw", replication_offset=5,
                      max_workers=0, **WINDOW)
    for v in ("count", "occupancy_at_arrival", "sum", "n_customers"):
        np.testing.assert_array_equal(inline[v].values[0], ciw_runs["R1-rho0.6"][v].sel(replication=5).values)
