"""HPC submission against a real SLURM cluster (no mocks).

.ci/run starts a single-node SLURM with accounting (munge, MariaDB, slurmdbd, slurmctld, slurmd) via
``bash .ci/slurm/up.sh`` before the test suite; by hand, run that script once (as root) and stop the
daemons with ``bash .ci/slurm/down.sh``.

* dask-jobqueue: a ``SLURMCluster`` whose workers are SLURM batch jobs runs replications of an
  M/M/2-JSQ-PS model; the results are bit-identical to the same replications run in this process, and
  ``squeue``/``sacct`` show that the workers were SLURM jobs and that the work ran inside them. The
  same through the pipeline's ``sojourn.core.cluster.cluster.dask_client({"kind": "slurm", ...})``.
* Snakemake: the guide's ``snakemake --workflow-profile workflow/profiles/slurm --configfile …`` (docs/hpc.md,
  route 1; tests/support/hpc_guide.py takes the commands from the guide) on the test config's cell blocks and their
  merge (one SLURM group job): ``scancel`` of the running job ends the run within a minute of sacct reporting
  it, naming the SLURM job, its rules and its state; the same command again completes, every SLURM job
  COMPLETED with the time limit, CPUs and memory workflow/slurm/size_jobs.py plans, with the same simulation and
  approximation results as a local run.

Outside CI these tests skip (with the reason) when SLURM is not installed or the cluster is not up. In
CI (``CI=true``, or ``SOJOURN_REQUIRE_SLURM=1`` as .ci/run exports) they fail instead, so a broken SLURM
set-up cannot silently turn the HPC tests into skips.
Waits below poll job *states*; the only bounds are generous guards against a hung cluster.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from support.hpc_guide import guide_command

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]
PARTITION = "debug"
# In CI (CI=true, or SOJOURN_REQUIRE_SLURM=1 as exported by .ci/run) a missing cluster is a failure.
REQUIRED = (os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
            or os.environ.get("SOJOURN_REQUIRE_SLURM") == "1")
# Guards against a hung cluster (not performance limits): give up waiting after this many seconds.
GUARD_S = 600


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, check=check)


def _unavailable(reason: str):
    if REQUIRED:
        pytest.fail(
            f"{reason}. In CI (CI=true / SOJOURN_REQUIRE_SLURM=1) the SLURM tests must run: .ci/run "
            "starts the cluster with `bash .ci/slurm/up.sh`, so this means the SLURM set-up is broken.",
            pytrace=False,
        )
    pytest.skip(f"{reason} (start it with `bash .ci/slurm/up.sh` as root)")


@pytest.fixture(scope="module")
def slurm() -> dict:
    """The running cluster's node (:func:`slurm_node`)."""
    return slurm_node()


def slurm_node() -> dict:
    """The running cluster's node (name, CPUs, memory in MiB); skip/fail if there is none."""
    if shutil.which("sinfo") is None:
        _unavailable("SLURM is not installed (no `sinfo` on PATH)")
    p = _run("sinfo", "-h", "-p", PARTITION, "-o", "%N|%T|%c|%m", check=False)
    if p.returncode != 0:
        _unavailable(f"SLURM controller not reachable: `sinfo` failed: {p.stderr.strip()}")
    rows = [line.split("|") for line in p.stdout.split() if line.count("|") == 3]
    usable = [r for r in rows if re.match(r"(idle|mixed|allocated|completing)", r[1])]
    if not usable:
        _unavailable(f"SLURM cluster not up: partition {PARTITION!r} has no usable node (sinfo: {p.stdout.strip()!r})")
    acct = _run("sacct", "-n", "-X", "-o", "JobID", check=False)
    if acct.returncode != 0:
        _unavailable(f"SLURM accounting not available: `sacct` failed: {acct.stderr.strip()}")
    node, _state, cpus, mem = usable[0]
    return {"node": node, "cpus": int(cpus), "mem_mb": int(re.sub(r"\D", "", mem))}


def _squeue(name: str) -> dict[str, tuple[str, str]]:
    """Jobs named ``name`` still known to slurmctld: job id -> (state, reason)."""
    out = _run("squeue", "-h", "-n", name, "-o", "%i|%T|%r").stdout
    return {i: (s, r) for i, s, r in (line.split("|") for line in out.split())}


def _sacct(*, ids=(), name=None) -> dict[str, dict]:
    """Accounting records (allocations only): job id -> {name, partition, state}."""
    cmd = ["sacct", "-n", "-X", "-P", "-S", "now-1days", "-o", "JobID,JobName%200,Partition,State"]
    if ids:
        cmd += ["-j", ",".join(ids)]
    if name:
        cmd += ["--name", name]
    recs = {}
    for line in _run(*cmd).stdout.splitlines():
        jid, jname, part, state = line.split("|")
        recs[jid] = {"name": jname, "partition": part, "state": state.split()[0]}
    return recs


def _tail(path: Path, n: int = 30) -> str:
    try:
        return "".join(path.read_text(errors="replace").splitlines(keepends=True)[-n:])
    except OSError:
        return ""


