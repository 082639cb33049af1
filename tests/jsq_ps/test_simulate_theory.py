"""Fast backend against exact results: M/M/1-PS, M/G/1-PS, M/M/1-FCFS, M/G/1-FCFS (P-K), M/M/c.

Every tolerance is a Student-t interval across independent replications (fixed seeds):
|mean over replications − exact| ≤ t_{1−α/2m, k−1} · s/√k, α = 1e-3, m = number of checks in the test.
Runs use dt = 1/8 (exact binary bin edges) and short horizons: a whole test takes well under a second.
"""
import math

import numpy as np
import pytest
from scipy import stats as st
from scipy.linalg import expm

from sojourn import JSQPS
from sojourn.core.estimates.stats import cdf_from_histogram
from sojourn.jsq_ps.simulate import simulate

DT = 0.125
TMAX = 60.0
ALPHA = 1e-3


def within_ci(per_rep, expected, m=1, alpha=ALPHA):
    """True when ``expected`` lies in the (1 − α/m) t-interval of the per-replication values (axis 0)."""
    x = np.asarray(per_rep, dtype=float)
    k = x.shape[0]
    hw = st.t.ppf(1 - alpha / (2 * m), k - 1) * x.std(axis=0, ddof=1) / math.sqrt(k)
    assert np.all(hw > 0)
    return np.abs(x.mean(axis=0) - np.asarray(expected)) <= hw


def run(spec, reps=16, horizon=30_000.0, warmup=1_500.0, seed=11, **kw):
    return simulate(spec, horizon=horizon, warmup=warmup, replications=reps, seed=seed, dt=DT, t_max=TMAX,
                    occupancy_max=30, **kw)


def cdf_at(ds, t):
    """Per-replication P(S < t) at right bin edges t (multiples of DT)."""
    F = cdf_from_histogram(ds["count"].values, ds["overflow"].values)
    idx = np.round(np.asarray(t) / DT).astype(int) - 1
    return F[:, idx]


def _tagged_chain(lam, mu, K):
    k = np.arange(K + 1)
    G = np.zeros((K + 1, K + 1))
    G[k[:-1], k[:-1] + 1] = lam
    G[k[1:], k[1:] - 1] = mu * k[1:] / (k[1:] + 1)
    G[k, k] = -(mu + lam * (k < K))
    rho = lam / mu
    return G, (1 - rho) * rho**k


def mm1ps_sf(lam, mu, t, K=150):
    """P(S > t) for M/M/1-PS: tagged-customer CTMC on k = others present, started from the PASTA law.

    With k others, the tagged customer leaves at rate μ/(k+1), another leaves at μk/(k+1), arrivals at λ
    (truncated at K others); P(S > t) = Σ_k (1−ρ)ρ^k [exp(G t) 1]_k, G the sub-generator.
    """
    G, pi = _tagged_chain(lam, mu, K)
    return np.array([pi @ expm(G * ti) @ np.ones(K + 1) for ti in np.atleast_1d(t)])


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.8])
@pytest.mark.parametrize("kernel", ["general", "exponential"])
def test_mm1ps_mean_number_and_pasta(rho, kernel):
    """JSQ-PS with R = 1 is M/M/1-PS: E[S] = 1/(μ−λ), L = ρ/(1−ρ), arrivals see (1−ρ)ρ^n (PASTA)."""
    spec = JSQPS.from_rho(1, rho)
    ds = run(spec, kernel=kernel)
    assert ds.attrs["kernel"] == kernel
    occ = ds["occupancy_at_arrival"].values
    p = occ[:, :4] / occ.sum(axis=1, keepdims=True)
    m = 2 + 4
    assert within_ci(ds["mean"].values, 1 / (1 - rho), m).all()
    assert within_ci(ds["mean_number_per_server"].values, rho / (1 - rho), m).all()
    assert within_ci(p, (1 - rho) * rho ** np.arange(4), m).all()
    assert (occ.sum(axis=1) == ds["n_customers"].values).all()


