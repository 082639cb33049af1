"""The exact method against its previous implementation, side by side in one process (not a test).

    python benchmarks/exact_speed.py                       # the default cells (about 3 minutes on a quiet machine)
    python benchmarks/exact_speed.py --cells 5:0.95 6:0.95 # R:rho cells, both implementations (reference 35-100 s)
    python benchmarks/exact_speed.py --current-only 6:0.95 # R:rho cells, the current implementation only
    python benchmarks/exact_speed.py --reference 5291e32   # the git revision whose exact.py is the reference

The reference is ``src/sojourn/jsq_ps/solve/exact.py`` as of ``--reference`` (default: the last revision with
the tagged chain stepped as a per-state CSR matrix), loaded from git into this process next to the current
module (its relative imports resolve to the current package: chain.py and the uniformisation helpers it uses
are unchanged). Each ``--cells`` cell runs the reference and the current ``exact_sojourn_cdf`` (no time budget,
a state cap that lets the truncation reach its tolerance, the paper grid t = 0..182.32 step 0.01), in
alternating order over ``--rounds`` rounds, and prints the CPU seconds of each (``time.process_time``; the
machine may be shared) and the wall seconds, their ratio and the largest difference of the two CDFs, which
must be ≤ 1e-9 (the exit status is 1 otherwise). The default cells are the reference's reach under the 10 s
budget (R = 4, 5, 6 at rho = 0.95, 0.9, 0.8); ``--current-only`` cells (default: the cells of issue 24 beyond
it) time the current implementation alone. Appends a JSON line to ``benchmarks/exact_speed.jsonl``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np

from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.solve import exact as current

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _record  # noqa: E402

REFERENCE = "5291e32"
CELLS = ["4:0.95", "5:0.9", "6:0.8"]
CURRENT_ONLY = ["5:0.95", "6:0.85", "6:0.9", "6:0.95"]
TOLERANCE = 1e-9  # largest CDF difference allowed against the reference
OUT = Path(__file__).with_name("exact_speed.jsonl")


def load_reference(rev: str):
    repo = Path(__file__).resolve().parents[1]
    src = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:src/sojourn/jsq_ps/solve/exact.py"],
                         capture_output=True, text=True, check=True).stdout
    mod = types.ModuleType("sojourn.jsq_ps.solve._exact_reference")
    mod.__package__ = "sojourn.jsq_ps.solve"
    mod.__file__ = f"exact.py@{rev}"
    sys.modules[mod.__name__] = mod  # dataclasses look their module up
    exec(compile(src, mod.__file__, "exec"), mod.__dict__)
    return mod


def timed(fn, *args):
    c0, w0 = time.process_time(), time.perf_counter()
    r = fn(*args)
    return r, time.process_time() - c0, time.perf_counter() - w0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", nargs="*", default=CELLS)
    ap.add_argument("--current-only", nargs="*", default=CURRENT_ONLY)
    ap.add_argument("--reference", default=REFERENCE)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--state-budget", type=int, default=10**9,
                    help="exact's state cap (system states x R); the default lets every truncation reach eps = 1e-10 "
                         "(exact's own default, 400 000, stops R = 6 at rho = 0.9 short of it)")
    a = ap.parse_args(argv)
    ref = load_reference(a.reference)
    t = time_grid()
    current.exact_sojourn_cdf(0.5, 1.0, 2, t[:10])  # imports, numba cache
    rows = []
    print(
        f"{'R':>2} {'rho':>5} {'M':>4} {'D':>3} {'tagged':>9} {'mass':>8} {'ref cpu':>8} {'cur cpu':>8} "
        f"{'ref wall':>8} "
        f"{'cur wall':>8} {'ratio':>6} {'max|dF|':>9}"
    )
    worst = 0.0
    cells = [(c, True) for c in a.cells] + [(c, False) for c in a.current_only]
    for cell, with_ref in cells:
        R, rho = int(cell.split(":")[0]), float(cell.split(":")[1])
        times = {"reference": [], "current": []}
        walls = {"reference": [], "current": []}
        for k in range(a.rounds):
            order = (("reference", ref), ("current", current)) if k % 2 == 0 else (("current", current),
                                                                                  ("reference", ref))
            out = {}
            for name, mod in order:
                if name == "reference" and not with_ref:
                    continue
                out[name], cpu, wall = timed(lambda *a_: mod.exact_sojourn_cdf(*a_, state_budget=a.state_budget),  # noqa: B023 (timed calls it at once)
                                             rho * R, 1.0, R, t)
                times[name].append(cpu)
                walls[name].append(wall)
        r = out["current"]
        r1, w1 = float(np.median(times["current"])), float(np.median(walls["current"]))
        if with_ref:
            dF = float(np.max(np.abs(out["reference"].cdf - r.cdf)))
            worst = max(worst, dF)
            r0, w0 = float(np.median(times["reference"])), float(np.median(walls["reference"]))
            print(f"{R:>2} {rho:>5.2f} {r.M:>4} {r.D:>3} {r.n_tagged_states:>9} {r.truncated_mass:>8.1e} {r0:>8.2f} "
                  f"{r1:>8.2f} {w0:>8.2f} {w1:>8.2f} {r0 / r1:>6.2f} {dF:>9.1e}", flush=True)
        else:
            dF = r0 = w0 = None
            print(f"{R:>2} {rho:>5.2f} {r.M:>4} {r.D:>3} {r.n_tagged_states:>9} {r.truncated_mass:>8.1e} {'-':>8} "
                  f"{r1:>8.2f} {'-':>8} {w1:>8.2f} {'-':>6} {'-':>9}", flush=True)
        rows.append(dict(R=R, rho=rho, M=r.M, D=r.D, tagged_states=r.n_tagged_states, truncated_mass=r.truncated_mass,
                         reference_cpu=times["reference"], current_cpu=times["current"],
                         reference_wall=walls["reference"], current_wall=walls["current"],
                         ratio=None if r0 is None else r0 / r1, max_abs_cdf_difference=dF,
                         truncation_seconds=r.info.get("truncation_time"),
                         steps=r.info.get("steps"), poisson_terms=r.info.get("poisson_terms"),
                         load_average=os.getloadavg()[0]))
    _record.append(OUT, "exact_speed", reference=a.reference, state_budget=a.state_budget, rows=rows,
                   max_abs_cdf_difference=worst, tolerance=TOLERANCE)
    print(f"largest CDF difference against {a.reference}: {worst:.1e} (must be <= {TOLERANCE:g})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
