"""Run the fault tests N times in a row and print how often each passed (issue 13: each must pass 10 of 10).

    python benchmarks/fault_repeat.py [N=10] [pytest node ids …]

Default selection: the worker-kill, SIGINT, SIGTERM, SIGKILL + --unlock and damaged-file tests through real
Snakemake (tests/workflow/test_faults.py), the repeated worker kills and the no-workers watchdog
(tests/workflow/test_no_hang.py), the damaged-file unit tests (tests/core/test_integrity.py) and the pipeline-level
repair (tests/workflow/test_pipeline.py::test_damaged_results_are_rebuilt_by_the_next_run). Each round is one pytest
run (two xdist workers, whole files each, as in CI); the per-test outcome is read from its JUnit XML. Run
from the repository root with PYTHONPATH=src when testing a working tree.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ["tests/workflow/test_faults.py", "tests/workflow/test_no_hang.py", "tests/core/test_integrity.py",
           "tests/workflow/test_pipeline.py::test_damaged_results_are_rebuilt_by_the_next_run"]


def outcomes(xml_path) -> dict[str, str]:
    out = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        out[name] = ("failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed")
    return out


def main(argv):
    n = int(argv[0]) if argv and argv[0].isdigit() else 10
    selection = [a for a in argv if not a.isdigit()] or DEFAULT
    passed, seen = Counter(), Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(1, n + 1):
            xml = Path(tmp) / f"round{i}.xml"
            t0 = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                   f"--junitxml={xml}", *selection], cwd=ROOT, capture_output=True, text=True)
            res = outcomes(xml) if xml.exists() else {}
            for name, state in res.items():
                seen[name] += 1
                passed[name] += state == "passed"
            bad = sorted(k for k, v in res.items() if v != "passed")
            print(f"round {i}/{n}: exit {proc.returncode}, {sum(v == 'passed' for v in res.values())}/{len(res)} "
                  f"passed in {time.monotonic() - t0:.0f} s" + (f"; not passed: {', '.join(bad)}" if bad else ""),
                  flush=True)
            if not res:
                print(proc.stdout[-3000:] + proc.stderr[-3000:], flush=True)
    print(f"\n{'passed':>6} {'of':>3}  test")
    for name in sorted(seen):
        print(f"{passed[name]:>6} {seen[name]:>3}  {name}")
    return 0 if all(passed[k] == seen[k] == n for k in seen) and seen else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
