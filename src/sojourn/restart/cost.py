"""What a restart request will cost, predicted from its inputs alone (:mod:`sojourn.core.checks.guard`, check 3): a
network's phase tables (model files: the phase counts), a simulation (events from the product form's flows) and
``optimise``'s sweep. Estimates in the API's field names; the command line, the API and the pipeline's jobs admit
the same ones. Constants checked by ``python benchmarks/cost_models.py``."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.checks.guard import Estimate

#: seconds per event of the restart kernel: a fixed part, a part per type (its rates and areas are summed over
#: the types at every event) and, under timeouts, a part per job present (the next expiry is searched); about
#: twice the CPU seconds benchmarks/cost_models.py measures (example1, 2e7 time units: 3.7e-8 s per event)
SECONDS_PER_EVENT = 6e-8
SECONDS_PER_EVENT_AND_TYPE = 6e-9
SECONDS_PER_EVENT_AND_JOB = 3e-9
#: timeouts add expiries and restarts to the signal-free network's events: at most this factor (a run that would
#: exceed it grows its queue and is stopped at max_jobs, which bounds its time)
TIMEOUT_EVENT_FACTOR = 3.0
# a network's phase tables (model files: the phase counts) are sized in sojourn.restart.model, which checks them


def event_rate(spec) -> tuple[float, float]:
    """(events per time unit, mean jobs present) of a simulation spec: arrivals, phase completions (a type's
    load times its rate, the product form's ρ_j μ_j) and signals at busy queues; under timeouts the signal-free
    network's, times :data:`TIMEOUT_EVENT_FACTOR`."""
    import numpy as np

    from .solve import solve

    net = spec.network
    if spec.semantics == "timeout":
        for i in range(len(net.queues)):
            net = net.with_signal_rate(0.0, i)
    L = net.layout
    try:
        sol = solve(net)
        rate = float(L.arrival.sum() + np.dot(sol.rho, L.mu) + np.dot(sol.queue_load, L.signal_ext))
        jobs = float(sol.mean_number.sum())
    except (ValueError, ArithmeticError, np.linalg.LinAlgError):  # no stationary product form: as a busy network
        rate = float(L.arrival.sum() * (1.0 + len(L.mu)) + L.mu.sum())
        jobs = math.nan
    if spec.semantics == "timeout":
        rate *= TIMEOUT_EVENT_FACTOR
    return rate, jobs


def simulate(spec, horizon: float, replications: int, dt: float, t_max: float, max_jobs: int = 500,
             runs: int = 1) -> list[Estimate]:
    """``runs`` simulations like ``spec`` (``optimise``'s sweep points) of ``replications`` replications of
    length ``horizon``: the events (time), the response-time histograms over the grid (memory)."""
    rate, jobs = event_rate(spec)
    J = len(spec.network.layout.mu)
    present = min(float(max_jobs), jobs if math.isfinite(jobs) else float(max_jobs))
    per = SECONDS_PER_EVENT + SECONDS_PER_EVENT_AND_TYPE * J + (
        SECONDS_PER_EVENT_AND_JOB * present if spec.semantics == "timeout" else 0.0)
    events = rate * float(horizon) * int(replications) * int(runs)
    points = float(t_max) / float(dt) + 1.0
    return [Estimate(events * per, 0.0, "horizon/replications",
                     f"{events:.3g} events ({rate:.3g} per time unit) over {int(replications) * int(runs)} "
                     f"replications of horizon {float(horizon):g}, ~{per:.2g} s each"),
            Estimate(0.0, points * 8.0 * (2 * int(replications) * int(runs) + 6), "t_max/dt",
                     f"{points:.3g} grid points of t_max {float(t_max):g} / dt {float(dt):g}, the response-time "
                     f"histogram of each replication")]


def events_per_replication(spec, horizon: float) -> float:
    return event_rate(spec)[0] * float(horizon)


@dataclass(frozen=True)
class Run:
    """What a simulation's cost depends on: its network and semantics (a SimulationSpec has both)."""

    network: object
    semantics: str = "signal"


def admit(specs, horizon: float, replications: int, dt: float, t_max: float, max_jobs: int = 500,
          max_events: float = 200_000_000) -> None:
    """The predicted time and memory of simulating ``specs`` admitted before anything is allocated
    (:func:`sojourn.core.checks.guard.admit_parts`), and a replication that would need more events than ``max_events``
    refused: it would stop at the cap and report "stopped", not a measurement (issue 32: --horizon 1e300 ran 34 s
    into the cap, exit 0)."""
    from ..core.checks.guard import admit_parts, term

    parts = []
    for spec in specs:
        rate = event_rate(spec)[0]
        if rate * float(horizon) > float(max_events):
            raise ValueError(f"{term('horizon')}: a replication of horizon {float(horizon):g} needs about "
                             f"{rate * float(horizon):.3g} events ({rate:.3g} per time unit), more than the "
                             f"{float(max_events):.3g} at which the kernel stops a run (it would report 'stopped', not "
                             f"a measurement); lower {term('horizon')} to at most {float(max_events) / rate:.3g}")
        parts += simulate(spec, horizon, replications, dt, t_max, max_jobs)
    admit_parts(parts)

