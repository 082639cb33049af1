"""The numba simulators against exact results (99 % CIs over fixed-seed replications, with power controls that
must be rejected by the same test), the n-host = ⌊n/r⌋-server equivalence on one workunit sequence, bad inputs."""
import numpy as np
import pytest

from sojourn.core.estimates.stats import mean_ci
from sojourn.split_merge import kernel as K
from sojourn.split_merge.model import SplitMerge
from sojourn.split_merge.order_stats import order_statistic_moments
from sojourn.split_merge.simulate import concat_replications, simulate, simulate_replication
from sojourn.split_merge.solve import erlang_c, exact_results
from support import split_merge_reference as REF

PH3 = "phasetype:alpha=0.5/0.3/0.2,T=-2/1/0.5|0.3/-1.5/0.2|0/0.4/-3"
CONF = 0.99


def _within(ds, var, value):
    m, h = mean_ci(ds[var].values, confidence=CONF)
    return abs(m - value) <= h, m, h


def _check(ds, var, exact, wrong):
    ok, m, h = _within(ds, var, exact)
    assert ok, f"{var}: simulated {m:.5g} ± {h:.3g} (99% CI) vs exact {exact:.5g}"
    bad, _, _ = _within(ds, var, wrong)
    assert not bad, f"power control: the wrong value {wrong:.5g} is inside {m:.5g} ± {h:.3g}"


def test_split_merge_matches_pollaczek_khinchine_r_equals_n():
    s = SplitMerge.from_rho(3, 3, 2, 0.75, PH3)
    ds = simulate(s, workunits=200_000, replications=10, seed=11)
    e = exact_results(s)
    m1 = s.mean_service
    # power control: M/M/1 with the same mean service (ignores the order statistic's variability)
    wrong = s.rho / (1 - s.rho) * m1
    _check(ds, "mean_delay", e["mean_delay"], wrong)
    _check(ds, "mean_latency", e["mean_latency"], wrong + m1)
    _check(ds, "host_utilisation", s.rho, s.rho * 1.02)


def test_split_merge_matches_erlang_c_q1_exponential():
    s = SplitMerge.from_rho(11, 2, 1, 0.9, "exponential:rate=1.5")  # c = 5, one host never usable
    ds = simulate(s, workunits=200_000, replications=10, seed=12)
    e = exact_results(s)
    assert e["delay_method"] == "erlang-c"
    nu, c = 2 * 1.5, 5
    # power control: the same Erlang C formula at a load 2 % higher
    lam2 = s.arrival_rate * 1.02
    wrong = erlang_c(c, lam2 / nu) / (c * nu - lam2)
    _check(ds, "mean_delay", e["mean_delay"], wrong)
    _check(ds, "mean_latency", e["mean_latency"], wrong + 1 / nu)


def test_split_merge_matches_the_qbd_for_several_super_servers():
    s = SplitMerge.from_rho(7, 2, 2, 0.8, PH3)  # M/PH/3 with 9-phase S_{2:2}
    e = exact_results(s)
    assert e["delay_method"] == "qbd"
    ds = simulate(s, workunits=150_000, replications=10, seed=13)
    m1, m2, _ = order_statistic_moments(s.replica_law, 2, 2)
    # power control: Erlang C with exponential service of the same mean
    nu = 1 / m1
    wrong = erlang_c(3, s.arrival_rate / nu) / (3 * nu - s.arrival_rate)
    _check(ds, "mean_delay", e["mean_delay"], wrong)


def test_exact_latency_percentile_is_reproduced():
    s = SplitMerge.from_rho(3, 3, 2, 0.75, PH3)
    e = exact_results(s, percentiles=[0.99])
    ds = simulate(s, workunits=200_000, replications=10, seed=14, dt=0.01, t_max=100.0)
    from sojourn.split_merge.summary import percentile_per_replication

    per = percentile_per_replication(ds, "latency", [0.99])[:, 0]
    m, h = mean_ci(per, confidence=CONF)
    assert abs(m - e["latency_percentile"][0]) <= h  # interpolated within its bin: no grid-step allowance
    assert abs(m - 1.05 * e["latency_percentile"][0]) > h  # power control: 5 % off


def test_fork_join_r1_is_fcfs_mmn_and_r_equals_n_q1_is_mm1():
    s = SplitMerge.from_rho(5, 1, 1, 0.8, "exponential", model="fork_join")
    ds = simulate(s, workunits=150_000, replications=10, seed=15)
    lam = s.arrival_rate
    exact = erlang_c(5, lam) / (5 - lam)
    _check(ds, "mean_delay", exact, erlang_c(5, lam * 1.02) / (5 - lam * 1.02))
    # r = n, q = 1: every host is free when the winning replica ends, so M/M/1 at rate n·μ
    s = SplitMerge.from_rho(3, 3, 1, 0.8, "exponential", model="fork_join")
    ds = simulate(s, workunits=150_000, replications=10, seed=16)
    exact = exact_results(s.with_model("split_merge"))["mean_latency"]
    _check(ds, "mean_latency", exact, exact * 1.05)


