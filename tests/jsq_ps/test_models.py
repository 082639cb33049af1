"""Model-spec and law validation: every invalid input names its field."""
import math

import numpy as np
import pytest

from sojourn import JSQPS, parse_law
from sojourn.core.laws.distributions import (
    Deterministic,
    Erlang,
    Exponential,
    Gamma,
    HyperExponential,
    Lognormal,
    PhaseType,
    Triangular,
    Uniform,
)

LAWS = [
    Exponential(2.0),
    Deterministic(0.5),
    Uniform(0.0, 2.0),
    Erlang(3, 1.5),
    HyperExponential((0.3, 0.7), (0.5, 3.0)),
    Gamma(2.5, 0.4),
    Lognormal(0.0, math.log(2.0)),
    Triangular(0.0, 1.0, 2.0),
    PhaseType((0.6, 0.4), ((-3.0, 1.0), (0.5, -2.0))),
]


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.name)
def test_moments_match_samples(law):
    rng = np.random.default_rng(12345)
    x = law.sample(rng, 200_000)
    se = math.sqrt(law.variance / x.size)
    assert abs(x.mean() - law.mean) < 5 * se + 1e-12
    if law.variance > 0:
        assert abs(x.var() / law.variance - 1) < 0.05


@pytest.mark.parametrize("law, draw", [
    (Exponential(2.0), lambda g, n: g.exponential(0.5, n)),
    (Uniform(1.0, 3.0), lambda g, n: g.uniform(1.0, 3.0, n)),
    (Erlang(3, 2.0), lambda g, n: g.gamma(3, 0.5, n)),
    (Gamma(2.5, 0.4), lambda g, n: g.gamma(2.5, 0.4, n)),
    (Lognormal(0.1, 0.7), lambda g, n: g.lognormal(0.1, 0.7, n)),
    (Triangular(0.0, 1.0, 3.0), lambda g, n: g.triangular(0.0, 1.0, 3.0, n)),
])
def test_sample_is_numpys_stream_of_the_family(law, draw):
    """``sample`` draws numpy's own stream of the family with the law's parameters, bit for bit, for an array and
    for one draw: the Python API's streams are pinned to numpy's, whatever the law classes' code."""
    assert np.array_equal(law.sample(np.random.default_rng(3), 40), draw(np.random.default_rng(3), 40))
    assert law.sample(np.random.default_rng(4)) == draw(np.random.default_rng(4), None)


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.name)
def test_scaled_to_mean_keeps_shape(law):
    scaled = law.scaled_to_mean(3.0)
    assert type(scaled) is type(law)
    assert scaled.mean == pytest.approx(3.0, rel=1e-12)
    assert scaled.scv == pytest.approx(law.scv, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.name)
def test_string_round_trip(law):
    assert parse_law(str(law)).mean == pytest.approx(law.mean, rel=1e-5)


def test_paper_laws_expressible():
    mu = 2.0
    assert parse_law("uniform", mean=1 / mu) == Uniform(0.0, 2 / mu)
    assert parse_law("deterministic", mean=1 / mu) == Deterministic(1 / mu)
    ln = parse_law("lognormal:sigma=0.6931471805599453", mean=1 / mu)
    assert ln.sigma == pytest.approx(math.log(2)) and ln.mean == pytest.approx(1 / mu)
    assert parse_law("gamma:shape=2,scale=1", mean=1 / mu).mean == pytest.approx(1 / mu)
    assert parse_law("triangular", mean=1 / mu).mode == pytest.approx(1 / mu)


