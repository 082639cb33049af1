"""Numba event kernels for R processor-sharing servers behind a dispatcher.

Two kernels, both streaming their output (no per-customer arrays):

``run_general``
    Any renewal arrival law, any service law, plain / limited / capacitated PS, any dispatch.
    Each server keeps a *virtual clock* V that advances at the per-customer service rate
    r(m) = θ/max(m, θ) with m the number in service (plain and limited PS use θ = 1, so r = 1/m),
    and a binary min-heap of the virtual finish times V_arrival + x of the customers in service.
    The next departure of server s is at t + (min heap key − V)/r(m): O(log m) per event.
    Limited PS (at most c in service) keeps the overflow in a FIFO ring buffer; a customer admitted
    at virtual time V gets the finish key V + x.

``run_exponential``
    Poisson arrivals, exponential service, plain PS. By memorylessness a busy server completes a
    customer at total rate μ whatever its occupancy, and the leaver is uniform among those present,
    so the state is the per-server arrays of arrival dates (swap-remove): total event rate Λ + μ·busy.

Windows (paper §1 of jsq_ps_methods.md): customers arriving in (warmup, rec_end) are recorded, with
rec_end = horizon − cooldown; the run goes on past rec_end until the last recorded customer leaves.
Sojourn s goes to histogram bin floor(s/dt) (bin i covers [i·dt, (i+1)·dt)), else to ``overflow``.

Both entry points release the GIL (``nogil``): replications run in threads side by side, each on its own generator
(:mod:`sojourn.core.runs.threads`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..core.estimates.recording import record
from ..core.laws.sampling import EXPONENTIAL, LOGNORMAL, sample_law

# Dispatch codes (sojourn.jsq_ps.model.DISPATCH_CODE)
JSQ = 0
RANDOM = 1
ROUND_ROBIN = 2
JSQ_D = 3

BIG = np.int64(1) << np.int64(62)  # "no limit" on the number in service


@njit(cache=True)
def _grow2d(arr, new_cap):
    out = np.empty((arr.shape[0], new_cap), dtype=arr.dtype)
    out[:, : arr.shape[1]] = arr
    return out


# Status codes returned by _gen_events
_DONE = 0
_HEAP_FULL = 1  # a heap row reached the capacity of hk/ha/hx
_FIFO_FULL = 2  # a FIFO ring reached the capacity of qa/qx (limited PS)


@njit(cache=True)
def _rate_table(theta, cap):
    """rt[m] = θ/max(m, θ), the per-customer service rate with m in service, for m = 0 … cap."""
    rt = np.empty(cap + 1)
    for m in range(cap + 1):
        rt[m] = theta / (m if m > theta else theta)
    return rt


@njit(inline="always")
def _heap_push(hk, ha, hx, s, i, key, arr, req):
    """Sift-up insertion of (virtual finish key, arrival date, requirement) into heap row s holding i entries."""
    while i > 0:
        par = (i - 1) >> 1
        pk = hk[s, par]
        if pk <= key:
            break
        hk[s, i] = pk
        ha[s, i] = ha[s, par]
        hx[s, i] = hx[s, par]
        i = par
    hk[s, i] = key
    ha[s, i] = arr
    hx[s, i] = req


@njit(inline="always")
def _window_area(area, total, t0, t1, warmup, rec_end):
    """area + total · |(t0, t1) ∩ (warmup, rec_end)|: the time integral of the number in system over the
    recording window, extended across one inter-event interval (both kernels)."""
    lo = t0 if t0 > warmup else warmup
    hi = t1 if t1 < rec_end else rec_end
    if hi > lo:
        area += total * (hi - lo)
    return area


@njit(inline="always")
def _jsq_ties(n, R, tb):
    """Servers with the fewest customers (a min reduction, then a branch-free scan) into ``tb`` in
    scan order; returns how many. Inlined into both kernels (a real call costs ~30 ns per arrival)."""
    mn = n[0]
    for i in range(1, R):
        v = n[i]
        mn = v if v < mn else mn
    ties = 0
    for i in range(R):
        tb[ties] = i
        ties += n[i] == mn
    return ties


@njit(inline="always")
def _jsqd_ties(n, R, d, perm, tb, rng):
    """JSQ(d): d distinct servers by a partial Fisher–Yates shuffle of ``perm`` (d uniforms), then those
    of them with the fewest customers into ``tb`` in ``perm`` order; returns how many."""
    for i in range(d):
        j = i + int(rng.random() * (R - i))
        if j >= R:
            j = R - 1
        tmp = perm[i]
        perm[i] = perm[j]
        perm[j] = tmp
    mn = n[perm[0]]
    for i in range(1, d):
        v = n[perm[i]]
        mn = v if v < mn else mn
    ties = 0
    for i in range(d):
        q = perm[i]
        tb[ties] = q
        ties += n[q] == mn
    return ties


@njit(inline="always")
def _first_min(nd, R):
    """(first server with the smallest next-departure date, that date); (−1, inf) if all are empty. A branch-free
    min reduction."""
    sm = -1
    tm = np.inf
    for s in range(R):
        v = nd[s]
        lt = v < tm
        tm = v if lt else tm
        sm = s if lt else sm
    return sm, tm


@njit(inline="always")
def _draw_service(scode, sp, s_exp, s_logn, s_mean, rng):
    """A service requirement: the exponential and lognormal draws inline, the other laws through sample_law."""
    if s_exp:
        return rng.exponential(s_mean)
    if s_logn:
        return np.exp(sp[0] + sp[1] * rng.standard_normal())  # same draw as sample_law
    return sample_law(scode, sp, rng)


@njit(inline="always")
def _heap_pop(hk, ha, hx, s, last):
    """Remove the root of heap row s holding last + 1 entries: the last entry moves to the root and sifts down.
    Its moves mirror :func:`_heap_push`'s; one inlined helper for both measured 1-2 % slower (issue 36), so not."""
    if last <= 0:
        return
    hkey = hk[s, last]
    harr = ha[s, last]
    hreq = hx[s, last]
    i = 0
    while True:
        ch = 2 * i + 1
        if ch >= last:
            break
        ck = hk[s, ch]
        if ch + 1 < last and hk[s, ch + 1] < ck:
            ch += 1
            ck = hk[s, ch]
        if hkey <= ck:
            break
        hk[s, i] = ck
        ha[s, i] = ha[s, ch]
        hx[s, i] = hx[s, ch]
        i = ch
    hk[s, i] = hkey
    ha[s, i] = harr
    hx[s, i] = hreq


