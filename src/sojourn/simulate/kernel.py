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
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .laws import sample_law

# Dispatch codes (sojourn.models.DISPATCH_CODE)
JSQ = 0
RANDOM = 1
ROUND_ROBIN = 2
JSQ_D = 3

BIG = np.int64(1) << np.int64(62)  # "no limit" on the number in service


@njit(cache=True)
def _jsq_among(n, idx, k, rng):
    """Index (into idx[:k]) of a server with the fewest customers, uniform random tie-break."""
    m = n[idx[0]]
    ties = 1
    for i in range(1, k):
        v = n[idx[i]]
        if v < m:
            m = v
            ties = 1
        elif v == m:
            ties += 1
    j = 0
    if ties > 1:
        j = int(rng.random() * ties)
        if j >= ties:
            j = ties - 1
    for i in range(k):
        if n[idx[i]] == m:
            if j == 0:
                return idx[i]
            j -= 1
    return idx[0]  # unreachable


@njit(cache=True)
def _dispatch(n, R, dispatch, d, perm, ident, rr, rng):
    """Chosen server and the new round-robin counter."""
    if dispatch == JSQ:
        return _jsq_among(n, ident, R, rng), rr
    elif dispatch == RANDOM:
        s = int(rng.random() * R)
        return (s if s < R else R - 1), rr
    elif dispatch == ROUND_ROBIN:
        return rr, (rr + 1) % R
    else:  # JSQ(d): d distinct servers by a partial Fisher–Yates shuffle, then JSQ among them
        for i in range(d):
            j = i + int(rng.random() * (R - i))
            if j >= R:
                j = R - 1
            tmp = perm[i]
            perm[i] = perm[j]
            perm[j] = tmp
        return _jsq_among(n, perm, d, rng), rr


@njit(cache=True)
def _record(soj, a, hist, nbins, inv_dt, acc):
    """Add one sojourn to the streamed statistics. acc = [count, overflow, sum, sumsq, max]."""
    b = int(soj * inv_dt)
    if b < nbins:
        hist[b] += 1
    else:
        acc[1] += 1.0
    acc[0] += 1.0
    acc[2] += soj
    acc[3] += soj * soj
    if soj > acc[4]:
        acc[4] = soj


@njit(cache=True)
def _heap_push(hk, ha, hx, s, size, key, a, x):
    """Insert (key, a, x) into the min-heap row s holding ``size`` entries (sift up)."""
    i = size
    while i > 0:
        p = (i - 1) >> 1
        pk = hk[s, p]
        if pk <= key:
            break
        hk[s, i] = pk
        ha[s, i] = ha[s, p]
        hx[s, i] = hx[s, p]
        i = p
    hk[s, i] = key
    ha[s, i] = a
    hx[s, i] = x


@njit(cache=True)
def _heap_pop(hk, ha, hx, s, size):
    """Remove the root of heap row s (``size`` entries before the pop); returns (key, a, x)."""
    rk = hk[s, 0]
    ra = ha[s, 0]
    rx = hx[s, 0]
    last = size - 1
    if last > 0:
        key = hk[s, last]
        a = ha[s, last]
        x = hx[s, last]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= last:
                break
            ck = hk[s, c]
            if c + 1 < last and hk[s, c + 1] < ck:
                c += 1
                ck = hk[s, c]
            if key <= ck:
                break
            hk[s, i] = ck
            ha[s, i] = ha[s, c]
            hx[s, i] = hx[s, c]
            i = c
        hk[s, i] = key
        ha[s, i] = a
        hx[s, i] = x
    return rk, ra, rx


@njit(cache=True)
def _grow2d(arr, new_cap):
    out = np.empty((arr.shape[0], new_cap), dtype=arr.dtype)
    out[:, : arr.shape[1]] = arr
    return out


