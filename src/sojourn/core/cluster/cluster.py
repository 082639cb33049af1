"""Dask clients from the pipeline's ``cluster:`` config section.

``cluster.kind`` chooses where the replications run:

``local`` (default)
    a :class:`distributed.LocalCluster` with one single-threaded worker *process* per CPU this process
    may use (``processes=True``, ``threads_per_worker=1``), bound to 127.0.0.1, no dashboard. Inside a
    SLURM job that is what SLURM allocated (:func:`allocation`): workers × threads = the allocated CPUs,
    and the workers' memory limits add up to the job's memory;
``address``
    an existing scheduler, ``cluster.address: tcp://host:8786``;
``scheduler_file``
    an existing scheduler that wrote ``cluster.scheduler_file`` (``dask scheduler --scheduler-file …``);
``slurm``
    a dask-jobqueue ``SLURMCluster``: workers are SLURM batch jobs (``cluster.slurm`` holds the
    ``cores``/``memory``/``walltime``/``queue``/``account``/``qos`` … of those jobs) that adapt between
    ``minimum_jobs`` and ``maximum_jobs``; a worker job lost mid-run is replaced, and at close the
    workers are retired so that their jobs end on their own (``sacct``: COMPLETED, not CANCELLED).

Results never depend on the choice: every replication's random stream is derived by the engine from
(seed, spec, replication), and results are gathered in submission order.

:func:`dask_client` is a context manager for one-off use. :func:`shared_client` keeps one client per
process (created on first use, closed at exit), which is how the Snakemake workflow amortises the
cluster start-up over all jobs of a run (see docs/pipeline.md, "Pipeline design and overheads"). docs/hpc.md is the
operator's guide to the SLURM routes.
"""
from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import threading

from ..checks.config import NO_WORKERS_TIMEOUT, ConfigError

log = logging.getLogger(__name__)

DEFAULTS = {
    "kind": "local",
    "n_workers": None,
    "address": None,
    "scheduler_file": None,
    "memory_limit": "auto",
    "no_workers_timeout": 300,
    "tls": False,
    "dashboard": False,
    "scratch": None,
    "slurm": {},
}

SLURM_DEFAULTS = {
    "cores": 1,
    "processes": 1,
    "memory": "2GB",
    "walltime": "01:00:00",
    "queue": None,
    "account": None,
    "qos": None,
    "jobs": None,
    "minimum_jobs": None,
    "maximum_jobs": None,
    "adapt_interval": None,
    "job_name": "sojourn-worker",
    "python": None,
    "job_extra_directives": [],
    "job_script_prologue": [],
    "local_directory": None,
    "log_directory": None,
    "interface": None,
    "worker_extra_args": [],
    "scheduler_options": {},
}

#: ``cluster.slurm.minimum_jobs``/``maximum_jobs`` when neither they nor ``jobs`` are given
DEFAULT_MINIMUM_JOBS, DEFAULT_MAXIMUM_JOBS = 1, 2
#: the scheduler options a site may set (``cluster.slurm.scheduler_options``)
SCHEDULER_OPTIONS = ("host", "port", "interface", "dashboard_address", "protocol")
#: how often the adaptive SLURM cluster looks at its jobs and the scheduler's load (cluster.slurm.adapt_interval:
#: how soon a lost worker job is noticed and replaced), and how many consecutive looks a worker must be idle
#: before it is retired (down to minimum_jobs): 60 s at the default interval
ADAPT_INTERVAL_S, ADAPT_WAIT_COUNT = 5, 12
#: at close (or scale-down), how long a retired worker's SLURM job is given to end on its own before scancel
RETIRE_GRACE_S = 60.0
#: SLURM job states in which a job still holds (or waits for) its allocation
_ALIVE = {"PENDING", "CONFIGURING", "RUNNING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
          "RESIZING", "SIGNALING", "STAGE_OUT", "COMPLETING"}


def _settings(cluster_cfg: dict | None) -> dict:
    cfg = {**DEFAULTS, **(cluster_cfg or {})}
    cfg["slurm"] = {**SLURM_DEFAULTS, **(cfg.get("slurm") or {})}
    if cfg["kind"] not in ("local", "address", "scheduler_file", "slurm"):
        raise ConfigError(f"cluster.kind: must be one of local, address, scheduler_file, slurm; got {cfg['kind']!r}")
    if cfg["kind"] == "address" and not cfg.get("address"):
        raise ConfigError("cluster.address: required with cluster.kind: address")
    if cfg["kind"] == "scheduler_file" and not cfg.get("scheduler_file"):
        raise ConfigError("cluster.scheduler_file: required with cluster.kind: scheduler_file")
    return cfg


def check_cluster(cluster_cfg: dict | None) -> dict:
    """The ``cluster:`` section checked for what its JSON schema cannot express (raises :class:`ConfigError`,
    one line per problem, each naming the key): with ``kind: slurm``, every ``cluster.slurm`` value that
    dask-jobqueue or sbatch would reject later, on a worker node or in the queue. Returns the settings with
    defaults filled in. Called by the Snakefile before any job, and by :func:`dask_client`."""
    cfg = _settings(cluster_cfg)
    problems = []
    if cfg["kind"] == "local" and cfg.get("n_workers"):
        problems += _workers_problems(int(cfg["n_workers"]))
    if cfg["kind"] == "scheduler_file" and not os.path.isfile(str(cfg["scheduler_file"])):
        problems.append(f"cluster.scheduler_file: {cfg['scheduler_file']} does not exist: start the scheduler first "
                        f"(dask scheduler --scheduler-file {cfg['scheduler_file']}), or use cluster.kind: local")
    if cfg["kind"] == "local" and cfg.get("memory_limit") not in ("auto", None, 0):
        try:
            _bytes(cfg["memory_limit"])
        except ValueError as exc:
            problems.append(f"cluster.memory_limit: {exc}")
    if cfg["kind"] == "slurm":
        problems += _slurm_problems(cfg["slurm"])
    problems += _tls_problems(cfg)
    scratch = cfg.get("scratch")
    if scratch is not None and (not str(scratch).strip() or any(c in str(scratch) for c in "\0\n\r")):
        problems.append(f"cluster.scratch: must be a folder path (relative to the work folder, or absolute) on one "
                        f"line; got {scratch!r}")
    if problems:
        raise ConfigError("\n".join(problems))
    return cfg


