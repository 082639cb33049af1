"""JSQ-PS as the core's study protocol (:mod:`sojourn.core.runs.protocol`): its cached steps — a block of simulation
cells (:class:`sojourn.jsq_ps.blocks.SimulationBlock`), a block of M/M/R approximation cells and a block of M/G/R
law approximation cells (:mod:`sojourn.jsq_ps.solve.blocks`), each cell at typed grid values (service, R, ρ) — and
the study object :data:`STUDY` the registry names (:mod:`sojourn.studies`)."""
from __future__ import annotations

from ..core.runs.protocol import Declaration
from .blocks import SimulationBlock
from .compare import write_comparison
from .plots import all_figures
from .simulate import simulate_replication
from .solve.blocks import ApproximationBlock, LawApproximationBlock

STUDY = Declaration("jsq_ps", {"simulate": SimulationBlock, "approximate": ApproximationBlock,
                               "approximate_laws": LawApproximationBlock},
                    analytic="approximate", replication=simulate_replication, compare=write_comparison,
                    figures=all_figures)
