"""Config helpers of the restart sweeps: the restart rates of an example and the simulation keyword arguments."""
from __future__ import annotations

import numpy as np


def restart_rates(spec: dict) -> np.ndarray:
    """The sweep's restart rates: ``{start, stop, num}`` log-spaced (inclusive), rounded to 6 significant digits."""
    r = np.geomspace(float(spec["start"]), float(spec["stop"]), int(spec["num"]))
    return np.array([float(f"{x:.6g}") for x in r])


def sim_kwargs(sim: dict, example: dict) -> dict:
    return dict(horizon=float(example["horizon"]), warmup=float(example["warmup"]), dt=float(sim["dt"]),
                t_max=float(sim["t_max"]), restart_max=int(sim["restart_max"]), max_jobs=int(sim["max_jobs"]),
                max_events=int(sim["max_events"]))
