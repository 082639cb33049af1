"""The restart-rate question: g* of the product form beside the simulated timeout optimum.

:func:`optimise` computes g* (:func:`sojourn.restart.solve.optimal_signal_rate`), simulates the
network at g* under signal semantics and under exponential timeouts of rate g*, and sweeps
deterministic timeouts τ (a logarithmic grid around 1/g* unless given) to find the τ that minimises
the mean and the 99th-percentile response time, each with Student-t CIs over replications. The result
is one ``xarray.Dataset``; :func:`report_lines` formats it for the terminal.

Trust at the edges: a timeout far below the service time restarts jobs faster than they finish, and the queue
grows without bound; such a run is stopped once more than ``max_jobs`` jobs are present
(:func:`default_max_jobs`, from the product form's E[N]) and its τ is reported unstable, never as a value.
A percentile optimum is taken only over the τ with at least ``TAIL_MIN`` jobs per replication beyond the
percentile; the others are named with the run length they need. Before the sweep :func:`predict` times a
short pilot of every point, and the CLI refuses a sweep predicted to take longer than ``--max-time``.
"""
from __future__ import annotations

import inspect
import json
import math
import time

import numpy as np
import xarray as xr

from ..core.checks.config import DEFAULT_CONFIDENCE
from ..core.checks.validate import integer_at_least, positive_finite, probability_open
from ..core.estimates.stats import BIN_NOTE, TAIL_MIN, format_with_ci, mean_ci, percentiles_per_replication
from ..core.estimates.summary import round_up
from ..core.files.io import provenance
from ..core.laws.distributions import Deterministic, Exponential
from .model import Network
from .simulate import SimulationSpec, simulate
from .solve import optimal_signal_rate, solve

#: the bin width of :func:`sojourn.restart.simulate.simulate` when ``sim`` does not give one
SIM_DT = inspect.signature(simulate).parameters["dt"].default


#: the statistics of one simulated point, in this order (:func:`_sim_stats`)
_STATS = ("mean", "mean_hw", "pct", "pct_hw", "beyond", "unstable", "recorded")


def _sim_stats(ds, confidence, percentile):
    """(mean, half-width, percentile, half-width, jobs per replication beyond the percentile, replications
    stopped as unstable, recorded jobs per replication). A point with a stopped replication has NaN statistics:
    the others alone would describe a queue that did not happen."""
    q, beyond = percentiles_per_replication(ds["count"].values, ds["overflow"].values, ds["t"].values,
                                            float(ds.attrs["dt"]), percentile)
    unstable = int((ds["unstable"].values > 0).sum())
    recorded = float(ds["n_customers"].values.mean())
    if unstable:
        return (np.nan,) * 5 + (float(unstable), recorded)
    m, h = mean_ci(ds["mean"].values, confidence=confidence)
    pm, ph = mean_ci(q[:, 0], confidence=confidence)
    few = beyond[:, 0].mean() if (beyond[:, 0] > 0).all() else 0.0  # none beyond in a replication: its maximum
    return float(m), float(h), float(pm), float(ph), float(few), 0.0, recorded


def default_taus(g_star: float, points: int = 13, span: float = 10.0) -> np.ndarray:
    """``points`` timeouts log-spaced over [1/(span g*), span/g*] (around the signal model's 1/g*)."""
    g = positive_finite("g_star", g_star)
    return np.geomspace(1.0 / (span * g), span / g, integer_at_least("points", points, 2))


def default_max_jobs(mean_number: float, arrivals: float, floor: int = 50) -> int:
    """Jobs present beyond which a run counts as unstable: m with P(N > m) · arrivals ≤ 1e-3 for a geometric
    N of mean ``mean_number`` (the M/M/1 law, P(N > m) = ρ^(m+1), ρ = E[N]/(1 + E[N])), at least ``floor``.

    A stationary run of ``arrivals`` jobs then reaches it with probability about 1e-3; a timeout that restarts
    jobs faster than they finish reaches it after ~m/λ time units instead of grinding on to the kernel's 500
    (the events of such a run grow as m², each costs O(m))."""
    n = float(mean_number)
    if not (np.isfinite(n) and n > 0):
        return floor
    rho = n / (1.0 + n)
    return max(floor, int(math.ceil(math.log(max(arrivals, 1.0) / 1e-3) / -math.log(rho))))


