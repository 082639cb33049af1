"""Dask on a real SLURM (no mocks; the cluster of ``bash .ci/slurm/up.sh``), routes 2 and 3 of docs/hpc.md.

* Inside a SLURM job, a local Dask cluster is what SLURM allocated: ``sbatch --cpus-per-task=1 --mem=…`` and the
  pipeline's ``dask_client`` asked for 2 workers (as Snakemake's ``--cores 2`` asks) starts 1 worker process of 1
  thread whose memory limit is the job's memory.
* Route 3: ``workflow/slurm/pipeline.sbatch`` runs the pipeline (the Dask part of ``config/test.yaml``) inside one
  1-CPU allocation, is stopped mid-run as at the end of an allocation and submitted again: its Dask cluster has
  the one allocated CPU, the stopped job is recorded REQUEUED and waits held, released it resumes, and the results
  equal a local run's.
* Route 2: ``cluster: {kind: slurm}``; one of its two worker jobs is ``scancel``\\ ed mid-run: the run says so, a
  replacement worker job is submitted, the run completes with results identical to a local run, and every other
  worker job (the replacement too) ends COMPLETED in ``sacct``: retired, not cancelled.

The helpers, the check behind the ``slurm`` fixture (skip outside CI, fail in CI when SLURM is not up) and the
comparison of result files (data and attributes identical but for timings and the code version) are
tests/workflow/test_slurm.py's.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml
from test_slurm import (
    GUARD_S,
    PARTITION,
    REPO,
    TEST_CONFIG,
    UNTIL_MERGES,
    _assert_same_results,
    _queued,
    _run,
    _sacct,
    _squeue,
    _tail,
    assert_left_only_in_work_folder,
    assert_listeners_on,
    local_dask_part,
    package_files,
    run_env,
    slurm_node,
    worker_jobs,
)

from support.hpc_guide import guide_command

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SBATCH = REPO / "workflow" / "slurm" / "pipeline.sbatch"
UNTIL = UNTIL_MERGES  # the parts Dask runs


@pytest.fixture(scope="module")
def slurm() -> dict:
    """The running cluster's node (test_slurm.py's :func:`slurm_node`); skip/fail if there is none."""
    return slurm_node()


def _env() -> dict:
    """The environment of this test process for a job, with this checkout's package first on PYTHONPATH."""
    src = str(REPO / "src")
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}


def _wait_ended(job_id: str) -> dict:
    """Wait until ``job_id`` has left the queue; its sacct record."""
    t0 = time.monotonic()
    while True:
        recs = _sacct(ids=[job_id])
        if job_id in recs and not _squeue_has(job_id) and recs[job_id]["state"] not in ("PENDING", "RUNNING"):
            return recs[job_id]
        if time.monotonic() - t0 > GUARD_S:
            pytest.fail(f"SLURM job {job_id} did not end (guard against a hung cluster): {recs}")
        time.sleep(1)


def _joined(log_dir: Path) -> bool:
    """Some worker of a SLURM worker job has registered with the scheduler (its log says so)."""
    return any("Registered to" in p.read_text(errors="replace") for p in log_dir.glob("*.err"))


