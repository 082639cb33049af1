"""Is a simulation run long enough? One run-length guard for every study's simulator.

A steady-state simulation estimates its statistics from a window of finite length T. Two things go wrong when T
is short against the system's own time scale, and neither shows in the run's output:

* the window does not forget the empty start and sees only a few "regeneration" cycles, so a replication's
  estimate is biased and far from normal (the replications' Student-t interval then misleads);
* the estimate's standard error, which for a correlated process is √(2 τ_int σ² / T) rather than √(σ²/n),
  is large: one replication of 2000 time units at load 0.999 reports a mean sojourn of 71 where the truth is
  1000.

Method: a relaxation-time and asymptotic-variance estimate from the model, before looking at the output
(P. M. Morse, "Stochastic properties of waiting lines", Operations Research 3, 1955, for M/M/1's relaxation time;
W. Whitt, "Planning queueing simulations", Management Science 35(11), 1989, §§2–4: the heavy-traffic
approximation of a queue's number in system by reflected Brownian motion, RBM; J. Abate & W. Whitt,
"Transient behavior of regulated Brownian motion I", Adv. Appl. Prob. 19, 1987, for its relaxation time).
Each study describes its bottleneck(s) as :class:`Station` s — arrival rate λ, servers c, load ρ, squared
coefficients of variation of inter-arrival and service times c_a², c_s² — and the RBM with drift −δ and
variance v,

    δ = cμ − λ = λ(1 − ρ)/ρ,  v = λ(c_a² + c_s²),

gives (Whitt 1989, eqs. for the canonical RBM rescaled by v/δ in space and v/δ² in time)

    relaxation time        τ = 2v/δ²                          (M/M/1: 4ρ/(μ(1 − ρ)²))
    asymptotic variance    σ²_N = lim T·Var(N̄_T) = v³/(2δ⁴)   (M/M/1: 4ρ³/(1 − ρ)⁴)

of the time average N̄_T of the number in system over a window T (independent stations add). Both are
heavy-traffic limits and understate at moderate load, where a guard must not err short; the guard takes the
forms that are exact for M/M/1 at every load and equal the RBM's as ρ → 1, with g = (c_a² + c_s²)/2:
τ = g/(cμ(1 − √ρ)²) (Morse 1955's M/M/1 relaxation time at the pooled rate cμ, as ``sojourn plan`` uses for
M/M/R) and σ²_N = (2λ)³/(2δ⁴) · (1 + ρ)/(2ρ²) · g^(1 + 2ρ) (M/M/1: 2ρ(1 + ρ)/(1 − ρ)⁴, Whitt 1989; the
variability enters as g³ in heavy traffic, the RBM's v³, and as g in light traffic, where σ²_N → λE[S²]; the
exponent 1 + 2ρ interpolates between the two limits, an interpolation in the spirit of Whitt's QNA, not a
derived result). By Little's law
the mean sojourn W̄ of the customers of that window has T·Var(W̄) ≈ max(σ²_N/λ², c_S²·W²/λ), the second term
being the independent-customers variance, the floor at low load where the heavy-traffic σ²_N of a many-server
station vanishes (c_S² = the sojourn's squared coefficient of variation, taken as max(1, c_s²); for M/M/1 the
first term already holds it: σ²_N/λ² → E[S²]/λ as ρ → 0). The mean number is cρ + C·v/(2δ) (C = Erlang C, the
probability of waiting; the RBM's mean v/(2δ) for the part that waits; exact for M/M/1). So a run of k
replications of window T each
has a predicted relative standard error of its mean sojourn

    rse = √(T·Var(W̄) / (k T)) / W.

The guard (:func:`assess`) flags a run (bit mask, 0 = long enough; :data:`FLAGS`):

* ``shorter_than_relaxation``: a replication's window T < :data:`RELAXATIONS_MIN` relaxation times (then even a
  warm-up-free start biases the window mean by up to ~τ/(4T) ≈ 2.5 % for M/M/1, and fewer than ~10
  independent stretches make the replication's estimate skewed); more replications do not cure it;
* ``imprecise``: rse > :data:`RSE_MAX` (10 %: the 95 % interval of the mean would be ±20 %);
* ``unstable``: the run itself stopped (a restart network that blew up): no stationary measure at all.

and says what would be enough: the window per replication at the same replication count,
``max(RELAXATIONS_MIN·τ, T·Var(W̄)/(W²·RSE_MAX²·k))``, which each study turns into the flag its user types
(``--horizon``, ``--workunits``). The guard is an estimate from the model, made before the output is read, so
it cannot be fooled by a run too short to show its own correlation (the case it exists for). ``tests/core/
test_runlength.py`` checks it against the spread of 40 fixed-seed replications (predicted per-replication rse
between 1/1.3 and 1.6 times the measured one on M/M/1 at ρ = 0.5 and 0.9, M/M/3-JSQ at 0.95, split-merge with
hyperexponential replicas and restart example 2), and against the default config: of its 206 cells it flags the
JSQ-PS R = 1, ρ = 0.95 cell (imprecise) and one fork-join cell whose short runs read 3 % low (3 standard errors).

A study without a model for some semantics (restart with timeouts) builds its stations from the run's own
measured mean numbers and throughput (``basis`` = "measured", an attribute of the variables); that estimate can
only understate a run too short to have met its own stationary level, and the command line says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

#: a replication's window must span this many relaxation times (module doc)
RELAXATIONS_MIN = 10.0
#: the largest predicted relative standard error of the mean sojourn over all replications (module doc)
RSE_MAX = 0.10

SHORTER_THAN_RELAXATION, IMPRECISE, UNSTABLE = 1, 2, 4
FLAGS = {"shorter_than_relaxation": SHORTER_THAN_RELAXATION, "imprecise": IMPRECISE, "unstable": UNSTABLE}
FLAG_MASKS = np.array(list(FLAGS.values()), dtype=np.int8)
FLAG_MEANINGS = " ".join(FLAGS)
#: the names of the variables :func:`variables` adds to a simulation dataset (all scalars per cell)
VARIABLES = ("run_valid", "run_validity_reason", "relaxation_time", "predicted_relative_se", "needed_window")
#: gap values of the integer variables where a merged hypercube has no run (sojourn.core.files.merge)
FILL = {"run_valid": -1, "run_validity_reason": 0}


def erlang_c(c: int, a: float) -> float:
    """C(c, a), the probability of waiting in M/M/c at offered load a = λ/μ < c (Erlang B recursion, stable
    for large c)."""
    b = 1.0
    for k in range(1, int(c) + 1):
        b = a * b / (k + a * b)
    rho = a / c
    return b / (1.0 - rho * (1.0 - b))


@dataclass(frozen=True)
class Station:
    """A bottleneck as the guard sees it (module doc): ``copies`` independent identical stations (e.g. the R
    servers of random dispatch), each with arrival rate ``arrival_rate``, ``servers`` servers at ``load``."""

    arrival_rate: float
    servers: int
    load: float
    scv_arrival: float = 1.0
    scv_service: float = 1.0
    copies: int = 1

    @property
    def drift(self) -> float:  # δ = cμ − λ
        return self.arrival_rate * (1.0 - self.load) / self.load

    @property
    def variability(self) -> float:  # v = λ(c_a² + c_s²)
        return self.arrival_rate * (self.scv_arrival + self.scv_service)

    @property
    def relaxation_time(self) -> float:
        """(c_a² + c_s²)/2 · 1/(cμ(1 − √ρ)²): Morse's exact M/M/1 value at the pooled rate cμ, scaled by the
        variability as the RBM limit 2v/δ² is (module doc)."""
        c_mu = self.arrival_rate / self.load
        return 0.5 * (self.scv_arrival + self.scv_service) / (c_mu * (1.0 - math.sqrt(self.load)) ** 2)

    @property
    def number_variance(self) -> float:
        """σ²_N of all copies together: lim T·Var of the time-average number in system: the M/M/c-rate RBM value
        (2λ)³/(2δ⁴) times the factor (1 + ρ)/(2ρ²) that makes it M/M/1's exact 2ρ(1 + ρ)/(1 − ρ)⁴, times the
        variability g^(1 + 2ρ), g = (c_a² + c_s²)/2 (module doc)."""
        rho = self.load
        g = 0.5 * (self.scv_arrival + self.scv_service)
        base = (2.0 * self.arrival_rate) ** 3 / (2.0 * self.drift**4) * (1.0 + rho) / (2.0 * rho**2)
        return self.copies * base * g ** (1.0 + 2.0 * rho)

    @property
    def mean_number(self) -> float:
        """All copies: cρ + C·v/(2δ) each (module doc)."""
        c, rho = int(self.servers), float(self.load)
        wait = rho if c == 1 else erlang_c(c, c * rho)
        return self.copies * (c * rho + wait * self.variability / (2.0 * self.drift))


@dataclass(frozen=True)
class RunModel:
    """What the guard knows of a system: its stations, the rate of customers through it (``throughput``), the
    squared coefficient of variation of the service (for the light-traffic term) and where the numbers come
    from (``basis``: "model" or "measured"). ``mean_sojourn`` overrides the stations' Little's-law mean where the
    study knows it exactly."""

    stations: tuple
    throughput: float
    scv_service: float = 1.0
    basis: str = "model"
    mean_sojourn: float | None = None
    note: str = field(default="")

    @property
    def relaxation_time(self) -> float:
        return max(s.relaxation_time for s in self.stations)

    @property
    def sojourn(self) -> float:
        if self.mean_sojourn is not None:
            return float(self.mean_sojourn)
        return sum(s.mean_number for s in self.stations) / self.throughput

    @property
    def variance_rate(self) -> float:
        """lim T·Var(W̄_T) of the window mean sojourn: max(σ²_N/λ², max(1, c_s²)·W²/λ) (module doc)."""
        lam = self.throughput
        return max(sum(s.number_variance for s in self.stations) / lam**2,
                   max(1.0, self.scv_service) * self.sojourn**2 / lam)

    def relative_se(self, window: float, replications: int) -> float:
        return math.sqrt(self.variance_rate / (window * replications)) / self.sojourn

    def needed_window(self, replications: int) -> float:
        """The window per replication that passes both checks with ``replications`` replications."""
        precise = self.variance_rate / (self.sojourn**2 * RSE_MAX**2 * replications)
        return max(RELAXATIONS_MIN * self.relaxation_time, precise)


@dataclass(frozen=True)
class Verdict:
    """The guard's verdict on one run (see :func:`assess`)."""

    reason: int
    relaxation_time: float
    relative_se: float
    window: float
    replications: int
    needed_window: float
    basis: str

    @property
    def valid(self) -> bool:
        return self.reason == 0

    def describe(self) -> str:
        return describe(self.reason)


