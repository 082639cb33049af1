"""Route 1's job sizes (docs/hpc.md, "Sizing"), derived from the measurements of a real run, and the plan they give.

    # 1. measure: a whole run of the config, its total CPU time from /usr/bin/time (any machine, any load)
    /usr/bin/time -v snakemake --cores 2 --configfile config/paper.yaml --directory RUN 2> RUN.time
    python workflow/slurm/size_jobs.py measure RUN --time-log RUN.time --configfile config/paper.yaml
    # 2. write the sized sections of the two route-1 profiles from benchmarks/slurm_sizes.json
    python workflow/slurm/size_jobs.py write
    # 3. the SLURM jobs the profile gives (a dry run with the executor named): CPUs, memory, predicted time, limit
    python workflow/slurm/size_jobs.py plan [--profile workflow/profiles/slurm-small] [--configfile config/paper.yaml]

**What is measured** (``measure``; one record per rule job, keyed by the job's ``benchmark:`` name, e.g.
``jsq_ps/simulate/exponential/R~10/rho~0.90-1.00``): a job whose work runs as Dask tasks records that work itself —
the engines' ``wall_time``/``run_time`` summed over its output files (one single-threaded worker each, so these are
worker-seconds); any other job runs in the Snakemake process, and its Snakemake ``benchmark:`` wall time ``s`` is its
work. Measured on a shared machine these seconds are inflated by the load, so they are scaled so that they add up to
the run's own CPU time (user + system of the whole process tree, from ``/usr/bin/time -v``): each job gets its share
of the measured CPU time. Memory: the largest process tree any job saw (Snakemake ``max_rss``: Snakemake + its Dask
workers) and the largest single process (``/usr/bin/time``'s maximum resident set: the Snakemake process).

**The model** (``write``, ``plan``): a SLURM job of ``C`` CPUs runs ``C`` single-threaded Dask workers. Dask work
spreads over them, in-process work runs one job after another:
``predicted = start-up + Σ Dask CPU-s / C + Σ in-process CPU-s``, the start-up (its Snakemake parsing the workflow and
starting the cluster) as measured on SLURM (``STARTUP_S``). A job's time limit is ``MARGIN`` × its prediction, rounded
up to whole minutes; its memory ``MEM_MARGIN`` × (Snakemake process + ``C`` workers, measured).

**The layouts.** ``long`` (workflow/profiles/slurm, the default): every rule in one group, so that no job is
predicted under ``MIN_MINUTES`` at the profile's CPUs on the measured config (split-merge and restart alone are a few
minutes). The cell blocks are too short for Snakemake's whole-minute ``runtime`` (seconds each), so the jobs that
start the run (``FIRST_RULES``) take no CPU slot of their own in Snakemake's account (``cpus_per_task: 0``: their work
runs on the job's Dask workers, which the group's other rules size) and all stand in one layer whose height is their
whole limit; every other rule takes the job's whole width, so the group's limit is the sum of the heights (Snakemake's
``GroupResources.basic_layered``).
``small`` (workflow/profiles/slurm-small, for clusters whose backfill favours short jobs): the cell blocks in groups of
a few minutes each, one job each for the JSQ-PS summary and for split-merge with restart; a cell block's ``runtime``
is then one minute, Snakemake's smallest, and ``C`` one-CPU blocks share a layer, so those limits are
``ceil(blocks / C)`` minutes, about 10 x the prediction on the paper config: more than the margin asks, as Snakemake
counts a group's limit in whole minutes per layer. ``plan`` lays the jobs out as Snakemake does (``_layers``).

To regenerate after the job structure changes (new rules, other blocks): step 1 on the paper config, then 2 and 3;
``tests/workflow/test_slurm_profile.py`` checks that the profiles are what ``write`` makes of the measurements, and
that the paper config's plan keeps to ≤ ``MAX_JOBS`` jobs of ≥ ``MIN_MINUTES`` each with every limit ≥ the margin.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MEASUREMENTS = ROOT / "benchmarks" / "slurm_sizes.json"
PROFILES = {"long": ROOT / "workflow" / "profiles" / "slurm", "small": ROOT / "workflow" / "profiles" / "slurm-small"}

CPUS = 2                # CPUs of a SLURM job in both profiles (Dask workers in it)
MARGIN = 3.0            # time limit = MARGIN x predicted (slower nodes, a busy shared filesystem, queue-side start)
MEM_MARGIN = 1.5        # memory = MEM_MARGIN x measured peak
MIN_MINUTES = 10        # long layout: no job predicted shorter (site guides ask for long jobs)
MAX_JOBS = 10           # long layout: at most this many SLURM jobs for the measured config
SMALL_MINUTES = 3       # small layout: the cell groups' predicted length
ALL = 1000              # group-components "all": every part of a group that is ready travels in one SLURM job
STARTUP_S = 20.0        # a SLURM job's start-up: its Snakemake parses the workflow, starts a Dask cluster (docs/hpc.md)

#: The study parts: the rules of each, the cell rules first (many short Dask jobs; the rest follow them)
PARTS = {
    "jsq_ps": ["jsq_ps_simulate", "jsq_ps_approximate", "jsq_ps_approximate_laws",
               "jsq_ps_merge_simulation", "jsq_ps_merge_approximation", "jsq_ps_merge_law_approximation",
               "jsq_ps_compare", "jsq_ps_accuracy", "jsq_ps_figures", "jsq_ps_reproduction"],
    "split_merge": ["split_merge_exact", "split_merge_experiment", "split_merge_figures"],
    "restart": ["restart_solve", "restart_simulate", "restart_compare", "restart_figures"],
}
CELL_RULES = ("jsq_ps_simulate", "jsq_ps_approximate", "jsq_ps_approximate_laws")
#: the rules whose work runs as Dask tasks that record their own time in the job's output (a merge's output holds its
#: blocks' times too, but the merge did not spend them)
DASK_RULES = (*CELL_RULES, "split_merge_experiment", "restart_simulate")
#: the rules whose jobs start the run (no job upstream of them)
FIRST_RULES = (*CELL_RULES, "split_merge_exact", "restart_solve", "restart_simulate")
BEGIN, END = "# >>> sized by workflow/slurm/size_jobs.py", "# <<< sized by workflow/slurm/size_jobs.py"


# ---- the jobs of a dry run -------------------------------------------------------------------------------------
@dataclass
class RuleJob:
    rule: str
    outputs: list[str] = field(default_factory=list)
    benchmark: str | None = None
    resources: dict[str, str] = field(default_factory=dict)

    def key(self) -> str | None:
        """The job's measurement key: its benchmark path below ``<results>/`` without ``benchmarks/`` and ``.tsv``."""
        if not self.benchmark:
            return None
        m = re.search(r"([^/]+)/benchmarks/(.+)\.tsv$", self.benchmark)
        return f"{m.group(1)}/{m.group(2)}" if m else None


