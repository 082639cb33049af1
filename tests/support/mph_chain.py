"""Reference only: the exact tagged-customer chain of M/PH/R-JSQ-PS for R = 1 and 2, with every customer's phase
(count vectors of phases per server; reference code the tests and benchmarks compare method T with a service law
against, :mod:`sojourn.jsq_ps.solve.tail_ph`).

System state: the phase counts of each server (ordered servers; JSQ with uniform tie-breaking), each server at most
``L`` customers (an arrival that would exceed it is lost in the system chain, whose boundary mass is returned).
Tagged state: (the co-residents' counts at the tagged server, the tagged customer's own phase, the other server's
counts). Rates: a server with n customers serves each at 1/n (PS); a customer in phase i moves to j at S_ij/n and
completes at s_i/n. Arrivals (Λ, phase drawn from α) join the least-loaded server. Initial law: PASTA + JSQ on the
system's stationary law. Truncation with a certified bound (as :mod:`sojourn.jsq_ps.solve.exact`): a move out of the
truncation takes its mass out of the chain, so with A(t) the mass absorbed by t and G(t) the mass still in the chain,
the untruncated CDF lies in [A(t), 1 − G(t)] (the system law's own truncation aside: its boundary mass is reported).
Written for clarity, vectorised over states; sizes: C(L+m, m) counts per server, R = 2 and m = 2, L = 30: 496 per
server, 0.46 million tagged states.
"""
from __future__ import annotations

from itertools import combinations_with_replacement

import numpy as np


def compositions(L: int, m: int):
    """(counts (N, m), totals (N,), index dict): every count vector over m phases with total ≤ L."""
    rows = [np.zeros(m, np.int64)]
    for n in range(1, L + 1):
        for comb in combinations_with_replacement(range(m), n):
            v = np.zeros(m, np.int64)
            np.add.at(v, list(comb), 1)
            rows.append(v)
    C = np.array(rows)
    return C, C.sum(axis=1), {tuple(r): i for i, r in enumerate(C)}


def _neighbours(C, index, m):
    """up[i][c], down[i][c], move[i][j][c]: the index of c + e_i, c − e_i, c − e_i + e_j (−1 where none)."""
    eye = np.eye(m, dtype=np.int64)
    up = [np.array([index.get(tuple(r + eye[i]), -1) for r in C]) for i in range(m)]
    down = [np.array([index.get(tuple(r - eye[i]), -1) if r[i] > 0 else -1 for r in C]) for i in range(m)]
    move = [[np.array([index.get(tuple(r - eye[i] + eye[j]), -1) if r[i] > 0 else -1 for r in C]) if i != j else None
             for j in range(m)] for i in range(m)]
    return up, down, move


def system_law(lam, alpha, S, R, L):
    """(π over the system states, the system states (R columns of composition indices), compositions, boundary mass):
    the stationary law of the counts of phases at each server."""
    from scipy import sparse

    from sojourn.jsq_ps.solve.chain import stationary

    alpha, S = np.asarray(alpha, float), np.asarray(S, float)
    m = alpha.size
    s = -S.sum(axis=1)
    C, n, index = compositions(L, m)
    up, down, move = _neighbours(C, index, m)
    N = len(C)
    if R == 1:
        X = np.arange(N)[:, None]
    else:
        a, b = np.meshgrid(np.arange(N), np.arange(N), indexing="ij")
        X = np.stack([a.ravel(), b.ravel()], axis=1)
    size = X.shape[0]
    enc = (lambda A: A[:, 0]) if R == 1 else (lambda A: A[:, 0] * N + A[:, 1])
    rows, cols, vals = [], [], []
    occ = n[X]
    for srv in range(R):
        others = occ[:, 1 - srv] if R == 2 else np.full(size, np.iinfo(np.int64).max)
        share = np.where(occ[:, srv] < others, 1.0, np.where(occ[:, srv] == others, 0.5, 0.0))
        for i in range(m):
            tgt = up[i][X[:, srv]]
            ok = (share > 0) & (tgt >= 0) & (alpha[i] > 0)
            Y = X[ok].copy()
            Y[:, srv] = tgt[ok]
            rows.append(np.flatnonzero(ok))
            cols.append(enc(Y))
            vals.append(lam * alpha[i] * share[ok])
        nn = np.maximum(occ[:, srv], 1)
        cnt = C[X[:, srv]]
        for i in range(m):
            tgt = down[i][X[:, srv]]
            ok = tgt >= 0
            Y = X[ok].copy()
            Y[:, srv] = tgt[ok]
            rows.append(np.flatnonzero(ok))
            cols.append(enc(Y))
            vals.append(cnt[ok, i] * s[i] / nn[ok])
            for j in range(m):
                if i == j or S[i, j] <= 0:
                    continue
                tgt = move[i][j][X[:, srv]]
                ok = tgt >= 0
                Y = X[ok].copy()
                Y[:, srv] = tgt[ok]
                rows.append(np.flatnonzero(ok))
                cols.append(enc(Y))
                vals.append(cnt[ok, i] * S[i, j] / nn[ok])
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    keep = v > 0
    Q = sparse.coo_matrix((v[keep], (r[keep], c[keep])), shape=(size, size)).tocsr()
    Q = (Q - sparse.diags(np.asarray(Q.sum(axis=1)).ravel())).tocsr()
    pi = np.maximum(stationary(Q, levels=occ.sum(axis=1)), 0.0)
    pi /= pi.sum()
    boundary = float(pi[(occ == L).any(axis=1)].sum())
    return pi, X, (C, n, index, up, down, move), boundary


