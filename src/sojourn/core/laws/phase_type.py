"""Phase-type algebra on (α, T): validation, moments, survival function, quantiles, sampling, min and max.

A PH(α, T) law is the absorption time of a CTMC on m transient phases with initial law α (a row vector,
Σα ≤ 1; the remainder 1 − Σα is an atom at 0) and sub-generator T (negative diagonal, non-negative
off-diagonal entries, row sums ≤ 0, exit rates t = −T·1). Every function takes plain arrays and
validates through :func:`validate`; :class:`sojourn.core.laws.distributions.PhaseType` is the law object
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
        out[i] = brentq(lambda x, q: float(cdf(a, T, x)) - q, 0.0, hi, args=(q,), xtol=1e-12 * hi, rtol=1e-12)
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


# ---------------------------------------------------------------------------------------------
# order statistics of r iid PH replicas: the q-th smallest, S_{q:r}
# (split_merge.md §2(a); the paper's (2)-(3)). Both constructions give PH(β_{q:r}, B_{q:r}) with the
# transient phases ordered by level: r live replicas first, then r−1, …, down to r−q+1.

#: largest Kronecker dimension Σ_{j=r−q+1..r} m^j built densely (beyond: use the lumped form)
KRONECKER_MAX_DIM = 20_000


def check_order(q, r, quorum_name: str = "quorum", replicas_name: str = "replicas") -> tuple[int, int]:
    """(q, r) as ints with 1 ≤ q ≤ r, or ValueError naming the field."""
    from ..checks.validate import integer_at_least

    r = integer_at_least(replicas_name, r, 1)
    q = integer_at_least(quorum_name, q, 1)
    if q > r:
        raise ValueError(f"{quorum_name} must be an integer in [1, {replicas_name}={r}]; got {q}")
    return q, r


def kron_sum_power(T, k: int) -> np.ndarray:
    """T^{⊕k} = T ⊕ … ⊕ T (k times; X ⊕ Y = X ⊗ I + I ⊗ Y); the 1×1 zero matrix for k = 0."""
    T = np.asarray(T, dtype=float)
    out = np.zeros((1, 1))
    for _ in range(int(k)):
        out = np.kron(out, np.eye(T.shape[0])) + np.kron(np.eye(out.shape[0]), T)
    return out


def kron_power(alpha, k: int) -> np.ndarray:
    """α^{⊗k} (k times); [1] for k = 0."""
    a = np.asarray(alpha, dtype=float).ravel()
    out = np.ones(1)
    for _ in range(int(k)):
        out = np.kron(out, a)
    return out


def level_down_block(t, k: int) -> np.ndarray:
    """B_0^{(k)} = Σ_{i=1..k} I_{m^{i−1}} ⊗ t ⊗ I_{m^{k−i}} (m^k × m^{k−1}): one of k live replicas ends."""
    t = np.asarray(t, dtype=float).reshape(-1, 1)
    m = t.shape[0]
    out = np.zeros((m**k, m ** (k - 1)))
    for i in range(1, k + 1):
        out += np.kron(np.kron(np.eye(m ** (i - 1)), t), np.eye(m ** (k - i)))
    return out


def _start_levels(alpha, q: int, r: int):
    """[(z, weight)] for z = 0..q−1 replicas absorbed at time 0 (the atom 1 − Σα), weight C(r, z)·a0^z."""
    a0 = max(0.0, 1.0 - float(np.sum(alpha)))
    return [(z, math.comb(r, z) * a0**z) for z in range(q)]


def order_statistic_kronecker(alpha, T, q: int, r: int, name: str = "replica") -> tuple[np.ndarray, np.ndarray]:
    """PH(β_{q:r}, B_{q:r}) of the q-th smallest of r iid PH(α, T) by the Kronecker construction.

    Phases: level j = r, r−1, …, r−q+1 live replicas, each the m^j ordered tuples of their phases; the
    diagonal blocks are T^{⊕j}, the superdiagonal blocks B_0^{(j)} (split_merge.md §2(a)). An atom of
    the replica law at 0 (Σα < 1) starts z of the replicas absorbed: level r−z with weight C(r,z)·a0^z
    (z ≥ q: the order statistic is 0, the atom of β_{q:r}). Dense; ValueError above
    :data:`KRONECKER_MAX_DIM` phases.
    """
    a, T = validate(alpha, T, name=name, atom=True)
    q, r = check_order(q, r)
    m = a.size
    dims = [m**j for j in range(r, r - q, -1)]
    n = int(sum(dims))
    if n > KRONECKER_MAX_DIM:
        raise ValueError(f"Kronecker order statistic of (quorum={q}, replicas={r}) with {m} phases has {n} phases "
                         f"(> {KRONECKER_MAX_DIM}); use order_statistic_lumped")
    off = np.concatenate([[0], np.cumsum(dims)]).astype(int)
    B = np.zeros((n, n))
    beta = np.zeros(n)
    t = exit_vector(T)
    for i, j in enumerate(range(r, r - q, -1)):
        B[off[i]:off[i + 1], off[i]:off[i + 1]] = kron_sum_power(T, j)
        if i + 1 < q:
            B[off[i]:off[i + 1], off[i + 1]:off[i + 2]] = level_down_block(t, j)
    for z, w in _start_levels(a, q, r):
        beta[off[z]:off[z + 1]] = w * kron_power(a, r - z)
    return beta, B


def occupancy_states(m: int, j: int) -> list[tuple[int, ...]]:
    """All count vectors (c_1, …, c_m) of non-negative integers with Σc = j, in lexicographic descending order."""
    if m == 1:
        return [(j,)]
    out = []
    for first in range(j, -1, -1):
        out.extend((first,) + rest for rest in occupancy_states(m - 1, j - first))
    return out


def occupancy_block(T: np.ndarray, j: int) -> tuple[list, dict, np.ndarray]:
    """``j`` iid PH units with sub-generator ``T`` counted by phase: the count vectors (:func:`occupancy_states`),
    their index, and the generator block of the units' phase moves among them (a unit in phase i moves to k at
    rate c_i·T[i,k]; the diagonal is Σ c_i·T[i,i], so the units' exits are left to the caller)."""
    m = T.shape[0]
    states = occupancy_states(m, j)
    index = {c: i for i, c in enumerate(states)}
    L = np.zeros((len(states), len(states)))
    for row, c in enumerate(states):
        L[row, row] = sum(c[i] * T[i, i] for i in range(m))
        for i in range(m):
            if c[i] == 0:
                continue
            for k in range(m):
                if k != i and T[i, k] > 0:
                    d = list(c)
                    d[i] -= 1
                    d[k] += 1
                    L[row, index[tuple(d)]] += c[i] * T[i, k]
    return states, index, L