def _points(net: Network, g: float, queue, taus) -> list[tuple[str, SimulationSpec]]:
    """The runs of :func:`optimise`: signals at g*, exponential timeouts of rate g*, then each deterministic τ."""
    no_signals = net
    for i in range(len(net.queues)):
        no_signals = no_signals.with_signal_rate(0.0, i)
    return ([("signal", SimulationSpec(net.with_signal_rate(g, queue), "signal")),
             ("timeout_exponential", SimulationSpec(no_signals, "timeout", Exponential(g)))]
            + [(f"tau = {t:.4g}", SimulationSpec(no_signals, "timeout", Deterministic(float(t)))) for t in taus])


#: the pilot of :func:`predict` simulates this fraction of the horizon (one replication per point)
PILOT_FRACTION = 0.05


def predict(points, replications: int, seed: int, sim: dict, max_jobs: int) -> np.ndarray:
    """Predicted wall-clock seconds of each point: one replication over ``PILOT_FRACTION`` of the run window,
    its kernel time scaled by the horizon and replications (a pilot stopped as unstable is scaled by replications
    only: an unstable run stops at ``max_jobs`` whatever the horizon)."""
    f = PILOT_FRACTION
    H = float(sim.get("horizon", 200_000.0))
    W = sim.get("warmup")
    C = sim.get("cooldown")
    pilot = dict(sim, horizon=H * f, warmup=None if W is None else W * f, cooldown=None if C is None else C * f)
    simulate(points[0][1], replications=1, seed=seed, **dict(pilot, horizon=pilot["horizon"] * 1e-3,
             warmup=None, cooldown=None), max_jobs=max_jobs)  # loads the compiled kernel before anything is timed
    out = []
    for _, spec in points:
        t0 = time.perf_counter()
        ds = simulate(spec, replications=1, seed=seed, max_jobs=max_jobs, **pilot)
        kernel = float(ds["wall_time"].sum())
        overhead = time.perf_counter() - t0 - kernel  # checks and the dataset: once per point, not per event
        out.append(overhead + kernel * replications * (1.0 if int(ds["unstable"].max()) else 1.0 / f))
    return np.asarray(out)


def _seconds(x: float) -> str:
    return f"{x:.0f} s" if x < 120 else f"{x / 60:.0f} min"


def _check_taus(taus: np.ndarray) -> None:
    """Each timeout a deterministic law's mean within what a law takes, none given twice."""
    for t in taus.tolist():  # each is a deterministic timeout law's mean: within what a law takes
        try:
            Deterministic(float(t))
        except ValueError as exc:
            raise ValueError(f"taus: {t:g}: {exc}") from None
    if len(set(taus.tolist())) != len(taus):
        dup = next(t for t in taus.tolist() if taus.tolist().count(t) > 1)
        raise ValueError(f"taus: {dup:g} is given twice in {' '.join(f'{t:g}' for t in taus)}; give each timeout once")


def _run_points(points, replications, seed, max_jobs, sim, confidence, percentile, predicted, progress) -> list:
    """The simulated statistics (:func:`_sim_stats`) of every point, one progress line a point (what it took, the
    time left: from the pilot's shares where there was one)."""
    stats, t_start, spent = [], time.perf_counter(), 0.0
    for i, (label, spec) in enumerate(points):
        t0 = time.perf_counter()
        ds = simulate(spec, replications=replications, seed=seed, max_jobs=max_jobs, **sim)
        stats.append(_sim_stats(ds, confidence, percentile))
        took = time.perf_counter() - t0
        spent += took
        if progress is not None:
            left = ""
            if i + 1 < len(points):
                if predicted is not None:  # the pilot's shares, scaled by how this machine keeps up with them now
                    rest = spent / max(float(predicted[:i + 1].sum()), 1e-9) * float(predicted[i + 1:].sum())
                else:
                    rest = spent / (i + 1) * (len(points) - i - 1)
                left = f", about {_seconds(rest)} left"
            bad = f" (unstable in {int(stats[-1][5])} of {replications})" if stats[-1][5] else ""
            progress(f"[{i + 1}/{len(points)}] {label}: {took:.1f} s{bad}; "
                     f"elapsed {_seconds(time.perf_counter() - t_start)}{left}")
    return stats


