"""Calibration of the guard's cost models (sojourn.core.checks.guard, check 3): each model's prediction beside what its
request measures, in a fresh process per case (the peak memory is that process's own), the ratio recorded.

    python benchmarks/cost_models.py            # every case; appends to benchmarks/cost_models.jsonl
    python benchmarks/cost_models.py simulate   # the cases whose name starts with "simulate"

For each case: the predicted seconds and bytes (the estimate the API admits), the measured wall and CPU seconds of
the call (after a small warm-up call that loads numba's cache), the growth of the process's peak resident memory
over the call, and the ratios measured/predicted (CPU seconds: the machine is shared, the wall clock is not the
model's). A refusal is meant to be neither absurdly strict nor lax: the ratios should stay within about 0.2 to 3,
on the safe side (predicted above measured) where they err. The load average is printed and recorded.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORD = HERE / "cost_models.jsonl"

#: (name, setup code defining `predict()` -> list of Estimates and `run()`, and `warm()`)
CASES = {
    "simulate fast R=2 rho=0.5": ("jsq", "fast", 2, 0.5, "exponential", 2_000_000),
    "simulate fast R=10 rho=0.9": ("jsq", "fast", 10, 0.9, "exponential", 500_000),
    "simulate fast R=100 rho=0.9 lognormal": ("jsq", "fast", 100, 0.9, "lognormal:sigma=1", 40_000),
    "simulate fast R=1000 rho=0.9": ("jsq", "fast", 1000, 0.9, "exponential", 4_000),
    "simulate ciw R=1 rho=0.5": ("jsq", "ciw", 1, 0.5, "exponential", 20_000),
    "simulate ciw R=4 rho=0.8 lognormal": ("jsq", "ciw", 4, 0.8, "lognormal:sigma=1", 5_000),
    "simulate ciw R=8 rho=0.9": ("jsq", "ciw", 8, 0.9, "exponential", 2_000),
    "approximate A R=3 rho=0.5": ("apx", "A", 3, 0.5, {}),
    "approximate A R=3 rho=0.5 L2=1000": ("apx", "A", 3, 0.5, {"L2": 1000}),
    "approximate C* R=3 rho=0.95": ("apx", "C*", 3, 0.95, {}),
    "approximate A* R=3 rho=0.9": ("apx", "A*", 3, 0.9, {}),
    "approximate T R=50 rho=0.9": ("apx", "T", 50, 0.9, {}),
    "approximate T R=100 rho=0.9": ("apx", "T", 100, 0.9, {}),
    "split-merge simulate n=10 r=2": ("sm", "split_merge", 10, 2, 1, 500_000),
    "split-merge simulate n=100 r=10 fork-join": ("sm", "fork_join", 100, 10, 3, 50_000),
    "split-merge best n=10 lognormal": ("best", 10, "lognormal:sigma=1", 4, 20_000),
    "restart simulate example1 signal": ("rs", "example1", "signal", 2e7),
    "restart simulate example2 timeout": ("rs", "example2", "timeout", 2e5),
    "restart simulate example3 signal": ("rs", "example3", "signal", 1e6),
    "restart network erlang 1500": ("net", 1500),
    "restart network erlang 3000": ("net", 3000),
}

CHILD = r"""
import json, resource, sys, time
case = json.loads(sys.argv[1])
kind = case[0]
from sojourn.core.checks.guard import set_limits
set_limits(memory=float("inf"), seconds=float("inf"))

def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0

if kind == "jsq":
    _, backend, R, rho, law, horizon = case
    import sojourn
    from sojourn.jsq_ps import cost
    spec = sojourn.JSQPS.from_rho(R, rho, service=law)
    reps = 2
    parts = cost.simulate(spec, horizon, reps, backend, 0.01, 182.32, min(reps, 2))
    warm = lambda: sojourn.simulate(spec, horizon=200.0, replications=1, backend=backend, dt=0.01, t_max=182.32)
    run = lambda: sojourn.simulate(
        spec, horizon=float(horizon), replications=reps, backend=backend, dt=0.01, t_max=182.32
    )
elif kind == "apx":
    _, method, R, rho, hyper = case
    import numpy as np, sojourn
    from sojourn.jsq_ps import cost
    spec = sojourn.mm_jsq_ps(R, rho)
    parts = cost.approximate(spec, method, 18233, 182.32, hyper)
    warm = lambda: sojourn.approximate(sojourn.mm_jsq_ps(2, 0.5), method, t_max=10.0, dt=0.1)
    run = lambda: sojourn.approximate(spec, method, **hyper)
