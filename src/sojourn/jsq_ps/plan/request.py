"""The question ``sojourn plan`` answers, checked before any compute: the request (rates, times, reliability,
the service law) in mean service times, the refusals that name the field or flag, and the simulation run length."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ...core.checks.units import (
    SECONDS,
    format_time,
    parse_rate,
    parse_time,
    readable_unit,
    time_unit,
)
from ...core.checks.validate import integer_at_least

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
#: times. Up to ρ = 0.4–0.8 at R = 3–6 one evaluation costs ≲ 0.25 s of CPU (``python benchmarks/plan.py exact``,
#: t ≤ 80: R = 3 at 0.8 0.15 s, R = 6 at 0.4 0.24 s); since issue 36 it runs to ρ = 0.95 at R = 3–6, where its
#: truncation is reached and certified (bound ≤ 6.6e-10) at a cost that grows to seconds: CPU seconds on the paper
#: grid t ≤ 182.32 (``benchmarks/exact_reach.py``): R = 5 at 0.9 4.9 s, at 0.95 11.2 s, R = 6 at 0.9 13.8 s, at
#: 0.95 27.1 s (the steps, most of it, on two threads); at t ≤ EXACT_MAX_T the steps are about 0.6 of that
EXACT_MAX_LOAD = {1: 0.99, 2: 0.95, 3: 0.95, 4: 0.95, 5: 0.95, 6: 0.95, 7: 0.30}
EXACT_MAX_T = 100.0
#: the exact module's own budget (``analytic.budget``, predicted from its truncation before the costly part, CPU
#: seconds): a safety net where a long grid makes a cell of EXACT_MAX_LOAD dearer than measured; R = 6, ρ = 0.95
#: at t ≤ 100 is predicted 23.3 s (1 436 steps)
EXACT_SECONDS = 25.0
SIMULATION = "simulation"
#: the method for every exponential R where exact does not run cheaply: T, the tagged chain on a spread-capped
#: state space (:mod:`sojourn.jsq_ps.solve.tail`), conservative by construction
TAIL_METHOD = "T"
#: T's CPU budget per evaluation in the planner (its ``max_seconds``): the spread caps D − 1, D are the largest
#: predicted to fit (D = 2 however long that takes; a larger D only narrows the margin, which is stated)
TAIL_SECONDS = 0.1
#: the method for every R of a service law that is not exponential: T with the law itself
#: (:mod:`sojourn.jsq_ps.solve.tail_ph`: the tagged customer's own size in a phase-type representation); its error is
#: its model's, measured against long simulations (``sojourn.jsq_ps.solve.tail_ph.MODEL_ERROR``)
TAIL_LAW_METHOD = "T-law"
#: its CPU budget per evaluation (``max_seconds``: the stage width, spread cap and co-residents tracked that fit)
TAIL_LAW_SECONDS = 0.5
#: T's grid ends at this many deadlines: a "meets" has its percentile inside, a near miss too; a clear miss is
#: shown as "beyond" it (T's cost grows with the grid's end: at R = 11, ρ = 0.98, 1.25 d costs 0.23 s, the grid of
#: the other methods, 1.5 times the screened percentile, 0.72 s)
TAIL_REACH = 1.25
#: the names of the request's fields in messages: the API's, or the command line's (``FLAGS``)
FIELDS = {k: k for k in ("arrival_rate", "rho", "R", "mean_service", "service_rate", "service_law",
                         "deadline", "budget", "network_latency", "reliability", "dispatch", "max_servers",
                         "replications", "seed", "unit", "accuracy", "confirm")}
FLAGS = {**{k: "--" + k.replace("_", "-") for k in FIELDS}, "R": "-R"}


def replications_for(reliability: float) -> int:
    """The most replications of a simulated R (all of them under ``--confirm``; without it the stages of
    :meth:`Planner.simulate` stop as soon as the verdict is clear)."""
    return DEFAULT_REPLICATIONS


def run_model(R: int, rho: float, scv_service: float = 1.0):
    """The run-length guard's model of R JSQ servers at load ``rho`` (μ = 1, Poisson arrivals;
    :func:`sojourn.jsq_ps.simulate.run_model`, without its imports)."""
    from ...core.estimates.runlength import RunModel, Station

    rate = R * rho
    return RunModel((Station(rate, R, rho, 1.0, scv_service),), rate, scv_service=scv_service)


def run_length(R: int, rho: float, reliability: float, scv_service: float = 1.0) -> dict:
    """Horizon, warm-up and recorded customers of one simulated replication, in mean service times (the
    rule of the module doc), the window lengthened where the run-length guard (:mod:`sojourn.core.estimates.runlength`)
    asks for more at the first stage's :data:`FIRST_STAGE` replications (``guard_lengthened``)."""
    customers = max(math.ceil(TAIL_CUSTOMERS / (1.0 - reliability) - 1e-9), MIN_CUSTOMERS)
    rate = R * rho  # arrivals per mean service time
    window = customers / rate
    needed = run_model(R, rho, scv_service).needed_window(FIRST_STAGE)
    lengthened = needed > window
    window = max(window, needed)
    tau = 1.0 / (R * (1.0 - math.sqrt(rho)) ** 2)  # M/M/R relaxation time (Morse 1955), μ = 1
    warmup = max(10.0 * tau, 0.05 * window)
    return {"customers": max(customers, math.ceil(window * rate)), "window": window, "warmup": warmup,
            "horizon": warmup + window, "relaxation_time": tau, "guard_lengthened": lengthened}


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
        from ...core.laws.distributions import Exponential

        return isinstance(self.law, Exponential)


