"""Method T: the tagged-customer chain on a spread-capped state space whose boundary keeps the throughput.

The method, its truncation and boundary, why its percentiles are never optimistic and what was measured:
``docs/tail_method.md``.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from ._blas import single_threaded_blas
from .chain import SortedStates, n_sorted_states, stationary, value_counts
from .uniformization import (
    poisson_cutoff,
    poisson_mix,
    transposed_step_matrix,
    uniformized_masses,
)

# ---------------------------------------------------------------------------------------------------------------
# phase tables: one level's configurations and where each event takes them (level shift dg ∈ {−1, 0, +1})

ARRIVAL, DEPART, DEPART_MIN, TAGGED_OTHER = 0, 1, 2, 3  # rate kinds: const; const; const if g ≥ 1; μ(k−1)/k


@dataclass
class PhaseTable:
    """Transitions of one level's phases: src → dst with level shift ``dg``, rate ``rate`` (times μ(k−1)/k·1/μ for
    kind TAGGED_OTHER), ``kind`` (see the constants), ``redirected`` (the throughput-preserving boundary move)."""

    src: np.ndarray
    dst: np.ndarray
    dg: np.ndarray
    rate: np.ndarray
    kind: np.ndarray
    redirected: np.ndarray


def _table(parts):
    cols = list(zip(*parts, strict=True))
    return PhaseTable(*(np.concatenate(c) if len(c) else np.zeros(0) for c in cols))


class SystemPhases:
    """Configurations of the R servers relative to the least-loaded one: sorted offsets 0 = o_1 ≤ … ≤ o_R ≤ D
    (stored as o_2..o_R); the level g is the least occupancy."""

    def __init__(self, R: int, D: int):
        self.R, self.D = int(R), int(D)
        self.rest = SortedStates(self.D + 1, self.R - 1)
        self.F = np.concatenate([np.zeros((self.rest.size, 1), np.int64), self.rest.states], axis=1)
        self.size = self.rest.size

    def index(self, F):
        return self.rest.rank(F[:, 1:])

    def table(self, lam: float, mu: float) -> PhaseTable:
        F, R, D = self.F, self.R, self.D
        n = self.size
        ph = np.arange(n)
        cnt = value_counts(F)
        parts = []
        c = cnt[:, 0]
        # arrival (Λ): the last least-loaded server goes up; a unique minimum lifts the level
        G = F.copy()
        G[ph, c - 1] += 1
        up = c == 1
        G[up] -= 1
        parts.append((ph, self.index(G), up.astype(np.int64), np.full(n, lam), np.full(n, ARRIVAL), np.zeros(n, bool)))
        # departures (μ per busy server): the first server holding v goes down
        for i in range(R):
            first = np.ones(n, bool) if i == 0 else F[:, i] != F[:, i - 1]
            src = ph[first]
            rate = mu * cnt[first, i]
            if i == 0:  # v = 0: a least-loaded server (busy only if g ≥ 1) drops the level, the others move up
                H = F[first] + 1
                H[:, 0] = 0
                over = H[:, -1] > D
                if over.any():  # throughput-preserving boundary: the fullest server loses the customer instead
                    Z = F[first][over].copy()
                    Z[:, -1] -= 1
                    Z.sort(axis=1)
                    parts.append((src[over], self.index(Z), np.zeros(over.sum(), np.int64), rate[over],
                                  np.full(over.sum(), DEPART_MIN), np.ones(over.sum(), bool)))
                ok = ~over
                parts.append(
                    (
                        src[ok],
                        self.index(H[ok]),
                        np.full(ok.sum(), -1),
                        rate[ok],
                        np.full(ok.sum(), DEPART_MIN),
                        np.zeros(ok.sum(), bool),
                    )
                )
            else:
                H = F[first].copy()
                H[:, i] -= 1
                parts.append((src, self.index(H), np.zeros(src.size, np.int64), rate, np.full(src.size, DEPART),
                              np.zeros(src.size, bool)))
        return _table(parts)


class TaggedPhases:
    """Phases of the tagged chain: tagged offset ot ∈ 0..Dt and the sorted offsets O of the other R−1 servers, all
    relative to the least occupancy g of the R servers (so ot = 0 or O_1 = 0); k = g + ot is the tagged server's
    occupancy including the tagged customer."""

    def __init__(self, R: int, D: int, Dt: int):
        self.R, self.D, self.Dt = int(R), int(D), int(Dt)
        self.others = SortedStates(self.D + 1, self.R - 1)
        occ = self.others.states
        no = self.others.size
        ot = np.repeat(np.arange(self.Dt + 1), no)
        OO = np.tile(occ, (self.Dt + 1, 1))
        valid = (ot == 0) | (OO[:, 0] == 0 if self.R > 1 else np.zeros(ot.size, bool))
        self.ot, self.O = ot[valid], OO[valid]
        self.size = self.ot.size
        self._lut = np.full((self.Dt + 1) * no, -1, np.int64)
        self._lut[np.flatnonzero(valid)] = np.arange(self.size)
        self._no = no

    def index(self, ot, occ):
        return self._lut[np.asarray(ot, np.int64) * self._no + self.others.rank(occ)]

    def table(self, lam: float, mu: float) -> PhaseTable:
        ot, occ, R, D, Dt = self.ot, self.O, self.R, self.D, self.Dt
        n = self.size
        ph = np.arange(n)
        c0o = (occ == 0).sum(axis=1) if R > 1 else np.zeros(n, np.int64)
        c = (ot == 0).astype(np.int64) + c0o
        parts = []
        z = lambda m: np.zeros(int(np.sum(m)), bool)
        # arrival to the tagged server (it is least loaded): Λ/c
        m = ot == 0
        up = m & (c == 1)
        st = m & (c > 1)
        parts.append((ph[up], self.index(np.zeros(up.sum(), np.int64), occ[up] - 1), np.ones(up.sum(), np.int64),
                      lam / c[up], np.full(up.sum(), ARRIVAL), z(up)))
        parts.append((ph[st], self.index(np.ones(st.sum(), np.int64), occ[st]), np.zeros(st.sum(), np.int64),
                      lam / c[st], np.full(st.sum(), ARRIVAL), z(st)))
        # arrival to another least-loaded server: Λ·c0o/c, its last zero goes up
        if R > 1:
            m = c0o > 0
            P = occ[m].copy()
            P[np.arange(P.shape[0]), c0o[m] - 1] += 1
            lift = c[m] == 1  # that server was the unique minimum (ot ≥ 1): the level goes up
            ot2 = ot[m] - lift
            P[lift] -= 1
            parts.append((ph[m], self.index(ot2, P), lift.astype(np.int64), lam * c0o[m] / c[m],
                          np.full(m.sum(), ARRIVAL), z(m)))
        # a customer other than the tagged one leaves the tagged server: μ(k−1)/k (rate column = μ, kind TAGGED_OTHER)
        m = ot >= 1
        parts.append((ph[m], self.index(ot[m] - 1, occ[m]), np.zeros(m.sum(), np.int64), np.full(m.sum(), mu),
                      np.full(m.sum(), TAGGED_OTHER), z(m)))
        m = ot == 0  # the tagged server is least loaded: the level drops, every other server moves up one
        src = ph[m]
        Om = occ[m]
        if R > 1:
            over = Om[:, -1] + 1 > D
        else:
            over = np.zeros(src.size, bool)
        ok = ~over
        parts.append((src[ok], self.index(np.zeros(ok.sum(), np.int64), Om[ok] + 1), np.full(ok.sum(), -1),
                      np.full(ok.sum(), mu), np.full(ok.sum(), TAGGED_OTHER), z(ok)))
        if over.any():  # boundary: the fullest other server loses the customer instead (level kept)
            Z = Om[over].copy()
            Z[:, -1] -= 1
            Z.sort(axis=1)
            parts.append((src[over], self.index(np.zeros(over.sum(), np.int64), Z), np.zeros(over.sum(), np.int64),
                          np.full(over.sum(), mu), np.full(over.sum(), TAGGED_OTHER), np.ones(over.sum(), bool)))
        # departures at the other servers: μ·(number holding v), the first one holding v goes down
        if R > 1:
            cnt = value_counts(occ)
            for i in range(R - 1):
                first = np.ones(n, bool) if i == 0 else occ[:, i] != occ[:, i - 1]
                pos = first & (occ[:, i] >= 1)  # above the minimum: level unchanged
                P = occ[pos].copy()
                P[:, i] -= 1
                parts.append((ph[pos], self.index(ot[pos], P), np.zeros(pos.sum(), np.int64), mu * cnt[pos, i],
                              np.full(pos.sum(), DEPART), z(pos)))
                if i == 0:  # a least-loaded other server (busy only if g ≥ 1): the level drops, the rest move up
                    mn = first & (occ[:, 0] == 0)
                    src = ph[mn]
                    P = occ[mn] + 1
                    P[:, 0] = 0
                    ot2 = ot[mn] + 1
                    over = (P[:, -1] > D) | (ot2 > Dt)
                    ok = ~over
                    parts.append((src[ok], self.index(ot2[ok], P[ok]), np.full(ok.sum(), -1), mu * cnt[mn, 0][ok],
                                  np.full(ok.sum(), DEPART_MIN), z(ok)))
                    if over.any():  # boundary: the fullest other server loses the customer instead
                        Z = occ[mn][over].copy()
                        can = Z[:, -1] >= 1
                        Z[:, -1] -= np.where(can, 1, 0)
                        Z.sort(axis=1)
                        s2 = src[over][can]
                        parts.append(
                            (
                                s2,
                                self.index(ot[mn][over][can], Z[can]),
                                np.zeros(s2.size, np.int64),
                                (mu * cnt[mn, 0][over])[can],
                                np.full(s2.size, DEPART_MIN),
                                np.ones(s2.size, bool),
                            )
                        )
        return _table(parts)


# ---------------------------------------------------------------------------------------------------------------
# the chains on levels 0..M−1


def _expand(table: PhaseTable, n_phase: int, M: int, valid=None):
    """(rows, cols, rate, kind, src phase, level) of the table repeated on every level g = 0..M−1; moves that
    need g ≥ 1 (a least-loaded server busy) or leave 0..M−1 (the level cap: an arrival lost) are dropped."""
    g = np.arange(M)[:, None]
    src = table.src[None, :] + 0 * g
    gg = np.broadcast_to(g, src.shape)
    g2 = gg + table.dg[None, :]
    keep = (g2 >= 0) & (g2 <= M - 1) & ~((table.kind[None, :] == DEPART_MIN) & (gg == 0))
    rows = (gg * n_phase + src)[keep]
    cols = (g2 * n_phase + table.dst[None, :])[keep]
    if valid is not None:
        ok = valid[rows] & valid[cols]
        keep_rows, keep_cols = rows[ok], cols[ok]
        sel = np.flatnonzero(keep)[ok]
    else:
        keep_rows, keep_cols, sel = rows, cols, np.flatnonzero(keep)
    r_idx = np.broadcast_to(np.arange(table.src.size)[None, :], keep.shape).ravel()[sel]
    level = gg.ravel()[sel]
    return keep_rows, keep_cols, table.rate[r_idx], table.kind[r_idx], table.src[r_idx], level


def system_law(lam, mu, R, M, D):
    """Stationary law π(g, F) of the system chain on levels g < M with spread cap D and the same boundary as the
    tagged chain (module doc); returns (phases, π as an (M, phases) array)."""
    from scipy import sparse

    ph = SystemPhases(R, D)
    P = ph.size
    rows, cols, rate, _, _, _ = _expand(ph.table(lam, mu), P, M)
    n = M * P
    Q = sparse.coo_matrix((rate, (rows, cols)), shape=(n, n)).tocsr()
    Q = Q - sparse.diags(np.asarray(Q.sum(axis=1)).ravel())
    total = (np.arange(M)[:, None] * R + ph.F.sum(axis=1)[None, :]).ravel()
    Q = Q.tocsr()
    try:
        pi = stationary(Q, levels=total)
    except RuntimeError:  # R ≳ 50 (measured: R = 52..64 at ρ = 0.83..0.96, D = 1)
        # the solver fixes the empty system, whose mass is then ~1e-24 of the rest: the level-ordered sparse LU
        # meets an exactly zero pivot. Fix a state holding about Λ/μ customers (the bulk of the mass) instead,
        # the others still in level order: the same system, the same solution where both solve
        order = total.astype(float)
        order[int(np.argmin(np.abs(total - lam / mu)))] = -1.0
        pi = stationary(Q, levels=order)
    return ph, np.maximum(pi, 0.0).reshape(M, P)


def level_cap(lam, mu, R, D, eps, M0=8, max_levels=100_000):
    """(M, π, phases): the least-occupancy cap whose top level holds stationary mass < ``eps`` (geometric decay of
    P(g = m) extrapolated from the interior levels, then verified)."""
    M = M0
    for _ in range(12):
        ph, pi = system_law(lam, mu, R, M, D)
        pg = pi.sum(axis=1)
        if pg[-1] < eps or M >= max_levels:
            return M, pi, ph
        lo, hi = max(1, M // 2), M - 2
        r = (pg[hi] / pg[lo]) ** (1.0 / (hi - lo)) if hi > lo and pg[lo] > 0 and pg[hi] > 0 else 0.5
        r = min(max(r, 1e-6), 1.0 - 1e-9)
        M = min(max_levels, max(M + max(1, M // 4), int(math.ceil(M - 1 + math.log(eps / pg[-1]) / math.log(r))) + 2))
    return M, pi, ph


def per_server_rates(pi, ph: SystemPhases, arrival_rate):
    """(λ_n, A_n) read off π like the exact method (§3.2, §3.4 rules): A_n = P(least occupancy = n),
    λ_n = Λ·A_n / E[#servers holding n]."""
    M = pi.shape[0]
    top = M + ph.D
    A = np.zeros(top)
    A[:M] = pi.sum(axis=1)
    occ = np.zeros(top)
    for j in range(ph.R):
        lev = np.arange(M)[:, None] + ph.F[None, :, j]
        occ += np.bincount(lev.ravel(), weights=pi.ravel(), minlength=top)
    lam = np.where((A > 0) & (occ > 0), float(arrival_rate) * A / np.where(occ > 0, occ, 1.0), 0.0)
    return lam, A


@dataclass
class TaggedChain:
    """The tagged chain on levels < M: P = I + Q/q as CSR of Pᵀ (for v ← vP), its size and the initial law."""

    PT: object
    q: float
    p0: np.ndarray
    lost: float
    size: int
    nnz: int
    redirected_share: float


@dataclass
class TaggedMoves:
    """The tagged chain's moves between its states (the valid (level, phase) pairs, compressed), before the tagged
    customer's own completion: ``rows`` → ``cols`` at ``rate`` (μ(k−1)/k applied to the moves of kind
    TAGGED_OTHER), ``kind`` (the constants above), ``k`` the tagged server's occupancy of each state (with the
    tagged customer), ``p0`` the initial law (PASTA + JSQ on π) and ``lost`` its mass beyond the level cap."""

    rows: np.ndarray
    cols: np.ndarray
    rate: np.ndarray
    kind: np.ndarray
    k: np.ndarray
    p0: np.ndarray
    lost: float

    @property
    def size(self) -> int:
        return int(self.k.size)


def tagged_moves(lam, mu, R, M, D, Dt, pi, sys_ph: SystemPhases) -> TaggedMoves:
    """:class:`TaggedMoves` of the tagged chain with caps M (levels), D (others' offsets), Dt (tagged offset) on the
    system law ``pi`` of ``sys_ph`` (module doc)."""
    tp = TaggedPhases(R, D, Dt)
    P = tp.size
    k_all = (np.arange(M)[:, None] + tp.ot[None, :]).ravel()
    valid = k_all >= 1
    table = tp.table(lam, mu)
    rows, cols, rate, kind, src, level = _expand(table, P, M, valid)
    k = level + tp.ot[src]
    rate = np.where(kind == TAGGED_OTHER, rate * (k - 1) / np.maximum(k, 1), rate)
    nz = rate > 0
    rows, cols, rate, kind = rows[nz], cols[nz], rate[nz], kind[nz]
    comp = np.cumsum(valid) - 1  # compressed index of the valid states
    # initial law (PASTA + JSQ): the arrival sees π and joins a least-loaded server
    F = sys_ph.F
    c = (F == 0).sum(axis=1)
    uniq = c == 1
    ot0 = np.where(uniq, 0, 1)
    O0 = np.where(uniq[:, None], F[:, 1:] - 1, F[:, 1:])
    ph0 = tp.index(ot0, O0)
    g0 = np.arange(M)[:, None] + uniq[None, :].astype(np.int64)
    inside = g0 <= M - 1
    full = np.zeros(M * P)
    np.add.at(full, (g0 * P + ph0[None, :])[inside], pi[inside])
    return TaggedMoves(comp[rows], comp[cols], rate, kind, k_all[valid], full[valid], float(pi[~inside].sum()))


def tagged_chain(lam, mu, R, M, D, Dt, pi, sys_ph: SystemPhases) -> TaggedChain:
    from scipy import sparse

    mv = tagged_moves(lam, mu, R, M, D, Dt, pi, sys_ph)
    n = mv.size
    off = sparse.coo_matrix((mv.rate, (mv.rows, mv.cols)), shape=(n, n)).tocsr()
    out = np.asarray(off.sum(axis=1)).ravel() + mu / mv.k  # + the tagged customer's own completion μ/k
    q = float(out.max())
    PT = transposed_step_matrix(off, out, q)
    return TaggedChain(PT, q, mv.p0, mv.lost, n, int(PT.nnz), 0.0)


def masses(chain: TaggedChain, t_max: float, poisson_eps=1e-13, stop=1e-15):
    """(g, steps, K): g_j = p0·P^j·1, the uniformised chain's remaining mass after j steps, for j < K = the
    Poisson cut of q·t_max at ``poisson_eps``; the steps stop once g_j < ``stop`` (g only decreases, so no value
    of the Poisson mix moves by more than ``stop``)."""
    K = poisson_cutoff(chain.q * float(t_max), poisson_eps)
    g, used = uniformized_masses(chain.PT, chain.p0, K, stop)
    return g, used, K


def held_tail(q: float, t: np.ndarray, g: np.ndarray, used: int) -> np.ndarray:
    """What the steps not taken (``used`` of ``g``'s terms computed, the rest left 0) can add to the Poisson mix of
    ``g`` at most: g_{used−1}·P(Pois(q·t) ≥ used), as g never increases (0 if every term was computed)."""
    from scipy import special

    t = np.asarray(t, dtype=float)
    if used >= g.shape[0] or used < 1:
        return np.zeros(t.shape)
    return float(g[used - 1]) * special.pdtrc(used - 1, q * t)


def survival(chain: TaggedChain, t: np.ndarray, poisson_eps=1e-13, stop=1e-15):
    """P(T > t) on the grid by uniformisation: P(T > t) = Σ_j Pois(j; qt)·g_j (:func:`masses`).
    Returns (sf, steps used, K)."""
    g, used, K = masses(chain, float(np.max(t)) if t.size else 0.0, poisson_eps, stop)
    return poisson_mix(chain.q, t, g), used, K


# ---------------------------------------------------------------------------------------------------------------
# the method: two spread caps, the conservative combination, the budget

#: CPU seconds per (uniformised step × stored entry of Pᵀ), per tagged state (system law, construction) and per
#: solve: ``python benchmarks/tail_method.py --calibrate`` fits 0.9e-9 on chains of ≤ 35 000 states and 1.4e-9
#: at 86 000 (cache), 1.4e-6 per state; rounded up
SECONDS_PER_STEP_ENTRY = 1.1e-9
SECONDS_PER_STATE = 2e-6
SECONDS_FIXED = 0.03
#: default CPU seconds of one cell on the paper grid (t ≤ 182.32), all included: the caps D − 1, D are chosen to
#: fit what the pilot (predicted) and the final mix leave of it; a longer grid scales it with t_max/182.32 (the steps
#: do)
DEFAULT_SECONDS = 0.85
#: what the final Poisson mix of both caps on the paper grid and the read-off cost (measured 0.06–0.08 s)
SECONDS_MIX = 0.08
PAPER_T_MAX = 182.32
#: largest spread cap tried
MAX_D = 8
#: largest tagged chain a cap may reach: beyond ~40 000 states a step costs more per entry (cache) than
#: :data:`SECONDS_PER_STEP_ENTRY`, and the cap it buys changes no percentile by more than 0.04 % (at D ≥ 4)
MAX_STATES = 40_000
#: the tagged server may sit this many above the least occupancy more than the other servers
TAGGED_EXTRA = 2
#: stationary mass allowed on the top level of the least occupancy
LEVEL_EPS = 1e-9
#: relative floor added to the survival function (covers the level cap, the tagged-offset cap, round-off)
FLOOR = 0.01
#: the two final chains (caps D − 1, D) stop stepping once their remaining mass is below this, and the Poisson sum's
#: rest is bounded by holding that last mass (the mass never grows; :func:`held_tail`): each survival stays above its
#: chain's own, at most FINAL_STOP above it (issue 36: the steps from 1e-10 down to the 1e-15 of before were a third
#: of T's CPU at low and middle load, for values below exact's own certified error; the pilot keeps 1e-15, so the
#: budget's step count and the chosen caps are unchanged)
FINAL_STOP = 1e-8


def tagged_phase_count(R: int, D: int, Dt: int) -> int:
    """:class:`TaggedPhases` (R, D, Dt).size without building it (building it to count it took 13 GB at R = 200,
    D = 3): the others' sorted offsets in 0..D, C(D+R−1, R−1), for the tagged offset 0, and for each offset
    1..Dt those with a least-loaded other (offset 0), C(D+R−1, R−1) − C(D+R−2, R−1)."""
    R, D, Dt = int(R), int(D), int(Dt)
    if R == 1:  # no other server: the tagged server is the least loaded
        return 1
    no = n_sorted_states(D + 1, R - 1)
    return no + Dt * (no - n_sorted_states(D, R - 1))


def peak_bytes(R: int, D: int = 2) -> float:
    """Predicted peak memory of T with spread cap D (the least, 2, by default): its phase tables hold R − 1
    offsets per tagged phase, copied while the moves are built — about 80 bytes per offset, 1.5e8 bytes of base
    (peak RSS of ``sojourn approximate --method T --load 0.9``: R = 100, 150, 200: 0.31, 0.76, 1.5 GB; predicted
    0.35, 0.81, 1.7 GB). R = 500 would need ~25 GB, R = 3000 ~5 TB: T is for R up to a few hundred."""
    return 1.5e8 + 80.0 * max(int(R) - 1, 1) * tagged_phase_count(R, D, D + TAGGED_EXTRA)


def predicted_seconds(R, D, M, steps, lam, mu):
    """Predicted CPU seconds of one tagged-chain solve with spread cap D on M levels and ``steps`` uniformised
    steps (the pilot's count: every cap's survival decays alike, so they stop at about the same step). ``lam`` and
    ``mu`` set the rates, not how many moves there are (:func:`_phase_entries`)."""
    entries, size = _phase_entries(int(R), int(D))
    return SECONDS_PER_STEP_ENTRY * steps * M * entries + SECONDS_PER_STATE * M * size + SECONDS_FIXED


@functools.lru_cache(maxsize=512)
def _phase_entries(R: int, D: int):
    """(moves + phases, phases) of one level of :class:`TaggedPhases` (R, D, D + TAGGED_EXTRA): a function of R and D
    alone (which moves exist never depends on the rates), so counted once per process — T's cap choice asked for the
    same table up to four times a cell, 3 % of the paper config's approximation CPU (issue 36)."""
    tp = TaggedPhases(R, D, D + TAGGED_EXTRA)
    return int(tp.table(1.0, 1.0).src.size + tp.size), int(tp.size)


@dataclass
class TailResult:
    cdf: np.ndarray
    sf_best: np.ndarray
    sf_previous: np.ndarray | None
    D: int
    M: int
    n_states: int
    lambda_n: np.ndarray
    A_n: np.ndarray
    run_time: float
    info: dict = field(default_factory=dict)


def _levels_for(pg, eps, lo=8):
    """The least cap M ≥ ``lo`` whose top level holds mass < ``eps`` in the level law ``pg`` (len(pg) if none)."""
    small = np.flatnonzero(pg < eps)
    small = small[small >= lo - 1]
    return int(small[0]) + 1 if small.size else int(pg.size)


def tail_sojourn(arrival_rate, service_rate, servers, t, D=None, max_seconds=DEFAULT_SECONDS, eps=LEVEL_EPS,
                 floor=FLOOR) -> TailResult:
    """Method T on one cell (module doc): P(sojourn ≤ t) on the grid ``t``, conservative.

    ``D``: the spread cap (≥ 2; the caps D − 1 and D are solved); default: the largest up to :data:`MAX_D`, with
    at most :data:`MAX_STATES` tagged states, whose two solves are predicted to fit in what the pilot left of
    ``max_seconds`` CPU seconds for the whole
    call (scaled by t_max/182.32 on longer grids; D = 2 however long that takes).
    ``eps``: the least-occupancy level cap's top mass on the paper grid's terms (module doc), ``floor``: the
    relative allowance added to the survival. Returns a :class:`TailResult`: ``cdf`` (T), ``sf_best`` and
    ``sf_previous`` (the chains with caps D and D − 1), λ_n and A_n read off the capped system law, and ``info``
    (caps, sizes, steps, the level cap's ``truncation_reached``)."""
    from sojourn.core.checks.inputs import format_bytes, limits

    t0 = time.process_time()
    lam, mu, R = float(arrival_rate), float(service_rate), int(servers)
    t = np.asarray(t, dtype=float)
    t_max = float(t.max()) if t.size else 0.0
    need, (mem_limit, mem_src, _, _) = peak_bytes(R, 2 if D is None else int(D)), limits()
    if need > mem_limit:  # before anything is allocated (the CLI checks the same with its flags' names)
        raise MemoryError(f"method T at R = {R} needs about {format_bytes(need)} (its phase tables: {R - 1} offsets "
                          f"per tagged phase), above the limit {format_bytes(mem_limit)} ({mem_src})")
    with single_threaded_blas():
        if R == 1:  # no other server: the chain is M/M/1-PS itself, exact up to the level cap
            M, pi, ph = level_cap(lam, mu, R, 0, eps)
            ch = tagged_chain(lam, mu, R, M, 0, 0, pi, ph)
            sf, used, K = survival(ch, t)
            lam_n, A_n = per_server_rates(pi, ph, lam)
            top = float(pi.sum(axis=1)[-1])
            info = {"D": 0, "M": M, "states": ch.size, "steps": used, "poisson_terms": K,
                    "initial_mass_lost": ch.lost, "top_level_mass": top, "truncation_tolerance": eps,
                    "truncation_reached": int(top < eps)}
            sf_c = np.minimum(1.0, sf + 10.0 * eps)  # the level cap's arrivals lost move P(T > t) by ≲ 10·eps
            return TailResult(1.0 - sf_c, sf, None, 0, M, ch.size, lam_n, A_n, time.process_time() - t0, info)
        # pilot: spread cap 1 on levels holding all but ``eps`` — it says how small a survival the grid shows
        M1, pi1, ph1 = level_cap(lam, mu, R, 1, eps)
        pilot = tagged_chain(lam, mu, R, M1, 1, 1 + TAGGED_EXTRA, pi1, ph1)
        g1, used1, K = masses(pilot, t_max)
        shown = max(1e-5, float(poisson_mix(pilot.q, np.array([t_max]), g1)[0]))  # the least survival that matters
        eps_D = min(1e-6, max(eps, 1e-4 * shown))  # level-cap error ≲ 10·eps (measured), ≤ 0.1 % of it
        M = max(8, _levels_for(pi1.sum(axis=1), eps_D / 3))  # a third: the caps' level laws differ a little
        if D is None:  # the largest cap whose two solves fit what the pilot left of the budget
            D = 2
            budget = (max_seconds * max(1.0, t_max / PAPER_T_MAX) - predicted_seconds(R, 1, M1, used1, lam, mu)
                      - SECONDS_MIX * t.size / 18233)  # predicted, not measured: the same D on any machine
            while (D < MAX_D and M * tagged_phase_count(R, D + 1, D + 1 + TAGGED_EXTRA) <= MAX_STATES
                   and (predicted_seconds(R, D + 1, M, used1, lam, mu)
                        + predicted_seconds(R, D, M, used1, lam, mu)) <= budget):
                D += 1
        D = int(D)
        runs = {}
        for d in (D - 1, D):
            if d == 1 and M <= M1:  # the pilot is the cap D − 1 = 1
                runs[d] = (g1, used1, pilot, pi1, ph1)
                continue
            ph, pi = system_law(lam, mu, R, M, d)
            ch = tagged_chain(lam, mu, R, M, d, d + TAGGED_EXTRA, pi, ph)
            g, used, _ = masses(ch, t_max, stop=FINAL_STOP)
            runs[d] = (g, used, ch, pi, ph)
        # one Poisson mix for both caps (their uniformisation rates are equal: Λ + Rμ + ... the same busiest state)
        qs = {runs[d][2].q for d in (D - 1, D)}
        if len(qs) == 1:
            G = np.zeros((max(runs[D - 1][0].size, runs[D][0].size), 2))
            G[: runs[D - 1][0].size, 0] = runs[D - 1][0]
            G[: runs[D][0].size, 1] = runs[D][0]
            q = qs.pop()
            both = poisson_mix(q, t, G)
            prev, best = both[:, 0], both[:, 1]
        else:  # pragma: no cover - a cap whose busiest state differs
            prev = poisson_mix(runs[D - 1][2].q, t, runs[D - 1][0])
            best = poisson_mix(runs[D][2].q, t, runs[D][0])
        # the steps the early stop left out, bounded (FINAL_STOP): each survival stays an upper bound of its chain's
        prev = prev + held_tail(runs[D - 1][2].q, t, runs[D - 1][0], runs[D - 1][1])
        best = best + held_tail(runs[D][2].q, t, runs[D][0], runs[D][1])
        _, used, ch, pi, ph = runs[D]
        lam_n, A_n = per_server_rates(pi, ph, lam)
        sf_c = np.minimum(1.0, best + np.abs(best - prev) + floor * best)
        top = float(pi.sum(axis=1)[-1])
        info = {"D": D, "M": M, "states": ch.size, "states_previous": runs[D - 1][2].size, "steps": used,
                "poisson_terms": K, "initial_mass_lost": ch.lost, "top_level_mass": top,
                # the level cap is T's one promised truncation (the spread cap's error is in the margin)
                "truncation_tolerance": eps_D, "truncation_reached": int(top < eps_D), "pilot_steps": used1,
                "predicted_seconds": predicted_seconds(R, D, M, used1, lam, mu)
                + predicted_seconds(R, D - 1, M, used1, lam, mu)}
        return TailResult(1.0 - _monotone(sf_c), best, prev, D, M, ch.size, lam_n, A_n, time.process_time() - t0, info)


def _monotone(sf):
    """The least non-increasing function above ``sf`` (running maximum from the right)."""
    return np.maximum.accumulate(sf[::-1])[::-1]


def lower_survival(result: TailResult, floor: float = FLOOR) -> np.ndarray:
    """The other side of T's allowance (module doc, "Two caps"): S_D − |S_D − S_{D−1}| − floor·S_D − FINAL_STOP
    (the held tail), at least 0
    (R = 1: S − 10·eps). Under the same assumptions that make S_T an upper bound of P(T > t), this is a lower
    bound; the percentile form is x_p(true) ≥ x_p(D)·(1 − margin). ``sojourn plan`` reads it at the deadline: a
    "fails" from T is clear only if even 1 − (this) is below the reliability."""
    best = np.asarray(result.sf_best, dtype=float)
    if result.sf_previous is None:  # R = 1: the level cap's allowance only
        return np.maximum(0.0, best - 10.0 * float(result.info.get("truncation_tolerance", LEVEL_EPS)))
    prev = np.asarray(result.sf_previous, dtype=float)
    # the two final chains' survivals hold their last mass (FINAL_STOP): each may lie up to FINAL_STOP above its
    # chain's own, so the lower side gives that much up too (CI at edc1c29: without it T's largest admitted
    # P(T ≤ d) fell 2e-9 and 8e-9 below exact's certified lower bound in test_plan)
    return np.maximum(0.0, best - np.abs(best - prev) - floor * best - FINAL_STOP)


#: the percentile levels whose margin (stated bound) a result carries
MARGIN_LEVELS = (0.99, 0.999, 0.9999, 0.99999)


def margin_at(t, result: TailResult, p: float) -> float:
    """The stated bound at level ``p``: x_p(T)/x_p(D) − 1, x_p the first crossing of p on the grid ``t`` (NaN
    beyond the grid). The true percentile lies in [x_p(D)·(1 − margin), x_p(T)] (module doc)."""
    from sojourn.core.estimates.stats import quantile  # the one percentile rule (F linear between grid points)

    a, b = float(quantile(t, result.cdf, p)), float(quantile(t, 1.0 - result.sf_best, p))
    return (a / b - 1.0) if (math.isfinite(a) and math.isfinite(b) and b > 0) else float("nan")


def margins(t, result: TailResult, levels=MARGIN_LEVELS) -> dict:
    """The stated bound per percentile level (:func:`margin_at`), keyed ``margin_<percent>``."""
    return {f"margin_{100 * p:g}": margin_at(t, result, p) for p in levels}


def api_result(spec, hyper, t) -> dict:
    """Method T for :mod:`sojourn.jsq_ps.solve.api` (its per-method dict)."""
    w0 = time.perf_counter()
    res = tail_sojourn(spec.arrival_rate, spec.service_rate, spec.R, t, D=hyper.get("tail_D"),
                       max_seconds=hyper.get("tail_seconds", DEFAULT_SECONDS))
    info = {k: v for k, v in res.info.items()}
    info.update(margins(t, res))
    info["cpu_seconds"] = res.run_time
    info["truncated_mass"] = float(info.get("top_level_mass", 0.0) + info.get("initial_mass_lost", 0.0))
    # L1 = the level cap M (least occupancy), L2 = the largest occupancy a server can hold
    return dict(cdf=res.cdf, lambda_n=res.lambda_n, A_n=res.A_n, run_time=time.perf_counter() - w0, L1=res.M,
                L2=res.M + res.D + TAGGED_EXTRA, faithful=False, info=info)
