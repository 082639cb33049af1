"""A catalogue of bad inputs (issue 13, item 5): command line, Python API and config, each rejected before
any compute with the right exit status or exception type, a message naming the field in the user's own
terms (the flag or the config key path, "did you mean …" for a misspelling), and no result file.

CLI cases run ``sojourn.cli.main`` in-process with the compute and write functions replaced by ones that
fail the test, so "rejected before any compute" is checked, not assumed; a few run the real ``sojourn``
console script. Config cases run the validation the Snakefile runs (``validate_config`` on the top level
and the study section, then the study's cross-field checks); a few run a real Snakemake in a temp folder.
``CATALOGUE_SIZE`` counts the distinct bad inputs.
"""
from __future__ import annotations

import copy
import errno
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

import sojourn.core.files.io as core_io
import sojourn.jsq_ps.config as G
import sojourn.jsq_ps.simulate as simulate_module
import sojourn.jsq_ps.solve.api as analytic_api
from sojourn.cli import main
from sojourn.core.checks.config import ConfigError, load_schema, validate_config
from sojourn.core.laws.distributions import parse_law
from sojourn.jsq_ps.model import JSQPS
from sojourn.jsq_ps.simulate import simulate
from sojourn.jsq_ps.solve.api import approximate
from support.configs import deep_update

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"


@dataclass(frozen=True)
class Case:
    id: str
    bad: object  # argv (CLI), a callable (API) or a config change (config)
    names: tuple  # strings the message must contain: the flag / field / key path the user wrote
    suggest: str | None = None  # the "did you mean" target, where the input is a misspelling
    absent: tuple = ()  # strings the message must not contain (internal names, misleading numbers)
    status: int = 2  # CLI exit status


# -- command line --------------------------------------------------------------------------------
SIM = ["simulate", "-R", "2", "--rho", "0.5", "--horizon", "2000", "--warmup", "100", "--dt", "0.1", "--t-max", "10"]
APX = ["approximate", "-R", "2", "--rho", "0.5", "--method", "A", "--dt", "0.1", "--t-max", "10"]
OUT = "{out}"  # replaced by a path in the test's temp folder


def _sim(*extra, out=True):
    return [*SIM, *extra, *(["--output", OUT] if out else [])]


def _apx(*extra, out=True):
    return [*APX, *extra, *(["--output", OUT] if out else [])]


