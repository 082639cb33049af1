"""Simulation of restart G-networks under signal or timeout semantics, as ``xarray.Dataset`` objects.

A :class:`SimulationSpec` is a network plus the semantics: ``signal`` (the G-network: Poisson restart
signals at the model's signal rates, each restarting a uniformly chosen job) or ``timeout`` (every job
carries its own timeout, drawn from ``timeout`` — a :mod:`sojourn.core.laws.distributions` law, e.g.
``Deterministic(τ)`` or ``Exponential(θ)`` — at each (re)start; external signals are then off).
:func:`spec_for` maps one *restart rate* r onto the three semantics of the sweeps: signal rate g = r,
exponential timeouts of rate θ = r, deterministic timeouts τ = 1/r.

Dimensions of a result: ``replication`` (the seed spawn key), ``t`` (left edges of the response-time
histogram, :func:`sojourn.core.checks.timegrid.time_grid`), ``restarts`` (restart count of a recorded job,
the last bin collecting ≥ restart_max), ``type`` (queue/class/phase), ``station`` (queue/class),
``queue``. :func:`simulate_replication` is the Dask unit; :func:`concat_replications` joins its results.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..core.checks.config import DEFAULT_CONFIDENCE, DEFAULT_PERCENTILE  # the project's defaults
from ..core.checks.timegrid import grid_size, time_grid
from ..core.checks.validate import integer_at_least, positive_finite
from ..core.estimates import precision as _precision
from ..core.estimates import runlength as _runlength
from ..core.estimates.replications import check_window, replicate, with_precision
from ..core.estimates.replications import concat_replications as _concat
from ..core.files.io import provenance
from ..core.laws import seeds as _seeds
from ..core.laws.distributions import Deterministic, Distribution, Exponential, law_from_dict
from ..core.runs.progress import steps
from .model import Network, model_from_dict

SEMANTICS = ("signal", "timeout")
#: the sweeps' semantics: how a restart rate r is applied (signal g = r; timeout rate r; timeout 1/r)
SWEEP_SEMANTICS = ("signal", "timeout_exponential", "timeout_deterministic")


@dataclass(frozen=True)
class SimulationSpec:
    """What one replication simulates: the network and the restart semantics."""

    network: Network
    semantics: str = "signal"
    timeout: Distribution | None = None

    def __post_init__(self):
        if not isinstance(self.network, Network):
            raise ValueError(f"network must be a sojourn.restart.model.Network; got {type(self.network).__name__}")
        if self.semantics not in SEMANTICS:
            raise ValueError(f"semantics must be one of {SEMANTICS}; got {self.semantics!r}")
        if self.semantics == "timeout":
            if not isinstance(self.timeout, Distribution):
                raise ValueError("timeout must be a law (e.g. Deterministic(tau) or Exponential(rate)) with "
                                 "semantics='timeout'")
        elif self.timeout is not None:
            raise ValueError("timeout is only allowed with semantics='timeout'")

    def to_dict(self) -> dict:
        return {"network": self.network.to_dict(), "semantics": self.semantics,
                "timeout": None if self.timeout is None else self.timeout.to_dict()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> SimulationSpec:
        net = dict(d["network"])
        net.pop("model", None)
        return cls(model_from_dict(net), d["semantics"],
                   None if d.get("timeout") is None else law_from_dict(d["timeout"]))

    def describe(self) -> str:
        if self.semantics == "signal":
            return f"{self.network.describe()}; signal semantics"
        return f"{self.network.describe()}; timeout semantics, timeout {self.timeout}"


def spec_for(net: Network, semantics: str, restart_rate: float, queue=None) -> SimulationSpec:
    """The spec of one sweep point: ``signal`` (signal rate of ``queue`` = r), ``timeout_exponential``
    (timeouts ~ Exp(r)), ``timeout_deterministic`` (timeouts τ = 1/r); timeouts switch signals off."""
    r = positive_finite("restart_rate", restart_rate)
    if semantics == "signal":
        return SimulationSpec(net.with_signal_rate(r, queue), "signal")
    base = net
    for i in range(len(net.queues)):
        base = base.with_signal_rate(0.0, i)
    if semantics == "timeout_exponential":
        return SimulationSpec(base, "timeout", Exponential(r))
    if semantics == "timeout_deterministic":
        return SimulationSpec(base, "timeout", Deterministic(1.0 / r))
    raise ValueError(f"semantics must be one of {SWEEP_SEMANTICS}; got {semantics!r}")


def kernel_tables(net: Network) -> dict:
    """The network as the kernel's cumulative tables (see :func:`sojourn.restart.kernel.run`)."""
    L = net.layout
    N = len(net.queues)
    order = np.argsort(L.type_queue, kind="stable")
    if not np.array_equal(order, np.arange(len(order))):  # types are laid out queue by queue
        raise AssertionError("types must be contiguous per queue")
    first = np.searchsorted(L.type_queue, np.arange(N), side="left").astype(np.int64)
    last = np.searchsorted(L.type_queue, np.arange(N), side="right").astype(np.int64)
    route = np.concatenate([L.routing, L.signal_routing], axis=1)
    return dict(
        type_queue=L.type_queue, type_station=L.type_station, queue_first=first, queue_last=last,
        mu=L.mu.copy(), phase_cum=np.cumsum(L.phase_move, axis=1), route_cum=np.cumsum(route, axis=1),
        entry_cum=np.cumsum(L.entry, axis=1), alpha=L.alpha.copy(), restart_cum=np.cumsum(L.restart_move, axis=1),
        arr_cum=np.cumsum(L.arrival), signal_ext=L.signal_ext.copy(),
    )