def assess(model: RunModel | None, window: float, replications: int, unstable: bool = False) -> Verdict:
    """The verdict on ``replications`` replications of recording window ``window`` each (module doc)."""
    k = max(1, int(replications))
    if model is None:
        return Verdict(UNSTABLE if unstable else 0, math.nan, math.nan, float(window), k, math.nan, "none")
    tau = model.relaxation_time
    rse = model.relative_se(window, k)
    reason = (SHORTER_THAN_RELAXATION * (window < RELAXATIONS_MIN * tau) + IMPRECISE * (rse > RSE_MAX)
              + UNSTABLE * bool(unstable))
    return Verdict(int(reason), float(tau), float(rse), float(window), k, float(model.needed_window(k)), model.basis)


def describe(reason: int) -> str:
    """The names of the bits set in ``reason`` (``""`` if none)."""
    return ", ".join(name for name, bit in FLAGS.items() if int(reason) & bit)


def variables(v: Verdict, dims: tuple = (), units: str = "time units") -> dict:
    """The guard's variables for a simulation dataset: {name: (dims, value, attrs)}; ``dims`` (e.g. the
    pipeline's ("service", "R", "rho")) get size-1 axes."""
    shape = (1,) * len(dims)

    def arr(x, dtype):
        return np.full(shape, x, dtype=dtype) if dims else np.asarray(x, dtype=dtype)

    common = {"method": "heavy-traffic RBM relaxation time and asymptotic variance from the model (Whitt 1989; "
                        "sojourn.core.estimates.runlength)", "basis": v.basis}
    return {
        "run_valid": (dims, arr(int(v.valid), np.int8),
                      {"long_name": "1 = the run is long enough to trust (run_validity_reason = 0)", "units": "1",
                       "flag_values": np.array([0, 1], np.int8), "flag_meanings": "too_short long_enough"}),
        "run_validity_reason": (dims, arr(v.reason, np.int8),
                                {"long_name": "why the run is too short to trust (bit mask; 0 = long enough)",
                                 "units": "1", "flag_masks": FLAG_MASKS, "flag_meanings": FLAG_MEANINGS,
                                 "relaxations_min": RELAXATIONS_MIN, "rse_max": RSE_MAX, "window": v.window,
                                 "replications": v.replications, **common}),
        "relaxation_time": (dims, arr(v.relaxation_time, np.float64),
                            {"long_name": "predicted relaxation time of the system (2v/delta^2)", "units": units,
                             **common}),
        "predicted_relative_se": (dims, arr(v.relative_se, np.float64),
                                  {"long_name": "predicted relative standard error of the mean sojourn over all "
                                                "replications", "units": "1", **common}),
        "needed_window": (dims, arr(v.needed_window, np.float64),
                          {"long_name": "recording window per replication the guard asks for at this replication "
                                        "count", "units": units, **common}),
    }


