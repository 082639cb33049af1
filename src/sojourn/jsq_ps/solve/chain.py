"""The whole-system Markov chain of M/M/R-JSQ-PS, on sorted occupancy vectors (§3.2, §3.4).

The paper's chain lives on a = (a_1..a_R) ∈ {0..L1−1}^R (L1^R states). JSQ with uniform
tie-breaking is symmetric under permuting servers, so the chain lumps exactly onto sorted vectors
s_1 ≤ … ≤ s_R (C(L1+R−1, R) states); the lumped stationary law is π_s = Σ_{a ∈ orbit(s)} π(a).

Sorted-state transitions (from the §3.2 rates):
* departure from one of the c_v servers holding v ≥ 1: rate μ·c_v, the *first* v becomes v−1;
* arrival (rate Λ) to a least-loaded server, the *last* minimum becomes m+1, if m+1 ≤ L1−1
  (otherwise lost: the §3.2 truncation).

Per-server quantities of the unsymmetrised chain come back exactly through multiplicities:
P(a_1 = n) = E[#servers at n]/R and Σ_{a: a_1=n, m(a)=n} π(a)/c(a) = P(min = n)/R, so
λ_n = Λ·P(min = n)/E[#servers holding n]  (§3.2), and A_n = P(min = n) (§3.4).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations_with_replacement

import numpy as np
from scipy.special import comb

# scipy.sparse is imported where the chains are built (not at import: `sojourn plan`'s screen never builds one)


def n_sorted_states(L: int, R: int) -> int:
    """C(L+R−1, R): multisets of size R from {0..L−1}."""
    return int(comb(L + R - 1, R, exact=True))


class SortedStates:
    """All non-decreasing R-vectors over {0..L−1}, ordered by colex rank (index = rank)."""

    def __init__(self, L: int, R: int):
        self.L, self.R = int(L), int(R)
        self.size = n_sorted_states(self.L, self.R)
        # Pascal table C(x, j) for the colex rank of c_i = s_i + i (strictly increasing)
        x = np.arange(self.L + self.R + 1)
        # (a valid state's every term is below its rank < size; the larger entries, which overflowed int64 from
        # R ≈ 90 and scrambled the ranks, are never used and are clipped)
        table = np.array([comb(x, j + 1, exact=False) for j in range(max(self.R, 1))]).round()
        self._binom = np.minimum(table, 2.0**62).astype(np.int64)
        if self.R == 0:
            self.states = np.zeros((1, 0), dtype=np.int64)
            return
        raw = np.array(list(combinations_with_replacement(range(self.L), self.R)), dtype=np.int64)
        order = np.empty(self.size, dtype=np.int64)
        order[self.rank(raw)] = np.arange(self.size)
        self.states = raw[order]

    def rank(self, s: np.ndarray) -> np.ndarray:
        """Colex rank of sorted rows ``s`` (shape (m, R))."""
        s = np.asarray(s, dtype=np.int64)
        if self.R == 0:
            return np.zeros(s.shape[0], dtype=np.int64)
        c = s + np.arange(self.R)[None, :]
        return sum(self._binom[j][c[:, j]] for j in range(self.R))


def value_counts(X: np.ndarray) -> np.ndarray:
    """counts[i, j] = #{l : X[i, l] == X[i, j]}. Rows sorted (every caller's): the length of each run of equal
    values, O(n·R) (comparing every pair of columns took minutes at R = 3000); other rows: pairwise."""
    X = np.asarray(X)
    n, R = X.shape
    if R == 0 or n == 0:
        return np.zeros_like(X)
    if R > 1 and np.any(X[:, 1:] < X[:, :-1]):
        out = np.zeros_like(X)
        for j in range(R):
            out[:, j] = (X == X[:, [j]]).sum(axis=1)
        return out
    cols = np.broadcast_to(np.arange(R), X.shape)
    new_run = np.ones(X.shape, bool)
    new_run[:, 1:] = X[:, 1:] != X[:, :-1]
    first = np.maximum.accumulate(np.where(new_run, cols, 0), axis=1)  # where each entry's run starts
    ends = np.ones(X.shape, bool)
    ends[:, :-1] = new_run[:, 1:]
    last = np.minimum.accumulate(np.where(ends, cols, R - 1)[:, ::-1], axis=1)[:, ::-1]  # and where it ends
    return (last - first + 1).astype(X.dtype)


def system_generator(arrival_rate: float, service_rate: float, servers: int, L: int):
    """(SortedStates, Q) with Q the sparse CSR generator of the lumped §3.2 chain."""
    from scipy import sparse
    lam, mu, R = float(arrival_rate), float(service_rate), int(servers)
    S = SortedStates(L, R)
    X = S.states
    n = S.size
    idx = np.arange(n)
    cnt = value_counts(X)
    rows, cols, vals = [], [], []
    # departures: first occurrence of each value v ≥ 1, rate μ·c_v  (§3.2 departure rate μ per busy server)
    for i in range(R):
        first = X[:, i] >= 1
        if i > 0:
            first &= X[:, i] != X[:, i - 1]
        Y = X[first].copy()
        Y[:, i] -= 1
        rows.append(idx[first])
        cols.append(S.rank(Y))
        vals.append(mu * cnt[first, i])
    # arrivals: last minimum (position c(s)−1) goes up, if it stays ≤ L−1  (§3.2: Λ/c to each of the c minima)
    pos = cnt[:, 0] - 1
    ok = X[:, 0] + 1 <= L - 1
    Y = X[ok].copy()
    Y[np.arange(Y.shape[0]), pos[ok]] += 1
    rows.append(idx[ok])
    cols.append(S.rank(Y))
    vals.append(np.full(ok.sum(), lam))
    r = np.concatenate(rows)
    c = np.concatenate(cols)
    v = np.concatenate(vals)
    Q = sparse.coo_matrix((v, (r, c)), shape=(n, n)).tocsr()
    Q = Q - sparse.diags(np.asarray(Q.sum(axis=1)).ravel())
    return S, Q.tocsr()


def stationary(Q, levels=None) -> np.ndarray:
    """π with πQ = 0, Σπ = 1.

    The paper replaces the last balance equation by the normalisation row (§3.2); that dense row
    ruins sparse-LU fill-in, so here the state of lowest level is fixed to 1, the other n−1 balance
    equations are solved by sparse LU and π is normalised afterwards (same solution of the same
    irreducible system). ``levels`` (total customers per state): states are ordered by level, which
    makes the generator block tridiagonal (every transition changes the total by ±1), and LU in that
    natural order only fills the band — measured 0.3 s vs 87 s with minimum-degree ordering
    (R=4, 15 120 states).
    """
    from scipy import sparse
    from scipy.sparse.linalg import splu

    n = Q.shape[0]
    if n == 1:
        return np.ones(1)
    if levels is None:
        perm = np.arange(n)
        spec = "MMD_AT_PLUS_A"
    else:
        perm = np.argsort(np.asarray(levels), kind="stable")
        spec = "NATURAL"
    Qp = Q[perm][:, perm]
    QT = sparse.csc_matrix(Qp.T)
    B = QT[1:, 1:].tocsc()
    b = -QT[1:, 0].toarray().ravel()
    x = splu(B, permc_spec=spec).solve(b)
    pi = np.empty(n)
    pi[perm] = np.concatenate([[1.0], x])
    return pi / pi.sum()


@dataclass
class ChainResult:
    """Outputs of the truncated whole-system chain (index n = 0..L1−1)."""

    L1: int
    lambda_n: np.ndarray  # §3.2 per-server conditional arrival rate (raw, unextended)
    A_n: np.ndarray  # §3.4 P(min = n) seen by an arrival (PASTA)
    occupancy: np.ndarray  # P(a_1 = n), marginal of one server
    boundary_mass: float  # P(some server holds L1−1): the truncation indicator
    n_states: int
    states: SortedStates
    pi: np.ndarray


def solve_chain(arrival_rate: float, service_rate: float, servers: int, L1: int) -> ChainResult:
    """Solve the §3.2 chain on sorted states; return λ_n (§3.2) and A_n (§3.4), n < L1."""
    S, Q = system_generator(arrival_rate, service_rate, servers, L1)
    try:
        pi = stationary(Q, levels=S.states.sum(axis=1))
    except RuntimeError as exc:  # SuperLU "Factor is exactly singular": seen from R = 90 at load 0.5 (L1 = 2),
        # where the balance equations' condition number reaches 3e16 (the chain's probabilities span too many
        # orders of magnitude for LU in double precision)
        raise ValueError(
            f"--servers {servers}: the SQA system chain ({Q.shape[0]:,} states, L1 = {L1}) is singular in double "
            f"precision ({exc}: its probabilities span too many orders of magnitude); use fewer servers (it "
            "solves up to R = 80 at load 0.5), or simulate") from None
    X = S.states
    R = S.R
    mins = X[:, 0]
    A = np.bincount(mins, weights=pi, minlength=L1)  # §3.4: A_n = Σ_{min a = n} π(a)
    # E[#servers holding n] = Σ_s π_s count_n(s) = R·P(a_1 = n)
    expected_count = np.zeros(L1)
    for j in range(R):
        expected_count += np.bincount(X[:, j], weights=pi, minlength=L1)
    lam = np.zeros(L1)
    ok = (expected_count > 0) & (A > 0)  # §3.2: λ_n := 0 if either sum is 0
    lam[ok] = float(arrival_rate) * A[ok] / expected_count[ok]  # §3.2 λ_n = Λ·Σπ/c / Σπ
    boundary = float(pi[X[:, -1] == L1 - 1].sum())
    return ChainResult(L1, lam, A, expected_count / R, boundary, S.size, S, pi)


def extend_lambdas(raw: np.ndarray, size: int) -> np.ndarray:
    """λ_0..λ_{size−1} from the chain's λ_0..λ_{L1−1}: λ_n = λ_{L1−1} for n ≥ L1−1 (§3.2, corrected
    notes: the hold that reproduces the authors' stored sweep)."""
    raw = np.asarray(raw, dtype=float)
    out = np.full(int(size), raw[-1])
    m = min(raw.size, int(size))
    out[:m] = raw[:m]
    return out
