"""End-to-end: a real Snakemake run of config/test.yaml on a real Dask LocalCluster, then its outputs,
provenance, report, rejection of bad configs, incremental reruns and cluster-independence of results."""
from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from snakemake_logger_plugin_sojourn import PROGRESS_EVERY
from sojourn.core.estimates.stats import cdf_at_left_edges
from sojourn.core.files.io import read_netcdf
from support.captions import check_captions

ROOT = Path(__file__).resolve().parents[2]
TEST_CFG = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
METHODS = TEST_CFG["jsq_ps"]["approximation"]["methods"]

pytestmark = pytest.mark.slow


def snakemake(workdir, *args, configfile=None, env=None):
    """Run Snakemake on ``workdir``, importing the frozen package copy of the ``run`` fixture if it has one (its
    ``src`` links to it: imported by its own path, where numba's cache of the kernels is)."""
    if env is None and (Path(workdir) / "src").is_dir():
        env = {**os.environ, "PYTHONPATH": str((Path(workdir) / "src").resolve())}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir),
           "--cores", "2", "--configfile", str(configfile or ROOT / "config" / "test.yaml"), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(workdir))


def snakemake_log(shown: str) -> Path:
    """The Snakemake log file a run's terminal output names ("Complete log(s): <path>")."""
    return Path(re.search(r"^Complete log\(s\): (\S+)$", shown, re.MULTILINE).group(1))


def job_counts(proc) -> dict:
    """The 'Job stats' table of a (dry-)run: {rule: count}; {} when there is nothing to do. A run's terminal shows
    a summary (the sojourn logger plugin): its table is read from the Snakemake log the run names."""
    out = proc.stdout + proc.stderr
    if "Nothing to be done" in out:
        return {}
    if "Job stats:" not in out:
        out = snakemake_log(out).read_text()
    table = out.split("Job stats:", 1)[1]
    counts = {}
    for line in table.splitlines()[3:]:
        m = re.fullmatch(r"(\w+)\s+(\d+)", line.strip())
        if not m:
            break
        counts[m.group(1)] = int(m.group(2))
    counts.pop("total", None)
    return counts


def write_cfg(path, **changes):
    """The test config with sections of the jsq_ps study updated."""
    cfg = copy.deepcopy(TEST_CFG)
    for section, values in changes.items():
        cfg["jsq_ps"][section] = {**cfg["jsq_ps"].get(section, {}), **values}
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory, frozen_package):
    """A real run of config/test.yaml on a real Dask LocalCluster (2 workers).

    It imports a frozen copy of the package (PYTHONPATH; its ``src`` a link to the session's copy, tests/conftest.py),
    so that the rerun checks below see only their own edits and not those others make to src/ meanwhile (a shared
    working tree); the copies of the run below keep the link, and so numba's cache of the kernels."""
    work = tmp_path_factory.mktemp("pipeline")
    (work / "src").symlink_to(frozen_package, target_is_directory=True)
    proc = snakemake(work)
    assert proc.returncode == 0, proc.stderr[-4000:]
    (work / "terminal.txt").write_text(proc.stdout + proc.stderr)  # what the terminal showed (test_terminal_*)
    return work


def res(work, name):
    from sojourn.jsq_ps.storage import read_approximation

    path = work / "results" / "jsq_ps" / name
    return read_approximation(path) if name == "approximation.nc" else read_netcdf(path)


def test_simulation_file(run):
    sim = res(run, "simulation.nc")
    assert sim["service"].values.tolist() == ["exponential", "uniform"]
    assert sim["R"].values.tolist() == [1, 2]
    np.testing.assert_allclose(sim["rho"].values, [0.5, 0.8])
    assert sim["replication"].values.tolist() == [0, 1]
    assert sim.sizes["t"] == 18233 and float(sim["t"][-1]) == pytest.approx(182.32)
    assert sim["count"].dtype.kind == "i"
    expo = sim.sel(service="exponential")
    total = expo["count"].sum("t") + expo["overflow"]
    assert (total == expo["n_customers"]).all() and (expo["n_customers"] > 100).all()
    # the uniform law only ran at (R=1, rho=0.8): the other cells are empty, not invented
    uni = sim.sel(service="uniform")
    assert int(uni["n_customers"].sel(R=1, rho=0.8).min()) > 100
    assert int(uni["n_customers"].sel(R=2).sum()) == 0
    # the run-length guard's verdict per cell (sojourn.core.estimates.runlength); gaps: -1, not judged
    assert (uni["run_valid"].sel(R=2) == -1).all() and set(np.unique(expo["run_valid"].values)) <= {0, 1}
    assert (expo["needed_window"] > 0).all() and (expo["relaxation_time"] > 0).all()
    F = cdf_at_left_edges(expo["count"].values.astype(float), expo["overflow"].values.astype(float))
    assert np.all(np.diff(F, axis=-1) >= 0) and F.min() >= 0 and F.max() <= 1
    assert sim["count"].attrs["units"] == "1" and "long_name" in sim["count"].attrs
    # provenance: the whole config as JSON, version, commit, seeds
    cfg = json.loads(sim.attrs["config"])
    assert cfg["simulation"]["window"]["length"] == 2000 and cfg["grid"]["R"] == [1, 2]
    assert sim.attrs["sojourn_version"] and re.fullmatch(r"[0-9a-f]{40}|unknown", sim.attrs["git_commit"])
    assert int(sim.attrs["seed"]) == 0 and "SeedSequence" in sim.attrs["seed_recipe"]
    assert (sim["spec_hash"].sel(service="exponential") > 0).all()
    assert not any(re.search(r"\d{4}-\d{2}-\d{2}T", str(v)) for v in sim.attrs.values())


