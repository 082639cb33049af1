"""w_n(t) = P(S > t | arrival found n at its server), for a whole time grid at once (§3.6).

Two options, each in a faithful form (the published formulas with the authors' quirks, §8.2)
and a corrected form (§8.3):

* :func:`expm_tails` — matrix exponential of the truncated defective generator (§3.6a).
  Faithful: state j = total at the server incl. the tagged customer, and the arrival who finds n
  starts in state n. Corrected: starts in state n+1 (i.e. n others).
* :func:`recurrence_tails_faithful` / :func:`uniformized_tails` — Masuyama–Takine-type
  uniformisation (§3.6b). Faithful: λ_n (not λ_{n+1}), λ_max = λ_0, Poisson sum cut at k < L2.
  Corrected: λ_{n+1}, θ = max λ, Poisson truncation from the error bound at each t.

Evaluation on a grid: exp(T t_i) for a uniform grid is obtained by stepping with E = expm(T Δ)
inside blocks of B points and E_B = expm(T BΔ) between blocks (two ``scipy.linalg.expm`` calls
instead of one per point); non-uniform grids fall back to one expm per distinct point.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from .uniformization import poisson_cutoff, poisson_mix


def defective_generator(lambdas: np.ndarray, service_rate: float, size: int) -> np.ndarray:
    """The §3.6a truncated defective generator T (size×size), j = customers incl. the tagged one.

    T[j,j+1] = λ_j (j ≤ size−2); T[j,j−1] = (j−1)μ/j (j ≥ 1); T[0,0] = −λ_0;
    T[j,j] = −(λ_j+μ) (1 ≤ j ≤ size−2); T[size−1,size−1] = −μ.       (§3.6a)
    """
    mu = float(service_rate)
    lam = np.asarray(lambdas, dtype=float)[:size]
    j = np.arange(size, dtype=float)
    T = np.zeros((size, size))
    idx = np.arange(size - 1)
    T[idx, idx + 1] = lam[: size - 1]  # §3.6a up-rate λ_j
    T[idx + 1, idx] = (j[1:] - 1) * mu / j[1:]  # §3.6a down-rate (j−1)μ/j
    diag = -(lam + mu)
    diag[0] = -lam[0]
    diag[-1] = -mu
    T[np.arange(size), np.arange(size)] = diag
    return T


def _uniform_step(t: np.ndarray):
    if t.size < 3:
        return None
    d = np.diff(t)
    dt = (t[-1] - t[0]) / (t.size - 1)
    if dt > 0 and np.max(np.abs(d - dt)) <= 1e-9 * max(1.0, dt):
        return dt
    return None


def _flush(M, tiny=1e-250):
    """Zero subnormal-range entries (far off-diagonal terms of expm): subnormal arithmetic made the
    block products ~4x slower at low load; the change is < 1e-250 per entry."""
    M = np.array(M)
    M[np.abs(M) < tiny] = 0.0
    return M


#: with ``weights``, the stepping stops once every weighted sum is below this: 2⁻⁵⁴ (below which 1 − x rounds to
#: exactly 1.0) with a margin of 2¹⁰ for the rounding of the later steps (:func:`expm_survival`)
NEGLIGIBLE = 2.0**-64


def _negligible(row, weights) -> bool:
    """Every weighted sum of the (non-negative) row below :data:`NEGLIGIBLE`."""
    return bool(np.all(row @ weights <= NEGLIGIBLE))


def expm_survival(T: np.ndarray, t: np.ndarray, block: int = 128, weights=None) -> np.ndarray:
    """W[i, n] = [exp(T t_i) 1]_n for every t_i (shape t.shape + (size,)).

    ``weights`` (size × m, the A_n vectors that will be summed against W, zero beyond a sum range): on a uniform
    grid, the stepping stops after the block where every sum W[i] @ weights is ≤ :data:`NEGLIGIBLE`, and the later
    rows are left 0. With E = exp(TΔ), exp(TBΔ), W[0] and the weights all non-negative (checked; else no stop), every
    computed sum is a sum of non-negative terms and the true sums never increase in t (exp(Tt) is sub-stochastic), so
    the later sums the stepping would have computed stay below 2⁻⁵⁴ and 1 − W[i] @ A is 1.0 to the bit either way
    (issue 36: on the paper grid the CDFs of A, B, C, A*, C* are exactly 1 from a third to three quarters of the
    grid on; the same CDFs, tests/jsq_ps/test_solve_methods.py)."""
    t = np.asarray(t, dtype=float)
    flat = t.ravel()
    size = T.shape[0]
    ones = np.ones(size)
    W = np.empty((flat.size, size))
    dt = _uniform_step(flat)
    if dt is None:
        cache = {}
        for i, ti in enumerate(flat):
            if ti not in cache:
                cache[ti] = scipy.linalg.expm(T * ti) @ ones
            W[i] = cache[ti]
        return W.reshape(t.shape + (size,))
    E = _flush(scipy.linalg.expm(T * dt))
    W[0] = ones if flat[0] == 0 else scipy.linalg.expm(T * flat[0]) @ ones
    B = min(block, flat.size)
    for i in range(1, B):
        W[i] = E @ W[i - 1]
    if flat.size > B:
        EBt = _flush(scipy.linalg.expm(T * (B * dt))).T
        stop = _may_stop(weights, size, E, EBt, W[0])
        if stop is not None and _negligible(W[B - 1], stop):
            W[B:] = 0.0
            return W.reshape(t.shape + (size,))
        for s in range(B, flat.size, B):
            e = min(s + B, flat.size)
            blk = W[s - B : e - B] @ EBt
            blk[np.abs(blk) < 1e-250] = 0.0  # no subnormals: they slow BLAS ~10x (error < 1e-250)
            W[s:e] = blk
            if stop is not None and e < flat.size and _negligible(blk[-1], stop):
                W[e:] = 0.0  # every later 1 − W @ A is 1.0 (the docstring)
                break
    return W.reshape(t.shape + (size,))


def _may_stop(weights, size, E, EBt, first):
    """The weights as a (size, m) array where the early stop of :func:`expm_survival` is sound (all of them, the
    step matrices and the first row finite and non-negative), else None."""
    if weights is None:
        return None
    w = np.asarray(weights, dtype=float).reshape(size, -1)
    for a in (w, E, EBt, first):
        if not (np.all(np.isfinite(a)) and a.min() >= 0.0):
            return None
    return w


def expm_tails(lambdas: np.ndarray, service_rate: float, size: int, t: np.ndarray, faithful: bool = True,
               weights=None) -> np.ndarray:
    """w_n(t), n = 0..size−1 (faithful) or n = 0..size−2 (corrected), by the §3.6a matrix exponential.

    Faithful: w_n = [exp(Tt)1]_n (the §3.6a indexing quirk). Corrected (§8.3): w_n = [exp(Tt)1]_{n+1}.
    ``weights``: the A_n vectors (rows of w_n's length) the caller sums w against: w is left 0 from where
    every such sum is negligible (:func:`expm_survival`; the same 1 − Σ A_n w_n to the bit).
    """
    if weights is not None:
        w = np.asarray(weights, dtype=float).reshape(-1, size - (0 if faithful else 1)).T
        weights = w if faithful else np.vstack([np.zeros((1, w.shape[1])), w])
    W = expm_survival(defective_generator(lambdas, service_rate, size), t, weights=weights)
    return W if faithful else W[..., 1:]


def recurrence_h_faithful(lambdas: np.ndarray, service_rate: float, L2: int) -> np.ndarray:
    """h[k, n], k, n < L2, of §3.6b as published: λ_n, θ = λ_0, h_{n,k} = 1 for n ≥ L2."""
    mu = float(service_rate)
    lam = np.asarray(lambdas, dtype=float)[:L2]
    q = lam[0] + mu  # §3.6b λ_max := λ_0
    n = np.arange(L2, dtype=float)
    a = n / (n + 1) * mu / q  # §3.6b (n/(n+1))·μ/(λmax+μ)
    b = 1 - (lam + mu) / q  # §3.6b 1 − (λ_n+μ)/(λmax+μ)
    c = lam / q  # §3.6b λ_n/(λmax+μ)
    h = np.ones((L2, L2))
    cur = np.ones(L2 + 1)  # cur[L2] = h_{L2,k} = 1
    for k in range(1, L2):
        new = b * cur[:L2] + c * cur[1:]
        new[1:] += a[1:] * cur[: L2 - 1]
        cur[:L2] = new
        h[k] = new
    return h


def recurrence_survival_faithful(lambdas, service_rate, L2, t, weights) -> np.ndarray:
    """Σ_n weights[n] w_n(t) with w_n(t) = Σ_{k<L2} Pois(k; (λ_0+μ)t) h_{n,k} (§3.6b, cut at L2).

    ``weights`` may be (L2,) or (L2, m) for several A-vectors sharing the same h-table.
    """
    h = recurrence_h_faithful(lambdas, service_rate, L2)
    g = h @ np.asarray(weights, dtype=float)  # g_k = Σ_n A_n h_{n,k}
    q = float(np.asarray(lambdas)[0]) + float(service_rate)
    return poisson_mix(q, np.asarray(t, dtype=float), g)


def uniformized_survival(lambdas, service_rate, size, t, weights, eps: float = 1e-13) -> np.ndarray:
    """Corrected §3.6b (§8.3 fixes): Σ_n weights[n]·P(S > t | n others), n = 0..size−1.

    Tagged customer with n others: arrivals at λ_{n+1} (the server holds n+1), other departures
    n·μ/(n+1), own completion μ/(n+1); arrivals blocked at n = size−1. Uniformisation constant
    θ+μ with θ = max λ; Poisson sum cut at K with P(Pois(q·t_max) > K) ≤ eps (grows with t).
    Error ≤ eps·Σ|weights| (plus the truncation at ``size``).
    """
    mu = float(service_rate)
    lam = np.asarray(lambdas, dtype=float)
    up = np.zeros(size)
    up[: size - 1] = lam[1:size]  # §8.3: λ_{n+1} with n others
    theta = max(float(up.max()), 0.0)
    q = theta + mu
    n = np.arange(size, dtype=float)
    a = n / (n + 1) * mu / q
    b = 1 - (up + mu) / q
    c = up / q
    t = np.asarray(t, dtype=float)
    K = poisson_cutoff(q * float(t.max()) if t.size else 0.0, eps)
    w = np.asarray(weights, dtype=float)
    g = np.empty((K,) + w.shape[1:])
    cur = np.ones(size + 1)
    cur[size] = 0.0  # never used: c[size−1] = 0 (blocked)
    g[0] = cur[:size] @ w
    for k in range(1, K):
        new = b * cur[:size] + c * cur[1:]
        new[1:] += a[1:] * cur[: size - 1]
        cur[:size] = new
        g[k] = new @ w
    return poisson_mix(q, t, g)
