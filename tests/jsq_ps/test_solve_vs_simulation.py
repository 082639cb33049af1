"""Exact M/M/R-JSQ-PS sojourn law against the project's simulator (sojourn.simulate), R ∈ {2, 3}.

Fixed seeds: the test is deterministic. Intervals are Student-t over independent replications at the
Bonferroni level for the CHECKS comparisons of this file (family-wise 99%), checked to be narrow
(half-width < 0.03 on the mean), so a wrong law fails.
(``sojourn.jsq_ps.simulate.simulate`` is imported directly: after the subpackage is imported, the
top-level name ``sojourn.simulate`` refers to the package, not the function.)
"""
import numpy as np
import pytest
from scipy import stats

import sojourn
from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.simulate import simulate
from sojourn.jsq_ps.solve.exact import exact_sojourn_cdf

REPS = 16
#: comparisons in this file: 2 values of R x (the mean + 5 CDF points); each at level 1 - 0.01/CHECKS
CHECKS = 12


@pytest.fixture(scope="module", params=[2, 3])
def sim_and_exact(request):
    R, rho = request.param, 0.7
    spec = sojourn.JSQPS.from_rho(R, rho)
    ds = simulate(spec, horizon=200_000.0, warmup=2_000.0, replications=REPS, seed=2026)
    t = time_grid()
    ex = exact_sojourn_cdf(rho * R, 1.0, R, t)
    return R, rho, ds, t, ex


def _halfwidth(x):
    return stats.t.ppf(1 - 0.01 / (2 * CHECKS), len(x) - 1) * np.std(x, ddof=1) / np.sqrt(len(x))


def test_mean_within_ci(sim_and_exact):
    R, rho, ds, t, ex = sim_and_exact
    means = ds["mean"].values
    exact_mean = np.trapezoid(1 - ex.cdf, t)
    hw = _halfwidth(means)
    assert hw < 0.03
    assert abs(means.mean() - exact_mean) < hw


def test_cdf_points_within_ci(sim_and_exact):
    R, rho, ds, t, ex = sim_and_exact
    count = ds["count"].values  # count[i]: sojourn in [t_i, t_i + dt)
    n = ds["n_customers"].values[:, None]
    F_right = np.cumsum(count, axis=1) / n  # empirical P(S < t_{i+1})
    for x in (0.5, 1.0, 2.0, 5.0, 10.0):
        i = int(round(x / 0.01))  # F at t_i = cumsum up to bin i−1
        Fr = F_right[:, i - 1]
        assert abs(Fr.mean() - ex.cdf[i]) < _halfwidth(Fr) + 1e-12, x