def test_approximation_file(run):
    ap = res(run, "approximation.nc")
    assert set(ap["approximation"].values.tolist()) == set(METHODS)
    cdf = ap["cdf"].transpose("R", "rho", "approximation", "t").values
    assert np.isfinite(cdf).all()
    assert np.all(np.diff(cdf, axis=-1) >= -1e-6) and cdf.min() >= -1e-6 and cdf.max() <= 1 + 1e-6
    assert np.all(cdf[..., -1] > 0.99)
    assert "run_time" in ap and json.loads(ap.attrs["config"])["approximation"]["L2"] == 130


def test_comparison_values(run):
    cmp = res(run, "comparison.nc")
    sim, ap = res(run, "simulation.nc"), res(run, "approximation.nc")
    for d in ("service", "R", "rho", "approximation", "replication", "percentile"):
        assert d in cmp.dims
    assert cmp["percentile"].values.tolist() == [99, 99.9, 99.99, 99.999]
    e = cmp.sel(service="exponential")
    W = e["wasserstein"].values
    assert np.isfinite(W).all() and (W >= 0).all()
    assert (e["wasserstein_ci_low"] <= e["wasserstein_mean"] + 1e-12).all()
    assert (e["wasserstein_mean"] <= e["wasserstein_ci_high"] + 1e-12).all()
    # recompute one entry independently from the two files: dt * sum |F_sim - F_approx| on the t grid
    s = sim.sel(service="exponential", R=2, rho=0.8, replication=1)
    n = s["count"].values.astype(float)
    F_sim = np.concatenate([[0.0], np.cumsum(n)[:-1]]) / (n.sum() + float(s["overflow"]))
    F_app = ap["cdf"].sel({"R": 2, "rho": 0.8, "approximation": "D"}).values.astype(float)
    want = 0.01 * np.abs(F_sim - F_app).sum()
    got = float(e["wasserstein"].sel({"R": 2, "rho": 0.8, "approximation": "D", "replication": 1}))
    assert got == pytest.approx(want, rel=1e-4)
    # percentiles grow with p; the error is approx - sim
    xs = e["sim_percentile_pooled"].values
    assert np.all(np.diff(xs, axis=-1) >= 0)
    xa = cmp["approx_percentile"].values
    assert np.all(np.diff(xa, axis=-1) >= 0)
    err = e["percentile_error_pooled"] - (cmp["approx_percentile"] - e["sim_percentile_pooled"])
    assert float(abs(err).max()) < 1e-4
    assert (e["percentile_error_ci_low"] <= e["percentile_error_mean"] + 1e-9).all()
    # best method = the smallest mean W among the non-exact methods; a method is tied with it exactly when
    # its CI reaches down to the best one's CI (recomputed here from the stored interval ends)
    # ... where the simulation is long enough to judge by: the run-length guard flags this tiny config's ρ = 0.8
    # cells (2 replications of 1600 time units; predicted relative standard error of the mean 19 % at R = 1, 12 % at
    # R = 2, 15 % for the uniform law at R = 1), and there no method is ranked or judged
    # (sojourn.core.estimates.runlength)
    short = {(R, rho) for R in (1, 2) for rho in (0.5, 0.8) if int(e["sim_run_valid"].sel(R=R, rho=rho)) == 0}
    assert short == {(1, 0.8), (2, 0.8)}
    assert int(sim["run_valid"].sel(service="exponential", R=1, rho=0.8)) == 0
    assert int(cmp["sim_run_valid"].sel(service="uniform", R=1, rho=0.8)) == 0
    cand = [m for m in METHODS if m != "exact"]
    for R in (1, 2):
        for rho in (0.5, 0.8):
            cell = e.sel(R=R, rho=rho)
            wm = cell["wasserstein_mean"].sel({"approximation": cand})
            best = str(cell["best_method"].values)
            if (R, rho) in short:
                assert best == "" and (cell["tied_with_best"] == 0).all()
                assert (cell["optimistic"] == -1).all() and (cell["most_accurate"] == "").all()
                continue
            assert best == cand[int(np.argmin(wm.values))]
            hi_best = float(cell["wasserstein_ci_high"].sel({"approximation": best}))
            for m in cand:
                flagged = "fit_invalid" in cmp and int(cmp["fit_invalid"].sel({"R": R, "rho": rho, "approximation": m}))
                want = float(cell["wasserstein_ci_low"].sel({"approximation": m})) <= hi_best and not flagged
                assert int(cell["tied_with_best"].sel({"approximation": m})) == int(want), (R, rho, m)
    # the exact method against itself: distance 0; other methods differ from it
    vx = cmp["wasserstein_vs_exact"]
    assert np.allclose(vx.sel({"approximation": "exact"}), 0)
    assert (vx.sel({"approximation": "A"}) > 0).all()
    assert (cmp["run_time"] >= 0).all()
    # tail-aware decisions: every method usable here (a CDF, no guard); exact runs at R <= 2 and is preferred
    # for the exponential law; the uniform law's one cell has ~1300 customers per replication, 13 beyond the
    # 99th percentile: too few to judge any method there (for exact, the simulation is not needed)
    assert (cmp["usable"] == 1).all() and (cmp["unusable_reason"] == 0).all()
    assert (e["recommended"] == "exact").all() and (e["recommendation_status"] == 0).all()
    n = sim["n_customers"].transpose("service", "R", "rho", "replication").values
    want = n.min(axis=-1)[..., None] * (100 - cmp["percentile"].values) / 100
    np.testing.assert_allclose(cmp["tail_customers_per_replication"].values, want, rtol=1e-6)  # float32 on disk
    assert ((cmp["few_tail_customers"] != 0) == (cmp["tail_customers_per_replication"] < 100)).all()
    u = cmp.sel(service=[s for s in cmp["service"].values if s != "exponential"][0])
    assert (u["recommended"].sel(R=1, rho=0.8) == "simulate").all()
    assert (u["recommendation_status"].sel(R=1, rho=0.8) == 3).all()  # too_few_customers
    assert (u["recommended"].sel(R=2) == "").all()  # not simulated: no recommendation
    np.testing.assert_allclose(e["sim_percentile_mean"], e["sim_percentile"].mean("replication"), rtol=1e-6)
    assert (e["sim_percentile_ci_low"] <= e["sim_percentile_mean"] + 1e-6).all()
    assert (e["sim_percentile_mean"] <= e["sim_percentile_ci_high"] + 1e-6).all()
    assert set(np.unique(cmp["optimistic"].values)) <= {-1, 0, 1}


