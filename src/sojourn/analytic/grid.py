"""The shared time grid: every module builds it the same way so the floats are identical."""
from __future__ import annotations

import math

import numpy as np

T_MAX = 182.32  # §1: sojourn_max of the paper's sweep
DT = 0.01  # §4: grid step


def time_grid(t_max: float = T_MAX, dt: float = DT) -> np.ndarray:
    """t_i = round(i·dt, 10), i = 0..floor(t_max/dt + 1e-9) (§1: 0, 0.01, … while t ≤ 182.32)."""
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be in (0, inf); got {dt!r}")
    if not (isinstance(t_max, (int, float)) and math.isfinite(t_max) and t_max >= 0):
        raise ValueError(f"t_max must be in [0, inf); got {t_max!r}")
    n = int(math.floor(t_max / dt + 1e-9)) + 1
    return np.round(np.arange(n) * dt, 10)
