"""The blocking of the JSQ-PS grid into Snakemake jobs (``jsq_ps.grid.rho_block``) decides only which cells share a
job: two real Snakemake runs of a tiny grid, one job per cell interval of 0.1 and one job per (law, R), from scratch
in two work folders, give the same merged simulation, approximation and law-approximation files."""
from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from sojourn.core.files.io import read_netcdf

ROOT = Path(__file__).resolve().parents[2]
MERGED = ("simulation.nc", "approximation.nc", "law_approximation.nc")
#: what a run measures rather than computes (seconds of a worker's clock)
MEASURED = {"wall_time", "run_time"}

pytestmark = pytest.mark.slow


def _run(work: Path, rho_block: float) -> Path:
    cfg = copy.deepcopy(yaml.safe_load((ROOT / "config" / "test.yaml").read_text()))
    jsq = cfg["jsq_ps"]
    jsq["grid"].update({"rho": [0.5, 0.55, 0.8], "rho_block": rho_block})  # 0.5 and 0.55 share a block of 0.1
    jsq["mgr"]["rho"] = [0.5, 0.8]
    jsq["approximation"]["methods"] = ["A", "F", "A*", "exact"]
    jsq["figures"]["cdf_cells"] = [{"R": 2, "rho": 0.8}]
    work.mkdir()
    (work / "config.yaml").write_text(yaml.safe_dump(cfg))
    res = work / "results" / "jsq_ps"
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(work),
           "--configfile", str(work / "config.yaml"), "--cores", "2", *(f"results/jsq_ps/{name}" for name in MERGED)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=str(work))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return res


def test_results_do_not_depend_on_the_blocking(tmp_path):
    fine, whole = _run(tmp_path / "fine", 0.1), _run(tmp_path / "whole", 1.0)
    jobs = {w: sorted(p.relative_to(d / "blocks").as_posix() for p in (d / "blocks").rglob("*.nc"))
            for w, d in (("fine", fine), ("whole", whole))}
    assert "simulation/exponential/R~1/rho~0.50-0.60.nc" in jobs["fine"], jobs["fine"]
    assert "simulation/exponential/R~1/rho~0.00-1.00.nc" in jobs["whole"], jobs["whole"]
    assert len(jobs["whole"]) < len(jobs["fine"])
    for name in MERGED:
        a, b = read_netcdf(fine / name), read_netcdf(whole / name)
        assert sorted(a.data_vars) == sorted(b.data_vars) and a.sizes == b.sizes, name
        for coord in a.coords:
            np.testing.assert_array_equal(a[coord].values, b[coord].values, err_msg=f"{name}: {coord}")
        compared = [v for v in a.data_vars if v not in MEASURED]
        assert len(compared) >= 3, (name, compared)
        for var in compared:
            np.testing.assert_array_equal(a[var].values, b[var].values, err_msg=f"{name}: {var}")
