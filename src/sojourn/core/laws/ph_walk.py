"""Phase-type draws inside numba kernels: the absorbing chain walked by alias tables on the inline SFC64 stream.

A draw of PH(β, B) starts in a phase picked from β (absorbed at once with the deficit 1 − Σβ), holds an
Exp(−B_ii) time in phase i, then jumps to phase j with probability B_ij/(−B_ii) or is absorbed with the rest,
until absorbed. Each pick is one 64-bit word against a Walker alias table (Vose's construction: K outcomes
in K equal columns, each column its own outcome below a threshold and one alias outcome above it), so a step
costs one exponential, at most one word (none when the phase has a single successor) and a few loads,
whatever the number of phases — a lumped order statistic with hundreds of phases walks as fast as a small law.

The start of the walk is drawn whole: the tables hold up to ``max_paths`` paths of the jump chain from the
start (best-first, :func:`_prefix_paths`), and one pick chooses the start phase and the first jumps at once.
Where every path is absorbed within that budget — exponential and hyperexponential replicas' S_{q:r}, whose
lumped chain absorbs after exactly q jumps — a draw is one pick and q exponentials (a q = 3 draw of a
two-branch hyperexponential: 4.1 words with the ziggurat's rare extra ones, against 5.5 phase by phase;
about 18 ns against 37 ns here, with the integer picks below).

Alias picks take integers, not floats: a table padded to K = 2^b columns (the extra columns hold probability
0, so they always give their alias) takes its column from the word's low b bits and compares the other
64 − b bits with an integer threshold (64 − b ≥ 53 bits of resolution for b ≤ 11; the bits are disjoint,
so column and comparison are independent). That saved 4 ns of the 21 against u·K and a float comparison.

Each draw also integrates a reward rate per phase (``reward``): ∫ reward(phase(t)) dt over the draw, e.g.
the number of live replicas of a lumped order statistic (the host-time the replicas compute).

Tables (:func:`walk_tables`): a tuple of numpy arrays, unpacked into :func:`fill`'s arguments.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .phase_type import exit_vector
from .sfc64 import EXPONENTIAL_WORDS, load, next_u64, standard_exponential, store

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


def _step_tables(B):
    """Per phase: 1/rate and the alias table of its successors (outcome −1: absorption)."""
    n = B.shape[0]
    rates = -np.diag(B)
    exits = exit_vector(B)
    succ = []
    for i in range(n):
        row = B[i].copy()
        row[i] = 0.0
        p = np.concatenate([row, [exits[i]]]) / rates[i]
        out = np.concatenate([np.arange(n), [-1]])
        keep = p > _DROP
        succ.append((out[keep], p[keep] / p[keep].sum()))
    return 1.0 / rates, succ


def _prefix_paths(start, succ, max_paths):
    """The start of the walk as whole discrete paths: (probability, phases held in order, phase to go on from
    or −1). Best-first: the most probable open prefix is replaced by its one-step extensions while the number
    of paths stays ≤ ``max_paths``; a path absorbed is closed. The paths partition the walk's outcomes, so
    drawing one by its probability, then holding an exponential in each phase it names and walking on from
    its end, is the same law as walking from the start (the holding times are independent of the path)."""
    closed, open_ = [], []
    for s, p in start:
        (closed if s < 0 else open_).append((p, (), s))
    while open_:
        open_.sort(key=lambda x: x[0])
        p, held, s = open_[-1]
        out, q = succ[s]
        if len(closed) + len(open_) - 1 + out.size > max_paths:
            break
        open_.pop()
        for j, pj in zip(out, q, strict=True):
            (closed if j < 0 else open_).append((p * pj, held + (s,), int(j)))
    return closed + open_


def int_alias_table(p) -> tuple[np.ndarray, np.ndarray, int]:
    """(threshold, alias, b) of an alias table over 2^b columns for probabilities ``p`` (padded with zeros), in
    the integer form :func:`fill` draws: a word u picks column j = u & (2^b − 1) and gives j when u >> b is
    below threshold[j] (an unsigned integer, the column's own share scaled by 2^(64 − b)), else alias[j].
    b = 0 (a single outcome) needs no word."""
    p = np.asarray(p, dtype=float)
    b = 0
    while (1 << b) < p.size:
        b += 1
    thr, _, alias = alias_table(np.concatenate([p, np.zeros((1 << b) - p.size)]))
    if b == 0:
        return np.zeros(1, np.uint64), alias.astype(np.int64), 0
    scale = 2.0 ** (64 - b)
    # thr·2^(64−b) as an exact integer (thr is a double: its 53 bits scale without loss); 1 → 2^(64−b)
    thr_int = np.array([min(int(t * scale), 1 << (64 - b)) for t in thr], dtype=np.uint64)
    return thr_int, alias.astype(np.int64), b


def _int_alias_probabilities(thr, alias, b, size) -> np.ndarray:
    """The probabilities an integer alias table gives its first ``size`` outcomes (checks, words_per_draw)."""
    K = 1 << b
    own = thr.astype(float) / 2.0 ** (64 - b) if b > 0 else np.ones(1)
    p = np.zeros(K)
    np.add.at(p, np.arange(K), own / K)
    np.add.at(p, alias, (1.0 - own) / K)
    return p[:size]


def walk_tables(beta, B, reward=None, max_paths: int = 256) -> tuple:
    """Tables of PH(β, B) for :func:`fill`, a tuple of arrays: (path_threshold, path_alias, path_offset,
    path_length, path_end, path_inv_rate, path_reward, inv_rate, reward, offset, bits, threshold, outcome,
    alias) — the paths' integer alias table; per path its held phases' 1/rate and reward (flat, from
    path_offset, path_length long) and the phase the walk goes on from (−1: absorbed); per phase 1/rate,
    reward and its successors' integer alias table (2^bits columns from offset; outcome −1 is absorption).

    ``max_paths`` (≥ 1, ≤ 2048) bounds the paths drawn whole; 256 keeps every table of the split-merge study's
    laws in L1 cache. ``reward`` (per phase, default 0) is integrated over the draw."""
    beta = np.asarray(beta, dtype=float)
    B = np.asarray(B, dtype=float)
    n = beta.size
    reward = np.zeros(n) if reward is None else np.asarray(reward, dtype=float)
    if reward.shape != (n,):
        raise ValueError(f"reward must have one value per phase ({n}); got shape {reward.shape}")
    if not (isinstance(max_paths, (int, np.integer)) and 1 <= max_paths <= 2048):
        raise ValueError(f"max_paths must be an integer in [1, 2048]; got {max_paths!r}")
    deficit = max(0.0, 1.0 - beta.sum())
    start = [(i, beta[i]) for i in range(n) if beta[i] > _DROP] + ([(-1, deficit)] if deficit > _DROP else [])
    if len(start) > 2048:
        raise ValueError(f"a walk starts in at most 2048 phases; β has {len(start)} with positive mass")
    inv_rate, succ = _step_tables(B)
    paths = _prefix_paths(start, succ, max(int(max_paths), len(start)))
    p_thr, p_alias, _ = int_alias_table([p for p, _, _ in paths])
    lengths = np.array([len(h) for _, h, _ in paths], np.int64)
    held = np.array([s for _, h, _ in paths for s in h], np.int64)
    offset = np.zeros(n, np.int64)
    bits = np.zeros(n, np.int64)
    thr, out, ali = [], [], []
    pos = 0
    for i, (succ_i, q) in enumerate(succ):
        t, a, b = int_alias_table(q)
        succ_pad = np.concatenate([succ_i, np.full((1 << b) - succ_i.size, -1)])  # padded columns: never own
        offset[i], bits[i] = pos, b
        thr.append(t)
        out.append(succ_pad)
        ali.append(succ_pad[a])
        pos += t.size
    return (p_thr, p_alias, np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64), lengths,
            np.array([e for _, _, e in paths], np.int64), inv_rate[held], reward[held], inv_rate, reward,
            offset, bits, np.concatenate(thr), np.concatenate(out).astype(np.int64),
            np.concatenate(ali).astype(np.int64))


def words_per_draw(tables) -> float:
    """Expected random words of one draw with these tables: the path pick (none for a single path), an
    exponential per phase held (:data:`sojourn.core.laws.sfc64.EXPONENTIAL_WORDS` words each), a pick per jump from
    a phase with several successors after the path (expected visits after each open path's end: one solve)."""
    p_thr, p_alias, p_off, p_len, p_end, _, _, inv_rate, _, offset, bits, thr, out, ali = tables
    n, M = inv_rate.size, p_len.size
    prob = _int_alias_probabilities(p_thr, p_alias, int(round(np.log2(p_thr.size))), M)
    P = np.zeros((n, n))
    for i in range(n):
        K = 1 << bits[i]
        own = thr[offset[i]:offset[i] + K].astype(float) / 2.0 ** (64 - bits[i]) if bits[i] > 0 else np.ones(1)
        for j in range(K):
            for o, m in ((out[offset[i] + j], own[j]), (ali[offset[i] + j], 1.0 - own[j])):
                if o >= 0:
                    P[i, o] += m / K
    v = np.linalg.solve(np.eye(n) - P, EXPONENTIAL_WORDS + (bits > 0))
    tail = np.array([v[e] if e >= 0 else 0.0 for e in p_end])
    return float((M > 1) + prob @ (EXPONENTIAL_WORDS * p_len + tail))


@njit(inline="always")
def path_shape(p_thr, p_len, p_end):
    """(mask, shift, L) of a path table: the pick's column mask and threshold shift (mask 0: a single path, no
    pick), and L ≥ 0 when every path is absorbed and L long — then path o's phases sit at o·L and a draw is
    :func:`closed_draw` — else −1."""
    mask = np.int64(p_thr.size - 1)
    pb = np.uint64(0)
    while (1 << pb) < p_thr.size:
        pb += np.uint64(1)
    L = p_len[0]
    for o in range(p_len.size):
        if p_len[o] != L or p_end[o] >= 0:
            L = -1
            break
    return mask, pb, L


@njit(inline="always")
def _pick(g, thr, alias, mask, shift):
    """(column or its alias, new state): one word against an integer alias table (none when mask is 0)."""
    if mask == 0:
        return 0, g
    u, g = next_u64(g)
    j = np.int64(u) & mask
    return (j if (u >> shift) < thr[j] else alias[j]), g


@njit(inline="always")
def _hold(g, inv_rate, reward, k0, n):
    """(time, reward integral, new state) of the n phases held from index k0: an exponential each."""
    t = 0.0
    w = 0.0
    for k in range(k0, k0 + n):
        e, g = standard_exponential(g)
        d = e * inv_rate[k]
        t += d
        w += d * reward[k]
    return t, w, g


@njit(inline="always")
def closed_draw(g, p_thr, p_alias, mask, pb, L, p_inv, p_rew):
    """(time, reward integral, new state) of one draw from a closed path table (:func:`path_shape`'s L ≥ 0):
    a pick, then one exponential per phase of the path (its offset o·L is arithmetic, not a load: that saved
    5 ns of 26 per q = 3 draw here). Also inlined in the split-merge kernel's loop."""
    o, g = _pick(g, p_thr, p_alias, mask, pb)
    return _hold(g, p_inv, p_rew, o * L, L)


@njit(cache=True)
def fill(times, rewards, st, p_thr, p_alias, p_off, p_len, p_end, p_inv, p_rew, inv_rate, reward, offset, bits,
         thr, out, ali):
    """times[i], rewards[i] = the time to absorption and its reward integral of draw i, for every i, from the
    inline SFC64 state array ``st`` (advanced in place); the tables of :func:`walk_tables` unpacked.

    The walk after an open path is written out in this loop: array arguments of an inlined per-draw helper
    with branches were reference-counted at every draw (numba did not prune the counts across the walk's
    branches), which made a one-step draw 10x slower here; :func:`closed_draw`, whose branch is the same at
    every draw, is not."""
    g = load(st)
    mask, pb, L = path_shape(p_thr, p_len, p_end)
    if L >= 0:
        for i in range(times.size):
            t, w, g = closed_draw(g, p_thr, p_alias, mask, pb, L, p_inv, p_rew)
            times[i] = t
            rewards[i] = w
        store(st, g)
        return
    for i in range(times.size):
        o, g = _pick(g, p_thr, p_alias, mask, pb)
        t, w, g = _hold(g, p_inv, p_rew, p_off[o], p_len[o])
        s = p_end[o]
        while s >= 0:
            e, g = standard_exponential(g)
            d = e * inv_rate[s]
            t += d
            w += d * reward[s]
            b = bits[s]
            if b == 0:
                s = out[offset[s]]
            else:
                u, g = next_u64(g)
                k = offset[s] + (np.int64(u) & ((np.int64(1) << b) - 1))
                s = out[k] if (u >> np.uint64(b)) < thr[k] else ali[k]
        times[i] = t
        rewards[i] = w
    store(st, g)