def test_figures_and_report(run):
    figs = run / "results" / "jsq_ps" / "figures"
    for stem in ("wasserstein_vs_rho", "best_method_map", "recommended_map", "percentile_error_vs_rho", "runtime_vs_R",
                 "cdf_R~2_rho~0.80", "mgr_laws_distance", "mgr_laws_percentile"):
        png = figs / f"{stem}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", stem
    proc = snakemake(run, "--report", run / "report.html")
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (run / "report.html").read_text(errors="replace")
    assert "wasserstein_vs_rho.png" in html and "reproduction" in html
    # no docutils error boxes or messages (a caption's |x| read as an undefined substitution, issue 26)
    assert "System Message" not in html and "Undefined substitution" not in html
    assert not re.search(r"\((INFO|WARNING|ERROR|SEVERE)/\d\)", proc.stdout + proc.stderr), proc.stderr[-2000:]
    # the study's section opens with its key result: the best method per (R, ρ) band and when to trust which
    table = (run / "results" / "jsq_ps" / "key_results.html").read_text()
    assert table.count("<table>") == 3 and "When to trust" in table
    assert '"1 key results": [' in html and "key_results.html" in html
    # every figure, the key table and the reproduction page come with a caption written from the data, rendered in
    # the report; each claim in them holds on the file it names
    assert check_captions(run / "results" / "jsq_ps") >= 20
    assert html.count("What this run shows") >= 10
    # this tiny run has fewer than 100 customers per replication beyond every percentile: the simulation judges no
    # method anywhere, so no row of 'when to trust' carries an error from it — each says 'reference too short'
    trust = table.split("When to trust")[1].split("</table>")[0]
    rows = [r for r in trust.split("<tr>")[2:]]
    assert len(rows) == 2 * 4 and all("reference too short" in r for r in rows)


