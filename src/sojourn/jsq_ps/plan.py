"""``sojourn plan``: the least number of servers R with P(T ≤ d) ≥ p for R processor-sharing servers behind
join-the-shortest-queue, and the evidence for it (issue 14).

The question. Poisson arrivals at rate Λ, service requirements of mean E[S] (exponential unless a
``service_law`` is given), a deadline d on the sojourn time T (or a budget minus a network latency), a
reliability p: which is the least R with P(T ≤ d) ≥ p? Time is measured in mean service times inside
(μ = 1, offered load a = Λ·E[S], d/E[S]); answers are printed in the user's units.

Refused before any compute, naming the field (flag): p ∉ (0, 1) (p = 1 is no finite R's: the sojourn time
is unbounded); a deadline the service requirement alone misses, P(S ≤ d) ≤ p (T ≥ S on every path: a PS
server serves at most at rate 1); a load no R ≤ ``max_servers`` keeps stable (R > a is needed); any dispatch
but ``jsq`` (the only one the methods model); malformed times and rates.

How R is found.

1. Screen: the least R ≥ ⌊a⌋ + 1 (the least stable R) whose P(T ≤ d) ≥ p by a cheap method (C*, Gupta's
   λ_n and the birth–death occupancy, no whole-system chain: milliseconds at any R), galloping then
   bisecting on R.
2. Decide with the chosen method for each R (:meth:`Planner.engine`): ``exact`` (the tagged-customer
   chain) where it runs within a small budget (:data:`EXACT_MAX_LOAD`, measured by ``benchmarks/plan.py``);
   else the most accurate non-optimistic approximation at (R, ρ, p) of the accuracy table
   (:mod:`sojourn.jsq_ps.accuracy`, conservative between rows); where every method is optimistic there,
   the table has nothing usable, p is beyond its percentiles, or the service law is not exponential (the
   methods model M/M/R), simulate. From the screened R go down (if R − 1 meets too) or up (galloping) to a
   bracket and bisect it; the answer's R − 1 is always evaluated and fails (each R has its own method, so
   "meets" need not be monotone in R). The table shows R − 1, R, R + 1; a verdict inside its evidence's
   uncertainty is marked (:meth:`Evaluation.margin`: a simulation's 95 % interval of P(T ≤ d) contains p, or
   the method's measured error interval could put the true percentile on the other side of d).
3. ``confirm``: simulate R − 1, R, R + 1 (the numba kernel; replication k of each R from
   ``sojourn.core.seeds``, the replications spread over forked processes, one per core) and move R until the
   simulation agrees: the answer is never an R whose simulated P(T ≤ d) is below p, and goes down where the
   method was pessimistic; where a 95 % interval contains p the answer says that the margin is inside the
   simulation noise.

Simulation run length (:func:`run_length`): n = max(⌈100/(1 − p)⌉, 10 000) recorded customers per
replication, so that about 100 of them lie beyond the p-percentile in every replication; warm-up
max(10 τ, 5 % of the recording window) with τ = 1/(R μ (1 − √ρ)²), the relaxation time of the M/M/R
queue (Morse 1955), starting empty. Replications, in stages (:meth:`Planner.simulate`): a decision needs
only to know on which side of p the simulated P(T ≤ d) lies, so :data:`FIRST_STAGE` = 4 replications are run
first (one round on 2 cores), then twice as many, up to :data:`DEFAULT_REPLICATIONS` = 10 (``--replications``),
stopping as soon as the verdict is clear (:meth:`Simulated.verdict`: the 95 % interval of P(T ≤ d) excludes p;
for a failing R also the interval of the geometric mean of the replications' P(T > d), a t-interval on the log
scale, lying above 1 − p). At the first stage t = 3.18 (3 degrees of freedom): a verdict that survives it is
far from p, as most R on the way to the answer are.
``--confirm`` runs all of them for R − 1, R, R + 1; stages only add replications k = n, n + 1, … whose
streams depend on k alone, so a staged R extended to 10 is exactly a 10-replication run. P(T ≤ d) is read
exactly at d (a histogram edge), the percentile to 1/1000 of d.

Python: ``sojourn.plan(arrival_rate="9000/s", mean_service="1.2ms", deadline="72ms", reliability=0.9999)``
→ :class:`PlanResult` (``.servers``, ``.rows``, ``.notes``, ``.dataset`` an ``xarray.Dataset``,
``.to_dict()``, ``.table()``); numbers given for times are seconds, for rates per second.
"""
from __future__ import annotations

import json
import math
import multiprocessing
import os
import time
from dataclasses import dataclass, field

from ..core.units import SECONDS, format_time, parse_rate, parse_time, readable_unit, time_unit
from ..core.validate import integer_at_least

DEFAULT_MAX_SERVERS = 64
#: replications of a simulated R: at most (see the module doc and :func:`replications_for`), and the first
#: stage (then doubling) while the 95 % interval of P(T ≤ d) still contains p
DEFAULT_REPLICATIONS = 10
FIRST_STAGE = 4
#: customers beyond the percentile per replication, and the least recorded customers per replication
TAIL_CUSTOMERS, MIN_CUSTOMERS = 100, 10_000
#: the screening method: Gupta's λ_n with the birth-death occupancy (no whole-system chain)
SCREEN_METHOD = "C*"
#: ``exact`` runs where ρ ≤ this for R servers, and (R ≥ 3) the grid ends within EXACT_MAX_T mean service
#: times: there one evaluation costs ≲ 0.25 s of CPU (``python benchmarks/plan.py exact``, t ≤ 80: R = 1 at
#: ρ = 0.99 0.03 s, R = 2 at 0.95 0.06 s, R = 3 at 0.8 0.15 s, R = 4 at 0.6 0.09 s, R = 5 at 0.5 0.20 s, R = 6 at
#: 0.4 0.24 s, R = 7 at 0.3 0.08 s; the next load step costs 0.22-0.46 s)
EXACT_MAX_LOAD = {1: 0.99, 2: 0.95, 3: 0.80, 4: 0.60, 5: 0.50, 6: 0.40, 7: 0.30}
EXACT_MAX_T = 100.0
#: the exact module's own budget (``analytic.budget``, predicted from its truncation before the costly part):
#: a safety net where a long grid makes a cell of EXACT_MAX_LOAD dearer than measured
EXACT_SECONDS = 1.0
SIMULATION = "simulation"
#: the names of the request's fields in messages: the API's, or the command line's (``FLAGS``)
FIELDS = {k: k for k in ("arrival_rate", "load", "servers", "mean_service", "service_rate", "service_law",
                         "deadline", "budget", "network_latency", "reliability", "dispatch", "max_servers",
                         "replications", "seed", "unit", "accuracy")}
FLAGS = {k: "--" + k.replace("_", "-") for k in FIELDS}


def replications_for(reliability: float) -> int:
    """The most replications of a simulated R (all of them under ``--confirm``; without it the stages of
    :meth:`Planner.simulate` stop as soon as the verdict is clear)."""
    return DEFAULT_REPLICATIONS


