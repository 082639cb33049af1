"""The approximation cells' CPU, this checkout against a reference one, side by side (issue 36): the same cells of the
paper grid computed in two worker processes — one importing this checkout's ``sojourn``, one a reference source tree
(e.g. main's, exported with ``git archive``) — alternately, cell by cell, so both see the same load. Prints the CPU
seconds of every cell in each, their ratio, and whether the two results are the same bits (every data variable of
the cell's dataset but ``run_time``, and the exact plan), then the means per kind of cell with the load average.

    git -C /work/main archive main src | tar -x -C /tmp/ref        # a reference source tree
    nice -n 10 python benchmarks/approximation_speed.py --reference /tmp/ref/src [--R 1 2 ... 10]
        [--rho 0.05 0.15 ... 0.95] [--laws deterministic gamma:shape=2] [--law-R 1 3 5 10] [--law-rho 0.1 0.5 0.9]
        [--repeat 3] [--record LABEL]

The cells are the pipeline's tasks: :func:`sojourn.jsq_ps.solve.cell.approximate_cell` with config/paper.yaml's
methods, L1 (Table 4), L2 = 130, exact budget and shared corrected methods (an M/M/R cell), and
:func:`sojourn.jsq_ps.solve.cell.approximate_law_cell` with method T (an M/G/R cell). Each worker first computes
:data:`WARM` (imports, numba kernels loaded from their cache: what a long-lived Dask worker pays once), and the CPU
is the worker's process CPU (``time.process_time``) around the call. The default slice is uniform in ρ over the
paper grid (0.05, 0.15, …, 0.95 stand for the ten intervals of 0.1), so its plain mean estimates the grid's mean CPU
per cell. ``--record LABEL`` appends the rows and means to benchmarks/approximation_speed.jsonl.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

#: config/paper.yaml's approximation section
METHODS = ["A", "B", "C", "D", "E", "F", "A*", "B*", "C*", "D*", "E*", "F*", "exact", "T"]
BUDGET = {"max_states": 600000, "max_seconds": 2}
#: cells each worker computes before the measured ones (imports; the level solve's and exact's numba kernels)
WARM = [("mmr", 2, 0.5, ""), ("mmr", 6, 0.9, ""), ("mmr", 4, 0.95, ""), ("law", 3, 0.5, "gamma:shape=2"),
        ("law", 3, 0.5, "deterministic")]

WORKER = r"""
import hashlib, json, sys, time
import numpy as np
from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.naming import table4_L1
from sojourn.jsq_ps.solve.cell import approximate_cell, approximate_law_cell
METHODS, BUDGET = json.loads(sys.argv[1]), json.loads(sys.argv[2])
t = time_grid(182.32, 0.01)

def digest(ds):
    h = hashlib.sha256()
    for name in sorted(ds.data_vars):
        if name == "run_time":
            continue
        a = np.ascontiguousarray(ds[name].values)
        h.update(name.encode()); h.update(str(a.dtype).encode()); h.update(a.tobytes())
    h.update(str(ds.attrs.get("exact_plan", "")).encode())
    return h.hexdigest()[:16]

print(json.dumps({"file": __import__("sojourn").__file__}), flush=True)
from sojourn.jsq_ps.solve import exact
for line in sys.stdin:
    kind, R, rho, law = json.loads(line)
    # as the pipeline computes a cell once: nothing kept from a computation of it before (a repeat)
    if hasattr(exact, "forget_solves"):
        exact.forget_solves()
    else:
        exact._LAST_SOLVE = (None, None)
        exact._forget_warm()
    c0 = time.process_time()
    if kind == "mmr":
        ds = approximate_cell(R, rho, 1.0, METHODS, t, {"L1": table4_L1(R), "L2": 130}, True, BUDGET)
    else:
        ds = approximate_law_cell(law, R, rho, 1.0, ["T"], t)
    cpu = time.process_time() - c0
    print(json.dumps({"cpu": cpu, "digest": digest(ds)}), flush=True)
