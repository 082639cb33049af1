"""The restart study's config section (``config["restart"]``): its examples' restart rates and run windows, the
precision target, and the cross-field checks JSON schema cannot express (ConfigError naming the key path):
every example's model loads and is stable under signal semantics over its whole sweep, start < stop, warm-up +
cool-down < window length, t_max a multiple of dt, bounds ordered. An example's run window is
``simulation.window`` with the keys of its own ``window`` in their place (:func:`window`)."""
from __future__ import annotations

import numpy as np

from ..core.checks.config import DEFAULT_PERCENTILE, ConfigError, run_window
from ..core.checks.inputs import check_grid
from ..core.checks.timegrid import grid_size


def restart_rates(spec) -> np.ndarray:
    """The sweep's restart rates, rounded to 6 significant digits: an explicit list (ascending, distinct), or
    ``{start, stop, num}`` log-spaced (inclusive). With a list, adding a rate adds one point to the sweep and
    leaves the others' cached replications in use; with ``num`` every rate moves."""
    if isinstance(spec, dict):
        r = np.geomspace(float(spec["start"]), float(spec["stop"]), int(spec["num"]))
    else:
        r = np.asarray([float(x) for x in spec], dtype=float)
    return np.array([float(f"{x:.6g}") for x in r])


def window(sim: dict, example: dict) -> dict:
    """An example's run window: ``simulation.window`` with the keys of the example's ``window`` in their place."""
    return run_window(sim.get("window"), example.get("window"))


def sim_kwargs(sim: dict, time_grid: dict, example: dict) -> dict:
    """The simulation keywords of every replication of an example's sweep (run window, grid, stops)."""
    w = window(sim, example)
    warmup = w["warmup"]
    kw = dict(
        horizon=float(w["length"]),
        warmup=None if warmup is None else float(warmup),
        dt=float(time_grid["dt"]),
        t_max=float(time_grid["t_max"]),
        restart_max=int(sim["restart_max"]),
        max_jobs=int(sim["max_jobs"]),
        max_events=int(sim["max_events"]),
    )
    if w["cooldown"] is not None:  # (default: = warmup)
        kw["cooldown"] = float(w["cooldown"])
    return kw


def precision_for(sim: dict, time_grid: dict):
    """The sweeps' precision target (None: a fixed count); ValueError naming the key."""
    from ..core.estimates.precision import parse

    return parse(sim.get("precision"), field="simulation.precision", t_max=float(time_grid["t_max"]),
                 default_at=DEFAULT_PERCENTILE, default_statistic="mean")


def check_config(cfg: dict) -> None:
    from .files import load_model
    from .solve import solve

    sim, tg = cfg["simulation"], cfg["time_grid"]
    try:
        grid_size(tg["t_max"], tg["dt"])
    except ValueError as exc:
        raise ConfigError(f"restart.time_grid: {exc}") from None
    try:
        check_grid(tg["t_max"], tg["dt"], 8.0 * (2 * 200 + 6), "the response-time histograms of a cell's "
                   "replications (at most 200)", flags="restart.time_grid.t_max/dt", cli=False)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    try:
        precision_for(sim, tg)
    except ValueError as exc:
        raise ConfigError(f"restart.{exc}") from None
    lo, hi = cfg["analytic"]["bounds"]
    if not hi > lo:
        raise ConfigError(f"restart.analytic.bounds must be [lo, hi] with lo < hi; got {[lo, hi]}")
    if not cfg["examples"]:
        raise ConfigError("restart.examples must name at least one example (or set restart.enabled: false)")
    for name, ex in cfg["examples"].items():
        key = f"restart.examples.{name}"
        rates = ex["rates"]
        if isinstance(rates, dict) and not rates["stop"] > rates["start"]:
            raise ConfigError(f"{key}.rates: stop must be > start; got {rates}")
        if not isinstance(rates, dict) and list(rates) != sorted(set(rates)):
            raise ConfigError(f"{key}.rates: a list of rates must be ascending and distinct; got {list(rates)}")
        if len(set(restart_rates(rates))) != len(restart_rates(rates)):
            raise ConfigError(f"{key}.rates: two rates are equal to 6 significant digits; got {rates}")
        w = window(sim, ex)
        warm = w["warmup"] if w["warmup"] is not None else 0.05 * w["length"]
        cool = w["cooldown"] if w["cooldown"] is not None else warm
        if not w["length"] > warm + cool:
            raise ConfigError(f"{key}.window: length must be > warmup + cooldown (cooldown null: = warmup; keys not "
                              f"given: restart.simulation.window's); got length {w['length']}, warmup {warm}, "
                              f"cooldown {cool}")
        try:
            net = load_model(ex["model"])
            if len(net.queues) != 1:
                raise ValueError("the sweep varies the signal rate of a single queue; the model has "
                                 f"{len(net.queues)} queues")
            for r in restart_rates(ex["rates"]):
                solve(net.with_signal_rate(float(r)))
        except ValueError as exc:
            raise ConfigError(f"{key}.model: {exc}") from None
        _check_cost(key, net, ex, sim, tg)


def _check_cost(key: str, net, ex: dict, sim: dict, tg: dict) -> None:
    """Each Dask task of an example's sweep (one replication at one rate and semantics) admitted by the guard
    before any job, and a replication that would run into the kernel's event cap refused (it would report
    'stopped', not a measurement), naming the config keys."""
    from ..core.checks.guard import naming
    from .cost import Run, admit

    names = {"horizon": f"{key}.window.length", "horizon/replications": f"{key}.window.length",
             "t_max": "restart.time_grid.t_max", "dt": "restart.time_grid.dt"}
    try:
        length = float(window(sim, ex)["length"])
        with naming(names, "config"):
            for r in restart_rates(ex["rates"]):  # signals at each rate (timeouts: the signal-free network's events)
                admit([Run(net.with_signal_rate(float(r)), "signal"), Run(net, "timeout")], length, 1,
                      float(tg["dt"]), float(tg["t_max"]), int(sim["max_jobs"]), float(sim["max_events"]))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def model_path(model):
    """The file an example's ``model`` names: the path itself, or a built-in example's package file."""
    from pathlib import Path

    from .files import EXAMPLES_DIR

    m = Path(str(model))
    return m if m.exists() else EXAMPLES_DIR / f"{m.name}.yaml"