def run_length(servers: int, load: float, reliability: float) -> dict:
    """Horizon, warm-up and recorded customers of one simulated replication, in mean service times (the
    rule of the module doc)."""
    customers = max(math.ceil(TAIL_CUSTOMERS / (1.0 - reliability) - 1e-9), MIN_CUSTOMERS)
    rate = servers * load  # arrivals per mean service time
    window = customers / rate
    tau = 1.0 / (servers * (1.0 - math.sqrt(load)) ** 2)  # M/M/R relaxation time (Morse 1955), μ = 1
    warmup = max(10.0 * tau, 0.05 * window)
    return {"customers": customers, "window": window, "warmup": warmup, "horizon": warmup + window,
            "relaxation_time": tau}


# -- the request ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    """A validated question, in SI units (seconds, per second) and in mean service times."""

    arrival_rate: float
    mean_service: float
    service_law: str
    law: object  # the service law scaled to mean 1
    deadline: float
    reliability: float
    max_servers: int
    confirm: bool
    replications: int
    seed: int
    unit: str
    budget: float | None = None
    network_latency: float | None = None
    current_servers: int | None = None
    accuracy: str | None = None
    texts: dict = field(default_factory=dict)

    @property
    def offered(self) -> float:
        """a = Λ·E[S]: the mean number of busy servers, in servers."""
        return self.arrival_rate * self.mean_service

    @property
    def d(self) -> float:
        """The deadline in mean service times."""
        return self.deadline / self.mean_service

    @property
    def min_stable(self) -> int:
        """The least R with load a/R < 1."""
        return stable_from(self.offered)

    @property
    def exponential(self) -> bool:
        from ..core.distributions import Exponential

        return isinstance(self.law, Exponential)


def stable_from(offered: float) -> int:
    R = int(math.floor(offered)) + 1
    while offered / R >= 1.0:  # round-off at an integer a
        R += 1
    return R


def _reliability(value, name: str) -> float:
    text = value
    if isinstance(value, str):
        s = value.strip()
        try:
            value = float(s[:-1]) / 100.0 if s.endswith("%") else float(s)
        except ValueError:
            raise ValueError(f"{name} must be a probability such as 0.9999 or 99.99%; got {text!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a probability such as 0.9999 or 99.99%; got {text!r}")
    if value >= 1.0:
        raise ValueError(f"{name} must be < 1; got {text!r}: no finite number of servers meets the deadline with "
                         "certainty (the sojourn time is unbounded: any customer may meet a long queue)")
    if value <= 0.0:
        raise ValueError(f"{name} must be in (0, 1); got {text!r}")
    return float(value)


def _service_cdf(law, x: float) -> float:
    """P(S ≤ x) for a law of mean 1 (exponential in closed form: no scipy.stats import on the fast path)."""
    from ..core.distributions import Exponential

    if isinstance(law, Exponential):
        return -math.expm1(-law.rate * x)
    return float(law.cdf(x))


def _service_quantile(law, p: float) -> float:
    """The p-quantile of a law of mean 1: bisection on its CDF (every law here has one)."""
    from ..core.distributions import Exponential

    if isinstance(law, Exponential):
        return -math.log1p(-p) / law.rate
    lo, hi = 0.0, 1.0
    while _service_cdf(law, hi) < p and hi < 1e12:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _service_cdf(law, mid) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


def check_request(*, arrival_rate=None, load=None, servers=None, mean_service=None, service_rate=None,
                  service_law="exponential", deadline=None, budget=None, network_latency=None, reliability=None,
                  dispatch="jsq", max_servers=DEFAULT_MAX_SERVERS, confirm=False, replications=None, seed=0,
                  unit=None, accuracy=None, names=FIELDS) -> Request:
    """Every input checked (ValueError naming the field as ``names`` spells it) before any compute."""
    n = names
    texts = {}
    disp = str(dispatch).strip().lower() if isinstance(dispatch, str) else dispatch
    if disp != "jsq":
        from ..core.inputs import did_you_mean

        raise ValueError(f"{n['dispatch']} {dispatch!r}: only jsq is modelled (the approximations and the exact chain "
                         "are for join-the-shortest-queue); other dispatch policies can be simulated with "
                         f"`sojourn simulate --dispatch …`{did_you_mean(str(dispatch), ['jsq'])}")
    if reliability is None:
        raise ValueError(f"{n['reliability']} is required: the share of customers that must meet the deadline, "
                         "e.g. 0.9999")
    p = _reliability(reliability, n["reliability"])
    # service
    if (mean_service is None) == (service_rate is None):
        raise ValueError(f"give exactly one of {n['mean_service']} (e.g. 1.2ms) and {n['service_rate']} "
                         "(e.g. 833/s)")
    if mean_service is not None:
        q = parse_time(mean_service, n["mean_service"])
        mean = q.si
        texts["service"] = f"mean service {format_time(mean, q.unit if q.unit in SECONDS else None)}"
    else:
        q = parse_rate(service_rate, n["service_rate"])
        mean = 1.0 / q.si
        texts["service"] = f"service rate {q.text} (mean {format_time(mean)})"
    # arrivals
    current = None
    if arrival_rate is not None:
        if load is not None or servers is not None:
            raise ValueError(f"give either {n['arrival_rate']} or {n['load']} with {n['servers']}, not both")
        lam = parse_rate(arrival_rate, n["arrival_rate"])
        Lam = lam.si
        texts["arrivals"] = f"arrival rate {lam.text}"
    else:
        if load is None or servers is None:
            raise ValueError(f"give {n['arrival_rate']} (e.g. 9000/s), or {n['load']} together with {n['servers']} "
                             "(the load at a number of servers you run now)")
        current = integer_at_least(n["servers"], servers, 1)
        rho = load
        if isinstance(rho, str):
            try:
                rho = float(rho)
            except ValueError:
                raise ValueError(f"{n['load']} must be a number > 0; got {load!r}") from None
        if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not math.isfinite(rho) or rho <= 0:
            raise ValueError(f"{n['load']} must be a number > 0 (it may be >= 1: an overloaded system); got {load!r}")
        Lam = float(rho) * current / mean
        texts["arrivals"] = f"load {float(rho):g} at {current} servers (arrival rate {Lam:.6g}/s)"
    # the service law, rescaled to mean 1 (time in mean service times)
    from ..core.distributions import parse_law

    if not isinstance(service_law, str):
        raise ValueError(f"{n['service_law']} must be a law string such as 'lognormal:sigma=0.69'; got {service_law!r}")
    try:
        law = parse_law(service_law).scaled_to_mean(1.0)
    except ValueError as exc:
        raise ValueError(f"{n['service_law']}: {exc}") from None
    # deadline
    if deadline is not None:
        if budget is not None or network_latency is not None:
            raise ValueError(f"give either {n['deadline']} or {n['budget']} with {n['network_latency']}, not both")
        dq = parse_time(deadline, n["deadline"])
        d, B, net, unit_default = dq.si, None, None, dq.unit if isinstance(deadline, str) else None
        texts["deadline"] = f"deadline {dq.text}"
    else:
        if budget is None or network_latency is None:
            raise ValueError(f"give {n['deadline']} (e.g. 72ms), or {n['budget']} with {n['network_latency']} "
                             "(the deadline is what the network leaves of the budget)")
        bq = parse_time(budget, n["budget"])
        nq = parse_time(network_latency, n["network_latency"], allow_zero=True)
        if not nq.si < bq.si:
            raise ValueError(f"{n['network_latency']} {nq.text} must be below {n['budget']} {bq.text}: nothing is left "
                             "for the sojourn time")
        d, B, net = bq.si - nq.si, bq.si, nq.si
        unit_default = bq.unit if isinstance(budget, str) else None
        texts["deadline"] = f"budget {bq.text} − network latency {nq.text}"
    unit = time_unit(unit, n["unit"]) if unit is not None else (unit_default or readable_unit(d))
    maxR = integer_at_least(n["max_servers"], max_servers, 1)
    reps = replications_for(p) if replications is None else integer_at_least(n["replications"], replications, 2)
    seed = integer_at_least(n["seed"], seed, 0)
    if not isinstance(confirm, bool):
        raise ValueError(f"{n['confirm'] if 'confirm' in n else 'confirm'} must be True or False; got {confirm!r}")
    if accuracy is not None:
        from pathlib import Path

        if not Path(accuracy).is_file():
            raise ValueError(f"{n['accuracy']} {accuracy}: no such file")
    # impossible targets: the service requirement alone, then stability within max_servers
    dn = d / mean
    if _service_cdf(law, dn) <= p:
        xq = _service_quantile(law, p) * mean
        raise ValueError(
            (f"{n['deadline']} {format_time(d, unit)} is" if B is None else
             f"{n['budget']} − {n['network_latency']} leaves {format_time(d, unit)},")
            + f" not above the service time's own {_pct(p)} percentile "
            f"{format_time(xq, unit)} ({law.name} service, mean {format_time(mean, unit)}): a customer's sojourn "
            f"is at least its service requirement, so no number of servers meets P(T ≤ d) ≥ {p:g}; relax "
            f"{n['reliability']} or the deadline, or shorten the service")
    a = Lam * mean
    Rmin = stable_from(a)
    if Rmin > maxR:
        raise ValueError(f"{n['max_servers']} {maxR} is below the {Rmin} servers the load needs to be stable "
                         f"(arrival rate × mean service = {a:.4g} busy servers on average); raise {n['max_servers']}")
    return Request(Lam, mean, service_law, law, d, p, maxR, confirm, reps, seed, unit, B, net, current,
                   None if accuracy is None else str(accuracy), texts)