def worker_jobs(name: str, expect=()) -> dict[str, dict]:
    """Every SLURM job named ``name``, once none is pending or running and sacct knows each of ``expect`` (slurmdbd
    learns of a job some time after slurmctld): job id -> {"state": the first word of sacct's
    State, "started": whether SLURM ever started it}. Started means given a node (its batch script then runs: sacct
    lists a ``<id>.batch`` step); a job cancelled while it waited in the queue has neither (NodeList "None
    assigned", no step). Start is no test of it: SLURM 22.05 records a queued job's cancel time as its Start (CI,
    issue 35: worker job 298, never allocated by slurmctld, NodeList "None assigned", Start = its cancel time)."""
    # -E: sacct lists a job by its eligible time, which may lie ahead (sbatch --begin)
    cmd = ["sacct", "-n", "-P", "-S", "now-1days", "-E", "now+1days", "--name", name, "-o", "JobID,State,NodeList"]
    t0 = time.monotonic()
    while True:
        jobs: dict[str, dict] = {}
        steps: dict[str, set[str]] = {}
        for line in _run(*cmd).stdout.splitlines():
            jid, state, nodes = line.split("|")
            job, _, step = jid.partition(".")
            if step:
                steps.setdefault(job, set()).add(step)
            else:
                jobs[jid] = {"state": state.split()[0], "nodes": nodes}
        done = all(j["state"] not in ("PENDING", "RUNNING") for j in jobs.values()) and set(expect) <= set(jobs)
        if done or time.monotonic() - t0 > GUARD_S:
            break
        time.sleep(0.5)
    for jid, rec in jobs.items():  # a node allocated counts as started even if it was killed before its script
        rec["started"] = rec["nodes"] != "None assigned" or "batch" in steps.get(jid, set())
    return jobs


def assert_worker_jobs_ended_cleanly(name: str, expect=()) -> dict[str, dict]:
    """A run's SLURM worker jobs as a user must find them after a successful run: every job that started ended on
    its own (COMPLETED: its workers were retired), none was killed while working; a job still waiting in the queue
    when the run ended is cancelled there (CANCELLED, never started). Returns :func:`worker_jobs`."""
    jobs = worker_jobs(name, expect)
    assert jobs, f"no worker job named {name} in sacct"
    started = {j: r["state"] for j, r in jobs.items() if r["started"]}
    queued = {j: r["state"] for j, r in jobs.items() if not r["started"]}
    assert started and set(started.values()) == {"COMPLETED"}, jobs
    assert set(queued.values()) <= {"CANCELLED"}, jobs
    return jobs


# --------------------------------------------------------------------------------------------------
# (a) dask-jobqueue SLURMCluster
# --------------------------------------------------------------------------------------------------
N_REP, SEED, HORIZON, WARMUP = 4, 20261129, 2_000.0, 200.0


def _simulate_api():
    """The simulation API (imported, not skipped: a renamed API must fail these tests, not skip them)."""
    from sojourn.jsq_ps import simulate as api

    return api


def _mm2_jsq_ps():
    import sojourn

    return sojourn.mm_jsq_ps(2, 0.7)  # M/M/2-JSQ-PS at load 0.7, mean service 1


def _squeue_ids(ids) -> dict[str, tuple[str, str]]:
    """Jobs among ``ids`` still known to slurmctld: job id -> (state, reason)."""
    if not ids:
        return {}
    out = _run("squeue", "-h", "-j", ",".join(ids), "-o", "%i|%T|%r", check=False).stdout
    return {i: (s, r) for i, s, r in (line.split("|") for line in out.split())}


def _queued() -> set[str]:
    """Ids of every job slurmctld still knows (pending or running)."""
    return set(_run("squeue", "-h", "-o", "%i", check=False).stdout.split())


def _cluster_job_ids(cluster) -> set[str]:
    """SLURM job ids of a dask-jobqueue cluster's submitted worker jobs."""
    return {str(j.job_id) for j in cluster.workers.values() if getattr(j, "job_id", None)}


def _wait_for_workers(client, n: int, log_dir: Path | None, *, job_name=None, cluster=None) -> None:
    """Wait until ``n`` workers joined; fail with the job logs if a worker job ends without joining."""
    t0 = time.monotonic()
    seen: set[str] = set()
    while len(client.scheduler_info()["workers"]) < n:
        if job_name:
            jobs = _squeue(job_name)
        else:
            seen |= _cluster_job_ids(cluster)
            jobs = _squeue_ids(sorted(seen))
        seen |= set(jobs)
        gone = [j for j in seen if j not in jobs or jobs[j][0] not in ("PENDING", "CONFIGURING", "RUNNING")]
        if gone or time.monotonic() - t0 > GUARD_S:
            logs = "\n".join(f"--- {p.name}\n{_tail(p)}" for p in sorted(log_dir.glob("*"))) if log_dir else ""
            pytest.fail(
                f"{n} dask workers did not join (joined: {len(client.scheduler_info()['workers'])}; "
                f"worker jobs {jobs}, ended: {gone}); sacct: {_sacct(ids=sorted(seen)) if seen else {}}\n{logs}"
            )
        time.sleep(0.5)