def lumped_levels(m: int, q: int, r: int) -> np.ndarray:
    """The number of live replicas of each phase of :func:`order_statistic_lumped` (m replica phases), in its
    order: levels r, r−1, …, r−q+1, C(j+m−1, m−1) phases each."""
    levels = range(r, r - q, -1)
    return np.repeat(np.array(list(levels), dtype=np.int64), [math.comb(j + m - 1, m - 1) for j in levels])


def lumped_size(m: int, q: int, r: int) -> int:
    """Phases of the lumped S_{q:r} of an m-phase law: Σ_{j=r−q+1}^{r} C(j+m−1, m−1) = C(r+m, m) − C(r−q+m, m)
    (hockey stick), without listing them."""
    return math.comb(r + m, m) - math.comb(r - q + m, m)


def _check_lumped_size(m: int, q: int, r: int) -> None:
    """The dense generator of the lumped S_{q:r} (and the solves of its moments) checked for memory and time
    before it is built (:func:`sojourn.core.checks.inputs.check_cost`)."""
    from ..checks.inputs import check_cost

    n = float(min(lumped_size(m, q, r), 10**300))
    # seconds: building it and its moments (n^3/1e9), and the ~60 survival evaluations a percentile's bisection
    # takes on it (1.4e-10 n^3 each: n = 975, 2-phase law, q = 25 of r = 50, 7.5 s of CPU for three percentiles)
    check_cost("replicas/quorum", memory=8.0 * 3 * n * n, seconds=n**3 * (1e-9 + 60 * 1.4e-10),
               what=f"the order statistic S_q:r, q = {q} of r = {r}, of a {m}-phase law: "
                    f"{n:.3g} phases, a dense generator of {n:.3g}^2")


