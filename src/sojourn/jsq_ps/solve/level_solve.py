"""The stationary law of a chain whose every move changes a level by ±1, without a factorisation.

The JSQ system chain (:func:`sojourn.jsq_ps.solve.exact.system_chain`) moves by one arrival or one departure, so
the total number of customers N changes by exactly ±1 in every move: ordered by N, the generator is block
tridiagonal with *diagonal* diagonal blocks. Its sparse LU (:func:`sojourn.jsq_ps.solve.chain.stationary`) was
the exact method's memory peak and a third of its time at R = 6, ρ = 0.95 (617 000 states, M = 72, D = 13: 38.6
million factor entries, 5.8 CPU-s, 1.57 GB peak; ``benchmarks/exact_reach.py``). Here the law is found by iterative
aggregation–disaggregation (Koury, McAllister and Stewart 1984; Stewart, *Introduction to the Numerical Solution
of Markov Chains*, 1994, §6.3) on the levels N:

1. aggregate: with x the current vector, the level process has up rate u_N = Σ_{i∈N} x_i·up_i / x_N and down rate
   d_N likewise — a birth–death chain, solved in closed form (ξ_{N+1} = ξ_N·u_N / d_{N+1});
2. disaggregate: x_i ← ξ_N·x_i / x_N;
3. smooth: one forward and one backward Gauss–Seidel sweep in level order, over-relaxed by ``omega``
   (a state's update needs only its neighbours on the levels N ± 1, so point and block Gauss–Seidel coincide).

It stops when the residual ‖xQ‖₁ / max exit rate is below ``tol`` (1e-15 by default), checked after each sweep
pair. Against the LU, same chains: R = 4, ρ = 0.9 (45 000 states) within 6e-16 in 52 iterations (ω = 1.4;
106 at ω = 1); R = 6, ρ = 0.9 (326 000 states) within 3.5e-16; the residual falls by a steady factor per
iteration. Memory: a few vectors and the generator. Should it not converge within ``max_iter`` (it always has),
it raises, and the caller falls back to the LU.
"""
from __future__ import annotations

import numpy as np

#: the over-relaxation of the Gauss–Seidel sweeps: measured at R = 4, ρ = 0.9 (iterations to 1e-15: ω = 1 106,
#: 1.2 70, 1.4 52, 1.6 63, 1.8 140)
OMEGA = 1.4


class NotConverged(RuntimeError):
    """The iteration did not reach its tolerance (the caller falls back to a factorisation)."""


def stationary_by_levels(Q, levels, tol: float = 1e-15, max_iter: int = 3000, omega: float = OMEGA, x0=None):
    """π with πQ = 0, Σπ = 1, for a generator ``Q`` (scipy.sparse) whose every move changes the integer
    ``levels`` by ±1 (module doc). Returns (π, iterations)."""
    from scipy import sparse

    from ._level_kernel import sor_sweeps

    lev = np.asarray(levels, dtype=np.int64)
    n = Q.shape[0]
    perm = np.argsort(lev, kind="stable")
    lev = lev[perm]
    Qp = sparse.csr_matrix(Q)[perm][:, perm].tocsr()
    d = -Qp.diagonal()
    off = (Qp - sparse.diags(Qp.diagonal())).tocsr()
    off.eliminate_zeros()
    rows = np.repeat(np.arange(n), np.diff(off.indptr))
    step = lev[off.indices] - lev[rows]
    if np.any(np.abs(step) != 1):
        raise ValueError("stationary_by_levels: a move does not change the level by ±1")
    up = np.bincount(rows, weights=np.where(step > 0, off.data, 0.0), minlength=n)
    down = np.bincount(rows, weights=np.where(step < 0, off.data, 0.0), minlength=n)
    inc = off.T.tocsr()  # incoming moves of each state
    L = int(lev[-1] - lev[0]) + 1
    bounds = np.searchsorted(lev, lev[0] + np.arange(L + 1))
    sizes = np.diff(bounds)
    if np.any(sizes == 0):
        raise ValueError("stationary_by_levels: the levels must be contiguous")
    qmax = float(d.max()) if n else 1.0
    if x0 is None:
        x = np.full(n, 1.0 / n)
    else:  # a start near π (the last solve of a smaller chain, extended), with every state kept above 0
        x = np.asarray(x0, dtype=float)[perm] + 1e-30 / n
        x /= x.sum()
    history = []  # (iteration, residual) where it was computed
    check = 1  # the next iteration whose residual is computed
    for it in range(1, max_iter + 1):
        xl = np.add.reduceat(x, bounds[:-1])
        pos = xl > 0  # a level of transient states only (JSQ never fills some of the truncation) stays at 0
        safe = np.where(pos, xl, 1.0)
        u = np.add.reduceat(x * up, bounds[:-1]) / safe
        dn = np.add.reduceat(x * down, bounds[:-1]) / safe
        ratio = np.where(dn[1:] > 0, u[:-1] / np.where(dn[1:] > 0, dn[1:], 1.0), 0.0)
        xi = np.concatenate([[1.0], np.cumprod(ratio)])
        xi /= xi.sum()
        x *= np.repeat(np.where(pos, xi / safe, 0.0), sizes)
        if it < check and it < max_iter:
            sor_sweeps(x, inc.indptr, inc.indices, inc.data, d, float(omega), False)
            continue
        res = sor_sweeps(x, inc.indptr, inc.indices, inc.data, d, float(omega)) / qmax
        if res < tol:
            out = np.empty(n)
            out[perm] = x
            return out / out.sum(), it
        history.append((it, res))
        check = it + 1 + _skip(history, tol)
    raise NotConverged(f"stationary_by_levels: residual {res:.1e} after {max_iter} iterations")


def _skip(history, tol: float) -> int:
    """How many iterations may pass without computing the residual (a third of each iteration's work): it falls by a
    steady factor per iteration (module doc), so from the last two residuals, the iterations it should still take to
    reach ``tol``, less two for safety (at most 20; none until it has fallen twice in a row). At most one iteration
    more than checking every time: at R = 6, ρ = 0.95 (617 000 states) 71 iterations, 12 residuals instead of 71."""
    if len(history) < 3:
        return 0
    (i0, r0), (i1, r1), (i2, r2) = history[-3:]
    if not (0 < r2 < r1 < r0):
        return 0
    rate = max((r2 / r1) ** (1.0 / (i2 - i1)), (r1 / r0) ** (1.0 / (i1 - i0)))
    if rate >= 1.0:
        return 0
    return int(min(20, max(0, np.ceil(np.log(tol / r2) / np.log(rate)) - 2)))
