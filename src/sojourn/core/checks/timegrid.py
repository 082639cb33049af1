"""The one time grid of every CDF and histogram: t_i = i·dt, i = 0 … t_max/dt.

Simulation histograms use the t_i as left bin edges, analytic methods evaluate F(t_i); both build the
grid here, so their floats are identical. t_max must be a multiple of dt (within 1e-9 of one):
anything else would make the two disagree about the last point.
"""
from __future__ import annotations

import math
from numbers import Real

import numpy as np

T_MAX = 182.32  # jsq_ps_methods.md §1: sojourn_max of the paper's sweep
DT = 0.01  # §4: grid step
#: the largest grid time: as a law's mean (sojourn.core.laws.distributions.MEAN_RANGE), its square stays a finite double
TIME_MAX = 1e100


def grid_size(t_max: float = T_MAX, dt: float = DT) -> int:
    """Number of grid points t_max/dt + 1; ValueError naming dt or t_max when they do not fit."""
    for name, v in (("dt", dt), ("t_max", t_max)):
        if isinstance(v, bool) or not isinstance(v, Real) or not math.isfinite(float(v)):
            raise ValueError(f"{name} must be a finite real number; got {v!r}")
    dt, t_max = float(dt), float(t_max)
    if dt <= 0:
        raise ValueError(f"dt must be in (0, inf); got {dt!r}")
    for name, v in (("dt", dt), ("t_max", t_max)):  # times whose squares (second moments, sums of squares) stay finite
        if v > TIME_MAX:
            raise ValueError(f"{name} must be at most {TIME_MAX:g} (the square of a time on the grid stays a finite "
                             f"double); got {v!r}")
    if t_max < dt:
        raise ValueError(f"t_max must be >= dt = {dt:g}; got {t_max!r}")
    steps = t_max / dt
    if not math.isfinite(steps) or steps > 2.0**62:  # a subnormal dt: t_max/dt is no count of points
        raise ValueError(f"dt must be larger: t_max/dt = {steps:.3g} points is not a count a grid can have; "
                         f"got dt = {dt!r}")
    if abs(steps - round(steps)) > 1e-9 * max(1.0, steps):
        raise ValueError(f"t_max must be a multiple of dt = {dt:g}; got t_max = {t_max!r} "
                         f"(nearest: {round(steps) * dt:.12g})")
    return int(round(steps)) + 1


def time_grid(t_max: float = T_MAX, dt: float = DT) -> np.ndarray:
    """t_i = round(i·dt, 10), i = 0 … t_max/dt (§1: 0, 0.01, … while t ≤ 182.32); the grid's own arrays are
    admitted by the guard before they exist (:func:`sojourn.core.checks.guard.admit`: a grid of 1e18 points is refused
    naming t_max/dt, not met by numpy's "maximum dimension exceeded")."""
    from .guard import Estimate, admit

    n = grid_size(t_max, dt)
    admit(Estimate(0.0, 24.0 * n, "t_max/dt", f"{n:.3g} grid points of t_max {float(t_max):g} / dt {float(dt):g}"),
          record=False)
    return np.round(np.arange(n) * float(dt), 10)