def stable_from(offered: float) -> int:
    """The least R with offered/R < 1 (a few steps past floor(a) + 1 for round-off at an integer a; beyond the
    doubles' integers, 2^53, R + 1 is R in floating point, so the least R is found by a relative step)."""
    R = math.floor(offered) + 1
    for _ in range(4):
        if offered / R < 1.0:
            return R
        R += 1
    return math.ceil(offered * (1.0 + 1e-12)) + 1


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
    from ...core.laws.distributions import Exponential

    if isinstance(law, Exponential):
        return -math.expm1(-law.rate * x)
    return float(law.cdf(x))


def _service_quantile(law, p: float) -> float:
    """The p-quantile of a law of mean 1: bisection on its CDF (every law here has one)."""
    from ...core.laws.distributions import Exponential

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


def _check_service(mean_service, service_rate, n, texts) -> float:
    """The mean service time in seconds, from exactly one of the mean and the rate."""
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
    return mean


def _check_arrivals(arrival_rate, rho, R, mean, n, texts):
    """(total arrival rate per second, the servers run now or None), from the rate or from a load ``rho`` at a
    number ``R`` of servers."""
    current = None
    if arrival_rate is not None:
        if rho is not None or R is not None:
            raise ValueError(f"give either {n['arrival_rate']} or {n['rho']} with {n['R']}, not both")
        lam = parse_rate(arrival_rate, n["arrival_rate"])
        Lam = lam.si
        texts["arrivals"] = f"arrival rate {lam.text}"
    else:
        if rho is None or R is None:
            raise ValueError(f"give {n['arrival_rate']} (e.g. 9000/s), or {n['rho']} together with {n['R']} "
                             "(the load at a number of servers you run now)")
        current = integer_at_least(n["R"], R, 1)
        given = rho
        if isinstance(rho, str):
            try:
                rho = float(rho)
            except ValueError:
                raise ValueError(f"{n['rho']} must be a number > 0; got {given!r}") from None
        if isinstance(rho, bool) or not isinstance(rho, (int, float)) or not math.isfinite(rho) or rho <= 0:
            raise ValueError(f"{n['rho']} must be a number > 0 (it may be >= 1: an overloaded system); got {given!r}")
        Lam = float(rho) * current / mean
        texts["arrivals"] = f"load {float(rho):g} at {current} servers (arrival rate {Lam:.6g}/s)"
    return Lam, current