def sojourn_bounds(lam, alpha, S, R, L, t, poisson_eps=1e-13):  # noqa: PLR0915 (the reference chain, read beside its module doc)
    """(F_low, F_high, boundary mass of the system law, tagged states): the certified bounds of P(T ≤ t) on the grid t
    (module doc)."""
    from scipy import sparse

    from sojourn.jsq_ps.solve.uniformization import poisson_cutoff, poisson_mix

    alpha, S = np.asarray(alpha, float), np.asarray(S, float)
    m = alpha.size
    s = -S.sum(axis=1)
    pi, X, (C, n, _index, up, down, move), boundary = system_law(lam, alpha, S, R, L)
    N = len(C)
    # tagged states: (co-residents at the tagged server, own phase, other server), co-residents ≤ L − 1
    tc = np.flatnonzero(n <= L - 1)
    oc = np.arange(N) if R == 2 else np.zeros(1, np.int64)
    T_, P_, O_ = np.meshgrid(tc, np.arange(m), oc, indexing="ij")
    T_, P_, O_ = T_.ravel(), P_.ravel(), O_.ravel()
    size = T_.size
    tpos = np.full(N, -1)
    tpos[tc] = np.arange(tc.size)
    no = oc.size

    def enc(t_idx, ph, o_idx):
        tp = tpos[t_idx]
        out = (tp * m + ph) * no + (o_idx if R == 2 else 0)
        return np.where(tp >= 0, out, -1)

    k = n[T_] + 1  # the tagged server's occupancy
    nO = n[O_] if R == 2 else np.full(size, np.iinfo(np.int64).max)
    rows, cols, vals, lost = [], [], [], np.zeros(size)
    idx = np.arange(size)

    def add(ok, tgt, rate):
        good = ok & (tgt >= 0)
        bad = ok & (tgt < 0)
        rows.append(idx[good])
        cols.append(tgt[good])
        vals.append(rate[good] if np.ndim(rate) else
                                                                        np.full(good.sum(), rate))
        np.add.at(lost, idx[bad], rate[bad] if np.ndim(rate) else rate)

    # arrivals
    to_tag = np.where(k < nO, 1.0, np.where(k == nO, 0.5, 0.0))
    for i in range(m):
        if alpha[i] <= 0:
            continue
        add(to_tag > 0, enc(up[i][T_], P_, O_), lam * alpha[i] * to_tag)
        if R == 2:
            add(to_tag < 1, enc(T_, P_, up[i][O_]), lam * alpha[i] * (1.0 - to_tag))
    # the tagged server: co-residents and the tagged customer's own phase, each at 1/k
    cT = C[T_]
    for i in range(m):
        add(cT[:, i] > 0, enc(down[i][T_], P_, O_), cT[:, i] * s[i] / k)
        for j in range(m):
            if i != j and S[i, j] > 0:
                add(cT[:, i] > 0, enc(move[i][j][T_], P_, O_), cT[:, i] * S[i, j] / k)
                add(P_ == i, enc(T_, np.full(size, j), O_), np.full(size, S[i, j]) / k)
    own = s[P_] / k  # absorption
    if R == 2:
        cO = C[O_]
        nn = np.maximum(n[O_], 1)
        for i in range(m):
            add(cO[:, i] > 0, enc(T_, P_, down[i][O_]), cO[:, i] * s[i] / nn)
            for j in range(m):
                if i != j and S[i, j] > 0:
                    add(cO[:, i] > 0, enc(T_, P_, move[i][j][O_]), cO[:, i] * S[i, j] / nn)
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    A = sparse.coo_matrix((v, (c, r)), shape=(size, size)).tocsr()  # by target
    out = np.bincount(r, weights=v, minlength=size) + lost + own
    q = float(out.max())
    PT = (A / q + sparse.diags(1.0 - out / q)).tocsr()
    # initial law: PASTA + JSQ on π
    p0 = np.zeros(size)
    lost0 = 0.0
    for srv in range(R):
        mine = X[:, srv]
        other = X[:, 1 - srv] if R == 2 else np.zeros(X.shape[0], np.int64)
        share = (np.ones(X.shape[0]) if R == 1 else
                 np.where(n[mine] < n[other], 1.0, np.where(n[mine] == n[other], 0.5, 0.0)))
        for ph in range(m):
            w = pi * share * alpha[ph]
            tgt = enc(mine, np.full(mine.size, ph), other)
            ok = (w > 0) & (tgt >= 0)
            np.add.at(p0, tgt[ok], w[ok])
            lost0 += float(w[(w > 0) & (tgt < 0)].sum())
    K = poisson_cutoff(q * float(np.max(t)), poisson_eps)
    g = np.zeros(K)
    a = np.zeros(K)
    x = p0.copy()
    g[0] = x.sum()
    for j in range(1, K):
        a[j] = a[j - 1] + float(x @ own) / q
        x = PT @ x
        g[j] = x.sum()
    mix = poisson_mix(q, np.asarray(t, float), np.stack([g, 1.0 - a], axis=1))
    return 1.0 - mix[:, 1], 1.0 - mix[:, 0], boundary + lost0, size
