"""``sojourn plan`` (issue 14): the least number of JSQ-PS servers R with P(T ≤ d) ≥ p.

* on a grid of (Λ, E[S], d, p, law) cases the planned R meets the target in an independent simulation (99 %
  confidence: its interval does not lie below p) and R − 1 does not (its interval does not lie above p), or the
  plan flags that side's margin as within its evidence's uncertainty;
* impossible targets and malformed inputs are refused with a message naming the field or flag before
  anything is computed (the planner's compute functions are replaced by ones that fail the test);
* --confirm never answers an R that its simulation shows to fail (an accuracy table that trusts an optimistic
  method is corrected by the simulation), and goes down where the method was pessimistic;
* method T answers every exponential R where exact does not run cheaply (the issue's example without any
  simulation), its verdicts are safe against exact where both run and against an independent simulation
  beyond exact's range, and where T fails the accuracy table decides;
* the JSON output's schema, the Python result object and its xarray Dataset; the accuracy table's builder
  and its conservative reader; the CLI answers without importing what it does not need.

Simulated cases use p = 0.99 or 0.999 (10⁴–10⁵ customers per replication): seconds on 2 cores.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import xarray as xr

import sojourn
from sojourn.cli import main
from sojourn.core.estimates.stats import mean_ci
from sojourn.jsq_ps import plan as P
from sojourn.jsq_ps.accuracy import (
    COLUMNS,
    PACKAGE_TABLE,
    SIMULATE,
    build_accuracy,
    parse_accuracy,
    read_accuracy,
    write_accuracy,
)
from sojourn.jsq_ps.model import JSQPS
from sojourn.jsq_ps.simulate import simulate

# -- independent simulation of P(T < d) --------------------------------------------------------------------------
CHECK_SEED, CHECK_REPS = 20_241, 20


def simulated_interval(servers, offered, d, p, law="exponential", confidence=0.99):
    """99 % t-interval of P(T < d) (d in mean service times) over CHECK_REPS replications with a seed the planner
    never uses, each with 50/(1 − p) customers and a warm-up of 20 M/M/R relaxation times."""
    rho = offered / servers
    customers = 50 / (1 - p)
    tau = 1 / (servers * (1 - math.sqrt(rho)) ** 2)
    warmup = 20 * tau
    spec = JSQPS.from_rho(servers, rho, service=law)
    dt = d / 1000
    ds = simulate(spec, horizon=warmup + customers / offered, warmup=warmup, cooldown=0.0, replications=CHECK_REPS,
                  seed=CHECK_SEED, dt=dt, t_max=1000 * dt, occupancy_max=1)
    count, overflow = ds["count"].values, ds["overflow"].values
    prob = count[:, :1000].sum(axis=1) / (count.sum(axis=1) + overflow)
    m, h = mean_ci(prob, confidence=confidence)
    return m - h, m + h


# (arrival rate, mean service, deadline, reliability, service law): an exact answer (R <= 4), T's region (R > 6),
# p = 0.999, and a non-exponential law (simulated); the last also with its load given as --rho
CASES = [
    ("2/ms", "1ms", "10ms", 0.99, "exponential"),
    ("9/ms", "1.2ms", "10ms", 0.99, "exponential"),  # T: R = 12, 13, 14
    ("1000/s", "1ms", "9ms", 0.999, "exponential"),
    ("3/ms", "1ms", "6ms", 0.99, "lognormal:sigma=0.6931471805599453"),
    ("9000/s", "1.2ms", "72ms", 0.9999, "exponential"),  # the issue's example: T at R = 11, 12, 13 (ρ = 0.98 ... 0.83)
]


@pytest.mark.parametrize("arrival, service, deadline, p, law", CASES)
def test_planned_R_meets_the_target_in_simulation_and_R_minus_1_does_not(arrival, service, deadline, p, law):
    res = sojourn.plan(arrival, service, deadline=deadline, reliability=p, service_law=law)
    q = res.request
    R = res.R
    rows = {r["R"]: r for r in res.rows}
    assert [r["R"] for r in res.rows] == [R - 1, R, R + 1]
    assert rows[R]["meets"] and rows[R + 1]["meets"]
    lo, hi = simulated_interval(R, q.offered, q.d, p, law)
    assert hi >= p, (R, lo, hi)  # R is not shown to fail
    if R - 1 >= q.min_stable:
        assert not rows[R - 1]["meets"]
        lo1, hi1 = simulated_interval(R - 1, q.offered, q.d, p, law)
        assert lo1 < p or rows[R - 1]["margin"] != "clear", (R - 1, lo1, hi1, rows[R - 1])
    else:
        assert not rows[R - 1]["stable"]
    if law != "exponential":  # T with the law itself answers, nothing simulated
        assert {r["method"] for r in res.rows if r["stable"]} == {"T-law"}
        assert any("by T with the lognormal law itself" in n for n in res.notes)
        assert not any("simulated" in n for n in res.notes)


def test_the_exact_chain_answers_where_it_is_cheap_and_matches_simulation():
    res = sojourn.plan("2/ms", "1ms", deadline="10ms", reliability=0.99, confirm=True, replications=10)
    assert res.R == 3 and res.status == "confirmed"
    assert not res.rows[0]["stable"]  # R = 2 at load 1
    for r in res.rows[1:]:
        assert r["method"] == "exact"
        assert r["verdict"] in ("meets", "fails")
        # the exact percentile lies inside (or within a grid step of) the simulation's 95 % interval
        lo, hi = r["simulated_percentile_ci_low"], r["simulated_percentile_ci_high"]
        step = r["percentile"] / 400
        assert lo - step <= r["percentile"] <= hi + step, r


def test_load_at_servers_is_the_same_question_as_its_arrival_rate():
    a = sojourn.plan("2/ms", "1ms", deadline="10ms", reliability=0.99)
    b = sojourn.plan(rho=0.5, R=4, mean_service="1ms", deadline="10ms", reliability=0.99)
    c = sojourn.plan(2000.0, service_rate="1000/s", deadline=0.010, reliability="99%", unit="ms")
    assert a.R == b.R == c.R
    pa, pc = [r["percentile"] for r in a.rows], [r["percentile"] for r in c.rows]
    assert [x is None for x in pa] == [x is None for x in pc]  # the unstable R have no percentile
    assert any(x is not None for x in pa)
    assert [x for x in pa if x is not None] == pytest.approx([x for x in pc if x is not None], rel=1e-12)
    assert any("you run 4 servers" in n for n in b.notes)


def test_budget_minus_network_latency_and_units_of_the_answer():
    a = sojourn.plan("2/ms", "1ms", budget="40ms", network_latency="30ms", reliability=0.99)
    b = sojourn.plan("2/ms", "1ms", deadline="10ms", reliability=0.99)
    assert a.R == b.R and a.unit == "ms"
    assert a.to_dict()["target"]["budget"] == pytest.approx(40.0) and a.to_dict()["target"][
        "deadline"
    ] == pytest.approx(10.0)
    c = sojourn.plan("2/ms", "1ms", deadline="10ms", reliability=0.99, unit="us")
    assert c.unit == "µs"
    assert c.rows[1]["percentile"] == pytest.approx(1000 * b.rows[1]["percentile"], rel=1e-12)
    assert "µs" in c.table()


# -- --confirm never answers an R the simulation shows to fail --------------------------------------------------
@pytest.fixture
def table_decides(monkeypatch):
    """The planner as it was before T: beyond exact's range the accuracy table decides (it still does where T
    fails). --confirm must correct whatever method answered, so its tests trust a method through the table."""
    monkeypatch.setattr(P.Planner, "tail_engine", P.Planner.table_engine)


def _table_trusting(tmp_path, method, error=0.0):
    """An accuracy table that calls ``method`` exact-accurate and non-optimistic everywhere (R = 7..10)."""
    rows = [{"R": R, "rho": round(r, 2), "percentile": 99.0, "approximation": method, "relative_error_mean": error,
             "relative_error_ci_low": error - 1e-3, "relative_error_ci_high": error + 1e-3, "optimistic": 0,
             "usable": 1} for R in (7, 8, 9, 10) for r in np.arange(0.01, 1.0, 0.01)]
    return write_accuracy(rows, tmp_path / f"trust_{method}.csv")


def test_confirm_raises_R_when_the_trusted_method_is_optimistic(tmp_path, table_decides):
    """Method A underestimates the 99th percentile by 10-45 % at high load (the paper-config comparison; at
    R = 7, ρ = 0.93: 9.2 against C*'s 17): trusted blindly it answers too few servers, which the simulation
    corrects."""
    table = _table_trusting(tmp_path, "A")
    kw = dict(deadline="9.5ms", reliability=0.99, accuracy=table)
    blind = sojourn.plan("6.5/ms", "1ms", **kw)
    assert blind.rows[1]["method"] == "A" and blind.R == 7
    checked = sojourn.plan("6.5/ms", "1ms", confirm=True, **kw)
    assert checked.R > blind.R
    assert any(f"the methods' answer R = {blind.R} fails in simulation" in n for n in checked.notes)
    rows = {r["R"]: r for r in checked.rows}
    assert rows[checked.R]["simulated_probability"] >= 0.99
    assert rows[checked.R - 1]["simulated_probability"] < 0.99
    assert checked.status in ("confirmed", "within_noise")


def test_confirm_lowers_R_when_the_method_was_pessimistic(tmp_path, table_decides):
    """Method D overestimates by 20-40 % at ρ ≈ 0.7-0.8 (R = 10): the simulation shows fewer servers do."""
    table = _table_trusting(tmp_path, "D")
    kw = dict(deadline="9ms", reliability=0.99, accuracy=table)
    blind = sojourn.plan("7.5/ms", "1ms", **kw)
    assert blind.rows[1]["method"] == "D" and blind.R == 10
    checked = sojourn.plan("7.5/ms", "1ms", confirm=True, **kw)
    assert checked.R < blind.R
    assert any("was pessimistic" in n for n in checked.notes)
    rows = {r["R"]: r for r in checked.rows}
    assert rows[checked.R]["simulated_probability"] >= 0.99 > rows[checked.R - 1]["simulated_probability"]


def test_simulated_run_length_leaves_100_customers_beyond_the_percentile():
    for p in (0.99, 0.999, 0.9999, 0.99999):
        run = P.run_length(12, 0.9, p)
        assert run["customers"] * (1 - p) >= 100 - 1e-6 and run["horizon"] == run["warmup"] + run["window"]
        assert run["warmup"] >= 10 * run["relaxation_time"]
    q = P.check_request(arrival_rate="3/ms", mean_service="1ms", deadline="6ms", reliability=0.99,
                        service_law="deterministic")
    pl = P.Planner(q, workers=2)
    try:
        for R in (4, 5):  # the rows simulation decides where no method answers (staged)
            s = pl.simulate(R)
            # staged: the first stage, twice that, or all; fewer than all only with a clear verdict
            assert s.replications in (P.FIRST_STAGE, 2 * P.FIRST_STAGE, P.DEFAULT_REPLICATIONS)
            assert s.replications == P.DEFAULT_REPLICATIONS or not s.verdict(0.99).endswith("within_noise")
            assert s.customers * 0.01 >= 95  # Poisson arrivals: ~ n ± 3√n
    finally:
        pl.close()


def test_staged_replications_stop_at_a_clear_verdict_and_extend_to_the_fixed_run():
    """Without --confirm an R far from the target stops after the first stage; --confirm extends it to all
    replications, and the extended counts are exactly those of one fixed-count run (replication k's stream
    depends on k alone)."""
    q = P.check_request(arrival_rate="3/ms", mean_service="1ms", deadline="6ms", reliability=0.99,
                        service_law="deterministic")
    pl = P.Planner(q, workers=2)
    far = pl.simulate(8)  # load 0.375: P(T > 6 mean services) is ~0
    assert far.replications == P.FIRST_STAGE and far.verdict(0.99) == "meets"
    assert pl.simulate(8, full=True).replications == P.DEFAULT_REPLICATIONS
    staged = np.concatenate(pl._runs[8]["counts"])
    r = pl._runs[8]
    one, _, _ = P.simulate_counts(r["spec"], P.DEFAULT_REPLICATIONS, q.seed, r["run"]["horizon"], r["run"]["warmup"],
                                  r["dt"], r["t_max"], workers=1)
    np.testing.assert_array_equal(staged, one)
    # near the target: stages continue up to the cap while the interval still contains p
    near = P.Planner(q, workers=2)
    s = near.simulate(4)
    assert s.replications == P.DEFAULT_REPLICATIONS or not s.verdict(0.99).endswith("within_noise")
    pl.close(), near.close()


def test_a_failing_R_is_clear_on_the_log_scale_when_replications_spread_widely():
    """Near ρ = 1 the replications' P(T > d) spread over a decade: the mean's t-interval reaches past p, but
    the geometric mean's lower bound (below the arithmetic mean's) lies far above 1 − p."""
    wide = P.Simulated(4, 1e6, 1e5, 1e4, 0.995, 0.985, 1.0, 150.0, 120.0, 180.0, 400.0, 0.1, 0, 1e-3)
    assert wide.verdict(0.9999) == "fails"
    assert P.Simulated(4, 1e6, 1e5, 1e4, 0.995, 0.985, 1.0, 150.0, 120.0, 180.0, 400.0, 0.1, 0).verdict(0.9999) \
        == "fails_within_noise"  # no geometric bound (a replication saw no customer beyond d)
    # a meeting R is never declared clear by the geometric bound
    assert P.Simulated(4, 1e6, 1e5, 1e4, 0.99995, 0.9998, 1.0, 50.0, 40.0, 60.0, 400.0, 0.1, 0, 2e-5).verdict(
        0.9999) == "meets_within_noise"


# -- refused before any compute -------------------------------------------------------------------------------
@pytest.fixture
def no_compute(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("computed before refusing")

    for name in ("screen", "evaluate", "simulate", "search", "confirm"):
        monkeypatch.setattr(P.Planner, name, boom)
    monkeypatch.setattr("sojourn.jsq_ps.simulate.simulate", boom)


BASE = dict(arrival_rate="2/ms", mean_service="1ms", deadline="10ms", reliability=0.99)
REFUSED = [
    (dict(reliability=1), ["reliability must be < 1", "no finite number of servers"]),
    (dict(reliability=1.0001), ["reliability must be < 1"]),
    (dict(reliability=0), ["reliability must be in (0, 1)"]),
    (dict(reliability=-0.5), ["reliability must be in (0, 1)"]),
    (dict(reliability="99.99"), ["reliability must be < 1"]),
    (dict(reliability="high"), ["reliability must be a probability"]),
    (dict(reliability=None), ["reliability is required"]),
    (
        dict(deadline="4ms", reliability=0.99),
        ["deadline 4 ms is", "service time's own 99th percentile 4.605 ms", "at least its service requirement"],
    ),
    (
        dict(deadline="0.9ms", service_law="deterministic"),
        ["deadline 0.9 ms is", "service time's own 99th percentile 1 ms"],
    ),
    (dict(deadline=None, budget="30ms", network_latency="26ms"), ["budget − network_latency leaves 4 ms"]),
    (dict(arrival_rate="200/ms"), ["max_servers 64 is below the 201 servers the load needs to be stable"]),
    (dict(arrival_rate="3/ms", max_servers=2), ["max_servers 2 is below the 4 servers"]),
    (dict(rho=1.5, R=2, arrival_rate=None, max_servers=3), ["max_servers 3 is below the 4 servers"]),
    (dict(dispatch="random"), ["dispatch 'random': only jsq is modelled"]),
    (dict(dispatch="jqs"), ["only jsq is modelled", "did you mean 'jsq'"]),
    (dict(deadline="10"), ["deadline needs a time unit"]),
    (dict(arrival_rate="2000"), ["arrival_rate needs a unit"]),
    (dict(mean_service="1 mss"), ["mean_service: unknown time unit 'mss'", "did you mean 'ms'"]),
    (dict(service_rate="1000/s"), ["give exactly one of mean_service", "service_rate"]),
    (dict(rho=0.5, R=4), ["give either arrival_rate or rho with R"]),
    (dict(arrival_rate=None, rho=0.5), ["give arrival_rate", "rho together with R"]),
    (dict(arrival_rate=None, rho=-0.5, R=4), ["rho must be a number > 0"]),
    (dict(budget="40ms", network_latency="30ms"), ["give either deadline or budget with network_latency"]),
    (dict(deadline=None, budget="40ms", network_latency="40ms"), ["network_latency 40ms must be below budget 40ms"]),
    (dict(deadline=None, budget="40ms"), ["give deadline", "budget with network_latency"]),
    (dict(service_law="lognormall"), ["service_law: unknown law 'lognormall'", "did you mean 'lognormal'"]),
    (dict(max_servers=0), ["max_servers must be an integer >= 1"]),
    (dict(replications=1), ["replications must be an integer >= 2"]),
    (dict(seed=-1), ["seed must be an integer >= 0"]),
    (dict(unit="hours"), ["unit: unknown time unit 'hours'"]),
    (dict(accuracy="/nonexistent/accuracy.csv"), ["accuracy /nonexistent/accuracy.csv: no such file"]),
]


@pytest.mark.parametrize("change, names", REFUSED, ids=[str(c) for c, _ in REFUSED])
def test_bad_inputs_are_refused_before_any_compute(no_compute, change, names):
    with pytest.raises(ValueError) as info:
        sojourn.plan(**{**BASE, **change})
    for name in names:
        assert name in str(info.value), str(info.value)


CLI = ["plan", "--arrival-rate", "2/ms", "--mean-service", "1ms", "--deadline", "10ms", "--reliability", "0.99"]


def _cli(*change):
    argv = list(CLI)
    for flag, value in zip(change[::2], change[1::2], strict=True):
        if flag in argv:
            i = argv.index(flag)
            del argv[i:i + 2]
        if value is not None:
            argv += [flag, value]
    return argv


@pytest.mark.parametrize("argv, names", [
    (_cli("--reliability", "1"), ["--reliability must be < 1"]),
    (_cli("--reliability", "0"), ["--reliability must be in (0, 1)"]),
    (_cli("--deadline", "3ms"), ["--deadline 3 ms is not above the service time's own 99th percentile"]),
    (_cli("--deadline", None, "--budget", "30ms", "--network-latency", "27ms"),
     ["--budget − --network-latency leaves 3 ms"]),
    (_cli("--arrival-rate", "200/ms"), ["--max-servers 64 is below the 201 servers"]),
    (_cli("--dispatch", "round-robin"), ["--dispatch 'round-robin': only jsq is modelled"]),
    (_cli("--arrival-rate", "2000"), ["--arrival-rate needs a unit"]),
    (_cli("--arrival-rate", None, "--rho", "0.5"), ["give --arrival-rate", "--rho together with -R"]),
    (_cli("--arrival-rate", None, "--load", "0.5"), ["give --arrival-rate", "--rho together with -R"]),  # its alias
    (_cli("--format", "xml"), ["--format must be one of table, json"]),
    (_cli("--service-law", "gama"), ["--service-law: unknown law 'gama'", "did you mean 'gamma'"]),
    (_cli("--unit", "h"), ["--unit: unknown time unit 'h'"]),
    (_cli("--max-servers", "0"), ["--max-servers must be an integer >= 1"]),
    (_cli("--replications", "1"), ["--replications must be an integer >= 2"]),
    (_cli("--deadline", "10"), ["--deadline needs a time unit"]),
])
def test_cli_refuses_with_the_flag_and_status_2(no_compute, capsys, argv, names):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("sojourn plan: error: ")
    for name in names:
        assert name in err, err


def test_no_R_within_max_servers_names_the_flag(capsys):
    assert main(_cli("--deadline", "3ms", "--reliability", "0.9", "--max-servers", "3")) == 2
    err = capsys.readouterr().err
    assert "--max-servers 3: no R ≤ 3 meets P(T ≤ 3 ms) ≥ 0.9" in err and "at R = 3" in err


# -- outputs ------------------------------------------------------------------------------------------------------
def test_json_output_schema(capsys):
    assert main(_cli("--format", "json")) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"answer", "target", "system", "unit", "rows", "notes", "wall_time_seconds"}
    assert set(out["answer"]) == {"R", "status", "confirmed", "message"}
    assert out["answer"]["R"] == 3 and out["answer"]["status"] == "predicted" and not out["answer"]["confirmed"]
    assert out["unit"] == "ms" and out["target"] == {"deadline": pytest.approx(10.0), "reliability": 0.99,
                                                     "percentile": pytest.approx(99.0), "budget": None,
                                                     "network_latency": None}
    assert out["system"]["offered_load"] == pytest.approx(2.0) and out["system"]["min_stable_servers"] == 3
    assert [r["R"] for r in out["rows"]] == [2, 3, 4]
    unstable, answer, above = out["rows"]
    assert unstable["stable"] is False and unstable["percentile"] is None and unstable["meets"] is False
    for r in (answer, above):
        assert r["method"] == "exact" and r["margin"] == "clear" and r["meets"] is True
        assert isinstance(r["percentile"], float) and 0 < r["percentile"] < 10.0
        assert r["probability"] >= 0.99 and r["method_reason"]
        assert r.get("method_error_mean") is None or not math.isfinite(r["method_error_mean"])  # exact: its bound
    assert out["rows"][1]["percentile"] > out["rows"][2]["percentile"]
    assert isinstance(out["notes"], list) and isinstance(out["wall_time_seconds"], float)


def test_table_output(capsys):
    assert main(_cli()) == 0
    out = capsys.readouterr().out
    assert out.startswith("R = 3 servers: the least number with P(T ≤ 10 ms) ≥ 0.99 (by exact)")
    assert "99th pct" in out and "unstable" in out and "exact" in out
    # exact is the reference: its error is its certified truncation bound, never its distance to a simulation (the
    # accuracy table's noise; sojourn.core.estimates.reference)
    rows = [line for line in out.splitlines() if " exact " in line and "yes" in line]
    assert rows and all("none: the exact chain" in line and "%" not in line for line in rows)


def test_the_result_object_and_its_dataset():
    res = sojourn.plan("2/ms", "1ms", deadline="10ms", reliability=0.99)
    assert isinstance(res, P.PlanResult) and res.R == 3 and str(res) == res.table()
    assert json.loads(res.to_json()) == json.loads(json.dumps(res.to_dict()))
    ds = res.dataset
    assert isinstance(ds, xr.Dataset)
    assert ds["R"].values.tolist() == [2, 3, 4]
    assert ds.attrs["answer_R"] == 3 and ds.attrs["unit"] == "ms" and ds.attrs["reliability"] == 0.99
    assert ds["percentile"].attrs["units"] == "ms"
    assert ds["stable"].values.tolist() == [0, 1, 1] and ds["meets"].values.tolist() == [0, 1, 1]
    assert np.isnan(ds["percentile"].values[0]) and (ds["percentile"].values[1:] > 0).all()
    assert ds["method"].values.tolist() == ["", "exact", "exact"]


def test_cli_answers_without_importing_what_it_does_not_need():
    """The 2 s answer: no other study's CLI, no scipy.stats, xarray or numba on an analytic answer, T's included
    (it needs scipy.sparse only), and no accuracy table read where T answers every R (a regression guard on
    imports, not a timing)."""
    code = textwrap.dedent("""
        import sys
        from sojourn.cli import main
        from sojourn.jsq_ps import accuracy
        read = []
        accuracy.read_accuracy = lambda *a, **k: read.append(a) or None
        assert main(["plan", "--arrival-rate", "7.5/ms", "--mean-service", "1ms", "--deadline", "9ms",
                     "--reliability", "0.99"]) == 0
        heavy = [m for m in ("scipy.stats", "xarray", "numba", "pandas", "sojourn.split_merge", "sojourn.restart",
                             "sojourn.jsq_ps.simulate") if m in sys.modules]
        print("HEAVY", heavy, "TABLE", len(read))
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY [] TABLE 0" in proc.stdout and "  T  " in proc.stdout, proc.stdout


