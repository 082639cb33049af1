"""A run never hangs: a job whose Dask cluster has no worker left fails after cluster.no_workers_timeout with a
message naming its cells, and a job whose workers keep being killed ends (done or failed) within a bound.
Real LocalClusters and real SIGKILLs, no mocks."""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from sojourn.core.cluster import dask_client
from sojourn.core.io import report_progress

pytestmark = pytest.mark.slow


def _sleep(x):
    time.sleep(x)
    return x


def test_watchdog_fails_a_wait_when_the_cluster_has_no_worker():
    with dask_client({"kind": "local", "no_workers_timeout": 3}, 1) as client:
        client.wait_for_workers(1, timeout=60)
        futures = client.map(_sleep, [30, 30], pure=False)
        time.sleep(0.5)
        client.cluster.scale(0)  # every worker gone: the tasks can never run
        t0 = time.monotonic()
        with pytest.raises(RuntimeError, match=r"no Dask worker for 3 s while 2 of 2 test cells were unfinished"):
            report_progress(futures, None, client, what="test cells")
        assert time.monotonic() - t0 < 30


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

    sim = {"horizon": 60_000, "warmup": 100, "cooldown": 100, "replications": 4, "seed": 0, "backend": "fast"}
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
