"""Product form (eqs. 1-5 of the reference notes) against the exact truncated CTMC, the closed form and g*."""
from __future__ import annotations

import numpy as np
import pytest
from restart_ctmc_reference import solve_ctmc

from sojourn.restart.files import load_model
from sojourn.restart.model import JobClass, Network, Queue
from sojourn.restart.solve import closed_form, effective_service, optimal_signal_rate, solve


def two_class_queue(restart="anew", signal_rate=0.8):
    """The notes' §4 instance: K = 2 classes, 2 phases each, non-trivial H, class-2 entry (0.6, 0.4),
    alpha = (0.7, 1.0 | 0.5, 0.9), restart 1 -> 2 and 2 -> 2 (rates and H chosen here)."""
    c1 = JobClass("c1", rates=(2.0, 3.0), H=((0.0, 0.6), (0.2, 0.0)), arrival_rate=0.2, success=(0.7, 1.0),
                  restart_to={"c2": 1.0})
    c2 = JobClass("c2", rates=(1.5, 4.0), entry=(0.6, 0.4), H=((0.1, 0.5), (0.0, 0.0)), arrival_rate=0.1,
                  success=(0.5, 0.9), restart_to={"c1": 0.3, "c2": 0.7} if restart == "keep_phase" else {"c2": 1.0})
    return Network((Queue("q", (c1, c2), signal_rate=signal_rate, restart=restart),), name="two_class")


def gelenbe_network():
    """Two queues: q1 (classes A, B with 2 phases each, restart A -> B), q2 (class C, 1 phase). A's
    departures go to q2 as C w.p. 0.5; C's departures become restart signals at q1 w.p. 0.6 and join q1
    as B w.p. 0.2: the signal rate at q1 depends on the loads (non-linear traffic equations)."""
    a = JobClass("A", rates=(3.0, 2.0), H=((0.0, 0.5), (0.0, 0.0)), arrival_rate=0.15, success=(1.0, 0.6),
                 restart_to="B")
    b = JobClass("B", rates=(4.0, 2.5), entry=(0.5, 0.5), H=((0.0, 0.3), (0.1, 0.0)), arrival_rate=0.03,
                 success=(0.4, 0.8), restart_to="B")
    c = JobClass("C", rates=(1.5,), arrival_rate=0.05, success=0.0)
    return Network((Queue("q1", (a, b), signal_rate=0.2), Queue("q2", (c,))),
                   routing=(("q1", "A", "q2", "C", 0.5), ("q2", "C", "q1", "B", 0.2)),
                   signals=(("q2", "C", "q1", 0.6),), name="gelenbe")


@pytest.mark.parametrize("restart", ["anew", "keep_phase"])
def test_single_queue_matches_exact_ctmc(restart):
    net = two_class_queue(restart)
    sol = solve(net)
    assert 0.2 < sol.queue_load[0] < 0.25  # truncation at 16 jobs leaves ~ rho^17 < 1e-11
    states, pi = solve_ctmc(net, nmax=16)
    pf = np.array([sol.probability(s) for s in states])
    assert np.max(np.abs(pi - pf)) < 1e-8
    mean_type = pi @ states
    np.testing.assert_allclose(mean_type, sol.mean_number_type, rtol=0, atol=1e-8)
    assert abs(pi @ states.sum(axis=1) - sol.mean_number[0]) < 1e-8
    # a wrong load (restart success probabilities halved) must not pass the same check
    wrong = solve(net.with_success(0.5))
    assert np.max(np.abs(pi - np.array([wrong.probability(s) for s in states]))) > 1e-4


def test_network_with_departure_signals_matches_exact_ctmc():
    net = gelenbe_network()
    sol = solve(net)
    assert np.all(sol.queue_load < 0.13)  # truncation at 11 jobs per queue leaves ~ rho^12 < 1e-10
    assert sol.iterations > 1  # the non-linear fixed point was iterated
    assert sol.signal_rate[0] > 0.2  # departures add to the external signals
    assert abs(sol.throughput - net.arrival_rate) < 1e-12  # jobs leave (or turn into signals) as they came
    states, pi = solve_ctmc(net, nmax=11)
    pf = np.array([sol.probability(s) for s in states])
    assert np.max(np.abs(pi - pf)) < 1e-8
    np.testing.assert_allclose(pi @ states, sol.mean_number_type, rtol=0, atol=1e-8)
    # the linear solution (departure signals ignored) is rejected by the same check
    no_signals = Network(net.queues, routing=net.routing, signals=(("q2", "C", "q1", 0.0),), name="nosig")
    wrong = solve(no_signals)
    assert np.max(np.abs(pi @ states - wrong.mean_number_type)) > 1e-4