CLI = [
    # laws
    Case("service-unknown", _sim("--service", "nosuchlaw"), ("--service", "unknown law")),
    Case("service-misspelt", _sim("--service", "lognorml"), ("--service",), "lognormal"),
    Case("service-param-misspelt", _sim("--service", "lognormal:sigmaa=1"), ("--service", "sigmaa"), "sigma",
         absent=("name",)),
    Case("service-param-not-a-number", _sim("--service", "lognormal:sigma=abc"), ("--service", "sigma")),
    Case("service-param-negative", _sim("--service", "gamma:shape=-1"), ("--service", "gamma.shape")),
    Case("service-ph-shape", _sim("--service", "phasetype:alpha=1/0,T=-2/2"), ("--service", "phasetype.T")),
    Case("service-ph-alpha", _sim("--service", "phasetype:alpha=0.5/0.4,T=-1/0|0/-1"),
         ("--service", "phasetype.alpha")),
    Case("service-ph-missing-T", _sim("--service", "phasetype:alpha=1"), ("--service", "T")),
    Case("arrivals-unknown", _sim("--arrivals", "cauchy"), ("--arrivals", "unknown law")),
    # run window
    Case("horizon-negative", _sim("--horizon", "-5"), ("--horizon", "(0, inf)"), absent=("16000", "warmup")),
    Case("horizon-exponent-negative", _sim("--horizon", "-1e3"), ("--horizon",)),
    Case("horizon-nan", _sim("--horizon", "nan"), ("--horizon",)),
    Case("horizon-inf", _sim("--horizon", "inf"), ("--horizon",)),
    Case("horizon-below-warmup-and-default-cooldown",
         ["simulate", "-R", "2", "--rho", "0.5", "--horizon", "100", "--warmup", "50", "--output", OUT],
         ("--horizon", "--warmup", "--cooldown", "defaults to --warmup")),
    Case("warmup-plus-cooldown-equal-horizon", _sim("--warmup", "1000", "--cooldown", "1000"),
         ("--horizon", "--warmup", "--cooldown")),
    Case("warmup-negative", _sim("--warmup", "-1"), ("--warmup",)),
    Case("cooldown-negative", _sim("--cooldown", "-1"), ("--cooldown",)),
    # system
    Case("load-one", _sim("--rho", "1"), ("--rho", "(0, 1)")),
    Case("load-above-one", _sim("--rho", "1.2"), ("--rho",)),
    Case("load-zero", _sim("--rho", "0"), ("--rho",)),
    Case("load-negative", _sim("--rho", "-0.3"), ("--rho",)),
    Case("load-nan", _sim("--rho", "nan"), ("--rho",)),
    Case("servers-zero", _sim("-R", "0"), ("--servers",)),
    Case("servers-not-integer", _sim("-R", "two"), ("--servers", "must be an integer")),
    Case("mu-zero", _sim("--mu", "0"), ("--mu",)),
    Case("mu-negative", _sim("--mu", "-1"), ("--mu",)),
    Case("mu-inf", _sim("--mu", "inf"), ("--mu",)),
    # grid
    Case("dt-zero", _sim("--dt", "0"), ("--dt",)),
    Case("dt-negative", _sim("--dt", "-0.1"), ("--dt",)),
    Case("tmax-below-dt", _sim("--t-max", "0.05"), ("--t-max", "--dt")),
    Case("tmax-not-multiple", _sim("--dt", "0.03", "--t-max", "1"), ("--t-max", "multiple of --dt")),
    Case("replications-zero", _sim("--replications", "0"), ("--replications",)),
    Case("seed-negative", _sim("--seed", "-1"), ("--seed",)),
    # choices
    Case("backend-unknown", _sim("--backend", "simpy"), ("--backend", "fast, ciw")),
    Case("backend-misspelt", _sim("--backend", "cwi"), ("--backend",), "ciw"),
    Case("dispatch-unknown", _sim("--dispatch", "nearest"), ("--dispatch",)),
    Case("dispatch-misspelt", _sim("--dispatch", "randm"), ("--dispatch",), "random"),
    Case("dispatch-choices-too-many", _sim("--dispatch", "jsq-d:9"), ("--dispatch", "choices", "-R")),
    Case("dispatch-choices-not-integer", _sim("--dispatch", "jsq-d:x"), ("--dispatch",)),
    Case("discipline-limit-not-integer", _sim("--discipline", "limited:x"), ("--discipline",)),
    Case("discipline-limit-zero", _sim("--discipline", "limited:0"), ("--discipline limited:C",)),
    Case("discipline-threshold-negative", _sim("--discipline", "capacitated:-1"), ("--discipline",)),
    Case("discipline-misspelt", _sim("--discipline", "lmited:2"), ("--discipline",), "limited"),
    # flags and commands
    Case("flag-misspelt-load", ["simulate", "-R", "2", "--laod", "0.5", "--output", OUT], ("--laod",), "--load"),
    Case("flag-misspelt-horizon", _sim("--horizn", "5"), ("--horizn",), "--horizon"),
    Case("command-misspelt", ["simulat", "-R", "2"], ("simulat",), "simulate"),
    Case("output-missing", _sim(out=False), ("--output",)),
    # output
    Case("output-unwritable", [*SIM, "--output", "/proc/sojourn-x.nc"], ("--output", "/proc")),
    Case("output-folder-missing", [*SIM, "--output", "{tmp}/no/such/dir/x.nc"], ("--output", "--mkdir")),
    Case("output-is-a-folder", [*SIM, "--output", "{tmp}"], ("--output", "folder")),
    Case("output-under-a-file", [*SIM, "--output", "{tmp}/a-file.txt/x.nc"], ("--output", "not a folder")),
    Case("output-empty", [*SIM, "--output", ""], ("--output",)),
    # approximate
    Case("method-unknown", _apx("--method", "G"), ("--method",)),
    Case("method-misspelt", _apx("--method", "a"), ("--method",), "A"),
    Case("method-exact-with-L1", _apx("--method", "exact", "--L1", "2"), ("--L1", "--method exact"),
         absent=("state_budget", "eps", "'M'", "'D'")),
    Case("L1-below-2", _apx("--L1", "1"), ("--L1",)),
    Case("L2-below-L1", _apx("--L1", "5", "--L2", "4"), ("--L2", "--L1")),
    Case("L2-below-table4-L1", _apx("--L2", "4"), ("--L2", "--L1", "Table 4")),
    Case("L1-above-default-L2", _apx("--L1", "300"), ("--L2", "--L1")),
    Case("approximate-load-one", _apx("--rho", "1"), ("--rho",)),
    Case("approximate-tmax-nan", _apx("--t-max", "nan"), ("--t-max",)),
    Case("approximate-flag-misspelt", ["approximate", "-R", "2", "--rho", "0.5", "--metod", "A", "--output", OUT],
         ("--metod",), "--method"),
    # precision-driven replications
    Case("precision-statistic-unknown", _sim("--precision", "median"), ("--precision",), "mean"),
    Case("precision-at-not-a-number", _sim("--precision", "percentile:x"), ("--precision percentile:x", "AT")),
    Case("precision-percentile-100", _sim("--precision", "percentile:100"), ("--precision percentile:AT", "(0, 100)")),
    Case("precision-cdf-without-time", _sim("--precision", "cdf"), ("--precision cdf:AT", "required")),
    Case("precision-cdf-beyond-grid", _sim("--precision", "cdf:50"), ("--precision cdf:AT", "--t-max")),
    Case("precision-mean-with-at", _sim("--precision", "mean:3"), ("--precision mean:AT", "does not apply")),
    Case("precision-and-replications", _sim("--precision", "mean", "--replications", "3"),
         ("--replications", "--precision")),
    Case("half-width-without-precision", _sim("--relative-half-width", "0.1"),
         ("--relative-half-width", "--precision")),
    Case("half-width-zero", _sim("--precision", "mean", "--relative-half-width", "0"), ("--relative-half-width",)),
    Case("max-replications-one", _sim("--precision", "mean", "--max-replications", "1"), ("--max-replications",)),
    Case("min-above-max-replications",
         _sim("--precision", "mean", "--min-replications", "9", "--max-replications", "8"),
         ("--min-replications", "--max-replications")),
    # issue 26: predicted memory and time refused before any allocation, naming the flag and the override
    Case("servers-memory", _sim("-R", "100000000"), ("-R", "GiB of memory", "--max-memory")),
    Case("grid-memory", _sim("--dt", "1e-9", "--t-max", "1e9"), ("--t-max/--dt", "EiB of memory", "--max-memory")),
    Case("events-time", _sim("-R", "1000", "--horizon", "1e9"),
         ("-R/--horizon/--replications", "predicted to take", "--max-time")),
    Case("limit-from-flag", _sim("--max-memory", "1k"), ("--t-max/--dt", "(--max-memory)")),
    Case("max-memory-not-a-size", _sim("--max-memory", "lots"), ("--max-memory", "16G")),
    Case("max-time-unknown-unit", _sim("--max-time", "1ms"), ("--max-time", "30m")),
    Case("approximate-L2-memory", _apx("--L2", "100000000"), ("--L2", "memory", "--max-memory"),
         absent=("--t-max/--dt",)),
    Case("approximate-grid-memory", _apx("--dt", "1e-9", "--t-max", "1e9"), ("--t-max/--dt", "memory")),
    Case("approximate-servers-memory", _apx("-R", "100000000", "--method", "exact"), ("-R", "memory")),
    # T's phase tables grow as R³ (R − 1 offsets per phase): it built them for minutes, then the OOM killer at 24 GB
    Case("approximate-T-servers-memory", _apx("-R", "3000", "--method", "T"), ("-R", "memory", "method T")),
    Case("approximate-L1-memory", _apx("-R", "8", "--L1", "200", "--L2", "200"), ("--L1", "memory")),
    # issue 26: laws
    Case("service-param-twice", _sim("--service", "lognormal:sigma=1,sigma=5"), ("--service", "'sigma'", "twice")),
    Case("service-gamma-shape-tiny", _sim("--service", "gamma:shape=1e-300"),
         ("--service", "gamma.shape", ">= 0.00651")),
]

