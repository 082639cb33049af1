"""The workunit's service time S_{q:r}: the q-th smallest of r iid replica times (split_merge.md §2(a)).

For a replica law with a phase-type form (exponential, Erlang, hyperexponential, phase-type) S_{q:r} is
PH(β_{q:r}, B_{q:r}) (lumped construction of :mod:`sojourn.core.laws.phase_type`), and its moments, sf and
quantiles are exact. For any other law the moments come from numerical quadrature of
P(S_{q:r} > x) = Σ_{i<q} C(r,i) F(x)^i (1 − F(x))^{r−i} (the paper's (1)); ``exact`` says which.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..core.laws import phase_type as ph
from ..core.laws.distributions import Deterministic, Distribution, Erlang, Exponential, HyperExponential, PhaseType


def ph_representation(law: Distribution):
    """(α, T) of ``law`` if it is phase-type (exponential, Erlang, hyperexponential, phase-type), else None."""
    if isinstance(law, PhaseType):
        return np.asarray(law.alpha, float), np.asarray(law.T, float)
    if isinstance(law, Exponential):
        return np.ones(1), np.array([[-law.rate]])
    if isinstance(law, Erlang):
        k = int(law.k)
        from ..core.checks.guard import Estimate, admit

        admit(Estimate(0.0, 8.0 * 4 * float(k) ** 2, "replica_law", f"the phase-type form of {law}: a {k:,} x {k:,} "
                       "sub-generator and its order statistics' tables"), record=False)
        T = -law.rate * np.eye(k) + law.rate * np.eye(k, k=1)
        return np.eye(1, k).ravel(), T
    if isinstance(law, HyperExponential):
        return np.asarray(law.probs, float), -np.diag(np.asarray(law.rates, float))
    return None


@functools.lru_cache(maxsize=256)
def _ph_cached(law: Distribution, q: int, r: int):
    rep = ph_representation(law)
    return ph.order_statistic_lumped(rep[0], rep[1], q, r, name="replica_law")


def order_statistic_ph(law: Distribution, q: int, r: int):
    """PH(β_{q:r}, B_{q:r}) (lumped) of S_{q:r} for a phase-type replica law; None for other laws."""
    q, r = ph.check_order(q, r)
    if ph_representation(law) is None:
        return None
    beta, B = _ph_cached(law, q, r)
    return beta.copy(), B.copy()


def order_statistic_sf(law: Distribution, q: int, r: int, x) -> np.ndarray:
    """P(S_{q:r} > x) from the replica law's sf (the paper's (1), complemented)."""
    x = np.asarray(x, dtype=float)
    F = np.clip(np.asarray(law.cdf(x), dtype=float), 0.0, 1.0)
    return sum(math.comb(r, i) * F**i * (1.0 - F) ** (r - i) for i in range(q))


@functools.lru_cache(maxsize=256)
def order_statistic_moments(law: Distribution, q: int, r: int) -> tuple[float, float, str]:
    """(E[S_{q:r}], E[S_{q:r}²], how): how = 'phase-type' (exact), 'deterministic' (exact) or 'quadrature'."""
    q, r = ph.check_order(q, r)
    rep = ph_representation(law)
    if rep is not None:
        beta, B = _ph_cached(law, q, r)
        return ph.moment(beta, B, 1), ph.moment(beta, B, 2), "phase-type"
    if isinstance(law, Deterministic):
        return law.value, law.value**2, "deterministic"
    from scipy.integrate import quad

    f1 = lambda x: float(order_statistic_sf(law, q, r, x))
    m1 = quad(f1, 0.0, np.inf, limit=400, epsabs=1e-12, epsrel=1e-10)[0]
    m2 = 2.0 * quad(lambda x: x * f1(x), 0.0, np.inf, limit=400, epsabs=1e-12, epsrel=1e-10)[0]
    return m1, m2, "quadrature"
