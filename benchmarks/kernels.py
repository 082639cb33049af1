"""The three studies' simulation kernels, ns per event, this checkout against another one, side by side.

    python benchmarks/kernels.py --against PATH/TO/OTHER/CHECKOUT [--rounds 7]

Each round runs every case once in a fresh process per checkout (``PYTHONPATH=<checkout>/src``), alternating the
two checkouts, so that the machine's load falls on both alike; a case's figure is the median over rounds of the
kernel's own time (CPU seconds of the process during the run) per event, and the ratio is the median of the
per-round ratios (this / other). Compilation is excluded by a short warm-up run of every case first. Used to
check that one shared recording helper (sojourn.core.estimates.recording.record, inlined into the kernels) costs nothing
against the release that repeated it in each kernel (issue 22):

* JSQ-PS, general kernel: R = 10, ρ = 0.9, lognormal service (events: arrivals + departures);
* JSQ-PS, exponential kernel: R = 10, ρ = 0.9;
* split-merge: n = 100, r = 3, q = 2, exponential replicas, load 0.9 (events: workunits);
* restart: example 2 under exponential timeouts, rate 1 (events: the kernel's event count).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

#: run in a fresh process: prints {case: (events, cpu seconds)} as JSON
PROBE = r"""
import json, sys, time
import numpy as np

scale = float(sys.argv[1])
out = {}

def timed(fn):
    fn(0.01)  # compile / load the cached kernel
    t0 = time.process_time()
    events = fn(scale)
    return events, time.process_time() - t0

from sojourn.jsq_ps.model import JSQPS
from sojourn.jsq_ps.raw import check_run, run_fast
from sojourn.core.laws import seeds
from sojourn.core.checks.timegrid import grid_size

def jsq(law, kernel):
    spec = JSQPS.from_rho(10, 0.9, service=law)
    def run(f):
        H, W, C, dt, tm, om, kern, sb = check_run(
            spec, 100_000.0 * f, 0.0, 0.0, 0.01, 182.32, "fast", 200, kernel, None
        )
        r = run_fast(spec, kern, seeds.replication_rng(0, spec, 0), W, H - C, dt, grid_size(tm, dt), om, sb)
        return int(r["events"])
    return run

out["jsq_general_lognormal"] = timed(jsq("lognormal:sigma=0.6931471805599453", "general"))
out["jsq_exponential"] = timed(jsq("exponential", "auto"))

from sojourn.split_merge.model import SplitMerge
from sojourn.split_merge.simulate import simulate as sm_simulate

spec = SplitMerge.from_rho(100, 3, 2, 0.9, "exponential")
def sm(f):
    n = max(1000, int(2_000_000 * f))
    sm_simulate(spec, workunits=n, warmup_workunits=0, seed=0, dt=0.01, t_max=50.0)
    return n
out["split_merge"] = timed(sm)

from sojourn.restart.files import load_model
from sojourn.restart.simulate import simulate as rs_simulate, spec_for

rs = spec_for(load_model("example2"), "timeout_exponential", 1.0)
def restart(f):
    ds = rs_simulate(rs, replications=1, seed=0, horizon=max(2000.0, 400_000.0 * f), warmup=0.0, cooldown=0.0)
    return int(ds["events"].values.sum())
out["restart_timeout"] = timed(restart)
print(json.dumps(out))
"""


def probe(checkout: Path, scale: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(Path(checkout) / "src")}
    proc = subprocess.run([sys.executable, "-c", PROBE, str(scale)], capture_output=True, text=True, env=env,
                          check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", required=True, help="the other checkout (a worktree of another commit)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--scale", type=float, default=1.0, help="run length factor (1: ~1-2 s per case)")
    args = ap.parse_args(argv)
    runs: dict = {"this": [], "other": []}
    for k in range(args.rounds):
        order = ("this", "other") if k % 2 == 0 else ("other", "this")
        for who in order:
            runs[who].append(probe(HERE if who == "this" else Path(args.against), args.scale))
    print(f"{'case':<24}{'this ns/event':>15}{'other ns/event':>16}{'ratio (median of rounds)':>26}")
    for case in runs["this"][0]:
        ns = {w: [1e9 * r[case][1] / r[case][0] for r in runs[w]] for w in runs}
        assert all(r[case][0] == runs["this"][0][case][0] for w in runs for r in runs[w]), (
            f"{case}: event counts differ"
        )
        ratios = [a / b for a, b in zip(ns["this"], ns["other"], strict=True)]
        print(f"{case:<24}{statistics.median(ns['this']):15.1f}{statistics.median(ns['other']):16.1f}"
              f"{statistics.median(ratios):26.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