# split-merge and restart commands (issue 26): the flag named, never only the model's field
SM = ["split-merge"]
SMX = [*SM, "exact", "-n", "4", "-r", "2", "-q", "1", "--load", "0.5"]
SMS = [*SM, "simulate", "-n", "4", "-r", "2", "-q", "1", "--load", "0.5", "--workunits", "1000", "--replications", "2"]
SMB = [*SM, "best", "-n", "4", "--arrival-rate", "1"]
RS = ["restart", "solve", "-m", "example1", "-o", OUT]
RSIM = ["restart", "simulate", "-m", "example1", "--horizon", "2000", "--replications", "2", "-o", OUT]
HYPER = "hyperexponential:probs=0.5/0.5,rates=2/0.667"

OTHER_CLI = [
    Case("sm-hosts-memory", [*SM, "simulate", "-n", "1000000000000", "-r", "1", "-q", "1", "--load", "0.5", "-o", OUT],
         ("--hosts", "memory", "--max-memory")),
    Case("sm-order-statistic-memory", [*SM, "exact", "-n", "100000", "-r", "100000", "-q", "50000", "--load", "0.5",
                                       "--replica-law", HYPER], ("--replicas/--quorum", "memory", "--max-memory")),
    Case("sm-grid-memory", [*SMS, "--dt", "1e-9", "--t-max", "1e9", "-o", OUT], ("--t-max/--dt", "memory")),
    Case("sm-workunits-time", [*SMS[:-4], "--workunits", "1000000000000", "-o", OUT],
         ("--workunits/--horizon/--replications", "predicted to take", "--max-time")),
    Case("sm-workunits-zero", [*SMS[:-4], "--workunits", "0", "-o", OUT], ("--workunits", ">= 1")),
    Case("sm-percentiles-empty", [*SMX, "--percentiles", ","], ("--percentiles", "at least one level")),
    Case("sm-percentiles-twice", [*SMX, "--percentiles", "50,50"], ("--percentiles", "50", "twice")),
    Case("sm-percentiles-word", [*SMX, "--percentiles", "50,p99"], ("--percentiles", "'p99'")),
    Case("sm-percentile-100", [*SMX, "--percentiles", "100"], ("--percentiles", "(0, 100)")),
    Case("sm-simulate-percentiles-twice", [*SMS, "--percentiles", "99,99", "-o", OUT], ("--percentiles", "twice")),
    Case("sm-top-negative", [*SMB, "--top", "-1"], ("--top", ">= 1")),
    Case("sm-top-zero", [*SMB, "--top", "0"], ("--top", ">= 1")),
    Case("sm-quorum-min-above-max-replicas", [*SMB, "--quorum-min", "5", "--max-replicas", "3"],
         ("--quorum-min", "--max-replicas = 3", "no pair (r, q)"), absent=("unstable",)),
    Case("sm-quorum-min-above-hosts", [*SMB, "--quorum-min", "5"], ("--quorum-min", "--hosts = 4"),
         absent=("unstable",)),
    Case("sm-best-workunits-zero", [*SMB, "--workunits", "0"], ("--workunits", ">= 1")),
    Case("sm-replicas-above-hosts", [*SM, "exact", "-n", "3", "-r", "4", "-q", "1", "--load", "0.5"],
         ("--replicas must", "--hosts=3")),
    Case("sm-quorum-above-replicas", [*SM, "exact", "-n", "4", "-r", "2", "-q", "3", "--load", "0.5"],
         ("--quorum must", "--replicas=2")),
    Case("sm-arrival-rate-unstable", [*SM, "exact", "-n", "4", "-r", "2", "-q", "1", "--arrival-rate", "4"],
         ("--arrival-rate must be <",), absent=("arrival_rate",)),
    Case("sm-replica-law-twice", [*SMX, "--replica-law", "lognormal:sigma=1,sigma=5"], ("--replica-law", "twice")),
    Case("sm-replica-law-gamma-tiny", [*SMX, "--replica-law", "gamma:shape=1e-300"],
         ("--replica-law", "gamma.shape", ">= 0.00651")),
    Case("restart-signal-rate-round-off", [*RS, "--signal-rate", "1e300"], ("--signal-rate 1e+300", "round-off"),
         absent=("routing cycle",)),
    Case("restart-signal-rate-unstable", [*RS, "--signal-rate", "1000"], ("--signal-rate 1000", "unstable")),
    Case("restart-grid-memory", [*RSIM, "--dt", "1e-9", "--t-max", "1e9"], ("--t-max/--dt", "memory")),
    Case("restart-optimise-grid-memory", ["restart", "optimise", "-m", "example1", "--dt", "1e-9", "--t-max", "1e9",
                                          "-o", OUT], ("--t-max/--dt", "13 timeouts")),
    # optimise's search interval and sweep, named as flags before the model is loaded
    Case("restart-optimise-bounds-order", ["restart", "optimise", "-m", "example1", "--bounds", "5", "1", "-o", OUT],
         ("--bounds LO HI", "0 <= LO < HI", "5 1")),
    Case("restart-optimise-bounds-nan", ["restart", "optimise", "-m", "example1", "--bounds", "nan", "3", "-o", OUT],
         ("--bounds must be a finite number",)),
    Case("restart-optimise-taus-zero", ["restart", "optimise", "-m", "example1", "--taus", "0", "1", "-o", OUT],
         ("--taus must be in (0, inf)",), absent=("error: taus",)),
    Case("restart-tmax-not-multiple", [*RSIM, "--dt", "0.03", "--t-max", "1"], ("--t-max", "multiple of --dt")),
    Case("restart-timeout-twice", [*RSIM, "--semantics", "timeout", "--timeout", "lognormal:sigma=1,sigma=2"],
         ("--timeout", "twice")),
    Case("restart-timeout-missing", [*RSIM, "--semantics", "timeout"], ("--timeout is required",)),
    Case("restart-timeout-without-semantics", [*RSIM, "--timeout", "exponential"], ("--timeout applies only",)),
]