def _tls_problems(cfg: dict) -> list[str]:
    """``cluster.tls`` where it cannot work: on a scheduler sojourn does not start (it has its own security), with
    a plain-TCP protocol asked of the SLURM scheduler, or without the ``cryptography`` package (the certificates)."""
    if not cfg.get("tls"):
        return []
    if cfg["kind"] in ("address", "scheduler_file"):
        return [f"cluster.tls: applies to the clusters sojourn starts (kind local or slurm); a scheduler of kind "
                f"{cfg['kind']} is started by you, with its own security settings"]
    protocol = (cfg["slurm"].get("scheduler_options") or {}).get("protocol") if cfg["kind"] == "slurm" else None
    if protocol not in (None, "tls", "tls://"):
        return [f"cluster.slurm.scheduler_options.protocol: must be tls (or unset) with cluster.tls: true; "
                f"got {protocol!r}"]
    try:
        import cryptography  # noqa: F401
    except ImportError:
        return ["cluster.tls: needs the Python package cryptography (pip install cryptography) to make the run's "
                "certificate"]
    return []


#: resident memory of an idle local worker process (interpreter, numpy, scipy, numba, distributed: 377 MiB
#: measured in issue 32), the least each local worker holds
WORKER_BASE_BYTES = 400 * 2**20


def _workers_problems(n: int, alloc: dict | None = None) -> list[str]:
    """``cluster.n_workers`` beyond what the machine can hold: more workers than its available memory holds at
    :data:`WORKER_BASE_BYTES` each (issue 32: 1000 asked, 64 started on 2 CPUs, then they died), or more than
    the CPUs inside a SLURM job (capped there anyway, :func:`local_size`)."""
    from ..checks.guard import MEMORY_SHARE, available_memory, format_bytes

    avail = MEMORY_SHARE * available_memory()
    if n * WORKER_BASE_BYTES > avail:
        return [(f"cluster.n_workers: {n} local workers need at least {format_bytes(n * WORKER_BASE_BYTES)} of "
                 f"memory ({format_bytes(WORKER_BASE_BYTES)} each before any task), above {100 * MEMORY_SHARE:g} % of "
                 f"the memory available, {format_bytes(avail)}; at most {max(1, int(avail // WORKER_BASE_BYTES))} fit "
                 f"(the tasks are single-threaded: more workers than the {os.cpu_count() or 1} CPUs bring no speed)")]
    return []


def _bytes(value) -> int:
    """Bytes of a memory size: a number, a fraction of this machine's memory (0 < x ≤ 1, as Dask reads it)
    or a string with a unit ("2GB", "500 MiB")."""
    from dask.utils import parse_bytes

    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"must be > 0; got {value!r}")
        return int(value)
    try:
        n = parse_bytes(str(value))
    except (ValueError, TypeError):
        raise ValueError(f"must be a size such as 2GB or 500MiB; got {value!r}") from None
    if n <= 0:
        raise ValueError(f"must be > 0; got {value!r}")
    return n


_WALLTIME = re.compile(r"^(?:(?P<d>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?"
                       r"|(?P<h>\d+):(?P<m>\d+):(?P<s>\d+)|(?P<mm>\d+):(?P<ss>\d+)|(?P<only_m>\d+))$")


def walltime_seconds(text: str) -> int | None:
    """Seconds of a SLURM time limit (``sbatch -t``): ``minutes``, ``minutes:seconds``, ``hours:minutes:seconds``,
    ``days-hours``, ``days-hours:minutes``, ``days-hours:minutes:seconds``; None for no limit (``0``,
    ``UNLIMITED``, ``INFINITE``: the partition's maximum applies). ValueError otherwise."""
    if str(text).strip().upper() in ("0", "UNLIMITED", "INFINITE"):
        return None
    m = _WALLTIME.match(str(text).strip())
    if not m:
        raise ValueError("must be a SLURM time limit: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS; "
                         f"got {text!r}")
    g = {k: int(v) for k, v in m.groupdict().items() if v is not None}
    if "d" in g:
        sec = g["d"] * 86400 + g["dh"] * 3600 + g.get("dm", 0) * 60 + g.get("ds", 0)
    elif "h" in g:
        sec = g["h"] * 3600 + g["m"] * 60 + g["s"]
    elif "mm" in g:
        sec = g["mm"] * 60 + g["ss"]
    else:
        sec = g["only_m"] * 60
    if sec <= 0:
        raise ValueError(f"must be longer than 0 (or 0 / UNLIMITED for no limit); got {text!r}")
    return sec


def slurm_jobs(s: dict) -> tuple[int, int]:
    """(minimum, maximum) worker jobs of ``cluster.slurm``: ``jobs`` is a fixed count (minimum = maximum);
    otherwise ``minimum_jobs`` (default 1) and ``maximum_jobs`` (default the larger of minimum_jobs and 2)."""
    jobs, lo, hi = s.get("jobs"), s.get("minimum_jobs"), s.get("maximum_jobs")
    if jobs is not None and (lo is not None or hi is not None):
        raise ConfigError("cluster.slurm.jobs: give either jobs (a fixed number of worker jobs) or "
                          "minimum_jobs/maximum_jobs (adaptive), not both")
    if jobs is not None:
        return int(jobs), int(jobs)
    lo = DEFAULT_MINIMUM_JOBS if lo is None else int(lo)
    hi = max(lo, DEFAULT_MAXIMUM_JOBS) if hi is None else int(hi)
    if hi < lo:
        raise ConfigError(f"cluster.slurm.maximum_jobs: must be >= minimum_jobs ({lo}); got {hi}")
    return lo, hi


def _slurm_problems(s: dict) -> list[str]:
    out = []

    def bad(key, reason):
        out.append(f"cluster.slurm.{key}: {reason}")

    try:
        _bytes(s["memory"])
    except ValueError as exc:
        bad("memory", exc)
    try:
        walltime_seconds(s["walltime"])
    except ValueError as exc:
        bad("walltime", exc)
    cores, processes = s["cores"], s["processes"]
    if isinstance(cores, int) and isinstance(processes, int) and processes > 0 and cores % processes:
        bad("processes", f"must divide cores ({cores}): each worker process gets cores/processes threads; "
                         f"got {processes}")
    try:
        slurm_jobs(s)
    except ConfigError as exc:
        out.append(str(exc))
    for i, d in enumerate(s.get("job_extra_directives") or []):
        if not isinstance(d, str) or not d.startswith("-"):
            bad(f"job_extra_directives[{i}]", f"must be an sbatch option such as --constraint=skylake "
                                              f"(without '#SBATCH'); got {d!r}")
    args = [str(a) for a in (s.get("worker_extra_args") or [])]
    if args:
        reason = _worker_args_problem(args)
        if reason:
            bad("worker_extra_args", reason)
    opts = s.get("scheduler_options") or {}
    for k in opts:
        if k not in SCHEDULER_OPTIONS:
            from ..checks.inputs import did_you_mean

            bad(f"scheduler_options.{k}", f"unknown option{did_you_mean(k, SCHEDULER_OPTIONS)} "
                                          f"(allowed: {', '.join(SCHEDULER_OPTIONS)})")
    port = opts.get("port")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535):
        bad("scheduler_options.port", f"must be an integer in 0..65535 (0: any free port); got {port!r}")
    for key, name in (("interface", s.get("interface")), ("scheduler_options.interface", opts.get("interface"))):
        if name:
            reason = _interface_problem(name)
            if reason:
                bad(key, reason)
    return out