@njit(cache=True)
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
    """
    c = BIG if limit <= 0 else np.int64(limit)
    nbins = hist.shape[0]
    inv_dt = 1.0 / dt
    nmax = occ.shape[0] - 1
    K = cx_n.shape[0]
    acc = np.zeros(5)

    n = np.zeros(R, np.int64)  # customers present at each server
    V = np.zeros(R)  # virtual clocks
    tl = np.zeros(R)  # real time of the last V update
    nd = np.full(R, np.inf)  # next departure date
    cap = 16
    hk = np.empty((R, cap))  # heap keys: virtual finish times
    ha = np.empty((R, cap))  # arrival dates
    hx = np.empty((R, cap))  # service requirements
    limited = c < BIG
    qcap = 16 if limited else 1
    qa = np.empty((R, qcap))  # FIFO of waiting customers (limited PS): arrival dates
    qx = np.empty((R, qcap))  # and service requirements
    qh = np.zeros(R, np.int64)  # ring-buffer heads
    perm = np.arange(R)
    ident = np.arange(R)
    rr = 0

    total = 0
    pending = 0
    area = 0.0
    events = 0
    tprev = 0.0
    t_arr = sample_law(acode, ap, rng)
    while True:
        sm = -1
        tm = np.inf
        for s in range(R):
            if nd[s] < tm:
                tm = nd[s]
                sm = s
        t = t_arr if t_arr <= tm else tm
        if pending == 0 and t >= rec_end:
            lo = tprev if tprev > warmup else warmup  # window (warmup, rec_end) ∩ (tprev, rec_end)
            hi = rec_end if rec_end < rec_end else rec_end
            if hi > lo:
                area += total * (hi - lo)
            break
        lo = tprev if tprev > warmup else warmup  # window (warmup, rec_end) ∩ (tprev, t)
        hi = t if t < rec_end else rec_end
        if hi > lo:
            area += total * (hi - lo)
        tprev = t
        events += 1
        if t_arr <= tm:
            # ---- arrival -------------------------------------------------------------
            s, rr = _dispatch(n, R, dispatch, d, perm, ident, rr, rng)
            ns = n[s]
            if warmup < t and t < rec_end:
                occ[ns if ns < nmax else nmax] += 1
                pending += 1
            x = sample_law(scode, sp, rng)
            m = ns if ns < c else c  # number in service before the arrival
            if m > 0:
                V[s] += (t - tl[s]) * (theta / (m if m > theta else theta))
            tl[s] = t
            n[s] = ns + 1
            total += 1
            if ns < c:  # admitted at once
                if m >= cap:
                    cap *= 2
                    hk = _grow2d(hk, cap)
                    ha = _grow2d(ha, cap)
                    hx = _grow2d(hx, cap)
                _heap_push(hk, ha, hx, s, m, V[s] + x, t, x)
                m += 1
            else:  # limited PS: wait FIFO
                q = ns - c
                if q >= qcap:
                    nq = 2 * qcap
                    na = np.empty((R, nq))
                    nx = np.empty((R, nq))
                    for r in range(R):
                        qr = n[r] - c if r != s else q
                        for j in range(qr if qr > 0 else 0):
                            na[r, j] = qa[r, (qh[r] + j) % qcap]
                            nx[r, j] = qx[r, (qh[r] + j) % qcap]
                        qh[r] = 0
                    qa = na
                    qx = nx
                    qcap = nq
                j = (qh[s] + q) % qcap
                qa[s, j] = t
                qx[s, j] = x
            rate = theta / (m if m > theta else theta)
            rem = hk[s, 0] - V[s]
            nd[s] = t + (rem if rem > 0.0 else 0.0) / rate
            t_arr = t + sample_law(acode, ap, rng)
        else:
            # ---- departure from server sm -----------------------------------------------
            s = sm
            ns = n[s]
            m = ns if ns < c else c
            key, a, x = _heap_pop(hk, ha, hx, s, m)
            V[s] = key  # the leaver's virtual finish time is the clock now (exactly)
            tl[s] = t
            m -= 1
            n[s] = ns - 1
            total -= 1
            if warmup < a and a < rec_end:
                soj = t - a
                _record(soj, a, hist, nbins, inv_dt, acc)
                pending -= 1
                if xdx > 0.0:
                    k = int(x / xdx)
                    if k < K:
                        cx_n[k] += 1
                        cx_s[k] += soj
                        cx_ss[k] += soj * soj
            if ns > c:  # limited PS: admit the head of the FIFO
                h = qh[s]
                _heap_push(hk, ha, hx, s, m, V[s] + qx[s, h], qa[s, h], qx[s, h])
                qh[s] = (h + 1) % qcap
                m += 1
            if m > 0:
                rate = theta / (m if m > theta else theta)
                rem = hk[s, 0] - V[s]
                nd[s] = t + (rem if rem > 0.0 else 0.0) / rate
            else:
                V[s] = 0.0  # empty server: restart the virtual clock (keeps it small)
                nd[s] = np.inf
    return acc, area, events


@njit(cache=True)
def run_exponential(R, lam, mu, dispatch, d, warmup, rec_end, dt, hist, occ, rng):
    """Exact kernel for Poisson(Λ) arrivals, Exp(μ) service and plain PS (see module docstring).

    Same outputs as :func:`run_general` (without the service-requirement bins).
    """
    nbins = hist.shape[0]
    inv_dt = 1.0 / dt
    nmax = occ.shape[0] - 1
    acc = np.zeros(5)

    n = np.zeros(R, np.int64)
    cap = 16
    A = np.empty((R, cap))  # arrival dates of the customers present, unordered
    busy = np.empty(R, np.int64)  # list of busy servers
    pos = np.full(R, -1, np.int64)  # position of each server in ``busy``
    nb = 0
    perm = np.arange(R)
    ident = np.arange(R)
    rr = 0

    total = 0
    pending = 0
    area = 0.0
    events = 0
    t = 0.0
    while True:
        rate = lam + mu * nb  # total event rate: arrivals + one departure stream per busy server
        tn = t + rng.exponential(1.0 / rate)
        if pending == 0 and tn >= rec_end:
            lo = t if t > warmup else warmup  # window (warmup, rec_end) ∩ (t, rec_end)
            hi = rec_end if rec_end < rec_end else rec_end
            if hi > lo:
                area += total * (hi - lo)
            break
        lo = t if t > warmup else warmup  # window (warmup, rec_end) ∩ (t, tn)
        hi = tn if tn < rec_end else rec_end
        if hi > lo:
            area += total * (hi - lo)
        t = tn
        events += 1
        u = rng.random() * rate
        if u < lam:
            s, rr = _dispatch(n, R, dispatch, d, perm, ident, rr, rng)
            ns = n[s]
            if warmup < t and t < rec_end:
                occ[ns if ns < nmax else nmax] += 1
                pending += 1
            if ns >= cap:
                cap *= 2
                A = _grow2d(A, cap)
            A[s, ns] = t
            n[s] = ns + 1
            total += 1
            if ns == 0:
                busy[nb] = s
                pos[s] = nb
                nb += 1
        else:
            # given a departure, (u − Λ)/μ is uniform on [0, busy): it picks the server
            b = int((u - lam) / mu)
            if b >= nb:
                b = nb - 1
            s = busy[b]
            ns = n[s]
            k = int(rng.random() * ns)  # PS + memorylessness: the leaver is uniform
            if k >= ns:
                k = ns - 1
            a = A[s, k]
            A[s, k] = A[s, ns - 1]
            n[s] = ns - 1
            total -= 1
            if ns == 1:
                last = busy[nb - 1]
                busy[b] = last
                pos[last] = b
                pos[s] = -1
                nb -= 1
            if warmup < a and a < rec_end:
                _record(t - a, a, hist, nbins, inv_dt, acc)
                pending -= 1
    return acc, area, events
