"""Honest precision in the command-line summaries (issue 12, item 4): every percentile printed or stored comes
with a CI across replications and the number of customers beyond it, is printed as "too few …" when fewer than
``TAIL_MIN`` per replication lie beyond it, and never with more digits than its CI supports; the warm-up
defaults to a share of the horizon; an explicit window that leaves nothing to record names the flags and
writes nothing. The commands run for real (``sojourn.cli.main`` in-process), small and with fixed seeds."""
from __future__ import annotations

import re

import numpy as np
import pytest

from sojourn.cli import main
from sojourn.core.estimates.replications import WARMUP_FRACTION
from sojourn.core.estimates.stats import TAIL_MIN, format_with_ci, percentiles_per_replication
from sojourn.core.files.io import read_netcdf
from sojourn.jsq_ps.model import JSQPS
from sojourn.jsq_ps.simulate import simulate, summary
from sojourn.jsq_ps.solve.api import approximate
from sojourn.jsq_ps.solve.api import summary as analytic_summary


# -- the formatting helper ------------------------------------------------------------------------
@pytest.mark.parametrize("value, low, high, kw, text", [
    (2.27668, 2.27668 - 0.0412, 2.27668 + 0.0412, {}, "2.277 ± 0.041"),  # half-width to 2 significant digits
    (14.1843, 13.95, 14.42, {}, "14.18 [13.95, 14.42]"),  # asymmetric (BCa): the interval's ends
    (346280.0, 346280.0 - 1234.0, 346280.0 + 1234.0, {}, "346300 ± 1200"),  # rounded to hundreds
    (0.0123456, 0.0123456 - 0.00031, 0.0123456 + 0.00031, {}, "0.01235 ± 0.00031"),
    (4.9990, 4.9898, 5.0082, {"resolution": 0.01}, "5.00 ± 0.01 (bin)"),  # CI narrower than the bin: ± dt
    (0.0702, 0.0701, 0.0703, {"resolution": 0.001}, "0.070 ± 0.001 (bin)"),
    (0.6, 0.6, 0.6, {"resolution": 0.01}, "0.60 ± 0.01 (bin)"),  # one bin for all: never "± 0.00"
    (3.0431, 3.0231, 3.0631, {"resolution": 0.01}, "3.04 ± 0.02"),  # never finer than the histogram's bins
    (2.5, np.nan, np.nan, {}, "2.5 (no CI)"),  # one replication
    (np.nan, 1.0, 2.0, {}, "n/a"),
    (3.0, 3.0, 3.0, {}, "3 ± 0"),  # every replication equal
])
def test_format_with_ci(value, low, high, kw, text):
    assert format_with_ci(value, low, high, **kw) == text


def test_percentiles_per_replication_counts_the_customers_beyond():
    # 100 customers in bins [i, i + 1): F at the right edges 0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 1.0, ...
    count = np.array([[50, 30, 10, 5, 3, 1, 1, 0, 0, 0]])
    x, beyond = percentiles_per_replication(count, np.array([0]), np.arange(10.0), 1.0, [0.9, 0.99, 0.5])
    assert x.tolist() == [[3.0, 6.0, 1.0]]  # F linear within the bin: F(3) = 0.9, F(6) = 0.99, F(1) = 0.5 exactly
    x, _ = percentiles_per_replication(count, np.array([0]), np.arange(10.0), 1.0, [0.85, 0.995])
    np.testing.assert_allclose(x, [[2.5, 6.5]])  # within the bin [2, 3) and [6, 7)
    assert beyond.tolist() == [[5, 0, 20]]  # 99th: the bin of the sample maximum, none beyond
    x, beyond = percentiles_per_replication(np.array([[1, 1, 0]]), np.array([8]), np.arange(3.0), 1.0, [0.5])
    assert np.isnan(x[0, 0]) and beyond[0, 0] == 8  # past the grid: the overflow lies beyond


