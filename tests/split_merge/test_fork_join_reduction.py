"""Fork-join with cancellation, q = 1 and r dividing n, is split-merge path by path (issue 26, item 4): it gets
split-merge's exact values, the CLI prints them, and a fork-join simulation agrees with them."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sojourn.cli import main
from sojourn.core.estimates.stats import mean_ci
from sojourn.split_merge.model import SplitMerge
from sojourn.split_merge.simulate import simulate
from sojourn.split_merge.solve import REDUCTION, exact_results, fork_join_is_split_merge

HYPER = "hyperexponential:probs=0.8873/0.1127,rates=1.7746/0.2254"


@pytest.mark.parametrize("n,r,law", [(4, 2, "exponential"), (6, 3, HYPER), (3, 3, HYPER), (5, 1, "exponential")])
def test_fork_join_takes_split_merge_exact_values_where_they_coincide(n, r, law):
    fj = SplitMerge.from_rho(n, r, 1, 0.8, law, "fork_join")
    assert fork_join_is_split_merge(fj)
    a, b = exact_results(fj, [0.5, 0.99]), exact_results(fj.with_model("split_merge"), [0.5, 0.99])
    assert a["exact"] and a["mean_latency"] == b["mean_latency"] and math.isfinite(a["mean_latency"])
    np.testing.assert_array_equal(a["latency_percentile"], b["latency_percentile"])  # NaN where unknown (QBD)
    assert a["delay_method"] == b["delay_method"] and a["reduction"] == REDUCTION and b["reduction"] == ""


@pytest.mark.parametrize("n,r,q", [(5, 2, 1), (4, 2, 2)])
def test_no_exact_value_where_fork_join_differs(n, r, q):
    fj = SplitMerge.from_rho(n, r, q, 0.8, "exponential", "fork_join")
    assert not fork_join_is_split_merge(fj)
    assert exact_results(fj)["delay_method"] == "none" and math.isnan(exact_results(fj)["mean_latency"])


def test_cli_prints_the_split_merge_exact_value_for_fork_join(tmp_path, capsys):
    base = ["-n", "4", "-r", "2", "-q", "1", "--load", "0.8"]
    assert main(["split-merge", "exact", *base]) == 0
    exact = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("mean latency"))
    value = float(exact.split()[2])
    assert main(["split-merge", "simulate", *base, "--model", "fork_join", "--workunits", "20000",
                 "--replications", "8", "--seed", "3", "-o", str(tmp_path / "fj.nc")]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("mean latency"))
    assert "(no exact value)" not in out and f"exact {value:.6g} (erlang-c; {REDUCTION})" in line


def test_fork_join_simulation_agrees_with_the_exact_mean():
    """8 replications of 20 000 workunits, seed 3: the 99 % t-interval of the mean latency covers the exact one."""
    fj = SplitMerge.from_rho(6, 3, 1, 0.85, HYPER, "fork_join")
    ds = simulate(fj, workunits=20_000, replications=8, seed=3)
    m, h = mean_ci(ds["mean_latency"].values, confidence=0.99)
    assert abs(m - exact_results(fj)["mean_latency"]) <= h, (m, h, exact_results(fj)["mean_latency"])
