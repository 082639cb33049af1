"""The exact method's budget: where ``exact`` runs by default, predicted before its costly part.

``exact`` (:mod:`sojourn.jsq_ps.solve.exact`) costs (1) small system-chain solves that choose its
truncation (min cap M, spread cap D; :func:`~sojourn.jsq_ps.solve.exact.truncation_caps`), then
(2) one solve of the system chain with S = M·C(D+R−1, R−1) states, the tagged chain (about R·S
states, T transitions) and K uniformised steps of it, K = the Poisson cut of (Λ + Rμ)·t_max. Part (2)
is nearly all of it, and is predicted from S, R and K once the caps are known:

    seconds ≈ SECONDS_PER_STEP_TRANSITION · K · T̂  +  SECONDS_PER_STATE · S  +  SECONDS_FIXED,
    T̂ = S·R·(1.5 + 0.65·R)   (the tagged chain's transitions; within 12 % for R = 1…6)

A cell *fits* the budget ``{max_states, max_seconds}`` when its caps reach the truncation tolerance
with S·R ≤ max_states (about the tagged chain's size, the memory) and the predicted seconds are
≤ max_seconds. Otherwise ``exact`` is not run there: its values are NaN and its ``validity_reason``
is ``over_budget`` (:mod:`sojourn.jsq_ps.solve.guards`), with the prediction in the attributes.

Calibration (``python benchmarks/exact_budget.py``, CPU seconds of one process, this 2-core machine
shared with other jobs, so the constants lean pessimistic): see :data:`CALIBRATION`. The default
budget (:data:`DEFAULT_BUDGET`, also the config schema's default) runs ``exact`` on every cell of
R ≤ 4 up to ρ = 0.95 (R = 4, ρ = 0.95: predicted 5.4 s, S = 102 714, K = 1 714; measured 4.5 s), R = 5 up to
ρ = 0.9 (8.5 s predicted, 7.0 s measured) and R = 6 up to ρ = 0.8 (9.9 s predicted, 6.5 s measured), and on
every other cell predicted within the same time and state cap. Beyond, the state cap binds first (R = 5,
ρ = 0.92 and R = 6, ρ = 0.85 need more than 600 000 tagged states to reach the tolerance), and the time would
(R = 5, ρ = 0.95: 34 s; R = 6, ρ = 0.9: 51 s, ρ = 0.95: 100 s measured): the chain's uniformised steps are
memory-bound sparse products, ~2e-9 s per step and transition at 10^7 transitions.
"""
from __future__ import annotations

import math

#: CPU seconds per (uniformised step × tagged-chain transition): benchmarks/exact_budget.py fits 4.3e-10 on its
#: cells, but a step costs more per transition on large chains (cache): 1.0–1.6e-9 per K·T̂ on the reached
#: truncations of R = 4–6 that cost 4–7 s (benchmarks/exact_speed.jsonl), 2.0–2.1e-9 at 35–100 s; this is the
#: largest of the 10-s region, so predictions there lean pessimistic
SECONDS_PER_STEP_TRANSITION = 1.3e-9
#: CPU seconds per system state (system solve, tagged-chain construction): same fit
SECONDS_PER_STATE = 1.5e-5
#: CPU seconds of a small cell (grid sums, the truncation search's small solves): same fit
SECONDS_FIXED = 0.1
#: what the constants were fitted on (benchmarks/exact_budget.py, appended to benchmarks/exact_budget.jsonl)
CALIBRATION = ("26 cells R = 1..4 (and R = 5, 6 at low load, R = 5 at rho 0.8, 0.9, R = 6 at 0.8), rho = 0.1..0.95, "
               "t_max = 182.32, dt = 0.01 (benchmarks/exact_budget.py), and the step cost of the 4-7 s cells of "
               "benchmarks/exact_speed.py")

#: run ``exact`` where it fits these (the config's ``approximation.exact_budget`` default)
DEFAULT_BUDGET = {"max_states": 600_000, "max_seconds": 10.0}


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
