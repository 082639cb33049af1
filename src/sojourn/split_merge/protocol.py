"""Split-merge as the core's study protocol (:mod:`sojourn.core.runs.protocol`): its cached steps — an experiment's
replications (:class:`sojourn.split_merge.experiment.Replications`) and its cells' exact values
(:class:`sojourn.split_merge.exact.Exact`) — and the study object :data:`STUDY` the registry names
(:mod:`sojourn.studies`)."""
from __future__ import annotations

from ..core.runs.protocol import Declaration
from .compare import experiment_dataset
from .exact import Exact
from .experiment import Replications
from .plots import all_figures
from .simulate import replication_summary

STUDY = Declaration("split_merge", {"simulate": Replications, "exact": Exact}, analytic="exact",
                    replication=replication_summary, compare=experiment_dataset, figures=all_figures)
