"""How fast `sojourn plan` answers (issue 14: ≤ 2 s without --confirm, imports included; ≤ 60 s with --confirm
at p = 0.9999 on 2 cores; issue 24: the issue-14 example analytically, by T, in ≤ 0.5 s of computation; issue 34:
``--service-law gamma:shape=2`` in ≤ 3 s without simulating, by T with the law), and
what the exact chain costs (the calibration of ``plan.EXACT_MAX_LOAD``).

    python benchmarks/plan.py answer     # CLI wall and CPU time of answers without --confirm (3 runs each)
    python benchmarks/plan.py compute    # the answer's computation: sojourn.plan() in a fresh process (its first
                                         # call, with the imports it needs) and again in the same process (5 runs)
    python benchmarks/plan.py answer gamma   # only the cases whose name contains "gamma"
    python benchmarks/plan.py confirm    # the issue's example with --confirm (p = 0.9999)
    python benchmarks/plan.py exact      # CPU seconds of one exact evaluation vs R and rho (t_max = 80)
    python benchmarks/plan.py all

Each command runs `sojourn plan` as a fresh process (``python -m sojourn.cli``, so imports are counted), wall
time from time.perf_counter around it, CPU time (user + system) of the child from getrusage. The machine is
shared: the load average is recorded with every result (appended to benchmarks/plan.jsonl); trust runs at a
load below ~1 per core, and the CPU time anyway.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RECORD = HERE / "plan.jsonl"

EXAMPLE = ["--arrival-rate", "9000/s", "--mean-service", "1.2ms", "--budget", "100ms", "--network-latency", "28ms",
           "--reliability", "0.9999"]
ANSWERS = {
    # the example: T at R = 11, 12, 13 (nothing simulated)
    "issue example (100 ms budget, 28 ms network, p = 0.9999)": EXAMPLE,
    # answered by the exact chain (R = 3, 4, 5)
    "exact: 2000/s, 1 ms, d = 20 ms, p = 0.9999": ["--arrival-rate", "2000/s", "--mean-service", "1ms",
                                                   "--deadline", "20ms", "--reliability", "0.9999"],
    # answered by T (R = 12, 13, 14: beyond exact's range; before T, approximations from the accuracy table)
    "T: 9/ms, 1.2 ms, d = 10 ms, p = 0.99": ["--arrival-rate", "9/ms", "--mean-service", "1.2ms",
                                             "--deadline", "10ms", "--reliability", "0.99"],
    # issue 34: the example with gamma service, by T with the law itself (R = 11, 12, 13; before, simulated)
    "T-law: the issue example, gamma:shape=2 service": [*EXAMPLE, "--service-law", "gamma:shape=2"],
    # a law that is not phase-type: its stage family extrapolated
    "T-law: the issue example, lognormal:sigma=0.6931471805599453": [*EXAMPLE, "--service-law",
                                                                     "lognormal:sigma=0.6931471805599453"],
}
#: sojourn.plan's arguments of the issue's example (the answer's computation, :func:`compute`)
EXAMPLE_CALL = 'sojourn.plan("9000/s", "1.2ms", deadline="72ms", reliability=0.9999)'


def run_cli(args: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "sojourn.cli", "plan", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"sojourn plan {' '.join(args)} failed:\n{proc.stderr}")
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3), "answer": proc.stdout.splitlines()[0],
            "output": proc.stdout}


def compile_package() -> None:
    """Write the package's bytecode (.pyc), as an installed package or a first run has it: an environment with
    PYTHONDONTWRITEBYTECODE=1 (this sandbox's) and an editable install would otherwise compile every module from
    source in every run (~0.3 s of the answer)."""
    import compileall

    compileall.compile_dir(str(ROOT / "src" / "sojourn"), quiet=1)


def record(kind: str, result: dict) -> None:
    result = {"kind": kind, "load_average_1min": round(os.getloadavg()[0], 2), "cores": os.cpu_count(),
              "bytecode": "cached", **result}
    with open(RECORD, "a") as fh:
        fh.write(json.dumps({k: v for k, v in result.items() if k != "output"}, ensure_ascii=False) + "\n")


def answers(repeats: int = 3, only: str = "") -> None:
    run_cli(list(ANSWERS.values())[1])  # warm the file cache
    for name, args in ANSWERS.items():
        if only not in name:
            continue
        runs = [run_cli(args) for _ in range(repeats)]
        best = min(runs, key=lambda r: r["wall_s"])
        print(
            f"{name}: wall {', '.join(str(r['wall_s']) for r in runs)} s; "
            f"CPU {', '.join(str(r['cpu_s']) for r in runs)} s"
            f" (load {os.getloadavg()[0]:.1f})\n  {best['answer']}"
        )
        record("answer", {"case": name, "walls_s": [r["wall_s"] for r in runs], "cpus_s": [r["cpu_s"] for r in runs],
                          "answer": best["answer"]})
    print(runs[-1]["output"])


def compute(repeats: int = 5) -> None:
    """sojourn.plan() of the issue's example in a fresh process: its first call (the numpy/scipy parts the answer
    needs are imported then, the package itself before the clock starts) and ``repeats`` more in the same process
    (the computation alone: the search, T at each R, the rows)."""
    code = f"""
