"""Exact M/M/R-JSQ-PS sojourn CDF (tagged-customer chain)."""
import numpy as np
import pytest

from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.solve.chain import solve_chain, stationary
from sojourn.jsq_ps.solve.exact import (
    PRUNE,
    SpreadStates,
    _system_moves,
    choose_truncation,
    exact_sojourn_cdf,
    system_chain,
)
from sojourn.jsq_ps.solve.mm1ps import mm1ps_sojourn_cdf
from sojourn.jsq_ps.solve.tagged_levels import LevelTaggedChain


@pytest.mark.parametrize("rho", [0.3, 0.9])
def test_exact_R1_is_mm1ps(rho):
    t = time_grid()
    r = exact_sojourn_cdf(rho, 1.0, 1, t)
    assert np.max(np.abs(r.cdf - mm1ps_sojourn_cdf(rho, 1.0, t))) < 1e-8


@pytest.mark.parametrize("R,rho", [(2, 0.6), (3, 0.7)])
def test_exact_mean_is_littles_law(R, rho):
    """E[T] from the tagged chain = E[N]/Λ from the stationary system chain (independent route)."""
    t = time_grid(80.0, 0.005)
    r = exact_sojourn_cdf(rho * R, 1.0, R, t)
    assert r.truncated_mass < 1e-8 and r.cdf[-1] > 1 - 1e-7
    S, Q = system_chain(rho * R, 1.0, R, r.M, r.D)
    pi = stationary(Q, levels=S.states.sum(axis=1))
    EN = float((S.states.sum(axis=1) * pi).sum())
    assert np.trapezoid(1 - r.cdf, t) == pytest.approx(EN / (rho * R), abs=2e-5)


def test_exact_truncation_converged():
    t = time_grid(40.0, 0.01)
    coarse = exact_sojourn_cdf(2 * 0.7, 1.0, 2, t)
    fine = exact_sojourn_cdf(2 * 0.7, 1.0, 2, t, M=coarse.M + 15, D=coarse.D + 6)
    assert fine.n_tagged_states > coarse.n_tagged_states
    assert np.max(np.abs(coarse.cdf - fine.cdf)) < 1e-6
    F = coarse.cdf
    assert F[0] == pytest.approx(0, abs=1e-10) and np.all(np.diff(F) >= -1e-13) and F[-1] <= 1


def test_spread_chain_matches_sorted_chain_when_untruncated():
    """With D ≥ L−1 nothing is cut by the spread, so the min-occupancy law equals the §3.2 chain's
    as both truncations become negligible (ρ small)."""
    R, rho = 3, 0.3
    S, Q = system_chain(rho * R, 1.0, R, 12, 11)
    pi = stationary(Q, levels=S.states.sum(axis=1))
    A_spread = np.bincount(S.states[:, 0], weights=pi, minlength=12)
    A_sorted = solve_chain(rho * R, 1.0, R, 24).A_n[:12]
    np.testing.assert_allclose(A_spread, A_sorted, atol=1e-10)


def test_exact_beats_nothing_silly():
    """JSQ with R=2 servers is faster than a single M/M/1-PS at the same per-server load."""
    t = time_grid(30.0, 0.01)
    r = exact_sojourn_cdf(2 * 0.8, 1.0, 2, t)
    assert np.all(r.cdf >= mm1ps_sojourn_cdf(0.8, 1.0, t) - 1e-12)


@pytest.mark.parametrize("R, rho, M, D", [(1, 0.5, 30, 0), (2, 0.9, 40, 5), (3, 0.8, 30, 6), (5, 0.7, 12, 4)])
def test_level_chain_kernel_and_sparse_matrix_step_alike(R, rho, M, D):
    """The tagged chain's two steppers — the numba kernel (large chains) and the CSR matrix written out from the
    same tables (small chains, no numba import) — give the same masses to rounding from an arbitrary start."""
    from sojourn.jsq_ps.solve.tagged_levels import LevelTaggedChain

    chain = LevelTaggedChain(rho * R, 1.0, R, M, D)
    p0 = np.random.default_rng(7).random((chain.size_phases, M)) * chain.valid
    p0 /= p0.sum()
    g_kernel, a_kernel, n_kernel = chain.masses(p0, 300, kernel=True)
    g_sparse, a_sparse, n_sparse = chain.masses(p0, 300, kernel=False)
    assert n_kernel == n_sparse == 300
    assert g_kernel[-1] < 0.99 and a_kernel[-1] > 0.01  # the chain moved, tagged customers left
    np.testing.assert_allclose(g_sparse, g_kernel, rtol=0, atol=1e-14)
    np.testing.assert_allclose(a_sparse, a_kernel, rtol=0, atol=1e-14)
    assert np.all(a_kernel + g_kernel <= 1 + 1e-13) and np.all(np.diff(a_kernel) >= 0)


