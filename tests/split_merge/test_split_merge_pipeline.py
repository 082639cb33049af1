"""The split-merge pipeline: config checks, and a real Snakemake run of a tiny config (jsq_ps disabled)."""
from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from sojourn.core.checks.config import ConfigError, validate_config
from sojourn.core.files.io import read_netcdf
from sojourn.split_merge.config import cells, check_config
from sojourn.split_merge.plots import figures
from support.captions import check_captions

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workflow" / "schemas" / "split_merge.schema.yaml"
RAW = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["split_merge"]
DEFAULT = validate_config(copy.deepcopy(RAW), SCHEMA, "split_merge")  # with the schema's defaults
TINY = {
    "results": "res",
    "jsq_ps": {"enabled": False},
    "split_merge": {
        "simulation": {"replications": 3, "seed": 0},
        "comparison": {"percentiles": [50, 99]},
        "experiment_a": {"window": {"length": 4000, "warmup": 400}},
        "experiment_b": {"replicas": [1, 2, 3], "window": {"length": 3000, "warmup": 300}},
        "experiment_c": {"hosts": 20, "replicas": [1, 2, 4], "quorums": [1, 2],
                         "window": {"length": 3000, "warmup": 300},
                         "fork_join": {"enabled": True, "window": {"length": 1000, "warmup": 100}}},
        "figures": {"formats": ["png"]},
    },
}


def test_default_config_cells_are_the_seeds_experiments():
    assert len(cells(DEFAULT, "a")) == 1
    assert len(cells(DEFAULT, "b")) == 15  # r = 1..5, q = 1..r
    c = cells(DEFAULT, "c")
    sm = [x for x in c if x["model"] == "split_merge"]
    assert len(sm) == 2 * 27  # q in {1,2,3}, r = 1..10, q <= r; two laws
    assert all(x["spec"].hosts == 100 and abs(x["spec"].rho - 0.9) < 1e-12 for x in sm)
    assert [f.stem for f in figures(DEFAULT)] == ["experiment_a_latency", "experiment_b_heatmap",
                                                  "experiment_c_exponential", "experiment_c_hyperexponential"]


@pytest.mark.parametrize(
    "path,value,match",
    [
        (("experiment_a", "quorum"), 4, r"split_merge\.experiment_a: quorum must be an integer in \[1, replicas=3\]"),
        (("experiment_a", "replicas"), 5, r"split_merge\.experiment_a: replicas must be an integer in \[1, hosts=3\]"),
        (("experiment_c", "laws"), {"x": "nosuch"}, r"split_merge\.experiment_c: replica_law: unknown law 'nosuch'"),
        (
            ("experiment_b", "time_grid"),
            {"dt": 0.03, "t_max": 1.0},
            r"split_merge\.experiment_b\.time_grid: t_max must be a multiple",
        ),
        (
            ("experiment_c", "replicas"),
            [1, 200],
            r"split_merge\.experiment_c: replicas must be an integer in \[1, hosts=100\]",
        ),
    ],
)
def test_config_errors_name_the_key(path, value, match):
    cfg = copy.deepcopy(DEFAULT)
    cfg[path[0]][path[1]] = value
    with pytest.raises(ConfigError, match=match):
        check_config(cfg)


def _snakemake(workdir, *args):
    """Snakemake on ``workdir`` with the frozen copy of the package ``workdir/src`` links to (others edit the tree
    while the test runs: a changed fingerprint would rerun jobs between the run and the dry-runs; tests/conftest.py)."""
    env = {**os.environ, "PYTHONPATH": str((workdir / "src").resolve())}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir),
           "--cores", "2", "--configfile", str(workdir / "tiny.yaml"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=str(workdir), env=env)


@pytest.mark.slow
def _titles(monkeypatch, draw, *args) -> tuple[str, list]:
    """The suptitle and the x labels of a split-merge figure drawn from a result file (``save`` kept from writing)."""
    import matplotlib.pyplot as plt

    from sojourn.split_merge import plots

    drawn = []
    monkeypatch.setattr(plots, "save", lambda fig, stem, formats, dpi, caption=None: drawn.append(fig) or [])
    draw(*args, "unused", ("png",), 50)
    (fig,) = drawn
    out = fig._suptitle.get_text(), [ax.get_xlabel() for ax in fig.get_axes() if ax.get_xlabel()]
    plt.close(fig)
    return out


