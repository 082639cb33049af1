"""``sojourn restart optimise`` at its edges: no percentile optimum from too few jobs, unstable timeouts named
as such, progress on stderr, and a sweep predicted to take too long refused before it starts."""
from __future__ import annotations

import math

import numpy as np
import pytest

from sojourn.cli import main
from sojourn.core.estimates.stats import TAIL_MIN
from sojourn.core.files.io import read_netcdf
from sojourn.restart.files import load_model
from sojourn.restart.optimise import default_max_jobs, optimise

SHORT = ["restart", "optimise", "--model", "example2", "--replications", "3", "--horizon", "20000"]


def test_no_percentile_optimum_from_too_few_jobs_and_the_horizon_it_names_is_enough(tmp_path, capsys):
    out = tmp_path / "opt.nc"
    assert main(SHORT + ["--taus", "0.3", "0.6", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    best = [line for line in text.splitlines() if line.startswith("best tau for p99")]
    assert best and "none reported" in best[0] and "tau = 0.3, 0.6 have fewer than 100 jobs" in best[0]
    ds = read_netcdf(out)
    assert np.isnan(float(ds["tau_best_percentile"]))
    assert (ds["tau_percentile_beyond"].values < TAIL_MIN).all()
    need = ds["tau_percentile_needed_horizon"].values
    assert np.isfinite(need).all() and f"--horizon >= {need.max():,.0f}" in best[0]
    # the run length it names gives every tau enough jobs beyond p99, and then an optimum is reported
    out2 = tmp_path / "opt2.nc"
    assert main(["restart", "optimise", "--model", "example2", "--replications", "3", "--horizon",
                 f"{need.max():g}", "--taus", "0.3", "0.6", "-o", str(out2)]) == 0
    text = capsys.readouterr().out
    ds = read_netcdf(out2)
    assert (ds["tau_percentile_beyond"].values >= TAIL_MIN).all() and np.isnan(
        ds["tau_percentile_needed_horizon"]
    ).all()
    assert float(ds["tau_best_percentile"]) in (0.3, 0.6) and "too few" not in text
    assert f"best tau for p99: {float(ds['tau_best_percentile']):.4g}\n" in text


def test_unstable_timeout_is_named_and_never_best(tmp_path, capsys):
    out = tmp_path / "opt.nc"
    assert main(SHORT + ["--taus", "0.015", "0.3", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "tau =     0.015   unstable: stopped in 3 of 3 replications (more than 50 jobs present" in text
    ds = read_netcdf(out)
    assert ds["tau_unstable"].values.tolist() == [3, 0]
    assert np.isnan(ds["tau_response_time"].values[0]) and float(ds["tau_best_mean"]) == 0.3


def test_progress_line_per_run_on_stderr(tmp_path, capsys):
    assert main(SHORT + ["--taus", "0.3", "0.6", "1.2", "-o", str(tmp_path / "o.nc")]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [e.split(":")[0] for e in err] == ["optimise [1/5] signal", "optimise [2/5] timeout_exponential",
                                              "optimise [3/5] tau = 0.3", "optimise [4/5] tau = 0.6",
                                              "optimise [5/5] tau = 1.2"]
    assert all("left" in e for e in err[:-1]) and "elapsed" in err[-1]


def test_sweep_predicted_over_the_time_limit_is_refused_before_it_runs(tmp_path, capsys):
    """The sweep's time is checked against --max-time (the limit of every command): first as the cost model predicts
    it from the product form's event rates, before any run (sojourn.restart.cost); then as a pilot times it."""
    out = tmp_path / "o.nc"
    assert main(SHORT + ["--taus", "0.3", "0.6", "--max-time", "1e-6", "-o", str(out)]) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "sojourn restart optimise: error: --horizon/--replications: this request is predicted to take about "
    ), err
    assert "events" in err[0] and "--max-time DURATION" in err[0]
    assert "[1/4]" not in cap.err and not out.exists()
    seen = []

    def refuse(seconds, what):  # the pilot's prediction, handed to the caller's check before the sweep
        seen.append(what)
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        optimise(load_model("example2"), taus=[0.3, 0.6], replications=3, cost_check=refuse,
                 sim={"horizon": 2000.0, "dt": 0.05, "t_max": 50.0})
    assert seen and "4 runs x 3 replications" in seen[0]
    assert main(SHORT + ["--taus", "0.3", "--max-jobs", "0", "-o", str(out)]) == 2
    assert "--max-jobs" in capsys.readouterr().err


def test_default_max_jobs_is_where_a_geometric_queue_gets_rarely():
    assert default_max_jobs(0.15, 20_000) == 50  # the floor
    rho = 9.0 / 10.0  # E[N] = 9: an M/M/1 at load 0.9
    m = default_max_jobs(9.0, 20_000)
    assert m == math.ceil(math.log(20_000 / 1e-3) / -math.log(rho))
    assert 20_000 * rho ** (m + 1) <= 1e-3 < 20_000 * rho ** (m - 1)


def test_a_percentile_beyond_t_max_asks_for_t_max_not_a_longer_run(tmp_path, capsys):
    out = tmp_path / "opt.nc"
    assert main(SHORT + ["--taus", "0.3", "--t-max", "2", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "p99 = beyond --t-max in some replication: raise --t-max" in text
    assert "best tau for p99: none reported: no stable tau has it within --t-max" in text
    assert np.isnan(read_netcdf(out)["tau_percentile_needed_horizon"]).all()