def from_dataset(ds) -> Verdict | None:
    """The verdict stored in a dataset by :func:`variables` (scalars), None if it has none."""
    if "run_validity_reason" not in ds:
        return None
    g = lambda n: float(np.asarray(ds[n].values).ravel()[0])  # noqa: E731
    a = ds["run_validity_reason"].attrs
    return Verdict(int(g("run_validity_reason")), g("relaxation_time"), g("predicted_relative_se"),
                   float(a.get("window", math.nan)), int(a.get("replications", ds.sizes.get("replication", 1))),
                   g("needed_window"), str(a.get("basis", "model")))


def warning(v: Verdict, need: str, what: str = "mean sojourn") -> str:
    """One line for a command's output: the run is too short, why, and ``need`` (the flag value that would do,
    in the user's terms, e.g. "--horizon >= 4.0e+08")."""
    parts = []
    if v.reason & UNSTABLE:
        parts.append("a replication stopped (unstable): no stationary measures")
    if v.reason & SHORTER_THAN_RELAXATION:
        parts.append(f"a replication's window {v.window:.3g} is {v.window / v.relaxation_time:.2g} relaxation times "
                     f"(~{v.relaxation_time:.3g}; at least {RELAXATIONS_MIN:g} needed)")
    if v.reason & IMPRECISE:
        parts.append(f"predicted relative standard error of the {what} {100 * v.relative_se:.3g} % "
                     f"(> {100 * RSE_MAX:g} %)")
    basis = " (estimated from this run's own averages: a lower bound)" if v.basis == "measured" else ""
    return (f"warning: run too short to trust: {'; '.join(parts)}{basis}; needs {need} "
            f"(sojourn.core.estimates.runlength: {describe(v.reason)})")


