"""Study of seed 000: G/G/R-JSQ-PS systems (R processor-sharing servers behind join-the-shortest-queue
dispatch), the SQA approximations A–F of the M/M/R-JSQ-PS sojourn-time CDF, corrected variants and
an exact chain, compared with simulation.

The roles every study has, under the same names: the model spec (:mod:`.model`), the numba event loops
(:mod:`.kernel`, reached through :mod:`.raw`), one replication and the Python API (:mod:`.simulate`; the Ciw
reference :mod:`.ciw_backend`), the analytic methods (:mod:`.solve`), the config checks and cells
(:mod:`.config`), every rule's entry point (:mod:`.jobs`, storage in :mod:`.storage`), the comparison
(:mod:`.compare`), the figures (:mod:`.plots`) and the commands (:mod:`.cli`). Its own: the paper's tables
(:mod:`.reproduction`), the accuracy table (:mod:`.accuracy`) and capacity planning (:mod:`.plan`).

The names below are imported on first use (``import sojourn.jsq_ps`` stays cheap).
"""
from __future__ import annotations

import importlib

_EXPORTS = {"JSQPS": ".model", "simulate": ".simulate", "simulate_replication": ".simulate",
            "concat_replications": ".simulate", "summary": ".simulate", "approximate": ".solve.api",
            "approximate_all": ".solve.api", "exact_sojourn_cdf": ".solve.exact", "FIGURES": ".plots",
            "plan": ".plan"}

__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
