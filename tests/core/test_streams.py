"""The inline SFC64 stream (sojourn.core.laws.sfc64) is NumPy's, and the alias-table phase-type walk
(sojourn.core.laws.ph_walk) draws the law it is given: exact words and uniforms, exponentials to round-off with the
same number of words consumed, moments and reward integrals within 99 % CIs, Kolmogorov-Smirnov against the
exact CDF with a power control that must be rejected."""
from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit
from scipy import linalg, stats

from sojourn.core.laws import ph_walk, sfc64
from sojourn.core.laws import phase_type as ph
from sojourn.core.laws.seeds import replication_rng
from sojourn.split_merge.model import SplitMerge

PH3 = (np.array([0.5, 0.3, 0.2]), np.array([[-2.0, 1.0, 0.5], [0.3, -1.5, 0.2], [0.0, 0.4, -3.0]]))
HYPER2 = (np.array([0.8873, 0.1127]), -np.diag([1.7746, 0.2254]))  # mean 1, scv 4


@njit(cache=True)
def fill_uniform(out, st):
    """out[i] = successive uniform draws in [0, 1) from the state array ``st`` (advanced in place)."""
    s = sfc64.load(st)
    for i in range(out.size):
        x, s = sfc64.uniform(s)
        out[i] = x
    sfc64.store(st, s)


def _state(seed):
    bg = np.random.SFC64(seed)
    return bg, sfc64.state_of(bg)


@pytest.mark.parametrize("seed", [0, 12345, 2**63 + 7])
def test_uniforms_are_numpys_word_for_word_and_the_generator_continues(seed):
    bg, st = _state(seed)
    u = np.empty(100_003)
    fill_uniform(u, st)
    np.testing.assert_array_equal(u, np.random.Generator(np.random.SFC64(seed)).random(u.size))
    raw = np.random.SFC64(seed).random_raw(u.size + 5)
    np.testing.assert_array_equal((u * 2.0**53).astype(np.uint64), raw[: u.size] >> np.uint64(11))
    sfc64.store_state(bg, st)  # the bit generator resumes after the kernel's draws
    np.testing.assert_array_equal(bg.random_raw(5), raw[u.size:])


def test_exponentials_match_numpy_and_consume_the_same_words():
    """2·10⁶ draws reach the ziggurat's rejection and tail branches (2.2 % of draws); every accept/reject
    decision is NumPy's, so the states agree after the run."""
    bg, st = _state(7)
    x = np.empty(2_000_000)
    sfc64.fill_standard_exponential(x, st)
    gen = np.random.Generator(np.random.SFC64(7))
    y = gen.standard_exponential(x.size)
    np.testing.assert_allclose(x, y, rtol=1e-12, atol=0)
    assert x.max() > sfc64.ZIGGURAT_R  # the tail branch was taken
    assert [int(v) for v in gen.bit_generator.state["state"]["state"]] == [int(v) for v in st]


def test_state_of_refuses_another_bit_generator():
    with pytest.raises(TypeError, match="SFC64"):
        sfc64.state_of(np.random.PCG64(0))


def test_replication_rng_picks_the_bit_generator():
    spec = SplitMerge.from_rho(4, 2, 1, 0.5)
    assert isinstance(replication_rng(0, spec, 3).bit_generator, np.random.PCG64)
    a = replication_rng(0, spec, 3, "sfc64")
    assert isinstance(a.bit_generator, np.random.SFC64)
    b = replication_rng(0, spec, 3, "sfc64")
    assert a.random() == b.random()
    assert a.random() != replication_rng(0, spec, 4, "sfc64").random()


@pytest.mark.parametrize("p", [[1.0], [0.5, 0.5], [0.7, 0.2, 0.1], [1e-9, 0.3, 0.6999999990, 0.0],
                               list(np.random.default_rng(3).dirichlet(np.ones(17)))])
def test_alias_table_holds_each_probability(p):
    p = np.asarray(p, float)
    thr, own, alias = ph_walk.alias_table(p)
    K = p.size
    mass = np.zeros(K)
    np.add.at(mass, own, thr / K)
    np.add.at(mass, alias, (1.0 - thr) / K)
    np.testing.assert_allclose(mass, p / p.sum(), rtol=0, atol=1e-15)


@pytest.mark.parametrize("p", [[1.0], [0.5, 0.5], [0.7, 0.2, 0.1], [1e-9, 0.3, 0.6999999990, 0.0],
                               list(np.random.default_rng(5).dirichlet(np.ones(37)))])