# -- sojourn simulate -----------------------------------------------------------------------------
SIM = ["simulate", "-R", "2", "--rho", "0.5", "--seed", "3", "--dt", "0.05", "--t-max", "60"]


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(start))


def test_simulate_prints_percentiles_with_ci_and_stores_them(tmp_path, capsys):
    out = tmp_path / "x.nc"
    assert main([*SIM, "--horizon", "20000", "--replications", "5", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    ds = read_netcdf(out)
    for v in (
        "sojourn_percentile",
        "sojourn_percentile_mean",
        "sojourn_percentile_ci_low",
        "sojourn_percentile_ci_high",
        "sojourn_percentile_ci_method",
        "sojourn_beyond",
        "sojourn_percentile_too_few",
        "mean_ci_low",
        "mean_ci_high",
        "mean_number_per_server_ci_low",
        "mean_number_per_server_ci_high",
    ):
        assert v in ds, v
    assert ds["percentile"].values.tolist() == [99.0, 99.9, 99.99, 99.999]
    assert ds["sojourn_percentile"].dims == ("replication", "percentile")
    assert ds["sojourn_percentile_ci_low"].attrs["confidence"] == 0.95
    # lambda = 1, 18 000 recorded customers per replication: the 99th is estimable, the others are not
    assert ds["sojourn_percentile_too_few"].values.tolist() == [0, 1, 1, 1]
    m, lo, hi = (float(ds[f"sojourn_percentile{e}"].sel(percentile=99.0)) for e in ("_mean", "_ci_low", "_ci_high"))
    assert lo < m < hi
    beyond = ds["sojourn_beyond"].sel(percentile=99.0).values
    assert beyond.mean() >= TAIL_MIN and np.all(beyond < 0.01 * ds["n_customers"].values)
    # printed: exactly the digits the CI supports, the CI method and the customers beyond per replication
    line = _line(text, "99th")
    assert format_with_ci(m, lo, hi, resolution=0.05) in line
    method = {0: "t", 1: "BCa"}[int(ds["sojourn_percentile_ci_method"].sel(percentile=99.0))]
    assert f"({method}; {beyond.mean():,.0f} customers beyond per replication)" in line
    assert "95% CI" in _line(text, "percentiles")
    # the interval is a real one: it holds the exact chain's 99th percentile on the same grid (7.8)
    exact = analytic_summary(*(lambda a: (a["t"].values, a["cdf"].values))(
        approximate(JSQPS.from_rho(2, 0.5), "exact", t_max=60, dt=0.05)))
    assert lo <= exact[0.99] <= hi
    mean_line = _line(text, "mean sojourn")
    assert "±" in mean_line and float(ds["mean_ci_low"]) <= exact["mean"] <= float(ds["mean_ci_high"])


def test_short_horizon_says_too_few_customers(tmp_path, capsys):
    out = tmp_path / "x.nc"
    assert main([*SIM, "--horizon", "4000", "--replications", "3", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    for label in ("99.99th", "99.999th"):  # both would be the sample maximum: no number is printed
        line = _line(text, label)
        assert "too few customers" in line and "--horizon >=" in line
        assert not re.search(r"\d+\.\d+ (±|\[)", line)
    assert "the sample maximum in 3 of 3 replication(s)" in _line(text, "99.999th")
    ds = read_netcdf(out)
    assert ds["sojourn_percentile_too_few"].sel(percentile=[99.99, 99.999]).values.tolist() == [1, 1]
    assert (ds["sojourn_beyond"].sel(percentile=99.999).values == 0).all()


def test_the_suggested_horizon_is_enough(tmp_path, capsys):
    """The --horizon a "too few" line asks for gives the percentile a number (99.9th, 5 replications)."""
    args = [*SIM, "--replications", "5", "-o", str(tmp_path / "x.nc")]
    assert main([*args, "--horizon", "20000"]) == 0
    need = re.search(r"--horizon >= ([\d,]+)", _line(capsys.readouterr().out, "99.9th")).group(1)
    assert main([*args, "--horizon", need.replace(",", "")]) == 0
    line = _line(capsys.readouterr().out, "99.9th")
    assert "too few" not in line and "customers beyond per replication" in line


@pytest.mark.parametrize("horizon", [4000.0, 8000.0])
def test_default_warmup_scales_with_the_horizon(horizon, tmp_path, capsys):
    out = tmp_path / "x.nc"
    assert main([*SIM, "--horizon", f"{horizon:g}", "--replications", "2", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    ds = read_netcdf(out)
    assert ds.attrs["warmup"] == ds.attrs["cooldown"] == WARMUP_FRACTION * horizon
    assert f"warm-up {WARMUP_FRACTION * horizon:g} and cool-down {WARMUP_FRACTION * horizon:g}" in text
    n = int(ds["n_customers"].sum())
    assert f"recorded     90% of the horizon: {n:,} customers" in text
    # the API's default is the same share
    api = simulate(JSQPS.from_rho(2, 0.5), horizon=horizon, replications=1, seed=3, dt=0.05, t_max=60)
    assert (api.attrs["warmup"], api.attrs["cooldown"]) == (WARMUP_FRACTION * horizon,) * 2


def _mm1_deficit(rho: float, t_end: float, h: float = 0.25) -> float:
    """int_0^t_end (L - E_0 N(t)) dt for the M/M/1 queue (mu = 1, = JSQ-PS with R = 1) started empty: the state
    law stepped by exp(hQ) on the birth-death chain truncated where rho^K < 1e-14; trapezoid rule."""
    from scipy.linalg import expm

    K = int(np.log(1e-14) / np.log(rho)) + 10
    L, n = rho / (1 - rho), np.arange(K + 1)
    Q = np.diag(np.full(K, rho), 1) + np.diag(np.ones(K), -1)
    Q -= np.diag(Q.sum(axis=1))
    step = expm(h * Q)
    p, total, prev = np.eye(K + 1)[0], 0.0, 0.0
    for _ in range(int(round(t_end / h))):
        p = p @ step
        now = p @ n
        total += h * (L - 0.5 * (now + prev))
        prev = now
    return total


def test_default_warmup_share_leaves_little_startup_bias():
    """The evidence for WARMUP_FRACTION: JSQ-PS with R = 1 (M/M/1, the slowest to settle) at rho = 0.95 started
    empty; what the warm-up leaves of the start-up deficit, int_W^inf (L - E_0 N(t)) dt, divided by L times the
    recorded window, is the relative bias of the window's mean number. The whole deficit is rho/(1 - rho)^3
    (E[N(N + 1)]/(2(mu - lambda)) for the chain started at 0), checked here where the transient dies quickly."""
    assert _mm1_deficit(0.8, 3000.0) == pytest.approx(0.8 / 0.2 ** 3, rel=1e-4)
    rho, T = 0.95, 20_000.0
    W = WARMUP_FRACTION * T
    L = rho / (1 - rho)
    bias = (rho / (1 - rho) ** 3 - _mm1_deficit(rho, W, h=1.0)) / (L * (T - 2 * W))
    assert 0 < bias < 0.01  # 0.58 % low; the 95 % CI of a run this short is ~±20 % (10 replications)


def test_explicit_window_share_is_printed(tmp_path, capsys):
    assert main([*SIM, "--horizon", "4000", "--warmup", "400", "--cooldown", "200", "--replications", "2",
                 "-o", str(tmp_path / "x.nc")]) == 0
    text = capsys.readouterr().out
    assert "warm-up 400, cool-down 200;" in text and "recorded     85% of the horizon" in text


@pytest.mark.parametrize("window", [["--warmup", "600"], ["--warmup", "500", "--cooldown", "500"],
                                    ["--warmup", "100", "--cooldown", "950"]])
def test_window_not_shorter_than_the_horizon_is_rejected(window, tmp_path, capsys):
    out = tmp_path / "x.nc"
    assert main([*SIM, "--horizon", "1000", *window, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    for flag in ("--horizon", "--warmup", "--cooldown"):
        assert flag in err, err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_one_replication_prints_no_interval(tmp_path, capsys):
    assert main([*SIM, "--horizon", "20000", "--replications", "1", "-o", str(tmp_path / "x.nc")]) == 0
    text = capsys.readouterr().out
    assert "(no CI)" in _line(text, "99th") and "(no CI)" in _line(text, "mean sojourn")
    assert "no confidence intervals" in _line(text, "percentiles")


def test_summary_is_reproducible():
    """The BCa bootstrap has a fixed seed: the same dataset gives the same summary, bit for bit."""
    ds = simulate(JSQPS.from_rho(2, 0.5), horizon=8000.0, replications=4, seed=1, dt=0.05, t_max=60)
    a, b = summary(ds), summary(ds)
    assert a.identical(b) and int(a["sojourn_percentile_ci_method"].sel(percentile=99.0)) in (0, 1)


# -- the other studies' simulate commands ---------------------------------------------------------
def test_split_merge_simulate_percentiles(tmp_path, capsys):
    out = tmp_path / "sm.nc"
    assert main(["split-merge", "simulate", "-n", "3", "-r", "3", "-q", "2", "--load", "0.7", "--workunits", "20000",
                 "--replications", "4", "--percentiles", "50,99,99.99", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    ds = read_netcdf(out)
    for v in ("latency_percentile_mean", "latency_percentile_ci_low", "latency_percentile_ci_high",
              "latency_beyond", "latency_percentile_too_few", "mean_latency_ci_low", "mean_latency_ci_high"):
        assert v in ds, v
    assert ds["latency_percentile_too_few"].values.tolist() == [0, 0, 1]
    m, lo, hi = (float(ds[f"latency_percentile{e}"].sel(percentile=99.0)) for e in ("_mean", "_ci_low", "_ci_high"))
    assert format_with_ci(m, lo, hi, resolution=0.01) in _line(text, "p99 ")
    p9999 = _line(text, "p99.99")
    assert "too few workunits" in p9999 and "--workunits >=" in p9999
    assert "recorded: 20,000 workunits per replication after 2,000 discarded" in text
    assert "±" in _line(text, "mean latency")


def test_split_merge_window_in_flag_terms(tmp_path, capsys):
    out = tmp_path / "sm.nc"
    assert main(["split-merge", "simulate", "-n", "3", "-r", "3", "-q", "2", "--load", "0.7", "--horizon", "100",
                 "--warmup", "100", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--warmup must be in [0, --horizon=100)" in err and "warmup_time" not in err
    assert not out.exists()


def test_restart_simulate_default_window_and_percentile(tmp_path, capsys):
    out = tmp_path / "r.nc"
    assert main(["restart", "simulate", "--model", "example2", "--semantics", "timeout", "--timeout",
                 "deterministic:value=0.5", "--replications", "3", "--horizon", "20000", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    ds = read_netcdf(out)
    assert ds.attrs["warmup"] == ds.attrs["cooldown"] == WARMUP_FRACTION * 20000
    assert "recorded     90% of the horizon" in text
    assert "response_time_percentile_ci_low" in ds and "mean_ci_high" in ds
    line = _line(text, "99th percentile")
    too_few = int(ds["response_time_percentile_too_few"].sel(percentile=99.0))
    assert ("too few jobs" in line) == bool(too_few)
    assert "±" in _line(text, "mean response time")


@pytest.mark.parametrize("window, words", [
    (["--horizon", "1000", "--warmup", "500"], ("--horizon", "--warmup + --cooldown", "defaults to --warmup")),
    (["--horizon", "0"], ("--horizon", "(0, inf)")),
])
def test_restart_window_rejected_before_compute(window, words, tmp_path, capsys):
    out = tmp_path / "r.nc"
    assert main(["restart", "simulate", "--model", "example1", *window, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert all(w in err for w in words), err
    assert not out.exists()
