"""What a JSQ-PS request will cost, predicted from its inputs alone (:mod:`sojourn.core.checks.guard`, check 3): the
simulation (numba kernels or Ciw) and the analytic methods. Each function returns a
:class:`~sojourn.core.checks.guard.Estimate` in the API's field names; the command line, the Python API and the
pipeline's jobs all admit the same estimate (:func:`sojourn.core.checks.guard.admit`), each naming the inputs in its
own terms.

The constants are fitted on this project's 2-core machine and checked by ``python benchmarks/cost_models.py``,
which runs each model's cases side by side with its prediction and records the ratio measured/predicted
(``benchmarks/cost_models.jsonl``; the figures are in docs/development.md, "Cost models").
"""
from __future__ import annotations

import math

from ..core.checks.guard import Estimate

#: seconds per event of the fast kernels: a fixed part and, for JSQ, a part per server scanned (R = 10, load 0.9:
#: 9.4e-8 s/event; R = 1000: 4.8e-7 s/event; one replication of horizon 20 000)
SECONDS_PER_EVENT, SECONDS_PER_SCANNED_SERVER = 1e-7, 4e-10
#: Ciw's event loop is Python: seconds per event, a part per server its router looks at, and a part per customer
#: present at the PS node of the event (Ciw's PSNode recomputes every present customer's service end); checked by
#: benchmarks/cost_models.py (R = 1, 4, 8, load 0.5 to 0.9, exponential and lognormal: CPU 0.75 to 1.0 of the
#: prediction, its workers' memory 0.82 to 0.87)
CIW_SECONDS_PER_EVENT, CIW_SECONDS_PER_SERVER, CIW_SECONDS_PER_PRESENT = 1.2e-5, 1.5e-6, 2.5e-6
#: Ciw keeps a record of every customer until the replication ends (bytes per customer, measured), plus the
#: interpreter and Ciw of each worker process
CIW_BYTES_PER_CUSTOMER, CIW_BYTES_PER_WORKER = 1500.0, 120e6
#: seconds to start Ciw's worker processes (spawned interpreters importing Ciw and numpy)
CIW_SECONDS_STARTUP = 2.0
#: bytes per server of the simulation kernels' state (queues of 16 customers to start with, heaps, clocks, counters)
SIMULATION_BYTES_PER_SERVER = 512


def _present_per_server(spec) -> float:
    """Mean number of customers at a PS server (M/M/1-PS at the server's load: ρ/(1 − ρ), JSQ holds fewer)."""
    rho = min(float(spec.rho), 0.999999)
    return rho / (1.0 - rho)


def simulate(spec, horizon: float, replications: int, backend: str = "fast", dt: float = 0.01,
             t_max: float = 182.32, workers: int = 1) -> list[Estimate]:
    """The parts of ``replications`` replications of ``spec`` of length ``horizon`` (Ciw on ``workers`` processes
    at once, the fast kernels on ``workers`` threads): the events (time), the histograms over the grid, the servers'
    state or Ciw's records (memory)."""
    R = spec.R
    reps = int(replications)
    procs = max(1, min(int(workers), reps))
    events = 2.0 * float(spec.arrival_rate) * float(horizon) * reps
    histograms = grid(t_max, dt, 8.0 * (2 * reps + 6), f"the sojourn histogram of each of {reps} replications")
    what = (f"{events:.3g} events over {reps} replication{'s' * (reps > 1)} of horizon {float(horizon):g} "
            f"at arrival rate {spec.arrival_rate:.4g}")
    if backend == "ciw":
        per_event = (CIW_SECONDS_PER_EVENT + CIW_SECONDS_PER_SERVER * R
                     + CIW_SECONDS_PER_PRESENT * _present_per_server(spec))
        run = Estimate(CIW_SECONDS_STARTUP + events * per_event / procs, 0.0, "R/horizon/replications",
                       f"{what}, ~{per_event:.2g} s each in Ciw on {procs} process(es)")
        customers = float(spec.arrival_rate) * float(horizon)
        state = Estimate(0.0, procs * (CIW_BYTES_PER_WORKER + CIW_BYTES_PER_CUSTOMER * customers), "horizon",
                         f"Ciw's record of each of {customers:.3g} customers per replication, {procs} at a time")
    else:
        scanned = {"jsq": R, "jsq-d": spec.choices or 1}.get(spec.dispatch, 1)
        per_event = SECONDS_PER_EVENT + SECONDS_PER_SCANNED_SERVER * scanned
        run = Estimate(events * per_event / procs, 0.0, "R/horizon/replications",
                       f"{what}, ~{per_event:.2g} s each" + (f", {procs} at a time" if procs > 1 else ""))
        state = Estimate(0.0, procs * SIMULATION_BYTES_PER_SERVER * R, "R",
                         f"the state of {R:,} servers" + (f", {procs} replications at a time" if procs > 1 else ""))
    return [run, histograms, state]


