"""sojourn: sojourn-time experiments on multi-server queues (JSQ-PS, split-merge, G-networks)."""
from __future__ import annotations

__version__ = "0.1.0"

from .distributions import (  # noqa: E402
    Deterministic,
    Erlang,
    Exponential,
    Gamma,
    HyperExponential,
    Lognormal,
    PhaseType,
    Triangular,
    Uniform,
    parse_law,
)
from .models import JSQPS, mm_jsq_ps  # noqa: E402
from . import simulate  # noqa: E402  (a callable package: sojourn.simulate(spec, ...))


def approximate(spec, method, **kwargs):
    """Analytic sojourn-time CDF of ``spec`` by ``method`` (see :func:`sojourn.analytic.api.approximate`)."""
    from .analytic.api import approximate as _approximate

    return _approximate(spec, method, **kwargs)


__all__ = [
    "__version__",
    "JSQPS",
    "mm_jsq_ps",
    "simulate",
    "approximate",
    "parse_law",
    "Exponential",
    "Deterministic",
    "Uniform",
    "Erlang",
    "HyperExponential",
    "Gamma",
    "Lognormal",
    "Triangular",
    "PhaseType",
]
