"""What a local Dask cluster of 2 workers costs while it waits (issue 36: the CPU outside the tasks): the CPU of this
process and its children over a quiet interval, with distributed's periodic monitors as they ship and with
:data:`sojourn.core.cluster.cluster.QUIET_MONITORS`, alternated in this one process.

    nice -n 10 python benchmarks/idle_cluster.py [--seconds 30] [--rounds 2] [--record]

Each round starts a fresh cluster through :func:`sojourn.core.cluster.cluster.dask_client` (as the pipeline does),
runs one task, waits 3 s, then measures ``--seconds`` of idling. ``--record`` appends to benchmarks/idle_cluster.jsonl.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _record  # noqa: E402


def _process_cpu(p: psutil.Process) -> float:
    try:
        t = p.cpu_times()
    except psutil.NoSuchProcess:  # a child that ended meanwhile
        return 0.0
    return t.user + t.system


def _tree_cpu() -> float:
    me = psutil.Process()
    return sum(_process_cpu(p) for p in (me, *me.children(recursive=True)))


def idle_cpu(quiet: bool, seconds: float) -> float:
    """Cores used by an idle local cluster (2 workers) with the monitors as shipped (``quiet`` False) or quieter."""
    from sojourn.core.cluster import cluster

    kept = cluster.QUIET_MONITORS
    cluster.QUIET_MONITORS = kept if quiet else {}
    try:
        with cluster.dask_client({"kind": "local"}, 2) as client:
            client.submit(sum, [1, 2]).result()
            time.sleep(3.0)
            c0, t0 = _tree_cpu(), time.perf_counter()
            time.sleep(seconds)
            return (_tree_cpu() - c0) / (time.perf_counter() - t0)
    finally:
        cluster.QUIET_MONITORS = kept


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args(argv)
    load0 = os.getloadavg()
    rows = {"as shipped": [], "QUIET_MONITORS": []}
    for _ in range(args.rounds):
        rows["as shipped"].append(idle_cpu(False, args.seconds))
        rows["QUIET_MONITORS"].append(idle_cpu(True, args.seconds))
    print(f"load average {load0} -> {os.getloadavg()}")
    for name, v in rows.items():
        print(f"{name:>15}: {', '.join(f'{x:.4f}' for x in v)} cores while idle (min {min(v):.4f})")
    ratio = min(rows["as shipped"]) / max(min(rows["QUIET_MONITORS"]), 1e-9)
    print(f"ratio as shipped / quiet (minima): {ratio:.2f}")
    if args.record:
        _record.append(HERE / "idle_cluster.jsonl", "idle local cluster, 2 workers", seconds=args.seconds,
                       cores=rows, ratio=round(ratio, 2), load_start=load0)


if __name__ == "__main__":
    main()