@njit(inline="always")
def _fifo_push(qa, qx, qh, s, q, t, x):
    """Customer (arrival date t, requirement x) joins the FIFO ring of server s behind q others; returns True if
    the ring is then full."""
    qcap = qa.shape[1]
    jj = qh[s] + q
    jj = jj if jj < qcap else jj - qcap  # (qh + q) mod qcap, as q < qcap
    qa[s, jj] = t
    qx[s, jj] = x
    return q + 1 == qcap


@njit(inline="always")
def _bin_by_requirement(x, soj, xdx, cx_n, cx_s, cx_ss):
    """Count, sum and sum of squares of the sojourn in the bin of its service requirement x (if xdx > 0)."""
    if xdx > 0.0:
        k = int(x / xdx)
        if k < cx_n.shape[0]:
            cx_n[k] += 1
            cx_s[k] += soj
            cx_ss[k] += soj * soj


@njit(inline="always")
def _dispatch_general(dispatch, n, R, d, perm, tb, rr, rng):
    """(server of an arrival, next round-robin position) for the general kernel: a tie among the shortest queues
    (JSQ, JSQ(d)) is broken by a uniform drawn only when there is one."""
    if dispatch == JSQ:
        ties = _jsq_ties(n, R, tb)
    elif dispatch == RANDOM:
        s = int(rng.random() * R)
        return (s if s < R else R - 1), rr
    elif dispatch == ROUND_ROBIN:
        return rr, (rr + 1 if rr + 1 < R else 0)
    else:  # JSQ_D: d distinct servers by a partial Fisher–Yates shuffle of perm
        ties = _jsqd_ties(n, R, d, perm, tb, rng)
    s = tb[0]
    if ties > 1:
        j = int(rng.random() * ties)
        s = tb[j if j < ties else ties - 1]
    return s, rr


