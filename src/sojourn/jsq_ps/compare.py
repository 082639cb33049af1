"""Compare approximated with simulated sojourn-time CDFs: Wasserstein distances, percentile errors, CIs,
and which approximation to trust at each percentile.

Convention (explicit, as in the paper): every CDF is evaluated on the grid t_i = i·dt, i = 0..N
(``t`` coordinate of both files). The simulated CDF is the empirical P(S < t_i), i.e. the paper's
``percentileofscore(kind='strict')/100``, which from the histogram (bin i = [t_i, t_i + dt)) is
:func:`sojourn.core.estimates.stats.cdf_at_left_edges`. The approximations' ``cdf`` is F(t_i). Then

* Wasserstein (paper eq. 27): W = dt · Σ_i |F_sim(t_i) − F_approx(t_i)|;
* percentile x_p: where F, linear between the grid points, first exceeds p
(:func:`sojourn.core.estimates.stats.quantile`),
  for the simulation and the approximations alike. The paper's x_p, the first grid t_i with F(t_i) > p, is the
  right end of that step: up to dt above, so a simulated one carried the bin's bias into every CI (issue 26);
  interpolated, the simulated percentile is the histogram's with customers uniform within the bin, and the
  approximated one is off by O(dt²) only. Each moves by less than dt from the paper's;
* percentile error = x_p^approx − x_p^sim (negative = the approximation is optimistic about the tail);
  relative error = that difference / x_p^sim.

Per-replication statistics get a 95% confidence interval across replications: Student-t, or a
bootstrap (``scipy.stats.bootstrap``, BCa) when the t-interval is doubtful (few replications or a
skewed sample, see ``comparison.ci``). Pooled statistics use all replications' customers together.
The simulated percentile itself is stored with its CI (``sim_percentile_mean``, ``_ci_low``,
``_ci_high``). The simulation estimates a percentile only if enough customers lie beyond it:
``few_tail_customers`` flags the (law, R, ρ, percentile) where n_k·(1 − p) < ``min_tail_customers``
(100) in some replication k (1), or even for all replications' n pooled (2).

Usable methods. A method is *usable* at (R, ρ) (``usable``; why not: ``unusable_reason``) when it was
computed there, its "CDF" is a CDF on the grid and the approximation dataset does not flag it itself:

* ``fit_invalid`` (R, rho, approximation), computed here: an approximated "CDF" can leave [0, 1] or
  decrease (Gupta's fit at low load, §3.3: the published Method C at R = 2, ρ = 0.01 reaches −9.93),
  bit mask (:func:`fit_validity`; round-off tolerance ``FIT_TOLERANCE``), ``fit_violation`` says by how
  much;
* the approximation's own verdict (its analytic guards), read by :func:`approximation_validity` from
  the first of :data:`APPROXIMATION_VALIDITY` the approximation dataset has (none: no such verdict).

Every statistic of an approximation (every variable with an ``approximation`` dimension) is NaN where
the method is not usable, so that no value of an unusable method can be read as an ordinary one (a
Wasserstein ``inf`` or 1e36 of an exploded fit never appears). The unmasked summaries stay under
``raw_<name>`` (means, CI ends, approximated percentiles): the reproduction of the published tables
reads them, since faithful mode must reproduce the paper's numbers, flagged or not. No decision ever
uses a ``raw_`` variable.

Decisions (all consider usable methods only):

* ``best_method``: smallest mean Wasserstein distance among the methods other than ``exact``; methods
  whose CI overlaps the best one's are marked as ties (``tied_with_best``). W is dominated by the body
  of the distribution: it says nothing about the tail.
* ``best_method_percentile``: smallest |pooled percentile error| among the methods other than ``exact``.
* tail-aware, per (law, R, ρ, percentile), from the mean percentile error over replications and its CI:
  ``optimistic`` (per method) = 1 if the CI of the mean percentile error lies entirely below 0 (the
  method underestimates the percentile beyond the simulation's noise, however little: ``optimistic_by``
  says by how much, relatively), 0 if it does not, −1 if there is no verdict (not usable, no mean or no
  CI); ``most_accurate`` = the method with the smallest |mean percentile error| (absolute, see
  :func:`tail_decisions`); ``recommended`` = ``exact`` where it ran and is usable (exponential service:
  the model it solves) and its percentile lies on the time grid (not beyond t_max: a percentile it cannot
  give is no recommendation), else ``T`` where it is preferred (below), else the most accurate method whose
  verdict is 0 (not optimistic), else "simulate" (no simulation there: ""), ``recommendation_status`` says
  which case, including "too few customers" (``few_tail_customers``: the percentile cannot be estimated by
  the simulation, so it drives no choice but ``exact`` and ``T``), and ``recommended_relative_error`` (with
  CI) is the recommended method's relative percentile error.

Method T (:mod:`sojourn.jsq_ps.solve.tail`) is conservative by construction: its percentiles are never below
the true ones, within a stated margin. The comparison checks that claim on its own numbers before acting on
it (:func:`tail_check`): T is *preferred* wherever exact is not (exponential service, T usable) only if, at
every (R, ρ, percentile) where both exact and T are usable, T's percentile is not below exact's by more than
one grid step (``tail_checked_points``, ``tail_below_exact_points`` and ``tail_preferred`` in the attributes),
and at a cell only if the simulation does not show T optimistic where it can estimate the percentile
(``optimistic`` = 1 with ``few_tail_customers`` = 0). Why prefer it over the ordinary rule: the rule ranks the
methods by their distance to a simulated percentile whose noise (a few per cent at the 99.9th in short runs)
is larger than T's error (≤ 0.4 % against exact in the default run), so it picks whichever method the noise
favours, optimistic or not, where T is within its margin of the truth and never below it; and T needs no
simulation to be trusted, so it is recommended where the simulation has too few customers beyond the
percentile, like exact. In the default config's run (R ≤ 10, 35 cells, 140 points): 106 points with both,
T − exact from 0 to +0.37 % (median +0.14 %), never below; T "optimistic" by the simulation's verdict at 6
points, 5 of them points where exact itself is judged so (the verdict's false positives in 5 replications).

:func:`compare_files` computes the same dataset as :func:`compare` from the merged files, reading
one (R, rho) cell at a time (bounded memory: the paper grid's ``count`` is ~4 GB decompressed).
"""
from __future__ import annotations

import contextlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import xarray as xr

from ..core.estimates.precision import present as replications_present
from ..core.estimates.stats import (
    CI_BOOTSTRAP,
    CI_T,
    TAIL_MIN,
    cdf_at_left_edges,
    interval,
    quantile,
    wasserstein,
)
from ..core.files.io import NETCDF_LOCK, cf_flags, provenance, write_netcdf
from ..core.files.io import cf_attrs as _attrs
from .naming import EXPONENTIAL, label_coords
from .solve.guards import ABOVE_ONE as FIT_ABOVE_ONE
from .solve.guards import BELOW_ZERO as FIT_BELOW_ZERO
from .solve.guards import NON_FINITE as FIT_NON_FINITE
from .solve.guards import NON_MONOTONE as FIT_DECREASING
from .solve.guards import TOLERANCE as FIT_TOLERANCE
from .solve.guards import cdf_flags as fit_validity

DEFAULTS = {
    "percentiles": [99, 99.9, 99.99, 99.999],
    "confidence": 0.95,
    "ci": "auto",
    "bootstrap_from": 20,
    "skew_threshold": 1.0,
    "n_resamples": 2000,
    "against_exact": True,
    "min_tail_customers": TAIL_MIN,  # the CLIs' rule too (sojourn.core.estimates.stats.TAIL_MIN)
}


#: ``fit_invalid`` bits and round-off tolerance: the analytic guards' CDF checks (imported above), so the
#: comparison and the approximation's ``validity_reason`` flag a CDF alike
FIT_FLAG_ATTRS = cf_flags({FIT_BELOW_ZERO: "below_zero", FIT_ABOVE_ONE: "above_one", FIT_DECREASING: "non_monotone",
                           FIT_NON_FINITE: "non_finite"}, masks=True)


def ties_with_best(mean, low, high, m: int, best: int) -> bool:
    """The tie rule of ``tied_with_best``: method ``m``'s Wasserstein CI reaches down to the best
    method's CI (low_m ≤ high_best; a missing CI end falls back to the mean). ``mean``/``low``/``high``
    are indexed by method."""
    lo_m = low[m] if np.isfinite(low[m]) else mean[m]
    hi_b = high[best] if np.isfinite(high[best]) else mean[best]
    return bool(lo_m <= hi_b)


#: ``*_ci_method`` where there is no interval (fewer than 2 replications, or no value: e.g. an unusable method)
CI_NONE = -1

#: the approximation dataset's own per-(R, rho, approximation) validity verdict (its analytic guards,
#: :mod:`sojourn.jsq_ps.solve.guards`), as (variable name, reading → True where valid)
APPROXIMATION_VALIDITY = (
    ("valid", lambda v: v != 0),     # 1 = valid, 0 = invalid (its reason in validity_reason)
)