def _point_variables(opt, point: dict) -> dict:
    """Data variables at g*: the product form's optimum and the simulated values under both semantics."""
    g, sem = opt.signal_rate, list(point)
    return {
        "g_star": ((), g, {"long_name": "optimal signal rate of the product form", "units": "1/time"}),
        "response_time_pf": ((), opt.response_time, {"long_name": "product-form E[T] at g*", "units": "time"}),
        "response_time_pf_no_restart": ((), opt.response_time_without,
            {"long_name": "product-form E[T] without signals", "units": "time"}),
        "sim_response_time": ("semantics", [point[s][0] for s in sem],
            {"long_name": "simulated mean response time at rate g*", "units": "time"}),
        "sim_response_time_half_width": ("semantics", [point[s][1] for s in sem],
            {"long_name": "half-width of its Student-t CI", "units": "time"}),
        "sim_percentile": ("semantics", [point[s][2] for s in sem],
            {"long_name": "simulated response-time percentile at rate g*", "units": "time"}),
        "sim_percentile_half_width": ("semantics", [point[s][3] for s in sem],
            {"long_name": "half-width of its CI (replications)", "units": "time"}),
    }


def _sweep_variables(point: dict, sweep, taus, best_mean, best_pct, needed) -> dict:
    """Data variables of the τ sweep (and the horizons that would give each point enough jobs in the tail)."""
    sem = list(point)
    return {
        "tau_response_time": ("tau", sweep[:, 0],
            {"long_name": "mean response time, deterministic timeout tau", "units": "time"}),
        "tau_response_time_half_width": ("tau", sweep[:, 1], {"long_name": "CI half-width", "units": "time"}),
        "tau_percentile": ("tau", sweep[:, 2], {"long_name": "response-time percentile, timeout tau", "units": "time"}),
        "tau_percentile_half_width": ("tau", sweep[:, 3], {"long_name": "CI half-width", "units": "time"}),
        "sim_percentile_beyond": (
            "semantics",
            [point[s][4] for s in sem],
            {
                "long_name": "jobs per replication at or beyond the percentile (mean; 0 if "
                "none in some replication)",
                "units": "1",
            },
        ),
        "tau_percentile_beyond": (
            "tau",
            sweep[:, 4],
            {
                "long_name": "jobs per replication at or beyond the "
                "percentile (mean; 0 if none in some "
                "replication)",
                "units": "1",
            },
        ),
        "tau_best_mean": ((), float(taus[best_mean]),
            {"long_name": "tau of the sweep with the smallest mean response time", "units": "time"}),
        "tau_best_percentile": (
            (),
            np.nan if best_pct is None else float(taus[best_pct]),
            {
                "long_name": "tau of the sweep with the smallest percentile, among those with "
                f">= {TAIL_MIN} jobs per replication beyond it (NaN: none)",
                "units": "time",
            },
        ),
        "tau_unstable": (
            "tau",
            sweep[:, 5].astype(np.int64),
            {
                "long_name": "replications stopped with more than max_jobs jobs present (or too "
                "many events): the timeout restarts jobs faster than they finish",
                "units": "1",
            },
        ),
        "tau_recorded": ("tau", sweep[:, 6], {"long_name": "recorded jobs per replication (mean)", "units": "1"}),
        "sim_percentile_needed_horizon": (
            "semantics",
            needed[:2],
            {
                "long_name": f"--horizon giving >= {TAIL_MIN} jobs per replication "
                "beyond the percentile (NaN: has them, or unstable)",
                "units": "time",
            },
        ),
        "tau_percentile_needed_horizon": (
            "tau",
            needed[2:],
            {
                "long_name": f"--horizon giving >= {TAIL_MIN} jobs per replication "
                "beyond the percentile (NaN: has them, or unstable)",
                "units": "time",
            },
        ),
    }


