"""Exact sojourn-time law of the M/M/1-PS queue (Masuyama & Takine 2003, constant λ; §3.6b note 3).

With n = number of *other* customers found by the tagged arrival and uniformisation constant
λ+μ, h_{n,k} = P(tagged customer still present after k uniformised events | n others):

    h_{n,0} = 1,   h_{n,k+1} = [ nμ/(n+1)·h_{n−1,k} + λ·h_{n+1,k} ] / (λ+μ)      (§3.6b note 3)
    W̄(x) = Σ_n (1−ρ)ρ^n Σ_k Pois(k; (λ+μ)x) h_{n,k}                            (§3.6b note 3)

Truncation (both bounds are rigorous since 0 ≤ h ≤ 1): n ≤ N with ρ^{N+1} ≤ eps/2, and
k ≤ K with P(Pois((λ+μ)·t_max) > K) ≤ eps/2. The n-weights are summed first,
g_k = Σ_{n≤N} (1−ρ)ρ^n h_{n,k}, so the time grid only meets a length-K vector.
"""
from __future__ import annotations

import math

import numpy as np

from ...core.checks.validate import nonnegative_finite, positive_finite
from .uniformization import poisson_cutoff, poisson_mix


def _check(arrival_rate, service_rate, t):
    lam = nonnegative_finite("arrival_rate", arrival_rate)
    mu = positive_finite("service_rate", service_rate)
    if not lam < mu:
        raise ValueError(f"arrival_rate must be in [0, service_rate={mu:g}) for a stable queue; got {lam!r}")
    t = np.asarray(t, dtype=float)
    if t.size and (not np.all(np.isfinite(t)) or t.min() < 0):
        raise ValueError("t must be finite and >= 0")
    return lam, mu, t


def mm1ps_weights(arrival_rate: float, service_rate: float, k_max: int, eps: float = 1e-13) -> np.ndarray:
    """g_k = Σ_n (1−ρ)ρ^n h_{n,k}, k = 0..k_max−1 (the mixed survival after k uniformised events)."""
    lam, mu = float(arrival_rate), float(service_rate)
    rho = lam / mu
    n_max = 0 if rho == 0 else int(math.ceil(math.log(eps / 2) / math.log(rho)))
    K = int(k_max)
    h = np.ones(n_max + K + 1)  # h_{n,0}, n = 0..N+K (the top K entries feed the shrinking window)
    n = np.arange(h.size, dtype=float)
    weights = (1 - rho) * rho ** np.arange(n_max + 1)
    g = np.empty(K)
    g[0] = weights.sum()
    down = n * mu / (n + 1) / (lam + mu)
    up = lam / (lam + mu)
    for k in range(1, K):
        m = h.size - 1  # new length: h_{n,k} needs h_{n+1,k-1}
        new = up * h[1 : m + 1]
        new[1:] += down[1:m] * h[: m - 1]
        h = new
        g[k] = weights @ h[: n_max + 1]
    # the omitted n > N carry mass ρ^{N+1}; count them as surviving (error ≤ ρ^{N+1}, and F(0) = 0 exactly)
    g += 1.0 - weights.sum()
    return g


def mm1ps_sojourn_sf(arrival_rate: float, service_rate: float, t, eps: float = 1e-13) -> np.ndarray:
    """P(S > t) for M/M/1-PS with Poisson(λ) arrivals and Exp(μ) work, for every t (any shape).

    Accurate to ~eps (absolute) on the whole array, including ρ = 0.99 and t ≈ 182.
    """
    lam, mu, t = _check(arrival_rate, service_rate, t)
    if t.size == 0:
        return np.zeros(t.shape)
    q = lam + mu
    K = poisson_cutoff(q * float(t.max()), eps / 2)
    g = mm1ps_weights(lam, mu, K, eps)
    return np.clip(poisson_mix(q, t, g), 0.0, 1.0)


def mm1ps_sojourn_cdf(arrival_rate: float, service_rate: float, t, eps: float = 1e-13) -> np.ndarray:
    """P(S ≤ t) for M/M/1-PS (see :func:`mm1ps_sojourn_sf`)."""
    return 1.0 - mm1ps_sojourn_sf(arrival_rate, service_rate, t, eps)
