"""``simulate``: replications of a :class:`SplitMerge` spec as an ``xarray.Dataset`` of streamed statistics.

Dimensions: ``replication`` (the replication index = the seed spawn key) and ``t`` (left edges of the
delay and latency histogram bins, :func:`sojourn.core.checks.timegrid.time_grid`). Memory is O(1) in the run
length: histograms, sums, sums of squares.

Run length: ``workunits`` recorded workunits after ``warmup_workunits`` discarded ones, or every workunit
arriving in [``warmup_time``, ``horizon``]. The Dask unit of a pipeline is :func:`simulate_replication`
(picklable arguments only); :func:`concat_replications` joins its results. Replication k's random stream
is ``sojourn.core.laws.seeds.replication_rng(seed, spec, k, "sfc64")``: the same numbers alone, in a batch or on another
worker.
"""
from __future__ import annotations

import functools
import json
import math
import time

import numpy as np
import xarray as xr

from ..core.checks.timegrid import grid_size, time_grid
from ..core.checks.validate import integer_at_least, nonnegative_finite, positive_finite
from ..core.estimates import precision as _precision
from ..core.estimates import runlength as _runlength
from ..core.estimates.replications import concat_replications as _concat
from ..core.estimates.replications import replicate, with_precision
from ..core.files.io import provenance
from ..core.laws import seeds as _seeds
from ..core.laws import sfc64
from ..core.laws.ph_walk import walk_tables
from ..core.laws.phase_type import lumped_levels
from ..core.runs.progress import steps
from .model import TIME_UNITS, SplitMerge
from .order_stats import order_statistic_ph, ph_representation

#: the bit generator of every replication's stream (exponential and phase-type replicas step it inline)
BIT_GENERATOR = "sfc64"
#: the latency percentile level (percent) of a precision target ``statistic: percentile`` given without ``at``
from ..core.checks.config import DEFAULT_PERCENTILE  # noqa: E402,F401  (the project's one default)


def _plan(spec, workunits, horizon, warmup_workunits, warmup_time, dt, t_max):
    if not isinstance(spec, SplitMerge):
        raise ValueError(f"spec must be a sojourn.split_merge.SplitMerge; got {type(spec).__name__}")
    if (workunits is None) == (horizon is None):
        raise ValueError("give exactly one of workunits (recorded workunits) and horizon (simulated time)")
    if workunits is not None:
        workunits = integer_at_least("workunits", workunits, 1)
        warm_n = (workunits // 10 if warmup_workunits is None
                  else integer_at_least("warmup_workunits", warmup_workunits, 0))
        warm_t = 0.0 if warmup_time is None else nonnegative_finite("warmup_time", warmup_time)
        horizon_ = math.inf
    else:
        horizon_ = positive_finite("horizon", horizon)
        warm_t = horizon_ / 10 if warmup_time is None else nonnegative_finite("warmup_time", warmup_time)
        if not warm_t < horizon_:
            raise ValueError(f"warmup_time must be in [0, horizon={horizon_:g}); got {warm_t!r}")
        warm_n = 0 if warmup_workunits is None else integer_at_least("warmup_workunits", warmup_workunits, 0)
        workunits = 0
    nb = grid_size(t_max, dt)
    return int(workunits), float(horizon_), int(warm_n), float(warm_t), float(dt), float(t_max), nb


@functools.lru_cache(maxsize=64)
def _walk(law, q: int, r: int):
    """The kernel's alias tables of the lumped S_{q:r} (reward: live replicas per phase), None without a PH form."""
    lumped = order_statistic_ph(law, q, r)
    if lumped is None:
        return None
    beta, B = lumped
    m = ph_representation(law)[0].size
    return walk_tables(beta, B, reward=lumped_levels(m, q, r).astype(float))


@functools.lru_cache(maxsize=64)
def _replica_walk(law):
    """The kernel's tables of the replica law itself (fork-join runs each replica on its own host), None
    without a PH form."""
    rep = ph_representation(law)
    if rep is None:
        return None
    return walk_tables(*rep)


