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

from ..core.estimates.recording import record
from ..core.laws.sampling import sample_law

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


@njit(inline="always")
def _queue_rates(queue_first, queue_last, cnt, mu, nq, signal_ext, timeouts, qrate):
    """The Markov part's event rate at each queue into ``qrate`` (service at a busy queue, plus its external
    signals under signal semantics); returns their total."""
    total = 0.0
    for n in range(queue_first.shape[0]):
        qrate[n] = 0.0
        if nq[n] > 0:
            s = 0.0
            for j in range(queue_first[n], queue_last[n]):
                s += cnt[j] * mu[j]
            qrate[n] = s / nq[n]
            if not timeouts:
                qrate[n] += signal_ext[n]
        total += qrate[n]
    return total


@njit(inline="always")
def _first_deadline(jdead, nact):
    """(the earliest timeout deadline of the jobs present, its slot); (inf, -1) if none."""
    t_dead = np.inf
    who = -1
    for a in range(nact):
        if jdead[a] < t_dead:
            t_dead = jdead[a]
            who = a
    return t_dead, who


@njit(inline="always")
def _add_area(area, cnt, t, t_next, warmup, rec_end):
    """Time-integral of the number of jobs of each type over the part of (t, t_next) inside the window."""
    lo = t if t > warmup else warmup
    hi = t_next if t_next < rec_end else rec_end
    if hi > lo:
        for j in range(cnt.shape[0]):
            if cnt[j] > 0:
                area[j] += cnt[j] * (hi - lo)


@njit(inline="always")
def _nth_of_type(jtype, nact, j, r):
    """Slot of the r-th (from 0) job present of type j."""
    for a in range(nact):
        if jtype[a] == j:
            if r == 0:
                return a
            r -= 1
    return -1


@njit(inline="always")
def _nth_at_queue(jtype, type_queue, nact, n, r):
    """Slot of the r-th (from 0) job present at queue n."""
    for a in range(nact):
        if type_queue[jtype[a]] == n:
            if r == 0:
                return a
            r -= 1
    return -1


@njit(inline="always")
def _service_type(n, u, nq, cnt, mu, queue_first, queue_last):
    """Type of the job of queue n whose phase ends, drawn in proportion to x_j μ_j (u uniform on its service
    rate)."""
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
    return j


@njit(inline="always")
def _remove(slot, nact, jtype, jarr, jdead, jrest, jrec):
    """Swap-remove the job in ``slot`` from the active list; returns the new count."""
    last = nact - 1
    jtype[slot] = jtype[last]
    jarr[slot] = jarr[last]
    jdead[slot] = jdead[last]
    jrest[slot] = jrest[last]
    jrec[slot] = jrec[last]
    return last


@njit(inline="always")
def _record_departure(s, restarts, inv_dt, hist, rhist, acc):
    """A recorded job leaves after sojourn s with ``restarts`` restarts: the histograms and running sums."""
    acc[A_COUNT], acc[A_OVERFLOW], acc[A_SUM], acc[A_SUMSQ], acc[A_MAX] = record(
        s, inv_dt, hist, acc[A_COUNT], acc[A_OVERFLOW], acc[A_SUM], acc[A_SUMSQ], acc[A_MAX]
    )
    acc[A_RESTARTS_RECORDED] += restarts
    rmax = rhist.shape[0] - 1
    rhist[restarts if restarts < rmax else rmax] += 1


@njit(inline="always")
def _admit(slot, t, lam, arr_cum, entry_cum, type_queue, timeouts, tcode, tparams, warmup, rec_end, cnt, nq,
           jtype, jarr, jdead, jrest, jrec, rng):
    """An external arrival enters the network in ``slot``: its station, then its type by the entry law; returns 1
    if it is recorded (it arrives inside the window), else 0."""
    J = cnt.shape[0]
    c = _pick1(arr_cum, rng.random() * lam)
    j = min(_pick(entry_cum, c, rng.random()), J - 1)
    jtype[slot] = j
    jarr[slot] = t
    jrest[slot] = 0
    jrec[slot] = warmup < t < rec_end
    if timeouts:
        jdead[slot] = t + sample_law(tcode, tparams, rng)
    cnt[j] += 1
    nq[type_queue[j]] += 1
    return 1 if jrec[slot] else 0


