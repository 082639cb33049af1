"""Literal, slow reference implementation of Methods A–F (§3.2–§3.7), for tests only.

Dense L1^R generator filled state pair by state pair, ``np.linalg.solve`` with the last balance
equation replaced by normalisation, ``scipy.linalg.expm`` for every time point, and the
uniformisation sum term by term. Shares no code with the fast path except the Gupta fit.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import scipy.linalg

from sojourn.jsq_ps.solve.gupta import gupta_lambdas


def dense_chain(lam, mu, R, L1):
    states = list(itertools.product(range(L1), repeat=R))
    pos = {s: i for i, s in enumerate(states)}
    n = len(states)
    Q = np.zeros((n, n))
    for s in states:
        i = pos[s]
        m = min(s)
        c = s.count(m)
        for k in range(R):
            if s[k] >= 1:
                t = list(s)
                t[k] -= 1
                Q[i, pos[tuple(t)]] += mu
            if s[k] == m and s[k] + 1 <= L1 - 1:
                t = list(s)
                t[k] += 1
                Q[i, pos[tuple(t)]] += lam / c
    Q -= np.diag(Q.sum(axis=1))
    M = np.vstack([Q.T[:-1], np.ones(n)])
    b = np.zeros(n)
    b[-1] = 1
    pi = np.linalg.solve(M, b)
    lam_n = np.zeros(L1)
    A = np.zeros(L1)
    for n_ in range(L1):
        pn = sum(pi[pos[s]] for s in states if s[0] == n_)
        pnarr = sum(pi[pos[s]] / s.count(n_) for s in states if s[0] == n_ and min(s) == n_)
        lam_n[n_] = lam * pnarr / pn if (pn > 0 and pnarr > 0) else 0.0
    for s in states:
        A[min(s)] += pi[pos[s]]
    return lam_n, A


def dense_method(method, lam, mu, R, L1, L2, times):
    """F(t) of Method A–F exactly as the §3.7 table and §3.2–§3.6 formulas state."""
    rho = lam / (R * mu)
    if method in "ABDE":
        raw, A_chain = dense_chain(lam, mu, R, L1)
        lams = [raw[n] if n < L1 - 1 else raw[L1 - 1] for n in range(L2)]  # §3.2 (corrected): hold λ_{L1−1}
    else:
        lams = list(gupta_lambdas(rho, mu, R, L2))
    if method in "AD":
        A = list(A_chain) + [0.0] * (L2 - L1)
    else:
        w = [np.prod([lams[i] / mu for i in range(n)]) for n in range(L2)]
        A = [x / sum(w) for x in w]
    out = []
    if method in "ABC":
        T = np.zeros((L2, L2))
        for j in range(L2):
            if j + 1 < L2:
                T[j, j + 1] = lams[j]
            if j >= 1:
                T[j, j - 1] = (j - 1) * mu / j
            T[j, j] = -lams[0] if j == 0 else (-mu if j == L2 - 1 else -lams[j] - mu)
        for t in times:
            w = scipy.linalg.expm(T * t) @ np.ones(L2)
            top = L1 if method == "A" else L2  # §3.7 (corrected): only A stops at L1
            out.append(1 - sum(A[n] * w[n] for n in range(top)))
    else:
        q = lams[0] + mu
        h = {}

        def H(n, k):
            if k <= 0:
                return 1.0
            if n == -1:
                return 0.0
            if n >= L2:
                return 1.0
            if (n, k) not in h:
                h[(n, k)] = ((n / (n + 1)) * (mu / q) * H(n - 1, k - 1)
                             + (1 - (lams[n] + mu) / q) * H(n, k - 1) + (lams[n] / q) * H(n + 1, k - 1))
            return h[(n, k)]

        for k in range(L2):  # fill bottom-up to avoid deep recursion
            for n in range(L2 - 1, -1, -1):
                H(n, k)
        for t in times:
            tot = 0.0
            for n in range(L2):
                wn = sum(
                    math.exp(k * math.log(q * t) - q * t - math.lgamma(k + 1)) * H(n, k) if t > 0 else float(k == 0)
                    for k in range(L2)
                )
                tot += A[n] * wn
            out.append(1 - tot)
    return np.array(out)
