"""split-merge exact at a huge number of hosts (issue 26: -n 1e12 hung, -n 1e5 took 70 s): Erlang B from the
Poisson law beyond ERLANG_RECURSION_MAX super-servers agrees with the recursion, and the Erlang C quantiles by the
matrix exponential agree with uniformization where both run."""
from __future__ import annotations

import numpy as np
import pytest

import sojourn.split_merge.solve as S
from sojourn.cli import main
from sojourn.core.laws import phase_type as ph
from sojourn.split_merge.model import SplitMerge


@pytest.mark.parametrize("c,rho", [(20_000, 0.999), (50_000, 0.99), (3_000, 0.9)])
def test_erlang_c_from_the_poisson_law_equals_the_recursion(c, rho, monkeypatch):
    recursion = S.erlang_c(c, rho * c)
    monkeypatch.setattr(S, "ERLANG_RECURSION_MAX", 10)
    assert S.erlang_c(c, rho * c) == pytest.approx(recursion, rel=1e-9)


@pytest.mark.parametrize("C,gap,nu", [(0.3, 0.7, 2.0), (0.9, 0.05, 1.0), (0.5, 1.0, 1.0)])
def test_expm_quantiles_equal_uniformized_ones(C, gap, nu):
    wa, wT = np.array([C]), np.array([[-gap]])
    la, lT = ph.convolution(wa, wT, np.ones(1), np.array([[-nu]]))
    ps = np.array([0.5, 0.9, 0.99, 0.9999])
    np.testing.assert_allclose(S._quantiles(la, lT, ps, expm=True), S._quantiles(la, lT, ps), rtol=1e-9)


def test_a_trillion_hosts_answer_exactly(capsys):
    spec = SplitMerge.from_rho(10**12, 1, 1, 0.9)
    e = S.exact_results(spec, [0.5, 0.99])
    assert e["delay_method"] == "erlang-c" and e["p_wait"] < 1e-300  # a queue of 1e12 servers at load 0.9 never waits
    assert e["mean_latency"] == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(e["latency_percentile"], [np.log(2), np.log(100)], rtol=1e-9)
    assert main(["split-merge", "exact", "-n", str(10**12), "-r", "1", "-q", "1", "--load", "0.9"]) == 0
    assert "latency p99   4.60517" in capsys.readouterr().out