@njit(inline="always")
def _dispatch_uniform(dispatch, f, n, R, d, perm, tb, rr, rng):
    """(server of an arrival, next round-robin position) for the exponential kernel, from f uniform on [0, 1)."""
    if dispatch == RANDOM:
        s = int(f * R)
        return (s if s < R else R - 1), rr
    if dispatch == ROUND_ROBIN:
        return rr, (rr + 1 if rr + 1 < R else 0)
    ties = _jsq_ties(n, R, tb) if dispatch == JSQ else _jsqd_ties(n, R, d, perm, tb, rng)
    j = int(f * ties)
    return tb[j if j < ties else ties - 1], rr


@njit(inline="always")
def _admit(s, ns, t, x, c, n, V, tl, hk, ha, hx, rt, qa, qx, qh):
    """A customer (arrival date t, requirement x) joins server s holding ns: into service (heap row s, finish key
    V + x) or, limited PS, the FIFO. Returns (the server's next departure date, _DONE or the array that filled)."""
    m = ns if ns < c else c  # number in service before the arrival
    if m > 0:
        V[s] += (t - tl[s]) * rt[m]  # per-customer rate rt[m] = θ/max(m, θ)
    tl[s] = t
    n[s] = ns + 1
    status = _DONE
    if ns < c:  # admitted at once: (V[s] + x, t, x) into heap row s
        _heap_push(hk, ha, hx, s, m, V[s] + x, t, x)
        m += 1
        if m == hk.shape[1]:
            status = _HEAP_FULL
    elif _fifo_push(qa, qx, qh, s, ns - c, t, x):  # limited PS: wait FIFO
        status = _FIFO_FULL
    rem = hk[s, 0] - V[s]
    return t + (rem if rem > 0.0 else 0.0) / rt[m], status  # t + (Vfinish_min − V)/rate


@njit(inline="always")
def _depart(s, t, c, n, V, tl, nd, hk, ha, hx, rt, qa, qx, qh):
    """The customer at the root of heap row s leaves at t: the heap, the clock, the FIFO's head admitted (limited
    PS) and the server's next departure date. Returns its (arrival date, requirement)."""
    ns = n[s]
    m = ns if ns < c else c
    key = hk[s, 0]
    a = ha[s, 0]
    x = hx[s, 0]
    _heap_pop(hk, ha, hx, s, m - 1)
    V[s] = key  # the leaver's virtual finish time is the clock now (exactly)
    tl[s] = t
    m -= 1
    n[s] = ns - 1
    if ns > c:  # limited PS: admit the head of the FIFO with finish key V + x
        h = qh[s]
        _heap_push(hk, ha, hx, s, m, V[s] + qx[s, h], qa[s, h], qx[s, h])
        qh[s] = h + 1 if h + 1 < qa.shape[1] else 0
        m += 1
    if m > 0:
        rem = hk[s, 0] - V[s]
        nd[s] = t + (rem if rem > 0.0 else 0.0) / rt[m]
    else:
        V[s] = 0.0  # empty server: restart the virtual clock (keeps it small)
        nd[s] = np.inf
    return a, x


@njit(inline="always")
def _leave_uniform(y, nb, busy, n, A):
    """Exponential kernel, a departure: y uniform on [0, nb) picks the busy server by its integer part and the
    leaver by its fractional part (PS + memorylessness: uniform among those present). Returns (the leaver's
    arrival date, the number of busy servers after)."""
    b = int(y)
    if b >= nb:
        b = nb - 1
    s = busy[b]
    ns = n[s]
    k = int((y - b) * ns)
    if k >= ns:
        k = ns - 1
    a = A[s, k]
    A[s, k] = A[s, ns - 1]
    n[s] = ns - 1
    if ns == 1:
        busy[b] = busy[nb - 1]  # swap-remove server s from the busy list
        nb -= 1
    return a, nb


