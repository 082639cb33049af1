"""How far this checkout's approximation cells move from a reference's (issue 36: the table every deliberate change of
results gives): the same M/M/R cells of the paper grid (the pipeline's task, as ``benchmarks/approximation_speed.py``
computes them) in two worker processes — one importing this checkout's ``sojourn``, one a reference source tree — and,
per method, the largest |ΔCDF| over the cells and the grid, the largest |Δ| of the 99th, 99.9th, 99.99th and 99.999th
percentiles (the project's percentile rule, on the 0.01 grid) and in how many cells any of them moved.

    git -C /work/main archive main src | tar -x -C /tmp/ref
    nice -n 10 python benchmarks/approximation_changes.py --reference /tmp/ref/src [--R 1 ... 10]
        [--rho 0.1 0.5 0.8 0.9 0.95 0.99] [--record LABEL]

``--record LABEL`` appends the table to benchmarks/approximation_changes.jsonl.
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
sys.path.insert(0, str(HERE))
from approximation_speed import BUDGET, METHODS  # noqa: E402  (the same cells as the speed benchmark)

LEVELS = (0.99, 0.999, 0.9999, 0.99999)

WORKER = r"""
import json, sys
import numpy as np
from sojourn.core.checks.timegrid import time_grid
from sojourn.core.estimates.stats import quantile
from sojourn.jsq_ps.naming import table4_L1
from sojourn.jsq_ps.solve import exact
from sojourn.jsq_ps.solve.cell import approximate_cell
METHODS, BUDGET, LEVELS = json.loads(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
t = time_grid(182.32, 0.01)
print(json.dumps({"file": __import__("sojourn").__file__}), flush=True)
for line in sys.stdin:
    R, rho, path = json.loads(line)
    exact.forget_solves()
    ds = approximate_cell(R, rho, 1.0, METHODS, t, {"L1": table4_L1(R), "L2": 130}, True, BUDGET)
    cdf = ds["cdf"].values
    pct = np.array([[float(quantile(t, c, p)) if np.all(np.isfinite(c)) else np.nan for p in LEVELS] for c in cdf])
    np.savez(path, cdf=cdf, pct=pct)
    print(json.dumps({"done": path}), flush=True)
"""


def worker(src: Path):
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(METHODS), json.dumps(BUDGET),
                             json.dumps(LEVELS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
                            cwd="/tmp")
    print(json.loads(proc.stdout.readline())["file"])
    return proc


def compute(proc, R, rho, path):
    proc.stdin.write(json.dumps([R, rho, str(path)]) + "\n")
    proc.stdin.flush()
    if not proc.stdout.readline():
        raise RuntimeError(f"worker died at R={R} rho={rho}")
    with np.load(path) as z:
        return z["cdf"], z["pct"]


def moves(cells, ref, new, tmp):
    """{method: [max |ΔCDF|, max |Δx_p| per level…, cells with a percentile moved]} over ``cells``."""
    out = {m: [0.0] + [0.0] * len(LEVELS) + [0] for m in METHODS}
    for R, rho in cells:
        (a, pa), (b, pb) = (compute(p, R, rho, tmp / f"{k}.npz") for k, p in (("ref", ref), ("new", new)))
        for i, m in enumerate(METHODS):
            d = np.abs(b[i] - a[i])
            row = out[m]
            row[0] = max(row[0], float(np.nanmax(d)) if np.isfinite(d).any() else 0.0)
            dp = np.abs(pb[i] - pa[i])
            both_nan = np.isnan(pa[i]) & np.isnan(pb[i])
            dp = np.where(both_nan, 0.0, np.where(np.isnan(dp), np.inf, dp))
            if np.isnan(a[i]).all() != np.isnan(b[i]).all():
                where = "this checkout" if np.isnan(a[i]).all() else "the reference"
                print(f"R = {R}, rho = {rho}: {m} computed in {where} only")
            for j in range(len(LEVELS)):
                row[1 + j] = max(row[1 + j], float(dp[j]))
            row[-1] += int(np.any(dp > 0))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", type=Path, required=True, help="the reference checkout's src folder")
    ap.add_argument("--R", type=int, nargs="+", default=list(range(1, 11)))
    ap.add_argument("--rho", type=float, nargs="+", default=[0.1, 0.5, 0.8, 0.9, 0.95, 0.99])
    ap.add_argument("--record", metavar="LABEL")
    args = ap.parse_args(argv)
    import tempfile

    ref, new = worker(args.reference), worker(ROOT / "src")
    cells = [(R, rho) for R in args.R for rho in args.rho]
    with tempfile.TemporaryDirectory() as tmp:
        table = moves(cells, ref, new, Path(tmp))
    for p in (ref, new):
        p.stdin.close()
        p.wait()
    print(f"{len(cells)} cells, R {args.R}, rho {args.rho}")
    print(f"{'method':>6} {'max|dCDF|':>10} " + " ".join(f"{'dx_' + format(100 * p, 'g'):>11}" for p in LEVELS)
          + "  cells moved")
    for m, row in table.items():
        print(f"{m:>6} {row[0]:10.2e} " + " ".join(f"{x:11.3g}" for x in row[1:-1]) + f"  {row[-1]}")
    if args.record:
        git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        with open(HERE / "approximation_changes.jsonl", "a") as fh:
            fh.write(json.dumps({"label": args.record, "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "git": git,
                                 "reference": str(args.reference), "R": args.R, "rho": args.rho,
                                 "levels": LEVELS, "table": table}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