def _check_law(service_law, n):
    """The service law, rescaled to mean 1 (time in mean service times)."""
    from ...core.laws.distributions import parse_law

    if not isinstance(service_law, str):
        raise ValueError(f"{n['service_law']} must be a law string such as 'lognormal:sigma=0.69'; got {service_law!r}")
    try:
        law = parse_law(service_law).scaled_to_mean(1.0)
    except ValueError as exc:
        raise ValueError(f"{n['service_law']}: {exc}") from None
    return law


def _check_deadline(deadline, budget, network_latency, n, texts):
    """(deadline d in seconds, budget or None, network latency or None, the unit the input was given in or None)."""
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
    return d, B, net, unit_default


def _check_feasible(law, d, mean, p, B, unit, Lam, confirm, arrival_rate, maxR, n) -> None:
    """Impossible targets refused: the service requirement alone, then stability within max_servers."""
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
    if (confirm or not law.name == "exponential") and a < MIN_SIMULATED_LOAD:
        raise ValueError(f"{n['arrival_rate'] if arrival_rate is not None else n['load']}: an offered load of "
                         f"{a:.3g} servers is too small to simulate (about one arrival in {1 / a:.3g} mean service "
                         f"times; the simulations' laws keep their means within 1e100)"
                         + (f"; leave {n['confirm']} out: the answer follows from a bound" if confirm and
                            law.name == "exponential" else ""))
    Rmin = stable_from(a)
    if Rmin > maxR:
        raise ValueError(f"{n['max_servers']} {maxR} is below the {Rmin if Rmin < 1e15 else f'{Rmin:.3g}'} servers the "
                         "load needs to be stable "
                         f"(arrival rate × mean service = {a:.4g} busy servers on average); raise {n['max_servers']}")


def check_request(*, arrival_rate=None, rho=None, R=None, mean_service=None, service_rate=None,
                  service_law="exponential", deadline=None, budget=None, network_latency=None, reliability=None,
                  dispatch="jsq", max_servers=DEFAULT_MAX_SERVERS, confirm=False, replications=None, seed=0,
                  unit=None, accuracy=None, names=FIELDS) -> Request:
    """Every input checked (ValueError naming the field as ``names`` spells it) before any compute."""
    n = names
    texts = {}
    disp = str(dispatch).strip().lower() if isinstance(dispatch, str) else dispatch
    if disp != "jsq":
        from ...core.checks.inputs import did_you_mean

        raise ValueError(f"{n['dispatch']} {dispatch!r}: only jsq is modelled (the approximations and the exact chain "
                         "are for join-the-shortest-queue); other dispatch policies can be simulated with "
                         f"`sojourn simulate --dispatch …`{did_you_mean(str(dispatch), ['jsq'])}")
    if reliability is None:
        raise ValueError(f"{n['reliability']} is required: the share of customers that must meet the deadline, "
                         "e.g. 0.9999")
    p = _reliability(reliability, n["reliability"])
    mean = _check_service(mean_service, service_rate, n, texts)
    Lam, current = _check_arrivals(arrival_rate, rho, R, mean, n, texts)
    law = _check_law(service_law, n)
    d, B, net, unit_default = _check_deadline(deadline, budget, network_latency, n, texts)
    unit = time_unit(unit, n["unit"]) if unit is not None else (unit_default or readable_unit(d))
    maxR = integer_at_least(n["max_servers"], max_servers, 1)
    reps = replications_for(p) if replications is None else integer_at_least(n["replications"], replications, 2)
    from ...core.checks.guard import SEED

    seed = SEED.check(n["seed"], seed)
    if not isinstance(confirm, bool):
        raise ValueError(f"{n['confirm'] if 'confirm' in n else 'confirm'} must be True or False; got {confirm!r}")
    if replications is not None and not confirm and law.name == "exponential":
        raise ValueError(f"{n['replications']} applies only where plan simulates: with {n['confirm']}, or with a "
                         f"{n['service_law']} that is not exponential; give {n['confirm']}, or leave "
                         f"{n['replications']} out")
    if accuracy is not None:  # read and checked in full now, not when T first fails
        from ..accuracy import check_accuracy

        check_accuracy(accuracy, n["accuracy"])
    _check_feasible(law, d, mean, p, B, unit, Lam, confirm, arrival_rate, maxR, n)
    return Request(Lam, mean, service_law, law, d, p, maxR, confirm, reps, seed, unit, B, net, current,
                   None if accuracy is None else str(accuracy), texts)