def format_length(x: float) -> str:
    """A run length as a user types it: 33,000 or 4.0e+08."""
    from .summary import round_up

    x = round_up(x)
    return f"{x:,.0f}" if x < 1e7 else f"{x:.1e}"


def horizon_for(window: float, warmup: float, cooldown: float, default_share: float | None = None) -> float:
    """The horizon whose recording window is ``window``: with a default warm-up (and cool-down) of
    ``default_share`` of the horizon each, window/(1 − 2·share); else window + warmup + cooldown."""
    return window / (1.0 - 2.0 * default_share) if default_share is not None else window + warmup + cooldown


def status(v: Verdict, need: str, what: str = "mean sojourn") -> str:
    """The ``run length`` line of a simulate command: the relaxation time, the predicted relative standard error,
    and "long enough" or "TOO SHORT" with ``need`` (the flag value that would do) and the replication count."""
    if math.isnan(v.relaxation_time):
        return "not judged (no model and no stationary measure)" + (": a replication stopped unstable"
                                                                    if v.reason & UNSTABLE else "")
    head = (f"relaxation time ~{v.relaxation_time:.3g}; predicted relative standard error of the {what} "
            f"{100 * v.relative_se:.2g} %{' (from the run itself)' if v.basis == 'measured' else ''}")
    if v.valid:
        return f"{head}: long enough"
    return f"{head}: TOO SHORT ({v.describe()}); needs {need} at --replications {v.replications}"