def _run(spec: SplitMerge, rng, plan) -> dict:
    from . import kernel as K

    workunits, horizon, warm_n, warm_t, dt, t_max, nb = plan
    law = spec.replica_law
    code, params = law.kernel_spec()
    hd = np.zeros(nb, np.int64)
    hl = np.zeros(nb, np.int64)
    args = (spec.hosts, spec.replicas, spec.quorum, spec.arrival_rate, int(code),
            np.ascontiguousarray(params, np.float64), warm_n, warm_t, workunits, horizon, dt, hd, hl, rng)
    t0 = time.perf_counter()
    if spec.model == "split_merge":
        kernel, walk = K.run_split_merge, _walk(law, spec.quorum, spec.replicas)
    else:
        kernel, walk = K.run_fork_join, _replica_walk(law)
    if walk is None:
        acc = kernel(*args)
    else:
        st = sfc64.state_of(rng.bit_generator)
        acc = kernel(*args, st, walk)
        sfc64.store_state(rng.bit_generator, st)
    return {"hd": hd, "hl": hl, "acc": acc, "wall_time": time.perf_counter() - t0}


def _dataset(spec, raws, reps, *, seed, plan) -> xr.Dataset:
    from .kernel import ACC_FIELDS

    workunits, horizon, warm_n, warm_t, dt, t_max, nb = plan
    A = np.array([r["acc"] for r in raws])
    f = {k: A[:, i] for i, k in enumerate(ACC_FIELDS)}
    n = f["recorded"].astype(np.int64)
    span = f["last_arrival"] - f["first_arrival"]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_d = np.where(n > 0, f["delay_sum"] / np.maximum(n, 1), np.nan)
        mean_l = np.where(n > 0, f["latency_sum"] / np.maximum(n, 1), np.nan)
        util = np.where(span > 0, f["held"] / (spec.hosts * span), np.nan)
        comp = np.where(span > 0, f["computing"] / (spec.hosts * span), np.nan)
        thr = np.where(span > 0, (n - 1) / span, np.nan)
    U = TIME_UNITS
    rep = ("replication",)
    ds = xr.Dataset(
        {
            "delay_count": (("replication", "t"), np.array([r["hd"] for r in raws]),
                            {"long_name": "recorded workunits with delay in [t, t + dt)", "units": "1"}),
            "latency_count": (("replication", "t"), np.array([r["hl"] for r in raws]),
                              {"long_name": "recorded workunits with latency in [t, t + dt)", "units": "1"}),
            "delay_overflow": (rep, f["delay_overflow"].astype(np.int64),
                               {"long_name": "recorded workunits with delay >= t_max + dt", "units": "1"}),
            "latency_overflow": (rep, f["latency_overflow"].astype(np.int64),
                                 {"long_name": "recorded workunits with latency >= t_max + dt", "units": "1"}),
            "workunits": (rep, n, {"long_name": "recorded workunits", "units": "1"}),
            "simulated_workunits": (rep, f["simulated"].astype(np.int64),
                                    {"long_name": "workunits simulated (warm-up included)", "units": "1"}),
            "delay_sum": (rep, f["delay_sum"], {"long_name": "sum of recorded delays", "units": U}),
            "delay_sumsq": (rep, f["delay_sumsq"], {"long_name": "sum of squared recorded delays",
                                                    "units": "time units squared"}),
            "latency_sum": (rep, f["latency_sum"], {"long_name": "sum of recorded latencies", "units": U}),
            "latency_sumsq": (rep, f["latency_sumsq"], {"long_name": "sum of squared recorded latencies",
                                                        "units": "time units squared"}),
            "mean_delay": (rep, mean_d, {"long_name": "mean delay (arrival to start of the first replica)",
                                         "units": U}),
            "mean_latency": (rep, mean_l, {"long_name": "mean latency (arrival to the q-th result)", "units": U}),
            "max_latency": (rep, f["latency_max"], {"long_name": "largest recorded latency", "units": U}),
            "host_utilisation": (rep, util, {
                "long_name": "fraction of host-time held by workunits (recorded workunits' host-time over "
                             "n x the recording window of arrivals)", "units": "1"}),
            "host_computing": (rep, comp, {
                "long_name": "fraction of host-time computing replicas until the quorum (same window)",
                "units": "1"}),
            "throughput": (rep, thr, {"long_name": "recorded workunits per unit time over the recording window "
                                                   "(= completion rate in steady state)", "units": "1/" + U}),
            "wall_time": (rep, np.array([r["wall_time"] for r in raws]),
                          {"long_name": "wall-clock time of the replication's simulation (not reproducible)",
                           "units": "s"}),
        },
        coords={
            "replication": (rep, np.asarray(reps, np.int64),
                            {"long_name": "replication index (seed spawn key)", "units": "1"}),
            "t": ("t", time_grid(t_max, dt), {"long_name": "time, left edge of histogram bin", "units": U}),
        },
    )
    entropy = _seeds.seed_entropy(seed, spec)
    ds.attrs.update(provenance(
        spec.to_dict(),
        title="Simulated delays and latencies of " + spec.describe(),
        model=spec.model,
        description=spec.describe(),
        spec=spec.to_json(),
        result_kind="simulation (estimate; CIs across replications)",
        workunits=int(workunits), horizon=float(horizon) if math.isfinite(horizon) else "none",
        warmup_workunits=int(warm_n), warmup_time=float(warm_t), dt=float(dt), t_max=float(t_max), seed=int(seed),
        seed_entropy=json.dumps([str(e) for e in entropy]),
        seed_recipe="numpy.random.SFC64(numpy.random.SeedSequence(entropy=seed_entropy, spawn_key=(replication,))); "
                    "seed_entropy = [seed, sha256(spec JSON)[:8] as big-endian integer]",
        histogram_convention="count[i]: value in [t_i, t_i + dt); CDF at right edges P(X < t_i + dt)",
    ))
    return ds


