"""The restart-rate question: g* of the product form beside the simulated timeout optimum.

:func:`optimise` computes g* (:func:`sojourn.restart.solve.optimal_signal_rate`), simulates the
network at g* under signal semantics and under exponential timeouts of rate g*, and sweeps
deterministic timeouts τ (a logarithmic grid around 1/g* unless given) to find the τ that minimises
the mean and the 99th-percentile response time, each with Student-t CIs over replications. The result
is one ``xarray.Dataset``; :func:`report_lines` formats it for the terminal.
"""
from __future__ import annotations

import inspect
import json

import numpy as np
import xarray as xr

from ..core.distributions import Deterministic, Exponential
from ..core.io import provenance
from ..core.config import DEFAULT_CONFIDENCE
from ..core.stats import BIN_NOTE, TAIL_MIN, format_with_ci, mean_ci, percentiles_per_replication
from ..core.validate import integer_at_least, positive_finite, probability_open
from .model import Network
from .solve import optimal_signal_rate
from .simulate import SimulationSpec, simulate

#: the bin width of :func:`sojourn.restart.simulate.simulate` when ``sim`` does not give one
SIM_DT = inspect.signature(simulate).parameters["dt"].default


def _sim_stats(ds, confidence, percentile):
    """(mean, half-width, percentile, half-width, jobs per replication beyond the percentile)."""
    q, beyond = percentiles_per_replication(ds["count"].values, ds["overflow"].values, ds["t"].values,
                                            float(ds.attrs["dt"]), percentile)
    m, h = mean_ci(ds["mean"].values, confidence=confidence)
    pm, ph = mean_ci(q[:, 0], confidence=confidence)
    few = beyond[:, 0].mean() if (beyond[:, 0] > 0).all() else 0.0  # none beyond in a replication: its maximum
    return float(m), float(h), float(pm), float(ph), float(few)


def default_taus(g_star: float, points: int = 13, span: float = 10.0) -> np.ndarray:
    """``points`` timeouts log-spaced over [1/(span g*), span/g*] (around the signal model's 1/g*)."""
    g = positive_finite("g_star", g_star)
    return np.geomspace(1.0 / (span * g), span / g, integer_at_least("points", points, 2))


def optimise(net: Network, *, queue=None, bounds=(0.0, 100.0), taus=None, replications: int = 10, seed: int = 0,
             confidence: float = DEFAULT_CONFIDENCE, percentile: float = 0.99, sim: dict | None = None) -> xr.Dataset:
    """g* and E[T](g*) (product form), the simulated E[T] at g* under both semantics, and the τ sweep.

    ``sim``: keyword arguments of :func:`sojourn.restart.simulate.simulate` (horizon, warmup, dt, t_max …).
    The timeouts of the sweep are deterministic; ``taus`` defaults to :func:`default_taus` (g*).
    """
    sim = dict(sim or {})
    replications = integer_at_least("replications", replications, 2, allow_float=False)
    confidence = probability_open("confidence", confidence)
    percentile = probability_open("percentile", percentile)
    opt = optimal_signal_rate(net, queue=queue, bounds=bounds)
    g = opt.signal_rate
    if not g > 0:
        raise ValueError(f"bounds: the optimal signal rate is {g:g} (no restarts); nothing to compare with timeouts")
    at_g = net.with_signal_rate(g, queue)
    no_signals = net
    for i in range(len(net.queues)):
        no_signals = no_signals.with_signal_rate(0.0, i)
    taus = default_taus(g) if taus is None else np.asarray([positive_finite("taus", float(t)) for t in taus])
    runs = {"signal": SimulationSpec(at_g, "signal"),
            "timeout_exponential": SimulationSpec(no_signals, "timeout", Exponential(g))}
    point = {}
    for name, sp in runs.items():
        point[name] = _sim_stats(simulate(sp, replications=replications, seed=seed, **sim), confidence, percentile)
    sweep = np.array([_sim_stats(simulate(SimulationSpec(no_signals, "timeout", Deterministic(float(t))),
                                          replications=replications, seed=seed, **sim), confidence, percentile)
                      for t in taus])
    if not np.isfinite(sweep[:, 0]).any() or not np.isfinite(sweep[:, 2]).any():
        raise ValueError("taus: the timeout semantics was unstable (or the percentile beyond t_max) at every tau")
    best_mean, best_pct = int(np.nanargmin(sweep[:, 0])), int(np.nanargmin(sweep[:, 2]))
    sem = list(runs)
    ds = xr.Dataset(
        {
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
            "tau_response_time": ("tau", sweep[:, 0], {"long_name": "mean response time, deterministic timeout tau",
                                                        "units": "time"}),
            "tau_response_time_half_width": ("tau", sweep[:, 1], {"long_name": "CI half-width", "units": "time"}),
            "tau_percentile": ("tau", sweep[:, 2], {"long_name": "response-time percentile, timeout tau", "units": "time"}),
            "tau_percentile_half_width": ("tau", sweep[:, 3], {"long_name": "CI half-width", "units": "time"}),
            "sim_percentile_beyond": ("semantics", [point[s][4] for s in sem],
                                      {"long_name": "jobs per replication at or beyond the percentile (mean; 0 if "
                                                    "none in some replication)", "units": "1"}),
            "tau_percentile_beyond": ("tau", sweep[:, 4], {"long_name": "jobs per replication at or beyond the "
                                                                        "percentile (mean; 0 if none in some "
                                                                        "replication)", "units": "1"}),
            "tau_best_mean": ((), float(taus[best_mean]), {"long_name": "tau of the sweep with the smallest mean "
                                                                        "response time", "units": "time"}),
            "tau_best_percentile": ((), float(taus[best_pct]), {"long_name": "tau of the sweep with the smallest "
                                                                             "percentile", "units": "time"}),
        },
        coords={"semantics": ("semantics", sem, {"long_name": "restart semantics at rate g*: signals of rate g*, "
                                                              "exponential timeouts of rate g*"}),
                "tau": ("tau", np.asarray(taus, float), {"long_name": "deterministic timeout", "units": "time"})},
    )
    ds.attrs.update(provenance(net.to_dict(), title=f"Optimal restart rate of {net.name}", model=net.describe(),
                               spec=net.to_json(), queue=opt.queue, bounds=list(opt.bounds), replications=replications,
                               seed=seed, confidence=confidence, percentile=percentile, simulation=sim))
    return ds


