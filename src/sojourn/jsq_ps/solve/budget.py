"""The exact method's budget: where ``exact`` runs by default, predicted before its costly part.

``exact`` (:mod:`sojourn.jsq_ps.solve.exact`) costs (1) small system-chain solves that choose its
truncation (min cap M, spread cap D; :func:`~sojourn.jsq_ps.solve.exact.truncation_caps`), then
(2) one solve of the system chain with S = M·C(D+R−1, R−1) states (sparse LU), the tagged chain (about R·S
states, T transitions) and K uniformised steps of it, K = the Poisson cut of (Λ + Rμ)·t_max, stepped level by
level (:mod:`sojourn.jsq_ps.solve.tagged_levels`). Part (2) is nearly all of it, and is predicted from S, R and
K once the caps are known:

    seconds ≈ SECONDS_PER_STEP_TRANSITION · K · T̂  +  SECONDS_PER_STATE · S  +  SECONDS_FIXED,
    T̂ = S·R·(1.5 + 0.65·R)   (the tagged chain's transitions; within 25 % for R = 1…6, above them at R ≥ 4)

A cell *fits* the budget ``{max_states, max_seconds}`` when its caps reach the truncation tolerance
with S·R ≤ max_states (about the tagged chain's size) and the predicted CPU seconds are ≤ max_seconds. Otherwise
``exact`` is not run there: its values are NaN and its ``validity_reason`` is ``over_budget``
(:mod:`sojourn.jsq_ps.solve.guards`), with the prediction in the attributes. Memory: since issue 36 the system
chains are solved without a factor (:mod:`sojourn.jsq_ps.solve.level_solve`), and the peak is the tagged chain's
arrays and the imports: 0.23 GB at S·R = 0.54 million (R = 5, ρ = 0.9), 0.35 GB at 1.67 million (R = 5, ρ = 0.95),
0.52 GB at 3.7 million (R = 6, ρ = 0.95), against 0.24, 0.75 and 1.61 GB with the sparse LU
(``benchmarks/exact_reach.py``, the whole process; :data:`BYTES_PER_TAGGED_STATE`).

Calibration (``python benchmarks/exact_budget.py``, CPU seconds of one process on this 2-core machine;
:data:`CALIBRATION`). The tagged chain is pruned (exact.py: 18–51 % of the box's transitions at
R = 4–6, ρ ≥ 0.8), so the cost per predicted box transition varies by cell; the constants are the largest
the edge cells need, and predictions there lean pessimistic. Re-run after issue 36 (the system law by levels, the
steps on two threads: the same CPU seconds, half the steps' wall time on two free cores): the fit moved little
(3.1e-10 · K·T̂ + 1.05e-5 · S + 0.04), the shipped constants still bound every cell from above where it matters
(R = 5, ρ = 0.9: predicted 4.26 s, measured 4.28 s; ρ = 0.95: 13.3 s, 10.6 s; R = 6, ρ = 0.9: 18.1 s, 13.1 s;
ρ = 0.95: 34.8 s, 26.9 s). The default budget (:data:`DEFAULT_BUDGET`, also config/config.yaml's) runs ``exact``
on every cell of R ≤ 6 up to ρ = 0.95 (issue 36's reach; ``python benchmarks/exact_budget.py frontier``) and on
every other cell predicted within the same time and state cap. Its seconds are CPU seconds: the steps, about 80 %
of them at R ≥ 5, ρ ≥ 0.9, run on numba's threads (two here), so on two free cores the wall time should be about
0.6 of them (R = 6, ρ = 0.95: about 16 s; not measured on a quiet machine — the load average stayed ≥ 10 while
this was built). What limits it: K ≈ 2 100–2 500 steps — at level ≥ 1 every state leaves at
rate q = Λ + Rμ, so a uniformised step is one event of the system and no stepping scheme takes fewer — each a
pass over the kept tagged states (0.26–0.77 million at R = 6, ρ = 0.9–0.95) at about 1 ns per kept transition
since the kernel is vectorised (2 before); the system chain's solves and the rest, on one core, are a quarter of
the CPU. The state set is pruned by the tagged chain's occupation measure (Little's law on the system law, known
before the run: exact.py, "pruning"), 13–27 % fewer states than the stationary-law threshold before it at R = 5, 6,
ρ = 0.9, 0.95, for bounds of 4.1–8.4e-10. Since those changes (issue 36) the four edge cells take 1.8–2.1× fewer CPU
seconds than these constants were fitted on (``benchmarks/exact_reach.py``, load average 19–28); the constants were
not refitted (``benchmarks/exact_budget.py`` needs a quiet machine), so the predictions now lean about 2×
pessimistic there: a cell near the budget's edge may be refused (then T runs) but none runs over. Krylov
projections were measured and rejected: Arnoldi reproduces the survival over the whole grid from one space of
dimension ~200 but its orthogonalisation (m²·n) cost 29 s at R = 4, ρ = 0.95 against 2.4 s; two-sided Lanczos needs
no orthogonalisation but lost accuracy (absolute error floor 2e-8 at R = 4, ρ = 0.95, growing with m).
"""
from __future__ import annotations

