"""Spec validation (before any compute, naming the field) and the exact results: P-K, Erlang C, the M/PH/c QBD."""
import math

import numpy as np
import pytest

from sojourn.core.laws import phase_type as ph
from sojourn.split_merge.model import SplitMerge
from sojourn.split_merge.order_stats import order_statistic_moments, order_statistic_ph
from sojourn.split_merge.solve import erlang_c, exact_results, mph1_delay_ph, mphc_qbd, pollaczek_khinchine

PH3 = "phasetype:alpha=0.5/0.3/0.2,T=-2/1/0.5|0.3/-1.5/0.2|0/0.4/-3"


@pytest.mark.parametrize("args,match", [
    ((3, 4, 1, 0.1, "exponential"), r"replicas must be an integer in \[1, hosts=3\]; got 4"),
    ((5, 3, 4, 0.1, "exponential"), r"quorum must be an integer in \[1, replicas=3\]; got 4"),
    ((5, 3, 0, 0.1, "exponential"), r"quorum must be an integer >= 1; got 0"),
    ((0, 1, 1, 0.1, "exponential"), r"hosts must be an integer >= 1"),
    ((5, 2, 1, 4.0, "exponential"), r"arrival_rate must be < floor\(hosts/replicas\)/E\[S_q:r\] = 2/0.5 = 4"),
    ((5, 2, 1, -1.0, "exponential"), r"arrival_rate must be in \(0, inf\)"),
    ((5, 2, 1, 1.0, "phasetype:alpha=1/0,T=-1/2|0/-2"), r"replica_law: phasetype\.T must have non-positive row sums"),
    ((5, 2, 1, 1.0, "phasetype:alpha=0.5/0.6,T=-1/0|0/-2"), r"replica_law: phasetype\.alpha must .*sum to 1"),
    ((5, 2, 1, 1.0, "nosuchlaw"), r"replica_law: unknown law"),
])
def test_bad_specs_are_rejected_naming_the_field(args, match):
    with pytest.raises(ValueError, match=match):
        SplitMerge(*args)


def test_from_rho_sets_the_seeds_lambda():
    s = SplitMerge.from_rho(100, 3, 2, 0.9, "exponential")
    assert s.super_servers == 33
    assert s.mean_service == pytest.approx(1 / 3 + 1 / 2)
    assert s.arrival_rate == pytest.approx(0.9 * 33 / (1 / 3 + 1 / 2))
    assert s.max_throughput == pytest.approx(33 / (1 / 3 + 1 / 2))
    with pytest.raises(ValueError, match=r"rho must be in \(0, 1\)"):
        SplitMerge.from_rho(100, 3, 2, 1.0)


def test_pk_for_the_notes_example():
    """split_merge.md §4: n = r = 3, q = 2, the test PH, ρ = 0.9 → E[D] = 5.228452 (βB⁻²1 form = P-K)."""
    s = SplitMerge.from_rho(3, 3, 2, 0.9, PH3)
    e = exact_results(s)
    assert e["delay_method"] == "pollaczek-khinchine" and e["exact"]
    assert e["mean_delay"] == pytest.approx(5.228452, abs=1e-6)
    beta, Bq = order_statistic_ph(s.replica_law, 2, 3)
    lam = s.arrival_rate
    paper6 = lam * (beta @ np.linalg.matrix_power(np.linalg.inv(Bq), 2) @ np.ones(beta.size)) / (
        1 + lam * (beta @ np.linalg.inv(Bq) @ np.ones(beta.size)))  # the paper's (6)
    assert e["mean_delay"] == pytest.approx(paper6, rel=1e-12)
    assert e["mean_latency"] == pytest.approx(paper6 + s.mean_service, rel=1e-12)


def test_mph1_delay_law_has_the_pk_mean_and_atom():
    s = SplitMerge.from_rho(3, 3, 2, 0.8, PH3)
    beta, Bq = order_statistic_ph(s.replica_law, 2, 3)
    a, T = mph1_delay_ph(s.arrival_rate, beta, Bq)
    assert 1 - a.sum() == pytest.approx(1 - 0.8, abs=1e-12)  # P(no wait) = 1 − ρ
    m1, m2, _ = order_statistic_moments(s.replica_law, 2, 3)
    assert ph.mean(a, T) == pytest.approx(pollaczek_khinchine(s.arrival_rate, m1, m2), rel=1e-10)


@pytest.mark.parametrize("r,delay", [(1, 0.0217), (2, 0.0364), (3, 0.0456), (5, 0.0551), (10, 0.0669)])
def test_erlang_c_table_of_the_note(r, delay):
    """split_merge.md §4 table: n = 100, q = 1, Exp(1) replicas, ρ = 0.9."""
    e = exact_results(SplitMerge.from_rho(100, r, 1, 0.9, "exponential"))
    assert e["delay_method"] == "erlang-c"
    assert e["mean_delay"] == pytest.approx(delay, abs=6e-5)
    assert e["mean_latency"] == pytest.approx(delay + 1 / r, abs=6e-5)


def test_erlang_c_matches_the_textbook_sum():
    c, a = 7, 5.3
    rho = a / c
    top = a**c / math.factorial(c) / (1 - rho)
    assert erlang_c(c, a) == pytest.approx(top / (sum(a**k / math.factorial(k) for k in range(c)) + top), rel=1e-12)


@pytest.mark.parametrize("n,r", [(10, 2), (30, 3), (6, 1)])
def test_qbd_equals_erlang_c(n, r):
    s = SplitMerge.from_rho(n, r, 1, 0.85, "exponential")
    res = mphc_qbd(s.arrival_rate, s.super_servers, *order_statistic_ph(s.replica_law, 1, r))
    assert res["mean_delay"] == pytest.approx(exact_results(s)["mean_delay"], rel=1e-9)
    assert res["p_wait"] == pytest.approx(exact_results(s)["p_wait"], rel=1e-9)


@pytest.mark.parametrize("q", [1, 2, 3])
def test_qbd_equals_pk_for_one_super_server(q):
    s = SplitMerge.from_rho(4, 3, q, 0.7, PH3)
    res = mphc_qbd(s.arrival_rate, 1, *order_statistic_ph(s.replica_law, q, 3))
    assert res["mean_delay"] == pytest.approx(exact_results(s)["mean_delay"], rel=1e-9)


def test_qbd_is_used_and_labelled_and_refuses_a_huge_state_space():
    s = SplitMerge.from_rho(6, 2, 2, 0.9, PH3)
    e = exact_results(s)
    assert e["delay_method"] == "qbd" and e["exact"] and e["qbd_phases"] > 0
    big = SplitMerge.from_rho(100, 10, 1, 0.9, "hyperexponential")  # C(10+11-1, 10) phases
    e = exact_results(big)
    assert e["delay_method"] == "none" and not e["exact"] and math.isnan(e["mean_delay"])
    assert exact_results(s.with_model("fork_join"))["delay_method"] == "none"


def test_non_ph_law_moments_by_quadrature_are_labelled():
    s = SplitMerge.from_rho(3, 3, 2, 0.5, "uniform:low=0,high=2")
    m1, m2, how = order_statistic_moments(s.replica_law, 2, 3)
    assert how == "quadrature"
    assert m1 == pytest.approx(1.0, abs=1e-8) and m2 == pytest.approx(1.2, abs=1e-8)  # 2·Beta(2,2)
    e = exact_results(s)
    assert e["moments_method"] == "quadrature" and e["delay_method"] == "pollaczek-khinchine"
    assert np.isnan(e["latency_percentile"]).all() and e["percentile_method"] == "none"