def _check(spec, horizon, warmup, cooldown, dt, t_max, restart_max):
    if not isinstance(spec, SimulationSpec):
        raise ValueError(f"spec must be a SimulationSpec; got {type(spec).__name__}")
    horizon, warmup, cooldown = check_window(horizon, warmup, cooldown)
    grid_size(t_max, dt)
    restart_max = integer_at_least("restart_max", restart_max, 1, allow_float=False)
    if spec.semantics == "signal":
        from .solve import solve

        solve(spec.network)  # rejects an unstable network before any compute
    return horizon, warmup, cooldown, float(dt), float(t_max), restart_max


def _run(spec, rng, warmup, rec_end, dt, nbins, restart_max, max_jobs, max_events):
    from . import kernel as K

    tab = kernel_tables(spec.network)
    hist = np.zeros(nbins, np.int64)
    rhist = np.zeros(restart_max + 1, np.int64)
    area = np.zeros(len(tab["mu"]))
    if spec.semantics == "timeout":
        mode = 1
        tcode, tparams = spec.timeout.kernel_spec()
    else:
        mode, tcode, tparams = 0, 0, np.array([1.0])
    t0 = time.perf_counter()
    acc = K.run(tab["type_queue"], tab["type_station"], tab["queue_first"], tab["queue_last"], tab["mu"],
                tab["phase_cum"], tab["route_cum"], tab["entry_cum"], tab["alpha"], tab["restart_cum"],
                tab["arr_cum"], tab["signal_ext"], mode, int(tcode), np.ascontiguousarray(tparams, np.float64),
                float(warmup), float(rec_end), float(dt), hist, rhist, area, int(max_jobs), float(max_events), rng)
    return dict(acc=acc, hist=hist, rhist=rhist, area=area, wall_time=time.perf_counter() - t0)


