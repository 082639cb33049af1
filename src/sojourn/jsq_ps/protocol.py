"""JSQ-PS as the core's study protocol (:mod:`sojourn.core.protocol`): its cached steps — a block of simulation
cells (:class:`sojourn.jsq_ps.blocks.SimulationBlock`), a block of M/M/R approximation cells and a block of M/G/R
law approximation cells (:mod:`sojourn.jsq_ps.solve.blocks`), each cell at typed grid values (service, R, ρ) — and
the study object :data:`STUDY` the registry names (:mod:`sojourn.studies`)."""
from __future__ import annotations

from typing import ClassVar

from .blocks import SimulationBlock
from .solve.blocks import ApproximationBlock, LawApproximationBlock


class JSQPSStudy:
    """The JSQ-PS study to the core (:class:`sojourn.core.protocol.Study`)."""

    name = "jsq_ps"
    steps: ClassVar[dict] = {"simulate": SimulationBlock, "approximate": ApproximationBlock,
             "approximate_laws": LawApproximationBlock}
    analytic = "approximate"

    @property
    def replication(self):
        from .simulate import simulate_replication

        return simulate_replication

    def compare(self, **inputs):
        from .compare import write_comparison

        return write_comparison(**inputs)

    def figures(self, **inputs):
        from .plots import all_figures

        return all_figures(**inputs)


STUDY = JSQPSStudy()
