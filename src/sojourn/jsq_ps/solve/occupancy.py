"""A_n = P(an arrival joins a server holding n): birth–death option (§3.5).

The chain option (§3.4) is :attr:`sojourn.jsq_ps.solve.chain.ChainResult.A_n`.
"""
from __future__ import annotations

import numpy as np


def birth_death_occupancy(
    lambdas: np.ndarray, service_rate: float, size: int, arrival_weighted: bool = False
) -> np.ndarray:
    """A_0..A_{size−1} of the birth–death chain with birth λ_i, death μ (§3.5).

    Faithful (§3.5): A_n = Π_{i<n} λ_i/μ / Σ_{m<size} Π_{i<m} λ_i/μ (time-stationary law).
    ``arrival_weighted=True`` (§8.3 fix): A_n ∝ λ_n·p_n, the law an arrival to the tagged server sees.
    """
    lam = np.asarray(lambdas, dtype=float)[:size]
    ratio = lam / float(service_rate)
    prod = np.concatenate([[1.0], np.cumprod(ratio[: size - 1])])  # Π_{i<n} λ_i/μ, n = 0..size−1
    if arrival_weighted:
        weighted = prod * lam[:size]
        # all-zero weights happen only when λ_0 = 0 (a clamped Gupta fit, §3.3): the server then sits
        # empty, p = δ_0, and the arrival-weighted law degenerates; fall back to p itself
        if weighted.sum() > 0:
            prod = weighted
    return prod / prod.sum()  # §3.5 normalisation over m = 0..size−1
