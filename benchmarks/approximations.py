"""Timing and accuracy of the analytic methods (sojourn.jsq_ps.solve).

    python benchmarks/approximations.py                 # timing table, R=1..10, rho in {0.1,0.5,0.9}
    python benchmarks/approximations.py --accuracy      # Wasserstein to the exact CDF, R<=4
    python benchmarks/approximations.py --exact         # exact method: time and state counts per R

Times are wall-clock seconds per cell on the full published grid (0..182.32 step 0.01), paper L1
(Table 4) and L2 = 130 for the faithful methods; the machine may be shared, so repeat and take the
minimum (``--repeat``).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.naming import CORRECTED_METHODS, FAITHFUL_METHODS, table4_L1
from sojourn.jsq_ps.solve.exact import exact_sojourn_cdf
from sojourn.jsq_ps.solve.methods import Cell


def timing(Rs, rhos, repeat):
    t = time_grid()
    print(f"{'R':>2} {'rho':>4} {'L1':>3} " + " ".join(f"{m:>6}" for m in FAITHFUL_METHODS) + f" {'all6':>6} "
          + " ".join(f"{m:>6}" for m in CORRECTED_METHODS) + f" {'all6*':>6}")
    for R in Rs:
        for rho in rhos:
            single = {}
            for m in FAITHFUL_METHODS + CORRECTED_METHODS:
                best = np.inf
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    Cell(rho * R, 1.0, R, t).run(m)
                    best = min(best, time.perf_counter() - t0)
                single[m] = best
            allf = allc = np.inf
            for _ in range(repeat):
                c = Cell(rho * R, 1.0, R, t)
                t0 = time.perf_counter()
                for m in FAITHFUL_METHODS:
                    c.run(m)
                allf = min(allf, time.perf_counter() - t0)
                t0 = time.perf_counter()
                for m in CORRECTED_METHODS:
                    c.run(m)
                allc = min(allc, time.perf_counter() - t0)
            print(f"{R:>2} {rho:>4} {table4_L1(R):>3} " + " ".join(f"{single[m]:6.3f}" for m in FAITHFUL_METHODS)
                  + f" {allf:6.3f} " + " ".join(f"{single[m]:6.3f}" for m in CORRECTED_METHODS) + f" {allc:6.3f}",
                  flush=True)


def exact_table(cells):
    t = time_grid()
    print(
        f"{'R':>2} {'rho':>5} {'M':>4} {'D':>3} {'sys states':>10} {'tagged':>8} {'trunc mass':>10} "
        f"{'time s':>7} {'mean':>8}"
    )
    for R, rho in cells:
        r = exact_sojourn_cdf(rho * R, 1.0, R, t)
        print(f"{R:>2} {rho:>5} {r.M:>4} {r.D:>3} {r.n_system_states:>10} {r.n_tagged_states:>8} "
              f"{r.truncated_mass:10.2e} {r.run_time:7.2f} {np.trapezoid(1 - r.cdf, t):8.4f}", flush=True)


def accuracy(Rs, rhos):
    """W = dt·Σ|F − F_exact| (§3.8 eq. (27)) on the published grid."""
    t = time_grid()
    dt = 0.01
    print(f"{'R':>2} {'rho':>4} " + " ".join(f"{m:>7}" for m in FAITHFUL_METHODS + CORRECTED_METHODS))
    rows = []
    for R in Rs:
        for rho in rhos:
            ex = exact_sojourn_cdf(rho * R, 1.0, R, t).cdf
            c = Cell(rho * R, 1.0, R, t)
            w = {m: dt * np.abs(c.run(m).cdf - ex).sum() for m in FAITHFUL_METHODS + CORRECTED_METHODS}
            rows.append((R, rho, w))
            print(
                f"{R:>2} {rho:>4} " + " ".join(f"{w[m]:7.4f}" for m in FAITHFUL_METHODS + CORRECTED_METHODS), flush=True
            )
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--R", type=int, nargs="*", default=list(range(1, 11)))
    ap.add_argument("--rho", type=float, nargs="*", default=[0.1, 0.5, 0.9])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--exact", action="store_true")
    ap.add_argument("--accuracy", action="store_true")
    a = ap.parse_args()
    if a.exact:
        cells = [(R, rho) for R in a.R for rho in a.rho]
        exact_table(cells)
    elif a.accuracy:
        accuracy(a.R, a.rho)
    else:
        timing(a.R, a.rho, a.repeat)


if __name__ == "__main__":
    main()
