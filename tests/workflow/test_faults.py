"""Faults met through real Snakemake, as a user or an operator would cause them: a run interrupted by SIGINT
(Ctrl-C), SIGTERM or SIGKILL of its whole process group, then rerun; result files damaged at the block, cache
and merged levels, then rerun. After each, the rerun redoes exactly what was not finished and the data equal
an undisturbed run of the same config bit for bit.

The config is config/test.yaml with a third ρ (14 cell jobs: 13 and the M/G/R law method's block; JSQ-PS only) and
the target is comparison.nc (the figures and the reproduction tables, slow to draw and not part of the data, are left
out). The signal is sent once the run's output shows a cell job finished (two for SIGKILL) and one running."""
from __future__ import annotations

import base64
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import netCDF4
import numpy as np
import pytest
import xarray as xr
import yaml

from sojourn.core.files import integrity
from sojourn.core.files.io import read_netcdf

ROOT = Path(__file__).resolve().parents[2]
TARGET = "results/jsq_ps/comparison.nc"
RES = Path("results") / "jsq_ps"
CELL_RULES = ("jsq_ps_simulate", "jsq_ps_approximate", "jsq_ps_approximate_laws")
MERGED = ("simulation.nc", "approximation.nc", "comparison.nc")
MEASUREMENTS = ("wall_time", "run_time")  # times, not data
#: bounds that only turn a hang into a failure (not speed checks): a signalled run must end, its processes go
HANG = 600

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def setup(tmp_path_factory, frozen_package):
    """The session's frozen copy of the package (others may edit src/ meanwhile; tests/conftest.py) and the override
    file: a third ρ, so that R ∈ {1, 2} × ρ ∈ {0.3, 0.5, 0.8} gives 13 cell jobs, and the law method one."""
    base = tmp_path_factory.mktemp("faults")
    cfg = base / "faults.yaml"
    cfg.write_text(yaml.safe_dump({"jsq_ps": {"grid": {"R": [1, 2], "rho": [0.3, 0.5, 0.8]}}}))
    return {"env": {**os.environ, "PYTHONPATH": str(frozen_package)}, "cfg": cfg}


def command(setup, work, *args):
    # --logger-sojourn-jobs: every job on the terminal (the default shows a summary), read live by run_and_signal
    return [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(work), TARGET,
            "--cores", "2", "--logger-sojourn-jobs", *args, "--configfile", str(ROOT / "config" / "test.yaml"),
            str(setup["cfg"])]


def snakemake(setup, work, *args):
    return subprocess.run(command(setup, work, *args), capture_output=True, text=True, env=setup["env"], cwd=work)


def started_jobs(out: str) -> dict[str, tuple[str, str]]:
    """{jobid: (rule, first output)} of the jobs a Snakemake run's output says it started."""
    jobs, rule, fields = {}, None, {}
    for line in out.splitlines():
        m = re.fullmatch(r"(?:local)?rule (\w+):", line)
        if m:
            rule, fields = m.group(1), {}
            continue
        m = re.fullmatch(r"\s+(\w+): (.*)", line)
        if rule and m:
            fields[m.group(1)] = m.group(2)
            if m.group(1) == "jobid":
                jobs[m.group(2)] = (rule, fields.get("output", "").split(",")[0].strip())
            continue
        rule = None
    return jobs


def finished_jobs(out: str) -> set[str]:
    return set(re.findall(r"^Finished jobid: (\d+)", out, re.M))


def cell_outputs(work) -> set[str]:
    return {str(p.relative_to(work)) for p in (Path(work) / RES / "blocks").rglob("*.nc")}


def incomplete(work) -> set[str]:
    """Outputs Snakemake marked incomplete (.snakemake/incomplete/<urlsafe base64 of the path>): a job that
    was running when Snakemake died."""
    folder = Path(work) / ".snakemake" / "incomplete"
    return {base64.urlsafe_b64decode(p.name).decode() for p in folder.iterdir()} if folder.is_dir() else set()


def assert_same_data(work, ref):
    for name in MERGED:
        new, old = read_netcdf(Path(work) / RES / name), read_netcdf(Path(ref) / RES / name)
        assert set(new.data_vars) == set(old.data_vars), name
        for var in old.data_vars:
            if var not in MEASUREMENTS:
                xr.testing.assert_identical(new[var], old[var])


