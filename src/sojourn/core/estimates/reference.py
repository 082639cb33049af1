"""When a simulation is too short to be a reference: the one rule every study's figures, captions and key tables apply.

A simulated percentile is an estimate only if enough customers (jobs, workunits) lie beyond it in every replication:
fewer than :data:`sojourn.core.estimates.stats.TAIL_MIN` (100) per replication beyond it, or none in some replication,
and a
replication's percentile is biased towards its largest values (at 0 it is the sample maximum). A run the run-length
guard (:mod:`sojourn.core.estimates.runlength`) judged too short is no reference either, for any statistic. Where
either holds,
a comparison against the simulation judges nothing: the value is left out of every summary statistic (key tables,
accuracy summaries, best and recommended choices) and drawn as "reference too short"
(:data:`sojourn.core.present.figures.REFERENCE_TOO_SHORT`: one mark, one legend entry in every figure).

The CLIs' "too few customers beyond the percentile" (:mod:`sojourn.core.estimates.summary`) is the same rule.
"""
from __future__ import annotations

import numpy as np

from .stats import TAIL_MIN

#: why a reference is unusable, as the captions say it
TOO_FEW_WORDS = f"fewer than {TAIL_MIN} simulated {{what}} per replication beyond the percentile"
RUN_TOO_SHORT_WORDS = "a run the run-length guard judged too short"


def too_few_beyond(beyond, axis=0) -> np.ndarray:
    """True where fewer than ``TAIL_MIN`` per replication (on average over ``axis``, the replications; NaN: absent) lie
    beyond a percentile, or none in some replication. ``beyond``: counts per replication
    (:func:`sojourn.core.estimates.stats.percentiles_per_replication`)."""
    import warnings

    beyond = np.asarray(beyond, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a point without replications: NaN, not too few
        mean = np.nanmean(beyond, axis=axis)
    return (mean < TAIL_MIN) | np.any(beyond == 0, axis=axis)


def expected_beyond(recorded_per_replication, p) -> np.ndarray:
    """Customers expected beyond the p-quantile (p a probability) of ``recorded_per_replication`` customers: n (1 − p),
    rounded to 1e-6 (99.9 % of 1e5 is 100, not 99.99…)."""
    return np.round(np.asarray(recorded_per_replication, dtype=float) * (1.0 - np.asarray(p, dtype=float)), 6)


def rule_words(what: str = "customers") -> str:
    """The rule in words, for a caption: 'fewer than 100 simulated customers per replication beyond the percentile,
    or a run the run-length guard judged too short'."""
    return f"{TOO_FEW_WORDS.format(what=what)}, or {RUN_TOO_SHORT_WORDS}"
