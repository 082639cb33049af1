"""The exact method against its previous implementation, side by side in one process (not a test).

    python benchmarks/exact_speed.py                       # the default cells
    python benchmarks/exact_speed.py --cells 5:0.9 6:0.9   # R:rho cells
    python benchmarks/exact_speed.py --reference 247cb8e   # the git revision whose exact.py is the reference

The reference is ``src/sojourn/jsq_ps/solve/exact.py`` as of ``--reference`` (default: the commit before
the uniformisation was changed), loaded from git into this process next to the current module (its relative
imports resolve to the current package: chain.py and poisson_cutoff/poisson_mix are unchanged). Each cell
runs the reference and the current ``exact_sojourn_cdf`` (no time budget, a state cap that lets the truncation
reach its tolerance, the paper grid t = 0..182.32 step 0.01),
in alternating order over ``--rounds`` rounds, and prints the CPU seconds of each (``time.process_time``; the
machine may be shared), their ratio and the largest difference of the two CDFs. Appends a JSON line to
``benchmarks/exact_speed.jsonl``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np

from sojourn.core.timegrid import time_grid
from sojourn.jsq_ps.solve import exact as current

REFERENCE = "247cb8e"
CELLS = ["4:0.9", "4:0.95", "5:0.9", "5:0.95", "6:0.8", "6:0.9", "6:0.95"]
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
    c0 = time.process_time()
    r = fn(*args)
    return r, time.process_time() - c0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", nargs="*", default=CELLS)
    ap.add_argument("--reference", default=REFERENCE)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--state-budget", type=int, default=10**9,
                    help="exact's state cap (system states x R); the default lets every truncation reach eps = 1e-10 "
                         "(exact's own default, 400 000, stops R = 6 at rho = 0.9 short of it)")
    a = ap.parse_args(argv)
    ref = load_reference(a.reference)
    t = time_grid()
    current.exact_sojourn_cdf(0.5, 1.0, 2, t[:10])  # imports
    rows = []
    print(f"{'R':>2} {'rho':>5} {'M':>4} {'D':>3} {'tagged':>9} {'mass':>8} {'reference s':>11} {'current s':>10} "
          f"{'ratio':>6} {'max|dF|':>9}")
    for cell in a.cells:
        R, rho = int(cell.split(":")[0]), float(cell.split(":")[1])
        times = {"reference": [], "current": []}
        for k in range(a.rounds):
            order = (("reference", ref), ("current", current)) if k % 2 == 0 else (("current", current),
                                                                                  ("reference", ref))
            out = {}
            for name, mod in order:
                out[name], cpu = timed(lambda *a_: mod.exact_sojourn_cdf(*a_, state_budget=a.state_budget),
                                       rho * R, 1.0, R, t)
                times[name].append(cpu)
        dF = float(np.max(np.abs(out["reference"].cdf - out["current"].cdf)))
        r0, r1 = float(np.median(times["reference"])), float(np.median(times["current"]))
        r = out["current"]
        print(f"{R:>2} {rho:>5.2f} {r.M:>4} {r.D:>3} {r.n_tagged_states:>9} {r.truncated_mass:>8.1e} {r0:>11.2f} "
              f"{r1:>10.2f} {r0 / r1:>6.2f} {dF:>9.1e}", flush=True)
        rows.append(dict(R=R, rho=rho, M=r.M, D=r.D, tagged_states=r.n_tagged_states, truncated_mass=r.truncated_mass,
                         reference_cpu=times["reference"],
                         current_cpu=times["current"], ratio=r0 / r1, max_abs_cdf_difference=dF,
                         steps=r.info.get("steps"), poisson_terms=r.info.get("poisson_terms")))
    rec = {"what": "exact_speed", "reference": a.reference, "state_budget": a.state_budget, "machine": os.uname().nodename, "cpus": os.cpu_count(),
           "load_average": os.getloadavg(), "rows": rows}
    with open(OUT, "a") as fh:
        fh.write(json.dumps(rec) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