def approximation_validity(approx: xr.Dataset) -> xr.DataArray | None:
    """(R, rho, approximation) boolean DataArray, True where the approximation dataset does not flag the
    method itself (the first of :data:`APPROXIMATION_VALIDITY` it has; its name in ``attrs['source']``),
    or None when it has no such variable. Cells it does not cover count as valid."""
    for name, is_valid in APPROXIMATION_VALIDITY:
        if name in approx.variables and set(approx[name].dims) <= {"R", "rho", "approximation"}:
            v = approx[name].load()
            ok = xr.DataArray(np.asarray(is_valid(v.values), dtype=bool), dims=v.dims, coords=v.coords)
            ok = ok.broadcast_like(approx[["R", "rho", "approximation"]]).transpose("R", "rho", "approximation")
            ok.attrs["source"] = name
            return ok
    return None


#: ``unusable_reason`` bits (CF flag_masks): why ``usable`` is 0 at (R, rho, approximation)
NOT_COMPUTED, NOT_A_CDF, FLAGGED_BY_APPROXIMATION = 1, 2, 4
UNUSABLE_FLAG_ATTRS = cf_flags({NOT_COMPUTED: "not_computed", NOT_A_CDF: "not_a_cdf",
                                FLAGGED_BY_APPROXIMATION: "flagged_by_approximation"}, masks=True)

#: ``optimistic`` values
NO_VERDICT, NOT_OPTIMISTIC, OPTIMISTIC = -1, 0, 1
#: ``few_tail_customers`` values
TAIL_ENOUGH, TAIL_FEW_PER_REPLICATION, TAIL_FEW_POOLED = 0, 1, 2
#: ``recommendation_status`` values (``recommended`` in brackets)
(STATUS_EXACT,            # "exact": exponential service, exact usable
 STATUS_NON_OPTIMISTIC,   # the most accurate usable method that is not optimistic
 STATUS_ALL_OPTIMISTIC,   # "simulate": every usable method with a verdict is optimistic
 STATUS_TOO_FEW,          # "simulate": too few customers beyond the percentile to judge any method
 STATUS_NO_VERDICT,       # "simulate": no usable method with a mean error and a CI
 STATUS_NO_SIMULATION,    # "": no simulation of this law at this cell
 STATUS_TAIL,             # "T": exponential service, exact not usable, T preferred (tail_check)
 STATUS_RUN_TOO_SHORT,    # "simulate": the simulation's run is too short to trust (sojourn.core.estimates.runlength)
 ) = range(8)
STATUS_FLAG_ATTRS = cf_flags(dict(enumerate("exact non_optimistic all_optimistic too_few_customers no_verdict "
                                             "no_simulation tail_conservative run_too_short".split())))
SIMULATE = "simulate"
#: the method that is conservative by construction (sojourn.jsq_ps.solve.tail)
TAIL_METHOD = "T"


def tail_customers(n_customers: np.ndarray, pct: np.ndarray, threshold: float):
    """(smallest per-replication count, ``few_tail_customers`` flag) of the customers beyond each
    percentile. ``n_customers`` (..., replication): customers recorded per replication (0 = none: a gap
    or a padded replication, left out of the minimum); ``pct`` (percentile,) in percent. The expected
    number beyond x_p of n customers is n·(1 − p) (rounded to 1e-6: 99.9 % of 1e5 is 100, not 99.99…).
    Flag: 2 if even the pooled n·(1 − p) < threshold (the pooled percentile is not estimable either;
    also where nothing was simulated), 1 if some replication's is, else 0. Shapes (..., percentile)."""
    n = np.asarray(n_customers, dtype=float)
    tail = np.asarray(100.0 - np.asarray(pct, dtype=float)) / 100.0
    per_rep = np.round(n[..., None] * tail, 6)  # (..., replication, percentile)
    has = (n > 0)[..., None]
    smallest = np.where(has.any(axis=-2), np.min(np.where(has, per_rep, np.inf), axis=-2), 0.0)
    pooled = np.round(n.sum(axis=-1)[..., None] * tail, 6)
    flag = np.where(pooled < threshold, TAIL_FEW_POOLED,
                    np.where(smallest < threshold, TAIL_FEW_PER_REPLICATION, TAIL_ENOUGH)).astype(np.int8)
    return smallest, flag


def tail_decisions(err_mean, err_high, rel_mean, usable, few, simulated, exact_preferred, tail_preferred=None,
                   short=None):
    """The tail-aware decisions of one comparison, vectorised over (..., approximation, percentile).

    ``err_mean``/``err_high``: mean signed percentile error over replications (approx − sim) and the upper
    end of its CI; ``rel_mean``: the mean relative error; ``usable`` (..., approximation, 1 or percentile):
    the method may be used there; ``few`` (..., percentile): ``few_tail_customers``; ``simulated``
    (..., 1): the law was simulated at the cell; ``exact_preferred`` (..., 1 or percentile): index of ``exact``
    where it is to be preferred (exponential service, usable, its percentile on the grid), else −1;
    ``tail_preferred`` (..., 1 or percentile): index of ``T`` where it may be preferred (exponential service,
    usable, its percentile on the grid, :func:`tail_check` passed), else −1 (None: nowhere);
    ``short`` (..., 1): the simulation's run is too short to trust there (its ``run_valid`` = 0,
    :mod:`sojourn.core.estimates.runlength`; None: nowhere) — its percentiles then judge nothing, like too few
    customers:
    no optimistic verdict, no most accurate method, and "simulate" (run_too_short) unless exact or T apply.

    * optimistic = 1 where err_high < 0 (the whole CI below 0: an underestimate beyond the simulation's
      noise, however small), 0 where err_high ≥ 0, −1 without a verdict (not usable, no mean or no CI);
    * optimistic_by = −rel_mean where optimistic = 1 (the share by which the percentile is
      underestimated), 0 where 0, NaN without a verdict;
    * most accurate = smallest |err_mean|. Absolute, not relative: within one cell every method is
      measured against the same simulated percentiles, so |approx − mean sim| ranks by the distance to the
      mean simulated percentile (``sim_percentile_mean``, stored with its CI), while the mean relative
      error would rank by the distance to their harmonic mean, which replications with a small, noisy
      tail estimate pull down (Jensen). ``""`` where few ≠ 0 (the percentile is not estimable);
    * recommended (status): ``""`` where not simulated (no_simulation); exact where preferred (exact); T
      where it may be preferred unless the simulation shows it optimistic where few = 0 (tail_conservative);
      "simulate" where few ≠ 0 (too_few_customers); else the most accurate method with optimistic = 0
      (non_optimistic); else "simulate" (all_optimistic if some usable method has a verdict, else
      no_verdict). Exact ties (identical copies such as A* and B*) go to the first in coordinate order.

    Returns (optimistic int8, optimistic_by, most_accurate index, recommended index, status int8) with
    index −1 = none.
    """
    err_mean = np.asarray(err_mean, dtype=float)
    shape = err_mean.shape
    usable = np.broadcast_to(np.asarray(usable, dtype=bool), shape)
    has_mean = usable & np.isfinite(err_mean)
    verdict = has_mean & np.isfinite(err_high)
    short = np.zeros(shape[:-2] + (1,), bool) if short is None else np.asarray(short, dtype=bool)
    verdict &= ~short[..., None, :]  # a run too short to trust gives no verdict
    optimistic = np.where(verdict, np.where(err_high < 0, OPTIMISTIC, NOT_OPTIMISTIC), NO_VERDICT).astype(np.int8)
    optimistic_by = np.where(optimistic == OPTIMISTIC, -np.asarray(rel_mean, dtype=float),
                             np.where(optimistic == NOT_OPTIMISTIC, 0.0, np.nan))

    def first_min(score):  # (..., M, Q) -> (..., Q): argmin over methods, −1 where all inf
        idx = np.argmin(score, axis=-2)
        return np.where(np.isfinite(score).any(axis=-2), idx, -1)

    absdev = np.abs(err_mean)
    few = np.asarray(few) != TAIL_ENOUGH
    short = np.broadcast_to(short, few.shape)
    too_short = short & ~few
    few = few | short
    simulated = np.broadcast_to(np.asarray(simulated, dtype=bool), few.shape)
    exact_preferred = np.broadcast_to(np.asarray(exact_preferred), few.shape)
    most = np.where(few, -1, first_min(np.where(has_mean, absdev, np.inf)))
    safe = first_min(np.where(optimistic == NOT_OPTIMISTIC, absdev, np.inf))
    any_verdict = (optimistic != NO_VERDICT).any(axis=-2)
    tail = np.full(few.shape, -1)
    if tail_preferred is not None:
        tp = np.broadcast_to(np.asarray(tail_preferred), few.shape)
        own = np.take_along_axis(optimistic, np.maximum(tp, 0)[..., None, :], axis=-2)[..., 0, :]  # T's verdict
        tail = np.where((tp >= 0) & ~((own == OPTIMISTIC) & ~few), tp, -1)
    status = np.select(
        [~simulated, exact_preferred >= 0, tail >= 0, too_short, few, safe >= 0, any_verdict],
        [STATUS_NO_SIMULATION, STATUS_EXACT, STATUS_TAIL, STATUS_RUN_TOO_SHORT, STATUS_TOO_FEW,
         STATUS_NON_OPTIMISTIC, STATUS_ALL_OPTIMISTIC], STATUS_NO_VERDICT).astype(np.int8)
    rec = np.select([status == STATUS_EXACT, status == STATUS_TAIL, status == STATUS_NON_OPTIMISTIC],
                    [exact_preferred, tail, safe], -1)
    return optimistic, optimistic_by, most, rec, status


