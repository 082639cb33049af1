"""PH order statistics in the core: closed forms, Kronecker = lumped, Monte Carlo, size/speed, validation."""
import math
import time

import numpy as np
import pytest

from sojourn.core.laws import phase_type as ph

# the arbitrary 3-phase test law of split_merge.md §4 (not the paper's, which is missing)
BETA = np.array([0.5, 0.3, 0.2])
B = np.array([[-2.0, 1.0, 0.5], [0.3, -1.5, 0.2], [0.0, 0.4, -3.0]])
# a 2-phase Coxian with an atom at 0 (Σα = 0.9)
ATOM_A = np.array([0.6, 0.3])
ATOM_T = np.array([[-3.0, 2.0], [0.0, -0.7]])
#: PH of S_{q:r}: the lumped construction and the paper's Kronecker form
ORDER_STATISTIC = {"lumped": ph.order_statistic_lumped, "kronecker": ph.order_statistic_kronecker}


@pytest.mark.parametrize("method", ["lumped", "kronecker"])
@pytest.mark.parametrize("q,r", [(1, 1), (1, 4), (2, 3), (3, 3), (2, 5), (4, 6)])
def test_exponential_order_statistic_mean(method, q, r):
    mu = 1.7
    a, T = ORDER_STATISTIC[method](np.ones(1), np.array([[-mu]]), q, r)
    expected = sum(1.0 / (j * mu) for j in range(r - q + 1, r + 1))  # E[S_{q:r}] = Σ_{j=r−q+1..r} 1/(jμ)
    assert ph.mean(a, T) == pytest.approx(expected, rel=1e-12)
    var = sum(1.0 / (j * mu) ** 2 for j in range(r - q + 1, r + 1))  # independent stages
    assert ph.variance(a, T) == pytest.approx(var, rel=1e-10)


def test_reference_values_of_the_note():
    """split_merge.md §4 (5 digits, computed there with a Kronecker port): agreement to 1e-4 (its (1,3) and
    (2,4) values differ from ours by 3e-5 and 7e-5; both of our constructions and Monte Carlo agree with ours)."""
    for (q, r), m in {(2, 3): 0.76732, (3, 3): 1.68232, (1, 3): 0.30820, (2, 4): 0.53832}.items():
        assert ph.mean(*ph.order_statistic_lumped(BETA, B, q, r)) == pytest.approx(m, abs=1e-4)
    assert ph.moment(*ph.order_statistic_lumped(BETA, B, 2, 3), 2) == pytest.approx(0.89153, abs=1e-5)


@pytest.mark.parametrize("law", [(BETA, B), (ATOM_A, ATOM_T)], ids=["3-phase", "atom"])
@pytest.mark.parametrize("q,r", [(1, 3), (2, 3), (3, 3), (2, 4), (3, 5)])
def test_kronecker_equals_lumped(law, q, r):
    ka, kT = ph.order_statistic_kronecker(*law, q, r)
    la, lT = ph.order_statistic_lumped(*law, q, r)
    m = law[0].size
    assert ka.size == sum(m**j for j in range(r - q + 1, r + 1))
    assert la.size == sum(math.comb(j + m - 1, m - 1) for j in range(r - q + 1, r + 1))
    assert ka.sum() == pytest.approx(la.sum(), abs=1e-13)
    for k in (1, 2, 3):
        assert ph.moment(ka, kT, k) == pytest.approx(ph.moment(la, lT, k), rel=1e-10)
    x = np.linspace(0.0, 4.0, 9)
    np.testing.assert_allclose(ph.sf(ka, kT, x), ph.sf(la, lT, x), atol=1e-10)