def test_a_simulated_answer_runs_the_kernel_without_xarray_or_scipy_stats():
    """A simulated answer (--confirm) loads numba but neither xarray, pandas nor scipy.stats: the kernel is called
    through sojourn.jsq_ps.raw, not the Dataset-building simulate module."""
    code = textwrap.dedent("""
        import sys
        from sojourn.cli import main
        assert main(["plan", "--arrival-rate", "3/ms", "--mean-service", "1ms", "--deadline", "6ms",
                     "--reliability", "0.99", "--confirm"]) == 0
        heavy = [m for m in ("scipy.stats", "xarray", "pandas", "sojourn.jsq_ps.simulate") if m in sys.modules]
        print("HEAVY", heavy, "numba" in sys.modules)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY [] True" in proc.stdout and "simulated" in proc.stdout, proc.stdout


def test_a_law_answer_is_analytic_without_numba_or_xarray():
    """``plan --service-law gamma:shape=2``: every R by T with the law itself (a two-phase law: scipy's sparse
    product, no numba), no xarray or pandas, nothing simulated."""
    code = textwrap.dedent("""
        import sys
        from sojourn.cli import main
        assert main(["plan", "--arrival-rate", "9000/s", "--mean-service", "1.2ms", "--budget", "100ms",
                     "--network-latency", "28ms", "--reliability", "0.9999", "--service-law", "gamma:shape=2"]) == 0
        heavy = [m for m in ("xarray", "numba", "pandas", "sojourn.jsq_ps.simulate") if m in sys.modules]
        print("HEAVY", heavy)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "HEAVY []" in proc.stdout and "R = 12 servers" in proc.stdout and "T-law" in proc.stdout, proc.stdout
    assert "simulated" not in proc.stdout, proc.stdout


def test_every_study_registers_the_commands_the_registry_lists():
    import argparse
    import importlib

    from sojourn.studies import STUDIES

    for study in STUDIES:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        importlib.import_module(study.cli).register(sub)
        assert set(sub.choices) == set(study.commands), study.name
        for command, module in study.light:  # registered alone by its own module too
            parser = argparse.ArgumentParser()
            sub = parser.add_subparsers()
            importlib.import_module(module).register(sub)
            assert set(sub.choices) == {command}


# -- the accuracy table -------------------------------------------------------------------------------------------
def _comparison(rel, err_high, fit_invalid=None, method_dim="approximation", methods=("A", "C*", "exact")):
    """A minimal comparison dataset: R = (2, 4), rho = (0.5, 0.8), methods (A, C*, exact), percentile (99, 99.9)."""
    dims = ("service", "R", "rho", method_dim, "percentile")
    coords = {"service": ["exponential"], "R": [2, 4], "rho": [0.5, 0.8], method_dim: list(methods),
              "percentile": [99.0, 99.9], "replication": np.arange(10)}
    rel = np.asarray(rel, float)[None]
    ds = xr.Dataset({
        "relative_percentile_error_mean": (dims, rel),
        "relative_percentile_error_ci_low": (dims, rel - 0.01),
        "relative_percentile_error_ci_high": (dims, rel + 0.01),
        "percentile_error_ci_high": (dims, np.asarray(err_high, float)[None]),
        "fit_invalid": (("R", "rho", method_dim), np.zeros((2, 2, len(methods)), np.int8) if fit_invalid is None
                        else fit_invalid),
        "fit_violation": (("R", "rho", method_dim), np.where(np.isfinite(rel[0]).any(-1), 0.0, np.nan)),
    }, coords=coords)
    return ds


def _rel():
    rel = np.zeros((2, 2, 3, 2))
    rel[..., 0, :] = 0.05  # A: pessimistic 5 %
    rel[..., 1, :] = 0.01  # C*: 1 %
    rel[..., 2, :] = 0.0
    rel[0, :, 2, :] = np.nan  # exact not run at R = 2 ... (kept simple: absent)
    return rel


def test_build_accuracy_rows_and_flags(tmp_path):
    rel = _rel()
    err_hi = np.where(np.isnan(rel), np.nan, 1.0)
    err_hi[1, 1, 1, 1] = -0.5  # C* optimistic at R = 4, rho = 0.8, 99.9
    fit = np.zeros((2, 2, 3), np.int8)
    fit[1, 0, 0] = 1  # A's CDF invalid at R = 4, rho = 0.5
    rows = build_accuracy(_comparison(rel, err_hi, fit), window=1e5)
    by = {(r["R"], r["rho"], r["percentile"], r["approximation"]): r for r in rows}
    assert (2, 0.5, 99.0, "exact") not in by  # not computed: no row
    assert by[(4, 0.8, 99.9, "C*")]["optimistic"] == 1 and by[(4, 0.8, 99.0, "C*")]["optimistic"] == 0
    assert by[(4, 0.5, 99.0, "A")]["usable"] == 0 and by[(4, 0.8, 99.0, "A")]["usable"] == 1
    # customers beyond the 99.9th per replication: rho R 1e5 * 1e-3 >= 100 everywhere here
    assert all(r["usable"] for k, r in by.items() if k[3] != "A" or k[:2] != (4, 0.5))
    # too short a window: 4 * 0.8 * 5e3 * 1e-3 = 16 < 100 customers per replication beyond the 99.9th at R = 4,
    # rho = 0.8, and 160 beyond the 99th (the rule is per replication: sojourn.core.estimates.reference)
    short = {(r["R"], r["rho"], r["percentile"], r["approximation"]): r
             for r in build_accuracy(_comparison(rel, err_hi, fit), window=5e3)}
    assert short[(4, 0.8, 99.9, "C*")]["usable"] == 0 and short[(4, 0.8, 99.0, "C*")]["usable"] == 1
    assert short[(2, 0.5, 99.0, "C*")]["usable"] == 0  # 50 per replication beyond the 99th
    # the comparison's own verdicts: too few customers in some replication, or a run too short to trust
    cmp = _comparison(rel, err_hi, fit)
    cmp["few_tail_customers"] = (
        ("service", "R", "rho", "percentile"),
        np.array([[[[0, 1], [0, 0]], [[2, 0], [0, 0]]]]),
    )
    cmp["sim_run_valid"] = (("service", "R", "rho"), np.array([[[1, 1], [1, 0]]], np.int8))
    own = {(r["R"], r["rho"], r["percentile"], r["approximation"]): r for r in build_accuracy(cmp, window=1e5)}
    assert own[(2, 0.5, 99.9, "C*")]["usable"] == 0 and own[(2, 0.5, 99.0, "C*")]["usable"] == 1  # few = 1
    assert own[(4, 0.5, 99.0, "C*")]["usable"] == 0 and own[(4, 0.5, 99.9, "C*")]["usable"] == 1  # few = 2, 0
    assert own[(4, 0.8, 99.0, "C*")]["usable"] == 0 and own[(4, 0.8, 99.9, "C*")]["usable"] == 0  # run too short
    # an older comparison names the dimension 'method'
    assert build_accuracy(_comparison(rel, err_hi, fit, method_dim="method"), window=1e5) == rows
    path = write_accuracy(rows, tmp_path / "acc.csv", header=["a test table"])
    text = path.read_text()
    assert text.startswith("# a test table\n" + ",".join(COLUMNS) + "\n")
    table = read_accuracy(path)
    assert len(table) == len(rows) and table.Rs == [2, 4] and table.percentiles == [99.0, 99.9]


def test_reading_between_rows_is_conservative(tmp_path):
    rel = _rel()
    err_hi = np.where(np.isnan(rel), np.nan, 1.0)
    err_hi[1, 1, 1, 1] = -0.5  # C* optimistic at R = 4, rho = 0.8, 99.9
    err_hi[1, 1, 0, 1] = -0.5  # and A: every usable method optimistic there
    table = read_accuracy(write_accuracy(build_accuracy(_comparison(rel, err_hi), window=1e5), tmp_path / "a.csv"))
    c = table.choose(2, 0.3, 0.99)  # the nearest rho at or above: 0.5; most accurate non-optimistic: C*
    assert (c.method, c.table_R, c.table_rho, c.table_percentile, c.extrapolated) == ("C*", 2, 0.5, 99.0, [])
    assert c.error == pytest.approx((0.01, 0.0, 0.02))
    c = table.choose(3, 0.51, 0.995)  # R at or above: 4; rho at or above: 0.8; percentile at or above: 99.9
    assert (c.table_R, c.table_rho, c.table_percentile) == (4, 0.8, 99.9) and c.method == SIMULATE
    assert "every usable approximation is optimistic" in c.reason
    c = table.choose(9, 0.6, 0.99)  # R beyond the table: the largest, flagged
    assert c.table_R == 4 and c.extrapolated == ["R"] and c.method == "C*"
    c = table.choose(2, 0.95, 0.99)  # rho beyond the table: the largest, flagged
    assert c.table_rho == 0.8 and c.extrapolated == ["rho"]
    c = table.choose(2, 0.5, 0.9999)  # a percentile above the table's: simulate
    assert c.method == SIMULATE and "covers percentiles up to the 99.9th" in c.reason
    assert table.choose(2, 0.5, 0.99).method != "exact"  # exact is a question of cost, not of the table


def test_the_table_has_rows_for_T_and_the_planner_reads_them_only_where_T_fails(tmp_path):
    """T's rows are built like any approximation's (its error against simulation, optimistic, usable); the table's
    own choice may be T (the most accurate non-optimistic there), which the planner, asking only where T has
    failed, excludes."""
    rel = np.concatenate([_rel(), np.full((2, 2, 1, 2), 0.003)], axis=2)  # T: +0.3 % everywhere
    err_hi = np.where(np.isnan(rel), np.nan, 1.0)
    rows = build_accuracy(_comparison(rel, err_hi, methods=("A", "C*", "exact", "T")), window=1e5)
    t = [r for r in rows if r["approximation"] == "T"]
    assert len(t) == 2 * 2 * 2 and all(r["usable"] == 1 and r["optimistic"] == 0 for r in t)
    assert {r["relative_error_mean"] for r in t} == {0.003}
    table = read_accuracy(write_accuracy(rows, tmp_path / "t.csv"))
    assert table.choose(4, 0.6, 0.99).method == "T"
    c = table.choose(4, 0.6, 0.99, exclude=("exact", "T"))
    assert c.method == "C*" and c.error == pytest.approx((0.01, 0.0, 0.02))


def test_malformed_tables_are_refused(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("R,rho,percentile\n1,0.5,99\n")
    with pytest.raises(ValueError, match="header must be"):
        read_accuracy(bad)
    with pytest.raises(ValueError, match="malformed row"):
        parse_accuracy([",".join(COLUMNS) + "\n", "x,0.5,99,A,0.1,0,0.2,0,1\n"])
    with pytest.raises(ValueError, match="no such file"):
        read_accuracy(tmp_path / "missing.csv")


def test_the_shipped_table():
    table = read_accuracy()
    assert str(PACKAGE_TABLE).endswith("sojourn/jsq_ps/data/accuracy.csv")
    assert table.Rs == list(range(1, 11)) and table.percentiles == [99.0, 99.9, 99.99, 99.999]
    assert len(table) > 40_000
    c = table.choose(5, 0.5, 0.99)
    assert c.method not in (SIMULATE, "exact") and math.isfinite(c.error[0])


# -- the evidence's margins ---------------------------------------------------------------------------------------
def test_margins_of_a_method_and_of_a_simulation():
    eng = P.Engine("D", "", (0.10, 0.05, 0.15))
    meets = P.Evaluation(5, 0.5, eng, 0.995, 9.0)
    assert meets.margin(0.99, d=10.0) == "clear"  # true percentile <= 9/1.05 < 10
    fails = P.Evaluation(5, 0.5, eng, 0.985, 11.0)
    assert fails.margin(0.99, d=10.0) == "within_method_error"  # 11/1.15 = 9.6: may meet
    assert P.Evaluation(5, 0.5, eng, 0.98, 12.0).margin(0.99, d=10.0) == "clear"  # 12/1.15 = 10.4 > 10
    optimistic = P.Engine("A", "", (-0.05, -0.08, -0.02))
    assert P.Evaluation(5, 0.5, optimistic, 0.995, 9.5).margin(0.99, d=10.0) == "within_method_error"  # 9.5/0.92
    assert P.Evaluation(5, 0.5, P.Engine("E", "", (math.nan,) * 3), 0.995, 9.0).margin(0.99, 10.0) == "unmeasured"
    assert P.Evaluation(5, 0.5, P.Engine("exact", ""), 0.9901, 9.99).margin(0.99, 10.0) == "clear"
    s = P.Simulated(10, 1e4, 1e4, 1e3, 0.991, 0.989, 0.993, 9.0, 8.8, 9.2, 40.0, 0.1, 0)
    assert s.verdict(0.99) == "meets_within_noise" and s.verdict(0.985) == "meets" and s.verdict(0.995) == "fails"
    assert P.Simulated(10, 1e4, 1e4, 1e3, 0.989, 0.988, 0.991, 9.0, 8.8, 9.2, 40.0, 0.1, 0).verdict(0.99) \
        == "fails_within_noise"


def test_stability_bound():
    assert P.stable_from(10.8) == 11 and P.stable_from(2.0) == 3 and P.stable_from(0.3) == 1


def test_simulated_replications_are_the_same_in_one_process_or_several():
    """Replication k's stream depends only on (seed, spec, k): forked workers give the serial run's counts."""
    spec = JSQPS.from_rho(5, 0.8, service="lognormal")
    serial = P.simulate_counts(spec, 4, 7, 3000.0, 300.0, 0.05, 40.0, workers=1)
    forked = P.simulate_counts(spec, 4, 7, 3000.0, 300.0, 0.05, 40.0, workers=2)
    for a, b in zip(serial, forked, strict=True):
        np.testing.assert_array_equal(a, b)
    assert serial[0].shape == (4, 801) and serial[0].sum() > 10_000


# -- method T beyond exact's range --------------------------------------------------------------------------------
def test_the_issue_example_is_answered_by_T_without_simulation(monkeypatch):
    """9000/s, 1.2 ms, d = 72 ms, p = 0.9999 (offered load 10.8): T at R = 11, 12, 13, nothing simulated, every
    verdict clear: R = 12 meets (T's P(T ≤ d) is a lower bound), R = 11 fails even at the top of T's bound."""
    def boom(*a, **k):
        raise AssertionError("simulated")

    monkeypatch.setattr(P.Planner, "simulate", boom)
    res = sojourn.plan("9000/s", "1.2ms", deadline="72ms", reliability=0.9999)
    assert res.R == 12 and res.status == "predicted" and res.message.endswith("(by T)")
    assert [r["method"] for r in res.rows] == ["T", "T", "T"]
    below, answer, above = res.rows
    assert (below["meets"], answer["meets"], above["meets"]) == (False, True, True)
    assert [r["margin"] for r in res.rows] == ["clear"] * 3
    # R = 11 (ρ = 0.98): P(T ≤ d) = 0.99592, the largest its bound admits 0.99616 < p; its 99.99th percentile lies
    # beyond T's grid (1.25 d)
    assert 0.995 < below["probability"] < below["probability_high"] < 0.9999
    assert below["percentile"] is None and below["percentile_above"] == pytest.approx(90.0)
    # the error column is T's margin at the 99.99th: x_T = x_D (1 + m), the true percentile in [x_T (1 − m)/(1 + m),
    # x_T]
    for r in (answer, above):
        m = r["method_error_mean"]
        assert 0.0 < m < 0.02 and r["method_error_ci_low"] == 0.0
        assert r["method_error_ci_high"] == pytest.approx((1 + m) / (1 - m) - 1)
        assert r["tail_D"] >= 2 and r["probability"] >= 0.9999
    assert answer["percentile"] == pytest.approx(31.82, abs=0.01) and above["percentile"] == pytest.approx(
        19.31, abs=0.01
    )
    text = res.table()
    assert "+0 to +2.5 % (never below; margin 1.22 %)" in text and "P(T ≤ d) ≤ 0.99615" in text
    assert any("a 'yes' from T is safe" in n for n in res.notes)


def test_T_percentile_is_not_optimistic_and_within_its_bound_in_an_independent_simulation():
    """Beyond exact's range (R = 13, ρ = 0.83, the 99th): an independent simulation (20 replications × 2·10⁵
    customers, 99 % t-intervals) finds P(T < x_T) not below p (T is not optimistic) and P(T < x_T/(1 + e)) not
    above p, e the most T's bound lets it exceed the true percentile."""
    q = P.check_request(arrival_rate="9/ms", mean_service="1.2ms", deadline="10ms", reliability=0.99)
    pl = P.Planner(q)
    ev = pl.evaluate(13)
    assert ev.engine.method == "T" and ev.meets(0.99)
    x, e = ev.percentile, ev.engine.error[2]
    rho = q.offered / 13
    tau = 1 / (13 * (1 - math.sqrt(rho)) ** 2)
    dt = x / 1000
    ds = simulate(JSQPS.from_rho(13, rho), horizon=20 * tau + 200_000 / q.offered, warmup=20 * tau, cooldown=0.0,
                  replications=CHECK_REPS, seed=CHECK_SEED, dt=dt, t_max=1100 * dt, occupancy_max=1)
    count, overflow = ds["count"].values, ds["overflow"].values
    total = count.sum(axis=1) + overflow

    def interval(edge):
        m, h = mean_ci(count[:, :edge].sum(axis=1) / total, confidence=0.99)
        return m - h, m + h

    assert interval(1000)[1] >= 0.99  # P(T < x_T): T's percentile is not below the true one
    assert interval(int(round(1000 / (1 + e))))[0] <= 0.99  # nor above it by more than its bound


@pytest.mark.parametrize("arrival, deadline, p", [("2/ms", "10ms", 0.99), ("2000/s", "20ms", 0.9999),
                                                  ("2.4/ms", "12ms", 0.999), ("2.4/ms", "15ms", 0.9999),
                                                  ("1.5/ms", "6ms", 0.99), ("0.9/ms", "30ms", 0.9999)])
def test_T_verdicts_agree_with_exact_where_both_run(monkeypatch, arrival, deadline, p):
    """Where exact runs cheaply (R = 1..6 here), T in its place: T's P(T ≤ d) never above exact's certified upper
    bound, exact's lower bound never above the largest T's bound admits, T's percentile within [1, 1 + e] of exact's,
    and the same answer R (or
    R − 1 marked as within T's margin)."""
    want = sojourn.plan(arrival, "1ms", deadline=deadline, reliability=p)
    assert {r["method"] for r in want.rows if r["stable"]} == {"exact"}
    monkeypatch.setattr(P.Planner, "exact_fits", lambda self, R, t_hi: False)
    got = sojourn.plan(arrival, "1ms", deadline=deadline, reliability=p)
    assert {r["method"] for r in got.rows if r["stable"]} == {"T"}
    assert got.R == want.R or (got.R == want.R + 1
                                           and got.rows[0]["margin"] == "within_method_error")
    exact = {r["R"]: r for r in want.rows}
    for r in got.rows:
        if not r["stable"] or r["R"] not in exact:
            continue
        ex = exact[r["R"]]
        # exact's certified bounds [2·mid − high, high] (solve.exact) hold T's lower bound and meet T's upper one
        ex_low = 2 * ex["probability"] - ex["probability_high"]
        assert 0 <= ex["probability_high"] - ex["probability"] < 1e-9
        assert r["probability"] <= ex["probability_high"] + 1e-12 and ex_low <= r["probability_high"] + 1e-12
        if r["meets"]:
            assert ex["meets"]  # T's "yes" is safe
        elif ex["meets"]:
            assert r["margin"] == "within_method_error"  # a "no" against exact's "yes" only inside T's bound
        if r["percentile"] is not None:
            lo, hi = r["method_error_ci_low"], r["method_error_ci_high"]
            assert ex["percentile"] * (1 + lo) - 1e-9 <= r["percentile"] <= ex["percentile"] * (1 + hi) + 1e-9


def test_where_T_fails_the_accuracy_table_decides(monkeypatch, tmp_path):
    """T's exception or guard flags: the table's most accurate non-optimistic method (T itself excluded), and a
    note says why."""
    def fail(*a, **k):
        raise RuntimeError("Factor is exactly singular")

    monkeypatch.setattr("sojourn.jsq_ps.solve.tail.tail_sojourn", fail)
    rows = [{"R": R, "rho": round(r, 2), "percentile": 99.0, "approximation": m, "relative_error_mean": e,
             "relative_error_ci_low": e - 1e-3, "relative_error_ci_high": e + 1e-3, "optimistic": 0, "usable": 1}
            for R in (7, 8, 9, 10) for r in np.arange(0.01, 1.0, 0.01) for m, e in (("T", 0.001), ("D", 0.05))]
    table = write_accuracy(rows, tmp_path / "with_T.csv")
    res = sojourn.plan("7.5/ms", "1ms", deadline="9ms", reliability=0.99, accuracy=table)
    assert {r["method"] for r in res.rows} == {"D"}
    assert any("T failed at R = " in n and "Factor is exactly singular" in n and "the accuracy table decides" in n
               for n in res.notes)
    assert read_accuracy(table).choose(9, 0.83, 0.99).method == "T"  # a candidate for the table, but not here


def test_margin_of_a_T_verdict():
    """T's "meets" is always clear (its P(T ≤ d) is a lower bound); its "fails" only if the largest P(T ≤ d) its
    bound admits is below p."""
    eng = P.Engine("T", "", (0.01, 0.0, 0.0202))
    assert P.Evaluation(12, 0.9, eng, 0.99995, 26.5, probability_high=0.99996).margin(0.9999, 60.0) == "clear"
    assert P.Evaluation(11, 0.98, eng, 0.99592, math.inf, 75.0, probability_high=0.99616).margin(0.9999, 60.0) \
        == "clear"
    assert P.Evaluation(11, 0.98, eng, 0.99985, 61.0, probability_high=0.99991).margin(0.9999, 60.0) \
        == "within_method_error"


def test_confirm_checks_T_by_simulation():
    """--confirm with T's rows: R − 1, R, R + 1 simulated with all replications, T's percentile never below the
    simulated one's 95 % interval (T is not optimistic), the answer where the simulation puts it."""
    res = sojourn.plan("9/ms", "1.2ms", deadline="10ms", reliability=0.99, confirm=True)
    assert res.status in ("confirmed", "within_noise") and res.confirmed
    assert {r["method"] for r in res.rows} == {"T"}
    for r in res.rows:
        assert r["replications"] == P.DEFAULT_REPLICATIONS
        if r["percentile"] is not None:
            assert r["percentile"] >= r["simulated_percentile_ci_low"], r
    rows = {r["R"]: r for r in res.rows}
    assert rows[res.R]["simulated_probability"] >= 0.99
    assert "confirmed by simulation" in res.message or "within its noise" in res.message


def test_the_estimate_of_a_service_law_counts_t_law_and_a_fallback_simulation_is_admitted_when_decided():
    """A non-exponential law is answered by T-law: the up-front estimate counts its evaluations, not simulations
    (which only --confirm or a failure of T-law brings; the latter is admitted when decided, Planner.evaluate)."""
    from sojourn.jsq_ps.plan.request import SEARCH_EVALUATIONS, TAIL_LAW_SECONDS, plan_cost, simulation_cost

    q = P.check_request(arrival_rate="9/ms", mean_service="1.2ms", deadline="72ms", reliability=0.9999,
                        service_law="gamma:shape=2")
    parts = plan_cost(q)
    assert [p.what.split(" ")[0] for p in parts] == ["T"] and "gamma" in parts[0].what
    assert parts[0].seconds == SEARCH_EVALUATIONS * TAIL_LAW_SECONDS
    qc = P.check_request(arrival_rate="9/ms", mean_service="1.2ms", deadline="72ms", reliability=0.9999,
                         service_law="gamma:shape=2", confirm=True)
    sim = simulation_cost(qc, qc.min_stable, 3)
    assert plan_cost(qc)[:2] == sim and sim[0].seconds > parts[0].seconds
