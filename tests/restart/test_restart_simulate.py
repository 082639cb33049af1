"""Simulation: signal semantics vs the product form within 99% CIs (with power controls that must fail),
timeout semantics at very low load vs the signal model, reproducibility and the dataset."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy import stats

from sojourn.core.laws.distributions import Exponential
from sojourn.restart.files import load_model
from sojourn.restart.model import Network
from sojourn.restart.simulate import (
    SimulationSpec,
    concat_replications,
    simulate,
    simulate_replication,
    spec_for,
    summary,
)
from sojourn.restart.solve import solve

CONF = 0.99
REPS = 10


def inside(ci, value):
    m, h = ci
    return abs(value - m) <= h


@pytest.mark.parametrize("example, rates, horizon", [
    ("example1", (0.1, 0.8263, 5.0), 2e6),  # lambda = 0.012: 24 000 jobs per replication
    ("example2", (0.5, 2.0, 10.0), 2e5),  # lambda = 0.1: 20 000 jobs per replication
])
def test_signal_semantics_matches_product_form(example, rates, horizon):
    net = load_model(example)
    for g in rates:
        ds = simulate(spec_for(net, "signal", g), replications=REPS, seed=1, horizon=horizon, warmup=horizon / 20)
        s = summary(ds, confidence=CONF)
        pf = solve(net.with_signal_rate(g))
        assert inside(s["response_time"], pf.response_time), (g, s["response_time"], pf.response_time)
        assert inside(s["mean_number"], pf.mean_number[0]), (g, s["mean_number"], pf.mean_number[0])
        assert inside(s["throughput"], net.arrival_rate)
        # per class: the time-average number of each station vs E[N^(k)], a simultaneous 99% family
        # (Bonferroni over the K classes: each at 1 - 0.01/K)
        m = ds["mean_number_station"].values
        K = m.shape[1]
        half = stats.t.ppf(1 - (1 - CONF) / (2 * K), REPS - 1) * m.std(axis=0, ddof=1) / np.sqrt(REPS)
        assert np.all(np.abs(m.mean(axis=0) - pf.mean_number_station) <= half + 1e-12)
        # power control: the same CI rejects the model with success probabilities halved
        wrong = solve(net.with_signal_rate(g).with_success(0.5))
        assert not inside(s["response_time"], wrong.response_time)
        assert not inside(s["mean_number"], wrong.mean_number[0])


def test_exponential_timeouts_at_low_load_approach_signal_semantics():
    net = load_model("example2")
    q = net.queues[0]
    low = replace(net, queues=(replace(q, classes=(replace(q.classes[0], arrival_rate=0.002),) + q.classes[1:]),))
    theta = 1.0
    ds = simulate(spec_for(low, "timeout_exponential", theta), replications=REPS, seed=2, horizon=5e6, warmup=1e5)
    s = summary(ds, confidence=CONF)
    pf = solve(low.with_signal_rate(theta))
    assert pf.queue_load[0] < 0.003
    assert inside(s["response_time"], pf.response_time)
    assert not inside(s["response_time"], solve(low.with_signal_rate(1.3 * theta)).response_time)  # power
    assert not inside(s["response_time"], solve(low.with_signal_rate(theta / 1.3)).response_time)
    # at lambda = 0.1 the two semantics differ (per-job timeouts do not slow down as 1/n): rejected there
    ds = simulate(spec_for(net, "timeout_exponential", theta), replications=REPS, seed=2, horizon=2e5, warmup=1e4)
    s = summary(ds, confidence=CONF)
    assert s["response_time"][0] + s["response_time"][1] < solve(net.with_signal_rate(theta)).response_time


def test_replication_is_reproducible_and_independent_of_batching():
    sp = spec_for(load_model("example2"), "timeout_deterministic", 2.0)
    kw = dict(horizon=2e4, warmup=1e3)
    batch = simulate(sp, replications=3, seed=5, **kw)
    one = simulate_replication(sp, 2, seed=5, **kw)
    for v in ("count", "sum", "mean_number_type", "restart_count", "events"):
        np.testing.assert_array_equal(batch[v].sel(replication=[2]).values, one[v].values)
    joined = concat_replications([simulate_replication(sp, k, seed=5, **kw) for k in (1, 0, 2)])
    np.testing.assert_array_equal(joined["count"].values, batch["count"].values)
    assert not np.array_equal(batch["count"].values[0], batch["count"].values[1])


def test_dataset_contents():
    sp = spec_for(load_model("example1"), "signal", 1.0)
    ds = simulate(sp, replications=2, horizon=1e5, warmup=5e3, dt=0.05, t_max=100.0)
    assert ds.sizes["t"] == 2001 and ds.sizes["type"] == 3 and ds.sizes["queue"] == 1
    n = ds["count"].sum("t") + ds["overflow"]
    np.testing.assert_array_equal(n.values, ds["n_customers"].values)
    np.testing.assert_array_equal(ds["restart_count"].sum("restarts").values, ds["n_customers"].values)
    for v in ds.data_vars.values():
        assert "units" in v.attrs and "long_name" in v.attrs
    assert ds.attrs["semantics"] == "signal" and "git_commit" in ds.attrs and "seed_entropy" in ds.attrs
    assert SimulationSpec.from_dict(__import__("json").loads(ds.attrs["spec"])) == sp


def test_invalid_simulation_arguments():
    net = load_model("example1")
    with pytest.raises(ValueError, match="timeout must be a law"):
        SimulationSpec(net, "timeout")
    with pytest.raises(ValueError, match="semantics must be one of"):
        SimulationSpec(net, "resume")
    with pytest.raises(ValueError, match="timeout is only allowed"):
        SimulationSpec(net, "signal", Exponential(1.0))
    with pytest.raises(ValueError, match="horizon must be > warmup"):
        simulate(SimulationSpec(net), horizon=10.0, warmup=10.0)
    with pytest.raises(ValueError, match="restart_rate must be in"):
        spec_for(net, "signal", 0.0)


def test_network_with_routing_and_departure_signals_matches_product_form():
    """The kernel's network paths (routing with class change, departures that become signals at another queue)
    against the product form of the non-linear traffic equations, per (queue, class), 99% Bonferroni family."""
    from test_restart_solve import gelenbe_network  # the instance checked against the exact CTMC

    net = gelenbe_network()
    pf = solve(net)
    ds = simulate(SimulationSpec(net), replications=REPS, seed=3, horizon=1e5, warmup=5e3)
    m = ds["mean_number_station"].values
    K = m.shape[1]
    half = stats.t.ppf(1 - (1 - CONF) / (2 * K), REPS - 1) * m.std(axis=0, ddof=1) / np.sqrt(REPS)
    assert np.all(np.abs(m.mean(axis=0) - pf.mean_number_station) <= half)
    s = summary(ds, confidence=CONF)
    assert inside(s["response_time"], pf.response_time)
    # power control: ignoring the departures that become signals (the linear solution) is rejected
    lin = solve(Network(net.queues, routing=net.routing, signals=(("q2", "C", "q1", 0.0),)))
    assert not np.all(np.abs(m.mean(axis=0) - lin.mean_number_station) <= half)
