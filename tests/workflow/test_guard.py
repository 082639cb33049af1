"""One guard for every entry point (issue 32, sojourn.core.checks.guard): the cases the issue lists, the defects the
fuzzer
found (tests/workflow/test_fuzz.py), each kept as an explicit case, and the guard's parts — kinds, relations, cost
admission, strict YAML, derived quantities, the watchdog, progress with the time left.

Every case runs the command in this process (``sojourn.cli.main``) and checks the one line it ends with, the exit
status, and that nothing was written; a few need the real console script (the watchdog ends its process).
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import yaml

from sojourn.cli import main
from sojourn.core.checks import guard
from sojourn.core.checks.config import ConfigError
from support import fuzz
from support.configs import deep_update

ROOT = Path(__file__).resolve().parents[2]
C = ["-R", "2", "--load", "0.5", "--horizon", "2000", "--warmup", "100", "--dt", "0.1", "--t-max", "10",
     "--replications", "2"]
PLAN = ["plan", "--arrival-rate", "9000/s", "--mean-service", "1.2ms", "--deadline", "72ms", "--reliability", "0.9999"]

ERLANG = """name: big
queues:
  - name: q
    classes:
      - name: job
        arrival_rate: 0.1
        service: {erlang: 100000000, rate: 1}
"""
DUPLICATE = """name: dup
queues:
  - name: q
    classes:
      - name: job
        arrival_rate: 0.1
        arrival_rate: 0.2
        service: {erlang: 2, rate: 1}
"""
BOMB = "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['1'] * 9)}]\n"
               for p, c in zip([None, *"abcdefgh"], "abcdefghi", strict=True)) + "queues: *i\n"
WILD_RATES = """name: m
queues:
  - name: q
    signal_rate: 0.5
    classes:
      - name: job
        arrival_rate: 0.3
        success: [0.5, 0.5]
        restart_to: {job: 1.0}
        service: {rates: [1.0e+300, 1.0e-300], entry: [1.0, 0.0], H: [[0.0, 1.0], [0.0, 0.0]]}