def tail_check(err_exact, dt: float) -> dict:
    """The comparison's own check of T's claim (module doc): ``err_exact`` (R, rho, percentile) = T's minus
    exact's percentile where both are usable (NaN elsewhere), ``dt`` the grid step. ``preferred`` only if there
    is at least one such point and T is nowhere below exact by more than one grid step (the percentiles
    interpolate between grid points, and the stored survival functions are rounded)."""
    d = np.asarray(err_exact, dtype=float)
    points = np.isfinite(d)
    below = points & (d < -dt * (1.0 + 1e-6))
    return {"checked_points": int(points.sum()), "below_exact_points": int(below.sum()),
            "largest_below": float(-d[below].min()) if below.any() else 0.0,
            "preferred": bool(points.any() and not below.any())}


class _Grid:
    """Coordinates, output arrays and index maps shared by :func:`compare` and :func:`compare_files`.

    Built from the coordinates only, so it works on lazily opened and on in-memory datasets alike.
    """

    def __init__(self, sim: xr.Dataset, approx: xr.Dataset, cfg: dict):
        self.cfg = cfg
        pct = np.asarray(cfg["percentiles"], dtype=float)
        self.pct, self.p = pct, pct / 100.0
        t = sim["t"].values
        if not np.allclose(t, approx["t"].values, rtol=0, atol=1e-9):
            raise ValueError("simulation and approximation use different t grids")
        self.t = t
        self.dt = float(np.round(t[1] - t[0], 12))
        self.services = sim["service"].values.tolist()
        self.Rs = sim["R"].values.tolist()
        self.rhos = sim["rho"].values
        self.reps = sim["replication"].values
        # a precision-driven run: cells with different replication counts, padded (sojourn.core.estimates.precision)
        self.used = sim["replications_used"].transpose("service", "R", "rho").values \
            if "replications_used" in sim else None
        self.methods = approx["approximation"].values.tolist()
        self.exact = self.methods.index("exact") if ("exact" in self.methods and cfg["against_exact"]) else None
        self.expo = self.services.index("exponential") if "exponential" in self.services else None
        S, NR, NP, NM, NK, NQ = (len(self.services), len(self.Rs), len(self.rhos), len(self.methods),
                                 len(self.reps), len(self.p))
        self.shape = (S, NR, NP, NM, NK, NQ)
        # (R, rho) label -> position in the approximation file (label-based, as .sel does)
        a_R = approx.indexes["R"]
        a_rho = approx.indexes["rho"]
        self.a_R = {i: int(a_R.get_loc(R)) for i, R in enumerate(self.Rs) if R in a_R}
        self.a_rho = [int(a_rho.get_loc(r)) for r in self.rhos]
        self.W = np.full((S, NR, NP, NM, NK), np.nan)
        self.Wpool = np.full((S, NR, NP, NM), np.nan)
        self.xsim = np.full((S, NR, NP, NK, NQ), np.nan)
        self.xsim_pool = np.full((S, NR, NP, NQ), np.nan)
        self.xapp = np.full((NR, NP, NM, NQ), np.nan)
        self.W_vs_exp_sim = np.full((S, NR, NP), np.nan)
        self.noise = np.full((S, NR, NP), np.nan)  # the simulation's own noise in W (:func:`simulation_noise`)
        self.W_exact = np.full((NR, NP, NM), np.nan)
        self.fit_invalid = np.zeros((NR, NP, NM), np.int8)
        self.fit_violation = np.full((NR, NP, NM), np.nan)
        self.err_exact = np.full((NR, NP, NM, NQ), np.nan)
        self.n_customers = np.zeros((S, NR, NP, NK))  # customers recorded per replication (from the histograms)
        # the simulation's run-length verdict (sojourn.core.estimates.runlength): 0 = too short to trust; -1 / absent:
        # none
        self.run_valid = sim["run_valid"].transpose("service", "R", "rho").values.astype(np.int8) \
            if "run_valid" in sim else np.full((S, NR, NP), -1, np.int8)
        # the approximation dataset's own verdict (analytic guards) on the comparison's grid; None: it has none
        ok = approximation_validity(approx)
        self.approx_valid_source = None if ok is None else ok.attrs["source"]
        self.approx_valid = np.ones((NR, NP, NM), bool) if ok is None else ok.reindex(
            R=self.Rs, rho=self.rhos, approximation=self.methods, fill_value=True).values.astype(bool)
        # did a method run at all (its budget, its truncation cap): the approximation's validity_reason bits
        from .solve.guards import OVER_BUDGET, TRUNCATION_NOT_REACHED

        vr = approx["validity_reason"] if "validity_reason" in approx.variables else None
        self.over_budget = np.zeros((NR, NP, NM), bool) if vr is None or not set(vr.dims) <= {
            "R", "rho", "approximation"} else ((vr.load().broadcast_like(approx[["R", "rho", "approximation"]])
                                               .transpose("R", "rho", "approximation")
                                               .reindex(R=self.Rs, rho=self.rhos, approximation=self.methods,
                                                        fill_value=0).values.astype(int)
                                               & (OVER_BUDGET | TRUNCATION_NOT_REACHED)) != 0)

    def cell(self, i: int, j: int, Fa: np.ndarray, counts: list, overflows: list) -> None:
        """All per-cell statistics of cell (R index i, rho index j) into the output arrays.

        ``Fa`` (method, t): approximated CDFs; ``counts[s]`` (replication, t) / ``overflows[s]``
        (replication,): the histograms of service law s, or None when the law has no data there.
        """
        t, p, dt, e = self.t, self.p, self.dt, self.exact
        Fa = np.asarray(Fa, dtype=float)
        have_a = np.all(np.isfinite(Fa), axis=1)
        self.fit_invalid[i, j], self.fit_violation[i, j] = fit_validity(Fa)
        xapp = self.xapp[i, j] = np.where(have_a[:, None], quantile(t, Fa, p), np.nan)
        if e is not None and have_a[e]:
            self.W_exact[i, j] = wasserstein(Fa, Fa[e], dt)
            self.err_exact[i, j] = xapp - xapp[e]
        pooled, buf = {}, None
        for s, (c, o) in enumerate(zip(counts, overflows, strict=True)):
            if c is None:
                continue
            c = np.asarray(c, dtype=float)
            o = np.asarray(o, dtype=float)
            if not np.isfinite(c).all() or c.sum() + o.sum() == 0:
                continue
            self.n_customers[s, i, j] = c.sum(axis=-1) + o
            Fr = cdf_at_left_edges(c, o)  # (rep, t)
            Fp = cdf_at_left_edges(c.sum(axis=0), o.sum())
            # one method at a time into a reused buffer: the same per-row sums as the
            # (method, rep, t) broadcast without its ~20 MB temporaries (3x faster)
            if buf is None or buf.shape != Fr.shape:
                buf = np.empty_like(Fr)
            W = self.W[s, i, j]
            for m in range(len(Fa)):
                np.subtract(Fr, Fa[m], out=buf)
                np.abs(buf, out=buf)
                W[m] = dt * buf.sum(axis=-1)
            self.Wpool[s, i, j] = wasserstein(Fp[None, :], Fa, dt)
            self.noise[s, i, j] = simulation_noise(c, o, Fr, dt)
            self.xsim[s, i, j] = quantile(t, Fr, p)
            self.xsim_pool[s, i, j] = quantile(t, Fp, p)
            pooled[s] = Fp
        if self.expo in pooled:
            for s, Fp in pooled.items():
                self.W_vs_exp_sim[s, i, j] = wasserstein(Fp, pooled[self.expo], dt)

    def dataset(self, run_time: xr.DataArray | None) -> xr.Dataset:
        return _assemble(self, run_time)


def simulation_noise(count, overflow, F_rep, dt: float) -> float:
    """The simulation's own noise in W: what a replication's CDF is from the truth, estimated from the replications
    alone (no method, no exact): the mean over replications k of W(F_k, F_−k), F_−k the pooled CDF of the others,
    times √((K − 1)/K) — F_−k carries 1/(K − 1) of a replication's variance, so |F_k − F_−k| is √(K/(K − 1)) times
    |F_k − F| for independent, roughly normal errors. A method compared with the simulation has a mean W over
    replications of about this value even if it is the truth (``wasserstein_mean`` of exact, where it ran, is the
    same quantity measured against the truth). ``count`` (replication, t) and ``overflow`` (replication,) as
    recorded; ``F_rep`` their CDFs (:func:`sojourn.core.estimates.stats.cdf_at_left_edges`). NaN with fewer than two
    replications holding customers (a precision-driven run's padding holds none)."""
    n = count.sum(axis=-1) + overflow
    have = np.nonzero(n > 0)[0]
    K = have.size
    if K < 2:
        return float("nan")
    tot_c, tot_o = count[have].sum(axis=0), float(overflow[have].sum())
    w = [dt * np.abs(F_rep[k] - cdf_at_left_edges(tot_c - count[k], tot_o - overflow[k])).sum() for k in have]
    return float(np.mean(w) * np.sqrt((K - 1) / K))


def _approx_cdf(a: xr.Dataset) -> xr.DataArray:
    """(R, rho, approximation, t) CDF of an approximation dataset: ``cdf``, else 1 − ``sf`` (lazy if ``a`` is)."""
    if "cdf" in a:
        return a["cdf"].transpose("R", "rho", "approximation", "t")
    return a["sf"].transpose("R", "rho", "approximation", "t")


