"""Method T (sojourn.jsq_ps.solve.tail): the spread-capped tagged chain with a throughput-preserving boundary.

Exact references come from the exact tagged-customer chain (sojourn.jsq_ps.solve.exact) and, at R = 1, the
closed M/M/1-PS law; grids are short (t <= 60, dt = 0.05) so each test takes about a second.
"""
from __future__ import annotations

import numpy as np
import pytest

from sojourn.core.checks.timegrid import time_grid
from sojourn.core.estimates.stats import quantile
from sojourn.jsq_ps.model import JSQPS
from sojourn.jsq_ps.solve import approximate, approximate_all
from sojourn.jsq_ps.solve.exact import exact_sojourn_cdf
from sojourn.jsq_ps.solve.mm1ps import mm1ps_sojourn_cdf
from sojourn.jsq_ps.solve.tail import (
    FINAL_STOP,
    held_tail,
    level_cap,
    lower_survival,
    margin_at,
    masses,
    predicted_seconds,
    survival,
    system_law,
    tagged_chain,
    tail_sojourn,
)

T = time_grid(60.0, 0.05)
LEVELS = (0.99, 0.999, 0.9999, 0.99999)


def _percentiles(cdf):
    return np.array([float(quantile(T, cdf, p)) for p in LEVELS])


def test_one_server_is_the_mm1ps_law():
    """R = 1: no other server, no spread cap; the chain is M/M/1-PS up to its level cap (mass < 1e-9), whose
    effect T adds (10·eps): never above the closed form, within 1e-8 of it."""
    res = tail_sojourn(0.7, 1.0, 1, T)
    ref = mm1ps_sojourn_cdf(0.7, 1.0, T)
    assert np.all(res.cdf <= ref + 1e-15) and np.max(np.abs(res.cdf - ref)) < 1e-8 + 1e-15
    assert res.D == 0 and res.info["top_level_mass"] < 1e-9


@pytest.mark.parametrize("R, rho", [(2, 0.8), (3, 0.5), (4, 0.8)])
def test_conservative_and_close_to_exact(R, rho):
    """T's survival lies above the exact one at every grid point (never optimistic), its percentiles within
    0.6 % above the exact ones (measured 0.1-0.4 %), and the truncated chain itself within 0.05 %."""
    res = tail_sojourn(rho * R, 1.0, R, T)
    ex = exact_sojourn_cdf(rho * R, 1.0, R, T)
    assert np.all(res.cdf <= ex.cdf + 1e-9)
    x_t, x_best, x_ex = _percentiles(res.cdf), _percentiles(1.0 - res.sf_best), _percentiles(ex.cdf)
    ok = np.isfinite(x_ex)
    assert ok.sum() >= 3
    rel = x_t[ok] / x_ex[ok] - 1.0
    assert np.all(rel >= 0.0) and np.all(rel < 0.006)
    assert np.all(np.abs(x_best[ok] / x_ex[ok] - 1.0) < 5e-4)


def test_redirected_boundary_keeps_the_level_decay():
    """Moving the departure to the fullest server keeps μ per busy server: the least occupancy's law decays
    by exactly ρ^R per level (the M/M/1 of the number in system, lifted R at a time) whatever the spread cap."""
    R, rho = 5, 0.9
    for D in (1, 2, 3):
        _, pi = system_law(rho * R, 1.0, R, 40, D)
        pg = pi.sum(axis=1)
        assert pg[21] / pg[20] == pytest.approx(rho**R, rel=1e-9)


def test_spread_cap_converges_fast():
    """Each unit of spread cap cuts the error several times (R = 5, rho = 0.9: exact 99.99th percentile 54.79)."""
    R, rho = 5, 0.9
    t = time_grid(80.0, 0.05)
    xs = []
    M, _, _ = level_cap(rho * R, 1.0, R, 2, 1e-9)
    for D in (1, 2, 3):
        ph, pi = system_law(rho * R, 1.0, R, M, D)
        sf, _, _ = survival(tagged_chain(rho * R, 1.0, R, M, D, D + 2, pi, ph), t)
        xs.append(float(quantile(t, 1.0 - sf, 0.9999)))
    d1, d2 = abs(xs[1] - xs[0]), abs(xs[2] - xs[1])
    assert d2 < d1 / 3
    assert xs[2] == pytest.approx(54.79, rel=2e-3)


