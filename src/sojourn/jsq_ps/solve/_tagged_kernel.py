"""The numba kernels of :class:`sojourn.jsq_ps.solve.tagged_levels.LevelTaggedChain` (imported only when a chain
is large enough to need them: importing numba costs ~0.2 s, more than a small chain's whole solve).

One uniformised step runs its phase chunks on numba's threads (:func:`_masses`): a barrier per step, 2 000–2 500
steps per call. OpenMP's default wait policy spins at each barrier, which on a shared machine burns a core for
nothing and waits on a descheduled thread (R = 5, ρ = 0.9, 500 steps at load average 7: 3.6 CPU-s on two threads
against 0.9 on one); a passive wait (set here unless the environment sets it, before numba starts its threads)
costs the same CPU as one thread (0.92 s against 0.90)."""
from __future__ import annotations

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402 (after the wait policy, which OpenMP reads when it starts)
from numba import njit, prange, uint64  # noqa: E402


@njit(cache=True, boundscheck=False)
def _step(x, y, M, mcap, start, dtab, dfirst, exitq, ot, ptr, off, lo, hi, tagged, rate, wrow, acc,  # noqa: C901
          ab, p_lo, p_hi, only_sums):
    # (C901: the four copies of the move loop are the fixed trip counts the compiler vectorises; the timings below)
    """y = x·P for x, y the kept states only, phase by phase, level fastest: phase p holds its levels
    0..mcap[p]−1 from start[p] (a move into a dropped state leaves the chain; compact rows: at R = 6, ρ = 0.9
    the pruned vector is a quarter of the box's, 2.8 MB, held in L2). ``ptr``: each phase's incoming moves, each
    y[start[p] + m] += rate·x[off + m] (× wrow[off + m], (k−1)/k of the source state, where ``tagged``) for
    lo ≤ m < hi — off = start[source] − level shift, [lo, hi) the target levels whose source and target are kept
    (:meth:`~sojourn.jsq_ps.solve.tagged_levels.LevelTaggedChain.set_level_caps`; moves with none are left out).
    Whole rows take loops of the fixed length M. What level caps and compact rows cost and gain
    (``benchmarks/exact_kernel.py``, R = 6, ρ = 0.9, 400 steps): the pruned chain 1.60 s (2.0 ns per kept
    transition) against the box with the kernel before level caps 2.61 s (0.76 ns), and the box with this kernel
    3.6 s (1.05 ns: where pruning keeps every state, as at R ≤ 2, this kernel is slower; those chains are small).
    The diagonal 1 − out/q of phase p on level m is dtab[ot[p], m] = dconst − dtag·(k−1)/k − μ/(qk) (the same for
    every phase with that tagged offset: a small table, not a row per state), plus dfirst[p] on level 0 (the
    departures of idle least-loaded servers). Flat, unsigned indices, no array views in the loops (a view per move
    costs reference counting: 3× slower at M = 38; a signed index is wrapped when negative, and that select kept
    LLVM from vectorising every row loop — with uint64 indices they run on AVX-512: R = 6, ρ = 0.95, 9.3 → 5.2 ms
    per step on one thread, 1.9 → 1.0 ns per kept transition, the same bits). Adds, per level, the mass x holds to
    ``acc`` and the mass absorbed by this step (x·exitq, exitq the tagged completion's rate μ/(kq)) to ``ab``
    (per level: one running sum is a chain of dependent adds, which is not vectorised). Steps the phases
    p_lo ≤ p < p_hi only (a chunk: :func:`_masses` runs the chunks on parallel threads; each writes its own phases of
    y and reads x); with ``only_sums`` it only sums x."""
    U = uint64(M)  # unsigned indices throughout: numba wraps a negative signed index, which stops LLVM vectorising
    for m in range(U):
        acc[m] = 0.0
        ab[m] = 0.0
    for p in range(p_lo, p_hi):
        Mp = uint64(mcap[p])
        if Mp == 0:
            continue
        b = uint64(start[p])
        if only_sums:
            for m in range(Mp):
                acc[m] += x[b + m]
            continue
        e = uint64(ot[p]) * U
        for m in range(Mp):  # per level, not one running sum: a chain of dependent adds is not vectorised
            xm = x[b + m]
            y[b + m] = dtab[e + m] * xm
            ab[m] += exitq[e + m] * xm
            acc[m] += xm
        y[b] += dfirst[p] * x[b]
        for j in range(ptr[p], ptr[p + 1]):
            o = uint64(off[j])  # may be start − 1 (a level shift): wraps, and o + m (m ≥ 1 there) wraps back
            r = rate[j]
            l0 = uint64(lo[j])
            h = uint64(hi[j])
            if l0 == 0 and h == U:  # whole rows (the box, and the full rows of a pruned chain): a fixed trip count
                if tagged[j]:
                    for m in range(U):
                        y[b + m] += r * wrow[o + m] * x[o + m]
                else:
                    for m in range(U):
                        y[b + m] += r * x[o + m]
            elif l0 == 1 and h == U:
                if tagged[j]:
                    for m in range(uint64(1), U):
                        y[b + m] += r * wrow[o + m] * x[o + m]
                else:
                    for m in range(uint64(1), U):
                        y[b + m] += r * x[o + m]
            elif l0 == 0 and h == U - 1:
                if tagged[j]:
                    for m in range(U - 1):
                        y[b + m] += r * wrow[o + m] * x[o + m]
                else:
                    for m in range(U - 1):
                        y[b + m] += r * x[o + m]
            else:
                if tagged[j]:
                    for m in range(l0, h):
                        y[b + m] += r * wrow[o + m] * x[o + m]
                else:
                    for m in range(l0, h):
                        y[b + m] += r * x[o + m]