"""
HUGE_SIGNALS = WILD_RATES.replace("signal_rate: 0.5", "signal_rate: 18446744073709551616").replace(
    "[1.0e+300, 1.0e-300]", "[2.0, 3.0]")

#: (id, argv, what the one error line must contain) — the issue's command-line cases (its list, in its order),
#: then the fuzzer's finds; {tmp} is this test's folder, {file:NAME} a file of this module written there
CASES = [
    # Tracebacks
    ("mu-1e-300", ["simulate", *C, "--mu", "1e-300"], ["--mu", "mean", "1e+300"]),
    ("seed-2**64", ["simulate", *C, "--seed", "18446744073709551616"], ["--seed must be an integer <= 2**64 - 1"]),
    ("lognormal-sigma-40", ["simulate", *C, "--service", "lognormal:sigma=40"], ["--service", "lognormal", "mean"]),
    ("erlang-1e8-phases", ["restart", "solve", "-m", "{file:ERLANG}"], ["--model", "service.erlang", "memory"]),
    ("taus-twice", ["restart", "optimise", "-m", "example1", "--taus", "1", "1"], ["--taus", "1 is given twice"]),
    # Hangs or runaway memory
    ("plan-arrival-1e300", ["plan", "--arrival-rate", "1e300/s", "--mean-service", "1.2ms", "--deadline", "72ms",
                            "--reliability", "0.9999"], ["--max-servers 64 is below the 1.2e+297 servers"]),
    ("plan-arrival-1e300-any-R", ["plan", "--arrival-rate", "1e300/s", "--mean-service", "1.2ms", "--deadline", "72ms",
                                  "--reliability", "0.9999", "--max-servers", str(2**63 - 1)], ["--max-servers"]),
    ("plan-confirm-1e9-replications", [*PLAN, "--confirm", "--replications", "1000000000"],
     ["--replications", "memory", "--max-memory"]),
    ("best-1e6-hosts-and-replicas", ["split-merge", "best", "-n", "1000000", "--arrival-rate", "1",
                                     "--max-replicas", "1000000"], ["--hosts/--max-replicas", "--max-"]),
    ("exact-max-states-1e20", ["approximate", "-R", "20", "--load", "0.95", "--method", "exact", "--max-states",
                               "99999999999999999999"], ["--max-states must be an integer <= 2**63 - 1"]),
    ("exact-max-states-1e16", ["approximate", "-R", "20", "--load", "0.95", "--method", "exact", "--max-states",
                               "9999999999999999", "--max-time", "20s"], ["-R/--rho", "exact's tagged chain"]),
    ("restart-simulate-horizon-1e12", ["restart", "simulate", "-m", "example1", "--horizon", "1e12"],
     ["--horizon", "events", "more than"]),
    ("restart-optimise-horizon-1e12", ["restart", "optimise", "-m", "example1", "--horizon", "1e12"],
     ["--horizon", "events"]),
    ("alias-bomb-model", ["restart", "solve", "-m", "{file:BOMB}"], ["--model", "aliases", "expand"]),
    # Silent
    ("plan-replications-without-confirm", [*PLAN, "--replications", "3"], ["--replications applies only", "--confirm"]),
    ("plan-accuracy-empty", [*PLAN, "--accuracy", "{file:EMPTY_CSV}"], ["--accuracy", "header"]),
    ("plan-accuracy-wrong-columns", [*PLAN, "--accuracy", "{file:WRONG_CSV}"], ["--accuracy", "header"]),
    ("plan-accuracy-nan", [*PLAN, "--accuracy", "{file:NAN_CSV}"], ["--accuracy", "finite relative errors"]),
    ("duplicate-key-model", ["restart", "solve", "-m", "{file:DUPLICATE}"],
     ["--model", "'arrival_rate' is given twice"]),
    ("restart-horizon-1e300", ["restart", "simulate", "-m", "example1", "--horizon", "1e300"],
     ["--horizon", "more than", "stopped"]),
    # found by probing beyond the issue's list (the held-out kinds), kept
    ("probe-erlang-replica-law-1e8", ["split-merge", "exact", "-n", "4", "-r", "2", "-q", "1", "--load", "0.5",
                                      "--replica-law", "erlang:k=100000000"], ["--replica-law", "memory"]),
    ("probe-capacitated-theta-1e300", ["simulate", *C, "--discipline", "capacitated:1e300"],
     ["--discipline capacitated:THETA", "inter-arrival"]),
    ("probe-plan-load-at-a-million-servers", ["plan", "--rho", "0.99999", "-R", "1000000", "--mean-service", "1.2ms",
                                              "--deadline", "72ms", "--reliability", "0.99", "--max-servers",
                                              "2000000"], ["--rho/-R/--mean-service", "method T"]),
    ("probe-split-merge-horizon-1e300", ["split-merge", "simulate", "-n", "4", "-r", "2", "-q", "1", "--load", "0.5",
                                         "--horizon", "1e300"], ["--horizon", "predicted to take"]),
    ("probe-timeout-law-1e-300", ["restart", "simulate", "-m", "example1", "--semantics", "timeout", "--timeout",
                                  "deterministic:value=1e-300"], ["--timeout", "mean"]),
    # found by the fuzzer (tests/workflow/test_fuzz.py), kept
    ("fuzz-grid-of-1e300", ["restart", "optimise", "-m", "example2", "--horizon", "500", "--replications", "2",
                            "--dt", "1e300", "--t-max", "1e300"], ["--dt must be at most 1e+100"]),
    ("fuzz-model-name", ["restart", "solve", "-m", "nan"], ["--model nan", "example1"]),
    ("fuzz-queue-name", ["restart", "optimise", "-m", "example2", "--horizon", "500", "--queue", "1,1"],
     ["--queue must be one of"]),
    ("fuzz-taus-tiny", ["restart", "optimise", "-m", "example2", "--horizon", "500", "--taus", "1e-300"],
     ["--taus", "1e-300"]),
    ("fuzz-optimise-one-replication", ["restart", "optimise", "-m", "example2", "--horizon", "500",
                                       "--replications", "1"], ["--replications must be an integer >= 2"]),
    ("fuzz-model-path-too-long", ["restart", "solve", "-m", "x" * 5000], ["--model"]),
    ("fuzz-output-path-too-long", ["restart", "solve", "-m", "example1", "-o", "y" * 5000], ["--output"]),
    ("fuzz-model-signal-rate-2**64", ["restart", "simulate", "-m", "{file:HUGE_SIGNALS}", "--horizon", "1000"],
     ["--model", "signal_rate"]),
    ("fuzz-model-phase-rates-1e300", ["restart", "solve", "-m", "{file:WILD_RATES}"], ["--model", "mean service time"]),
    ("fuzz-law-list-for-a-number", ["split-merge", "simulate", "-n", "4", "-r", "2", "-q", "1", "--load", "0.5",
                                    "--replica-law", "deterministic:mean=0.5/inf/1e-300"],
     ["--replica-law", "must be one number"]),
    ("fuzz-negative-exponent-in-a-list", ["restart", "optimise", "-m", "example2", "--taus", "2", "0.8", "-1e300"],
     ["--taus must be in (0, inf)"]),
]

FILES = {"ERLANG": ERLANG, "DUPLICATE": DUPLICATE, "BOMB": BOMB, "WILD_RATES": WILD_RATES,
         "HUGE_SIGNALS": HUGE_SIGNALS, "EMPTY_CSV": "",
         "WRONG_CSV": "a,b,c\n1,2,3\n",
         "NAN_CSV": "R,rho,percentile,approximation,relative_error_mean,relative_error_ci_low,relative_error_ci_high,"
                    "optimistic,usable\n2,0.5,99,A,nan,nan,nan,0,1\n"}


def _argv(argv, tmp_path):
    out = []
    for a in argv:
        if a.startswith("{file:"):
            name = a[6:-1]
            p = tmp_path / f"{name.lower()}{'.csv' if name.endswith('CSV') else '.yaml'}"
            p.write_text(FILES[name])
            a = str(p)
        out.append(a)
    writes = (["simulate"], ["approximate"], ["restart", "solve"], ["restart", "simulate"], ["restart", "optimise"],
              ["split-merge", "simulate"])
    if any(out[:len(w)] == w for w in writes) and "-o" not in out:
        out += ["-o", str(tmp_path / "out.nc")]
    return out


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_an_issue_or_fuzzer_case_ends_in_one_line_naming_the_flag(case, tmp_path, capsys):
    _, argv, wanted = case
    argv = _argv(argv, tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    rc = main(argv)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("sojourn: ")]
    assert rc == 2, err
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in err, err
    for w in wanted:
        assert w in lines[0], (w, lines[0])
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_plan_answers_one_server_for_an_empty_system(capsys):
    """Issue 32: R = 3 at an arrival rate of 1e-300/s; an empty system meets the target at R = 1 (a bound decides:
    P(T > d) ≤ P(S > d) + P(an arrival finds a customer) + P(another arrives within d) = e^-60 + 1e-301)."""
    from sojourn.jsq_ps.plan import plan

    res = plan(arrival_rate="1e-300/s", mean_service="1.2ms", deadline="72ms", reliability=0.9999)
    assert res.R == 1 and res.rows[0]["method"] == "bound"
    assert res.rows[0]["bound_tail"] < 1e-25
    # a deadline far beyond every percentile: the least stable R, by Markov's bound, at once
    res = plan(arrival_rate="9000/s", mean_service="1.2ms", deadline="1e300s", reliability=0.9999)
    assert res.R == res.request.min_stable == 11


def test_the_bound_never_answers_where_a_method_finds_the_target_missed():
    """The bound is a lower bound of P(T ≤ d): wherever it certifies a 'meets', exact agrees."""
    import numpy as np

    from sojourn.jsq_ps.plan.planner import Planner
    from sojourn.jsq_ps.plan.request import check_request
    from sojourn.jsq_ps.solve.exact import exact_sojourn_cdf

    for rate, d in (("1/s", "60ms"), ("0.01/s", "12ms"), ("900/s", "10s")):
        q = check_request(arrival_rate=rate, mean_service="1ms", deadline=d, reliability=0.99)
        pl = Planner(q)
        for R in (q.min_stable, q.min_stable + 1):
            b = pl.bound(R)
            if b is None:
                continue
            F = exact_sojourn_cdf(q.offered, 1.0, R, np.array([q.d])).cdf[0]
            assert F >= b[0] - 1e-9, (rate, d, R, F, b)


def test_exact_at_a_negligible_load_is_the_service_law():
    """The tagged customer's own start is never pruned: at load 1e-100 exact gave a CDF of 0.5 everywhere."""
    import sojourn

    t = np.linspace(0, 20, 41)
    ds = sojourn.approximate(sojourn.mm_jsq_ps(2, 1e-100), "exact", t=t)
    assert np.max(np.abs(ds["cdf"].values + np.expm1(-t))) < 1e-9