import math

#: CPU seconds per (uniformised step × predicted box transition T̂): with pruning (exact.py) the chain steps 18–51 %
#: of the box's transitions at R = 4–6, ρ ≥ 0.8, so per box transition the cost varies by cell;
#: benchmarks/exact_budget.py fits 2.8e-10 over all its cells (load average ≤ 1), and the cells with R ≥ 4,
#: ρ ≥ 0.8 need 3.3e-10 (R = 6, ρ = 0.8) to 5.5e-10 (R = 5, ρ = 0.9) beside the per-state term below: the largest
#: (predictions near the 10-s edge lean pessimistic: R = 6, ρ = 0.85 predicted 8.8 s, measured 6.9 s)
SECONDS_PER_STEP_TRANSITION = 5.5e-10
#: CPU seconds per system state (the truncation's system solves, the tagged chain's construction): the same fit
#: (1.0–1.1e-5; the system chain's sparse LU is now a third to a half of the time at R = 5, 6), rounded up
SECONDS_PER_STATE = 1.2e-5
#: CPU seconds of a small cell (grid sums, the truncation search's small solves): same fit (0.03), rounded up
SECONDS_FIXED = 0.1
#: peak bytes per tagged-chain state (system states x R: the state cap's unit): the tagged chain's levels and the
#: system chain (no factor since issue 36: 0.35 GB peak at S·R = 1.67 million, R = 5, ρ = 0.95, imports included,
#: 0.52 GB at 3.7 million; 600 with the LU), rounded up; benchmarks/cost_models.py checks it
BYTES_PER_TAGGED_STATE = 250.0
#: what the constants were fitted on (benchmarks/exact_budget.py, appended to benchmarks/exact_budget.jsonl)
CALIBRATION = ("30 cells R = 1..4 x rho = 0.1..0.95, R = 5, 6 at low load and at rho = 0.8..0.95 (no state cap), "
               "t_max = 182.32, dt = 0.01, the exact method with pruning and certified bounds "
               "(benchmarks/exact_budget.py, load average <= 1, 2026-12-02; checked again with the system law by "
               "levels and the steps on two threads, CPU seconds at load average 11-13, 2026-12-07)")

#: run ``exact`` where it fits these (the config's ``approximation.exact_budget`` default)
DEFAULT_BUDGET = {"max_states": 4_000_000, "max_seconds": 36.0}


class ExactOverBudget(Exception):
    """``exact`` would exceed its budget on this cell (raised before the costly part)."""

    def __init__(self, message: str, plan: dict):
        super().__init__(message)
        self.plan = plan


def tagged_transitions(servers: int, system_states: int) -> float:
    """T̂: the predicted number of transitions of the tagged chain (module doc)."""
    R = int(servers)
    return float(system_states) * R * (1.5 + 0.65 * R)


def predict_seconds(servers: int, system_states: int, poisson_terms: int) -> float:
    """Predicted CPU seconds of ``exact`` once its truncation is known (module doc)."""
    return (SECONDS_PER_STEP_TRANSITION * float(poisson_terms) * tagged_transitions(servers, system_states)
            + SECONDS_PER_STATE * float(system_states) + SECONDS_FIXED)


def check_budget(budget) -> dict:
    """A budget dict ``{max_states, max_seconds}`` validated (ValueError naming the field)."""
    if not isinstance(budget, dict):
        raise ValueError(f"exact_budget must be a mapping {{max_states, max_seconds}}; got {budget!r}")
    unknown = set(budget) - set(DEFAULT_BUDGET)
    if unknown:
        raise ValueError(f"exact_budget: unknown key(s) {sorted(unknown)}; allowed: {sorted(DEFAULT_BUDGET)}")
    out = {**DEFAULT_BUDGET, **budget}
    ms = out["max_states"]
    if isinstance(ms, bool) or not isinstance(ms, int) or ms < 1:
        raise ValueError(f"exact_budget.max_states must be an integer >= 1; got {ms!r}")
    sec = out["max_seconds"]
    if isinstance(sec, bool) or not isinstance(sec, (int, float)) or not math.isfinite(sec) or sec <= 0:
        raise ValueError(f"exact_budget.max_seconds must be a number > 0; got {sec!r}")
    return {"max_states": int(ms), "max_seconds": float(sec)}
