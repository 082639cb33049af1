"""Guards on every analytic method (sojourn.jsq_ps.solve.guards), the corrected methods against the exact
chain at high load, and the exact method's budget (sojourn.jsq_ps.solve.budget)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import sojourn
from sojourn.cli import main
from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.model import JSQPS
from sojourn.jsq_ps.naming import ALL_METHODS, CORRECTED_METHODS, FAITHFUL_METHODS
from sojourn.jsq_ps.solve import approximate_all
from sojourn.jsq_ps.solve.budget import DEFAULT_BUDGET, check_budget
from sojourn.jsq_ps.solve.cell import approximate_cell as _approximate_task
from sojourn.jsq_ps.solve.conditional_survival import uniformized_survival
from sojourn.jsq_ps.solve.exact import choose_truncation, exact_plan, exact_sojourn_cdf, per_server_rates
from sojourn.jsq_ps.solve.guards import (
    ABOVE_ONE,
    BELOW_ZERO,
    COLLAPSED_LOAD,
    NEGATIVE_RATE,
    NON_FINITE,
    NON_MONOTONE,
    OVER_BUDGET,
    RATE_ABOVE_ARRIVAL_RATE,
    TOLERANCE,
    TRUNCATION_NOT_REACHED,
    describe,
    validity,
)
from sojourn.jsq_ps.solve.gupta import FIT_POLE, admissible_gupta_lambdas, gupta_lambdas
from sojourn.jsq_ps.solve.occupancy import birth_death_occupancy
from sojourn.jsq_ps.storage import to_storage

SWEEP_R = range(1, 11)
SWEEP_RHO = (0.01, 0.05, 0.5, 0.9, 0.95, 0.96, 0.97, 0.99)
SWEEP_BUDGET = {"max_states": 600_000, "max_seconds": 1.0}  # exact where it is quick
DEFAULT_GRID_RHO = (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95)  # config/config.yaml


# -- the sweep: every method, R = 1..10 × 8 loads, on a coarse grid -------------------------------------
@pytest.fixture(scope="module")
def sweep():
    """approximate_all of all 13 methods per cell; t ≤ 180 step 0.5 (the checks are about the shape of the
    result, not its resolution); the corrected chain within 5 000 states (accuracy is not tested here)."""
    out = {}
    for R in SWEEP_R:
        for rho in SWEEP_RHO:
            out[(R, rho)] = approximate_all(JSQPS.from_rho(R, rho), list(ALL_METHODS), t_max=180.0, dt=0.5,
                                            state_budget=5_000, exact_budget=SWEEP_BUDGET)
    return out


def _own_checks(F, lam, arrival_rate):
    """The CDF and rate checks computed here from the returned arrays (independently of the guards)."""
    fin = F[np.isfinite(F)]
    bits = 0
    if fin.size and fin.min() < -TOLERANCE:
        bits |= BELOW_ZERO
    if fin.size and fin.max() > 1 + TOLERANCE:
        bits |= ABOVE_ONE
    if fin.size > 1 and np.min(np.diff(F[np.isfinite(F)])) < -TOLERANCE:
        bits |= NON_MONOTONE
    if fin.size < F.size:
        bits |= NON_FINITE
    lam = lam[~np.isnan(lam)]
    if np.any(lam < 0):
        bits |= NEGATIVE_RATE
    if np.any(lam > 2 * arrival_rate):  # guards.LOAD_FACTOR: a fit beyond twice the arrival stream has exploded
        bits |= RATE_ABOVE_ARRIVAL_RATE
    return bits


def _each(sweep):
    for (R, rho), ds in sweep.items():
        for m in ds["approximation"].values:
            yield R, rho, str(m), ds.sel({"approximation": m})


def test_sweep_every_bad_cdf_is_flagged(sweep):
    """Any CDF outside [0, 1] beyond the tolerance, decreasing, not finite, or with a rate < 0 or > Λ is
    invalid with that reason; a valid result passes every one of these checks."""
    for R, rho, m, d in _each(sweep):
        reason = int(d["validity_reason"])
        assert int(d["valid"]) == int(reason == 0), (R, rho, m)
        F = d["cdf"].values
        if reason & OVER_BUDGET:
            assert m == "exact" and np.isnan(F).all(), (R, rho, m)
            continue
        own = _own_checks(F, d["lambda_n"].values, rho * R)
        assert reason & own == own, (R, rho, m, describe(own), describe(reason))


def test_sweep_flags_the_known_bad_cells(sweep):
    """Not vacuous: the published failures are flagged, with the right reasons."""
    def reason(R, rho, m):
        return int(sweep[(R, rho)]["validity_reason"].sel({"approximation": m}))

    # Gupta's fit beyond its pole (R = 3, ρ = 0.97: λ_0 = 62.98, λ_1 = −0.04; C reaches 1.4, issue 12)
    assert reason(3, 0.97, "C") & (ABOVE_ONE | NON_MONOTONE | NEGATIVE_RATE | RATE_ABOVE_ARRIVAL_RATE) == (
        ABOVE_ONE | NON_MONOTONE | NEGATIVE_RATE | RATE_ABOVE_ARRIVAL_RATE)
    assert reason(3, 0.97, "F") & (NEGATIVE_RATE | RATE_ABOVE_ARRIVAL_RATE)
    # the published Method C at R = 2, ρ = 0.01 goes to −9.93 (tests/jsq_ps/test_solve_methods.py)
    assert reason(2, 0.01, "C") & BELOW_ZERO
    # at ρ = 0.96 the λ_0 fit is negative (−13.9 at R = 2): the matrix exponential overflows
    assert reason(2, 0.96, "C") & NON_FINITE
    # Table 4's L1 = 2 at R = 10: a server holds at most one customer; 80 % of arrivals find theirs empty
    for m in ("A", "D"):
        assert reason(10, 0.99, m) & COLLAPSED_LOAD
    flagged = sum(int(d["valid"]) == 0 for R, rho, m, d in _each(sweep) if m in FAITHFUL_METHODS)
    assert flagged >= 100  # 110 of 480 faithful results


def test_sweep_corrected_and_exact_are_valid(sweep):
    """C* no longer collapses (nor any corrected method) up to ρ = 0.99, and exact is valid wherever it runs;
    it runs on every cell of R ≤ 2 even within the sweep's 1 s. The sweep caps the corrected chain at 5 000
    states: where that stops it short of its tolerance, A*, B*, D*, E* are flagged for that alone
    (truncation_not_reached; tests/jsq_ps/test_exact_truncation.py), never for their shape."""
    for R, rho, m, d in _each(sweep):
        if m in CORRECTED_METHODS:
            reason = int(d["validity_reason"])
            allowed = (0,) if m in ("C*", "F*") else (0, TRUNCATION_NOT_REACHED)
            assert reason in allowed, (R, rho, m, describe(reason))
        if m == "exact":
            assert int(d["validity_reason"]) in (0, OVER_BUDGET), (R, rho)
            if R <= 2:
                assert int(d["valid"]) == 1, (R, rho)


def test_round_off_of_valid_results_is_far_below_the_tolerance(sweep):
    """What the tolerance forgives (guards module doc): round-off (≤ 1e-15) for the corrected methods and
    exact, proper Markov chains; the published F overshoots 1 by 5e-11 at R = 6, ρ = 0.05 (its recurrence
    takes θ = λ_0 < λ_1 there), below anything stored or compared."""
    worst = {"chains": 0.0, "faithful": 0.0}
    for _R, _rho, m, d in _each(sweep):
        if int(d["valid"]):
            F = d["cdf"].values
            key = "faithful" if m in FAITHFUL_METHODS else "chains"
            worst[key] = max(worst[key], -F.min(), F.max() - 1, -np.diff(F).min())
    assert worst["chains"] < 1e-15 and worst["faithful"] < 1e-10 < TOLERANCE


# -- the degenerate C* of earlier versions, and the guards' occupancy checks -----------------------------
def test_old_collapsed_c_star_is_flagged_generically():
    """The corrected C* before the fix, at R = 3, ρ = 0.97: Gupta's rates clamped at 0 (λ_1 = 0) and the
    arrival-weighted A_n = δ_0 made it Exp(μ) (mean 1 against an exact 11.8). The guards flag it from
    its inputs alone: λ_0 > Λ and an arrival profile with no load."""
    R, rho = 3, 0.97
    t = time_grid(60.0, 0.01)
    lam = gupta_lambdas(rho, 1.0, R, 400, clamp=True)
    A = birth_death_occupancy(lam, 1.0, 399, arrival_weighted=True)
    assert lam[1] == 0 and A[0] == pytest.approx(1.0)
    cdf = 1.0 - uniformized_survival(lam, 1.0, 399, t, A)
    np.testing.assert_allclose(cdf, 1 - np.exp(-t), atol=1e-12)  # Exp(μ): the collapse
    flags, _ = validity(cdf, lam, A, rho * R, R, rho)
    assert flags & COLLAPSED_LOAD and flags & RATE_ABOVE_ARRIVAL_RATE


def test_exact_profiles_respect_the_bounds_the_guards_and_the_fixes_use():
    """λ_n ≤ Λ, 1 − ρ ≤ A_0 ≤ R(1 − ρ), and λ_n non-increasing down to μρ^R (the admissible Gupta rates
    and the corrected chain's tail assume it), on exact chains across R and ρ."""
    for R, rho in [(2, 0.3), (2, 0.9), (3, 0.8), (4, 0.95), (6, 0.5), (10, 0.9)]:
        S, pi, _, _ = choose_truncation(rho * R, 1.0, R, state_budget=200_000)
        lam, A, _ = per_server_rates(S, pi, rho * R)
        top = S.M // 2  # well below the min cap (the cap bends λ_n down over its last ~10 levels)
        assert np.all(lam[:top] <= rho * R) and 1 - rho - 1e-9 <= A[0] <= R * (1 - rho) + 1e-9, (R, rho)
        assert np.all(np.diff(lam[:top]) <= 1e-9 * lam[0]), (R, rho)
        assert np.all(lam[:top] >= rho**R * (1 - 1e-6)) and lam[top - 1] == pytest.approx(rho**R, rel=0.02), (R, rho)


def test_admissible_gupta_rates():
    """Admissible everywhere (0 ≤ λ_n ≤ Λ, non-increasing, p_0 = 1 − ρ by Gupta (9)); Gupta's own values where
    they are admissible; moved beyond the pole of the λ_0 fit."""
    for R in range(2, 11):
        for rho in np.round(np.linspace(0.005, 0.995, 199), 3):
            lam, info = admissible_gupta_lambdas(rho, 1.0, R, 5000)
            assert np.all(lam >= 0) and np.all(lam <= R * rho * (1 + 1e-12)), (R, rho)
            assert np.all(np.diff(lam) <= 1e-12 * R * rho), (R, rho)
            p = np.concatenate([[1.0], np.cumprod(lam[:-1])])  # birth–death weights, μ = 1
            assert 1 / p.sum() == pytest.approx(1 - rho, rel=1e-6), (R, rho)
            if rho > FIT_POLE - 0.01:
                assert info["gupta_lambda0_moved"], (R, rho)
    raw = gupta_lambdas(0.5, 1.0, 3, 10)
    np.testing.assert_array_equal(admissible_gupta_lambdas(0.5, 1.0, 3, 10)[0], raw)


# -- the corrected methods against the exact chain at high load -------------------------------------------
def _tagged_mean(lam, A, mu=1.0):
    """E[S] of a corrected method from its λ_n and A_n alone: the tagged chain with n others (up λ_{n+1},
    down nμ/(n+1), done μ/(n+1), blocked at the top; methods.py) solved for its mean absorption time."""
    N = A.size
    up = np.zeros(N)
    up[: N - 1] = lam[1:N]
    n = np.arange(N, dtype=float)
    G = np.diag(-(up + mu)) + np.diag(up[: N - 1], 1) + np.diag((n * mu / (n + 1))[1:], -1)
    return float(A @ np.linalg.solve(-G, np.ones(N)))


HIGH_LOAD = {(2, 0.95): 400.0, (2, 0.97): 600.0, (2, 0.99): 1000.0, (3, 0.95): 250.0, (3, 0.97): 400.0}


@pytest.mark.parametrize("R,rho", list(HIGH_LOAD))
def test_corrected_within_5_percent_of_exact_at_high_load(R, rho):
    """W(X*, exact) ≤ 5 % of the exact mean sojourn for every corrected method (issue 12: C* at R = 2,
    ρ ∈ {0.95, 0.97, 0.99} and R = 3, ρ ∈ {0.95, 0.97}). The grid runs to T (0.05 steps, 5–10 exact means,
    beyond the default 182.32 where the tail needs it) and the tail beyond T is accounted for exactly:
    ∫_T^∞ |F_X − F_e| ≤ ∫_T^∞ (1 − F_X) + ∫_T^∞ (1 − F_e), each = the mean minus its integral up to T, with the
    means from independent routes (exact: Little's law on the system chain; X*: its tagged chain's linear
    solve). So W ≤ W_[0,T] + both tails, an upper bound."""
    T = HIGH_LOAD[(R, rho)]
    spec = JSQPS.from_rho(R, rho)
    ds = approximate_all(spec, list(CORRECTED_METHODS) + ["exact"], t_max=T, dt=0.05)
    t = ds["t"].values
    Fe = ds["cdf"].sel({"approximation": "exact"}).values
    S, pi, _, _ = choose_truncation(rho * R, 1.0, R)
    mean_e = float(pi @ S.states.sum(axis=1)) / (rho * R)  # Little: E[S] = E[N]/Λ
    tail_e = mean_e - np.trapezoid(1 - Fe, t)
    assert -1e-6 < tail_e < 0.01 * mean_e
    report = {}
    for m in CORRECTED_METHODS:
        d = ds.sel({"approximation": m})
        F = d["cdf"].values
        A = d["A_n"].values[np.isfinite(d["A_n"].values)][: int(d["L2"])]
        mean_m = _tagged_mean(d["lambda_n"].values, A)
        tail_m = mean_m - np.trapezoid(1 - F, t)
        assert -1e-6 < tail_m < 0.01 * mean_m, m
        W = np.trapezoid(np.abs(F - Fe), t) + tail_e + tail_m
        report[m] = round(100 * W / mean_e, 2)
        assert W <= 0.05 * mean_e, (m, W, mean_e)
    print(f"R={R} rho={rho} exact mean {mean_e:.3f}; W/mean in %: {report}")


# -- the exact method's budget ---------------------------------------------------------------------------
def test_default_budget_covers_R_up_to_4_on_the_default_grid():
    """Predicted from small solves only; every R ≤ 4 cell of config/config.yaml's loads fits the default
    budget, R = 10 at ρ = 0.95 does not."""
    for R in (1, 2, 3, 4):
        for rho in DEFAULT_GRID_RHO:
            plan = exact_plan(rho * R, 1.0, R, 182.32, state_budget=DEFAULT_BUDGET["max_states"],
                              max_seconds=DEFAULT_BUDGET["max_seconds"])
            assert plan["fits"], (R, rho, plan)
    plan = exact_plan(10 * 0.95, 1.0, 10, 182.32, state_budget=DEFAULT_BUDGET["max_states"],
                      max_seconds=DEFAULT_BUDGET["max_seconds"])
    assert not plan["fits"] and plan["reason"].startswith("over budget")


def test_default_budget_reaches_R6_at_rho_095():
    """Issue 36's reach: R = 5, 6 at ρ = 0.9, 0.95 fit the default budget (their truncation reached, predicted
    from small solves), ρ = 0.96 at R = 6 does not."""
    for R, rho in ((5, 0.95), (6, 0.95)):
        plan = exact_plan(rho * R, 1.0, R, 182.32, state_budget=DEFAULT_BUDGET["max_states"],
                          max_seconds=DEFAULT_BUDGET["max_seconds"])
        assert plan["fits"], (R, rho, plan)
    plan = exact_plan(6 * 0.96, 1.0, 6, 182.32, state_budget=DEFAULT_BUDGET["max_states"],
                      max_seconds=DEFAULT_BUDGET["max_seconds"])
    assert not plan["fits"]


def test_over_budget_exact_is_nan_and_flagged_not_missing():
    spec = JSQPS.from_rho(3, 0.9)
    ds = approximate_all(spec, ["C*", "exact"], t_max=20.0, dt=0.1, exact_budget={"max_seconds": 1e-3})
    d = ds.sel({"approximation": "exact"})
    assert np.isnan(d["cdf"].values).all() and np.isnan(d["A_n"].values).all()
    assert int(d["valid"]) == 0 and int(d["validity_reason"]) == OVER_BUDGET
    assert describe(int(d["validity_reason"])) == "over_budget"
    plan = json.loads(ds.attrs["exact_plan"])
    assert plan["over_budget"].startswith("over budget") and plan["plan_predicted_seconds"] > 1e-3
    assert int(ds["valid"].sel({"approximation": "C*"})) == 1
    stored = to_storage(ds)  # the pipeline's storage keeps "not computed" as NaN (not sf = 0, i.e. F = 1)
    assert np.isnan(stored["sf"].sel({"approximation": "exact"}).values).all()


def test_exact_within_budget_is_the_exact_method():
    """Budget mode, and reusing the corrected methods' spread chain, change nothing but where it runs."""
    t = time_grid(30.0, 0.05)
    spec = JSQPS.from_rho(3, 0.8)
    plain = exact_sojourn_cdf(2.4, 1.0, 3, t).cdf
    ds = approximate_all(spec, ["A*", "exact"], t=t, exact_budget=DEFAULT_BUDGET)
    assert json.loads(ds.attrs["exact_plan"])["shared_system_chain"] == 1
    np.testing.assert_allclose(ds["cdf"].sel({"approximation": "exact"}).values, plain, rtol=0, atol=1e-12)
    alone = approximate_all(spec, ["exact"], t=t, exact_budget=DEFAULT_BUDGET)
    np.testing.assert_allclose(alone["cdf"].sel({"approximation": "exact"}).values, plain, rtol=0, atol=1e-12)


@pytest.mark.parametrize("budget,field", [({"max_seconds": 0}, "max_seconds"), ({"max_states": 1.5}, "max_states"),
                                          ({"max_sec": 2}, "max_sec"), ("fast", "exact_budget")])
def test_bad_budget_names_the_field(budget, field):
    with pytest.raises(ValueError, match=field):
        check_budget(budget)
    with pytest.raises(ValueError, match=field):
        approximate_all(JSQPS.from_rho(2, 0.5), ["exact"], t_max=1.0, dt=0.5, exact_budget=budget)


# -- where the flags surface: the pipeline's cell task and the CLI ------------------------------------------
def test_cell_task_carries_validity():
    t = time_grid(20.0, 0.1)
    ds = _approximate_task(3, 0.97, 1.0, ("C", "A*", "C*", "F*", "exact"), t, {"L1": 22, "L2": 130},
                           share_corrected=True, exact_budget={"max_states": 600_000, "max_seconds": 1e-3})
    valid = dict(zip(ds["approximation"].values.tolist(), ds["valid"].values.tolist(), strict=True))
    assert valid == {"C": 0, "A*": 1, "C*": 1, "F*": 1, "exact": 0}
    assert int(ds["validity_reason"].sel({"approximation": "exact"})) == OVER_BUDGET
    assert "flag_meanings" in ds["validity_reason"].attrs


def test_cli_warns_about_an_invalid_method(tmp_path, capsys):
    rc = main(["approximate", "-R", "3", "--load", "0.97", "--method", "C", "--dt", "0.5", "--t-max", "20",
               "--output", str(tmp_path / "c.nc")])
    err = capsys.readouterr().err
    assert rc == 0
    line = [x for x in err.splitlines() if x.startswith("warning:")]
    assert len(line) == 1 and "method C" in line[0] and "above_one" in line[0] and "rate_above_arrival_rate" in line[0]
    rc = main(["approximate", "-R", "3", "--load", "0.97", "--method", "C*", "--dt", "0.5", "--t-max", "20",
               "--output", str(tmp_path / "cs.nc")])
    err = capsys.readouterr().err
    assert rc == 0 and "not valid" not in err  # C* is valid there …
    assert "beyond --t-max 20" in err  # … and its grid stops short of the tail (the truncated-mean warning)
    assert sojourn.__name__ == "sojourn"


def test_a_chain_singular_in_double_precision_is_one_line_naming_servers(tmp_path, capsys):
    """R = 100 at load 0.5: the SQA chain's balance equations have condition number ~3e16 and SuperLU stops with
    "Factor is exactly singular"; the command says so in one line naming --servers, with no traceback."""
    rc = main(["approximate", "-R", "100", "--load", "0.5", "--method", "A", "--dt", "0.1", "--t-max", "10",
               "--output", str(tmp_path / "a.nc")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "--servers 100" in err and "singular" in err
    assert not (tmp_path / "a.nc").exists()
