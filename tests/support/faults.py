"""A worker killed in the middle of a job, the way an operator or the kernel's OOM killer would: SIGKILL to the
worker process of a real LocalCluster (its nanny starts a new one; the runner's retries resubmit its tasks)."""
from __future__ import annotations

import os
import signal
import threading
import time


def kill_a_worker_while(client, job, *, after: float = 1.0, kills: int = 1):
    """Run ``job()`` while a thread SIGKILLs one worker process ``kills`` times, the first ``after`` seconds in
    (then after each replacement has joined); returns (job's result, the pids killed)."""
    stop = threading.Event()
    killed: list = []

    def killer():
        if stop.wait(after):
            return
        for _ in range(kills):
            try:
                pids = client.run(os.getpid, nanny=False)
            except Exception:
                pids = {}
            for pid in sorted(pids.values())[:1]:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + 60
            while not stop.is_set() and time.monotonic() < deadline:  # the nanny's replacement joins
                try:
                    if len(client.scheduler_info()["workers"]) >= 2 and set(client.run(os.getpid).values()) - set(
                        killed
                    ):
                        break
                except Exception:
                    pass
                stop.wait(0.2)

    thread = threading.Thread(target=killer, daemon=True)
    thread.start()
    try:
        return job(), killed
    finally:
        stop.set()
        thread.join(timeout=70)
