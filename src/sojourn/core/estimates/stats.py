"""Small vectorised statistics on sojourn-time histograms (shared by simulation and analysis).

Histogram convention (``sojourn.simulate``): bin i of width dt covers [t_i, t_i + dt) with
t_i = i·dt the bin's left edge (the dataset's ``t`` coordinate); sojourns ≥ the last right edge go
to ``overflow``. Hence from counts alone the CDF is known exactly at the *right* edges:

    cdf_from_histogram(count, overflow)[i] = P(S < t_i + dt)

The paper evaluates the empirical CDF at grid points t with
``percentileofscore(sample, t, kind='strict')/100`` = P(S < t); that is
``cdf_at_left_edges`` (= the right-edge CDF shifted one bin, starting at F(0) = 0).
Both sit on the same grid, so compare CDFs only under one convention.

Percentiles (:func:`quantile`, :func:`histogram_quantile`, :func:`percentiles_per_replication`) interpolate: the
CDF is taken as linear between the grid points where it is known (for a histogram, the bin edges: customers
spread uniformly within their bin), and x_p is where that line first exceeds p. The paper's percentile, the first
grid point with F > p, is the right end of the same step: it lies up to one step dt above, always above, so an
interval built from it across replications excludes the truth once its width falls below dt (issue 26). The
linear CDF leaves an error of order dt² f'/f within the bin (zero for a flat density), far below dt.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..checks.config import DEFAULT_CONFIDENCE


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


def quantile(t, F, p):
    """The p-percentile of a CDF known at the grid points ``t``: the point where F, linear between consecutive
    grid points, first exceeds p; NaN if F never exceeds p; t[0] if F(t[0]) > p already (nothing known below).

    For the first grid point t_i with F(t_i) > p (the paper's percentile, §3.8), x_p = t_{i−1} + (t_i − t_{i−1})
    (p − F(t_{i−1})) / (F(t_i) − F(t_{i−1})) ∈ (t_{i−1}, t_i]: F(t_{i−1}) ≤ p < F(t_i), so the step is never
    flat (also for an approximated "CDF" that decreases somewhere). ``p`` may be a scalar or an array of
    probabilities; F may have leading axes; the result has shape F.shape[:-1] + p.shape. A histogram's CDF
    is known at its bin edges: :func:`histogram_quantile`.
    """
    t = np.asarray(t, dtype=float)
    F = np.asarray(F, dtype=float)
    p = np.asarray(p, dtype=float)
    above = F[..., None, :] > p.reshape(-1, 1)  # (..., P, n)
    idx = np.argmax(above, axis=-1)
    found = above.any(axis=-1)
    prev = np.maximum(idx - 1, 0)
    f1 = np.take_along_axis(F[..., None, :], idx[..., None], axis=-1)[..., 0]  # (..., P)
    f0 = np.take_along_axis(F[..., None, :], prev[..., None], axis=-1)[..., 0]
    t1, t0 = t[idx], t[prev]
    with np.errstate(invalid="ignore", divide="ignore"):
        step = np.where(idx > 0, (p.reshape(-1) - f0) / (f1 - f0), 1.0)
    out = np.where(found, t0 + (t1 - t0) * step, np.nan)
    return out.reshape(F.shape[:-1] + p.shape)


def histogram_quantile(F, t, dt, p):
    """:func:`quantile` of a histogram with bins [t_i, t_i + dt) whose right-edge CDF is ``F``
    (:func:`cdf_from_histogram`): its CDF is known at every bin edge, F = 0 at the first left edge t_0 (no
    customer lies below it), so x_p interpolates within the bin where F first exceeds p (customers uniform
    within it). NaN past the last right edge."""
    t = np.asarray(t, dtype=float)
    F = np.asarray(F, dtype=float)
    edges = np.concatenate([t[:1], t + float(dt)])
    F0 = np.concatenate([np.zeros(F.shape[:-1] + (1,)), F], axis=-1)
    return quantile(edges, F0, p)


def mean_ci(x, confidence=DEFAULT_CONFIDENCE, axis=0):
    """Mean across replications and the half-width of its Student-t interval.

    half-width = t_{(1+c)/2, k−1} · s/√k for k replications (NaN when k < 2).
    """
    x = np.asarray(x, dtype=float)
    k = x.shape[axis]
    m = x.mean(axis=axis)
    if k < 2:
        return m, np.full_like(m, np.nan)
    s = x.std(axis=axis, ddof=1)
    return m, student_t_quantile(k - 1, 0.5 + confidence / 2.0) * s / np.sqrt(k)


def student_t_quantile(df, q):
    """The q-quantile of Student's t with ``df`` degrees of freedom: ``scipy.special.stdtrit`` (what
    scipy.stats.t.ppf computes, without importing scipy.stats), imported here, at the first interval, not with this
    module: scipy.special's import takes about 0.3 CPU seconds, which ``sojourn simulate`` spends beside its
    replications (:func:`sojourn.core.runs.threads.import_in_background`) rather than before them."""
    from scipy.special import stdtrit

    return stdtrit(df, q)


def wasserstein(F1, F2, dt):
    """W1 between two CDFs on the same uniform grid: dt · Σ |F1 − F2| (paper eq. 27)."""
    return dt * np.sum(np.abs(np.asarray(F1, dtype=float) - np.asarray(F2, dtype=float)), axis=-1)


#: ``*_ci_method`` flag values: Student-t interval, BCa bootstrap interval
CI_T, CI_BOOTSTRAP = 0, 1
#: the fewest replications 'auto' bootstraps (a skewed sample); fewer get Student t (:func:`interval`)
BOOTSTRAP_FROM = 20


def interval(x: np.ndarray, cfg: dict, seed: int = 0, present=None):
    """Mean and CI across the last axis (replications) of ``x``.

    Returns (mean, low, high, method) with method CI_T or CI_BOOTSTRAP per leading index.
    ``cfg['ci']``: 't', 'bootstrap', or 'auto' = a BCa bootstrap where k ≥ ``bootstrap_from`` (default
    :data:`BOOTSTRAP_FROM`) and the sample skewness exceeds ``skew_threshold`` in absolute value, else t. Below
    ``bootstrap_from`` replications the bootstrap's intervals are too narrow (they resample k values and use the
    plug-in spread): measured on the default JSQ-PS config's 99th percentiles, 400 replications per cell in groups
    of 5, BCa covered exact's value 74–89 % of the time and Student t 91–99 % (``benchmarks/ci_coverage.py``).
    NaN entries (missing cells) give NaN.

    ``present`` (bool, broadcastable to ``x``): which replication entries exist. Cells of a precision-driven
    run have different replication counts, padded to a common ``replication`` axis
    (:mod:`sojourn.core.estimates.precision`); each row's interval is then over its own k present entries (rows of
    equal k together; a NaN among them still gives NaN, padding never counts). Rows with every entry
    present are computed exactly as without ``present``.
    """
    x = np.asarray(x, dtype=float)
    if present is None:
        return _interval(x, cfg, seed)
    pres = np.broadcast_to(np.asarray(present, dtype=bool), x.shape)
    if pres.all():
        return _interval(x, cfg, seed)
    lead, K = x.shape[:-1], x.shape[-1]
    flat, pf = x.reshape(-1, K), pres.reshape(-1, K)
    n = pf.sum(axis=1)
    mean, low, high = (np.full(len(flat), np.nan) for _ in range(3))
    method = np.full(len(flat), CI_T, dtype=np.int8)
    for k in np.unique(n):
        if k == 0:
            continue
        rows = np.flatnonzero(n == k)
        sub = flat[rows][pf[rows]].reshape(len(rows), int(k))  # row-major: each row's entries in order
        res = _interval(sub, cfg, seed if k == K else [seed, int(k)])
        for out, r in zip((mean, low, high, method), res, strict=True):
            out[rows] = r
    return mean.reshape(lead), low.reshape(lead), high.reshape(lead), method.reshape(lead)


def _interval(x: np.ndarray, cfg: dict, seed):
    lead = x.shape[:-1]
    k = x.shape[-1]
    conf = float(cfg["confidence"])
    mean, half = mean_ci(np.moveaxis(x, -1, 0), confidence=conf, axis=0)
    mean = np.asarray(mean, dtype=float).reshape(lead)
    half = np.asarray(half, dtype=float).reshape(lead)
    low, high = mean - half, mean + half
    method = np.full(lead, CI_T, dtype=np.int8)
    if k < 3 or cfg["ci"] == "t" or (cfg["ci"] == "auto" and k < int(cfg.get("bootstrap_from", BOOTSTRAP_FROM))):
        return mean, low, high, method
    from scipy import stats as st  # skewness and the bootstrap (imported only here: ~1 s)

    flat = x.reshape(-1, k)
    ok = np.all(np.isfinite(flat), axis=1) & (np.ptp(flat, axis=1) > 0) if flat.size else np.zeros(0, bool)
    if cfg["ci"] == "bootstrap":
        want = ok
    else:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not np.isnan(flat).any():
                skew = np.abs(st.skew(flat, axis=1, bias=False))
            else:
                # with a NaN present scipy falls back to a row-by-row Python loop (~85% of the whole
                # comparison's run time on the paper grid, whose gaps are NaN). Only complete rows
                # can be bootstrapped: their skewness, vectorised; the 2-D reduction may differ from
                # the per-row one in the last bit, so rows at the threshold are decided per row.
                skew = np.full(len(flat), np.nan)
                if ok.any():
                    skew[ok] = np.abs(st.skew(flat[ok], axis=1, bias=False))
                    near = np.flatnonzero(ok & (np.abs(skew - float(cfg["skew_threshold"])) < 1e-9))
                    for r in near:
                        skew[r] = np.abs(st.skew(flat[r], bias=False))
        want = ok & (k >= int(cfg.get("bootstrap_from", BOOTSTRAP_FROM))) & (np.nan_to_num(skew) > float(
            cfg["skew_threshold"]))
    if not want.any():
        return mean, low, high, method
    rows = flat[want]
    rng = np.random.default_rng(seed)
    lo, hi = np.empty(len(rows)), np.empty(len(rows))
    step = max(1, int(2e7 // (int(cfg["n_resamples"]) * k)))  # rows per call: bounded memory (~160 MB)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for a in range(0, len(rows), step):
            res = st.bootstrap((rows[a:a + step],), np.mean, vectorized=True, axis=-1,
                               n_resamples=int(cfg["n_resamples"]), confidence_level=conf, method="BCa", rng=rng)
            lo[a:a + step], hi[a:a + step] = res.confidence_interval.low, res.confidence_interval.high
    good = np.isfinite(lo) & np.isfinite(hi)
    idx = np.flatnonzero(want)[good]
    lflat, hflat, mflat = low.reshape(-1), high.reshape(-1), method.reshape(-1)
    lflat[idx], hflat[idx], mflat[idx] = lo[good], hi[good], CI_BOOTSTRAP
    return mean, lflat.reshape(lead), hflat.reshape(lead), mflat.reshape(lead)


#: names of the ``*_ci_method`` flag values, as printed
CI_NAMES = {CI_T: "t", CI_BOOTSTRAP: "BCa"}


def ci_decimals(value, low, high, digits: int = 2):
    """Decimal places at which the CI's larger half-width shows ``digits`` significant digits (negative: round
    to tens, hundreds …); None without a finite, non-zero width."""
    half = max(abs(high - value), abs(value - low), (high - low) / 2.0)
    if not (np.isfinite(half) and half > 0):
        return None
    return digits - 1 - int(np.floor(np.log10(half)))


def _fixed(x: float, decimals: int) -> str:
    return f"{x:.{decimals}f}" if decimals >= 0 else f"{round(x, decimals):.0f}"


#: what a percentile printed by :func:`format_with_ci` with ``(bin)`` means (the CLIs print it once)
BIN_NOTE = ("'± dt (bin)': the CI is narrower than the histogram's bin width dt, which then bounds the error "
            "(the percentile interpolates the CDF linearly within its bin); a smaller --dt gives more digits")


def format_with_ci(value, low, high, digits: int = 2, resolution: float | None = None) -> str:
    """``value`` with as many digits as its CI [low, high] supports: the half-width to ``digits`` significant
    digits and the value rounded at the same decimal place, never finer than ``resolution`` (e.g. the bin width
    of the histogram a percentile comes from). ``"2.277 ± 0.041"`` when the rounded interval is symmetric (a
    t-interval), else ``"14.2 [13.9, 14.6]"`` (e.g. BCa); without a CI (NaN ends, one replication) 3
    significant digits and ``"(no CI)"``; ``"n/a"`` for a NaN value.

    With a ``resolution``, a CI narrower than it (larger half-width < resolution, including zero width: every
    replication in one bin) is not the error of the value: the histogram's resolution is. It prints as
    ``"0.60 ± 0.01 (bin)"``, ± the resolution (:data:`BIN_NOTE`), never ``"± 0.00"``."""
    value, low, high = float(value), float(low), float(high)
    if not np.isfinite(value):
        return "n/a"
    if not (np.isfinite(low) and np.isfinite(high)):
        return f"{value:.3g} (no CI)"
    coarsest = None if resolution is None else -int(np.floor(np.log10(resolution)))
    half = max(abs(high - value), abs(value - low), (high - low) / 2.0)
    if resolution is not None and half < resolution:  # the bin, not the replications, limits the estimate
        d = min(ci_decimals(value, value - resolution, value + resolution, digits), coarsest)
        return f"{_fixed(value, d)} ± {_fixed(resolution, d)} (bin)"
    d = ci_decimals(value, low, high, digits)
    if d is None:  # every replication gave the same value
        return f"{value:.6g} ± 0"
    if coarsest is not None:
        d = min(d, coarsest)
    v, lo, hi = (_fixed(x, d) for x in (value, low, high))
    up, down = _fixed(high - value, d), _fixed(value - low, d)
    return f"{v} ± {up}" if up == down else f"{v} [{lo}, {hi}]"


#: customers per replication that must lie beyond a percentile for it to be reported (fewer: the percentile of
#: a replication is biased towards its largest values, at 0 it is the sample maximum)
TAIL_MIN = 100


def percentiles_per_replication(count, overflow, t, dt, p):
    """Each replication's percentiles and how many of its customers lie beyond them.

    ``count`` (replication, t) histogram with bins [t_i, t_i + dt), ``overflow`` (replication,); ``p`` the
    probabilities. Returns (x, beyond), both (replication, P): x the percentile interpolated within its bin
    (:func:`histogram_quantile`; NaN past the grid) and beyond the number of the replication's customers at or
    beyond the right edge of x's bin (its overflow where x is NaN).
    """
    count = np.asarray(count, dtype=np.int64)
    overflow = np.asarray(overflow, dtype=np.int64)
    p = np.atleast_1d(np.asarray(p, dtype=float))
    cum = np.cumsum(count, axis=-1)
    total = cum[..., -1] + overflow
    with np.errstate(invalid="ignore", divide="ignore"):
        F = cum / total[..., None]
    x = histogram_quantile(F, t, dt, p)
    above = F[..., None, :] > p.reshape(-1, 1)  # (rep, P, t): x's bin is the first with F > p
    found = above.any(axis=-1)
    idx = np.argmax(above, axis=-1)
    below = np.take_along_axis(cum, idx, axis=-1)  # customers in bins up to x's
    beyond = np.where(found, total[..., None] - below, overflow[..., None])
    return x, beyond.astype(np.int64)