def _worker_args_problem(args: list[str]) -> str | None:
    """Why ``dask worker`` would reject ``args`` (its own option parser, nothing started), or None."""
    import click
    from distributed.cli.dask_worker import main as dask_worker

    try:
        ctx = dask_worker.make_context("dask worker", ["tcp://127.0.0.1:8786", *args], resilient_parsing=False)
    except click.UsageError as exc:
        return f"dask worker rejects {' '.join(args)!r}: {exc.format_message()}"
    extra = [a for a in ctx.args if a.startswith("-")]
    if extra:
        return f"dask worker has no option {extra[0]!r} (see `dask worker --help`)"
    return None


def _interface_problem(name: str) -> str | None:
    import psutil

    have = sorted(psutil.net_if_addrs())
    if name in have:
        return None
    from ..checks.inputs import did_you_mean

    return (f"this machine (where the Dask scheduler runs) has no network interface {name!r}"
            f"{did_you_mean(name, have)} (it has: {', '.join(have)})")


# -- what this process may use (inside a SLURM job: what SLURM allocated) -------------------------------
def allocation(environ=None) -> dict:
    """The CPUs and memory this process may use, with where each number came from.

    CPUs: ``SLURM_CPUS_PER_TASK`` (or ``SLURM_CPUS_ON_NODE`` in a job without ``--cpus-per-task``), and
    never more than the CPU affinity, the cgroup CPU quota or the CPU count (``dask.system.cpu_count``).
    Memory: ``SLURM_MEM_PER_NODE`` (MB, ``--mem``) or ``SLURM_MEM_PER_CPU`` × the CPUs (``--mem-per-cpu``),
    and never more than the cgroup limit, RLIMIT_RSS or the machine's memory (``distributed.system``).
    SLURM does not always enforce its allocation (``TaskPlugin=task/none``, no cgroup), so the SLURM
    variables are read first rather than trusting the machine's view.

    Returns ``{"cpus", "cpus_from", "memory", "memory_from", "in_slurm_job"}`` (memory in bytes)."""
    from dask.system import cpu_count
    from distributed.system import memory_limit

    env = os.environ if environ is None else environ
    in_job = bool(env.get("SLURM_JOB_ID"))
    cpus, cpus_from = cpu_count(), "the CPU affinity / cgroup quota of this process"
    if in_job:
        for var in ("SLURM_CPUS_PER_TASK", "SLURM_CPUS_ON_NODE"):
            value = _positive_int(env.get(var))
            if value:
                if value <= cpus:
                    cpus, cpus_from = value, f"{var}={value}"
                break
    memory, memory_from = memory_limit(), "this machine's memory / cgroup limit"
    if in_job:
        per_node, per_cpu = _positive_int(env.get("SLURM_MEM_PER_NODE")), _positive_int(env.get("SLURM_MEM_PER_CPU"))
        slurm = (per_node * 2**20, f"SLURM_MEM_PER_NODE={per_node}") if per_node else \
            (per_cpu * cpus * 2**20, f"SLURM_MEM_PER_CPU={per_cpu} × {cpus} CPUs") if per_cpu else None
        if slurm and slurm[0] <= memory:
            memory, memory_from = slurm
    return {"cpus": cpus, "cpus_from": cpus_from, "memory": int(memory), "memory_from": memory_from,
            "in_slurm_job": in_job}


def _positive_int(text) -> int | None:
    try:
        value = int(str(text).strip())
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def local_size(cfg: dict, n_workers: int | None, alloc: dict | None = None) -> tuple[int, int, str]:
    """(workers, memory limit per worker in bytes, a one-line account) of a local cluster.

    Workers: ``n_workers`` (the caller's: Snakemake's ``--cores``) or ``cluster.n_workers``, else the
    allocated CPUs; inside a SLURM job never more than the allocated CPUs (one single-threaded worker per
    CPU). Memory: ``cluster.memory_limit`` (``auto``: the allocated memory shared equally), never more in
    total than the allocation inside a SLURM job."""
    alloc = alloc or allocation()
    asked = n_workers or cfg.get("n_workers")
    n = int(asked or alloc["cpus"])
    notes = []
    if alloc["in_slurm_job"] and n > alloc["cpus"]:
        notes.append(f"{n} asked, capped at the {alloc['cpus']} CPU(s) SLURM allocated")
        n = alloc["cpus"]
    per_worker = alloc["memory"] // n
    limit = cfg.get("memory_limit", "auto")
    if limit not in ("auto", None, 0):
        asked_bytes = _bytes(limit)
        if isinstance(limit, float) and limit <= 1:  # a fraction of the machine, as Dask reads it
            asked_bytes = int(limit * alloc["memory"])
        if alloc["in_slurm_job"] and asked_bytes > per_worker:
            notes.append(f"memory_limit {limit} capped so that {n} workers fit the job's memory")
        else:
            per_worker = asked_bytes
    how = (f"{n} worker process(es) × 1 thread (CPUs: {alloc['cpus']}, from {alloc['cpus_from']}), "
           f"memory limit {per_worker / 2**20:.0f} MiB each (total {alloc['memory'] / 2**20:.0f} MiB, from "
           f"{alloc['memory_from']})" + (f"; {'; '.join(notes)}" if notes else ""))
    return n, per_worker, how


#: a local cluster's periodic monitors, slower than distributed's defaults: every event loop (the scheduler's, each
#: nanny's and worker's) ran a 20 ms tick (it only measures how late the loop is: a warning past
#: distributed.admin.tick.limit, 3 s) and a 0.5 s system monitor (psutil CPU, memory and I/O figures for the
#: dashboard and the heartbeats' metrics). An idle cluster of 2 workers used 0.062 of a core with distributed's
#: defaults and 0.027 with these (its process tree's CPU over 30 s, /tmp runs at load 8-14). They decide nothing
#: a task computes; the memory manager's own check (distributed.worker.memory.monitor-interval, 0.1 s: it pauses or
#: restarts a worker near its memory limit) is left as it is.
QUIET_MONITORS = {"distributed.admin.tick.interval": "1s", "distributed.admin.system-monitor.interval": "5s"}