elif kind == "sm":
    _, model, n, r, q, workunits = case
    from sojourn.split_merge.model import SplitMerge
    from sojourn.split_merge.simulate import simulate
    from sojourn.split_merge import cost
    spec = SplitMerge.from_rho(n, r, q, 0.9, "exponential", model)
    parts = cost.simulate(spec, workunits * 1.1, 2, 0.01, 200.0)
    warm = lambda: simulate(spec, workunits=200, replications=1)
    run = lambda: simulate(spec, workunits=workunits, replications=2)
elif kind == "best":
    _, n, law, rmax, workunits = case
    from sojourn.split_merge.best import best
    from sojourn.split_merge import cost
    parts = cost.best(n, law, 1, rmax, workunits, 3, "split_merge", 0.01, 200.0)
    warm = lambda: best(4, 1.0, law, max_replicas=1, workunits=200, replications=2)
    run = lambda: best(n, 1.0, law, max_replicas=rmax, workunits=workunits, replications=3)
elif kind == "rs":
    _, example, semantics, horizon = case
    from sojourn.core.laws.distributions import Exponential
    from sojourn.restart.files import load_model
    from sojourn.restart.simulate import SimulationSpec, simulate
    from sojourn.restart import cost
    net = load_model(example)
    if semantics == "timeout":
        for i in range(len(net.queues)):
            net = net.with_signal_rate(0.0, i)
    spec = SimulationSpec(net, semantics, Exponential(1.0) if semantics == "timeout" else None)
    parts = cost.simulate(spec, horizon, 2, 0.05, 200.0)
    warm = lambda: simulate(spec, replications=1, horizon=500.0)
    run = lambda: simulate(spec, replications=2, horizon=float(horizon))
elif kind == "net":
    _, k = case
    from sojourn.restart import cost
    from sojourn.restart.model import model_from_dict
    from sojourn.restart.solve import solve
    d = {"name": "big", "queues": [{"name": "q", "classes": [{"name": "job", "arrival_rate": 0.01, "success": 0,
                                                            "service": {"erlang": k, "rate": float(k)}}]}]}
    from sojourn.restart.model import network, phase_counts
    parts = [network(phase_counts(d))]
    warm = lambda: solve(model_from_dict({**d, "queues": [{"name": "q", "classes": [{"name": "job",
                     "arrival_rate": 0.01, "success": 0, "service": {"erlang": 3, "rate": 3.0}}]}]}))
    run = lambda: solve(model_from_dict(d))
def children():  # Ciw's worker processes: their CPU and their largest resident set
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime, u.ru_maxrss * 1024.0

warm()
p0, c0, t0, (k0, _) = peak(), time.process_time(), time.perf_counter(), children()
run()
k1, kpeak = children()
wall, cpu = time.perf_counter() - t0, time.process_time() - c0 + (k1 - k0)
ciw = kind == "jsq" and case[1] == "ciw"  # its two worker processes (the largest of them, twice)
grew = 2 * kpeak if ciw else peak() - p0
print(json.dumps({"predicted_seconds": sum(p.seconds for p in parts), "predicted_bytes": sum(p.memory for p in parts),
                  "wall": wall, "cpu": cpu, "grew": grew}))
"""


def run_case(name: str) -> dict:
    spec = CASES[name]
    r = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(spec)], capture_output=True, text=True, check=False, timeout=3600
    )
    if r.returncode:
        raise RuntimeError(f"{name}: {r.stderr[-2000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["name"] = name
    out["cpu_ratio"] = out["cpu"] / out["predicted_seconds"] if out["predicted_seconds"] else float("nan")
    out["wall_ratio"] = out["wall"] / out["predicted_seconds"] if out["predicted_seconds"] else float("nan")
    out["memory_ratio"] = out["grew"] / out["predicted_bytes"] if out["predicted_bytes"] > 50e6 else float("nan")
    return out


def main(argv) -> int:
    names = [n for n in CASES if not argv or any(n.startswith(a) for a in argv)]
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'case':45s} {'pred s':>8s} {'cpu s':>8s} {'wall s':>8s} {'cpu/pred':>8s} {'pred MB':>8s} {'grew MB':>8s} "
          f"{'mem/pred':>8s}")
    rows = []
    for n in names:
        r = run_case(n)
        rows.append(r)
        print(f"{n:45s} {r['predicted_seconds']:8.3g} {r['cpu']:8.3g} {r['wall']:8.3g} {r['cpu_ratio']:8.2f} "
              f"{r['predicted_bytes'] / 1e6:8.3g} {r['grew'] / 1e6:8.3g} {r['memory_ratio']:8.2f}", flush=True)
    with open(RECORD, "a") as f:
        f.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "load_average": load, "cases": rows}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
