"""A closed network and one place for what a run leaves, on a real local Dask cluster (issue 35, items 2 and 3).

* every listener of the cluster sojourn starts (scheduler, nannies, workers, their HTTP servers) is on 127.0.0.1;
* ``cluster.tls: true``: the scheduler speaks TLS, the run's certificate and key are files readable by the owner
  only under the scratch folder, a client without them is refused (plain tcp, or TLS with another certificate),
  the results are those of a plain run, and the files are gone after the close;
* the run's Dask scratch and numba's compiled kernels are under the work folder's ``.sojourn`` (or
  ``cluster.scratch``): nothing in the system temp folder's ``dask-scratch-space``, no file added to the package.
The same on the SLURM routes: tests/workflow/test_slurm*.py.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import psutil
import pytest

import sojourn
from sojourn.core.checks.config import ConfigError
from sojourn.core.cluster.cluster import _worker_binding, check_cluster, dask_client
from sojourn.core.cluster.places import clean_stale_tls, http_address, run_security

PACKAGE = Path(sojourn.__file__).parent


def _listeners() -> list[tuple[str, int, int]]:
    me = psutil.Process()
    pids = {me.pid, *(p.pid for p in me.children(recursive=True))}
    return sorted((c.laddr.ip, c.laddr.port, c.pid) for c in psutil.net_connections("inet")
                  if c.status == psutil.CONN_LISTEN and c.pid in pids)


def _package_files() -> dict[str, float]:
    """Every file of the installed package but its source and Python's byte code (written by any import of a writable
    install, not by the run): path -> mtime."""
    return {str(p): p.stat().st_mtime for p in PACKAGE.rglob("*") if p.is_file() and p.suffix not in (".pyc", ".py")}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A work folder to run in, and a private system temp folder (Dask's default scratch would go there)."""
    import dask

    work, systmp = tmp_path / "work", tmp_path / "systmp"
    work.mkdir()
    systmp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("TMPDIR", str(systmp))
    monkeypatch.setattr(tempfile, "tempdir", str(systmp))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)  # the run sets it; monkeypatch restores the test's
    with dask.config.set({"temporary-directory": None}):
        yield work, systmp


def _draws(seed: int):
    """1000 exponential draws of a cached numba kernel (sojourn.core.laws.sfc64), in the calling process."""
    import numpy as np

    from sojourn.core.laws.sfc64 import fill_standard_exponential, state_of

    out = np.empty(1000)
    fill_standard_exponential(out, state_of(np.random.SFC64(seed)))
    return out


def _replications(client, n=2):
    """Draws on the workers (each compiles or loads the kernel there): a list of arrays, in submission order."""
    return [a.tolist() for a in client.gather(client.map(_draws, list(range(n)), pure=False))]


def test_local_cluster_listens_on_loopback_only_and_leaves_files_in_the_work_folder(workdir):
    work, systmp = workdir
    before = _package_files()
    with dask_client({"kind": "local"}, 2) as client:
        client.wait_for_workers(2, timeout=120)
        seen = _listeners()
        _replications(client)
        assert client.scheduler.address.startswith("tcp://127.0.0.1:")
    # scheduler + its HTTP server, 2 nannies, 2 workers + their HTTP servers
    assert len(seen) >= 7, seen
    assert {ip for ip, _, _ in seen} == {"127.0.0.1"}, seen
    assert not (systmp / "dask-scratch-space").exists(), sorted(systmp.rglob("*"))
    numba = work / ".sojourn" / "numba-cache"
    assert any(numba.rglob("*.nbi")), "the workers' numba kernels were not cached in the work folder"
    after = _package_files()
    assert {p: t for p, t in after.items() if before.get(p) != t} == {}, "the run wrote into the installed package"
    assert os.environ["NUMBA_CACHE_DIR"] == str(numba)


def test_tls_cluster_refuses_clients_without_the_run_certificate(workdir):
    from distributed import Client
    from distributed.security import Security

    work, _ = workdir
    with dask_client({"kind": "local"}, 1) as client:
        plain = _replications(client)
    with dask_client({"kind": "local", "tls": True}, 1) as client:
        address = client.scheduler.address
        assert address.startswith("tls://127.0.0.1:"), address
        assert {ip for ip, _, _ in _listeners()} == {"127.0.0.1"}
        (run,) = (work / ".sojourn" / "tls").iterdir()
        assert stat.S_IMODE(run.stat().st_mode) == 0o700
        assert sorted(p.name for p in run.iterdir()) == ["cert.pem", "key.pem"]
        assert {stat.S_IMODE(p.stat().st_mode) for p in run.iterdir()} == {0o600}
        assert _replications(client) == plain  # the same results over TLS
        for other in (None, Security.temporary()):  # plain tcp; TLS with a certificate of its own
            where = address.replace("tls://", "tcp://") if other is None else address
            with pytest.raises((OSError, TimeoutError)):
                Client(where, security=other, timeout=5, set_as_default=False)
    assert not run.exists(), "the run's TLS files outlived it"