def _legend_clear_of_data(monkeypatch, res) -> None:
    """Figure (a)'s tail panel: its legend keeps clear of every point of its curves and percentile marks within the
    axes (round 21: the legend in the lower left covered t ≈ 27–37, where the simulated tail leaves exact)."""
    import matplotlib.pyplot as plt

    from sojourn.split_merge import plots

    drawn = []
    monkeypatch.setattr(plots, "save", lambda fig, stem, formats, dpi, caption=None: drawn.append(fig) or [])
    plots.figure_a(res / "experiment_a.nc", "unused", ("png",), 50)
    (fig,) = drawn
    fig.canvas.draw()
    ax = next(a for a in fig.get_axes() if a.get_title() == "latency tail")
    box, frame = ax.get_legend().get_window_extent(), ax.get_window_extent()
    points = np.vstack([ln.get_transform().transform(ln.get_xydata()) for ln in ax.get_lines()])
    def inside(b, p, pad=0.0):
        return (p[:, 0] >= b.x0 - pad) & (p[:, 0] <= b.x1 + pad) & (p[:, 1] >= b.y0 - pad) & (p[:, 1] <= b.y1 + pad)

    points = points[np.isfinite(points).all(1) & inside(frame, points)]
    # clear by a tenth of an inch: a curve grazing the legend's edge reads as running under it
    assert len(points) and not inside(box, points, 0.1 * fig.dpi).any(), box
    plt.close(fig)


def _hosts_in_titles(monkeypatch, res) -> None:
    """Every caption's claims hold in the data (at least 8 claims); each figure names its host count n, computed from
    its data: (a) its n and that its hosts act as one super-server, (b) n = r and that the hardware grows with r
    (title and axis), (c) the config's n = 20 (title and axis), its replica law first (round 16's reader)."""
    from sojourn.split_merge import plots

    assert check_captions(res) >= 8

    title, _ = _titles(monkeypatch, plots.figure_a, res / "experiment_a.nc")
    assert "n = 3 hosts (the n hosts act as one super-server)" in title
    title, xl = _titles(monkeypatch, plots.figure_b, res / "experiment_b.nc")
    grows = "n = r hosts: the hardware grows with r"
    assert grows in title and xl and all(grows in x for x in xl)
    for law in ("exponential", "hyperexponential"):
        title, xl = _titles(monkeypatch, plots.figure_c, res / "experiment_c.nc", law)
        assert title.startswith(f"(c) {law} replica times") and "n = 20 hosts at every r" in title.split("\n")[0]
        assert len(xl) == 2 and all("n = 20 hosts at every r" in x for x in xl) and grows not in title
    _legend_clear_of_data(monkeypatch, res)  # and (a)'s legend leaves its data free