@pytest.fixture(scope="module")
def reference(setup, tmp_path_factory):
    """One undisturbed run of the config: the data every faulty run must end with, and its cell outputs."""
    work = tmp_path_factory.mktemp("reference")
    proc = snakemake(setup, work)
    assert proc.returncode == 0, proc.stderr[-4000:]
    cells = cell_outputs(work)
    assert len(cells) == 14 and len(started_jobs(proc.stdout + proc.stderr)) == 18
    return work, cells


def run_and_signal(setup, work, sig, finished=1) -> tuple[subprocess.Popen, str, dict, set]:
    """Start Snakemake in a process group of its own; once ``finished`` cell jobs have finished and one is
    running, send ``sig`` to the whole group (as Ctrl-C in a terminal, a batch system or `kill -9 -PGID`
    would), or call ``sig(proc)`` if it is a function; wait for the run to end and every process of the
    group (Dask workers too) to be gone. Returns the process, its output and the jobs started/finished
    when the signal was sent."""

    def default_signals():  # whatever the test runner ignores, the run gets the defaults a shell gives
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    proc = subprocess.Popen(command(setup, work), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=setup["env"], cwd=work, start_new_session=True, preexec_fn=default_signals)
    lines: list[str] = []
    ready = threading.Event()

    def read():
        for line in proc.stdout:
            lines.append(line)
            if not ready.is_set():
                out = "".join(lines)
                jobs = {j: r for j, (r, _) in started_jobs(out).items() if r in CELL_RULES}
                done = finished_jobs(out) & jobs.keys()
                if len(done) >= finished and jobs.keys() - done:
                    ready.set()
        ready.set()  # the run ended before: the test fails below

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(HANG), "no cell job finished"
        assert proc.poll() is None, "the run ended before a cell job was running:\n" + "".join(lines)[-3000:]
        at_signal = "".join(lines)
        if callable(sig):
            sig(proc)
            sig = signal.SIGKILL  # for the messages below
        else:
            os.killpg(proc.pid, sig)
        try:
            proc.wait(HANG)
        except subprocess.TimeoutExpired:
            pytest.fail(f"Snakemake still running {HANG} s after {sig.name}:\n" + "".join(lines)[-3000:])
        reader.join(60)
        for _ in range(HANG):
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(1)
        else:
            pytest.fail(f"processes of the run (Dask workers?) still alive {HANG} s after {sig.name}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    jobs = started_jobs(at_signal)
    return proc, "".join(lines), jobs, finished_jobs(at_signal) & jobs.keys()


def rerun_redoes_only_the_unfinished(setup, work, ref, cells, out):
    """A plain rerun: it runs the cell jobs whose outputs are missing or marked incomplete and no other;
    the finished ones stay untouched (same inode and mtime); the data equal the undisturbed run's."""
    done = cell_outputs(work) - incomplete(work)
    todo = cells - done
    assert done and todo, (done, todo)  # the interruption left some cell jobs done and some not
    finished_before = {o for j, (r, o) in started_jobs(out).items() if r in CELL_RULES and j in finished_jobs(out)}
    assert finished_before - incomplete(work) <= done, finished_before - done  # said finished: it is there
    stamps = {p: ((work / p).stat().st_ino, (work / p).stat().st_mtime_ns) for p in done}
    proc = snakemake(setup, work)
    assert proc.returncode == 0, proc.stderr[-4000:]
    rerun = {o for r, o in started_jobs(proc.stdout + proc.stderr).values() if r in CELL_RULES}
    assert rerun == todo, (sorted(rerun - todo), sorted(todo - rerun))
    assert {p: ((work / p).stat().st_ino, (work / p).stat().st_mtime_ns) for p in done} == stamps
    assert_same_data(work, ref)
    return proc


def dask_workers(pid) -> list:
    """The Dask worker processes of a Snakemake process: spawned children (not multiprocessing's tracker)."""
    import psutil

    out = []
    for c in psutil.Process(pid).children(recursive=True):
        try:
            cmd = " ".join(c.cmdline())
        except (psutil.ZombieProcess, psutil.NoSuchProcess):  # a worker killed a moment ago, not yet reaped
            continue
        if "spawn_main" in cmd and "resource_tracker" not in cmd:
            out.append(c)
    return out


def test_killed_workers_are_replaced_and_the_data_do_not_change(setup, reference, tmp_path):
    """SIGKILL to every Dask worker of a run while a cell job runs: the nannies start new workers, the lost
    tasks are retried, the run completes, and its data equal the undisturbed run's."""
    ref, cells = reference
    killed = []

    def kill_workers(proc):
        for w in dask_workers(proc.pid):
            w.kill()
            killed.append(w.pid)

    proc, out, jobs, done = run_and_signal(setup, tmp_path, kill_workers)
    assert killed, "no Dask worker found"
    assert proc.returncode == 0, out[-4000:]
    assert {o for r, o in started_jobs(out).values() if r in CELL_RULES} == cells  # one run did everything
    assert_same_data(tmp_path, ref)


def test_sigint_then_a_plain_rerun(setup, reference, tmp_path):
    """Ctrl-C: the cell jobs stop waiting for their Dask tasks (the workers ignore SIGINT, the Snakemake
    process handles it), nothing new starts, the run ends and takes its workers with it."""
    ref, cells = reference
    proc, out, jobs, done = run_and_signal(setup, tmp_path, signal.SIGINT)
    assert proc.returncode != 0
    assert "interrupted (SIGINT)" in out or "Terminating processes on user request" in out, out[-3000:]
    assert "Traceback" not in out, out[-3000:]  # no worker died of the interrupt
    rerun_redoes_only_the_unfinished(setup, tmp_path, ref, cells, out)


def test_sigterm_then_a_plain_rerun(setup, reference, tmp_path):
    """SIGTERM (e.g. a batch system stopping the run): Snakemake finishes the running jobs — their workers,
    killed by the signal, are restarted by their nannies and the tasks retried — and starts no new one."""
    ref, cells = reference
    proc, out, jobs, done = run_and_signal(setup, tmp_path, signal.SIGTERM)
    assert proc.returncode != 0
    assert "Will exit after finishing currently running jobs" in out, out[-3000:]
    assert "Error in rule" not in out, out[-3000:]
    running = jobs.keys() - done
    assert running <= finished_jobs(out), out[-3000:]  # the jobs running at the signal were finished
    rerun_redoes_only_the_unfinished(setup, tmp_path, ref, cells, out)


def test_sigkill_of_the_process_group_then_unlock_and_rerun(setup, reference, tmp_path):
    """SIGKILL of everything: the folder stays locked, a rerun is refused with Snakemake's lock message;
    `snakemake --unlock`, then the same command: outputs of the killed jobs are redone (the profile's
    rerun-incomplete) and the data equal the undisturbed run's."""
    ref, cells = reference
    proc, out, jobs, done = run_and_signal(setup, tmp_path, signal.SIGKILL, finished=2)
    assert proc.returncode == -signal.SIGKILL
    refused = snakemake(setup, tmp_path)
    assert refused.returncode != 0
    msg = refused.stdout + refused.stderr
    assert "Directory cannot be locked" in msg and "--unlock" in msg, msg[-3000:]
    assert started_jobs(msg) == {}
    unlock = snakemake(setup, tmp_path, "--unlock")
    assert unlock.returncode == 0 and "Unlocked" in unlock.stdout + unlock.stderr
    # a job killed after its output was renamed into place but before Snakemake recorded it: the file is
    # there and marked incomplete (a window of microseconds, made certain here for one finished block)
    victim = sorted(cell_outputs(tmp_path) - incomplete(tmp_path))[0]
    (tmp_path / ".snakemake" / "incomplete").mkdir(exist_ok=True)
    (tmp_path / ".snakemake" / "incomplete" / base64.urlsafe_b64encode(victim.encode()).decode()).touch()
    rerun_redoes_only_the_unfinished(setup, tmp_path, ref, cells, out)


def damage(path, how):
    """truncated, garbage (random bytes of the same length) or altered: still a readable netCDF file with one
    value of its first numeric data variable changed in place."""
    if how == "truncated":
        os.truncate(path, path.stat().st_size // 3)
    elif how == "garbage":
        path.write_bytes(np.random.default_rng(1).bytes(path.stat().st_size))
    elif how == "altered":
        with netCDF4.Dataset(path, "a") as nc:
            var = next(v for v in nc.variables.values()
                       if v.dimensions and getattr(v.dtype, "kind", "S") in "iuf" and v.name not in nc.dimensions)
            idx = (0,) * var.ndim
            var[idx] = var[idx] + 1
        read_netcdf(path)  # still readable
    else:
        raise ValueError(how)


def test_damaged_blocks_cache_entries_and_merged_files_are_rebuilt(setup, reference, tmp_path):
    """Three simulation blocks damaged (truncated / garbage / altered) together with their cache entries
    (garbage / altered / truncated), and the merged files (simulation.nc truncated, approximation.nc
    altered, comparison.nc garbage): a plain run reports the six result files, moves them aside, rebuilds
    the three blocks — recomputing their cells, since their cache entries are reported and not used — and
    the merged files, and nothing else; the data equal the undisturbed run's. (tests/workflow/test_pipeline.py covers
    the other kind at each level: a truncated block, garbage in simulation.nc, an altered comparison.nc.)"""
    ref, cells = reference
    work = tmp_path / "work"
    shutil.copytree(ref, work, symlinks=True)
    blocks = sorted(c for c in cells if "/simulation/exponential/" in c)[:3]
    cases = list(zip(blocks, ("truncated", "garbage", "altered"), ("garbage", "altered", "truncated"), strict=True))
    for block, how_block, how_cache in cases:
        entries = list((work / block.replace("/blocks/", "/cache/")[: -len(".nc")]).glob("*.nc"))
        assert len(entries) == 1, entries
        damage(work / block, how_block)
        damage(entries[0], how_cache)
    for name, how in zip(MERGED, ("truncated", "altered", "garbage"), strict=True):
        damage(work / RES / name, how)
    proc = snakemake(setup, work)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout + proc.stderr
    assert out.count("sojourn: damaged result") == 6, out[-4000:]
    rules = sorted(r for r, _ in started_jobs(out).values())
    assert rules == sorted(["jsq_ps_simulate"] * 3 + ["jsq_ps_merge_simulation", "jsq_ps_merge_approximation",
                                                        "jsq_ps_compare"]), rules
    for block, _, _ in cases:
        log = (work / block.replace("/blocks/simulation/", "/logs/simulate/")).with_suffix(".log").read_text()
        assert re.search(r"cache entry \S+ not used \(sha256 .* differs", log), log
        assert re.search(r": .*0 replications cached, 2 to simulate", log), log  # recomputed, not reused
        assert (work / (block + ".damaged")).is_file()
    for p in [*(work / c for c in cells), *(work / RES / n for n in MERGED), *(work / RES / "cache").rglob("*.nc")]:
        assert integrity.check(p) == "ok", p
    assert_same_data(work, ref)


def test_result_files_without_their_checksum_are_read_and_rebuilt_or_sealed(setup, reference, tmp_path):
    """A truncated block whose sidecar was deleted, with the merge to be redone (simulation.nc removed): it used to
    pass the startup scan, then every run failed in the merge with `NetCDF: HDF error`. Now the scan reads it,
    moves it aside and the run rebuilds it; an intact block and an intact merged file without their sidecars are
    read, sealed anew and not rebuilt; the data equal the undisturbed run's."""
    ref, cells = reference
    work = tmp_path / "work"
    shutil.copytree(ref, work, symlinks=True)
    damaged, intact = sorted(c for c in cells if "/simulation/exponential/" in c)[:2]
    damage(work / damaged, "truncated")  # its cache entry is the same file: truncated too, its sidecar says so
    for name in (damaged, intact, str(RES / "approximation.nc")):
        integrity.sidecar(work / name).unlink()
    integrity.discard(work / RES / "simulation.nc")  # the merge is to be redone
    stamp = (work / intact).stat().st_ino, (work / intact).stat().st_mtime_ns
    cmd = command(setup, work)
    cmd.insert(cmd.index(TARGET) + 1, str(RES / "simulation.nc"))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=setup["env"], cwd=work)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout + proc.stderr
    assert re.search(rf"sojourn: damaged result \S*{re.escape(damaged)} \(unreadable without a checksum", out), \
        out[-4000:]
    assert out.count("sojourn: damaged result") == 1, out[-4000:]
    assert out.count("had no checksum; it reads in full and is sealed anew") == 2, out[-4000:]
    jobs = started_jobs(out).values()
    assert [o for r, o in jobs if r in CELL_RULES] == [damaged], out[-4000:]  # the damaged block only
    assert "jsq_ps_merge_simulation" in {r for r, _ in jobs}
    assert (work / (damaged + ".damaged")).is_file()
    assert ((work / intact).stat().st_ino, (work / intact).stat().st_mtime_ns) == stamp
    for p in [*(work / c for c in cells), *(work / RES / n for n in MERGED)]:
        assert integrity.check(p) == "ok", p
    assert_same_data(work, ref)


# -- issue 32: damaged files end repaired or clearly stopped. The copies below keep the hard links between the
# blocks and their cache entries (`cp -a`), as a results folder has them: damaging a block damages its entry.
def linked_copy(ref, work):
    subprocess.run(["cp", "-a", str(ref), str(work)], check=True)
    return work


def cache_entries_of(work, block) -> list[Path]:
    st = (work / block).stat()
    return [p for p in (work / RES / "cache").rglob("*.nc") if p.stat().st_ino == st.st_ino]


def test_damaged_blocks_under_intact_merged_files_are_rebuilt_with_their_cache_entries(setup, reference, tmp_path):
    """Two blocks damaged (truncated, altered; sidecars kept), the merged files intact: the run used to report them
    "moved aside …; it will be rebuilt" and then say "Nothing to be done" on every rerun, their hard-linked cache
    entries left with sidecars that did not match. Now the run rebuilds both (their cells recomputed: the cache
    entries had the same damaged bytes), the files made from them with them; every block is again one sealed file
    under two names; the next run has nothing to do; the data equal the undisturbed run's."""
    ref, cells = reference
    work = linked_copy(ref, tmp_path / "work")
    blocks = sorted(c for c in cells if "/simulation/exponential/" in c)[:2]
    for block in blocks:
        assert len(cache_entries_of(work, block)) == 1
    damage(work / blocks[0], "truncated")
    damage(work / blocks[1], "altered")
    proc = snakemake(setup, work)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert out.count("sojourn: damaged result") == 2, out[-4000:]
    assert "result file(s) made from damaged results" in out, out[-4000:]
    assert sorted(o for r, o in started_jobs(out).values() if r in CELL_RULES) == blocks, out[-4000:]
    for block in blocks:
        log = (work / block.replace("/blocks/simulation/", "/logs/simulate/")).with_suffix(".log").read_text()
        assert re.search(r": .*0 replications cached, 2 to simulate", log), log  # recomputed, not reused
        (entry,) = cache_entries_of(work, block)  # one entry, a hard link of the rebuilt block
        assert integrity.check(work / block) == "ok" and integrity.check(entry) == "ok"
    for p in [*(work / c for c in cells), *(work / RES / n for n in MERGED), *(work / RES / "cache").rglob("*.nc")]:
        assert integrity.check(p) == "ok", p
    assert_same_data(work, ref)
    again = snakemake(setup, work)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stderr[-3000:]


def alter_coordinate(path):
    """A bit flip the file survives: the exponent's top bit of the block's first rho (0.5 -> 8.99e+307); returns
    (before, after)."""
    with netCDF4.Dataset(path, "a") as nc:
        rho = nc.variables["rho"]
        before = float(rho[0])
        value = np.frombuffer(np.float64(before).tobytes(), np.uint64)[0] ^ np.uint64(1 << 62)
        rho[0] = after = float(np.frombuffer(value.tobytes(), np.float64)[0])
    assert integrity.readable(path) == "ok"
    return before, after


def test_a_block_altered_without_its_checksum_is_rebuilt_never_a_traceback_later(setup, reference, tmp_path):
    """A block whose rho was altered (a readable bit flip) and whose sidecar was deleted, with simulation.nc removed:
    it used to be "sealed anew", then every run failed with a KeyError in the comparison. Its cache entry (the same
    bytes, its checksum kept) tells the change: the run reports it damaged and rebuilds it, with no error."""
    ref, cells = reference
    work = linked_copy(ref, tmp_path / "work")
    block = min(c for c in cells if "/simulation/exponential/" in c)
    alter_coordinate(work / block)
    integrity.sidecar(work / block).unlink()
    integrity.discard(work / RES / "simulation.nc")
    proc = snakemake(setup, work)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert re.search(rf"sojourn: damaged result \S*{re.escape(block)} \(its cache entry \S+ shares its bytes and does "
                     r"not match its checksum", out), out[-4000:]
    assert "sealed anew" not in out and "Error" not in out, out[-4000:]
    assert [o for r, o in started_jobs(out).values() if r in CELL_RULES] == [block], out[-4000:]
    assert_same_data(work, ref)


def test_a_block_altered_without_any_checksum_is_named_at_the_merge_then_rebuilt(setup, reference, tmp_path):
    """The same, with its cache entry's sidecar deleted too (nothing to compare with): the block reads in full and is
    sealed anew, and the merge finds it does not hold the cells its job wrote — one line naming it, the block set
    aside — and the next plain run rebuilds it and what was made from it; the data equal the undisturbed run's."""
    ref, cells = reference
    work = linked_copy(ref, tmp_path / "work")
    block = min(c for c in cells if "/simulation/exponential/" in c)
    before, after = alter_coordinate(work / block)
    for p in (work / block, *cache_entries_of(work, block)):
        integrity.sidecar(p).unlink()
    integrity.discard(work / RES / "simulation.nc")
    first = snakemake(setup, work)
    out = first.stdout + first.stderr
    assert first.returncode != 0, out[-4000:]
    line = (f"{block} holds rho = {after:g} where its job wrote {before:g}: damaged, although it reads in full (its "
            f"checksum was missing); moved aside to {Path(block).name}.damaged with its cache entry: "
            "rerun to rebuild it")
    assert line in out, out[-4000:]
    assert "KeyError" not in out, out[-4000:]
    log = (work / RES / "logs" / "merge_simulation.log").read_text()
    assert log.strip().splitlines()[-1] == line and "Traceback" not in log, log
    assert not (work / block).exists() and (work / (block + ".damaged")).is_file()
    second = snakemake(setup, work)
    out = second.stdout + second.stderr
    assert second.returncode == 0, out[-4000:]
    assert [o for r, o in started_jobs(out).values() if r in CELL_RULES] == [block], out[-4000:]
    assert_same_data(work, ref)
    third = snakemake(setup, work)
    assert "Nothing to be done" in third.stdout + third.stderr, third.stderr[-3000:]


def read_only(folder):
    """Make ``folder`` read-only for this process: chmod for a user, the immutable attribute for root (whom
    permissions do not stop); returns the undo, or None where neither works."""
    if os.geteuid() != 0:
        mode = folder.stat().st_mode
        folder.chmod(mode & ~0o222)
        return lambda: folder.chmod(mode)
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False).returncode != 0:
        return None
    return lambda: subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_damaged_block_in_a_read_only_folder_stops_the_run_in_one_line(setup, reference, tmp_path):
    """The scan cannot move the damaged block aside: the run used to end with an OSError and three frames of
    integrity.scan. Now it stops before any job with one line that names the file and says what to do, leaves the
    folder as it was, and once the folder is writable again a plain run repairs it."""
    ref, cells = reference
    work = linked_copy(ref, tmp_path / "work")
    block = min(c for c in cells if "/simulation/exponential/" in c)
    damage(work / block, "altered")
    undo = read_only((work / block).parent)
    if undo is None:
        pytest.skip("cannot make a folder read-only here")
    try:
        before = sorted(os.listdir((work / block).parent))
        proc = snakemake(setup, work)
        err = proc.stderr
        assert proc.returncode == 1, err[-3000:]
        lines = [x for x in err.splitlines() if "sojourn:" in x or "Error" in x or "File \"" in x]
        assert len(lines) == 1, err[-3000:]
        assert re.fullmatch(rf"sojourn: error: damaged result {re.escape(block)} \(sha256 .* differs from the recorded "
                            rf".*\) could not be moved aside to {re.escape(Path(block).name)}\.damaged: .*; make "
                            rf"{re.escape(str(Path(block).parent))} writable, or remove {re.escape(Path(block).name)} "
                            r"and its \S+\.sha256 yourself, then rerun", lines[0]), lines[0]
        assert started_jobs(proc.stdout + err) == {}
        assert sorted(os.listdir((work / block).parent)) == before
    finally:
        undo()
    proc = snakemake(setup, work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_same_data(work, ref)