def order_statistic_lumped(alpha, T, q: int, r: int, name: str = "replica") -> tuple[np.ndarray, np.ndarray]:
    """PH(β_{q:r}, B_{q:r}) of the q-th smallest of r iid PH(α, T), lumped over exchangeable replicas.

    The replicas are iid, so only how many live replicas are in each phase matters: a phase of level j
    (j live replicas) is a count vector c with Σc = j, C(j+m−1, m−1) of them instead of m^j. From c, a
    replica in phase i moves to phase k at rate c_i·T[i,k], or ends at rate c_i·t_i (to c − e_i on level
    j−1, or absorption when it is the q-th end); the initial law is multinomial(r; α) (with the atom of
    the replica law as an extra category, see :func:`order_statistic_kronecker`). Same law as the
    Kronecker form (a lumping of it), a far smaller matrix: (q, r) = (3, 10), m = 3 has 166 phases
    instead of 85 293.
    """
    a, T = validate(alpha, T, name=name, atom=True)
    q, r = check_order(q, r)
    m = a.size
    _check_lumped_size(m, q, r)
    t = exit_vector(T)
    levels = list(range(r, r - q, -1))
    states, index, moves = zip(*(occupancy_block(T, j) for j in levels), strict=True)
    off = np.concatenate([[0], np.cumsum([len(s) for s in states])]).astype(int)
    n = int(off[-1])
    B = np.zeros((n, n))
    beta = np.zeros(n)
    for li in range(len(levels)):
        B[off[li]:off[li + 1], off[li]:off[li + 1]] = moves[li]
        if li + 1 == q:  # the q-th end is absorption
            continue
        for si, c in enumerate(states[li]):
            for i in range(m):
                if c[i] > 0 and t[i] > 0:  # a replica ends: one fewer live in phase i, on the next level
                    d = list(c)
                    d[i] -= 1
                    B[off[li] + si, off[li + 1] + index[li + 1][tuple(d)]] += c[i] * t[i]
    log_a = np.log(np.where(a > 0, a, 1.0))
    for z, w in _start_levels(a, q, r):
        if w == 0.0:
            continue
        j = r - z
        for si, c in enumerate(states[z]):
            if any(ci > 0 and a[i] == 0 for i, ci in enumerate(c)):
                continue
            log_multi = math.lgamma(j + 1) - sum(math.lgamma(ci + 1) for ci in c)
            beta[off[z] + si] = w * math.exp(log_multi + sum(ci * log_a[i] for i, ci in enumerate(c)))
    return beta, B


def convolution(alpha1, T1, alpha2, T2) -> tuple[np.ndarray, np.ndarray]:
    """X1 + X2 of independent PH laws (atoms allowed): phases of X1, then of X2.

    α = (α1, (1 − Σα1)·α2), T = [[T1, t1 α2], [0, T2]].
    """
    a1, A = np.asarray(alpha1, float).ravel(), np.asarray(T1, float)
    a2, B = np.asarray(alpha2, float).ravel(), np.asarray(T2, float)
    m1, m2 = a1.size, a2.size
    T = np.zeros((m1 + m2, m1 + m2))
    T[:m1, :m1] = A
    T[:m1, m1:] = np.outer(exit_vector(A), a2)
    T[m1:, m1:] = B
    return np.concatenate([a1, max(0.0, 1.0 - a1.sum()) * a2]), T


