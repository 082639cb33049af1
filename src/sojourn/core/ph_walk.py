"""Phase-type draws inside numba kernels: the absorbing chain walked by alias tables on the inline SFC64 stream.

A draw of PH(β, B) starts in a phase picked from β (absorbed at once with the deficit 1 − Σβ), holds an
Exp(−B_ii) time in phase i, then jumps to phase j with probability B_ij/(−B_ii) or is absorbed with the rest,
until absorbed. Each pick is one uniform against a Walker alias table (Vose's construction: K outcomes in K
equal columns, each column its own outcome below a threshold and one alias outcome above it), so a step
costs one exponential, at most one uniform (none when the phase has a single successor) and a few loads,
whatever the number of phases — a lumped order statistic with hundreds of phases walks as fast as a small law.

Each draw also integrates a reward rate per phase (``reward``): ∫ reward(phase(t)) dt over the draw, e.g.
the number of live replicas of a lumped order statistic (the host-time the replicas compute).

Tables (:func:`walk_tables`): a tuple of numpy arrays, unpacked into :func:`fill`'s arguments.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .phase_type import exit_vector
from .sfc64 import load, standard_exponential, store, uniform

#: a jump probability below this (relative to its row) is dropped: round-off makes such exits from phases
#: without one; a genuine one would change a draw with probability below this per step
_DROP = 1e-12


def alias_table(p) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(threshold, own, alias) of a Walker alias table for probabilities ``p`` (normalised here), by Vose's
    method (M. D. Vose, IEEE Trans. Softw. Eng. 17(9), 1991): column k gives outcome own[k] = k when
    the fractional part of u·K is below threshold[k], else alias[k]."""
    p = np.asarray(p, dtype=float)
    K = p.size
    scaled = p / p.sum() * K
    threshold = np.ones(K)
    alias = np.arange(K)
    small = [k for k in range(K) if scaled[k] < 1.0]
    large = [k for k in range(K) if scaled[k] >= 1.0]
    while small and large:
        s = small.pop()
        g = large[-1]
        threshold[s] = scaled[s]
        alias[s] = g
        scaled[g] -= 1.0 - scaled[s]
        if scaled[g] < 1.0:
            large.pop()
            small.append(g)
    # what is left holds probability 1 up to round-off: own outcome always
    return threshold, np.arange(K), alias


def walk_tables(beta, B, reward=None) -> tuple:
    """Alias tables of PH(β, B) for :func:`draw`: (start_threshold, start_own, start_alias, inv_rate, reward,
    offset, size, threshold, own, alias). Outcome −1 is absorption; ``reward`` defaults to 0 per phase."""
    beta = np.asarray(beta, dtype=float)
    B = np.asarray(B, dtype=float)
    n = beta.size
    reward = np.zeros(n) if reward is None else np.asarray(reward, dtype=float)
    if reward.shape != (n,):
        raise ValueError(f"reward must have one value per phase ({n}); got shape {reward.shape}")
    deficit = max(0.0, 1.0 - beta.sum())
    start_p = np.concatenate([beta, [deficit]])
    start_out = np.concatenate([np.arange(n), [-1]])
    keep = start_p > _DROP
    st_thr, st_own, st_alias = alias_table(start_p[keep])
    start_out = start_out[keep]
    rates = -np.diag(B)
    exits = exit_vector(B)
    offset = np.zeros(n, np.int64)
    size = np.zeros(n, np.int64)
    thr, own, ali = [], [], []
    pos = 0
    for i in range(n):
        row = B[i].copy()
        row[i] = 0.0
        p = np.concatenate([row, [exits[i]]]) / rates[i]
        out = np.concatenate([np.arange(n), [-1]])
        keep = p > _DROP
        t, o, a = alias_table(p[keep])
        out = out[keep]
        offset[i] = pos
        size[i] = t.size
        thr.append(t)
        own.append(out[o])
        ali.append(out[a])
        pos += t.size
    return (st_thr, start_out[st_own].astype(np.int64), start_out[st_alias].astype(np.int64), 1.0 / rates, reward,
            offset, size, np.concatenate(thr), np.concatenate(own).astype(np.int64),
            np.concatenate(ali).astype(np.int64))


@njit(cache=True)
def fill(times, rewards, st, st_thr, st_own, st_alias, inv_rate, reward, offset, size, thr, own, ali):
    """times[i], rewards[i] = the time to absorption and its reward integral of draw i, for every i, from the
    inline SFC64 state array ``st`` (advanced in place); the tables of :func:`walk_tables` unpacked.

    The whole loop is one function on purpose: array arguments of an inlined per-draw helper are
    reference-counted at every draw (numba cannot prune the counts across the walk's branches), which made a
    one-step draw 10x slower here."""
    g = load(st)
    n0 = st_thr.size
    for i in range(times.size):
        if n0 == 1:
            s = st_own[0]
        else:
            u, g = uniform(g)
            x = u * n0
            j = int(x)
            s = st_own[j] if x - j < st_thr[j] else st_alias[j]
        t = 0.0
        w = 0.0
        while s >= 0:
            e, g = standard_exponential(g)
            d = e * inv_rate[s]
            t += d
            w += d * reward[s]
            K = size[s]
            if K == 1:
                s = own[offset[s]]
            else:
                u, g = uniform(g)
                x = u * K
                j = int(x)
                k = offset[s] + j
                s = own[k] if x - j < thr[k] else ali[k]
        times[i] = t
        rewards[i] = w
    store(st, g)