def test_accuracy_table(run):
    """The jsq_ps_accuracy rule: accuracy.csv holds the comparison's relative percentile errors of the M/M/R system
    for every computed method, its optimism verdict and usability (a usable method with an estimate, at least 100
    simulated customers beyond the percentile in every replication and a run long enough:
    sojourn.core.estimates.reference);
    `sojourn plan --accuracy` reads it."""
    from sojourn.jsq_ps.accuracy import read_accuracy

    path = run / "results" / "jsq_ps" / "accuracy.csv"
    table = read_accuracy(path)
    cmp = res(run, "comparison.nc").sel(service="exponential")
    assert table.Rs == [1, 2] and table.percentiles == [99.0, 99.9, 99.99, 99.999]
    seen = 0
    for line in path.read_text().splitlines():
        if line.startswith("#") or line.startswith("R,"):
            continue
        R, rho, pct, m, mean, lo, hi, opt, usable = line.split(",")
        c = cmp.sel(R=int(R), rho=float(rho), percentile=float(pct), approximation=m)
        ref = float(c["relative_percentile_error_mean"])
        if mean == "":
            assert np.isnan(ref) and usable == "0"
        else:
            assert float(mean) == pytest.approx(ref, rel=1e-3, abs=1e-6)
            assert float(lo) == pytest.approx(float(c["relative_percentile_error_ci_low"]), rel=1e-3, abs=1e-6)
            assert float(hi) == pytest.approx(float(c["relative_percentile_error_ci_high"]), rel=1e-3, abs=1e-6)
        err_high = float(c["percentile_error_ci_high"])
        judged = np.isfinite(err_high) and np.isfinite(ref) and int(c["sim_run_valid"]) != 0  # run long enough
        assert int(opt) == (-1 if not judged else 1 if err_high < 0 else 0)
        enough = int(c["few_tail_customers"]) == 0 and int(c["sim_run_valid"]) != 0
        assert int(usable) == int(enough and bool(c["usable"]) and int(opt) != -1 and hi != "")
        seen += 1
    assert seen > 0 and seen == len(table)


def test_nothing_to_do_after_a_run(run):
    proc = snakemake(run, "-n")
    assert proc.returncode == 0
    assert job_counts(proc) == {}


def test_new_rho_reruns_only_new_cells(run, tmp_path):
    """ρ = 0.65 opens a new block (0.60-0.70) per R: two simulation and two approximation jobs, plus merges."""
    cfg = write_cfg(tmp_path / "c.yaml", grid={"R": [1, 2], "rho": [0.5, 0.65, 0.8]})
    counts = job_counts(snakemake(run, "-n", configfile=cfg))
    assert counts.get("jsq_ps_simulate") == 2 and counts.get("jsq_ps_approximate") == 2
    assert counts.get("jsq_ps_merge_simulation") == 1 and counts.get("jsq_ps_compare") == 1


def test_new_rho_in_an_existing_block_computes_only_the_new_cell(run, tmp_path):
    """ρ = 0.55 joins the block 0.50-0.60: that block's job reruns (one per R), but its cell ρ = 0.50 comes
    from the cache unchanged and only ρ = 0.55 is simulated and approximated."""
    work = tmp_path / "work"
    shutil.copytree(run, work, symlinks=True)
    before = res(work, "simulation.nc")
    before_ap = res(work, "approximation.nc")
    cfg = write_cfg(tmp_path / "c.yaml", grid={"R": [1, 2], "rho": [0.5, 0.55, 0.8]})
    counts = job_counts(snakemake(work, "-n", configfile=cfg))
    assert counts.get("jsq_ps_simulate") == 2 and counts.get("jsq_ps_approximate") == 2  # blocks 0.50-0.60 for R = 1, 2
    proc = snakemake(work, configfile=cfg)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (work / "results" / "jsq_ps" / "logs" / "simulate" / "exponential" / "R~2" / "rho~0.50-0.60.log").read_text()
    assert re.search(r"rho=0\.5: .*2 replications cached, 0 to simulate", log), log  # a cell's label: rho=<its float>
    assert re.search(r"rho=0\.55: .*0 replications cached, 2 to simulate", log), log
    alog = (work / "results" / "jsq_ps" / "logs" / "approximate" / "R~2" / "rho~0.50-0.60.log").read_text()
    assert re.search(r"rho=0\.5: key \w+; cached", alog) and re.search(r"rho=0\.55: key \w+; to compute", alog), alog
    after = res(work, "simulation.nc")
    assert after["rho"].values.tolist() == [0.5, 0.55, 0.8]
    for name in ("count", "overflow", "n_customers", "sum", "max", "occupancy_at_arrival"):
        old = before[name].sel(rho=[0.5, 0.8])
        np.testing.assert_array_equal(after[name].sel(rho=[0.5, 0.8]).sel({d: old[d] for d in old.dims}).values,
                                      old.values, err_msg=name)
    ap = res(work, "approximation.nc")
    np.testing.assert_array_equal(ap["sf"].sel(rho=[0.5, 0.8]).values, before_ap["sf"].values)
    assert np.isfinite(ap["cdf"].sel(rho=0.55).values).all()


