"""The test config through Snakemake's SLURM executor route against a local run, side by side (issue 23: the
executor route took 4.4x the local wall time, 600 s against 137 s; target <= 2x).

    python benchmarks/slurm_routes.py                 # config/test.yaml, the whole pipeline each way
    python benchmarks/slurm_routes.py --repeat 2      # alternate local / SLURM twice, report each pair

Needs a running SLURM with accounting (`bash .ci/slurm/up.sh`). In one process: a fresh temporary --directory
for each run, `snakemake --cores 2` (local), then `snakemake --workflow-profile workflow/profiles/slurm`
(executor route, the profile as shipped); wall times, the ratio, and from sacct the SLURM jobs the route
submitted (count, elapsed, CPU time, peak memory of the batch step). The results of the two runs are compared
(identical but for timings). Prints everything and appends one JSON line to benchmarks/slurm_routes.jsonl.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "config" / "test.yaml"
PROFILE = ROOT / "workflow" / "profiles" / "slurm"


def _snakemake(workdir: Path, *args: str) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--configfile", str(CONFIG),
           "--directory", str(workdir), *args]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"snakemake failed ({' '.join(cmd)}):\n{(p.stdout + p.stderr)[-4000:]}")
    return wall, p.stdout + p.stderr


def _seconds(text: str) -> float:
    """sacct's [DD-][HH:]MM:SS[.mmm] -> seconds."""
    days, _, rest = text.rpartition("-")
    parts = [float(x) for x in rest.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0.0)
    return (int(days) if days else 0) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]


def _megabytes(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)([KMG]?)", text.strip())
    if not m:
        return 0.0
    return float(m.group(1)) * {"": 1 / 2**20, "K": 1 / 1024, "M": 1.0, "G": 1024.0}[m.group(2)]


def _slurm_jobs(out: str) -> list[dict]:
    ids = re.findall(r"submitted with SLURM jobid (\d+)", out)
    if not ids:
        return []
    time.sleep(2)  # the batch step's accounting lands a moment after the job
    p = subprocess.run(
        ["sacct", "-n", "-P", "-j", ",".join(ids), "-o", "JobID,State,Elapsed,TotalCPU,MaxRSS,AllocCPUS"],
        capture_output=True,
        text=True,
        check=True,
    )
    jobs: dict[str, dict] = {}
    for line in p.stdout.splitlines():
        jid, state, elapsed, cpu, rss, cpus = line.split("|")
        base, _, step = jid.partition(".")
        rec = jobs.setdefault(base, {"id": base, "max_rss_mb": 0.0})
        if not step:
            rec.update(state=state, elapsed_s=_seconds(elapsed), cpu_s=_seconds(cpu), cpus=int(cpus))
        rec["max_rss_mb"] = max(rec["max_rss_mb"], _megabytes(rss))
    for rec in jobs.values():  # no sample: SLURM samples memory every JobAcctGatherFrequency (30 s by default)
        rec["max_rss_mb"] = rec["max_rss_mb"] or None
    return [jobs[i] for i in ids]


def _same_results(a: Path, b: Path) -> int:
    sys.path.insert(0, str(ROOT / "tests" / "workflow"))
    from test_slurm import (
        _assert_same_results,  # the SLURM tests' comparison (all but timings)
    )

    return _assert_same_results(a, b)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1, help="local/SLURM pairs to run (default 1)")
    args = ap.parse_args()
    pairs = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="slurm-routes-") as tmp:
            local, hpc = Path(tmp) / "local", Path(tmp) / "slurm"
            t_local, _ = _snakemake(local, "--cores", "2")
            t_slurm, out = _snakemake(hpc, "--workflow-profile", str(PROFILE))
            jobs = _slurm_jobs(out)
            n_files = _same_results(local, hpc)
        pair = {"local_s": round(t_local, 1), "executor_s": round(t_slurm, 1), "ratio": round(t_slurm / t_local, 2),
                "slurm_jobs": len(jobs), "identical_files": n_files,
                "jobs": [{k: (round(v, 1) if isinstance(v, float) else v) for k, v in j.items()} for j in jobs]}
        pairs.append(pair)
        print(f"local {t_local:.1f} s, SLURM executor route {t_slurm:.1f} s: ratio {t_slurm / t_local:.2f} "
              f"(target <= 2); {len(jobs)} SLURM jobs; {n_files} result files identical")
        for j in jobs:
            print(f"  SLURM job {j['id']}: {j.get('state')}, {j.get('elapsed_s', 0):.0f} s, {j.get('cpus')} CPUs, "
                  f"CPU {j.get('cpu_s', 0):.0f} s, peak "
                  + (f"{j['max_rss_mb']:.0f} MB" if j["max_rss_mb"] else "not sampled (job shorter than the sampling)"))
    record = {"what": "slurm_routes", "config": "config/test.yaml", "machine": os.uname().nodename,
              "cpus": os.cpu_count(), "load_average": list(os.getloadavg()), "pairs": pairs,
              "target_ratio": 2.0}
    with open(ROOT / "benchmarks" / "slurm_routes.jsonl", "a") as fh:
        fh.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
