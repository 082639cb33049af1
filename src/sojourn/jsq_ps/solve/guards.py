"""Validity guards on every analytic result (A–F, A*–F*, exact): is it a sojourn-time law of a JSQ system?

One mechanism for all methods: :func:`validity` looks at what a method returns — the CDF on the grid,
its λ_n (arrival rate to a server holding n) and A_n (law of the occupancy an arrival finds) — and
returns a CF-style bit mask, 0 = valid. A flagged result is kept as computed (faithful mode still
reproduces the published numbers), only marked: ``valid`` and ``validity_reason`` in the datasets of
:func:`sojourn.jsq_ps.solve.approximate_all` and of the pipeline, a warning on the CLI.

The checks, each a bit of :data:`FLAG_MASKS` / :data:`FLAG_MEANINGS`:

* ``below_zero`` / ``above_one`` / ``non_monotone`` / ``non_finite``: the CDF leaves [0, 1], decreases
  between grid points, or is not finite, beyond :data:`TOLERANCE` (the same bits and tolerance as the
  comparison's ``fit_invalid``, :func:`sojourn.jsq_ps.compare.fit_validity`, which is :func:`cdf_flags`).
* ``negative_rate``: some λ_n < 0 (Gupta's fit: λ_1 = −0.92 at R = 1, ρ = 0.01; −0.04 at R = 3, ρ = 0.97).
* ``rate_above_arrival_rate``: some λ_n > 2Λ. Any λ_n > Λ is impossible, since λ_n = Λ·P(min = n)/
  E[#servers holding n] and E[#servers holding n] ≥ P(min = n), but a fit a few per cent above Λ is an
  approximation, not garbage (Gupta's fit at R = 1, where λ_n = Λ exactly, is 1.01–1.34Λ for
  0.2 ≤ ρ ≤ 0.9); beyond twice the whole arrival stream the fit has exploded (λ_0 = 62.98 against
  Λ = 2.91 at R = 3, ρ = 0.97, past the pole of Gupta's λ_0 fit; 53 of the 151 fitted profiles above Λ
  on the paper's 990 cells).
* ``occupancy_not_a_law``: A_n negative, not finite, or not summing to 1.
* ``collapsed_load`` / ``excess_load``: the arrival profile contradicts the load. In any stationary
  JSQ system with R servers at load ρ an arrival finds its server idle with probability
  A_0 = P(some server idle) = P(B < R), B = busy servers, E[B] = Rρ; hence (Markov's inequality on
  R − B ∈ [0, R]) 1 − ρ ≤ A_0 ≤ R(1 − ρ). A result is flagged when it misses this interval by more
  than a factor 2 on either side: 1 − A_0 < (1 − R(1 − ρ))/2 (more than half of the load the arrivals
  must see has vanished: the corrected C* of earlier versions at ρ ≥ 0.97 had A_0 = 1, λ_1 = 0 and
  was Exp(μ)) or A_0 < (1 − ρ)/2. Factor 2, not the bound itself: truncated chains renormalise A_n
  and miss the bound by a few per cent without being wrong in kind (Table 4's L1 = 22 at R = 1,
  ρ = 0.93: A_0 = 1.25·(1 − ρ)); a factor 2 separates those from collapse (L1 = 2 at R = 10, ρ ≥ 0.94:
  81 % of arrivals find an empty server against at most 60 %). Generic: no ρ or method is named.
* ``over_budget``: ``exact`` was not run on this cell (predicted cost over the budget,
  :mod:`sojourn.jsq_ps.solve.budget`); its values are NaN.
* ``truncation_not_reached``: a method that promises a truncation tolerance stopped above it, at its state
  cap (the values are those of the truncation reached, the mass reached is in the method's attributes;
  :func:`truncation_flags`). Which methods promise what (the result's ``truncation_reached`` and
  ``truncation_tolerance``):

  - ``exact``: each boundary mass of its system chain (at the min cap M and at the spread cap D) < ``eps``
    = 1e-10 (:mod:`sojourn.jsq_ps.solve.exact`); the reported ``truncated_mass`` (both boundaries and the
    arrivals lost at the min cap, which lie on it) is then < 3·eps. Cap: ``max_states`` (``--max-states``).
  - A*, B*, D*, E*: the same for their spread chain with ``chain_eps`` = 1e-10 (a per-server cap ``L1``,
    if one is given: its single boundary mass < chain_eps), cap ``state_budget`` (``--max-states``); and
    with C*, F*: the arrival law's mass beyond its tail cut N < ``tail_eps`` = 1e-12 (N at most 6000, or
    ``L2``; :func:`sojourn.jsq_ps.solve.methods.corrected_size`).
  - A–F promise none: their L1 (Table 4) and L2 = 130 are the published method (reference §4, §8.2), kept
    to reproduce it; their truncated mass is reported (``truncation_mass``), never flagged.

:data:`TOLERANCE` = 1e-9 is the round-off allowance. The excursions of results that pass are round-off:
at most 4.4e-16 (two ulps of 1) for every method at R ∈ {1, 2, 3, 5, 10} × ρ ∈ {0.1, 0.5, 0.9, 0.95, 0.99}
on the default grid (18 233 points), and the numerical error bounds are ~1e-13 (Poisson truncation of
the uniformisation, expm stepping); the one larger excursion that passes is the published F at R = 6,
ρ = 0.05, 5e-11 above 1 (its recurrence takes θ = λ_0 below λ_1 there). 1e-9 sits above these, and is the
storage floor of the survival function (:data:`sojourn.jsq_ps.storage.SF_FLOOR`), below which nothing
downstream can see an excursion: it moves no percentile ≤ 99.999 (resolution 1e-5) and W by
≤ 1e-9·t_max ≈ 2e-7.
"""
from __future__ import annotations