def erlang(k: int, rate: float):
    """(α, S) of Erlang-k with rate ``rate`` per phase."""
    k = int(k)
    S = np.diag(np.full(k, -float(rate))) + np.diag(np.full(k - 1, float(rate)), 1)
    a = np.zeros(k)
    a[0] = 1.0
    return a, S


# ---------------------------------------------------------------------------------------------------------------
# three moments


def _two_point(M1: float, M2: float, M3: float):
    """(y1, y2, p): the two-point law p·δ(y1) + (1 − p)·δ(y2) with moments M1, M2, M3 (None if M2 ≤ M1², i.e. no
    spread, or an atom ≤ 0)."""
    var = M2 - M1 * M1
    if not var > 1e-14 * M1 * M1:
        return None
    c = (M3 - 3.0 * M1 * M2 + 2.0 * M1**3) / var  # the atoms are M1 + (c ± √(c² + 4 var))/2
    root = math.sqrt(c * c + 4.0 * var)
    y1, y2 = M1 + 0.5 * (c - root), M1 + 0.5 * (c + root)
    if not (y1 > 0.0 and y2 > y1):
        return None
    return y1, y2, (y2 - M1) / (y2 - y1)


def three_moment_representation(m1: float, m2: float, m3: float, max_order: int = 200):
    """(α, S): a mixture of two Erlang laws of a common order n (Johnson & Taaffe, "Matching moments to phase
    distributions: mixtures of Erlang distributions of common order", Stochastic Models 5, 1989) with the first
    three moments (m1, m2, m3): with y_i = 1/λ_i the mixture's k-th moment is n(n+1)…(n+k−1)·(p y1^k + (1−p) y2^k),
    so (y1, y2, p) is the two-point law whose moments are m_k / n(n+1)…(n+k−1) — in closed form — for the least n
    with scv > 1/n (n = 1: a two-phase hyperexponential) that gives positive atoms; 2n phases. An exponential or
    Erlang law given exactly comes back as itself. ValueError naming the moments where none exists (m2 ≤ m1²: no
    phase-type law; a third moment no order up to ``max_order`` reaches)."""
    m = np.array([m1, m2, m3], dtype=float)
    if not np.all(np.isfinite(m)) or np.any(m <= 0):
        raise ValueError(f"moments must be finite and positive; got m1={m1!r}, m2={m2!r}, m3={m3!r}")
    scv = m[1] / m[0] ** 2 - 1.0
    if scv <= 1e-12:
        raise ValueError(f"moments: m2 must exceed m1^2 (a phase-type law has a positive variance); got "
                         f"scv = m2/m1^2 - 1 = {scv:.3g}")
    for n in range(1, int(max_order) + 1):
        rising = [n, n * (n + 1), n * (n + 1) * (n + 2)]
        M = m / np.array(rising, float)
        if abs(scv - 1.0 / n) <= 1e-9 * max(1.0, scv) and abs(M[2] - M[0] ** 3) <= 1e-9 * M[0] ** 3:
            return erlang(n, 1.0 / M[0])  # the Erlang-n law itself
        if scv <= 1.0 / n + 1e-12:
            continue
        two = _two_point(*M)
        if two is None:
            continue
        y1, y2, p = two
        a1, S1 = erlang(n, 1.0 / y1)
        a2, S2 = erlang(n, 1.0 / y2)
        S = np.zeros((2 * n, 2 * n))
        S[:n, :n], S[n:, n:] = S1, S2
        return np.concatenate([p * a1, (1.0 - p) * a2]), S
    raise ValueError(f"moments ({m1:g}, {m2:g}, {m3:g}): no mixture of two Erlang laws of a common order up to "
                     f"{max_order} has them (the third moment is out of reach for scv = {scv:.3g})")