@dataclass
class SlurmJob:
    group: str | None  # None: a rule job submitted on its own
    members: list[RuleJob]


def parse_dry_run(text: str) -> list[SlurmJob]:
    """The SLURM jobs of a ``snakemake -n --executor slurm`` listing: each ``Group job`` with its (indented) rule jobs,
    and each rule job outside a group (``rule x:`` at the start of a line; ``localrule`` and ``all`` excluded)."""
    jobs: list[SlurmJob] = []
    current: RuleJob | None = None
    for line in text.splitlines():
        if m := re.match(r"^\[[^\]]+\] Group job (\S+) ", line):
            jobs.append(SlurmJob(m.group(1), []))
            current = None
        elif m := re.match(r"^(\s*)rule (\w+):$", line):
            indent, rule = m.groups()
            current = RuleJob(rule)
            if indent:
                jobs[-1].members.append(current)
            elif rule != "all":
                jobs.append(SlurmJob(None, [current]))
            else:
                current = None
        elif m := re.match(r"^\s*localrule \w+:$", line):
            current = None
        elif current is not None and (m := re.match(r"^\s+(output|benchmark|resources): (.*)$", line)):
            what, value = m.groups()
            if what == "output":
                current.outputs = [v.strip() for v in value.split(",")]
            elif what == "benchmark":
                current.benchmark = value.strip()
            else:
                current.resources = dict(kv.strip().split("=", 1) for kv in value.split(", ") if "=" in kv)
    return jobs