def test_budget_picks_the_spread_cap():
    """A tiny CPU budget leaves the least cap, 2; the default reaches further at small R."""
    small = tail_sojourn(0.8 * 4, 1.0, 4, T, max_seconds=1e-3)
    assert small.D == 2
    big = tail_sojourn(0.8 * 4, 1.0, 4, T)
    assert big.D > 2
    n = big.info["pilot_steps"]
    assert (predicted_seconds(4, big.D, big.M, n, 3.2, 1.0) + predicted_seconds(4, big.D - 1, big.M, n, 3.2, 1.0)
            <= 0.85)


def test_api_method_T():
    spec = JSQPS.from_rho(3, 0.9)
    ds = approximate(spec, "T", t_max=60.0, dt=0.05)
    assert int(ds["valid"]) == 1
    assert ds.attrs["D"] >= 2 and ds.attrs["margin_99.9"] >= 0.0
    both = approximate_all(spec, ["T", "A*"], t_max=60.0, dt=0.05)
    assert list(both["approximation"].values) == ["T", "A*"]
    # T errs on the long side where A* is optimistic: its 99.9th percentile is the larger
    x = {m: float(quantile(T, both["cdf"].sel(approximation=m).values, 0.999)) for m in ("T", "A*")}
    assert x["T"] > x["A*"]
    with pytest.raises(ValueError, match="tail_D"):
        approximate(spec, "T", t_max=60.0, dt=0.05, tail_D=1)
    with pytest.raises(ValueError, match="unknown hyper-parameter"):
        approximate(spec, "T", t_max=60.0, dt=0.05, L1=5)


def test_the_two_sides_of_the_allowance_contain_exact():
    """What ``sojourn plan`` reads: at R = 4, ρ = 0.8 exact's survival lies between T's lower bound and T, and
    exact's percentile between x_T (1 − m)/(1 + m) and x_T, m = T's margin at that level."""
    res = tail_sojourn(3.2, 1.0, 4, T, D=2)
    ref = exact_sojourn_cdf(3.2, 1.0, 4, T)
    sf = 1.0 - ref.cdf
    assert np.all(lower_survival(res) <= sf + 1e-12) and np.all(sf <= 1.0 - res.cdf + 1e-12)
    for p in LEVELS:
        m, x = margin_at(T, res, p), float(quantile(T, res.cdf, p))
        assert 0 < m < 0.05 and x * (1 - m) / (1 + m) <= float(quantile(T, ref.cdf, p)) <= x


def test_system_law_where_the_level_ordered_lu_is_singular():
    """R = 60, ρ = 0.9, D = 1: fixing the empty system (mass ~1e-24 of the rest) gave an exactly singular LU; the
    law is then solved with a state of about Λ/μ customers fixed: a stationary law (πQ = 0) all the same."""
    from scipy import sparse

    from sojourn.jsq_ps.solve.chain import stationary
    from sojourn.jsq_ps.solve.tail import SystemPhases, _expand

    R, M, D, lam = 60, 8, 1, 54.0
    ph = SystemPhases(R, D)
    rows, cols, rate, *_ = _expand(ph.table(lam, 1.0), ph.size, M)
    n = M * ph.size
    Q = sparse.coo_matrix((rate, (rows, cols)), shape=(n, n)).tocsr()
    Q = Q - sparse.diags(np.asarray(Q.sum(axis=1)).ravel())
    with pytest.raises(RuntimeError, match="singular"):  # the solver's first attempt
        stationary(Q, levels=(np.arange(M)[:, None] * R + ph.F.sum(axis=1)[None, :]).ravel())
    _, pi = system_law(lam, 1.0, R, M, D)
    assert pi.sum() == pytest.approx(1.0) and np.abs(pi.ravel() @ Q).max() < 1e-12
    assert pi.sum(axis=1)[0] > 0.5  # the least occupancy: mostly 0 at ρ = 0.9 with R = 60 (most servers hold 1)


