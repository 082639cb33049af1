"""Exact sojourn-time CDF of M/M/R-JSQ-PS from a tagged-customer absorbing Markov chain.

System state: the multiset of the R server occupancies (a sorted vector; JSQ with uniform
tie-breaking is symmetric, so the lumped chain is exact). Tagged state: (k, s) with k = customers
at the tagged server including the tagged one and s the sorted occupancies of the other R−1.

Tagged dynamics (k, s), m = min(k, min s), c = #servers holding m:
* arrival (rate Λ) joins a least-loaded server uniformly: k → k+1 at Λ·[k=m]/c; one of the
  others holding m goes up at Λ·#{s_i = m}/c;
* the tagged customer completes at μ/k (absorption); another customer at its server at μ(k−1)/k;
* each busy other server completes at μ.
Initial law (PASTA + JSQ): a Poisson arrival sees the stationary state, joins a least-loaded
server: k = min+1, s = the state with one minimum removed.

Truncation: occupancy vectors are restricted to min ≤ M−1 and max − min ≤ D (JSQ keeps the
spread small, so this needs far fewer states than a per-server cap at high load); transitions
leaving the set are suppressed. M and D are raised until the stationary mass on each boundary is
< ``eps`` (the tolerance: 1e-10), within the state cap ``state_budget`` (system states × R, about the
tagged chain's size; the API's ``max_states``). The reported ``truncated_mass`` is both boundary masses
plus the arrivals' initial mass lost at the min cap (which lies on it), so < 3·eps when reached. Where the
cap stops M and D first, the result says so (``reached`` False, ``info['truncation_reached']`` = 0, the
masses reached in ``info``) and the API flags it ``truncation_not_reached``
(:mod:`sojourn.jsq_ps.solve.guards`): it is then not exact. The system chains of ≥ :data:`LEVEL_SOLVE_MIN` states
are solved by aggregation–disaggregation over the total customers (:mod:`sojourn.jsq_ps.solve.level_solve`; the
sparse LU before issue 36, still below it): the same law to ≤ 4e-16, no factor — at R = 6, ρ = 0.95 the peak
memory fell from 1.61 GB to 0.52 GB and the truncation's CPU by about 7 s (``benchmarks/exact_reach.py``).
P(T > t) on the whole grid by uniformisation, with the Poisson sum cut from its error bound at t_max; the tagged
chain is stepped as levels (least occupancy) × phases with one table of phase moves for every level
(:mod:`sojourn.jsq_ps.solve.tagged_levels`), no per-state matrix, each step's phase chunks on numba's threads.

Certified bound (a truncation both ways, from one run). In the tagged chain a move that would leave the
truncation is not suppressed: its mass leaves the chain ("lost"), so the chain keeps the untruncated chain's
exit rate in every state. The truncated and the untruncated tagged chains, started from the same law, move
together until the first move out of the truncation; so with A(t) the mass absorbed (the tagged customer left)
and L(t) the mass lost by t, the untruncated CDF F satisfies A(t) ≤ F(t) ≤ A(t) + L(t) = 1 − (mass still in
the chain). ``exact`` reports the midpoint, ``cdf_lower`` / ``cdf_upper`` and ``info['cdf_error_bound']``
= max_t L(t)/2 plus the Poisson cut (1e-13) and the early stop (``STEP_STOP``): a bound on the tagged chain's
truncation error, computed, not inferred from the stationary boundary masses. It is 6e-11 to 8.3e-10 on the
cells measured (R = 1–6, ρ = 0.5–0.99, the paper grid; R = 6, ρ = 0.95: 8.4e-10 with the pruning below), 2–5× the
reported ``truncated_mass``, so the truncation moves no percentile on a 0.01 grid. What it does not cover: the
initial law π comes from the truncated system chain (boundary masses < eps, as above), whose distance from
the untruncated π is not bounded here. Until this change the moves were suppressed (the chain's mass kept,
no bound); the two CDFs differ by ≤ the bound (4.3e-10 at R = 6, ρ = 0.95, t = 182.3), and the cost is the
same (one more product per state and step; R = 5, ρ = 0.9: 4.7 s against 4.4–5.3 s).

Pruning (bounded a priori, and by the above). Inside the box most tagged states are never worth a step. The
tagged chain's occupation measure n(s) — the expected time a customer spends in tagged state s — is read off the
system law by Little's law, n = π(x)·k·c_k(x)/Λ (:meth:`~.tagged_levels.LevelTaggedChain.occupation`), and q·n(s) is
the expected number of moves into s. The states of smallest n are dropped while those expected entries sum to at
most ``prune``·eps (:data:`PRUNE` = 20, so 2e-9), which gives each phase its own level cap (the kernel steps levels
0..cap−1 of each phase; :meth:`~.tagged_levels.LevelTaggedChain.caps_from_occupation`). A move into a dropped state
leaves the chain like a move out of the box, so the certified bound covers it, and a priori it rises by at most
half the budget (1e-9): R = 2–4, ρ = 0.9–0.95 measured 0.1–2.5e-10 above the box's, the CDFs within 2.2e-10 of the
box's (tests/jsq_ps/test_solve_exact.py). Until issue 36 the criterion was the stationary mass of the system state
(kept ≥ 1e-16), with no a-priori meaning; at R = 6, ρ = 0.95 it kept 888 000 states for a bound of 6.6e-10, the
occupation measure with this budget keeps 773 000 for 8.4e-10, the CDFs within 1.8e-10 of the old route's (R = 5,
ρ = 0.9: 136 000 against 183 000 states, 4.9e-10 against 2.3e-10, within 2.6e-10; ``benchmarks/exact_reach.py``).
Why the weight k·c_k matters: the tagged customer sees the system through its own, long sojourns, so its chain dwells in
states of many customers, which the stationary law alone underweights. ``prune=0`` steps the whole box.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ._blas import single_threaded_blas
from .chain import ChainResult, SortedStates, n_sorted_states, stationary, value_counts
from .tagged_levels import LevelTaggedChain
from .uniformization import poisson_cutoff, poisson_mix

#: the uniformised steps stop once the chain's remaining mass is below this (it never grows), which moves no
#: CDF value by more (sojourn.jsq_ps.solve.tagged_levels.LevelTaggedChain.masses)
STEP_STOP = 1e-12


def spread_size(M: int, D: int, R: int) -> int:
    """Number of states of :class:`SpreadStates` (M, D, R) without building them: M·C(D+R−1, R−1)."""
    return int(M) * (n_sorted_states(int(D) + 1, int(R) - 1) if R > 1 else 1)


class SpreadStates:
    """Sorted R-vectors with min ≤ M−1 and max − min ≤ D, index = min·P + rank(offsets[1:])."""

    def __init__(self, M: int, D: int, R: int):
        self.M, self.D, self.R = int(M), int(D), int(R)
        self.off = SortedStates(self.D + 1, max(self.R - 1, 0))
        self.P = self.off.size
        base = np.concatenate([np.zeros((self.P, 1), dtype=np.int64), self.off.states], axis=1)[:, : self.R]
        self.size = self.M * self.P
        self.states = (np.repeat(np.arange(self.M), self.P)[:, None] + np.tile(base, (self.M, 1))).astype(np.int64)

    def admissible(self, X: np.ndarray) -> np.ndarray:
        return (X[:, 0] <= self.M - 1) & (X[:, -1] - X[:, 0] <= self.D) & (X[:, 0] >= 0)

    def index(self, X: np.ndarray) -> np.ndarray:
        """Index of admissible sorted rows X."""
        if self.R <= 1:
            return X[:, 0].copy() if self.R == 1 else np.zeros(X.shape[0], dtype=np.int64)
        m = X[:, 0]
        return m * self.P + self.off.rank(X[:, 1:] - m[:, None])


def _system_moves(lam, mu, R, S):
    """The moves of the lumped system chain on the states of ``S``, one (rows, cols, rates) triple per kind (a departure
    from the i-th distinct occupancy, i = 0..R−1, then the arrival), each in increasing row order (§3.2's rates)."""
    X = S.states
    idx = np.arange(S.size)
    cnt = value_counts(X)
    parts = []
    for i in range(R):  # departures: first occurrence of v ≥ 1, rate μ·c_v
        first = X[:, i] >= 1
        if i > 0:
            first &= X[:, i] != X[:, i - 1]
        Y = X[first].copy()
        Y[:, i] -= 1
        ok = S.admissible(Y)
        parts.append((idx[first][ok], S.index(Y[ok]), mu * cnt[first, i][ok]))
    Y = X.copy()  # arrival: the last minimum goes up (re-sorted automatically)
    Y[idx, cnt[:, 0] - 1] += 1
    ok = S.admissible(Y)
    parts.append((idx[ok], S.index(Y[ok]), np.full(ok.sum(), lam)))
    return parts


def system_chain(lam, mu, R, M, D):
    """Generator of the spread-truncated lumped system chain (same rates as §3.2).

    The moves are level-independent above the least occupancy 0 (states m·P + phase: every server busy, so a move's
    phase, level shift and rate do not depend on m ≥ 1), so they are found on three levels and repeated over the rest,
    dropping the arrivals that would lift the top level (issue 36: R = 6, ρ = 0.95, 617 000 states, the same matrix,
    entry for entry, without an index computed per state)."""
    from scipy import sparse  # here, not at import (see chain.py)
    S = SpreadStates(M, D, R)
    n = S.size
    if R <= 1 or M <= 3:
        parts = _system_moves(lam, mu, R, S)
    else:
        P = S.P
        parts = []
        for r, c, v in _system_moves(lam, mu, R, SpreadStates(3, D, R)):
            low, mid = r < P, (r >= P) & (r < 2 * P)  # level 0 as it is; level 1 repeated on levels 1..M−1
            shift = (np.arange(M - 1) * P)[:, None]
            rr, cc = (r[mid][None, :] + shift).ravel(), (c[mid][None, :] + shift).ravel()
            keep = cc < n  # an arrival from the top level lifts it out of the truncation
            parts.append((np.concatenate([r[low], rr[keep]]), np.concatenate([c[low], cc[keep]]),
                          np.concatenate([v[low], np.broadcast_to(v[mid], (M - 1, int(mid.sum()))).ravel()[keep]])))
    rows, cols, vals = (np.concatenate(z) for z in zip(*parts, strict=True))
    Q = sparse.coo_matrix((vals, (rows, cols)), shape=(n, n)).tocsr()
    Q = Q - sparse.diags(np.asarray(Q.sum(axis=1)).ravel())
    return S, Q.tocsr()


def boundary_masses(S: SpreadStates, pi: np.ndarray):
    X = S.states
    at_min = float(pi[X[:, 0] == S.M - 1].sum()) if S.M > 1 else 1.0
    at_spread = float(pi[(X[:, -1] - X[:, 0]) == S.D].sum()) if S.R > 1 else 0.0
    return at_min, at_spread


@dataclass
class ExactResult:
    cdf: np.ndarray
    M: int
    D: int
    n_system_states: int
    n_tagged_states: int
    truncated_mass: float
    run_time: float
    info: dict = field(default_factory=dict)
    lambda_n: np.ndarray | None = None  # λ_n, A_n read off the system law (§3.2, §3.4 rules)
    A_n: np.ndarray | None = None
    tolerance: float = 1e-10  # eps: the boundary mass each cap must get below
    reached: bool = True  # both boundary masses < tolerance (else capped by the state budget: not exact)
    cdf_lower: np.ndarray | None = None  # the certified bounds of the tagged chain's CDF (module doc)
    cdf_upper: np.ndarray | None = None


def _target_cap(history, eps):
    """The cap at which the boundary mass reaches ``eps``, extrapolated on a log scale from the last two
    of ``history`` [(cap, boundary mass), …] (it decays geometrically in the cap), plus one level of
    margin; None without two decreasing masses."""
    if len(history) >= 2:
        (x1, b1), (x2, b2) = history[-2], history[-1]
        if 0 < b2 < b1 and x2 > x1:
            rate = (np.log(b2) - np.log(b1)) / (x2 - x1)
            return int(np.ceil(x2 + (np.log(eps) - np.log(b2)) / rate)) + 1
    return None


def _next_cap(history, current, eps, grow):
    """The next cap to solve after ``history``: the extrapolated target (:func:`_target_cap`, verified by
    the next solve), at most 2·current + 8; otherwise ``grow(current)``."""
    guess = _target_cap(history, eps)
    if guess is None:
        return grow(current)
    return max(current + 1, min(guess, 2 * current + 8))


#: the last system chain solved, (key, result): the cap search's last solve is often the final chain itself
#: (M ≤ 2D + 8: R = 6, ρ = 0.85 solves M = 26, D = 12 twice, 1.3 s each); one entry (key, result, provenance),
#: replaced atomically
_LAST_SOLVE = (None, None, None)

#: the system chains of one (Λ, μ, R) solved in this process, by their provenance (:func:`_provenance`): a cell solves
#: the same chains several times — the corrected methods' spread chain, then exact's budget plan repeating the same
#: cap search (R = 6, ρ = 0.8: 13 solves, 6 distinct; R = 4, ρ = 0.95: 21, 11) — and a chain solved from the same
#: start is the same law to the bit, so it is solved once; one solved from another start (the level solve's, ≤ 4e-16
#: apart) is used too (issue 36: R = 10, ρ = 0.85 solved M = 17, D = 5 twice, 0.18 s). Only π and the masses are
#: kept (the states are rebuilt), at most :data:`SOLVED_MAX_STATES` states in all; a solve of another (Λ, μ, R)
#: empties it.
_SOLVED: dict = {}
SOLVED_MAX_STATES = 2_000_000


def _provenance(key, start_from):
    """What determines a solve's π to the bit: the chain (``key``), the route, and where the level solve (which starts
    from a guess) solves it, the provenance of the law its start was extended from (``start_from``; None: from
    scratch). Sparse LU (chains below :data:`LEVEL_SOLVE_MIN` states) takes no start."""
    by_levels = spread_size(key[3], key[4], key[2]) >= LEVEL_SOLVE_MIN
    return (key, by_levels, start_from if by_levels else None)


def forget_solves():
    """Forget every system chain solved (:data:`_LAST_SOLVE`, :data:`_SOLVED`) and the warm start."""
    global _LAST_SOLVE
    _LAST_SOLVE = (None, None, None)
    _SOLVED.clear()
    _forget_warm()


def _masses(lam, mu, R, M, D):
    """(S, π, boundary mass at the min cap, at the spread cap) of the system chain with caps M, D."""
    global _LAST_SOLVE, _WARM
    key = (float(lam), float(mu), int(R), int(M), int(D))
    last_key, last, last_prov = _LAST_SOLVE
    if last_key == key:
        _WARM = (key, last[1], last_prov)
        return last
    # the last solve of this search (or of the search before the final chain) with a smaller min cap at the same D is a
    # start near this chain's law: the cap searches grow M at a fixed D, and the final chain often follows the spread
    # search's last chain at the same D
    warm_key, warm, warm_prov = _WARM
    smaller = warm_key is not None and warm_key[:3] == key[:3] and warm_key[4] == key[4] and 6 <= warm_key[3] < key[3]
    prov = _provenance(key, warm_prov if smaller else None)
    if _SOLVED and next(iter(_SOLVED))[0][:3] != key[:3]:
        _SOLVED.clear()
    hit = _SOLVED.get(prov)
    if hit is None:  # the same chain solved from another start: the same law to the level solve's tolerance (≤ 4e-16)
        prov, hit = next(((p, v) for p, v in _SOLVED.items() if p[0] == key), (prov, None))
    if hit is not None:
        pi, b_min, b_spread = hit
        out = (SpreadStates(M, D, R), pi, b_min, b_spread)
    else:
        out = _solve_masses(lam, mu, R, M, D, start=_extended(warm, warm_key[3], M) if smaller else None)
        if out[1].size + sum(v[0].size for v in _SOLVED.values()) <= SOLVED_MAX_STATES:
            _SOLVED[prov] = out[1:]
    _LAST_SOLVE = (key, out, prov)
    _WARM = (key, out[1], prov)
    return out


#: the law of the last chain solved since the last cap search began (or an exact call), the start of the next solve
#: where it fits (:func:`_masses`); reset there, so a cell's laws do not depend on what the process solved before.
#: (key, π, provenance)
_WARM = (None, None, None)


def _forget_warm(when: bool = True):
    """Start the next solve from scratch (:data:`_WARM`)."""
    global _WARM
    if when:
        _WARM = (None, None, None)


def _extended(pi, M_from, M_to):
    """The law ``pi`` of the chain with min cap ``M_from`` on the one with ``M_to`` > ``M_from`` (same D): its levels
    below the last three (which its cap distorts) as they are, the rest continued from them by the geometric decay
    of P(min = m) (a start for the level solve: R = 6, ρ = 0.95, M = 34 → 72, D = 13: 31 iterations instead of 71,
    the law the same to 2e-16)."""
    A = np.asarray(pi).reshape(M_from, -1)
    base = M_from - 3
    lo, hi = A[base - 2].sum(), A[base - 1].sum()
    eta = hi / lo if 0 < hi < lo else 0.5
    tail = A[base - 1][None, :] * eta ** np.arange(1, M_to - base + 1)[:, None]
    return np.concatenate([A[:base], tail]).ravel()


#: system chains of at least this many states are solved by aggregation–disaggregation over the total customers
#: (:mod:`sojourn.jsq_ps.solve.level_solve`), smaller ones by sparse LU (faster there, and no numba import):
#: R = 4, ρ = 0.9 (45 000 states) 0.07 s against 0.16 s, R = 6, ρ = 0.95 (617 000) 1.8 s against 6.2 s, no factor
LEVEL_SOLVE_MIN = 30_000


def _solve_masses(lam, mu, R, M, D, start=None):
    from .level_solve import NotConverged, stationary_by_levels

    S, Q = system_chain(lam, mu, R, M, D)
    X = S.states
    pi = None
    if S.size >= LEVEL_SOLVE_MIN:
        try:
            pi, _ = stationary_by_levels(Q, X.sum(axis=1), x0=start)
        except NotConverged:
            pi = None
    if pi is None:
        # level order (total customers: block tridiagonal), ties by spread: 17 % less LU fill and CPU than ties in
        # state order at R = 6, rho = 0.95, M = 34, D = 13 (38.6 M entries against 46.7 M), the same solution
        pi = stationary(Q, levels=X.sum(axis=1) + (X[:, -1] - X[:, 0]) / (S.D + 1.0))
    return S, pi, *boundary_masses(S, pi)


def _search_min_cap(lam, mu, R, eps, D_probe, fits):
    """(M, complete, probe_ok): the min cap of :func:`truncation_caps`, searched on chains with spread cap
    ``D_probe``; ``complete`` False where ``fits`` refused the next cap; ``probe_ok``: the last chain's spread mass is
    below ``eps`` too (that chain is a truncation reached)."""
    M_, hist = 8, []
    while True:
        _, _, b, b_probe = _masses(lam, mu, R, M_, D_probe)
        if b < eps:
            return M_, True, b_probe < eps
        hist.append((M_, b))
        nxt = _next_cap(hist, M_, eps, lambda m: m + max(1, m // 2))
        if not fits(nxt, D_probe):
            return M_, False, False  # even the smallest spread cap would be over the budget
        M_ = nxt


def truncation_caps(lam, mu, R, eps=1e-10, M=None, D=None, state_budget=400_000, max_seconds=None, K=None,
                    why: dict | None = None):
    """(M, D, complete): the caps whose boundary masses are < ``eps``, each from its own search.

    The two masses are close to separable: the min-cap mass depends on M and hardly on D once D ≳ 6
    (a smaller D only raises it), the spread mass on D once M ≳ 2D. So M is searched first on chains
    with a small spread cap (≤ 6, at most 20 000 states at M = 8), then D on chains with min cap
    2D + 8, or M itself where M ≤ 1.25·(2D + 8); each cap is extrapolated from its last two masses
    (:func:`_next_cap`), but never past the M search's spread cap where that search's last chain already holds
    both masses below ``eps`` (that chain is then the truncation).
    ``complete`` is False when the caps need a chain with ``size·R`` (about the tagged chain's size)
    above ``state_budget`` or, with ``max_seconds`` (and ``K`` uniformised steps), a predicted cost
    (:func:`sojourn.jsq_ps.solve.budget.predict_seconds`) above it — checked before each solve, so
    an over-budget cell is given up after small solves; the caps are then the largest within the
    budget. Given ``M`` or ``D`` are kept. ``why`` (a dict) receives what stopped the search first: ``by``
    ("states" or "seconds"), the ``states`` (system states x R) and ``seconds`` predicted of the cap refused."""
    from .budget import predict_seconds

    _forget_warm(M is None or (D is None and R > 1))  # a search: its solves start from its own

    def fits(M_, D_):
        size = spread_size(M_, D_, R)
        if size * R > state_budget:
            if why is not None and "by" not in why:
                why.update(by="states", states=size * R, seconds=predict_seconds(R, size, K) if K else math.nan)
            return False
        if max_seconds is None or predict_seconds(R, size, K) <= max_seconds:
            return True
        if why is not None and "by" not in why:
            why.update(by="seconds", states=size * R, seconds=predict_seconds(R, size, K))
        return False

    complete = True
    if R == 1:
        D_probe = 0
    elif D is not None:
        D_probe = int(D)
    else:
        D_probe = 3
        while D_probe < 6 and spread_size(8, D_probe + 1, R) <= 20_000:
            D_probe += 1
    if M is not None:
        M_, probe_ok = int(M), False
    else:
        M_, complete, probe_ok = _search_min_cap(lam, mu, R, eps, D_probe, fits)
    if R == 1 or D is not None:
        D_ = D_probe
    elif not complete:
        D_ = D_probe
    else:
        D_, hist = 3, []
        while True:
            if probe_ok and D_ >= D_probe:
                # the probe's spread cap is reached, and its chain, solved above, already holds both masses below eps:
                # no larger cap (issue 36: the extrapolation's margin jumped past it, R = 10, ρ = 0.55: D = 6 on 50 050
                # states, solved twice, where D = 5 had 4e-12)
                D_ = D_probe
                break
            # on chains with min cap 2D + 8, or the final M when it is at most a quarter above that: then this
            # solve is the final chain itself (cached; R = 6, ρ = 0.9: M = 38, D = 13 once instead of M = 34 too)
            M_D = max(M_, D_ + 4) if M_ <= 1.25 * (2 * D_ + 8) else 2 * D_ + 8
            b = _masses(lam, mu, R, M_D, D_)[3]
            if b < eps:
                break
            hist.append((D_, b))
            nxt = min(_next_cap(hist, D_, eps, lambda d: d + max(1, d // 3)), D_ + max(2, D_ // 2))
            if not fits(M_, nxt):
                complete = False
                break
            D_ = nxt
    if not complete:
        while M_ > 2 and not fits(M_, D_):
            M_ -= max(1, M_ // 8)
    return M_, D_, complete


def choose_truncation(lam, mu, R, eps=1e-10, M=None, D=None, state_budget=400_000):
    """(S, π, boundary mass at the min cap, at the spread cap) of the system chain truncated at the caps of
    :func:`truncation_caps`, verified: a cap whose mass is still ≥ ``eps`` (the masses are only nearly
    separable) is raised and the chain solved again, within ``state_budget``. Where the budget stops it, a
    mass stays ≥ ``eps``: the caller must check (:func:`truncation_reached`)."""
    M_, D_, _ = truncation_caps(lam, mu, R, eps, M, D, state_budget)
    while True:
        S, pi, b_min, b_spread = _masses(lam, mu, R, M_, D_)
        grow_M = M is None and b_min >= eps
        grow_D = D is None and R > 1 and b_spread >= eps
        M2 = M_ + max(1, M_ // 8) if grow_M else M_
        D2 = D_ + 1 if grow_D else D_
        if not (grow_M or grow_D) or spread_size(M2, D2, R) * R > state_budget:
            return S, pi, b_min, b_spread
        M_, D_ = M2, D2


def truncation_reached(b_min: float, b_spread: float, eps: float) -> bool:
    """The truncation's promise (module doc): the stationary mass on each boundary < ``eps``."""
    return bool(b_min < eps and b_spread < eps)


def per_server_rates(S, pi, arrival_rate, size=None):
    """(λ_n, A_n, P(a_1 = n)) of a lumped system law π on sorted states ``S`` (§3.2, §3.4 read-off rules):
    A_n = P(min = n), λ_n = Λ·P(min = n)/E[#servers holding n] (0 where either is 0)."""
    X = S.states
    top = int(X.max()) + 1 if size is None else int(size)
    A = np.bincount(X[:, 0], weights=pi, minlength=top)
    cnt = sum(np.bincount(X[:, j], weights=pi, minlength=top) for j in range(X.shape[1]))
    lam = np.where((A > 0) & (cnt > 0), float(arrival_rate) * A / np.where(cnt > 0, cnt, 1), 0.0)
    return lam, A, cnt / X.shape[1]


def spread_chain(arrival_rate, service_rate, servers, eps=1e-10, state_budget=60_000) -> ChainResult:
    """The §3.2 whole-system chain on the spread truncation (min ≤ M−1, max − min ≤ D), with M and D
    raised until both boundary masses are < ``eps`` or the chain would exceed ``state_budget`` states (then
    a mass stays ≥ ``eps``: check with :func:`boundary_masses` and :func:`truncation_reached`).

    The same chain as :func:`sojourn.jsq_ps.solve.chain.solve_chain` with a different cut: JSQ keeps
    the servers within a few customers of each other, so at high load this holds the mass of a per-server
    cap of thousands (R = 3, ρ = 0.97: boundary mass 1e-9 with 35 000 states, against 2e-3 with a
    per-server cap at 20 000). ``L1`` of the result is M + D (occupancies 0..M+D−1); A_n = 0 for n ≥ M.
    """
    lam, mu, R = float(arrival_rate), float(service_rate), int(servers)
    S, pi, b_min, b_spread = choose_truncation(lam, mu, R, eps, state_budget=int(state_budget) * R)
    L = S.M + S.D
    rates, A, occ = per_server_rates(S, pi, lam, size=L)
    return ChainResult(L, rates, A, occ, b_min + b_spread, S.size, S, pi)


def exact_plan(arrival_rate, service_rate, servers, t_max, eps=1e-10, state_budget=400_000, max_seconds=None,
               M=None, D=None, poisson_eps=1e-13) -> dict:
    """Whether ``exact`` fits its budget on this cell, decided from small solves only
    (:mod:`sojourn.jsq_ps.solve.budget`): the caps M, D, the system states S, the uniformised steps
    K, the predicted CPU seconds, ``fits`` and, if not, the ``reason``."""
    from .budget import predict_seconds

    lam, mu, R = float(arrival_rate), float(service_rate), int(servers)
    K = poisson_cutoff((lam + R * mu) * float(t_max), poisson_eps)  # q = Λ + Rμ: every server busy
    why: dict = {}
    with single_threaded_blas():
        M_, D_, complete = truncation_caps(lam, mu, R, eps, M, D, state_budget, max_seconds, K, why)
    size = spread_size(M_, D_, R)
    pred = predict_seconds(R, size, K)
    plan = {"M": M_, "D": D_, "system_states": size, "poisson_terms": K, "predicted_seconds": pred,
            "max_seconds": max_seconds, "max_states": state_budget, "fits": True, "reason": "",
            "bound_by": why.get("by", "seconds" if complete else "states"), "refused_states": why.get("states"),
            "refused_seconds": why.get("seconds")}
    if not complete:
        plan.update(fits=False, reason=f"over budget: no truncation within {state_budget} states (system states x R)"
                                       + ("" if max_seconds is None else f" and {max_seconds:g} s predicted")
                                       + f" reaches boundary mass {eps:g}")
    elif max_seconds is not None and pred > max_seconds:
        plan.update(fits=False, reason=f"over budget: predicted {pred:.1f} s > {max_seconds:g} s "
                                       f"({size} system states, {K} steps)", bound_by="seconds",
                    refused_states=size * R, refused_seconds=pred)
    return plan


#: the tagged states dropped take at most PRUNE·eps of the mass, a priori (module doc, "pruning"; the budget of
#: :meth:`~sojourn.jsq_ps.solve.tagged_levels.LevelTaggedChain.caps_from_occupation`)
PRUNE = 20.0
#: a state where the tagged customer starts with at least this mass (× eps) is never dropped (issue 32)
START_KEEP = 1e-6


def exact_sojourn_cdf(arrival_rate, service_rate, servers, t, eps=1e-10, M=None, D=None,
                      state_budget=400_000, poisson_eps=1e-13, max_seconds=None, system=None,
                      prune=PRUNE) -> ExactResult:
    """P(T ≤ t) for M/M/R-JSQ-PS (tagged-customer chain), for every t; see the module docstring.

    ``max_seconds`` (budget mode, :mod:`sojourn.jsq_ps.solve.budget`): raise
    :class:`~sojourn.jsq_ps.solve.budget.ExactOverBudget` before the costly part if the truncation
    cannot reach ``eps`` within ``state_budget`` or the predicted CPU seconds exceed ``max_seconds``
    (without it, a truncation capped by ``state_budget`` is used: the result has ``reached`` False and the
    masses reached in ``info``, and is not exact; raise ``state_budget`` to go on).
    ``system``: a solved spread chain (``ChainResult`` of :func:`spread_chain`) to reuse when its boundary
    mass is below ``eps`` (the corrected chain methods solve the same chain)."""
    from .budget import ExactOverBudget, predict_seconds

    t0 = time.perf_counter()
    _forget_warm()  # this call's solves start from its own
    lam, mu, R = float(arrival_rate), float(service_rate), int(servers)
    t = np.asarray(t, dtype=float)
    t_max = float(t.max()) if t.size else 0.0
    with single_threaded_blas():
        reuse = (system is not None and M is None and D is None and isinstance(system.states, SpreadStates)
                 and system.boundary_mass < eps and system.n_states * R <= state_budget)
        if reuse:
            S, pi = system.states, system.pi
            b_min, b_spread = boundary_masses(S, pi)
            if max_seconds is not None:  # the budget applies whatever solved the system chain
                K = poisson_cutoff((lam + R * mu) * t_max, poisson_eps)
                plan = {"M": S.M, "D": S.D, "system_states": S.size, "poisson_terms": K, "max_seconds": max_seconds,
                        "predicted_seconds": predict_seconds(R, S.size, K), "max_states": int(state_budget),
                        "fits": True, "reason": ""}
                if plan["predicted_seconds"] > max_seconds:
                    plan.update(fits=False, reason=f"over budget: predicted {plan['predicted_seconds']:.1f} s > "
                                                   f"{max_seconds:g} s ({S.size} system states, {K} steps)")
                    raise ExactOverBudget(plan["reason"], plan)
        elif max_seconds is not None:
            plan = exact_plan(lam, mu, R, t_max, eps, state_budget, max_seconds, M, D, poisson_eps)
            if not plan["fits"]:
                raise ExactOverBudget(plan["reason"], plan)
            S, pi, b_min, b_spread = choose_truncation(lam, mu, R, eps, plan["M"], plan["D"], state_budget)
        else:
            S, pi, b_min, b_spread = choose_truncation(lam, mu, R, eps, M, D, state_budget)
        t_truncation = time.perf_counter() - t0
        tc = LevelTaggedChain(lam, mu, R, S.M, S.D)  # P = I + Q/q stepped level by level (tagged_levels.py)
        box = tc.size
        if prune > 0:  # drop states the chain enters at most prune·eps times in all, a priori (module doc, "pruning")
            caps = tc.caps_from_occupation(pi.reshape(S.M, -1), prune * eps)
            # ... but never where the tagged customer starts (issue 32: with the stationary law as the criterion, load
            # 1e-100 dropped every state holding a customer, and gave a CDF of 0.5 everywhere, its bounds [0, 1])
            p0_full, _ = tc.initial_law(pi.reshape(S.M, -1))
            start = p0_full >= START_KEEP * eps
            caps = np.maximum(caps, np.where(start.any(axis=1), S.M - np.argmax(start[:, ::-1], axis=1), 0))
            tc.set_level_caps(caps)
        p0, lost = tc.initial_law(pi.reshape(S.M, -1))
        q = tc.q
        K = poisson_cutoff(q * t_max, poisson_eps)
        g, a, steps = tc.masses(p0, K, stop=STEP_STOP)
        # the true CDF lies in [F_lo, F_hi] (module doc, "certified bound"); both from one run, each as 1 − a mix
        # of masses that fall to 0 (mixing a_j → 1 instead leaves the Poisson weights' round-off, ~1e-12 at
        # q·t ≈ 2000, in F_lo's tail)
        ga = poisson_mix(q, t, np.stack([g, 1.0 - a], axis=1))
        cdf_lo, cdf_hi = 1.0 - ga[:, 1], 1.0 - ga[:, 0]
    cdf = 0.5 * (cdf_lo + cdf_hi)
    # + what the Poisson sum's cut and the early stop leave out of either bound
    bound = 0.5 * (cdf_hi - cdf_lo) + poisson_eps + STEP_STOP
    left = 1.0 - float(a[-1]) - float(g[-1])  # mass that left the truncation (initial loss included) by step K
    lam_n, A_n, _ = per_server_rates(S, pi, lam)
    reached = truncation_reached(b_min, b_spread, eps)
    info = {"boundary_mass_min": b_min, "boundary_mass_spread": b_spread, "initial_mass_lost": lost,
            "uniformization_rate": q, "poisson_terms": K, "steps": int(steps), "transitions": tc.transitions,
            "truncation_time": t_truncation, "shared_system_chain": int(reuse),
            "truncation_tolerance": float(eps), "truncation_reached": int(reached), "max_states": int(state_budget),
            "cdf_error_bound": float(bound.max()) if bound.size else 0.0, "tagged_mass_left": left,
            "tagged_states_kept": tc.size / box if box else 1.0}
    return ExactResult(cdf, S.M, S.D, S.size, tc.size, b_min + b_spread + lost, time.perf_counter() - t0, info,
                       lam_n, A_n, float(eps), reached, cdf_lo, cdf_hi)
