"""sojourn: sojourn-time experiments on multi-server queues.

The shared core is :mod:`sojourn.core`; each study is a package (:mod:`sojourn.jsq_ps`, registered in
:mod:`sojourn.studies`). The names below are imported on first use, so ``import sojourn`` is cheap and
importing one study never loads another.
"""
from __future__ import annotations

from .core.exports import lazy
from .core.version import __version__

_LAWS = ("Exponential", "Deterministic", "Uniform", "Erlang", "HyperExponential", "Gamma", "Lognormal",
         "Triangular", "PhaseType", "parse_law")
_EXPORTS = {**{name: "sojourn.core.laws.distributions" for name in _LAWS},
            "JSQPS": "sojourn.jsq_ps.model", "mm_jsq_ps": "sojourn.jsq_ps.model",
            "simulate": "sojourn.jsq_ps.simulate", "approximate": "sojourn.jsq_ps.solve.api",
            "plan": "sojourn.jsq_ps.plan"}

__all__ = ["__version__", *_EXPORTS]
__getattr__ = lazy(__name__, _EXPORTS)