@njit(cache=True, boundscheck=False, parallel=True)
def _masses(x, y, M, mcap, start, dtab, dfirst, exitq, ot, ptr, off, lo, hi, tagged, rate, wrow, K, stop,
            chunks):
    """g_j = p0·P^j·1 for j < K (x = p0 on the kept states, :func:`_step`'s layout, on entry) and a_j, the mass
    absorbed (the tagged completion) in the first j steps, stopping once g_j < ``stop`` (later a_j kept at their
    last value); returns (g, a, steps computed).

    Each step runs the phase chunks [chunks[c], chunks[c+1]) on numba's threads (``prange``; the chunks are fixed
    by the chain, :meth:`~sojourn.jsq_ps.solve.tagged_levels.LevelTaggedChain.set_level_caps`, not by the thread
    count) and sums their masses in chunk order, so the result is the same bits on any number of threads."""
    n_chunks = chunks.size - 1
    g = np.zeros(K)
    a = np.zeros(K)
    acc = np.zeros((n_chunks, M))
    ab = np.zeros((n_chunks, M))
    absorbed = 0.0
    # step j sums x = p0·P^(j−1) on its way (its first pass reads it anyway): g[j − 1] is known during step j, and
    # the last mass, g[K − 1], takes one pass of sums alone (only_sums)
    for j in range(1, K + 1):
        for c in prange(n_chunks):
            _step(x, y, M, mcap, start, dtab, dfirst, exitq, ot, ptr, off, lo, hi, tagged, rate, wrow,
                  acc[c], ab[c], chunks[c], chunks[c + 1], j == K)
        s = 0.0
        step = 0.0
        for m in range(M):
            lev = 0.0
            out = 0.0
            for c in range(n_chunks):
                lev += acc[c, m]
                out += ab[c, m]
            s += lev
            step += out
        g[j - 1] = s
        if j >= 2 and s < stop:  # the mass after j − 1 steps is below stop: step j is not used
            for i in range(j, K):
                a[i] = a[j - 1]
            return g, a, j
        if j == K:
            break
        absorbed += step
        x, y = y, x
        a[j] = absorbed
    return g, a, K
