"""Calibrate the exact method's cost model (not a test): CPU seconds of ``exact`` against its size.

    python benchmarks/exact_budget.py            # the calibration cells, fit, predicted vs measured
    python benchmarks/exact_budget.py check      # only predicted vs measured with the shipped constants
    python benchmarks/exact_budget.py frontier   # the default budget's reach at R = 4..6, rho >= 0.8, edge measured

Runs ``exact_sojourn_cdf`` (no budget) on the default time grid (t ≤ 182.32, dt = 0.01) over R = 1..4 ×
ρ ∈ {0.1, 0.5, 0.8, 0.9, 0.95} plus R = 5, 6 at low load and at ρ = 0.8–0.95 (no state cap), measures the CPU seconds
of the call
(``time.process_time``: wall time means little on a shared machine), and fits

    seconds ≈ a · K · T̂ + b · S + c      (sojourn.jsq_ps.solve.budget; S system states, K steps)

by non-negative least squares on the relative error. Prints the fit and each cell's prediction, and
appends one JSON line to benchmarks/exact_budget.jsonl. The constants in ``budget.py`` are this fit,
rounded up.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.solve import budget
from sojourn.jsq_ps.solve.exact import exact_sojourn_cdf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _record  # noqa: E402

CELLS = ([(R, rho) for R in (1, 2, 3, 4) for rho in (0.1, 0.5, 0.8, 0.9, 0.95)] + [(5, 0.1), (5, 0.5), (6, 0.3)]
         + [(5, 0.8), (5, 0.9), (5, 0.95), (6, 0.8), (6, 0.85), (6, 0.9), (6, 0.95)])  # the last ones: where the 10 s
# default budget binds (R <= 6, rho <= 0.95 is the target of issue 24)
OUT = Path(__file__).with_name("exact_budget.jsonl")


def measure():
    t = time_grid()
    exact_sojourn_cdf(0.5, 1.0, 1, t[:10])  # imports, caches
    rows = []
    for R, rho in CELLS:
        c0, w0 = time.process_time(), time.perf_counter()
        r = exact_sojourn_cdf(rho * R, 1.0, R, t, state_budget=10**9)  # no state cap: the truncation reaches eps
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        row = dict(R=R, rho=rho, M=r.M, D=r.D, system_states=r.n_system_states, tagged_states=r.n_tagged_states,
                   transitions=r.info["transitions"], K=r.info["poisson_terms"], cpu=round(cpu, 4), wall=round(wall, 4),
                   load_average=os.getloadavg()[0])
        row["transitions_predicted"] = budget.tagged_transitions(R, r.n_system_states)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def fit(rows):
    X = np.array([[r["K"] * r["transitions_predicted"], r["system_states"], 1.0] for r in rows])
    y = np.array([r["cpu"] for r in rows])
    w = 1.0 / np.maximum(y, 0.05)  # relative error, small cells not dominating
    coef, _ = nnls(X * w[:, None], y * w)
    return coef


def report(rows, coef):
    for r in rows:
        pred = budget.predict_seconds(r["R"], r["system_states"], r["K"])
        tr = r["transitions_predicted"] / max(r["transitions"], 1)
        print(f"R={r['R']} rho={r['rho']:.2f}  S={r['system_states']:>7}  K={r['K']:>5}  "
              f"T/T^={1 / tr:5.2f}  cpu={r['cpu']:7.3f} s  predicted={pred:7.3f} s")
    if coef is not None:
        print(f"fit: seconds = {coef[0]:.3g} * K*T^ + {coef[1]:.3g} * S + {coef[2]:.3g}")


def frontier(measure_edge=True):
    """The default budget's reach on the paper grid (rho = 0.01..0.99 step 0.01, t <= 182.32) for R = 4, 5, 6 at
    rho >= 0.8: per R, the largest rho predicted to fit (exact_plan, small solves only), then that cell and the next
    one measured (CPU and wall seconds, no budget, no state cap)."""
    from sojourn.jsq_ps.solve.exact import exact_plan

    t = time_grid()
    exact_sojourn_cdf(0.5, 1.0, 1, t[:10])
    out = []
    for R in (4, 5, 6):
        last = None
        for rho in np.round(np.arange(0.80, 0.9501, 0.01), 2):
            plan = exact_plan(rho * R, 1.0, R, float(t.max()), state_budget=budget.DEFAULT_BUDGET["max_states"],
                              max_seconds=budget.DEFAULT_BUDGET["max_seconds"])
            print(f"R={R} rho={rho:.2f} fits={plan['fits']} predicted={plan['predicted_seconds']:.2f} s "
                  f"S={plan['system_states']} {plan['reason']}", flush=True)
            out.append(dict(R=R, rho=float(rho), fits=plan["fits"], predicted=plan["predicted_seconds"],
                            system_states=plan["system_states"], M=plan["M"], D=plan["D"]))
            if not plan["fits"]:
                break
            last = float(rho)
        if not measure_edge:
            continue
        for rho in ([last] if last is not None else []) + ([round(last + 0.01, 2)] if last is not None and last < 0.95
                                                             else []):
            c0, w0 = time.process_time(), time.perf_counter()
            r = exact_sojourn_cdf(rho * R, 1.0, R, t, state_budget=10**9)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            pred = budget.predict_seconds(R, r.n_system_states, r.info["poisson_terms"])
            print(f"measured R={R} rho={rho:.2f}: cpu {cpu:.2f} s, wall {wall:.2f} s, predicted {pred:.2f} s "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
            out.append(dict(R=R, rho=rho, measured_cpu=cpu, measured_wall=wall, predicted=pred,
                            load_average=os.getloadavg()[0]))
    return out


def _shipped() -> list[float]:
    return [budget.SECONDS_PER_STEP_TRANSITION, budget.SECONDS_PER_STATE, budget.SECONDS_FIXED]


def main(argv):
    if argv[1:2] == ["frontier"]:
        rows = frontier()
        _record.append(OUT, "exact_budget_frontier", budget=budget.DEFAULT_BUDGET, rows=rows, shipped=_shipped())
        return
    rows = measure()
    coef = None if argv[1:2] == ["check"] else fit(rows)
    report(rows, coef)
    _record.append(OUT, "exact_budget", rows=rows, fit=None if coef is None else [float(c) for c in coef],
                   shipped=_shipped())


if __name__ == "__main__":
    main(sys.argv)
