"""Analytic sojourn-time methods for M/M/R-JSQ-PS (reference notes: jsq_ps_methods.md).

Public entry points
-------------------
approximate(spec, method, t=None, **hyper) / approximate_all(spec, methods, t=None, **hyper)
    xarray Datasets (see :mod:`sojourn.jsq_ps.solve.api`); methods "A".."F" (paper-faithful),
    "A*".."F*" (corrected, §8.3), "exact" (tagged-customer chain), "T" (the tagged chain on a spread-capped
    state space, conservative, for the tail at any R: :mod:`sojourn.jsq_ps.solve.tail`).
mm1ps_sojourn_cdf / mm1ps_sojourn_sf(arrival_rate, service_rate, t)
    exact M/M/1-PS sojourn law (Masuyama–Takine).
exact_sojourn_cdf(arrival_rate, service_rate, servers, t, ...)
    exact M/M/R-JSQ-PS sojourn law (:mod:`sojourn.jsq_ps.solve.exact`).
tail_sojourn(arrival_rate, service_rate, servers, t, ...)
    method T (:mod:`sojourn.jsq_ps.solve.tail`).
method_cdf / all_methods, Cell
    the numerical core (:mod:`sojourn.jsq_ps.solve.methods`): one cell, shared building blocks.
Building blocks: :func:`chain.solve_chain` (λ_n §3.2, A_n §3.4), :func:`gupta.gupta_lambdas` (§3.3),
:func:`occupancy.birth_death_occupancy` (§3.5), :mod:`tails` (w_n §3.6a/b).
time_grid(t_max=182.32, dt=0.01)
    the shared grid round(i·dt, 10) (:mod:`sojourn.core.checks.timegrid`).
Every result is checked by :mod:`sojourn.jsq_ps.solve.guards` (``valid``, ``validity_reason``); where
``exact`` runs by default is :mod:`sojourn.jsq_ps.solve.budget`.
"""
from __future__ import annotations

from ...core.checks.timegrid import time_grid
from ..naming import CORRECTED_METHODS, FAITHFUL_METHODS, table4_L1
from .exact import exact_sojourn_cdf
from .methods import Cell, all_methods, method_cdf
from .mm1ps import mm1ps_sojourn_cdf, mm1ps_sojourn_sf
from .tail import tail_sojourn

__all__ = [
    "time_grid",
    "mm1ps_sojourn_cdf",
    "mm1ps_sojourn_sf",
    "exact_sojourn_cdf",
    "tail_sojourn",
    "approximate",
    "approximate_all",
    "method_cdf",
    "all_methods",
    "Cell",
    "table4_L1",
    "FAITHFUL_METHODS",
    "CORRECTED_METHODS",
]


def approximate(spec, method, t=None, **hyper):
    """See :func:`sojourn.jsq_ps.solve.api.approximate`."""
    from .api import approximate as _a

    return _a(spec, method, t=t, **hyper)


def approximate_all(spec, methods, t=None, **hyper):
    """See :func:`sojourn.jsq_ps.solve.api.approximate_all`."""
    from .api import approximate_all as _a

    return _a(spec, methods, t=t, **hyper)
