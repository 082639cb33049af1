"""How long `sojourn restart optimise --model example2` takes with its defaults (issue 26: <= 60 s on this machine, or
a refusal with the predicted time), beside the reference: the same sweep with the kernel's former stop at 500 jobs
present (``--max-jobs 500 --max-time none``), which grew the queues of the unstable tau < 0.05 to 500 jobs in every
replication (over 12 minutes at the default 10 replications).

    python benchmarks/restart_optimise.py              # the default command (wall and CPU seconds)
    python benchmarks/restart_optimise.py reference    # also the reference, at 2 replications (its cost is linear
                                                       # in them: x 5 gives the default's 10); ~3 min of CPU

Each run is a fresh process (imports counted); CPU = user + system of the child (getrusage). The machine is shared:
the load average is printed and recorded (benchmarks/restart_optimise.jsonl); trust the CPU time.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RECORD = HERE / "restart_optimise.jsonl"
BASE = ["restart", "optimise", "--model", "example2"]


def run(args: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "sojourn.cli", *BASE, *args, "-o", f"{tmp}/o.nc"],
                              capture_output=True, text=True, env=env, cwd=ROOT)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"sojourn {' '.join(BASE + args)} failed:\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    best = [line for line in proc.stdout.splitlines() if line.startswith("best tau")]
    return {"args": args, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "best": best}


def main(argv) -> None:
    out = {"load_average_1min": round(os.getloadavg()[0], 2), "cores": os.cpu_count()}
    out["default"] = run([])
    print(f"default (10 replications): wall {out['default']['wall_s']} s, CPU {out['default']['cpu_s']} s")
    if "reference" in argv:
        ref = run(["--max-jobs", "500", "--max-time", "none", "--replications", "2"])
        out["reference_2_replications"] = ref
        print(f"reference (--max-jobs 500, 2 replications): wall {ref['wall_s']} s, CPU {ref['cpu_s']} s; "
              f"x 5 for 10 replications: CPU ~{5 * ref['cpu_s']:.0f} s; "
              f"ratio reference/default (CPU, 10 replications): {5 * ref['cpu_s'] / out['default']['cpu_s']:.0f}")
    print(f"load average {out['load_average_1min']} on {out['cores']} cores")
    with open(RECORD, "a") as fh:
        fh.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