"""


class Worker:
    """One long-lived process computing cells on request (``src``: the source tree whose ``sojourn`` it imports)."""

    def __init__(self, src: Path):
        env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(METHODS), json.dumps(BUDGET)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd="/tmp")
        self.file = json.loads(self.proc.stdout.readline())["file"]

    def cell(self, kind, R, rho, law=""):
        self.proc.stdin.write(json.dumps([kind, R, rho, law]) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.file} died at {kind} R={R} rho={rho} {law}")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", type=Path, required=True, help="the reference checkout's src folder")
    ap.add_argument("--R", type=int, nargs="*", default=list(range(1, 11)),
                    help="M/M/R cells' R (none: law cells only)")
    ap.add_argument("--rho", type=float, nargs="+", default=[round(0.05 + 0.1 * i, 2) for i in range(10)])
    ap.add_argument("--laws", nargs="*", default=["deterministic", "gamma:shape=2"])
    ap.add_argument("--law-R", type=int, nargs="+", default=[1, 3, 5, 10])
    ap.add_argument("--law-rho", type=float, nargs="+", default=[0.1, 0.5, 0.8, 0.95])
    ap.add_argument("--repeat", type=int, default=1, help="compute each cell this many times in each worker, "
                    "alternately, and keep each worker's least CPU (less noise on a shared machine)")
    ap.add_argument("--record", metavar="LABEL")
    args = ap.parse_args(argv)
    ref, new = Worker(args.reference), Worker(ROOT / "src")
    print(f"reference: {ref.file}\nthis:      {new.file}")
    for w in (ref, new):
        for c in WARM:
            w.cell(*c)
    cells = [("mmr", R, rho, "") for R in args.R for rho in args.rho]
    cells += [("law", R, rho, law) for law in args.laws for R in args.law_R for rho in args.law_rho]
    load0 = os.getloadavg()
    rows = []
    print(f"{'kind':>4} {'law':>14} {'R':>3} {'rho':>5} {'ref CPU s':>10} {'new CPU s':>10} {'ratio':>6}  same bits")
    for i, (kind, R, rho, law) in enumerate(cells):
        out = {ref: [], new: []}
        for r in range(args.repeat):
            pair = (ref, new) if (i + r) % 2 == 0 else (new, ref)  # alternate the order: neither always runs first
            for w in pair:
                out[w].append(w.cell(kind, R, rho, law))
        a, b = (min(out[w], key=lambda o: o["cpu"]) for w in (ref, new))
        row = {"kind": kind, "law": law, "R": R, "rho": rho, "ref_cpu": a["cpu"], "new_cpu": b["cpu"],
               "identical": len({o["digest"] for o in out[ref] + out[new]}) == 1}  # every repeat in both
        rows.append(row)
        print(f"{kind:>4} {law[:14]:>14} {R:>3} {rho:>5g} {a['cpu']:10.3f} {b['cpu']:10.3f} "
              f"{a['cpu'] / max(b['cpu'], 1e-9):6.2f}  {'yes' if row['identical'] else 'NO'}", flush=True)
    ref.close()
    new.close()
    load1 = os.getloadavg()
    summary = {}
    for kind in ("mmr", "law"):
        sel = [r for r in rows if r["kind"] == kind]
        if not sel:
            continue
        old, cur = np.array([r["ref_cpu"] for r in sel]), np.array([r["new_cpu"] for r in sel])
        summary[kind] = {"cells": len(sel), "ref_mean": float(old.mean()), "new_mean": float(cur.mean()),
                         "ref_median": float(np.median(old)), "new_median": float(np.median(cur)),
                         "ratio_of_sums": float(old.sum() / cur.sum()),
                         "identical": int(sum(r["identical"] for r in sel))}
        s = summary[kind]
        print(f"{'M/M/R' if kind == 'mmr' else 'M/G/R'} cells: {s['cells']}, mean CPU s {s['ref_mean']:.3f} -> "
              f"{s['new_mean']:.3f} (median {s['ref_median']:.3f} -> {s['new_median']:.3f}), "
              f"{s['ratio_of_sums']:.2f}x fewer CPU seconds; same bits in {s['identical']} of {s['cells']}")
    print(f"load average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, "
          f"at end {load1[0]:.2f} {load1[1]:.2f} {load1[2]:.2f}")
    if args.record:
        git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        with open(HERE / "approximation_speed.jsonl", "a") as fh:
            fh.write(json.dumps({"label": args.record, "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "git": git,
                                 "reference": str(args.reference), "load_start": load0, "load_end": load1,
                                 "summary": summary, "rows": rows}) + "\n")
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