def test_integer_alias_table_holds_each_probability_and_pads_with_nothing(p):
    p = np.asarray(p, float)
    thr, alias, b = ph_walk.int_alias_table(p)
    assert thr.size == alias.size == 1 << b and (1 << b) >= p.size > (1 << b) // 2
    K = 1 << b
    own = thr.astype(float) / 2.0 ** (64 - b) if b else np.ones(1)
    mass = np.zeros(K)
    np.add.at(mass, np.arange(K), own / K)
    np.add.at(mass, alias, (1.0 - own) / K)
    np.testing.assert_allclose(mass[: p.size], p / p.sum(), rtol=0, atol=1e-15)
    assert np.all(mass[p.size:] == 0.0)  # a padded column always gives its alias, a real outcome


def test_integer_alias_picks_draw_the_table():
    """Through the kernel: a three-branch hyperexponential is one pick (a 4-column integer table, one padded)
    and one exponential; the branch, read off the reward per unit time (its index), has β's frequencies
    (chi-square), and a 1 %-off β must be rejected."""
    beta = np.array([0.55, 0.3, 0.15])
    B = -np.diag([1.0, 10.0, 100.0])
    tables = ph_walk.walk_tables(beta, B, reward=np.array([0.0, 1.0, 2.0]))
    assert tables[0].size == 4
    n = 300_000
    t, w = np.empty(n), np.empty(n)
    ph_walk.fill(t, w, _state(21)[1], *tables)
    branch = np.rint(w / t).astype(int)
    assert np.allclose(w, branch * t)
    counts = np.bincount(branch, minlength=3)
    assert counts.size == 3
    assert stats.chisquare(counts, beta * n).pvalue > 1e-3
    assert stats.chisquare(counts, np.array([0.56, 0.3, 0.14]) * n).pvalue < 1e-6  # power control
    # and each branch holds its own rate: the mean time given the branch is 1/rate
    for k, rate in enumerate(-np.diag(B)):
        x = t[branch == k]
        assert abs(x.mean() * rate - 1.0) < 2.576 * x.std(ddof=1) * rate / math.sqrt(x.size)


def test_prefix_paths_partition_the_walk():
    """The paths' probabilities are the products of their jumps and sum to 1; a hyperexponential's S_{3:10}
    lumped chain closes every path after 3 jumps (4 words a draw), PH3's keeps open ones within the budget."""
    for law, q, r, closed in ((HYPER2, 3, 10, True), (PH3, 2, 3, False), (PH3, 1, 1, False)):
        beta, B = ph.order_statistic_lumped(*law, q, r)
        start = [(i, beta[i]) for i in range(beta.size) if beta[i] > 0]
        _, succ = ph_walk._step_tables(B)
        paths = ph_walk._prefix_paths(start, succ, 256)
        assert len(paths) <= 256
        assert abs(sum(p for p, _, _ in paths) - 1.0) < 1e-12
        for p, held, end in paths[:50]:
            prob = beta[held[0]] if held else beta[end]
            for a, b in zip(held, held[1:] + (end,), strict=True):
                prob *= succ[a][1][list(succ[a][0]).index(b)]
            assert abs(prob - p) < 1e-15
        assert all(e < 0 and len(h) == q for _, h, e in paths) == closed


def _words_spent(tables, n, batches, seed):
    """Words per draw, by the SFC64 state's fourth word (a counter of words drawn), over ``batches`` batches of
    ``n`` draws: (mean, its standard error from the batch means)."""
    _, st = _state(seed)
    t, w = np.empty(n), np.empty(n)
    spent = np.empty(batches)
    for k in range(batches):
        c0 = int(st[3])
        ph_walk.fill(t, w, st, *tables)
        spent[k] = (int(st[3]) - c0) / n
    return spent.mean(), spent.std(ddof=1) / math.sqrt(batches)


def test_exponential_words_are_what_the_ziggurat_spends():
    _, st = _state(8)
    c0, x = int(st[3]), np.empty(1_000_000)
    spent = np.empty(40)
    for k in range(spent.size):
        c0 = int(st[3])
        sfc64.fill_standard_exponential(x[:25_000], st)
        spent[k] = (int(st[3]) - c0) / 25_000
    assert abs(spent.mean() - sfc64.EXPONENTIAL_WORDS) < 2.576 * spent.std(ddof=1) / math.sqrt(spent.size)
    assert 1.03 < sfc64.EXPONENTIAL_WORDS < 1.04