def simulation_cost(q: Request, R: int, simulated: int) -> list:
    """The predicted cost of simulating ``simulated`` numbers of servers near ``R`` with ``q.replications``
    replications each, run to the rule of :func:`run_length` at ``R``
    (:func:`sojourn.core.checks.guard.admit_parts`)."""
    from ...core.checks.guard import Estimate
    from ..cost import SECONDS_PER_EVENT, SECONDS_PER_SCANNED_SERVER

    rho = q.offered / R
    run = run_length(R, rho, q.reliability, q.law.scv)
    events = 2.0 * run["customers"] * (run["horizon"] / run["window"]) * q.replications * simulated
    per = SECONDS_PER_EVENT + SECONDS_PER_SCANNED_SERVER * R
    return [Estimate(events * per, 0.0, "replications/reliability",
                     f"{simulated} simulated R of {q.replications} replications of about "
                     f"{run['customers']:.3g} customers each at R = {R} (load {rho:.3g}), ~{per:.2g} s per event"),
            Estimate(0.0, 8.0 * 2 * 100_000 * q.replications * simulated + 512.0 * R,
                     "replications", f"the histograms of {q.replications * simulated} replications")]


def plan_cost(q: Request):
    """What answering ``q`` is predicted to take, from the request alone
    (:func:`sojourn.core.checks.guard.admit_parts`):
    with ``confirm``, the simulations of R − 1, R, R + 1; and the analytic search: method T's phase tables for
    exponential service, T with the law itself (at most :data:`TAIL_LAW_SECONDS` each) for any other, at about
    :data:`SEARCH_EVALUATIONS` numbers of servers. R is taken as the least stable one (the answer is at least that;
    above it the cost grows). A simulation the search falls back to (where the analytic methods fail) is admitted
    when it is decided (:meth:`sojourn.jsq_ps.plan.planner.Planner.evaluate`)."""
    from ...core.checks.guard import Estimate
    from ..cost import T_SECONDS_PER_CUBED_SERVER

    R = q.min_stable
    parts = simulation_cost(q, R, 3) if q.confirm else []
    from ..solve.tail import peak_bytes  # T-law's own memory guard uses it too (solve.tail_ph)

    given = ("rho/R" if q.current_servers is not None else "arrival_rate") + (
        "/mean_service" if "mean service" in q.texts.get("service", "") else "/service_rate")
    if q.exponential:  # T at the least stable R (a few evaluations near it)
        parts.append(Estimate(SEARCH_EVALUATIONS * T_SECONDS_PER_CUBED_SERVER * float(R) ** 3, peak_bytes(R),
                              given, f"method T at R = {R} servers, the least stable number"))
    else:  # T-law: its own CPU budget per evaluation (tail_ph's max_seconds)
        parts.append(Estimate(SEARCH_EVALUATIONS * TAIL_LAW_SECONDS, peak_bytes(R), given,
                              f"T with the {q.law.name} law at about {SEARCH_EVALUATIONS} numbers of servers from "
                              f"R = {R}, at most {TAIL_LAW_SECONDS:g} s each"))
    return parts or [Estimate()]


#: the least offered load (servers) a simulation takes: inter-arrival times of mean below 1e100 mean service times
#: (sojourn.core.laws.distributions.MEAN_RANGE)
MIN_SIMULATED_LOAD = 1e-99
#: R evaluated by the search about the answer (screening aside): a bracket, its bisection, R − 1 and R + 1
SEARCH_EVALUATIONS = 6


def _pct(p: float) -> str:
    """0.9999 -> '99.99th'."""
    return f"{100 * p:.10g}th"