def _dataset(spec, raw, reps, *, seed, horizon, warmup, cooldown, dt, t_max, restart_max, max_jobs,
             max_events) -> xr.Dataset:
    from . import kernel as K

    net = spec.network
    acc = np.array([r["acc"] for r in raw])
    flag = acc[:, K.A_UNSTABLE].astype(np.int8)
    unstable = flag > 0
    acc[unstable, :K.A_EVENTS] = np.nan  # a stopped run has no stationary measures
    for r, u in zip(raw, unstable, strict=True):
        if u:
            r["area"] = np.full_like(r["area"], np.nan)
            r["hist"][:] = 0
            r["rhist"][:] = 0
    window = horizon - cooldown - warmup
    count = np.nan_to_num(acc[:, K.A_COUNT]).astype(np.int64)
    area = np.array([r["area"] for r in raw]) / window
    station = np.stack([net.totals("type_station", a) for a in area])
    queue = np.stack([net.totals("type_queue", a) for a in area])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, acc[:, K.A_SUM] / np.maximum(count, 1), np.nan)
        mean_restarts = np.where(count > 0, acc[:, K.A_RESTARTS_RECORDED] / np.maximum(count, 1), np.nan)
    tu = "time"
    rate = "1/time"
    R = ("replication",)
    ds = xr.Dataset(
        {
            "count": (("replication", "t"), np.array([r["hist"] for r in raw], np.int64),
                      {"long_name": "recorded jobs with network response time in [t, t + dt)", "units": "1"}),
            "overflow": (R, np.nan_to_num(acc[:, K.A_OVERFLOW]).astype(np.int64),
                         {"long_name": "recorded jobs with response time >= t_max + dt", "units": "1"}),
            "n_customers": (R, count, {"long_name": "recorded jobs (arrived in the window)", "units": "1"}),
            "sum": (R, acc[:, K.A_SUM], {"long_name": "sum of recorded response times", "units": tu}),
            "sumsq": (R, acc[:, K.A_SUMSQ], {"long_name": "sum of squared recorded response times", "units": "time^2"}),
            "mean": (R, mean, {"long_name": "mean response time (network entry to exit)", "units": tu}),
            "max": (R, acc[:, K.A_MAX], {"long_name": "maximum response time", "units": tu}),
            "restart_count": (("replication", "restarts"), np.array([r["rhist"] for r in raw], np.int64),
                              {"long_name": "recorded jobs by number of successful restarts (last bin: >= restart_max)",
                               "units": "1"}),
            "mean_restarts": (R, mean_restarts,
                              {"long_name": "mean successful restarts per recorded job", "units": "1"}),
            "mean_number_type": (("replication", "type"), area,
                                 {"long_name": "time-average number of jobs of (queue, class, phase)", "units": "1"}),
            "mean_number_station": (("replication", "station"), station,
                                    {"long_name": "time-average number of jobs of (queue, class)", "units": "1"}),
            "mean_number": (("replication", "queue"), queue,
                            {"long_name": "time-average number of jobs at the queue", "units": "1"}),
            "throughput": (R, acc[:, K.A_DEPARTURES] / window,
                           {"long_name": "jobs leaving the network per unit time in the window", "units": rate}),
            "restarts_per_time": (R, acc[:, K.A_RESTARTS] / window,
                             {"long_name": "successful restarts per unit time in the window", "units": rate}),
            "signal_hit_rate": (R, acc[:, K.A_SIGNALS] / window,
                                {"long_name": "signals reaching a non-empty queue per unit time", "units": rate}),
            "timeout_rate": (R, acc[:, K.A_TIMEOUTS] / window,
                             {"long_name": "timeouts fired per unit time", "units": rate}),
            "events": (R, acc[:, K.A_EVENTS].astype(np.int64), {"long_name": "events simulated", "units": "1"}),
            "unstable": (R, flag,
                         {"long_name": "stopped: 1 more than max_jobs jobs present, 2 more than max_events "
                                       "events (measures NaN)", "units": "1"}),
            "wall_time": (R, np.array([r["wall_time"] for r in raw]),
                          {"long_name": "wall-clock time of the kernel (not reproducible)", "units": "s"}),
        },
        coords=_coords(net, reps, dt, t_max, restart_max),
    )
    ds.attrs.update(_provenance(spec, seed=seed, horizon=horizon, warmup=warmup, cooldown=cooldown, dt=dt, t_max=t_max,
                                restart_max=restart_max, max_jobs=max_jobs, max_events=max_events))
    return ds


def _coords(net, reps, dt, t_max, restart_max) -> dict:
    """The coordinates of a simulation dataset: replications, the histogram's time grid, restart counts, and the
    network's types, stations and queues."""
    L = net.layout
    return {
        "replication": ("replication", np.asarray(reps, np.int64),
                        {"long_name": "replication index (seed spawn key)", "units": "1"}),
        "t": ("t", time_grid(t_max, dt), {"long_name": "response time, left edge of histogram bin", "units": "time"}),
        "restarts": ("restarts", np.arange(restart_max + 1),
                     {"long_name": "successful restarts of a job", "units": "1"}),
        "type": ("type", list(L.labels), {"long_name": "queue/class/phase"}),
        "station": ("station", list(L.station_labels), {"long_name": "queue/class"}),
        "queue": ("queue", [q.name for q in net.queues], {"long_name": "queue"}),
    }


