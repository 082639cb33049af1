"""Reference backend: the same JSQ-PS spec run in Ciw 3.2 (jsq_ps_methods.md §2 and §7).

Node 1 is a dispatcher (``Deterministic(0)`` service, infinitely many servers) whose router picks one
of the PS nodes 2..R+1 (``ciw.PSNode``; ``number_of_servers`` = ∞ for plain/capacitated PS, c for
limited PS; ``ps_thresholds`` = θ for capacitated PS).

Ciw draws from Python's global ``random`` (ecosystem.md §0.1, §2.6), so a replication is run by
:func:`run_replication` in a spawned worker process which seeds Ciw itself: results do not depend on
what else runs in the caller's process, on the worker that runs it, or on the order of replications.
"""
from __future__ import annotations

import json
import time

import numpy as np


def _routers(spec):
    """Dispatcher router for ``spec.dispatch`` (Ciw routing objects or a small custom router)."""
    import random

    import ciw

    R = spec.R
    dest = list(range(2, R + 2))
    if spec.dispatch == "jsq":
        # counts customers present (in service or waiting); uniform random tie-break
        return ciw.routing.LoadBalancing(destinations=dest, tie_break="random")
    if spec.dispatch == "random":
        return ciw.routing.Probabilistic(destinations=dest, probs=[1.0 / R] * R)

    class RoundRobin(ciw.routing.NodeRouting):
        def __init__(self):
            self.k = 0

        def next_node(self, ind):
            node = self.simulation.nodes[dest[self.k]]
            self.k = (self.k + 1) % R
            return node

    class JSQd(ciw.routing.NodeRouting):
        """d distinct PS nodes uniformly (global ``random``, seeded by ciw.seed), then JSQ among them."""

        def next_node(self, ind):
            cand = random.sample(dest, spec.choices)
            sizes = [self.simulation.nodes[i].number_of_individuals for i in cand]
            m = min(sizes)
            return self.simulation.nodes[ciw.random_choice([i for i, n in zip(cand, sizes, strict=True) if n == m])]

    if spec.dispatch == "round-robin":
        return RoundRobin()
    if spec.dispatch == "jsq-d":
        return JSQd()
    raise ValueError(f"dispatch {spec.dispatch!r} is not supported by the ciw backend")


def build_simulation(spec):
    """A ``ciw.Simulation`` of ``spec`` (seed Ciw before calling this)."""
    import ciw

    R = spec.R
    c = spec.ps_limit if spec.discipline == "limited" else float("inf")
    theta = spec.ps_threshold if spec.discipline == "capacitated" else 1
    network = ciw.create_network(
        arrival_distributions=[spec.interarrival.to_ciw()] + [None] * R,
        service_distributions=[ciw.dists.Deterministic(value=0.0)] + [spec.service.to_ciw() for _ in range(R)],
        number_of_servers=[float("inf")] + [c] * R,
        routing=ciw.routing.NetworkRouting(routers=[_routers(spec)] + [ciw.routing.Leave() for _ in range(R)]),
        ps_thresholds=[1] + [theta] * R,
    )
    return ciw.Simulation(network, node_class=[ciw.Node] + [ciw.PSNode] * R)


def run_replication(spec_json: str, py_seed: int, horizon: float, warmup: float, cooldown: float,
                    dt: float, nbins: int, occupancy_max: int) -> dict:
    """One seeded Ciw replication, reduced to the same streamed statistics as the numba kernels.

    Sojourn = exit date − arrival date at the PS node; window on that arrival date; occupancy at
    arrival = ``queue_size_at_arrival`` (Node.accept stores the number present *before* the arrival,
    waiting customers included). Customers arriving in (warmup, horizon − cooldown) are all followed to
    departure: the run is extended past the horizon while any of them is still present.
    """
    import ciw

    from .model import JSQPS

    spec = JSQPS.from_dict(json.loads(spec_json))
    rec_end = horizon - cooldown
    ciw.seed(py_seed)
    t0 = time.perf_counter()
    sim = build_simulation(spec)
    R = spec.R
    end = horizon
    sim.simulate_until_max_time(end)
    while any(warmup < ind.arrival_date < rec_end for node in sim.nodes[2 : R + 2] for ind in node.all_individuals):
        end += max(cooldown, 1.0)
        sim.simulate_until_max_time(end)
    hist = np.zeros(nbins, np.int64)
    occ = np.zeros(occupancy_max + 1, np.int64)
    acc = np.zeros(5)  # count, overflow, sum, sumsq, max
    area = 0.0
    inv_dt = 1.0 / dt
    for rec in sim.get_all_records(only=["service"]):
        if rec.node == 1:
            continue
        a, e = rec.arrival_date, rec.exit_date
        lo, hi = max(a, warmup), min(e, rec_end)
        if hi > lo:
            area += hi - lo  # ∫ N(u) du = Σ_customers |(arrival, exit) ∩ window|
        if warmup < a < rec_end:
            soj = e - a
            b = int(soj * inv_dt)
            if b < nbins:
                hist[b] += 1
            else:
                acc[1] += 1
            acc[0] += 1
            acc[2] += soj
            acc[3] += soj * soj
            acc[4] = max(acc[4], soj)
            occ[min(rec.queue_size_at_arrival, occupancy_max)] += 1
    for node in sim.nodes[2 : R + 2]:  # customers still present (arrived after the window)
        for ind in node.all_individuals:
            lo, hi = max(ind.arrival_date, warmup), rec_end
            if hi > lo:
                area += hi - lo
    return {"hist": hist, "occ": occ, "acc": acc, "area": area, "events": -1,
            "wall_time": time.perf_counter() - t0}


def run_replications(tasks: list[tuple], max_workers: int | None = None) -> list[dict]:
    """Run :func:`run_replication` argument tuples in spawned worker processes; results in task order.

    The workers are fresh interpreters in which nothing but Ciw draws from the global ``random``, and each
    task re-seeds Ciw (``ciw.seed``: Python ``random`` and ``ciw.rng``) before building its simulation, so a
    task's result does not depend on which worker runs it or what ran there before.
    Callers must guard their script with ``if __name__ == "__main__":`` (spawn start method).
    ``max_workers=0`` runs the tasks one after the other in the calling process instead (for callers that
    cannot start processes, e.g. daemonic workers); that is reproducible only if no other thread of the
    process draws from Python's global ``random`` meanwhile (ecosystem.md §0.1).
    """
    from ..core.runs.progress import steps

    if max_workers == 0:
        return [run_replication(*task) for task in steps(tasks, "replications (Ciw)")]
    import os

    from ..core.cluster.processes import OwnedPool

    if max_workers is None:
        max_workers = max(1, min(len(tasks), os.cpu_count() or 1))
    with OwnedPool(max_workers, "spawn") as pool:  # its workers end with this process (a signal, an error)
        futures = [pool.submit(run_replication, *task) for task in tasks]
        return [f.result() for f in steps(futures, "replications (Ciw)")]


__all__ = ["build_simulation", "run_replication", "run_replications"]
