"""Reference percentiles of the M/M/R-JSQ-PS sojourn time for the tail-method evaluation (not a test).

    python benchmarks/tail_reference.py                  # every missing cell of the grid, appended to the CSV
    python benchmarks/tail_reference.py --cells 4:0.9 10:0.95   # only these cells (R:rho)
    python benchmarks/tail_reference.py --check-sim 4:0.9       # simulate a cell that exact also solves

Grid: R in {1, 2, 3, 4, 5, 6, 8, 10} x rho in {0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99}; percentiles
99, 99.9, 99.99, 99.999. Written to ``benchmarks/tail_reference.csv`` (one row per cell and percentile;
existing cells are skipped, so an interrupted run resumes).

How each value is produced (column ``source``):

* ``exact``: :func:`sojourn.jsq_ps.solve.exact.exact_sojourn_cdf` (the tagged-customer chain of this
  repository at the commit in ``commit``, no budget, eps = 1e-10) on the paper grid t = 0..182.32 step
  0.01, wherever its predicted cost (``exact_plan``) is at most ``--exact-limit`` CPU seconds (default
  150) within ``--exact-states`` (system states x R, default 4 000 000: memory) and its truncation is
  reached (``truncated_mass`` < 1e-9, recorded). The percentile is the CDF's crossing of p by linear
  interpolation between grid points (no dt bias); NaN if F(182.32) <= p (``beyond_grid`` = 1). CI = value.
* ``simulation``: the numba kernel (:func:`sojourn.jsq_ps.raw.histogram`, exact exponential kernel),
  ``replications`` independent replications (seed 20240 + the usual per-replication streams), horizon
  chosen for about ``customers`` recorded customers per replication, warm-up = max(5 % of the horizon,
  20 relaxation times 1/(R mu (1 - sqrt(rho))^2)), histogram dt = 0.01 to t = 1000. The histogram's
  bins are [t_i, t_i + dt): a percentile read as "the first right bin edge with F > p" is biased up by up
  to dt; here the pooled CDF (all replications) is interpolated linearly inside the crossing bin
  (value), and the same per replication gives the Student-t 95 % interval across replications
  (``ci_low``, ``ci_high``; ``mean_reps`` is their mean). ``beyond_grid`` = 1 when the value is > 182.32.
"""
from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

RS = (1, 2, 3, 4, 5, 6, 8, 10)
RHOS = (0.1, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99)
PERCENTILES = (99.0, 99.9, 99.99, 99.999)
OUT = Path(__file__).with_name("tail_reference.csv")
FIELDS = ["R", "rho", "percentile", "value", "ci_low", "ci_high", "mean_reps", "source", "beyond_grid",
          "replications", "customers_per_replication", "horizon", "warmup", "truncated_mass", "M", "D",
          "cpu_seconds", "commit"]
T_MAX = 182.32
SIM_T_MAX = 1000.0
DT = 0.01
SEED = 20240


def commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(Path(__file__).parent), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except Exception:  # pragma: no cover
        return "unknown"


def crossing(t: np.ndarray, F: np.ndarray, p: float) -> float:
    """t where the piecewise-linear interpolation of F on the grid first exceeds p (NaN if never)."""
    above = np.flatnonzero(F > p)
    if not above.size:
        return float("nan")
    i = int(above[0])
    if i == 0:
        return float(t[0])
    f0, f1 = F[i - 1], F[i]
    return float(t[i - 1] + (p - f0) / (f1 - f0) * (t[i] - t[i - 1]))


def hist_percentile(hist: np.ndarray, overflow: int, p: float, dt: float = DT) -> float:
    """Percentile of a histogram with bins [i dt, (i+1) dt): the CDF at the right edges, interpolated."""
    n = hist.sum() + overflow
    F = np.concatenate([[0.0], np.cumsum(hist) / n])
    edges = np.arange(F.size) * dt
    return crossing(edges, F, p)


def run_exact(R, rho, limit, states):
    from sojourn.core.checks.timegrid import time_grid
    from sojourn.jsq_ps.solve.exact import exact_plan, exact_sojourn_cdf

    # the state cap bounds the memory (R = 10, rho = 0.9 with no cap grew past 20 GB in the plan's search)
    plan = exact_plan(rho * R, 1.0, R, T_MAX, max_seconds=1e12, state_budget=states)
    if not plan["fits"] or plan["predicted_seconds"] > limit:
        return None
    t = time_grid(T_MAX, DT)
    c0 = time.process_time()
    res = exact_sojourn_cdf(rho * R, 1.0, R, t, state_budget=states)
    cpu = time.process_time() - c0
    if res.truncated_mass >= 1e-9:
        return None
    rows = []
    for q in PERCENTILES:
        v = crossing(t, res.cdf, q / 100)
        rows.append(dict(R=R, rho=rho, percentile=q, value=v, ci_low=v, ci_high=v, mean_reps=v, source="exact",
                         beyond_grid=int(not np.isfinite(v)), replications=0, customers_per_replication=0,
                         horizon=0, warmup=0, truncated_mass=res.truncated_mass, M=res.M, D=res.D,
                         cpu_seconds=round(cpu, 2)))
    return rows