def dry_run(profile: Path, configfile: Path, directory: Path, *extra: str) -> str:
    cmd = [sys.executable, "-m", "snakemake", "-n", "--snakefile", str(ROOT / "Snakefile"), "--executor", "slurm",
           "--workflow-profile", str(profile), "--configfile", str(configfile), "--directory", str(directory), *extra]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"dry run failed ({' '.join(cmd)}):\n{(p.stdout + p.stderr)[-3000:]}")
    return p.stdout + p.stderr


# ---- measure ---------------------------------------------------------------------------------------------------
def _engine_seconds(paths: list[Path]) -> float | None:
    """Worker-seconds a job's Dask tasks recorded in its outputs (``wall_time``, ``run_time``), or None."""
    import xarray as xr

    total, found = 0.0, False
    for path in paths:
        if path.suffix != ".nc" or not path.exists():
            continue
        with xr.open_dataset(path) as ds:
            for var in ("wall_time", "run_time"):
                if var in ds.data_vars:
                    total += float(ds[var].fillna(0).sum())
                    found = True
    return total if found else None


def _benchmark(path: Path) -> dict[str, float]:
    head, values = path.read_text().splitlines()[:2]
    row = dict(zip(head.split("\t"), values.split("\t"), strict=True))
    return {"s": float(row["s"]), "max_rss": float(row["max_rss"]) if row.get("max_rss", "NA") != "NA" else 0.0}


def _time_log(text: str) -> dict[str, float]:
    """``/usr/bin/time -v``'s figures: user, system CPU seconds, largest process (MB)."""
    def field_(name):
        m = re.search(rf"^\s*{re.escape(name)}: (.+)$", text, flags=re.MULTILINE)
        if not m:
            raise SystemExit(f"no '{name}' in the time log (give the stderr of /usr/bin/time -v)")
        return m.group(1).strip()

    return {"user_s": float(field_("User time (seconds)")), "system_s": float(field_("System time (seconds)")),
            "largest_process_mb": round(float(field_("Maximum resident set size (kbytes)")) / 1024, 1),
            "elapsed": field_("Elapsed (wall clock) time (h:mm:ss or m:ss)")}


def _running(pid: int) -> dict[str, float]:
    """A run still going (``--running PID``): the CPU its process tree has used so far (live and reaped processes)
    and its largest process now."""
    import time

    import psutil

    main = psutil.Process(pid)
    procs = [main, *main.children(recursive=True)]
    cpu, largest = 0.0, 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
            cpu += times.user + times.system + (times.children_user + times.children_system if proc is main else 0)
            largest = max(largest, proc.memory_info().rss / 2**20)
        except psutil.NoSuchProcess:
            continue
    return {"user_s": round(cpu, 1), "system_s": 0.0, "largest_process_mb": round(largest, 1),
            "elapsed": f"{(time.time() - main.create_time()) / 60:.0f} min so far (still running)"}


