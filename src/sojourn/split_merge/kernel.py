"""Numba kernels of the two replication models; streaming statistics only (no per-workunit arrays).

Workunits arrive as a Poisson stream; each needs S_{q:r}, the q-th smallest of r replica times. A replica law
with a phase-type form (exponential, Erlang, hyperexponential, phase-type) draws S_{q:r} and the replicas'
computing time in one walk of the lumped PH(β_{q:r}, B_{q:r}) by alias tables (:mod:`sojourn.core.laws.ph_walk`:
exponential and hyperexponential replicas draw a whole path of it at once, one pick and q exponentials, inside
the queue loop; other phase-type laws a chunk of walks at a time), from NumPy's SFC64 stream stepped inline
(:mod:`sojourn.core.laws.sfc64`); any other law draws its r replicas through
:func:`sojourn.core.laws.sampling.sample_law` from a ``numpy.random.Generator`` and takes the q-th smallest.

Split-merge (FCFS, concurrent release)
    Every workunit takes r hosts and releases them together, so the n hosts act as c = ⌊n/r⌋ super-servers
    (the n mod r others are never enough for a workunit) and the delays are those of FCFS M/G/c: a workunit
    starts at max(arrival, the earliest super-server free time) and holds that super-server for S_{q:r}.
    The kernel keeps the c free times in a winner tree (a complete binary tree over c leaves padded to a
    power of two, each internal node holding the index of its subtree's earliest leaf): replacing the
    earliest free time climbs one fixed path of ⌈log₂ c⌉ nodes, comparing with each sibling's winner without
    a branch (15 ns per workunit at c = 100 against 34 ns for a 4-ary heap, measured here).
    The host-level model is the reference it is checked against (``split_merge_delays`` in
    ``tests/support/split_merge_reference.py``, with the other reference recursions): the
    hosts' free times as a multiset — a pool of hosts free since the pool time and a 4-ary min-heap of (free
    time, number of hosts) entries; a workunit takes the r hosts free first and pushes (start + S, r). A test
    checks that both give identical delays on one workunit sequence, and that the streaming kernel's
    delays are those of the plain M/G/c recursion (``mgc_delays``) on its own draws.
Fork-join with cancellation
    n host free times; each of the r replicas goes to a distinct host among the r with the least
    remaining work, starts at max(arrival, host free time), ends at start + X_j; the workunit completes
    at the q-th replica end C; a replica not ended by C is stopped at C (if started) or dropped (if not),
    so its host becomes free at min(end, C) or keeps its previous free time. FIFO at every host makes the
    whole future of a workunit known at its arrival. Hosts are exchangeable, so only the sorted vector of
    free times matters (as in the Kiefer–Wolfowitz recursion): the kernel keeps it as a window sliding through
    a buffer, takes its first r, and puts the r new free times back — in front where a cancelled replica's
    host keeps its (least) free time, else merged from the back. A test checks it against the plain scan of
    the n hosts (``fork_join_delays_by_scan``), identical on one sequence; 2–9x faster at n = 100.

Recording: workunit i (0-based) is recorded if i ≥ warm_n and its arrival ≥ warm_t; the run
stops after n_record recorded (if > 0) or at the first arrival after ``horizon``. Delay = time from
arrival to the start of the first replica (split-merge: of all r); latency = time to the q-th result.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..core.estimates.recording import record
from ..core.laws.ph_walk import closed_draw, path_shape
from ..core.laws.ph_walk import fill as ph_fill
from ..core.laws.sampling import sample_law
from ..core.laws.sfc64 import fill_standard_exponential, load, standard_exponential, store

# layout of the accumulator returned by run()
ACC_FIELDS = ("recorded", "delay_overflow", "latency_overflow", "delay_sum", "delay_sumsq", "latency_sum",
              "latency_sumsq", "latency_max", "held", "computing", "first_arrival", "last_arrival", "simulated")


@njit(inline="always")
def _record_workunit(delay, latency, hold, inv_dt, hist_delay, hist_latency, rec, over_d, over_l, sd, sdd, sl, sll,
                     mx, held):
    """A recorded workunit's delay and latency into their histograms and sums
    (:func:`sojourn.core.estimates.recording.record`;
    the maximum is the latency's), and the host-time it held."""
    _, over_d, sd, sdd, _ = record(delay, inv_dt, hist_delay, 0, over_d, sd, sdd, 0.0)
    rec, over_l, sl, sll, mx = record(latency, inv_dt, hist_latency, rec, over_l, sl, sll, mx)
    return rec, over_d, over_l, sd, sdd, sl, sll, mx, held + hold


@njit(cache=True)
def winner_tree(c):
    """(v, win, L) for c servers free at time 0."""
    L = 1
    while L < c:
        L *= 2
    v = np.full(L, np.inf)
    v[:c] = 0.0
    win = np.empty(2 * L, np.int64)
    for j in range(L):
        win[L + j] = j
    for k in range(L - 1, 0, -1):
        a = win[2 * k]
        b = win[2 * k + 1]
        win[k] = a if v[a] <= v[b] else b
    return v, win, L


@njit(inline="always")
def _tree_replace(v, win, L, w, t):
    """Set leaf w (the earliest, win[1]) to t and restore the tree along its path; returns the new earliest
    (leaf, time) (also win[1] and its value)."""
    v[w] = t
    pos = w + L
    while pos > 1:
        o = win[pos ^ 1]  # the sibling subtree's winner
        ov = v[o]
        pos >>= 1
        lt = ov < t  # selects, not branches: which side wins is unpredictable
        w = o if lt else w
        t = ov if lt else t
        win[pos] = w
    return w, t


CHUNK = 1024


_EMPTY_STATE = np.zeros(0, np.uint64)
_EMPTY_F = np.zeros(0)
_EMPTY_I = np.zeros(0, np.int64)
_EMPTY_U = np.zeros(0, np.uint64)
#: ``walk`` of a law without a phase-type form: no tables
NO_WALK = (_EMPTY_U, _EMPTY_I, _EMPTY_I, _EMPTY_I, _EMPTY_I, _EMPTY_F, _EMPTY_F, _EMPTY_F, _EMPTY_F, _EMPTY_I, _EMPTY_I,
           _EMPTY_U, _EMPTY_I, _EMPTY_I)


@njit(inline="always")
def _qth_smallest(y, r, q):
    """The q-th smallest of y[:r], by partial selection sort in place (y[:q] ascending after)."""
    for k in range(q):
        mi = k
        for j in range(k + 1, r):
            if y[j] < y[mi]:
                mi = j
        tmp = y[k]
        y[k] = y[mi]
        y[mi] = tmp
    return y[q - 1]


@njit(cache=True)
def fill_order_stats(r, q, code, p, service, work, rng, st, walk):
    """service[i] = S_{q:r} and work[i] = Σ_j min(X_j, S_{q:r}) (host-time computing) for every i.

    ``walk`` non-empty (a phase-type replica law: exponential, Erlang, hyperexponential, phase-type): the
    alias tables (:func:`sojourn.core.laws.ph_walk.walk_tables`) of the lumped PH(β_{q:r}, B_{q:r}) with the live
    replicas of each phase as its reward, so one walk of the lumped chain gives S_{q:r} and the computing time
    at once (exact: the lumped chain is S_{q:r}'s own, by exchangeability); drawn from the inline SFC64 state
    ``st`` (:mod:`sojourn.core.laws.sfc64`). Exponential replicas hold r, r−1, …, r−q+1 live replicas on a
    single path: q exponential draws, no pick.
    Otherwise: r draws of the law (code, p) from ``rng`` through ``sample_law`` and the q-th smallest by
    partial selection.
    """
    m = service.size
    if walk[0].size > 0:
        p_thr, p_alias, p_off, p_len, p_end, p_inv, p_rew, inv_rate, reward, offset, bits, thr, out, ali = walk
        ph_fill(service, work, st, p_thr, p_alias, p_off, p_len, p_end, p_inv, p_rew, inv_rate, reward, offset, bits,
                thr, out, ali)
        return
    x = np.empty(r)
    y = np.empty(r)
    for i in range(m):
        for j in range(r):
            x[j] = sample_law(code, p, rng)
            y[j] = x[j]
        s = _qth_smallest(y, r, q)
        w = 0.0
        for j in range(r):
            w += x[j] if x[j] < s else s
        service[i] = s
        work[i] = w

# ---------------------------------------------------------------------------------------------
# the streaming kernels (local scalar accumulators: arrays written every step would be reloaded)
@njit(cache=True)
def run_split_merge(n, r, q, lam, code, p, warm_n, warm_t, n_record, horizon, dt, hist_delay, hist_latency, rng,
                    st=_EMPTY_STATE, walk=NO_WALK):
    """One split-merge replication on the ⌊n/r⌋ super-servers (winner tree); fills the two histograms in place
    and returns the accumulator (ACC_FIELDS).

    With ``walk`` (a phase-type replica law, :func:`fill_order_stats`) the inter-arrival times and the replicas
    draw from the inline SFC64 state ``st`` (:mod:`sojourn.core.laws.sfc64`), otherwise everything from ``rng``.
    A walk of closed paths (:func:`sojourn.core.laws.ph_walk.path_shape`) draws each workunit in the loop — its
    inter-arrival time, then :func:`sojourn.core.laws.ph_walk.closed_draw` — so the draws overlap the winner tree's
    latency (5–10 % faster here than a chunk of draws, then a chunk of queue steps); others a chunk at a time.
    held: host-time held by recorded workunits (r·S_{q:r} each); computing: host-time spent computing
    replicas until the q-th result (the r−q others are cancelled then, the q−1 earlier ones idle).
    """
    inline = walk[0].size > 0
    v, win, L = winner_tree(n // r)
    w = win[1]
    f = v[w]
    rec, over_d, over_l = 0, 0, 0  # recorded, and beyond the histograms (delay, latency)
    sd, sdd, sl, sll, mx, held, comp = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0  # sums of delay, latency, work; max
    first, last = -1.0, -1.0
    a = 0.0
    i = 0
    scale = 1.0 / lam
    inv_dt = 1.0 / dt  # bins as in the JSQ-PS kernels (a multiply: a division per bin cost ~10 % here)
    inter = np.empty(CHUNK)
    svc = np.empty(CHUNK)
    wrk = np.empty(CHUNK)
    c = CHUNK
    p_thr, p_alias, _, p_len, p_end, p_inv, p_rew = walk[0], walk[1], walk[2], walk[3], walk[4], walk[5], walk[6]
    mask, pb, closed = path_shape(p_thr, p_len, p_end) if inline else (np.int64(0), np.uint64(0), np.int64(-1))
    g = load(st) if closed >= 0 else (np.uint64(0), np.uint64(0), np.uint64(0), np.uint64(0))
    while True:
        if closed >= 0:  # closed paths: draws inline, overlapping the tree's latency (5-10 % here)
            e, g = standard_exponential(g)
            a += e * scale
            if a > horizon:
                break
            s, work, g = closed_draw(g, p_thr, p_alias, mask, pb, closed, p_inv, p_rew)
        else:
            if c == CHUNK:
                if inline:
                    fill_standard_exponential(inter, st)
                else:
                    for k in range(CHUNK):
                        inter[k] = rng.standard_exponential()
                fill_order_stats(r, q, code, p, svc, wrk, rng, st, walk)
                c = 0
            a += inter[c] * scale
            if a > horizon:
                break
            s = svc[c]
            work = wrk[c]
            c += 1
        start = f if f > a else a  # (w, f): the earliest free super-server, from the last update
        w, f = _tree_replace(v, win, L, w, start + s)
        i += 1
        if i > warm_n and a >= warm_t:
            first, last = (a if first < 0.0 else first), a
            comp += work
            rec, over_d, over_l, sd, sdd, sl, sll, mx, held = _record_workunit(
                start - a, start - a + s, r * s, inv_dt, hist_delay, hist_latency, rec, over_d, over_l, sd, sdd, sl,
                sll, mx, held)
            if n_record > 0 and rec >= n_record:
                break
    if closed >= 0:
        store(st, g)
    return np.array([rec, over_d, over_l, sd, sdd, sl, sll, mx, held, comp, first, last, i], dtype=np.float64)


#: fork-join's window of n sorted free times drifts through a buffer of n + FJ_SLACK·r, copied back every
#: ~FJ_SLACK workunits at most (n copies per FJ_SLACK workunits: negligible)
FJ_SLACK = 4096


@njit(inline="always")
def _fork_join_assign(free_r, x, a, r, q, stt, en, srt):
    """The r least-loaded hosts' free times ``free_r`` (ascending) take replicas x[:r]: fills start and end
    times and the new free times (in free_r); returns (first start, q-th end C, host-time computed)."""
    first = np.inf
    for j in range(r):
        f = free_r[j]
        stt[j] = f if f > a else a
        en[j] = stt[j] + x[j]
        srt[j] = en[j]
        first = stt[j] if stt[j] < first else first
    done = _qth_smallest(srt, r, q)  # the q-th end, from the copy
    work = 0.0
    for j in range(r):
        if en[j] <= done:
            free_r[j] = en[j]
            work += en[j] - stt[j]
        elif stt[j] < done:
            free_r[j] = done
            work += done - stt[j]
    return first, done, work


@njit(inline="always")
def _put_back(buf, h0, n, r, new):
    """Return r hosts with free times ``new`` (any order; sorted here in place) to the sorted window of the
    other n − r at buf[h0 : h0 + n − r]; returns the window's new head (the window stays n long).

    Those not above the window's smallest (a cancelled replica's host keeps its free time, which was among
    the least) are put in front, O(1) each; the rest are merged in from the back, moving only the old entries
    above them. The window drifts towards the buffer's end, and is copied back to the start when it nears it."""
    for j in range(1, r):  # insertion sort: r ≤ 10 here
        t = new[j]
        k = j - 1
        while k >= 0 and new[k] > t:
            new[k + 1] = new[k]
            k -= 1
        new[k + 1] = t
    p = 0
    if n == r:
        p = r
    else:
        while p < r and new[p] <= buf[h0]:
            p += 1
    k = h0 + n - r - 1  # the last old entry
    dst = h0 + n - p - 1
    j = r - 1
    while j >= p:
        t = new[j]
        if k >= h0 and buf[k] > t:
            buf[dst] = buf[k]
            k -= 1
        else:
            buf[dst] = t
            j -= 1
        dst -= 1
    for j in range(p):
        buf[h0 - p + j] = new[j]
    head = h0 - p
    if head + n + r > buf.size:
        for k in range(n):
            buf[k] = buf[head + k]
        head = 0
    return head


@njit(cache=True)
def run_fork_join(n, r, q, lam, code, p, warm_n, warm_t, n_record, horizon, dt, hist_delay, hist_latency, rng,
                  st=_EMPTY_STATE, walk=NO_WALK):
    """One fork-join-with-cancellation replication (see the module docstring); same outputs as
    :func:`run_split_merge` (held = computing: a host is held exactly while it computes a replica).

    ``walk``: the tables (:func:`sojourn.core.laws.ph_walk.walk_tables`) of the replica law itself (each replica
    runs on its own), drawn from the inline SFC64 state ``st``: closed paths (exponential, Erlang,
    hyperexponential) per workunit in the loop — its inter-arrival time, then its r replicas —, other
    phase-type laws a chunk at a time (CHUNK inter-arrival times, then CHUNK·r replicas, workunit by
    workunit); without tables everything from ``rng`` (replicas through ``sample_law``)."""
    x = np.empty(r)
    inline = walk[0].size > 0
    p_thr, p_alias, _, p_len, p_end, p_inv, p_rew = walk[0], walk[1], walk[2], walk[3], walk[4], walk[5], walk[6]
    mask, pb, closed = path_shape(p_thr, p_len, p_end) if inline else (np.int64(0), np.uint64(0), np.int64(-1))
    g = load(st) if closed >= 0 else (np.uint64(0), np.uint64(0), np.uint64(0), np.uint64(0))
    chunked = inline and closed < 0
    m = CHUNK if chunked else 0
    inter = np.empty(m)
    xs = np.empty(m * r)
    ws = np.empty(m * r)
    c = m
    buf = np.zeros(n + FJ_SLACK * r)
    head = 0
    free_r = np.empty(r)
    stt = np.empty(r)
    en = np.empty(r)
    srt = np.empty(r)
    rec, over_d, over_l = 0, 0, 0  # recorded, and beyond the histograms (delay, latency)
    sd, sdd, sl, sll, mx, held = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0  # sums of delay, latency, host-time; max latency
    first_a, last_a = -1.0, -1.0
    a = 0.0
    i = 0
    scale = 1.0 / lam
    inv_dt = 1.0 / dt  # bins as in the JSQ-PS kernels (a multiply: a division per bin cost ~10 % here)
    while True:
        if closed >= 0:
            e, g = standard_exponential(g)
            a += e * scale
            if a > horizon:
                break
            for j in range(r):
                x[j], _, g = closed_draw(g, p_thr, p_alias, mask, pb, closed, p_inv, p_rew)
        elif chunked:
            if c == m:
                fill_standard_exponential(inter, st)
                (p_thr_, p_alias_, p_off, p_len_, p_end_, p_inv_, p_rew_, inv_rate, reward, offset, bits, thr, out,
                 ali) = walk
                ph_fill(xs, ws, st, p_thr_, p_alias_, p_off, p_len_, p_end_, p_inv_, p_rew_, inv_rate, reward, offset,
                        bits, thr, out, ali)
                c = 0
            a += inter[c] * scale
            if a > horizon:
                break
            for j in range(r):
                x[j] = xs[c * r + j]
            c += 1
        else:
            a += rng.exponential(scale)
            if a > horizon:
                break
            for j in range(r):
                x[j] = sample_law(code, p, rng)
        for j in range(r):  # the r least loaded: the window's first r
            free_r[j] = buf[head + j]
        first, done, work = _fork_join_assign(free_r, x, a, r, q, stt, en, srt)
        head = _put_back(buf, head + r, n, r, free_r)
        i += 1
        if i > warm_n and a >= warm_t:
            first_a, last_a = (a if first_a < 0.0 else first_a), a
            rec, over_d, over_l, sd, sdd, sl, sll, mx, held = _record_workunit(
                first - a, done - a, work, inv_dt, hist_delay, hist_latency, rec, over_d, over_l, sd, sdd, sl, sll, mx,
                held)
            if n_record > 0 and rec >= n_record:
                break
    if closed >= 0:
        store(st, g)
    return np.array([rec, over_d, over_l, sd, sdd, sl, sll, mx, held, held, first_a, last_a, i], dtype=np.float64)