def test_api_simulate_refuses_a_grid_beyond_memory_naming_the_arguments():
    import sojourn

    with pytest.raises(ValueError, match=r"^dt must be larger: t_max/dt = 1.82e\+302 points"):
        sojourn.simulate(sojourn.mm_jsq_ps(2, 0.5), horizon=100, warmup=1, dt=1e-300)
    with pytest.raises(ValueError, match=r"^t_max/dt: this request needs .* SOJOURN_MAX_MEMORY"):
        sojourn.simulate(sojourn.mm_jsq_ps(2, 0.5), horizon=100, warmup=1, dt=1e-9)
    with pytest.raises(ValueError, match=r"^seed must be an integer <= 2\*\*64 - 1"):
        sojourn.simulate(sojourn.mm_jsq_ps(2, 0.5), horizon=100, warmup=1, seed=2**64)


# -- configs --------------------------------------------------------------------------------------------------------
def _checked(cfg):
    from workflow.test_fuzz import parse_like_the_snakefile

    parse_like_the_snakefile(cfg)


CONFIG_CASES = [
    ("seed-1e30", {"jsq_ps": {"simulation": {"seed": 1.0e30}}},
     "jsq_ps.simulation.seed: must be <= 18446744073709551615"),
    ("rho-step-1e-9", {"jsq_ps": {"grid": {"rho": None, "rho_range": {"start": 0.01, "stop": 0.99, "step": 1e-9}}}},
     "jsq_ps.grid.rho_range.step: 1e-09 is below one unit"),
    ("scheduler-file-missing", {"cluster": {"kind": "scheduler_file", "scheduler_file": "nosuch.json"}},
     "cluster.scheduler_file: nosuch.json does not exist"),
    ("n-workers-1000", {"cluster": {"n_workers": 1000}}, "cluster.n_workers: 1000 local workers need"),
    ("jsq-horizon-1e12", {"jsq_ps": {"simulation": {"window": {"length": 1e12}}}}, "jsq_ps.simulation.window.length"),
    ("restart-horizon-1e12", {"restart": {"examples": {"example1": {"window": {"length": 1e12}}}}},
     "restart.examples.example1.window.length"),
    ("exact-budget-beyond-the-limit", {"jsq_ps": {"approximation": {"exact_budget": {"max_seconds": 1e300}}}},
     "jsq_ps.approximation.exact_budget: this request is predicted to take"),
    ("fuzz-replicas-1e9", {"split_merge": {"experiment_b": {"replicas": [6, 1, 1.0e9]}}},
     "split_merge.experiment_b.replicas: this request needs about"),
    ("fuzz-dt-subnormal", {"split_merge": {"experiment_c": {"time_grid": {"dt": 2.225073858507e-311}}}},
     "split_merge.experiment_c.time_grid: dt must be larger"),
    ("split-merge-workunits-1e11", {"split_merge": {"experiment_c": {"window": {"length": 10**11}}}},
     "split_merge.experiment_c.window.length"),
]