def _provenance(spec, *, seed, horizon, warmup, cooldown, dt, t_max, restart_max, max_jobs, max_events) -> dict:
    """A simulation dataset's attributes: the model, the run's parameters, how each replication's seed is made."""
    entropy = _seeds.seed_entropy(seed, spec)
    return provenance(
        spec.to_dict(), title="Simulated restart G-network: " + spec.describe(), model=spec.describe(),
        spec=spec.to_json(), semantics=spec.semantics, horizon=float(horizon), warmup=float(warmup),
        cooldown=float(cooldown), dt=float(dt), t_max=float(t_max), restart_max=int(restart_max), seed=int(seed),
        max_jobs=int(max_jobs), max_events=int(max_events),
        seed_entropy=json.dumps([str(e) for e in entropy]),
        seed_recipe="numpy.random.SeedSequence(entropy=seed_entropy, spawn_key=(replication,)); "
                    "seed_entropy = [seed, sha256(spec JSON)[:8] as big-endian integer]",
        histogram_convention="count[i]: response time in [t_i, t_i + dt); CDF at right edges P(T < t_i + dt)",
    )


def simulate(spec: SimulationSpec, replications: int | None = None, seed: int = 0, *, horizon: float = 200_000.0,
             warmup: float | None = None, cooldown: float | None = None, dt: float = 0.05, t_max: float = 200.0,
             restart_max: int = 50, replication_offset: int = 0, max_jobs: int = 500,
             max_events: int = 200_000_000, precision=None) -> xr.Dataset:
    """Replications ``replication_offset`` … of ``spec``; replication k uses
    ``sojourn.core.laws.seeds.replication_rng(seed, spec, k)`` (independent of order and process).

    Jobs arriving in (warmup, horizon − cooldown) are recorded (warmup defaults to 5 % of the horizon,
    ``sojourn.core.estimates.replications.WARMUP_FRACTION``, cooldown to warmup); time
    averages are over that window. The response-time histogram has bins of width dt up to t_max.
    A replication in which more than ``max_jobs`` jobs are present at once, or that needs more than
    ``max_events`` events, is stopped and flagged ``unstable`` (1 resp. 2; its measures are NaN):
    timeout semantics can be unstable where signals are not.

    ``replications`` (default 1) or ``precision``: a :class:`sojourn.core.estimates.precision.Precision` or a dict
    ``{statistic: mean|percentile|cdf, at: …, relative_half_width: 0.05, max_replications: 200}`` on the
    response time (default the mean E[T]; a percentile at level ``at`` percent, default 99; the CDF at time
    ``at``): replications are added in batches until the t-interval across replications is that narrow, or
    the cap (:mod:`sojourn.core.estimates.precision`; an unstable replication stops it as ``statistic_undefined``).
    Adds ``replications_used``, ``precision_estimate``, ``achieved_half_width``,
    ``achieved_relative_half_width`` and ``stop_reason``; the data equal a fixed-count run of
    ``replications_used`` replications.
    """
    precision, replications, replication_offset, seed = _precision.resolve(
        precision, replications, replication_offset, seed, t_max=t_max, default_at=DEFAULT_PERCENTILE,
        default_statistic="mean")
    H, W, C, dt, t_max, rmax = _check(spec, horizon, warmup, cooldown, dt, t_max, restart_max)
    nbins = grid_size(t_max, dt)
    max_jobs = integer_at_least("max_jobs", max_jobs, 1, allow_float=False)
    max_events = integer_at_least("max_events", max_events, 1, allow_float=True)
    admit_cost([spec], H, replications if precision is None else precision.max_replications, dt, t_max, max_jobs,
               max_events)
    run = lambda k: _run(spec, _seeds.replication_rng(seed, spec, k), W, H - C, dt, nbins, rmax, max_jobs, max_events)
    from . import kernel as K

    edges = time_grid(t_max, dt) + dt

    def estimate(_, k, r):
        acc = r["acc"]
        if acc[K.A_UNSTABLE] > 0:
            return np.nan  # stopped: no stationary measures
        mean = acc[K.A_SUM] / acc[K.A_COUNT] if acc[K.A_COUNT] > 0 else np.nan
        return float(_precision.histogram_statistic(precision, r["hist"], acc[K.A_OVERFLOW], edges, mean))

    (raw,), (decision,) = replicate(lambda req: [run(k) for _, k in steps(req, "replications")], [0],
                                    replications=replications, offset=replication_offset, precision=precision,
                                    estimate=estimate)
    reps = list(range(replication_offset, replication_offset + len(raw)))
    ds = _dataset(spec, raw, reps, seed=seed, horizon=H, warmup=W, cooldown=C, dt=dt, t_max=t_max,
                  restart_max=rmax, max_jobs=max_jobs, max_events=max_events)
    ds = with_precision(ds, decision, precision, "time", of="response time")
    return with_guard(ds, spec)


