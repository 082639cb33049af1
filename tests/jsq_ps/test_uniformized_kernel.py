"""The numba stepping of uniformized_masses gives the same bits as scipy's product (issue 36: T's and T-law's steps
in one call instead of one Python call each)."""
import numpy as np
import pytest

from sojourn.jsq_ps.solve import tail
from sojourn.jsq_ps.solve.uniformization import uniformized_masses


def test_pairwise_sum_is_numpys_sum():
    from sojourn.jsq_ps.solve._uniformized_kernel import pairwise_sum

    rng = np.random.default_rng(36)
    for n in [*range(0, 260), 1000, 4095, 8192, 8193, 35001]:
        a = rng.random(n) * 10.0 ** rng.integers(-30, 1, n)
        assert 0.0 + pairwise_sum(a, 0, n) == np.add.reduce(a), n


@pytest.mark.parametrize("R, rho, D, stops", [(1, 0.95, 0, False), (3, 0.9, 3, True), (10, 0.99, 2, False)])
def test_kernel_steps_are_scipys_bits(R, rho, D, stops):
    """T's tagged chains at high load, R = 1, 3 and 10 (46 000 states): g the same bits, and the same early stop."""
    lam, mu = rho * R, 1.0
    M, pi, ph = tail.level_cap(lam, mu, R, D, 1e-9)
    ch = tail.tagged_chain(lam, mu, R, M, D, D + tail.TAGGED_EXTRA, pi, ph)
    K = 6000
    for stop in (0.0, 1e-15):
        g0, s0 = uniformized_masses(ch.PT, ch.p0, K, stop, kernel=False)
        g1, s1 = uniformized_masses(ch.PT, ch.p0, K, stop, kernel=True)
        assert s0 == s1 and g0.tobytes() == g1.tobytes()
    assert (s0 < K) == stops  # R = 3: the stop was reached (4 707 steps)
