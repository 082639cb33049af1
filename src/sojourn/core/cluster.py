"""Dask clients from the pipeline's ``cluster:`` config section.

``cluster.kind`` chooses where the replications run:

``local`` (default)
    a :class:`distributed.LocalCluster` with one single-threaded worker *process* per core
    (``processes=True``, ``threads_per_worker=1``), bound to 127.0.0.1, no dashboard;
``address``
    an existing scheduler, ``cluster.address: tcp://host:8786``;
``scheduler_file``
    an existing scheduler that wrote ``cluster.scheduler_file`` (``dask scheduler --scheduler-file …``);
``slurm``
    a dask-jobqueue ``SLURMCluster``: workers are SLURM batch jobs (``cluster.slurm`` holds the
    ``cores``/``memory``/``walltime``/``queue``/``account``/``jobs`` … of those jobs).

Results never depend on the choice: every replication's random stream is derived by the engine from
(seed, spec, replication), and results are gathered in submission order.

:func:`dask_client` is a context manager for one-off use. :func:`shared_client` keeps one client per
process (created on first use, closed at exit), which is how the Snakemake workflow amortises the
cluster start-up over all jobs of a run (see the README, "Pipeline design").
"""
from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading

from .config import NO_WORKERS_TIMEOUT

DEFAULTS = {
    "kind": "local",
    "n_workers": None,
    "address": None,
    "scheduler_file": None,
    "memory_limit": "auto",
    "no_workers_timeout": 300,
    "slurm": {},
}

SLURM_DEFAULTS = {
    "cores": 1,
    "processes": 1,
    "memory": "2GB",
    "walltime": "01:00:00",
    "queue": None,
    "account": None,
    "jobs": 2,
    "python": None,
    "job_extra_directives": [],
    "job_script_prologue": [],
    "local_directory": None,
    "log_directory": None,
    "interface": None,
}


def _settings(cluster_cfg: dict | None) -> dict:
    cfg = {**DEFAULTS, **(cluster_cfg or {})}
    cfg["slurm"] = {**SLURM_DEFAULTS, **(cfg.get("slurm") or {})}
    if cfg["kind"] not in ("local", "address", "scheduler_file", "slurm"):
        raise ValueError(f"cluster.kind must be one of local, address, scheduler_file, slurm; got {cfg['kind']!r}")
    if cfg["kind"] == "address" and not cfg.get("address"):
        raise ValueError("cluster.address is required with cluster.kind: address")
    if cfg["kind"] == "scheduler_file" and not cfg.get("scheduler_file"):
        raise ValueError("cluster.scheduler_file is required with cluster.kind: scheduler_file")
    return cfg


@contextlib.contextmanager
def dask_client(cluster_cfg: dict | None = None, n_workers: int | None = None):
    """Yield a ``distributed.Client`` for ``cluster_cfg``; close what was started on exit.

    ``n_workers`` (default: ``cluster.n_workers``, else the number of CPUs) sizes a local cluster, or
    the number of SLURM worker jobs when ``cluster.slurm.jobs`` is unset. Existing clusters
    (``address``/``scheduler_file``) are connected to and left running.
    """
    from distributed import Client

    import dask

    cfg = _settings(cluster_cfg)
    n = int(n_workers or cfg.get("n_workers") or os.cpu_count() or 1)
    # the jobs' watchdog (sojourn.core.io.report_progress) reads it: fail instead of waiting forever
    dask.config.set({NO_WORKERS_TIMEOUT: float(cfg["no_workers_timeout"])})
    kind = cfg["kind"]
    if kind == "address":
        _check_reachable(cfg["address"])
        with Client(cfg["address"], set_as_default=False) as client:
            yield client
        return
    if kind == "scheduler_file":
        with Client(scheduler_file=cfg["scheduler_file"], set_as_default=False) as client:
            yield client
        return
    if kind == "local":
        from distributed import LocalCluster

        # Dask's nannies export MALLOC_TRIM_THRESHOLD_=65536 to their workers by default; setting it
        # switches off glibc's adaptive mmap threshold, so every array over 128 kB is a fresh mmap and
        # page-faults again. Our tasks allocate many short-lived arrays of 0.1-20 MB: measured 7.7 s vs
        # 5.4 s for 20 approximation cells (R=5, all methods) in one process with and without it.
        with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}):
            cluster = LocalCluster(
                n_workers=n,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                dashboard_address=None,
                memory_limit=cfg.get("memory_limit", "auto"),
                silence_logs=logging.ERROR,
            )
    else:  # slurm
        cluster = _slurm_cluster(cfg["slurm"])
        cluster.scale(jobs=int(cfg["slurm"].get("jobs") or n))
    try:
        with Client(cluster, set_as_default=False) as client:
            if kind == "local":  # Ctrl-C is for this process, which closes the cluster (see the plugin)
                from .worker_plugins import IgnoreSigint

                client.register_plugin(IgnoreSigint(), name=IgnoreSigint.name)
            yield client
    finally:
        try:
            cluster.close()
        except TimeoutError:
            # distributed < 2026.8 joins a worker process it had to SIGKILL with whatever is left of the
            # close timeout (nothing, on a loaded machine) and raises; the process is gone or going
            logging.getLogger(__name__).warning("closing the local Dask cluster timed out; its workers were killed")