import warnings

import numpy as np

#: round-off allowance of the CDF checks (module doc)
TOLERANCE = 1e-9
#: allowance on Σ A_n = 1 (a sum of up to ~10^4 terms of round-off ~1e-16 each)
LAW_TOLERANCE = 1e-9
#: a result may miss the A_0 bounds, or exceed λ_n ≤ Λ, by this factor before it is flagged (module doc)
LOAD_FACTOR = 2.0

BELOW_ZERO, ABOVE_ONE, NON_MONOTONE, NON_FINITE = 1, 2, 4, 8
NEGATIVE_RATE, RATE_ABOVE_ARRIVAL_RATE, OCCUPANCY_NOT_A_LAW = 16, 32, 64
COLLAPSED_LOAD, EXCESS_LOAD, OVER_BUDGET, TRUNCATION_NOT_REACHED = 128, 256, 512, 1024

FLAGS = {
    "below_zero": BELOW_ZERO, "above_one": ABOVE_ONE, "non_monotone": NON_MONOTONE, "non_finite": NON_FINITE,
    "negative_rate": NEGATIVE_RATE, "rate_above_arrival_rate": RATE_ABOVE_ARRIVAL_RATE,
    "occupancy_not_a_law": OCCUPANCY_NOT_A_LAW, "collapsed_load": COLLAPSED_LOAD, "excess_load": EXCESS_LOAD,
    "over_budget": OVER_BUDGET, "truncation_not_reached": TRUNCATION_NOT_REACHED,
}
#: CF flag attributes of ``validity_reason``
FLAG_MASKS = np.array(list(FLAGS.values()), dtype=np.int16)
FLAG_MEANINGS = " ".join(FLAGS)
#: the CDF bits (the comparison's ``fit_invalid``)


def reason_attrs() -> dict:
    """CF attributes of a ``validity_reason`` variable."""
    return {"long_name": "why the method's result is invalid (bit mask; 0 = valid)", "units": "1",
            "flag_masks": FLAG_MASKS, "flag_meanings": FLAG_MEANINGS,
            "comment": f"CDF checks with round-off tolerance {TOLERANCE:g}; rates against 0 and {LOAD_FACTOR:g} x the "
                       f"arrival rate; A_0 against [1 - rho, R(1 - rho)] within a factor {LOAD_FACTOR:g} "
                       "(sojourn.jsq_ps.solve.guards)"}


def valid_attrs() -> dict:
    return {"long_name": "1 = the method's result passed every validity check (validity_reason = 0)",
            "units": "1", "flag_values": np.array([0, 1], np.int8), "flag_meanings": "invalid valid"}