def test_certified_bounds_hold_a_larger_truncation():
    """The truncated chain's bounds [F_lo, F_hi] (moves leaving the truncation lose their mass; exact.py,
    "certified bound") hold the CDF of a much larger truncation started from the same initial law: at R = 3,
    ρ = 0.9 with caps M = 12, D = 3 the bounds are wide (the cut is far inside the mass) and the larger chain's
    CDF — itself within its own 1e-9 — lies between them, while the small chain's midpoint misses it by far
    more than the larger chain's bound."""
    from scipy import stats

    from sojourn.jsq_ps.solve.tagged_levels import LevelTaggedChain
    from sojourn.jsq_ps.solve.uniformization import poisson_cutoff, poisson_mix

    R, rho, t = 3, 0.9, time_grid(60.0, 0.05)
    small, large = LevelTaggedChain(rho * R, 1.0, R, 12, 3), LevelTaggedChain(rho * R, 1.0, R, 80, 17)
    # an initial law on the small chain: geometric in the level, uniform over the phases of each level
    p_small = stats.geom(0.3).pmf(np.arange(1, 13))[None, :] * small.valid
    p_small /= p_small.sum()
    # the same states in the larger chain (phases by their tagged offset and others' offsets; levels kept)
    perm_s = np.argsort(small.inv)  # position -> TaggedPhases row
    ot, occ = small.phases.ot[perm_s], small.phases.O[perm_s]
    where = large.inv[large.phases.index(ot, occ)]
    assert np.all(where >= 0)
    p_large = np.zeros((large.size_phases, 80))
    p_large[where, :12] = p_small

    def bounds(chain, p0):
        K = poisson_cutoff(chain.q * t.max(), 1e-13)
        g, a, _ = chain.masses(p0, K)
        ga = poisson_mix(chain.q, t, np.stack([g, 1.0 - a], axis=1))
        return 1.0 - ga[:, 1], 1.0 - ga[:, 0]

    lo_s, hi_s = bounds(small, p_small)
    lo_l, hi_l = bounds(large, p_large)
    assert np.max(hi_l - lo_l) < 1e-9  # the larger chain holds the truth to 1e-9
    assert np.max(hi_s - lo_s) > 1e-3  # the small chain's cut matters
    assert np.all(lo_s <= lo_l + 1e-12) and np.all(hi_l <= hi_s + 1e-12)
    assert np.max(np.abs(0.5 * (lo_s + hi_s) - lo_l)) > 1e-4


@pytest.mark.parametrize("R, rho", [(1, 0.95), (2, 0.9), (4, 0.8)])
def test_exact_reports_its_certified_bound(R, rho):
    """``exact`` reports the midpoint of its bounds and their half-width: the bounds bracket the CDF, the
    half-width is below 1e-9 where the truncation reached its tolerance, and the mass that left the truncation
    (by the last uniformised step) bounds their distance."""
    t = time_grid(100.0, 0.01)
    r = exact_sojourn_cdf(rho * R, 1.0, R, t)
    assert r.reached
    assert np.all(r.cdf_lower <= r.cdf + 1e-15) and np.all(r.cdf <= r.cdf_upper + 1e-15)
    bound = r.info["cdf_error_bound"]
    assert 0 < bound < 1e-9
    assert np.max(r.cdf_upper - r.cdf_lower) / 2 <= bound
    assert r.cdf_upper[-1] - r.cdf_lower[-1] <= r.info["tagged_mass_left"] + 1e-13