def test_example_values_of_the_notes():
    ex1 = load_model("example1")
    for g, et in [(0.0, 1.6833), (0.1, 1.2629), (0.5, 0.9982), (1.0, 0.9816), (5.0, 1.3658)]:
        assert abs(solve(ex1.with_signal_rate(g)).response_time - et) < 1e-4
    ex2 = load_model("example2")
    for g, en in [(0.5, 0.19677), (1.0, 0.16870), (2.0, 0.13939), (10.0, 0.11624)]:
        assert abs(solve(ex2.with_signal_rate(g)).mean_number[0] - en) < 1e-5


def test_closed_form_equals_product_form_and_van_moorsel_wolter():
    ex1 = load_model("example1")
    beta = np.array([1.0, 0, 0])
    T = np.array([[-5, 4.5, 0.5], [0, -2, 0], [0, 0, -0.1]])
    t0 = -T.sum(axis=1)
    for g in (0.05, 0.3, 0.8263, 2.0, 7.0):
        cf = closed_form(ex1, g)
        sol = solve(ex1.with_signal_rate(g))
        assert abs(cf["response_time"] - sol.response_time) < 1e-12
        assert abs(cf["mean_number"] - sol.mean_number[0]) < 1e-12
        Lg = beta @ np.linalg.solve(g * np.eye(3) - T, t0)  # E[exp(-g S)]
        assert abs(effective_service(ex1, g) - (1 - Lg) / (g * Lg)) < 1e-12


def test_optimal_rate_example1_against_brute_force_scan():
    ex1 = load_model("example1")
    opt = optimal_signal_rate(ex1, bounds=(0.0, 50.0))
    grid = np.linspace(0.001, 5.0, 50_000)  # step 1e-4
    vals = np.array([closed_form(ex1, g)["response_time"] for g in grid])
    b = int(np.argmin(vals))
    assert abs(opt.signal_rate - grid[b]) <= 1.5e-4
    assert opt.response_time <= vals[b] + 1e-12  # at least as good as every scanned rate
    assert abs(opt.signal_rate - 0.8263) < 1e-3 and abs(opt.response_time - 0.97851) < 1e-5
    assert opt.response_time_without == pytest.approx(1.68333, abs=1e-5)
    # g* does not depend on lambda while stable (notes §3.4)
    q = ex1.queues[0]
    heavier = Network((Queue(q.name, (JobClass("job", q.classes[0].rates, q.classes[0].entry, q.classes[0].H,
                                                arrival_rate=0.4, success=1.0, restart_to="job"),)),))
    assert abs(optimal_signal_rate(heavier, bounds=(0.0, 50.0)).signal_rate - opt.signal_rate) < 1e-4


@pytest.mark.parametrize("bounds", [(0.0, 1e300), (0.0, 1e6), (1e-9, 1e12)])
def test_optimal_rate_found_whatever_the_width_of_the_search_interval(bounds):
    """The scan's log grid starts at the network's own rate scale, not at a millionth of hi: (0, 1e300) used to
    scan only g ≥ 1e294 and answer g* = 0 for example 1."""
    ex1 = load_model("example1")
    opt = optimal_signal_rate(ex1, bounds=bounds)
    assert abs(opt.signal_rate - 0.8263) < 1e-3 and abs(opt.response_time - 0.97851) < 1e-5


def test_optimal_rate_example2():
    opt = optimal_signal_rate(load_model("example2"))
    assert abs(opt.signal_rate - 6.64) < 0.01 and abs(opt.response_time - 1.1153) < 1e-4


def test_dataset_has_units_and_provenance():
    ds = solve(two_class_queue()).to_dataset()
    assert ds["rho"].attrs["units"] == "1" and "git_commit" in ds.attrs and "spec" in ds.attrs
    assert ds.sizes == {"type": 4, "station": 2, "queue": 1}
