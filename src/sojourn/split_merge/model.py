"""The validated spec of an (n, r, q) replication system: :class:`SplitMerge`.

n hosts; workunits arrive as a Poisson stream of rate λ (``arrival_rate``); each is replicated to r hosts
(``replicas``) and is done when q results (``quorum``) are back; replica times are iid with law
``replica_law`` (any core law; a phase-type one gives exact results). ``model`` is the queueing rule:

``"split_merge"`` (the seed's)
    FCFS; a workunit waits until r hosts are free, all r start together, and all r are released at its
    q-th result (the other r−q replicas cancelled): M/G/⌊n/r⌋ with G = S_{q:r} (split_merge.md §2(b)).
``"fork_join"`` (fork-join with cancellation)
    on arrival each replica joins the FIFO queue of one of the r least-loaded hosts (distinct hosts,
    least remaining work); the workunit is done at its q-th result, and its other replicas are cancelled
    (dropped if not started, stopped if running).

Every check happens in the constructor and names the field: r > n, q > r, q < 1, an unstable arrival
rate λ E[S_{q:r}] ≥ ⌊n/r⌋ (split-merge), an invalid phase-type law.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from ..core.checks.validate import integer_at_least, positive_finite
from ..core.laws.distributions import Distribution, law_from_dict, parse_law
from .order_stats import order_statistic_moments

#: the unit of every time of the study (latencies, horizons): the replica law's own
TIME_UNITS = "time units of the replica law"

MODELS = ("split_merge", "fork_join")


def as_law(value, field: str = "replica_law") -> Distribution:
    """A core law from a law or a ``parse_law`` string; ValueError naming ``field`` otherwise."""
    if isinstance(value, Distribution):
        return value
    if isinstance(value, str):
        try:
            return parse_law(value)
        except ValueError as exc:
            raise ValueError(f"{field}: {exc}") from None
    raise ValueError(f"{field} must be a law or a law string like 'exponential' or "
                     f"'phasetype:alpha=1/0,T=-2/2|0/-2'; got {value!r}")


@dataclass(frozen=True)
class SplitMerge:
    """(n, r, q) replication with quorum; see the module docstring."""

    hosts: int
    replicas: int
    quorum: int
    arrival_rate: float
    replica_law: Distribution
    model: str = "split_merge"

    def __post_init__(self):
        n = integer_at_least("hosts", self.hosts, 1)
        r = integer_at_least("replicas", self.replicas, 1)
        if r > n:
            raise ValueError(f"replicas must be an integer in [1, hosts={n}]; got {r}")
        q = integer_at_least("quorum", self.quorum, 1)
        if q > r:
            raise ValueError(f"quorum must be an integer in [1, replicas={r}]; got {q}")
        object.__setattr__(self, "hosts", n)
        object.__setattr__(self, "replicas", r)
        object.__setattr__(self, "quorum", q)
        object.__setattr__(self, "replica_law", as_law(self.replica_law))
        if self.model not in MODELS:
            raise ValueError(f"model must be one of {MODELS}; got {self.model!r}")
        lam = positive_finite("arrival_rate", self.arrival_rate)
        object.__setattr__(self, "arrival_rate", lam)
        if not lam < self.max_throughput:
            raise ValueError(
                f"arrival_rate must be < floor(hosts/replicas)/E[S_q:r] = {self.super_servers}/{self.mean_service:.6g}"
                f" = {self.max_throughput:.6g} (the stability limit lambda E[S_q:r] < floor(n/r)); got {lam:g}"
                f" (rho {self.rho:.4g})")

    # -- derived quantities ----------------------------------------------------------------
    @property
    def super_servers(self) -> int:
        """c = ⌊n/r⌋: groups of r hosts that can serve workunits at once (n mod r hosts are never usable)."""
        return self.hosts // self.replicas

    @property
    def mean_service(self) -> float:
        """E[S_{q:r}], the mean time a workunit holds its r hosts (split-merge)."""
        return order_statistic_moments(self.replica_law, self.quorum, self.replicas)[0]

    @property
    def max_throughput(self) -> float:
        """θ = ⌊n/r⌋ / E[S_{q:r}], the largest stable arrival rate of split-merge."""
        return self.super_servers / self.mean_service

    @property
    def rho(self) -> float:
        """ρ = λ E[S_{q:r}] / ⌊n/r⌋ (per super-server)."""
        return self.arrival_rate / self.max_throughput

    # -- constructors ----------------------------------------------------------------------
    @classmethod
    def from_rho(cls, hosts, replicas, quorum, rho, replica_law="exponential", model="split_merge") -> SplitMerge:
        """λ = ρ · ⌊n/r⌋ / E[S_{q:r}] (the seed's setting with load ρ = 0.9); ρ in (0, 1)."""
        rho = positive_finite("rho", rho)
        if rho >= 1.0:
            raise ValueError(f"rho must be in (0, 1); got {rho!r}")
        probe = cls(hosts, replicas, quorum, 1e-300, replica_law, model)  # validates everything but λ
        return cls(hosts, replicas, quorum, rho * probe.max_throughput, probe.replica_law, model)

    def with_model(self, model: str) -> SplitMerge:
        return SplitMerge(self.hosts, self.replicas, self.quorum, self.arrival_rate, self.replica_law, model)

    # -- serialisation ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"model": self.model, "hosts": self.hosts, "replicas": self.replicas, "quorum": self.quorum,
                "arrival_rate": self.arrival_rate, "replica_law": self.replica_law.to_dict()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> SplitMerge:
        d = dict(d)
        d["replica_law"] = law_from_dict(d["replica_law"])
        return cls(**d)

    def describe(self) -> str:
        name = {"split_merge": "split-merge", "fork_join": "fork-join with cancellation"}[self.model]
        return (f"{name} (n={self.hosts}, r={self.replicas}, q={self.quorum}): lambda={self.arrival_rate:.6g}, "
                f"E[S_q:r]={self.mean_service:.6g}, rho={self.rho:.4g}; replicas {self.replica_law}")