def test_mm1ps_exact_cdf():
    """Simulated P(S < t) vs the exact M/M/1-PS sojourn law (tagged-customer chain) at several t."""
    lam, rho = 0.7, 0.7
    t = np.array([0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
    exact = 1 - mm1ps_sf(lam, 1.0, t)
    # the chain itself: its mean ∫ P(S > t) dt = π(−G)⁻¹1 must be 1/(μ − λ)
    G, pi = _tagged_chain(lam, 1.0, 150)
    assert pi @ np.linalg.solve(-G, np.ones(len(pi))) == pytest.approx(1 / (1 - rho), rel=1e-9)
    for kernel in ("general", "exponential"):
        ds = run(JSQPS.from_rho(1, rho), kernel=kernel, reps=20)
        assert within_ci(cdf_at(ds, t), exact, m=len(t)).all(), kernel


def test_conditional_mean_given_service_requirement():
    """M/G/1-PS: E[S | x] = x/(1−ρ) (lognormal service), per service-requirement bin."""
    rho = 0.6
    spec = JSQPS.from_rho(1, rho, service="lognormal")
    w, K = 0.25, 12
    ds = run(spec, reps=16, service_bins=(w, K), kernel="general")
    cnt = ds["service_count"].values
    per_rep = ds["service_sojourn_sum"].values / cnt
    # E[X | a ≤ X < b] for lognormal(m, s): partial expectation E[X; X<b] = e^{m+s²/2} Φ((ln b − m − s²)/s)
    m_, s_ = spec.service.mu, spec.service.sigma
    a = np.arange(K) * w
    b = a + w
    with np.errstate(divide="ignore"):
        la, lb = np.log(a), np.log(b)
    pe = lambda lx: math.exp(m_ + s_**2 / 2) * st.norm.cdf((lx - m_ - s_**2) / s_)
    prob = st.norm.cdf((lb - m_) / s_) - st.norm.cdf((la - m_) / s_)
    ex = (pe(lb) - pe(la)) / prob
    keep = cnt.min(axis=0) >= 200
    assert keep.sum() >= 8
    assert within_ci(per_rep[:, keep], ex[keep] / (1 - rho), m=int(keep.sum())).all()
    # and the whole-stream mean is insensitive: 1/(μ − λ)
    assert within_ci(ds["mean"].values, 1 / (1 - rho)).all()


@pytest.mark.parametrize("law", ["lognormal", "hyperexponential", "deterministic"])
def test_mg1ps_insensitivity(law):
    """M/G/1-PS: E[S] = E[x]/(1−ρ) and L = ρ/(1−ρ) whatever the service law."""
    rho = 0.7
    ds = run(JSQPS.from_rho(1, rho, service=law))
    assert within_ci(ds["mean"].values, 1 / (1 - rho), 2).all()
    assert within_ci(ds["mean_number_per_server"].values, rho / (1 - rho), 2).all()


def test_limited_ps_c1_is_mm1_fcfs():
    """Limited PS with c = 1 is FCFS: M/M/1 sojourn ~ Exp(μ − λ) (mean and CDF)."""
    rho = 0.7
    ds = run(JSQPS.from_rho(1, rho, discipline="limited", ps_limit=1))
    t = np.array([0.5, 1.0, 2.0, 5.0, 10.0])
    assert within_ci(ds["mean"].values, 1 / (1 - rho), 1 + len(t)).all()
    assert within_ci(cdf_at(ds, t), 1 - np.exp(-(1 - rho) * t), 1 + len(t)).all()


@pytest.mark.parametrize("law, ex2", [("deterministic", 1.0), ("uniform", 4.0 / 3.0)])
def test_pollaczek_khinchine(law, ex2):
    """M/G/1-FCFS (limited PS, c = 1): E[S] = E[x] + λE[x²]/(2(1−ρ)) (Pollaczek–Khinchine)."""
    rho = 0.7
    ds = run(JSQPS.from_rho(1, rho, service=law, discipline="limited", ps_limit=1))
    assert within_ci(ds["mean"].values, 1.0 + rho * ex2 / (2 * (1 - rho))).all()


def test_capacitated_ps_number_process_is_mmc():
    """Capacitated PS with θ = c and exponential service: the number in system is the M/M/c chain, so
    E[S] = 1/μ + C(c, a)/(cμ − λ) (Erlang C), L = λE[S], arrivals see the M/M/c law (PASTA)."""
    c, rho = 3, 0.75
    spec = JSQPS.from_rho(1, rho, discipline="capacitated", ps_threshold=float(c))
    lam = spec.arrival_rate
    a = lam
    w = np.array([a**n / math.factorial(n) if n <= c else a**c / math.factorial(c) * rho ** (n - c)
                  for n in range(200)])
    pi = w / w.sum()  # M/M/c stationary law
    erlang_c = pi[c:].sum()
    es = 1.0 + erlang_c / (c - lam)
    ds = run(spec, kernel="general")
    occ = ds["occupancy_at_arrival"].values
    p = occ[:, :5] / occ.sum(axis=1, keepdims=True)
    m = 2 + 5
    assert within_ci(ds["mean"].values, es, m).all()
    assert within_ci(ds["mean_number_per_server"].values, lam * es, m).all()
    assert within_ci(p, pi[:5], m).all()


@pytest.mark.parametrize("dispatch, extra", [("jsq", {}), ("jsq-d", {"choices": 2}), ("round-robin", {})])
def test_little_law_multi_server(dispatch, extra):
    """R L_server = Λ E[S] (Little) per replication, lognormal service, R = 3: the paired difference
    has mean 0 (window edge effects are O(1/T))."""
    spec = JSQPS.from_rho(3, 0.8, service="lognormal", dispatch=dispatch, **extra)
    ds = run(spec, reps=12, horizon=20_000.0, warmup=1_000.0)
    diff = 3 * ds["mean_number_per_server"].values - spec.arrival_rate * ds["mean"].values
    assert within_ci(diff, 0.0).all()


def test_random_dispatch_is_independent_mm1():
    """Random dispatch splits Poisson(Λ) into R independent M/M/1-PS queues at load ρ."""
    rho = 0.7
    for kernel in ("general", "exponential"):
        ds = run(JSQPS.from_rho(3, rho, dispatch="random"), kernel=kernel, reps=12, horizon=20_000.0)
        assert within_ci(ds["mean"].values, 1 / (1 - rho), 2).all(), kernel


def test_interval_has_power():
    """The interval used above rejects a 5% error in the exact M/M/1-PS mean (the tests can fail)."""
    ds = run(JSQPS.from_rho(1, 0.6))
    assert within_ci(ds["mean"].values, 2.5).all()
    assert not within_ci(ds["mean"].values, 2.5 * 1.05).any()


def test_mm1ps_cdf_against_analytic_module():
    """Simulated M/M/1-PS CDF vs sojourn.jsq_ps.solve.mm1ps (Masuyama–Takine), which must also agree with the
    tagged-customer chain above."""
    from sojourn.jsq_ps.solve import mm1ps  # imported, not importorskip: a renamed module must fail here
    lam = 0.85
    t = np.array([0.5, 1.0, 3.0, 10.0, 30.0])
    exact = mm1ps.mm1ps_sojourn_cdf(lam, 1.0, t)
    np.testing.assert_allclose(exact, 1 - mm1ps_sf(lam, 1.0, t, K=400), atol=1e-8)
    ds = run(JSQPS.from_rho(1, lam), reps=16, horizon=60_000.0, warmup=3_000.0)
    assert within_ci(cdf_at(ds, t), exact, m=len(t)).all()
