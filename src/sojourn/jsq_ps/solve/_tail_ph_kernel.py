"""The numba kernel of :mod:`sojourn.jsq_ps.solve.tail_ph`: uniformised steps of a Markov chain that is the product
of an environment chain (sparse: the tagged customer's surroundings) and the tagged customer's own phase-type phase,
whose moves run at the environment-dependent speed 1/k (processor sharing). Imported only when a chain is large
enough to need it (importing numba costs ~0.2 s)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, boundscheck=False, fastmath=True, inline="always")
def _environment_moves(x, ye, ptr, src, rate, e, m):
    """Adds to ye (state e's row, own phases) the environment's moves into e from x's rows; returns the row's sum.

    Four moves (then two, then one) per pass over the row: each entry still receives its moves one at a time in the
    order of ``src`` (the same sums, the same bits as one pass per move), but is loaded and stored once per four of
    them instead of once each: the largest solve of five law cells (32 to 128 own phases) 1.10-1.28 times faster,
    the same bits (``benchmarks/tail_ph_kernel.py``, load average 10-12). The views and rates one per statement: the
    same loop written with tuple assignments ran 0.55-0.99 times as fast as the one-move-per-pass loop."""
    p = ptr[e]
    p1 = ptr[e + 1]
    while p + 4 <= p1:
        x0 = x[src[p]]
        x1 = x[src[p + 1]]
        x2 = x[src[p + 2]]
        x3 = x[src[p + 3]]
        r0 = rate[p]
        r1 = rate[p + 1]
        r2 = rate[p + 2]
        r3 = rate[p + 3]
        for j in range(m):
            a = ye[j]
            a += r0 * x0[j]
            a += r1 * x1[j]
            a += r2 * x2[j]
            a += r3 * x3[j]
            ye[j] = a
        p += 4
    while p + 2 <= p1:
        x0 = x[src[p]]
        x1 = x[src[p + 1]]
        r0 = rate[p]
        r1 = rate[p + 1]
        for j in range(m):
            a = ye[j]
            a += r0 * x0[j]
            a += r1 * x1[j]
            ye[j] = a
        p += 2
    while p < p1:
        xs = x[src[p]]
        r = rate[p]
        for j in range(m):
            ye[j] += r * xs[j]
        p += 1
    tot = 0.0
    for j in range(m):
        tot += ye[j]
    return tot


@njit(cache=True, boundscheck=False, fastmath=True)
def masses(x, y, ptr, src, rate, keep, speed, own_out, own_next, K, stop):
    """g_j = Σ x after j uniformised steps, j < K, stopping once g_j < ``stop``. Returns (g, steps computed).

    x, y: (n, m) arrays, environment state × own phase (x holds the initial law; both are overwritten).
    ``ptr``, ``src``, ``rate``: the environment's moves into each state e (CSR by target), rates divided by the
    uniformisation rate q; ``keep[e]`` = 1 − (environment exit rate of e)/q; ``speed[e]`` = (1/k)/q, k the
    occupancy of the tagged customer's server in e; ``own_out[j]`` = −S[j, j]; ``own_next[j]`` = S[j, j + 1] (the
    own law is a Coxian: phase j moves on to j + 1 or completes; the last entry is unused)."""
    n, m = x.shape
    g = np.zeros(K)
    tot = 0.0
    for e in range(n):
        for j in range(m):
            tot += x[e, j]
    g[0] = tot
    for step in range(1, K):
        tot = 0.0
        for e in range(n):
            sp = speed[e]
            kp = keep[e]
            ye = y[e]
            xe = x[e]
            ye[0] = (kp - own_out[0] * sp) * xe[0]
            for j in range(1, m):
                ye[j] = (kp - own_out[j] * sp) * xe[j] + own_next[j - 1] * sp * xe[j - 1]
            tot += _environment_moves(x, ye, ptr, src, rate, e, m)
        x, y = y, x
        g[step] = tot
        if tot < stop:
            return g, step + 1
    return g, K


@njit(cache=True, boundscheck=False, fastmath=True)
def masses_general(x, y, ptr, src, rate, keep, speed, own_out, own_i, own_j, own_v, K, stop):
    """:func:`masses` for an own law with any sub-generator S: its off-diagonal entries i → j at rate own_v."""
    n, m = x.shape
    g = np.zeros(K)
    tot = 0.0
    for e in range(n):
        for j in range(m):
            tot += x[e, j]
    g[0] = tot
    nown = own_i.size
    for step in range(1, K):
        tot = 0.0
        for e in range(n):
            sp = speed[e]
            kp = keep[e]
            ye = y[e]
            xe = x[e]
            for j in range(m):
                ye[j] = (kp - own_out[j] * sp) * xe[j]
            for t in range(nown):
                ye[own_j[t]] += own_v[t] * sp * xe[own_i[t]]
            tot += _environment_moves(x, ye, ptr, src, rate, e, m)
        x, y = y, x
        g[step] = tot
        if tot < stop:
            return g, step + 1
    return g, K


@njit(cache=True, boundscheck=False, fastmath=True)
def masses_by_group(x, ptr, src, rate, keep, group, ngroups, K, stop):
    """G[j, c] = Σ of x over the states of group c after j uniformised steps of the sub-stochastic chain (moves into
    each state e: CSR by target ``ptr``, ``src``, ``rate`` over q; ``keep[e]`` = 1 − exit(e)/q), j < K, stopping
    once the total is below ``stop``. Returns (G, steps computed)."""
    n = x.size
    G = np.zeros((K, ngroups))
    y = np.empty(n)
    for e in range(n):
        G[0, group[e]] += x[e]
    for step in range(1, K):
        tot = 0.0
        for e in range(n):
            v = keep[e] * x[e]
            for p in range(ptr[e], ptr[e + 1]):
                v += rate[p] * x[src[p]]
            y[e] = v
            G[step, group[e]] += v
            tot += v
        x, y = y, x
        if tot < stop:
            return G, step + 1
    return G, K


@njit(cache=True, boundscheck=False)
def poisson_mix(q, t, G):
    """out[i, :] = Σ_k Pois(k; q·t_i)·G[k, :] over k < K = len(G), as
    :func:`sojourn.jsq_ps.solve.uniformization.poisson_mix`
    (the same window of k: mean ± (10·sqrt(mean) + 25), outside which the Poisson mass is < 1e-20), the pmf by its
    ratio recursion from the mode both ways (one multiplication per term instead of an exponential: 7 times faster
    on the paper's grid, and closer to the exact pmf than the log-space form: relative error ~1e-13 against ~1e-11)."""
    n = t.size
    K, c = G.shape
    out = np.zeros((n, c))
    for i in range(n):
        a = q * t[i]
        if a <= 0.0:
            for j in range(c):
                out[i, j] = G[0, j]
            continue
        half = 10.0 * math.sqrt(a) + 25.0
        lo = max(0, math.floor(a - half))
        hi = min(K, math.ceil(a + half))
        if lo >= K:
            continue
        mode = int(a)
        pm = math.exp(mode * math.log(a) - a - math.lgamma(mode + 1.0))
        p = pm
        for k in range(mode, hi):
            if k >= lo:
                for j in range(c):
                    out[i, j] += p * G[k, j]
            p *= a / (k + 1)
        p = pm
        for k in range(mode - 1, lo - 1, -1):
            p *= (k + 1) / a
            if k < hi:
                for j in range(c):
                    out[i, j] += p * G[k, j]
    return out
