"""Throughput of the fast (numba) backend vs Ciw 3.2 on JSQ-PS, and one paper-size replication.

    python benchmarks/simulate_vs_ciw.py                # full table + paper replication (≈ 1 min)
    python benchmarks/simulate_vs_ciw.py --paper-only   # only the paper replication (fresh process: peak RSS)

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


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--paper-only", action="store_true", help="only the paper-size replication")
    p.add_argument("--ciw-horizon", type=float, default=2_000.0)
    p.add_argument("--fast-horizon", type=float, default=100_000.0)
    args = p.parse_args(argv)
    if args.paper_only:
        paper_replication()
        return
    table(args.ciw_horizon, args.fast_horizon)
    print()
    # the paper replication in a fresh interpreter, so that its peak RSS excludes Ciw's records
    subprocess.run([sys.executable, __file__, "--paper-only"], check=True)


if __name__ == "__main__":
    main()