def test_horizon_reruns_simulations_only(run, tmp_path):
    cfg = write_cfg(tmp_path / "c.yaml", simulation={"window": {"length": 2500}})
    counts = job_counts(snakemake(run, "-n", configfile=cfg))
    assert counts.get("jsq_ps_simulate") == 5 and "jsq_ps_approximate" not in counts


def test_L2_reruns_approximations_only(run, tmp_path):
    cfg = write_cfg(tmp_path / "c.yaml", approximation={"L2": 140})
    counts = job_counts(snakemake(run, "-n", configfile=cfg))
    assert counts.get("jsq_ps_approximate") == 4 and "jsq_ps_simulate" not in counts
    assert "jsq_ps_merge_simulation" not in counts


@pytest.fixture(scope="module")
def package_copy(run, tmp_path_factory):
    """A copy of the run's package (imported via PYTHONPATH) for the code-edit tests; unedited, nothing to do."""
    src = tmp_path_factory.mktemp("edited") / "src"
    shutil.copytree(run / "src" / "sojourn", src / "sojourn", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(src)}
    assert job_counts(snakemake(run, "-n", env=env)) == {}  # the same code: nothing to do
    return src, env


@pytest.fixture
def edited(run, package_copy):
    """Edit the package copy and dry-run on it: {rule: jobs}; the edits are undone after the test."""
    src, env = package_copy
    originals = {}

    def dry_run_after(relpath, old, new):
        f = src / "sojourn" / relpath
        text = f.read_text()
        originals.setdefault(f, text)
        assert old in text, (relpath, old)
        f.write_text(text.replace(old, new, 1))
        return job_counts(snakemake(run, "-n", env=env))

    yield dry_run_after
    for f, text in originals.items():
        f.write_text(text)


LAWS = {"jsq_ps_approximate_laws": 1, "jsq_ps_merge_law_approximation": 1}  # method T for the M/G/R law
JOBS = {"jsq_ps_simulate": 5, "jsq_ps_approximate": 4, "jsq_ps_merge_simulation": 1, **LAWS,
        "jsq_ps_merge_approximation": 1, "jsq_ps_compare": 1, "jsq_ps_accuracy": 1, "jsq_ps_figures": 1,
        "jsq_ps_reproduction": 1, "all": 1}
DOWNSTREAM = {"jsq_ps_compare": 1, "jsq_ps_accuracy": 1, "jsq_ps_figures": 1, "jsq_ps_reproduction": 1, "all": 1}


def test_comment_and_docstring_edits_rerun_nothing(edited):
    """Code fingerprints hash the parse tree without docstrings: comments, docstrings, layout change nothing."""
    assert edited("core/files/io.py", "import threading\n", "import threading  # a new comment\n\n\n") == {}
    assert edited("jsq_ps/kernel.py", '"""General-law event kernel', '"""The general-law event kernel') == {}


def test_comparison_edit_reruns_compare_and_figures_only(edited):
    counts = edited("jsq_ps/compare.py", "class _Grid:", "_EDITED = 1\n\n\nclass _Grid:")
    assert counts == DOWNSTREAM


def test_kernel_edit_reruns_simulations_and_what_depends_on_them(edited):
    counts = edited("jsq_ps/kernel.py", "BIG = ", "_EDITED = 1\nBIG = ")
    assert counts == {"jsq_ps_simulate": 5, "jsq_ps_merge_simulation": 1, **DOWNSTREAM}


