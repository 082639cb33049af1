"""A run never hangs: a job whose Dask cluster has no worker left fails after cluster.no_workers_timeout with a
message naming its cells, and a job whose workers keep being killed ends (done or failed) within a bound.
Real LocalClusters and real SIGKILLs, no mocks."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from sojourn.core.cluster.cluster import dask_client, report_progress

pytestmark = pytest.mark.slow


def _sleep(x):
    time.sleep(x)
    return x


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def external():
    """A Dask scheduler in a process of its own (a `cluster.kind: address` cluster); ``add_worker()`` starts a
    worker process for it. Everything is killed at the end."""
    import subprocess
    import sys

    port = _free_port()
    procs = []

    def start(*args):
        procs.append(subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True))
        return procs[-1]

    address = f"tcp://127.0.0.1:{port}"
    scheduler = start("distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", str(port),
                      "--no-dashboard")
    for _ in range(300):
        try:
            import socket

            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    try:
        yield {"address": address, "scheduler": scheduler,
               "add_worker": lambda: start("distributed.cli.dask_worker", address, "--nthreads", "1",
                                           "--no-dashboard")}
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def test_watchdog_fails_a_wait_when_the_cluster_has_no_worker(external):
    """A scheduler of its own without workers (some could still join): the watchdog waits its timeout."""
    with dask_client({"kind": "address", "address": external["address"], "no_workers_timeout": 3}) as client:
        futures = client.map(time.sleep, [30, 30], pure=False)  # importable where the scheduler runs
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match=r"no Dask worker for 3 s while 2 of 2 test cells were unfinished"):
            report_progress(futures, None, client, what="test cells")
        assert 3 < time.monotonic() - t0 < 30


def test_a_local_cluster_with_no_worker_to_start_fails_at_once():
    """A local cluster scaled to no worker can never run a task: no waiting for the watchdog (300 s here)."""
    with dask_client({"kind": "local", "no_workers_timeout": 300}, 1) as client:
        client.wait_for_workers(1, timeout=60)
        futures = client.map(_sleep, [30, 30], pure=False)
        time.sleep(0.5)
        client.cluster.scale(0)
        t0 = time.monotonic()
        with pytest.raises(RuntimeError) as err:
            report_progress(futures, None, client, what="test cells")
        assert str(err.value) == ("test cells: 2 of 2 unfinished, and the Dask cluster cannot run them: the local "
                                  "Dask cluster has no worker and none to start (scaled to 0)")
        assert time.monotonic() - t0 < 60


def test_an_address_where_no_scheduler_answers_fails_at_once():
    port = _free_port()
    t0 = time.monotonic()
    with pytest.raises(RuntimeError) as err:
        with dask_client({"kind": "address", "address": f"tcp://127.0.0.1:{port}"}):
            pass
    assert str(err.value).startswith(f"cluster.address: no Dask scheduler answers at tcp://127.0.0.1:{port} (")
    assert "\n" not in str(err.value) and time.monotonic() - t0 < 20  # Client() alone retried for 30 s


def test_a_scheduler_that_dies_mid_run_fails_the_job_and_the_next_at_once(external):
    """SIGKILL of the scheduler at `cluster.address` while a job waits: it fails at once with one line (its tasks
    are lost with the scheduler), and so does the next job (the client would retry for 30 s, then fail with
    `FutureCancelledError … reason: unknown`)."""
    from sojourn.core.runs.runner import DaskExecutor

    external["add_worker"]()
    with dask_client({"kind": "address", "address": external["address"], "no_workers_timeout": 300}) as client:
        client.wait_for_workers(1, timeout=120)
        ex = DaskExecutor(client)
        threading.Timer(2.0, lambda: os.killpg(external["scheduler"].pid, signal.SIGKILL)).start()
        t0 = time.monotonic()
        with pytest.raises(RuntimeError) as err:
            ex.map(time.sleep, [(30,), (30,)], ["a", "b"], "test cells")
        assert time.monotonic() - t0 < 30, err.value
        msg = str(err.value)
        assert msg.startswith("test cells: 2 of 2 unfinished, and the Dask cluster cannot run them: ")
        assert "\n" not in msg
        assert "Dask scheduler" in msg or "cancelled" in msg, msg
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match=r"^next cells: the Dask cluster cannot run them: lost the connection "
                                               r"to the Dask scheduler at tcp://127\.0\.0\.1"):
            ex.map(time.sleep, [(1,)], ["c"], "next cells")
        assert time.monotonic() - t0 < 5


def _worker_pids(client) -> list[int]:
    import psutil

    return [c.pid for c in psutil.Process().children(recursive=True)
            if "spawn_main" in " ".join(_cmdline(c)) and "resource_tracker" not in " ".join(_cmdline(c))]


def _cmdline(proc) -> list[str]:
    try:
        return proc.cmdline()
    except Exception:  # gone, or a zombie not yet reaped
        return []


def test_local_workers_killed_twice_come_back():
    """Both local workers SIGKILLed while tasks run, then both replacements SIGKILLed once they have joined (the
    issue's fault): new workers come back each time; the tasks in flight finish or, having died with their
    workers too often, fail with KilledWorker (the scheduler's allowed-failures), never wait for the watchdog;
    and the cluster runs new tasks."""
    from sojourn.core.runs.runner import DaskExecutor

    with dask_client({"kind": "local", "no_workers_timeout": 300}, 2) as client:
        client.wait_for_workers(2, timeout=120)
        killed: list[int] = []

        def killer():
            for _ in range(2):
                deadline = time.monotonic() + 120
                fresh = []
                while time.monotonic() < deadline:
                    fresh = [p for p in _worker_pids(client) if p not in killed]
                    if len(fresh) >= 2 and len(client.scheduler_info()["workers"]) >= 2:
                        break
                    time.sleep(0.2)
                time.sleep(1.0)
                for pid in fresh:
                    try:
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)
                    except ProcessLookupError:
                        pass

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        t0 = time.monotonic()
        try:
            out = DaskExecutor(client).map(_sleep, [(1.0,)] * 12, [f"t{i}" for i in range(12)], "test cells")
            assert out == [1.0] * 12
        except Exception as exc:
            assert type(exc).__name__ == "KilledWorker", exc
        thread.join(120)
        assert len(killed) >= 4, killed
        assert time.monotonic() - t0 < 300
        client.wait_for_workers(2, timeout=120)
        assert not set(_worker_pids(client)) & set(killed)
        assert DaskExecutor(client).map(_sleep, [(0.1,)] * 4, [f"u{i}" for i in range(4)], "new cells") == [0.1] * 4


def test_a_local_worker_whose_nanny_stopped_for_good_is_replaced():
    """Both nannies shut down for good while tasks wait (what distributed does when the scheduler drops a
    worker a loaded machine kept from answering, or a worker dies at some moments of a restart): nothing in
    distributed starts new ones; the watchdog does, and every task finishes."""
    from sojourn.core.runs.runner import DaskExecutor

    with dask_client({"kind": "local", "no_workers_timeout": 300}, 2) as client:
        client.wait_for_workers(2, timeout=120)
        cluster = client.cluster
        old = {id(w) for w in cluster.workers.values()}

        def stop_nannies():
            time.sleep(1.0)
            for nanny in list(cluster.workers.values()):
                cluster.sync(nanny.close)

        threading.Thread(target=stop_nannies, daemon=True).start()
        t0 = time.monotonic()
        out = DaskExecutor(client).map(_sleep, [(1.0,)] * 8, [f"t{i}" for i in range(8)], "test cells")
        assert out == [1.0] * 8
        live = [w for w in cluster.workers.values() if str(w.status).split(".")[-1] == "running"]
        assert len(live) == 2 and not {id(w) for w in live} & old  # two new nannies
        client.wait_for_workers(2, timeout=60)
        assert time.monotonic() - t0 < 300


def test_watchdog_is_quiet_while_workers_exist():
    with dask_client({"kind": "local", "no_workers_timeout": 1}, 1) as client:
        seen = []
        futures = client.map(_sleep, [1.5, 1.5], pure=False)  # longer than the timeout, but a worker is there
        report_progress(futures, lambda i, n: seen.append((i, n)), client, what="cells")
        assert seen == [(1, 2), (2, 2)]


def test_a_block_whose_workers_keep_dying_ends_within_a_bound(tmp_path):
    """SIGKILL every worker process every 0.3 s while a block of cells runs: the job ends — completed (the
    nanny restarts workers and Dask retries) or failed with an error — within 120 s, never hangs."""
    from sojourn.jsq_ps.jobs import simulate as simulate_block

    sim = {"window": {"length": 60_000, "warmup": 100, "cooldown": 100}, "replications": 4, "seed": 0,
           "backend": "fast"}
    tg = {"dt": 0.01, "t_max": 50.0}
    stop = threading.Event()
    kills = []
    with dask_client({"kind": "local", "no_workers_timeout": 20}, 2) as client:
        client.wait_for_workers(2, timeout=60)

        def killer():
            while not stop.is_set():
                try:
                    pids = client.run(os.getpid, nanny=False)
                except Exception:  # workers restarting
                    pids = {}
                for pid in pids.values():
                    try:
                        os.kill(pid, signal.SIGKILL)
                        kills.append(pid)
                    except ProcessLookupError:
                        pass
                stop.wait(0.3)

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        t0 = time.monotonic()
        outcome = "completed"
        try:
            simulate_block(client, service="exponential", law="exponential", R=3, rhos=["0.90"], mu=1.0, simulation=sim,
                           time_grid=tg, code="test", output=tmp_path / "block.nc", cache=tmp_path / "cache")
        except Exception as exc:  # KilledWorker after the retries, or the watchdog
            outcome = f"{type(exc).__name__}: {exc}"
        finally:
            stop.set()
            thread.join(10)
        elapsed = time.monotonic() - t0
    assert kills, "the killer never reached a worker"
    assert elapsed < 120, (elapsed, outcome)
    if outcome == "completed":
        assert (tmp_path / "block.nc").is_file()
    else:
        assert "KilledWorker" in outcome or "no Dask worker" in outcome, outcome