def _pm(m: float, h: float) -> str:
    return format_with_ci(m, m - h, m + h)


def _pct(m: float, h: float, beyond: float, dt: float | None = None) -> str:
    """A percentile with its CI (``± dt (bin)`` where the CI is narrower than the histogram's bin width
    ``dt``), or "too few jobs" when fewer than TAIL_MIN per replication lie beyond it."""
    if beyond < TAIL_MIN:
        return f"too few jobs ({beyond:,.0f} beyond it per replication, < {TAIL_MIN})"
    return format_with_ci(m, m - h, m + h, resolution=dt)


def report_lines(ds: xr.Dataset) -> list[str]:
    """The optimisation result as terminal lines (each mean and percentile to the digits its CI supports)."""
    conf = float(ds.attrs["confidence"])
    pct = 100 * float(ds.attrs["percentile"])
    g = float(ds["g_star"])
    sim = ds.attrs.get("simulation", "{}")  # the simulate() keywords, as JSON in the attributes
    dt = float((json.loads(sim) if isinstance(sim, str) else dict(sim)).get("dt", SIM_DT))  # the histograms' bin width
    out = [f"g* = {g:.6g}  (queue {ds.attrs['queue']}, bounds {ds.attrs['bounds']})",
           f"product form  E[T](g*) = {float(ds['response_time_pf']):.6g}  (without restarts "
           f"{float(ds['response_time_pf_no_restart']):.6g})",
           f"simulated: {100 * conf:g}% Student-t CIs across {ds.attrs['replications']} replications; a percentile "
           f"needs >= {TAIL_MIN} jobs per replication beyond it"]
    for s in ds["semantics"].values.tolist():
        d = ds.sel(semantics=s)
        out.append(f"simulated {s:<20} E[T] = {_pm(float(d['sim_response_time']), float(d['sim_response_time_half_width']))}"
                   f"   p{pct:g} = {_pct(float(d['sim_percentile']), float(d['sim_percentile_half_width']), float(d['sim_percentile_beyond']), dt)}")
    out.append("deterministic timeouts tau:")
    for t in ds["tau"].values:
        d = ds.sel(tau=t)
        out.append(f"  tau = {t:9.4g}   E[T] = {_pm(float(d['tau_response_time']), float(d['tau_response_time_half_width']))}"
                   f"   p{pct:g} = {_pct(float(d['tau_percentile']), float(d['tau_percentile_half_width']), float(d['tau_percentile_beyond']), dt)}")
    tm, tp = float(ds["tau_best_mean"]), float(ds["tau_best_percentile"])
    few = " (from percentiles with too few jobs beyond them)" if float(ds["tau_percentile_beyond"].min()) < TAIL_MIN else ""
    out.append(f"best tau for the mean: {tm:.4g} (restart rate 1/tau = {1 / tm:.4g}, g*/(1/tau) = {g * tm:.3g}); "
               f"best tau for p{pct:g}: {tp:.4g}{few}")
    if any("(bin)" in line for line in out):
        out.append(BIN_NOTE)
    return out
