"""The exact method's tagged-customer chain stepped level by level (a numba kernel, no stored matrix).

The chain is the exact method's (:mod:`sojourn.jsq_ps.solve.exact`, module doc; until 5291e32 it was built
state by state and stepped as a CSR matrix): the tagged server's occupancy k (with the tagged customer) and the sorted
occupancies of the other R−1 servers, inside the spread truncation (least
occupancy m ≤ M−1, max − min ≤ D), moves leaving it suppressed. Written relative to the least occupancy m of
all R servers — level m, phase (k − m, the others' offsets) — every state of the truncation is a (level, phase)
pair, the same phases on every level (only k ≥ 1 removes the phases with k = m on level 0), and every move
changes the level by −1, 0 or +1 with a rate that depends on the phase alone, except μ(k−1)/k at the tagged
server and the tagged completion μ/k (k = m + its offset), departures from a least-loaded server (only at
m ≥ 1) and arrivals lifting the level (only below M−1). So one table of phase moves (a few per phase) serves
every level (the phases and moves are method T's, :class:`sojourn.jsq_ps.solve.tail.TaggedPhases`, without
its redirected boundary moves: here a move leaving the truncation takes its mass out of the chain — the
diagonal is the untruncated chain's — and the mass absorbed is summed alongside, which gives the exact
method's certified bounds, :mod:`sojourn.jsq_ps.solve.exact`).

The uniformised step v ← v·P (P = I + Q/q) is computed into an array v[phase, level] pulling, for each phase,
its incoming moves as whole rows over the levels: a contiguous, vectorisable update per move instead of one
indexed gather per transition, and nothing stored per state (the diagonal is rebuilt from per-phase rates and
small (offset, level) tables). Against the CSR product of the same chain, side by side
(``benchmarks/exact_speed.py``): the whole ``exact`` call 2.4–2.7× fewer CPU seconds at R = 4–6, ρ = 0.8–0.95,
the chain's construction 11.6 s → 0.2 s at R = 6, ρ = 0.95 (2.8 million tagged states). Same chain, same q,
same steps: the remaining masses g_j = p0·P^j·1 agree with the CSR route to rounding (≤ 6e-13 after 2 487
steps at R = 6, ρ = 0.95; the CDFs within 7.3e-14 on the benchmark's cells).

Each step runs :data:`CHUNKS` contiguous phase ranges of about equal work on numba's threads (a phase's row of y is
written by its chunk alone, x only read), their masses summed in chunk order: the same bits on one thread or two
(tests/jsq_ps/test_exact_level_solve.py), the same CPU seconds (R = 5, ρ = 0.9, 500 steps: 0.92 s on two threads,
0.90 on one), and on two free cores about half the wall time of the steps, which are most of ``exact`` at
R ≥ 5, ρ ≥ 0.9 (2 053–2 487 steps of 0.14–0.77 million kept states: 78 % of its CPU at R = 6, ρ = 0.95, about 1 ns
per kept transition since issue 36 vectorised the kernel, ``benchmarks/exact_reach.py``).
"""
from __future__ import annotations

import numpy as np

from .tail import TAGGED_OTHER, TaggedPhases


