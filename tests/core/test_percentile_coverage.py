"""Simulated percentiles and their 95 % intervals cover the exact percentile about 95 % of the time (issue 26,
item 3).

Exact cases, each simulated the way the CLIs summarise it (every replication's own percentile from its
histogram, interpolated within its bin by :func:`sojourn.core.estimates.stats.percentiles_per_replication`; the
Student-t
interval across the replications, :func:`sojourn.core.estimates.stats.mean_ci`):

* M/M/1-PS (``jsq_ps``, R = 1): the sojourn law of :mod:`sojourn.jsq_ps.solve.mm1ps`;
* M/M/1 FCFS and Erlang C M/M/c (``split_merge`` with r = 1, and n = 10, r = 2, q = 1: c = 5 servers of
  rate 2, the issue's example): :func:`sojourn.split_merge.solve.exact_results`;
* M/PH/1 by Pollaczek-Khinchine with the exact order statistic as service time (n = r: one super-server;
  exponential 2-of-3, Erlang 2-of-2, hyperexponential 1-of-2 replicas).

Each at loads 0.5 and 0.8, 20 seeds: 280 seeded cases, 10 replications of 20 000 customers each, the 50th, 90th
and 99th percentiles (840 intervals). The bin width is coarse on purpose, dt = 5 % of the mean: the old
percentile, the right edge of the bin, is biased up by up to dt and covers far less often (the power check).

Measured (this file: ``pytest -q tests/core/test_percentile_coverage.py``, 840 intervals): coverage 0.935
(p50 0.939, p90 0.929, p99 0.936); the right-edge percentile covered 0.612 (p50 0.189); the printed intervals
(± dt where the CI is narrower than the bin) cover 0.968. What keeps it a little under 0.95 is the run length,
not the bin: over 40 seeds it is 0.938 at dt = 1 % of the mean and 0.939 at 5 %, and 0.950 with 80 000 customers
per replication (a short replication's percentile is slightly biased). At load 0.9 the 99th percentile of
20 000-workunit replications is biased low by about one standard error (mean z −0.8 to −1.3 over 60 seeds;
−0.4 to −0.5 at 80 000 workunits; a 10 000-workunit warm-up does not help): a run-length effect too, so 0.9 is
not among the cases.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from sojourn.core.estimates.stats import cdf_from_histogram, mean_ci, percentiles_per_replication
from sojourn.jsq_ps.model import JSQPS
from sojourn.jsq_ps.simulate import simulate as simulate_ps
from sojourn.jsq_ps.solve.mm1ps import mm1ps_sojourn_cdf
from sojourn.split_merge.model import SplitMerge
from sojourn.split_merge.simulate import simulate as simulate_sm
from sojourn.split_merge.solve import exact_results

PS = np.array([0.5, 0.9, 0.99])
LOADS = (0.5, 0.8)
SEEDS = range(20)
REPLICATIONS, CUSTOMERS = 10, 20_000
#: (n, r, q, replica law) of split-merge whose latency law is exact (Erlang C for c > 1, P-K for c = 1)
SPLIT_MERGE = ((1, 1, 1, "exponential"), (4, 1, 1, "exponential"), (10, 2, 1, "exponential"),
               (3, 3, 2, "exponential"), (2, 2, 2, "erlang"), (2, 2, 1, "hyperexponential"))


def _grid(mean):
    dt = round(0.05 * mean, 3)
    return dt, dt * math.ceil(20 * mean / dt)


def _cases():
    """(name, exact percentiles, dt, histograms (count, overflow, t) per seed)."""
    for load in LOADS:
        exact = np.array(
            [brentq(lambda x, a, p: float(mm1ps_sojourn_cdf(a, 1.0, x)) - p, 0.0, 1e3, args=(load, p)) for p in PS]
        )
        dt, t_max = _grid(1.0 / (1.0 - load))
        horizon = CUSTOMERS / load
        for seed in SEEDS:
            ds = simulate_ps(JSQPS.from_rho(1, load), horizon=1.1 * horizon, warmup=0.1 * horizon, cooldown=0.0,
                             replications=REPLICATIONS, seed=seed, dt=dt, t_max=t_max)
            yield f"M/M/1-PS {load}", exact, dt, (ds["count"].values, ds["overflow"].values, ds["t"].values)
        for n, r, q, law in SPLIT_MERGE:
            spec = SplitMerge.from_rho(n, r, q, load, law)
            e = exact_results(spec, PS)
            assert e["exact"] and e["delay_method"] in ("erlang-c", "pollaczek-khinchine"), e  # not the QBD
            dt, t_max = _grid(e["mean_latency"])
            for seed in SEEDS:
                ds = simulate_sm(spec, workunits=CUSTOMERS, replications=REPLICATIONS, seed=seed, dt=dt, t_max=t_max)
                yield (f"split-merge {n},{r},{q} {law} {load}", np.asarray(e["latency_percentile"]), dt,
                       (ds["latency_count"].values, ds["latency_overflow"].values, ds["t"].values))


def _right_edge(count, overflow, t, dt):
    """The percentile before issue 26: the first right bin edge with F > p."""
    above = cdf_from_histogram(count, overflow)[..., None, :] > PS[:, None]
    return (t + dt)[np.argmax(above, axis=-1)]


@pytest.fixture(scope="module")
def intervals():
    rows = []
    for name, exact, dt, (count, overflow, t) in _cases():
        x, beyond = percentiles_per_replication(count, overflow, t, dt, PS)
        assert np.isfinite(x).all() and (beyond >= 100).all(), name  # every percentile is estimable
        m, h = mean_ci(x)
        mo, ho = mean_ci(_right_edge(count, overflow, t, dt))
        rows.append((np.abs(m - exact) <= h, np.abs(mo - exact) <= ho, np.abs(m - exact) <= np.maximum(h, dt)))
    return np.array(rows)  # (case, {interpolated, right edge, printed}, percentile)


def test_the_95_percent_intervals_cover_the_exact_percentiles(intervals):
    assert len(intervals) >= 50
    cover = intervals[:, 0].mean()
    assert 0.90 <= cover <= 0.99, f"coverage {cover:.3f} over {intervals[:, 0].size} intervals"
    assert (intervals[:, 0].mean(axis=0) >= 0.85).all(), intervals[:, 0].mean(axis=0)  # no percentile left out


def test_the_right_bin_edge_did_not_and_the_printed_interval_does(intervals):
    # power: the same data with the right edge as the percentile covers far less often (its bias is up to dt)
    assert intervals[:, 1].mean() < 0.8, intervals[:, 1].mean()
    # the printed interval (± dt where the CI is narrower than the bin) covers at least as often
    assert intervals[:, 2].mean() >= intervals[:, 0].mean()