@contextlib.contextmanager
def dask_client(cluster_cfg: dict | None = None, n_workers: int | None = None):
    """Yield a ``distributed.Client`` for ``cluster_cfg``; close what was started on exit.

    ``n_workers`` (default: ``cluster.n_workers``, else the allocated CPUs) sizes a local cluster; inside a
    SLURM job it is capped at what SLURM allocated (:func:`local_size`). Existing clusters
    (``address``/``scheduler_file``) are connected to and left running.
    """
    import dask
    from distributed import Client

    cfg = check_cluster(cluster_cfg)
    # the jobs' watchdog (report_progress, below) reads it: fail instead of waiting forever
    dask.config.set({NO_WORKERS_TIMEOUT: float(cfg["no_workers_timeout"])})
    kind = cfg["kind"]
    if kind == "address":
        _check_reachable(cfg["address"])
        with Client(cfg["address"], set_as_default=False) as client:
            yield client
        return
    if kind == "scheduler_file":
        _check_reachable(_scheduler_address(cfg["scheduler_file"]), "cluster.scheduler_file")
        with Client(scheduler_file=cfg["scheduler_file"], set_as_default=False) as client:
            yield client
        return
    from .places import DASK_SCRATCH, LOOPBACK, http_address, remove_quietly, run_security, scratch_root, use_scratch

    root = scratch_root(cfg)
    use_scratch(root)  # Dask's scratch and numba's cache under the work folder (or cluster.scratch)
    security, tls_dir = run_security(root) if cfg["tls"] else (None, None)
    try:
        if kind == "local":
            from distributed import LocalCluster

            n, memory, how = local_size(cfg, n_workers)
            log.info("sojourn: local Dask cluster: %s", how)
            # the workers' statistical profiler (stacks sampled every 10 ms in each worker's event loop) only feeds
            # the dashboard: off without it (a third of the loops' CPU, ~1 % of a core per worker while the
            # cluster runs; benchmarks/paper_profile.py)
            profiler = {"distributed.worker.profile.enabled": bool(cfg["dashboard"]), **QUIET_MONITORS}
            with glibc_adaptive_malloc(), dask.config.set(profiler):
                cluster = LocalCluster(
                    n_workers=n,
                    threads_per_worker=1,
                    processes=True,
                    host=LOOPBACK,  # scheduler, nannies, workers and their HTTP servers: loopback only
                    dashboard_address=http_address(None, LOOPBACK),
                    scheduler_kwargs={"dashboard": bool(cfg["dashboard"])},
                    memory_limit=memory,
                    local_directory=str(root / DASK_SCRATCH),
                    silence_logs=logging.ERROR,
                    **({"security": security, "protocol": "tls://"} if security is not None else {}),
                )
        else:  # slurm
            lo, hi = slurm_jobs(cfg["slurm"])
            cluster = _slurm_cluster(cfg["slurm"], root, security=security, dashboard=bool(cfg["dashboard"]))
            interval = float(cfg["slurm"].get("adapt_interval") or ADAPT_INTERVAL_S)
            cluster.adapt(Adaptive=_CLASSES["adaptive"], minimum_jobs=lo, maximum_jobs=hi,
                          interval=f"{interval}s",
                          wait_count=max(1, round(ADAPT_INTERVAL_S * ADAPT_WAIT_COUNT / interval)))
            log.info("sojourn: SLURM Dask cluster: %d to %d worker job(s) of %s core(s), %s, walltime %s; "
                     "scheduler %s", lo, hi, cfg["slurm"]["cores"], cfg["slurm"]["memory"],
                     cfg["slurm"]["walltime"], cluster.scheduler_address)
    except BaseException:
        remove_quietly(tls_dir)
        raise
    try:
        with Client(cluster, set_as_default=False, security=security) as client:
            from .worker_plugins import IgnoreSigint, QuietRetirement

            if kind == "local":  # Ctrl-C is for this process, which closes the cluster (see the plugin)
                client.register_plugin(IgnoreSigint(), name=IgnoreSigint.name)
            client.register_plugin(QuietRetirement(), name=QuietRetirement.name)  # no traceback at a clean close
            yield client
    finally:
        try:
            cluster.close()
        except TimeoutError:
            # distributed < 2026.8 joins a worker process it had to SIGKILL with whatever is left of the
            # close timeout (nothing, on a loaded machine) and raises; the process is gone or going
            log.warning("closing the Dask cluster timed out; its workers were killed")
        finally:
            remove_quietly(tls_dir)


def _scheduler_address(path: str) -> str:
    """The scheduler address a scheduler file holds; RuntimeError in one line naming cluster.scheduler_file when
    the file is missing or not one (Client(scheduler_file=…) would wait for it forever, issue 32)."""
    import json

    try:
        with open(path, encoding="utf-8") as f:
            address = json.load(f).get("address")
    except FileNotFoundError:
        raise RuntimeError(f"cluster.scheduler_file: {path} does not exist: start the scheduler first (dask scheduler "
                           f"--scheduler-file {path}), or use cluster.kind: local") from None
    except (OSError, ValueError, AttributeError) as exc:
        raise RuntimeError(f"cluster.scheduler_file: {path} is not a Dask scheduler file ({exc})") from None
    if not isinstance(address, str) or not address:
        raise RuntimeError(f"cluster.scheduler_file: {path} holds no scheduler address")
    return address


def _check_reachable(address: str, key: str = "cluster.address") -> None:
    """Fail at once, in one line, when nothing listens at ``cluster.address`` (Client() would retry for
    distributed.comm.timeouts.connect, 30 s, then raise a multi-line OSError)."""
    import socket
    from urllib.parse import urlsplit

    u = urlsplit(address if "://" in address else f"tcp://{address}")
    if u.scheme not in ("tcp", "tls") or not u.hostname or not u.port:
        return  # another transport (inproc, ucx …): Client() says what is wrong
    try:
        socket.create_connection((u.hostname, u.port), timeout=10).close()
    except OSError as exc:
        raise RuntimeError(f"{key}: no Dask scheduler answers at {address} "
                           f"({exc.strerror or exc}); start it, or use cluster.kind: local") from None


#: nanny states from which a local worker does not come back by itself (a nanny that restarts its worker stays
#: running; one closing is on its way to closed)
_GONE = ("closed", "failed")
_revive_lock = threading.Lock()


