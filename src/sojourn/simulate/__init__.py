"""Simulation backends for the JSQ-PS model: a numba event kernel and a Ciw reference.

The package object is itself callable: ``sojourn.simulate(spec, ...)`` runs
:func:`sojourn.simulate.api.simulate`. (A plain function named ``simulate`` in ``sojourn`` would be
replaced by this subpackage the moment any ``sojourn.simulate.*`` module is imported.)
"""
from __future__ import annotations

import sys
import types


class _CallablePackage(types.ModuleType):
    def __call__(self, spec, **kwargs):
        from .api import simulate

        return simulate(spec, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
