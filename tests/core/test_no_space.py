"""A full device, for real: a small tmpfs mounted for the test (root only), nearly filled. A CLI ``--output`` and a
pipeline results root on it fail with one line, "no space left on device: <path>" (it used to surface as
`NetCDF: HDF error` or a PermissionError on the temporary file), and leave no partial file behind."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from sojourn.cli import main
from sojourn.core.files.integrity import NoSpace
from sojourn.core.files.io import write_netcdf

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def full_disk(tmp_path):
    """A 4 MB tmpfs with about ``free`` bytes left (call it with the free space wanted); unmounted afterwards."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / f"full-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {proc.stderr.strip()}")

    def fill(free: int) -> Path:
        st = os.statvfs(mnt)
        with open(mnt / "filler", "wb") as fh:
            fh.write(b"\0" * max(0, st.f_bavail * st.f_frsize - free))
        return mnt

    try:
        yield fill
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _left(mnt: Path) -> list[str]:
    return sorted(p.name for p in mnt.rglob("*") if p.name != "filler" and p.is_file())


def test_write_netcdf_on_a_full_device_raises_one_line_and_leaves_nothing(full_disk):
    mnt = full_disk(64 * 1024)
    ds = xr.Dataset({"x": ("a", np.random.default_rng(0).random(200_000))})  # 1.6 MB, incompressible
    with pytest.raises(NoSpace) as err:
        write_netcdf(ds, mnt / "out.nc")
    assert str(err.value) == f"no space left on device: {mnt / 'out.nc'}"
    assert _left(mnt) == []
    write_netcdf(xr.Dataset({"x": ("a", np.arange(10))}), mnt / "small.nc")  # what fits is still written


@pytest.mark.parametrize("argv", [
    ["simulate", "-R", "2", "--load", "0.5", "--replications", "2", "--horizon", "2000"],
    ["restart", "simulate", "--model", "example2", "--replications", "2", "--horizon", "2000"],
])
def test_cli_output_on_a_full_device_is_one_line(full_disk, capsys, argv):
    mnt = full_disk(4 * 1024)
    out = mnt / "sub" / "o.nc"
    assert main(argv + ["-o", str(out), "--mkdir"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    command = " ".join(argv[:2] if argv[0] == "restart" else argv[:1])  # a group's command by its full name
    assert err == [f"sojourn {command}: error: no space left on device: {out}"], err
    assert _left(mnt) == []


@pytest.mark.slow
def test_pipeline_results_root_on_a_full_device(full_disk, tmp_path):
    """The results root of a real Snakemake run on the nearly full tmpfs: the run fails, the failing job says
    "no space left on device: <its file>" in one line, and no HDF error or PermissionError is shown."""
    import yaml

    mnt = full_disk(96 * 1024)  # room for logs and a few small files, not for the results
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["results"] = str(mnt / "results")
    cfg["jsq_ps"]["simulation"]["window"]["length"] = 20_000  # blocks of ~0.1-1 MB each
    cfg["jsq_ps"]["approximation"]["methods"] = ["A"]
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    work = tmp_path / "work"
    work.mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-s",
            str(ROOT / "Snakefile"),
            "--directory",
            str(work),
            f"{mnt}/results/jsq_ps/simulation.nc",
            "--cores",
            "2",
            "--configfile",
            str(tmp_path / "cfg.yaml"),
        ],
        capture_output=True,
        text=True,
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    lines = [line for line in out.splitlines() if "no space left on device: " + str(mnt) in line]
    assert lines, out[-4000:]
    assert "HDF error" not in out and "PermissionError" not in out, out[-4000:]
    logs = [p for p in (mnt / "results").rglob("*.log") if "no space left on device" in p.read_text(errors="replace")]
    for log in logs:  # the job's own log, where it could still be written, holds the line, not a traceback
        assert "Traceback" not in log.read_text(), log.read_text()
    assert not [p for p in (mnt / "results").rglob("*.tmp")], "a partial file was left behind"