def test_stale_tls_folders_of_dead_processes_are_removed(tmp_path):
    import socket
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    host = socket.gethostname()
    stale, alive, other = (tmp_path / "tls" / f"{host}-{dead}-abc", tmp_path / "tls" / f"{host}-{os.getpid()}-abc",
                           tmp_path / "tls" / f"elsewhere-{dead}-abc")
    for d in (stale, alive, other):
        d.mkdir(parents=True)
    assert clean_stale_tls(tmp_path / "tls") == [stale]
    assert alive.exists() and other.exists() and not stale.exists()
    sec, run = run_security(tmp_path)
    assert sec.require_encryption and Path(sec.tls_ca_file).parent == run


def test_cluster_tls_where_it_cannot_work_is_refused_naming_the_key(tmp_path):
    sched = tmp_path / "scheduler.json"
    sched.write_text("{}")
    with pytest.raises(ConfigError, match=r"^cluster\.tls: applies to the clusters sojourn starts"):
        check_cluster({"kind": "scheduler_file", "scheduler_file": str(sched), "tls": True})
    with pytest.raises(ConfigError, match=r"cluster\.slurm\.scheduler_options\.protocol: must be tls"):
        check_cluster({"kind": "slurm", "tls": True, "slurm": {"scheduler_options": {"protocol": "tcp"}}})
    check_cluster({"kind": "slurm", "tls": True, "slurm": {}})
    for bad in ("", "a\x00b", "two\nlines"):
        with pytest.raises(ConfigError, match=r"^cluster\.scratch: must be a folder path"):
            check_cluster({"kind": "local", "scratch": bad})


def test_worker_jobs_bind_to_one_address_of_their_node():
    """Route 2's worker command binds the worker, its nanny and its HTTP server to one address (dask worker's default
    is every interface), computed on the node: loopback beside a loopback scheduler, else the node's address on
    cluster.slurm.interface (or of its name); the operator's own binding options are kept."""
    pro, args = _worker_binding({}, "127.0.0.1", "/py", [], dashboard=False)
    assert pro == ["SOJOURN_DASK_HOST=127.0.0.1"]
    assert args == ["--host", '"$SOJOURN_DASK_HOST"', "--dashboard-address", '"$SOJOURN_DASK_HOST:0"', "--no-dashboard"]
    pro, args = _worker_binding({"interface": "ib0"}, "10.1.0.5", "/shared/py", [], dashboard=True)
    assert pro == ["SOJOURN_DASK_HOST=$(/shared/py -m sojourn.core.cluster.places --interface ib0)"]
    assert "--no-dashboard" not in args
    pro, args = _worker_binding({}, "10.1.0.5", "/py", ["--listen-address", "tcp://10.1.0.9:4000"], dashboard=False)
    assert "--host" not in args and pro == ["SOJOURN_DASK_HOST=$(/py -m sojourn.core.cluster.places)"]
    assert http_address(None, "10.1.0.5") == "10.1.0.5:0"
    assert http_address(":8787", "10.1.0.5") == "10.1.0.5:8787"
    assert http_address("0.0.0.0:8787", "10.1.0.5") == "0.0.0.0:8787"  # an address that says where is the config's
    # what the worker jobs run on their node (docs/hpc.md, "Who listens where"), as the guide shows it: one address
    # of this machine; with --interface, that interface's
    import subprocess
    import sys

    from support.hpc_guide import guide_command

    cmd = guide_command("python -m sojourn.core.cluster.places", {"python": sys.executable})
    interfaces = psutil.net_if_addrs()
    ours = {a.address for addrs in interfaces.values() for a in addrs}
    address = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()
    assert address in ours, (address, ours)
    loopback = next(name for name, addrs in interfaces.items() if any(a.address == "127.0.0.1" for a in addrs))
    assert subprocess.run([*cmd, "--interface", loopback], capture_output=True, text=True,
                          check=True).stdout.strip() == "127.0.0.1"


def test_the_listener_watch_catches_a_listener_on_every_interface(tmp_path):
    """The watch behind the SLURM routes' listener checks (tests/support/listeners.py) can fail: a marked process
    listening on 0.0.0.0 is reported outside loopback; an unmarked one is not the run's."""
    import subprocess
    import sys
    import time

    from support.listeners import MARK, ListenerWatch, new_mark

    code = "import socket, time; s = socket.socket(); s.bind(('0.0.0.0', 0)); s.listen(); print(1, flush=True); " \
           "time.sleep(60)"
    mark = new_mark()
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, MARK: m}) for m in (mark, "another-run")]
    try:
        for p in procs:
            p.stdout.readline()  # listening
        with ListenerWatch(mark, interval=0.05) as watch:
            time.sleep(0.3)
        out = watch.outside({"127.0.0.1"})
        assert len(out) == 1 and out[0][0] == "0.0.0.0" and out[0][2].startswith(f"pid {procs[0].pid}:"), out
        assert watch.pids == {procs[0].pid}
    finally:
        for p in procs:
            p.kill()
            p.wait()
