"""The split-merge figures' headers state their findings computed from the data they draw (issue 31: words from
data), and carry no "(see the caption)"."""
from __future__ import annotations

import numpy as np
import xarray as xr

from sojourn.split_merge import plots


def _c(sm, fj, hw=0.01):
    """Experiment (c)'s means for one law: two quorums × three replica counts, split-merge ``sm`` and fork-join
    ``fj`` ((quorum, replicas) arrays), every run long enough."""
    mean = np.stack([np.asarray(sm, float), np.asarray(fj, float)])
    return xr.Dataset({"sim_mean_latency": (("model", "quorum", "replicas"), mean),
                       "sim_mean_latency_hw": (("model", "quorum", "replicas"), np.full(mean.shape, hw))},
                      coords={"model": [plots.SM, plots.FJ], "quorum": [1, 2], "replicas": [1, 2, 3]})


def test_figure_c_header_states_the_finding():
    """Figure (c)'s header, one line, the finding first: at how many replica steps split-merge's mean falls beyond both
    CIs ("all" only where each does: round 10 claimed it for q = 1 where r = 8–10 lie within the CI), and where one
    rises beyond them; then fork-join's count. Where each step lies is the caption's (round 11: a four-line title
    led by its exception list)."""
    rs = np.array([1, 2, 3])
    ok = np.ones((2, 2, 3), bool)
    falling = _c([[1.0, 0.6, 0.4], [np.nan, 1.2, 0.9]], [[1.0, 0.5, 0.3], [np.nan, 1.2, 0.95]])
    assert plots._figure_c_finding(falling, rs, ok) == (
        "beyond both CIs: each added replica lowers split-merge's mean latency (all 3 steps); "
        "fork-join lies below split-merge at 2 of 4 (q, r ≥ 2) points")
    rising = _c([[1.0, 0.6, 0.7], [np.nan, 1.2, 0.9]], [[1.0, 0.7, 0.8], [np.nan, 1.3, 1.0]])
    assert plots._figure_c_finding(rising, rs, ok) == (
        "beyond both CIs: each added replica lowers split-merge's mean latency at 2 of 3 steps, raises it at 1; "
        "fork-join lies below split-merge at 0 of 4 (q, r ≥ 2) points")
    assert plots._replica_steps_words(plots.replica_steps(rising, rs, ok)) == (
        "split-merge's mean latency: each added replica lowers it beyond both CIs for q = 2; it rises beyond both "
        "CIs at r = 3 for q = 1")
    flat = _c([[1.0, 0.6, 0.59], [np.nan, 1.2, 0.9]], [[1.0, 0.7, 0.8], [np.nan, 1.3, 1.0]], hw=0.02)
    assert plots.replica_steps(flat, rs, ok) == {1: ([2], [3], []), 2: ([3], [], [])}
    assert plots._figure_c_finding(flat, rs, ok).startswith(
        "beyond both CIs: each added replica lowers split-merge's mean latency at 2 of 3 steps; ")
    assert plots._replica_steps_words(plots.replica_steps(flat, rs, ok)) == (
        "split-merge's mean latency: each added replica lowers it beyond both CIs for q = 2 except at r = 3 for "
        "q = 1 (within the CIs there; none raises it beyond them)")
    assert plots._ranges([2, 6, 7, 8, 9, 10]) == "2 and 6–10" and plots._ranges([8, 9]) == "8 and 9"


def test_no_see_the_caption_in_titles():
    assert "see the caption" not in plots.load_words(0.9, None)
    assert "see the caption" not in plots.load_words(0.9, 100)