def measure(run: Path, configfile: Path, time_log: Path | None, workers: int, running: int | None = None,
            config: list[str] | None = None, assume: dict[str, float] | None = None) -> dict:
    """The measurement record of a finished run in the work folder ``run`` (see the module's docstring). With
    ``running`` (the pid of a run still going) the jobs it has not finished take their rule's measured mean, and are
    flagged ``"measured": false``, and the jobs of a rule none of whose jobs has finished take ``assume[rule]``
    CPU-seconds (a figure measured elsewhere, e.g. a whole run's phase times): a stop-gap until the run is measured
    whole."""
    text = dry_run(PROFILES["long"], configfile, run, "--forceall", *(["--config", *config] if config else []))
    rule_jobs = [m for job in parse_dry_run(text) for m in job.members]
    jobs, tree_peak, pending = {}, 0.0, []
    for rj in rule_jobs:
        key = rj.key()
        bench = run / rj.benchmark
        if not bench.exists():
            if running is None:
                raise SystemExit(f"{bench}: no benchmark record; measure a finished run of the same config")
            pending.append(rj)
            continue
        rec = _benchmark(bench)
        engine = _engine_seconds([run / o for o in rj.outputs]) if rj.rule in DASK_RULES else None
        jobs[key] = {"rule": rj.rule, "dask": engine is not None, "measured": True,
                     "seconds": round(engine if engine is not None else rec["s"], 3), "wall_s": rec["s"]}
        tree_peak = max(tree_peak, rec["max_rss"])
    timing = _running(running) if running is not None else _time_log(time_log.read_text(errors="replace"))
    cpu = timing["user_s"] + timing["system_s"]
    scale = cpu / sum(j["seconds"] for j in jobs.values())
    for j in jobs.values():
        j["cpu_s"] = round(j["seconds"] * scale, 2)
    by_rule = _by_rule({"jobs": jobs})
    for rj in pending:
        same = by_rule.get(rj.rule)
        if same:
            jobs[rj.key()] = {"rule": rj.rule, "dask": same[0]["dask"], "measured": False,
                              "cpu_s": round(sum(j["cpu_s"] for j in same) / len(same), 2)}
        elif rj.rule in (assume or {}):
            jobs[rj.key()] = {"rule": rj.rule, "dask": False, "measured": False, "assumed": True,
                              "cpu_s": assume[rj.rule]}
        else:
            raise SystemExit(f"rule {rj.rule}: no job of it has finished yet; measure later or --assume it")
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return {"what": "route-1 job sizes: per rule job, its measured seconds scaled to the run's CPU time",
            "config": str(configfile.resolve().relative_to(ROOT)) if configfile.resolve().is_relative_to(ROOT)
            else str(configfile), "commit": commit, "machine": os.uname().nodename, "cpus": os.cpu_count(),
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()], "workers": workers,
            "run": {**timing, "cpu_s": round(cpu, 1), "scale": round(scale, 4), "jobs": len(jobs),
                    "measured_jobs": len(jobs) - len(pending), "process_tree_peak_mb": round(tree_peak, 1)},
            "jobs": dict(sorted(jobs.items()))}


# ---- the model -------------------------------------------------------------------------------------------------
def memory_mb(record: dict, cpus: int) -> int:
    """A job of ``cpus`` workers: MEM_MARGIN x (the Snakemake process + cpus x one worker's measured share)."""
    run = record["run"]
    main = run["largest_process_mb"]
    worker = max(run["process_tree_peak_mb"] - main, 0.0) / record["workers"]
    return int(math.ceil(MEM_MARGIN * (main + cpus * worker) / 100.0) * 100)


def predicted_seconds(jobs: list[dict], cpus: int) -> float:
    dask = sum(j["cpu_s"] for j in jobs if j["dask"])
    serial = sum(j["cpu_s"] for j in jobs if not j["dask"])
    return STARTUP_S + dask / cpus + serial


def _minutes(seconds: float) -> int:
    return max(1, math.ceil(MARGIN * seconds / 60.0))