@pytest.fixture
def no_compute(monkeypatch):
    """Compute and write functions that fail the test: a bad input must be rejected before them."""
    def forbidden(*a, **k):
        raise AssertionError("computed or wrote although the input is invalid")

    monkeypatch.setattr(simulate_module, "simulate", forbidden)
    monkeypatch.setattr(analytic_api, "approximate", forbidden)
    monkeypatch.setattr(core_io, "write_netcdf", forbidden)
    import sojourn.restart.optimise as restart_optimise
    import sojourn.restart.simulate as restart_simulate
    import sojourn.split_merge.best as sm_best
    import sojourn.split_merge.simulate as sm_simulate
    import sojourn.split_merge.solve as sm_solve

    for module, name in ((sm_simulate, "simulate"), (sm_solve, "exact_dataset"), (sm_best, "best"),
                         (restart_simulate, "simulate"), (restart_optimise, "optimise")):
        monkeypatch.setattr(module, name, forbidden)


def _argv(argv, tmp_path):
    (tmp_path / "a-file.txt").write_text("not a folder\n")
    return [a.replace(OUT, str(tmp_path / "result.nc")).replace("{tmp}", str(tmp_path)) for a in argv]


def _files(tmp_path):
    return sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))


def _check_message(case, text):
    for name in case.names:
        assert name in text, (name, text)
    if case.suggest is not None:
        assert f"did you mean {case.suggest!r}" in text, text
    for word in case.absent:
        assert word not in text, (word, text)


@pytest.mark.parametrize("case", CLI + OTHER_CLI, ids=[c.id for c in CLI + OTHER_CLI])
def test_cli_rejects(case, tmp_path, capsys, no_compute):
    argv = _argv(case.bad, tmp_path)
    before = _files(tmp_path)
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == case.status, err
    last = err.strip().splitlines()[-1]  # the error line (argparse prints the usage before it)
    assert "error:" in last and "Traceback" not in err
    _check_message(case, last)
    assert _files(tmp_path) == before  # no result, no probe, no folder created
    assert not os.path.exists("/proc/sojourn-x.nc")


def test_a_refused_request_runs_when_its_limit_is_raised_on_purpose(tmp_path, capsys, monkeypatch, no_compute):
    """The cost limits come from the flag, else the environment, else the default; raising one lets the same
    request reach its compute (here the forbidden stand-in)."""
    monkeypatch.setenv("SOJOURN_MAX_MEMORY", "1k")
    assert main(_argv(_sim(), tmp_path)) == 2
    assert "(SOJOURN_MAX_MEMORY); lower --t-max/--dt" in capsys.readouterr().err
    with pytest.raises(AssertionError, match="computed or wrote"):
        main(_argv(_sim("--max-memory", "none"), tmp_path))
    monkeypatch.setenv("SOJOURN_MAX_TIME", "1s")
    assert main(_argv(_sim("--max-memory", "none", "-R", "50", "--horizon", "1e6"), tmp_path)) == 2
    assert "predicted to take" in capsys.readouterr().err
    with pytest.raises(AssertionError, match="computed or wrote"):
        main(_argv(_sim("--max-memory", "none", "-R", "50", "--horizon", "1e6", "--max-time", "2h"), tmp_path))


SCRIPT = [
    ["simulate", "-R", "2", "--laod", "0.5", "--output", OUT],
    _sim("--horizon", "-5"),
    [*SIM, "--output", "/proc/sojourn-x.nc"],
    _apx("--method", "exact", "--L1", "2"),
]


