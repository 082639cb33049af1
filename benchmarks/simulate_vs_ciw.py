"""Throughput of the fast (numba) backend vs Ciw 3.2 on JSQ-PS, and one paper-size replication.

    python benchmarks/simulate_vs_ciw.py                # full table + paper replication (≈ 1 min)
    python benchmarks/simulate_vs_ciw.py --paper-only   # only the paper replication (fresh process: peak RSS)
    python benchmarks/simulate_vs_ciw.py --whole-process [--rounds 3] [--against OTHER_CHECKOUT] [--record]

``--whole-process`` (issue 36: ≥ 500×): ``sojourn simulate`` as a user runs it, a fresh process from start-up
(imports, the kernels' cache load) to the written netCDF file, on the paper's cell (M/M/10-JSQ-PS, ρ = 0.9, the
default 10 replications of horizon 160 000), against the same command with ``--backend ciw`` (its worker processes
included) on the same work: Ciw at the paper's length would take ~15 CPU-minutes and keep a record per customer, so
it runs at two shorter horizons (H and 3H, 10 replications each) and a line through them (seconds = start-up + cost
per recorded customer × customers) gives its seconds for the fast run's customers. Seconds are CPU seconds of the
whole process tree (getrusage of the waited-for children: user + sys) and wall seconds; the rounds alternate the
commands, the fast figures are medians; the load average is printed; ``--record`` appends them to
benchmarks/simulate_vs_ciw.jsonl. The per-phase CPU breakdown of one fast process (interpreter, imports, the
kernels' first load, the imports the program makes beside the replications, the kernels, Dataset, summary,
file) is printed beside it.

Customers/s = recorded customers / CPU time of this process during the simulation (time.process_time;
the machine is shared, so CPU time is the stable measure; wall-clock rates are printed too). Model build is
included for Ciw; numba compilation is excluded for the fast backend by a warm-up call. Ciw runs in this process,
seeded, at a short
horizon; the fast kernels at a long one. Warm-up and cool-down are 0 here: every customer counts.
Targets (issue "Simulation engine"): fast ≥ 300× Ciw on M/M/10-JSQ-PS ρ = 0.9 (aim 500×), ≥ 100× with
lognormal service; paper replication (R = 10, ρ = 0.9, T = 160 000, W = C = 8 000) ≤ 1 s kernel time and
≤ 200 MB peak RSS.
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time

CASES = [(1, 0.5), (3, 0.8), (10, 0.9), (10, 0.99)]
LAWS = ["exponential", "lognormal"]


def peak_rss_mb() -> float:
    """Peak RSS of this process in MB: resource.getrusage (Linux: kB).

    getrusage's ru_maxrss survives exec, so a child started from a bigger parent reports the parent's peak;
    the paper replication therefore prints /proc/self/status VmHWM as well (per address space).
    """
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def vm_hwm_mb() -> float:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def paper_replication() -> None:
    from sojourn import mm_jsq_ps
    from sojourn.jsq_ps.simulate import simulate_replication

    print(f"peak RSS after imports (numpy, scipy.stats, xarray, numba): VmHWM {vm_hwm_mb():.0f} MB")
    spec = mm_jsq_ps(10, 0.9)
    small = dict(horizon=200.0, warmup=10.0)
    for kernel in ("exponential", "general"):  # load / compile the kernels first
        simulate_replication(spec, 0, 0, kernel=kernel, **small)
    before = vm_hwm_mb()
    print(f"peak RSS after loading both kernels (short warm-up runs): VmHWM {before:.0f} MB")
    for kernel in ("exponential", "general"):
        t0, c0 = time.perf_counter(), time.process_time()
        ds = simulate_replication(spec, 0, 0, kernel=kernel)
        total, cpu = time.perf_counter() - t0, time.process_time() - c0
        k = float(ds["wall_time"][0])
        ev = int(ds["events"][0])
        print(f"paper replication M/M/10-JSQ-PS rho=0.9 T=160000 W=C=8000, {kernel:11s} kernel: "
              f"kernel wall {k:.3f} s ({1e9 * k / ev:.0f} ns/event, {ev:,} events, "
              f"{int(ds['n_customers'][0]):,} recorded customers); simulate_replication wall {total:.3f} s, "
              f"CPU {cpu:.3f} s")
    after = vm_hwm_mb()
    print(f"peak RSS of this process: VmHWM {after:.0f} MB (the paper replications added {after - before:.1f} MB); "
          f"getrusage ru_maxrss {peak_rss_mb():.0f} MB")


def ciw_rate(spec, horizon: float, seed: int = 1):
    from sojourn.core.checks.timegrid import grid_size
    from sojourn.jsq_ps.ciw_backend import run_replication

    run_replication(spec.to_json(), seed, 10.0, 0.0, 0.0, 0.01, 100, 10)  # imports outside the timing
    c0 = time.process_time()
    r = run_replication(spec.to_json(), seed, horizon, 0.0, 0.0, 0.01, grid_size(182.32, 0.01), 200)
    cpu = time.process_time() - c0
    return r["acc"][0] / cpu, r["acc"][0] / r["wall_time"]


def fast_rate(spec, horizon: float, kernel: str, seed: int = 1):
    from sojourn.jsq_ps.simulate import simulate

    simulate(spec, horizon=200.0, warmup=0.0, kernel=kernel, seed=seed)  # compile/load outside the timing
    c0 = time.process_time()
    ds = simulate(spec, horizon=horizon, warmup=0.0, kernel=kernel, seed=seed)
    cpu = time.process_time() - c0
    w = float(ds["wall_time"][0])
    n = float(ds["n_customers"][0])
    return n / cpu, n / w, 1e9 * cpu / int(ds["events"][0])


def table(ciw_horizon: float, fast_horizon: float) -> None:
    from sojourn import JSQPS

    print(f"Ciw horizon {ciw_horizon:g}, fast horizon {fast_horizon:g} (time units; mu = 1); rates per CPU second")
    head = (f"{'model':30s} {'Ciw cust/s':>11s} {'fast kernel':>12s} {'fast cust/s':>12s} {'ns/event':>9s} "
            f"{'ratio':>7s}   (wall-clock: Ciw, fast, ratio)")
    print(head)
    print("-" * len(head))
    for law in LAWS:
        for R, rho in CASES:
            spec = JSQPS.from_rho(R, rho, service=law)
            c_rate, c_wall = ciw_rate(spec, ciw_horizon)
            kernels = ["exponential", "general"] if law == "exponential" else ["general"]
            for kernel in kernels:
                f_rate, f_wall, ns = fast_rate(spec, fast_horizon, kernel)
                name = f"R={R:<2d} rho={rho:<4g} {law}"
                print(f"{name:30s} {c_rate:11,.0f} {kernel:>12s} {f_rate:12,.0f} {ns:9.0f} {f_rate / c_rate:6.0f}x"
                      f"   ({c_wall:,.0f}, {f_wall:,.0f}, {f_wall / c_wall:.0f}x)", flush=True)


#: the CPU seconds of a whole ``sojourn simulate`` by phase, measured inside a fresh process (``--phases``)
PHASES = r"""
import importlib, json, sys, time
T = time.process_time
t0 = T()
import sojourn.cli as cli
cli._skip_unused_imports()  # as the program does first (before xarray is imported)
import sojourn.jsq_ps.simulate as sim, sojourn.jsq_ps.raw as raw, sojourn.core.runs.threads as threads
t1 = T()
phases = {"interpreter start-up (before this script)": t0, "numpy, sojourn modules": t1 - t0}
def timed(mod, name, label):
    f = getattr(mod, name)
    def g(*a, **k):
        c = T()
        try:
            return f(*a, **k)
        finally:
            phases[label] = phases.get(label, 0.0) + T() - c
    setattr(mod, name, g)