def cluster_dead(client) -> str | None:
    """Why the cluster of ``client`` can never run another task (one line), or None while it may.

    Called by the no-workers watchdog (:func:`report_progress`) whenever it sees no worker.
    The scheduler gone (the client lost it: its tasks are lost with it) is dead. A :class:`LocalCluster` of
    this process replaces nannies that stopped for good — distributed lets a nanny shut down permanently when
    its worker dies at some moments of a restart, or when the scheduler drops a worker that a loaded machine
    kept from answering in time (dask/distributed#7312, #8537), and a LocalCluster never starts another: both
    workers gone, the job waited for the full watchdog. A LocalCluster closed or scaled to no worker is dead.
    Anything else (an external scheduler without workers: some may still join) is left to the watchdog."""
    status = str(getattr(client, "status", "running"))
    if status != "running":
        where = getattr(getattr(client, "scheduler", None), "address", None) or "?"
        return (f"lost the connection to the Dask scheduler at {where} (client {status}): its tasks are lost; "
                "check the scheduler, then rerun")
    from distributed import LocalCluster

    cluster = getattr(client, "cluster", None)
    if not isinstance(cluster, LocalCluster) or getattr(cluster, "_adaptive", None) is not None:
        return None  # an external scheduler, or a cluster that sizes itself (SLURM's adaptive jobs)
    if str(getattr(cluster, "status", "running")).split(".")[-1] in ("closing", "closed"):
        return "the local Dask cluster was closed"
    with _revive_lock:
        wanted = len(cluster.worker_spec)
        if wanted == 0:
            return "the local Dask cluster has no worker and none to start (scaled to 0)"
        gone = [name for name, w in list(cluster.workers.items())
                if str(getattr(w, "status", "")).split(".")[-1] in _GONE]
        if gone:
            for name in gone:  # they leave the spec and the cluster's workers; scale() starts new ones (a name
                cluster.worker_spec.pop(name, None)  # left among the workers would be taken as running)
                cluster.workers.pop(name, None)
            logging.getLogger(__name__).warning(
                f"{len(gone)} local Dask worker(s) stopped for good (their nanny closed): starting new ones")
            with glibc_adaptive_malloc():  # the new nannies read the setting when they start
                cluster.scale(wanted)
    return None


#: the value Dask's nannies export by default (distributed.nanny.pre-spawn-environ)
DASK_MALLOC_TRIM = "65536"


@contextlib.contextmanager
def glibc_adaptive_malloc():
    """Nannies started inside get no MALLOC_TRIM_THRESHOLD_: Dask's nannies export 65536 to their workers by
    default, which switches off glibc's adaptive mmap threshold, so every array over 128 kB is a fresh mmap and
    page-faults again. Our tasks allocate many short-lived arrays of 0.1-20 MB: measured 7.7 s vs 5.4 s for 20
    approximation cells (R=5, all methods) in one process with and without it. A nanny also writes its
    pre-spawn settings into the environment of the process that runs it, where every later nanny finds them
    first; so Dask's 65536 left there by an earlier nanny (another library's cluster, a test) is set aside
    while ours start, and put back."""
    import dask

    left = os.environ.get("MALLOC_TRIM_THRESHOLD_") == DASK_MALLOC_TRIM
    if left:
        del os.environ["MALLOC_TRIM_THRESHOLD_"]
    try:
        with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
            yield
    finally:
        if left:
            os.environ["MALLOC_TRIM_THRESHOLD_"] = DASK_MALLOC_TRIM


#: glibc malloc settings exported to SLURM worker jobs (see the LocalCluster branch of dask_client): a
#: worker nanny passes on MALLOC_TRIM_THRESHOLD_ from its environment in preference to Dask's 65536, and
#: with these two values the heap serves arrays up to 32 MB and keeps 256 MB of freed memory — as fast as
#: glibc's adaptive default (measured 4.9 s vs 4.7 s vs 6.8 s with 65536 for 20 approximation cells).
SLURM_MALLOC_ENV = {"MALLOC_TRIM_THRESHOLD_": "268435456", "MALLOC_MMAP_THRESHOLD_": "33554432"}


def worker_lifetime(walltime_s: int) -> int:
    """Seconds after which a SLURM worker retires on its own (``dask worker --lifetime``): the walltime less
    a margin of 10 % (at least 60 s, at most 10 min) for it to hand over and exit, so that the job ends
    COMPLETED instead of being killed at its time limit (TIMEOUT); the adaptive cluster then submits a
    fresh job. Never less than half the walltime."""
    margin = min(max(0.1 * walltime_s, 60.0), 600.0)
    return int(max(walltime_s - margin, walltime_s / 2))


def walltime_warnings(cluster_cfg: dict | None, predicted: list[tuple[float, str]],
                      unpredicted: list[str]) -> list[str]:
    """Warnings about ``cluster.slurm.walltime`` against what the studies predict (empty unless ``kind: slurm``).

    ``predicted`` is ``[(seconds, what)]`` for single Dask tasks (each study's ``predicted_task_seconds``): a
    task longer than a worker's lifetime (:func:`worker_lifetime`) can never finish, as its worker retires
    and the task starts again on the replacement. The run as a whole may be longer than the walltime: lost
    and retired workers are replaced. ``unpredicted`` names the parts with no run-time prediction, which the
    walltime is not checked against (said once, so that a silent check is not read as a pass)."""
    cfg = _settings(cluster_cfg)
    if cfg["kind"] != "slurm":
        return []
    wall = walltime_seconds(cfg["slurm"]["walltime"])
    lifetime = _lifetime_of(cfg["slurm"]) or (worker_lifetime(wall) if wall else None)
    out = []
    for seconds, what in predicted:
        if lifetime is not None and seconds >= lifetime:
            out.append(f"cluster.slurm.walltime {cfg['slurm']['walltime']}: a worker retires after {lifetime} s, "
                       f"but {what} is predicted to take up to {seconds:g} s: such a task would never finish; "
                       "raise the walltime")
    if unpredicted:
        out.append(f"cluster.slurm.walltime {cfg['slurm']['walltime']} is not checked against "
                   f"{'; '.join(unpredicted)}: no run-time prediction exists for them")
    return out


def _lifetime_of(s: dict) -> int | None:
    """Seconds of a ``--lifetime`` given in ``worker_extra_args``, if any."""
    from dask.utils import parse_timedelta

    args = [str(a) for a in (s.get("worker_extra_args") or [])]
    for i, a in enumerate(args):
        value = a.split("=", 1)[1] if a.startswith("--lifetime=") else (args[i + 1] if a == "--lifetime" and
                                                                         i + 1 < len(args) else None)
        if value is not None:
            try:
                return int(parse_timedelta(value))
            except (ValueError, TypeError):
                return None
    return None


