"""The numba kernel of :func:`sojourn.jsq_ps.solve.uniformization.uniformized_masses` (imported only there, for chains
whose stepping is long enough to pay for importing numba): every uniformised step y = Pᵀx and its sum in one call,
the same arithmetic in the same order as the scipy route — each row's products summed from 0 in the CSR order
(scipy's ``csr_matvec``), the sum of x by numpy's pairwise summation (:func:`pairwise_sum`) — so the masses are the
same bits (tests/jsq_ps/test_uniformized_kernel.py); no fast-math, which would reorder or fuse them."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, boundscheck=False)
def _block_sum(a, lo, n):
    """Σ a[lo:lo+n], n ≤ 128, as numpy sums a block: sequential below 8 terms, else eight interleaved partial sums."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    m = n - n % 8
    while i < m:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True, boundscheck=False)
def pairwise_sum(a, lo, n):
    """Σ a[lo:lo+n] as ``numpy.add.reduce`` sums a contiguous float64 vector: blocks of up to 128
    (:func:`_block_sum`), a longer run split at half (rounded down to a multiple of 8) and the halves' sums added.
    Without recursion (a recursive function loaded from numba's cache crashed): the same tree on explicit stacks."""
    if n <= 128:
        return _block_sum(a, lo, n)
    los = np.empty(128, np.int64)
    ns = np.empty(128, np.int64)
    stage = np.empty(128, np.int64)
    vals = np.empty(128)
    top, nv = 0, 0
    los[0], ns[0], stage[0] = lo, n, 0
    while top >= 0:
        l0, m, st = los[top], ns[top], stage[top]
        top -= 1
        if m <= 128:
            vals[nv] = _block_sum(a, l0, m)
            nv += 1
        elif st == 1:  # both halves summed: left + right
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]
        else:
            n2 = m // 2
            n2 -= n2 % 8
            top += 1
            los[top], ns[top], stage[top] = l0, m, 1
            top += 1
            los[top], ns[top], stage[top] = l0 + n2, m - n2, 0
            top += 1
            los[top], ns[top], stage[top] = l0, n2, 0
    return vals[0]


@njit(cache=True, boundscheck=False)
def masses(indptr, indices, data, x, y, g, K, stop):
    """g[j] = Σ x after j steps x ← Pᵀx (Pᵀ as CSR), j < K; stops once g[j] < ``stop`` (g[0] the caller's).
    Returns the steps computed."""
    n = x.size
    for j in range(1, K):
        for i in range(n):
            s = 0.0
            for k in range(indptr[i], indptr[i + 1]):
                s += data[k] * x[indices[k]]
            y[i] = s
        x, y = y, x
        s = 0.0 + pairwise_sum(x, 0, n)
        g[j] = s
        if s < stop:
            return j + 1
    return K
