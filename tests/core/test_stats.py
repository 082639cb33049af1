"""sojourn.core.estimates.stats: histogram CDF conventions, the interpolated percentile, t-intervals, eq. (27)."""
import math

import numpy as np
import pytest
from scipy import stats as st

from sojourn.core.estimates.stats import (
    cdf_at_left_edges,
    cdf_from_histogram,
    histogram_quantile,
    mean_ci,
    quantile,
    wasserstein,
)

DT = 0.125  # dyadic: bin edges i·DT are exact in binary, so binning and comparisons are exact


def _histogram(x, dt, nbins):
    b = np.floor(x / dt).astype(int)  # bin i covers [i·dt, (i+1)·dt)
    count = np.bincount(b[b < nbins], minlength=nbins)
    return count, int((b >= nbins).sum())


def test_cdf_conventions_match_percentileofscore_strict():
    rng = np.random.default_rng(1)
    x = np.round(rng.exponential(2.0, 5000) / DT * 4) * DT / 4  # many samples exactly on bin edges
    nbins = 40
    count, over = _histogram(x, DT, nbins)
    t = np.arange(nbins) * DT
    right = cdf_from_histogram(count, over)
    left = cdf_at_left_edges(count, over)
    want_right = np.array([st.percentileofscore(x, ti + DT, kind="strict") / 100 for ti in t])
    want_left = np.array([st.percentileofscore(x, ti, kind="strict") / 100 for ti in t])
    np.testing.assert_allclose(right, want_right, rtol=0, atol=1e-12)
    np.testing.assert_allclose(left, want_left, rtol=0, atol=1e-12)
    assert over > 0 and right[-1] < 1.0


def test_cdf_batched_and_pooled():
    count = np.array([[1, 2, 3, 0], [0, 0, 1, 1]])
    over = np.array([1, 0])
    F = cdf_from_histogram(count, over)
    np.testing.assert_allclose(F[0], np.cumsum([1, 2, 3, 0]) / 7)
    np.testing.assert_allclose(F[1], [0, 0, 0.5, 1.0])
    np.testing.assert_allclose(cdf_from_histogram(count.sum(axis=0), over.sum()), np.cumsum([1, 2, 4, 1]) / 9)  # pooled
    assert np.all(np.isnan(cdf_from_histogram(np.zeros(3, int), 0)))


def test_quantile_interpolates_F_linearly_between_grid_points():
    t = np.arange(5) * 0.5
    F = np.array([0.1, 0.5, 0.5, 0.99, 1.0])
    assert quantile(t, F, 0.5) == 1.0  # F = 0.5 up to t = 1.0, above it after: the end of the flat step
    assert quantile(t, F, 0.3) == pytest.approx(0.25)  # halfway between F(0) = 0.1 and F(0.5) = 0.5
    assert quantile(t, F, 0.05) == 0.0  # F(t_0) > p: nothing known below the grid
    np.testing.assert_allclose(quantile(t, F, [0.5, 0.99, 0.995]), [1.0, 1.5, 1.75])
    assert math.isnan(quantile(t, np.array([0.1, 0.2, 0.3, 0.4, 0.5]), 0.9))
    both = quantile(t, np.vstack([F, F[::-1] * 0 + 1.0]), [0.5, 0.99])  # leading axis kept
    np.testing.assert_allclose(both, [[1.0, 1.5], [0.0, 0.0]])
    # a decreasing "CDF" (an invalid fit): still the first crossing, within its step
    assert 0.5 < quantile(t, np.array([0.0, 0.4, 0.2, 0.8, 1.0]), 0.5) <= 1.5
    # exact for a CDF that is linear between the grid points
    u = np.linspace(0.0, 1.0, 11)
    np.testing.assert_allclose(quantile(u, u, [0.123, 0.5, 0.987]), [0.123, 0.5, 0.987], rtol=0, atol=1e-15)


def test_histogram_quantile_is_uniform_within_the_bin():
    t = np.arange(4) * 0.1  # bins [0, .1), [.1, .2), [.2, .3), [.3, .4)
    count = np.array([[5, 5, 5, 5], [0, 10, 0, 10]])
    F = cdf_from_histogram(count, np.array([0, 0]))
    x = histogram_quantile(F, t, 0.1, [0.1, 0.25, 0.5, 0.99])
    np.testing.assert_allclose(x[0], [0.04, 0.1, 0.2, 0.396])  # uniform on [0, 0.4)
    np.testing.assert_allclose(x[1], [0.12, 0.15, 0.3, 0.398])  # the empty bin [.2, .3) is a flat step
    assert np.isnan(histogram_quantile(cdf_from_histogram(np.array([1, 1]), 3), t[:2], 0.1, 0.5))  # past the grid


def test_quantile_of_exponential_histogram():
    rng = np.random.default_rng(2)
    x = rng.exponential(1.0, 200_000)
    count, over = _histogram(x, 0.01, 2000)
    F = cdf_from_histogram(count, over)
    q = histogram_quantile(F, np.arange(2000) * 0.01, 0.01, 0.99)
    # sampling s.d. of the 0.99-quantile: sqrt(p(1-p)/n)/f(x_p), f(x_p) = 1 - p (Exp(1)); no bin allowance: the
    # interpolation leaves O(dt²) (the right bin edge would be 4.61 against log 100 = 4.6052, 2 s.d. off)
    sd = math.sqrt(0.99 * 0.01 / x.size) / 0.01
    assert abs(q - math.log(100)) < 4 * sd


def test_mean_ci_matches_scipy_t_interval():
    x = np.array([1.0, 2.5, 3.0, 4.5, 2.0])
    m, hw = mean_ci(x)
    lo, hi = st.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=st.sem(x))
    assert m == pytest.approx(x.mean())
    assert hw == pytest.approx((hi - lo) / 2)
    m2, hw2 = mean_ci(np.vstack([x, 2 * x]).T, axis=0)  # vectorised over columns
    np.testing.assert_allclose(hw2, [hw, 2 * hw])
    assert math.isnan(mean_ci(np.array([1.0]))[1])


def test_mean_ci_coverage():
    rng = np.random.default_rng(3)
    m, hw = mean_ci(rng.normal(1.0, 2.0, size=(5, 4000)), axis=0)
    cover = np.mean(np.abs(m - 1.0) <= hw)
    assert abs(cover - 0.95) < 4 * math.sqrt(0.95 * 0.05 / 4000)  # binomial s.e. of the coverage


def test_wasserstein_riemann_sum():
    dt = 0.001
    t = np.arange(0, 60, dt)
    F1, F2 = 1 - np.exp(-t), 1 - np.exp(-2 * t)
    # stochastically ordered laws: W1 = difference of means = 1 - 1/2
    assert wasserstein(F1, F2, dt) == pytest.approx(0.5, abs=2 * dt)
    assert wasserstein(F1, F1, dt) == 0.0
    np.testing.assert_allclose(wasserstein(np.vstack([F1, F2]), F2, dt), [wasserstein(F1, F2, dt), 0.0])
