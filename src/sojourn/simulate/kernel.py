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

from .laws import EXPONENTIAL, LOGNORMAL, sample_law

# Dispatch codes (sojourn.models.DISPATCH_CODE)
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
    a_exp = acode == EXPONENTIAL  # inline the common exponential draws (no call into sample_law)
    s_exp = scode == EXPONENTIAL
    s_logn = scode == LOGNORMAL
    a_mean = 1.0 / ap[0] if a_exp else 0.0
    s_mean = 1.0 / sp[0] if s_exp else 0.0

    n = np.zeros(R, np.int64)  # customers present at each server
    V = np.zeros(R)  # virtual clocks: attained service of each customer in service
    tl = np.zeros(R)  # real time of the last V update
    nd = np.full(R, np.inf)  # next departure date
    cap = 16
    hk = np.empty((R, cap))  # heap keys: virtual finish times V_admission + x
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

    cnt = 0
    over = 0
    ssum = 0.0
    ssq = 0.0
    smax = 0.0
    total = 0
    pending = 0
    area = 0.0
    events = 0
    tprev = 0.0
    t_arr = rng.exponential(a_mean) if a_exp else sample_law(acode, ap, rng)
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
            if rec_end > lo:
                area += total * (rec_end - lo)
            break
        lo = tprev if tprev > warmup else warmup  # window (warmup, rec_end) ∩ (tprev, t)
        hi = t if t < rec_end else rec_end
        if hi > lo:
            area += total * (hi - lo)
        tprev = t
        events += 1
        if t_arr <= tm:
            # ---- arrival -------------------------------------------------------------
            # ---- dispatch (inlined: a call with array/Generator arguments costs ~30 ns) ----
            if dispatch == RANDOM:
                s = int(rng.random() * R)
                if s >= R:
                    s = R - 1
            elif dispatch == ROUND_ROBIN:
                s = rr
                rr = rr + 1 if rr + 1 < R else 0
            else:
                if dispatch == JSQ_D:  # d distinct servers: partial Fisher–Yates shuffle of perm
                    for i in range(d):
                        j = i + int(rng.random() * (R - i))
                        if j >= R:
                            j = R - 1
                        tmp = perm[i]
                        perm[i] = perm[j]
                        perm[j] = tmp
                    idx = perm
                    kk = d
                else:
                    idx = ident
                    kk = R
                # JSQ among idx[:kk]: fewest customers present, uniform random tie-break
                mn = n[idx[0]]
                ties = 1
                for i in range(1, kk):
                    v = n[idx[i]]
                    if v < mn:
                        mn = v
                        ties = 1
                    elif v == mn:
                        ties += 1
                j = 0
                if ties > 1:
                    j = int(rng.random() * ties)
                    if j >= ties:
                        j = ties - 1
                s = idx[0]
                for i in range(kk):
                    if n[idx[i]] == mn:
                        if j == 0:
                            s = idx[i]
                            break
                        j -= 1
            ns = n[s]
            if warmup < t and t < rec_end:
                occ[ns if ns < nmax else nmax] += 1
                pending += 1
            if s_exp:
                x = rng.exponential(s_mean)
            elif s_logn:
                x = np.exp(sp[0] + sp[1] * rng.standard_normal())  # same draw as sample_law
            else:
                x = sample_law(scode, sp, rng)
            m = ns if ns < c else c  # number in service before the arrival
            if m > 0:
                V[s] += (t - tl[s]) * (theta / (m if m > theta else theta))  # per-customer rate θ/max(m, θ)
            tl[s] = t
            n[s] = ns + 1
            total += 1
            if ns < c:  # admitted at once
                if m >= cap:
                    cap *= 2
                    hk = _grow2d(hk, cap)
                    ha = _grow2d(ha, cap)
                    hx = _grow2d(hx, cap)
                # sift-up insertion of (V[s] + x, t, x) into heap row s of size m
                hkey = V[s] + x
                harr = t
                hreq = x
                i = m
                while i > 0:
                    par = (i - 1) >> 1
                    pk = hk[s, par]
                    if pk <= hkey:
                        break
                    hk[s, i] = pk
                    ha[s, i] = ha[s, par]
                    hx[s, i] = hx[s, par]
                    i = par
                hk[s, i] = hkey
                ha[s, i] = harr
                hx[s, i] = hreq
                m += 1
            else:  # limited PS: wait FIFO
                q = ns - c
                if q >= qcap:
                    nq = 2 * qcap
                    na = np.empty((R, nq))
                    nx = np.empty((R, nq))
                    for r in range(R):
                        qr = n[r] - c if r != s else q
                        for jj in range(qr if qr > 0 else 0):
                            na[r, jj] = qa[r, (qh[r] + jj) % qcap]
                            nx[r, jj] = qx[r, (qh[r] + jj) % qcap]
                        qh[r] = 0
                    qa = na
                    qx = nx
                    qcap = nq
                jj = (qh[s] + q) % qcap
                qa[s, jj] = t
                qx[s, jj] = x
            rate = theta / (m if m > theta else theta)
            rem = hk[s, 0] - V[s]
            nd[s] = t + (rem if rem > 0.0 else 0.0) / rate  # t + (Vfinish_min − V)/rate
            t_arr = t + (rng.exponential(a_mean) if a_exp else sample_law(acode, ap, rng))
        else:
            # ---- departure from server sm: pop the heap root ---------------------------
            s = sm
            ns = n[s]
            m = ns if ns < c else c
            key = hk[s, 0]
            a = ha[s, 0]
            x = hx[s, 0]
            last = m - 1
            if last > 0:  # move the last entry to the root and sift it down
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
            V[s] = key  # the leaver's virtual finish time is the clock now (exactly)
            tl[s] = t
            m -= 1
            n[s] = ns - 1
            total -= 1
            if warmup < a and a < rec_end:
                soj = t - a
                b = int(soj * inv_dt)  # histogram bin floor(soj/dt)
                if b < nbins:
                    hist[b] += 1
                else:
                    over += 1
                cnt += 1
                ssum += soj
                ssq += soj * soj
                if soj > smax:
                    smax = soj
                pending -= 1
                if xdx > 0.0:
                    k = int(x / xdx)
                    if k < K:
                        cx_n[k] += 1
                        cx_s[k] += soj
                        cx_ss[k] += soj * soj
            if ns > c:  # limited PS: admit the head of the FIFO with finish key V + x
                h = qh[s]
                # sift-up insertion of (V[s] + qx[s, h], qa[s, h], qx[s, h]) into heap row s of size m
                hkey = V[s] + qx[s, h]
                harr = qa[s, h]
                hreq = qx[s, h]
                i = m
                while i > 0:
                    par = (i - 1) >> 1
                    pk = hk[s, par]
                    if pk <= hkey:
                        break
                    hk[s, i] = pk
                    ha[s, i] = ha[s, par]
                    hx[s, i] = hx[s, par]
                    i = par
                hk[s, i] = hkey
                ha[s, i] = harr
                hx[s, i] = hreq
                qh[s] = h + 1 if h + 1 < qcap else 0
                m += 1
            if m > 0:
                rate = theta / (m if m > theta else theta)
                rem = hk[s, 0] - V[s]
                nd[s] = t + (rem if rem > 0.0 else 0.0) / rate
            else:
                V[s] = 0.0  # empty server: restart the virtual clock (keeps it small)
                nd[s] = np.inf
    acc = np.array([float(cnt), float(over), ssum, ssq, smax])
    return acc, area, events


