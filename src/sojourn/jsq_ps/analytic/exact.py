"""Exact sojourn-time CDF of M/M/R-JSQ-PS from a tagged-customer absorbing Markov chain.

System state: the multiset of the R server occupancies (a sorted vector; JSQ with uniform
tie-breaking is symmetric, so the lumped chain is exact). Tagged state: (k, s) with k = customers
at the tagged server including the tagged one and s the sorted occupancies of the other R−1.

Tagged dynamics (k, s), m = min(k, min s), c = #servers holding m:
* arrival (rate Λ) joins a least-loaded server uniformly: k → k+1 at Λ·[k=m]/c; one of the
  others holding m goes up at Λ·#{s_i = m}/c;
* the tagged customer completes at μ/k (absorption); another customer at its server at μ(k−1)/k;
* each busy other server completes at μ.
Initial law (PASTA + JSQ): a Poisson arrival sees the stationary state, joins a least-loaded
server: k = min+1, s = the state with one minimum removed.

Truncation: occupancy vectors are restricted to min ≤ M−1 and max − min ≤ D (JSQ keeps the
spread small, so this needs far fewer states than a per-server cap at high load); transitions
leaving the set are suppressed. M and D are raised until the stationary mass on each boundary is
< ``eps``; the reported ``truncated_mass`` is that boundary mass. P(T > t) on the whole grid by
uniformisation, with the Poisson sum cut from its error bound at t_max.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from ._blas import single_threaded_blas
from .chain import SortedStates, stationary, value_counts
from .uniformization import poisson_cutoff, poisson_mix


class SpreadStates:
    """Sorted R-vectors with min ≤ M−1 and max − min ≤ D, index = min·P + rank(offsets[1:])."""

    def __init__(self, M: int, D: int, R: int):
        self.M, self.D, self.R = int(M), int(D), int(R)
        self.off = SortedStates(self.D + 1, max(self.R - 1, 0))
        self.P = self.off.size
        base = np.concatenate([np.zeros((self.P, 1), dtype=np.int64), self.off.states], axis=1)[:, : self.R]
        self.size = self.M * self.P
        self.states = (np.repeat(np.arange(self.M), self.P)[:, None] + np.tile(base, (self.M, 1))).astype(np.int64)

    def admissible(self, X: np.ndarray) -> np.ndarray:
        return (X[:, 0] <= self.M - 1) & (X[:, -1] - X[:, 0] <= self.D) & (X[:, 0] >= 0)

    def index(self, X: np.ndarray) -> np.ndarray:
        """Index of admissible sorted rows X."""
        if self.R <= 1:
            return X[:, 0].copy() if self.R == 1 else np.zeros(X.shape[0], dtype=np.int64)
        m = X[:, 0]
        return m * self.P + self.off.rank(X[:, 1:] - m[:, None])


def system_chain(lam, mu, R, M, D):
    """Generator of the spread-truncated lumped system chain (same rates as §3.2)."""
    S = SpreadStates(M, D, R)
    X = S.states
    n = S.size
    idx = np.arange(n)
    cnt = value_counts(X)
    rows, cols, vals = [], [], []
    for i in range(R):  # departures: first occurrence of v ≥ 1, rate μ·c_v
        first = X[:, i] >= 1
        if i > 0:
            first &= X[:, i] != X[:, i - 1]
        Y = X[first].copy()
        Y[:, i] -= 1
        ok = S.admissible(Y)
        rows.append(idx[first][ok]); cols.append(S.index(Y[ok])); vals.append(mu * cnt[first, i][ok])
    Y = X.copy()  # arrival: the last minimum goes up (re-sorted automatically)
    Y[np.arange(n), cnt[:, 0] - 1] += 1
    ok = S.admissible(Y)
    rows.append(idx[ok]); cols.append(S.index(Y[ok])); vals.append(np.full(ok.sum(), lam))
    Q = sparse.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)).tocsr()
    Q = Q - sparse.diags(np.asarray(Q.sum(axis=1)).ravel())
    return S, Q.tocsr()


def boundary_masses(S: SpreadStates, pi: np.ndarray):
    X = S.states
    at_min = float(pi[X[:, 0] == S.M - 1].sum()) if S.M > 1 else 1.0
    at_spread = float(pi[(X[:, -1] - X[:, 0]) == S.D].sum()) if S.R > 1 else 0.0
    return at_min, at_spread


class TaggedChain:
    """Transient generator of the tagged-customer chain on (k, sorted others) within the spread set."""

    def __init__(self, lam, mu, R, M, D):
        self.lam, self.mu, self.R, self.M, self.D = float(lam), float(mu), int(R), int(M), int(D)
        full = SpreadStates(M, D, R)
        self.full = full
        self.others = SpreadStates(M + D + 1, D, R - 1) if R > 1 else None
        F = full.states
        ks, Xs = [], []
        for i in range(R):  # choose which server is the tagged one: first occurrence of each value ≥ 1
            first = F[:, i] >= 1
            if i > 0:
                first &= F[:, i] != F[:, i - 1]
            ks.append(F[first, i]); Xs.append(np.delete(F[first], i, axis=1))
        k = np.concatenate(ks)
        X = np.concatenate(Xs)
        keys = self._key(k, X)
        order = np.argsort(keys)
        self.keys = keys[order]
        self.k = k[order]
        self.X = X[order]
        self.size = self.k.size

    def _key(self, k, X):
        if self.R == 1:
            return k.astype(np.int64)
        return k.astype(np.int64) * self.others.size + self.others.index(X)

    def lookup(self, k, X):
        """Indices of states (k, X) and a mask of those inside the truncated set."""
        full = np.sort(np.concatenate([k[:, None], X], axis=1), axis=1)
        ok = self.full.admissible(full) & (k >= 1)
        if self.R > 1:
            ok &= self.others.admissible(X) if X.shape[0] else ok
        pos = np.zeros(k.size, dtype=np.int64)
        if ok.any():
            key = self._key(k[ok], X[ok])
            p = np.searchsorted(self.keys, key)
            p = np.minimum(p, self.size - 1)
            hit = self.keys[p] == key
            pos_ok = np.where(hit, p, 0)
            okk = ok.copy()
            okk[ok] = hit
            ok = okk
            pos[np.flatnonzero(okk)] = pos_ok[hit]
        return pos, ok

    def generator(self):
        lam, mu, R = self.lam, self.mu, self.R
        k, X = self.k, self.X
        n = self.size
        idx = np.arange(n)
        rows, cols, vals = [], [], []
        exit_rate = mu / k  # tagged completion μ/k (absorption)

        def add(mask, k2, X2, rate):
            pos, ok = self.lookup(k2, X2)
            rows.append(idx[mask][ok]); cols.append(pos[ok]); vals.append(rate[ok])

        if R > 1:
            m = np.minimum(k, X[:, 0])
            cnt_o = (X == m[:, None]).sum(axis=1)
        else:
            m = k
            cnt_o = np.zeros(n, dtype=np.int64)
        c = (k == m).astype(np.int64) + cnt_o
        # arrival to the tagged server
        mask = k == m
        add(mask, k[mask] + 1, X[mask], lam / c[mask])
        # arrival to another least-loaded server: its last occurrence of m goes up
        if R > 1:
            mask = cnt_o > 0
            X2 = X[mask].copy()
            X2[np.arange(X2.shape[0]), cnt_o[mask] - 1] += 1
            add(mask, k[mask], X2, lam * cnt_o[mask] / c[mask])
        # another customer at the tagged server leaves: μ(k−1)/k
        mask = k >= 2
        add(mask, k[mask] - 1, X[mask], mu * (k[mask] - 1) / k[mask])
        # other servers: first occurrence of v ≥ 1 goes down at μ·c_v
        if R > 1:
            cnt = value_counts(X)
            for i in range(R - 1):
                first = X[:, i] >= 1
                if i > 0:
                    first &= X[:, i] != X[:, i - 1]
                X2 = X[first].copy()
                X2[:, i] -= 1
                add(first, k[first], X2, mu * cnt[first, i])
        Q = sparse.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)).tocsr()
        out = np.asarray(Q.sum(axis=1)).ravel() + exit_rate
        return Q, out

    def initial_law(self, pi: np.ndarray) -> np.ndarray:
        """PASTA + JSQ: the arrival finding state s joins a minimum: k = min+1, others = s minus one min."""
        F = self.full.states
        k0 = F[:, 0] + 1
        X0 = F[:, 1:]
        pos, ok = self.lookup(k0, X0)
        p0 = np.zeros(self.size)
        np.add.at(p0, pos[ok], pi[ok])
        lost = float(pi[~ok].sum())
        return p0, lost


@dataclass
class ExactResult:
    cdf: np.ndarray
    M: int
    D: int
    n_system_states: int
    n_tagged_states: int
    truncated_mass: float
    run_time: float
    info: dict = field(default_factory=dict)


def choose_truncation(lam, mu, R, eps=1e-10, M=None, D=None, state_budget=400_000):
    """Raise M (min cap) and D (spread cap) until both boundary masses < eps or the budget is hit."""
    M_ = int(M) if M is not None else 8
    D_ = int(D) if D is not None else (0 if R == 1 else 3)
    while True:
        S, Q = system_chain(lam, mu, R, M_, D_)
        pi = stationary(Q, levels=S.states.sum(axis=1))
        b_min, b_spread = boundary_masses(S, pi)
        grow_M = M is None and b_min >= eps
        grow_D = D is None and R > 1 and b_spread >= eps
        if not (grow_M or grow_D):
            return S, pi, b_min, b_spread
        M2 = M_ + max(1, M_ // 2) if grow_M else M_
        D2 = D_ + max(1, D_ // 3) if grow_D else D_
        if SpreadStates(M2, D2, R).size * R > state_budget:
            return S, pi, b_min, b_spread
        M_, D_ = M2, D2


def exact_sojourn_cdf(arrival_rate, service_rate, servers, t, eps=1e-10, M=None, D=None,
                      state_budget=400_000, poisson_eps=1e-13) -> ExactResult:
    """P(T ≤ t) for M/M/R-JSQ-PS (tagged-customer chain), for every t; see the module docstring."""
    t0 = time.perf_counter()
    lam, mu, R = float(arrival_rate), float(service_rate), int(servers)
    t = np.asarray(t, dtype=float)
    with single_threaded_blas():
        S, pi, b_min, b_spread = choose_truncation(lam, mu, R, eps, M, D, state_budget)
        tc = TaggedChain(lam, mu, R, S.M, S.D)
        Qoff, out = tc.generator()
        p0, lost = tc.initial_law(pi)
        q = float(out.max())
        PT = (Qoff.T / q).tocsr()  # P = I + Q/q, applied to row vectors: v ← v − v·out/q + v·Qoff/q
        stay = 1.0 - out / q
        K = poisson_cutoff(q * float(t.max()) if t.size else 0.0, poisson_eps)
        g = np.empty(K)
        v = p0.copy()
        g[0] = v.sum()
        for j in range(1, K):
            v = stay * v + PT @ v
            g[j] = v.sum()
        sf = poisson_mix(q, t, g)
    cdf = 1.0 - sf
    info = {"boundary_mass_min": b_min, "boundary_mass_spread": b_spread, "initial_mass_lost": lost,
            "uniformization_rate": q, "poisson_terms": K}
    return ExactResult(cdf, S.M, S.D, S.size, tc.size, b_min + b_spread + lost, time.perf_counter() - t0, info)
