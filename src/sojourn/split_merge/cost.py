"""What a split-merge request will cost, predicted from its inputs alone (:mod:`sojourn.core.checks.guard`, check 3): a
simulation and the ranking of ``best``. Estimates in the API's field names; the command line, the API and the
pipeline's jobs admit the same ones. Constants checked by ``python benchmarks/cost_models.py``."""
from __future__ import annotations

from ..core.checks.guard import Estimate

#: seconds per simulated workunit, and per replica of it: about twice the CPU seconds benchmarks/cost_models.py
#: measures (split-merge n = 10, r = 2, 1.1 million workunits: 1.9e-8 s of CPU each; fork-join n = 100, r = 10,
#: q = 3: 3.7e-7 s), which the wall clock of a busy machine exceeds 3 to 4 times
SECONDS_PER_WORKUNIT = 4e-8
SECONDS_PER_REPLICA = {"split_merge": 1e-8, "fork_join": 3e-8}
SECONDS_PER_REPLICA_AND_HOST = {"split_merge": 0.0, "fork_join": 3e-10}
#: bytes per host (a winner tree over floor(n/r) super-servers, fork-join's per-host clocks)
BYTES_PER_HOST = 32.0
#: seconds of one (r, q) pair's order-statistic moments by quadrature (a law without a phase-type form: 0.27 s of
#: CPU per pair, lognormal, r <= 4), and a pair's exact values beside its QBD (costed by its phases below)
SECONDS_PER_QUADRATURE = 0.4
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


#: seconds per cubed phase of a QBD solve (the M/PH/c mean delay: 595 phases ~1.5 s on one core), where it is
#: attempted (at most QBD_MAX_PHASES phases at level c); beyond, the pair is simulated
SECONDS_PER_CUBED_QBD_PHASE = 7.1e-9
#: pairs up to which ``best``'s prediction looks at each one (beyond: the aggregate, which refuses anyway)
PAIRS_LOOKED_AT = 20_000


def best(hosts: int, law, quorum_min: int, max_replicas: int, workunits: int, replications: int, model: str,
         dt: float, t_max: float) -> list[Estimate]:
    """``best`` over q_min ≤ q ≤ r ≤ min(n, max_replicas): each pair's moments, then its exact values where it
    has them (P-K at c = 1, Erlang C for one phase, the QBD up to QBD_MAX_PHASES phases: their cost from the
    phase counts), else a simulation of ``replications`` × ``workunits`` (1.1 × with the warm-up)."""
    from math import comb

    from ..core.laws.phase_type import lumped_size
    from .model import as_law
    from .order_stats import ph_representation
    from .solve import QBD_MAX_PHASES

    n = int(hosts)
    qmin, rmax = int(quorum_min), min(n, int(max_replicas))
    n_pairs = pairs(qmin, rmax)
    law = as_law(law)
    rep = None if getattr(law, "name", "") == "erlang" and law.k > 1000 else ph_representation(law)
    m = None if rep is None else int(rep[0].size)
    sims = float(replications) * 1.1 * float(workunits)
    seconds = 0.0
    if n_pairs <= PAIRS_LOOKED_AT:
        for r in range(qmin, rmax + 1):
            c = n // r
            for q in range(qmin, r + 1):
                simulated = per_workunit(model, r, n) * sims
                if m is None:  # moments by quadrature, then a simulation
                    seconds += SECONDS_PER_QUADRATURE + simulated
                    continue
                size = float(lumped_size(m, q, r))
                seconds += size**3 * 1e-9 + SECONDS_PER_EXACT_PAIR  # the lumped order statistic, its moments
                if c == 1 or size == 1:
                    continue  # Pollaczek-Khinchine, Erlang C
                phases = float(comb(c + int(min(size, 60)) - 1, int(min(size, 60)) - 1))
                seconds += SECONDS_PER_CUBED_QBD_PHASE * phases**3 if phases <= QBD_MAX_PHASES else simulated
    else:
        replica_sum = (rmax - qmin + 1) ** 3 / 3.0
        seconds = n_pairs * (SECONDS_PER_EXACT_PAIR + sims * SECONDS_PER_WORKUNIT) + sims * replica_sum * (
            SECONDS_PER_REPLICA[model] + SECONDS_PER_REPLICA_AND_HOST[model] * n)
    points = float(t_max) / float(dt) + 1.0
    return [Estimate(seconds, 0.0, "hosts/max_replicas/workunits/replications",
                     f"{n_pairs:.3g} pairs (r, q) with {qmin} <= q <= r <= {rmax}: exact values where they exist "
                     f"(the QBD's phases), else {replications} x {workunits:,} workunits simulated"),
            Estimate(0.0, n_pairs * 400.0 + points * 8.0 * (4 * int(replications) + 8) + BYTES_PER_HOST * n,
                     "hosts/max_replicas", f"the ranking of {n_pairs:.3g} pairs and one simulation's histograms")]