def _scheduler_bind_host(s: dict) -> str:
    """The one address the route-2 scheduler listens on: ``scheduler_options.host``, else the address of
    ``scheduler_options.interface`` or ``cluster.slurm.interface`` on this machine, else :func:`scheduler_host`."""
    from .places import interface_address

    opts = s.get("scheduler_options") or {}
    if opts.get("host"):
        return str(opts["host"])
    iface = opts.get("interface") or s.get("interface")
    if iface:
        return interface_address(iface)
    return scheduler_host(_own_address(), _slurm_nodes(), _own_names())


def _is_loopback(host: str) -> bool:
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _worker_binding(s: dict, host: str, python: str, args: list[str], dashboard: bool) -> tuple[list[str], list[str]]:
    """(prologue lines, ``dask worker`` options) that bind a SLURM worker job's workers, nannies and HTTP servers
    to one address of its node (``dask worker`` binds to every interface by default, 0.0.0.0 and [::]):
    ``SOJOURN_DASK_HOST``, computed in the job: loopback when the scheduler is on loopback (a single-node
    cluster), else the node's address on ``cluster.slurm.interface`` or the address its name resolves to
    (:func:`sojourn.core.cluster.places.node_address`). A ``--host``/``--interface``/``--listen-address`` or
    ``--dashboard-address`` in ``worker_extra_args`` is the operator's and is kept."""
    import shlex

    given = {a.split("=", 1)[0] for a in args}
    if _is_loopback(host):
        prologue = ["SOJOURN_DASK_HOST=127.0.0.1"]
    else:
        iface = f" --interface {shlex.quote(s['interface'])}" if s.get("interface") else ""
        prologue = [f"SOJOURN_DASK_HOST=$({shlex.quote(python)} -m sojourn.core.cluster.places{iface})"]
    out = []
    if not {"--host", "--interface", "--listen-address"} & given:
        out += ["--host", '"$SOJOURN_DASK_HOST"']
    if "--dashboard-address" not in given:
        out += ["--dashboard-address", '"$SOJOURN_DASK_HOST:0"']
    if not dashboard and not {"--dashboard", "--no-dashboard"} & given:
        out.append("--no-dashboard")
    return prologue, out


def _slurm_cluster(s: dict, root=None, security=None, dashboard: bool = False):
    """dask-jobqueue's cluster for ``cluster.slurm`` (route 2): the scheduler in this process on one address
    (:func:`_scheduler_bind_host`; its HTTP server there too, the dashboard off unless ``cluster.dashboard``), the
    worker jobs bound to one address of their node (:func:`_worker_binding`), their logs, Dask scratch and numba
    cache under ``root`` (the run's scratch folder, :mod:`sojourn.core.cluster.places`) unless
    ``log_directory``/``local_directory`` say otherwise, and TLS with ``security``."""
    import shlex
    import sys
    from pathlib import Path

    from .places import DASK_SCRATCH, NUMBA_CACHE, SLURM_LOGS, http_address, scratch_root

    root = Path(root) if root is not None else scratch_root()
    worker_args = [str(a) for a in (s.get("worker_extra_args") or [])]
    wall = walltime_seconds(s["walltime"])
    if _lifetime_of(s) is None and wall:
        worker_args += ["--lifetime", f"{worker_lifetime(wall)}s"]
    directives = list(s.get("job_extra_directives") or [])
    if s.get("qos"):
        directives.append(f"--qos={s['qos']}")
    python = s.get("python") or sys.executable
    host = _scheduler_bind_host(s)
    scheduler_options = {k: v for k, v in (s.get("scheduler_options") or {}).items() if k != "interface"}
    scheduler_options.update(host=host, dashboard=dashboard,
                             dashboard_address=http_address(scheduler_options.get("dashboard_address"), host))
    bind_prologue, bind_args = _worker_binding(s, host, python, worker_args, dashboard)
    numba_cache = os.environ.get("NUMBA_CACHE_DIR") or str(root / NUMBA_CACHE)
    kwargs = {
        # threads per worker = cores / processes: keep them equal (one thread per worker process; the
        # engines are single-threaded numba/numpy code)
        "cores": int(s["cores"]),
        "processes": int(s["processes"]),
        "memory": str(s["memory"]),
        "walltime": str(s["walltime"]),
        "job_name": str(s.get("job_name") or SLURM_DEFAULTS["job_name"]),
        "python": python,
        "job_extra_directives": directives,
        # ours first, so that a user's prologue can override them; the binding last (it may need the user's python)
        "job_script_prologue": [f"export {k}={v}" for k, v in SLURM_MALLOC_ENV.items()]
        + [f"export NUMBA_CACHE_DIR={shlex.quote(numba_cache)}"]
        + list(s.get("job_script_prologue") or []) + bind_prologue,
        "worker_extra_args": worker_args + bind_args,
        "scheduler_options": scheduler_options,
        "local_directory": s.get("local_directory") or str(root / DASK_SCRATCH),
        "log_directory": s.get("log_directory") or str(root / SLURM_LOGS),
    }
    if security is not None:
        kwargs["security"] = security  # dask-jobqueue passes the certificate files to the workers (--tls-*)
    if s.get("queue"):
        kwargs["queue"] = s["queue"]
    if s.get("account"):
        kwargs["account"] = s["account"]
    return _sojourn_slurm_cluster_class()(**kwargs)


_CLASSES: dict = {}


def _sojourn_slurm_cluster_class():
    """dask-jobqueue's SLURMCluster with graceful jobs (``GracefulSLURMJob``), and the adaptive class that
    replaces lost jobs (``_CLASSES["adaptive"]``, :func:`_make_adaptive`); built on first use, as
    dask_jobqueue is imported only for ``kind: slurm``."""
    if "cluster" not in _CLASSES:
        from dask_jobqueue import SLURMCluster
        from dask_jobqueue.slurm import SLURMJob

        class GracefulSLURMJob(SLURMJob):
            """A worker job that, when closed, first retires its workers and lets the job end on its own.

            dask-jobqueue 0.9 closes a job with ``scancel`` at once (at cluster close, and when the adaptive
            cluster scales down), so every worker job ends CANCELLED in ``sacct`` even when all went well.
            Here the scheduler is asked to retire the job's workers (``close_workers=True``: they hand over
            their results and exit, and so does the batch script); ``scancel`` follows only if the job is
            still queued or running after :data:`RETIRE_GRACE_S` seconds."""

            async def close(self):
                await _retire_job(self)
                await super().close()

        class SojournSLURMCluster(SLURMCluster):
            job_cls = GracefulSLURMJob

        _CLASSES["cluster"] = SojournSLURMCluster
        _CLASSES["adaptive"] = _make_adaptive()
    return _CLASSES["cluster"]


