"""Long command-line runs show progress on stderr through one mechanism (sojourn.core.runs.progress: tqdm bars on a
terminal, one line per step elsewhere; issue 25 item 4, issue 31 item 5). SOJOURN_PROGRESS=always shows it at once
whatever stderr is, so a short run shows it here; by default off a terminal (as here) a run says its progress in
lines once it has lasted two seconds; in the Python API nothing is shown, and stdout never holds progress."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

RUNS = {
    "simulate": (["simulate", "-R", "2", "--load", "0.5", "--horizon", "2000", "--replications", "3"],
                 "replications:"),
    "split-merge simulate": (["split-merge", "simulate", "-n", "4", "-r", "2", "-q", "1", "--load", "0.6",
                              "--workunits", "3000", "--replications", "3"], "replications:"),
    "split-merge best": (["split-merge", "best", "-n", "20", "--arrival-rate", "3", "--replica-law",
                          "lognormal:sigma=1", "--max-replicas", "2", "--quorum-min", "2", "--workunits", "3000",
                          "--replications", "3"], "(r, q) pairs:"),
    "restart simulate": (["restart", "simulate", "--model", "example2", "--horizon", "3000", "--replications", "3"],
                         "replications:"),
    "approximate": (["approximate", "-R", "2", "--load", "0.5", "--method", "exact", "--t-max", "50"],
                    "method exact at R=2, rho=0.5:"),
    "plan": (["plan", "--arrival-rate", "2000/s", "--mean-service", "1ms", "--deadline", "20ms", "--reliability",
              "0.9999"], "planning:"),
}


def _sojourn(argv, tmp_path, mode=None):
    env = {k: v for k, v in os.environ.items() if k != "SOJOURN_PROGRESS"}
    if mode is not None:
        env["SOJOURN_PROGRESS"] = mode
    out = [] if argv[0] == "plan" else ["-o", str(tmp_path / "out.nc")]
    return subprocess.run([sys.executable, "-m", "sojourn.cli", *argv, *out], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.mark.parametrize("name", list(RUNS))
def test_the_command_draws_its_bar_on_stderr_only(name, tmp_path):
    argv, label = RUNS[name]
    proc = _sojourn(argv, tmp_path, "always")
    assert proc.returncode == 0, proc.stderr
    assert label in proc.stderr, proc.stderr
    assert "\r" not in proc.stdout and label not in proc.stdout


def test_no_bar_by_default_off_a_terminal_nor_when_turned_off(tmp_path):
    """Off a terminal no bar is drawn: a run past two seconds says its progress in whole lines, one per step
    (issue 31 item 5; a short run, none); SOJOURN_PROGRESS=never says nothing."""
    argv, label = RUNS["simulate"]
    proc = _sojourn(argv, tmp_path, None)
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr, proc.stderr
    assert all(ln.startswith("sojourn: ") and " done, " in ln and "elapsed" in ln
               for ln in proc.stderr.splitlines() if label in ln), proc.stderr
    proc = _sojourn(argv, tmp_path, "never")
    assert proc.returncode == 0, proc.stderr
    assert label not in proc.stderr and "\r" not in proc.stderr, proc.stderr


def test_the_python_api_draws_no_bar(monkeypatch, capsys):
    """The library's loops are quiet unless a command line turned progress on (the pipeline's jobs log instead)."""
    from sojourn import mm_jsq_ps, simulate

    monkeypatch.setenv("SOJOURN_PROGRESS", "always")
    simulate(mm_jsq_ps(2, 0.5), horizon=500.0, replications=2)
    err = capsys.readouterr().err
    assert "replications:" not in err and "\r" not in err
