"""Summaries of simulated replications: means with Student-t CIs across replications, percentiles.

A percentile's CI: the percentile of every replication's own histogram (interpolated within its bin), then a
t-interval across the replications (the replications are iid, each percentile estimate is one observation).
"""
from __future__ import annotations

import numpy as np
import xarray as xr

from ..core.checks.config import DEFAULT_CONFIDENCE
from ..core.estimates.stats import (
    TAIL_MIN,
    cdf_from_histogram,
    histogram_quantile,
    mean_ci,
    percentiles_per_replication,
)


def percentile_per_replication(ds: xr.Dataset, var: str, p) -> np.ndarray:
    """(replication, p) percentiles of ``var`` ('delay' | 'latency') from each replication's histogram
    (interpolated within the bin where F first exceeds p, :func:`sojourn.core.estimates.stats.histogram_quantile`; NaN
    beyond t_max)."""
    F = cdf_from_histogram(ds[f"{var}_count"].values, ds[f"{var}_overflow"].values)
    return histogram_quantile(F, ds["t"].values, float(ds.attrs["dt"]), np.atleast_1d(np.asarray(p, dtype=float)))


def summarize(ds: xr.Dataset, percentiles=(0.99,), confidence: float = DEFAULT_CONFIDENCE) -> dict:
    """Means (delay, latency, utilisation, throughput) and latency percentiles, each (mean, half-width); with
    ``latency_beyond`` (workunits per replication at or beyond each percentile, on average) and
    ``latency_too_few`` (True where fewer than ``sojourn.core.estimates.stats.TAIL_MIN`` per replication, or none in
    some
    replication, lie beyond: too few to estimate the percentile, whatever its half-width says)."""
    out = {"replications": int(ds.sizes["replication"]), "confidence": float(confidence)}
    for v in ("mean_delay", "mean_latency", "host_utilisation", "host_computing", "throughput"):
        m, h = mean_ci(ds[v].values, confidence=confidence)
        out[v] = (float(m), float(h))
    ps = np.atleast_1d(np.asarray(percentiles, dtype=float))
    per, beyond = percentiles_per_replication(ds["latency_count"].values, ds["latency_overflow"].values,
                                              ds["t"].values, float(ds.attrs["dt"]), ps)
    m, h = mean_ci(per, confidence=confidence)
    out["percentiles"] = ps
    out["latency_percentile"] = (np.atleast_1d(m), np.atleast_1d(h))
    out["latency_beyond"] = beyond.mean(axis=0)
    out["latency_too_few"] = (beyond.mean(axis=0) < TAIL_MIN) | (beyond == 0).any(axis=0)
    return out
