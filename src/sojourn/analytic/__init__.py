"""Analytic sojourn-time methods for M/M/R-JSQ-PS (reference notes: jsq_ps_methods.md)."""
from __future__ import annotations

from .grid import time_grid
from .mm1ps import mm1ps_sojourn_cdf, mm1ps_sojourn_sf

__all__ = ["time_grid", "mm1ps_sojourn_cdf", "mm1ps_sojourn_sf", "approximate", "approximate_all"]


def approximate(spec, method, t=None, **hyper):
    """See :func:`sojourn.analytic.api.approximate`."""
    from .api import approximate as _a

    return _a(spec, method, t=t, **hyper)


def approximate_all(spec, methods, t=None, **hyper):
    """See :func:`sojourn.analytic.api.approximate_all`."""
    from .api import approximate_all as _a

    return _a(spec, methods, t=t, **hyper)