def imports(names):  # here in this thread, one phase (the program imports them beside the replications)
    c = T()
    for name in names:
        importlib.import_module(name)
    phases["imports beside the replications (xarray, pandas, scipy.special, netCDF4)"] = T() - c
    timed(sys.modules["sojourn.core.files.io"], "write_netcdf", "netCDF file")
threads.import_in_background = imports
timed(raw, "load_kernel", "kernels' first load (numba, its registries, the cache)")
sim.threads_for = lambda tasks, workers: 1  # one thread: CPU time by phase (threads change the wall time only)
timed(sim, "_run_fast", "kernels (replications)")
timed(sim, "_dataset", "Dataset")
timed(sim, "summary", "summary (percentile CIs)")
sys.argv = ["sojourn", "simulate", *sys.argv[1:]]
import contextlib, io as _io
with contextlib.redirect_stdout(_io.StringIO()):
    status = cli.main()
assert status == 0, status
phases["process total"] = T()
print(json.dumps(phases))
"""


def _sojourn(args: list[str], out: str, checkout=None) -> tuple[float, float, int]:
    """(CPU seconds of the process tree, wall seconds, recorded customers) of ``sojourn simulate <args>`` (of the
    checkout ``checkout``, default this one)."""
    import os
    import tempfile

    import xarray as xr

    env = None if checkout is None else {**os.environ, "PYTHONPATH": os.path.join(checkout, "src")}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, out)
        r0, w0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
        subprocess.run([sys.executable, "-m", "sojourn.cli", "simulate", *args, "--output", path], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        wall = time.perf_counter() - w0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        with xr.open_dataset(path) as ds:
            n = int(ds["n_customers"].sum())
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), wall, n


def _same_work(runs, customers: int) -> tuple[float, float, float, float]:
    """Ciw's (CPU, wall) seconds for ``customers`` recorded customers, from a least-squares line through its runs
    at two horizons (seconds = start-up + per customer × customers), and that line's (start-up, per customer) CPU."""
    import numpy as np

    n = np.array([r[2] for r in runs], float)
    cpu_b, cpu_a = np.polyfit(n, [r[0] for r in runs], 1)
    wall_b, wall_a = np.polyfit(n, [r[1] for r in runs], 1)
    return cpu_a + cpu_b * customers, wall_a + wall_b * customers, cpu_a, cpu_b


