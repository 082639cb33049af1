"""Split-merge as the core's study protocol (:mod:`sojourn.core.protocol`): its cached steps — an experiment's
replications (:class:`sojourn.split_merge.experiment.Replications`) and its cells' exact values
(:class:`sojourn.split_merge.exact.Exact`) — and the study object :data:`STUDY` the registry names
(:mod:`sojourn.studies`)."""
from __future__ import annotations

from typing import ClassVar

from .exact import Exact
from .experiment import Replications


class SplitMergeStudy:
    """The split-merge study to the core (:class:`sojourn.core.protocol.Study`)."""

    name = "split_merge"
    steps: ClassVar[dict] = {"simulate": Replications, "exact": Exact}
    analytic = "exact"

    @property
    def replication(self):
        from .simulate import replication_summary

        return replication_summary

    def compare(self, **inputs):
        from .compare import experiment_dataset

        return experiment_dataset(**inputs)

    def figures(self, **inputs):
        from .plots import all_figures

        return all_figures(**inputs)


STUDY = SplitMergeStudy()
