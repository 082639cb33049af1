"""``simulate``: replications of a JSQ-PS spec as an ``xarray.Dataset`` of streamed statistics.

Dimensions: ``replication`` (the replication index = the seed spawn key), ``t`` (left edges of the
sojourn histogram bins, 0, dt, …, t_max), ``n`` (customers found at the chosen server by an
arrival, 0..occupancy_max, the last bin collecting everything above), and ``x`` (service-requirement
bins, only with ``service_bins``).

The unit of work for a distributed pipeline is :func:`simulate_replication` (cheap to call, only
picklable arguments); :func:`concat_replications` joins its results. A replication's random stream
depends only on (seed, spec, replication index) (:mod:`sojourn.core.laws.seeds`).
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from ..core.checks.timegrid import grid_size, time_grid
from ..core.checks.validate import integer_at_least
from ..core.estimates import precision as _precision
from ..core.estimates import runlength as _runlength
from ..core.estimates.replications import concat_replications as _concat
from ..core.estimates.replications import replicate, with_precision
from ..core.laws import seeds as _seeds
from ..core.runs.threads import ordered_map, threads_for
from .naming import DEFAULT_PERCENTILE
from .raw import BACKENDS, KERNELS  # noqa: F401  (re-exported)
from .raw import check_run as _check
from .raw import run_fast as _run_fast

if TYPE_CHECKING:
    import xarray as xr

UNITS = "time units (1/mu = mean service requirement scale of the spec)"


def _dataset(spec, raw: list[dict], reps: list[int], *, seed, horizon, warmup, cooldown, dt, t_max,
             occupancy_max, backend, kernel, service_bins) -> xr.Dataset:
    # xarray (with pandas) and the file module's imports here, not with this module: ``sojourn simulate`` loads the
    # kernels and starts the replications first, and imports these beside them (sojourn.core.runs.threads)
    import xarray as xr

    from ..core.files.io import provenance

    t = time_grid(t_max, dt)
    acc = np.array([r["acc"] for r in raw])
    count = acc[:, 0].astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, acc[:, 2] / np.maximum(count, 1), np.nan)
    window = horizon - cooldown - warmup
    units = UNITS
    ds = xr.Dataset(
        {
            "count": (("replication", "t"), np.array([r["hist"] for r in raw], np.int64),
                      {"long_name": "number of recorded customers with sojourn in [t, t + dt)", "units": "1"}),
            "overflow": ("replication", acc[:, 1].astype(np.int64),
                         {"long_name": "number of recorded customers with sojourn >= t_max + dt", "units": "1"}),
            "n_customers": ("replication", count,
                            {"long_name": "number of recorded customers (arrived in the window)", "units": "1"}),
            "sum": ("replication", acc[:, 2], {"long_name": "sum of recorded sojourn times", "units": units}),
            "sumsq": ("replication", acc[:, 3], {"long_name": "sum of squared recorded sojourn times",
                                                 "units": "time units squared"}),
            "mean": ("replication", mean, {"long_name": "mean sojourn time", "units": units}),
            "max": ("replication", acc[:, 4], {"long_name": "maximum sojourn time", "units": units}),
            "occupancy_at_arrival": (("replication", "n"), np.array([r["occ"] for r in raw], np.int64),
                                     {"long_name": "recorded arrivals that found n customers at the chosen server "
                                                   "(last bin: n >= occupancy_max)", "units": "1"}),
            "mean_number_per_server": ("replication", np.array([r["area"] for r in raw]) / (spec.R * window),
                                       {"long_name": "time-average number of customers per server over the window",
                                        "units": "1"}),
            "events": ("replication", np.array([r["events"] for r in raw], np.int64),
                       {"long_name": "arrivals + departures simulated (-1: not counted by the backend)",
                        "units": "1"}),
            "wall_time": ("replication", np.array([r["wall_time"] for r in raw]),
                          {"long_name": "wall-clock time of the replication's simulation (not reproducible; "
                                        "a process's first fast call includes loading the compiled kernel)",
                           "units": "s"}),
        },
        coords={
            "replication": ("replication", np.asarray(reps, np.int64),
                            {"long_name": "replication index (seed spawn key)", "units": "1"}),
            "t": ("t", t, {"long_name": "sojourn time, left edge of histogram bin", "units": units}),
            "n": ("n", np.arange(occupancy_max + 1), {"long_name": "customers found at the chosen server",
                                                      "units": "1"}),
        },
    )
    if service_bins is not None:
        w, K_ = service_bins
        ds = ds.assign_coords(x=("x", np.round(np.arange(K_) * w, 12),
                                 {"long_name": "service requirement, left edge of bin", "units": units}))
        ds["service_count"] = (("replication", "x"), np.array([r["cx_n"] for r in raw], np.int64),
                               {"long_name": "recorded customers with service requirement in [x, x + dx)",
                                "units": "1"})
        ds["service_sojourn_sum"] = (("replication", "x"), np.array([r["cx_s"] for r in raw]),
                                     {"long_name": "sum of sojourns by service-requirement bin", "units": units})
        ds["service_sojourn_sumsq"] = (("replication", "x"), np.array([r["cx_ss"] for r in raw]),
                                       {"long_name": "sum of squared sojourns by service-requirement bin",
                                        "units": "time units squared"})
    entropy = _seeds.seed_entropy(seed, spec)
    ds.attrs.update(
        provenance(
            spec.to_dict(),
            title="Simulated sojourn times of " + spec.describe(),
            model=spec.describe(),
            spec=spec.to_json(),
            backend=backend,
            kernel=kernel,
            horizon=float(horizon),
            warmup=float(warmup),
            cooldown=float(cooldown),
            dt=float(dt),
            t_max=float(t_max),
            occupancy_max=int(occupancy_max),
            seed=int(seed),
            seed_entropy=json.dumps([str(e) for e in entropy]),
            seed_recipe="numpy.random.SeedSequence(entropy=seed_entropy, spawn_key=(replication,)); "
                        "seed_entropy = [seed, sha256(spec.seed_json())[:8] as big-endian integer] (the spec JSON "
                        "with R named servers)",
            histogram_convention="count[i]: sojourn in [t_i, t_i + dt); CDF at right edges P(S < t_i + dt)",
        )
    )
    return ds


# ---------------------------------------------------------------------------------------------
# public API
def simulate_replication(spec, replication=0, seed=0, *, horizon=160_000.0, warmup=None, cooldown=None,
                         backend="fast", dt=0.01, t_max=182.32, occupancy_max=200, kernel="auto",
                         service_bins=None) -> xr.Dataset:
    """One replication (index ``replication``) of ``spec`` as a Dataset with a length-1 ``replication`` dim.

    Bit-identical to replication ``replication`` of :func:`simulate` with the same arguments (apart from
    ``wall_time``). Arguments as in :func:`simulate`.
    """
    replication = integer_at_least("replication", replication, 0, allow_float=False)
    return simulate(spec, horizon=horizon, warmup=warmup, cooldown=cooldown, replications=1, seed=seed,
                    backend=backend, dt=dt, t_max=t_max, occupancy_max=occupancy_max,
                    replication_offset=replication, kernel=kernel, service_bins=service_bins)


def simulate(spec, horizon=160_000.0, warmup=None, cooldown=None, replications=None, seed=0, backend="fast",
             dt=0.01, t_max=182.32, occupancy_max=200, replication_offset=0, kernel="auto",
             service_bins=None, max_workers=None, precision=None) -> xr.Dataset:
    """Simulate ``replications`` independent replications of ``spec`` (a stable :class:`JSQPS`), default 1,
    or as many as a ``precision`` target needs.

    horizon, warmup, cooldown
        Run length T, warm-up W (default 5 % of T, ``sojourn.core.estimates.replications.WARMUP_FRACTION``) and
        cool-down C (default C = W); customers arriving in (W, T − C) are recorded and followed to departure.
    seed, replication_offset
        Replication k (k = replication_offset, …, replication_offset + replications − 1) uses the stream
        ``sojourn.core.laws.seeds.replication_seed_sequence(seed, spec, k)``.
    backend
        ``"fast"`` (numba kernels, replications in threads of this process, ``max_workers`` at a time, default
        min(replications, CPUs); 0 or 1: one after the other; the results do not depend on it) or ``"ciw"``
        (Ciw 3.2, replications in spawned worker processes, ``max_workers`` at a time, default
        min(replications, CPUs); scripts must use the ``if __name__ == "__main__":`` guard). ``max_workers=0``
        runs Ciw in the calling process (only reproducible if no other thread draws from Python's global
        ``random``).
    dt, t_max
        Histogram bin width and last left edge (a multiple of dt): t_max/dt + 1 bins
        (:func:`sojourn.core.checks.timegrid.time_grid`).
    occupancy_max
        Last bin of the occupancy-at-arrival histogram (collects n ≥ occupancy_max).
    kernel
        ``"auto"`` (exact exponential kernel for M/M/R plain PS, else general), ``"general"``,
        ``"exponential"``.
    service_bins
        ``(width, number)``: also stream sojourn count/sum/sumsq by service-requirement bin
        (general kernel only; for the E[S | x] = x/(1 − ρ) check).
    precision
        A :class:`sojourn.core.estimates.precision.Precision` or a dict like the config block
        ``{statistic: percentile|mean|cdf, at: 99.99, relative_half_width: 0.05, max_replications: 200}``
        (percentile level in percent, default 99.99; ``cdf``: F at time ``at``): replications 0, 1, … are
        added in batches until the t-interval of the statistic across replications is that narrow, or
        the cap is reached (:mod:`sojourn.core.estimates.precision`). Replaces ``replications``; the dataset gains
        ``replications_used``, ``precision_estimate``, ``achieved_half_width``,
        ``achieved_relative_half_width`` and ``stop_reason``, and its data equal a fixed-count run of
        ``replications_used`` replications.
    """
    return simulate_many([spec], horizon=horizon, warmup=warmup, cooldown=cooldown, replications=replications,
                         seed=seed, backend=backend, dt=dt, t_max=t_max, occupancy_max=occupancy_max,
                         replication_offset=replication_offset, kernel=kernel, service_bins=service_bins,
                         max_workers=max_workers, precision=precision)[0]


def simulate_many(specs, horizon=160_000.0, warmup=None, cooldown=None, replications=None, seed=0,
                  backend="fast", dt=0.01, t_max=182.32, occupancy_max=200, replication_offset=0, kernel="auto",
                  service_bins=None, max_workers=None, precision=None) -> list[xr.Dataset]:
    """:func:`simulate` for several specs with shared settings; one Dataset per spec, in order.

    Identical to calling :func:`simulate` per spec; with the Ciw backend all replications of all specs
    share one pool of worker processes (process start-up is paid once). With ``precision`` every spec
    runs to its own target (each round simulates the next batch of every spec not yet stopped).
    """
    specs = list(specs)
    if not specs:
        raise ValueError("specs must be a non-empty sequence of JSQPS specs")
    precision, replications, replication_offset, seed = _precision.resolve(
        precision, replications, replication_offset, seed, t_max=t_max, default_at=DEFAULT_PERCENTILE)
    if max_workers is not None:
        max_workers = integer_at_least("max_workers", max_workers, 0, allow_float=False)
    plans = []
    for spec in specs:
        checked = _check(spec, horizon, warmup, cooldown, dt, t_max, backend, occupancy_max, kernel, service_bins)
        plans.append(checked)
    admit_cost(specs, plans, replications if precision is None else precision.max_replications, backend, max_workers)

    def run(requests):  # [(spec index, replication k)] -> raw results, in order
        if backend == "fast":
            def one(request):
                i, k = request
                H, W, C, dt_, tm, om, kern, sb = plans[i]
                return _run_fast(specs[i], kern, _seeds.replication_rng(seed, specs[i], k), W, H - C, dt_,
                                 grid_size(tm, dt_), om, sb)

            return ordered_map(one, requests, "replications", threads_for(len(requests), max_workers))
        from .ciw_backend import run_replications

        tasks = [(specs[i].to_json(), _seeds.python_seed(_seeds.replication_seed_sequence(seed, specs[i], k)),
                  *plans[i][:3], plans[i][3], grid_size(plans[i][4], plans[i][3]), plans[i][5]) for i, k in requests]
        return run_replications(tasks, max_workers=max_workers)

    def estimate(i, k, raw):
        dt_ = plans[i][3]
        edges = time_grid(plans[i][4], dt_) + dt_
        acc = raw["acc"]
        mean = acc[2] / acc[0] if acc[0] > 0 else np.nan
        return float(_precision.histogram_statistic(precision, raw["hist"], acc[1], edges, mean))

    raws, decisions = replicate(run, range(len(specs)), replications=replications, offset=replication_offset,
                                precision=precision, estimate=estimate)
    out = []
    for spec, raw, d, (H, W, C, dt_, tm, om, kern, sb) in zip(specs, raws, decisions, plans, strict=True):
        ds = _dataset(spec, raw, list(range(replication_offset, replication_offset + len(raw))), seed=seed, horizon=H,
                      warmup=W, cooldown=C, dt=dt_, t_max=tm, occupancy_max=om, backend=backend, kernel=kern,
                      service_bins=sb)
        ds = with_precision(ds, d, precision, UNITS)
        out.append(with_guard(ds, spec))
    return out


def admit_cost(specs, plans, replications: int, backend: str, max_workers=None) -> None:
    """The predicted time and memory of simulating ``specs`` (their checked run ``plans``) admitted before anything
    is allocated (:func:`sojourn.core.checks.guard.admit_parts`; :func:`sojourn.jsq_ps.cost.simulate`)."""
    import os

    from ..core.checks.guard import Estimate, admit_parts
    from . import cost

    if backend == "ciw":
        workers = 1 if max_workers == 0 else (max_workers or os.cpu_count() or 1)
    else:
        workers = threads_for(replications, max_workers)
    parts = []
    for spec, (H, _, _, dt_, tm, om, _, sb) in zip(specs, plans, strict=True):
        parts += cost.simulate(spec, H, replications, backend, dt_, tm, workers)
        parts.append(Estimate(0.0, 8.0 * replications * ((om + 1) + (3 * sb[1] if sb is not None else 0)),
                              "occupancy_max" if sb is None else "service_bins",
                              "the occupancy and service histograms"))
    admit_parts(parts)


def concat_replications(datasets) -> xr.Dataset:
    """Join replication datasets (e.g. from :func:`simulate_replication`) sorted by replication index.

    All inputs must come from the same spec and settings (identical ``config``/window/grid attrs);
    duplicate replication indices are an error. The run-length guard is judged anew for the joined count.
    """
    ds = _concat(datasets, ("config", "backend", "kernel", "horizon", "warmup", "cooldown", "dt", "t_max", "seed",
                            "occupancy_max"))
    return with_guard(ds)


def run_model(spec) -> _runlength.RunModel:
    """The run-length guard's view of a JSQ-PS spec (:mod:`sojourn.core.estimates.runlength`). JSQ (and JSQ(d), d ≥ 2)
    pools its servers: one c = R station, like M/G/R. Random dispatch (and JSQ(1)) splits the stream into R
    independent single servers, each fed by a thinned stream (SCV 1 − 1/R + c_a²/R); round-robin feeds each
    server every R-th arrival (SCV c_a²/R). The service SCV enters as for FCFS: PS is insensitive in its mean,
    not in its dynamics, so this errs towards longer runs for variable service."""
    lam, R, rho = spec.arrival_rate, spec.R, spec.rho
    ca, cs = spec.interarrival.scv, spec.service.scv
    if spec.dispatch == "jsq" or (spec.dispatch == "jsq-d" and spec.choices >= 2):
        station = _runlength.Station(lam, R, rho, ca, cs)
    else:
        split = ca / R if spec.dispatch == "round-robin" else 1.0 - 1.0 / R + ca / R
        station = _runlength.Station(lam / R, 1, rho, split, cs, copies=R)
    return _runlength.RunModel((station,), lam, scv_service=cs)


def with_guard(ds: xr.Dataset, spec=None) -> xr.Dataset:
    """``ds`` with the run-length guard's variables (``run_valid``, ``run_validity_reason``,
    ``relaxation_time``, ``predicted_relative_se``, ``needed_window``) for its window and replication count
    (``replications_used`` where a precision target padded the axis)."""
    from .model import JSQPS

    spec = spec if spec is not None else JSQPS.from_dict(json.loads(ds.attrs["spec"]))
    window = float(ds.attrs["horizon"]) - float(ds.attrs["warmup"]) - float(ds.attrs["cooldown"])
    k = int(np.asarray(ds["replications_used"]).ravel()[0]) if "replications_used" in ds else ds.sizes["replication"]
    verdict = _runlength.assess(run_model(spec), window, k)
    ds.update(_runlength.variables(verdict, (), UNITS))  # one merge (a merge per variable took 5x the time)
    return ds


#: the percentiles of :func:`summary` (and of ``sojourn simulate``), in percent
SUMMARY_PERCENTILES = (99.0, 99.9, 99.99, 99.999)


def summary(ds: xr.Dataset, percentiles=SUMMARY_PERCENTILES, confidence: float | None = None) -> xr.Dataset:
    """Sojourn-time percentiles (in percent) of a :func:`simulate` dataset with CIs across its replications and
    the customers beyond each, and the CIs of the mean sojourn and of the mean number per server
    (:func:`sojourn.core.estimates.summary.summary_dataset`: ``sojourn_percentile`` and its ``_mean``, ``_ci_low``,
    ``_ci_high``, ``_ci_method``, ``_too_few``; ``sojourn_beyond``; ``mean_ci_low`` …); merge it into ``ds``
    to store it beside the histograms. ``confidence``: the CIs' level (default ``DEFAULT_CONFIDENCE``)."""
    from ..core.checks.config import DEFAULT_CONFIDENCE
    from ..core.estimates.summary import summary_dataset

    confidence = DEFAULT_CONFIDENCE if confidence is None else confidence
    return summary_dataset(ds["count"].values, ds["overflow"].values, ds["t"].values, float(ds.attrs["dt"]),
                           percentiles, prefix="sojourn", replication=ds["replication"].values,
                           means={"mean": ds["mean"].values,
                                  "mean_number_per_server": ds["mean_number_per_server"].values},
                           confidence=confidence, units=ds["t"].attrs.get("units", ""))