def test_fork_join_cancellation_beats_split_merge_for_q_below_r():
    """Fork-join lets the replicas of a workunit start as hosts free up: its mean latency is below split-merge's
    (a property, checked with CIs of both)."""
    sm = SplitMerge.from_rho(12, 3, 2, 0.8, "hyperexponential")
    a = simulate(sm, workunits=50_000, replications=6, seed=17)
    b = simulate(sm.with_model("fork_join"), workunits=50_000, replications=6, seed=17)
    ma, ha = mean_ci(a["mean_latency"].values, confidence=CONF)
    mb, hb = mean_ci(b["mean_latency"].values, confidence=CONF)
    assert mb + hb < ma - ha


@pytest.mark.parametrize("n,r", [(5, 2), (7, 7), (100, 3), (11, 4), (9, 1)])
def test_n_hosts_equal_floor_n_over_r_servers_on_one_sequence(n, r):
    rng = np.random.default_rng(n * 100 + r)
    c = n // r
    N = 100_000
    inter = rng.exponential(1 / (0.95 * c), N)
    service = rng.gamma(0.3, 1 / 0.3, N)  # scv 3.3
    d_hosts = REF.split_merge_delays(inter, service, n, r)
    d_servers = REF.mgc_delays(inter, service, c)
    np.testing.assert_array_equal(d_hosts, d_servers)
    assert d_hosts.mean() > 0.5
    # control: with one super-server fewer the delays differ
    assert not np.array_equal(d_hosts, REF.mgc_delays(inter, service, max(c - 1, 1))) or c == 1


@pytest.mark.parametrize("c", [1, 2, 3, 7, 16, 33, 100])
def test_winner_tree_recursion_equals_mgc_and_the_host_level_model(c):
    """The super-server recursion of the streaming kernel (winner tree, padded to a power of two) gives the
    plain M/G/c delays and the n-host model's, c = 1 (Lindley) to 100, at high load."""
    rng = np.random.default_rng(c)
    N = 50_000
    inter = rng.exponential(1 / (0.97 * c), N)
    service = rng.gamma(0.3, 1 / 0.3, N)
    d = REF.super_server_delays(inter, service, c)
    np.testing.assert_array_equal(d, REF.mgc_delays(inter, service, c))
    np.testing.assert_array_equal(d, REF.split_merge_delays(inter, service, 3 * c + 2, 3))
    assert (d > 0).mean() > 0.3


@pytest.mark.parametrize("n,r,q,load", [(100, 1, 1, 0.9), (100, 3, 2, 0.97), (100, 10, 3, 0.9), (100, 10, 1, 0.3),
                                         (20, 5, 3, 0.95), (7, 3, 1, 0.8), (5, 5, 5, 0.9), (3, 3, 2, 0.9)])
def test_fork_join_sorted_window_equals_the_scan(n, r, q, load):
    """The streaming kernel's fork-join (a sorted window of the n free times; the r least loaded are its first
    r) gives exactly the delays, latencies and computing of the plain O(n·r) scan for the r least-loaded hosts,
    with ties (a seventh of the replica times rounded, all hosts free at 0) and long enough runs for the
    window to wrap to the buffer's start. ``load``: of the n hosts, by the host-time a workunit computes alone."""
    rng = np.random.default_rng(n * 1000 + r * 10 + q)
    N = 30_000
    X = rng.gamma(0.5, 2.0, (N, r))
    X[::7] = np.round(X[::7], 1)
    alone = REF.fork_join_delays(np.full(N, 1e3), X, n, r, q)[2].mean()
    inter = rng.exponential(alone / (load * n), N)
    window = REF.fork_join_delays(inter, X, n, r, q)
    np.testing.assert_array_equal(window, REF.fork_join_delays_by_scan(inter, X, n, r, q))
    assert (window[0] > 0).mean() > (0.2 if load > 0.5 else 0.0)  # replicas do queue
    # control: the same sequence on one host fewer differs (unless it cannot: n = r)
    if n > r:
        assert not np.array_equal(window, REF.fork_join_delays(inter, X, n - 1, r, q))


