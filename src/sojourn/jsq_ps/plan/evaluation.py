"""How ``sojourn plan`` evaluates one R: the engine chosen (exact, an approximation, or simulation), the simulated
evidence and its intervals, and the replications run on the cell runner's local executor (forked processes)."""
from __future__ import annotations

import contextlib
import math
import multiprocessing
from dataclasses import dataclass

from .request import SIMULATION, TAIL_METHOD


# -- evaluations ------------------------------------------------------------------------------------
@dataclass
class Engine:
    """How P(T ≤ d) is obtained for one R: ``exact``, an approximation, or ``simulation``, and why."""

    method: str
    reason: str
    error: tuple = (math.nan, math.nan, math.nan)  # the method's measured relative error: mean, CI low, high
    table: dict | None = None  # table_R, table_rho, table_percentile, extrapolated
    short: str = ""  # the reason in a few words (a table cell)
    details: dict | None = None  # T: its margin at the asked level and its caps (D, M, states)


@dataclass
class Simulated:
    """A simulated R: P(T ≤ d) and the p-percentile (mean service times), each with a 95 % t-interval across
    replications (percentile inf: beyond the histogram in some replication)."""

    replications: int
    customers: float  # mean recorded customers per replication
    horizon: float
    warmup: float
    probability: float
    probability_low: float
    probability_high: float
    percentile: float
    percentile_low: float
    percentile_high: float
    t_max: float
    wall_time: float
    seed: int
    #: the lower 95 % bound of the geometric mean of the replications' P(T > d) (NaN if one saw none beyond d)
    tail_geometric_low: float = math.nan
    #: the run-length guard's verdict (sojourn.core.estimates.runlength) and its predicted relative standard error of
    #: the mean
    run_valid: bool = True
    run_relative_se: float = math.nan

    def verdict(self, p: float) -> str:
        meets = self.probability >= p
        if meets:
            clear = self.probability_low >= p
        else:  # fails clearly if the mean's interval lies below p, or the geometric mean of the tail
            # probabilities is surely above 1 − p (E log P̂ ≤ log E P̂: a lower bound of the one bounds the other;
            # on the log scale a heavy-tailed spread across replications, as near ρ = 1, narrows far less)
            clear = self.probability_high < p or self.tail_geometric_low > 1.0 - p
        return ("meets" if meets else "fails") + ("" if clear else "_within_noise")


@dataclass
class Evaluation:
    R: int
    rho: float
    engine: Engine
    probability: float  # P(T ≤ d): the method's, or the simulated mean
    percentile: float  # mean service times; inf beyond the evaluated range (> percentile_above)
    percentile_above: float = math.nan
    simulated: Simulated | None = None
    seconds: float = 0.0
    #: the largest true P(T ≤ d) the method's own bound admits (T: 1 − its lower survival bound at d; exact: its
    #: certified upper bound); NaN: none
    probability_high: float = math.nan
    #: the smallest (exact: its certified lower bound; T: its P(T ≤ d) itself); NaN: none
    probability_low: float = math.nan

    def meets(self, p: float) -> bool:
        return self.probability >= p

    def margin(self, p: float, d: float) -> str:
        """Whether the verdict (meets or fails at deadline ``d``, mean service times) survives the evidence's
        uncertainty: ``clear``; ``within_noise`` (a simulation whose 95 % interval of P(T ≤ d) contains p);
        ``within_method_error`` (an approximation whose true percentile x/(1 + e), e in its measured error's
        95 % CI, may lie on the other side of d; T: a "fails" whose bound admits a true P(T ≤ d) ≥ p; exact: p
        within its certified bounds of P(T ≤ d));
        ``unmeasured`` (an approximation without a measured error). T's "meets" is always clear: its P(T ≤ d) is
        a lower bound of the true one (:mod:`sojourn.jsq_ps.solve.tail`)."""
        if self.engine.method == "bound":  # a certified lower bound of P(T ≤ d) (Planner.bound)
            return "clear"
        if self.simulated is not None and self.engine.method == SIMULATION:
            return "clear" if not self.simulated.verdict(p).endswith("within_noise") else "within_noise"
        if self.engine.method == "exact":  # unless p lies within its certified bounds (≲ 1e-9 apart)
            straddles = self.probability_low < p <= self.probability_high
            return "within_method_error" if straddles else "clear"
        if self.engine.method == TAIL_METHOD:  # (T with a general law, "T-law", has a measured error: below)
            if self.meets(p):
                return "clear"
            return "clear" if self.probability_high < p else "within_method_error"
        _, lo, hi = self.engine.error
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "unmeasured"
        x = self.percentile if math.isfinite(self.percentile) else self.percentile_above
        if self.meets(p):  # the largest true percentile the measured error allows must still be <= d
            return "clear" if lo > -1.0 and x / (1.0 + lo) <= d else "within_method_error"
        return "clear" if x / (1.0 + hi) > d else "within_method_error"


