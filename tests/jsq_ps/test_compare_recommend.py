"""Tail-aware decisions of the comparison (sojourn.jsq_ps.compare): optimism beyond the CI, the most accurate
method, the recommendation and its status, usable methods and their masked values, few tail customers.

The simulated "sojourn times" are Exp(1) samples binned like the simulator's histograms (seeded), so the
true percentile x_p = −ln(1 − p) is known; each approximation is an exponential CDF with mean ``scale``:
its percentile is scale·x_p, i.e. (scale − 1) relative error. With 4 × 60 000 customers the 99th
percentile's CI is about ±1.5 %, so a 6 % shift is beyond it and 0 % within it."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from sojourn.jsq_ps.compare import (
    APPROXIMATION_VALIDITY,
    FLAGGED_BY_APPROXIMATION,
    NOT_A_CDF,
    NOT_COMPUTED,
    SIMULATE,
    STATUS_ALL_OPTIMISTIC,
    STATUS_EXACT,
    STATUS_NO_SIMULATION,
    STATUS_NON_OPTIMISTIC,
    STATUS_TAIL,
    STATUS_TOO_FEW,
    TAIL_ENOUGH,
    TAIL_FEW_PER_REPLICATION,
    TAIL_FEW_POOLED,
    compare,
    tail_check,
    tail_customers,
    tail_decisions,
)

DT, NT, NK, N = 0.01, 2500, 4, 60_000
PCTS = [99.0, 99.9]  # 600 customers beyond the 99th per replication, 60 beyond the 99.9th (too few)
CFG = {"percentiles": PCTS, "n_resamples": 500}
CELL = {"service": "exponential", "R": 2, "rho": 0.5}


def _sim(services=("exponential",), n=N, seed=0):
    """Histograms of Exp(1) samples at (R = 2, rho = 0.5) for each law (the same samples)."""
    rng = np.random.default_rng(seed)
    t = np.round(np.arange(NT) * DT, 12)
    count = np.zeros((len(services), 1, 1, NK, NT), np.int64)
    overflow = np.zeros(count.shape[:-1], np.int64)
    for k in range(NK):
        b = np.floor(rng.exponential(1.0, n) / DT).astype(int)
        count[:, 0, 0, k] = np.bincount(b[b < NT], minlength=NT)[:NT]
        overflow[:, 0, 0, k] = int((b >= NT).sum())
    return xr.Dataset(
        {"count": (("service", "R", "rho", "replication", "t"), count),
         "overflow": (("service", "R", "rho", "replication"), overflow)},
        coords={"service": list(services), "R": [2], "rho": [0.5], "replication": np.arange(NK), "t": t})


def _approx(scales: dict, extra=None):
    """Exponential CDFs with mean ``scales[m]`` per method m (None: not computed there); ``extra`` variables."""
    t = np.round(np.arange(NT) * DT, 12)
    cdf = np.stack([np.full(NT, np.nan) if s is None else 1.0 - np.exp(-t / s) for s in scales.values()])
    ds = xr.Dataset({"cdf": (("R", "rho", "approximation", "t"), cdf[None, None])},
                    coords={"R": [2], "rho": [0.5], "approximation": list(scales), "t": t})
    for name, values in (extra or {}).items():
        ds[name] = (("R", "rho", "approximation"), np.asarray(values)[None, None])
    return ds


def _at(ds, var, **sel):
    return ds[var].sel({k: v for k, v in {**CELL, **sel}.items() if k in ds[var].dims})


def test_shift_left_is_optimistic_and_never_recommended():
    """6 % left = optimistic beyond its CI (yet the most accurate); 9 % right = not; the recommendation is the
    accurate non-optimistic one, not the most accurate one."""
    ds = compare(_sim(), _approx({"left": 0.94, "right": 1.09}), CFG)
    q = {"percentile": 99.0}
    assert int(_at(ds, "few_tail_customers", **q)) == TAIL_ENOUGH
    assert float(_at(ds, "percentile_error_ci_high", approximation="left", **q)) < 0
    assert int(_at(ds, "optimistic", approximation="left", **q)) == 1
    assert int(_at(ds, "optimistic", approximation="right", **q)) == 0
    assert float(_at(ds, "optimistic_by", approximation="left", **q)) == pytest.approx(0.06, abs=0.02)
    assert float(_at(ds, "optimistic_by", approximation="right", **q)) == 0.0
    assert _at(ds, "most_accurate", **q).item() == "left"
    assert _at(ds, "recommended", **q).item() == "right"
    assert int(_at(ds, "recommendation_status", **q)) == STATUS_NON_OPTIMISTIC
    want = float(_at(ds, "relative_percentile_error_mean", approximation="right", **q))
    assert float(_at(ds, "recommended_relative_error", **q)) == want == pytest.approx(0.09, abs=0.02)
    lo, hi = (float(_at(ds, f"recommended_relative_error_ci_{e}", **q)) for e in ("low", "high"))
    assert lo <= want <= hi and lo > 0


def test_recommendation_prefers_exact_for_exponential_service_only():
    ds = compare(_sim(("exponential", "uniform")), _approx({"left": 0.94, "right": 1.09, "exact": 1.0}), CFG)
    q = {"percentile": 99.0}
    assert _at(ds, "recommended", **q).item() == "exact"
    assert int(_at(ds, "recommendation_status", **q)) == STATUS_EXACT
    assert float(_at(ds, "recommended_relative_error", **q)) == float(
        _at(ds, "relative_percentile_error_mean", approximation="exact", **q))
    # exact solves the M/M/R model: for another law it is one candidate among others
    u = {"service": "uniform", **q}
    assert int(_at(ds, "recommendation_status", **u)) == STATUS_NON_OPTIMISTIC
    assert _at(ds, "recommended", **u).item() in ("right", "exact")
    # exact needs no simulation: recommended even where the simulation cannot estimate the percentile
    q9 = {"percentile": 99.9}
    assert int(_at(ds, "few_tail_customers", **q9)) != TAIL_ENOUGH
    assert _at(ds, "recommended", **q9).item() == "exact"
    assert _at(ds, "recommended", service="uniform", **q9).item() == SIMULATE


def test_exact_is_not_recommended_where_its_percentile_lies_beyond_the_time_grid():
    """Exact with mean 4 on a grid to t = 25: its 99th percentile (18.4) is on the grid, its 99.9th (27.6) beyond
    it — no value, so no recommendation of exact there (issue 31: a recommendation must point to a method that
    has the value); the simulation has too few customers beyond the 99.9th, so it is "simulate"."""
    ds = compare(_sim(), _approx({"right": 1.09, "exact": 4.0}), CFG)
    assert np.isfinite(float(_at(ds, "approx_percentile", approximation="exact", percentile=99.0)))
    assert not np.isfinite(float(_at(ds, "approx_percentile", approximation="exact", percentile=99.9)))
    assert _at(ds, "recommended", percentile=99.0).item() == "exact"
    assert _at(ds, "recommended", percentile=99.9).item() == SIMULATE
    assert int(_at(ds, "recommendation_status", percentile=99.9)) == STATUS_TOO_FEW


def test_all_optimistic_gives_simulate():
    ds = compare(_sim(), _approx({"left": 0.94, "lefter": 0.9}), CFG)
    q = {"percentile": 99.0}
    assert (_at(ds, "optimistic", **q) == 1).all()
    assert _at(ds, "recommended", **q).item() == SIMULATE
    assert int(_at(ds, "recommendation_status", **q)) == STATUS_ALL_OPTIMISTIC
    assert np.isnan(float(_at(ds, "recommended_relative_error", **q)))
    assert _at(ds, "most_accurate", **q).item() == "left"  # accuracy is still reported


def test_exact_ties_go_to_the_first_in_coordinate_order():
    """Identical copies (A* = B* when the corrected methods are shared) tie exactly: the coordinate order decides."""
    for order in (["B*", "A*", "left"], ["A*", "B*", "left"]):
        ds = compare(_sim(), _approx({m: {"left": 0.94}.get(m, 1.09) for m in order}), CFG)
        assert _at(ds, "recommended", percentile=99.0).item() == order[0]
        assert _at(ds, "most_accurate", percentile=99.0).item() == "left"


def test_few_tail_customers_blocks_the_recommendation():
    """60 customers per replication beyond the 99.9th (240 pooled): flag 1, no method is recommended there."""
    ds = compare(_sim(), _approx({"left": 0.94, "right": 1.09}), CFG)
    q = {"percentile": 99.9}
    assert int(_at(ds, "few_tail_customers", **q)) == TAIL_FEW_PER_REPLICATION
    assert float(_at(ds, "tail_customers_per_replication", **q)) == pytest.approx(N * 0.001)
    assert _at(ds, "recommended", **q).item() == SIMULATE
    assert int(_at(ds, "recommendation_status", **q)) == STATUS_TOO_FEW
    assert _at(ds, "most_accurate", **q).item() == ""
    # with 10x the customers the same percentile is estimable and decided
    big = compare(_sim(n=10 * N), _approx({"left": 0.94, "right": 1.09}), CFG)
    assert int(_at(big, "few_tail_customers", **q)) == TAIL_ENOUGH
    assert _at(big, "recommended", **q).item() == "right"


def test_tail_customers_counts_and_flags():
    n = np.array([[100_000, 100_000], [99_999, 100_000], [50_000, 40_000], [300_000, 0], [0, 0]])
    smallest, few = tail_customers(n, np.array([99.9, 99.95]), 100)
    # n (1 - p) exactly 100 is enough (not 99.99999...: rounded); a padded replication (0) is left out
    assert smallest[:, 0].tolist() == [100.0, 99.999, 40.0, 300.0, 0.0]
    assert few[:, 0].tolist() == [TAIL_ENOUGH, TAIL_FEW_PER_REPLICATION, TAIL_FEW_POOLED, TAIL_ENOUGH, TAIL_FEW_POOLED]
    assert few[:, 1].tolist() == [TAIL_FEW_PER_REPLICATION, TAIL_FEW_POOLED, TAIL_FEW_POOLED, TAIL_ENOUGH,
                                  TAIL_FEW_POOLED]


def test_sim_percentile_mean_and_ci():
    ds = compare(_sim(), _approx({"right": 1.09}), CFG)
    x = _at(ds, "sim_percentile", percentile=99.0)
    m, lo, hi = (float(_at(ds, v, percentile=99.0)) for v in
                 ("sim_percentile_mean", "sim_percentile_ci_low", "sim_percentile_ci_high"))
    assert m == pytest.approx(float(x.mean("replication")), rel=1e-12)
    assert lo < m < hi and lo <= -np.log(0.01) <= hi  # the true Exp(1) percentile 4.605
    assert int(_at(ds, "sim_percentile_ci_method", percentile=99.0)) in (0, 1)


@pytest.mark.parametrize("how", ["not_a_cdf", *[name for name, _ in APPROXIMATION_VALIDITY]])
def test_unusable_method_is_masked_and_never_decides(how):
    """The most accurate, non-optimistic method made unusable — by its own CDF or by the approximation
    dataset's verdict under any accepted name — is masked everywhere and chosen nowhere; the control run
    (same data, nothing flagged) chooses it everywhere."""
    scales = {"good": 1.01, "worse": 1.09, "left": 0.94}
    good = compare(_sim(), _approx(scales), CFG)
    q = {"percentile": 99.0}
    assert _at(good, "recommended", **q).item() == "good" and _at(good, "best_method").item() == "good"
    assert _at(good, "most_accurate", **q).item() == "good" and (good["usable"] == 1).all()
    approx = _approx(scales)
    if how == "not_a_cdf":
        cdf = approx["cdf"].values
        cdf[0, 0, 0, 50:60] = cdf[0, 0, 0, 49] - 0.01  # a dip: not monotone
        approx["cdf"].values = cdf
    else:
        verdict = {"valid": [0, 1, 1]}.get(how, [4, 0, 0])  # 1 = valid; a bit mask: 0 = valid
        approx = _approx(scales, {how: np.asarray(verdict, np.int8)})
    got = compare(_sim(), approx, CFG)
    bit = NOT_A_CDF if how == "not_a_cdf" else FLAGGED_BY_APPROXIMATION
    assert got["usable"].sel(approximation="good").item() == 0
    assert got["unusable_reason"].sel(approximation="good").item() == bit
    assert got["usable"].sel(approximation=["worse", "left"]).values.ravel().tolist() == [1, 1]
    assert _at(got, "recommended", **q).item() == "worse"
    assert _at(got, "most_accurate", **q).item() == "left"
    assert _at(got, "best_method").item() != "good"
    assert int(_at(got, "optimistic", approximation="good", **q)) == -1
    for v in got.data_vars:
        if "approximation" in got[v].dims and got[v].dtype.kind == "f" and not v.startswith("raw_") \
                and v not in ("fit_violation", "run_time"):
            assert got[v].sel(approximation="good").isnull().all(), v
    assert int(got["percentile_error_ci_method"].sel(approximation="good").min()) == -1
    raw = _at(got, "raw_percentile_error_mean", approximation="good", **q)
    if how != "not_a_cdf":  # the same CDF as the control run: its raw numbers are the control's
        assert float(raw) == float(_at(good, "percentile_error_mean", approximation="good", **q))
    assert np.isfinite(float(raw))


def test_exploded_fit_never_appears_as_an_ordinary_value():
    """A "CDF" reaching 1e36 (an exploded fit) and one not computed: W of 1e36·t_max stays in raw_ only (and
    fit_violation says how far the fit left [0, 1]), every ordinary float is finite and of a sane size."""
    approx = _approx({"boom": 1.0, "right": 1.09, "absent": None})
    cdf = approx["cdf"].values
    cdf[0, 0, 0, 100:] = 1e36
    approx["cdf"].values = cdf
    ds = compare(_sim(), approx, CFG)
    assert ds["unusable_reason"].sel(approximation=["boom", "absent"]).values.ravel().tolist() == [
        NOT_A_CDF, NOT_COMPUTED]
    assert float(ds["raw_wasserstein_mean"].sel(approximation="boom").max()) > 1e35
    for v in ds.data_vars:
        if ds[v].dtype.kind == "f" and not v.startswith("raw_") and v != "fit_violation":  # that is the 1e36
            x = ds[v].values
            assert not np.isinf(x).any() and not (np.abs(x[np.isfinite(x)]) > 1e6).any(), v
    assert _at(ds, "recommended", percentile=99.0).item() == "right"


def test_no_simulation_gives_an_empty_recommendation():
    sim = _sim(("exponential", "uniform"))
    sim["count"].loc[{"service": "uniform"}] = 0
    sim["overflow"].loc[{"service": "uniform"}] = 0
    ds = compare(sim, _approx({"right": 1.09, "exact": 1.0}), CFG)
    u = {"service": "uniform"}
    assert (_at(ds, "recommended", **u) == "").all()
    assert (_at(ds, "recommendation_status", **u) == STATUS_NO_SIMULATION).all()
    assert (_at(ds, "few_tail_customers", **u) == TAIL_FEW_POOLED).all()


def test_tail_decisions_rules_directly():
    """The decision table on hand-set numbers (methods × one percentile): means, CI tops, usable."""
    E = np.array([[-0.5], [1.0], [0.2], [-0.1], [np.nan]])
    hi = np.array([[-0.1], [1.5], [0.6], [0.3], [np.nan]])
    rel = E / 10
    usable = np.array([[True], [True], [False], [True], [True]])
    opt, by, most, rec, status = tail_decisions(E, hi, rel, usable, np.array([0]), np.array([True]), np.array([-1]))
    assert opt[:, 0].tolist() == [1, 0, -1, 0, -1]
    assert by[0, 0] == pytest.approx(0.05) and by[1, 0] == 0 and np.isnan(by[2, 0])
    assert most.tolist() == [3] and rec.tolist() == [3] and status.tolist() == [STATUS_NON_OPTIMISTIC]
    # exact preferred; too few customers; not simulated
    _, _, _, rec, status = tail_decisions(E, hi, rel, usable, np.array([0]), np.array([True]), np.array([1]))
    assert rec.tolist() == [1] and status.tolist() == [STATUS_EXACT]
    _, _, most, rec, status = tail_decisions(E, hi, rel, usable, np.array([2]), np.array([True]), np.array([-1]))
    assert most.tolist() == [-1] and rec.tolist() == [-1] and status.tolist() == [STATUS_TOO_FEW]
    _, _, _, rec, status = tail_decisions(E, hi, rel, usable, np.array([0]), np.array([False]), np.array([1]))
    assert rec.tolist() == [-1] and status.tolist() == [STATUS_NO_SIMULATION]


# -- method T: conservative by construction, preferred where exact is not if the comparison confirms it ----------
def _two_loads(scales_by_rho: dict, services=("exponential",)):
    """(simulation, approximation) at R = 2 and the loads of ``scales_by_rho`` ({rho: {method: scale or None}}),
    the same Exp(1) samples at every load (seeded per load)."""
    sims, apps = [], []
    for k, (rho, scales) in enumerate(scales_by_rho.items()):
        sims.append(_sim(services, seed=k).assign_coords(rho=[rho]))
        apps.append(_approx(scales).assign_coords(rho=[rho]))
    return xr.concat(sims, "rho"), xr.concat(apps, "rho")


def test_T_is_recommended_where_exact_did_not_run_once_it_is_never_below_exact():
    """At ρ = 0.5 exact and T (+0.3 %) both ran: T is never below exact there, so at ρ = 0.6, where exact did
    not run, T is recommended — over "right" (9 % pessimistic) and "close" (1 % optimistic, within the noise, the
    most accurate by the simulation) — and also at the 99.9th, where the simulation has too few customers."""
    sim, approx = _two_loads({0.5: {"close": 0.99, "right": 1.09, "exact": 1.0, "T": 1.003},
                              0.6: {"close": 0.99, "right": 1.09, "exact": None, "T": 1.003}})
    ds = compare(sim, approx, CFG)
    assert ds.attrs["tail_preferred"] == 1 and ds.attrs["tail_checked_points"] == 2
    assert ds.attrs["tail_below_exact_points"] == 0
    at = {"service": "exponential", "R": 2}
    assert ds["recommended"].sel(rho=0.5, **at).values.tolist() == ["exact", "exact"]
    assert ds["recommended"].sel(rho=0.6, **at).values.tolist() == ["T", "T"]
    assert ds["recommendation_status"].sel(rho=0.6, **at).values.tolist() == [STATUS_TAIL, STATUS_TAIL]
    assert ds["most_accurate"].sel(rho=0.6, percentile=99.0, **at).item() in ("close", "T")
    rel = float(ds["recommended_relative_error"].sel(rho=0.6, percentile=99.0, **at))
    assert rel == float(ds["relative_percentile_error_mean"].sel(rho=0.6, percentile=99.0, approximation="T", **at))


def test_T_is_an_ordinary_candidate_when_the_comparison_finds_it_below_exact_or_cannot_check():
    """T 3 % below exact where both ran (beyond a grid step): not preferred anywhere, and at ρ = 0.6 the ordinary
    rule decides (T, optimistic there, is not chosen); with no point where both ran there is nothing to check."""
    sim, approx = _two_loads({0.5: {"right": 1.09, "exact": 1.0, "T": 0.97},
                              0.6: {"right": 1.09, "exact": None, "T": 0.94}})
    ds = compare(sim, approx, CFG)
    assert ds.attrs["tail_preferred"] == 0 and ds.attrs["tail_below_exact_points"] == 2
    assert ds.attrs["tail_largest_below_exact"] == pytest.approx(0.03 * -np.log(0.001), abs=0.02)
    at = {"service": "exponential", "R": 2, "rho": 0.6}
    assert ds["recommended"].sel(percentile=99.0, **at).item() == "right"
    assert int(ds["recommendation_status"].sel(percentile=99.0, **at)) == STATUS_NON_OPTIMISTIC
    none = compare(_sim(), _approx({"right": 1.09, "T": 1.003}), CFG)
    assert none.attrs["tail_preferred"] == 0 and none.attrs["tail_checked_points"] == 0
    assert _at(none, "recommended", percentile=99.0).item() == "T"  # the most accurate non-optimistic, as any


def test_T_is_preferred_for_exponential_service_only_and_not_where_the_simulation_shows_it_optimistic():
    sim, approx = _two_loads({0.5: {"right": 1.09, "exact": 1.0, "T": 1.0},
                              0.6: {"right": 1.09, "exact": None, "T": 1.0}}, services=("exponential", "uniform"))
    ds = compare(sim, approx, CFG)
    u = {"service": "uniform", "R": 2, "rho": 0.6, "percentile": 99.0}
    assert int(ds["recommendation_status"].sel(**u)) == STATUS_NON_OPTIMISTIC  # the ordinary rule for M/G/R
    # the rule itself: T's own verdict optimistic (CI top < 0) where the percentile is estimable vetoes it
    E = np.array([[0.5], [-0.2]])
    hi = np.array([[0.8], [-0.05]])
    args = (E, hi, E / 10, np.ones((2, 1), bool))
    _, _, _, rec, status = tail_decisions(*args, np.array([0]), np.array([True]), np.array([-1]), np.array([1]))
    assert rec.tolist() == [0] and status.tolist() == [STATUS_NON_OPTIMISTIC]
    _, _, _, rec, status = tail_decisions(*args, np.array([2]), np.array([True]), np.array([-1]), np.array([1]))
    assert rec.tolist() == [1] and status.tolist() == [STATUS_TAIL]  # too few to judge: T, like exact
    _, _, _, rec, status = tail_decisions(*args, np.array([0]), np.array([True]), np.array([0]), np.array([1]))
    assert rec.tolist() == [0] and status.tolist() == [STATUS_EXACT]  # exact first


def test_tail_check_tolerates_one_grid_step():
    d = np.array([[0.0, np.nan], [-0.01, 0.02]])
    assert tail_check(d, 0.01) == {"checked_points": 3, "below_exact_points": 0, "largest_below": 0.0,
                                   "preferred": True}
    d[0, 0] = -0.02
    got = tail_check(d, 0.01)
    assert not got["preferred"] and got["below_exact_points"] == 1 and got["largest_below"] == pytest.approx(0.02)
    assert not tail_check(np.full((2, 2), np.nan), 0.01)["preferred"]