def test_from_rho():
    spec = JSQPS.from_rho(4, 0.7, mu=2.0)
    assert spec.arrival_rate == pytest.approx(0.7 * 4 * 2.0)
    assert spec.rho == pytest.approx(0.7)
    assert spec.is_markovian
    assert JSQPS.from_dict(spec.to_dict()) == spec


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(R=0, rho=0.5), "R must"),
        (dict(R=2.5, rho=0.5), "R must"),
        (dict(R=2, rho=1.0), "rho"),
        (dict(R=2, rho=-0.1), "rho"),
        (dict(R=2, rho=float("nan")), "rho"),
        (dict(R=2, rho=0.5, mu=0.0), "mu"),
        (dict(R=2, rho=0.5, mu=float("inf")), "mu"),
        (dict(R=2, rho=0.5, service="nosuchlaw"), "unknown law"),
        (dict(R=2, rho=0.5, dispatch="fastest"), "dispatch"),
        (dict(R=2, rho=0.5, dispatch="jsq-d", choices=3), "choices"),
        (dict(R=2, rho=0.5, discipline="limited"), "ps_limit"),
        (dict(R=2, rho=0.5, discipline="limited", ps_limit=0), "ps_limit"),
        (dict(R=2, rho=0.5, discipline="capacitated", ps_threshold=-1), "ps_threshold"),
        (dict(R=2, rho=0.5, discipline="fifo"), "discipline"),
    ],
)
def test_invalid_spec_names_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        JSQPS.from_rho(**kwargs)


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: Exponential(0.0), "exponential.rate"),
        (lambda: Exponential(float("inf")), "exponential.rate"),
        (lambda: Uniform(2.0, 1.0), "uniform.high"),
        (lambda: Erlang(0, 1.0), "erlang.k"),
        (lambda: HyperExponential((0.5, 0.6), (1.0, 2.0)), "hyperexponential.probs"),
        (lambda: Lognormal(0.0, -1.0), "lognormal.sigma"),
        (lambda: Triangular(0.0, 3.0, 2.0), "triangular"),
        (lambda: PhaseType((1.0,), ((-1.0, 0.0),)), "phasetype.T"),
        (lambda: PhaseType((0.5, 0.4), ((-1.0, 0.0), (0.0, -1.0))), "phasetype.alpha"),
        (lambda: PhaseType((1.0, 0.0), ((-1.0, 1.0), (1.0, -1.0))), "non-singular"),
        (lambda: PhaseType((1.0, 0.0), ((1.0, 0.0), (0.0, -1.0))), "negative diagonal"),
        (lambda: parse_law("gamma:shape"), "key=value"),
        (lambda: parse_law("gamma:k=2"), "takes parameters"),
    ],
)
def test_invalid_law_names_field(make, field):
    with pytest.raises(ValueError, match=field):
        make()


def test_require_stable():
    spec = JSQPS(R=1, interarrival=Exponential(2.0), service=Exponential(1.0))
    with pytest.raises(ValueError, match="rho"):
        spec.require_stable()


@pytest.mark.parametrize("law", [law for law in LAWS if law.name != "deterministic"], ids=lambda law: law.name)
def test_kernel_sampler_follows_the_law(law):
    """The numba sampler (what the fast backend draws from) has the law's CDF (KS test, fixed seed)."""
    from scipy import stats

    from support.sampling import sample_many

    code, params = law.kernel_spec()
    x = sample_many(code, params, 5_000, np.random.default_rng(7))
    assert stats.kstest(x, law.cdf).pvalue > 1e-3


def test_kernel_sampler_deterministic():
    from support.sampling import sample_many

    code, params = Deterministic(0.25).kernel_spec()
    assert np.all(sample_many(code, params, 10, np.random.default_rng(0)) == 0.25)


def test_simulate_stays_callable_after_submodule_import():
    """sojourn.simulate is both the package and the entry point; importing a submodule keeps it callable."""
    import sojourn
    import sojourn.jsq_ps.simulate  # noqa: F401

    spec = JSQPS.from_rho(1, 0.5)
    a = sojourn.simulate(spec, horizon=300.0, warmup=50.0, replications=1, seed=3)
    b = sojourn.jsq_ps.simulate.simulate(spec, horizon=300.0, warmup=50.0, replications=1, seed=3)
    assert int(a["n_customers"].sum()) > 0
    assert (a["count"].values == b["count"].values).all()