def test_the_command_line_states_T_margins(tmp_path, capsys):
    """``sojourn approximate --method T`` prints each percentile with T's stated bound (its margin_<p> attribute)."""
    from sojourn.cli import main

    out = tmp_path / "t.nc"
    assert main(["approximate", "-R", "4", "--rho", "0.8", "--method", "T", "--t-max", "60", "--dt", "0.05",
                 "--output", str(out)]) == 0
    text = capsys.readouterr().out
    import xarray as xr

    with xr.open_dataset(out) as ds:
        m = ds.attrs["margin_99.99"]
    assert 0 < m < 0.02
    line = next(x for x in text.splitlines() if x.startswith("99.99th percentile:"))
    assert f"margin {100 * m:.2g} %" in line and "never below the true one" in line
    assert "T is conservative" in text


def test_phase_count_and_run_lengths_without_building_the_tables():
    """T sizes its spread cap by counting phases (building them to count them took 13 GB at R = 200, D = 3) and
    counts equal offsets by run lengths of sorted rows (comparing every pair of columns took minutes at
    R = 3000): both agree with the direct construction."""
    from sojourn.jsq_ps.solve.chain import value_counts
    from sojourn.jsq_ps.solve.tail import TaggedPhases, peak_bytes, tagged_phase_count

    for R in (1, 2, 3, 6, 10, 40):
        for D in (0, 1, 2, 4):
            for Dt in (D, D + 2):
                assert tagged_phase_count(R, D, Dt) == TaggedPhases(R, D, Dt).size
    rng = np.random.default_rng(3)
    for R in (1, 2, 5, 9):
        for X in (np.sort(rng.integers(0, 4, (400, R)), axis=1), rng.integers(0, 4, (60, R))):
            direct = np.stack([(X == X[:, [j]]).sum(axis=1) for j in range(R)], axis=1)
            np.testing.assert_array_equal(value_counts(X), direct)
    assert peak_bytes(100) < 1e9 < 1e12 < peak_bytes(3000)  # R³ growth: the CLI refuses R = 3000 (bad inputs)


def test_T_refuses_before_allocating_what_the_memory_limit_forbids(monkeypatch):
    """Called directly (``sojourn.plan`` does, and falls back on MemoryError), T raises at once naming R and
    the need instead of building tables the machine cannot hold."""
    from sojourn.jsq_ps.solve.tail import peak_bytes, tail_sojourn

    monkeypatch.setenv("SOJOURN_MAX_MEMORY", "1GB")
    assert peak_bytes(400) > 2**30  # ~12 GB: the limit binds
    with pytest.raises(MemoryError, match="R = 400 needs about .* above the limit 1 GiB"):
        tail_sojourn(0.9 * 400, 1.0, 400, np.linspace(0, 10, 11))


@pytest.mark.parametrize("R,D", [(2, 1), (3, 4), (5, 2), (8, 3)])
def test_phase_entries_depend_on_R_and_D_alone(R, D):
    """T's cost prediction counts a level's moves once per (R, D) (issue 36): the count is the table's at any rates."""
    from sojourn.jsq_ps.solve.tail import TAGGED_EXTRA, TaggedPhases, _phase_entries

    tp = TaggedPhases(R, D, D + TAGGED_EXTRA)
    for lam, mu in [(0.05 * R, 1.0), (0.97 * R * 2.0, 2.0), (0.5 * R * 0.3, 0.3)]:
        assert _phase_entries(R, D) == (tp.table(lam, mu).src.size + tp.size, tp.size)


def test_the_final_stop_keeps_each_survival_an_upper_bound():
    """T's final chains stop stepping at a remaining mass of FINAL_STOP and hold the last mass for the rest of the
    Poisson sum (issue 36): fewer steps, and the survival stays above the fully stepped one (never optimistic), at most
    FINAL_STOP above it."""
    from sojourn.jsq_ps.solve.uniformization import poisson_mix

    R, rho = 3, 0.5
    M, _, _ = level_cap(rho * R, 1.0, R, 3, 1e-9)
    ph, pi = system_law(rho * R, 1.0, R, M, 3)
    ch = tagged_chain(rho * R, 1.0, R, M, 3, 5, pi, ph)
    g_full, used_full, _ = masses(ch, float(T[-1]))
    g, used, _ = masses(ch, float(T[-1]), stop=FINAL_STOP)
    assert used < 0.8 * used_full
    full = poisson_mix(ch.q, T, g_full)
    held = poisson_mix(ch.q, T, g) + held_tail(ch.q, T, g, used)
    assert np.all(held >= full - 1e-15) and np.max(held - full) <= FINAL_STOP
    assert np.max(held - full) > 0.1 * FINAL_STOP  # the hold is what keeps it above
