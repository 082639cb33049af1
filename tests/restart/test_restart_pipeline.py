"""The restart study's rules through a real Snakemake run of a tiny config (other studies disabled)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from sojourn.core.files.io import read_netcdf
from support.captions import check_captions

ROOT = Path(__file__).resolve().parents[2]
TINY = {
    "cluster": {"kind": "local", "n_workers": 2},
    "jsq_ps": {"enabled": False},
    "split_merge": {"enabled": False},
    "restart": {
        "examples": {
            "example1": {"model": "example1", "rates": {"start": 0.1, "stop": 5, "num": 3},
                         "window": {"length": 100000, "warmup": 5000},
                         "semantics": ["signal", "timeout_deterministic"]},
            "example2": {"model": "example2", "rates": {"start": 0.2, "stop": 20, "num": 3},
                         "window": {"length": 20000, "warmup": 1000}},
        },
        "simulation": {"replications": 2},
        "figures": {"formats": ["png"]},
    },
}

pytestmark = pytest.mark.slow


def snakemake(workdir, cfg, *args):
    path = Path(workdir) / "tiny.yaml"
    path.write_text(yaml.safe_dump(cfg))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir),
           "--cores", "2", "--configfile", str(path), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=str(workdir))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    wd = tmp_path_factory.mktemp("restart_pipeline")
    proc = snakemake(wd, TINY)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return wd


def test_outputs_and_values(run):
    res = run / "results" / "restart"
    for ex in ("example1", "example2"):
        sim = read_netcdf(res / ex / "simulation.nc")
        assert dict(sim.sizes)["replication"] == 2 and dict(sim.sizes)["restart_rate"] == 3
        assert sim["count"].dims == ("semantics", "restart_rate", "replication", "t")
        assert "git_commit" in sim.attrs and "seed_recipe" in sim.attrs
        pf = read_netcdf(res / ex / "product_form.nc")
        cmp = read_netcdf(res / ex / "comparison.nc")
        # the signal semantics' CIs cover the product form at (almost) every point of the tiny sweep
        covered = cmp["response_time_covered"].sel(semantics="signal").values
        assert covered.sum() >= 2
        assert np.isfinite(float(pf["g_star"]))
        for stem in ("means", "percentile"):
            assert (res / "figures" / f"{ex}_{stem}.png").stat().st_size > 10_000
        # the key result as a table: g*, the best rate of each semantics, the change against no restart
        table = (res / ex / "key_results.csv").read_text()
        assert f"g* = {float(pf['g_star']):.4g}" in table and "without restart" in table
    assert list(read_netcdf(res / "example1" / "simulation.nc")["semantics"].values) == ["signal",
                                                                                          "timeout_deterministic"]
    g1 = float(read_netcdf(res / "example1" / "product_form.nc")["g_star"])
    assert abs(g1 - 0.8263) < 1e-3
    # every figure and key table comes with a caption written from the data; each of its claims holds there
    assert check_captions(res) >= 10
    # this tiny sweep cannot estimate the 99th percentile (too few jobs beyond it): the figure says so, draws no value
    cap = (res / "figures" / "example2_percentile.rst").read_text(encoding="utf-8")
    assert "too few jobs beyond it" in cap


def test_report_opens_with_the_key_result_tables(run):
    proc = snakemake(run, TINY, "--report", run / "report.html")
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = (run / "report.html").read_text(errors="replace")
    assert '"1 key results": [' in page and page.count("key_results.html") >= 2 and "System Message" not in page
    assert page.count("What this run shows") >= 4  # the generated captions, rendered
    assert not re.search(r"\((INFO|WARNING|ERROR|SEVERE)/\d\)", proc.stdout + proc.stderr), proc.stderr[-2000:]


def test_nothing_to_do_after_a_run_and_bad_config_rejected(run):
    proc = snakemake(run, TINY, "-n")
    assert "Nothing to be done" in proc.stdout + proc.stderr
    bad = yaml.safe_load(yaml.safe_dump(TINY))
    bad["restart"]["examples"]["example1"]["window"]["warmup"] = 60000  # 2 * warmup > length
    proc = snakemake(run, bad, "-n")
    assert (
        proc.returncode != 0
        and "restart.examples.example1.window: length must be > warmup + cooldown" in proc.stdout + proc.stderr
    )
    bad = yaml.safe_load(yaml.safe_dump(TINY))
    bad["restart"]["examples"]["example1"]["model"] = "nope"
    proc = snakemake(run, bad, "-n")
    assert (
        proc.returncode != 0
        and "restart.examples.example1.model: model must be a YAML model file" in proc.stdout + proc.stderr
    )


def _product_form_counts(log: str) -> tuple[int, int, int]:
    """(signal rates, computed, from the cache) of a product-form job's log (sojourn.restart.jobs.solve)."""
    m = re.search(r"product form at (\d+) signal rates \((\d+) computed, (\d+) from the cache\)", log)
    assert m, log
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def test_each_step_recomputes_only_what_its_keys_change(run):
    """Every step is cached through its content keys (sojourn.core.runs.protocol.run_step): after the run above nothing
    is to be done; more replications rerun the sweeps only; a finer product-form grid reruns the product form only,
    which computes only the rates it did not hold (each rate a cell) and takes g* from its cache, the values at
    the rates both grids share bit-identical."""
    pf_path = run / "results" / "restart" / "example1" / "product_form.nc"
    log = run / "results" / "restart" / "logs" / "solve" / "example1.log"
    total, computed, reused = _product_form_counts(log.read_text())
    assert computed == total and reused == 0  # the first run computed every rate
    more = yaml.safe_load(yaml.safe_dump(TINY))
    more["restart"]["simulation"]["replications"] = 3
    dry = snakemake(run, more, "-n").stdout
    assert re.search(r"restart_simulate\s+2\b", dry) and "restart_solve" not in dry, dry
    finer = yaml.safe_load(yaml.safe_dump(TINY))
    finer["restart"]["analytic"] = {"points": 401}
    dry = snakemake(run, finer, "-n").stdout
    assert re.search(r"restart_solve\s+2\b", dry) and "restart_simulate" not in dry, dry
    before = read_netcdf(pf_path)
    proc = snakemake(run, finer)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = log.read_text()
    total, computed, reused = _product_form_counts(text)
    # the sweep's own three rates (two of them the grid's ends) are in both grids: taken, not computed
    assert total == 401 + 1 and reused == 3 and computed == total - 3, text
    assert re.search(r"g\*: key \w+; cached", text), text
    after = read_netcdf(pf_path)
    shared = np.intersect1d(before["signal_rate"].values, after["signal_rate"].values)
    assert len(shared) == 3
    for v in ("response_time", "mean_number", "mean_number_station", "g_star"):
        np.testing.assert_array_equal(before[v].sel(signal_rate=shared).values if "signal_rate" in before[v].dims
                                      else before[v].values,
                                      after[v].sel(signal_rate=shared).values if "signal_rate" in after[v].dims
                                      else after[v].values, err_msg=v)


