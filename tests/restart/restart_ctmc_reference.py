"""Test-only reference: the exact CTMC of a small restart G-network, truncated, solved with scipy.sparse.

Built from the model's raw fields (JobClass.rates/H/entry/success/restart_to, Queue.restart,
Network.routing/signals), not from ``Network.layout`` or the product-form code, so that it checks them.
State: the number of jobs of each (queue, class, phase), at most ``nmax`` per queue. Under PS with n
jobs present each job progresses at 1/n of its phase rate and a signal picks one job uniformly, so a
type with x jobs completes a phase at rate x μ/n and is hit by signals at rate Λ⁻ x/n. Arrivals and
routed jobs that find their queue at ``nmax`` are lost (an error of order ρ^nmax).
"""
from __future__ import annotations

import itertools

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, gmres, spilu


def _types(net):
    """[(queue index, class object, phase)] in the order queue, class, phase; and per-queue slices."""
    types, slices = [], []
    for qi, q in enumerate(net.queues):
        a = len(types)
        for c in q.classes:
            for p in range(c.phases):
                types.append((qi, q, c, p))
        slices.append((a, len(types)))
    return types, slices


def _compositions(m, nmax):
    """All vectors of m non-negative integers with sum <= nmax."""
    out = []
    for total in range(nmax + 1):
        for bars in itertools.combinations(range(total + m - 1), m - 1):
            prev, v = -1, []
            for b in bars:
                v.append(b - prev - 1)
                prev = b
            v.append(total + m - 1 - prev - 1)
            out.append(tuple(v))
    return out


def build(net, nmax):  # noqa: C901, PLR0915 (the reference chain, one block a transition kind, read beside the model)
    """(states, Q): all truncated states (tuples of counts per type) and the sparse generator (CSR)."""
    types, slices = _types(net)
    index = {(q.name, c.name, p): j for j, (qi, q, c, p) in enumerate(types)}
    qnames = [q.name for q in net.queues]
    per_queue = [_compositions(b - a, nmax) for a, b in slices]
    states = [sum(parts, ()) for parts in itertools.product(*per_queue)]
    pos = {s: i for i, s in enumerate(states)}

    def qsize(x, qi):
        a, b = slices[qi]
        return sum(x[a:b])

    def entry_types(qname, cname):
        q = net.queues[qnames.index(qname)]
        c = next(cc for cc in q.classes if cc.name == cname)
        return [(index[(qname, cname, p)], e) for p, e in enumerate(c.entry) if e > 0]

    def restart_targets(j):
        """[(type, probability)] after a successful restart of type j."""
        qi, q, c, p = types[j]
        out = []
        for target, pr in c.restart_to:
            if q.restart == "anew":
                out += [(t, pr * e) for t, e in entry_types(q.name, target)]
            else:
                out.append((index[(q.name, target, p)], pr))
        return out

    def add(x, j):
        y = list(x)
        y[j] += 1
        return tuple(y)

    def sub(x, j):
        y = list(x)
        y[j] -= 1
        return tuple(y)

    def move(x, j, k):
        return add(sub(x, j), k) if j != k else x

    def signal_outcomes(x, qi):
        """[(state, probability)] after one signal reaches queue qi in state x (empty: vanishes)."""
        n = qsize(x, qi)
        if n == 0:
            return [(x, 1.0)]
        a, b = slices[qi]
        out, hit = [], 0.0
        for j in range(a, b):
            if x[j] == 0:
                continue
            _, _, c, p = types[j]
            pj = x[j] / n * c.success[p]
            hit += pj
            for k, pr in restart_targets(j):
                out.append((move(x, j, k), pj * pr))
        out.append((x, 1.0 - hit))
        return out

    rows, cols, vals = [], [], []

    def rate(i, y, r):
        if r > 0 and y in pos and pos[y] != i:
            rows.append(i)
            cols.append(pos[y])
            vals.append(r)

    for i, x in enumerate(states):
        # external arrivals
        for qi, q in enumerate(net.queues):
            if qsize(x, qi) >= nmax:
                continue
            for c in q.classes:
                if c.arrival_rate > 0:
                    for t, e in entry_types(q.name, c.name):
                        rate(i, add(x, t), c.arrival_rate * e)
        for j, (qi, q, c, p) in enumerate(types):
            if x[j] == 0:
                continue
            n = qsize(x, qi)
            share = x[j] / n
            mu = c.rates[p]
            # phase changes within the class
            for k in range(c.phases):
                h = c.H[p][k]
                if h > 0:
                    rate(i, move(x, j, index[(q.name, c.name, k)]), share * mu * h)
            # service completion: routing, signal, or leave
            ex = 1.0 - sum(c.H[p])
            if ex > 1e-15:
                y = sub(x, j)
                left = 1.0
                for fq, fc, tq, tc, pr in net.routing:
                    if (fq, fc) == (q.name, c.name) and pr > 0:
                        left -= pr
                        tqi = qnames.index(tq)
                        if qsize(y, tqi) < nmax:
                            for t, e in entry_types(tq, tc):
                                rate(i, add(y, t), share * mu * ex * pr * e)
                        else:
                            rate(i, y, share * mu * ex * pr)
                for fq, fc, tq, pr in net.signals:
                    if (fq, fc) == (q.name, c.name) and pr > 0:
                        left -= pr
                        for z, ps in signal_outcomes(y, qnames.index(tq)):
                            rate(i, z, share * mu * ex * pr * ps)
                rate(i, y, share * mu * ex * left)
            # external signals hitting this job
            if q.signal_rate > 0 and c.success[p] > 0:
                for k, pr in restart_targets(j):
                    rate(i, move(x, j, k), q.signal_rate * share * c.success[p] * pr)
    S = len(states)
    # rate() may add several entries for one (i, y): the COO -> CSR conversion sums them
    Q = sp.coo_matrix((vals, (rows, cols)), shape=(S, S)).tocsr()
    Q = Q - sp.diags(np.asarray(Q.sum(axis=1)).ravel())
    return states, Q


def stationary(Q):
    """π with π Q = 0, Σπ = 1: fix π(state 0) = 1, solve the other balance equations (GMRES preconditioned
    by an incomplete LU: a direct LU of these lattice chains fills in badly), then normalise."""
    M = Q.T.tocsc()
    A = M[1:, 1:].tocsc()
    b = -M[1:, 0].toarray().ravel()
    ilu = spilu(A, drop_tol=1e-6, fill_factor=20)
    x, info = gmres(A, b, M=LinearOperator(A.shape, ilu.solve), rtol=1e-14, atol=0.0, restart=50, maxiter=500)
    if info != 0 or np.max(np.abs(A @ x - b)) > 1e-13:
        raise RuntimeError(f"GMRES did not converge (info {info})")
    pi = np.concatenate([[1.0], x])
    return pi / pi.sum()


def solve_ctmc(net, nmax):
    """(states as an int array (S, J), π)."""
    states, Q = build(net, nmax)
    return np.asarray(states, dtype=np.int64), stationary(Q)
