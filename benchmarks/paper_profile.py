"""Where the paper config's time goes (issue 36 item 1): wall and CPU seconds by phase, beside the simulation floor.

    nice -n 10 python benchmarks/paper_profile.py [--label TEXT] [--record]      # the whole config/paper.yaml
    python benchmarks/paper_profile.py --analyse WORKDIR [--record]             # a run made before (its profile/)
    nice -n 10 python benchmarks/paper_profile.py --slice                       # a quick check (not scaled: see --help)
    nice -n 10 python benchmarks/paper_profile.py --slice --rho-block 1.0       # the same cells in fewer, larger jobs
    nice -n 10 python benchmarks/paper_profile.py --small [--rho-block 1.0]     # a smaller slice, for a busy machine

Runs ``snakemake --cores 2 --configfile config/paper.yaml`` in a fresh work folder (default a temporary one) and
measures, without changing what the run computes:

* the CPU of every thread of the Snakemake process tree, read from /proc every 0.5 s (``benchmarks/_threads.py``):
  the Snakemake process's main thread (the DAG, the scheduler, job bookkeeping), its job threads (each job's own
  work in that process: assembling and storing results, merges, comparison, figures — each job's log ends with its
  thread's CPU, ``sojourn.core.runs.job``), its other threads (the Dask scheduler and client event loop, Snakemake's
  benchmark threads), and per Dask worker process its event loop (receiving tasks, sending results) and its task
  threads;
* the CPU of every Dask task by its function (``SOJOURN_TASK_CPU``, :mod:`sojourn.core.runs.runner`);
* each cell job's phases (cache lookup and tasks, assembly, storage; its log,
  :func:`sojourn.core.runs.protocol.run_step`);
* the simulated events (``events`` of the JSQ-PS and restart simulation files) and the kernel's CPU per event,
  measured here in this process on two JSQ-PS cells (thread CPU, compilation excluded), which split the JSQ-PS
  simulation tasks into the kernel (with its recording of every customer, which is inlined in it) and the rest
  of the task (building the replication's dataset); the approximation tasks' CPU is split by method in proportion
  to the ``run_time`` each method recorded (approximation.nc, law_approximation.nc).

The floor is the JSQ-PS events times the kernel's CPU per event (and the issue's 36 ns), over two cores. The
estimate of the quiet wall time is CPU / 2 plus the serial tail (the jobs that run after the last cell job:
merges, comparison, figures; their wall at this load times their CPU share), stated as an estimate. Sizes:
the results folder with hard links counted once. ``--record`` appends the figures to
benchmarks/paper_profile.jsonl with the load average at start and end.

``--slice``: the paper settings at R = 2 and 9 over every ρ (198 of the 990 cells, the full grid's blocks) with the
M/G/R sub-grid and restart, without split-merge (:data:`SLICE`); its figures are those of the slice, not scaled
(to compare two checkouts side by side, not for the 7-minute target).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import _threads  # noqa: E402

ISSUE_NS_PER_EVENT = 36.0  # issue 36: the kernel's measured cost per event


def _du(path) -> int:
    seen, total = set(), 0
    for p in Path(path).rglob("*"):
        if p.is_file() and not p.is_symlink():
            st = p.stat()
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


#: --slice: the paper's JSQ-PS settings at R = 2 and 9 over the whole ρ range (the blocks of the full grid; a fifth of
#: its M/M/R simulation work, ΣR = 11 of 55, and of its M/M/R cells), the M/G/R sub-grid and restart as in the paper,
#: split-merge left out (39 s of the paper's 1 625 s of job time)
SLICE = {"jsq_ps": {"grid": {"R": [2, 9]}, "figures": {"cdf_cells": [{"R": 2, "rho": 0.85}, {"R": 9, "rho": 0.9}]}},
         "split_merge": {"enabled": False}}

#: --small: R = 2 over the whole ρ range (99 cells: 10 blocks of 0.1), two M/G/R laws at R = 3 (14 cells, 6 blocks
#: each), no restart nor split-merge: minutes at a load of 15, for comparing the CPU outside the tasks of two
#: blockings or checkouts on a busy machine (not scaled)
SMALL = {"jsq_ps": {"grid": {"R": [2]}, "mgr": {"laws": ["uniform:low=0,high=2", "deterministic"], "R": [3]},
                    "figures": {"cdf_cells": [{"R": 2, "rho": 0.85}]}},
         "split_merge": {"enabled": False}, "restart": {"enabled": False}}


def _override_config(work: Path, slice_: str | None, rho_block: float | None) -> Path | None:
    """The run's config on top of config/paper.yaml: a slice (``"slice"``: :data:`SLICE`, ``"small"``:
    :data:`SMALL`) and/or another ``grid.rho_block``, or None for the paper config as it is."""
    top = json.loads(json.dumps({"slice": SLICE, "small": SMALL}[slice_])) if slice_ else {}
    if rho_block is not None:
        top.setdefault("jsq_ps", {}).setdefault("grid", {})["rho_block"] = rho_block
    if not top:
        return None
    path = work / "paper_override.yaml"
    path.write_text(yaml.safe_dump(top))
    return path


def run(work: Path, configfiles: list[Path]) -> dict:
    """Run the pipeline in ``work``, its profile (thread CPU, task CPU, wall, load) into ``work/profile``."""
    prof = work / "profile"
    prof.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "SOJOURN_TASK_CPU": str(prof / "tasks.tsv")}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(work), "--cores", "2"]
    cmd += ["--configfile", *map(str, configfiles)]  # one option: a second --configfile would replace the first
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    with open(prof / "snakemake.err", "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        seen: dict = {}
        watcher = threading.Thread(target=lambda: _watch(proc.pid, seen), daemon=True)
        watcher.start()
        rc = proc.wait()
        wall = time.perf_counter() - t0
        watcher.join(5)
    info = {"wall_s": wall, "load_start": load0, "load_end": os.getloadavg(), "returncode": rc,
            "command": " ".join(cmd[1:]), "snakemake_pid": proc.pid}
    (prof / "threads.json").write_text(json.dumps(seen))
    (prof / "run.json").write_text(json.dumps(info))
    if rc != 0:
        raise SystemExit(f"snakemake failed ({rc}): {(prof / 'snakemake.err').read_text()[-3000:]}")
    return info


def _watch(pid: int, seen: dict) -> None:
    while _threads.poll(pid, seen):
        time.sleep(0.5)


def kernel_ns_per_event() -> dict:
    """CPU ns per event of the JSQ-PS kernels, measured in this thread (compiled first), on R = 10, ρ = 0.9 and
    R = 2, ρ = 0.5: {"exponential": ns, "general": ns} (the general kernel on lognormal service)."""
    from sojourn.core.checks.timegrid import grid_size
    from sojourn.core.laws import seeds
    from sojourn.jsq_ps.model import JSQPS
    from sojourn.jsq_ps.raw import run_fast

    out = {}
    for kernel, service in (("exponential", "exponential:rate=1.0"),
                            ("general", "lognormal:sigma=0.6931471805599453")):
        events = cpu = 0.0
        for R, rho in ((10, 0.9), (2, 0.5)):
            spec = JSQPS.from_rho(R, rho, mu=1.0, service=service)
            for k, horizon in enumerate((2000.0, 60000.0, 60000.0)):
                c0 = time.thread_time()
                raw = run_fast(spec, kernel, seeds.replication_rng(0, spec, k), 100.0, horizon, 0.01,
                               grid_size(182.32, 0.01), 200, None)
                if k:  # the first call compiles or loads the kernel
                    cpu += time.thread_time() - c0
                    events += raw["events"]
        out[kernel] = 1e9 * cpu / events
    return out


# ---------------------------------------------------------------------------------------------
# analysis of a finished run
_DONE = re.compile(r"done in ([\d.]+) s \(CPU ([\d.]+) s in the job's thread\)")
_LAP = re.compile(r"([a-z+]+) ([\d.]+) s \(CPU ([\d.]+) s\)")


def _jobs(results: Path) -> list[dict]:
    """Every job's rule-like name, wall and thread CPU (its log), and its phases (run_step's line)."""
    out = []
    for log in sorted(results.rglob("logs/**/*.log")):
        rel = log.relative_to(results)
        study, kind = rel.parts[0], rel.parts[2]
        text = log.read_text(errors="replace")
        m = _DONE.search(text)
        laps = {}
        for line in text.splitlines():
            if "lookup+compute" in line:
                for name, w, c in _LAP.findall(line):
                    laps[name] = (float(w), float(c))
        out.append({"rule": f"{study}_{kind}", "wall": float(m.group(1)) if m else None,
                    "cpu": float(m.group(2)) if m else None, "laps": laps})
    return out


def _tasks(path: Path) -> dict:
    out = defaultdict(lambda: [0, 0.0, 0.0, 0])  # function -> calls, CPU, wall, tasks
    if path.exists():
        for line in path.read_text().splitlines():
            fn, n, cpu, wall = line.split("\t")
            o = out[fn]
            o[0] += int(n)
            o[1] += float(cpu)
            o[2] += float(wall)
            o[3] += 1
    return dict(out)


def _threads_split(threads: dict, root: int) -> dict:
    """CPU of the Snakemake process's main thread and other threads, and of the workers' loops and task threads."""
    out = defaultdict(float)
    for pid, e in threads.items():
        main = e["threads"].get(pid, 0.0)
        rest = sum(v for t, v in e["threads"].items() if t != pid)
        if int(pid) == root:
            out["snakemake main thread"] += main
            out["snakemake other threads"] += rest
        elif "multiprocessing" in e.get("cmdline", "") and "resource_tracker" not in e.get("cmdline", ""):
            out["worker event loops"] += main
            out["worker task threads"] += rest
            out["workers"] += 1
        else:
            out["other processes"] += main + rest
    return dict(out)


def analyse(work: Path, ns: dict | None = None) -> dict:  # noqa: PLR0915 (one table, row by row)
    """The phase table of the run in ``work`` (its profile/ folder and results)."""
    import numpy as np

    from sojourn.core.files.io import read_netcdf

    prof = work / "profile"
    info = json.loads((prof / "run.json").read_text())
    threads = json.loads((prof / "threads.json").read_text())
    cfg = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    results = work / cfg["results"]
    jobs = _jobs(results)
    tasks = _tasks(prof / "tasks.tsv")
    th = _threads_split(threads, int(info["snakemake_pid"]))
    ns = ns or kernel_ns_per_event()

    jsq = results / "jsq_ps"
    sim = read_netcdf(jsq / "simulation.nc")
    ev = sim["events"].where(sim["events"] > 0).sum(["R", "rho", "replication"])  # by service law
    events = {str(s): float(ev.sel(service=s)) for s in sim["service"].values}
    kernel_cpu = sum(n * 1e-9 * ns["exponential" if s == "exponential" else "general"] for s, n in events.items())
    total_events = sum(events.values())
    restart_events = 0.0
    for f in (results / "restart").glob("*/simulation.nc"):
        restart_events += float(read_netcdf(f)["events"].where(lambda e: e > 0).sum())
    methods = defaultdict(float)
    for name in ("approximation.nc", "law_approximation.nc"):
        if (jsq / name).exists():
            ap = read_netcdf(jsq / name)
            if "run_time" in ap:
                rt = ap["run_time"]
                for a in rt["approximation"].values:
                    v = rt.sel(approximation=a).values
                    methods[str(a)] += float(np.nansum(v))

    by_rule = defaultdict(lambda: [0, 0.0, 0.0])
    laps = defaultdict(lambda: [0.0, 0.0])
    for j in jobs:
        r = by_rule[j["rule"]]
        r[0] += 1
        r[1] += j["wall"] or 0.0
        r[2] += j["cpu"] or 0.0
        for name, (w, c) in j["laps"].items():
            laps[f"{j['rule']}: {name}"][0] += w
            laps[f"{j['rule']}: {name}"][1] += c

    def task(prefix):
        return [sum(v[i] for k, v in tasks.items() if k.startswith(prefix)) for i in range(4)]

    rows = []  # (phase, CPU s, note)
    rows.append(("Snakemake: DAG, scheduling, job bookkeeping (its main thread)", th.get("snakemake main thread", 0),
                 f"{len(jobs)} jobs"))
    job_cpu = sum(r[2] for r in by_rule.values())
    rows.append(("Dask scheduler + client loop, benchmark threads (other threads of that process)",
                 th.get("snakemake other threads", 0) - job_cpu, ""))
    rows.append(("Dask worker event loops (tasks in, results out)", th.get("worker event loops", 0),
                 f"{sum(v[3] for v in tasks.values())} tasks"))
    sim_t = task("sojourn.jsq_ps.simulate")
    rows.append(("JSQ-PS kernel incl. recording (events x CPU/event)", kernel_cpu,
                 f"{total_events:.3g} events; {ns['exponential']:.1f} / {ns['general']:.1f} ns per event "
                 "(exponential / general kernel)"))
    rows.append(("JSQ-PS simulation tasks beyond the kernel (the replication's dataset)", sim_t[1] - kernel_cpu,
                 f"{sim_t[0]} replications in {sim_t[3]} tasks"))
    ap_t = task("sojourn.jsq_ps.solve")
    total_rt = sum(methods.values()) or 1.0
    for m, v in sorted(methods.items(), key=lambda kv: -kv[1]):
        rows.append((f"approximation {m}", ap_t[1] * v / total_rt, "share of the approximation tasks' CPU by run_time"))
    for prefix, name in (("sojourn.restart", "restart tasks (simulation, product form)"),
                         ("sojourn.split_merge", "split-merge tasks (simulation, exact)")):
        t = task(prefix)
        rows.append((name, t[1], f"{t[0]} calls in {t[3]} tasks"))
    other = {k: v for k, v in tasks.items() if not k.startswith(("sojourn.jsq_ps", "sojourn.restart",
                                                                 "sojourn.split_merge"))}
    if other:
        rows.append(("other tasks", sum(v[1] for v in other.values()), ", ".join(other)))
    untracked = th.get("worker task threads", 0) - sum(v[1] for v in tasks.values())
    rows.append(("worker threads outside tasks (imports, compilation, Dask's threads)", untracked, ""))
    for rule, (n, wall, cpu) in sorted(by_rule.items()):
        cell_laps = {k.split(": ")[1]: v for k, v in laps.items() if k.startswith(rule + ":")}
        note = f"{n} job(s), wall {wall:.1f} s" + "".join(f"; {k} CPU {c:.1f} s" for k, (w, c) in cell_laps.items())
        rows.append((f"job thread: {rule}", cpu, note))
    rows.append(("other processes (resource tracker)", th.get("other processes", 0), ""))
    total_cpu = sum(v for k, v in th.items() if k != "workers")

    # the serial tail: jobs after the last cell job (merges, comparison, figures), their CPU
    tail_rules = [r for r in by_rule if not r.endswith(("simulate", "approximate", "approximate_laws"))]
    tail_cpu = sum(by_rule[r][2] for r in tail_rules if r.startswith("jsq_ps"))
    floor = total_events * ISSUE_NS_PER_EVENT * 1e-9
    out = {
        "wall_s": round(info["wall_s"], 1), "load_start": [round(x, 2) for x in info["load_start"]],
        "load_end": [round(x, 2) for x in info["load_end"]], "cpu_total_s": round(total_cpu, 1),
        "jobs": len(jobs), "results_MB": round(_du(results) / 1e6, 1),
        "events": {"jsq_ps": total_events, "restart": restart_events, "jsq_ps_by_law": events},
        "ns_per_event": {k: round(v, 2) for k, v in ns.items()},
        "floor_cpu_s_measured": round(kernel_cpu, 1), "floor_cpu_s_issue_36ns": round(floor, 1),
        "floor_wall_s_2_cores": round(kernel_cpu / 2, 1),
        "jsq_ps_tail_cpu_s": round(tail_cpu, 1),
        "estimated_quiet_wall_s": round(total_cpu / 2 + tail_cpu / 2, 1),
        "rows": [(name, round(cpu, 1), note) for name, cpu, note in rows],
        "sizes_MB": {str(p.relative_to(results)): round(p.stat().st_size / 1e6, 1)
                     for p in sorted(results.rglob("*.nc")) if "blocks" not in p.parts and "cache" not in p.parts
                     and p.stat().st_size > 1e6},
    }
    return out


def _grid_events(cfg: dict) -> dict:
    """The JSQ-PS events of the paper grid, predicted: 2 Λ (T − C) per replication (arrivals and departures up to
    the end of the recording window; a run's measured events are 0.95-0.96 of 2 Λ T at T = 160 000, C = 8 000)."""
    import numpy as np

    j = cfg["jsq_ps"]
    w = j["simulation"]["window"]
    per = 2.0 * (float(w["length"]) - float(w["cooldown"])) * int(j["simulation"]["replications"])
    r = j["grid"]["rho_range"]
    rhos = np.round(np.arange(r["start"], r["stop"] + 1e-9, r["step"]), 2)
    out = {"exponential": per * sum(j["grid"]["R"]) * float(rhos.sum())}
    for law in j["mgr"]["laws"]:
        out[law.split(":")[0]] = per * sum(j["mgr"]["R"]) * sum(j["mgr"]["rho"])
    return out


def partial(work: Path, pid: int) -> dict:
    """A run still going (Snakemake ``pid`` in ``work``): what it measured so far per unit of work — CPU per
    simulated event and per approximation cell, Dask's and Snakemake's CPU per second of wall — and those scaled to
    the whole paper grid (simulation by its predicted events, approximations by cells; the time-based costs of
    the Dask loops and Snakemake at the estimated quiet wall). An extrapolation, stated as one."""
    import numpy as np

    from sojourn.core.files.io import read_netcdf

    prof = work / "profile"
    seen: dict = {}
    _threads.poll(pid, seen)
    th = _threads_split(seen, pid)
    import datetime as dt

    first = min(p.name for p in (work / ".snakemake" / "log").glob("*.snakemake.log"))  # named by its start time
    start = dt.datetime.strptime(first.split(".")[0], "%Y-%m-%dT%H%M%S").timestamp()
    wall = time.time() - start
    cfg = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    results = work / cfg["results"]
    tasks = _tasks(prof / "tasks.tsv")
    jobs = _jobs(results)
    done_events = done_reps = 0.0
    for f in (results / "jsq_ps" / "blocks" / "simulation").rglob("*.nc"):
        ev = read_netcdf(f)["events"].values
        done_events += float(ev[ev > 0].sum())
        done_reps += float((ev > 0).sum())
    sim = tasks.get("sojourn.jsq_ps.simulate.simulate_replication", [0, 0.0, 0.0, 0])
    cpu_per_event = sim[1] / (done_events * sim[0] / done_reps) if done_reps else float("nan")
    grid = _grid_events(cfg)
    ap = tasks.get("sojourn.jsq_ps.solve.cell.approximate_cell", [0, 0.0, 0.0, 0])
    law = tasks.get("sojourn.jsq_ps.solve.cell.approximate_law_cell", [0, 0.0, 0.0, 0])
    rs = tasks.get("sojourn.restart.simulate.simulate_replication", [0, 0.0, 0.0, 0])
    n_cells = 990
    n_law = len(cfg["jsq_ps"]["mgr"]["laws"]) * len(cfg["jsq_ps"]["mgr"]["R"]) * len(cfg["jsq_ps"]["mgr"]["rho"])
    n_restart = sum(30 for _ in cfg["restart"]["examples"]) * 3 * 10
    job_cpu = sum(j["cpu"] or 0.0 for j in jobs)
    rates = {"snakemake main thread": th.get("snakemake main thread", 0) / wall,
             "Dask scheduler + client loop": (th.get("snakemake other threads", 0) - job_cpu) / wall,
             "Dask worker event loops": th.get("worker event loops", 0) / wall}
    scaled = {
        "JSQ-PS simulation tasks (by events)": cpu_per_event * sum(grid.values()),
        "M/M/R approximation cells (by cells)": ap[1] / max(ap[0], 1) * n_cells,
        "M/G/R law cells, T (by cells)": law[1] / max(law[0], 1) * n_law,
        "restart simulation (by replications)": rs[1] / max(rs[0], 1) * n_restart,
    }
    work_cpu = sum(scaled.values())
    quiet = work_cpu / 2
    for _ in range(3):  # the time-based costs at the quiet wall they add to
        quiet = (work_cpu + sum(rates.values()) * quiet) / 2
    return {"wall_so_far_s": round(wall), "load": [round(x, 2) for x in os.getloadavg()],
            "threads_so_far": {k: round(v, 1) for k, v in th.items()},
            "tasks_so_far": {k: [v[0], round(v[1], 1), v[3]] for k, v in tasks.items()},
            "jsq_ps_events_done": done_events, "sim_cpu_ns_per_event": round(1e9 * cpu_per_event, 1),
            "grid_events": {k: round(v / 1e9, 3) for k, v in grid.items()},
            "approx_cpu_per_cell_s": round(ap[1] / max(ap[0], 1), 3),
            "law_cpu_per_cell_s": round(law[1] / max(law[0], 1), 3),
            "time_based_cpu_per_wall_s": {k: round(v, 4) for k, v in rates.items()},
            "scaled_cpu_s": {k: round(v, 1) for k, v in scaled.items()},
            "estimated_quiet_wall_s_without_tail": round(quiet),
            "floor_cpu_s_36ns": round(sum(grid.values()) * 36e-9, 1),
            "jobs_done": len([j for j in jobs if j["wall"] is not None]),
            "job_thread_cpu_so_far": round(job_cpu, 1), "mean_sim_cpu_per_replication_s": round(
                sim[1] / max(sim[0], 1), 4), "numpy": np.__version__}


def show(res: dict) -> None:
    print(f"wall {res['wall_s']} s at load {res['load_start']} -> {res['load_end']}; CPU {res['cpu_total_s']} s; "
          f"{res['jobs']} jobs; results {res['results_MB']} MB")
    width = max(len(r[0]) for r in res["rows"])
    print(f"{'phase':<{width}}  {'CPU s':>8}  {'share':>6}  note")
    for name, cpu, note in res["rows"]:
        print(f"{name:<{width}}  {cpu:8.1f}  {100 * cpu / res['cpu_total_s']:5.1f}%  {note}")
    print(f"floor: JSQ-PS kernel {res['floor_cpu_s_measured']} CPU-s at the measured ns/event "
          f"({res['floor_cpu_s_issue_36ns']} at 36 ns), {res['floor_wall_s_2_cores']} s on two cores")
    print(f"estimated quiet wall: CPU/2 + JSQ-PS serial tail/2 = {res['estimated_quiet_wall_s']} s "
          f"(an estimate: the tail's jobs run on one core while little else runs)")
    print("large files (MB):", res["sizes_MB"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", type=Path, help="work folder of the run (default: a temporary one, removed)")
    ap.add_argument("--analyse", type=Path, help="analyse the run made before in this work folder")
    ap.add_argument("--partial", type=int, metavar="PID",
                    help="with --analyse: a run still going (its Snakemake process id): per-unit costs so far, scaled")
    ap.add_argument("--slice", action="store_true", help="R = 2 and 9 of the JSQ-PS grid, no split-merge (not scaled)")
    ap.add_argument("--small", action="store_true", help="R = 2, two M/G/R laws at R = 3, no restart (not scaled)")
    ap.add_argument("--rho-block", type=float, metavar="W",
                    help="jsq_ps.grid.rho_block for this run (default: the config's): the same cells in other jobs")
    ap.add_argument("--label", default="", help="what this run measures (the jsonl record)")
    ap.add_argument("--record", action="store_true", help="append to benchmarks/paper_profile.jsonl")
    args = ap.parse_args(argv)
    if args.analyse and args.partial:
        res = {"label": args.label or "partial run, extrapolated", "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "git": _git(), **partial(args.analyse, args.partial)}
        print(json.dumps(res, indent=1))
        if args.record:
            with open(HERE / "paper_profile.jsonl", "a") as fh:
                fh.write(json.dumps(res) + "\n")
        return
    if args.analyse:
        res = analyse(args.analyse)
    else:
        with tempfile.TemporaryDirectory(prefix="paper_profile_") as tmp:
            work = args.workdir or Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            override = _override_config(work, "small" if args.small else "slice" if args.slice else None,
                                        args.rho_block)
            files = [ROOT / "config" / "paper.yaml"] + ([override] if override else [])
            run(work, files)
            res = analyse(work)
    res = {"label": args.label or ("paper small slice (R = 2)" if args.small else "paper slice (R = 2, 9)"
                                   if args.slice else "config/paper.yaml"),
           "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "git": _git(), **res}
    show(res)
    if args.record:
        with open(HERE / "paper_profile.jsonl", "a") as fh:
            fh.write(json.dumps(res) + "\n")


def _git() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return ""


if __name__ == "__main__":
    main()