def _log_counts(log: str) -> tuple[int, int]:
    """(simulated, reused) replications of a sweep job's log (sojourn.restart.jobs.simulate's last line)."""
    m = re.search(r"(\d+) replications simulated, (\d+) from the cache", log)
    assert m, log
    return int(m.group(1)), int(m.group(2))


def test_adding_a_rate_simulates_only_that_rates_replications(tmp_path):
    """A sweep given as a list of rates: one rate added reruns the sweep job, which simulates only the new rate's
    replications (3 semantics x 2 replications) and takes the others from its cache, bit-identical to a fresh
    run of the longer list; the product form and the other example are not rerun."""
    one = {"model": "example2", "rates": [0.2, 2.0, 20.0], "window": {"length": 20000, "warmup": 1000}}
    cfg = {**TINY, "restart": {**TINY["restart"], "examples": {"example2": one}}}
    assert snakemake(tmp_path, cfg).returncode == 0
    log = tmp_path / "results" / "restart" / "logs" / "simulate" / "example2.log"
    assert _log_counts(log.read_text()) == (18, 0)
    more = {**one, "rates": [0.2, 0.6, 2.0, 20.0]}
    cfg["restart"]["examples"] = {"example2": more}
    dry = snakemake(tmp_path, cfg, "-n")
    assert re.search(r"restart_simulate\s+1\b", dry.stdout) and "restart_solve" in dry.stdout, dry.stdout
    proc = snakemake(tmp_path, cfg)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert _log_counts(log.read_text()) == (6, 18)
    # the product form computes the added rate alone (its grid of 400 rates and the other rates are cached)
    solve_log = (tmp_path / "results" / "restart" / "logs" / "solve" / "example2.log").read_text()
    assert _product_form_counts(solve_log)[1:] == (1, 401), solve_log
    grown = read_netcdf(tmp_path / "results" / "restart" / "example2" / "simulation.nc")
    fresh_dir = tmp_path / "fresh"
    fresh_dir.mkdir()
    assert snakemake(fresh_dir, cfg).returncode == 0
    fresh = read_netcdf(fresh_dir / "results" / "restart" / "example2" / "simulation.nc")
    assert list(grown["restart_rate"].values) == [0.2, 0.6, 2.0, 20.0]
    for v in grown.data_vars:
        if v != "wall_time":
            np.testing.assert_array_equal(grown[v].values, fresh[v].values, err_msg=v)
