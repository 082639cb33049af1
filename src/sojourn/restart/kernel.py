"""Numba event kernel: a network of PS queues with phase-type jobs and restarts, two semantics.

State: the jobs present (a pool of slots with type, network entry date, timeout deadline, restart
count, recorded flag; an active list with swap-remove) and the number of jobs of each type j =
(queue, class, phase). Under PS with n jobs at a queue each job's phase ends at rate μ_j/n, so the next
service event of a queue is exponential with rate Σ_j x_j μ_j / n (memoryless phases: no virtual
clocks are needed); the job is drawn in proportion to μ_j, then uniformly within its type.

``mode`` 0, **signal semantics** (the G-network): restart signals reach queue n as a Poisson stream of
rate ``signal_ext[n]`` (those finding the queue empty vanish, so they are only drawn while it is busy)
plus the departures that become signals; a signal picks one job uniformly, and succeeds with its
α_j, moving it to a type drawn from ``restart_cum[j]``.

``mode`` 1, **timeout semantics**: no external signals; each job draws a timeout τ from the law
(``tcode``, ``tparams``) when it enters a queue and at each (re)start; when the time since then
exceeds τ, the job restarts (with success probability α_j, as a signal would; a failed attempt, or a
success, re-arms the timer with a fresh τ). The restart rate of a job does not fall as 1/n.

Jobs arriving in (warmup, rec_end) are recorded and followed until they leave the network; the run
continues past rec_end until the last one has left. Streamed outputs only: the response-time
histogram (bin floor(s/dt), else overflow), the restart-count histogram of recorded jobs, the
time-integral of the number of jobs of each type over (warmup, rec_end) and event counters.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..core.recording import record
from ..core.sampling import sample_law

# acc layout (returned by run)
A_COUNT, A_OVERFLOW, A_SUM, A_SUMSQ, A_MAX = 0, 1, 2, 3, 4
A_RESTARTS_RECORDED = 5  # successful restarts of recorded jobs
A_DEPARTURES = 6  # jobs leaving the network in the window
A_RESTARTS = 7  # successful restarts (any job) in the window
A_SIGNALS = 8  # signals that reached a non-empty queue in the window
A_TIMEOUTS = 9  # timeouts that fired in the window
A_EVENTS = 10  # events simulated (whole run)
A_UNSTABLE = 11  # stopped: 1 more than max_jobs jobs present, 2 more than max_events events (not stationary)
N_ACC = 12



@njit(inline="always")
def _restart(slot, j, J, restart_cum, cnt, jtype, jrest, acc, inwin, rng):
    """The job in ``slot`` (type j) restarts: its new type by the restart law, the type counts, its restarts."""
    k = _pick(restart_cum, j, rng.random())
    if k >= J:
        k = J - 1
    cnt[j] -= 1
    cnt[k] += 1
    jtype[slot] = k
    jrest[slot] += 1
    if inwin:
        acc[A_RESTARTS] += 1.0

@njit(cache=True)
def _pick(cum, row, u):
    """First index k with u < cum[row, k], or cum.shape[1] (the remainder) if none."""
    m = cum.shape[1]
    for k in range(m):
        if u < cum[row, k]:
            return k
    return m


@njit(cache=True)
def _pick1(cum, u):
    """First index k with u < cum[k] (the last index if none: rounding at the top)."""
    m = cum.shape[0]
    for k in range(m):
        if u < cum[k]:
            return k
    return m - 1


@njit(cache=True)
def _grow_f(a, cap):
    out = np.empty(cap, a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True)
def run(type_queue, type_station, queue_first, queue_last, mu, phase_cum, route_cum, entry_cum, alpha,
        restart_cum, arr_cum, signal_ext, mode, tcode, tparams, warmup, rec_end, dt, hist, rhist, area,
        max_jobs, max_events, rng):
    """One replication (see the module docstring). Returns acc (N_ACC,); hist, rhist, area filled in place.

    type_queue, type_station (J,): queue and station of each type; queue_first/queue_last (N,): the types
    of queue n are queue_first[n] .. queue_last[n] − 1. phase_cum (J, J): cumulative next-type law on a
    phase completion (remainder: service ends). route_cum (C, C + N): cumulative law of a finished job of
    station c: join station c' (first C entries) or become a signal at queue n (next N); remainder: leave.
    entry_cum (C, J): cumulative type law of a job entering station c. restart_cum (J, J): cumulative
    type law after a successful restart. arr_cum (C,): cumulative external arrival rates.
    max_jobs: the run stops with acc[A_UNSTABLE] = 1 when more jobs than this are present (timeout
    semantics can be unstable where the signal model is not: the restart rate does not fall as 1/n);
    with acc[A_UNSTABLE] = 2 after ``max_events`` events (a run that cannot end in reasonable time).
    """
    J = mu.shape[0]
    N = queue_first.shape[0]
    C = entry_cum.shape[0]
    rmax = rhist.shape[0] - 1
    inv_dt = 1.0 / dt
    lam = arr_cum[C - 1]
    timeouts = mode == 1
    cnt = np.zeros(J, np.int64)
    nq = np.zeros(N, np.int64)
    qrate = np.zeros(N)
    cap = 64
    jtype = np.empty(cap, np.int64)
    jarr = np.empty(cap)
    jdead = np.empty(cap)
    jrest = np.empty(cap, np.int64)
    jrec = np.empty(cap, np.bool_)
    nact = 0
    acc = np.zeros(N_ACC)
    pending = 0
    t = 0.0
    next_arr = rng.exponential(1.0 / lam)
    while True:
        # event rates of the Markov part: service at each busy queue, external signals (signal mode)
        total = 0.0
        for n in range(N):
            qrate[n] = 0.0
            if nq[n] > 0:
                s = 0.0
                for j in range(queue_first[n], queue_last[n]):
                    s += cnt[j] * mu[j]
                qrate[n] = s / nq[n]
                if not timeouts:
                    qrate[n] += signal_ext[n]
            total += qrate[n]
        t_mark = t + rng.exponential(1.0 / total) if total > 0.0 else np.inf
        t_dead = np.inf
        who = -1
        if timeouts:
            for a in range(nact):
                if jdead[a] < t_dead:
                    t_dead = jdead[a]
                    who = a
        t_next = next_arr
        kind = 0  # 0 arrival, 1 Markov event, 2 timeout
        if t_mark < t_next:
            t_next = t_mark
            kind = 1
        if t_dead < t_next:
            t_next = t_dead
            kind = 2
        # time-integral of the number of jobs of each type over the window
        lo = t if t > warmup else warmup
        hi = t_next if t_next < rec_end else rec_end
        if hi > lo:
            for j in range(J):
                if cnt[j] > 0:
                    area[j] += cnt[j] * (hi - lo)
        t = t_next
        inwin = warmup < t < rec_end
        acc[A_EVENTS] += 1.0
        if acc[A_EVENTS] > max_events:
            acc[A_UNSTABLE] = 2.0
            break
        leaving = -1  # slot of a job that leaves the network at this event
        signal_to = -1  # queue that receives a signal at this event
        if kind == 0:
            if t >= rec_end and pending == 0:
                break
            c = _pick1(arr_cum, rng.random() * lam)
            j = _pick(entry_cum, c, rng.random())
            if j >= J:
                j = J - 1
            if nact == cap:
                cap *= 2
                jtype, jarr, jdead = _grow_f(jtype, cap), _grow_f(jarr, cap), _grow_f(jdead, cap)
                jrest, jrec = _grow_f(jrest, cap), _grow_f(jrec, cap)
            jtype[nact] = j
            jarr[nact] = t
            jrest[nact] = 0
            jrec[nact] = warmup < t < rec_end
            if jrec[nact]:
                pending += 1
            if timeouts:
                jdead[nact] = t + sample_law(tcode, tparams, rng)
            nact += 1
            if nact > max_jobs:
                acc[A_UNSTABLE] = 1.0
                break
            cnt[j] += 1
            nq[type_queue[j]] += 1
            next_arr = t + rng.exponential(1.0 / lam)
        elif kind == 1:
            u = rng.random() * total
            n = 0
            while n < N - 1 and u >= qrate[n]:
                u -= qrate[n]
                n += 1
            svc = qrate[n] - (signal_ext[n] if not timeouts else 0.0)
            if u < svc:
                # service event: type in proportion to x_j μ_j, then a uniform job of that type
                u = u * nq[n]
                j = queue_last[n] - 1
                for k in range(queue_first[n], queue_last[n]):
                    w = cnt[k] * mu[k]
                    if u < w:
                        j = k
                        break
                    u -= w
                if cnt[j] == 0:  # rounding at the end of the scan
                    for k in range(queue_last[n] - 1, queue_first[n] - 1, -1):
                        if cnt[k] > 0:
                            j = k
                            break
                r = int(rng.random() * cnt[j])
                slot = -1
                for a in range(nact):
                    if jtype[a] == j:
                        if r == 0:
                            slot = a
                            break
                        r -= 1
                nxt = _pick(phase_cum, j, rng.random())
                if nxt < J:  # next phase of the same class
                    cnt[j] -= 1
                    cnt[nxt] += 1
                    jtype[slot] = nxt
                else:  # service ends: route, become a signal, or leave
                    st = type_station[j]
                    o = _pick(route_cum, st, rng.random())
                    cnt[j] -= 1
                    nq[n] -= 1
                    if o < C:
                        k = _pick(entry_cum, o, rng.random())
                        if k >= J:
                            k = J - 1
                        jtype[slot] = k
                        cnt[k] += 1
                        nq[type_queue[k]] += 1
                        if timeouts:
                            jdead[slot] = t + sample_law(tcode, tparams, rng)
                    else:
                        leaving = slot
                        if o < C + N:
                            signal_to = o - C
            else:
                signal_to = n
        else:  # a timeout fires
            j = jtype[who]
            if inwin:
                acc[A_TIMEOUTS] += 1.0
            if rng.random() < alpha[j]:
                _restart(who, j, J, restart_cum, cnt, jtype, jrest, acc, inwin, rng)
            jdead[who] = t + sample_law(tcode, tparams, rng)
        if leaving >= 0:
            if inwin:
                acc[A_DEPARTURES] += 1.0
            if jrec[leaving]:
                s = t - jarr[leaving]
                acc[A_COUNT], acc[A_OVERFLOW], acc[A_SUM], acc[A_SUMSQ], acc[A_MAX] = record(
                    s, inv_dt, hist, acc[A_COUNT], acc[A_OVERFLOW], acc[A_SUM], acc[A_SUMSQ], acc[A_MAX])
                acc[A_RESTARTS_RECORDED] += jrest[leaving]
                rb = jrest[leaving] if jrest[leaving] < rmax else rmax
                rhist[rb] += 1
                pending -= 1
            last = nact - 1
            jtype[leaving] = jtype[last]
            jarr[leaving] = jarr[last]
            jdead[leaving] = jdead[last]
            jrest[leaving] = jrest[last]
            jrec[leaving] = jrec[last]
            nact -= 1
        if signal_to >= 0 and nq[signal_to] > 0:
            n = signal_to
            if inwin:
                acc[A_SIGNALS] += 1.0
            r = int(rng.random() * nq[n])
            slot = -1
            for a in range(nact):
                if type_queue[jtype[a]] == n:
                    if r == 0:
                        slot = a
                        break
                    r -= 1
            j = jtype[slot]
            if rng.random() < alpha[j]:
                _restart(slot, j, J, restart_cum, cnt, jtype, jrest, acc, inwin, rng)
                if timeouts:
                    jdead[slot] = t + sample_law(tcode, tparams, rng)
        if t >= rec_end and pending == 0:
            break
    return acc
