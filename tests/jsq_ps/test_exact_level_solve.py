"""The exact method's faster route (issue 36): the system law by aggregation–disaggregation over the total customers
(sojourn.jsq_ps.solve.level_solve) instead of sparse LU, and the tagged chain's steps on parallel threads — against
the LU route, closed forms and the §3.2 chain."""
import numpy as np
import pytest

from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.solve import exact
from sojourn.jsq_ps.solve.chain import solve_chain, stationary
from sojourn.jsq_ps.solve.level_solve import stationary_by_levels
from sojourn.jsq_ps.solve.mm1ps import mm1ps_sojourn_cdf
from sojourn.jsq_ps.solve.tagged_levels import LevelTaggedChain


@pytest.mark.parametrize("R, rho, M, D", [(2, 0.95, 150, 9), (3, 0.9, 45, 12), (4, 0.95, 30, 12), (6, 0.5, 8, 6)])
def test_level_solve_matches_lu(R, rho, M, D):
    S, Q = exact.system_chain(rho * R, 1.0, R, M, D)
    X = S.states
    lu = stationary(Q, levels=X.sum(axis=1) + (X[:, -1] - X[:, 0]) / (D + 1.0))
    pi, iterations = stationary_by_levels(Q, X.sum(axis=1))
    assert iterations < 500
    assert np.max(np.abs(pi - lu)) < 1e-14 and np.abs(pi - lu).sum() < 1e-12
    assert np.all(pi >= 0) and pi.sum() == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("rho", [0.5, 0.99])
def test_level_solve_is_the_truncated_geometric_law_at_R1(rho):
    """R = 1 (M/M/1 capped at M − 1 customers): π_n = (1 − ρ)ρ^n / (1 − ρ^M)."""
    M = 400
    S, Q = exact.system_chain(rho, 1.0, 1, M, 0)
    pi, _ = stationary_by_levels(Q, S.states[:, 0])
    n = np.arange(M)
    np.testing.assert_allclose(pi, (1 - rho) * rho**n / (1 - rho**M), rtol=0, atol=1e-15)


def test_level_solve_matches_the_sorted_chain_at_R2():
    """R = 2 at ρ = 0.6: the spread chain's law by levels gives the §3.2 whole-system chain's P(min = n)
    (independent state space and solver) once both truncations are negligible."""
    S, Q = exact.system_chain(1.2, 1.0, 2, 60, 12)
    pi, _ = stationary_by_levels(Q, S.states.sum(axis=1))
    A_spread = np.bincount(S.states[:, 0], weights=pi, minlength=60)
    A_sorted = solve_chain(1.2, 1.0, 2, 120).A_n[:60]
    np.testing.assert_allclose(A_spread, A_sorted, atol=1e-12)


def test_level_solve_refuses_a_move_of_two_levels():
    from scipy import sparse

    Q = sparse.csr_matrix(np.array([[-1.0, 0.5, 0.5], [1.0, -1.0, 0.0], [1.0, 0.0, -1.0]]))
    with pytest.raises(ValueError, match="±1"):
        stationary_by_levels(Q, np.array([0, 1, 2]))


@pytest.mark.parametrize("R, rho", [(1, 0.9), (3, 0.9), (4, 0.8)])
def test_exact_by_levels_matches_the_lu_route(R, rho, monkeypatch):
    """The whole exact call with every system chain solved by levels, against the LU route (the reference before
    issue 36): the same truncation, the CDF and its certified bounds within 1e-12; and R = 1 is M/M/1-PS."""
    t = time_grid(60.0, 0.01)
    monkeypatch.setattr(exact, "LEVEL_SOLVE_MIN", 10**12)
    exact.forget_solves()
    lu = exact.exact_sojourn_cdf(rho * R, 1.0, R, t)
    monkeypatch.setattr(exact, "LEVEL_SOLVE_MIN", 0)
    exact.forget_solves()
    lev = exact.exact_sojourn_cdf(rho * R, 1.0, R, t)
    exact.forget_solves()
    assert (lev.M, lev.D, lev.n_tagged_states) == (lu.M, lu.D, lu.n_tagged_states) and lev.reached
    for a, b in ((lev.cdf, lu.cdf), (lev.cdf_lower, lu.cdf_lower), (lev.cdf_upper, lu.cdf_upper)):
        assert np.max(np.abs(a - b)) < 1e-12
    assert lev.info["cdf_error_bound"] < 1e-9
    if R == 1:
        assert np.max(np.abs(lev.cdf - mm1ps_sojourn_cdf(rho, 1.0, t))) < 1e-8