def grid(t_max: float, dt: float, per_point: float, what: str) -> Estimate:
    """The grid's arrays alone (``per_point`` bytes per point over every array of that length)."""
    points = float(t_max) / float(dt) + 1.0
    return Estimate(0.0, points * per_point, "t_max/dt", f"{points:.3g} grid points of t_max {float(t_max):g} / dt "
                                                         f"{float(dt):g}, {what}")


# -- the analytic methods ---------------------------------------------------------------------------------------
#: seconds of the dense tail of L2 = n phases over P grid points: SECONDS_PER_CUBE n^3 (expm) + SECONDS_PER_STEP
#: P n^2 (the grid's steps): `sojourn approximate -R 3 --load 0.5 --method A`, --L2 1000: 4.6 s, 3000: 70 s
SECONDS_PER_CUBE, SECONDS_PER_STEP = 1.6e-9, 1.7e-10
#: seconds per state of a sorted-occupancy chain's solve (sparse LU), of the corrected methods' spread chain within
#: its cap (it stops where its truncation is reached, far below the cap at most loads: A* at R = 3, ρ = 0.9, 0.16 s
#: of CPU), and per transition-step of uniformisation
SECONDS_PER_CHAIN_STATE, SECONDS_PER_SPREAD_STATE, SECONDS_PER_UNIFORMISED_ENTRY = 2e-5, 3e-6, 2e-9
#: method T: its phase tables' memory is :func:`sojourn.jsq_ps.solve.tail.peak_bytes`; its seconds grow about as
#: R^3 at D = 2 (CPU: R = 50, ρ = 0.9: 1.45 s; R = 100: 9.4 s; the docs' R = 200: 52 s)
T_SECONDS_PER_CUBED_SERVER = 1e-5
#: the corrected methods' tail cut N at most (sojourn.jsq_ps.solve.methods.corrected_size)
CORRECTED_MAX_N = 6000