def admit_cost(specs, horizon: float, replications: int, dt: float, t_max: float, max_jobs: int,
               max_events: float) -> None:
    """The predicted time and memory of simulating ``specs`` admitted before anything is allocated
    (:func:`sojourn.restart.cost.admit`)."""
    from .cost import admit

    admit(specs, horizon, replications, dt, t_max, max_jobs, max_events)


def run_model(spec: SimulationSpec, ds: xr.Dataset | None = None) -> _runlength.RunModel | None:
    """The run-length guard's view of a spec (:mod:`sojourn.core.estimates.runlength`). Signals: every queue is a
    station with its product-form load ρ_i and arrival flow Λ_i (its number in system is that of M/M/1 at ρ_i,
    Property 1), the network's mean response time the product form's. Timeouts have no product form: the whole
    network is one station built from the run's own measured throughput and mean number (ρ = L/(1 + L)),
    ``basis`` "measured" (a lower bound for a run too short to reach its level); None if nothing was measured."""
    net = spec.network
    if spec.semantics == "signal":
        from .solve import solve

        sol = solve(net)
        scv = _service_scv(net, sol)
        stations = tuple(_runlength.Station(float(lam), 1, float(rho), 1.0, float(c))
                         for lam, rho, c in zip(sol.queue_arrival_flow, sol.queue_load, scv, strict=True)
                         if lam > 0 and rho > 0)
        return _runlength.RunModel(stations, net.arrival_rate, scv_service=float(scv.max()),
                                   mean_sojourn=sol.response_time)
    if ds is None:
        return None
    ok = ds["unstable"].values == 0
    if not ok.any():
        return None
    L = float(ds["mean_number"].values[ok].sum(axis=-1).mean())
    lam = float(ds["throughput"].values[ok].mean())
    W = float(ds["mean"].values[ok].mean())
    if not (np.isfinite(L) and np.isfinite(lam) and np.isfinite(W) and L > 0 and lam > 0 and W > 0):
        return None
    station = _runlength.Station(lam, 1, L / (1.0 + L))
    return _runlength.RunModel((station,), lam, mean_sojourn=W, basis="measured")


def _service_scv(net: Network, sol) -> np.ndarray:
    """Per queue: the squared coefficient of variation of the work a job brings to the queue per visit, restarts
    included (the single-queue construction of :func:`sojourn.restart.solve.effective_service` at each queue's
    total signal rate G_i, routing to other queues counted as leaving; entries weighted by the stations' arrival
    flows). A queue nobody enters: 1."""
    from ..core.laws import phase_type

    L = net.layout
    G = sol.signal_rate[L.type_queue]
    A = (-np.diag(L.mu + G * L.alpha) + L.mu[:, None] * L.phase_move + (G * L.alpha)[:, None] * L.restart_move
         + (L.mu * L.exit_prob)[:, None] * (L.routing[L.type_station] @ L.entry))
    entry = sol.arrival_flow @ L.entry  # arrivals into each type
    scv = np.ones(len(net.queues))
    for i in range(len(net.queues)):
        idx = np.flatnonzero(L.type_queue == i)
        pi0 = entry[idx]
        if not pi0.sum() > 0:
            continue
        pi0 = pi0 / pi0.sum()
        block = A[np.ix_(idx, idx)]
        m1, m2 = phase_type.moment(pi0, block, 1), phase_type.moment(pi0, block, 2)
        scv[i] = max(m2 / m1**2 - 1.0, 0.0)
    return scv


