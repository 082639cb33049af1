"""Small vectorised statistics on sojourn-time histograms (shared by simulation and analysis).

Histogram convention (``sojourn.simulate``): bin i of width dt covers [t_i, t_i + dt) with
t_i = i·dt the bin's left edge (the dataset's ``t`` coordinate); sojourns ≥ the last right edge go
to ``overflow``. Hence from counts alone the CDF is known exactly at the *right* edges:

    cdf_from_histogram(count, overflow)[i] = P(S < t_i + dt)

The paper evaluates the empirical CDF at grid points t with
``percentileofscore(sample, t, kind='strict')/100`` = P(S < t); that is
``cdf_at_left_edges`` (= the right-edge CDF shifted one bin, starting at F(0) = 0).
Both sit on the same grid, so compare CDFs only under one convention.
"""
from __future__ import annotations

import numpy as np
from scipy import stats as _st


def cdf_from_histogram(count, overflow):
    """F at the right edge of each bin, F[..., i] = P(S < t_i + dt).

    ``count`` (..., nbins) and ``overflow`` (...) may carry leading axes (e.g. replication); each
    row is normalised by its own total (count.sum + overflow). A row with no customers gives NaN.
    """
    count = np.asarray(count, dtype=float)
    overflow = np.asarray(overflow, dtype=float)
    total = count.sum(axis=-1) + overflow
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.cumsum(count, axis=-1) / np.asarray(total)[..., None]


def cdf_at_left_edges(count, overflow):
    """F at the left edges t_i: P(S < t_i), the paper's ``percentileofscore(kind='strict')``."""
    right = cdf_from_histogram(count, overflow)
    zero = np.zeros(right.shape[:-1] + (1,))
    return np.concatenate([zero, right[..., :-1]], axis=-1)


def pooled_cdf(count, overflow, axis=0):
    """CDF of all replications' customers together (right-edge convention): sum, then normalise."""
    return cdf_from_histogram(np.sum(count, axis=axis), np.sum(overflow, axis=axis))


def quantile(t, F, p):
    """The paper's percentile: the first grid time t with F(t) > p (NaN if F never exceeds p).

    ``t`` are the grid points at which ``F`` is given (for a right-edge CDF pass t + dt);
    ``p`` may be a scalar or an array of probabilities; F may have leading axes.
    """
    t = np.asarray(t, dtype=float)
    F = np.asarray(F, dtype=float)
    p = np.asarray(p, dtype=float)
    above = F[..., None, :] > p.reshape(-1, 1)  # (..., P, n)
    idx = np.argmax(above, axis=-1)
    out = np.where(above.any(axis=-1), t[idx], np.nan)
    return out.reshape(F.shape[:-1] + p.shape)


def mean_ci(x, confidence=0.95, axis=0):
    """Mean across replications and the half-width of its Student-t interval.

    half-width = t_{(1+c)/2, k−1} · s/√k for k replications (NaN when k < 2).
    """
    x = np.asarray(x, dtype=float)
    k = x.shape[axis]
    m = x.mean(axis=axis)
    if k < 2:
        return m, np.full_like(m, np.nan)
    s = x.std(axis=axis, ddof=1)
    return m, _st.t.ppf(0.5 + confidence / 2.0, k - 1) * s / np.sqrt(k)


def wasserstein(F1, F2, dt):
    """W1 between two CDFs on the same uniform grid: dt · Σ |F1 − F2| (paper eq. 27)."""
    return dt * np.sum(np.abs(np.asarray(F1, dtype=float) - np.asarray(F2, dtype=float)), axis=-1)