@njit(inline="always")
def _markov_event(u, t, qrate, signal_ext, timeouts, nq, cnt, mu, queue_first, queue_last, type_queue,
                  type_station, phase_cum, route_cum, entry_cum, tcode, tparams, jtype, jdead, nact, rng):
    """An event of the Markov part (u uniform on the total rate): a phase completion at a queue in proportion to
    its rate, or an external signal there. Returns (slot of a job that leaves the network or -1, queue that
    receives a signal or -1)."""
    J = cnt.shape[0]
    N = qrate.shape[0]
    C = entry_cum.shape[0]
    n = 0
    while n < N - 1 and u >= qrate[n]:
        u -= qrate[n]
        n += 1
    if u >= qrate[n] - (signal_ext[n] if not timeouts else 0.0):
        return -1, n  # an external signal
    # service event: type in proportion to x_j μ_j, then a uniform job of that type
    j = _service_type(n, u, nq, cnt, mu, queue_first, queue_last)
    slot = _nth_of_type(jtype, nact, j, int(rng.random() * cnt[j]))
    nxt = _pick(phase_cum, j, rng.random())
    cnt[j] -= 1
    if nxt < J:  # next phase of the same class
        cnt[nxt] += 1
        jtype[slot] = nxt
        return -1, -1
    # service ends: route, become a signal, or leave
    o = _pick(route_cum, type_station[j], rng.random())
    nq[n] -= 1
    if o < C:
        k = min(_pick(entry_cum, o, rng.random()), J - 1)
        jtype[slot] = k
        cnt[k] += 1
        nq[type_queue[k]] += 1
        if timeouts:
            jdead[slot] = t + sample_law(tcode, tparams, rng)
        return -1, -1
    return slot, (o - C if o < C + N else -1)


@njit(inline="always")
def _signal(n, t, inwin, alpha, restart_cum, type_queue, timeouts, tcode, tparams, nq, cnt, jtype, jdead, jrest,
            nact, acc, rng):
    """A restart signal reaches the busy queue n: it picks one of its jobs uniformly, which restarts with its α."""
    if inwin:
        acc[A_SIGNALS] += 1.0
    slot = _nth_at_queue(jtype, type_queue, nact, n, int(rng.random() * nq[n]))
    j = jtype[slot]
    if rng.random() < alpha[j]:
        _restart(slot, j, cnt.shape[0], restart_cum, cnt, jtype, jrest, acc, inwin, rng)
        if timeouts:
            jdead[slot] = t + sample_law(tcode, tparams, rng)


@njit(inline="always")
def _timeout(slot, t, inwin, alpha, restart_cum, tcode, tparams, cnt, jtype, jdead, jrest, acc, rng):
    """The timeout of the job in ``slot`` fires: it restarts with its α; either way its timer is re-armed."""
    j = jtype[slot]
    if inwin:
        acc[A_TIMEOUTS] += 1.0
    if rng.random() < alpha[j]:
        _restart(slot, j, cnt.shape[0], restart_cum, cnt, jtype, jrest, acc, inwin, rng)
    jdead[slot] = t + sample_law(tcode, tparams, rng)