def optimise(net: Network, *, queue=None, bounds=(0.0, 100.0), taus=None, replications: int = 10, seed: int = 0,
             confidence: float = DEFAULT_CONFIDENCE, percentile: float = 0.99, sim: dict | None = None,
             max_jobs: int | None = None, cost_check=None, progress=None) -> xr.Dataset:
    """g* and E[T](g*) (product form), the simulated E[T] at g* under both semantics, and the τ sweep.

    ``sim``: keyword arguments of :func:`sojourn.restart.simulate.simulate` (horizon, warmup, dt, t_max …).
    The timeouts of the sweep are deterministic; ``taus`` defaults to :func:`default_taus` (g*).
    ``max_jobs``: a run with more jobs present is stopped and its point reported unstable (default
    :func:`default_max_jobs` of the product form at g*). ``cost_check(seconds, what)``: called before the sweep
    with the time :func:`predict` gives it (it raises to refuse, e.g. :func:`sojourn.core.checks.inputs.check_cost`;
    None: no pilot). ``progress``: called with one line per finished point (what it took, the time left).
    """
    sim = dict(sim or {})
    replications = integer_at_least("replications", replications, 2, allow_float=False)
    confidence = probability_open("confidence", confidence)
    percentile = probability_open("percentile", percentile)
    opt = optimal_signal_rate(net, queue=queue, bounds=bounds)
    g = opt.signal_rate
    if not g > 0:
        raise ValueError(f"bounds: the optimal signal rate is {g:g} (no restarts); nothing to compare with timeouts")
    taus = default_taus(g) if taus is None else np.asarray([positive_finite("taus", float(t)) for t in taus])
    _check_taus(taus)
    if max_jobs is None:
        arrivals = float(net.layout.arrival.sum()) * float(sim.get("horizon", 200_000.0))
        max_jobs = default_max_jobs(float(solve(net.with_signal_rate(g, queue)).mean_number.sum()), arrivals)
    max_jobs = integer_at_least("max_jobs", max_jobs, 1)
    points = _points(net, g, queue, taus)
    from .simulate import admit_cost

    admit_cost([spec for _, spec in points], float(sim.get("horizon", 200_000.0)), replications,
               float(sim.get("dt", SIM_DT)), float(sim.get("t_max", 200.0)), max_jobs,
               float(sim.get("max_events", 200_000_000)))  # from the product form's flows, before any pilot
    predicted = None
    if cost_check is not None:
        predicted = predict(points, replications, seed, sim, max_jobs)
        slow = sorted(range(len(points)), key=lambda i: -predicted[i])[:3]
        cost_check(float(predicted.sum()),
                   f"{len(points)} runs x {replications} replications of horizon {sim.get('horizon', 200_000.0):g}, "
                   f"timed on a pilot; slowest " + ", ".join(f"{points[i][0]} ~{_seconds(predicted[i])}" for i in slow))
    stats = _run_points(points, replications, seed, max_jobs, sim, confidence, percentile, predicted, progress)
    point = {label: st for (label, _), st in zip(points[:2], stats[:2], strict=True)}
    sweep = np.array(stats[2:])
    if not np.isfinite(sweep[:, 0]).any():
        raise ValueError("taus: the timeout semantics was unstable (or the percentile beyond t_max) at every tau")
    best_mean = int(np.nanargmin(sweep[:, 0]))
    judged = np.isfinite(sweep[:, 2]) & (sweep[:, 4] >= TAIL_MIN)  # a percentile with enough jobs beyond it
    best_pct = int(np.nanargmin(np.where(judged, sweep[:, 2], np.nan))) if judged.any() else None
    # the horizon at which a point short of jobs beyond the percentile would have TAIL_MIN per replication
    # (the recorded window scales with it; 1.2: a margin, at exactly the estimate half the runs fall short)
    H = float(sim.get("horizon", 200_000.0))
    allst = np.array(stats)
    short = np.isfinite(allst[:, 2]) & (allst[:, 4] < TAIL_MIN)  # (NaN: unstable, or beyond t_max: not a length)
    needed = np.array([round_up(H * 1.2 * TAIL_MIN / (1.0 - percentile) / r) if sh and r > 0 else np.nan
                       for sh, r in zip(short, allst[:, 6], strict=True)])
    sem = list(point)
    ds = xr.Dataset(
        {**_point_variables(opt, point), **_sweep_variables(point, sweep, taus, best_mean, best_pct, needed)},
        coords={
            "semantics": ("semantics", sem,
                {"long_name": "restart semantics at rate g*: signals of rate g*, exponential timeouts of rate g*"}),
            "tau": ("tau", np.asarray(taus, float), {"long_name": "deterministic timeout", "units": "time"}),
        },
    )
    ds.attrs.update(provenance(net.to_dict(), title=f"Optimal restart rate of {net.name}", model=net.describe(),
                               spec=net.to_json(), queue=opt.queue, bounds=list(opt.bounds), replications=replications,
                               seed=seed, confidence=confidence, percentile=percentile, simulation=sim,
                               max_jobs=int(max_jobs)))
    return ds


