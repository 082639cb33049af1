"""The numba kernels of :class:`sojourn.jsq_ps.solve.tagged_levels.LevelTaggedChain` (imported only when a chain
is large enough to need them: importing numba costs ~0.2 s, more than a small chain's whole solve)."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, boundscheck=False)
def _step(x, y, M, dconst, dtag, dfirst, dlast, exitq, ot, ptr, src, dg, tagged, rate, wrow, acc):
    """y = x·P for x, y flat (phases × M, level fastest); ``ptr``/``src``/``dg``/``tagged``/``rate``: each phase's
    incoming moves (source phase, level shift source → target, whether the rate is ×(k−1)/k of the source, rate/q);
    ``wrow``: (k−1)/k of each phase on every level (flat like x). The diagonal 1 − out/q of phase p on level m is
    dconst[p] − dtag[p]·wrow[p, m] − exitq[ot[p], m] (μ/(qk)), plus dfirst[p] on level 0 and dlast[p] on level
    M−1 (the moves that do not exist there). Flat indices, no array views in the loops (a view per move costs
    reference counting: 3× slower at M = 38). Returns (Σ y, Σ x·exitq): the mass left and the mass absorbed by
    this step (exitq is the tagged completion's rate μ/(kq))."""
    P = dconst.size
    for m in range(M):
        acc[m] = 0.0
    absorbed = 0.0
    for p in range(P):
        b = p * M
        c = dconst[p]
        a = dtag[p]
        e = ot[p] * M
        for m in range(M):
            ex = exitq[e + m]
            y[b + m] = (c - a * wrow[b + m] - ex) * x[b + m]
            absorbed += ex * x[b + m]
        y[b] += dfirst[p] * x[b]
        y[b + M - 1] += dlast[p] * x[b + M - 1]
        for j in range(ptr[p], ptr[p + 1]):
            sb = src[j] * M
            r = rate[j]
            d = dg[j]
            if tagged[j]:
                if d == 0:
                    for m in range(M):
                        y[b + m] += r * wrow[sb + m] * x[sb + m]
                elif d == 1:
                    for m in range(1, M):
                        y[b + m] += r * wrow[sb + m - 1] * x[sb + m - 1]
                else:
                    for m in range(M - 1):
                        y[b + m] += r * wrow[sb + m + 1] * x[sb + m + 1]
            else:
                if d == 0:
                    for m in range(M):
                        y[b + m] += r * x[sb + m]
                elif d == 1:
                    for m in range(1, M):
                        y[b + m] += r * x[sb + m - 1]
                else:
                    for m in range(M - 1):
                        y[b + m] += r * x[sb + m + 1]
        for m in range(M):
            acc[m] += y[b + m]
    total = 0.0
    for m in range(M):
        total += acc[m]
    return total, absorbed


@njit(cache=True, boundscheck=False)
def _masses(x, y, M, dconst, dtag, dfirst, dlast, exitq, ot, ptr, src, dg, tagged, rate, wrow, K, stop):
    """g_j = p0·P^j·1 for j < K (x = p0, flat, on entry) and a_j, the mass absorbed (the tagged completion) in the
    first j steps, stopping once g_j < ``stop`` (later a_j kept at their last value); returns (g, a, steps
    computed)."""
    g = np.zeros(K)
    a = np.zeros(K)
    acc = np.zeros(M)
    total = 0.0
    for i in range(x.size):
        total += x[i]
    g[0] = total
    absorbed = 0.0
    for j in range(1, K):
        s, ab = _step(x, y, M, dconst, dtag, dfirst, dlast, exitq, ot, ptr, src, dg, tagged, rate, wrow, acc)
        x, y = y, x
        g[j] = s
        absorbed += ab
        a[j] = absorbed
        if s < stop:
            for i in range(j + 1, K):
                a[i] = absorbed
            return g, a, j + 1
    return g, a, K