def simulate(spec: SplitMerge, workunits=None, horizon=None, *, warmup_workunits=None, warmup_time=None,
             replications=None, seed=0, dt=0.01, t_max=200.0, replication_offset=0, precision=None) -> xr.Dataset:
    """Simulate ``replications`` independent replications of ``spec`` (split-merge or fork-join), default 1,
    or as many as a ``precision`` target needs.

    workunits | horizon
        Record ``workunits`` workunits after ``warmup_workunits`` (default workunits // 10) discarded; or
        record the workunits arriving in [warmup_time (default horizon/10), horizon].
    dt, t_max
        Histogram bin width and last left edge (t_max a multiple of dt).
    seed, replication_offset
        Replication k (k = offset … offset + replications − 1) uses ``replication_rng(seed, spec, k, "sfc64")``.
    precision
        A :class:`sojourn.core.estimates.precision.Precision` or a dict ``{statistic: mean|percentile|cdf, at: …,
        relative_half_width: 0.05, max_replications: 200}`` on the latency (mean latency; its percentile at
        level ``at`` percent, default 99; its CDF at time ``at``): replications are added in batches until
        the t-interval across replications is that narrow, or the cap (:mod:`sojourn.core.estimates.precision`).
        Replaces ``replications``; adds ``replications_used``, ``precision_estimate``, ``achieved_half_width``,
        ``achieved_relative_half_width`` and ``stop_reason``; the data equal a fixed-count run of
        ``replications_used`` replications.
    """
    precision, replications, offset, seed = _precision.resolve(
        precision, replications, replication_offset, seed, t_max=t_max, default_at=DEFAULT_PERCENTILE,
        default_statistic="mean")
    plan = _plan(spec, workunits, horizon, warmup_workunits, warmup_time, dt, t_max)
    admit_cost(spec, plan, replications if precision is None else precision.max_replications)
    from .kernel import ACC_FIELDS

    edges = time_grid(plan[5], plan[4]) + plan[4]
    i_n, i_sum, i_over = (ACC_FIELDS.index(f) for f in ("recorded", "latency_sum", "latency_overflow"))

    def estimate(_, k, raw):
        acc = raw["acc"]
        mean = acc[i_sum] / acc[i_n] if acc[i_n] > 0 else np.nan
        return float(_precision.histogram_statistic(precision, raw["hl"], acc[i_over], edges, mean))

    def run(requests):
        return [_run(spec, _seeds.replication_rng(seed, spec, k, BIT_GENERATOR), plan)
                for _, k in steps(requests, "replications")]

    (raws,), (decision,) = replicate(run, [0], replications=replications, offset=offset, precision=precision,
                                     estimate=estimate)
    ds = _dataset(spec, raws, list(range(offset, offset + len(raws))), seed=seed, plan=plan)
    ds = with_precision(ds, decision, precision, TIME_UNITS, of="latency")
    return with_guard(ds, spec)


def admit_cost(spec, plan, replications: int) -> None:
    """The predicted time and memory of ``replications`` replications of ``plan`` (:func:`_plan`) admitted before
    anything is allocated (:func:`sojourn.split_merge.cost.simulate`)."""
    from ..core.checks.guard import admit_parts
    from .cost import simulate as simulate_cost

    workunits, horizon, warm_n = plan[:3]
    simulated = workunits + warm_n if workunits else spec.arrival_rate * horizon
    admit_parts(simulate_cost(spec, simulated, replications, plan[4], plan[5]))