def test_tagged_steps_are_the_same_bits_on_one_and_two_threads():
    """The kernel's phase chunks are fixed by the chain, not by the thread count (reproducibility)."""
    import numba

    S, pi, _, _ = exact.choose_truncation(3.6, 1.0, 4, 1e-10, M=20, D=8)
    tc = LevelTaggedChain(3.6, 1.0, 4, S.M, S.D)
    tc.set_level_caps(tc.caps_from_occupation(pi.reshape(S.M, -1), exact.PRUNE * 1e-10))
    p0, _ = tc.initial_law(pi.reshape(S.M, -1))
    assert tc.chunks.size > 2
    before = numba.get_num_threads()
    try:
        out = {}
        for n in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(n)
            out[n] = tc.masses(p0, 400, kernel=True)
    finally:
        numba.set_num_threads(before)
    g1, a1, _ = out[1]
    g2, a2, _ = out[max(out)]
    assert np.array_equal(g1, g2) and np.array_equal(a1, a2)
    g_sparse, a_sparse, _ = tc.masses(p0, 400, kernel=False)
    np.testing.assert_allclose(g1, g_sparse, rtol=0, atol=1e-14)
    np.testing.assert_allclose(a1, a_sparse, rtol=0, atol=1e-14)


def test_residual_checks_are_skipped_only_while_a_steady_fall_cannot_reach_the_tolerance():
    """stationary_by_levels computes the residual (a third of an iteration) only where a steady fall could have
    reached the tolerance: two iterations before the extrapolated one, never after a rise, at most 20 ahead."""
    from sojourn.jsq_ps.solve.level_solve import _skip

    assert _skip([(1, 1e-3), (2, 1e-4), (3, 1e-5)], 3e-15) == 8  # 9.5 more iterations at a factor 10 each
    assert _skip([(1, 1e-3), (2, 1e-4)], 1e-15) == 0
    assert _skip([(1, 1e-3), (2, 1e-4), (3, 2e-4)], 1e-15) == 0
    assert _skip([(1, 1e-3), (2, 1e-4), (12, 1e-5)], 1e-15) == 20  # the slower of the two rates, then capped


def test_a_warm_start_gives_the_same_law_and_leaves_a_cell_independent_of_what_came_before():
    """The level solve started from a smaller chain's law, extended (exact._extended; the cap searches and the final
    chain do this), reaches the cold start's law in fewer iterations; an exact call forgets the solves before it, so its
    CDF is the same bits whatever the process solved first (R = 4, ρ = 0.95)."""
    S1, Q1 = exact.system_chain(3.8, 1.0, 4, 20, 10)
    small, _ = stationary_by_levels(Q1, S1.states.sum(axis=1))
    S, Q = exact.system_chain(3.8, 1.0, 4, 40, 10)
    cold, n_cold = stationary_by_levels(Q, S.states.sum(axis=1))
    warm, n_warm = stationary_by_levels(Q, S.states.sum(axis=1), x0=exact._extended(small, 20, 40))
    assert n_warm < n_cold and np.max(np.abs(warm - cold)) < 1e-15
    t = time_grid(30.0, 0.01)
    first = exact.exact_sojourn_cdf(3.8, 1.0, 4, t)
    exact.choose_truncation(3.8, 1.0, 4, M=first.M - 7, D=first.D)  # a smaller chain of the same cell, solved last
    again = exact.exact_sojourn_cdf(3.8, 1.0, 4, t)
    assert np.array_equal(first.cdf, again.cdf)


@pytest.mark.parametrize("R, rho", [(6, 0.8), (4, 0.95)])
def test_a_cell_solves_each_system_chain_once_with_the_same_bits(R, rho, monkeypatch):
    """Issue 36: the corrected chain's cap search and exact's budget plan repeat the same solves; each is now solved
    once (R = 6, ρ = 0.8: 13 solves were 6 distinct chains; R = 4, ρ = 0.95: 21 were 11, one of them by levels from
    a warm start), and the results are the bits of solving every one again."""
    from sojourn.jsq_ps.naming import table4_L1
    from sojourn.jsq_ps.solve.cell import approximate_cell

    t = time_grid(40.0, 0.05)
    methods = ["A*", "C*", "exact"]

    def cell():
        exact.forget_solves()
        return approximate_cell(R, rho, 1.0, methods, t, {"L1": table4_L1(R), "L2": 130}, True,
                                {"max_states": 600000, "max_seconds": 2})

    solved = []
    real = exact._solve_masses
    monkeypatch.setattr(exact, "_solve_masses", lambda *a, **k: solved.append(a[3:5]) or real(*a, **k))
    once = cell()
    assert len(solved) == len(set(solved))  # no chain solved twice (each from its one start)
    monkeypatch.setattr(exact, "SOLVED_MAX_STATES", 0)  # nothing kept: every solve done again
    solved.clear()
    again = cell()
    assert len(solved) > len(set(solved))
    for v in ("cdf", "lambda_n", "A_n", "truncation_mass", "validity_reason"):
        assert once[v].values.tobytes() == again[v].values.tobytes(), v
    assert once.attrs["exact_plan"] == again.attrs["exact_plan"]
