"""Evaluate method T against the reference percentiles, beside A*, C* and exact (not a test).

    python benchmarks/tail_method.py                  # the table (T, A*, C*, exact) over benchmarks/tail_reference.csv
    python benchmarks/tail_method.py --no-exact       # without running exact (its cost dominates)
    python benchmarks/tail_method.py --cells 10:0.95  # some cells only, per-cell lines
    python benchmarks/tail_method.py --calibrate      # fit T's cost model (sojourn.jsq_ps.solve.tail)
    python benchmarks/tail_method.py --extended       # beyond the paper grid: rho = 0.95, 0.99 against exact
    python benchmarks/tail_method.py --convergence    # the truncated chain's error against exact per spread cap D
    python benchmarks/tail_method.py --sweep          # T's CPU seconds and guards on all 990 paper cells

``--extended``: where the paper grid (t <= 182.32) cuts the tail off (rho >= 0.95 at small R), T, A*, C* and
exact (no budget) on a longer grid (dt = 0.05, up to 1.15 x exact's 99.999th percentile), errors against exact.

Reference: ``benchmarks/tail_reference.csv`` (``benchmarks/tail_reference.py``: exact where it runs with its
truncation reached, else long simulation with interpolated histogram percentiles and Student-t CIs). Every
method is evaluated on the paper grid (t = 0..182.32, dt = 0.01); a percentile is the CDF's crossing of p by
linear interpolation between grid points (the reference's convention); cells where the reference or the method
has no crossing inside the grid are left out (counted as ``beyond``).

Per rho band (<= 0.5, 0.5-0.9, > 0.9) and percentile: the median |relative error| (and its 90 % quantile), the
share of cells where the method is *optimistic beyond its stated bound* — T states that it is never optimistic
(its percentile is an upper bound), A*, C* and exact state nothing, so for all four: the method's percentile
below the reference (below the reference's 95 % CI where the reference is simulated; below
value·(1 − 1e-9) where it is exact) — and the CPU seconds per cell (median, max) of one process. Appends the
table to ``benchmarks/tail_method.jsonl``.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from sojourn.core.checks.timegrid import time_grid
from sojourn.core.estimates.stats import quantile
from sojourn.jsq_ps.solve.tail import tail_sojourn

REF = Path(__file__).with_name("tail_reference.csv")
OUT = Path(__file__).with_name("tail_method.jsonl")
PERCENTILES = (99.0, 99.9, 99.99, 99.999)
BANDS = (("rho <= 0.5", lambda r: r <= 0.5), ("0.5 < rho <= 0.9", lambda r: 0.5 < r <= 0.9),
         ("rho > 0.9", lambda r: r > 0.9))


def load_reference(path=REF):
    """{(R, rho): {percentile: row}}, preferring exact rows over simulated ones for the same cell."""
    ref = defaultdict(dict)
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        key = (int(row["R"]), float(row["rho"]))
        q = float(row["percentile"])
        if q in ref[key] and ref[key][q]["source"] == "exact":
            continue
        ref[key][q] = row
    return dict(ref)


def run_T(R, rho, t):
    c0 = time.process_time()
    res = tail_sojourn(rho * R, 1.0, R, t)
    return res.cdf, time.process_time() - c0, {"D": res.D, "M": res.M, "states": res.n_states}


def run_corrected(m, R, rho, t):
    from sojourn.jsq_ps.solve.methods import Cell

    c0 = time.process_time()
    r = Cell(rho * R, 1.0, R, t).run(m)
    return r.cdf, time.process_time() - c0, {}


def run_exact(R, rho, t):
    from sojourn.jsq_ps.solve.budget import DEFAULT_BUDGET, ExactOverBudget
    from sojourn.jsq_ps.solve.exact import exact_sojourn_cdf

    c0 = time.process_time()
    try:
        r = exact_sojourn_cdf(rho * R, 1.0, R, t, state_budget=DEFAULT_BUDGET["max_states"],
                              max_seconds=DEFAULT_BUDGET["max_seconds"])
    except ExactOverBudget:
        return None, time.process_time() - c0, {"over_budget": 1}
    return r.cdf, time.process_time() - c0, {}


RUNNERS = {"T": run_T, "A*": lambda R, rho, t: run_corrected("A*", R, rho, t),
           "C*": lambda R, rho, t: run_corrected("C*", R, rho, t), "exact": run_exact}


def evaluate(methods, cells, ref, verbose):
    t = time_grid()
    rows = []
    for R, rho in cells:
        for m in methods:
            cdf, cpu, extra = RUNNERS[m](R, rho, t)
            line = []
            for q in PERCENTILES:
                r = ref[(R, rho)].get(q)
                if r is None:
                    continue
                v = float(r["value"])
                x = float(quantile(t, cdf, q / 100)) if cdf is not None else float("nan")
                if r["source"] == "exact":
                    lo = v * (1 - 1e-9)
                else:
                    lo = float(r["ci_low"]) if r["ci_low"] not in ("", "nan") else float("nan")
                inside = np.isfinite(v) and v <= 182.32 and np.isfinite(x)
                err = x / v - 1.0 if inside else float("nan")
                optimistic = bool(inside and np.isfinite(lo) and x < lo)
                rows.append(dict(R=R, rho=rho, method=m, percentile=q, ref=v, ref_source=r["source"], value=x,
                                 err=err, optimistic=optimistic, cpu=cpu, ran=cdf is not None, **extra))
                line.append(f"{100 * err:+6.2f}{'!' if optimistic else ' '}" if inside else "   --  ")
            if verbose:
                print(f"R={R:2d} rho={rho:.2f} {m:>5} ({ref[(R, rho)][PERCENTILES[0]]['source'][:3]}) cpu={cpu:6.2f}s "
                      + " ".join(line) + (f"  {extra}" if extra else ""), flush=True)
    return rows


def table(rows, methods):
    out = {}
    print(f"\n{'method':>6} {'band':>17} {'pct':>7} {'cells':>5} {'median|err|':>11} {'90% |err|':>9} "
          f"{'optimistic':>10} {'cpu/cell median, max':>22}")
    for m in methods:
        for band, inb in BANDS:
            sel = [r for r in rows if r["method"] == m and inb(r["rho"])]
            cpu = {(r["R"], r["rho"]): r["cpu"] for r in sel}
            ran = {(r["R"], r["rho"]) for r in sel if r["ran"]}
            c = np.array([cpu[k] for k in ran]) if ran else np.array([np.nan])
            for q in PERCENTILES:
                e = np.array([abs(r["err"]) for r in sel if r["percentile"] == q and np.isfinite(r["err"])])
                opt = [r["optimistic"] for r in sel if r["percentile"] == q and np.isfinite(r["err"])]
                med = float(np.median(e)) if e.size else float("nan")
                q90 = float(np.quantile(e, 0.9)) if e.size else float("nan")
                share = float(np.mean(opt)) if opt else float("nan")
                out[f"{m}|{band}|{q}"] = dict(cells=int(e.size), median=med, q90=q90, optimistic=share,
                                              optimistic_cells=int(np.sum(opt)), cpu_median=float(np.median(c)),
                                              cpu_max=float(np.max(c)), cells_run=len(ran))
                print(f"{m:>6} {band:>17} {q:>7g} {e.size:>5d} {100 * med:>10.2f}% {100 * q90:>8.2f}% "
                      f"{100 * share:>6.1f}% ({int(np.sum(opt))}) {np.median(c):>8.2f} s, {np.max(c):6.2f} s "
                      f"({len(ran)} run)")
    return out


EXTENDED = ((1, 0.99, 4900.0), (2, 0.95, 470.0), (2, 0.99, 2600.0), (3, 0.95, 300.0), (3, 0.99, 1700.0),
            (4, 0.95, 240.0), (4, 0.99, 1250.0))


def extended(methods, cells=None):
    """T, A*, C* against exact on grids long enough for the 99.999th percentile (module doc)."""
    from sojourn.jsq_ps.solve.exact import exact_sojourn_cdf

    rows = []
    for R, rho, t_max in EXTENDED if cells is None else [c for c in EXTENDED if (c[0], c[1]) in cells]:
        t = time_grid(t_max, 0.05)
        c0 = time.process_time()
        ex = exact_sojourn_cdf(rho * R, 1.0, R, t, state_budget=10**9)
        cpu_ex = time.process_time() - c0
        ref = [float(quantile(t, ex.cdf, q / 100)) for q in PERCENTILES]
        print(f"R={R} rho={rho} t_max={t_max:g}: exact {[round(v, 2) for v in ref]} ({cpu_ex:.1f} s, truncated mass "
              f"{ex.truncated_mass:.1e})", flush=True)
        for m in methods:
            if m == "exact":
                continue
            if m == "T":
                c0 = time.process_time()
                cdf = tail_sojourn(rho * R, 1.0, R, t).cdf
                cpu = time.process_time() - c0
            else:
                cdf, cpu, _ = run_corrected(m, R, rho, t)
            x = [float(quantile(t, cdf, q / 100)) for q in PERCENTILES]
            err = [xi / ri - 1.0 for xi, ri in zip(x, ref, strict=True)]
            print(f"    {m:>3}: " + " ".join(f"{100 * e:+6.2f}%" for e in err) + f"  ({cpu:.2f} s)", flush=True)
            rows.append(dict(R=R, rho=rho, method=m, err=err, cpu=cpu))
    return rows


def convergence(ref, cells):
    """The spread-capped chain's own percentiles (no conservative margin) for D = 1..5 against the exact
    reference cells: the error per cap and the ratio of successive increments."""
    from sojourn.jsq_ps.solve import tail

    t = time_grid()
    worst = defaultdict(float)
    for R, rho in cells:
        if R == 1 or ref[(R, rho)][PERCENTILES[0]]["source"] != "exact":
            continue
        lam = rho * R
        M, _, _ = tail.level_cap(lam, 1.0, R, 2, tail.LEVEL_EPS)
        truth = [float(ref[(R, rho)][q]["value"]) for q in PERCENTILES]
        prev = None
        for D in range(1, 6):
            ph, pi = tail.system_law(lam, 1.0, R, M, D)
            ch = tail.tagged_chain(lam, 1.0, R, M, D, D + tail.TAGGED_EXTRA, pi, ph)
            if ch.size > 150_000:
                break
            sf, _, _ = tail.survival(ch, t)
            x = [float(quantile(t, 1.0 - sf, q / 100)) for q in PERCENTILES]
            err = [
                xi / vi - 1.0 if np.isfinite(vi) and np.isfinite(xi) else float("nan")
                for xi, vi in zip(x, truth, strict=True)
            ]
            inc = ["" if prev is None else f"{100 * (a / b - 1):+6.2f}" for a, b in zip(x, prev or x, strict=True)]
            for e in err:
                if np.isfinite(e):
                    worst[D] = max(worst[D], abs(e))
            print(f"R={R} rho={rho:.2f} D={D} states={ch.size:>7}  error " + " ".join(f"{100 * e:+6.2f}%" for e in err)
                  + ("" if prev is None else "  increment " + " ".join(inc)), flush=True)
            prev = x
    print("largest |error| per D: " + ", ".join(f"D={d}: {100 * w:.2f}%" for d, w in sorted(worst.items())))


def sweep():
    """T on the paper's 990 cells (R = 1..10, rho = 0.01..0.99): CPU seconds and the guards' verdict."""
    from sojourn.jsq_ps.solve.guards import describe, validity

    t = time_grid()
    cpu, bad, Ds = [], [], defaultdict(int)
    for R in range(1, 11):
        for i in range(1, 100):
            rho = i / 100
            res = tail_sojourn(rho * R, 1.0, R, t)
            flags, _ = validity(res.cdf, res.lambda_n, res.A_n, rho * R, R, rho)
            flags |= 0 if res.info.get("truncation_reached", 1) else 1024
            cpu.append((res.run_time, R, rho, res.D))
            Ds[(R, res.D)] += 1
            if flags:
                bad.append((R, rho, describe(flags) or flags))
        worst = max(c for c in cpu if c[1] == R)
        print(f"R={R:2d}: CPU max {worst[0]:.2f} s (rho={worst[2]}), median "
              f"{np.median([c[0] for c in cpu if c[1] == R]):.2f} s; caps "
              + ", ".join(f"D={d}: {n}" for (r, d), n in sorted(Ds.items()) if r == R), flush=True)
    c = np.array([x[0] for x in cpu])
    print(f"990 cells: CPU median {np.median(c):.2f} s, max {c.max():.2f} s, over 1 s: {(c > 1).sum()}; "
          f"flagged by the guards: {len(bad)} {bad[:5]}")
    return cpu, bad


def calibrate(cells):
    """Fit seconds ≈ a·K·entries + b·states + c of one tagged solve (tail.predicted_seconds) on the cells."""
    from scipy.optimize import nnls

    from sojourn.jsq_ps.solve import tail

    t = time_grid()
    X, y = [], []
    for R, rho in cells:
        if R == 1:
            continue
        lam = rho * R
        M, _, _ = tail.level_cap(lam, 1.0, R, 2, tail.LEVEL_EPS)
        for D in (1, 2, 3, 4):
            ph, pi = tail.system_law(lam, 1.0, R, M, D)
            c0 = time.process_time()
            ch = tail.tagged_chain(lam, 1.0, R, M, D, D + tail.TAGGED_EXTRA, pi, ph)
            _, used, K = tail.survival(ch, t)
            cpu = time.process_time() - c0
            X.append([used * ch.nnz, ch.size, 1.0])
            y.append(cpu)
            pred = tail.predicted_seconds(R, D, M, K, lam, 1.0)
            print(f"R={R} rho={rho} D={D} M={M} states={ch.size} nnz={ch.nnz} steps={used}/{K} cpu={cpu:.3f} "
                  f"predicted(shipped)={pred:.3f}", flush=True)
            if cpu > 0.5:
                break
    X, y = np.array(X), np.array(y)
    w = 1.0 / np.maximum(y, 0.02)
    coef, _ = nnls(X * w[:, None], y * w)
    print(f"fit: seconds = {coef[0]:.3g} * steps*entries + {coef[1]:.3g} * states + {coef[2]:.3g}")
    return coef


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", nargs="*", help="R:rho cells (default: every reference cell)")
    ap.add_argument("--methods", nargs="*", default=["T", "A*", "C*", "exact"])
    ap.add_argument("--no-exact", action="store_true")
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--extended", action="store_true")
    ap.add_argument("--convergence", action="store_true")
    ap.add_argument("--sweep", action="store_true")
    a = ap.parse_args(argv)
    ref = load_reference()
    cells = sorted(ref) if not a.cells else [(int(c.split(":")[0]), float(c.split(":")[1])) for c in a.cells]
    if a.calibrate:
        calibrate(cells)
        return 0
    if a.extended:
        extended(a.methods, None if not a.cells else set(cells))
        return 0
    if a.convergence:
        convergence(ref, cells)
        return 0
    if a.sweep:
        sweep()
        return 0
    methods = [m for m in a.methods if not (a.no_exact and m == "exact")]
    rows = evaluate(methods, cells, ref, not a.quiet)
    tab = table(rows, methods)
    rec = {"what": "tail_method", "machine": os.uname().nodename, "cpus": os.cpu_count(),
           "load_average": os.getloadavg(), "cells": len(cells), "table": tab,
           "rows": [{k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in r.items()}
                    for r in rows]}
    if not a.cells:
        with open(OUT, "a") as fh:
            fh.write(json.dumps(rec) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