@pytest.mark.parametrize("case", CONFIG_CASES, ids=[c[0] for c in CONFIG_CASES])
def test_a_config_case_is_refused_in_one_line_naming_the_key(case):
    _, change, wanted = case
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    deep_update(cfg, change)
    with pytest.raises(ConfigError) as err:
        _checked(cfg)
    first = str(err.value).splitlines()[0]
    assert wanted in first and len(str(err.value).splitlines()) == 1, str(err.value)


def test_fuzz_an_integer_written_as_a_float_is_read_as_an_integer():
    """Found by the fuzzer: ``replicas: [1, 2.0]`` passed the schema (JSON schema's integers include 2.0), then
    range(1, r + 1) raised a TypeError; the validated config holds ints."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    deep_update(cfg, {"split_merge": {"experiment_b": {"replicas": [1, 2.0]}}})
    _checked(cfg)
    assert cfg["split_merge"]["experiment_b"]["replicas"] == [1, 2] and isinstance(
        cfg["split_merge"]["experiment_b"]["replicas"][1], int)


def test_fuzz_warmup_null_is_the_default_five_percent():
    """Found by the fuzzer: jsq_ps.simulation.warmup: null (the schema's "5 % of the horizon") raised a TypeError."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    deep_update(cfg, {"jsq_ps": {"simulation": {"window": {"warmup": None, "cooldown": None}}}})
    _checked(cfg)


@pytest.mark.parametrize("text, wanted", [
    ("restart:\n  examples: {}\n", "restart.examples: an empty mapping"),
    ("split_merge:\n  experiment_c:\n    laws: {}\n", "split_merge.experiment_c.laws: an empty mapping"),
    ("jsq_ps:\n  simulation:\n    replications: 3\n    replications: 4\n", "'replications' is given twice"),
    ("jsq_ps:\n  grid:\n    R: &r [1, 2]\n  mgr:\n    R: *r\n", None),  # a small alias is fine
])
def test_config_files_are_read_the_guards_way(text, wanted, tmp_path):
    from sojourn.core.checks.config import check_config_files

    f = tmp_path / "override.yaml"
    f.write_text(text)
    if wanted is None:
        check_config_files([ROOT / "config" / "config.yaml", f], ROOT / "config" / "config.yaml")
        return
    with pytest.raises(ConfigError, match=wanted):
        check_config_files([ROOT / "config" / "config.yaml", f], ROOT / "config" / "config.yaml")


def test_snakemake_refuses_an_alias_bomb_and_an_empty_override_before_any_job(tmp_path):
    """Through a real Snakemake: the config files are read by the guard before the schema walks them."""
    for name, text, wanted in (("bomb", BOMB.replace("queues: *i", "jsq_ps:\n  grid:\n    rho: *i"), "aliases"),
                               ("empty", "restart:\n  examples: {}\n", "restart.examples: an empty mapping")):
        f = tmp_path / f"{name}.yaml"
        f.write_text(text)
        r = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--snakefile", str(ROOT / "Snakefile"),
                            "--directory", str(tmp_path), "--configfile", str(f)], capture_output=True, text=True,
                           check=False, timeout=300, cwd=tmp_path)
        assert r.returncode != 0 and wanted in r.stdout + r.stderr, r.stdout[-2000:] + r.stderr[-2000:]