def test_dask_slurmcluster_replications_bit_identical_to_local(slurm, tmp_path):
    api = _simulate_api()
    import xarray as xr
    from dask_jobqueue import SLURMCluster
    from distributed import Client

    spec = _mm2_jsq_ps()
    job_name = f"sojourn-dask-{uuid.uuid4().hex[:8]}"
    log_dir = tmp_path / "dask-logs"
    n_jobs = min(2, slurm["cpus"])  # two 1-core worker jobs (one on a 1-CPU node)
    memory_mb = min(2000, slurm["mem_mb"] // 2)  # per worker job, below the node's RealMemory

    cluster = SLURMCluster(
        cores=1,
        processes=1,
        memory=f"{memory_mb}MB",
        queue=PARTITION,
        walltime="00:30:00",
        job_name=job_name,
        python=sys.executable,
        scheduler_options={"host": "127.0.0.1", "dashboard_address": ":0"},
        local_directory=str(tmp_path / "dask-worker-space"),
        log_directory=str(log_dir),
    )
    try:
        script = cluster.job_script()
        assert f"#SBATCH -p {PARTITION}" in script and sys.executable in script
        with Client(cluster, set_as_default=False) as client:
            cluster.scale(jobs=n_jobs)
            _wait_for_workers(client, n_jobs, log_dir, job_name=job_name)

            # Each worker is a process inside a SLURM job: map worker address -> job id / partition.
            job_of = client.run(os.getenv, "SLURM_JOB_ID")
            part_of = client.run(os.getenv, "SLURM_JOB_PARTITION")
            queued = _squeue(job_name)
            assert len(set(job_of.values())) == n_jobs, job_of
            assert set(job_of.values()) == set(queued), (job_of, queued)
            assert all(state == "RUNNING" for state, _ in queued.values()), queued
            assert set(part_of.values()) == {PARTITION}, part_of

            futures = client.map(
                api.simulate_replication, [spec] * N_REP, list(range(N_REP)), [SEED] * N_REP,
                horizon=HORIZON, warmup=WARMUP, pure=False,
            )
            remote = client.gather(futures)
            # Where the results were computed: every replication inside one of the two SLURM jobs.
            who = client.who_has(futures)
            ran_in = {job_of[addr] for f in futures for addr in who[f.key]}
            assert ran_in and ran_in <= set(queued), (ran_in, queued)
    finally:
        cluster.close()

    # The worker jobs are in the accounting database under our job name, in partition debug.
    t0 = time.monotonic()
    while True:
        recs = _sacct(name=job_name)
        if set(queued) <= set(recs) or time.monotonic() - t0 > GUARD_S:
            break
        time.sleep(0.5)
    assert set(queued) <= set(recs), (queued, recs)
    assert all(recs[j]["partition"] == PARTITION and recs[j]["name"] == job_name for j in queued), recs

    # Bit-identical to the same replications computed here (but for wall_time and the code version).
    local = [api.simulate_replication(spec, k, SEED, horizon=HORIZON, warmup=WARMUP) for k in range(N_REP)]
    for k in range(N_REP):
        assert int(remote[k].replication.values[0]) == k
        xr.testing.assert_identical(
            _normalise(remote[k]), _normalise(local[k])
        )


def test_pipeline_dask_client_kind_slurm_runs_replications_in_slurm_jobs(slurm, tmp_path):
    """The pipeline's ``cluster: {kind: slurm}`` (sojourn.core.cluster.cluster.dask_client) on the real cluster."""
    api = _simulate_api()
    import xarray as xr

    from sojourn.core.cluster.cluster import dask_client

    spec = _mm2_jsq_ps()
    n_jobs = min(2, slurm["cpus"])
    cfg = {"kind": "slurm", "slurm": {"queue": PARTITION, "cores": 1, "processes": 1, "jobs": n_jobs,
                                      "memory": f"{min(2000, slurm['mem_mb'] // 2)}MB", "walltime": "00:30:00",
                                      "log_directory": str(tmp_path / "dask-logs")}}  # not slurm-N.out in cwd
    with dask_client(cfg) as client:
        cluster = client.cluster
        _wait_for_workers(client, n_jobs, tmp_path / "dask-logs", cluster=cluster)
        ids = _cluster_job_ids(cluster)
        job_of = client.run(os.getenv, "SLURM_JOB_ID")
        assert set(job_of.values()) == ids and len(ids) == n_jobs, (job_of, ids)
        # the workers run with sojourn's malloc settings, not the nanny's MALLOC_TRIM_THRESHOLD_=65536
        from sojourn.core.cluster.cluster import SLURM_MALLOC_ENV

        for name, value in SLURM_MALLOC_ENV.items():
            assert set(client.run(os.getenv, name).values()) == {value}, name
        futures = client.map(api.simulate_replication, [spec] * 2, [0, 1], [SEED] * 2,
                             horizon=HORIZON, warmup=WARMUP, pure=False)
        remote = client.gather(futures)
        who = client.who_has(futures)
        assert {job_of[a] for f in futures for a in who[f.key]} <= ids
    # dask_client closed the cluster: its worker jobs are gone from the queue, and recorded by sacct.
    t0 = time.monotonic()
    while _squeue_ids(sorted(ids)) and time.monotonic() - t0 < GUARD_S:
        time.sleep(0.5)
    assert not _squeue_ids(sorted(ids))
    assert ids <= set(_sacct(ids=sorted(ids)))
    for k in range(2):
        local = api.simulate_replication(spec, k, SEED, horizon=HORIZON, warmup=WARMUP)
        xr.testing.assert_identical(_normalise(remote[k]), _normalise(local))


def test_worker_job_still_queued_when_the_run_ends_is_cancelled_unstarted(slurm, tmp_path):
    """A route-2 worker job the queue has not started when the cluster closes (as in CI, where another test's jobs
    held the node's CPUs) has no worker to retire: it is cancelled in the queue, and ``sacct`` shows it never
    started (no node, no batch step), which :func:`assert_worker_jobs_ended_cleanly` tells from a job killed while
    working. Here the job may not start for an hour (``--begin``; a job of every CPU of the node would also hold up
    the other tests' jobs)."""
    from sojourn.core.cluster.cluster import dask_client

    name = f"sojourn-q-{uuid.uuid4().hex[:8]}"
    cfg = {"kind": "slurm", "slurm": {"queue": PARTITION, "cores": 1, "processes": 1, "jobs": 1, "memory": "500MB",
                                      "walltime": "00:30:00", "job_name": name, "adapt_interval": 1,
                                      "job_extra_directives": ["--begin=now+3600"],
                                      "log_directory": str(tmp_path / "dask-logs")}}
    t0 = time.monotonic()
    with dask_client(cfg):
        while not _squeue(name):
            assert time.monotonic() - t0 < GUARD_S, "the worker job was never submitted"
            time.sleep(0.2)
        (jid, (state, reason)), = _squeue(name).items()
        assert state == "PENDING" and reason == "BeginTime", (jid, state, reason)
    assert not _squeue(name), "the queued worker job outlived the cluster"
    jobs = worker_jobs(name, [jid])
    assert jobs == {jid: {"state": "CANCELLED", "nodes": "None assigned", "started": False}}, jobs


# --------------------------------------------------------------------------------------------------
# (b) Snakemake SLURM executor
# --------------------------------------------------------------------------------------------------
PROFILE = REPO / "workflow" / "profiles" / "slurm"
TEST_CONFIG = REPO / "config" / "test.yaml"


def _fit_resources(profile: dict, cpus: int, mem_mb: int) -> list[str]:
    """CLI overrides that shrink the profile's per-job requests to this node, if any exceed it.

    The profile is sized for a real cluster; a request beyond the node's CPUs/RealMemory would never be
    scheduled here. Nothing is overridden when everything fits (as on the 2-core test machine).
    """

    def fit(res: dict) -> tuple[dict, bool]:
        out, changed = dict(res), False
        if "mem_mb" in out and int(out["mem_mb"]) > mem_mb:
            out["mem_mb"], changed = mem_mb, True
        if "cpus_per_task" in out and int(out["cpus_per_task"]) > cpus:
            out["cpus_per_task"], changed = cpus, True
        return out, changed

    args = []
    default, changed = fit(profile.get("default-resources") or {})
    if changed:
        args += ["--default-resources", *(f"{k}={v}" for k, v in default.items())]
    rules = {r: fit(res) for r, res in (profile.get("set-resources") or {}).items()}
    if any(changed for _, changed in rules.values()):
        args += ["--set-resources", *(f"{r}:{k}={v}" for r, (res, _) in rules.items() for k, v in res.items())]
    group, changed = fit(profile.get("resources") or {})  # the width of a group job
    if changed:
        args += ["--resources", *(f"{k}={v}" for k, v in group.items())]
    return args


def _size_jobs():
    """workflow/slurm/size_jobs.py (route 1's sizes and plan), as tests/workflow/test_slurm_profile.py loads it."""
    from test_slurm_profile import sj

    return sj


def _minutes(limit: str) -> int:
    """sacct's Timelimit ([D-]HH:MM:SS) in minutes."""
    days, _, rest = limit.rpartition("-")
    h, m, s = (int(x) for x in rest.split(":"))
    return (int(days) if days else 0) * 1440 + h * 60 + m + (1 if s else 0)


def _assert_sized_as_planned(work: Path, args, targets, job_id: str) -> None:
    """The SLURM job's time limit, CPUs and memory are what workflow/slurm/size_jobs.py plans from the dry run of the
    same command: its replica of Snakemake's group sizing, by which the paper config's limits are checked without a
    cluster (tests/workflow/test_slurm_profile.py)."""
    sj = _size_jobs()
    dry = _snakemake(work, *args, "-n", "--forcerun", *targets)
    planned = sj.parse_dry_run(dry.stdout + dry.stderr)
    assert len(planned) == 1, [j.group for j in planned]
    asked = _run("sacct", "-n", "-X", "-P", "-j", job_id, "-o", "Timelimit,ReqCPUS,ReqMem").stdout.strip().split("|")
    members = planned[0].members
    width = sj.profile_resources(PROFILE)
    width.update(kv.split("=", 1) for kv in _after(args, "--resources"))  # as fitted to this node, if it was
    assert _minutes(asked[0]) == sj.group_limit(members, width), (asked, width, [m.resources for m in members])
    cpus, mem = sj.group_size(members, width)
    assert (int(asked[1]), asked[2]) == (cpus, f"{mem}M"), (asked, width)


def _assert_job_figures(job_id: str) -> None:
    """The guide's look at a finished job's own figures (docs/hpc.md, "Sizing"): elapsed and CPU time, and the batch
    step's MaxRSS, which SLURM samples every JobAcctGatherFrequency seconds (none for a shorter job)."""
    figures = _run(*guide_command("sacct -j <jobid> -o JobID,Elapsed,TotalCPU,MaxRSS", {"<jobid>": job_id})).stdout
    batch = [line.split() for line in figures.splitlines() if line.startswith(f"{job_id}.batch")]
    assert batch and re.fullmatch(r"[\d:.-]+", batch[0][1]) and re.fullmatch(r"[\d:.-]+", batch[0][2]), figures
    every = re.search(r"^JobAcctGatherFrequency\s*=\s*(?:task=)?(\d+)", _run("scontrol", "show", "config").stdout, re.M)
    days, _, hms = batch[0][1].rpartition("-")
    elapsed = int(days or 0) * 86400 + sum(int(x) * 60 ** i for i, x in enumerate(reversed(hms.split(":"))))
    if elapsed > 2 * int(every.group(1) if every else 30):
        assert len(batch[0]) == 4 and re.fullmatch(r"\d+(\.\d+)?[KMG]?", batch[0][3]), figures


def _after(args, option: str) -> list[str]:
    """The values of ``option`` in an argument list (up to the next option)."""
    args = list(args)
    if option not in args:
        return []
    out = []
    for a in args[args.index(option) + 1:]:
        if a.startswith("-"):
            break
        out.append(a)
    return out


def _nc_files(root: Path) -> list[Path]:
    """Result files (netCDF) under ``root``/results, relative to ``root``, without the replication cache."""
    files = (p.relative_to(root) for p in (root / "results").rglob("*.nc"))
    return sorted(p for p in files if "cache" not in p.parts)


def _normalise(ds):
    """Drop what records the run rather than the result: timings and the code version.

    ``wall_time`` and ``run_time`` are measurements; ``git_commit`` and the code hash/key inside ``pipeline_config``
    record the source tree when the file was written (they only differ if the tree changes between
    the two runs, e.g. while developing). Everything else, data and attributes, must be identical.
    """
    import json

    ds = ds.drop_vars(["wall_time", "run_time"], errors="ignore")
    ds.attrs.pop("git_commit", None)
    if isinstance(ds.attrs.get("pipeline_config"), str):
        try:
            cfg = json.loads(ds.attrs["pipeline_config"])
        except ValueError:
            cfg = None
        if isinstance(cfg, dict):
            cfg.pop("code", None)
            cfg.pop("key", None)
            ds.attrs["pipeline_config"] = json.dumps(cfg, sort_keys=True)
    return ds


def _assert_same_results(a_root: Path, b_root: Path, only=None) -> int:
    """Every result file of ``b_root`` (or the ``only`` ones) equals ``a_root``'s, but for measurements."""
    import xarray as xr

    a_files, b_files = _nc_files(a_root), _nc_files(b_root)
    if only is not None:
        b_files = sorted(Path(t) for t in only)
        a_files = [f for f in a_files if f in b_files]
    assert a_files and a_files == b_files, (a_files, b_files)
    for rel in a_files:
        with xr.open_dataset(a_root / rel) as a, xr.open_dataset(b_root / rel) as b:
            a, b = _normalise(a.load()), _normalise(b.load())
            try:
                xr.testing.assert_identical(a, b)
            except AssertionError as exc:
                raise AssertionError(f"{rel}: SLURM and local results differ\n{exc}") from None
    return len(a_files)


def _snakemake(workdir: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
           "--configfile", str(TEST_CONFIG), "--directory", str(workdir), *args]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env)
    out = p.stdout + p.stderr
    (workdir.parent / f"{workdir.name}.log").write_text(out)
    if p.returncode != 0:
        slurm_logs = "\n".join(
            f"--- {q}\n{_tail(q)}" for q in sorted((workdir / ".snakemake" / "slurm_logs").rglob("*.log"))
        )
        pytest.fail(f"snakemake failed (exit {p.returncode}): {' '.join(cmd)}\n{out[-6000:]}\n{slurm_logs}")
    return p