class LevelTaggedChain:
    """The exact tagged chain on (phase, level) arrays: construction, the initial law and the uniformised masses."""

    def __init__(self, lam, mu, R, M, D, reorder=True):
        from scipy import sparse
        from scipy.sparse.csgraph import reverse_cuthill_mckee

        self.lam, self.mu, self.R, self.M, self.D = float(lam), float(mu), int(R), int(M), int(D)
        tp = TaggedPhases(self.R, self.D, self.D)
        self.phases = tp
        table = tp.table(self.lam, self.mu)
        keep = ~table.redirected  # the exact truncation drops the moves that would leave it
        src, dst, dgl = table.src[keep], table.dst[keep], table.dg[keep].astype(np.int64)
        rate, kind = table.rate[keep].astype(float), table.kind[keep]
        P, M_ = tp.size, self.M
        # phases in reverse Cuthill–McKee order (1969): a phase's sources sit close in memory
        if reorder and P > 1:
            A = sparse.csr_matrix((np.ones(src.size), (dst, src)), shape=(P, P))
            perm = reverse_cuthill_mckee(A, symmetric_mode=False)
        else:
            perm = np.arange(P)
        inv = np.empty(P, np.int64)
        inv[perm] = np.arange(P)
        self.inv = inv  # new position of each of TaggedPhases' phases
        src, dst = inv[src], inv[dst]
        ot = tp.ot[perm].astype(np.int64)
        self.ot = ot
        self.size_phases = P
        k = np.arange(M_)[None, :] + ot[:, None]  # (P, M): the tagged server's occupancy
        self.valid = k >= 1
        safe_k = np.where(self.valid, k, 1)
        w = np.where(self.valid, (safe_k - 1) / safe_k, 0.0)  # (k−1)/k
        tag = kind == TAGGED_OTHER
        lev = np.arange(M_)
        # q = Λ + Rμ: the exit rate of every state with all servers busy (level ≥ 1), whatever the truncation, and
        # the largest of any state (the untruncated chain's rates: λ + μ per busy server)
        self.q = q = self.lam + self.R * self.mu
        kk = np.arange(self.D + 1)[:, None] + lev[None, :]
        exitq = np.where(kk >= 1, self.mu / np.maximum(kk, 1) / q, 0.0)
        # The diagonal is the untruncated chain's, 1 − (its exit rate)/q, so a move that would leave the truncation
        # takes its mass out of the chain ("lost") instead of being suppressed: at level ≥ 1 the exit rate is
        # Λ + μ(R−1) + μ(k−1)/k + μ/k = q (diagonal 0); at level 0 the least-loaded others are idle (their μ added
        # back, dfirst); no move is suppressed at the top level (dlast 0).
        idle0 = (tp.O[perm] == 0).sum(axis=1) if self.R > 1 else np.zeros(P, np.int64)
        self._diag_parts = (np.full(P, 1.0 - (self.lam + self.mu * (self.R - 1)) / q), np.full(P, self.mu / q),
                            self.mu * idle0 / q, np.ascontiguousarray(exitq).ravel(), ot)
        # the kernel's diagonal by (tagged offset, level): dconst − dtag·(k−1)/k − μ/(qk), the same for every phase with
        # that offset (dconst, dtag do not depend on the phase), so it is read from a small table, not per state
        wt = np.where(kk >= 1, (kk - 1) / np.maximum(kk, 1), 0.0)
        self._dtab = np.ascontiguousarray((self._diag_parts[0][0] - self._diag_parts[1][0] * wt) - exitq).ravel()
        order = np.lexsort((src, dst))  # incoming moves grouped by target phase
        self.ptr = np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=P))]).astype(np.int64)
        self.src = src[order].astype(np.int64)
        self.dg = dgl[order].astype(np.int64)
        self.tagged = tag[order].astype(np.bool_)
        self.rate = rate[order] / q
        self.wrow = np.ascontiguousarray(w).ravel()
        self.n_moves = int(keep.sum())
        self.target = np.repeat(np.arange(P), np.diff(self.ptr))  # each incoming move's target phase
        self.set_level_caps(None)

    def set_level_caps(self, caps):
        """Keep phase p on its levels 0..caps[p]−1 only (None: every level, the box M × phases): a move into a
        dropped state leaves the chain, and the certified bounds account for it (:mod:`.exact`). Sets ``size``
        (states kept) and ``transitions`` (the moves between kept states, on every level)."""
        M, P = self.M, self.size_phases
        self.mcap = np.full(P, M, np.int64) if caps is None else np.clip(np.asarray(caps, np.int64), 0, M)
        self.size = int((self.valid & (np.arange(M)[None, :] < self.mcap[:, None])).sum())
        # per move: target levels [lo, hi) where the target and its source (level m − dg) are kept
        Mp, Ms, d = self.mcap[self.target], self.mcap[self.src], self.dg
        lo = np.where(d == 1, 1, 0)
        hi = np.minimum(Mp, Ms + d)
        n = np.maximum(hi - lo, 0)
        # the kernel's moves: those with a level to act on, each as (offset of its source row − shift, [lo, hi))
        live = n > 0
        # the kept states stored compactly, phase by phase (levels 0..cap−1 from start[p])
        self._kept = np.arange(M)[None, :] < self.mcap[:, None]
        self.start = np.concatenate([[0], np.cumsum(self.mcap)[:-1]]).astype(np.int64)
        self._wrow_kept = np.ascontiguousarray(self.wrow.reshape(P, M)[self._kept])
        self._kernel_moves = (np.concatenate([[0], np.cumsum(np.bincount(self.target[live], minlength=P))]).astype(
            np.int64), (self.start[self.src] - d)[live].astype(np.int64), lo[live].astype(np.int64),
            hi[live].astype(np.int64), self.tagged[live], self.rate[live])
        # the kernel's phase chunks (one step runs them on parallel threads): CHUNKS contiguous ranges of about equal
        # work, the kept states plus the levels of the moves into them
        work = np.cumsum(self.mcap + np.bincount(self.target, weights=n, minlength=P))
        cuts = np.searchsorted(work, work[-1] * np.arange(1, CHUNKS) / CHUNKS) if P and work[-1] > 0 else []
        self.chunks = np.unique(np.concatenate([[0], cuts, [P]])).astype(np.int64)
        ot = self.ot
        # level-0 states with the tagged server empty (offset 0) are no states: as a source (m = dg) or a target
        src_bad = (ot[self.src] == 0) & (d >= 0) & (lo <= d) & (d < hi)
        tgt_bad = (ot[self.target] == 0) & (lo == 0) & (hi > 0) & ~(src_bad & (d == 0))
        self.transitions = int((n - src_bad - tgt_bad).clip(0).sum())

    def occupation(self, pi_levels: np.ndarray) -> np.ndarray:
        """The tagged chain's occupation measure from the system law π (shape (M, system phases),
        :class:`~.exact.SpreadStates` order), as a (M, phases) array: the expected time a customer spends in each
        tagged state over its sojourn, by Little's law (H = λG; Stidham 1974 / Heyman & Stidham 1980) on the
        customers present in that state: π(x)·k·c_k(x)/Λ, where x is the system state (the tagged offset among the
        others'), k the tagged server's occupancy and c_k(x) the servers holding k (each of their k customers sees
        this tagged state). It sums to E[T] (R = 6, ρ = 0.95: 4.20)."""
        from .chain import SortedStates

        perm = np.argsort(self.inv)  # position -> TaggedPhases row
        ot, others = self.phases.ot[perm], self.phases.O[perm]
        offs = np.sort(np.concatenate([ot[:, None], others], axis=1), axis=1)
        sys_phase = SortedStates(self.D + 1, self.R - 1).rank(offs[:, 1:]) if self.R > 1 else np.zeros(
            self.size_phases, np.int64)
        c_k = 1 + (others == ot[:, None]).sum(axis=1)
        k = np.arange(self.M)[:, None] + ot[None, :]
        return np.asarray(pi_levels)[:, sys_phase] * k * c_k[None, :] / self.lam

    def caps_from_occupation(self, pi_levels: np.ndarray, budget: float) -> np.ndarray:
        """Level caps that drop tagged states into which the chain moves, in expectation, at most ``budget`` times
        in all: the states of occupation measure n below a threshold τ, the largest whose states below it have
        Σ q·n ≤ ``budget`` (q·n(s) is the expected number of moves into s, counting the start), and phase p kept on
        its levels up to the highest with n ≥ τ. The mass lost to the dropped states — the probability of ever
        entering one, at most the expected entries — is then ≤ ``budget`` for the chain of this π (the result's
        certified bound measures what was actually lost)."""
        n = self.occupation(pi_levels)
        flat = np.sort(n[n * self.q <= budget])  # a state above that does not fit alone (and sorting all is slower)
        below = np.searchsorted(np.cumsum(flat) * self.q, budget, side="right")  # flat[:below] fit the budget
        tau = flat[below] if below < flat.size else (np.inf if flat.size == n.size else n[n * self.q > budget].min())
        keep = n >= tau
        return np.where(keep.any(axis=0), self.M - np.argmax(keep[::-1], axis=0), 0)

    def initial_law(self, pi_levels: np.ndarray):
        """(p0 as a (phases, M) array, mass lost): PASTA + JSQ on the system law π (shape (M, system phases),
        phases in :class:`sojourn.jsq_ps.solve.exact.SpreadStates` order) — the arrival joins a least-loaded server."""
        tp, M = self.phases, self.M
        from .chain import SortedStates

        rest = SortedStates(self.D + 1, self.R - 1)
        F = np.concatenate([np.zeros((rest.size, 1), np.int64), rest.states], axis=1)
        c = (F == 0).sum(axis=1)
        uniq = c == 1
        ot0 = np.where(uniq, 0, 1)
        O0 = np.where(uniq[:, None], F[:, 1:] - 1, F[:, 1:])
        ph0 = self.inv[tp.index(ot0, O0)]
        g0 = np.arange(M)[:, None] + uniq[None, :].astype(np.int64)  # (M, system phases): the level after joining
        inside = g0 <= M - 1
        p0 = np.zeros((tp.size, M))
        np.add.at(p0, (np.broadcast_to(ph0[None, :], g0.shape)[inside], g0[inside]), pi_levels[inside])
        dropped = np.arange(M)[None, :] >= self.mcap[:, None]  # above a phase's level cap: lost at once
        lost = float(pi_levels[~inside].sum() + p0[dropped].sum())
        p0[dropped] = 0.0
        return p0, lost

    def masses(self, p0, K: int, stop: float = 0.0, kernel: bool | None = None):
        """(g, a, steps computed): g_j = p0·P^j·1, the mass still in the chain after j steps, and a_j, the mass
        absorbed (the tagged customer left) in them, j < K; once g_j < ``stop``, later g are 0 and later a kept.
        What is neither, 1 − a_j − g_j, left the truncation (with the initial mass p0 lacks).

        Stepped by the numba kernel, or below :data:`SMALL` (phases × levels) by a scipy.sparse product of the
        same P built from the same tables (:meth:`matrix`): the two agree to rounding (tests/jsq_ps/
        test_solve_exact.py); ``kernel`` forces one."""
        x = np.array(p0, dtype=float).ravel()  # a copy: stepped in place
        if kernel is None:
            kernel = x.size > SMALL
        if not kernel:
            exit_q = self._diag_parts[3].reshape(-1, self.M)[self._diag_parts[4]].ravel()
            return _sparse_masses(self.matrix(), x, exit_q, int(K), float(stop))
        from ._tagged_kernel import _masses

        x = np.ascontiguousarray(x.reshape(self.size_phases, self.M)[self._kept])  # the kept states only
        y = np.zeros_like(x)
        return _masses(x, y, self.M, self.mcap, self.start, self._dtab, *self._diag_parts[2:], *self._kernel_moves,
                       self._wrow_kept, int(K), float(stop), self.chunks)

    def matrix(self):
        """P (as in y = P·x, on the flat (phase, level) index, level fastest) as a CSR matrix: the kernel's step
        written out — each incoming move on every level where its source and target are kept, and the diagonal."""
        from scipy import sparse

        M, P = self.M, self.size_phases
        dconst, dtag, dfirst, exitq, ot = self._diag_parts
        target = self.target
        lev = np.arange(M)[None, :]
        src_lev = lev - self.dg[:, None]  # the source's level for each target level
        ok = (src_lev >= 0) & (src_lev < self.mcap[self.src][:, None]) & (lev < self.mcap[target][:, None])
        rows = (target[:, None] * M + lev)[ok]
        cols = (self.src[:, None] * M + src_lev)[ok]
        vals = np.broadcast_to(self.rate[:, None], ok.shape)[ok]
        tagged = np.broadcast_to(self.tagged[:, None], ok.shape)[ok]
        vals = np.where(tagged, vals * self.wrow[cols], vals)  # ×(k−1)/k of the source state
        exit_rows = exitq.reshape(-1, M)[ot]  # (P, M)
        diag = dconst[:, None] - dtag[:, None] * self.wrow.reshape(P, M) - exit_rows
        diag[:, 0] += dfirst
        diag[lev >= self.mcap[:, None]] = 0.0  # dropped states: nothing enters, nothing stays
        n = P * M
        A = sparse.csr_matrix((vals, (rows, cols)), shape=(n, n))
        return (A + sparse.diags(diag.ravel())).tocsr()


#: the phase chunks of one kernel step, run on numba's threads (fixed, so the sums are the same bits on any number of
#: threads; a multiple of the 2 cores the method's budget counts)
CHUNKS = 4

#: phases × levels up to which :meth:`LevelTaggedChain.masses` steps a scipy.sparse matrix instead of the numba
#: kernel: there a whole solve takes less than importing numba (~0.2 s; `sojourn plan`'s small cells)
SMALL = 20_000


def _sparse_masses(A, x, exit_q, K: int, stop: float):
    """The kernel's ``_masses`` with y = A·x (``exit_q``: each state's tagged completion rate over q):
    (g, a, steps computed)."""
    g = np.zeros(K)
    a = np.zeros(K)
    g[0] = x.sum()
    for j in range(1, K):
        a[j] = a[j - 1] + float(x @ exit_q)
        x = A @ x
        g[j] = s = x.sum()
        if s < stop:
            a[j + 1:] = a[j]
            return g, a, j + 1
    return g, a, K