def test_tiny_pipeline_end_to_end(tmp_path, monkeypatch, frozen_package):
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY))
    (tmp_path / "src").symlink_to(frozen_package, target_is_directory=True)
    proc = _snakemake(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = tmp_path / "res" / "split_merge"
    for x in "abc":
        ds = read_netcdf(res / f"experiment_{x}.nc")
        assert ds.attrs["Conventions"].startswith("CF") and "git_commit" in ds.attrs
        assert set(ds["exact_method"].attrs) >= {"long_name", "units"}
        sm = ds.sel(model="split_merge")
        ok = np.isfinite(sm["sim_mean_latency"].values)
        assert ok.sum() == len([c for c in cells(_merged(), x) if c["model"] == "split_merge"])
        # exact where exact, NaN otherwise — never a number without its method
        exact = np.isfinite(sm["exact_mean_latency"].values)
        np.testing.assert_array_equal(exact, sm["is_exact"].values == 1)
        np.testing.assert_array_equal(exact, ok & (sm["exact_method"].values > 0))
    a = read_netcdf(res / "experiment_a.nc").isel(law=0, quorum=0, replicas=0).sel(model="split_merge")
    assert int(a.is_exact) == 1 and int(a.exact_method) == 1  # Pollaczek–Khinchine
    c = read_netcdf(res / "experiment_c.nc")
    assert list(c["model"].values) == ["split_merge", "fork_join"]
    assert int(c.sel(law="exponential", model="split_merge", quorum=1, replicas=2).exact_method) == 2  # Erlang C
    for f in figures(_merged()):
        assert (res / "figures" / f"{f.stem}.png").stat().st_size > 10_000
    # every figure and the key table come with a caption written from the data; each of its claims holds there
    _hosts_in_titles(monkeypatch, res)
    # the report opens the study with its key result, the best (r, q), as a table; no docutils message
    assert (res / "key_results.html").read_text().count("<table>") == 1
    assert "best (r, q)" in (res / "key_results.csv").read_text()
    proc = _snakemake(tmp_path, "--report", tmp_path / "report.html")
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = (tmp_path / "report.html").read_text(errors="replace")
    assert '"1 key results": [' in page and "System Message" not in page
    assert page.count("What this run shows") >= 5  # the generated captions, rendered
    assert not re.search(r"\((INFO|WARNING|ERROR|SEVERE)/\d\)", proc.stdout + proc.stderr), proc.stderr[-2000:]
    log = (res / "logs" / "experiment_c.log").read_text()
    assert re.search(r"20 cells x 3 replications = 60 Dask tasks", log)
    # the exact values are their own step, one cached cell each (sojourn.split_merge.exact)
    assert re.search(r"20 cells computed, 0 from the cache", (res / "logs" / "exact_c.log").read_text())
    # nothing to do afterwards; a change of experiment (b) reruns (b) and the figures only
    assert "Nothing to be done" in _snakemake(tmp_path, "-n").stdout
    tiny = copy.deepcopy(TINY)
    tiny["split_merge"]["experiment_b"]["window"]["length"] = 3500
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    out = _snakemake(tmp_path, "-n").stdout
    assert re.search(r"split_merge_experiment\s+1\b", out) and re.search(r"split_merge_figures\s+1\b", out), out
    # an unknown key is rejected by the schema
    tiny["split_merge"]["experiment_b"]["window"]["lenght"] = 1
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    bad = _snakemake(tmp_path, "-n")
    assert bad.returncode != 0 and "lenght" in (bad.stdout + bad.stderr)
    # a key of an earlier release names its new place in one line
    tiny["split_merge"]["experiment_b"]["window"].pop("lenght")
    tiny["split_merge"]["simulation"]["warmup_fraction"] = 0.1
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    old = _snakemake(tmp_path, "-n")
    assert old.returncode != 0
    assert (
        "split_merge.simulation.warmup_fraction: this key has moved: split_merge.simulation.window.warmup"
        in old.stdout + old.stderr
    )
    # one more replication per cell: every experiment reruns, simulating only the new replication of each cell
    more = copy.deepcopy(TINY)
    more["split_merge"]["simulation"]["replications"] = 4
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(more))
    before = read_netcdf(res / "experiment_c.nc")
    proc = _snakemake(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = (res / "logs" / "experiment_c.log").read_text()
    assert re.search(r"20 replications simulated, 60 from the cache", log), log
    # ... and the exact values, whose keys hold no run settings, are not recomputed: their jobs do not even run
    assert "split_merge_exact" not in proc.stdout + proc.stderr
    after = read_netcdf(res / "experiment_c.nc")
    np.testing.assert_array_equal(after["rep_mean_latency"].values[..., :3], before["rep_mean_latency"].values)
    _a_changed_run_recomputes_no_exact_value(tmp_path, res, more)


def _a_changed_run_recomputes_no_exact_value(tmp_path, res, cfg):
    """A changed run of experiment (b) reruns its exact-values job, which takes every cell from its cache (their
    content keys are unchanged), and simulates (b) anew; (a) and (c) are not touched."""
    tiny = copy.deepcopy(cfg)
    tiny["split_merge"]["experiment_b"]["window"]["length"] = 3500
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    proc = _snakemake(tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    exact_b = (res / "logs" / "exact_b.log").read_text()
    assert re.search(r"(\d+) cells computed", exact_b).group(1) == "0", exact_b
    assert re.search(r"\d+ replications simulated, 0 from the cache", (res / "logs" / "experiment_b.log").read_text())
    assert "experiment_a" not in proc.stdout + proc.stderr and "exact_c" not in proc.stdout + proc.stderr


def _merged():
    """The default section with the tiny overrides (as Snakemake's --configfile merge does)."""
    out = copy.deepcopy(RAW)
    for k, v in TINY["split_merge"].items():
        out[k] = {**out[k], **v} if isinstance(v, dict) else v
    return validate_config(out, SCHEMA, "split_merge")