@njit(cache=True, nogil=True)
def run_general(
    R, acode, ap, scode, sp, theta, limit, dispatch, d,
    warmup, rec_end, dt, hist, occ, xdx, cx_n, cx_s, cx_ss, rng,
):
    """General-law event kernel (see module docstring).

    theta: capacitated-PS threshold (1.0 for plain/limited PS); limit: max number in service
    (≤ 0 means unlimited). hist (int64, nbins) and occ (int64, n_max+1) are filled in place.
    xdx > 0 with cx_* arrays of length K: per service-requirement bin [k·xdx, (k+1)·xdx) of
    recorded customers, the count, sum and sum of squares of sojourns (else pass xdx = 0).
    Returns (acc, area, events): acc = [count, overflow, sum, sumsq, max]; area = ∫ N(u) du over
    the window (N = customers in the system); events = number of arrivals + departures simulated.

    The event loop is :func:`_gen_events`, which returns whenever a heap row or a FIFO ring reaches
    the capacity of its arrays; this function then doubles those arrays and calls it again, all the
    state travelling in arrays.  (Reassigning arrays inside the event loop made numba emit atomic
    NRT incref/decref pairs on every event.)  Where the loop returns changes nothing: the random
    numbers drawn, their order and every floating-point operation on the results are those of the
    earlier single-loop kernel, so a given seed gives bit-identical outputs.
    """
    c = BIG if limit <= 0 else np.int64(limit)
    a_exp = acode == EXPONENTIAL
    a_mean = 1.0 / ap[0] if a_exp else 0.0

    n = np.zeros(R, np.int64)  # customers present at each server
    V = np.zeros(R)  # virtual clocks: attained service of each customer in service
    tl = np.zeros(R)  # real time of the last V update
    nd = np.full(R, np.inf)  # next departure date
    cap = 16
    hk = np.empty((R, cap))  # heap keys: virtual finish times V_admission + x
    ha = np.empty((R, cap))  # arrival dates
    hx = np.empty((R, cap))  # service requirements
    rt = _rate_table(theta, cap)
    qcap = 16 if c < BIG else 1
    qa = np.empty((R, qcap))  # FIFO of waiting customers (limited PS): arrival dates
    qx = np.empty((R, qcap))  # and service requirements
    qh = np.zeros(R, np.int64)  # ring-buffer heads
    perm = np.arange(R)
    tb = np.empty(R, np.int64)  # scratch: servers tied at the shortest queue
    ist = np.zeros(6, np.int64)  # rr, cnt, over, total, pending, events
    fst = np.zeros(6)  # ssum, ssq, smax, area, tprev, t_arr
    fst[5] = rng.exponential(a_mean) if a_exp else sample_law(acode, ap, rng)  # first arrival
    while True:
        status = _gen_events(R, acode, ap, scode, sp, c, dispatch, d, warmup, rec_end, dt, hist, occ,
                             xdx, cx_n, cx_s, cx_ss, rng, n, V, tl, nd, hk, ha, hx, rt, qa, qx, qh,
                             perm, tb, ist, fst)
        if status == _DONE:
            break
        if status == _HEAP_FULL:
            cap *= 2
            hk, ha, hx, rt = _grow2d(hk, cap), _grow2d(ha, cap), _grow2d(hx, cap), _rate_table(theta, cap)
        else:  # _FIFO_FULL: double the rings, unrolled so that each starts at 0
            nq = 2 * qcap
            na = np.empty((R, nq))
            nx = np.empty((R, nq))
            for r in range(R):
                qr = n[r] - c
                for jj in range(qr if qr > 0 else 0):
                    na[r, jj] = qa[r, (qh[r] + jj) % qcap]
                    nx[r, jj] = qx[r, (qh[r] + jj) % qcap]
                qh[r] = 0
            qa = na
            qx = nx
            qcap = nq
    acc = np.array([float(ist[1]), float(ist[2]), fst[0], fst[1], fst[2]])
    return acc, fst[3], ist[5]


