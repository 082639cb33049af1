"""Frozen, validated model specifications.

:class:`JSQPS` describes R parallel processor-sharing servers fed by a dispatcher — the G/G/R-JSQ-PS
system of seed 000 and its variants. Every backend (numba kernel, Ciw, analytic methods) reads the
same spec. Anything invalid raises ``ValueError`` naming the field and the allowed range.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..core.checks.validate import integer_at_least, positive_finite
from ..core.laws.distributions import Distribution, Exponential, law_from_dict, parse_law

DISCIPLINES = ("ps", "limited", "capacitated")
DISPATCHES = ("jsq", "random", "round-robin", "jsq-d")

# Integer codes used by the kernels.
DISPATCH_CODE = {"jsq": 0, "random": 1, "round-robin": 2, "jsq-d": 3}


@dataclass(frozen=True)
class JSQPS:
    """R processor-sharing servers behind a dispatcher.

    R
        R ≥ 1 identical servers.
    interarrival
        Inter-arrival law of the whole stream (``Exponential(Λ)`` = Poisson arrivals at rate Λ;
        any other law gives a renewal process).
    service
        Service-requirement law: a customer alone at a server is served in this time.
    discipline
        ``"ps"``: plain PS, each of n customers served at rate 1/n.
        ``"limited"``: at most ``ps_limit`` customers share (rate 1/min(n, c)); the rest wait FIFO.
        ``"capacitated"``: each of n customers served at rate θ/max(n, θ), θ = ``ps_threshold``
        (Ciw's ``ps_thresholds``; Xi Li's capacitated PS).
    dispatch
        ``"jsq"``: fewest customers present, uniform random tie-break (the paper's);
        ``"random"``: uniform; ``"round-robin"``; ``"jsq-d"``: JSQ among ``choices`` servers drawn
        uniformly without replacement (power of d choices).
    """

    R: int
    interarrival: Distribution
    service: Distribution
    discipline: str = "ps"
    ps_limit: int | None = None
    ps_threshold: float = 1.0
    dispatch: str = "jsq"
    choices: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "R", integer_at_least("R", self.R, 1))
        if not isinstance(self.interarrival, Distribution):
            raise ValueError(f"interarrival must be a sojourn.distributions law; got {self.interarrival!r}")
        if not isinstance(self.service, Distribution):
            raise ValueError(f"service must be a sojourn.distributions law; got {self.service!r}")
        if self.discipline not in DISCIPLINES:
            raise ValueError(f"discipline must be one of {DISCIPLINES}; got {self.discipline!r}")
        if self.discipline == "limited":
            object.__setattr__(self, "ps_limit", integer_at_least("ps_limit", self.ps_limit, 1))
        elif self.ps_limit is not None:
            raise ValueError("ps_limit is only allowed with discipline='limited'")
        if self.discipline == "capacitated":
            object.__setattr__(self, "ps_threshold", positive_finite("ps_threshold", self.ps_threshold))
        elif float(self.ps_threshold) != 1.0:
            raise ValueError("ps_threshold is only allowed with discipline='capacitated'")
        if self.dispatch not in DISPATCHES:
            raise ValueError(f"dispatch must be one of {DISPATCHES}; got {self.dispatch!r}")
        if self.dispatch == "jsq-d":
            d = integer_at_least("choices", self.choices, 1)
            if d > self.R:
                raise ValueError(f"choices must be in [1, R={self.R}]; got {d}")
            object.__setattr__(self, "choices", d)
        elif self.choices is not None:
            raise ValueError("choices is only allowed with dispatch='jsq-d'")

    # -- derived quantities ----------------------------------------------------------------
    @property
    def arrival_rate(self) -> float:
        """Λ, the long-run arrival rate of the whole stream."""
        return 1.0 / self.interarrival.mean

    @property
    def service_rate(self) -> float:
        """μ = 1/E[S]."""
        return 1.0 / self.service.mean

    @property
    def capacity(self) -> float:
        """Total work the system completes per unit time when every server is busy."""
        if self.discipline == "capacitated":
            return self.R * self.ps_threshold
        if self.discipline == "limited":
            return float(self.R)  # a busy limited-PS server still works at total rate 1
        return float(self.R)

    @property
    def rho(self) -> float:
        """ρ = Λ E[S] / capacity (= Λ/(Rμ) for PS)."""
        return self.arrival_rate * self.service.mean / self.capacity

    @property
    def is_markovian(self) -> bool:
        """Poisson arrivals and exponential service: the M/M/R case the analytic methods treat."""
        return isinstance(self.interarrival, Exponential) and isinstance(self.service, Exponential)

    def require_stable(self) -> JSQPS:
        """Raise unless ρ < 1 (needed for a steady-state run or an analytic CDF)."""
        if not self.rho < 1.0:
            raise ValueError(f"rho must be in (0, 1) for a steady-state run; got rho={self.rho:.6g}")
        return self

    # -- constructors ----------------------------------------------------------------------
    @classmethod
    def from_rho(
        cls,
        R: int,
        rho: float,
        mu: float = 1.0,
        service: Distribution | str | None = None,
        arrivals: Distribution | str | None = None,
        **kwargs,
    ) -> JSQPS:
        """Build the system with R servers at load ρ = Λ/(Rμ) (PS) with mean service 1/μ.

        ``service`` (a law or a ``parse_law`` string) is rescaled to mean 1/μ; ``arrivals`` is the
        inter-arrival law's *shape* (default exponential = Poisson), rescaled to mean 1/Λ.
        ``kwargs`` go to the constructor (discipline, ps_limit, ps_threshold, dispatch, choices).
        """
        R = integer_at_least("R", R, 1)
        mu = positive_finite("mu", mu)
        rho = positive_finite("rho", rho)
        if rho >= 1.0:
            raise ValueError(f"rho must be in (0, 1); got {rho!r}")
        svc = _scaled(_as_law(service if service is not None else "exponential", "service"), 1.0 / mu,
                      "mu", "the service law rescaled to mean 1/μ")
        theta = 1.0
        if kwargs.get("discipline") == "capacitated":
            theta = positive_finite("ps_threshold", kwargs.get("ps_threshold", 1.0))
        capacity = R * theta
        lam = rho * capacity * mu
        theta_named = kwargs.get("discipline") == "capacitated"
        arr = _scaled(_as_law(arrivals if arrivals is not None else "exponential", "arrivals"), 1.0 / lam,
                      "mu/rho" + ("/ps_threshold" if theta_named else ""),
                      "the inter-arrival law rescaled to mean 1/(R ρ μ" + (" θ" if theta_named else "") + ")")
        return cls(R=R, interarrival=arr, service=svc, **kwargs)

    # -- serialisation ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {
            "model": "jsq_ps",
            "R": self.R,
            "interarrival": self.interarrival.to_dict(),
            "service": self.service.to_dict(),
            "discipline": self.discipline,
            "ps_limit": self.ps_limit,
            "ps_threshold": self.ps_threshold,
            "dispatch": self.dispatch,
            "choices": self.choices,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def seed_json(self) -> str:
        """The JSON every replication's random stream is derived from (:func:`sojourn.core.laws.seeds.spec_hash`):
        :meth:`to_json` with R under the name the streams were first derived with, ``servers``. Renaming the field
        to the project's vocabulary (R, rho, mu; issue 33) thus moved no stream: the results stay those of every
        release before it."""
        return json.dumps({("servers" if k == "R" else k): v for k, v in self.to_dict().items()}, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> JSQPS:
        d = dict(d)
        d.pop("model", None)
        if "servers" in d:  # a spec stored before the vocabulary was one (R, rho, mu; issue 33)
            d["R"] = d.pop("servers")
        d["interarrival"] = law_from_dict(d["interarrival"])
        d["service"] = law_from_dict(d["service"])
        return cls(**d)

    def describe(self) -> str:
        arr = "M" if isinstance(self.interarrival, Exponential) else "G"
        svc = "M" if isinstance(self.service, Exponential) else "G"
        disc = {"ps": "PS", "limited": f"LPS(c={self.ps_limit})", "capacitated": f"CPS(θ={self.ps_threshold:g})"}
        disp = {"jsq": "JSQ", "random": "RND", "round-robin": "RR", "jsq-d": f"JSQ({self.choices})"}
        return (
            f"{arr}/{svc}/{self.R}-{disp[self.dispatch]}-{disc[self.discipline]} "
            f"(Λ={self.arrival_rate:g}, E[S]={self.service.mean:g}, ρ={self.rho:.4g}; service {self.service})"
        )


def _scaled(law: Distribution, mean: float, field_name: str, what: str) -> Distribution:
    """``law`` rescaled to ``mean``; a law that cannot have that mean (its moments leave the doubles) is refused
    naming the input that set the mean."""
    try:
        return law.scaled_to_mean(mean)
    except ValueError as exc:
        raise ValueError(f"{field_name}: {what} = {mean:.3g}: {exc}") from None


def _as_law(value, field_name: str) -> Distribution:
    if isinstance(value, Distribution):
        return value
    if isinstance(value, str):
        return parse_law(value)
    raise ValueError(f"{field_name} must be a law or a law string like 'lognormal:sigma=0.69'; got {value!r}")


def mm_jsq_ps(R: int, rho: float, mu: float = 1.0) -> JSQPS:
    """The paper's M/M/R-JSQ-PS system."""
    return JSQPS.from_rho(R, rho, mu)
