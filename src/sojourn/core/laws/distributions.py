"""Service-requirement and inter-arrival laws with one vocabulary.

Every law is a frozen dataclass with ``mean``, ``variance``, ``scv``, ``sample(rng, size)``,
``cdf(x)``, ``scaled_to_mean(m)`` (all families here are scale families, which is how a law is
fitted to a service rate μ), ``to_ciw()`` and ``kernel_spec()``. ``kernel_spec`` returns
``(code, params)``: an integer law code and a float64 parameter vector, the form the numba kernels
sample from (see :func:`sojourn.core.laws.sampling.sample_law` for the reading side).

``parse_law("lognormal:sigma=0.6931")`` builds a law from the CLI/config string form.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass, fields
from functools import partial
from typing import Annotated, ClassVar, NamedTuple, get_origin, get_type_hints

import numpy as np

from ..checks.inputs import did_you_mean
from ..checks.validate import finite_real, integer_at_least, nonnegative_finite, positive_finite
from . import phase_type

# Law codes understood by the numba kernels (sojourn.core.laws.sampling reads them from here).
EXPONENTIAL = 0
DETERMINISTIC = 1
UNIFORM = 2
ERLANG = 3
HYPEREXPONENTIAL = 4
GAMMA = 5
LOGNORMAL = 6
TRIANGULAR = 7
PHASETYPE = 8


#: a law's mean must lie within this range: then its square and reciprocal square (variances, 1/rate², the
#: products of rates the kernels and the cost models form) stay finite doubles (issue 32: ``--mu 1e-300`` made
#: 1/rate² divide by zero)
MEAN_RANGE = (1e-100, 1e100)


class Forms(NamedTuple):
    """A law in the three libraries that draw or evaluate it: ``numpy``, the :class:`numpy.random.Generator`
    method and its positional arguments (before ``size``); ``scipy``, the ``scipy.stats`` family and its keywords;
    ``ciw``, the ``ciw.dists`` class and its keywords. ``None`` where the law has its own sampler or distribution
    function."""

    numpy: tuple | None
    scipy: tuple | None
    ciw: tuple


#: a field's type and its validator (:mod:`sojourn.core.checks.validate`), read by :class:`Distribution`
Positive = Annotated[float, positive_finite]
NonNegative = Annotated[float, nonnegative_finite]
Finite = Annotated[float, finite_real]
Count = Annotated[int, partial(integer_at_least, minimum=1)]


class Distribution:
    """Base class: a law is a frozen dataclass that names itself and its kernel code in its class line
    (``class Gamma(Distribution, name="gamma", code=GAMMA)``), types its fields with their validators
    (:data:`Positive`, :data:`NonNegative`, :data:`Finite`, :data:`Count`) and defines its moments and its
    :class:`Forms`; the base checks, samples, evaluates and converts from those. Every law checks its derived
    quantities once its parameters are checked (:meth:`_check_derived`): mean within :data:`MEAN_RANGE`, variance
    and squared coefficient of variation finite."""

    name: ClassVar[str] = ""
    #: the kernels' law code (:meth:`kernel_spec`)
    code: ClassVar[int] = -1
    #: each validated field's validator, in field order (from the fields' types)
    _checks: ClassVar[dict] = {}

    def __init_subclass__(cls, name: str = "", code: int = -1, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__post_init__" in cls.__dict__:
            raise TypeError(f"{cls.__name__}: type the fields and define _check instead of __post_init__ (the base's "
                            "runs them and then checks the derived quantities)")
        cls.name, cls.code = name, code
        hints = get_type_hints(cls, include_extras=True)
        cls._checks = {k: h.__metadata__[0] for k, h in hints.items() if get_origin(h) is Annotated}

    def __post_init__(self):
        for field, check in self._checks.items():
            object.__setattr__(self, field, check(f"{self.name}.{field}", getattr(self, field)))
        self._check()
        self._check_derived()

    def _check(self) -> None:
        """What the fields' validators cannot see one at a time (an order between fields, a sum to 1)."""

    def _check_derived(self) -> None:
        from ..checks.guard import derived

        mean = derived(self.name, lambda: float(self.mean), f"the mean of {self}",
                       f"a law's mean must be within [{MEAN_RANGE[0]:g}, {MEAN_RANGE[1]:g}]")
        if not MEAN_RANGE[0] <= mean <= MEAN_RANGE[1]:
            raise ValueError(f"{self.name}: the mean of {self} is {mean:.3g}; a law's mean must be within "
                             f"[{MEAN_RANGE[0]:g}, {MEAN_RANGE[1]:g}] (its square and 1/mean² stay finite doubles)")
        derived(self.name, lambda: float(self.variance), f"the variance of {self}",
                "a parameter is too large or too small for it")
        derived(self.name, lambda: float(self.scv), f"the squared coefficient of variation of {self}",
                "a parameter is too large or too small for it")

    # -- moments ---------------------------------------------------------------------------
    @property
    def mean(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def variance(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def scv(self) -> float:
        """Squared coefficient of variation, Var/mean²."""
        return self.variance / self.mean**2

    # -- sampling, law and the other libraries' forms ------------------------------------------
    def _forms(self) -> Forms:  # pragma: no cover - abstract
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, size=None):
        method, args = self._forms().numpy
        return getattr(rng, method)(*args, size)

    def cdf(self, x):
        return self._frozen().cdf(x)

    def sf(self, x):
        return self._frozen().sf(x)

    def _frozen(self):
        # scipy.stats is imported on first use only: the simulator never needs it, and it costs ~40 MB RSS
        from scipy import stats

        form = self._forms().scipy
        if form is None:  # a law without a scipy family (hyperexponential, phase-type) computes its own cdf/sf
            raise NotImplementedError(f"{self.name} has no scipy distribution")
        family, kw = form
        return getattr(stats, family)(**kw)

    def to_ciw(self):
        import ciw

        law, kw = self._forms().ciw
        return getattr(ciw.dists, law)(**kw)

    def kernel_spec(self) -> tuple[int, np.ndarray]:
        """``(code, params)``: the fields in their order as float64 (laws with lists override it)."""
        return self.code, np.array([float(getattr(self, f.name)) for f in fields(self)])

    def scaled_to_mean(self, mean: float) -> Distribution:
        """The same family and shape, rescaled so that its mean is ``mean``."""
        mean = positive_finite("mean", mean)
        return self._scaled(mean / self.mean)

    def _scaled(self, c: float) -> Distribution:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_dict(self) -> dict:
        out = {"law": self.name}
        for k, v in self.__dict__.items():
            out[k] = np.asarray(v).tolist() if isinstance(v, (tuple, np.ndarray)) else v
        return out

    def __str__(self) -> str:
        parts = []
        for k, v in self.__dict__.items():
            if isinstance(v, tuple) and v and isinstance(v[0], tuple):  # matrix: rows by '|'
                v = "|".join("/".join(f"{y!r}" for y in row) for row in v)
            elif isinstance(v, tuple):
                v = "/".join(f"{x!r}" for x in v)
            elif isinstance(v, float):
                v = repr(v)
            parts.append(f"{k}={v}")
        return f"{self.name}:" + ",".join(parts)


@dataclass(frozen=True, eq=True)
class Exponential(Distribution, name="exponential", code=EXPONENTIAL):
    rate: Positive

    mean = property(lambda self: 1.0 / self.rate)
    variance = property(lambda self: 1.0 / self.rate**2)

    def _forms(self):
        return Forms(("exponential", (1.0 / self.rate,)), ("expon", {"scale": 1.0 / self.rate}),
                     ("Exponential", {"rate": self.rate}))

    def _scaled(self, c):
        return Exponential(self.rate / c)


@dataclass(frozen=True, eq=True)
class Deterministic(Distribution, name="deterministic", code=DETERMINISTIC):
    value: Positive

    mean = property(lambda self: self.value)
    variance = property(lambda self: 0.0)

    def _forms(self):
        return Forms(None, None, ("Deterministic", {"value": self.value}))

    def sample(self, rng, size=None):
        return np.full(size, self.value) if size is not None else self.value

    def cdf(self, x):
        return np.where(np.asarray(x) >= self.value, 1.0, 0.0)

    def sf(self, x):
        return 1.0 - self.cdf(x)

    def _scaled(self, c):
        return Deterministic(self.value * c)


@dataclass(frozen=True, eq=True)
class Uniform(Distribution, name="uniform", code=UNIFORM):
    low: NonNegative
    high: Positive

    def _check(self):
        if self.high <= self.low:
            raise ValueError(f"uniform.high must be > uniform.low={self.low:g}; got {self.high:g}")

    mean = property(lambda self: 0.5 * (self.low + self.high))
    variance = property(lambda self: (self.high - self.low) ** 2 / 12.0)

    def _forms(self):
        return Forms(("uniform", (self.low, self.high)), ("uniform", {"loc": self.low, "scale": self.high - self.low}),
                     ("Uniform", {"lower": self.low, "upper": self.high}))

    def _scaled(self, c):
        return Uniform(self.low * c, self.high * c)


@dataclass(frozen=True, eq=True)
class Erlang(Distribution, name="erlang", code=ERLANG):
    """Sum of ``k`` exponential phases, each with rate ``rate`` (mean k/rate)."""

    k: Count
    rate: Positive

    mean = property(lambda self: self.k / self.rate)
    variance = property(lambda self: self.k / self.rate**2)

    def _forms(self):
        return Forms(("gamma", (self.k, 1.0 / self.rate)), ("gamma", {"a": self.k, "scale": 1.0 / self.rate}),
                     ("Erlang", {"rate": self.rate, "num_phases": self.k}))

    def _scaled(self, c):
        return Erlang(self.k, self.rate / c)


@dataclass(frozen=True, eq=True)
class HyperExponential(Distribution, name="hyperexponential", code=HYPEREXPONENTIAL):
    """Mixture: with probability ``probs[i]`` an exponential with rate ``rates[i]``."""

    probs: tuple
    rates: tuple

    def _check(self):
        p = tuple(float(x) for x in np.atleast_1d(self.probs))
        r = tuple(positive_finite("hyperexponential.rates", x) for x in np.atleast_1d(self.rates))
        if len(p) != len(r) or len(p) == 0:
            raise ValueError("hyperexponential.probs and hyperexponential.rates must be non-empty and of equal length")
        if any((not math.isfinite(x)) or x < 0 for x in p) or abs(sum(p) - 1.0) > 1e-9:
            raise ValueError(f"hyperexponential.probs must be in [0, 1] and sum to 1; got {p}")
        object.__setattr__(self, "probs", p)
        object.__setattr__(self, "rates", r)

    @property
    def mean(self):
        return float(sum(p / r for p, r in zip(self.probs, self.rates, strict=True)))

    @property
    def variance(self):
        m2 = sum(2.0 * p / r**2 for p, r in zip(self.probs, self.rates, strict=True))
        return float(m2 - self.mean**2)

    def _forms(self):
        return Forms(None, None, ("HyperExponential", {"rates": list(self.rates), "probs": list(self.probs)}))

    def sample(self, rng, size=None):
        n = 1 if size is None else size
        idx = rng.choice(len(self.probs), size=n, p=self.probs)
        out = rng.exponential(1.0, n) / np.asarray(self.rates)[idx]
        return out if size is not None else float(out[0])

    def cdf(self, x):
        x = np.asarray(x, dtype=float)
        return sum(p * (1.0 - np.exp(-r * np.maximum(x, 0.0))) for p, r in zip(self.probs, self.rates, strict=True))

    def sf(self, x):
        return 1.0 - self.cdf(x)

    def _scaled(self, c):
        return HyperExponential(self.probs, tuple(r / c for r in self.rates))

    def kernel_spec(self):
        m = len(self.probs)
        return self.code, np.array([float(m), *np.cumsum(self.probs), *self.rates])


#: the largest share of a gamma law's draws allowed below the smallest normal double (its scale's units)
GAMMA_UNDERFLOW_SHARE = 0.01


def _gamma_min_shape() -> float:
    """The smallest shape with at most that share, a ln(tiny) − ln Γ(a+1) = ln share (fixed point from
    a = ln(1/share)/708.4), rounded up to 3 significant digits so that the number printed is itself allowed."""
    a = 0.0
    for _ in range(50):
        a = (math.log(GAMMA_UNDERFLOW_SHARE) + math.lgamma(a + 1.0)) / math.log(sys.float_info.min)
    digits = 10 ** (math.floor(math.log10(a)) - 2)
    return math.ceil(a / digits) * digits


#: the smallest gamma shape allowed (0.00651): P(X < 2.2e-308 · scale) ≈ x^a/Γ(a+1) (the incomplete gamma's
#: leading term at x → 0) is then 1 %
GAMMA_MIN_SHAPE = _gamma_min_shape()


@dataclass(frozen=True, eq=True)
class Gamma(Distribution, name="gamma", code=GAMMA):
    shape: Positive
    scale: Positive

    def _check(self):
        if self.shape < GAMMA_MIN_SHAPE:
            raise ValueError(f"gamma.shape must be >= {GAMMA_MIN_SHAPE:.3g}: below it more than "
                             f"{100 * GAMMA_UNDERFLOW_SHARE:g} % of draws are smaller than the smallest normal double "
                             f"(2.2e-308 times the scale), so the law cannot be drawn or integrated in floating point "
                             f"(squared coefficient of variation 1/shape = {1 / self.shape:.3g}); got {self.shape!r}")

    mean = property(lambda self: self.shape * self.scale)
    variance = property(lambda self: self.shape * self.scale**2)

    def _forms(self):
        return Forms(("gamma", (self.shape, self.scale)), ("gamma", {"a": self.shape, "scale": self.scale}),
                     ("Gamma", {"shape": self.shape, "scale": self.scale}))

    def _scaled(self, c):
        return Gamma(self.shape, self.scale * c)


@dataclass(frozen=True, eq=True)
class Lognormal(Distribution, name="lognormal", code=LOGNORMAL):
    """exp(N(mu, sigma²)); the paper's law is sigma = ln 2 rescaled to mean 1/μ."""

    mu: Finite
    sigma: Positive

    mean = property(lambda self: math.exp(self.mu + 0.5 * self.sigma**2))
    variance = property(lambda self: (math.exp(self.sigma**2) - 1.0) * math.exp(2 * self.mu + self.sigma**2))

    def _forms(self):
        return Forms(("lognormal", (self.mu, self.sigma)), ("lognorm", {"s": self.sigma, "scale": math.exp(self.mu)}),
                     ("Lognormal", {"mean": self.mu, "sd": self.sigma}))

    def _scaled(self, c):
        return Lognormal(self.mu + math.log(c), self.sigma)


@dataclass(frozen=True, eq=True)
class Triangular(Distribution, name="triangular", code=TRIANGULAR):
    low: NonNegative
    mode: NonNegative
    high: Positive

    def _check(self):
        lo, md, hi = self.low, self.mode, self.high
        if not (lo <= md <= hi) or hi <= lo:
            raise ValueError(f"triangular needs low <= mode <= high and low < high; got {lo:g}, {md:g}, {hi:g}")

    mean = property(lambda self: (self.low + self.mode + self.high) / 3.0)

    @property
    def variance(self):
        a, c, b = self.low, self.mode, self.high
        return (a * a + b * b + c * c - a * b - a * c - b * c) / 18.0

    def _forms(self):
        w = self.high - self.low
        return Forms(("triangular", (self.low, self.mode, self.high)),
                     ("triang", {"c": (self.mode - self.low) / w, "loc": self.low, "scale": w}),
                     ("Triangular", {"lower": self.low, "mode": self.mode, "upper": self.high}))

    def _scaled(self, c):
        return Triangular(self.low * c, self.mode * c, self.high * c)


@dataclass(frozen=True, eq=True)
class PhaseType(Distribution, name="phasetype", code=PHASETYPE):
    """Continuous phase-type law PH(alpha, T): absorption time of a CTMC with sub-generator T.

    ``alpha`` must sum to 1 (no atom at zero); ``T`` must have negative diagonal, non-negative
    off-diagonal entries, non-positive row sums and be non-singular (absorption is certain).
    """

    alpha: tuple
    T: tuple

    def _check(self):
        a, T = phase_type.validate(self.alpha, self.T, name="phasetype")
        object.__setattr__(self, "alpha", tuple(a.tolist()))
        object.__setattr__(self, "T", tuple(tuple(r) for r in T.tolist()))

    @property
    def _a(self):
        return np.asarray(self.alpha)

    @property
    def _T(self):
        return np.asarray(self.T)

    def moment(self, k: int) -> float:
        return phase_type.moment(self._a, self._T, k)

    mean = property(lambda self: self.moment(1))
    variance = property(lambda self: phase_type.variance(self._a, self._T))

    def _forms(self):
        T = self._T
        exit_rates = -T.sum(axis=1)
        m = len(self.alpha)
        absorbing = [list(row) + [float(e)] for row, e in zip(T.tolist(), exit_rates, strict=True)] + [[0.0] * (m + 1)]
        return Forms(None, None, ("PhaseType", {"initial_state": list(self.alpha) + [0.0],
                                                "absorbing_matrix": absorbing}))

    def sf(self, x):
        return phase_type.sf(self._a, self._T, np.atleast_1d(np.asarray(x, dtype=float)))

    def cdf(self, x):
        return 1.0 - self.sf(x)

    def sample(self, rng, size=None):
        out = phase_type.sample(self._a, self._T, 1 if size is None else size, rng)
        return out if size is not None else float(out[0])

    def _scaled(self, c):
        return PhaseType(self.alpha, self._T / c)

    def kernel_spec(self):
        # Layout: [m, cumsum(alpha) (m), then for each phase i: total rate -T_ii,
        #          cumulative jump probabilities to phases 0..m-1 (m entries; exit is the remainder)]
        a, T = self._a, self._T
        m = a.size
        rows = []
        for i in range(m):
            tot = -T[i, i]
            p = np.where(np.arange(m) == i, 0.0, T[i] / tot)
            rows.append(np.concatenate([[tot], np.cumsum(p)]))
        return self.code, np.concatenate([[float(m)], np.cumsum(a), *rows])


LAWS: dict[str, type[Distribution]] = {
    cls.name: cls
    for cls in (Exponential, Deterministic, Uniform, Erlang, HyperExponential, Gamma, Lognormal, Triangular, PhaseType)
}

# Shapes used when a law is named without parameters (each is then rescaled to the wanted mean).
# The paper's M/G/R laws: Uniform(0, 2/μ), Deterministic(1/μ), Lognormal(σ = ln 2), Gamma, Triangular.
DEFAULT_SHAPES: dict[str, dict] = {
    "exponential": {"rate": 1.0},
    "deterministic": {"value": 1.0},
    "uniform": {"low": 0.0, "high": 2.0},
    "erlang": {"k": 2, "rate": 2.0},
    "hyperexponential": {"probs": (0.5, 0.5), "rates": (2.0 / 3.0, 2.0)},
    "gamma": {"shape": 2.0, "scale": 0.5},
    "lognormal": {"mu": 0.0, "sigma": math.log(2.0)},
    "triangular": {"low": 0.0, "mode": 1.0, "high": 2.0},
}


def _parse_value(text: str):
    if "|" in text:  # matrix rows separated by '|', entries by '/'
        return tuple(tuple(float(x) for x in row.split("/")) for row in text.split("|"))
    if "/" in text:
        return tuple(float(x) for x in text.split("/"))
    try:
        return int(text)
    except ValueError:
        return float(text)


#: the law name of a phase-type law given by its first three moments (``moments:m1=1,m2=2.5,m3=10``): the least-order
#: acyclic PH matching them (sojourn.core.laws.phase_fit.three_moment_representation)
MOMENTS = "moments"


def _derived_phase_type(name: str, rest: str, text: str) -> PhaseType:
    """The PhaseType of ``moments:m1=..,m2=..,m3=..`` (fitted) or ``phasetype:file=PATH`` (a JSON file
    {"alpha": [...], "T": [[...], ...]}); ValueError naming the key."""
    items = dict(item.strip().partition("=")[::2] for item in rest.split(",") if item.strip())
    if name == MOMENTS:
        keys = ("m1", "m2", "m3")
        unknown = sorted(set(items) - set(keys))
        if unknown or any(k not in items for k in keys):
            raise ValueError(f"law 'moments' takes m1, m2, m3 (the first three moments of the size); got {text!r}"
                             + (f" (unknown {', '.join(unknown)})" if unknown else ""))
        try:
            m = [float(items[k]) for k in keys]
        except ValueError:
            raise ValueError(f"law 'moments': m1, m2, m3 must be numbers; got {text!r}") from None
        a, T = phase_type.three_moment_representation(*m)
        return PhaseType(tuple(a.tolist()), tuple(tuple(r) for r in T.tolist()))
    unknown = sorted(set(items) - {"file"})
    if unknown:
        raise ValueError(f"law 'phasetype:file=PATH' takes only file; got {', '.join(unknown)} in {text!r}")
    import json

    path = items["file"]
    try:
        with open(path) as fh:
            d = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ValueError(f"phasetype file {path!r}: cannot read a JSON object {{'alpha': [...], 'T': [[...]]}} "
                         f"({exc})") from None
    if not isinstance(d, dict) or set(d) != {"alpha", "T"}:
        raise ValueError(f"phasetype file {path!r} must hold exactly the keys 'alpha' and 'T'; got "
                         f"{sorted(d) if isinstance(d, dict) else type(d).__name__}")
    return PhaseType(tuple(d["alpha"]), tuple(tuple(r) for r in d["T"]))


def parse_law(text: str, mean: float | None = None) -> Distribution:
    """Build a law from ``NAME[:key=value,...]``.

    Lists use ``/`` (``hyperexponential:probs=0.5/0.5,rates=2/0.667``); PH matrices use ``|``
    between rows (``phasetype:alpha=1/0,T=-2/2|0/-2``). A law named without parameters takes the
    shape in ``DEFAULT_SHAPES``. With ``mean`` given, the law is rescaled to that mean, which is
    how the service law is matched to a service rate μ; a ``mean=`` key does the same.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a law must be a string NAME[:key=value,...] (e.g. 'lognormal:sigma=0.69'); got {text!r}")
    name, _, rest = text.strip().partition(":")
    name = name.strip().lower()
    if name == MOMENTS or (name == "phasetype" and "file=" in rest.replace(" ", "")):
        law = _derived_phase_type(name, rest, text)
        return law.scaled_to_mean(mean) if mean is not None else law
    if name not in LAWS:
        raise ValueError(f"unknown law {name!r}; allowed: {', '.join(sorted(LAWS))}{did_you_mean(name, LAWS)}")
    params = [f.name for f in fields(LAWS[name])]
    kwargs: dict = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        key, eq, val = item.partition("=")
        if not eq:
            raise ValueError(f"law parameter {item!r} in {text!r} must look like key=value")
        key = key.strip()
        if key not in params and key != "mean":
            raise ValueError(f"law {name!r} takes parameters {', '.join(params)} (and mean=M to rescale it); "
                             f"got unknown parameter {key!r} in {text!r}{did_you_mean(key, [*params, 'mean'])}")
        if key in kwargs:
            raise ValueError(f"law parameter {key!r} is given twice in {text!r}; give it once")
        try:
            kwargs[key] = _parse_value(val.strip())
        except ValueError:
            raise ValueError(f"law parameter {key}={val.strip()!r} in {text!r} must be a number "
                             "(lists: a/b/c, matrices: rows a/b|c/d)") from None
        listed = {f.name: str(f.type) == "tuple" for f in fields(LAWS[name])}
        if isinstance(kwargs[key], tuple) and not listed.get(key, False):  # a list where one number belongs
            raise ValueError(f"law parameter {key}={val.strip()!r} in {text!r} must be one number")
    want_mean = kwargs.pop("mean", None)
    if want_mean is not None:
        mean = float(want_mean)
    if name not in DEFAULT_SHAPES and not kwargs:
        raise ValueError(f"law {name!r} needs explicit parameters {', '.join(params)} "
                         "(e.g. 'phasetype:alpha=1/0,T=-2/2|0/-2')")
    kwargs = {**DEFAULT_SHAPES.get(name, {}), **kwargs}  # missing shape keys take the defaults
    try:
        law = LAWS[name](**kwargs)
    except TypeError as exc:
        missing = [p for p in params if p not in kwargs]
        raise ValueError(f"law {name!r} takes parameters {', '.join(params)}; "
                         f"missing {', '.join(missing) or '(none)'} in {text!r}") from exc
    return law.scaled_to_mean(mean) if mean is not None else law


def law_from_dict(d: dict) -> Distribution:
    """Inverse of ``Distribution.to_dict``."""
    d = dict(d)
    name = d.pop("law")
    if name not in LAWS:
        raise ValueError(f"unknown law {name!r}; allowed: {', '.join(sorted(LAWS))}")
    return LAWS[name](**d)
