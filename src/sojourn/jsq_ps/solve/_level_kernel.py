"""The numba kernel of :func:`sojourn.jsq_ps.solve.level_solve.stationary_by_levels` (imported only there)."""
from __future__ import annotations

from numba import njit


@njit(cache=True, boundscheck=False)
def sor_sweeps(x, indptr, indices, data, d, omega, residual=True):
    """One forward and one backward over-relaxed Gauss–Seidel sweep of x·Q = 0 in place (state i pulls its incoming
    moves ``indices[indptr[i]:indptr[i+1]]`` at rates ``data``, and leaves at rate d[i]), then x normalised;
    returns the residual Σ_i |(xQ)_i| of the normalised x (a third pass over the moves; −1 without ``residual``)."""
    n = x.size
    for i in range(n):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        x[i] = (1.0 - omega) * x[i] + omega * s / d[i]
    for i in range(n - 1, -1, -1):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        x[i] = (1.0 - omega) * x[i] + omega * s / d[i]
    total = 0.0
    for i in range(n):
        if x[i] < 0.0:  # over-relaxation can undershoot a state of (nearly) zero mass
            x[i] = 0.0
        total += x[i]
    for i in range(n):
        x[i] /= total
    if not residual:
        return -1.0
    res = 0.0
    for i in range(n):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        res += abs(s - d[i] * x[i])
    return res