def _pm(m: float, h: float) -> str:
    return format_with_ci(m, m - h, m + h)


def _pct(d, prefix: str, dt: float | None = None) -> str:
    """A percentile with its CI (``± dt (bin)`` where the CI is narrower than the histogram's bin width ``dt``),
    or "too few jobs" (and the --horizon that gives enough) when fewer than TAIL_MIN per replication lie beyond
    it."""
    beyond, need = float(d[f"{prefix}_percentile_beyond"]), float(d[f"{prefix}_percentile_needed_horizon"])
    if not np.isfinite(float(d[f"{prefix}_percentile"])):
        return "beyond --t-max in some replication: raise --t-max"
    if beyond < TAIL_MIN:
        hint = f"; needs --horizon >= {need:,.0f}" if np.isfinite(need) else ""
        return f"too few jobs ({beyond:,.0f} beyond it per replication, < {TAIL_MIN}){hint}"
    m, h = float(d[f"{prefix}_percentile"]), float(d[f"{prefix}_percentile_half_width"])
    return format_with_ci(m, m - h, m + h, resolution=dt)


def _tau_list(taus) -> str:
    return ", ".join(f"{t:.4g}" for t in taus)


def report_lines(ds: xr.Dataset) -> list[str]:
    """The optimisation result as terminal lines (each mean and percentile to the digits its CI supports)."""
    conf = float(ds.attrs["confidence"])
    pct = 100 * float(ds.attrs["percentile"])
    g = float(ds["g_star"])
    reps = int(ds.attrs["replications"])
    sim = ds.attrs.get("simulation", "{}")  # the simulate() keywords, as JSON in the attributes
    dt = float((json.loads(sim) if isinstance(sim, str) else dict(sim)).get("dt", SIM_DT))  # the histograms' bin width
    out = [f"g* = {g:.6g}  (queue {ds.attrs['queue']}, bounds {ds.attrs['bounds']})",
           f"product form  E[T](g*) = {float(ds['response_time_pf']):.6g}  (without restarts "
           f"{float(ds['response_time_pf_no_restart']):.6g})",
           f"simulated: {100 * conf:g}% Student-t CIs across {reps} replications; a percentile "
           f"needs >= {TAIL_MIN} jobs per replication beyond it"]
    for s in ds["semantics"].values.tolist():
        d = ds.sel(semantics=s)
        out.append(
            f"simulated {s:<20} E[T] = {_pm(float(d['sim_response_time']), float(d['sim_response_time_half_width']))}"
            f"   p{pct:g} = {_pct(d, 'sim', dt)}"
        )
    max_jobs = ds.attrs.get("max_jobs")
    out.append("deterministic timeouts tau:")
    for t in ds["tau"].values:
        d = ds.sel(tau=t)
        if int(d["tau_unstable"]):
            out.append(f"  tau = {t:9.4g}   unstable: stopped in {int(d['tau_unstable'])} of {reps} replications "
                       f"(more than {max_jobs} jobs present, see --max-jobs): timeouts restart jobs faster than "
                       "they finish")
            continue
        out.append(
            f"  tau = {t:9.4g}   E[T] = {_pm(float(d['tau_response_time']), float(d['tau_response_time_half_width']))}"
            f"   p{pct:g} = {_pct(d, 'tau', dt)}"
        )
    tm = float(ds["tau_best_mean"])
    out.append(f"best tau for the mean: {tm:.4g} (restart rate 1/tau = {1 / tm:.4g}, g*/(1/tau) = {g * tm:.3g})")
    tp = float(ds["tau_best_percentile"])
    need = ds["tau_percentile_needed_horizon"].values
    short = np.isfinite(need)
    lacking = (f"tau = {_tau_list(ds['tau'].values[short])} have fewer than {TAIL_MIN} jobs per replication beyond "
               f"p{pct:g}; --horizon >= {np.nanmax(need):,.0f} would give them enough") if short.any() else ""
    if np.isfinite(tp):
        out.append(
            f"best tau for p{pct:g}: {tp:.4g}" + (f" among the tau with enough jobs ({lacking})" if lacking else "")
        )
    else:
        out.append(f"best tau for p{pct:g}: none reported: " + (lacking or "no stable tau has it within --t-max"))
    if any("(bin)" in line for line in out):
        out.append(BIN_NOTE)
    return out
