"""Cross-field checks of the ``restart`` config section that JSON schema cannot express (ConfigError naming
the key path): every example's model loads and is stable under signal semantics over its whole sweep,
start < stop, warm-up + cool-down < horizon, t_max a multiple of dt, bounds ordered."""
from __future__ import annotations

from ..core.config import ConfigError
from ..core.timegrid import grid_size


def check_config(cfg: dict) -> None:
    from .files import load_model
    from .solve import solve
    from .grid import restart_rates

    from .sweep import precision_for

    sim = cfg["simulation"]
    try:
        grid_size(sim["t_max"], sim["dt"])
    except ValueError as exc:
        raise ConfigError(f"restart.simulation: {exc}") from None
    try:
        precision_for(sim)
    except ValueError as exc:
        raise ConfigError(f"restart.{exc}") from None
    lo, hi = cfg["analytic"]["bounds"]
    if not hi > lo:
        raise ConfigError(f"restart.analytic.bounds must be [lo, hi] with lo < hi; got {[lo, hi]}")
    if not cfg["examples"]:
        raise ConfigError("restart.examples must name at least one example (or set restart.enabled: false)")
    for name, ex in cfg["examples"].items():
        key = f"restart.examples.{name}"
        if not ex["rates"]["stop"] > ex["rates"]["start"]:
            raise ConfigError(f"{key}.rates: stop must be > start; got {ex['rates']}")
        if not ex["horizon"] > 2 * ex["warmup"]:
            raise ConfigError(f"{key}: horizon must be > 2 * warmup (warm-up = cool-down); got horizon "
                              f"{ex['horizon']}, warmup {ex['warmup']}")
        try:
            net = load_model(ex["model"])
            if len(net.queues) != 1:
                raise ValueError("the sweep varies the signal rate of a single queue; the model has "
                                 f"{len(net.queues)} queues")
            for r in restart_rates(ex["rates"]):
                solve(net.with_signal_rate(float(r)))
        except ValueError as exc:
            raise ConfigError(f"{key}.model: {exc}") from None