def compare(sim: xr.Dataset, approx: xr.Dataset, cfg: dict | None = None) -> xr.Dataset:
    """The comparison dataset of a merged simulation and approximation dataset (see module doc).

    In-memory entry point; :func:`compare_files` computes the same dataset streaming from the files.
    """
    cfg = {**DEFAULTS, **(cfg or {})}
    g = _Grid(sim, approx, cfg)
    count = sim["count"].transpose("service", "R", "rho", "replication", "t").values
    overflow = sim["overflow"].transpose("service", "R", "rho", "replication").values
    acdf = _approx_cdf(approx)
    is_cdf = "cdf" in approx
    acdf = acdf.values
    for i in range(len(g.Rs)):
        if i not in g.a_R:
            continue
        for j in range(len(g.rhos)):
            F = acdf[g.a_R[i], g.a_rho[j]].astype(float)
            Fa = F if is_cdf else 1.0 - F
            g.cell(i, j, Fa, list(count[:, i, j]), list(overflow[:, i, j]))
    return g.dataset(approx["run_time"] if "run_time" in approx else None)


def compare_files(sim_path, approx_path, cfg: dict | None = None, lock=None, workers: int = 2) -> xr.Dataset:
    """:func:`compare` of the merged files at ``sim_path`` and ``approx_path``, streaming over cells.

    Opens both files lazily and reads, per (R, rho) cell, only that cell's ``count``/``overflow``
    (all service laws that have data there) and approximated CDFs (all methods): peak memory is a
    few cells plus the (small) output arrays. A law/cell without customers (a gap of the grid:
    ``n_customers`` all 0) is not read. Every netCDF access holds ``lock`` (if given) while it runs,
    one read at a time, so that other threads may use the HDF5 library in between. ``workers``
    threads process cells concurrently (results do not depend on it).
    """
    cfg = {**DEFAULTS, **(cfg or {})}
    hold = lock if lock is not None else contextlib.nullcontext()
    with hold:
        sim = xr.open_dataset(sim_path, engine="netcdf4")
    try:
        with hold:
            approx = xr.open_dataset(approx_path, engine="netcdf4")
        try:
            with hold:
                g = _Grid(sim, approx, cfg)
                count = sim["count"].transpose("service", "R", "rho", "replication", "t")
                overflow = sim["overflow"].transpose("service", "R", "rho", "replication").values
                if "n_customers" in sim:
                    # n_customers = count.sum(t) + overflow: 0 over all replications <=> nothing to read
                    present = sim["n_customers"].transpose("service", "R", "rho", "replication").values
                    present = ~(np.nan_to_num(present.sum(axis=-1), nan=1.0) == 0)
                else:
                    present = np.ones(overflow.shape[:3], dtype=bool)
                acdf = _approx_cdf(approx)
                is_cdf = "cdf" in approx
                run_time = approx["run_time"].load() if "run_time" in approx else None
            S = len(g.services)

            def read(i, j):
                with hold:
                    F = acdf[g.a_R[i], g.a_rho[j]].values.astype(float)
                counts = [None] * S
                for s in range(S):
                    if present[s, i, j]:
                        with hold:
                            counts[s] = count[s, i, j].values
                return (F if is_cdf else 1.0 - F), counts

            def work(i, j):
                Fa, counts = read(i, j)
                g.cell(i, j, Fa, counts, list(overflow[:, i, j]))

            # cells are independent (disjoint output slices): 2 threads overlap one cell's reads
            # (HDF5 decompression) with another's numpy work (both release the GIL)
            cells = [(i, j) for i in range(len(g.Rs)) if i in g.a_R for j in range(len(g.rhos))]
            with ThreadPoolExecutor(workers, thread_name_prefix="compare") as pool:
                pending = deque()
                for i, j in cells:
                    if len(pending) >= 2 * workers:  # bounded: a few cells in memory at a time
                        pending.popleft().result()
                    pending.append(pool.submit(work, i, j))
                while pending:
                    pending.popleft().result()
        finally:
            with hold:
                approx.close()
    finally:
        with hold:
            sim.close()
    return g.dataset(run_time)


def _usability(g: _Grid):
    """(usable, unusable_reason) over (R, rho, approximation): see the module doc."""
    computed = np.isfinite(g.fit_violation)  # NaN = no CDF there (fit_validity), incl. cells never read
    reason = ((~computed) * NOT_COMPUTED + (computed & (g.fit_invalid != 0)) * NOT_A_CDF
              + (~g.approx_valid) * FLAGGED_BY_APPROXIMATION).astype(np.int8)
    return reason == 0, reason


#: dimensions and attributes shared by the comparison's data variables
_DIMS5 = ("service", "R", "rho", "approximation", "replication")
_DIMS4 = ("service", "R", "rho", "approximation")
_Q5 = ("service", "R", "rho", "approximation", "percentile")
_Q4 = ("service", "R", "rho", "percentile")
_M3 = ("R", "rho", "approximation")
_TU = "time units (1/mu)"
_CI_FLAGS = cf_flags({CI_NONE: "no_interval", CI_T: "student_t", CI_BOOTSTRAP: "bootstrap_bca"})
_MASKED = " (NaN where usable = 0)"


def _at_rec(x, rec):
    """(S, R, rho, M, Q) -> (S, R, rho, Q): the recommended method's value, NaN if none."""
    v = np.take_along_axis(x, np.maximum(rec, 0)[..., None, :], axis=-2)[..., 0, :]
    return np.where(rec >= 0, v, np.nan)


