"""CPU seconds of every thread of a process tree, polled from /proc (Linux), for benchmarks/paper_profile.py.

    python benchmarks/_threads.py PID OUT.json [--every 0.5]

Polls until PID ends; OUT.json holds {pid: {"cmdline": ..., "parent": ppid, "threads": {tid: cpu_s}}}, each
thread's last reading (its utime + stime: cumulative, so a poller attached late still sees the whole life of
every thread alive at its first poll). The thread whose id is the process id is the process's main thread.
"""
from __future__ import annotations

import json
import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def _stat(path):
    with open(path) as fh:
        text = fh.read()
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK  # ppid, utime + stime


def _tree(root: int) -> list[int]:
    parents = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                parents[int(d)] = _stat(f"/proc/{d}/stat")[0]
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += [c for c, pp in parents.items() if pp == p]
    return out


def poll(root: int, seen: dict) -> bool:
    """One reading of every thread of ``root``'s tree into ``seen``; False once ``root`` is gone."""
    if not os.path.exists(f"/proc/{root}"):
        return False
    for pid in _tree(root):
        try:
            ppid, _ = _stat(f"/proc/{pid}/stat")
            entry = seen.setdefault(str(pid), {"parent": ppid, "threads": {}})
            if "cmdline" not in entry:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    entry["cmdline"] = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
            for tid in os.listdir(f"/proc/{pid}/task"):
                try:
                    entry["threads"][tid] = _stat(f"/proc/{pid}/task/{tid}/stat")[1]
                except (OSError, ValueError, IndexError):
                    pass
        except (OSError, ValueError, IndexError):
            pass
    return True


def watch(root: int, out: str, every: float = 0.5) -> dict:
    seen: dict = {}
    while poll(root, seen):
        tmp = out + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(seen, fh)
        os.replace(tmp, out)
        time.sleep(every)
    return seen


if __name__ == "__main__":
    every = float(sys.argv[sys.argv.index("--every") + 1]) if "--every" in sys.argv else 0.5
    watch(int(sys.argv[1]), sys.argv[2], every)