@pytest.mark.parametrize("law", [(BETA, B), (ATOM_A, ATOM_T)], ids=["3-phase", "atom"])
def test_order_statistic_against_sampled_replicas(law):
    """Sort r sampled replicas, take the q-th: mean and P(S > x) agree with the PH within 4.5 standard errors."""
    q, r, n = 2, 4, 200_000
    rng = np.random.default_rng(20261201)
    s = np.sort(ph.sample(*law, (n, r), rng), axis=1)[:, q - 1]
    a, T = ph.order_statistic_lumped(*law, q, r)
    assert abs(s.mean() - ph.mean(a, T)) < 4.5 * s.std() / math.sqrt(n)
    for x in (0.2, 0.6, 1.5):
        p = float(ph.sf(a, T, x))
        assert abs((s > x).mean() - p) < 4.5 * math.sqrt(p * (1 - p) / n)
    # power control: the same test rejects the neighbouring order statistic
    a3, T3 = ph.order_statistic_lumped(*law, q + 1, r)
    assert abs(s.mean() - ph.mean(a3, T3)) > 4.5 * s.std() / math.sqrt(n)


def test_lumped_3_of_10_with_3_phases_is_small_and_fast():
    t0 = time.perf_counter()
    a, T = ph.order_statistic_lumped(BETA, B, 3, 10)
    elapsed = time.perf_counter() - t0
    assert a.size == 66 + 55 + 45  # C(12,2) + C(11,2) + C(10,2), against 3^10 + 3^9 + 3^8 = 85 293
    assert elapsed <= 1.0
    ph.validate(a, T, atom=True)
    # exchangeability check: the minimum of 10 is PH(β^⊗10, B^⊕10); q = 1 of the lumped form agrees with it
    # through its mean, E[min] = ∫ sf^10 (checked numerically)
    a1, T1 = ph.order_statistic_lumped(BETA, B, 1, 10)
    x = np.linspace(0, 3, 3001)
    integral = np.trapezoid(ph.sf(BETA, B, x) ** 10, x)
    assert ph.mean(a1, T1) == pytest.approx(integral, rel=1e-4)


def test_kronecker_refuses_an_infeasible_size():
    with pytest.raises(ValueError, match="lumped"):
        ph.order_statistic_kronecker(BETA, B, 3, 10)


@pytest.mark.parametrize("alpha,T,match", [
    ([0.5, 0.6, 0.2], B, r"replica\.alpha must sum to at most 1"),
    ([-0.1, 0.6, 0.5], B, r"replica\.alpha must be non-negative"),
    (BETA, [[1.0, 0, 0], [0, -1, 0], [0, 0, -1]], r"replica\.T must have negative diagonal"),
    (BETA, [[-1.0, 2.0, 0], [0, -1, 0], [0, 0, -1]], r"replica\.T must have non-positive row sums"),
    (BETA, [[-1.0, 1.0, 0], [1.0, -1.0, 0], [0, 0, -1]], r"replica\.T must be non-singular.*phase\(s\) \[0, 1\]"),
    (BETA, [[-1.0, 0.5], [0.5, -1.0]], r"replica\.T must be a 3x3 matrix"),
])
@pytest.mark.parametrize("method", ["lumped", "kronecker"])
def test_invalid_ph_is_rejected_naming_the_field(alpha, T, match, method):
    with pytest.raises(ValueError, match=match):
        ORDER_STATISTIC[method](alpha, T, 1, 2)


@pytest.mark.parametrize("q,r,match", [(3, 2, r"quorum must be an integer in \[1, replicas=2\]"),
                                       (0, 2, "quorum must be an integer >= 1"),
                                       (1, 0, "replicas must be an integer >= 1"),
                                       (1.5, 2, "quorum must be an integer")])
def test_invalid_order_is_rejected_naming_the_field(q, r, match):
    with pytest.raises(ValueError, match=match):
        ph.order_statistic_lumped(BETA, B, q, r)


def test_convolution_adds_means_and_variances():
    a, T = ph.convolution(BETA, B, ATOM_A, ATOM_T)
    assert ph.mean(a, T) == pytest.approx(ph.mean(BETA, B) + ph.mean(ATOM_A, ATOM_T), rel=1e-12)
    assert ph.variance(a, T) == pytest.approx(ph.variance(BETA, B) + ph.variance(ATOM_A, ATOM_T), rel=1e-12)
