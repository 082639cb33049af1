"""The restart study as the core's study protocol (:mod:`sojourn.core.protocol`): its cached steps — an example's
restart-rate sweep (:class:`sojourn.restart.sweep.Sweep`, cells at typed (semantics, restart rate)), its product form
at each signal rate of a grid and g* (:mod:`sojourn.restart.product_form`) — and the study object :data:`STUDY` the
registry names (:mod:`sojourn.studies`)."""
from __future__ import annotations

from typing import ClassVar

from .product_form import GStar, ProductForm
from .sweep import Sweep


class RestartStudy:
    """The restart study to the core (:class:`sojourn.core.protocol.Study`)."""

    name = "restart"
    steps: ClassVar[dict] = {"simulate": Sweep, "solve": ProductForm, "g_star": GStar}
    analytic = "solve"

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


STUDY = RestartStudy()
