"""The split-merge study (seed 002): n hosts, each workunit replicated to r hosts, done at a quorum of q results.

The roles every study has, under the same names: the validated spec :class:`SplitMerge` (:mod:`.model`), the
numba simulators of the split-merge and fork-join-with-cancellation models (:mod:`.kernel`), one replication and
the Python API (:mod:`.simulate`), the exact results — stability, P-K, Erlang C, the M/PH/c QBD —
(:mod:`.solve`), the config checks and cells (:mod:`.config`), every rule's entry point (:mod:`.jobs`), the
simulation beside the exact values (:mod:`.compare`), the figures (:mod:`.plots`) and the commands (:mod:`.cli`).
Its own: the service time S_{q:r} of a workunit (:mod:`.order_stats`), the operator's ranking of (r, q)
(:mod:`.best`) and summaries (:mod:`.summary`).

The names below are imported on first use (the simulator's API is :mod:`.simulate`: ``simulate``,
``simulate_replication``, ``concat_replications``, the same in every study).
"""
from __future__ import annotations

from ..core.exports import lazy

_EXPORTS = {"SplitMerge": ".model", "simulate_replication": ".simulate",
            "concat_replications": ".simulate", "summarize": ".summary", "exact_results": ".solve",
            "exact_dataset": ".solve", "FIGURES": ".plots", "best": ".best"}

__all__ = [*_EXPORTS]
__getattr__ = lazy(__name__, _EXPORTS)