def approximate(spec, method: str, points: int, t_max: float, hyper: dict) -> list[Estimate]:
    """Method ``method`` on ``spec`` over ``points`` grid points to ``t_max`` with the API's ``hyper``-parameters
    (L1, L2, state_budget, max_states): its chain (sorted occupancy vectors, or the corrected methods' spread
    chain within its state cap), its tail (dense L2 x L2, or the uniformised chain of N phases), the grid's
    arrays; exact's time is predicted by its own budget (:mod:`sojourn.jsq_ps.solve.budget`, through
    :func:`sojourn.jsq_ps.solve.api.approximate`), T's by its phase tables."""
    from .naming import (
        CORRECTED_METHODS,
        DEFAULT_L2,
        FAITHFUL_METHODS,
        chain_bytes,
        table4_L1,
    )

    R = spec.R
    P = float(points)
    if method == "T":
        from .solve.tail import peak_bytes

        return [Estimate(T_SECONDS_PER_CUBED_SERVER * R**3 + 1e-7 * P * R, peak_bytes(R), "R",
                         f"method T's phase tables at its least spread cap D = 2: {R - 1} offsets per tagged phase"),
                Estimate(0.0, 8.0 * 6 * P, "t_max/dt", f"its survival functions on {P:.3g} grid points")]
    if method == "exact":  # its truncation search starts with a probe chain (min cap 8, spread cap 3 to 6)
        from .solve.budget import BYTES_PER_TAGGED_STATE, SECONDS_PER_STATE

        D = 0 if R == 1 else 3
        while 1 < R and D < 6 and _spread(8, D + 1, R) <= 20_000:
            D += 1
        probe = _spread(8, D, R)
        return [Estimate(SECONDS_PER_STATE * probe, BYTES_PER_TAGGED_STATE * probe * R, "R",
                         f"exact's first truncation probe: {probe:.3g} system states (min cap 8, spread cap {D}) x R = "
                         f"{R} before it sizes its own truncation"),
                Estimate(0.0, 8.0 * 6 * P, "t_max/dt", f"exact's certified bounds on {P:.3g} grid points")]
    if method in FAITHFUL_METHODS or "L1" in hyper:
        L1 = int(hyper.get("L1", table4_L1(R) if method in FAITHFUL_METHODS else 2))
        states, memory = chain_bytes(L1, R)
        chain = Estimate(SECONDS_PER_CHAIN_STATE * states, memory, "L1" if "L1" in hyper else "R",
                         f"a chain of C(L1+R-1, R) = {states:.3g} states (L1 = {L1}, R = {R}) and its sparse generator")
    else:  # the corrected methods' spread chain: at most state_budget system states (x R entries each)
        cap = float(hyper.get("state_budget", 60_000))
        chain = Estimate(SECONDS_PER_SPREAD_STATE * cap, cap * (8.0 * R + 24.0 * (R + 2)) * 3,
                         "max_states" if "state_budget" in hyper else "R",
                         f"the spread chain within its cap of {cap:.3g} system states")
    n = float(hyper.get("L2", DEFAULT_L2 if method in FAITHFUL_METHODS else CORRECTED_MAX_N))
    if method in FAITHFUL_METHODS or ("L2" in hyper and n + 1 <= 300):
        tail = Estimate(SECONDS_PER_CUBE * n**3 + SECONDS_PER_STEP * P * n * n, 8.0 * (10 * n * n + P * n),
                        "L2", f"a dense {n:,.0f} x {n:,.0f} tail generator, its matrix exponentials and its survival "
                              f"functions at {P:,.0f} grid points")
    else:  # corrected: uniformised birth-death chain of N phases, Poisson cut of (Λ + μ) t_max steps
        steps = (spec.arrival_rate + spec.R * spec.service_rate) * float(t_max) + 10.0
        tail = Estimate(SECONDS_PER_UNIFORMISED_ENTRY * (steps * n + P * n), 8.0 * (4 * n + 2 * P),
                        "L2" if "L2" in hyper else "t_max",
                        f"the uniformised tail of {n:,.0f} phases over {steps:.3g} steps")
    assert method in FAITHFUL_METHODS + CORRECTED_METHODS
    return [chain, tail, Estimate(0.0, P * 8.0 * (min(n, 2.0 * DEFAULT_L2) + 4), "t_max/dt",
                                  f"the survival functions at {P:.3g} grid points")]


def _spread(M: int, D: int, R: int) -> float:
    """M·C(D+R−1, R−1) (:func:`sojourn.jsq_ps.solve.exact.spread_size`) by logs: a huge R costs nothing to size."""
    return M * math.exp(min(math.lgamma(D + R) - math.lgamma(R) - math.lgamma(D + 1), 700.0))


def exact_memory_cap(memory_limit: float, servers: int) -> float:
    """The most tagged-chain states (system states x R: exact's ``max_states``) within ``memory_limit`` bytes."""
    from .solve.budget import BYTES_PER_TAGGED_STATE

    return max(1.0, memory_limit / BYTES_PER_TAGGED_STATE) if math.isfinite(memory_limit) else math.inf