def whole_process(rounds: int, ciw_horizon: float, record: bool, against=None) -> None:
    import json
    import os
    import statistics

    cell = ["-R", "10", "--load", "0.9"]
    runs: dict = {"fast": [], "ciw": [], "other": []}
    _sojourn([*cell, "--horizon", "2000"], "warm.nc")  # the kernels compiled into numba's cache, not timed
    if against:
        _sojourn([*cell, "--horizon", "2000"], "warm.nc", against)
    order = ["fast", "ciw"] + (["other"] if against else [])
    for k in range(rounds):
        for who in order[k % len(order):] + order[:k % len(order)]:
            if who == "ciw":  # two horizons: Ciw's start-up (its spawned workers' imports) apart from its customers
                for h in (ciw_horizon, 3 * ciw_horizon):
                    runs["ciw"].append(_sojourn([*cell, "--backend", "ciw", "--horizon", f"{h:g}"], "ciw.nc"))
            else:
                runs[who].append(_sojourn(cell, f"{who}.nc", against if who == "other" else None))
    load = os.getloadavg()

    def median(runs):  # (CPU s, wall s, customers)
        return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs[0][2])

    f = median(runs["fast"])
    ciw_cpu, ciw_wall, ciw_start, ciw_per = _same_work(runs["ciw"], f[2])
    rows = [("sojourn simulate (horizon 160000)", f)]
    o = median(runs["other"]) if against else None
    if against:
        rows.append((f"the same, checkout {os.path.basename(os.path.normpath(against))}", o))
    rows.append(("sojourn simulate --backend ciw, same work", (ciw_cpu, ciw_wall, f[2])))
    print(f"whole process, M/M/10-JSQ-PS rho = 0.9, 10 replications of horizon 160000; {rounds} rounds alternating; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"Ciw at horizons {ciw_horizon:g} and {3 * ciw_horizon:g} (10 replications each): CPU = {ciw_start:.2f} s "
          f"start-up + {1e6 * ciw_per:.1f} us per recorded customer ({1 / ciw_per:,.0f} customers per CPU second), "
          f"taken to the same work")
    print(f"{'command':44s}{'customers':>12s}{'CPU s':>9s}{'wall s':>9s}{'cust/CPU-s':>13s}{'cust/wall-s':>13s}")
    for name, r in rows:
        print(f"{name:44s}{r[2]:12,d}{r[0]:9.2f}{r[1]:9.2f}{r[2] / r[0]:13,.0f}{r[2] / r[1]:13,.0f}")
    print(f"ratio Ciw/fast on the same work: {ciw_cpu / f[0]:.0f}x CPU seconds, {ciw_wall / f[1]:.0f}x wall seconds "
          f"(both commands use the machine's {os.cpu_count()} cores: the fast backend's threads, Ciw's worker "
          f"processes); against Ciw's per-customer CPU alone: {f[2] / f[0] * ciw_per:.0f}x")
    if against:
        print(f"the other checkout: {ciw_cpu / o[0]:.0f}x CPU, {ciw_wall / o[1]:.0f}x wall; this / other: CPU seconds "
              f"{f[0] / o[0]:.3f}, wall {f[1] / o[1]:.3f}")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-c", PHASES, *cell, "--output", os.path.join(tmp, "p.nc")],
                              capture_output=True, text=True, check=True)
    phases = json.loads(proc.stdout.strip().splitlines()[-1])
    print("CPU seconds of one fast process by phase (its replications one after the other):")
    for name, sec in phases.items():
        print(f"  {name:74s}{sec:7.3f}")
    if record:
        row = {"benchmark": "simulate_vs_ciw whole process", "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
               "cpus": os.cpu_count(), "load_average": load, "rounds": rounds, "ciw_horizons": [ciw_horizon,
               3 * ciw_horizon], "fast": {"cpu": f[0], "wall": f[1], "customers": f[2]},
               "ciw_same_work": {"cpu": ciw_cpu, "wall": ciw_wall, "startup_cpu": ciw_start,
                                 "cpu_per_customer": ciw_per, "runs": runs["ciw"]},
               "ratio_cpu": ciw_cpu / f[0], "ratio_wall": ciw_wall / f[1],
               "ratio_per_customer_cpu": f[2] / f[0] * ciw_per, "phases": phases}
        if against:
            row["other"] = {"checkout": str(against), "cpu": o[0], "wall": o[1], "customers": o[2],
                            "ratio_cpu": ciw_cpu / o[0], "ratio_wall": ciw_wall / o[1]}
        from pathlib import Path

        with open(Path(__file__).with_name("simulate_vs_ciw.jsonl"), "a") as fh:
            fh.write(json.dumps(row) + "\n")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--paper-only", action="store_true", help="only the paper-size replication")
    p.add_argument("--ciw-horizon", type=float, default=2_000.0)
    p.add_argument("--fast-horizon", type=float, default=100_000.0)
    p.add_argument("--whole-process", action="store_true", help="sojourn simulate as whole processes (issue 36)")
    p.add_argument("--rounds", type=int, default=3, help="--whole-process: rounds of the two commands")
    p.add_argument("--whole-ciw-horizon", type=float, default=1_000.0,
                   help="--whole-process: Ciw's shorter horizon H (the other: 3H)")
    p.add_argument("--record", action="store_true", help="--whole-process: append to simulate_vs_ciw.jsonl")
    p.add_argument("--against", help="--whole-process: also time `sojourn simulate` of this other checkout")
    args = p.parse_args(argv)
    if args.whole_process:
        whole_process(args.rounds, args.whole_ciw_horizon, args.record, args.against)
        return
    if args.paper_only:
        paper_replication()
        return
    table(args.ciw_horizon, args.fast_horizon)
    print()
    # the paper replication in a fresh interpreter, so that its peak RSS excludes Ciw's records
    subprocess.run([sys.executable, __file__, "--paper-only"], check=True)


if __name__ == "__main__":
    main()