def _statistics(g: _Grid) -> SimpleNamespace:
    """W, the percentile errors (absolute, relative) and the simulated percentiles, per replication, pooled and over
    replications with their intervals, NaN where a method is unusable; ``raw``: the summaries unmasked."""
    cfg = g.cfg
    W, Wpool, xsim, xsim_pool, xapp = g.W, g.Wpool, g.xsim, g.xsim_pool, g.xapp
    W_exact, err_exact = g.W_exact, g.err_exact
    usable, reason = _usability(g)  # (R, rho, approximation): unusable methods never win, their values are NaN
    W = np.where(np.isfinite(W), W, np.nan)
    err = xapp[None, :, :, :, None, :] - xsim[:, :, :, None, :, :]  # (S, R, rho, approximation, rep, q)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = err / xsim[:, :, :, None, :, :]
    err_pool = xapp[None] - xsim_pool[:, :, :, None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        rel_pool = err_pool / xsim_pool[:, :, :, None, :]

    # the intervals of every method, usable or not (the raw_ summaries), with the random streams they always had
    # a precision-driven run pads each cell's replications beyond replications_used: only its own count
    # (sojourn.core.estimates.precision; None = every entry present)
    here = None if g.used is None else replications_present(g.reps, g.used)[:, :, :, None, :]  # (S,R,rho,1,rep)
    Wm, Wlo, Whi, Wci = interval(W, cfg, seed=1, present=here)
    per_q = None if here is None else here[:, :, :, :, None, :]
    Em, Elo, Ehi, Eci = interval(np.moveaxis(err, 4, -1), cfg, seed=2, present=per_q)  # (S,R,rho,method,q)
    Rm, Rlo, Rhi, Rci = interval(np.moveaxis(rel, 4, -1), cfg, seed=3, present=per_q)
    Sm, Slo, Shi, Sci = interval(np.moveaxis(xsim, 3, -1), cfg, seed=4, present=here)  # (S,R,rho,q)
    raw = {"wasserstein_mean": Wm, "wasserstein_ci_low": Wlo, "wasserstein_ci_high": Whi,
           "percentile_error_mean": Em, "percentile_error_ci_low": Elo, "percentile_error_ci_high": Ehi,
           "relative_percentile_error_mean": Rm, "relative_percentile_error_ci_low": Rlo,
           "relative_percentile_error_ci_high": Rhi, "approx_percentile": xapp}

    def mask(x, axis):
        """``x`` with NaN where the method is not usable (and where it is not finite); ``axis``: the
        position of (R, rho, approximation) in ``x``."""
        u = usable.reshape((1,) * axis + usable.shape + (1,) * (x.ndim - axis - 3))
        return np.where(u & np.isfinite(x), x, np.nan)

    W, Wm, Wlo, Whi, Wpool = (mask(x, 1) for x in (W, Wm, Wlo, Whi, Wpool))
    err, Em, Elo, Ehi, err_pool = (mask(x, 1) for x in (err, Em, Elo, Ehi, err_pool))
    rel, Rm, Rlo, Rhi, rel_pool = (mask(x, 1) for x in (rel, Rm, Rlo, Rhi, rel_pool))
    xapp = mask(xapp, 0)
    e = g.methods.index("exact") if "exact" in g.methods else None
    if e is not None:  # against exact: NaN where exact itself is unusable, too
        W_exact = np.where(usable[:, :, e, None], W_exact, np.nan)
        err_exact = np.where(usable[:, :, e, None, None], err_exact, np.nan)
    W_exact, err_exact = mask(W_exact, 0), mask(err_exact, 0)
    Wci, Eci, Sci = (np.where(np.isfinite(lo) & np.isfinite(hi), c, CI_NONE).astype(np.int8)
                     for c, lo, hi in ((Wci, Wlo, Whi), (Eci, Elo, Ehi), (Sci, Slo, Shi)))
    return SimpleNamespace(
        usable=usable, reason=reason, e=e, raw=raw, conf=float(cfg["confidence"]), W=W, Wm=Wm, Wlo=Wlo, Whi=Whi,
        Wci=Wci, Wpool=Wpool, err=err, Em=Em, Elo=Elo, Ehi=Ehi, Eci=Eci, err_pool=err_pool, Rm=Rm, Rlo=Rlo, Rhi=Rhi,
        rel_pool=rel_pool, xsim=xsim, Sm=Sm, Slo=Slo, Shi=Shi, Sci=Sci, xsim_pool=xsim_pool, xapp=xapp,
        W_exact=W_exact, err_exact=err_exact, W_vs_exp_sim=g.W_vs_exp_sim)


def _best_methods(g: _Grid, v: SimpleNamespace) -> None:
    """v.best (service, R, rho): the usable method other than exact with the smallest mean W; v.tied: those whose W
    CI overlaps the best's; v.best_pct (…, percentile): the smallest |pooled percentile error|."""
    methods = g.methods
    S, NR, NP, NM, NK, NQ = g.shape
    cand_idx = [methods.index(m) for m in methods if m != "exact"]
    v.best = np.full((S, NR, NP), "", dtype=object)
    v.tied = np.zeros((S, NR, NP, NM), dtype=np.int8)
    v.best_pct = np.full((S, NR, NP, NQ), "", dtype=object)
    Wm, Wlo, Whi = v.Wm, v.Wlo, v.Whi
    for s, i, j in np.ndindex(S, NR, NP):
        ci_idx = [m for m in cand_idx if v.usable[i, j, m]]
        if not ci_idx or not np.isfinite(Wm[s, i, j, ci_idx]).any():
            continue
        b = ci_idx[int(np.nanargmin(Wm[s, i, j, ci_idx]))]
        v.best[s, i, j] = methods[b]
        for m in ci_idx:
            if np.isfinite(Wm[s, i, j, m]):
                tie = m == b or ties_with_best(Wm[s, i, j], Wlo[s, i, j], Whi[s, i, j], m, b)
                v.tied[s, i, j, m] = 1 if tie else 0
        for q in range(NQ):
            ae = np.abs(v.err_pool[s, i, j, ci_idx, q])
            if np.isfinite(ae).any():
                v.best_pct[s, i, j, q] = methods[ci_idx[int(np.nanargmin(ae))]]


def _recommendations(g: _Grid, v: SimpleNamespace) -> None:
    """The tail-aware decisions per (law, R, rho, percentile) (tail_decisions) into ``v``; no ranking where the
    simulation's run is too short to trust."""
    methods, e, usable, xapp = g.methods, v.e, v.usable, v.xapp
    S, NR, NP, NM, NK, NQ = g.shape
    v.threshold = float(g.cfg["min_tail_customers"])
    v.tail_n, v.few = tail_customers(g.n_customers, g.pct, v.threshold)  # (S, R, rho, q)
    simulated = (g.n_customers.sum(axis=-1) > 0)[..., None]  # (S, R, rho, 1)
    prefer = np.full((S, NR, NP, NQ), -1)
    if e is not None and g.expo is not None:
        # exact solves the M/M/R model only, and gives a percentile only where it lies on its time grid
        prefer[g.expo] = np.where(usable[:, :, e, None] & np.isfinite(xapp[:, :, e, :]), e, -1)
    # T where exact is not: if its claim (never below exact) holds at every point of this comparison where both ran
    t_idx = methods.index(TAIL_METHOD) if TAIL_METHOD in methods else None
    v.check = tail_check(v.err_exact[:, :, t_idx] if (t_idx is not None and e is not None) else np.full(1, np.nan),
                         g.dt)
    prefer_tail = np.full((S, NR, NP, NQ), -1)
    if t_idx is not None and g.expo is not None and v.check["preferred"]:
        prefer_tail[g.expo] = np.where(usable[:, :, t_idx, None] & np.isfinite(xapp[:, :, t_idx, :]), t_idx,
                                       -1)  # T solves M/M/R too
    v.short = short = (g.run_valid == 0)  # (S, R, rho): the simulation's run is too short to trust there
    v.optimistic, v.optimistic_by, most, v.rec, v.status = tail_decisions(
        v.Em, v.Ehi, v.Rm, usable[None, :, :, :, None], v.few, simulated, prefer, prefer_tail, short[..., None])
    names = np.asarray(methods + [""], dtype=object)  # index −1 → ""
    v.most_accurate = names[most]
    v.recommended = np.where(np.isin(v.status, [STATUS_ALL_OPTIMISTIC, STATUS_TOO_FEW, STATUS_NO_VERDICT,
                                                STATUS_RUN_TOO_SHORT]), SIMULATE, names[v.rec])
    v.best = np.where(short, "", v.best)  # no ranking against a simulation too short to trust
    v.best_pct = np.where(short[..., None], "", v.best_pct)
    v.tied = np.where(short[..., None], 0, v.tied).astype(np.int8)


def _assemble(g: _Grid, run_time) -> xr.Dataset:
    v = _statistics(g)
    _best_methods(g, v)
    _recommendations(g, v)
    variables = {}
    for part in (_distance_variables, _error_variables, _usable_variables, _decision_variables, _check_variables):
        variables.update(part(g, v))
    ds = xr.Dataset(variables, coords={
        "service": np.asarray(g.services, dtype=str),
        "R": np.asarray(g.Rs, np.int64),
        "rho": g.rhos,
        "approximation": np.asarray(g.methods, dtype=str),
        "replication": g.reps,
        "percentile": g.pct,
    })
    _finish(ds, g, v, run_time)
    return ds


def _distance_variables(g: _Grid, v: SimpleNamespace) -> dict:
    """Data variables of the comparison: the simulated percentiles and the Wasserstein distances."""
    conf = v.conf
    threshold = v.threshold
    return {
        "wasserstein": (_DIMS5, v.W,
            _attrs("Wasserstein-1 distance between approximated and simulated CDF, per replication" + _MASKED, _TU)),
        "wasserstein_mean": (_DIMS4, v.Wm, _attrs("mean over replications of the Wasserstein distance" + _MASKED, _TU)),
        "wasserstein_ci_low": (_DIMS4, v.Wlo, _attrs(f"lower end of the {conf:.0%} CI of wasserstein_mean", _TU)),
        "wasserstein_ci_high": (_DIMS4, v.Whi, _attrs(f"upper end of the {conf:.0%} CI of wasserstein_mean", _TU)),
        "wasserstein_ci_method": (_DIMS4, v.Wci, _attrs("method of the CI of wasserstein_mean", **_CI_FLAGS)),
        "wasserstein_pooled": (_DIMS4, v.Wpool,
            _attrs("Wasserstein distance to the pooled simulated CDF" + _MASKED, _TU)),
        "sim_percentile": (
            ("service", "R", "rho", "replication", "percentile"),
            v.xsim,
            _attrs(
                "simulated sojourn-time percentile (F linear between grid points, where it first "
                "exceeds p), per replication",
                _TU,
            ),
        ),
        "sim_percentile_mean": (_Q4, v.Sm, _attrs("mean over replications of sim_percentile", _TU)),
        "sim_percentile_ci_low": (_Q4, v.Slo, _attrs(f"lower end of the {conf:.0%} CI of sim_percentile_mean", _TU)),
        "sim_percentile_ci_high": (_Q4, v.Shi, _attrs(f"upper end of the {conf:.0%} CI of sim_percentile_mean", _TU)),
        "sim_percentile_ci_method": (_Q4, v.Sci, _attrs("method of the CI of sim_percentile_mean", **_CI_FLAGS)),
        "sim_percentile_pooled": (_Q4, v.xsim_pool, _attrs("simulated sojourn-time percentile of the pooled CDF", _TU)),
        "tail_customers_per_replication": (
            _Q4,
            v.tail_n,
            _attrs(
                "expected number of simulated customers beyond the percentile, n_k (1 - p), in "
                "the replication with the fewest customers (0: not simulated)"
            ),
        ),
        "few_tail_customers": (
            _Q4,
            v.few,
            _attrs(
                f"the simulation has fewer than {threshold:g} customers beyond the percentile "
                "(min_tail_customers): the percentile cannot be estimated there and drives no "
                "recommendation; 1 = in some replication (n_k (1 - p)), 2 = even pooled "
                "(sum_k n_k (1 - p)) or not simulated",
                flags={TAIL_ENOUGH: "enough", TAIL_FEW_PER_REPLICATION: "few_per_replication",
                       TAIL_FEW_POOLED: "few_pooled"},
            ),
        ),
    }


def _error_variables(g: _Grid, v: SimpleNamespace) -> dict:
    """Data variables of the comparison: the approximated percentiles and their errors against the simulation."""
    conf = v.conf
    return {
        "approx_percentile": (
            _M3 + ("percentile",),
            v.xapp,
            _attrs(
                "approximated sojourn-time percentile (F linear between grid points, where it "
                "first exceeds p)" + _MASKED,
                _TU,
            ),
        ),
        "percentile_error": (("service", "R", "rho", "approximation", "replication", "percentile"), v.err,
            _attrs("approx - sim percentile per replication (negative = optimistic)" + _MASKED, _TU)),
        "percentile_error_mean": (_Q5, v.Em, _attrs("mean over replications of percentile_error", _TU)),
        "percentile_error_ci_low": (_Q5, v.Elo,
            _attrs(f"lower end of the {conf:.0%} CI of percentile_error_mean", _TU)),
        "percentile_error_ci_high": (_Q5, v.Ehi,
            _attrs(f"upper end of the {conf:.0%} CI of percentile_error_mean", _TU)),
        "percentile_error_ci_method": (_Q5, v.Eci, _attrs("method of the CI of percentile_error_mean", **_CI_FLAGS)),
        "percentile_error_pooled": (_Q5, v.err_pool,
            _attrs("approx - pooled sim percentile (negative = optimistic)" + _MASKED, _TU)),
        "relative_percentile_error_mean": (_Q5, v.Rm,
            _attrs("mean over replications of (approx - sim)/sim percentile" + _MASKED)),
        "relative_percentile_error_ci_low": (_Q5, v.Rlo,
            _attrs("lower end of the CI of relative_percentile_error_mean")),
        "relative_percentile_error_ci_high": (_Q5, v.Rhi,
            _attrs("upper end of the CI of relative_percentile_error_mean")),
        "relative_percentile_error_pooled": (_Q5, v.rel_pool,
            _attrs("(approx - pooled sim)/pooled sim percentile" + _MASKED)),
    }


def _usable_variables(g: _Grid, v: SimpleNamespace) -> dict:
    """Data variables of the comparison: usability and the best methods by W and by pooled percentile error."""
    return {
        "usable": (
            _M3,
            v.usable.astype(np.int8),
            _attrs(
                "1 if the method's values may be used at this cell: computed, a CDF on the grid "
                "(fit_invalid = 0) and not flagged by the approximation dataset itself"
                + (f" (its '{g.approx_valid_source}')" if g.approx_valid_source else " (it has no verdict of its own)")
                + "; every statistic of a method is NaN where 0 and no decision considers it",
                flags={0: "unusable", 1: "usable"},
            ),
        ),
        "unusable_reason": (_M3, v.reason, _attrs("why usable = 0 (bit mask; 0 = usable)", **UNUSABLE_FLAG_ATTRS)),
        "best_method": (
            ("service", "R", "rho"),
            v.best.astype(str),
            _attrs(
                "method with the smallest mean Wasserstein distance (exact and unusable methods "
                "excluded); W weighs the body of the distribution, see recommended for the tail"
            ),
        ),
        "tied_with_best": (
            _DIMS4,
            v.tied,
            _attrs(
                "1 if the method's Wasserstein CI overlaps the best method's CI (0 for unusable methods)",
                flags={0: "no", 1: "yes"},
            ),
        ),
        "best_method_percentile": (_Q4, v.best_pct.astype(str),
            _attrs("method with the smallest |pooled percentile error| (exact and unusable methods excluded)")),
    }


def _decision_variables(g: _Grid, v: SimpleNamespace) -> dict:
    """Data variables of the comparison: the tail decisions (optimistic verdicts, most accurate and recommended
    methods)."""
    return {
        "optimistic": (
            _Q5,
            v.optimistic,
            _attrs(
                "1 if the method underestimates the percentile beyond its CI: the whole CI of "
                "percentile_error_mean "
                "is below 0 (percentile_error_ci_high < 0), however small the error (optimistic_by); 0 if not; -1: "
                "no verdict (unusable, no mean error or no CI)",
                flags={NO_VERDICT: "no_verdict", NOT_OPTIMISTIC: "not_optimistic", OPTIMISTIC: "optimistic"},
            ),
        ),
        "optimistic_by": (
            _Q5,
            v.optimistic_by,
            _attrs(
                "share by which an optimistic method underestimates the percentile: "
                "-relative_percentile_error_mean "
                "where optimistic = 1, 0 where optimistic = 0, NaN without a verdict"
            ),
        ),
        "most_accurate": (
            _Q4,
            v.most_accurate.astype(str),
            _attrs(
                "usable method with the smallest |percentile_error_mean| (absolute: the distance to "
                "sim_percentile_mean; exact included; first in coordinate order on exact ties); empty where "
                "few_tail_customers != 0 or nothing usable"
            ),
        ),
        "recommended": (
            _Q4,
            v.recommended.astype(str),
            _attrs(
                "the method to use for this percentile: exact where it ran and is usable (exponential service), "
                "else T where it is preferred (conservative, checked against exact in this comparison: attribute "
                "tail_preferred), else the most accurate usable method that is not optimistic (optimistic = 0); "
                "'simulate' where "
                "none qualifies or the simulation has too few customers beyond the percentile to judge; empty "
                "where this law was not simulated; see recommendation_status"
            ),
        ),
        "recommendation_status": (_Q4, v.status, _attrs("why recommended is what it is", **STATUS_FLAG_ATTRS)),
        "recommended_relative_error": (
            _Q4,
            _at_rec(v.Rm, v.rec),
            _attrs(
                "relative_percentile_error_mean of the recommended method (NaN where it is 'simulate' or empty; "
                "for exact where few_tail_customers != 0, against a simulated percentile that is not estimable)"
            ),
        ),
        "recommended_relative_error_ci_low": (_Q4, _at_rec(v.Rlo, v.rec),
            _attrs("lower end of the CI of recommended_relative_error")),
        "recommended_relative_error_ci_high": (_Q4, _at_rec(v.Rhi, v.rec),
            _attrs("upper end of the CI of recommended_relative_error")),
    }


def _check_variables(g: _Grid, v: SimpleNamespace) -> dict:
    """Data variables of the comparison: the fit checks, the comparisons with exact and with the exponential law,
    the raw (unmasked) summaries."""
    return {
        "fit_invalid": (
            _M3,
            g.fit_invalid,
            _attrs(
                f"approximated CDF is not a CDF on the grid beyond round-off ({FIT_TOLERANCE:g}); "
                "0 = valid or not computed",
                **FIT_FLAG_ATTRS,
            ),
        ),
        "fit_violation": (
            _M3,
            g.fit_violation,
            _attrs(
                "largest excursion of the approximated CDF below 0, above 1 or downwards "
                "between grid points (0 if valid, NaN if not computed)"
            ),
        ),
        "wasserstein_vs_exact": (
            _M3,
            v.W_exact,
            _attrs(
                "Wasserstein distance between each method's CDF and the exact CDF (NaN where either is unusable)",
                _TU,
            ),
        ),
        "percentile_error_vs_exact": (_M3 + ("percentile",), v.err_exact,
            _attrs("method - exact percentile (NaN where either is unusable)", _TU)),
        "not_run": (
            _M3,
            (((v.reason & NOT_COMPUTED) != 0) | g.over_budget).astype(np.int8),
            _attrs(
                "1 where the method did not run: not computed, over its budget or its truncation cap "
                "not reached (as opposed to a computed result that is not a CDF)",
                flags={0: "ran", 1: "not_run"},
            ),
        ),
        "sim_noise_wasserstein": (
            ("service", "R", "rho"),
            g.noise,
            _attrs(
                "the simulation's own noise in the Wasserstein distance: a replication's "
                "estimated W to the true CDF, from the replications alone (the mean of "
                "W(replication, pooled others) times sqrt((K - 1)/K)); a method compared "
                "with the simulation has about this wasserstein_mean even if exact",
                _TU,
                method="sojourn.jsq_ps.compare.simulation_noise",
            ),
        ),
        "wasserstein_vs_exponential_sim": (
            ("service", "R", "rho"),
            v.W_vs_exp_sim,
            _attrs(
                "Wasserstein distance between this law's pooled simulated CDF "
                "and the exponential law's (M/G/R vs M/M/R)",
                _TU,
            ),
        ),
        **{
            f"raw_{name}": (
                _M3 + ("percentile",) if name == "approx_percentile" else _Q5 if "percentile" in name else _DIMS4,
                x,
                _attrs(
                    f"{name} unmasked: also where usable = 0, where values may be meaningless "
                    "(e.g. 1e36 or inf from an exploded fit); for the reproduction of the "
                    "published tables only, never for decisions",
                    _TU if not name.startswith("relative") else "1",
                ),
            )
            for name, x in v.raw.items()
        },
    }


def _finish(ds: xr.Dataset, g: _Grid, v: SimpleNamespace, run_time) -> None:
    """The comparison's run-length verdict, replication counts, run times and the attributes that state its
    conventions and rules."""
    ds["sim_run_valid"] = (("service", "R", "rho"), g.run_valid, _attrs(
        "the simulation's run-length verdict (its run_valid, sojourn.core.estimates.runlength): 1 long enough, "
        "0 too short to "
        "trust (its statistics are kept but judge nothing: no best_method, optimistic verdict or most_accurate "
        "there, recommendation_status run_too_short unless exact or T apply), -1 not simulated or not judged",
        flags={-1: "not_judged", 0: "too_short", 1: "long_enough"}))
    ds.attrs["run_length"] = (f"{int(v.short.sum())} of {int((g.run_valid >= 0).sum())} simulated cells too short to "
                              "trust (sim_run_valid = 0): excluded from every decision")
    label_coords(ds)
    if g.used is not None:
        ds["replications_used"] = (("service", "R", "rho"), g.used.astype(np.int64),
                                   _attrs("replications of the cell (entries beyond are padding: NaN)"))
    if run_time is not None:
        ds["run_time"] = run_time.transpose("R", "rho", "approximation").reindex(R=g.Rs, rho=g.rhos)
        ds["run_time"].attrs = _attrs("run time of the approximation method (not reproducible)", "s")
    ds.attrs["cdf_convention"] = (
        "grid t_i = i*dt; simulated F(t_i) = P(S < t_i) from histogram bins [t_i, t_i + dt) "
        "(sojourn.core.estimates.stats.cdf_at_left_edges); approximated F(t_i) = cdf at t_i")
    ds.attrs["wasserstein_definition"] = "dt * sum_i |F_sim(t_i) - F_approx(t_i)| (paper eq. 27)"
    ds.attrs["percentile_definition"] = (
        "where F, linear between the grid points t_i, first exceeds p (the paper's first "
        "grid t_i with F(t_i) > p is the end of that step, up to dt above); error = "
        "approx - sim (negative = optimistic)"
    )
    ds.attrs["recommendation_rule"] = (
        "per (service, R, rho, percentile), usable methods only: exact where it ran and is usable (exponential "
        "service); else T where tail_preferred = 1 (exponential service, T usable, and not optimistic where "
        "few_tail_customers = 0); else, if few_tail_customers = 0, the usable method with the smallest "
        "|percentile_error_mean| among those with optimistic = 0 (CI of the mean percentile error not entirely "
        "below 0); else 'simulate'")
    ds.attrs["tail_preferred"] = int(v.check["preferred"])
    ds.attrs["tail_checked_points"] = v.check["checked_points"]
    ds.attrs["tail_below_exact_points"] = v.check["below_exact_points"]
    ds.attrs["tail_largest_below_exact"] = v.check["largest_below"]
    ds.attrs["tail_rule"] = (
        "T (conservative by construction) is preferred where exact is not only if, at every (R, rho, percentile) "
        "where both are usable, T's percentile is not below exact's by more than one grid step; "
        f"{v.check['checked_points']} such points, {v.check['below_exact_points']} below")
    ds.attrs["time_step"] = g.dt  # the t grid's step: a percentile difference below it is within the grid's resolution


# ------------------------------------------------------------------------------ against the best reference
#: ``reference`` values of :func:`against_reference`
REF_NONE, REF_EXACT, REF_SIMULATION = 0, 1, 2
REFERENCE_NAMES = {REF_NONE: "none", REF_EXACT: "exact", REF_SIMULATION: "simulation"}


def reference_usable(c: xr.Dataset) -> xr.DataArray:
    """(service, R, rho, percentile) True where the simulated percentile is a usable reference
    (:mod:`sojourn.core.estimates.reference`): simulated, at least ``min_tail_customers`` (100) customers beyond it in
    every
    replication (``few_tail_customers`` = 0) and the run not judged too short (``sim_run_valid`` ≠ 0)."""
    ok = c["few_tail_customers"] == TAIL_ENOUGH
    if "sim_run_valid" in c:
        ok = ok & (c["sim_run_valid"] != 0)
    return ok


def run_usable(c: xr.Dataset) -> xr.DataArray:
    """(service, R, rho) False where the run-length guard judged the simulation too short to be a reference of the
    whole CDF (``sim_run_valid`` = 0); a cell never simulated has no values to use anyway."""
    if "sim_run_valid" in c:
        return c["sim_run_valid"] != 0
    return xr.ones_like(c["best_method"], dtype=bool)


def exact_usable(c: xr.Dataset) -> xr.DataArray | None:
    """(R, rho) True where exact ran and is usable (None: no exact in this comparison)."""
    if "exact" not in c["approximation"].values.tolist():
        return None
    return c["usable"].sel(approximation="exact") != 0


def method_not_run(cs: xr.Dataset) -> np.ndarray:
    """(R, rho, approximation) of one service law's comparison: True where a method has no value because it did not
    run (not computed, over its budget, or its truncation cap reached; ``validity_reason`` where the figures added it
    from the approximation file), as opposed to a computed result that is not a CDF."""
    from .solve.guards import OVER_BUDGET, TRUNCATION_NOT_REACHED

    if "not_run" in cs:
        return cs["not_run"].transpose("R", "rho", "approximation").values != 0
    reason = cs["unusable_reason"].transpose("R", "rho", "approximation").values.astype(int)
    validity = (cs["validity_reason"].transpose("R", "rho", "approximation").values.astype(int)
                if "validity_reason" in cs else np.zeros_like(reason))
    return ((reason & NOT_COMPUTED) != 0) | ((validity & (OVER_BUDGET | TRUNCATION_NOT_REACHED)) != 0)


def w_against_reference(c: xr.Dataset, service: str = EXPONENTIAL) -> xr.Dataset:
    """Each method's Wasserstein distance W to its best reference, for ``service``: exact's CDF where exact ran and is
    usable (exponential service; not exact itself), else the simulated CDF where the run is usable
    (:func:`run_usable`). Variables over (R, rho, approximation): ``W``, ``low``/``high`` (its CI: against the
    simulation the comparison's, against exact W itself), ``reference`` (REF_*), ``status`` (as
    :func:`against_reference`)."""
    cs = c.sel(service=service)
    dims = ("R", "rho", "approximation")
    methods = cs["approximation"].values.tolist()
    W, lo, hi = (cs[v].transpose(*dims).values.astype(float) for v in
                 ("wasserstein_mean", "wasserstein_ci_low", "wasserstein_ci_high"))
    usable = cs["usable"].transpose(*dims).values != 0
    run_ok = run_usable(c).sel(service=service).transpose("R", "rho").values[..., None] & np.isfinite(W)
    use_ex = np.zeros(W.shape, bool)
    W_ex = np.full(W.shape, np.nan)
    exact = exact_usable(cs) if service == EXPONENTIAL else None
    if exact is not None:
        W_ex = c["wasserstein_vs_exact"].transpose(*dims).values.astype(float)
        use_ex = exact.transpose("R", "rho").values[..., None] & np.isfinite(W_ex) & usable
        use_ex[:, :, methods.index("exact")] = False
    out = {"W": np.where(use_ex, W_ex, np.where(run_ok, W, np.nan)),
           "low": np.where(use_ex, W_ex, np.where(run_ok, lo, np.nan)),
           "high": np.where(use_ex, W_ex, np.where(run_ok, hi, np.nan))}
    ref = np.where(use_ex, REF_EXACT, np.where(run_ok, REF_SIMULATION, REF_NONE)).astype(np.int8)
    status = np.where(ref != REF_NONE, "", np.where(~usable, np.where(method_not_run(cs), "not_run", "invalid"),
                                                    "too_short"))
    coords = {k: cs[k].values for k in dims}
    return xr.Dataset({**{k: (dims, v) for k, v in out.items()}, "reference": (dims, ref),
                       "status": (dims, status.astype(str))}, coords=coords)


def against_reference(c: xr.Dataset, service: str = EXPONENTIAL) -> xr.Dataset:
    """Each method's relative percentile error against the best reference there, for ``service``: against exact where
    exact ran and is usable (exponential service: the model it solves; no noise), else against the simulation where
    its percentile is a usable reference (:func:`reference_usable`); none elsewhere. Exact itself is always set
    against the simulation (a check of both). Variables over (R, rho, approximation, percentile):

    ``error`` (relative: (x_method − x_ref)/x_ref), ``low``/``high`` (its CI: against the simulation the comparison's
    interval, against exact the value itself), ``reference`` (REF_EXACT, REF_SIMULATION, REF_NONE), ``significant``
    (against exact: the percentiles differ by more than one grid step ``time_step``, the grid's resolution; against
    the simulation: the CI excludes 0), ``status`` ("" a value; "too_short" the reference is too short; "beyond_grid"
    the method's or exact's percentile lies beyond the time grid; "not_run"; "invalid": a method that is not usable
    there).
    """
    cs = c.sel(service=service)
    dt = float(c.attrs.get("time_step", 0.01))
    dims = ("R", "rho", "approximation", "percentile")
    methods = cs["approximation"].values.tolist()
    rel = cs["relative_percentile_error_mean"].transpose(*dims).values.astype(float)
    lo = cs["relative_percentile_error_ci_low"].transpose(*dims).values.astype(float)
    hi = cs["relative_percentile_error_ci_high"].transpose(*dims).values.astype(float)
    usable = (cs["usable"].transpose("R", "rho", "approximation").values != 0)[..., None]
    ref_sim = reference_usable(c).sel(service=service).transpose("R", "rho", "percentile").values[:, :, None, :]
    shape = rel.shape
    err, elo, ehi = (np.full(shape, np.nan) for _ in range(3))
    ref = np.full(shape, REF_NONE, np.int8)
    sig = np.zeros(shape, bool)
    exact = exact_usable(cs) if service == EXPONENTIAL else None
    if exact is not None:
        ex = exact.transpose("R", "rho").values[:, :, None, None] & np.ones(shape, bool)
        xe = cs["approx_percentile"].sel(approximation="exact").transpose("R", "rho", "percentile").values
        d = cs["percentile_error_vs_exact"].transpose(*dims).values.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            r_ex = d / xe[:, :, None, :]
        ex &= np.isfinite(r_ex) & usable
        ex[:, :, methods.index("exact"), :] = False  # exact against itself says nothing: against the simulation
        err, elo, ehi = (np.where(ex, r_ex, x) for x in (err, elo, ehi))
        ref[ex] = REF_EXACT
        sig |= ex & (np.abs(d) > dt * (1.0 + 1e-6))
    sim = (ref == REF_NONE) & ref_sim & usable & np.isfinite(rel)
    err, elo, ehi = (np.where(sim, v, x) for v, x in ((rel, err), (lo, elo), (hi, ehi)))
    ref[sim] = REF_SIMULATION
    sig |= sim & ((lo > 0) | (hi < 0))
    not_run = method_not_run(cs)[..., None]
    x = cs["approx_percentile"].transpose(*dims).values.astype(float)
    beyond = ~np.isfinite(x)  # the method's percentile lies beyond the time grid
    if exact is not None:
        beyond |= exact.transpose("R", "rho").values[:, :, None, None] & ~np.isfinite(xe)[:, :, None, :]
    status = np.where(ref != REF_NONE, "", np.where(~usable, np.where(not_run, "not_run", "invalid"),
                                                    np.where(beyond, "beyond_grid", "too_short")))
    coords = {k: cs[k].values for k in dims}
    da = lambda x: xr.DataArray(x, dims=dims, coords=coords)
    return xr.Dataset({"error": da(err), "low": da(elo), "high": da(ehi), "reference": da(ref),
                       "significant": da(sig), "status": da(status.astype(str))})


def comparison_encoding(ds: xr.Dataset) -> dict:
    enc = {}
    for name, var in ds.data_vars.items():
        if var.dtype.kind == "f":
            enc[name] = {"zlib": True, "complevel": 5, "shuffle": True, "dtype": "float32"}
        elif var.dtype.kind in "iu":
            enc[name] = {"zlib": True, "complevel": 5, "shuffle": True}
    return enc


def _law_dataset(services, Rs, rhos, methods, cfg, p, xapp, xsim, few, marg, ok, present) -> xr.Dataset:
    """The law methods' comparison dataset from their percentiles and the simulated ones per replication (see
    :func:`law_comparison`)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = xapp[:, :, :, :, None, :] / xsim[:, :, :, None, :, :] - 1.0  # (S, R, rho, method, rep, q)
    per = present[:, :, :, None, :, None]
    Rm, Rlo, Rhi, _ = interval(np.moveaxis(rel, 4, -1), cfg, seed=5,
        present=None if present.all() else np.moveaxis(np.broadcast_to(per, rel.shape), 4, -1))
    hide = few[:, :, :, None, :] | (ok[..., None] == 0)
    Rm, Rlo, Rhi = (np.where(hide, np.nan, x) for x in (Rm, Rlo, Rhi))
    verdict = np.where(np.isfinite(Rhi), (Rhi < 0).astype(np.int8), np.int8(-1)).astype(np.int8)
    dims = ("service", "R", "rho", "law_method", "percentile")
    ds = xr.Dataset(
        {"law_percentile": (dims, np.where(ok[..., None] == 1, xapp, np.nan),
                            _attrs("the law method's percentile of the sojourn time", "time units")),
         "law_relative_error_mean": (dims, Rm, _attrs("mean over replications of the law method's relative "
                                                      "percentile error (method / simulation - 1)")),
         "law_relative_error_ci_low": (dims, Rlo, _attrs("lower end of its confidence interval")),
         "law_relative_error_ci_high": (dims, Rhi, _attrs("upper end of its confidence interval")),
         "law_optimistic": (dims, verdict, _attrs("1: the error's CI lies below 0 (optimistic beyond the "
                                                  "simulation's noise); 0: not; -1: no verdict")),
         "law_margin": (dims, marg, _attrs("the law method's stated margin (relative; numerical steps only)")),
         "law_valid": (dims[:4], ok, _attrs("1: the law method ran and passed the analytic guards"))},
        coords={"service": np.asarray(services, dtype=str), "R": Rs, "rho": rhos,
                "law_method": np.asarray(methods, dtype=str),
                "percentile": np.asarray(cfg["percentiles"], dtype=float)})
    return ds


def law_comparison(sim_path, law_path, cfg: dict | None = None, lock=None) -> xr.Dataset:
    """The M/G/R cells' law methods (``law_approximation.nc``: T with the law itself,
    :mod:`sojourn.jsq_ps.solve.tail_ph`) against each law's simulation, on (service, R, rho, law_method,
    percentile): the method's percentile ``law_percentile``, its relative error per replication summarised as
    ``law_relative_error_mean`` with its CI (``_ci_low``, ``_ci_high``: the same intervals as the M/M/R methods'
    ``relative_percentile_error_*``), ``law_optimistic`` (1: the CI lies below 0, the method promises a shorter tail
    than the simulation beyond its noise; 0: not; −1: no verdict), ``law_margin`` (the method's stated margin,
    numerical steps only) and ``law_valid``; NaN where the simulation has too few customers beyond the percentile
    (``few_tail_customers`` of the main comparison, the same rule) or the method is not valid."""
    cfg = {**DEFAULTS, **(cfg or {})}
    hold = lock if lock is not None else contextlib.nullcontext()
    p = np.asarray(cfg["percentiles"], dtype=float) / 100.0
    with hold:
        law = xr.open_dataset(law_path, engine="netcdf4")
        sim = xr.open_dataset(sim_path, engine="netcdf4")
    try:
        with hold:
            t = sim["t"].values
            services = [s for s in law["service"].values.tolist() if s in sim["service"].values.tolist()]
            Rs, rhos = sim["R"].values, sim["rho"].values
            methods = law["approximation"].values.tolist()
            sf = law["sf"].transpose("service", "R", "rho", "approximation", "t")
            valid = law["valid"].transpose("service", "R", "rho", "approximation").values
            lR, lrho, lsvc = law["R"].values.tolist(), law["rho"].values, law["service"].values.tolist()
            margin = law["margin"].transpose("service", "R", "rho", "approximation", "percentile")
            mpct = law["percentile"].values
            reps = sim["replication"].values
            used = sim["replications_used"].transpose("service", "R", "rho").values \
                if "replications_used" in sim else None
        S, NR, NP, NM, NQ, NK = len(services), len(Rs), len(rhos), len(methods), p.size, reps.size
        xapp = np.full((S, NR, NP, NM, NQ), np.nan)
        xsim = np.full((S, NR, NP, NK, NQ), np.nan)
        few = np.zeros((S, NR, NP, NQ), bool)
        marg = np.full((S, NR, NP, NM, NQ), np.nan)
        ok = np.zeros((S, NR, NP, NM), np.int8)
        present = np.ones((S, NR, NP, NK), bool)
        for a, svc in enumerate(services):
            s_sim = sim["service"].values.tolist().index(svc)
            s_law = lsvc.index(svc)
            for i, R in enumerate(Rs):
                if int(R) not in lR:
                    continue
                i_law = lR.index(int(R))
                for j, rho in enumerate(rhos):
                    hit = np.flatnonzero(np.abs(lrho - rho) < 1e-9)
                    if not hit.size:
                        continue
                    j_law = int(hit[0])
                    with hold:
                        F = 1.0 - sf[s_law, i_law, j_law].values.astype(float)
                        c = sim["count"].transpose("service", "R", "rho", "replication", "t")[s_sim, i, j].values
                        o = sim["overflow"].transpose("service", "R", "rho", "replication")[s_sim, i, j].values
                        mg = margin[s_law, i_law, j_law].values
                    c, o = np.asarray(c, float), np.asarray(o, float)
                    if not np.isfinite(c).all() or c.sum() + o.sum() == 0:
                        continue
                    n = c.sum(axis=-1) + o
                    if used is not None:
                        present[a, i, j] = np.arange(NK) < int(used[s_sim, i, j])
                    here = present[a, i, j]
                    xsim[a, i, j] = quantile(t, cdf_at_left_edges(c, o), p)
                    xsim[a, i, j][~here] = np.nan
                    few[a, i, j] = np.any(n[here, None] * (1.0 - p[None, :]) < cfg["min_tail_customers"], axis=0)
                    for m in range(NM):
                        ok[a, i, j, m] = int(valid[s_law, i_law, j_law, m]) if np.isfinite(F[m]).all() else 0
                        if ok[a, i, j, m]:
                            xapp[a, i, j, m] = quantile(t, F[m], p)
                            marg[a, i, j, m] = [mg[m][int(np.argmin(np.abs(mpct - 100.0 * q)))] for q in p]
        return _law_dataset(services, Rs, rhos, methods, cfg, p, xapp, xsim, few, marg, ok, present)
    finally:
        with hold:
            law.close()
            sim.close()


def write_comparison(sim_path, approx_path, output, settings: dict, law_path=None) -> Path:
    """``comparison.nc`` from the merged files (streaming over cells: bounded memory; reading both files
    whole took ~9.6 GB on the paper grid). ``settings``: the comparison section and the simulation seed; with
    ``law_path`` (``law_approximation.nc``) the M/G/R law methods' errors too (:func:`law_comparison`)."""
    ds = compare_files(sim_path, approx_path, settings["comparison"], lock=NETCDF_LOCK)
    if law_path is not None:
        extra = law_comparison(sim_path, law_path, settings["comparison"], lock=NETCDF_LOCK)
        extra = extra.reindex(service=ds["service"].values, fill_value={"law_optimistic": -1, "law_valid": 0})
        ds = ds.merge(extra, compat="override", join="left")
    ds.attrs.update(provenance(settings, title="sojourn pipeline: approximations vs simulation",
                               seed=int(settings["seed"])))
    write_netcdf(ds, output, encoding=comparison_encoding(ds))
    return Path(output)
