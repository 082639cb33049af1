"""Where the CI's test time goes (issue 36): every test's setup/call/teardown, per file, per kind, per xdist worker.

    # 1. record (a pytest plugin; the suite as .ci/run runs it, with the load average sampled at every report):
    SOJOURN_CI=1 SOJOURN_REQUIRE_SLURM=1 CI_TIME_OUT=/tmp/ci_time PYTHONPATH=benchmarks \\
        nice -n 10 python -m pytest -q -p ci_time
    # 2. summarise (prints the tables; --append adds one JSON line to benchmarks/ci_time.jsonl):
    python benchmarks/ci_time.py /tmp/ci_time --label "main 96e6cac" [--append]

What is recorded: the controller writes one JSON line per test phase (node id, phase, duration, start and stop as
wall-clock times, the xdist worker that ran it, the 1-minute load average at the time) to ``$CI_TIME_OUT.tests.jsonl``;
each worker writes the set-up time of every fixture broader than a function (module, package, session: a pipeline
run, a Dask cluster) to ``$CI_TIME_OUT.fixtures.<worker>.jsonl``. The summary groups the time by file, by kind (a
hand-kept map from file to what dominates its time: a Snakemake pipeline, a Dask cluster, SLURM, CLI subprocesses,
the fuzzer, the documentation's examples, numerics), and by worker, with each worker's busy time and the instant it
went idle — a long file left alone on one worker at the end shows as the gap between the two workers' ends.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: what dominates each file's time (by reading the file; checked against the fixture table). Unlisted: "numerics"
#: (kernels, solvers, statistics in the test process, with CLI subprocesses here and there).
KINDS = {
    **dict.fromkeys(("tests/workflow/test_pipeline.py", "tests/workflow/test_house.py",
                     "tests/workflow/test_special_outputs.py", "tests/workflow/test_faults.py",
                     "tests/restart/test_restart_pipeline.py", "tests/split_merge/test_split_merge_pipeline.py",
                     "tests/workflow/test_bad_inputs.py", "tests/workflow/test_guard.py"),
                    "snakemake runs and dry runs"),
    **dict.fromkeys(("tests/workflow/test_slurm.py", "tests/workflow/test_slurm_dask.py",
                     "tests/workflow/test_slurm_profile.py", "tests/workflow/test_pipeline_slurm.py"),
                    "slurm (and its snakemake plans)"),
    **dict.fromkeys(("tests/workflow/test_signals.py", "tests/workflow/test_no_hang.py",
                     "tests/core/test_cluster_network.py", "tests/jsq_ps/test_simulate_api.py"),
                    "dask clusters and process trees"),
    "tests/workflow/test_fuzz.py": "fuzzer",
    "tests/test_docs_examples.py": "doc examples (CLI and snakemake subprocesses)",
    **dict.fromkeys(("tests/workflow/test_cli_imports.py", "tests/workflow/test_cli_progress.py",
                     "tests/jsq_ps/test_plan.py"), "cli subprocesses and simulation checks"),
}


# ----------------------------------------------------------------------------------------------------- the plugin
def _out() -> str | None:
    return os.environ.get("CI_TIME_OUT")


def _write(path: str, record: dict) -> None:
    with open(path, "a") as f:
        f.write(json.dumps(record) + "\n")


def pytest_sessionstart(session):
    """Controller: the instant the session starts (before collection and the workers' start-up)."""
    if _out() is not None and not os.environ.get("PYTEST_XDIST_WORKER"):
        _write(f"{_out()}.session.jsonl", {"event": "start", "t": time.time(), "load1": os.getloadavg()[0]})


def pytest_sessionfinish(session):
    if _out() is not None and not os.environ.get("PYTEST_XDIST_WORKER"):
        _write(f"{_out()}.session.jsonl", {"event": "finish", "t": time.time(), "load1": os.getloadavg()[0]})


def pytest_runtest_logreport(report):
    """Controller (or a run without xdist): one line per phase of every test."""
    out = _out()
    if out is None or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    node = getattr(report, "node", None)
    worker = getattr(getattr(node, "gateway", None), "id", None) or "main"
    _write(f"{out}.tests.jsonl", {
        "nodeid": report.nodeid, "when": report.when, "duration": round(report.duration, 4),
        "start": getattr(report, "start", None), "stop": getattr(report, "stop", None), "worker": worker,
        "outcome": report.outcome, "load1": round(os.getloadavg()[0], 2)})


def _pytest_fixture_setup(fixturedef, request):
    t0 = time.perf_counter()
    yield
    scope = fixturedef.scope
    if _out() is None or scope == "function":
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    _write(f"{_out()}.fixtures.{worker}.jsonl", {
        "fixture": fixturedef.argname, "scope": scope, "file": request.node.nodeid.split("::")[0],
        "duration": round(time.perf_counter() - t0, 4), "start": time.time() - (time.perf_counter() - t0),
        "worker": worker})


def _cpu() -> float:
    """CPU seconds of this process and of its children waited for (subprocesses, Snakemake, Dask's workers)."""
    import resource

    a, b = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime


def _pytest_runtest_protocol(item, nextitem):
    """Worker: the CPU time of each test (all phases; a module fixture's set-up counts to the first test using it)
    — on a shared machine a better measure of the work than the wall time."""
    c0 = _cpu()
    yield
    if _out() is not None:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        _write(f"{_out()}.cpu.{worker}.jsonl", {"nodeid": item.nodeid, "cpu": round(_cpu() - c0, 3)})


try:  # a hook wrapper only where pytest is importable (the summary below needs no pytest)
    import pytest

    pytest_fixture_setup = pytest.hookimpl(wrapper=True)(_pytest_fixture_setup)
    pytest_runtest_protocol = pytest.hookimpl(wrapper=True)(_pytest_runtest_protocol)
except ImportError:  # pragma: no cover
    pass


# ---------------------------------------------------------------------------------------------------- the summary
def _lines(pattern: str, prefix: str) -> list[dict]:
    out = []
    for p in sorted(Path(prefix).parent.glob(Path(prefix).name + pattern)):
        out += [json.loads(line) for line in p.read_text().splitlines() if line]
    return out


def _load(prefix: str) -> tuple[list[dict], list[dict]]:
    return _lines(".tests.jsonl", prefix), _lines(".fixtures.*.jsonl", prefix)


def summarise(prefix: str) -> dict:
    tests, fixtures = _load(prefix)
    by_file: dict[str, float] = defaultdict(float)
    by_kind: dict[str, float] = defaultdict(float)
    per_worker: dict[str, list[float]] = defaultdict(lambda: [0.0, float("inf"), 0.0])  # busy, first start, last stop
    file_worker: dict[str, str] = {}
    file_span: dict[str, list[float]] = defaultdict(lambda: [float("inf"), 0.0])
    per_test: dict[str, float] = defaultdict(float)
    n_tests = set()
    for t in tests:
        f = t["nodeid"].split("::")[0]
        n_tests.add(t["nodeid"])
        by_file[f] += t["duration"]
        by_kind[KINDS.get(f, "numerics")] += t["duration"]
        per_test[t["nodeid"]] += t["duration"]
        w = per_worker[t["worker"]]
        w[0] += t["duration"]
        if t["start"] is not None:
            w[1] = min(w[1], t["start"])
            w[2] = max(w[2], t["stop"])
            file_span[f][0] = min(file_span[f][0], t["start"])
            file_span[f][1] = max(file_span[f][1], t["stop"])
        file_worker[f] = t["worker"]
    start = min(w[1] for w in per_worker.values())
    end = max(w[2] for w in per_worker.values())
    loads = [t["load1"] for t in tests]
    session = {r["event"]: r for r in _lines(".session.jsonl", prefix)}
    cpu_file: dict[str, float] = defaultdict(float)
    for r in _lines(".cpu.*.jsonl", prefix):
        cpu_file[r["nodeid"].split("::")[0]] += r["cpu"]
    extra = {}
    if "start" in session and "finish" in session:
        extra["session_wall_s"] = round(session["finish"]["t"] - session["start"]["t"], 1)
        extra["start_up_s"] = round(start - session["start"]["t"], 1)  # collection and the workers' start
    if cpu_file:
        extra["cpu_total_s"] = round(sum(cpu_file.values()), 1)
        extra["cpu_by_file_s"] = {k: round(v, 1) for k, v in sorted(cpu_file.items(), key=lambda kv: -kv[1])[:40]}
    return {**extra,
        "tests": len(n_tests), "durations_total_s": round(sum(by_file.values()), 1),
        "wall_tests_s": round(end - start, 1),
        "load1_min_median_max": [min(loads), sorted(loads)[len(loads) // 2], max(loads)],
        "workers": {k: {"busy_s": round(v[0], 1), "idle_from_s": round(v[2] - start, 1)}
                    for k, v in sorted(per_worker.items())},
        "by_kind_s": {k: round(v, 1) for k, v in sorted(by_kind.items(), key=lambda kv: -kv[1])},
        "by_file_s": {k: {"s": round(v, 1), "worker": file_worker[k],
                          "span_s": [round(file_span[k][0] - start, 1), round(file_span[k][1] - start, 1)]}
                      for k, v in sorted(by_file.items(), key=lambda kv: -kv[1])[:40]},
        "slowest_tests_s": {k: round(v, 1) for k, v in sorted(per_test.items(), key=lambda kv: -kv[1])[:80]},
        "broad_fixtures_s": [{"fixture": f["fixture"], "scope": f["scope"], "file": f["file"],
                              "s": round(f["duration"], 1)}
                             for f in sorted(fixtures, key=lambda f: -f["duration"]) if f["duration"] >= 0.5],
    }


def replay(prefix: str, workers: int = 2) -> dict:
    """The tests' wall time under two orders of the files, replayed from the measured durations with xdist's loadfile
    mechanics (xdist.scheduler.LoadScopeScheduling: a file is a unit of work; each worker holds the unit it runs and
    the next one, and takes a new one from the queue when it starts its next): the queue as xdist orders it (files
    with more tests first; ties in collection order, here the order first seen) and longest first (the measured
    seconds; what a collection order with ``--no-loadscope-reorder`` would give). An estimate of the scheduling alone:
    the same durations in both."""
    tests, _ = _load(prefix)
    order: list[str] = []
    seconds: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for t in tests:
        f = t["nodeid"].split("::")[0]
        if f not in seconds:
            order.append(f)
        if t["when"] == "call":
            count[f] += 1
        seconds[f] += t["duration"]

    def wall(files: list[str]) -> float:
        queue = list(files)
        held = [[queue.pop(0)] if queue else [] for _ in range(workers)]  # the first unit of each, then a second
        for h in held:
            if queue:
                h.append(queue.pop(0))
        free = [0.0] * workers
        while any(held):
            i = min((k for k in range(workers) if held[k]), key=lambda k: free[k])
            free[i] += seconds[held[i].pop(0)]
            if queue:
                held[i].append(queue.pop(0))
        return max(free)

    return {"loadfile_s": round(wall(sorted(order, key=lambda f: -count[f])), 1),
            "longest_first_s": round(wall(sorted(order, key=lambda f: -seconds[f])), 1),
            "serial_s": round(sum(seconds.values()), 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prefix", help="the CI_TIME_OUT the suite ran with")
    ap.add_argument("--label", required=True, help="what was measured, e.g. the commit")
    ap.add_argument("--note", default="", help="what the record cannot say itself (an interrupted run, the CPU time)")
    ap.add_argument("--append", action="store_true", help="append the summary to benchmarks/ci_time.jsonl")
    args = ap.parse_args(argv)
    s = {"label": args.label, "note": args.note, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
         **summarise(args.prefix), "replayed_wall_s": replay(args.prefix)}
    print(f"{s['label']}: {s['tests']} tests, durations total {s['durations_total_s']} s, wall {s['wall_tests_s']} s, "
          f"load1 min/median/max {s['load1_min_median_max']}")
    if "session_wall_s" in s:
        print(f"  session wall {s['session_wall_s']} s, of which start-up (collection, workers) {s['start_up_s']} s")
    if "cpu_total_s" in s:
        print(f"  CPU (tests, their subprocesses and Dask workers): {s['cpu_total_s']} s; by file:")
        for k, v in list(s["cpu_by_file_s"].items())[:25]:
            print(f"    {v:8.1f}  {k}")
    for w, v in s["workers"].items():
        print(f"  worker {w}: busy {v['busy_s']} s, idle from {v['idle_from_s']} s")
    r = s["replayed_wall_s"]
    print(f"  replayed on 2 workers from these durations: xdist loadfile {r['loadfile_s']} s, the files longest first "
          f"{r['longest_first_s']} s (serial {r['serial_s']} s)")
    print("by kind:")
    for k, v in s["by_kind_s"].items():
        print(f"  {v:8.1f}  {k}")
    print("by file (s, worker, span from the start):")
    for k, v in s["by_file_s"].items():
        print(f"  {v['s']:8.1f}  {v['worker']:5} {str(v['span_s']):>16}  {k}")
    print("module/session fixtures (set-up s):")
    for f in s["broad_fixtures_s"]:
        print(f"  {f['s']:8.1f}  {f['scope']:8} {f['fixture']:30} {f['file']}")
    print("slowest tests (all phases, s):")
    for k, v in list(s["slowest_tests_s"].items())[:40]:
        print(f"  {v:8.1f}  {k}")
    if args.append:
        with open(ROOT / "benchmarks" / "ci_time.jsonl", "a") as f:
            f.write(json.dumps(s) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
