"""Issue 32's cases as its author ran them: each command (or Snakemake dry run of a config) in a fresh process, its
exit status, the line it ends with, its wall time and its peak resident memory (the child's maximum RSS, from
wait4). The issue asks every case to end in one clear line (or a correct answer) within 5 s and 500 MB.

    python benchmarks/issue32_cases.py            # every case; a table, and benchmarks/issue32_cases.jsonl
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

C = [
    "-R",
    "2",
    "--load",
    "0.5",
    "--horizon",
    "2000",
    "--warmup",
    "100",
    "--dt",
    "0.1",
    "--t-max",
    "10",
    "--replications",
    "2",
    "-o",
    "out.nc",
]
PLAN = ["--mean-service", "1.2ms", "--deadline", "72ms", "--reliability", "0.9999"]

CLI = [
    ("simulate --mu 1e-300", ["simulate", *C, "--mu", "1e-300"]),
    ("simulate --seed 2**64", ["simulate", *C, "--seed", "18446744073709551616"]),
    ("simulate --service lognormal:sigma=40", ["simulate", *C, "--service", "lognormal:sigma=40"]),
    ("restart model erlang 1e8", ["restart", "solve", "-m", "{ERLANG}", "-o", "out.nc"]),
    ("restart optimise --taus 1 1", ["restart", "optimise", "-m", "example1", "--taus", "1", "1", "-o", "out.nc"]),
    ("plan --arrival-rate 1e300/s", ["plan", "--arrival-rate", "1e300/s", *PLAN]),
    ("plan --confirm --replications 1e9", ["plan", "--arrival-rate", "9000/s", *PLAN, "--confirm", "--replications",
                                           "1000000000"]),
    ("split-merge best -n 1e6 --max-replicas 1e6", ["split-merge", "best", "-n", "1000000", "--arrival-rate", "1",
                                                    "--max-replicas", "1000000"]),
    ("approximate exact --max-states 1e20", ["approximate", "-R", "20", "--load", "0.95", "--method", "exact",
                                             "--max-states", "99999999999999999999", "-o", "out.nc"]),
    ("approximate exact --max-states 1e16", ["approximate", "-R", "20", "--load", "0.95", "--method", "exact",
                                             "--max-states", "9999999999999999", "-o", "out.nc"]),
    ("restart simulate --horizon 1e12", ["restart", "simulate", "-m", "example1", "--horizon", "1e12", "-o", "out.nc"]),
    ("restart optimise --horizon 1e12", ["restart", "optimise", "-m", "example1", "--horizon", "1e12", "-o", "out.nc"]),
    ("model alias bomb", ["restart", "solve", "-m", "{BOMB}", "-o", "out.nc"]),
    ("plan --arrival-rate 1e-300/s", ["plan", "--arrival-rate", "1e-300/s", *PLAN]),
    ("plan --accuracy empty", ["plan", "--arrival-rate", "9000/s", *PLAN, "--accuracy", "{EMPTY_CSV}"]),
    ("plan --accuracy wrong columns", ["plan", "--arrival-rate", "9000/s", *PLAN, "--accuracy", "{WRONG_CSV}"]),
    ("plan --accuracy NaN", ["plan", "--arrival-rate", "9000/s", *PLAN, "--accuracy", "{NAN_CSV}"]),
    ("plan --replications 3 without --confirm", ["plan", "--arrival-rate", "9000/s", *PLAN, "--replications", "3"]),
    ("model duplicate key", ["restart", "solve", "-m", "{DUPLICATE}", "-o", "out.nc"]),
    ("restart simulate --horizon 1e300", ["restart", "simulate", "-m", "example1", "--horizon", "1e300", "-o",
                                          "out.nc"]),
]

CONFIGS = [
    ("config seed 1e30", "jsq_ps:\n  simulation:\n    seed: 1.0e+30\n"),
    (
        "config rho_range step 1e-9",
        "jsq_ps:\n  grid:\n    rho: null\n    rho_range: {start: 0.01, stop: 0.99, step: 1.0e-9}\n",
    ),
    ("config scheduler_file missing", "cluster:\n  kind: scheduler_file\n  scheduler_file: nosuch.json\n"),
    ("config n_workers 1000", "cluster:\n  n_workers: 1000\n"),
    ("config duplicate key", "jsq_ps:\n  simulation:\n    replications: 3\n    replications: 4\n"),
    ("config restart.examples {}", "restart:\n  examples: {}\n"),
    ("config experiment_c.laws {}", "split_merge:\n  experiment_c:\n    laws: {}\n"),
]


def run(args: list, cwd: Path) -> dict:
    """The command in a child process under /usr/bin/time (its own maximum RSS, whatever ran before)."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "__MAXRSS_KB__ %M", *args], cwd=cwd, capture_output=True, text=True,
                       check=False, timeout=600)
    wall = time.perf_counter() - t0
    err = [ln for ln in p.stderr.splitlines() if not ln.startswith("__MAXRSS_KB__")
           and not ln.startswith("Command exited with non-zero status")]
    rss = [float(ln.split()[1]) for ln in p.stderr.splitlines() if ln.startswith("__MAXRSS_KB__")]
    return {"status": p.returncode, "wall": wall, "stdout": p.stdout, "stderr": "\n".join(err),
            "peak_mb": rss[0] / 1024 if rss else None}