def run_model(spec: SplitMerge) -> _runlength.RunModel:
    """The run-length guard's view of a spec (:mod:`sojourn.core.estimates.runlength`). Split-merge is M/G/c with
    c = ⌊n/r⌋ and G = S_{q:r} (split_merge.md §2(b)), Poisson workunits. Fork-join's hosts are n single
    servers fed λr replicas, each holding its host until it ends or is cancelled at the q-th result: for replicas
    started together min(X_i, S_{q:r}), of mean (Σ_{j≤q} E[S_{j:r}] + (r − q) E[S_{q:r}])/r, the replica law's SCV
    taken for its variability; its host load is below split-merge's when q > 1 (a q = r workunit holds r hosts for
    E[X] each, not E[S_{r:r}])."""
    from .order_stats import order_statistic_moments

    law, q, r = spec.replica_law, spec.quorum, spec.replicas
    if spec.model == "fork_join":
        means = [order_statistic_moments(law, j, r)[0] for j in range(1, q + 1)]
        hold = (sum(means) + (r - q) * means[-1]) / r
        rate = spec.arrival_rate * r
        cs = law.scv
        station = _runlength.Station(rate, spec.hosts, rate * hold / spec.hosts, 1.0, cs)
        return _runlength.RunModel((station,), rate, scv_service=cs)
    m1, m2, _ = order_statistic_moments(law, q, r)
    cs = max(m2 / m1**2 - 1.0, 0.0)
    station = _runlength.Station(spec.arrival_rate, spec.super_servers, spec.rho, 1.0, cs)
    return _runlength.RunModel((station,), spec.arrival_rate, scv_service=cs)


def recording_window(spec: SplitMerge, workunits: int, horizon: float, warm_t: float) -> float:
    """The time a replication records: ``workunits``/λ (a workunit count), or horizon − warm-up time."""
    return workunits / spec.arrival_rate if workunits else horizon - warm_t


def guard(spec: SplitMerge, window: float, replications: int) -> _runlength.Verdict:
    return _runlength.assess(run_model(spec), window, replications)


def with_guard(ds: xr.Dataset, spec: SplitMerge | None = None) -> xr.Dataset:
    """``ds`` with the run-length guard's variables for its run length and replication count."""
    spec = spec if spec is not None else SplitMerge.from_dict(json.loads(ds.attrs["spec"]))
    a = ds.attrs
    horizon = float(a["horizon"]) if a["horizon"] != "none" else math.inf
    window = recording_window(spec, int(a["workunits"]), horizon, float(a["warmup_time"]))
    k = int(np.asarray(ds["replications_used"]).ravel()[0]) if "replications_used" in ds else ds.sizes["replication"]
    ds.update(_runlength.variables(guard(spec, window, k), (), TIME_UNITS))  # one merge, not one per variable
    return ds


def simulate_replication(spec: SplitMerge, replication=0, seed=0, **kwargs) -> xr.Dataset:
    """Replication ``replication`` alone (the Dask task of the pipeline); equal to that replication of
    :func:`simulate` with the same arguments (apart from ``wall_time``)."""
    replication = integer_at_least("replication", replication, 0, allow_float=False)
    return simulate(spec, replications=1, seed=seed, replication_offset=replication, **kwargs)


#: the per-replication means :func:`replication_summary` returns
SUMMARY_SCALARS = ("mean_delay", "mean_latency", "host_utilisation", "host_computing", "throughput", "wall_time")


def replication_summary(spec: SplitMerge, workunits: int, warmup: int, k: int, *, seed: int, dt: float, t_max: float):
    """Replication k of ``spec`` (``workunits`` recorded after ``warmup`` discarded) as plain values, cheap to send
    back (the pipeline's Dask task): (means, latency counts, latency overflow, delay counts, delay overflow)."""
    ds = simulate_replication(spec, k, seed=seed, workunits=workunits, warmup_workunits=warmup, dt=dt, t_max=t_max)
    scal = {v: float(ds[v].values[0]) for v in SUMMARY_SCALARS}
    return scal, ds["latency_count"].values[0], int(ds["latency_overflow"].values[0]), \
        ds["delay_count"].values[0], int(ds["delay_overflow"].values[0])


def concat_replications(datasets) -> xr.Dataset:
    """Join replication datasets of one spec and settings, sorted by replication (duplicates are an error)."""
    ds = _concat(datasets, ("config", "workunits", "horizon", "warmup_workunits", "warmup_time", "dt", "t_max", "seed"))
    return with_guard(ds)
