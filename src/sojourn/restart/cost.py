"""What a restart request will cost, predicted from its inputs alone (:mod:`sojourn.core.guard`, check 3): a
network's phase tables (model files: the phase counts), a simulation (events from the product form's flows) and
``optimise``'s sweep. Estimates in the API's field names; the command line, the API and the pipeline's jobs admit
the same ones. Constants checked by ``python benchmarks/cost_models.py``."""
from __future__ import annotations

import math

from ..core.guard import Estimate

#: seconds per event of the restart kernel: a fixed part, a part per type (its rates and areas are summed over
#: the types at every event) and, under timeouts, a part per job present (the next expiry is searched)
SECONDS_PER_EVENT = 1.5e-7
SECONDS_PER_EVENT_AND_TYPE = 6e-9
SECONDS_PER_EVENT_AND_JOB = 3e-9
#: timeouts add expiries and restarts to the signal-free network's events: at most this factor (a run that would
#: exceed it grows its queue and is stopped at max_jobs, which bounds its time)
TIMEOUT_EVENT_FACTOR = 3.0
#: a network's dense tables are J x J (phase moves, restart moves, their cumulative copies: 6 of them); its
#: checks and the traffic equations solve J x J and P x P systems (seconds per J^3)
TABLES_PER_TYPE_PAIR = 6
SECONDS_PER_CUBED_TYPE = 2e-9


def phase_counts(d: dict) -> list[tuple[str, int]]:
    """(key path of a class's service, its phases) for every class of a model-file mapping, read before anything
    is built (an ``erlang: 100000000`` service would otherwise be laid out as a 1e8 x 1e8 matrix)."""
    out = []
    for qi, qd in enumerate(d.get("queues") or []):
        if not isinstance(qd, dict):
            continue
        for ci, cd in enumerate(qd.get("classes") or []):
            svc = cd.get("service") if isinstance(cd, dict) else None
            if not isinstance(svc, dict):
                continue
            path = f"queues[{qd.get('name', qi)}].classes[{cd.get('name', ci)}].service"
            if isinstance(svc.get("erlang"), int) and not isinstance(svc.get("erlang"), bool):
                out.append((f"{path}.erlang", int(svc["erlang"])))
            elif isinstance(svc.get("rates"), list):
                out.append((f"{path}.rates", len(svc["rates"])))
            elif isinstance(svc.get("T"), list):
                out.append((f"{path}.T", len(svc["T"])))
    return out


def network(counts: list[tuple[str, int]]) -> Estimate:
    """The phase tables of a network whose classes have these phase counts: J x J tables, the classes' P x P
    checks and the traffic equations."""
    if not counts:
        return Estimate()
    J = float(sum(p for _, p in counts))
    largest = max(counts, key=lambda c: c[1])
    return Estimate(SECONDS_PER_CUBED_TYPE * (J**3 + sum(float(p) ** 3 for _, p in counts)),
                    8.0 * TABLES_PER_TYPE_PAIR * J * J + 8.0 * 4 * sum(float(p) ** 2 for _, p in counts),
                    largest[0], f"a network of {J:.3g} phase types (largest class: {largest[1]:,} phases): its "
                                f"{TABLES_PER_TYPE_PAIR} tables of {J:.3g} x {J:.3g}")


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