# _nrt=False (both event loops): they allocate nothing, and without numba's reference counting the array arguments
# of the inlined helpers cost nothing (with it, a dispatch helper made this loop 35 % slower; benchmarks/kernels.py)
@njit(cache=True, _nrt=False)
def _gen_events(R, acode, ap, scode, sp, c, dispatch, d, warmup, rec_end, dt, hist, occ,
                xdx, cx_n, cx_s, cx_ss, rng, n, V, tl, nd, hk, ha, hx, rt, qa, qx, qh,
                perm, tb, ist, fst):
    """Event loop of :func:`run_general`, scalar state in/out through ``ist`` and ``fst``.

    Returns _DONE at the end of the run; _HEAP_FULL (after completing the event) when an admission
    filled a heap row (m == hk.shape[1]), _FIFO_FULL when an arrival filled a FIFO ring
    (n[s] − c == qa.shape[1]): the caller grows those arrays and calls again.
    The per-customer service rate θ/max(m, θ) is read from the table rt (rt[m], m ≤ capacity).
    """
    inv_dt = 1.0 / dt
    nmax = occ.shape[0] - 1
    a_exp = acode == EXPONENTIAL  # inline the common exponential draws (no call into sample_law)
    s_exp = scode == EXPONENTIAL
    s_logn = scode == LOGNORMAL
    a_mean = 1.0 / ap[0] if a_exp else 0.0
    s_mean = 1.0 / sp[0] if s_exp else 0.0
    rr, cnt, over, total, pending, events = ist[0], ist[1], ist[2], ist[3], ist[4], ist[5]
    ssum, ssq, smax, area, tprev, t_arr = fst[0], fst[1], fst[2], fst[3], fst[4], fst[5]
    status = _DONE
    # next departure: sm = first server with the smallest date tm = nd[sm] (sm = −1 if all empty).
    # Recomputed by a scan of nd only when needed (after a departure, or an arrival that delayed
    # server sm); otherwise updated from the one date an arrival changed.
    sm = -1
    tm = np.inf
    rescan = True
    while True:
        if rescan:
            sm, tm = _first_min(nd, R)
            rescan = False
        t = t_arr if t_arr <= tm else tm
        if pending == 0 and t >= rec_end:
            area = _window_area(area, total, tprev, rec_end, warmup, rec_end)
            break
        area = _window_area(area, total, tprev, t, warmup, rec_end)
        tprev = t
        events += 1
        if t_arr <= tm:
            # ---- arrival -------------------------------------------------------------
            s, rr = _dispatch_general(dispatch, n, R, d, perm, tb, rr, rng)
            ns = n[s]
            if warmup < t and t < rec_end:
                occ[ns if ns < nmax else nmax] += 1
                pending += 1
            x = _draw_service(scode, sp, s_exp, s_logn, s_mean, rng)
            total += 1
            v, status = _admit(s, ns, t, x, c, n, V, tl, hk, ha, hx, rt, qa, qx, qh)
            nd[s] = v
            if s == sm:  # still the first smallest unless it moved later
                rescan = v > tm
                tm = v
            elif v < tm or (v == tm and s < sm):
                sm = s
                tm = v
            t_arr = t + (rng.exponential(a_mean) if a_exp else sample_law(acode, ap, rng))
            if status != _DONE:
                break
        else:
            # ---- departure from server sm ----------------------------------------------
            rescan = True
            a, x = _depart(sm, t, c, n, V, tl, nd, hk, ha, hx, rt, qa, qx, qh)
            total -= 1
            if warmup < a and a < rec_end:
                soj = t - a
                cnt, over, ssum, ssq, smax = record(soj, inv_dt, hist, cnt, over, ssum, ssq, smax)
                pending -= 1
                _bin_by_requirement(x, soj, xdx, cx_n, cx_s, cx_ss)
    ist[0], ist[1], ist[2], ist[3], ist[4], ist[5] = rr, cnt, over, total, pending, events
    fst[0], fst[1], fst[2], fst[3], fst[4], fst[5] = ssum, ssq, smax, area, tprev, t_arr
    return status


