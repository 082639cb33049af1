"""The restart study as the core's study protocol (:mod:`sojourn.core.runs.protocol`): its cached steps — an example's
restart-rate sweep (:class:`sojourn.restart.sweep.Sweep`, cells at typed (semantics, restart rate)), its product form
at each signal rate of a grid and g* (:mod:`sojourn.restart.product_form`) — and the study object :data:`STUDY` the
registry names (:mod:`sojourn.studies`)."""
from __future__ import annotations

from ..core.runs.protocol import Declaration
from .compare import write_comparison
from .plots import all_figures
from .product_form import GStar, ProductForm
from .simulate import simulate_replication
from .sweep import Sweep

STUDY = Declaration("restart", {"simulate": Sweep, "solve": ProductForm, "g_star": GStar}, analytic="solve",
                    replication=simulate_replication, compare=write_comparison, figures=all_figures)
