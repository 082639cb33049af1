"""The split-merge study (seed 002): n hosts, each workunit replicated to r hosts, done at a quorum of q results.

``model`` (the validated spec :class:`SplitMerge`), ``order_stats`` (the service time S_{q:r} of a workunit),
``exact`` (stability, P-K, Erlang C, the M/PH/c QBD), ``kernel`` + ``simulate`` (numba simulators of the
split-merge and fork-join-with-cancellation models), ``best`` (the operator's ranking of (r, q)),
``experiments`` / ``plots`` (the pipeline's experiments), ``cli`` (``sojourn split-merge …``).
"""
from .best import best
from .solve import exact_dataset, exact_results
from .model import SplitMerge
from .simulate import concat_replications, simulate, simulate_replication

__all__ = ["SplitMerge", "best", "concat_replications", "exact_dataset", "exact_results", "simulate",
           "simulate_replication"]