def test_pruning_drops_states_and_the_bound_still_holds_the_whole_box():
    """Pruning (exact.py module doc) steps a fraction of the box's states; its certified bounds hold the whole
    box's CDF, and its reported bound exceeds the box's own by at most half the a-priori budget (PRUNE·eps of mass
    lost to the dropped states) at R = 4, ρ = 0.9."""
    t = time_grid(120.0, 0.01)
    box = exact_sojourn_cdf(4 * 0.9, 1.0, 4, t, prune=0)
    pruned = exact_sojourn_cdf(4 * 0.9, 1.0, 4, t)
    assert box.info["tagged_states_kept"] == 1.0 and pruned.info["tagged_states_kept"] < 0.5
    assert (pruned.M, pruned.D) == (box.M, box.D)
    assert np.all(pruned.cdf_lower <= box.cdf + 1e-12) and np.all(box.cdf <= pruned.cdf_upper + 1e-12)
    box_bound = box.info["cdf_error_bound"]
    assert box_bound < pruned.info["cdf_error_bound"] <= box_bound + PRUNE * 1e-10 / 2
    # a budget far too coarse shows in the bound, not as a silent error
    coarse = exact_sojourn_cdf(4 * 0.9, 1.0, 4, t, prune=1e5)
    assert coarse.info["cdf_error_bound"] > 100 * box.info["cdf_error_bound"]
    assert np.all(coarse.cdf_lower <= box.cdf + 1e-12) and np.all(box.cdf <= coarse.cdf_upper + 1e-12)


def test_occupation_measure_is_littles_law_and_its_caps_keep_their_budget():
    """The tagged chain's occupation measure read off the system law by Little's law (tagged_levels.py) sums to the
    mean sojourn time of the exact CDF, and the level caps drawn from it drop states whose expected entries sum to
    no more than the budget (R = 3, ρ = 0.8)."""
    R, rho, eps = 3, 0.8, 1e-10
    S, pi, _, _ = choose_truncation(rho * R, 1.0, R, eps)
    tc = LevelTaggedChain(rho * R, 1.0, R, S.M, S.D)
    n = tc.occupation(pi.reshape(S.M, -1))
    t = time_grid(150.0, 0.01)
    r = exact_sojourn_cdf(rho * R, 1.0, R, t, prune=0)
    assert 1 - r.cdf[-1] < 1e-9
    mean = float(np.sum(np.diff(t) * (2 - r.cdf[1:] - r.cdf[:-1]) / 2))  # ∫ P(T > t) dt by trapezoids
    assert n.sum() == pytest.approx(mean, rel=1e-5)  # the trapezoids' error, h²/12·f(0), is about 4e-6
    for budget in (PRUNE * eps, 1e-6):
        caps = tc.caps_from_occupation(pi.reshape(S.M, -1), budget)
        dropped = np.arange(S.M)[:, None] >= caps[None, :]
        assert tc.q * n[dropped].sum() <= budget and dropped.any()


@pytest.mark.parametrize("R, M, D", [(2, 5, 3), (3, 9, 4), (5, 12, 5)])
def test_system_chain_repeated_over_levels_is_the_per_state_chain(R, M, D):
    """The system chain built on three levels and repeated (exact.system_chain) is the chain built state by state,
    entry for entry."""
    S, Q = system_chain(2.7, 1.0, R, M, D)
    full = SpreadStates(M, D, R)
    rows, cols, vals = (np.concatenate(z) for z in zip(*_system_moves(2.7, 1.0, R, full), strict=True))
    from scipy import sparse

    ref = sparse.coo_matrix((vals, (rows, cols)), shape=(full.size, full.size)).tocsr()
    ref = (ref - sparse.diags(np.asarray(ref.sum(axis=1)).ravel())).tocsr()
    assert np.array_equal(Q.indptr, ref.indptr) and np.array_equal(Q.indices, ref.indices)
    assert np.array_equal(Q.data, ref.data)


@pytest.mark.parametrize("R", [2, 3, 4])
def test_pruned_chain_at_high_load_stays_within_1e_9_of_the_whole_box(R):
    """At ρ = 0.95 (the edge of exact's default reach) the pruned chain's CDF is within 1e-9 of the whole box's, and its
    bound within the box's plus half the pruning budget (the issue 36 criterion against the route before it)."""
    t = time_grid(40.0, 0.01)
    box = exact_sojourn_cdf(0.95 * R, 1.0, R, t, prune=0)
    pruned = exact_sojourn_cdf(0.95 * R, 1.0, R, t)
    assert pruned.info["tagged_states_kept"] < 0.8
    assert np.max(np.abs(pruned.cdf - box.cdf)) < 1e-9
    assert pruned.info["cdf_error_bound"] <= box.info["cdf_error_bound"] + PRUNE * 1e-10 / 2