def with_guard(ds: xr.Dataset, spec: SimulationSpec | None = None) -> xr.Dataset:
    """``ds`` with the run-length guard's variables for its window and replication count; a replication that
    stopped unstable sets the ``unstable`` bit."""
    spec = spec if spec is not None else SimulationSpec.from_dict(json.loads(ds.attrs["spec"]))
    window = float(ds.attrs["horizon"]) - float(ds.attrs["warmup"]) - float(ds.attrs["cooldown"])
    ds.update(_runlength.variables(guard(spec, ds, window), (), "time"))  # one merge, not one per variable
    return ds


def guard(spec: SimulationSpec, ds: xr.Dataset, window: float) -> _runlength.Verdict:
    """The run-length verdict on the replications of ``ds`` (one spec, recording window ``window`` each; the
    replications present, or ``replications_used`` of a padded precision-driven run)."""
    if "replications_used" in ds:
        k = int(np.asarray(ds["replications_used"]).ravel()[0])
        ds = ds.isel(replication=slice(0, k))
    k = ds.sizes["replication"]
    return _runlength.assess(run_model(spec, ds), window, k, unstable=bool((ds["unstable"].values > 0).any()))


def simulate_replication(spec: SimulationSpec, replication: int = 0, seed: int = 0, **kwargs) -> xr.Dataset:
    """One replication as a Dataset with a length-1 ``replication`` dim: the unit of a Dask task
    (picklable arguments; bit-identical to replication ``replication`` of :func:`simulate`)."""
    replication = integer_at_least("replication", replication, 0, allow_float=False)
    return simulate(spec, replications=1, seed=seed, replication_offset=replication, **kwargs)


def concat_replications(datasets) -> xr.Dataset:
    """Join replication datasets of one spec (same settings; duplicate indices are an error)."""
    return with_guard(_concat(datasets, ("spec", "horizon", "warmup", "cooldown", "dt", "t_max", "seed",
                                         "restart_max")))


def percentile_per_replication(count, overflow, t, dt, p: float) -> np.ndarray:
    """The p-quantile of each replication's response-time histogram (interpolated within its bin,
    :func:`sojourn.core.estimates.stats.histogram_quantile`; NaN past t_max)."""
    from ..core.estimates.stats import cdf_from_histogram, histogram_quantile

    F = cdf_from_histogram(count, overflow)
    return np.asarray(histogram_quantile(F, t, dt, p))


def summary(ds: xr.Dataset, confidence: float = DEFAULT_CONFIDENCE, percentile: float = 0.99) -> dict:
    """Means over replications with Student-t half-widths: response time, its ``percentile`` quantile,
    total mean number of jobs, throughput and restarts per job; with ``percentile_beyond`` (jobs per replication
    at or beyond the percentile, on average) and ``percentile_too_few`` (True where fewer than
    ``sojourn.core.estimates.stats.TAIL_MIN`` per replication, or none in some replication, lie beyond: too few to
    estimate the percentile, whatever its half-width says)."""
    from ..core.estimates.stats import TAIL_MIN, mean_ci, percentiles_per_replication

    out = {}
    q, beyond = percentiles_per_replication(ds["count"].values, ds["overflow"].values, ds["t"].values,
                                            float(ds.attrs["dt"]), percentile)
    q, beyond = q[:, 0], beyond[:, 0]
    out["percentile_beyond"] = float(beyond.mean())
    out["percentile_too_few"] = bool(beyond.mean() < TAIL_MIN or (beyond == 0).any())
    for name, x in (("response_time", ds["mean"].values), ("percentile", q),
                    ("mean_number", ds["mean_number"].values.sum(axis=-1)), ("throughput", ds["throughput"].values),
                    ("mean_restarts", ds["mean_restarts"].values)):
        m, h = mean_ci(np.asarray(x, float), confidence=confidence)
        out[name] = (float(m), float(h))
    return out
