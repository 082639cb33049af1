"""Phase-type algebra on (α, T): validation, moments, survival function, quantiles, sampling, min and max.

A PH(α, T) law is the absorption time of a CTMC on m transient phases with initial law α (a row vector,
Σα ≤ 1; the remainder 1 − Σα is an atom at 0) and sub-generator T (negative diagonal, non-negative
off-diagonal entries, row sums ≤ 0, exit rates t = −T·1). Every function takes plain arrays and
validates through :func:`validate`; :class:`sojourn.core.distributions.PhaseType` is the law object
built on top. Formulas: Neuts (1981); Latouche & Ramaswami (1999), ch. 2.
"""
from __future__ import annotations

import math

import numpy as np


def validate(alpha, T, name: str = "ph", atom: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(α, T) as float arrays, or ValueError naming ``<name>.alpha`` / ``<name>.T`` and what is wrong.

    α: non-negative, summing to 1 (``atom=False``) or to at most 1 (``atom=True``: mass 1 − Σα at 0).
    T: square m×m, finite, negative diagonal, non-negative off-diagonal, row sums ≤ 0, and absorption
    reachable from every phase (equivalently: T non-singular).
    """
    a = np.asarray(alpha, dtype=float).ravel()
    Tm = np.asarray(T, dtype=float)
    m = a.size
    if m == 0:
        raise ValueError(f"{name}.alpha must be non-empty")
    if Tm.size == m * m and Tm.ndim != 2:
        Tm = Tm.reshape(m, m)
    if Tm.shape != (m, m):
        raise ValueError(f"{name}.T must be a {m}x{m} matrix to match {name}.alpha; got shape {Tm.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}.alpha must be finite; got {a.tolist()}")
    if not np.all(np.isfinite(Tm)):
        raise ValueError(f"{name}.T must be finite")
    total = float(a.sum())
    if np.any(a < 0):
        raise ValueError(f"{name}.alpha must be non-negative; got {a.tolist()}")
    if atom:
        if total > 1.0 + 1e-9:
            raise ValueError(f"{name}.alpha must sum to at most 1 (sub-stochastic); got sum {total:g}")
    elif abs(total - 1.0) > 1e-9:
        raise ValueError(f"{name}.alpha must be non-negative and sum to 1; got sum {total:g}")
    diag = np.diag(Tm)
    off = Tm - np.diag(diag)
    if np.any(diag >= 0) or np.any(off < 0):
        raise ValueError(f"{name}.T must have negative diagonal and non-negative off-diagonal entries")
    exit_rates = -Tm.sum(axis=1)
    if np.any(exit_rates < -1e-12 * np.abs(diag)):
        raise ValueError(f"{name}.T must have non-positive row sums (exit rates >= 0); "
                         f"row sums {(-exit_rates).tolist()}")
    stuck = _phases_without_exit(off, exit_rates > 1e-12 * np.abs(diag))
    if stuck:
        raise ValueError(f"{name}.T must be non-singular (absorption must be certain): no path to absorption "
                         f"from phase(s) {stuck}")
    return a, Tm


def _phases_without_exit(off: np.ndarray, exits: np.ndarray) -> list[int]:
    """Phases from which no exit phase is reachable along positive off-diagonal rates."""
    reach = exits.copy()
    while True:
        new = reach | ((off > 0) & reach[None, :]).any(axis=1)
        if np.array_equal(new, reach):
            break
        reach = new
    return np.flatnonzero(~reach).tolist()


def exit_vector(T) -> np.ndarray:
    """t = −T·1, the absorption rate from each phase."""
    T = np.asarray(T, dtype=float)
    return np.maximum(-T.sum(axis=1), 0.0)


def moment(alpha, T, k: int) -> float:
    """E[X^k] = k! α (−T)^{−k} 1."""
    a, T = np.asarray(alpha, dtype=float), np.asarray(T, dtype=float)
    # (−T)^{−1} once, then k products: the arithmetic of earlier versions, so that laws rescaled by their
    # mean (PhaseType.scaled_to_mean) and every simulation drawing from them stay bit-identical
    M = np.linalg.inv(-T)
    v = np.ones(a.size)
    for _ in range(int(k)):
        v = M @ v
    return float(math.factorial(int(k)) * (a @ v))


def mean(alpha, T) -> float:
    return moment(alpha, T, 1)


def variance(alpha, T) -> float:
    m1 = moment(alpha, T, 1)
    return moment(alpha, T, 2) - m1 * m1


def sf(alpha, T, t) -> np.ndarray:
    """P(X > t) = α exp(T t) 1 for every t (any shape), by ``scipy.sparse.linalg.expm_multiply``.

    A uniform grid is done in one call (expm_multiply's time stepping); other points one call each
    (sorted, duplicates once). Negative t give 1 − (atom at 0) ... i.e. P(X > t) = 1 for t < 0.
    """
    from scipy.sparse.linalg import expm_multiply

    a, T = np.asarray(alpha, dtype=float), np.asarray(T, dtype=float)
    t = np.asarray(t, dtype=float)
    flat = t.ravel()
    out = np.ones(flat.size)
    pos = flat >= 0
    if not pos.any():
        return out.reshape(t.shape)
    A = T.T  # α exp(Tt) = (exp(Tᵀt) αᵀ)ᵀ
    u, inv = np.unique(flat[pos], return_inverse=True)
    if u.size >= 3 and np.allclose(np.diff(u), (u[-1] - u[0]) / (u.size - 1), rtol=1e-9, atol=0):
        rows = expm_multiply(A, a, start=u[0], stop=u[-1], num=u.size, endpoint=True)
    else:
        rows = np.array([expm_multiply(A * x, a) for x in u])
    vals = np.clip(np.asarray(rows).sum(axis=-1), 0.0, 1.0)
    out[pos] = vals[inv]
    return out.reshape(t.shape)


def cdf(alpha, T, t) -> np.ndarray:
    return 1.0 - sf(alpha, T, t)


def quantile(alpha, T, p) -> np.ndarray:
    """x_p = inf{x : P(X ≤ x) ≥ p} for p in [0, 1) (any shape), by bracketing and Brent's method."""
    from scipy.optimize import brentq

    a, T = np.asarray(alpha, dtype=float), np.asarray(T, dtype=float)
    p = np.asarray(p, dtype=float)
    if np.any((p < 0) | (p >= 1)) or not np.all(np.isfinite(p)):
        raise ValueError(f"p must be in [0, 1); got {p.tolist()}")
    atom0 = 1.0 - float(a.sum())
    scale = max(mean(a, T), 1e-300) if a.sum() > 0 else 1.0
    out = np.empty(p.size)
    for i, q in enumerate(p.ravel()):
        if q <= atom0:
            out[i] = 0.0
            continue
        hi = scale
        while cdf(a, T, hi) < q:
            hi *= 2.0
        out[i] = brentq(lambda x: float(cdf(a, T, x)) - q, 0.0, hi, xtol=1e-12 * hi, rtol=1e-12)
    return out.reshape(p.shape)


def sample(alpha, T, size, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws (int or shape) by walking the chains of all draws together (vectorised over draws)."""
    a, T = np.asarray(alpha, dtype=float), np.asarray(T, dtype=float)
    m = a.size
    n = int(np.prod(size))
    rates = -np.diag(T)
    jump = np.where(np.eye(m, dtype=bool), 0.0, T) / rates[:, None]  # P(next phase j | leave i)
    cum = np.cumsum(np.concatenate([jump, exit_vector(T)[:, None] / rates[:, None]], axis=1), axis=1)
    start = np.concatenate([a, [max(0.0, 1.0 - a.sum())]])  # last entry: the atom at 0 (absorbed at once)
    state = np.minimum(np.searchsorted(np.cumsum(start), rng.random(n), side="right"), m)
    total = np.zeros(n)
    alive = np.flatnonzero(state < m)
    while alive.size:
        s = state[alive]
        total[alive] += rng.exponential(1.0, alive.size) / rates[s]
        u = rng.random(alive.size)
        nxt = (u[:, None] >= cum[s]).sum(axis=1)  # index of the first cumulative value above u
        state[alive] = np.minimum(nxt, m)
        alive = alive[state[alive] < m]
    return total.reshape(size)


def minimum(alpha1, T1, alpha2, T2) -> tuple[np.ndarray, np.ndarray]:
    """min(X1, X2) of independent PH laws: (α1 ⊗ α2, T1 ⊕ T2) (Kronecker sum)."""
    a1, A = np.asarray(alpha1, float), np.asarray(T1, float)
    a2, B = np.asarray(alpha2, float), np.asarray(T2, float)
    return np.kron(a1, a2), np.kron(A, np.eye(B.shape[0])) + np.kron(np.eye(A.shape[0]), B)


def maximum(alpha1, T1, alpha2, T2) -> tuple[np.ndarray, np.ndarray]:
    """max(X1, X2) of independent PH laws (no atoms): phases (both alive) ∪ (only 1 alive) ∪ (only 2 alive)."""
    a1, A = np.asarray(alpha1, float), np.asarray(T1, float)
    a2, B = np.asarray(alpha2, float), np.asarray(T2, float)
    m1, m2 = A.shape[0], B.shape[0]
    both = np.kron(A, np.eye(m2)) + np.kron(np.eye(m1), B)
    to_1 = np.kron(np.eye(m1), exit_vector(B)[:, None])  # X2 ends first: keep X1's phase
    to_2 = np.kron(exit_vector(A)[:, None], np.eye(m2))  # X1 ends first: keep X2's phase
    n = m1 * m2 + m1 + m2
    T = np.zeros((n, n))
    T[: m1 * m2, : m1 * m2] = both
    T[: m1 * m2, m1 * m2 : m1 * m2 + m1] = to_1
    T[: m1 * m2, m1 * m2 + m1 :] = to_2
    T[m1 * m2 : m1 * m2 + m1, m1 * m2 : m1 * m2 + m1] = A
    T[m1 * m2 + m1 :, m1 * m2 + m1 :] = B
    alpha = np.concatenate([np.kron(a1, a2), np.zeros(m1 + m2)])
    return alpha, T
