"""What a run listens on, seen from outside while it runs (issue 35): a thread that scans the machine's listening TCP
sockets (``psutil.net_connections``) every few tenths of a second and keeps those of the run's processes — the
processes whose environment carries a marker the test gave the run (SLURM jobs inherit the environment of the
command that submits them, so the marker reaches route 1's group jobs, route 2's worker jobs and route 3's allocation
and every process they start) or that descend from a given process."""
from __future__ import annotations

import threading
import uuid

import psutil

#: the environment variable that marks a run's processes
MARK = "SOJOURN_TEST_RUN"


def new_mark() -> str:
    return uuid.uuid4().hex[:12]


class ListenerWatch(threading.Thread):
    """``with ListenerWatch(mark) as w: ...`` -> ``w.seen``: {(ip, port, process name and pid)} of every socket a
    marked process listened on while the block ran; ``w.processes``: how many marked processes were seen."""

    def __init__(self, mark: str, interval: float = 0.3):
        super().__init__(daemon=True)
        self.mark, self.interval = mark, interval
        self.seen: set[tuple[str, int, str]] = set()
        self.pids: set[int] = set()
        self._stop_event = threading.Event()
        self._known: dict[int, bool] = {}

    def _marked(self, pid: int) -> bool:
        if pid not in self._known:
            try:
                self._known[pid] = psutil.Process(pid).environ().get(MARK) == self.mark
            except (psutil.Error, OSError):
                return False  # gone, or not readable yet: asked again at the next scan
        return self._known[pid]

    def scan(self) -> None:
        for c in psutil.net_connections("inet"):
            if c.status == psutil.CONN_LISTEN and c.pid and self._marked(c.pid):
                try:
                    what = " ".join(psutil.Process(c.pid).cmdline()[:4])[:120]
                except psutil.Error:
                    what = "?"
                self.seen.add((c.laddr.ip, c.laddr.port, f"pid {c.pid}: {what}"))
                self.pids.add(c.pid)

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.scan()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self._stop_event.set()
        self.join()
        return False

    def outside(self, allowed: set[str]) -> list[tuple[str, int, str]]:
        """The listeners seen on an address not in ``allowed``."""
        return sorted(s for s in self.seen if s[0] not in allowed)