@njit(cache=True, nogil=True)
def run_exponential(R, lam, mu, dispatch, d, warmup, rec_end, dt, hist, occ, rng):
    """Exact kernel for Poisson(Λ) arrivals, Exp(μ) service and plain PS (see module docstring).

    Same outputs as :func:`run_general` (without the service-requirement bins).

    Random numbers per event: one ``rng.exponential`` (time to the next event, total rate Λ + μ·busy)
    and one ``rng.random()`` u.  Scaled to w = u·(Λ/μ + busy), w < Λ/μ means an arrival, and then
    w·μ/Λ is again uniform on [0, 1) and picks the server (uniform tie-break among the shortest
    queues for JSQ / JSQ(d), uniform server for RANDOM); otherwise w − Λ/μ is uniform on [0, busy):
    its integer part picks the busy server, its fractional part (uniform on [0, 1), independent of the
    integer part) picks the leaver uniformly among the customers of that server.  Rescaling a 53-bit
    uniform keeps 53 − log2(Λ/μ + R) bits of resolution (≈ 48 for R = 10), a discretisation far below
    anything measurable; the law is that of the model.  JSQ(d) also draws d uniforms for its sample.

    The event loop is :func:`_exp_events`, which returns whenever a server reaches the capacity of
    the arrival-date array; this function then doubles the array and calls it again.  (Reassigning
    the array inside the event loop makes numba emit an atomic incref/decref pair per event, which
    cost ~15 ns/event.)
    """
    inv_dt = 1.0 / dt
    lm = lam / mu  # arrival share of the event rate, in units of μ
    tot = np.empty(R + 1)  # (Λ + μ·nb)/μ for nb busy servers
    scale = np.empty(R + 1)  # mean time to the next event, 1/(Λ + μ·nb)
    for k in range(R + 1):
        tot[k] = lm + k
        scale[k] = 1.0 / (lam + mu * k)
    n = np.zeros(R, np.int64)
    cap = 16
    A = np.empty((R, cap))  # arrival dates of the customers present, unordered
    busy = np.empty(R, np.int64)  # list of busy servers (order irrelevant)
    perm = np.arange(R)
    tb = np.empty(R, np.int64)  # scratch: servers tied at the shortest queue
    ist = np.zeros(7, np.int64)  # nb, rr, cnt, over, total, pending, events
    fst = np.zeros(5)  # ssum, ssq, smax, area, t
    while not _exp_events(R, lam, mu, dispatch, d, warmup, rec_end, inv_dt, hist, occ, rng,
                          tot, scale, n, A, busy, perm, tb, ist, fst):
        cap *= 2
        A = _grow2d(A, cap)
    acc = np.array([float(ist[2]), float(ist[3]), fst[0], fst[1], fst[2]])
    return acc, fst[3], ist[6]


@njit(cache=True, _nrt=False)
def _exp_events(R, lam, mu, dispatch, d, warmup, rec_end, inv_dt, hist, occ, rng,
                tot, scale, n, A, busy, perm, tb, ist, fst):
    """Event loop of :func:`run_exponential`, state in/out through ``ist`` and ``fst``.

    Returns True at the end of the run, False (after completing the event) when an arrival filled
    a row of A (n[s] == A.shape[1]): the caller grows A and calls again.
    """
    nmax = occ.shape[0] - 1
    cap = A.shape[1]
    lm = lam / mu
    inv_lm = mu / lam
    nb, rr, cnt, over, total, pending, events = ist[0], ist[1], ist[2], ist[3], ist[4], ist[5], ist[6]
    ssum, ssq, smax, area, t = fst[0], fst[1], fst[2], fst[3], fst[4]
    done = True
    while True:
        tn = t + rng.exponential(scale[nb])
        if pending == 0 and tn >= rec_end:
            area = _window_area(area, total, t, rec_end, warmup, rec_end)
            break
        area = _window_area(area, total, t, tn, warmup, rec_end)
        t = tn
        events += 1
        w = rng.random() * tot[nb]
        if w < lm:
            s, rr = _dispatch_uniform(dispatch, w * inv_lm, n, R, d, perm, tb, rr, rng)  # w·μ/Λ: uniform on [0, 1)
            ns = n[s]
            if warmup < t and t < rec_end:
                occ[ns if ns < nmax else nmax] += 1
                pending += 1
            A[s, ns] = t
            n[s] = ns + 1
            total += 1
            if ns == 0:
                busy[nb] = s
                nb += 1
            if ns + 1 == cap:  # row s is full: let the caller grow A
                done = False
                break
        else:
            a, nb = _leave_uniform(w - lm, nb, busy, n, A)
            total -= 1
            if warmup < a and a < rec_end:
                soj = t - a
                cnt, over, ssum, ssq, smax = record(soj, inv_dt, hist, cnt, over, ssum, ssq, smax)
                pending -= 1
    ist[0], ist[1], ist[2], ist[3], ist[4], ist[5], ist[6] = nb, rr, cnt, over, total, pending, events
    fst[0], fst[1], fst[2], fst[3], fst[4] = ssum, ssq, smax, area, t
    return done