def sim_plan(R, rho, customers):
    lam = rho * R
    horizon = float(np.ceil(customers / lam / 0.9 / 1000.0) * 1000.0)
    relax = 1.0 / (R * (1.0 - np.sqrt(rho)) ** 2)
    warmup = float(max(0.05 * horizon, 20.0 * relax))
    return horizon, warmup


def run_sim(R, rho, replications, customers):
    from scipy import stats

    from sojourn.jsq_ps import raw
    from sojourn.jsq_ps.model import JSQPS

    spec = JSQPS.from_rho(R=R, rho=rho)
    horizon, warmup = sim_plan(R, rho, customers)
    c0 = time.process_time()
    hists, overs = [], []
    for k in range(replications):
        h, o = raw.histogram(spec, k, SEED, horizon + warmup, warmup, DT, SIM_T_MAX)
        hists.append(h)
        overs.append(o)
    cpu = time.process_time() - c0
    pooled = np.sum(hists, axis=0)
    rows = []
    for q in PERCENTILES:
        v = hist_percentile(pooled, int(sum(overs)), q / 100)
        per = np.array([hist_percentile(h, o, q / 100) for h, o in zip(hists, overs, strict=True)])
        if np.all(np.isfinite(per)):
            m, s = per.mean(), per.std(ddof=1)
            half = stats.t.ppf(0.975, replications - 1) * s / np.sqrt(replications)
            lo, hi = m - half, m + half
        else:
            m = lo = hi = float("nan")
        rows.append(dict(R=R, rho=rho, percentile=q, value=v, ci_low=lo, ci_high=hi, mean_reps=m, source="simulation",
                         beyond_grid=int(not (v <= T_MAX)), replications=replications,
                         customers_per_replication=int(pooled.sum() + sum(overs)) // replications,
                         horizon=horizon, warmup=warmup, truncated_mass="", M="", D="", cpu_seconds=round(cpu, 1)))
    return rows


def done_cells(path):
    if not path.exists():
        return set()
    with open(path) as fh:
        return {(int(r["R"]), float(r["rho"]), r["source"]) for r in csv.DictReader(fh)}


def append(path, rows, sha):
    new = not path.exists()
    with open(path, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        if new:
            w.writeheader()
        for r in rows:
            w.writerow({**r, "commit": sha})


def parse_cells(items):
    out = []
    for it in items:
        R, rho = it.split(":")
        out.append((int(R), float(rho)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", nargs="*", help="R:rho cells (default: the whole grid)")
    ap.add_argument("--check-sim", nargs="*", default=None, help="simulate these R:rho cells even if exact runs")
    ap.add_argument("--exact-limit", type=float, default=150.0)
    ap.add_argument("--exact-states", type=int, default=4_000_000, help="exact's state cap (system states x R)")
    ap.add_argument("--replications", type=int, default=10)
    ap.add_argument("--customers", type=float, default=1e8, help="recorded customers per replication")
    ap.add_argument("--no-sim", action="store_true")
    ap.add_argument("--output", type=Path, default=OUT)
    a = ap.parse_args(argv)
    sha = commit()
    done = done_cells(a.output)
    if a.check_sim is not None:
        for R, rho in parse_cells(a.check_sim):
            if (R, rho, "simulation") not in done:
                rows = run_sim(R, rho, a.replications, a.customers)
                append(a.output, rows, sha)
                print(R, rho, "simulation", [round(r["value"], 3) for r in rows], flush=True)
        return
    cells = parse_cells(a.cells) if a.cells else [(R, rho) for R in RS for rho in RHOS]
    for R, rho in cells:
        if (R, rho, "exact") in done or (R, rho, "simulation") in done:
            continue
        rows = run_exact(R, rho, a.exact_limit, a.exact_states)
        if rows is None:
            if a.no_sim:
                print(R, rho, "skipped (exact over the limit)", flush=True)
                continue
            rows = run_sim(R, rho, a.replications, a.customers)
        append(a.output, rows, sha)
        print(R, rho, rows[0]["source"], [round(r["value"], 3) for r in rows], rows[0]["cpu_seconds"], "s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