def _interp_percentile(t, F, p) -> float:
    """First crossing of p by F on the grid t, linear within the crossing step
    (:func:`sojourn.core.estimates.stats.quantile`,
    the simulated percentile's rule too); inf if F never exceeds p."""
    from ...core.estimates.stats import quantile

    x = float(quantile(t, F, p))
    return x if x == x else math.inf




def _replication(spec, k, *, seed, horizon, warmup, dt, t_max):
    """Replication k's (count, overflow) (a worker process's task: only arrays travel back)."""
    from ..raw import histogram  # the kernel without xarray (sojourn.jsq_ps.raw)

    return histogram(spec, k, seed, horizon, warmup, dt, t_max)


def simulate_counts(spec, replications: int, seed: int, horizon: float, warmup: float, dt: float, t_max: float,
                    workers: int = 1, first: int = 0, pool=None):
    """(count (replication, t), overflow (replication,), t) of replications first..first+replications−1 of
    ``spec`` (:func:`sojourn.core.estimates.replications.replicate`) on a local executor of the cell runner: ``workers``
    forked processes when there are several cores (else this one). Replication k's stream depends only on
    (seed, spec, k) (``sojourn.core.laws.seeds``): the counts are the same whatever ``workers`` and whatever batches
    the replications are run in. ``pool``: a fork-context process pool to run them in (kept across calls by
    :class:`Planner`), else one made for this call. The replications before ``first`` are the caller's (its
    earlier stages): only the new ones run."""
    import numpy as np

    from ...core.checks.timegrid import time_grid
    from ...core.estimates.replications import replicate
    from ...core.runs.runner import LocalExecutor

    workers = max(1, min(int(workers), replications))
    fork = workers > 1 and "fork" in multiprocessing.get_all_start_methods()
    own = fork_pool(workers, spec, seed, dt, t_max) if fork and pool is None else None
    with own if own is not None else contextlib.nullcontext():  # an exception (Ctrl-C) kills its workers
        executor = LocalExecutor((pool or own) if fork else None)
        shared = dict(seed=seed, horizon=horizon, warmup=warmup, dt=dt, t_max=t_max)

        def run(requests):
            return executor.map(_replication, [(spec, k) for _, k in requests],
                                [f"plan-rep{k}" for _, k in requests], "replications", kwargs=shared)

        (parts,), _ = replicate(run, [0], replications=replications, offset=first)
    return (np.stack([c for c, _ in parts]), np.array([o for _, o in parts], np.int64), time_grid(t_max, dt))


def fork_pool(workers: int, spec, seed: int, dt: float, t_max: float):
    """A pool of ``workers`` forked processes that start with the numba kernel loaded: it is loaded here first (a
    tiny run of ``spec``), and forked workers inherit it instead of each loading numba's cache. They end with this
    process (:class:`sojourn.core.cluster.processes.OwnedPool`)."""
    from ...core.cluster.processes import OwnedPool

    _replication(spec, 0, seed=seed, horizon=2.0 / spec.arrival_rate, warmup=0.0, dt=dt, t_max=t_max)
    return OwnedPool(workers, "fork")


class NoServers(ValueError):
    """No R ≤ max_servers meets the target (found by computing: the one refusal that is not up front)."""


def _clopper_pearson(k: int, n: int, confidence: float = 0.95):
    """Exact binomial interval of k successes in n (Clopper & Pearson 1934): beta quantiles."""
    from scipy.special import betaincinv  # the beta quantile (scipy.stats.beta.ppf) without scipy.stats

    a = (1.0 - confidence) / 2.0
    lo = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, a))
    hi = 1.0 if k == n else float(betaincinv(k + 1, n - k, 1.0 - a))
    return lo, hi