# Status codes returned by _events
_DONE = 0
_FULL = 1  # the job arrays are full: the caller grows them and calls again


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

    The event loop is :func:`_events`, which returns when the job arrays are full; this function then doubles
    them and calls it again, the scalar state travelling in ``ist`` and ``fst`` (as in the JSQ-PS kernel), so that
    the loop itself allocates nothing.
    """
    J = mu.shape[0]
    N = queue_first.shape[0]
    cnt = np.zeros(J, np.int64)
    nq = np.zeros(N, np.int64)
    qrate = np.zeros(N)
    cap = 64
    jtype, jarr, jdead = np.empty(cap, np.int64), np.empty(cap), np.empty(cap)
    jrest, jrec = np.empty(cap, np.int64), np.empty(cap, np.bool_)
    acc = np.zeros(N_ACC)
    ist = np.zeros(2, np.int64)  # nact, pending
    fst = np.zeros(2)  # t, next arrival date
    fst[1] = rng.exponential(1.0 / arr_cum[-1])
    while _events(type_queue, type_station, queue_first, queue_last, mu, phase_cum, route_cum, entry_cum, alpha,
                  restart_cum, arr_cum, signal_ext, mode == 1, tcode, tparams, warmup, rec_end, 1.0 / dt, hist,
                  rhist, area, max_jobs, max_events, rng, cnt, nq, qrate, jtype, jarr, jdead, jrest, jrec, acc, ist,
                  fst) == _FULL:
        cap *= 2
        jtype, jarr, jdead = _grow_f(jtype, cap), _grow_f(jarr, cap), _grow_f(jdead, cap)
        jrest, jrec = _grow_f(jrest, cap), _grow_f(jrec, cap)
    return acc


# _nrt=False: the loop allocates nothing, and without numba's reference counting the array arguments of the inlined
# helpers cost nothing (with it, this split loop ran 1.2x slower than the one-piece loop; benchmarks/kernels.py)
@njit(cache=True, _nrt=False)
def _events(type_queue, type_station, queue_first, queue_last, mu, phase_cum, route_cum, entry_cum, alpha,
            restart_cum, arr_cum, signal_ext, timeouts, tcode, tparams, warmup, rec_end, inv_dt, hist, rhist, area,
            max_jobs, max_events, rng, cnt, nq, qrate, jtype, jarr, jdead, jrest, jrec, acc, ist, fst):
    """Event loop of :func:`run`, scalar state in/out through ``ist`` and ``fst``. Returns _DONE at the end of the
    run, _FULL (after completing the event) when an arrival filled the job arrays."""
    lam = arr_cum[-1]
    nact, pending = ist[0], ist[1]
    t, next_arr = fst[0], fst[1]
    status = _DONE
    while True:
        total = _queue_rates(queue_first, queue_last, cnt, mu, nq, signal_ext, timeouts, qrate)
        t_mark = t + rng.exponential(1.0 / total) if total > 0.0 else np.inf
        t_dead, who = _first_deadline(jdead, nact) if timeouts else (np.inf, -1)
        t_next = min(next_arr, t_mark, t_dead)
        _add_area(area, cnt, t, t_next, warmup, rec_end)
        t = t_next
        inwin = warmup < t < rec_end
        acc[A_EVENTS] += 1.0
        if acc[A_EVENTS] > max_events:
            acc[A_UNSTABLE] = 2.0
            break
        leaving, signal_to = -1, -1  # a job that leaves the network, a queue that receives a signal
        if t_dead < t_mark and t_dead < next_arr:  # a timeout fires
            _timeout(who, t, inwin, alpha, restart_cum, tcode, tparams, cnt, jtype, jdead, jrest, acc, rng)
        elif t_mark < next_arr:
            leaving, signal_to = _markov_event(rng.random() * total, t, qrate, signal_ext, timeouts, nq, cnt, mu,
                                               queue_first, queue_last, type_queue, type_station, phase_cum,
                                               route_cum, entry_cum, tcode, tparams, jtype, jdead, nact, rng)
        else:  # an external arrival
            if t >= rec_end and pending == 0:
                break
            pending += _admit(nact, t, lam, arr_cum, entry_cum, type_queue, timeouts, tcode, tparams, warmup,
                              rec_end, cnt, nq, jtype, jarr, jdead, jrest, jrec, rng)
            nact += 1
            if nact > max_jobs:
                acc[A_UNSTABLE] = 1.0
                break
            next_arr = t + rng.exponential(1.0 / lam)
        if leaving >= 0:
            if inwin:
                acc[A_DEPARTURES] += 1.0
            if jrec[leaving]:
                _record_departure(t - jarr[leaving], jrest[leaving], inv_dt, hist, rhist, acc)
                pending -= 1
            nact = _remove(leaving, nact, jtype, jarr, jdead, jrest, jrec)
        if signal_to >= 0 and nq[signal_to] > 0:
            _signal(signal_to, t, inwin, alpha, restart_cum, type_queue, timeouts, tcode, tparams, nq, cnt, jtype,
                    jdead, jrest, nact, acc, rng)
        if t >= rec_end and pending == 0:
            break
        if nact == jtype.shape[0]:
            status = _FULL
            break
    ist[0], ist[1] = nact, pending
    fst[0], fst[1] = t, next_arr
    return status