def _records(job_id: str) -> list[str]:
    """Every run's sacct state of ``job_id`` (a requeued job has one record per run: ``sacct -D``)."""
    out = _run("sacct", "-D", "-X", "-n", "-P", "-j", job_id, "-o", "State", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _squeue_has(job_id: str) -> bool:
    return bool(_run("squeue", "-h", "-j", job_id, "-o", "%i", check=False).stdout.strip())


@pytest.fixture(scope="module")
def local_run(shared_run) -> Path:
    """A plain local run of the Dask part of config/test.yaml: the reference of both routes (one per session, shared
    with test_slurm.py: its ``local_dask_part``)."""
    return local_dask_part(shared_run)


def test_local_cluster_in_a_slurm_job_is_what_slurm_allocated(slurm, tmp_path):
    """``sbatch --cpus-per-task=1 --mem=700M``: the pipeline's local cluster, asked for 2 workers, has 1 worker
    process of 1 thread with the job's 700 MiB, though the node has more CPUs and memory (this SLURM does not
    confine jobs: TaskPlugin=task/none, so affinity and cgroups still show the whole machine)."""
    out = tmp_path / "sizes.json"
    code = ("import json, sys\n"
            "from sojourn.core.cluster.cluster import dask_client\n"
            "if __name__ == '__main__':  # the nannies spawn their workers, which import this file\n"
            "    with dask_client({'kind': 'local'}, n_workers=2) as c:\n"
            "        c.wait_for_workers(1, timeout=120)\n"
            "        w = list(c.scheduler_info()['workers'].values())\n"
            "        json.dump({'workers': len(w), 'threads': [x['nthreads'] for x in w],\n"
            "                   'memory': [x['memory_limit'] for x in w]}, open(sys.argv[1], 'w'))\n")
    script = tmp_path / "sizes.py"
    script.write_text(code)
    job = _run("sbatch", "--parsable", "-p", PARTITION, "--cpus-per-task=1", "--mem=700M", "-t", "00:10:00",
               "-o", str(tmp_path / "job-%j.out"), "--wrap", f"{sys.executable} {script} {out}").stdout.strip()
    rec = _wait_ended(job)
    log = "".join(_tail(p, 40) for p in tmp_path.glob("job-*.out"))
    assert rec["state"] == "COMPLETED", (rec, log)
    sizes = json.loads(out.read_text())
    assert slurm["cpus"] >= 2 and slurm["mem_mb"] > 700  # the machine offers more than the job was given
    assert sizes == {"workers": 1, "threads": [1], "memory": [700 * 2**20]}, (sizes, log)


def test_pipeline_in_one_allocation_matches_local_run(slurm, local_run, tmp_path):
    """Route 3: the shipped batch script in a 1-CPU allocation with ``cluster.tls: true``, stopped mid-run the way
    SLURM announces the end of an allocation (SIGUSR1 to the batch shell, as ``--signal=B:USR1@300`` or ``scancel
    --batch --signal=USR1`` send it): the job stops cleanly (no lock left), says it can be resumed and is recorded so
    (sacct: REQUEUED, not FAILED; the job held in the queue); released, it resumes and completes. The Dask cluster of
    each run had the one allocated CPU and the job's memory, every socket the allocation's processes listened on was
    on loopback, the run's TLS files are gone, nothing was left in Dask's default scratch or the package, and the
    results equal a local run's. Submitted once more and signalled after the run's last step, the job is COMPLETED."""
    from support.listeners import ListenerWatch, new_mark

    work = tmp_path / "route3"
    work.mkdir()  # sbatch -o writes there from the job's start
    override = tmp_path / "tls.yaml"
    override.write_text(yaml.safe_dump({"cluster": {"kind": "local", "tls": True}}))
    mark, files = new_mark(), package_files()
    env = run_env(tmp_path, mark)

    # the guide's route-3 command (docs/hpc.md), from the project folder; everything after the script goes to
    # Snakemake; with a --directory, the guide's -o puts the job's log in the work folder
    route3 = guide_command("sbatch workflow/slurm/pipeline.sbatch --configfile config/paper.yaml",
                           {"config/paper.yaml": str(TEST_CONFIG)})
    log_option = guide_command("sbatch -o <work-folder>/sojourn-%j.out",
                               {"<work-folder>/sojourn-%j.out": str(work / "sojourn-%j.out")})
    assert route3[1] == str(SBATCH.relative_to(REPO)), route3

    def submit() -> str:
        return subprocess.run([route3[0], "--parsable", "-p", PARTITION, "--cpus-per-task=1", "--mem=1500M",
                               "-t", "00:30:00", *log_option[1:], *route3[1:], str(override), "--directory",
                               str(work), *UNTIL],
                              cwd=REPO, env={**env, "SOJOURN_PYTHON": sys.executable}, capture_output=True,
                              text=True, check=True).stdout.strip()

    first = submit()
    cache = work / "results" / "jsq_ps" / "cache"
    t0 = time.monotonic()
    with ListenerWatch(mark) as watch:
        while not (cache.is_dir() and any(cache.rglob("*.nc"))):  # cells are being computed
            if not _squeue_has(first) or time.monotonic() - t0 > GUARD_S:
                pytest.fail(f"route-3 job {first} ended or hung before its first cell: "
                            f"{_tail(work / f'sojourn-{first}.out', 60)}")
            time.sleep(0.2)
        watch.scan()
    # the scheduler and its HTTP server, the nanny, the worker and its HTTP server
    assert_listeners_on(watch, {"127.0.0.1"}, at_least=5)
    _run(*guide_command("scancel --batch --signal=USR1 <jobid>", {"<jobid>": first}))
    # the stopped run is recorded as REQUEUED (not FAILED), and the job waits in the queue, held
    t0 = time.monotonic()
    while "REQUEUED" not in (states := _records(first)) or not _squeue_has(first):
        if time.monotonic() - t0 > GUARD_S:
            pytest.fail(f"route-3 job {first} was not requeued held after SIGUSR1: {states}\n"
                        f"{_tail(work / f'sojourn-{first}.out', 60)}")
        time.sleep(0.5)
    assert "FAILED" not in states, states
    held = _run("squeue", "-h", "-j", first, "-o", "%T|%r").stdout.strip()
    assert held.startswith("PENDING|") and "held" in held.lower(), held
    out = (work / f"sojourn-{first}.out").read_text(errors="replace")
    assert "SLURM signalled SIGUSR1" in out and "Snakemake exited with status 1" in out, out[-6000:]
    assert f"stopped, resumable: job {first} is back in the queue, held" in out, out[-6000:]
    assert not list((work / ".snakemake" / "locks").glob("*")), "the stopped run left its lock"
    assert not list((work / ".sojourn").glob("tls/*")), "the stopped run left its TLS files"

    # resumed as the job's message says (and at once: SLURM holds a requeued job back 2 minutes otherwise)
    _run(*guide_command("scontrol release <id>", {"<id>": first}))
    _run(*guide_command("scontrol update JobId=<id> StartTime=now", {"JobId=<id>": f"JobId={first}"}))
    rec = _wait_ended(first)
    out = (work / f"sojourn-{first}.out").read_text(errors="replace")  # both runs: --open-mode=append
    assert rec["state"] == "COMPLETED", (rec, out[-6000:])
    assert "restart 1 of this job" in out and out.rstrip().endswith("Snakemake exited with status 0"), out[-6000:]
    # the pipeline's Dask cluster, as the first job of each run records it: one worker for the one allocated CPU
    sizing = [line for p in sorted((work / "results" / "jsq_ps" / "logs").rglob("*.log"))
              for line in p.read_text().splitlines() if "local Dask cluster:" in line]
    assert sizing, "no job log records the local Dask cluster"
    for line in sizing:
        assert "1 worker process(es) × 1 thread" in line and "SLURM_CPUS_PER_TASK=1" in line, sizing
        assert "SLURM_MEM_PER_NODE=1500" in line and "memory limit 1500 MiB each" in line, sizing
    assert not list((work / ".sojourn").glob("tls/*")), "the run left its TLS files"
    assert_left_only_in_work_folder(env, files)
    assert _assert_same_results(local_run, work) >= 3
    _signalled_after_the_last_step(submit(), work)


def _signalled_after_the_last_step(job: str, work: Path) -> None:
    """The same command once more, the run complete: SIGUSR1 while this job's Snakemake finds nothing to do (a stop
    signal after the run's last step) ends the job COMPLETED, never FAILED or requeued, saying the run had finished
    (issue 35: such a run was recorded FAILED)."""
    log = work / f"sojourn-{job}.out"
    t0 = time.monotonic()
    # the script traps SLURM's signals before it says where it runs: signal it as soon as it has
    while not (log.exists() and "sojourn: SLURM job" in log.read_text(errors="replace")):
        if not _squeue_has(job) or time.monotonic() - t0 > GUARD_S:
            pytest.fail(f"route-3 job {job} ended or hung before it started: {_tail(log, 40)}")
        time.sleep(0.1)
    _run(*guide_command("scancel --batch --signal=USR1 <jobid>", {"<jobid>": job}))
    rec = _wait_ended(job)
    out = log.read_text(errors="replace")
    assert rec["state"] == "COMPLETED" and _records(job) == ["COMPLETED"], (rec, _records(job), out[-3000:])
    assert "SLURM signalled SIGUSR1" in out and "the run had finished when it was signalled" in out, out[-3000:]


def test_route3_time_limit_within_the_signal_lead_is_refused(slurm, tmp_path):
    """``--time=5`` leaves no room for the 5-minute stop signal (``--signal=B:USR1@300``): the job refuses to start the
    run, naming ``--time`` and the least that works, and exits 2 (a usage error), before Snakemake starts."""
    job = subprocess.run(["sbatch", "--parsable", "-p", PARTITION, "--cpus-per-task=1", "--mem=500M", "-t", "5",
                          "-o", str(tmp_path / "job-%j.out"), str(SBATCH), "--configfile", str(TEST_CONFIG),
                          "--directory", str(tmp_path / "work")],
                         cwd=REPO, env=_env(), capture_output=True, text=True, check=True).stdout.strip()
    rec = _wait_ended(job)
    out = (tmp_path / f"job-{job}.out").read_text(errors="replace")
    assert rec["state"] == "FAILED", rec
    assert "sojourn: --time: the job's time limit (5:00) must be longer than the 300 s lead" in out, out
    assert "at least 10 minutes" in out and "Snakemake" not in out and not (tmp_path / "work").exists(), out


def test_route2_worker_cancelled_mid_run_is_replaced(slurm, local_run, tmp_path):
    """Route 2: ``scancel`` of one of the two worker jobs while the run is in its cells: the run says so, a
    replacement job is submitted, the run completes with the local run's results, and every worker job but the
    cancelled one whose worker joined (the replacement too, when it joined in time) ends COMPLETED: the workers
    were retired at close, not cancelled."""
    name = f"sojourn-w-{uuid.uuid4().hex[:8]}"
    cfg = yaml.safe_load(TEST_CONFIG.read_text())
    cfg["cluster"] = {"kind": "slurm", "slurm": {"queue": PARTITION, "jobs": 2, "memory": "1GB",
                                                 "walltime": "00:30:00", "job_name": name,
                                                 "adapt_interval": 1,  # the cancel is noticed before the run ends
                                                 "log_directory": str(tmp_path / "dask-logs")}}
    override = tmp_path / "slurm.yaml"
    override.write_text(yaml.safe_dump(cfg))
    work = tmp_path / "route2"
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--configfile",
           str(TEST_CONFIG), str(override), "--directory", str(work), "--cores", "2", *UNTIL]
    log = tmp_path / "snakemake.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, env=_env())
    try:
        # both worker jobs running and one worker joined (the run is in its cells): cancel the other job, early,
        # so that the run needs its replacement
        t0 = time.monotonic()
        while True:
            jobs = _squeue(name)
            running = sorted((j for j, (state, _) in jobs.items() if state == "RUNNING"), key=int)
            if len(running) == 2 and _joined(tmp_path / "dask-logs"):
                break
            if proc.poll() is not None or time.monotonic() - t0 > GUARD_S:
                pytest.fail(f"the run ended or hung before both workers ran: {jobs}\n{_tail(log, 60)}")
            time.sleep(0.5)
        victim = running[-1]
        _run(*guide_command("scancel <id>", {"<id>": victim}))  # docs/hpc.md: a route-2 worker job
        rc = proc.wait(timeout=GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text(errors="replace")
    assert rc == 0, text[-6000:]
    assert f"Dask worker job {victim}" in text and "a replacement job is submitted" in text, text[-6000:]
    t0 = time.monotonic()
    while _squeue(name) and time.monotonic() - t0 < GUARD_S:  # the last jobs are ending
        time.sleep(0.5)
    recs = worker_jobs(name, [victim])
    assert len(recs) >= 3, recs  # the two jobs and at least one replacement
    assert recs[victim]["state"] == "CANCELLED" and recs[victim]["started"], recs
    # every other worker job that started was retired at close and ended on its own (COMPLETED; a replacement
    # still starting is given its worker's joining first); one the queue had not started when the run ended has
    # nothing to retire and is cancelled there, unstarted
    others = {j: r for j, r in recs.items() if j != victim}
    assert {r["state"] for r in others.values() if r["started"]} == {"COMPLETED"}, recs
    assert {r["state"] for r in others.values() if not r["started"]} <= {"CANCELLED"}, recs
    assert not [j for j in _queued() if j in recs]
    assert _assert_same_results(local_run, work) >= 3


def test_route2_snakemake_killed_its_worker_jobs_end_and_the_run_resumes(slurm, local_run, tmp_path):
    """Route 2's Snakemake killed (SIGKILL: a crash of the login node) while its worker job computes, then recovered
    as docs/hpc.md says, each command taken from the guide: the worker job loses its scheduler and ends by itself
    within ``--death-timeout`` (``squeue --name`` then lists none of the run's, checked before ``scancel --name``,
    which is left nothing to do); the killed run's lock stays until ``snakemake --unlock``; the same command again
    completes with the local run's results."""
    import signal

    name = f"sojourn-k-{uuid.uuid4().hex[:8]}"
    cfg = yaml.safe_load(TEST_CONFIG.read_text())
    cfg["cluster"] = {"kind": "slurm", "slurm": {"queue": PARTITION, "jobs": 1, "memory": "1GB",
                                                 "walltime": "00:30:00", "job_name": name,
                                                 "log_directory": str(tmp_path / "dask-logs")}}
    override = tmp_path / "slurm.yaml"
    override.write_text(yaml.safe_dump(cfg))
    work = tmp_path / "route2"
    snakemake = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--configfile",
                 str(TEST_CONFIG), str(override), "--directory", str(work)]
    log = tmp_path / "killed.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen([*snakemake, "--cores", "2", *UNTIL], cwd=REPO, stdout=fh, stderr=subprocess.STDOUT,
                                env=_env(), start_new_session=True)
    try:
        t0 = time.monotonic()
        while not (_joined(tmp_path / "dask-logs") and any((work / "results" / "jsq_ps").rglob("cache/**/*.nc"))):
            if proc.poll() is not None or time.monotonic() - t0 > GUARD_S:
                pytest.fail(f"the run ended or hung before its worker computed: {_squeue(name)}\n{_tail(log, 60)}")
            time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=GUARD_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _squeue(name), "no worker job of the run was left to end by itself"
    killed = time.monotonic()
    squeue = guide_command("squeue --name sojourn-worker", {"sojourn-worker": name})
    while _run(*squeue, "-h").stdout.strip():
        assert time.monotonic() - killed < 60 + 60, f"worker jobs still queued: {_run(*squeue).stdout}"
        time.sleep(1)
    ended = time.monotonic() - killed
    print(f"the worker job of the killed run ended by itself {ended:.0f} s after the kill")
    _run(*guide_command("scancel --name sojourn-worker", {"sojourn-worker": name}))
    assert not _run(*squeue, "-h").stdout.strip()
    assert list((work / ".snakemake" / "locks").glob("*")), "a killed Snakemake leaves its lock"
    unlock = guide_command("snakemake --unlock")
    _run(*snakemake, *unlock[1:])
    assert not list((work / ".snakemake" / "locks").glob("*")), "snakemake --unlock left the lock"
    again = subprocess.run([*snakemake, "--cores", "2", *UNTIL], cwd=REPO, env=_env(), capture_output=True, text=True)
    assert again.returncode == 0, (again.stdout + again.stderr)[-6000:]
    assert _assert_same_results(local_run, work) >= 3