def _pct(p: float) -> str:
    """0.9999 -> '99.99th'."""
    return f"{100 * p:.10g}th"


# -- evaluations ------------------------------------------------------------------------------------
@dataclass
class Engine:
    """How P(T ≤ d) is obtained for one R: ``exact``, an approximation, or ``simulation``, and why."""

    method: str
    reason: str
    error: tuple = (math.nan, math.nan, math.nan)  # the method's measured relative error: mean, CI low, high
    table: dict | None = None  # table_R, table_rho, table_percentile, extrapolated
    short: str = ""  # the reason in a few words (a table cell)


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
    servers: int
    load: float
    engine: Engine
    probability: float  # P(T ≤ d): the method's, or the simulated mean
    percentile: float  # mean service times; inf beyond the evaluated range (> percentile_above)
    percentile_above: float = math.nan
    simulated: Simulated | None = None
    seconds: float = 0.0

    def meets(self, p: float) -> bool:
        return self.probability >= p

    def margin(self, p: float, d: float) -> str:
        """Whether the verdict (meets or fails at deadline ``d``, mean service times) survives the evidence's
        uncertainty: ``clear``; ``within_noise`` (a simulation whose 95 % interval of P(T ≤ d) contains p);
        ``within_method_error`` (an approximation whose true percentile x/(1 + e), e in its measured error's
        95 % CI, may lie on the other side of d); ``unmeasured`` (an approximation without a measured error)."""
        if self.simulated is not None and self.engine.method == SIMULATION:
            return "clear" if not self.simulated.verdict(p).endswith("within_noise") else "within_noise"
        if self.engine.method == "exact":
            return "clear"
        _, lo, hi = self.engine.error
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return "unmeasured"
        x = self.percentile if math.isfinite(self.percentile) else self.percentile_above
        if self.meets(p):  # the largest true percentile the measured error allows must still be <= d
            return "clear" if lo > -1.0 and x / (1.0 + lo) <= d else "within_method_error"
        return "clear" if x / (1.0 + hi) > d else "within_method_error"


def _interp_percentile(t, F, p) -> float:
    """First crossing of p by F on the grid t, linear within the crossing step; inf if F never exceeds p."""
    import numpy as np

    above = np.flatnonzero(F > p)
    if not above.size:
        return math.inf
    i = int(above[0])
    if i == 0:
        return float(t[0])
    f0, f1 = float(F[i - 1]), float(F[i])
    return float(t[i - 1] + (t[i] - t[i - 1]) * ((p - f0) / (f1 - f0) if f1 > f0 else 1.0))


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _replication(args):
    """One replication's (count, overflow) (a worker process's task: only arrays travel back)."""
    from .raw import histogram  # the kernel without xarray (sojourn.jsq_ps.raw)

    return histogram(*args)


def simulate_counts(spec, replications: int, seed: int, horizon: float, warmup: float, dt: float, t_max: float,
                    workers: int = 1, first: int = 0, pool=None):
    """(count (replication, t), overflow (replication,), t) of replications first..first+replications−1 of
    ``spec``, in ``workers`` forked processes when there are several cores (else in this one). Replication k's
    stream depends only on (seed, spec, k) (``sojourn.core.seeds``): the counts are the same whatever
    ``workers`` and whatever batches the replications are run in. ``pool``: a fork-context process pool to run
    them in (kept across calls by :class:`Planner`), else one made for this call."""
    import numpy as np

    from ..core.timegrid import time_grid

    workers = max(1, min(int(workers), replications))
    fork = "fork" in multiprocessing.get_all_start_methods()
    tasks = [(spec, k, seed, horizon, warmup, dt, t_max) for k in range(first, first + replications)]
    if workers == 1 or not fork:
        parts = [_replication(task) for task in tasks]
    elif pool is not None:
        parts = list(pool.map(_replication, tasks))
    else:
        with fork_pool(workers, spec, seed, dt, t_max) as own:
            parts = list(own.map(_replication, tasks))
    return (np.stack([c for c, _ in parts]), np.array([o for _, o in parts], np.int64), time_grid(t_max, dt))