import json, time
import sojourn
t0 = time.perf_counter(); r = {EXAMPLE_CALL}; first = time.perf_counter() - t0
again = []
for _ in range({repeats}):
    t0 = time.perf_counter(); r = {EXAMPLE_CALL}; again.append(time.perf_counter() - t0)
print(json.dumps({{"first_s": round(first, 3), "again_s": [round(x, 3) for x in again], "answer": r.message,
                  "methods": [row.get("method") for row in r.rows],
                  "seconds_per_R": {{row["R"]: round(row["seconds"], 3)
                                    for row in r.rows if "seconds" in row}}}}))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    r = json.loads(proc.stdout.splitlines()[-1])
    print(f"issue example, sojourn.plan(): first call in a fresh process {r['first_s']} s, then "
          f"{', '.join(map(str, r['again_s']))} s (load {os.getloadavg()[0]:.1f})\n  {r['answer']}; methods "
          f"{r['methods']}; seconds per R (first call) {r['seconds_per_R']}")
    record("compute", {"case": "issue example, sojourn.plan()", **r})


def confirm() -> None:
    r = run_cli(EXAMPLE + ["--confirm"])
    print(f"issue example with --confirm: wall {r['wall_s']} s, CPU {r['cpu_s']} s (load {os.getloadavg()[0]:.1f})")
    print(r["output"])
    record("confirm", {"case": "issue example --confirm", "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
                       "answer": r["answer"]})


def exact_costs() -> None:
    sys.path.insert(0, str(ROOT / "src"))
    import numpy as np

    from sojourn.jsq_ps.plan import EXACT_MAX_LOAD
    from sojourn.jsq_ps.solve.exact import exact_sojourn_cdf

    t = np.linspace(0.0, 80.0, 1001)
    exact_sojourn_cdf(1.0, 1.0, 2, t)  # imports and first-call costs out of the way
    grid = {R: [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99] for R in (1, 2, 3, 4, 5, 6, 7)}
    print("CPU seconds of one exact evaluation, t in [0, 80] (1001 points); * = within plan.EXACT_MAX_LOAD")
    out = {}
    for R, rhos in grid.items():
        cells = []
        for rho in rhos:
            if R >= 3 and rho > EXACT_MAX_LOAD.get(R, 0) + 0.15:
                break  # far over the budget: seconds to minutes
            c0 = time.process_time()
            res = exact_sojourn_cdf(rho * R, 1.0, R, t)
            cpu = time.process_time() - c0
            cells.append((rho, cpu, res.n_tagged_states))
            out[f"R={R},rho={rho}"] = round(cpu, 3)
        print(f"  R = {R}: " + ", ".join(f"{rho:g}: {cpu:.3f}{'*' if rho <= EXACT_MAX_LOAD.get(R, -1) else ''}"
                                        for rho, cpu, _ in cells))
    record("exact", {"cpu_s": out})


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    compile_package()
    if what in ("exact", "all"):
        exact_costs()
    if what in ("compute", "all"):
        compute()
    if what in ("answer", "all"):
        answers(only=sys.argv[2] if len(sys.argv) > 2 else "")
    if what in ("confirm", "all"):
        confirm()