@njit(cache=True)
def run_exponential(R, lam, mu, dispatch, d, warmup, rec_end, dt, hist, occ, rng):
    """Exact kernel for Poisson(Λ) arrivals, Exp(μ) service and plain PS (see module docstring).

    Same outputs as :func:`run_general` (without the service-requirement bins).
    """
    nbins = hist.shape[0]
    inv_dt = 1.0 / dt
    nmax = occ.shape[0] - 1

    n = np.zeros(R, np.int64)
    cap = 16
    A = np.empty((R, cap))  # arrival dates of the customers present, unordered
    busy = np.empty(R, np.int64)  # list of busy servers (order irrelevant)
    nb = 0
    perm = np.arange(R)
    ident = np.arange(R)
    rr = 0

    cnt = 0
    over = 0
    ssum = 0.0
    ssq = 0.0
    smax = 0.0
    total = 0
    pending = 0
    area = 0.0
    events = 0
    t = 0.0
    while True:
        rate = lam + mu * nb  # total event rate: arrivals + one Exp(μ) departure stream per busy server
        tn = t + rng.exponential(1.0 / rate)
        if pending == 0 and tn >= rec_end:
            lo = t if t > warmup else warmup  # window (warmup, rec_end) ∩ (t, rec_end)
            if rec_end > lo:
                area += total * (rec_end - lo)
            break
        lo = t if t > warmup else warmup  # window (warmup, rec_end) ∩ (t, tn)
        hi = tn if tn < rec_end else rec_end
        if hi > lo:
            area += total * (hi - lo)
        t = tn
        events += 1
        u = rng.random() * rate
        if u < lam:
            # ---- dispatch (inlined: a call with array/Generator arguments costs ~30 ns) ----
            if dispatch == RANDOM:
                s = int(rng.random() * R)
                if s >= R:
                    s = R - 1
            elif dispatch == ROUND_ROBIN:
                s = rr
                rr = rr + 1 if rr + 1 < R else 0
            else:
                if dispatch == JSQ_D:  # d distinct servers: partial Fisher–Yates shuffle of perm
                    for i in range(d):
                        j = i + int(rng.random() * (R - i))
                        if j >= R:
                            j = R - 1
                        tmp = perm[i]
                        perm[i] = perm[j]
                        perm[j] = tmp
                    idx = perm
                    kk = d
                else:
                    idx = ident
                    kk = R
                # JSQ among idx[:kk]: fewest customers present, uniform random tie-break
                mn = n[idx[0]]
                ties = 1
                for i in range(1, kk):
                    v = n[idx[i]]
                    if v < mn:
                        mn = v
                        ties = 1
                    elif v == mn:
                        ties += 1
                j = 0
                if ties > 1:
                    j = int(rng.random() * ties)
                    if j >= ties:
                        j = ties - 1
                s = idx[0]
                for i in range(kk):
                    if n[idx[i]] == mn:
                        if j == 0:
                            s = idx[i]
                            break
                        j -= 1
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
                nb += 1
        else:
            # given a departure, (u − Λ)/μ is uniform on [0, busy): it picks the server
            b = int((u - lam) / mu)
            if b >= nb:
                b = nb - 1
            s = busy[b]
            ns = n[s]
            k = int(rng.random() * ns)  # PS + memorylessness: the leaver is uniform among those present
            if k >= ns:
                k = ns - 1
            a = A[s, k]
            A[s, k] = A[s, ns - 1]
            n[s] = ns - 1
            total -= 1
            if ns == 1:
                busy[b] = busy[nb - 1]  # swap-remove server s from the busy list
                nb -= 1
            if warmup < a and a < rec_end:
                soj = t - a
                b = int(soj * inv_dt)  # histogram bin floor(soj/dt)
                if b < nbins:
                    hist[b] += 1
                else:
                    over += 1
                cnt += 1
                ssum += soj
                ssq += soj * soj
                if soj > smax:
                    smax = soj
                pending -= 1
    acc = np.array([float(cnt), float(over), ssum, ssq, smax])
    return acc, area, events