def _slurm_wait() -> float:
    """Seconds ``scontrol show config`` takes (0 without SLURM): the snakemake-executor-plugin-slurm asks it for
    MinJobAge at import, with a 10 s timeout, so a machine with SLURM's programs and no reachable controller adds
    that much to every Snakemake start."""
    import shutil

    if shutil.which("scontrol") is None:
        return 0.0
    t0 = time.perf_counter()
    try:
        subprocess.run(["scontrol", "show", "config"], capture_output=True, timeout=15, check=False)
    except subprocess.TimeoutExpired:
        pass
    return time.perf_counter() - t0


def main() -> int:
    from workflow.test_guard import FILES

    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    slurm_wait = _slurm_wait()
    if slurm_wait > 1.0:  # not ours: every `snakemake` start pays it, before the Snakefile runs
        print(f"note: `scontrol show config` takes {slurm_wait:.1f} s here (SLURM installed, its controller "
              "unreachable); Snakemake's SLURM executor plugin runs it when imported, so every config case below "
              "includes that wait")
    rows = []
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        for name, text in FILES.items():
            (folder / f"{name}.{'csv' if name.endswith('CSV') else 'yaml'}").write_text(text)
        cases = [(n, [sys.executable, "-m", "sojourn.cli",
                      *[a.replace("{", str(folder) + "/").replace("}", ".csv" if a.endswith("CSV}") else ".yaml")
                        if a.startswith("{") else a for a in argv]]) for n, argv in CLI]
        for n, text in CONFIGS:
            f = folder / f"{n.replace(' ', '_')}.yaml"
            f.write_text(text)
            cases.append((n, [sys.executable, "-m", "snakemake", "-n", "--snakefile", str(ROOT / "Snakefile"),
                              "--directory", str(folder), "--configfile", str(f)]))
        for name, args in cases:
            r = run(args, folder)
            lines = [ln for ln in (r["stderr"] + "\n" + r["stdout"]).splitlines()
                     if "error:" in ln or ln.startswith(("R = ", "invalid config"))]
            line = lines[-1] if lines else (r["stdout"].splitlines() or [""])[0]
            row = {"case": name, "status": r["status"], "wall": round(r["wall"], 2),
                   "peak_mb": round(r["peak_mb"], 1) if r["peak_mb"] else None, "line": line.strip()}
            rows.append(row)
            print(f"{name:45s} exit {row['status']}  {row['wall']:6.2f} s  {row['peak_mb'] or 0:7.1f} MB\n"
                  f"    {row['line'][:300]}", flush=True)
    with open(HERE / "issue32_cases.jsonl", "a") as f:
        f.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "load_average": load,
                            "scontrol_seconds": round(slurm_wait, 2), "cases": rows}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