def _check_reachable(address: str) -> None:
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
        raise RuntimeError(f"cluster.address: no Dask scheduler answers at {address} "
                           f"({exc.strerror or exc}); start it, or use cluster.kind: local") from None


#: nanny states from which a local worker does not come back by itself
_GONE = ("closed", "failed")
_revive_lock = threading.Lock()


def cluster_dead(client) -> str | None:
    """Why the cluster of ``client`` can never run another task (one line), or None while it may.

    Called by the no-workers watchdog (:func:`sojourn.core.io.report_progress`) whenever it sees no worker.
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
    cluster = getattr(client, "cluster", None)
    if cluster is None or not hasattr(cluster, "worker_spec"):
        return None
    if str(getattr(cluster, "status", "running")).split(".")[-1] in ("closing", "closed"):
        return "the local Dask cluster was closed"
    with _revive_lock:
        wanted = len(cluster.worker_spec)
        if wanted == 0:
            return "the local Dask cluster has no worker and none to start (scaled to 0)"
        gone = [name for name, w in list(cluster.workers.items())
                if str(getattr(w, "status", "")).split(".")[-1] in _GONE]
        if gone:
            for name in gone:  # their names leave the spec; scale() gives new ones and starts them
                cluster.worker_spec.pop(name, None)
            logging.getLogger(__name__).warning(
                f"{len(gone)} local Dask worker(s) stopped for good (their nanny closed): starting new ones")
            cluster.scale(wanted)
    return None


#: glibc malloc settings exported to SLURM worker jobs (see the LocalCluster branch of dask_client): a
#: worker nanny passes on MALLOC_TRIM_THRESHOLD_ from its environment in preference to Dask's 65536, and
#: with these two values the heap serves arrays up to 32 MB and keeps 256 MB of freed memory — as fast as
#: glibc's adaptive default (measured 4.9 s vs 4.7 s vs 6.8 s with 65536 for 20 approximation cells).
SLURM_MALLOC_ENV = {"MALLOC_TRIM_THRESHOLD_": "268435456", "MALLOC_MMAP_THRESHOLD_": "33554432"}


def _slurm_cluster(s: dict):
    import sys

    from dask_jobqueue import SLURMCluster

    kwargs = dict(
        # threads per worker = cores / processes: keep them equal (one thread per worker process; the
        # engines are single-threaded numba/numpy code)
        cores=int(s["cores"]),
        processes=int(s["processes"]),
        memory=str(s["memory"]),
        walltime=str(s["walltime"]),
        python=s.get("python") or sys.executable,
        job_extra_directives=list(s.get("job_extra_directives") or []),
        # ours first, so that a user's prologue can override them
        job_script_prologue=[f"export {k}={v}" for k, v in SLURM_MALLOC_ENV.items()]
        + list(s.get("job_script_prologue") or []),
        scheduler_options={"dashboard_address": ":0",
                           **({} if s.get("interface") else {"host": scheduler_host(_own_address(), _slurm_nodes(),
                                                                                     _own_names())})},
    )
    if s.get("queue"):
        kwargs["queue"] = s["queue"]
    if s.get("account"):
        kwargs["account"] = s["account"]
    if s.get("local_directory"):
        kwargs["local_directory"] = s["local_directory"]
    if s.get("log_directory"):
        kwargs["log_directory"] = s["log_directory"]
    if s.get("interface"):  # network interface of scheduler and workers on a multi-node cluster
        kwargs["interface"] = s["interface"]
    return SLURMCluster(**kwargs)


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