def test_analytic_edit_reruns_approximations_and_what_depends_on_them(edited):
    counts = edited("jsq_ps/solve/gupta.py", "import numpy as np\n", "import numpy as np\n\n_EDITED = 1\n")
    # method T for a service law imports the analytic core too (sojourn.jsq_ps.solve.tail_ph)
    assert counts == {"jsq_ps_approximate": 4, "jsq_ps_merge_approximation": 1, **LAWS, **DOWNSTREAM}


def test_core_edit_used_by_everything_reruns_everything(edited):
    counts = edited("core/files/io.py", "def log_line(", "_EDITED = 1\n\n\ndef log_line(")
    assert counts == JOBS


def test_terminal_shows_a_summary_and_the_log_every_job(run):
    """The default profile's sojourn logger (issue 31 item 6): the terminal shows the job count per study, progress
    at every tenth, where the results are and what to open — not the per-job chatter, which Snakemake's log keeps."""
    shown = (run / "terminal.txt").read_text()
    lines = shown.splitlines()
    assert re.search(r"^18 jobs to run \(jsq_ps 17, all 1\)", shown, re.MULTILINE), shown
    progress = [re.fullmatch(r"(\d+) of 18 jobs done \(\d+%\), (\d+):(\d\d):(\d\d) elapsed", ln) for ln in lines]
    progress = [(int(m[1]), 3600 * int(m[2]) + 60 * int(m[3]) + int(m[4])) for m in progress if m]
    assert progress and progress[-1][0] == 18, shown
    # a line at each new tenth of the jobs, else only after a minute without one (a slow machine: CI saw 12 lines)
    last_tenth, last_s = -1, None
    for done, s in progress:
        tenth = 10 * done // 18
        assert tenth > last_tenth or done == 18 or s - last_s >= PROGRESS_EVERY - 1, (done, s, shown)
        last_tenth, last_s = max(tenth, last_tenth), s
    assert "then open report.html" in shown and "results/jsq_ps/key_results.html" in shown, shown
    assert "snakemake --report report.html --configfile " in shown, shown  # the run's config, repeated
    for chatter in ("localrule", "jobid", "Select jobs to execute", "Shell command", "wildcards:", "SNAKEMAKE"):
        assert chatter not in shown, (chatter, shown)
    assert len(lines) <= 30, shown
    log = snakemake_log(shown).read_text()
    assert log.count("localrule jsq_ps_simulate:") == 5 and "Job stats:" in log and "18 of 18 steps (100%) done" in log


