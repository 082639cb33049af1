"""Numba kernels of the two replication models; streaming statistics only (no per-workunit arrays).

Workunits arrive as a Poisson stream; each draws r replica times (any core law through
:func:`sojourn.core.sampling.sample_law`; exponential replicas take a shortcut that draws only the q
stage lengths of S_{q:r}, exact by memorylessness).

Split-merge (FCFS, concurrent release)
    The hosts' free times are a multiset: a pool of hosts free since the pool time (earlier than every
    other host's) and a 4-ary min-heap of (free time, number of hosts) entries. A workunit takes the r
    hosts that are free first (the pool, then heap entries until r hosts are collected; the rest of the
    last entry becomes the pool), starts at max(arrival, the r-th smallest free time) and holds its r
    hosts for S_{q:r}: one entry (start + S, r) is pushed. O(log n) per workunit on n host-level free
    times, no reduction to super-servers (that equivalence is a test, not an assumption).
Fork-join with cancellation
    n host free times; each of the r replicas goes to a distinct host among the r with the least
    remaining work, starts at max(arrival, host free time), ends at start + X_j; the workunit completes
    at the q-th replica end C; a replica not ended by C is stopped at C (if started) or dropped (if not),
    so its host becomes free at min(end, C) or keeps its previous free time. FIFO at every host makes the
    whole future of a workunit known at its arrival. O(n·r) per workunit.

Recording: workunit i (0-based) is recorded if i ≥ warm_n and its arrival ≥ warm_t; the run
stops after n_record recorded (if > 0) or at the first arrival after ``horizon``. Delay = time from
arrival to the start of the first replica (split-merge: of all r); latency = time to the q-th result.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..core.sampling import sample_law


# layout of the accumulator returned by run()
ACC_FIELDS = ("recorded", "delay_overflow", "latency_overflow", "delay_sum", "delay_sumsq", "latency_sum",
              "latency_sumsq", "latency_max", "held", "computing", "first_arrival", "last_arrival", "simulated")


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
def _split_merge_take(ht, hc, size, pool, pool_t, a, r):
    """Take the r first-free hosts for a workunit arriving at a: the pool first, then heap entries in order
    of free time; the rest of the last entry popped becomes the pool. Returns (start, size, pool, pool_t).
    (Scalars in and out: state kept in an array would be reloaded at every heap store.)"""
    need = r
    last = pool_t
    if pool >= need:
        pool -= need
        need = 0
    else:
        need -= pool
        pool = 0
    while need > 0:
        t0 = ht[0]
        c0 = hc[0]
        size = _heap_pop(ht, hc, size)
        last = t0
        if c0 > need:
            pool = c0 - need
            pool_t = t0
            need = 0
        else:
            need -= c0
    return (last if last > a else a), size, pool, pool_t


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
        start, size, pool, pool_t = _split_merge_take(ht, hc, size, pool, pool_t, a, r)
        size = _heap_push(ht, hc, size, start + service[i], r)
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
# replica draws, a chunk at a time (a tight sampling loop, then a tight queue loop)
CHUNK = 4096


@njit(cache=True)
def fill_order_stats(r, q, code, p, exp_rate, service, work, rng, ph_table=np.zeros((0, 0)), ph_start=np.zeros(0)):
    """service[i] = S_{q:r} and work[i] = Σ_j min(X_j, S_{q:r}) (host-time computing) for every i.

    exp_rate > 0: exponential replicas; by memorylessness S = Σ_{k<q} E_k/((r−k)μ) and the computing time is
    Σ_{k<q} E_k/μ (stage k has r−k live replicas), q draws instead of r.
    ph_table non-empty: a phase-type replica law (m phases; row i = [total rate ν_i, cumulative probabilities
    of moving to phases 0..m−1], exit the remainder; ph_start = cumulative α): the r replicas draw their
    initial phases, then the occupancy counts walk the lumped chain of S_{q:r} (the phase of the next
    transition ∝ c_i ν_i) until the q-th exit; exact by exchangeability, and no per-replica calls.
    Otherwise: r draws of the law (code, p) through ``sample_law`` and the q-th smallest by partial selection.
    """
    m = service.size
    if exp_rate > 0.0:
        inv = np.empty(q)
        for k in range(q):
            inv[k] = 1.0 / ((r - k) * exp_rate)
        for i in range(m):
            s = 0.0
            w = 0.0
            for k in range(q):
                e = rng.standard_exponential()
                s += e * inv[k]
                w += e
            service[i] = s
            work[i] = w / exp_rate
        return
    mp = ph_table.shape[0]
    if mp > 0:
        cnt = np.zeros(mp, np.int64)
        for i in range(m):
            cnt[:] = 0
            for j in range(r):
                u = rng.random()
                k = 0
                while k < mp - 1 and u >= ph_start[k]:
                    k += 1
                cnt[k] += 1
            live = r
            s = 0.0
            w = 0.0
            while live > r - q:
                tot = 0.0
                for k in range(mp):
                    tot += cnt[k] * ph_table[k, 0]
                d = rng.standard_exponential() / tot
                s += d
                w += d * live
                u = rng.random() * tot
                k = 0
                acc = cnt[0] * ph_table[0, 0]
                while k < mp - 1 and u >= acc:
                    k += 1
                    acc += cnt[k] * ph_table[k, 0]
                u = rng.random()
                dest = 0
                while dest < mp and u >= ph_table[k, 1 + dest]:
                    dest += 1
                cnt[k] -= 1
                if dest >= mp:
                    live -= 1
                else:
                    cnt[dest] += 1
            service[i] = s
            work[i] = w
        return
    x = np.empty(r)
    y = np.empty(r)
    for i in range(m):
        for j in range(r):
            x[j] = sample_law(code, p, rng)
            y[j] = x[j]
        for k in range(q):
            mi = k
            for j in range(k + 1, r):
                if y[j] < y[mi]:
                    mi = j
            tmp = y[k]
            y[k] = y[mi]
            y[mi] = tmp
        s = y[q - 1]
        w = 0.0
        for j in range(r):
            w += x[j] if x[j] < s else s
        service[i] = s
        work[i] = w


def ph_tables(alpha, T):
    """(table, start) for :func:`fill_order_stats` from a PH law (α, T) without atom."""
    alpha, T = np.asarray(alpha, float), np.asarray(T, float)
    m = alpha.size
    table = np.zeros((m, m + 1))
    for i in range(m):
        nu = -T[i, i]
        table[i, 0] = nu
        table[i, 1:] = np.cumsum(np.where(np.arange(m) == i, 0.0, T[i] / nu))
    return table, np.cumsum(alpha)


# ---------------------------------------------------------------------------------------------
# the streaming kernels (local scalar accumulators: arrays written every step would be reloaded)
@njit(cache=True)
def run_split_merge(n, r, q, lam, code, p, exp_rate, warm_n, warm_t, n_record, horizon, dt, hist_delay,
                    hist_latency, rng, ph_table=np.zeros((0, 0)), ph_start=np.zeros(0)):
    """One split-merge replication; fills the two histograms in place and returns the accumulator (ACC_FIELDS).

    held: host-time held by recorded workunits (r·S_{q:r} each); computing: host-time spent computing
    replicas until the q-th result (the r−q others are cancelled then, the q−1 earlier ones idle).
    """
    nb = hist_delay.size
    ht = np.empty(n + 1)
    hc = np.empty(n + 1, np.int64)
    size, pool, pool_t = 0, n, 0.0
    rec = 0
    over_d = 0
    over_l = 0
    sd = 0.0
    sdd = 0.0
    sl = 0.0
    sll = 0.0
    mx = 0.0
    held = 0.0
    comp = 0.0
    first = -1.0
    last = -1.0
    a = 0.0
    i = 0
    scale = 1.0 / lam
    inter = np.empty(CHUNK)
    svc = np.empty(CHUNK)
    wrk = np.empty(CHUNK)
    c = CHUNK
    while True:
        if c == CHUNK:
            for k in range(CHUNK):
                inter[k] = rng.standard_exponential()
            fill_order_stats(r, q, code, p, exp_rate, svc, wrk, rng, ph_table, ph_start)
            c = 0
        a += inter[c] * scale
        if a > horizon:
            break
        s = svc[c]
        work = wrk[c]
        c += 1
        start, size, pool, pool_t = _split_merge_take(ht, hc, size, pool, pool_t, a, r)
        size = _heap_push(ht, hc, size, start + s, r)
        i += 1
        if i > warm_n and a >= warm_t:
            delay = start - a
            lat = delay + s
            if first < 0.0:
                first = a
            last = a
            rec += 1
            b = int(delay / dt)
            if b < nb:
                hist_delay[b] += 1
            else:
                over_d += 1
            b = int(lat / dt)
            if b < nb:
                hist_latency[b] += 1
            else:
                over_l += 1
            sd += delay
            sdd += delay * delay
            sl += lat
            sll += lat * lat
            mx = lat if lat > mx else mx
            held += r * s
            comp += work
            if n_record > 0 and rec >= n_record:
                break
    return np.array([rec, over_d, over_l, sd, sdd, sl, sll, mx, held, comp, first, last, i], dtype=np.float64)


@njit(cache=True)
def run_fork_join(n, r, q, lam, code, p, exp_rate, warm_n, warm_t, n_record, horizon, dt, hist_delay,
                  hist_latency, rng):
    """One fork-join-with-cancellation replication (see the module docstring); same outputs as
    :func:`run_split_merge` (held = computing: a host is held exactly while it computes a replica)."""
    nb = hist_delay.size
    x = np.empty(2 * r)
    free = np.zeros(n)
    pick = np.empty(r, np.int64)
    stt = np.empty(r)
    en = np.empty(r)
    rec = 0
    over_d = 0
    over_l = 0
    sd = 0.0
    sdd = 0.0
    sl = 0.0
    sll = 0.0
    mx = 0.0
    held = 0.0
    first_a = -1.0
    last_a = -1.0
    a = 0.0
    i = 0
    scale = 1.0 / lam
    while True:
        a += rng.exponential(scale)
        if a > horizon:
            break
        if exp_rate > 0.0:
            for j in range(r):
                x[j] = rng.exponential(1.0 / exp_rate)
        else:
            for j in range(r):
                x[j] = sample_law(code, p, rng)
        # the r hosts with the smallest free time (least remaining work): insertion into pick[:r]
        cnt = 0
        for h in range(n):
            f = free[h]
            if cnt < r:
                j = cnt
                cnt += 1
            elif f < free[pick[r - 1]]:
                j = r - 1
            else:
                continue
            while j > 0 and free[pick[j - 1]] > f:
                pick[j] = pick[j - 1]
                j -= 1
            pick[j] = h
        first = np.inf
        for j in range(r):
            f = free[pick[j]]
            stt[j] = f if f > a else a
            en[j] = stt[j] + x[j]
            x[r + j] = en[j]
            first = stt[j] if stt[j] < first else first
        for k in range(q):  # q-th smallest end: partial selection sort of the copy x[r:2r]
            m = k
            for j in range(k + 1, r):
                if x[r + j] < x[r + m]:
                    m = j
            tmp = x[r + k]
            x[r + k] = x[r + m]
            x[r + m] = tmp
        done = x[r + q - 1]
        work = 0.0
        for j in range(r):
            if en[j] <= done:
                free[pick[j]] = en[j]
                work += en[j] - stt[j]
            elif stt[j] < done:
                free[pick[j]] = done
                work += done - stt[j]
        i += 1
        if i > warm_n and a >= warm_t:
            delay = first - a
            lat = done - a
            if first_a < 0.0:
                first_a = a
            last_a = a
            rec += 1
            b = int(delay / dt)
            if b < nb:
                hist_delay[b] += 1
            else:
                over_d += 1
            b = int(lat / dt)
            if b < nb:
                hist_latency[b] += 1
            else:
                over_l += 1
            sd += delay
            sdd += delay * delay
            sl += lat
            sll += lat * lat
            mx = lat if lat > mx else mx
            held += work
            if n_record > 0 and rec >= n_record:
                break
    return np.array([rec, over_d, over_l, sd, sdd, sl, sll, mx, held, held, first_a, last_a, i], dtype=np.float64)