#: the parts of the pipeline Dask runs: every cell block and the two merges
UNTIL_MERGES = ("--until", "jsq_ps_merge_simulation", "jsq_ps_merge_approximation")


def local_dask_part(shared_run) -> Path:
    """A plain local run of the Dask part of the test config: the results every SLURM route must equal. The same
    command for each of them (here and in test_slurm_dask.py), so one run per test session serves them all
    (tests/conftest.py's ``shared_run``); read only."""
    return shared_run("test-yaml-until-merges",
                      lambda folder: _snakemake(folder / "local", "--cores", "2", *UNTIL_MERGES)) / "local"


def _snakemake_cmd(workdir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
            "--configfile", str(TEST_CONFIG), "--directory", str(workdir), *args]


def run_env(tmp_path: Path, mark: str) -> dict:
    """The environment of a run under test: its processes marked (tests/support/listeners.py; SLURM jobs inherit
    it) and a private system temp folder, where Dask's default scratch would appear (``dask-scratch-space``)."""
    from support.listeners import MARK

    systmp = tmp_path / "systmp"
    systmp.mkdir(exist_ok=True)
    src = str(REPO / "src")
    return {**os.environ, MARK: mark, "TMPDIR": str(systmp),
            "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}


def package_files() -> dict[str, float]:
    """The installed package's files but its source and Python's byte code (any import of a writable install writes
    that): path -> mtime. numba's cache files (``*.nbi``, ``*.nbc``) used to land here."""
    import sojourn

    pkg = Path(sojourn.__file__).parent
    return {str(q): q.stat().st_mtime for q in pkg.rglob("*") if q.is_file() and q.suffix not in (".pyc", ".py")}


def assert_left_only_in_work_folder(env: dict, before: dict[str, float]) -> None:
    """After a run: nothing in the system temp folder's ``dask-scratch-space``, nothing written into the package."""
    systmp = Path(env["TMPDIR"])
    assert not (systmp / "dask-scratch-space").exists(), sorted(systmp.rglob("*"))[:20]
    after = package_files()
    assert {q: m for q, m in after.items() if before.get(q) != m} == {}, "the run wrote into the installed package"


def assert_listeners_on(watch, allowed: set[str], at_least: int) -> None:
    """Every socket the run's processes listened on is on an allowed address, and the watch saw the run's Dask."""
    assert len(watch.seen) >= at_least, f"the watch saw too few listeners of the run: {sorted(watch.seen)}"
    assert not watch.outside(allowed), f"listeners outside {allowed}: {watch.outside(allowed)}"


#: the tests' status checks: every 10 s rather than the profile's 30 (tests/workflow/test_slurm_profile.py checks
#: that), so that a job's end is seen sooner on the CI's short jobs; nothing else depends on it
FAST_CHECKS = ("--seconds-between-status-checks", "10")
#: the issue's bound: once sacct reports a job cancelled, the run ends within this many seconds
CANCEL_TO_EXIT_S = 60


def _cancel_once_computing(proc, workdir: Path, log: Path) -> tuple[str, float]:
    """Wait until the run's SLURM job is running and Snakemake inside it has started a block (its log exists),
    then ``scancel`` it. Returns the job id and the time sacct first reported it cancelled."""
    logs = workdir / "results" / "jsq_ps" / "logs"
    t0, job = time.monotonic(), None
    while True:
        if proc.poll() is not None:
            pytest.fail(f"snakemake ended (exit {proc.returncode}) before its SLURM job could be cancelled:\n"
                        f"{_tail(log, 40)}")
        if time.monotonic() - t0 > GUARD_S:
            pytest.fail(f"no SLURM job of the run started computing within {GUARD_S} s (job {job})")
        if job is None:
            m = re.search(r"submitted with SLURM jobid (\d+)", log.read_text(errors="replace"))
            job = m.group(1) if m else None
        elif _squeue_ids([job]).get(job, ("",))[0] == "RUNNING" and any(logs.rglob("*.log")):
            break
        time.sleep(0.2)
    _run(*guide_command("scancel <jobid>", {"<jobid>": job}))
    while True:
        state = _sacct(ids=[job]).get(job, {}).get("state")
        if state == "CANCELLED":
            return job, time.monotonic()
        if time.monotonic() - t0 > GUARD_S:
            pytest.fail(f"sacct never reported SLURM job {job} cancelled (state {state})")
        time.sleep(0.2)


def _rerun_watched(hpc: Path, args, tmp_path: Path) -> str:
    """Route 1 run again, watched: every socket the run's processes (the group job's Snakemake and its local Dask
    cluster) listen on is on loopback; the run leaves nothing in Dask's default scratch or the installed package;
    the account guess prints no "sacct: invalid option"; the profile's ``precommand`` hook runs in the job before
    its Snakemake (docs/hpc.md, "Installing on a cluster"). Returns the run's output."""
    from support.listeners import ListenerWatch, new_mark

    mark, files = new_mark(), package_files()
    env = run_env(tmp_path, mark)
    with ListenerWatch(mark) as watch:
        p = _snakemake(hpc, *args, "--precommand", "echo sojourn-precommand-ran", env=env)
    out = p.stdout + p.stderr
    assert_listeners_on(watch, {"127.0.0.1"}, at_least=5)  # scheduler + HTTP, 2 × (nanny, worker + HTTP)
    assert_left_only_in_work_folder(env, files)
    assert "invalid option" not in out, out[-3000:]
    logs = [q.read_text(errors="replace") for q in (hpc / ".snakemake" / "slurm_logs").rglob("*.log")]
    assert any("sojourn-precommand-ran" in text for text in logs), "the precommand did not run in the SLURM job"
    return out


def test_snakemake_slurm_executor_scancel_ends_the_run_and_a_rerun_matches_local(slurm, shared_run, tmp_path):
    """The executor route the way an operator meets it (workflow/profiles/slurm as shipped): the test config's
    cell blocks travel in one SLURM group job; ``scancel`` of it while it computes ends the run with an error
    naming the SLURM job, its rules and the state, within a minute of sacct reporting it (the plugin used to
    poll "CANCELLED by 0" forever); the same command again completes, every SLURM job COMPLETED, and the
    results equal a local run's."""
    _simulate_api()
    import yaml

    root = yaml.safe_load(TEST_CONFIG.read_text())["results"]
    profile = yaml.safe_load((PROFILE / "profile.yaml").read_text()) or {}
    assert profile.get("executor") == "slurm"
    merged = [f"{root}/jsq_ps/simulation.nc", f"{root}/jsq_ps/approximation.nc"]

    # Local run of the distributed part of the pipeline: every simulation and approximation block, their merges
    local, hpc = local_dask_part(shared_run), tmp_path / "slurm"
    blocks = [str(p) for p in _nc_files(local) if str(p) not in merged]
    assert any("/simulation/" in b for b in blocks) and any("/approximation/" in b for b in blocks), blocks
    # every cell block and the merges: one SLURM job (the profile's JSQ-PS group: the blocks, then the merges)
    group = profile["groups"]["jsq_ps_simulate"]
    assert profile["groups"]["jsq_ps_merge_simulation"] == group
    targets = [*blocks, *merged]
    # the guide's command (docs/hpc.md, route 1) on the test config, targets first (the options that follow take
    # lists), the test's faster status checks, the profile's requests fitted to this node where they exceed it
    route1 = guide_command("snakemake --workflow-profile workflow/profiles/slurm --configfile config/paper.yaml",
                           {"config/paper.yaml": str(TEST_CONFIG)})
    args = (*targets, *route1[1:], *FAST_CHECKS, *_fit_resources(profile, slurm["cpus"], slurm["mem_mb"]))

    # 1. scancel of the running job ends the run, non-zero, naming the job, its rules and the state. This run's
    # group job asks for 1 CPU: Snakemake inside it must take 1 core, not the node's (it said "Provided cores:
    # 2" where SLURM does not bind jobs to their CPUs, as here: TaskPlugin=task/none)
    one_cpu = _fit_resources(profile, 1, min(4000, slurm["mem_mb"]))
    cmd = _snakemake_cmd(hpc, *args, *one_cpu)
    log_path = tmp_path / "cancelled.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            job, reported = _cancel_once_computing(proc, hpc, log_path)
            while proc.poll() is None and time.monotonic() - reported < GUARD_S:
                time.sleep(0.2)
            waited = time.monotonic() - reported
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    out = log_path.read_text(errors="replace")
    print(f"SLURM job {job} cancelled: the run exited {waited:.1f} s after sacct reported it (exit {proc.returncode})")
    assert proc.returncode not in (0, None), out[-4000:]
    assert waited <= CANCEL_TO_EXIT_S, f"the run ended {waited:.0f} s after sacct reported job {job} cancelled"
    named = [line for line in out.splitlines() if f"SLURM job {job} " in line and "CANCELLED" in line]
    assert named, out[-4000:]
    assert f"group {group}" in named[0] and "rule jsq_ps_simulate" in named[0], named[0]
    cancelled_log = sorted((hpc / ".snakemake" / "slurm_logs").rglob(f"{job}.log"))
    assert cancelled_log and re.search(r"^Provided cores: 1\b", cancelled_log[0].read_text(errors="replace"), re.M), \
        cancelled_log

    # 2. the same command again completes; its SLURM jobs all COMPLETED, in partition debug
    out = _rerun_watched(hpc, args, tmp_path)
    job_ids = re.findall(r"submitted with SLURM jobid (\d+)", out)
    assert len(job_ids) == 1, job_ids  # the cell blocks and their merge: one group job
    recs = _sacct(ids=job_ids)
    assert set(recs) == set(job_ids), (job_ids, recs)
    assert {r["state"] for r in recs.values()} == {"COMPLETED"}, recs
    assert {r["partition"] for r in recs.values()} == {PARTITION}, recs
    # the group ran its jobs as threads of one Snakemake on the job's CPUs (not one srun'd Snakemake per job)
    slurm_logs = sorted((hpc / ".snakemake" / "slurm_logs").rglob(f"{job_ids[0]}.log"))
    assert slurm_logs, job_ids
    inner = slurm_logs[0].read_text(errors="replace")
    assert "--force-use-threads" in inner and "slurm-jobstep" not in inner, inner[:3000]
    cpus = min(int(profile["resources"]["cpus_per_task"]), slurm["cpus"])
    assert re.search(rf"^Provided cores: {cpus}\b", inner, re.M), inner[:3000]

    _assert_sized_as_planned(hpc, args, targets, job_ids[0])
    _assert_job_figures(job_ids[0])

    for t in targets:
        assert (hpc / t).is_file(), t
    n = _assert_same_results(local, hpc, only=targets)
    assert n >= len(targets)


def test_snakemake_with_cluster_kind_slurm_matches_local_run(slurm, shared_run, tmp_path):
    """`cluster: {kind: slurm, tls: true}` taken the way a user takes it: a whole Snakemake run of the test config
    whose replications and approximation cells run on dask-jobqueue SLURM worker jobs (Snakemake's job threads share
    one SLURMCluster), over TLS, against a plain local run: identical results. While it runs, every socket its
    processes (Snakemake's scheduler, the worker jobs' nannies and workers) listen on is on loopback (this
    single-node cluster's address; Dask's defaults bound the workers and the scheduler's dashboard to 0.0.0.0 and
    [::]); the worker jobs' logs are in the work folder's .sojourn/slurm-logs, without a traceback at their clean
    retirement; the run leaves nothing in Dask's default scratch or the package, and no TLS file."""
    import yaml

    from support.listeners import ListenerWatch, new_mark

    cfg = yaml.safe_load(TEST_CONFIG.read_text())
    name = f"sojourn-w-{uuid.uuid4().hex[:8]}"
    cfg["cluster"] = {"kind": "slurm", "tls": True,
                      "slurm": {"queue": PARTITION, "cores": 1, "processes": 1, "jobs": 2,
                                "memory": f"{min(2000, slurm['mem_mb'] // 2)}MB",
                                "walltime": "00:30:00", "job_name": name}}
    override = tmp_path / "slurm.yaml"
    override.write_text(yaml.safe_dump(cfg))
    local, hpc = local_dask_part(shared_run), tmp_path / "dask-slurm"
    before, files = _queued(), package_files()
    mark = new_mark()
    env = run_env(tmp_path, mark)
    with ListenerWatch(mark) as watch:
        # the guide's route-2 command (docs/hpc.md), the site file being this cluster's
        route2 = guide_command("snakemake --cores 4 --configfile my-site.yaml", {"my-site.yaml": str(override)})
        p = _snakemake(hpc, *route2[1:], *UNTIL_MERGES, env=env)
    out = p.stdout + p.stderr
    assert "signal only works in main thread" not in out
    # scheduler + its HTTP server; per worker job a nanny, a worker and its HTTP server
    assert_listeners_on(watch, {"127.0.0.1"}, at_least=5)
    logs = sorted((hpc / ".sojourn" / "slurm-logs").glob("*"))
    assert logs, "no SLURM worker job wrote a log in the work folder: the replications did not run on SLURM"
    text = "".join(q.read_text(errors="replace") for q in logs)
    assert "tls://127.0.0.1:" in text and "Registered to" in text, text[-3000:]
    assert "died unexpectedly" not in text and "Traceback" not in text, text[-6000:]
    # the worker jobs were SLURM jobs, recorded by sacct, and are gone from the queue after the run
    t0 = time.monotonic()
    while (_queued() - before) and time.monotonic() - t0 < GUARD_S:
        time.sleep(0.5)
    assert not _queued() - before
    # every worker job that ran ended on its own (retired at close): COMPLETED, not "CANCELLED by 0"; a job the
    # queue had not started yet when the run ended (the node's other CPU busy) is cancelled unstarted
    assert_worker_jobs_ended_cleanly(name, {m.group(1) for q in logs if (m := re.search(r"-(\d+)\.\w+$", q.name))})
    assert not list((hpc / ".sojourn").glob("tls/*")), "the run's TLS files outlived it"
    assert_left_only_in_work_folder(env, files)
    n = _assert_same_results(local, hpc)
    assert n >= 3


def test_sighup_to_snakemake_on_route_1_leaves_no_slurm_job_running(slurm, tmp_path):
    """A lost login session (SIGHUP to the Snakemake of route 1) is handled as SIGTERM: no new SLURM job is submitted,
    the running one is waited for, and Snakemake exits with its lock removed; afterwards ``squeue`` holds no job of
    the run (Snakemake used to die at once, exit 129, leaving its lock and the SLURM job running as an orphan). The
    account guess prints no "sacct: invalid option" (the plugin's shell pipe without a shell)."""
    import signal

    import yaml

    # a copy of the profile made as the guide says (docs/hpc.md, "Profile keys to edit"): it runs as is
    mysite = tmp_path / "mysite"
    _run(*guide_command("cp -r workflow/profiles/slurm workflow/profiles/mysite",
                        {"workflow/profiles/mysite": str(mysite)}))
    profile = yaml.safe_load((mysite / "profile.yaml").read_text()) or {}
    assert profile == yaml.safe_load((PROFILE / "profile.yaml").read_text())
    work = tmp_path / "hpc"
    # two cell blocks, one per SLURM job (group-components 1): SIGHUP while the first runs; the second must never start
    dry = subprocess.run(_snakemake_cmd(work, "-n", "--until", "jsq_ps_simulate"), cwd=REPO, capture_output=True,
                         text=True)
    out = dry.stdout + dry.stderr
    blocks = sorted(set(re.findall(r"output: (\S+/simulation/\S+\.nc)", out)))[:2]
    assert len(blocks) == 2, out[-3000:]
    cmd = _snakemake_cmd(work, *blocks, "--executor", "slurm", "--workflow-profile", str(mysite), *FAST_CHECKS,
                         "--group-components", f"{profile['groups']['jsq_ps_simulate']}=1", "--jobs", "1",
                         *_fit_resources(profile, slurm["cpus"], slurm["mem_mb"]))
    log_path = tmp_path / "sighup.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True,
                                # a login session's Snakemake: hangups not ignored even if this test runs under nohup
                                # (a process started with SIGHUP ignored keeps ignoring it, as nohup intends)
                                preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
        try:
            t0, job = time.monotonic(), None
            while job is None or _squeue_ids([job]).get(job, ("",))[0] != "RUNNING":
                if proc.poll() is not None or time.monotonic() - t0 > GUARD_S:
                    pytest.fail(f"the run ended or hung before its SLURM job ran:\n{_tail(log_path, 40)}")
                m = re.search(r"submitted with SLURM jobid (\d+)", log_path.read_text(errors="replace"))
                job = m.group(1) if m else None
                time.sleep(0.3)
            proc.send_signal(signal.SIGHUP)
            rc = proc.wait(timeout=GUARD_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = log_path.read_text(errors="replace")
    assert rc != -signal.SIGHUP and rc != 129, f"Snakemake died of SIGHUP (exit {rc}):\n{text[-3000:]}"
    ids = re.findall(r"submitted with SLURM jobid (\d+)", text)
    assert ids == [job], (ids, text[-3000:])  # nothing submitted after the signal
    assert not _squeue_ids(ids), f"SLURM jobs of the run still queued or running: {_squeue_ids(ids)}"
    assert not list((work / ".snakemake" / "locks").glob("*")), "the run left its lock"
    assert "invalid option" not in text, text[-3000:]