def _worker_names(job) -> list[str]:
    """The Dask worker names of a dask-jobqueue job (``dask worker --name N --nworkers P`` names them N-0 … N-P-1)."""
    p = int(getattr(job, "worker_processes", 1) or 1)
    return [str(job.name)] if p == 1 else [f"{job.name}-{i}" for i in range(p)]


async def _slurm_states(job_ids, call) -> dict[str, str]:
    """SLURM state of each job of ``job_ids`` that slurmctld still knows (finished jobs are kept for MinJobAge)."""
    if not job_ids:
        return {}
    try:
        out = await call(["squeue", "-h", "-t", "all", "-j", ",".join(job_ids), "-o", "%i %T"])
    except RuntimeError:  # every id unknown ("Invalid job id specified")
        return {}
    states = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1]
    return states


async def _retire_job(job) -> None:
    """Let ``job`` end on its own: retire its workers through its cluster's scheduler and wait (up to
    RETIRE_GRACE_S) for the SLURM job to leave the running states. A job still waiting in the queue has no
    worker to retire: it is cancelled while it waits (``scancel --state=PENDING``, which slurmctld applies only to a
    job still pending, so a job that starts in the meantime is not killed as it starts but retired like the others),
    and ``sacct`` shows it never started (no node, no batch step); a job that runs but whose workers have not
    joined yet is given RETIRE_GRACE_S to join first, so that it too ends COMPLETED."""
    import asyncio
    import time

    ref = getattr(job, "_cluster", None)
    cluster = ref() if ref is not None else None
    if not job.job_id or cluster is None or getattr(cluster, "scheduler_comm", None) is None:
        return
    jid, names = str(job.job_id), _worker_names(job)
    deadline = time.monotonic() + RETIRE_GRACE_S

    def joined() -> bool:
        return bool(set(names) & {w.get("name") for w in cluster.scheduler_info.get("workers", {}).values()})

    while not joined():
        state = (await _slurm_states([jid], job._call)).get(jid)
        if time.monotonic() > deadline:
            return  # never joining: scancel
        if state == "PENDING":
            try:
                await job._call(["scancel", "--state=PENDING", jid])
            except RuntimeError:  # gone meanwhile
                return
            continue  # cancelled, or started in the meantime (then retired once its worker joins)
        if state not in ("RUNNING", "CONFIGURING"):
            return  # ended: scancel (a no-op)
        await asyncio.sleep(0.5)
    try:
        await asyncio.wait_for(cluster.scheduler_comm.retire_workers(names=names, close_workers=True, remove=True),
                               RETIRE_GRACE_S)
    except (OSError, TimeoutError, RuntimeError) as exc:  # the scheduler is gone or slow: fall back to scancel
        log.debug("retiring the workers of SLURM job %s failed: %r", jid, exc)
        return
    while time.monotonic() < deadline + RETIRE_GRACE_S:
        state = (await _slurm_states([jid], job._call)).get(jid)
        if state is None or state not in _ALIVE or state == "COMPLETING":
            return
        await asyncio.sleep(0.5)
    log.warning("sojourn: SLURM worker job %s did not end within %g s of its workers' retirement: cancelling it",
                jid, RETIRE_GRACE_S)


#: SLURM states after which a job that never had a worker joined is still replaced: it was ended from outside
#: (scancel, preemption, a node failure or its time limit), not by a broken job script (FAILED, BOOT_FAIL, …)
_ENDED_FROM_OUTSIDE = {"CANCELLED", "PREEMPTED", "NODE_FAIL", "TIMEOUT", "DEADLINE"}


