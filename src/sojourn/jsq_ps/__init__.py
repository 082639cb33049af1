"""Study of seed 000: G/G/R-JSQ-PS systems (R processor-sharing servers behind join-the-shortest-queue
dispatch), the SQA approximations A–F of the M/M/R-JSQ-PS sojourn-time CDF, corrected variants and
an exact chain, compared with simulation.

The roles every study has, under the same names: the model spec (:mod:`.model`), the numba event loops
(:mod:`.kernel`, reached through :mod:`.raw`), one replication and the Python API (:mod:`.simulate`; the Ciw
reference :mod:`.ciw_backend`), the analytic methods (:mod:`.solve`), the config checks and cells
(:mod:`.config`), every rule's entry point (:mod:`.jobs`, storage in :mod:`.storage`), the comparison
(:mod:`.compare`), the figures (:mod:`.plots`) and the commands (:mod:`.cli`). Its own: the paper's tables
(:mod:`.reproduction`), the accuracy table (:mod:`.accuracy`) and capacity planning (:mod:`.plan`).

The names below are imported on first use (the simulator's API is :mod:`.simulate`: ``simulate``,
``simulate_replication``, ``concat_replications``, the same in every study) (``import sojourn.jsq_ps`` stays cheap).
"""
from __future__ import annotations

from ..core.exports import lazy

_EXPORTS = {"JSQPS": ".model", "simulate_replication": ".simulate",
            "concat_replications": ".simulate", "summary": ".simulate", "approximate": ".solve.api",
            "approximate_all": ".solve.api", "exact_sojourn_cdf": ".solve.exact", "FIGURES": ".plots"}

__all__ = [*_EXPORTS]
__getattr__ = lazy(__name__, _EXPORTS)
