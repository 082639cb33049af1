"""Sampling of every law in :mod:`sojourn.distributions` inside numba kernels.

A law travels into a kernel as ``(code, params)`` from ``Distribution.kernel_spec()``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import distributions as D

EXPONENTIAL = D.EXPONENTIAL
DETERMINISTIC = D.DETERMINISTIC
UNIFORM = D.UNIFORM
ERLANG = D.ERLANG
HYPEREXPONENTIAL = D.HYPEREXPONENTIAL
GAMMA = D.GAMMA
LOGNORMAL = D.LOGNORMAL
TRIANGULAR = D.TRIANGULAR
PHASETYPE = D.PHASETYPE


@njit(cache=True)
def _pick(cum, start, m, u):
    """Index i in [0, m) with cum[start+i-1] <= u < cum[start+i] (cum is a cumulative vector)."""
    for i in range(m):
        if u < cum[start + i]:
            return i
    return m  # u beyond the last cumulative value: the remainder (e.g. PH exit)


@njit(cache=True)
def sample_law(code, p, rng):
    """One draw from the law ``(code, p)`` using the numpy Generator ``rng``."""
    if code == EXPONENTIAL:
        return rng.exponential(1.0 / p[0])
    elif code == DETERMINISTIC:
        return p[0]
    elif code == UNIFORM:
        return p[0] + (p[1] - p[0]) * rng.random()
    elif code == ERLANG:
        return rng.gamma(p[0], 1.0 / p[1])
    elif code == HYPEREXPONENTIAL:
        m = int(p[0])
        i = _pick(p, 1, m, rng.random())
        if i >= m:
            i = m - 1
        return rng.exponential(1.0 / p[1 + m + i])
    elif code == GAMMA:
        return rng.gamma(p[0], p[1])
    elif code == LOGNORMAL:
        return np.exp(p[0] + p[1] * rng.standard_normal())
    elif code == TRIANGULAR:
        a, c, b = p[0], p[1], p[2]
        u = rng.random()
        f = (c - a) / (b - a)
        if u < f:
            return a + np.sqrt(u * (b - a) * (c - a))
        return b - np.sqrt((1.0 - u) * (b - a) * (b - c))
    else:  # PHASETYPE: walk the absorbing chain (layout in PhaseType.kernel_spec)
        m = int(p[0])
        state = _pick(p, 1, m, rng.random())
        if state >= m:
            state = m - 1
        total = 0.0
        row0 = 1 + m
        while True:
            base = row0 + state * (m + 1)
            total += rng.exponential(1.0 / p[base])
            nxt = _pick(p, base + 1, m, rng.random())
            if nxt >= m:
                return total
            state = nxt