@pytest.mark.parametrize("law,q,r", [("hyperexponential", 3, 10), ("ph3", 2, 3), ("ph3", 3, 10)])
def test_words_per_draw_is_what_the_stream_spends(law, q, r):
    """words_per_draw against the words the stream spends (99 % CI over batches), with and without paths;
    the paths spend fewer, and a hyperexponential's S_{3:10} spends 1 + 3 exponentials' words."""
    beta, B = ph.order_statistic_lumped(*(HYPER2 if law == "hyperexponential" else PH3), q, r)
    expected = {}
    for max_paths in (1, 256):
        tables = ph_walk.walk_tables(beta, B, max_paths=max_paths)
        expected[max_paths] = ph_walk.words_per_draw(tables)
        mean, se = _words_spent(tables, 2_000, 60, 4)
        assert abs(mean - expected[max_paths]) < 2.576 * se, (max_paths, mean, se, expected[max_paths])
    assert expected[256] < expected[1]
    if law == "hyperexponential":
        assert expected[256] == pytest.approx(1 + q * sfc64.EXPONENTIAL_WORDS) and expected[1] > 5


def _walk_draws(beta, B, reward, n, seed, max_paths=256):
    tables = ph_walk.walk_tables(beta, B, reward, max_paths=max_paths)
    t, w = np.empty(n), np.empty(n)
    _, st = _state(seed)
    ph_walk.fill(t, w, st, *tables)
    return t, w


@pytest.mark.parametrize(
    "name,law",
    [
        ("ph3", PH3),
        ("hyperexponential", (np.array([0.8873, 0.1127]), -np.diag([1.7746, 0.2254]))),
        (
            "erlang-3 with an atom",
            (np.array([0.9, 0.0, 0.0]), np.array([[-3.0, 3.0, 0.0], [0.0, -3.0, 3.0], [0.0, 0.0, -3.0]])),
        ),
        ("lumped S_{3:10} of ph3", ph.order_statistic_lumped(*PH3, 3, 10)),
        ("lumped S_{3:10} of the hyperexponential", ph.order_statistic_lumped(*HYPER2, 3, 10)),
    ],
)
@pytest.mark.parametrize("max_paths", [1, 256])
def test_walk_draws_the_law_and_its_reward(name, law, max_paths):
    """Phase by phase (max_paths = 1) and with the start drawn as whole paths (open and closed ones)."""
    beta, B = law
    reward = np.linspace(1.0, 2.0, beta.size)
    t, w = _walk_draws(beta, B, reward, 200_000, 11, max_paths)
    for k, x in ((1, t), (2, t**2)):
        m, s = x.mean(), x.std(ddof=1) / math.sqrt(x.size)
        exact = ph.moment(beta, B, k)
        assert abs(m - exact) < 2.576 * s, f"{name}: moment {k} {m:.6g} ± {2.576 * s:.3g} vs {exact:.6g}"
    # expected reward before absorption: β (−B)⁻¹ reward
    exact_w = float(beta @ np.linalg.solve(-B, reward))
    assert abs(w.mean() - exact_w) < 2.576 * w.std(ddof=1) / math.sqrt(w.size)
    # KS of the positive draws against the exact CDF of X given X > 0, PH(β/Σβ, B), on a fine uniform grid
    # (α exp(B k·h) by repeated products with exp(B h); interpolated: 1e-7 off, far below the statistic's
    # resolution); power control: the same law 3 % slower must be rejected
    pos = t[t > 0]
    grid = np.linspace(0.0, pos.max(), 20_001)

    def cdf_of(M):
        step = linalg.expm(M * grid[1])
        v, F = beta / beta.sum(), np.empty(grid.size)
        for k in range(grid.size):
            F[k] = 1.0 - v.sum()
            v = v @ step
        return lambda x: np.interp(x, grid, F)

    assert stats.kstest(pos, cdf_of(B)).pvalue > 1e-3
    assert stats.kstest(pos, cdf_of(B / 1.03)).pvalue < 1e-6
    deficit = 1.0 - beta.sum()
    assert abs((t == 0).mean() - deficit) < 4 * math.sqrt(max(deficit, 1e-6) / t.size) + 1e-12


def test_lumped_levels_follow_the_lumped_phases():
    for m, q, r in ((1, 1, 1), (3, 3, 10), (2, 2, 5)):
        alpha = np.full(m, 1.0 / m)
        T = -np.eye(m) + 0.5 * np.eye(m, k=1)
        beta, B = ph.order_statistic_lumped(alpha, T, q, r)
        lv = ph.lumped_levels(m, q, r)
        assert lv.size == beta.size and lv[0] == r and lv[-1] == r - q + 1
        # a level-j phase loses a replica only by moving to level j-1: B has no entry from level j to j-2
        for i, j in zip(*np.nonzero(B), strict=True):
            assert lv[i] - lv[j] in (0, 1)