def test_a_failing_job_shows_its_error_on_the_terminal(tmp_path):
    """A job that fails (here: no Dask scheduler at the configured address) shows on the terminal its rule, its
    log's path and content (the traceback), and the error's own message; the run exits non-zero."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({**TEST_CFG, "cluster": {"kind": "address", "address": "tcp://127.0.0.1:9"}}))
    proc = snakemake(tmp_path, configfile=bad, env=dict(os.environ))
    shown = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert re.search(r"^Error in rule jsq_ps_(simulate|approximate):", shown, re.MULTILINE), shown
    assert re.search(r"^Logfile results/jsq_ps/logs/\S+\.log:$", shown, re.MULTILINE), shown  # the job's log
    assert "Traceback (most recent call last)" in shown, shown
    assert "cluster.address: no Dask scheduler answers at tcp://127.0.0.1:9" in shown, shown
    assert "then open report.html" not in shown


def test_bad_config_rejected_before_any_job(tmp_path):
    for change, key in (({"simulation": {"horizonn": 10}}, "horizonn"),
                        ({"simulation": {"window": {"length": 300}}}, "jsq_ps.simulation.window.warmup")):
        work = tmp_path / key
        work.mkdir()
        bad = work / "bad.yaml"
        cfg = copy.deepcopy(TEST_CFG)
        for section, values in change.items():
            cfg["jsq_ps"][section] = {**cfg["jsq_ps"][section], **values}
        bad.write_text(yaml.safe_dump(cfg))
        proc = snakemake(work, configfile=bad, env=dict(os.environ))
        assert proc.returncode != 0
        assert key in proc.stdout + proc.stderr
        assert not (work / "results").exists()


def test_more_replications_simulate_only_the_new_ones(run, tmp_path):
    work = tmp_path / "work"  # a copy: the module's run stays as it was for the other tests
    shutil.copytree(run, work, symlinks=True)
    before = res(work, "simulation.nc")
    cfg = write_cfg(tmp_path / "c.yaml", simulation={"replications": 3})
    proc = snakemake(work, "--allowed-rules", "jsq_ps_simulate", "jsq_ps_merge_simulation",
                     "results/jsq_ps/simulation.nc", configfile=cfg)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (work / "results" / "jsq_ps" / "logs" / "simulate" / "exponential" / "R~1" / "rho~0.50-0.60.log").read_text()
    assert "rho=0.5: " in log and "2 replications cached, 1 to simulate" in log
    after = res(work, "simulation.nc")
    assert after["replication"].values.tolist() == [0, 1, 2]
    kept = after.sel(replication=[0, 1])
    for name in ("count", "overflow", "n_customers", "sum", "max"):
        np.testing.assert_array_equal(kept[name].values, before[name].values)
    assert int(after["n_customers"].sel(service="exponential", replication=2).min()) > 100


def test_precision_target_reuses_the_cache_and_compares_each_cell_over_its_own_replications(run, tmp_path):
    """simulation.precision on the run of config/test.yaml (2 replications per cell, cached): each cell goes on to
    its own count, the cache supplying replications 0 and 1; the merged cube is padded beyond each cell's
    replications_used; the comparison's means are over each cell's own replications; a second run has nothing to
    do, and a tighter target simulates only the replications beyond those cached."""
    from sojourn.core.estimates.precision import MAX_REPLICATIONS, TARGET_MET

    work = tmp_path / "work"
    shutil.copytree(run, work, symlinks=True)
    before = res(work, "simulation.nc")
    target = {"statistic": "mean", "relative_half_width": 0.05, "min_replications": 3, "max_replications": 12}
    cfg = write_cfg(tmp_path / "p.yaml", simulation={"precision": target})
    # the figures are not needed here (their rule stays out)
    targets = ("--allowed-rules", "jsq_ps_simulate", "jsq_ps_merge_simulation", "jsq_ps_compare", "jsq_ps_reproduction")
    proc = snakemake(work, *targets, configfile=cfg)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = job_counts(proc)
    assert counts.get("jsq_ps_simulate") == 5 and "jsq_ps_approximate" not in counts
    assert job_counts(snakemake(work, "-n", *targets, configfile=cfg)) == {}
    logs = work / "results" / "jsq_ps" / "logs" / "simulate"
    log = (logs / "exponential" / "R~1" / "rho~0.50-0.60.log").read_text()
    assert "round 1: 1 cell(s) at 3 replications; 1 to simulate, 2 from the cache" in log, log
    sim = res(work, "simulation.nc")
    used = sim["replications_used"]
    assert int(used.sel(service="uniform", R=2).sum()) == 0 and (used.sel(service="uniform", R=2) == 0).all()
    expo = sim.sel(service="exponential")
    n = expo["replications_used"].values
    assert (n >= 3).all() and (n <= 12).all() and sim.sizes["replication"] == used.max()
    reason = expo["stop_reason"].values
    assert np.isin(reason, (TARGET_MET, MAX_REPLICATIONS)).all()
    assert (expo["achieved_relative_half_width"].values[reason == TARGET_MET] <= 0.05).all()
    assert (n[reason == MAX_REPLICATIONS] == 12).all()
    for name in ("count", "overflow", "n_customers", "sum", "max"):  # replications 0 and 1 came from the cache
        np.testing.assert_array_equal(sim[name].sel(replication=[0, 1]).values, before[name].values, err_msg=name)
    k = np.arange(sim.sizes["replication"])
    pad = k[None, None, :] >= n[..., None]
    assert (expo["n_customers"].values[pad] == 0).all() and np.isnan(expo["mean"].values[pad]).all()
    assert (expo["n_customers"].values[~pad] > 0).all()
    cmp = res(work, "comparison.nc")
    np.testing.assert_array_equal(cmp["replications_used"].values, used.transpose(*cmp["replications_used"].dims))
    e = cmp.sel(service="exponential")
    assert np.isfinite(e["wasserstein_mean"].values).all()
    for i, R in enumerate(e["R"].values):
        for j, rho in enumerate(e["rho"].values):
            w = e["wasserstein"].sel(R=R, rho=rho).transpose("approximation", "replication").values
            assert np.isfinite(w[:, :n[i, j]]).all() and np.isnan(w[:, n[i, j]:]).all()
            np.testing.assert_allclose(e["wasserstein_mean"].sel(R=R, rho=rho).values, w[:, :n[i, j]].mean(axis=1),
                                       rtol=1e-6)  # stored as float32
    assert (work / "results" / "jsq_ps" / "reproduction.nc").is_file()

    tighter = write_cfg(tmp_path / "t.yaml", simulation={"precision": {**target, "relative_half_width": 0.02,
                                                                       "max_replications": 24}})
    proc = snakemake(work, "--allowed-rules", "jsq_ps_simulate", "jsq_ps_merge_simulation",
                     "results/jsq_ps/simulation.nc", configfile=tighter)
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = res(work, "simulation.nc").sel(service="exponential")
    for i, R in enumerate(after["R"].values):
        for j, rho in enumerate(after["rho"].values):
            old, new = int(n[i, j]), int(after["replications_used"].sel(R=R, rho=rho))
            text = (logs / "exponential" / f"R~{R}").glob("*.log")
            found = [re.search(rf"cell rho={float(rho)!r}: \w+ after {new} replications.*; (\d+) simulated, "
                               r"(\d+) from the cache", f.read_text()) for f in text]
            m = next(x for x in found if x)
            assert (int(m.group(1)), int(m.group(2))) == (new - old, old), (R, rho)


@pytest.fixture
def scheduler_file(tmp_path):
    """An existing Dask cluster (scheduler + one single-threaded worker) that writes a scheduler file."""
    path = tmp_path / "scheduler.json"
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--dashboard-address", ":0", "--scheduler-file", str(path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", str(path),
                                   "--nthreads", "1", "--nworkers", "1", "--no-dashboard"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        yield path
    finally:
        for p in procs[::-1]:
            p.terminate()
        for p in procs[::-1]:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_results_do_not_depend_on_the_cluster(tmp_path, scheduler_file):
    """The same cell simulated from scratch on a 1-worker and a 2-worker LocalCluster and on an existing
    cluster reached through its scheduler file: bit-identical data variables (wall_time, a measurement,
    aside)."""
    from distributed import Client

    from sojourn.core.cluster.cluster import dask_client
    from sojourn.jsq_ps.jobs import simulate as simulate_block

    clusters = {"local1": ({"kind": "local"}, 1), "local2": ({"kind": "local"}, 2),
                "existing": ({"kind": "scheduler_file", "scheduler_file": str(scheduler_file)}, None)}
    out = {}
    for name, (cfg, n) in clusters.items():
        if name == "existing":
            for _ in range(600):
                if scheduler_file.exists():
                    break
                __import__("time").sleep(0.1)
            with Client(scheduler_file=str(scheduler_file)) as probe:
                probe.wait_for_workers(1, timeout=60)
        with dask_client(cfg, n) as client:
            path = simulate_block(client, service="exponential", law="exponential", R=2, rhos=["0.80"], mu=1.0,
                                 simulation={**TEST_CFG["jsq_ps"]["simulation"], "replications": 3, "backend": "fast"},
                                 time_grid=TEST_CFG["jsq_ps"]["time_grid"], code="test", output=tmp_path / f"{name}.nc",
                                 cache=tmp_path / f"cache-{name}")
        out[name] = read_netcdf(path)
    ref = out["local1"]
    assert ref["replication"].values.tolist() == [0, 1, 2]
    assert int(ref["n_customers"].min()) > 100
    for name in ("local2", "existing"):
        for var in ref.data_vars:
            if var != "wall_time":
                np.testing.assert_array_equal(out[name][var].values, ref[var].values, err_msg=f"{name}: {var}")


def test_damaged_results_are_rebuilt_by_the_next_run(run, tmp_path):
    """A truncated block, garbage in simulation.nc and an altered (still readable) comparison.nc: the next
    plain run reports each, moves it aside and rebuilds it — no manual deletion — with the same data."""
    import netCDF4

    work = tmp_path / "work"
    shutil.copytree(run, work, symlinks=True)
    res_dir = work / "results" / "jsq_ps"
    before = {n: res(work, n) for n in ("simulation.nc", "comparison.nc")}
    block = res_dir / "blocks" / "simulation" / "exponential" / "R~1" / "rho~0.50-0.60.nc"
    os.truncate(block, block.stat().st_size // 2)
    (res_dir / "simulation.nc").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(5000))
    with netCDF4.Dataset(res_dir / "comparison.nc", "a") as nc:
        v = nc.variables["wasserstein_mean"]
        v[0, 0, 0, 0] = 123.0
    dry = snakemake(work, "-n")
    assert dry.returncode == 0 and dry.stderr.count("sojourn: damaged result") == 3, dry.stderr[-3000:]
    assert block.is_file()  # a dry run only reports
    proc = snakemake(work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("sojourn: damaged result") == 3 and "moved aside" in proc.stderr
    assert (res_dir / "simulation.nc.damaged").is_file()
    for name, old in before.items():
        new = res(work, name)
        for var in old.data_vars:
            if var not in ("wall_time", "run_time"):
                xr.testing.assert_equal(new[var], old[var])
    assert "damaged" not in snakemake(work, "-n").stderr