@pytest.mark.parametrize("law_text", ["hyperexponential", PH3, "lognormal:sigma=1"])
def test_fork_join_kernel_equals_the_sequence_recursion_on_its_own_draws(law_text):
    """run_fork_join's sums and histogram are those of fork_join_delays on the kernel's own draws, on its three
    draw paths: closed path tables inline (hyperexponential: per workunit its inter-arrival time, then its r
    replicas), open ones a chunk at a time (PH3: CHUNK inter-arrival times, then CHUNK·r replicas), and the
    Generator (lognormal)."""
    from numba import njit

    from sojourn.core.laws import ph_walk, sfc64
    from sojourn.core.laws.sampling import sample_law
    from sojourn.split_merge.simulate import _replica_walk

    @njit
    def generator_draws(rng, N, r, scale, code, p):
        inter = np.empty(N)
        X = np.empty((N, r))
        for i in range(N):
            inter[i] = rng.exponential(scale)
            for j in range(r):
                X[i, j] = sample_law(code, p, rng)
        return inter, X

    n, r, q, N = 100, 5, 3, 20_000
    spec = SplitMerge.from_rho(n, r, q, 0.95, law_text, model="fork_join")
    code, p = spec.replica_law.kernel_spec()
    walk = _replica_walk(spec.replica_law)
    scale = 1.0 / spec.arrival_rate
    rng = np.random.Generator(np.random.SFC64(5))
    st = sfc64.state_of(rng.bit_generator)
    if walk is None:
        inter, X = generator_draws(rng, N, r, scale, code, p)
    elif ph_walk.path_shape.py_func(walk[0], walk[3], walk[4])[2] >= 0:
        inter, X = np.empty(N), np.empty((N, r))
        e, w = np.empty(1), np.empty(r)
        for i in range(N):
            sfc64.fill_standard_exponential(e, st)
            ph_walk.fill(X[i], w, st, *walk)
            inter[i] = e[0] * scale
    else:
        chunks = -(-N // K.CHUNK)
        inter, X = np.empty(chunks * K.CHUNK), np.empty((chunks * K.CHUNK, r))
        for k in range(chunks):
            sl = slice(k * K.CHUNK, (k + 1) * K.CHUNK)
            sfc64.fill_standard_exponential(inter[sl], st)
            xs, w = np.empty(K.CHUNK * r), np.empty(K.CHUNK * r)
            ph_walk.fill(xs, w, st, *walk)
            X[sl] = xs.reshape(K.CHUNK, r)
        inter, X = inter[:N] * scale, X[:N]
    ref = REF.fork_join_delays(inter, X, n, r, q)
    dt, nb = 0.01, 3001
    hd, hl = np.zeros(nb, np.int64), np.zeros(nb, np.int64)
    rng = np.random.Generator(np.random.SFC64(5))
    args = (n, r, q, spec.arrival_rate, code, p, 0, 0.0, N, np.inf, dt, hd, hl, rng)
    acc = K.run_fork_join(*args) if walk is None else K.run_fork_join(*args, sfc64.state_of(rng.bit_generator), walk)
    fields = dict(zip(K.ACC_FIELDS, acc, strict=True))
    assert fields["recorded"] == N
    assert fields["delay_sum"] == pytest.approx(ref[0].sum(), rel=1e-12)
    assert fields["latency_sum"] == pytest.approx(ref[1].sum(), rel=1e-12)
    assert fields["computing"] == pytest.approx(ref[2].sum(), rel=1e-12)
    np.testing.assert_array_equal(hl, np.bincount(np.minimum((ref[1] * (1.0 / dt)).astype(int), nb),
                                                  minlength=nb + 1)[:nb])
    assert (ref[0] > 0).mean() > 0.05


def _kernel_draws(law, n, r, q, lam, seed, N):
    """Reproduce the streaming kernel's draws: per chunk, CHUNK inter-arrival times, then CHUNK workunits'
    (S_{q:r}, computing time) — from the inline SFC64 stream (phase-type laws) or the Generator (others)."""
    from sojourn.core.laws import ph_walk, sfc64
    from sojourn.split_merge.simulate import _walk

    code, p = law.kernel_spec()
    walk = _walk(law, q, r)
    rng = np.random.Generator(np.random.SFC64(seed))
    st = sfc64.state_of(rng.bit_generator)
    inter, svc = [], []
    if walk is not None and ph_walk.path_shape.py_func(walk[0], walk[3], walk[4])[2] >= 0:
        # closed paths (exponential, hyperexponential): per workunit, its inter-arrival time then its draw
        e, s, w = np.empty(1), np.empty(1), np.empty(1)
        for _ in range(N):
            sfc64.fill_standard_exponential(e, st)
            ph_walk.fill(s, w, st, *walk)
            inter.append(e[0] / lam)
            svc.append(s[0])
        return np.array(inter), np.array(svc), walk
    while len(inter) < N:
        e = np.empty(K.CHUNK)
        if walk is None:
            e[:] = rng.standard_exponential(K.CHUNK)
        else:
            sfc64.fill_standard_exponential(e, st)
        inter.extend(e / lam)
        s, w = np.empty(K.CHUNK), np.empty(K.CHUNK)
        K.fill_order_stats(r, q, code, p, s, w, rng, st, K.NO_WALK if walk is None else walk)
        svc.extend(s)
    return np.array(inter[:N]), np.array(svc[:N]), walk


@pytest.mark.parametrize("law_text,n,r,q", [(PH3, 20, 3, 2), ("lognormal:sigma=1", 20, 3, 2),
                                            ("exponential", 100, 1, 1), ("hyperexponential", 100, 10, 3)])
def test_streaming_kernel_equals_mgc_on_its_own_draws(law_text, n, r, q):
    """Reproduce the kernel's draws, run the c-server reference on them: the kernel's recorded delay sum and
    histogram equal the reference's (both draw paths: the inline stream and the Generator)."""
    spec = SplitMerge.from_rho(n, r, q, 0.95, law_text)
    law, lam, seed, N = spec.replica_law, spec.arrival_rate, 99, 10_000
    inter, svc, walk = _kernel_draws(law, n, r, q, lam, seed, N)
    code, p = law.kernel_spec()
    dt, nb = 0.01, 3001
    hd, hl = np.zeros(nb, np.int64), np.zeros(nb, np.int64)
    rng = np.random.Generator(np.random.SFC64(seed))
    args = (n, r, q, lam, code, p, 0, 0.0, N, np.inf, dt, hd, hl, rng)
    if walk is None:
        acc = K.run_split_merge(*args)
    else:
        from sojourn.core.laws import sfc64

        acc = K.run_split_merge(*args, sfc64.state_of(rng.bit_generator), walk)
    ref = REF.mgc_delays(inter, svc, n // r)
    fields = dict(zip(K.ACC_FIELDS, acc, strict=True))
    assert fields["recorded"] == N
    assert fields["delay_sum"] == pytest.approx(ref.sum(), rel=1e-12)
    assert fields["latency_sum"] == pytest.approx((ref + svc).sum(), rel=1e-12)
    assert (ref > 0).mean() > 0.1  # the queue is loaded: many workunits wait
    np.testing.assert_array_equal(hd, np.bincount(np.minimum((ref * (1.0 / dt)).astype(int), nb),
                                                  minlength=nb + 1)[:nb])


def test_replication_is_reproducible_alone_and_histograms_are_complete():
    s = SplitMerge.from_rho(10, 2, 2, 0.7, "erlang:k=2,rate=2")
    ds = simulate(s, workunits=5_000, replications=3, seed=3, t_max=20.0, dt=0.05)
    one = simulate_replication(s, 2, seed=3, workunits=5_000, t_max=20.0, dt=0.05)
    for v in ("latency_count", "delay_sum", "mean_latency", "throughput"):
        np.testing.assert_array_equal(ds[v].sel(replication=2).values, one[v].sel(replication=2).values)
    total = ds["latency_count"].sum("t") + ds["latency_overflow"]
    np.testing.assert_array_equal(total.values, ds["workunits"].values)
    assert (ds["simulated_workunits"] == 5_500).all()  # default warm-up: workunits // 10
    joined = concat_replications([simulate_replication(s, k, seed=3, workunits=5_000, t_max=20.0, dt=0.05)
                                  for k in (1, 0, 2)])
    np.testing.assert_array_equal(joined["mean_delay"].values, ds["mean_delay"].values)
    h = simulate(s, horizon=2_000.0, warmup_time=200.0, seed=3, t_max=20.0, dt=0.05)
    n = int(h["workunits"][0])
    assert abs(n - s.arrival_rate * 1_800) < 5 * np.sqrt(s.arrival_rate * 1_800)


@pytest.mark.parametrize("kwargs,match", [
    ({"workunits": 10, "horizon": 5.0}, "exactly one of workunits"),
    ({}, "exactly one of workunits"),
    ({"workunits": 0}, "workunits must be an integer >= 1"),
    ({"horizon": 10.0, "warmup_time": 10.0}, r"warmup_time must be in \[0, horizon=10\)"),
    ({"workunits": 10, "t_max": 1.005, "dt": 0.01}, "t_max must be a multiple of dt"),
    ({"workunits": 10, "replications": 0}, "replications must be an integer >= 1"),
    ({"workunits": 10, "seed": -1}, "seed must be an integer >= 0"),
])
def test_bad_simulation_arguments_are_rejected(kwargs, match):
    s = SplitMerge.from_rho(4, 2, 1, 0.5)
    with pytest.raises(ValueError, match=match):
        simulate(s, **kwargs)


def test_spec_must_be_a_split_merge():
    with pytest.raises(ValueError, match="spec must be a sojourn.split_merge.SplitMerge"):
        simulate("n=3", workunits=10)
