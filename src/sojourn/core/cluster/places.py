"""Where a run's Dask processes listen, who may connect to them, and where a run leaves its files (issue 35).

**Addresses.** Every Dask listener a run starts — the scheduler, each worker, each nanny and the small HTTP server
every scheduler and worker runs (health and metrics; the dashboard when it is on) — binds to one address, never to
all interfaces: 127.0.0.1 for a local cluster (routes 1 and 3 of docs/hpc.md), and for SLURM worker jobs (route 2)
the scheduler's address on this machine and each worker's address on its node, both taken from
``cluster.slurm.interface`` when it is set, else from what the machine's name resolves to (:func:`node_address`;
loopback on a single-node cluster). Dask's defaults bind a worker's comm port and HTTP server to 0.0.0.0 and [::]
and a scheduler's HTTP server to 0.0.0.0 as soon as a port is given without a host.

**Who may connect.** Plain ``tcp://`` in Dask is unauthenticated: any process that reaches the address may submit
work to the scheduler, which runs it as the run's user. On a shared node loopback is shared by every user. With
``cluster.tls: true`` every connection is mutual TLS (:func:`run_security`): a certificate and key made for this run,
readable by its owner only, which every scheduler, worker and client must present; nobody else can connect.

**Files.** One folder holds what a run leaves besides its results: ``cluster.scratch``, by default ``.sojourn`` in
the work folder (:func:`scratch_root`). Inside: ``dask-scratch`` (Dask's ``temporary-directory``: worker spill and
lock files; a stale entry of a killed worker is purged by the next worker that starts there), ``numba-cache``
(``NUMBA_CACHE_DIR``: numba's compiled kernels, instead of the installed package's ``__pycache__``), ``tls/<run>``
(the run's certificate and key, removed when the cluster closes; one left by a killed process of this machine is
removed by the next run) and ``slurm-logs`` (the SLURM worker jobs' logs of route 2).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import uuid
from pathlib import Path

#: the folder, in the work folder, that holds what a run leaves besides its results (cluster.scratch overrides it)
SCRATCH_NAME = ".sojourn"
#: sub-folders of the scratch folder
DASK_SCRATCH, NUMBA_CACHE, TLS, SLURM_LOGS = "dask-scratch", "numba-cache", "tls", "slurm-logs"
#: loopback: where a local cluster listens
LOOPBACK = "127.0.0.1"


def scratch_root(cluster_cfg: dict | None = None, workdir: str | os.PathLike | None = None) -> Path:
    """The absolute scratch folder: ``cluster.scratch`` (``~`` and ``$VARS`` expanded; relative to the work
    folder), else ``<work folder>/.sojourn``; the work folder is ``workdir`` or the current folder (Snakemake's
    ``--directory``)."""
    base = Path(workdir or os.getcwd())
    given = (cluster_cfg or {}).get("scratch")
    if given:
        return (base / os.path.expandvars(os.path.expanduser(str(given)))).absolute()
    return (base / SCRATCH_NAME).absolute()


def use_scratch(root: Path) -> dict[str, str]:
    """Point this process, and every process it starts, at ``root``: Dask's ``temporary-directory`` and numba's
    ``NUMBA_CACHE_DIR`` (kept if the environment sets it already: the operator's choice). Call it before numba
    compiles anything cached (the pipeline: in the Snakefile, before the studies are imported); worker processes
    started afterwards inherit the environment. Returns the settings made."""
    import dask

    root = Path(root)
    scratch, numba_cache = root / DASK_SCRATCH, Path(os.environ.get("NUMBA_CACHE_DIR") or root / NUMBA_CACHE)
    os.environ["NUMBA_CACHE_DIR"] = str(numba_cache)  # Dask and numba make the folders when they first write
    import sys

    if "numba" in sys.modules:  # kernels decorated from now on cache there (those before keep their place)
        sys.modules["numba"].config.CACHE_DIR = str(numba_cache)
    dask.config.set({"temporary-directory": str(scratch)})
    return {"temporary-directory": str(scratch), "NUMBA_CACHE_DIR": str(numba_cache)}


# -- addresses --------------------------------------------------------------------------------------------------
def interface_address(name: str) -> str:
    """The IPv4 address of network interface ``name`` of this machine (ValueError if it has none)."""
    import psutil

    for a in psutil.net_if_addrs().get(name, []):
        if a.family == socket.AF_INET:
            return a.address
    raise ValueError(f"network interface {name!r} has no IPv4 address on {socket.gethostname()}")


def node_address(interface: str | None = None) -> str:
    """This machine's address for Dask: the address of ``interface``, else the address its name resolves to
    (127.0.0.1 if that fails)."""
    if interface:
        return interface_address(interface)
    try:
        return socket.gethostbyname(socket.getfqdn())
    except OSError:
        return LOOPBACK


def http_address(address: str | None, host: str) -> str:
    """A Dask HTTP (dashboard) address bound to ``host``: ``None`` -> ``host:0`` (any free port), ``":8787"`` or
    ``"8787"`` -> ``host:8787``; an address naming its host is kept (the config says where)."""
    if address is None:
        return f"{host}:0"
    text = str(address)
    if text.startswith(":") or text.isdigit():
        return f"{host}:{text.lstrip(':')}"
    return text


# -- TLS ----------------------------------------------------------------------------------------------------------
def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IRUSR | stat.S_IWUSR)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(text)


def run_security(root: Path):
    """A ``distributed.Security`` for one run, and the folder holding its files: a fresh self-signed certificate
    and key (Dask's :meth:`Security.temporary`, 2048-bit RSA) written to ``<root>/tls/<host>-<pid>-<random>/``
    (folder 0700, files 0600: readable by the run's user only), used by every role (scheduler, workers, client)
    with ``require_encryption``: a connection without this certificate is refused. Files rather than memory, so
    that SLURM worker jobs, on other nodes, read them from the shared work folder."""
    from distributed.security import Security

    folder = Path(root) / TLS
    folder.mkdir(parents=True, exist_ok=True)
    clean_stale_tls(folder)
    run = folder / f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    run.mkdir(mode=stat.S_IRWXU)
    os.chmod(run, stat.S_IRWXU)  # whatever the umask
    tmp = Security.temporary()
    cert, key = run / "cert.pem", run / "key.pem"
    _write_private(cert, tmp.tls_ca_file)
    _write_private(key, tmp.tls_scheduler_key)
    files = {"ca_file": str(cert)}
    for role in ("scheduler", "worker", "client"):
        files[f"{role}_cert"], files[f"{role}_key"] = str(cert), str(key)
    sec = Security(require_encryption=True, **{f"tls_{k}": v for k, v in files.items()})
    return sec, run


def clean_stale_tls(folder: Path) -> list[Path]:
    """Remove the TLS folders (:func:`run_security`) that processes of this machine left when they were killed
    (their pid no longer runs); folders of other machines are left to them. Returns those removed."""
    host = socket.gethostname()
    out = []
    for d in folder.glob(f"{host}-*-*"):
        try:
            pid = int(d.name[len(host) + 1:].split("-")[0])
        except ValueError:
            continue
        if not _alive(pid):
            shutil.rmtree(d, ignore_errors=True)
            out.append(d)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_quietly(path: Path | None) -> None:
    """Remove a folder made for one run (its TLS files), and the empty parents up to the scratch folder."""
    if path is None:
        return
    shutil.rmtree(path, ignore_errors=True)
    with contextlib.suppress(OSError):
        path.parent.rmdir()  # tls/, if no other run uses it


def main(argv: list[str] | None = None) -> int:
    """``python -m sojourn.core.cluster.places [--interface NAME]``: print this node's address for Dask (used by
    the SLURM worker jobs' script to bind their workers, route 2)."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m sojourn.core.cluster.places")
    p.add_argument("--interface", default=None)
    args = p.parse_args(argv)
    print(node_address(args.interface))
    return 0


if __name__ == "__main__":  # pragma: no cover - run in the worker jobs' script
    raise SystemExit(main())
