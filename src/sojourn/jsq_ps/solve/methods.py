"""Methods A–F (§3.7) and their corrected variants A*–F* (§8.3), sharing building blocks per cell.

| method | λ_n            | A_n               | w_n(t)                     | sum range |
|--------|----------------|-------------------|----------------------------|-----------|
| A      | chain (§3.2)   | chain (§3.4)      | matrix exponential (§3.6a) | n < L1    |
| B      | chain          | birth–death (§3.5)| matrix exponential         | n < L2    |
| C      | Gupta (§3.3)   | birth–death       | matrix exponential         | n < L2    |
| D      | chain          | chain             | recurrence (§3.6b)         | n < L2    |
| E      | chain          | birth–death       | recurrence                 | n < L2    |
| F      | Gupta          | birth–death       | recurrence                 | n < L2    |

F(t) = 1 − Σ_n A_n w_n(t)   (§3.1, eq. (2)). The chain's λ_0..λ_{L1−1} are extended by holding
λ_n = λ_{L1−1} for n ≥ L1−1 (§3.2). Only A, whose chain A_n is zero from L1 on, stops at L1; every
birth–death A_n (B, C, E, F) is summed over n < L2 whatever the w_n option (§3.7, §8.2). These are the
corrected notes: they reproduce the authors' stored F(t) (tests/jsq_ps/data/authors_cdf_points.csv) to 1e-10.

Corrected variants (``X*``), the §8.3 fixes: the customer who finds n starts with n others
(§3.6a index shift); arrival-weighted A_n ∝ λ_n p_n for the birth–death option; λ_{n+1} and
θ = max λ in the uniformisation, Poisson truncation from the error bound at every t; no sum-range
cut (all n < N, N chosen from the birth–death tail). Their inputs hold up to ρ → 1:

* the chain (A*, B*, D*, E*) is the §3.2 chain on the spread truncation (min ≤ M−1, max − min ≤ D,
  :func:`sojourn.jsq_ps.solve.exact.spread_chain`), M and D raised until the boundary mass is
  < ``chain_eps`` within ``state_budget`` states (an explicit corrected ``L1`` uses the per-server cap
  instead). Its λ_n and A_n are used below the cut (n < M−1, where the truncation does not bend them)
  and continued by the chain's exact tail: λ_n = μρ^R (Gupta (7); the limit every exact profile
  reaches, tests/jsq_ps/test_solve_guards.py), A_{n+1} = A_n·λ_{n+1}/μ (the arrival-weighted birth–death
  law, which the chain's A_n obeys exactly). The earlier per-server cap with a held λ_{L1−1} lost
  2 % of the mass at R = 2, ρ = 0.99 and held a λ bent down by the cut (0.40 for 0.91 at R = 3, ρ = 0.97).
* Gupta's fit (C*, F*) goes through :func:`sojourn.jsq_ps.solve.gupta.admissible_gupta_lambdas`:
  the λ_0 fit has a pole at ρ ≈ 0.9654, beyond which the clamped rates collapsed the method to
  Exp(μ) (λ_1 = 0, A_0 = 1); λ_0 is moved into the interval where Λ ≥ λ_0 ≥ λ_1 ≥ λ_2 with Gupta (9)
  intact. At R = 1 the exact λ_n = Λ (the fit is not exact there, §3.3).

With these fixes the two w_n options describe the same Markov chain, so A* ≡ D*, B* ≡ E*,
C* ≡ F* up to numerical error (computed by independent routes: expm stepping vs uniformisation).

Truncations and their tolerances (:meth:`Cell.truncation`; a result that misses one says so,
``info['truncation_reached']`` = 0, and the API flags it ``truncation_not_reached``,
:mod:`sojourn.jsq_ps.solve.guards`): the corrected chain's boundary masses < ``chain_eps`` each
(within ``state_budget``), and the arrival law's mass beyond the tail cut N < :data:`TAIL_EPS` (N ≤ 6000,
or the given ``L2``). The faithful A–F promise none (their L1, L2 are the published method); their
``truncation_mass`` (the chain's boundary mass at L1, the birth–death law's mass beyond L2) is reported only.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..naming import CORRECTED_METHODS, DEFAULT_L2, FAITHFUL_METHODS, table4_L1
from ._blas import single_threaded_blas
from .chain import ChainResult, extend_lambdas, n_sorted_states, solve_chain
from .conditional_survival import expm_tails, recurrence_survival_faithful, uniformized_survival
from .exact import SpreadStates, boundary_masses, spread_chain, truncation_reached
from .gupta import admissible_gupta_lambdas, gupta_lambdas
from .occupancy import birth_death_occupancy

_SPEC = {  # method -> (λ source, A source, w option, sum range)
    "A": ("chain", "chain", "expm", "L1"),
    "B": ("chain", "bd", "expm", "L2"),
    "C": ("gupta", "bd", "expm", "L2"),
    "D": ("chain", "chain", "rec", "L2"),
    "E": ("chain", "bd", "rec", "L2"),
    "F": ("gupta", "bd", "rec", "L2"),
}
#: corrected expm route: dense stepping up to this many states, uniformisation beyond. Measured (issue 36, paper grid,
#: CPU-s of the w_n sums, expm against uniformisation): N = 130 0.011-0.043 against 0.016-0.029 (even), N = 170
#: 0.045/0.033, 236 0.072/0.022, 296 0.122/0.029, 400 0.240/0.026; the two routes' CDFs within 4e-15 (300 before)
EXPM_DENSE_MAX = 150
#: the corrected methods' tail tolerance: the arrival law's mass beyond their cut N (:func:`corrected_size`)
TAIL_EPS = 1e-12


def _largest_L_within(servers, state_budget, lo):
    L = lo
    while n_sorted_states(L + 1, servers) <= state_budget:
        L += 1
    return L


def corrected_size(
    lambdas_tail: float, service_rate: float, L1: int, tail_eps=TAIL_EPS, minimum=DEFAULT_L2, maximum=6000
):
    """N for the corrected tagged chain: birth–death tail (λ_∞/μ)^m < tail_eps beyond L1, at most
    ``maximum`` (then the tail may stay above ``tail_eps``: :func:`tail_mass` says)."""
    r = lambdas_tail / service_rate
    if r <= 0:
        m = 1
    elif r >= 1:
        return maximum
    else:
        m = int(math.ceil(math.log(tail_eps) / math.log(r)))
    return int(min(maximum, max(minimum, L1 + m + 1)))


def tail_mass(A: np.ndarray, next_rate: float, service_rate: float) -> float:
    """Mass beyond n < N of a birth–death law whose normalised head ``A`` (A_0..A_{N−1}) continues with the
    ratios A_n/A_{n−1} = λ/μ (§3.5; arrival-weighted §8.3: λ = λ_n), ``next_rate`` the λ of the first step
    beyond and no later one larger (every rate profile here is non-increasing: the chain's, Gupta's, held
    tails): an upper bound, T/(1 + T) with T = A_{N−1}·q/(1 − q), q = next_rate/μ (a geometric tail);
    1 if q ≥ 1 (no bound), NaN if the profile is not a law (a failed fit)."""
    q = float(next_rate) / float(service_rate)
    if not (np.isfinite(q) and 0 <= q < 1) or not np.all(np.isfinite(A)):
        return 1.0 if np.isfinite(q) and q >= 1 else float("nan")
    T = max(float(A[-1]), 0.0) * q / (1.0 - q)  # Σ_{n≥N} A_{N−1} q^{n−N+1}
    return T / (1.0 + T)


@dataclass
class MethodResult:
    method: str
    cdf: np.ndarray
    lambda_n: np.ndarray
    A_n: np.ndarray
    L1: int
    L2: int
    faithful: bool
    run_time: float
    info: dict = field(default_factory=dict)


class Cell:
    """One (Λ, μ, R) cell: lazily computed, shared building blocks for any set of methods."""

    def __init__(self, arrival_rate, service_rate, servers, t, L1=None, L2=None, corrected_L1=None,
                 corrected_L2=None, chain_eps=1e-10, state_budget=60_000, clamp_gupta=False):
        self.lam = float(arrival_rate)
        self.mu = float(service_rate)
        self.R = int(servers)
        self.rho = self.lam / (self.R * self.mu)
        self.t = np.asarray(t, dtype=float)
        self.L1 = int(L1) if L1 is not None else table4_L1(self.R)
        self.L2 = int(L2) if L2 is not None else DEFAULT_L2
        self.cL1 = corrected_L1
        self.cL2 = corrected_L2
        self.chain_eps = chain_eps
        self.state_budget = state_budget
        self.clamp_gupta = clamp_gupta
        self._cache = {}
        self._spent = 0.0

    def _get(self, key, fn):
        if key not in self._cache:
            self._cache[key] = fn()
        return self._cache[key]

    # -- faithful building blocks ---------------------------------------------------------
    def chain(self) -> ChainResult:
        return self._get("chain", lambda: solve_chain(self.lam, self.mu, self.R, self.L1))

    def lambdas(self, source):
        if source == "chain":
            return self._get("lam_chain", lambda: extend_lambdas(self.chain().lambda_n, self.L2))  # §3.2 hold
        return self._get("lam_gupta", lambda: gupta_lambdas(self.rho, self.mu, self.R, self.L2, clamp=self.clamp_gupta))

    def occupancy(self, lsrc, asrc):
        if asrc == "chain":
            return self._get("A_chain", lambda: np.pad(self.chain().A_n, (0, max(0, self.L2 - self.L1)))[: self.L2])
        return self._get(("A_bd", lsrc), lambda: birth_death_occupancy(self.lambdas(lsrc), self.mu, self.L2))

    def expm_w(self, lsrc):
        return self._get(("W", lsrc), lambda: expm_tails(self.lambdas(lsrc), self.mu, self.L2, self.t, faithful=True,
                                                         weights=self._expm_weights(lsrc)))

    def _expm_weights(self, lsrc):
        """The A_n of every faithful method summing this w_n (zero beyond its sum range): w_n stops where all their
        sums are negligible (:func:`~.conditional_survival.expm_survival`)."""
        rows = []
        for lam, asrc, wopt, rng in _SPEC.values():
            if lam == lsrc and wopt == "expm":
                A = self.occupancy(lsrc, asrc).copy()
                A[(self.L1 if rng == "L1" else self.L2):] = 0.0
                rows.append(A)
        return np.array(rows)

    def faithful(self, m) -> MethodResult:
        t0 = time.perf_counter()
        lsrc, asrc, wopt, rng = _SPEC[m]
        lam = self.lambdas(lsrc)
        A = self.occupancy(lsrc, asrc)
        if wopt == "expm":
            W = self.expm_w(lsrc)
            top = self.L1 if rng == "L1" else self.L2
            cdf = 1.0 - W[..., :top] @ A[:top]  # §3.1 eq. (2), n < L1 (A) or n < L2 (B, C) (§3.7)
        else:
            cdf = 1.0 - recurrence_survival_faithful(lam, self.mu, self.L2, self.t, A)  # §3.6b, n < L2
        mass = 0.0  # reported only: the published L1, L2 promise no tolerance (module doc)
        if "chain" in (lsrc, asrc):
            mass += self.chain().boundary_mass  # P(some server holds L1−1)
        if asrc == "bd":
            mass += tail_mass(A, lam[-1], self.mu)  # §3.5 law beyond L2, λ held at λ_{L2−1}
        return MethodResult(m, cdf, lam, A, self.L1, self.L2, True, time.perf_counter() - t0,
                            {"truncation_mass": mass})

    # -- corrected building blocks --------------------------------------------------------
    def cchain(self) -> ChainResult:
        def make():
            if self.cL1 is not None:
                return solve_chain(self.lam, self.mu, self.R, int(self.cL1))  # the per-server cap asked for
            return spread_chain(self.lam, self.mu, self.R, self.chain_eps, self.state_budget)
        return self._get("cchain", make)

    def tail_rate(self) -> float:
        """μρ^R: Gupta (7), and the limit of the exact chain's λ_n (Λ at R = 1)."""
        return self.mu * self.rho**self.R

    def chain_cut(self) -> int:
        """How many leading λ_n, A_n of the corrected chain its truncation leaves alone: n < M−1 (spread
        cut) or n < L1−1 (per-server cap); the boundary level itself is bent by the suppressed moves."""
        ch = self.cchain()
        top = ch.states.M if isinstance(ch.states, SpreadStates) else ch.L1
        return max(1, top - 1)

    def csize(self, source):
        def make():
            if self.cL2 is not None:
                return int(self.cL2)
            start = self.chain_cut() if source == "chain" else 3  # where the μρ^R tail starts
            return corrected_size(self.tail_rate(), self.mu, start)
        return self._get(("csize", source), make)

    def clambdas(self, source):
        N = self.csize(source) + 1  # λ_0..λ_N (λ_{n+1} is used for n ≤ N−1 others)
        if source == "chain":
            def make():
                tail = self.tail_rate()
                k = min(self.chain_cut(), N)
                lam = np.full(N, tail)  # Gupta (7) beyond the cut
                lam[:k] = np.maximum(self.cchain().lambda_n[:k], tail)  # a cut bends λ_n down, never up
                return lam
            return self._get(("clam", source), make)
        if self.R == 1:
            return self._get(("clam", source), lambda: np.full(N, self.lam))  # exact at R = 1
        return self._get(("clam", source), lambda: admissible_gupta_lambdas(self.rho, self.mu, self.R, N)[0])

    def coccupancy(self, lsrc, asrc):
        N = self.csize(lsrc)
        if asrc == "chain":
            def make():
                lam = self.clambdas(lsrc)
                k = min(self.chain_cut(), N)
                A = np.zeros(N)
                A[:k] = self.cchain().A_n[:k]
                for n in range(k, N):  # §8.3 A_n ∝ λ_n p_n  ⇒  A_n = A_{n−1}·λ_n/μ
                    A[n] = A[n - 1] * lam[n] / self.mu
                return A / A.sum()
            return self._get(("cA", lsrc, asrc), make)
        return self._get(("cA", lsrc, asrc),
                         lambda: birth_death_occupancy(self.clambdas(lsrc), self.mu, N, arrival_weighted=True))

    def corrected(self, m) -> MethodResult:
        t0 = time.perf_counter()
        lsrc, asrc, wopt, _ = _SPEC[m[0]]
        N = self.csize(lsrc)
        lam = self.clambdas(lsrc)
        A = self.coccupancy(lsrc, asrc)
        if wopt == "expm" and N + 1 <= EXPM_DENSE_MAX:
            W = self._get(("cW", lsrc), lambda: expm_tails(lam, self.mu, N + 1, self.t, faithful=False,
                                                          weights=self._cexpm_weights(lsrc)))
            cdf = 1.0 - W @ A  # §8.3: start at n+1, all n
            route = "expm"
        else:
            cdf = 1.0 - uniformized_survival(lam, self.mu, N, self.t, A)  # §8.3 corrected §3.6b
            route = "uniformization"
        info = {"w_route": route}
        if lsrc == "chain":
            ch = self.cchain()
            info.update(chain_boundary_mass=ch.boundary_mass, chain_states=ch.n_states, chain_cut=self.chain_cut())
            L1 = ch.L1
        else:
            if self.R > 1:
                info.update({k: v for k, v in admissible_gupta_lambdas(self.rho, self.mu, self.R, 4)[1].items()
                             if k != "gupta_lambda0_interval"})
            L1 = 3
        info.update(self.truncation(lsrc, A, lam))
        return MethodResult(m, cdf, lam[:N], A, L1, N, False, time.perf_counter() - t0, info)

    def _cexpm_weights(self, lsrc):
        """The A_n of every corrected method summing the corrected w_n of source ``lsrc`` (A*, B* or C*): w_n stops
        where all their sums are negligible (:func:`~.conditional_survival.expm_survival`)."""
        return np.array([self.coccupancy(lsrc, asrc) for lam, asrc, wopt, _ in _SPEC.values()
                         if lam == lsrc and wopt == "expm"])

    def truncation(self, lsrc, A, lam) -> dict:
        """The corrected method's truncations against their tolerances (module doc): the chain's boundary
        masses (``chain`` source) < chain_eps each, the arrival law's mass beyond N < TAIL_EPS."""
        N = A.size
        tail = tail_mass(A, lam[N], self.mu)  # λ_N: the rate of the first level beyond the cut
        out = {"tail_mass": tail, "tail_tolerance": TAIL_EPS, "tail_reached": int(tail < TAIL_EPS)}
        mass, reached = tail, tail < TAIL_EPS
        if lsrc == "chain":
            ch = self.cchain()
            if isinstance(ch.states, SpreadStates):
                b = boundary_masses(ch.states, ch.pi)  # min cap, spread cap: each < chain_eps
                chain_ok = truncation_reached(*b, self.chain_eps)
            else:
                chain_ok = ch.boundary_mass < self.chain_eps  # the per-server cap asked for: P(max = L1−1)
            out.update(chain_tolerance=self.chain_eps, chain_reached=int(chain_ok), chain_max_states=self.state_budget)
            mass, reached = mass + ch.boundary_mass, reached and chain_ok
        out.update(truncation_mass=mass, truncation_reached=int(reached))
        return out

    def run(self, m) -> MethodResult:
        with single_threaded_blas():
            if m in FAITHFUL_METHODS:
                # the published formulas overflow where Gupta's fit fails (λ_0 < 0 near its pole): the result
                # is kept as computed and flagged non_finite by the guards, not warned about here
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    return self.faithful(m)
            if m in CORRECTED_METHODS:
                return self.corrected(m)
        raise ValueError(f"method must be one of {FAITHFUL_METHODS + CORRECTED_METHODS + ('exact',)}; got {m!r}")


def method_cdf(method, arrival_rate, service_rate, servers, t, **hyper) -> MethodResult:
    """One method for one cell (see :class:`Cell` for the hyper-parameters)."""
    return Cell(arrival_rate, service_rate, servers, t, **hyper).run(method)


def all_methods(arrival_rate, service_rate, servers, t, methods=FAITHFUL_METHODS, **hyper) -> dict:
    """Several methods for one cell, sharing λ_n, A_n, the chain and the tail matrices."""
    cell = Cell(arrival_rate, service_rate, servers, t, **hyper)
    return {m: cell.run(m) for m in methods}
