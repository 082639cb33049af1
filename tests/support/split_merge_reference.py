"""Reference recursions of the split-merge study's kernels (:mod:`sojourn.split_merge.kernel`), used only by the
tests and ``benchmarks/split_merge_vs_kw.py``: each takes a given sequence of inter-arrival and service (or replica)
times, so that a kernel can be checked against it on the same draws.

* :func:`split_merge_delays`: the host-level split-merge model — the hosts' free times as a multiset, a pool of
  hosts free since the pool time and a 4-ary min-heap of (free time, number of hosts) entries; a workunit takes the
  r hosts free first and pushes (start + S, r);
* :func:`mgc_delays`: the plain FCFS M/G/c recursion (the super-servers);
* :func:`super_server_delays`: the kernel's winner tree over the c super-servers on a given sequence;
* :func:`fork_join_delays`: fork-join with cancellation by the kernel's sorted window on a given sequence;
* :func:`fork_join_delays_by_scan`: the same by the plain O(n·r) scan of the n free times.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from sojourn.split_merge.kernel import FJ_SLACK, _fork_join_assign, _put_back, _tree_replace, winner_tree


# ---------------------------------------------------------------------------------------------
# split-merge: a pool of hosts free since pool_t (pool_t ≤ every heap entry) and a 4-ary min-heap of
# (free time, number of hosts) entries
@njit(inline="always")
def _heap_push(ht, hc, size, t, c):
    i = size
    while i > 0:
        p = (i - 1) >> 2
        if ht[p] <= t:
            break
        ht[i] = ht[p]
        hc[i] = hc[p]
        i = p
    ht[i] = t
    hc[i] = c
    return size + 1


@njit(inline="always")
def _sift_down(ht, hc, size, t, c):
    """Put (t, c) at the root of a heap of ``size`` entries whose root slot is free, and restore the order."""
    i = 0
    while True:
        k = 4 * i + 1
        if k >= size:
            break
        m = k
        mv = ht[k]
        e = k + 4 if k + 4 < size else size
        for j in range(k + 1, e):
            v = ht[j]
            if v < mv:
                mv = v
                m = j
        if mv >= t:
            break
        ht[i] = mv
        hc[i] = hc[m]
        i = m
    ht[i] = t
    hc[i] = c


@njit(inline="always")
def _heap_pop(ht, hc, size):
    """Remove the root; returns the new size (the caller read ht[0], hc[0] before)."""
    size -= 1
    _sift_down(ht, hc, size, ht[size], hc[size])
    return size


@njit(inline="always")
def _split_merge_step(ht, hc, size, pool, pool_t, a, r, s):
    """One workunit arriving at a with service s: take the r first-free hosts (the pool first, then heap entries
    in order of free time; the rest of the last entry taken becomes the pool), start at max(arrival, the r-th
    smallest free time) and hold the r hosts until start + s. The last heap entry taken is not popped: the new
    entry (start + s, r) replaces it at the root (one sift-down instead of a pop and a push).
    Returns (start, size, pool, pool_t). (Scalars in and out: state kept in an array would be reloaded at
    every heap store.)"""
    if pool >= r:
        start = pool_t if pool_t > a else a
        return start, _heap_push(ht, hc, size, start + s, r), pool - r, pool_t
    need = r - pool
    pool = 0
    while True:
        t0 = ht[0]
        c0 = hc[0]
        if c0 >= need:
            break
        need -= c0
        size = _heap_pop(ht, hc, size)
    if c0 > need:
        pool = c0 - need
        pool_t = t0
    start = t0 if t0 > a else a
    _sift_down(ht, hc, size, start + s, r)
    return start, size, pool, pool_t


@njit(cache=True)
def split_merge_delays(inter, service, n, r):
    """Delays of split-merge on n hosts for given inter-arrival times and workunit service times (a trace)."""
    ht = np.empty(n + 1)
    hc = np.empty(n + 1, np.int64)
    size, pool, pool_t = 0, n, 0.0
    out = np.empty(inter.size)
    a = 0.0
    for i in range(inter.size):
        a += inter[i]
        start, size, pool, pool_t = _split_merge_step(ht, hc, size, pool, pool_t, a, r, service[i])
        out[i] = start - a
    return out


@njit(cache=True)
def mgc_delays(inter, service, c):
    """Reference: delays of the FCFS M/G/c queue (c servers, each workunit on the first free server)."""
    free = np.zeros(c)
    out = np.empty(inter.size)
    a = 0.0
    for i in range(inter.size):
        a += inter[i]
        k = 0
        for j in range(1, c):
            if free[j] < free[k]:
                k = j
        s = free[k] if free[k] > a else a
        out[i] = s - a
        free[k] = s + service[i]
    return out


# ---------------------------------------------------------------------------------------------
# the c super-servers' free times in a winner tree: v[0..L) the leaves (free times, +inf beyond c),
# win[L + j] = j and win[k] (1 <= k < L) the leaf index of the earliest free time below node k


@njit(cache=True)
def super_server_delays(inter, service, c):
    """Delays of FCFS M/G/c on c servers by the winner tree (the recursion of :func:`run_split_merge`)."""
    v, win, L = winner_tree(c)
    w = win[1]
    f = v[w]
    out = np.empty(inter.size)
    a = 0.0
    for i in range(inter.size):
        a += inter[i]
        start = f if f > a else a
        out[i] = start - a
        w, f = _tree_replace(v, win, L, w, start + service[i])
    return out


# ---------------------------------------------------------------------------------------------
# replica draws, a chunk at a time (a tight sampling loop, then a tight queue loop)


@njit(cache=True)
def fork_join_delays(inter, X, n, r, q):
    """Fork-join with cancellation on a given sequence — inter-arrival times (the time before each arrival)
    and replica times X (workunits × r) — by the sorted window of the streaming kernel: (delay, latency,
    host-time computed) per workunit."""
    buf = np.zeros(n + FJ_SLACK * r)
    head = 0
    m = inter.size
    out = np.empty((3, m))
    free_r = np.empty(r)
    stt = np.empty(r)
    en = np.empty(r)
    srt = np.empty(r)
    a = 0.0
    for i in range(m):
        a += inter[i]
        for j in range(r):
            free_r[j] = buf[head + j]
        first, done, work = _fork_join_assign(free_r, X[i], a, r, q, stt, en, srt)
        head = _put_back(buf, head + r, n, r, free_r)
        out[0, i] = first - a
        out[1, i] = done - a
        out[2, i] = work
    return out


@njit(cache=True)
def fork_join_delays_by_scan(inter, X, n, r, q):
    """The same by the plain O(n·r) scan of the n free times for the r smallest (the reference the tree is
    tested against; it was the streaming kernel's selection before the tree)."""
    free = np.zeros(n)
    pick = np.empty(r, np.int64)
    free_r = np.empty(r)
    stt = np.empty(r)
    en = np.empty(r)
    srt = np.empty(r)
    m = inter.size
    out = np.empty((3, m))
    a = 0.0
    for i in range(m):
        a += inter[i]
        cnt = 0
        for h in range(n):  # insertion into pick[:r], ascending free time
            fh = free[h]
            if cnt < r:
                j = cnt
                cnt += 1
            elif fh < free[pick[r - 1]]:
                j = r - 1
            else:
                continue
            while j > 0 and free[pick[j - 1]] > fh:
                pick[j] = pick[j - 1]
                j -= 1
            pick[j] = h
        for j in range(r):
            free_r[j] = free[pick[j]]
        first, done, work = _fork_join_assign(free_r, X[i], a, r, q, stt, en, srt)
        for j in range(r):
            free[pick[j]] = free_r[j]
        out[0, i] = first - a
        out[1, i] = done - a
        out[2, i] = work
    return out