# -- the guard's parts ----------------------------------------------------------------------------------------------
def test_kinds_check_types_finite_ranges_and_what_is_stored():
    assert guard.Int(1)("1e6") == 10**6 and guard.SEED("18446744073709551615") == 2**64 - 1
    for kind, text in ((guard.Int(1), "0"), (guard.Int(1), "2.5"), (guard.Int(0), str(2**63)), (guard.SEED, str(2**64)),
                       (guard.POSITIVE, "nan"), (guard.POSITIVE, "inf"), (guard.POSITIVE, "0"),
                       (guard.PROBABILITY_OPEN, "1"), (guard.Text(), ""), (guard.Text(), "a\x00b"),
                       (guard.Choice("a", "b"), "c")):
        with pytest.raises(Exception, match="must be"):
            kind(text)
    with pytest.raises(ValueError, match=r"^seed must be"):
        guard.SEED.check("seed", -1)


def test_every_declared_relation_refuses_a_flag_alone(tmp_path, capsys):
    """Derived from the parsers: every flag that needs another is refused alone, naming both (a new relation is
    covered by construction); the baseline of each command stays valid."""
    found = 0
    for path, parser in fuzz.leaf_parsers().items():
        for r in guard.relations(parser):
            if r.kind != "requires":
                continue
            action = next(a for a in parser._actions if r.flag in a.option_strings)
            base = [a for a in fuzz.BASELINES[path]]
            for other in r.others:  # the baseline without the needed flag (in any of its spellings)
                needed = next(a for a in parser._actions if other in a.option_strings)
                for opt in needed.option_strings:
                    if opt in base:
                        i = base.index(opt)
                        del base[i:i + 2]
            kind = guard.kind_of(action)
            value = [] if action.nargs == 0 else [str(kind.lo) if isinstance(kind, guard.Int) else
                                                  "0.5" if isinstance(kind, guard.Real) else "mean"]
            argv = [a.replace("{out}", str(tmp_path / "o.nc")) for a in [*path, *base, r.flag, *value]]
            assert main(argv) == 2
            err = capsys.readouterr().err
            required = any(a.required for a in parser._actions if set(a.option_strings) & set(r.others))
            if required:  # the needed flag is required anyway: that is what is said
                assert "required" in err and r.others[0] in err, (argv, err)
                continue
            assert f"{r.flag} applies only with" in err and r.others[0] in err, (argv, err)
            found += 1
    assert found >= 10


def test_load_yaml_refuses_what_could_be_read_two_ways():
    with pytest.raises(ValueError, match=r"f: key 'a' is given twice in one mapping \(lines 1 and 2\)"):
        guard.load_yaml("a: 1\na: 2\n", "f")
    with pytest.raises(ValueError, match="expand it to"):
        guard.load_yaml(BOMB, "f")
    with pytest.raises(ValueError, match="an alias inside itself"):
        guard.load_yaml("a: &a\n  b: *a\n", "f")
    assert guard.load_yaml("base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n", "f")["c"] == {"x": 1, "y": 2}


