"""How fast `sojourn --help` and every sub-command's `--help` answer (issue 25 item 4: each ≤ 0.5 s), side by side
with the interpreter's own start (`python -c pass`) and with `python -c "import numpy"` measured in the same run.

    python benchmarks/cli_help.py                  # this tree's src (5 repeats)
    python benchmarks/cli_help.py --before REV     # and, interleaved with it, the src of git revision REV
    python benchmarks/cli_help.py --repeats 9

Each `--help` runs as a fresh process (``python -m sojourn.cli … --help``, PYTHONPATH = the tree's src, so every
import is counted); the wall time is time.perf_counter around subprocess.run. The commands are run round-robin
(one repeat of every command, then the next), so a change in the machine's load hits all of them alike; the
median over the repeats is printed with the excess over `python -c pass` of the same run, and appended to
benchmarks/cli_help.jsonl with the load average. Both trees' bytecode is written first (this sandbox sets
PYTHONDONTWRITEBYTECODE=1; an installed package has its .pyc), so no run compiles sources. ``--before REV``
exports REV's src with ``git archive`` to a temporary folder: the same measurement of the code before a change.
"""
from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RECORD = HERE / "cli_help.jsonl"
#: the target of issue 25 (seconds of wall time per --help)
TARGET_S = 0.5


def commands(src: Path) -> list[tuple[str, ...]]:
    """Every command path of this tree's ``sojourn`` parser (:func:`sojourn.cli.command_paths`, read in a
    subprocess so nothing of ``src`` is imported here): a new command is measured without editing this file. The
    same paths are measured in the ``--before`` tree."""
    code = "import json; from sojourn.cli import command_paths; print(json.dumps(command_paths()))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(src), check=True)
    return [tuple(c) for c in json.loads(proc.stdout)]


def _env(src: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(src)}


def _wall(argv: list[str], src: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=_env(src), cwd=ROOT)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr}")
    return wall


def measure(trees: dict[str, Path], repeats: int) -> dict:
    """{label: seconds over the repeats} for the references and every tree's --help pages."""
    py = sys.executable
    cases: dict[str, tuple[list[str], Path]] = {
        "python -c pass": ([py, "-c", "pass"], trees["after"]),
        'python -c "import numpy"': ([py, "-c", "import numpy"], trees["after"]),
    }
    paths = commands(trees["after"])
    for name, src in trees.items():
        for cmd in paths:
            cases[f"{name}: sojourn {' '.join(cmd + ('--help',))}"] = ([py, "-m", "sojourn.cli", *cmd, "--help"], src)
    for argv, src in cases.values():  # warm the file cache
        _wall(argv, src)
    times: dict[str, list[float]] = {label: [] for label in cases}
    for _ in range(repeats):
        for label, (argv, src) in cases.items():
            times[label].append(_wall(argv, src))
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", metavar="REV", help="also measure the src of this git revision (e.g. main)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cli_help_") as tmp:
        trees = {"after": ROOT / "src"}
        before_commit = None
        if args.before:
            before_commit = subprocess.run(["git", "rev-parse", "--short", args.before], cwd=ROOT, check=True,
                                           capture_output=True, text=True).stdout.strip()
            archive = subprocess.run(["git", "archive", args.before, "src"], cwd=ROOT, check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            trees = {"before": Path(tmp) / "src", **trees}
        for src in trees.values():
            compileall.compile_dir(str(src / "sojourn"), quiet=1)
        load0 = os.getloadavg()[0]
        times = measure(trees, args.repeats)
        load1 = os.getloadavg()[0]
    median = {label: statistics.median(v) for label, v in times.items()}
    base = median["python -c pass"]
    numpy_s = median['python -c "import numpy"']
    head = f"{'median wall (s)':>15} {'- pass (s)':>10} {'/ pass':>7} {'/ numpy':>8}"
    print(f"{args.repeats} repeats, round-robin; load average {load0:.1f} -> {load1:.1f} on {os.cpu_count()} cores; "
          f"target {TARGET_S} s per --help")
    print(f"{'':<52}{head}")
    worst: dict[str, float] = {}
    for label, m in median.items():
        tree = label.split(":", 1)[0] if ":" in label else ""
        if tree:
            worst[tree] = max(worst.get(tree, 0.0), m)
        print(f"{label:<52}{m:>15.3f} {m - base:>10.3f} {m / base:>7.2f} {m / numpy_s:>8.2f}")
    for tree, m in worst.items():
        print(f"{tree}: slowest --help {m:.3f} s ({m - base:+.3f} s over python -c pass): "
              f"{'within' if m <= TARGET_S else 'ABOVE'} the {TARGET_S} s target")
    with open(RECORD, "a") as fh:
        fh.write(json.dumps({
            "kind": "help", "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "load_average_1min": [round(load0, 2), round(load1, 2)], "cores": os.cpu_count(), "repeats": args.repeats,
            "bytecode": "cached", "before": before_commit, "python_c_pass_s": round(base, 3),
            "python_import_numpy_s": round(numpy_s, 3),
            "median_s": {k: round(v, 3) for k, v in median.items() if ":" in k},
            "slowest_s": {k: round(v, 3) for k, v in worst.items()}}, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
