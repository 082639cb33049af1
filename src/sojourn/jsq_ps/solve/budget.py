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
with S·R ≤ max_states (about the tagged chain's size; the memory is mostly the system chain's LU: 650 MB peak
at S·R = 1.2 million, R = 5, ρ = 0.93) and the predicted seconds are ≤ max_seconds. Otherwise ``exact`` is not
run there: its values are NaN and its ``validity_reason`` is ``over_budget``
(:mod:`sojourn.jsq_ps.solve.guards`), with the prediction in the attributes.

Calibration (``python benchmarks/exact_budget.py``, CPU seconds of one process, this 2-core machine
shared with other jobs — load average 15–30 during the calibration, which roughly doubles the CPU seconds of
these memory-bound steps against a quiet machine — so the constants lean pessimistic): see :data:`CALIBRATION`.
The default budget (:data:`DEFAULT_BUDGET`, also config/config.yaml's) runs ``exact`` on every cell of R ≤ 4 up
to ρ = 0.95 (R = 4, ρ = 0.95: predicted 3.5 s, measured 2.1–3.5 s), R = 5 up to ρ = 0.92 (predicted 7.2 s,
measured 6.1 s) and R = 6 up to ρ = 0.81 (7.5 s, 6.1 s) on the paper grid (``python benchmarks/exact_budget.py
frontier``; it was ρ = 0.9 and 0.8), and on every other cell predicted within the same time and state cap.
Beyond, the time binds: the next load needs larger caps (R = 5, ρ = 0.93: M = 63, D = 15, S = 244 188,
predicted 13.4 s, measured 13.5 s), R = 5, ρ = 0.95 measured 13.6–17.6 s, R = 6, ρ = 0.9 26.6–26.8 s,
ρ = 0.95 40.4 s (it was 35, 53 and 100 s with the per-state CSR product at load 3–4; side by side at the same load
the level kernel is 2.4–2.7× faster, ``benchmarks/exact_speed.py``). What limits it: K ≈ 2 100–2 500 steps,
each a pass over 1.4–2.8 million tagged states with 5–6 moves each at 0.5–0.9 ns per move and level (the
floor of a row-gather update on this machine, measured with a bare numba kernel), plus the system chain's
sparse LU (about a third of the time at R = 5, ρ = 0.93).
"""
from __future__ import annotations

import math

#: CPU seconds per (uniformised step × tagged-chain transition): benchmarks/exact_budget.py fits 7.5e-10 on its
#: cells (load average 15–30); the R = 5, 6 cells at ρ ≥ 0.85 cost up to 1.3× that fit, so rounded up to the
#: largest of the cells near the 10-s edge (predictions there lean pessimistic)
SECONDS_PER_STEP_TRANSITION = 1.0e-9
#: CPU seconds per system state (system solves, tagged-chain construction): same fit (3.0e-6), rounded up
SECONDS_PER_STATE = 5e-6
#: CPU seconds of a small cell (grid sums, the truncation search's small solves): same fit (0.05), rounded up
SECONDS_FIXED = 0.1
#: what the constants were fitted on (benchmarks/exact_budget.py, appended to benchmarks/exact_budget.jsonl)
CALIBRATION = ("30 cells R = 1..4 x rho = 0.1..0.95, R = 5, 6 at low load and at rho = 0.8..0.95 (no state cap), "
               "t_max = 182.32, dt = 0.01 (benchmarks/exact_budget.py, load average 15-30), and the side-by-side "
               "cells of benchmarks/exact_speed.py")

#: run ``exact`` where it fits these (the config's ``approximation.exact_budget`` default)
DEFAULT_BUDGET = {"max_states": 2_000_000, "max_seconds": 10.0}


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