def test_admit_names_the_drivers_in_the_callers_terms_and_how_to_raise_the_limit(monkeypatch):
    monkeypatch.setenv("SOJOURN_MAX_TIME", "10s")
    est = guard.Estimate(100.0, 0.0, "horizon/replications", "1e9 events")
    with pytest.raises(ValueError, match=r"^horizon/replications: .* SOJOURN_MAX_TIME=DURATION in the environment"):
        guard.admit(est)
    with guard.naming({"horizon": "--horizon", "replications": "--replications"}, "cli"), \
            pytest.raises(ValueError, match=r"^--horizon/--replications: .*--max-time DURATION"):
        guard.admit(est)
    with guard.naming({"horizon": "jsq_ps.simulation.horizon"}, "config"), \
            pytest.raises(ValueError, match=r"^jsq_ps.simulation.horizon/replications: .*environment of the pipeline"):
        guard.admit(est)
    assert guard.admit(guard.Estimate(1.0)).seconds == 1.0


def test_derived_quantities_are_checked_where_computed():
    from sojourn.core.laws.distributions import Exponential, parse_law

    with pytest.raises(ValueError, match="lognormal: the mean of .* not a finite double"):
        parse_law("lognormal:sigma=40")
    with pytest.raises(ValueError, match="exponential: the mean of .* is 1e\\+300"):
        Exponential(1e-300)
    with pytest.raises(ValueError, match="x: 1/rate² is not a finite double"):
        guard.derived("x", lambda: 1.0 / (1e-300) ** 2, "1/rate²")


def test_the_watchdog_ends_a_run_past_its_limit_in_one_line():
    """A run admitted on a prediction that then runs long is stopped (status 3) with one line saying what."""
    script = textwrap.dedent("""
        import time
        from sojourn.core.checks import guard
        guard.set_limits(seconds=0.2)
        guard.GRACE_SECONDS = 0.1
        with guard.watchdog("simulate", interval=0.05):
            guard.admit(guard.Estimate(0.1, 0.0, "horizon", "a run"))
            time.sleep(20)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=60)
    assert r.returncode == guard.WATCHDOG_STATUS, r.stderr
    line = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(line) == 1 and "sojourn simulate: error: stopped: the run ran past the time limit" in line[0]
    assert "predicted to take 0.1 s" in line[0]


# -- progress (issue 31 item 5) --------------------------------------------------------------------------------------
def test_progress_off_a_terminal_is_one_line_per_step_with_the_time_left(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SOJOURN_PROGRESS", "always")  # at once (the delay is for runs past 2 s)
    rc = main(["simulate", *C, "--replications", "3", "-o", str(tmp_path / "x.nc")])
    out, err = capsys.readouterr()
    assert rc == 0
    lines = [ln for ln in err.splitlines() if ln.startswith("sojourn: replications:")]
    assert [ln.split(":")[2].split(" done")[0].strip() for ln in lines if "done" in ln][-3:] == ["1/3", "2/3", "3/3"]
    assert all("elapsed" in ln for ln in lines) and any("left" in ln for ln in lines)
    assert "sojourn:" not in out  # the result alone on stdout


def test_ciw_announces_its_estimate_before_it_starts(tmp_path):
    r = subprocess.run([sys.executable, "-m", "sojourn.cli", "simulate", *C, "--backend", "ciw", "--horizon", "300",
                        "-o", str(tmp_path / "c.nc")], capture_output=True, text=True, check=False, timeout=300)
    assert r.returncode == 0, r.stderr
    first = r.stderr.splitlines()[0]
    assert first.startswith("sojourn: estimate: about") and "Ciw" in first, r.stderr


def test_the_estimate_of_a_long_run_gives_the_time_left_before_its_first_step(monkeypatch):
    from sojourn.core.runs import progress

    monkeypatch.setenv("SOJOURN_PROGRESS", "always")
    est = guard.Estimate(100.0, 0.0, "horizon", "a long run")
    assert progress._left(10.0, 0, 5, est) == "about 1.5 min left (estimate)"
    assert progress._left(10.0, 1, 5, est) == "about 40 s left"
    assert progress._left(200.0, 0, 5, est) == "longer than estimated"


def test_a_commands_limits_end_with_it(tmp_path, capsys):
    """--max-time of one command does not stay the process's limit (a test or a script calling main twice)."""
    assert main(["simulate", *C, "--max-time", "1e-6", "-o", str(tmp_path / "x.nc")]) == 2
    capsys.readouterr()
    assert guard.limits()[3] != "--max-time"
