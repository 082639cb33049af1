"""Exact M/M/1-PS sojourn law (sojourn.jsq_ps.solve.mm1ps) against independent computations."""
import numpy as np
import pytest
from scipy import sparse
from scipy.sparse.linalg import expm_multiply

from sojourn.jsq_ps.solve import mm1ps_sojourn_cdf, mm1ps_sojourn_sf, time_grid


def tagged_chain_sf(lam, mu, t, n_others=1500):
    """Independent check: tagged-customer CTMC (state = others present), expm_multiply on transposed Q."""
    J = n_others
    j = np.arange(J + 1, dtype=float)
    up = np.full(J, lam)
    down = j[1:] * mu / (j[1:] + 1)
    diag = -(mu / (j + 1) + j * mu / (j + 1) + np.r_[up, 0.0])
    Q = sparse.diags([diag, up, down], [0, 1, -1], format="csr")
    rho = lam / mu
    p0 = (1 - rho) * rho**j
    # P(T>t) = p0 exp(Qt) 1  = (exp(Q^T t) p0) · 1
    out = []
    for ti in t:
        out.append(expm_multiply(Q.T.tocsr() * ti, p0).sum())
    return np.array(out)


@pytest.mark.parametrize("lam", [0.3, 0.9, 0.99])
def test_sf_matches_tagged_chain(lam):
    t = np.array([0.0, 0.37, 2.0, 15.0, 60.0, 182.32])
    ref = tagged_chain_sf(lam, 1.0, t, n_others=4000 if lam > 0.95 else 600)
    got = mm1ps_sojourn_sf(lam, 1.0, t)
    assert np.max(np.abs(got - ref)) < 1e-9


@pytest.mark.parametrize("lam,mu", [(0.5, 1.0), (1.2, 2.0)])
def test_mean_is_one_over_mu_minus_lambda(lam, mu):
    t = time_grid(120.0, 0.005)
    sf = mm1ps_sojourn_sf(lam, mu, t)
    assert sf[-1] < 1e-8  # nothing left beyond the grid
    assert abs(np.trapezoid(sf, t) - 1 / (mu - lam)) < 2e-5


def test_cdf_structure_and_limits():
    t = time_grid()
    f = mm1ps_sojourn_cdf(0.99, 1.0, t)
    assert f[0] == 0.0 and np.all(np.diff(f) >= -1e-13) and f[-1] < 1
    # λ = 0: a customer alone, S ~ Exp(μ)
    assert np.allclose(mm1ps_sojourn_sf(0.0, 2.0, t[:500]), np.exp(-2.0 * t[:500]), atol=1e-12)
    # initial slope Σ_n (1-ρ)ρ^n μ/(n+1) = μ(1-ρ)/ρ·(-ln(1-ρ))  (§3.6a)
    rho = 0.51
    h = 1e-6
    slope = (mm1ps_sojourn_cdf(rho, 1.0, [h])[0]) / h
    assert abs(slope - (1 - rho) / rho * -np.log(1 - rho)) < 1e-5


@pytest.mark.parametrize("bad", [dict(arrival_rate=1.0, service_rate=1.0), dict(arrival_rate=-0.1, service_rate=1.0),
                                 dict(arrival_rate=0.5, service_rate=0.0)])
def test_invalid(bad):
    with pytest.raises(ValueError):
        mm1ps_sojourn_cdf(t=[0.0, 1.0], **bad)