def _by_rule(record: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for job in record["jobs"].values():
        out.setdefault(job["rule"], []).append(job)
    return out


def _rule_runtime(jobs: list[dict], cpus: int) -> int:
    """A rule that takes a job's whole width: one layer per rule job; its runtime covers its mean job."""
    return _minutes(predicted_seconds(jobs, cpus) - STARTUP_S) if len(jobs) == 1 else \
        _minutes((predicted_seconds(jobs, cpus) - STARTUP_S) / len(jobs))


def layout(record: dict, kind: str, cpus: int = CPUS) -> dict:
    """The profile keys (groups, group-components, resources, set-resources) of a layout, from the measurements."""
    rules = _by_rule(record)
    mem = memory_mb(record, cpus)
    groups, components, sized = {}, {}, {}
    whole = {"cpus_per_task": cpus, "mem_mb": mem}
    cells = [j for r in CELL_RULES for j in rules.get(r, [])]
    # split-merge and restart: each rule job takes the whole job (the group's limit adds their runtimes)
    for part in ("split_merge", "restart"):
        for rule in PARTS[part]:
            if rule in rules:
                groups[rule] = "split_merge_restart"
                sized[rule] = {**whole, "runtime": _rule_runtime(rules[rule], cpus)}
    components["split_merge_restart"] = ALL
    summary = [r for r in PARTS["jsq_ps"] if r not in CELL_RULES and r in rules]
    if kind == "long":
        # the whole run in one job: the jobs that start it (no upstream job) in one layer, without CPUs of their own
        # in Snakemake's account, as high as their predicted time together; every later rule takes the whole job
        groups.clear(), components.clear(), sized.clear()
        first = [j for r in FIRST_RULES for j in rules.get(r, [])]
        first_runtime = _minutes(predicted_seconds(first, cpus))
        for rule in (r for part in PARTS.values() for r in part if r in rules):
            groups[rule] = "sojourn"
            sized[rule] = ({"cpus_per_task": 0, "mem_mb": 0, "runtime": first_runtime} if rule in FIRST_RULES
                           else {**whole, "runtime": _rule_runtime(rules[rule], cpus)})
        components["sojourn"] = ALL
    else:
        # cell groups of about SMALL_MINUTES each at cpus CPUs; a block's runtime is Snakemake's smallest, 1 minute
        per_block = (predicted_seconds(cells, cpus) - STARTUP_S) / max(len(cells), 1)
        blocks = max(cpus, int((SMALL_MINUTES * 60 - STARTUP_S) / max(per_block, 1e-9)) // cpus * cpus)
        worker = max(100, math.floor(mem / cpus / 100.0) * 100)  # cpus blocks side by side within the job
        for rule in CELL_RULES:
            groups[rule] = "jsq_ps_cells"
            sized[rule] = {"cpus_per_task": 1, "mem_mb": worker, "runtime": 1}
        components["jsq_ps_cells"] = blocks
        for rule in summary:
            groups[rule] = "jsq_ps_summary"
            sized[rule] = {**whole, "runtime": _rule_runtime(rules[rule], cpus)}
    return {"groups": groups, "group-components": components, "resources": whole, "set-resources": sized}


def section(record: dict, kind: str) -> str:
    """The profile's sized section: the layout as YAML, with where its numbers come from."""
    import yaml

    keys = layout(record, kind)
    run = record["run"]
    head = [
        BEGIN + f" from {MEASUREMENTS.relative_to(ROOT)} ({record['config']}, commit {record['commit']}):",
        f"# do not edit by hand; regenerate with `python workflow/slurm/size_jobs.py write` ({kind} layout).",
        f"# Measured: {run['jobs']} rule jobs, {run['cpu_s']:.0f} CPU-s in all; a job's time limit is {MARGIN:g} x",
        f"# its predicted time at {CPUS} CPUs, its memory {MEM_MARGIN:g} x the measured Snakemake process + one Dask",
        "# worker per CPU (`python workflow/slurm/size_jobs.py plan` prints every SLURM job's figures).",
    ]
    body = yaml.safe_dump(keys, sort_keys=False, default_flow_style=False, width=120)
    return "\n".join(head) + "\n" + body + END + "\n"


SMALL_HEAD = """\
# Route 1 with short SLURM jobs (docs/hpc.md, "Sizing"): for clusters whose backfill favours jobs of a few minutes.
#   snakemake --workflow-profile workflow/profiles/slurm-small --configfile config/paper.yaml
# Written by workflow/slurm/size_jobs.py from workflow/profiles/slurm/profile.yaml: the same but for the sized
# section (edit that profile, then `python workflow/slurm/size_jobs.py write`).
"""


def profile_text(record: dict, kind: str) -> str:
    """A profile's whole text: the default profile's (its sized section written) or, for the small layout, the same
    with that section and a header of its own."""
    old = (PROFILES["long"] / "profile.yaml").read_text()
    start, stop = old.find(BEGIN), old.find(END)
    if start < 0 or stop < 0:
        raise SystemExit(f"{PROFILES['long']}/profile.yaml: no sized section ({BEGIN!r} ... {END!r})")
    text = old[:start] + section(record, kind) + old[stop + len(END) + 1:]
    return text if kind == "long" else SMALL_HEAD + text


# ---- plan ------------------------------------------------------------------------------------------------------
@dataclass
class Planned:
    name: str
    members: int
    cpus: int
    mem_mb: int
    predicted_s: float
    limit_min: int
    missing: list[str]


def _int(res: dict, key: str, default: int) -> int:
    return int(res.get(key, default))


def _layers(members: list[RuleJob], width: dict) -> tuple[list[RuleJob], list[list[RuleJob]]]:
    """How Snakemake lays out a group job's rule jobs (``GroupResources.basic_layered``): the jobs without CPUs or
    memory of their own in one layer; the others packed into layers first-fit, longest first, each layer within
    ``width`` (the profile's ``resources``: a group job's CPUs and memory). Whole-width jobs take a layer each; narrow
    ones share it (the small profile's cell blocks: two a layer at 2 CPUs)."""
    def free(m):
        return _int(m.resources, "cpus_per_task", 1) == 0 and _int(m.resources, "mem_mb", 0) == 0

    caps = {k: int(width[k]) for k in ("cpus_per_task", "mem_mb") if width.get(k) is not None}
    layers: list[list[RuleJob]] = []
    for m in sorted((m for m in members if not free(m)), key=lambda m: _int(m.resources, "runtime", 0), reverse=True):
        for layer in layers:
            if all(sum(_int(j.resources, k, 0) for j in (*layer, m)) <= cap for k, cap in caps.items()):
                layer.append(m)
                break
        else:
            layers.append([m])
    return [m for m in members if free(m)], layers


def group_limit(members: list[RuleJob], width: dict) -> int:
    """The time limit Snakemake gives a group job of these members: the sum of its layers' heights, each layer as high
    as its longest job (:func:`_layers`)."""
    free, layers = _layers(members, width)
    return (max((_int(m.resources, "runtime", 0) for m in free), default=0)
            + sum(max(_int(j.resources, "runtime", 0) for j in layer) for layer in layers))


def group_size(members: list[RuleJob], width: dict) -> tuple[int, int]:
    """The CPUs and memory (MB) Snakemake asks for a group job of these members: its widest layer's sums
    (:func:`_layers`); SLURM gets at least one CPU."""
    _, layers = _layers(members, width)
    cpus = max((sum(_int(j.resources, "cpus_per_task", 1) for j in layer) for layer in layers), default=0)
    mem = max((sum(_int(j.resources, "mem_mb", 0) for j in layer) for layer in layers), default=0)
    return max(1, cpus), mem


def profile_resources(profile: Path) -> dict:
    """A profile's ``resources``: the width of its group jobs (CPUs, memory), which Snakemake packs layers into."""
    import yaml

    return dict((yaml.safe_load((profile / "profile.yaml").read_text()) or {}).get("resources") or {})


def plan(record: dict, text: str, width: dict) -> list[Planned]:
    """The SLURM jobs of a dry run (``text``) of a profile whose ``resources`` are ``width``, with their predictions."""
    out = []
    for job in parse_dry_run(text):
        cpus, mem = group_size(job.members, width)  # the widest layer
        measured, missing = [], []
        for m in job.members:
            rec = record["jobs"].get(m.key() or "")
            (measured.append(rec) if rec else missing.append(m.key() or m.rule))
        out.append(Planned(job.group or job.members[0].rule, len(job.members), cpus, mem,
                           predicted_seconds(measured, cpus), group_limit(job.members, width), missing))
    return out


def table(planned: list[Planned]) -> str:
    rows = ["| SLURM job | rule jobs | CPUs | memory | predicted | time limit |", "|---|---|---|---|---|---|"]
    for p in planned:
        rows.append(f"| {p.name} | {p.members} | {p.cpus} | {p.mem_mb / 1000:.1f} GB | {p.predicted_s / 60:.1f} min "
                    f"| {p.limit_min} min |")
    return "\n".join(rows)


def summary(planned: list[Planned]) -> str:
    """One line: how many SLURM jobs, their predicted lengths and limits."""
    pred = [p.predicted_s / 60 for p in planned]
    lim = [p.limit_min for p in planned]
    jobs = f"{len(planned)} SLURM job{'s' if len(planned) > 1 else ''}"
    return (f"{jobs} of {planned[0].cpus} CPUs: predicted {min(pred):.1f}–{max(pred):.1f} min, "
            f"time limits {min(lim)}–{max(lim)} min")


def small_summary(planned: list[Planned]) -> str:
    """The small layout in one line; stable from run to run (which blocks share a job is Snakemake's pick, so the
    cell jobs are told by their mean)."""
    cells = [p for p in planned if p.name == "jsq_ps_cells"]
    mean = sum(p.predicted_s for p in cells) / max(len(cells), 1) / 60
    return (f"{len(planned)} SLURM jobs of {planned[0].cpus} CPUs, {len(cells)} of them cell jobs of "
            f"{mean:.1f} min predicted on average (time limit {max(p.limit_min for p in cells)} min)")


def measured(record: dict) -> str:
    """What was measured, and the memory rule it gives, in one paragraph (docs/hpc.md, "Sizing")."""
    run = record["run"]
    main = run["largest_process_mb"]
    worker = max(run["process_tree_peak_mb"] - main, 0.0) / record["workers"]
    mems = ", ".join(f"{c} CPUs {memory_mb(record, c) / 1000:.1f} GB" for c in (2, 8, 16, 32))
    part = run.get("measured_jobs", run["jobs"])
    assumed = sorted({j["rule"] for j in record["jobs"].values() if j.get("assumed")})
    jobs = (f"{run['jobs']} rule jobs" if part == run["jobs"] else
            f"{part} of its {run['jobs']} rule jobs (measured while it ran, after {run['elapsed'].split(' (')[0]}; "
            f"the other {run['jobs'] - part - len(assumed)} take their rule's measured mean"
            + (f", and {', '.join(assumed)} the CPU-s given for them" if assumed else "") + ")")
    return (f"Measured: `{record['config']}` at commit {record['commit']}, {jobs}, "
            f"{run['cpu_s']:.0f} CPU-s (user + system) {'in all' if part == run['jobs'] else 'so far'}, "
            f"the Snakemake process {main / 1000:.2f} GB at its "
            f"largest and {worker / 1000:.2f} GB per Dask worker; a job's memory ({MEM_MARGIN:g} × process + "
            f"workers): {mems}.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    m = sub.add_parser("measure", help="write benchmarks/slurm_sizes.json from a finished run")
    m.add_argument("run", type=Path, help="the run's work folder (--directory)")
    when = m.add_mutually_exclusive_group(required=True)
    when.add_argument("--time-log", type=Path, help="the finished run's /usr/bin/time -v output")
    when.add_argument("--running", type=int, metavar="PID",
                      help="a run still going: its Snakemake's pid (unfinished jobs take their rule's mean)")
    m.add_argument("--configfile", type=Path, default=ROOT / "config" / "paper.yaml")
    m.add_argument("--workers", type=int, default=2, help="Dask workers the run had (default 2)")
    m.add_argument("--config", nargs="+", metavar="KEY=VALUE", help="the run's own --config, if it had one")
    m.add_argument("--assume", nargs="+", default=[], metavar="RULE=SECONDS",
                   help="with --running: CPU-s of each job of a rule no job of which has finished")
    m.add_argument("--output", type=Path, default=MEASUREMENTS)
    sub.add_parser("write", help="write the profiles' sized sections from benchmarks/slurm_sizes.json")
    p = sub.add_parser("plan", help="the SLURM jobs a profile gives, with the measured predictions")
    p.add_argument("--profile", type=Path, default=PROFILES["long"])
    p.add_argument("--configfile", type=Path, default=ROOT / "config" / "paper.yaml")
    ap.add_argument("--measurements", type=Path, default=MEASUREMENTS, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.what == "measure":
        record = measure(args.run.resolve(), args.configfile.resolve(), args.time_log, args.workers, args.running,
                         args.config, {k: float(v) for k, v in (a.split("=", 1) for a in args.assume)})
        args.output.write_text(json.dumps(record, indent=1) + "\n")
        print(f"{args.output}: {record['run']['jobs']} rule jobs, {record['run']['cpu_s']} CPU-s")
        return 0
    record = json.loads(args.measurements.read_text())
    if args.what == "write":
        texts = {kind: profile_text(record, kind) for kind in PROFILES}  # both from the default profile as it was
        for kind, path in PROFILES.items():
            path.mkdir(exist_ok=True)
            target = path / "profile.yaml"
            changed = not target.exists() or target.read_text() != texts[kind]
            if changed:
                target.write_text(texts[kind])
            print(f"{target.relative_to(ROOT)}: {'rewritten' if changed else 'unchanged'}")
        return 0
    import tempfile

    with tempfile.TemporaryDirectory(prefix="size-jobs-") as tmp:
        planned = plan(record, dry_run(args.profile, args.configfile, Path(tmp)), profile_resources(args.profile))
    print(measured(record))
    print(summary(planned) + ":")
    print(table(planned))
    missing = sorted({k for p in planned for k in p.missing})
    if missing:
        print(f"no measurement for {len(missing)} rule job(s), e.g. {missing[:3]}: measure a run of this structure",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
