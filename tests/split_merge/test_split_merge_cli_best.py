"""``sojourn split-merge {exact,simulate,best}`` and the ranking of (r, q)."""
import argparse

import numpy as np
import pytest

from sojourn.core.files.io import read_netcdf
from sojourn.split_merge import cli
from sojourn.split_merge.best import best, candidates, parse_criterion
from sojourn.split_merge.model import SplitMerge
from sojourn.split_merge.solve import exact_results

PH3 = "phasetype:alpha=0.5/0.3/0.2,T=-2/1/0.5|0.3/-1.5/0.2|0/0.4/-3"


def _run(argv):
    ap = argparse.ArgumentParser(prog="sojourn")
    sub = ap.add_subparsers(dest="command", required=True)
    cli.register(sub)
    args = ap.parse_args(argv)
    return args.func(args)


def test_exact_command_writes_labelled_netcdf(tmp_path, capsys):
    out = tmp_path / "e.nc"
    assert _run(["split-merge", "exact", "--hosts", "3", "--replicas", "3", "--quorum", "2", "--load", "0.9",
                 "--replica-law", PH3, "--output", str(out)]) == 0
    text = capsys.readouterr().out
    assert "5.99577" in text and "pollaczek-khinchine" in text
    ds = read_netcdf(out)
    assert int(ds.is_exact) == 1 and ds.mean_delay.attrs["method"] == "pollaczek-khinchine"
    assert float(ds.mean_delay) == pytest.approx(5.228452, abs=1e-6)


def test_exact_command_says_when_nothing_is_exact(tmp_path, capsys):
    out = tmp_path / "e.nc"
    _run(["split-merge", "exact", "-n", "100", "-r", "10", "-q", "2", "--load", "0.9", "--replica-law",
          "lognormal:sigma=1", "-o", str(out)])
    assert "not available exactly" in capsys.readouterr().out
    ds = read_netcdf(out)
    assert int(ds.is_exact) == 0 and np.isnan(float(ds.mean_delay)) and ds.attrs["result_kind"].startswith("none")


def test_simulate_command(tmp_path, capsys):
    out = tmp_path / "s.nc"
    assert _run(["split-merge", "simulate", "-n", "10", "-r", "2", "-q", "1", "--arrival-rate", "6",
                 "--workunits", "20000", "--replications", "3", "--t-max", "20", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "exact" in text and "erlang-c" in text
    ds = read_netcdf(out)
    assert ds.sizes["replication"] == 3 and (ds.workunits == 20000).all()
    assert ds.attrs["result_kind"].startswith("simulation")


@pytest.mark.parametrize("argv,match", [  # the message names the flags typed, not the model's fields (issue 26)
    (["-n", "3", "-r", "4", "-q", "1", "--load", "0.5"], r"^--replicas must be an integer in \[1, --hosts=3\]"),
    (["-n", "3", "-r", "2", "-q", "3", "--load", "0.5"], r"^--quorum must be an integer in \[1, --replicas=2\]"),
    (["-n", "3", "-r", "2", "-q", "0", "--load", "0.5"], r"^--quorum must be an integer >= 1"),
    (["-n", "4", "-r", "2", "-q", "1", "--arrival-rate", "4"], r"^--arrival-rate must be < floor"),
    (["-n", "4", "-r", "2", "-q", "1", "--load", "0.5", "--replica-law", "phasetype:alpha=1,T=1"],
     r"^--replica-law: phasetype\.T must have negative diagonal"),
])
def test_bad_inputs_are_rejected_before_compute(tmp_path, argv, match, capsys):
    """Through the command line (a flag's kind refuses -q 0 as argparse parses it, sojourn.core.checks.guard)."""
    from sojourn.cli import main

    out = tmp_path / "never.nc"
    assert main(["split-merge", "simulate", *argv, "-o", str(out)]) == 2
    import re

    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert re.search(match, line.split("error: ", 1)[1]), line
    assert not out.exists()


def test_best_uses_exact_values_and_ranks_them():
    lam = 12.0
    ds = best(30, lam, "exponential", max_replicas=5, workunits=5_000, replications=3)
    # q = 1: Erlang C; q ≥ 2 exponential: the QBD, except (r, q) = (4, 2): its load 12·(1/4 + 1/3)/7 is 1 up to
    # round-off (0.9999999999999999), where G is stochastic only to 1e-8 and the QBD's mean delay (2e7) is not
    # exact (estimated relative error 8e7 > QBD_RTOL): simulated, not ranked as exact
    pairs = list(zip(ds.replicas.values.tolist(), ds.quorum.values.tolist(), strict=True))
    assert [p for p, e in zip(pairs, ds.is_exact.values, strict=True) if not e] == [(4, 2)]
    lat = ds.latency.values
    assert np.all(np.diff(lat) >= 0)
    r, q = int(ds.replicas[0]), int(ds.quorum[0])
    assert lat[0] == pytest.approx(exact_results(SplitMerge(30, r, q, lam, "exponential"))["mean_latency"])
    assert ds.attrs["top_two_within_noise"] == 0  # two exact values are never "within noise"


def test_best_simulates_what_is_not_exact_and_reports_noise():
    ds = best(20, 3.0, "lognormal:sigma=1", max_replicas=2, quorum_min=2, workunits=3_000, replications=3)
    assert ds.sizes["rank"] == 1 and int(ds.is_exact[0]) == 0 and float(ds.half_width[0]) > 0
    # two nearly identical candidates cannot be told apart with a short run: within noise
    ds = best(40, 2.0, "lognormal:sigma=1", max_replicas=2, quorum_min=1, workunits=2_000, replications=3,
              criterion="p90")
    assert ds.sizes["rank"] == 3
    top = ds.isel(rank=[0, 1])
    overlap = abs(float(top.latency[1] - top.latency[0])) <= float(top.half_width.sum())
    assert ds.attrs["top_two_within_noise"] == int(overlap)


def test_best_rejects_bad_requests():
    with pytest.raises(ValueError, match="criterion must be 'mean' or 'pNN'"):
        parse_criterion("median")
    with pytest.raises(ValueError, match="unstable for every"):
        candidates(4, 100.0, "exponential")
    assert parse_criterion("p99.9") == pytest.approx(0.999)


def test_output_folder_is_checked_before_compute(tmp_path):
    out = tmp_path / "missing" / "s.nc"
    argv = ["split-merge", "simulate", "-n", "4", "-r", "2", "-q", "1", "--load", "0.5", "--workunits", "1000",
            "--replications", "2", "-o", str(out)]
    with pytest.raises(ValueError, match=r"--output .*does not exist; create it or add --mkdir"):
        _run(argv)
    assert not out.parent.exists()
    assert _run(argv + ["--mkdir"]) == 0 and out.exists()
    with pytest.raises(ValueError, match="--t-max must be a multiple of --dt"):
        _run(argv[:-2] + ["-o", str(tmp_path / "x.nc"), "--t-max", "1.005"])
    assert not (tmp_path / "x.nc").exists()


def test_half_width_column_never_claims_more_than_the_histogram_bin():
    """A simulated percentile's interval narrower than its histogram's bin prints as the bin (core.estimates.stats
    rule);
    exact values and means print as before."""
    from sojourn.split_merge.best import half_width_text

    assert half_width_text(0.0, True, 0.01) == "exact"
    assert half_width_text(0.004, False, 0.01) == "0.01 (bin)"
    assert half_width_text(0.126, False, 0.01) == "0.126"
    assert half_width_text(0.004, False, 0.0) == "0.004"  # a mean: no bin