def cdf_flags(F, tol: float = TOLERANCE):
    """(flags, violation) of CDFs ``F`` (..., t): the CDF bits and the largest excursion below 0, above 1
    or downwards between grid points, in probability units (0 if valid; NaN if the CDF is absent, i.e.
    all NaN: a method not run there, flags 0). A partly non-finite CDF gets ``non_finite`` (its
    excursions are measured on the finite values)."""
    F = np.asarray(F, dtype=float)
    finite = np.isfinite(F)
    absent = ~finite.any(axis=-1)
    G = np.where(finite, F, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows: absent methods
        below = np.nan_to_num(-np.nanmin(G, axis=-1), nan=0.0)
        above = np.nan_to_num(np.nanmax(G, axis=-1) - 1.0, nan=0.0)
        steps = np.diff(G, axis=-1)
        drop = np.nan_to_num(-np.nanmin(steps, axis=-1), nan=0.0) if steps.shape[-1] else np.zeros(F.shape[:-1])
    flags = ((below > tol) * BELOW_ZERO + (above > tol) * ABOVE_ONE + (drop > tol) * NON_MONOTONE
             + (~finite.all(axis=-1)) * NON_FINITE)
    flags = np.where(absent, 0, flags).astype(np.int8)
    worst = np.maximum.reduce([below, above, drop])
    violation = np.where(absent, np.nan, np.where(flags > 0, worst, 0.0))
    return flags, violation


def profile_flags(lambda_n, A_n, arrival_rate: float, servers: int, load: float, tol: float = TOLERANCE) -> int:
    """The rate and occupancy bits of one result (module doc); NaN entries of λ_n are padding."""
    lam = np.asarray(lambda_n, dtype=float).ravel()
    lam = lam[~np.isnan(lam)]
    A = np.asarray(A_n, dtype=float).ravel()
    Lam, R, rho = float(arrival_rate), int(servers), float(load)
    flags = 0
    if not np.all(np.isfinite(lam)):
        flags |= NON_FINITE
    fin = lam[np.isfinite(lam)]
    if fin.size and fin.min() < -tol * max(1.0, Lam):
        flags |= NEGATIVE_RATE
    if fin.size and fin.max() > LOAD_FACTOR * Lam:
        flags |= RATE_ABOVE_ARRIVAL_RATE
    if A.size == 0 or not np.all(np.isfinite(A)) or A.min() < -tol or abs(A.sum() - 1.0) > LAW_TOLERANCE:
        return flags | OCCUPANCY_NOT_A_LAW
    A0 = float(A[0])
    idle_max = R * (1.0 - rho)  # A_0 ≤ R(1 − ρ)  (E[R − B] = R(1 − ρ), R − B ≥ 1 when B < R)
    idle_min = 1.0 - rho  # A_0 ≥ 1 − ρ  (R − B ≤ R)
    if idle_max < 1.0 and 1.0 - A0 < (1.0 - idle_max) / LOAD_FACTOR:
        flags |= COLLAPSED_LOAD
    if A0 < idle_min / LOAD_FACTOR:
        flags |= EXCESS_LOAD
    return flags


def truncation_flags(info: dict) -> int:
    """``truncation_not_reached`` if a method's ``info`` (its result's diagnostics) says that one of its
    truncations stopped above the tolerance it promises (``truncation_reached`` = 0), else 0."""
    return TRUNCATION_NOT_REACHED if int(info.get("truncation_reached", 1)) == 0 else 0


def validity(cdf, lambda_n, A_n, arrival_rate: float, servers: int, load: float, tol: float = TOLERANCE):
    """(flags, violation) of one method's result: every bit of the module doc but ``over_budget`` and
    ``truncation_not_reached`` (:func:`truncation_flags`); ``violation`` is the CDF's largest excursion (0 if none)."""
    F = np.asarray(cdf, dtype=float)
    f, violation = cdf_flags(F[None, :], tol)
    flags = int(f[0]) | profile_flags(lambda_n, A_n, arrival_rate, servers, load, tol)
    if not np.all(np.isfinite(F)):  # cdf_flags calls an all-NaN row absent; here it is a failed result
        flags |= NON_FINITE
    v = float(violation[0])
    return flags, (0.0 if not np.isfinite(v) else v)


def describe(flags: int) -> str:
    """The names of the bits set in ``flags`` (``""`` if valid)."""
    return ", ".join(name for name, bit in FLAGS.items() if int(flags) & bit)