@pytest.mark.parametrize("argv", SCRIPT, ids=["laod", "horizon", "proc", "exact-L1"])
def test_console_script_rejects_in_one_line(argv, tmp_path):
    """The installed ``sojourn`` script: exit status 2, one error line naming the flag, no traceback."""
    exe = shutil.which("sojourn") or pytest.fail("the sojourn console script is not installed")
    case = next(c for c in CLI if c.bad == argv)
    argv = _argv(argv, tmp_path)
    before = _files(tmp_path)
    r = subprocess.run([exe, *argv], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert "Traceback" not in r.stderr
    _check_message(case, r.stderr.strip().splitlines()[-1])
    assert _files(tmp_path) == before


def test_mkdir_creates_the_folder_and_writes(tmp_path, capsys):
    out = tmp_path / "new" / "sub" / "x.nc"
    rc = main(["approximate", "-R", "1", "--load", "0.5", "--method", "A", "--dt", "0.5", "--t-max", "5",
               "--output", str(out), "--mkdir"])
    assert rc == 0, capsys.readouterr().err
    assert out.is_file() and core_io.read_netcdf(out)["cdf"].size == 11


def test_os_error_while_writing_is_one_line_with_status_1(tmp_path, capsys, monkeypatch):
    out = tmp_path / "x.nc"

    def disk_full(ds, path, encoding=None):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(core_io, "write_netcdf", disk_full)
    rc = main(["approximate", "-R", "1", "--load", "0.5", "--method", "A", "--dt", "0.5", "--t-max", "5",
               "--output", str(out)])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.count("\n") == 1 and str(out) in err and os.strerror(errno.ENOSPC).lower() in err.lower()
    assert not out.exists()


# -- Python API ----------------------------------------------------------------------------------
GOOD = JSQPS.from_rho(2, 0.5)

API = [
    Case("api-law-unknown", lambda: parse_law("nosuchlaw"), ("unknown law",)),
    Case("api-law-misspelt", lambda: parse_law("lognorml"), ("unknown law",), "lognormal"),
    Case("api-law-param-misspelt", lambda: parse_law("lognormal:sigmaa=1"), ("sigmaa", "mu, sigma"), "sigma",
         absent=("name",)),
    Case("api-law-phasetype-without-parameters", lambda: parse_law("phasetype"), ("alpha, T",)),
    Case("api-law-ph-row-sum", lambda: parse_law("phasetype:alpha=1/0,T=-1/2|0/-2"), ("phasetype.T",)),
    Case("api-law-hyperexp-probs", lambda: parse_law("hyperexponential:probs=0.5/0.6,rates=1/2"),
         ("hyperexponential.probs",)),
    Case("api-law-rate-nan", lambda: parse_law("exponential:rate=nan"), ("exponential.rate",)),
    Case("api-law-rate-negative", lambda: parse_law("exponential:rate=-1"), ("exponential.rate",)),
    Case("api-law-rate-inf", lambda: parse_law("exponential:rate=inf"), ("exponential.rate",)),
    Case("api-law-not-a-string", lambda: parse_law(3), ("NAME[:key=value",)),
    Case("api-rho-one", lambda: JSQPS.from_rho(2, 1.0), ("rho",)),
    Case("api-R-zero", lambda: JSQPS.from_rho(0, 0.5), ("R must",)),
    Case("api-mu-nan", lambda: JSQPS.from_rho(2, 0.5, mu=float("nan")), ("mu",)),
    Case("api-dispatch-unknown", lambda: JSQPS.from_rho(2, 0.5, dispatch="fastest"), ("dispatch",)),
    Case("api-window", lambda: simulate(GOOD, horizon=1000.0, warmup=600.0), ("horizon",)),
    Case("api-dt-zero", lambda: simulate(GOOD, horizon=1000.0, warmup=10.0, dt=0.0), ("dt",)),
    Case("api-tmax-not-multiple", lambda: simulate(GOOD, horizon=1000.0, warmup=10.0, dt=0.03, t_max=1.0),
         ("t_max",)),
    Case("api-backend", lambda: simulate(GOOD, horizon=1000.0, warmup=10.0, backend="simpy"), ("backend",)),
    Case("api-method", lambda: approximate(GOOD, "Z"), ("method",)),
    Case("api-precision-and-replications", lambda: simulate(GOOD, horizon=1000.0, warmup=10.0, replications=3,
                                                            precision={"statistic": "mean"}),
         ("replications", "precision")),
    Case("api-precision-statistic", lambda: simulate(GOOD, horizon=1000.0, warmup=10.0,
                                                     precision={"statistic": "median"}),
         ("precision.statistic",), "mean"),
    Case("api-precision-key-misspelt", lambda: simulate(GOOD, horizon=1000.0, warmup=10.0,
                                                        precision={"relative_halfwidth": 0.1}),
         ("precision.relative_halfwidth", "unknown key"), "relative_half_width"),
    Case("api-precision-not-a-mapping", lambda: simulate(GOOD, horizon=1000.0, warmup=10.0, precision=0.05),
         ("precision", "mapping")),
    Case("api-precision-cdf-beyond-grid", lambda: simulate(GOOD, horizon=1000.0, warmup=10.0, t_max=10.0,
                                                           precision={"statistic": "cdf", "at": 20.0}),
         ("precision.at", "t_max")),
    Case("api-exact-L1", lambda: approximate(GOOD, "exact", L1=2), ("L1",)),
]


@pytest.mark.parametrize("case", API, ids=[c.id for c in API])
def test_api_rejects(case):
    with pytest.raises(ValueError) as err:
        case.bad()
    _check_message(case, str(err.value))


# -- config --------------------------------------------------------------------------------------
def checked(cfg):
    """What the Snakefile and the study's rule file do, in order."""
    from sojourn.core.cluster.cluster import check_cluster

    validate_config(cfg, SCHEMAS / "config.schema.yaml")
    check_cluster(cfg["cluster"])
    validate_config(cfg["jsq_ps"], SCHEMAS / "jsq_ps.schema.yaml", "jsq_ps")
    G.check_config(cfg["jsq_ps"])


def J(**section):
    return {"jsq_ps": section}


def S(**slurm):
    return {"cluster": {"kind": "slurm", "slurm": slurm}}


CONFIG = [
    Case("key-misspelt", J(simulation={"window": {"lenght": 5}}), ("jsq_ps.simulation.window.lenght", "unknown key"),
         "length"),
    Case("section-misspelt", J(simulaton={"horizon": 5}), ("jsq_ps.simulaton",), "simulation"),
    Case("top-key-misspelt", {"reslts": "x"}, ("reslts",), "results"),
    Case("cluster-key-misspelt", {"cluster": {"knd": "local"}}, ("cluster.knd",), "kind"),
    Case("number-as-string", J(simulation={"window": {"length": "30000"}}),
         ("jsq_ps.simulation.window.length", "--configfile")),
    Case("replications-zero", J(simulation={"replications": 0}), ("jsq_ps.simulation.replications", ">= 1")),
    Case("replications-float", J(simulation={"replications": 2.5}), ("jsq_ps.simulation.replications", "integer")),
    Case("backend-unknown", J(simulation={"backend": "simpy"}), ("jsq_ps.simulation.backend", "fast, ciw")),
    Case("rho-one", J(grid={"rho": [0.5, 1.0]}), ("jsq_ps.grid.rho[1]",)),
    Case("rho-zero", J(grid={"rho": [0.0]}), ("jsq_ps.grid.rho[0]",)),
    Case("R-zero", J(grid={"R": [0]}), ("jsq_ps.grid.R[0]",)),
    Case("R-not-a-list", J(grid={"R": 3}), ("jsq_ps.grid.R", "a list")),
    Case("mu-negative", J(grid={"mu": -1.0}), ("jsq_ps.grid.mu",)),
    Case("dt-zero", J(time_grid={"dt": 0}), ("jsq_ps.time_grid.dt",)),
    Case("tmax-below-dt", J(time_grid={"dt": 0.01, "t_max": 0.005}), ("jsq_ps.time_grid.t_max",)),
    Case("tmax-not-multiple", J(time_grid={"dt": 0.03, "t_max": 1}), ("jsq_ps.time_grid.t_max", "multiple")),
    Case("window", J(simulation={"window": {"length": 1000, "warmup": 500, "cooldown": 500}}),
         ("jsq_ps.simulation.window.warmup",)),
    # the keys of the run window and the load before the vocabulary was one (issue 33): one line, both names
    Case("old-horizon", J(simulation={"horizon": 30000}),
         ("jsq_ps.simulation.horizon", "this key has moved: jsq_ps.simulation.window.length")),
    Case("old-cooldown", J(simulation={"cooldown": 100}),
         ("jsq_ps.simulation.cooldown", "this key has moved: jsq_ps.simulation.window.cooldown")),
    Case("rho-range-missing-step", J(grid={"rho": None, "rho_range": {"start": 0.1, "stop": 0.5}}),
         ("jsq_ps.grid.rho_range.step", "missing")),
    Case("method-unknown", J(approximation={"methods": ["A", "G"]}), ("jsq_ps.approximation.methods",)),
    Case("law-unknown", J(mgr={"laws": ["weibull"]}), ("jsq_ps.mgr.laws[0]", "unknown law")),
    Case("law-misspelt", J(mgr={"laws": ["lognorml"]}), ("jsq_ps.mgr.laws[0]",), "lognormal"),
    Case("law-param-misspelt", J(mgr={"laws": ["lognormal:sigmaa=1"]}), ("jsq_ps.mgr.laws[0]", "sigmaa"), "sigma",
         absent=("name",)),
    Case("law-ph-malformed", J(mgr={"laws": ["phasetype:alpha=1/0,T=-1/2|0/-2"]}), ("jsq_ps.mgr.laws[0]",)),
    Case("law-wrong-type", J(mgr={"laws": [5]}), ("jsq_ps.mgr.laws[0]", "a string or a mapping")),
    Case("cluster-kind-misspelt", {"cluster": {"kind": "slurn"}}, ("cluster.kind",), "slurm"),
    # cluster.slurm (docs/hpc.md): what sbatch, dask-jobqueue or dask worker would reject later, in the queue
    Case("slurm-memory", S(memory="2 bananas"), ("cluster.slurm.memory", "2GB")),
    Case("slurm-walltime", S(walltime="1h"), ("cluster.slurm.walltime", "HH:MM:SS")),
    Case("slurm-processes-not-dividing", S(cores=4, processes=3), ("cluster.slurm.processes", "divide cores (4)")),
    Case("slurm-jobs-and-maximum", S(jobs=2, maximum_jobs=4), ("cluster.slurm.jobs", "not both")),
    Case("slurm-maximum-below-minimum", S(minimum_jobs=3, maximum_jobs=2),
         ("cluster.slurm.maximum_jobs", ">= minimum_jobs (3)")),
    Case("slurm-minimum-zero", S(minimum_jobs=0), ("cluster.slurm.minimum_jobs", ">= 1")),
    Case("slurm-directive-with-sbatch", S(job_extra_directives=["#SBATCH --qos=long"]),
         ("cluster.slurm.job_extra_directives[0]", "--constraint")),
    Case("slurm-worker-arg-misspelt", S(worker_extra_args=["--lifetim", "50m"]),
         ("cluster.slurm.worker_extra_args", "--lifetim")),
    Case("slurm-worker-arg-value", S(worker_extra_args=["--lifetime"]),
         ("cluster.slurm.worker_extra_args", "requires an argument")),
    Case("slurm-scheduler-option-misspelt", S(scheduler_options={"prot": 8786}),
         ("cluster.slurm.scheduler_options.prot",), "port"),
    Case("slurm-scheduler-port", S(scheduler_options={"port": 70000}),
         ("cluster.slurm.scheduler_options.port", "0..65535")),
    Case("slurm-interface-missing", S(interface="nosuchif0"), ("cluster.slurm.interface", "no network interface")),
    Case("slurm-key-misspelt", S(acount="proj"), ("cluster.slurm.acount", "unknown key"), "account"),
    Case("local-memory-limit", {"cluster": {"memory_limit": "lots"}}, ("cluster.memory_limit", "2GB")),
    Case("ci-misspelt", J(comparison={"ci": "bootstrp"}), ("jsq_ps.comparison.ci",), "bootstrap"),
    Case("format-unknown", J(figures={"formats": ["jpg"]}), ("jsq_ps.figures.formats[0]",)),
    Case("section-wrong-type", {"jsq_ps": 5}, ("jsq_ps", "a mapping")),
    Case("results-pattern", {"results": "my results!"}, ("results", "pattern")),
    Case("enabled-not-boolean", J(enabled="yes"), ("jsq_ps.enabled", "true or false")),
    Case("confidence-one", J(comparison={"confidence": 1.0}), ("jsq_ps.comparison.confidence", "< 1")),
    # simulation.precision
    Case("precision-not-a-mapping", J(simulation={"precision": 0.05}), ("jsq_ps.simulation.precision", "a mapping")),
    Case("precision-statistic-unknown", J(simulation={"precision": {"statistic": "median"}}),
         ("jsq_ps.simulation.precision.statistic",), "mean"),
    Case("precision-key-misspelt", J(simulation={"precision": {"relative_halfwidth": 0.1}}),
         ("jsq_ps.simulation.precision.relative_halfwidth", "unknown key"), "relative_half_width"),
    Case("precision-half-width-zero", J(simulation={"precision": {"relative_half_width": 0}}),
         ("jsq_ps.simulation.precision.relative_half_width", "> 0")),
    Case("precision-half-width-above-one", J(simulation={"precision": {"relative_half_width": 1.5}}),
         ("jsq_ps.simulation.precision.relative_half_width", "<= 1")),
    Case("precision-max-one", J(simulation={"precision": {"max_replications": 1}}),
         ("jsq_ps.simulation.precision.max_replications", ">= 2")),
    Case("precision-min-above-max", J(simulation={"precision": {"min_replications": 20, "max_replications": 10}}),
         ("jsq_ps.simulation.precision.min_replications", "max_replications = 10")),
    Case("precision-percentile-100", J(simulation={"precision": {"at": 100}}),
         ("jsq_ps.simulation.precision.at", "(0, 100)")),
    Case("precision-mean-with-at", J(simulation={"precision": {"statistic": "mean", "at": 5}}),
         ("jsq_ps.simulation.precision.at", "does not apply")),
    Case("precision-cdf-without-time", J(simulation={"precision": {"statistic": "cdf"}}),
         ("jsq_ps.simulation.precision.at", "required")),
    Case("precision-cdf-beyond-grid", J(simulation={"precision": {"statistic": "cdf", "at": 500}}),
         ("jsq_ps.simulation.precision.at", "t_max")),
    # every number finite, no list item twice (issue 26): refused before any job, naming the key
    Case("horizon-inf", J(simulation={"window": {"length": float("inf")}}), ("jsq_ps.simulation.window.length",
                                                                             "finite")),
    Case("horizon-nan", J(simulation={"window": {"length": float("nan")}}), ("jsq_ps.simulation.window.length",)),
    Case("warmup-inf", J(simulation={"window": {"warmup": float("inf")}}), ("jsq_ps.simulation.window.warmup",
                                                                            "finite")),
    Case("dt-nan", J(time_grid={"dt": float("nan")}), ("jsq_ps.time_grid.dt",)),
    Case("mu-inf", J(grid={"mu": float("inf")}), ("jsq_ps.grid.mu", "finite")),
    Case("rho-twice", J(grid={"rho": [0.5, 0.5]}), ("jsq_ps.grid.rho", "given twice")),
    Case("R-twice", J(grid={"R": [2, 2]}), ("jsq_ps.grid.R", "given twice")),
    Case("percentiles-twice", J(comparison={"percentiles": [99, 99]}), ("jsq_ps.comparison.percentiles", "twice")),
    Case("formats-twice", J(figures={"formats": ["png", "png"]}), ("jsq_ps.figures.formats", "twice")),
    # issue 26: a grid too large for memory, a law parameter twice, a law that underflows
    Case("grid-memory", J(time_grid={"dt": 1e-9, "t_max": 1e9}), ("jsq_ps.time_grid.t_max/dt", "memory",
                                                                 "SOJOURN_MAX_MEMORY")),
    Case("law-param-twice", J(mgr={"laws": ["lognormal:sigma=1,sigma=5"]}), ("jsq_ps.mgr.laws[0]", "twice")),
    Case("law-gamma-shape-tiny", J(mgr={"laws": ["gamma:shape=1e-300"]}), ("jsq_ps.mgr.laws[0]", "gamma.shape")),
]


def checked_study(cfg, study):
    """The Snakefile's checks of another study's section: the top level, the section's schema, its rule file's
    cross-field checks."""
    from sojourn.restart.config import check_config as restart_check
    from sojourn.split_merge.config import check_config as split_merge_check

    validate_config(cfg, SCHEMAS / "config.schema.yaml")
    validate_config(cfg[study], SCHEMAS / f"{study}.schema.yaml", study)
    {"split_merge": split_merge_check, "restart": restart_check}[study](cfg[study])


# the precision block of the other studies' sections (their other keys: tests/split_merge, tests/restart)
OTHER_CONFIG = [
    Case("sm-precision-statistic", {"split_merge": {"simulation": {"precision": {"statistic": "medain"}}}},
         ("split_merge.simulation.precision.statistic", "percentile, mean, cdf")),
    Case("sm-precision-cdf-beyond-grid", {"split_merge": {"simulation": {"precision": {"statistic": "cdf", "at": 80}}}},
         ("split_merge.simulation.precision.at", "t_max = 50")),  # experiment (c)'s histogram ends at 50
    Case("sm-precision-percentile-with-time", {"split_merge": {"simulation": {"precision": {"at": 0}}}},
         ("split_merge.simulation.precision.at", "> 0")),
    Case("restart-precision-half-width", {"restart": {"simulation": {"precision": {"relative_half_width": 0}}}},
         ("restart.simulation.precision.relative_half_width", "> 0")),
    Case("restart-precision-min-above-max", {"restart": {"simulation": {"precision": {"min_replications": 50,
                                                                                     "max_replications": 10}}}},
         ("restart.simulation.precision.min_replications", "max_replications = 10")),
    Case("restart-precision-key-misspelt", {"restart": {"simulation": {"precision": {"statistc": "mean"}}}},
         ("restart.simulation.precision.statistc", "unknown key"), "statistic"),
    # finite numbers, distinct list items, no expansion without cells, and the keys of an earlier release
    Case("sm-replicas-twice", {"split_merge": {"experiment_c": {"replicas": [1, 2, 2]}}},
         ("split_merge.experiment_c.replicas", "twice")),
    Case("sm-percentiles-twice", {"split_merge": {"comparison": {"percentiles": [50, 50]}}},
         ("split_merge.comparison.percentiles", "twice")),
    Case("sm-quorums-above-every-r", {"split_merge": {"experiment_b": {"replicas": [1, 2], "quorums": [3, 4]}}},
         ("split_merge.experiment_b", "no cell has q <= r")),
    Case("sm-rho-nan", {"split_merge": {"experiment_a": {"rho": float("nan")}}}, ("split_merge.experiment_a.rho",)),
    Case("sm-old-percentiles", {"split_merge": {"percentiles": [50, 99]}},
         ("split_merge.percentiles", "has moved", "split_merge.comparison.percentiles")),
    Case("sm-old-confidence", {"split_merge": {"confidence": 0.99}},
         ("split_merge.confidence", "has moved", "split_merge.comparison.confidence")),
    Case("sm-old-warmup-fraction", {"split_merge": {"simulation": {"warmup_fraction": 0.1}}},
         ("split_merge.simulation.warmup_fraction", "has moved", "warmup")),
    Case("sm-old-load", {"split_merge": {"experiment_b": {"load": 0.8}}},
         ("split_merge.experiment_b.load", "this key has moved: split_merge.<experiment>.rho")),
    Case("sm-old-workunits", {"split_merge": {"experiment_a": {"workunits": 1000, "warmup": 100}}},
         ("split_merge.experiment_a.workunits", "this key has moved: window.length")),
    Case("sm-old-fork-join-workunits", {"split_merge": {"experiment_c": {"fork_join": {"workunits": 1000}}}},
         ("split_merge.experiment_c.fork_join.workunits",
          "this key has moved: split_merge.experiment_c.fork_join.window.length")),
    Case("restart-old-horizon", {"restart": {"examples": {"example1": {"horizon": 1000}}}},
         ("restart.examples.example1.horizon", "this key has moved: restart.examples.<name>.window.length")),
    Case("restart-old-percentile", {"restart": {"comparison": {"percentile": 0.99}}},
         ("restart.comparison.percentile", "has moved", "percentiles")),
    Case("restart-old-dt", {"restart": {"simulation": {"dt": 0.05}}},
         ("restart.simulation.dt", "has moved", "restart.time_grid.dt")),
    Case("restart-rates-twice", {"restart": {"examples": {"example1": {"rates": [0.1, 0.1]}}}},
         ("restart.examples.example1.rates",)),
    Case("restart-rates-descending", {"restart": {"examples": {"example1": {"rates": [1.0, 0.1]}}}},
         ("restart.examples.example1.rates", "ascending")),
    Case("restart-horizon-inf", {"restart": {"examples": {"example1": {"window": {"length": float("inf")}}}}},
         ("restart.examples.example1.window.length", "finite")),
    Case("restart-percentiles-twice", {"restart": {"comparison": {"percentiles": [99, 99]}}},
         ("restart.comparison.percentiles", "twice")),
    # issue 26: grids too large for memory, quorums above every r in experiment (c), a law parameter twice
    Case("sm-grid-memory", {"split_merge": {"experiment_a": {"time_grid": {"dt": 1e-9, "t_max": 1e9}}}},
         ("split_merge.experiment_a.time_grid.t_max/dt", "memory", "SOJOURN_MAX_MEMORY")),
    Case("restart-grid-memory", {"restart": {"time_grid": {"dt": 1e-9, "t_max": 1e9}}},
         ("restart.time_grid.t_max/dt", "memory")),
    Case("sm-c-quorums-above-every-r", {"split_merge": {"experiment_c": {"replicas": [1, 2], "quorums": [3]}}},
         ("split_merge.experiment_c", "no cell has q <= r")),
    Case("sm-replica-law-twice", {"split_merge": {"experiment_a": {"replica_law": "lognormal:sigma=1,sigma=2"}}},
         ("split_merge.experiment_a", "twice")),
]


@pytest.mark.parametrize("case", OTHER_CONFIG, ids=[c.id for c in OTHER_CONFIG])
def test_other_study_config_rejects(case):
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    deep_update(cfg, case.bad)
    with pytest.raises(ConfigError) as err:
        checked_study(cfg, next(iter(case.bad)))
    text = str(err.value)
    first = text.splitlines()[0]
    key = case.names[0]
    assert first.startswith(key + ":") or first.startswith(key + " "), text
    assert len(text.splitlines()) <= 3, text
    _check_message(case, first)


@pytest.mark.parametrize("case", CONFIG, ids=[c.id for c in CONFIG])
def test_config_rejects(case):
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    deep_update(cfg, case.bad)
    with pytest.raises(ConfigError) as err:
        checked(cfg)
    text = str(err.value)
    first = text.splitlines()[0]
    key = case.names[0]
    assert first.startswith(key + ":") or first.startswith(key + " "), text  # key path first
    assert len(text.splitlines()) <= 3, text  # concise: no schema, no config dump
    _check_message(case, first)


def test_config_lists_every_problem_one_line_each():
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    deep_update(cfg, J(simulation={"horizonn": 5, "seed": -1}, grid={"mu": "1"}))
    with pytest.raises(ConfigError) as err:
        checked(cfg)
    lines = str(err.value).splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["jsq_ps.grid.mu", "jsq_ps.simulation.horizonn",
                                                 "jsq_ps.simulation.seed"]


def test_validate_config_fills_defaults_like_snakemake(tmp_path):
    from snakemake.utils import validate

    inlined = {}
    for name in ("config", "jsq_ps"):
        inlined[name] = tmp_path / f"{name}.schema.yaml"
        inlined[name].write_text(yaml.safe_dump(load_schema(SCHEMAS / f"{name}.schema.yaml"), sort_keys=False))

    precision = {"jsq_ps": {"simulation": {"precision": {"statistic": "mean", "relative_half_width": 0.1}}}}
    for extra in ({}, yaml.safe_load((ROOT / "config" / "paper.yaml").read_text()), precision):
        ours = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
        deep_update(ours, extra)
        theirs = copy.deepcopy(ours)
        validate_config(ours, SCHEMAS / "config.schema.yaml")
        validate_config(ours["jsq_ps"], SCHEMAS / "jsq_ps.schema.yaml", "jsq_ps")
        # the study schemas take the shared blocks of common.schema.yaml by $ref with keys beside it, which our
        # loader inlines (sojourn.core.checks.config.load_schema): Snakemake's validator is given the inlined schema
        validate(theirs, str(inlined["config"]))
        validate(theirs["jsq_ps"], str(inlined["jsq_ps"]))
        assert repr(ours) == repr(theirs)  # same values, same key order: no rerun from the switch


# -- config through a real Snakemake run -----------------------------------------------------------
SNAKEMAKE = [
    # (id, override file text or None, extra args, what the first lines must contain)
    ("override-key-misspelt", "jsq_ps:\n  simulation:\n    window:\n      lenght: 5\n", [],
     ["jsq_ps.simulation.window.lenght: unknown key; did you mean 'length'?"]),
    ("nested-config-string", None, ["--config", "jsq_ps={simulation: {window: {length: 30000}}}"],
     ["jsq_ps.simulation.window.length: must be a number; got '30000'", "--configfile"]),
    ("override-malformed-yaml", "jsq_ps:\n  simulation:\n    window: {length: [1000\n", [],
     ["not valid JSON or YAML"]),
    # YAML's own infinity (issue 26: it passed the schema and the dry run, then failed inside Dask tasks)
    ("override-yaml-inf", "jsq_ps:\n  simulation:\n    window:\n      length: .inf\n", [],
     ["jsq_ps.simulation.window.length: must be a finite number; got inf"]),
]
#  + malformed YAML and YAML's .inf (only through Snakemake)
CATALOGUE_SIZE = len(CLI) + len(OTHER_CLI) + len(API) + len(CONFIG) + len(OTHER_CONFIG) + 2


@pytest.mark.parametrize("case", SNAKEMAKE, ids=[c[0] for c in SNAKEMAKE])
def test_snakemake_refuses_a_bad_config_in_a_few_lines(case, tmp_path):
    """A real run (not -n, so "no result file" means something) in a temp folder: Snakemake stops at once;
    its first lines (Snakemake logs errors on stdout) name the key and the reason, no schema dump."""
    _, text, extra, wanted = case
    args = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(tmp_path),
            "--cores", "1", *extra]
    if text is not None:
        (tmp_path / "bad.yaml").write_text(text)
        args += ["--configfile", str(tmp_path / "bad.yaml")]
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, cwd=tmp_path)
    out = r.stdout.splitlines()
    assert r.returncode != 0
    head = "\n".join(out[:6])
    for w in wanted:
        assert w in head, "\n".join(out)
    assert len(out) <= 10, "\n".join(out)  # was 38 lines of schema and config for a misspelt key
    assert not (tmp_path / "results").exists() and not list(tmp_path.rglob("*.nc"))


def test_catalogue_has_at_least_40_distinct_bad_inputs():
    cli = {tuple(c.bad) for c in CLI + OTHER_CLI}
    api = {c.id for c in API}
    cfg = {yaml.safe_dump(c.bad, sort_keys=True) for c in CONFIG + OTHER_CONFIG}
    assert len(cli) == len(CLI) + len(OTHER_CLI) and len(api) == len(API)
    assert len(cfg) == len(CONFIG) + len(OTHER_CONFIG)
    assert CATALOGUE_SIZE >= 169 + 30  # issue 26: at least 30 more than the 169 before it
