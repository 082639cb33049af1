"""What a split-merge request will cost, predicted from its inputs alone (:mod:`sojourn.core.guard`, check 3): a
simulation and the ranking of ``best``. Estimates in the API's field names; the command line, the API and the
pipeline's jobs admit the same ones. Constants checked by ``python benchmarks/cost_models.py``."""
from __future__ import annotations

from ..core.guard import Estimate

#: seconds per simulated workunit, and per replica of it (2 x 500 000 workunits, load 0.9, q = 1, exponential:
#: split-merge n = 10, r = 2: 1.7e-7 s; r = 10: 1.6e-7 s. Fork-join scans its hosts per replica: n = 100, r = 2:
#: 5.6e-7 s; n = 100, r = 10, q = 3: 2.0e-6 s; n = 1000, r = 10: 7.0e-6 s)
SECONDS_PER_WORKUNIT = 2e-7
SECONDS_PER_REPLICA = {"split_merge": 5e-8, "fork_join": 1.5e-7}
SECONDS_PER_REPLICA_AND_HOST = {"split_merge": 0.0, "fork_join": 6e-10}
#: bytes per host (a winner tree over floor(n/r) super-servers, fork-join's per-host clocks)
BYTES_PER_HOST = 32.0
#: seconds of one (r, q) pair's order-statistic moments by quadrature (a law without a phase-type form), and of
#: its exact values at most (the M/PH/c QBD is solved up to QBD_MAX_PHASES phases: ~1.5 s)
SECONDS_PER_QUADRATURE = 0.05
SECONDS_PER_EXACT_PAIR = 0.05


def per_workunit(model: str, replicas: int, hosts: int) -> float:
    return SECONDS_PER_WORKUNIT + replicas * (SECONDS_PER_REPLICA[model] + SECONDS_PER_REPLICA_AND_HOST[model] * hosts)


def simulate(spec, simulated_workunits: float, replications: int, dt: float, t_max: float) -> list[Estimate]:
    """``replications`` replications of ``spec`` of ``simulated_workunits`` workunits each (recorded and warm-up):
    the workunits' time, the delay and latency histograms over the grid, the hosts' state."""
    reps = int(replications)
    per = per_workunit(spec.model, spec.replicas, spec.hosts)
    events = float(simulated_workunits) * reps
    points = float(t_max) / float(dt) + 1.0
    return [Estimate(events * per, 0.0, "workunits/horizon/replications",
                     f"{events:.3g} workunits of {spec.replicas} replicas over {reps} replication{'s' * (reps > 1)}, "
                     f"~{per:.2g} s each"),
            Estimate(0.0, points * 8.0 * (4 * reps + 8), "t_max/dt",
                     f"{points:.3g} grid points of t_max {float(t_max):g} / dt {float(dt):g}, the delay and latency "
                     f"histograms of each of {reps} replications"),
            Estimate(0.0, BYTES_PER_HOST * spec.hosts, "hosts", f"the state of {spec.hosts:,} hosts")]


def pairs(quorum_min: int, max_replicas: int) -> float:
    """The (r, q) pairs ``best`` looks at: q_min ≤ q ≤ r ≤ r_max."""
    k = max(0, int(max_replicas) - int(quorum_min) + 1)
    return k * (k + 1) / 2.0


def best(hosts: int, law, quorum_min: int, max_replicas: int, workunits: int, replications: int, model: str,
         dt: float, t_max: float) -> list[Estimate]:
    """``best`` over q_min ≤ q ≤ r ≤ min(n, max_replicas), each pair's moments, then (at worst) a simulation of
    ``replications`` × ``workunits`` (1.1 × with the warm-up) where no exact value exists: the prediction assumes
    every pair is simulated, so it errs on the long side where many have exact values."""
    rmax = min(int(hosts), int(max_replicas))
    n_pairs = pairs(quorum_min, rmax)
    from .model import as_law
    from .order_stats import ph_representation

    rep = ph_representation(as_law(law))
    per_pair = SECONDS_PER_EXACT_PAIR + (0.0 if rep is not None else SECONDS_PER_QUADRATURE)
    # the simulated workunits of all pairs: Σ over r of (r - q_min + 1) pairs, each r replicas per workunit
    sims = float(replications) * 1.1 * float(workunits)
    k = max(0, rmax - int(quorum_min) + 1)
    replica_sum = sum((r - int(quorum_min) + 1) * r for r in range(int(quorum_min), rmax + 1)) if k < 10**5 else \
        k**3 / 3.0 + int(quorum_min) * k**2 / 2.0
    seconds = n_pairs * (per_pair + sims * SECONDS_PER_WORKUNIT) + sims * replica_sum * (
        SECONDS_PER_REPLICA[model] + SECONDS_PER_REPLICA_AND_HOST[model] * hosts)
    points = float(t_max) / float(dt) + 1.0
    return [Estimate(seconds, 0.0, "hosts/max_replicas/workunits/replications",
                     f"{n_pairs:.3g} pairs (r, q) with {quorum_min} <= q <= r <= {rmax}, each simulated at worst: "
                     f"{replications} x {workunits:,} workunits"),
            Estimate(0.0, n_pairs * 400.0 + points * 8.0 * (4 * int(replications) + 8) + BYTES_PER_HOST * hosts,
                     "hosts/max_replicas", f"the ranking of {n_pairs:.3g} pairs and one simulation's histograms")]