def _make_adaptive():
    from distributed.deploy.adaptive import Adaptive

    class SlurmAdaptive(Adaptive):
        """dask-jobqueue's adaptive scaling, plus: a worker job that left the SLURM queue after its workers had
        joined, or that was ended from outside (scancel, preemption, NODE_FAIL, TIMEOUT) at any time, is
        forgotten, so that the next adapt step submits a replacement (Adaptive re-opens planned workers that
        are not running). One that failed before its workers ever joined (a broken job script or environment:
        it would only fail again) is reported once with its log folder and not replaced; the run's no-worker
        watchdog (cluster.no_workers_timeout) stops a run left without workers."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._joined: set[str] = set()
            self._reported: set[str] = set()

        async def adapt(self) -> None:
            try:
                await self._forget_lost_jobs()
            except Exception:  # never stop adapting because squeue failed once
                log.debug("checking the SLURM worker jobs failed", exc_info=True)
            await super().adapt()

        async def _forget_lost_jobs(self) -> None:
            cluster = self.cluster
            jobs = {name: job for name, job in list(cluster.workers.items()) if getattr(job, "job_id", None)}
            if not jobs:
                return
            present = {w.get("name") for w in cluster.scheduler_info.get("workers", {}).values()}
            absent = {}
            for name, job in jobs.items():
                if any(w in present for w in _worker_names(job)):
                    self._joined.add(str(job.job_id))
                elif name in cluster.worker_spec:  # not being retired on purpose
                    absent[name] = job
            if not absent:
                return
            call = next(iter(absent.values()))._call
            states = await _slurm_states([str(j.job_id) for j in absent.values()], call)
            for name, job in absent.items():
                jid = str(job.job_id)
                state = states.get(jid)
                if state in _ALIVE and state != "COMPLETING":
                    continue
                what = f"SLURM state {state}" if state else "no longer known to squeue"
                if jid in self._joined or state in _ENDED_FROM_OUTSIDE:
                    log.warning("sojourn: Dask worker job %s (%s) ended while the run needed it (%s): its tasks "
                                "are rescheduled and a replacement job is submitted", jid, name, what)
                    self._joined.discard(jid)
                    if cluster.workers.get(name) is job:
                        del cluster.workers[name]
                elif jid not in self._reported:
                    self._reported.add(jid)
                    where = f" (its log: {job.log_directory})" if getattr(job, "log_directory", None) else ""
                    log.warning("sojourn: Dask worker job %s (%s) ended before its worker joined (%s)%s; "
                                "it is not replaced", jid, name, what, where)

    return SlurmAdaptive


def scheduler_host(own_address: str, nodes: list[str], own_names: set[str]) -> str:
    """Where the Dask scheduler of SLURM worker jobs listens when ``cluster.slurm.interface`` is not set.

    The address this machine's name resolves to, if it is routable: the worker jobs find it the same way.
    If the name resolves only to loopback, that is right when every SLURM node is this machine (a
    single-node cluster); otherwise workers on other nodes could never connect, so refuse with a message
    that says what to set.
    """
    import ipaddress

    if not ipaddress.ip_address(own_address).is_loopback:
        return own_address
    remote = sorted(n for n in nodes if n.split(".")[0] not in own_names)
    if not remote:
        return "127.0.0.1"
    raise ValueError(
        f"cluster.slurm.interface: this machine's name resolves only to the loopback address {own_address}, "
        f"where SLURM worker jobs on {', '.join(remote[:5])}{' …' if len(remote) > 5 else ''} cannot reach the "
        "Dask scheduler; set cluster.slurm.interface to the network interface the nodes share (e.g. eth0, ib0)")


def _own_address() -> str:
    import socket

    try:
        return socket.gethostbyname(socket.getfqdn())
    except OSError:
        return "127.0.0.1"


def _own_names() -> set[str]:
    import socket

    return {socket.gethostname().split(".")[0], socket.getfqdn().split(".")[0], "localhost"}


def _slurm_nodes() -> list[str]:
    """The node names of the SLURM cluster (``sinfo``, expanded by ``scontrol show hostnames``); [] if unknown."""
    import subprocess

    try:
        spec = subprocess.run(["sinfo", "-h", "-o", "%N"], capture_output=True, text=True, timeout=20).stdout
        names = set()
        for line in filter(None, (x.strip() for x in spec.splitlines())):
            out = subprocess.run(["scontrol", "show", "hostnames", line], capture_output=True, text=True,
                                 timeout=20).stdout
            names.update(filter(None, out.split()))
        return sorted(names)
    except (OSError, subprocess.TimeoutExpired):
        return []


def import_in_main_thread(cluster_cfg: dict | None) -> None:
    """Import what a cluster kind needs from the main thread, before any job thread starts: dask_jobqueue
    installs a signal handler when first imported, which Python allows only in the main thread (Snakemake
    runs ``run:`` jobs in threads, where the first import would fail). Dask itself too: two job threads
    importing ``dask`` for the first time at once met a half-initialised ``dask.base`` (circular import
    error), so the whole Dask stack and xarray are imported here once."""
    import dask  # noqa: F401
    import dask.array  # noqa: F401
    import distributed  # noqa: F401
    import xarray  # noqa: F401

    if (cluster_cfg or {}).get("kind") == "slurm":
        import dask_jobqueue  # noqa: F401


# -- one client per process -------------------------------------------------------------------------
_lock = threading.Lock()
_shared: dict = {}


def shared_client(cluster_cfg: dict | None = None, n_workers: int | None = None):
    """The process-wide client for ``cluster_cfg`` (started on first call, closed at interpreter exit).

    Thread-safe: Snakemake runs ``run:`` jobs in threads of its own process (profile
    ``force-use-threads: true``), and they all submit to this one cluster.
    """
    key = (repr(sorted(_settings(cluster_cfg).items())), n_workers)
    with _lock:
        entry = _shared.get(key)
        if entry is None:
            cm = dask_client(cluster_cfg, n_workers)
            client = cm.__enter__()
            _shared[key] = entry = (cm, client)
        return entry[1]


def close_shared() -> None:
    """Close every client started by :func:`shared_client` (also registered with ``atexit``)."""
    with _lock:
        items = list(_shared.values())
        _shared.clear()
    for cm, _client in items:
        try:
            cm.__exit__(None, None, None)
        except Exception:  # pragma: no cover - best effort at shutdown
            pass


atexit.register(close_shared)


def report_progress(futures, report, client=None, what: str = "tasks") -> None:
    """Call ``report(done, total)`` as each future finishes; return when all have.

    With ``client``, a watchdog: whenever no future finished for 0.5 s, :func:`cluster_dead`
    restarts local workers whose nanny gave up, and a cluster that can never run a task again (its scheduler
    lost, a local cluster closed) fails at once with one line naming ``what``; if the cluster has had no worker
    at all for the dask config value ``sojourn.no-workers-timeout`` (seconds, default 300) while futures are
    unfinished (workers that keep dying, a queue that never starts them), raise RuntimeError naming ``what``
    instead of waiting forever. A task cancelled under us (the scheduler lost) fails the same way. Once
    :data:`sojourn.core.files.io.INTERRUPTED` is set (Ctrl-C), cancel the unfinished futures and raise
    :class:`sojourn.core.files.io.Interrupted`.
    """
    import queue
    import time

    import dask

    from ..files.io import INTERRUPTED, check_interrupted

    limit = float(dask.config.get(NO_WORKERS_TIMEOUT, 300))
    q: queue.Queue = queue.Queue()
    for f in futures:
        f.add_done_callback(q.put)
    done, since = 0, None

    def dead(reason: str):
        return RuntimeError(f"{what}: {len(futures) - done} of {len(futures)} unfinished, and the Dask cluster "
                            f"cannot run them: {reason}")

    while done < len(futures):
        if INTERRUPTED.is_set():
            if client is not None:
                client.cancel(futures)
            else:
                for f in futures:
                    f.cancel()
            check_interrupted(f"waiting for {len(futures) - done} of {len(futures)} {what}")
        try:
            fut = q.get(timeout=0.5)
        except queue.Empty:
            if client is None:
                continue
            workers = None
            if str(client.status) == "running":
                try:  # bounded: scheduler_info() waits out the client's 30 s reconnection if the scheduler dies
                    # no n_workers: distributed 2024.1 (the floor) refuses it
                    workers = client.sync(client.scheduler.identity, callback_timeout=5).get("workers")
                except Exception:  # unreachable, or not answering: cluster_dead says whether it is gone
                    workers = None
            reason = cluster_dead(client)  # also starts local workers in place of nannies that stopped for good
            if reason is not None:
                raise dead(reason) from None
            if workers:
                since = None
                continue
            if since is None:
                since = time.monotonic()
            elif time.monotonic() - since > limit:
                raise RuntimeError(f"no Dask worker for {limit:g} s while {len(futures) - done} of {len(futures)} "
                                   f"{what} were unfinished: the cluster lost its workers or never started them "
                                   "(see cluster.no_workers_timeout)") from None
            continue
        if client is not None and getattr(fut, "status", None) == "cancelled":
            raise dead(cluster_dead(client) or f"task {fut.key} was cancelled by the scheduler")
        done += 1
        if report is not None:
            report(done, len(futures))