def fork_pool(workers: int, spec, seed: int, dt: float, t_max: float):
    """A pool of ``workers`` forked processes that start with the numba kernel loaded: it is loaded here first (a
    tiny run of ``spec``), and forked workers inherit it instead of each loading numba's cache."""
    from concurrent.futures import ProcessPoolExecutor

    _replication((spec, 0, seed, 2.0 / spec.arrival_rate, 0.0, dt, t_max))
    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))


class NoServers(ValueError):
    """No R ≤ max_servers meets the target (found by computing: the one refusal that is not up front)."""


def _clopper_pearson(k: int, n: int, confidence: float = 0.95):
    """Exact binomial interval of k successes in n (Clopper & Pearson 1934): beta quantiles."""
    from scipy.special import betaincinv  # the beta quantile (scipy.stats.beta.ppf) without scipy.stats

    a = (1.0 - confidence) / 2.0
    lo = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, a))
    hi = 1.0 if k == n else float(betaincinv(k + 1, n - k, 1.0 - a))
    return lo, hi


class Planner:
    """The search of the module doc for one :class:`Request`, with every evaluation cached per R."""

    def __init__(self, request: Request, table=None, workers: int | None = None):
        self.q = request
        self.p = request.reliability
        self._table = table
        self.workers = available_cores() if workers is None else int(workers)
        self.screened: dict = {}
        self.evaluated: dict = {}
        self.simulated: dict = {}
        self._runs: dict = {}  # R -> its replications so far (:meth:`_extend`)
        self._pool = None  # the forked workers, made at the first simulation, kept until :meth:`close`
        self.notes: list = []

    # the accuracy table, read on first need (~0.1 s: one (R, percentile) group of rows is parsed per query)
    @property
    def table(self):
        if self._table is None:
            from .accuracy import read_accuracy

            self._table = read_accuracy(self.q.accuracy)
        return self._table

    def load(self, R: int) -> float:
        return self.q.offered / R

    # -- analytic CDFs on a grid through d -----------------------------------------------------------
    def _grid(self, t_hi: float, per_d: int | None = None):
        import numpy as np

        d = self.q.d
        k = per_d or int(min(500, max(16, math.floor(2000 * d / t_hi))))
        h = d / k
        n = int(math.ceil(t_hi / h))
        t = np.arange(n + 1) * h
        t[k] = d
        return t, k

    def _cdf(self, method: str, R: int, t):
        """(F on ``t``, guard flags) of ``method`` at R servers (:mod:`sojourn.jsq_ps.analytic.guards`: 0 = a
        sojourn-time law of a JSQ system, its truncation reached). ``exact`` raises ``ExactOverBudget`` beyond
        :data:`EXACT_SECONDS`."""
        import numpy as np

        from .analytic.guards import truncation_flags, validity

        a = self.q.offered
        if method == "exact":
            from .analytic.exact import exact_sojourn_cdf

            r = exact_sojourn_cdf(a, 1.0, R, t, max_seconds=EXACT_SECONDS)
        else:
            from .analytic.methods import Cell

            r = Cell(a, 1.0, R, t).run(method)
        F = np.asarray(r.cdf, dtype=float)
        return F, int(validity(F, r.lambda_n, r.A_n, a, R, a / R)[0]) | truncation_flags(r.info)

    def screen(self, R: int):
        """(P(T ≤ d), percentile) by the screening method (M/M/R whatever the law: a starting point; a result
        the guards reject counts as not meeting, so that the search starts higher and walks down)."""
        if R not in self.screened:
            t_hi = 4.0 * self.q.d
            for _ in range(6):
                t, k = self._grid(t_hi, per_d=100)
                F, flags = self._cdf(SCREEN_METHOD, R, t)
                x = _interp_percentile(t, F, self.p)
                if math.isfinite(x) or flags:
                    break
                t_hi *= 4.0
            self.screened[R] = (0.0, math.inf) if flags else (float(F[k]), x)
        return self.screened[R]

    # -- which method for which R ----------------------------------------------------------------------
    def exact_fits(self, R: int, t_hi: float) -> bool:
        rho = self.load(R)
        limit = EXACT_MAX_LOAD.get(R)
        return limit is not None and rho <= limit + 1e-12 and (R <= 2 or t_hi <= EXACT_MAX_T)

    def engine(self, R: int, t_hi: float) -> Engine:
        q = self.q
        if not q.exponential:
            return Engine(SIMULATION, f"the service law {q.law.name} is not exponential: the approximations and the "
                                      "exact chain model M/M/R", short=f"{q.law.name} service")
        if self.exact_fits(R, t_hi):
            mean, lo, hi, Rt, rt, qt, ext = self._table_error(R, "exact")
            return Engine("exact", "the exact tagged-customer chain runs within the planner's budget here",
                          (mean, lo, hi), None if Rt is None or not math.isfinite(mean) else
                          {"table_R": Rt, "table_rho": rt, "table_percentile": qt, "extrapolated": ext}, "exact chain")
        return self.table_engine(R)

    def table_engine(self, R: int) -> Engine:
        """The accuracy table's choice at R (module doc, step 2)."""
        c = self.table.choose(R, self.load(R), self.p)
        info = None if c.table_R is None else {"table_R": c.table_R, "table_rho": c.table_rho,
                                               "table_percentile": c.table_percentile, "extrapolated": c.extrapolated}
        if c.simulate:
            return Engine(SIMULATION, c.reason, table=info, short=c.short)
        return Engine(c.method, c.reason, c.error, info, c.short)

    def _table_error(self, R, method):
        try:
            return self.table.error(R, self.load(R), self.p, method)
        except ValueError:
            return (math.nan,) * 3 + (None, None, None, [])

    # -- evaluation with the chosen method ---------------------------------------------------------------
    def evaluate(self, R: int) -> Evaluation:
        if R in self.evaluated:
            return self.evaluated[R]
        import numpy as np

        from .analytic.budget import ExactOverBudget
        from .analytic.guards import describe

        t0 = time.perf_counter()
        guess = self.screen(R)[1]
        t_hi = max(2.0 * self.q.d, 1.5 * guess if math.isfinite(guess) else 8.0 * self.q.d)
        eng = self.engine(R, t_hi)
        tries = 0
        while eng.method != SIMULATION and tries < 3:  # the grid ends past the percentile, or it is "beyond"
            t, k = self._grid(t_hi)
            try:
                F, flags = self._cdf(eng.method, R, t)
            except ExactOverBudget as exc:  # the exact module's own prediction (a safety net for long grids)
                self.notes.append(f"R = {R}: exact over the planner's budget ({exc}); the accuracy table decides")
                eng = self.table_engine(R)
                continue
            except (ArithmeticError, ValueError, MemoryError, np.linalg.LinAlgError) as exc:
                eng = Engine(SIMULATION, f"{eng.method} failed at R = {R} (ρ = {self.load(R):.4g}): {exc}",
                             table=eng.table, short=f"{eng.method} failed")
                break
            if flags:  # sojourn.jsq_ps.analytic.guards: not a sojourn-time law of a JSQ system here
                eng = Engine(SIMULATION, f"{eng.method}'s result fails the analytic guards at R = {R} "
                                         f"(ρ = {self.load(R):.4g}): {describe(flags)}", table=eng.table,
                             short=f"{eng.method} invalid here")
                break
            x = _interp_percentile(t, F, self.p)
            if math.isfinite(x) or tries == 2:
                ev = Evaluation(R, self.load(R), eng, float(F[k]), x, float(t[-1]) if not math.isfinite(x) else math.nan)
                ev.seconds = time.perf_counter() - t0
                self.evaluated[R] = ev
                return ev
            t_hi *= 4.0
            tries += 1
        sim = self.simulate(R)
        ev = Evaluation(R, self.load(R), eng, sim.probability, sim.percentile,
                        sim.t_max if not math.isfinite(sim.percentile) else math.nan, sim)
        ev.seconds = time.perf_counter() - t0
        self.evaluated[R] = ev
        return ev

    # -- simulation ----------------------------------------------------------------------------------------
    def simulate(self, R: int, full: bool = False) -> Simulated:
        """R simulated: replications in stages (:data:`FIRST_STAGE`, then doubling, capped at the request's
        ``replications``) until the verdict is clear (:meth:`Simulated.verdict`), or all of them with ``full``
        (``--confirm``). Replication k is the same whatever the stage that ran it."""
        cap = self.q.replications
        have = self._runs[R]["done"] if R in self._runs else 0
        want = cap if full else max(have, min(FIRST_STAGE, cap))
        while True:
            if want > have:
                self._extend(R, want)
                self.simulated.pop(R, None)
            if R not in self.simulated:
                self.simulated[R] = self._summary(R)
            sim = self.simulated[R]
            n = sim.replications
            if n >= cap or not sim.verdict(self.p).endswith("within_noise"):
                return sim
            have, want = n, min(cap, 2 * n)

    def _extend(self, R: int, replications: int) -> None:
        """Replications up to ``replications`` − 1 of R (the run length and histogram fixed at R's first stage)."""
        import numpy as np

        from .model import JSQPS

        q, d = self.q, self.q.d
        if R not in self._runs:
            rho = self.load(R)
            run = run_length(R, rho, self.p)
            per_d = 1000  # histogram bins per deadline: d is an edge, the percentile within d/1000
            dt = d / per_d
            guess = self.screen(R)[1]
            if R in self.evaluated and math.isfinite(self.evaluated[R].percentile):
                guess = max(guess, self.evaluated[R].percentile)
            t_hi = max(4.0 * d, 2.0 * guess if math.isfinite(guess) else 8.0 * d)
            bins = int(min(100 * per_d, math.ceil(t_hi / dt)))
            self._runs[R] = {"run": run, "per_d": per_d, "dt": dt, "t_max": bins * dt, "done": 0, "counts": [],
                             "overflows": [], "t": None, "wall": 0.0,
                             "spec": JSQPS.from_load(R, rho, mu=1.0, service=q.law)}
        r = self._runs[R]
        first = r["done"]
        if replications <= first:
            return
        t0 = time.perf_counter()
        n = replications - first
        fork = self.workers > 1 and n > 1 and "fork" in multiprocessing.get_all_start_methods()
        if fork and self._pool is None:
            self._pool = fork_pool(self.workers, r["spec"], q.seed, r["dt"], r["t_max"])
        count, overflow, t = simulate_counts(r["spec"], n, q.seed, r["run"]["horizon"], r["run"]["warmup"], r["dt"],
                                             r["t_max"], self.workers, first=first, pool=self._pool if fork else None)
        r["wall"] += time.perf_counter() - t0
        r["counts"].append(np.asarray(count))
        r["overflows"].append(np.asarray(overflow))
        r["t"], r["done"] = t, replications

    def _summary(self, R: int) -> Simulated:
        """P(T ≤ d) and the percentile of R's replications so far, with their 95 % intervals."""
        import numpy as np

        from ..core.stats import cdf_from_histogram, mean_ci, quantile

        r, p = self._runs[R], self.p
        count, overflow = np.concatenate(r["counts"]), np.concatenate(r["overflows"])
        per_d, dt, t = r["per_d"], r["dt"], r["t"]
        total = count.sum(axis=1) + overflow
        prob = count[:, :per_d].sum(axis=1) / total  # P(T < d): d is the left edge of bin per_d
        F = cdf_from_histogram(count, overflow)  # right edges
        x = quantile(t + dt, F, p)  # per replication; NaN beyond t_max
        pm, ph = mean_ci(prob)
        # the t-interval across replications, widened to the Clopper-Pearson interval of the pooled count
        # beyond d (which ignores the customers' correlation, so it is never the wider one unless the tail
        # is so thin that some replication saw no customer beyond d: zero spread, no t-interval)
        beyond = int(total.sum() - count[:, :per_d].sum())
        b_lo, b_hi = _clopper_pearson(beyond, int(total.sum()))
        p_lo, p_hi = min(pm - ph, 1.0 - b_hi), max(pm + ph, 1.0 - b_lo)
        if np.all(np.isfinite(x)):
            xm, xh = mean_ci(x)
        else:
            xm, xh = math.inf, math.nan
        tail = 1.0 - prob
        g_lo = math.nan
        if np.all(tail > 0):
            gm, gh = mean_ci(np.log(tail))
            g_lo = float(np.exp(gm - gh))
        return Simulated(r["done"], float(total.mean()), r["run"]["horizon"], r["run"]["warmup"], float(pm),
                         float(p_lo), float(min(1.0, p_hi)), float(xm), float(xm - xh), float(xm + xh),
                         float(r["t_max"]), r["wall"], self.q.seed, g_lo)

    def close(self) -> None:
        """Shut the worker processes down (if any were started)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    # -- the search ----------------------------------------------------------------------------------------
    def screened_start(self) -> int:
        """The least R (≥ the least stable, ≤ max_servers) the screening method says meets the target; the
        largest R if none does."""
        lo = self.q.min_stable
        top = self.q.max_servers
        if self.screen(lo)[0] >= self.p:
            return lo
        step, last_fail = 1, lo
        R = lo
        while True:
            R = min(top, last_fail + step)
            if self.screen(R)[0] >= self.p:
                break
            last_fail = R
            if R == top:
                return top
            step *= 2
        hi = R  # meets; last_fail fails
        while hi - last_fail > 1:
            mid = (hi + last_fail) // 2
            if self.screen(mid)[0] >= self.p:
                hi = mid
            else:
                last_fail = mid
        return hi

    def _no_R(self, R: int, ev: Evaluation, via: str):
        q = self.q
        x = ev.percentile
        where = (f"the {_pct(self.p)} percentile is {format_time(x * q.mean_service, q.unit)}" if math.isfinite(x)
                 else f"the {_pct(self.p)} percentile is beyond {format_time(ev.percentile_above * q.mean_service, q.unit)}")
        return NoServers(f"no R ≤ {q.max_servers} meets P(T ≤ {format_time(q.deadline, q.unit)}) ≥ {self.p:g}: at "
                         f"R = {R} (load {ev.load:.3g}) {where} ({via}, P(T ≤ d) = {ev.probability:.6g}); raise it, or "
                         "relax the deadline or the reliability")

    def search(self) -> int:
        """The least R by the chosen methods (module doc, step 2): from the screened R, down (if R − 1 meets too)
        or up (galloping) to a bracket, bisected; then down while R − 1 meets (each R has its own method, so
        "meets" need not be monotone in R: the answer's R − 1 is always evaluated and fails)."""
        p, lo, top = self.p, self.q.min_stable, self.q.max_servers

        def meets(R):
            return self.evaluate(R).meets(p)

        R = self.screened_start()
        if meets(R):
            if R > lo and meets(R - 1):
                fail, ok = lo - 1, R - 1  # lo − 1 is unstable: it fails
                while ok - fail > 1:
                    mid = (ok + fail) // 2
                    if mid >= lo and meets(mid):
                        ok = mid
                    else:
                        fail = mid
                R = ok
        else:
            fail, step = R, 1
            while True:
                R = min(top, fail + step)
                if meets(R):
                    break
                if R >= top:
                    raise self._no_R(R, self.evaluate(R), self.evaluate(R).engine.method)
                fail, step = R, 2 * step
            ok = R
            while ok - fail > 1:
                mid = (ok + fail) // 2
                if meets(mid):
                    ok = mid
                else:
                    fail = mid
            R = ok
        while R - 1 >= lo and meets(R - 1):
            R -= 1
        return R

    def confirm(self, R: int) -> int:
        """Move R until simulation agrees (module doc, step 3); simulates R − 1, R, R + 1 of the answer."""
        p, lo, top = self.p, self.q.min_stable, self.q.max_servers
        start = R
        while self.simulate(R, full=True).probability < p:
            if R >= top:
                ev = self.evaluate(R)
                s = self.simulated[R]
                ev_sim = Evaluation(R, ev.load, ev.engine, s.probability, s.percentile, s.t_max)
                raise self._no_R(R, ev_sim, "simulation")
            R += 1
        while R - 1 >= lo and self.simulate(R - 1, full=True).probability >= p:
            R -= 1
        if R > start:
            self.notes.append(f"the methods' answer R = {start} fails in simulation (P(T ≤ d) = "
                              f"{self.simulated[start].probability:.6g} < {p:g}): the answer is raised to R = {R}")
        elif R < start:
            self.notes.append(f"the methods' answer R = {start} was pessimistic: R = {R} meets the target in "
                              f"simulation (P(T ≤ d) = {self.simulated[R].probability:.6g})")
        self.simulate(R + 1, full=True)
        return R


# -- the result -------------------------------------------------------------------------------------
def _num(x):
    """A JSON-able float: None for NaN/inf."""
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass
class PlanResult:
    """The answer of :func:`plan`: ``servers`` (the least R), ``status``, the ``rows`` of R − 1, R, R + 1
    (dicts, times in ``unit``), ``notes``; ``dataset`` (an ``xarray.Dataset`` of the rows), ``to_dict()``,
    ``to_json()``, ``table()``."""

    servers: int
    status: str  # predicted | simulated | confirmed | within_noise
    message: str
    unit: str
    rows: list
    notes: list
    request: Request
    confirmed: bool
    wall_time: float = 0.0

    # -- views ------------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        q = self.request
        return {
            "answer": {"servers": self.servers, "status": self.status, "confirmed": self.confirmed,
                       "message": self.message},
            "target": {"deadline": _num(self._u(q.deadline)), "reliability": q.reliability,
                       "percentile": 100 * q.reliability,
                       "budget": _num(self._u(q.budget)) if q.budget is not None else None,
                       "network_latency": _num(self._u(q.network_latency)) if q.network_latency is not None else None},
            "system": {"arrival_rate_per_second": q.arrival_rate, "mean_service": _num(self._u(q.mean_service)),
                       "service_law": q.service_law, "offered_load": q.offered, "min_stable_servers": q.min_stable,
                       "dispatch": "jsq", "max_servers": q.max_servers, "current_servers": q.current_servers},
            "unit": self.unit,
            "rows": [{k: (_num(v) if isinstance(v, float) else v) for k, v in r.items()} for r in self.rows],
            "notes": list(self.notes),
            "wall_time_seconds": round(self.wall_time, 3),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def _u(self, seconds):
        return None if seconds is None else seconds / SECONDS[self.unit]

    @property
    def dataset(self):
        """The rows as an ``xarray.Dataset`` on a ``servers`` dimension (times in ``unit``), answer in attrs."""
        import numpy as np
        import xarray as xr

        rows = self.rows
        R = np.array([r["servers"] for r in rows], np.int64)

        def col(key, dtype=float):
            vals = [r.get(key) for r in rows]
            if dtype is float:
                return np.array([np.nan if v is None else float(v) for v in vals])
            if dtype is int:
                return np.array([-1 if v is None else int(v) for v in vals], np.int64)
            return np.array(["" if v is None else str(v) for v in vals], dtype=str)

        u = self.unit
        spec = {
            "load": ("load Λ E[S] / R", "1", float),
            "stable": ("1 if the load is below 1", "1", int),
            "method": ("how P(T <= d) was obtained: exact, an approximation, or simulation", None, str),
            "method_reason": ("why that method", None, str),
            "probability": ("P(T <= deadline) by the method (simulation: mean over replications)", "1", float),
            "percentile": (f"the {_pct(self.request.reliability)} percentile of the sojourn time by the method "
                           "(NaN: beyond percentile_above)", u, float),
            "percentile_above": ("the percentile lies beyond this time (where percentile is NaN)", u, float),
            "meets": ("1 if probability >= reliability", "1", int),
            "margin": ("does the verdict survive its evidence's uncertainty: clear, within_noise, "
                       "within_method_error, unmeasured", None, str),
            "method_error_mean": ("the method's measured relative percentile error (accuracy table)", "1", float),
            "method_error_ci_low": ("lower end of its 95% CI", "1", float),
            "method_error_ci_high": ("upper end of its 95% CI", "1", float),
            "table_R": ("accuracy-table R the error was read at", "1", float),
            "table_rho": ("accuracy-table load the error was read at", "1", float),
            "simulated_probability": ("simulated P(T <= deadline), mean over replications", "1", float),
            "simulated_probability_ci_low": ("lower end of its 95% t-interval", "1", float),
            "simulated_probability_ci_high": ("upper end of its 95% t-interval", "1", float),
            "simulated_percentile": ("simulated percentile, mean over replications", u, float),
            "simulated_percentile_ci_low": ("lower end of its 95% t-interval", u, float),
            "simulated_percentile_ci_high": ("upper end of its 95% t-interval", u, float),
            "verdict": ("simulation's verdict: meets, fails, meets_within_noise, fails_within_noise", None, str),
            "replications": ("simulated replications (-1: not simulated)", "1", int),
        }
        data = {}
        for key, (long_name, units, dtype) in spec.items():
            attrs = {"long_name": long_name}
            if units is not None:
                attrs["units"] = units
            data[key] = ("servers", col(key, dtype), attrs)
        q = self.request
        attrs = {"answer_servers": int(self.servers), "status": self.status, "message": self.message,
                 "confirmed": int(self.confirmed), "deadline": q.deadline / SECONDS[u], "reliability": q.reliability,
                 "unit": u, "arrival_rate_per_second": q.arrival_rate, "mean_service": q.mean_service / SECONDS[u],
                 "service_law": q.service_law, "min_stable_servers": q.min_stable, "max_servers": q.max_servers,
                 "notes": "\n".join(self.notes)}
        return xr.Dataset(data, coords={"servers": ("servers", R, {"long_name": "number of servers R"})},
                          attrs=attrs)

    def table(self) -> str:
        """The answer as text (what ``sojourn plan`` prints)."""
        q, u = self.request, self.unit
        pct = _pct(q.reliability)
        out = [self.message, ""]
        tgt = f"P(T ≤ {format_time(q.deadline, u)}) ≥ {q.reliability:g}"
        if q.budget is not None:
            tgt += f"  (budget {format_time(q.budget, u)} − network latency {format_time(q.network_latency, u)})"
        out.append(f"  target  {tgt}")
        out.append(f"  system  {q.texts.get('arrivals', '')}, {q.texts.get('service', '')}, {q.law.name} service, "
                   f"JSQ-PS; offered load {q.offered:.4g} servers, stable from R = {q.min_stable}")
        out.append("")
        head = ["R", "load", f"{pct} pct", "meets", "method", "method's measured error [95% CI] (table point)"]
        if self.confirmed:
            head[5:5] = [f"simulated {pct} pct (95% CI)", "verdict"]
        lines = [head]
        star = False
        for r in self.rows:
            if not r["stable"]:
                cells = [str(r["servers"]), f"{r['load']:.3f}", "unstable", "no", "-", "load >= 1"]
                if self.confirmed:
                    cells[5:5] = ["-", "-"]
                lines.append(cells)
                continue
            x = r["percentile"]
            xs = f"{x:.4g} {u}" if x is not None and math.isfinite(x) else f"> {r['percentile_above']:.4g} {u}"
            if r["method"] == SIMULATION and r.get("simulated_probability") is not None:
                xs = _sim_text(r, u, q.deadline / SECONDS[u] / 1000) + " (sim)"
            err = _error_text(r)
            if r.get("table_extrapolated"):
                star = True
            yes = ("yes" if r["meets"] else "no") + ("" if r.get("margin") == "clear" else "?")
            cells = [str(r["servers"]), f"{r['load']:.3f}", xs, yes, r["method"], err]
            if self.confirmed:
                cells[5:5] = [_sim_text(r, u, q.deadline / SECONDS[u] / 1000), r.get("verdict") or "-"]
            lines.append(cells)
        widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
        for row in lines:
            out.append("  " + "  ".join(c.ljust(w) if i >= 3 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                       .rstrip())
        if star:
            out.append("  * beyond the accuracy table: its nearest point used (extrapolated)")
        if any(r.get("margin") not in (None, "clear") for r in self.rows):
            out.append("  ? the verdict is within the uncertainty of its evidence (see the notes)")
        if self.notes:
            out.append("")
            out.extend(f"  - {n}" for n in self.notes)
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table()

    def __repr__(self) -> str:
        return f"PlanResult(servers={self.servers}, status={self.status!r}, unit={self.unit!r}, rows={len(self.rows)})"


def _error_text(r: dict) -> str:
    where = ""
    if r.get("table_R") is not None:
        ext = r.get("table_extrapolated") or []
        where = (f" (R = {r['table_R']}{'*' if 'R' in ext else ''}, ρ = {r['table_rho']:g}{'*' if 'rho' in ext else ''}"
                 f", {r['table_percentile']:g}th)")
    if r["method"] == SIMULATION:
        return f"simulated: {r.get('method_short') or r['method_reason']}{where}"
    m, lo, hi = r.get("method_error_mean"), r.get("method_error_ci_low"), r.get("method_error_ci_high")
    if m is None or not math.isfinite(m):
        return "none: the exact chain" if r["method"] == "exact" else "not measured" + where
    return f"{100 * m:+.1f} % [{100 * lo:+.1f}, {100 * hi:+.1f}]" + where


def _sim_text(r: dict, u: str, resolution: float) -> str:
    """The simulated percentile with no more digits than its CI supports (``core.stats.format_with_ci``)."""
    if r.get("simulated_probability") is None:
        return "-"
    x = r.get("simulated_percentile")
    if x is None or not math.isfinite(x):
        return f"> {r['simulated_t_max']:.4g} {u}"
    from ..core.stats import format_with_ci

    lo, hi = r.get("simulated_percentile_ci_low"), r.get("simulated_percentile_ci_high")
    return f"{format_with_ci(x, math.nan if lo is None else lo, math.nan if hi is None else hi, resolution=resolution)} {u}"


def _row(planner: Planner, R: int, confirmed: bool) -> dict:
    q = planner.q
    k = q.mean_service / SECONDS[q.unit]  # mean service times -> the user's unit
    rho = q.offered / R
    row = {"servers": R, "load": rho, "stable": rho < 1.0}
    if not row["stable"]:
        row.update(method=None, method_reason="unstable", probability=None, percentile=None, percentile_above=None,
                   meets=False)
        return row
    ev = planner.evaluate(R)
    e = ev.engine
    row.update(method=e.method, method_reason=e.reason, method_short=e.short, probability=ev.probability,
               percentile=ev.percentile * k if math.isfinite(ev.percentile) else None,
               percentile_above=ev.percentile_above * k if math.isfinite(ev.percentile_above) else None,
               meets=ev.meets(planner.p), margin=ev.margin(planner.p, q.d), method_error_mean=e.error[0], method_error_ci_low=e.error[1],
               method_error_ci_high=e.error[2], seconds=ev.seconds)
    if e.table:
        row.update(table_R=e.table["table_R"], table_rho=e.table["table_rho"],
                   table_percentile=e.table["table_percentile"], table_extrapolated=list(e.table["extrapolated"]))
    s = planner.simulated.get(R) if (confirmed or e.method == SIMULATION) else None
    if s is not None:
        row.update(simulated_probability=s.probability, simulated_probability_ci_low=s.probability_low,
                   simulated_probability_ci_high=s.probability_high,
                   simulated_percentile=s.percentile * k if math.isfinite(s.percentile) else None,
                   simulated_percentile_ci_low=s.percentile_low * k if math.isfinite(s.percentile_low) else None,
                   simulated_percentile_ci_high=s.percentile_high * k if math.isfinite(s.percentile_high) else None,
                   simulated_t_max=s.t_max * k, verdict=s.verdict(planner.p), replications=s.replications,
                   customers_per_replication=s.customers, simulation_seconds=s.wall_time)
    return row


def plan(arrival_rate=None, mean_service=None, *, deadline=None, reliability=None, service_rate=None, load=None,
         servers=None, service_law="exponential", budget=None, network_latency=None, dispatch="jsq",
         max_servers=DEFAULT_MAX_SERVERS, confirm=False, replications=None, seed=0, unit=None, accuracy=None,
         _names=FIELDS) -> PlanResult:
    """The least number of JSQ-PS servers R with P(T ≤ deadline) ≥ reliability (module doc).

    arrival_rate
        ``"9000/s"``, ``"9/ms"`` or a number per second; or ``load`` with ``servers``: the load at the number
        of servers you run now (Λ = load · servers / E[S]).
    mean_service / service_rate
        ``"1.2ms"`` (or seconds) / ``"833/s"`` (or per second); ``service_law`` a ``sojourn.laws`` string
        (``"lognormal:sigma=0.69"``), rescaled to that mean (default exponential).
    deadline / budget, network_latency
        ``"72ms"`` (or seconds), or a budget and the network latency it must absorb (d = budget − latency).
    reliability
        p in (0, 1) (``0.9999`` or ``"99.99%"``).
    max_servers, dispatch
        The largest R to consider (default 64); only ``"jsq"`` is modelled.
    confirm, replications, seed
        Simulate R − 1, R, R + 1 (``replications`` each, default :func:`replications_for`, seeds from
        ``sojourn.core.seeds`` under ``seed``) and never answer an R that the simulation shows to fail.
    unit
        Unit of the answers (default: the deadline's or budget's).
    accuracy
        An accuracy table (CSV, :mod:`sojourn.jsq_ps.accuracy`) instead of the shipped one.
    """
    t0 = time.perf_counter()
    q = check_request(arrival_rate=arrival_rate, load=load, servers=servers, mean_service=mean_service,
                      service_rate=service_rate, service_law=service_law, deadline=deadline, budget=budget,
                      network_latency=network_latency, reliability=reliability, dispatch=dispatch,
                      max_servers=max_servers, confirm=confirm, replications=replications, seed=seed, unit=unit,
                      accuracy=accuracy, names=_names)
    pl = Planner(q)
    try:
        try:
            R = pl.search()
            if confirm:
                R = pl.confirm(R)
        except NoServers as exc:
            raise NoServers(f"{_names['max_servers']} {q.max_servers}: {exc}") from None
        rows = [_row(pl, r, confirm) for r in (R - 1, R, R + 1) if r >= 1]
    finally:
        pl.close()
    p = q.reliability
    ans = pl.evaluate(R)
    # the simulations that are evidence for the answer: R and R - 1 under --confirm, or where simulation was the
    # method; the answer is "within_noise" when one of their 95 % intervals of P(T <= d) contains p
    evidence = {r: pl.simulated[r] for r in (R - 1, R) if r >= q.min_stable and r in pl.simulated
                and (confirm or pl.evaluate(r).engine.method == SIMULATION)}
    sim_R, sim_below = evidence.get(R), evidence.get(R - 1)
    noisy = any(v.verdict(p).endswith("within_noise") for v in evidence.values())
    status = ("within_noise" if noisy else "confirmed" if confirm else "simulated" if evidence else "predicted")
    d_text = format_time(q.deadline, q.unit)
    how = {"predicted": f"by {ans.engine.method}", "simulated": "by simulation" if ans.engine.method == SIMULATION
           else f"by {ans.engine.method}, R - 1 by simulation",
           "confirmed": "confirmed by simulation", "within_noise": "by simulation, within its noise"}[status]
    message = f"R = {R} servers: the least number with P(T ≤ {d_text}) ≥ {p:g} ({how})"
    notes = list(pl.notes)
    if sim_R is not None and sim_R.verdict(p) == "meets_within_noise":
        notes.append(f"R = {R} meets the target only within the simulation noise: its 95 % interval of "
                     f"P(T ≤ d) [{sim_R.probability_low:.6g}, {sim_R.probability_high:.6g}] contains {p:g}"
                     + (f"; R = {R + 1} meets it with a margin beyond the noise"
                        if (R + 1) in pl.simulated and pl.simulated[R + 1].verdict(p) == "meets" else ""))
    if sim_below is not None and sim_below.verdict(p) == "fails_within_noise":
        notes.append(f"R = {R - 1} fails only within the simulation noise (95 % interval of P(T ≤ d) "
                     f"[{sim_below.probability_low:.6g}, {sim_below.probability_high:.6g}] contains {p:g}): "
                     f"R = {R - 1} may suffice")
    for r in rows if not confirm else ():  # under --confirm the simulation decides (its notes above)
        m = r.get("margin")
        if m == "within_method_error":
            notes.append(f"R = {r['servers']}: {r['method']} says it {'meets' if r['meets'] else 'fails'} the target, "
                         f"but within {r['method']}'s measured error (the true percentile may lie on the other side of "
                         f"the deadline{'; R = ' + str(r['servers']) + ' may suffice' if not r['meets'] else ''}): "
                         "--confirm settles it by simulation")
        elif m == "unmeasured":
            notes.append(f"R = {r['servers']}: {r['method']}'s error is not measured at this point of the accuracy "
                         "table; --confirm checks it by simulation")
    if R == q.min_stable:
        notes.append(f"R = {R} is also the least stable number of servers (offered load {q.offered:.4g})")
    if not q.exponential:
        notes.append(f"the service law {q.law.name} is not exponential: the approximations and the exact chain model "
                     "M/M/R, so every R is simulated")
    sims = [r["servers"] for r in rows if r.get("method") == SIMULATION or (confirm and r["servers"] in pl.simulated)]
    if sims:
        s = pl.simulated[sims[0]]
        reps = [pl.simulated[r].replications for r in sims]
        staged = "" if confirm or min(reps) == q.replications else (
            " (fewer where the verdict was already clear: --confirm runs all of them)")
        notes.append(f"simulated R = {', '.join(map(str, sims))}: "
                     + (f"{reps[0]}" if len(set(reps)) == 1 else "/".join(map(str, reps)))
                     + f" replications{staged} of about {s.customers:,.0f} customers each (about {TAIL_CUSTOMERS} "
                     f"beyond the {_pct(p)} percentile), seed {s.seed}")
    if any("R" in (r.get("table_extrapolated") or []) for r in rows):
        notes.append(f"R beyond the accuracy table (largest R = {pl.table.Rs[-1]}): the errors are those measured at "
                     "that R (extrapolated)")
    if q.current_servers is not None:
        diff = R - q.current_servers
        notes.append(f"you run {q.current_servers} servers: "
                     + (f"{diff} more needed" if diff > 0 else "enough" if diff == 0 else f"{-diff} fewer would do"))
    res = PlanResult(R, status, message, q.unit, rows, notes, q, bool(confirm))
    res.wall_time = time.perf_counter() - t0
    return res
