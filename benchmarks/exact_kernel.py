"""The exact method's stepping kernel side by side in one process (not a test): the kernel before level caps
(git revision ``--reference``, default a94a6e6: leaky moves, every phase on every level) against the current one
on the whole box and on the pruned chain (sojourn.jsq_ps.solve.exact, "pruning").

    python benchmarks/exact_kernel.py                  # R:rho cells 5:0.9 6:0.9 (about a minute)
    python benchmarks/exact_kernel.py 6:0.95 --steps 200

Each cell: the truncation exact would choose, ``--steps`` uniformised steps from its initial law, CPU seconds
(``time.process_time``, the second of two runs: the first compiles) and ns per transition and step. The masses
left after the steps must agree between the reference and the current box kernel to 1e-13 (exit status 1
otherwise); the pruned chain's differ by what it drops (its certified bound covers that). Appends a JSON line to
benchmarks/exact_kernel.jsonl.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sojourn.jsq_ps.solve.exact import PRUNE, choose_truncation
from sojourn.jsq_ps.solve.tagged_levels import LevelTaggedChain

OUT = Path(__file__).with_name("exact_kernel.jsonl")


def load_reference(rev: str):
    """The kernel module at ``rev``, compiled from a temporary file (numba caches by file)."""
    repo = Path(__file__).resolve().parents[1]
    src = subprocess.run(["git", "-C", str(repo), "show", f"{rev}:src/sojourn/jsq_ps/solve/_tagged_kernel.py"],
                         capture_output=True, text=True, check=True).stdout
    d = tempfile.mkdtemp(prefix="exact_kernel_")
    path = Path(d) / f"kernel_{rev}.py"
    path.write_text(src)
    sys.path.insert(0, d)
    return __import__(path.stem)


def timed(fn, x0):
    out = None
    for _ in range(2):
        x, y = x0.copy(), np.zeros_like(x0)
        c0 = time.process_time()
        out = fn(x, y)
        cpu = time.process_time() - c0
    return out, cpu


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cells", nargs="*", default=["5:0.9", "6:0.9"])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--reference", default="a94a6e6")
    args = ap.parse_args(argv)
    ref = load_reference(args.reference)
    K, ok, rows = args.steps, True, []
    for cell in args.cells:
        R, rho = int(cell.split(":")[0]), float(cell.split(":")[1])
        lam = R * rho
        S, pi, _, _ = choose_truncation(lam, 1.0, R, 1e-10, state_budget=10**9)
        tc = LevelTaggedChain(lam, 1.0, R, S.M, S.D)
        p0, _ = tc.initial_law(pi.reshape(S.M, -1))
        x0 = p0.ravel().copy()
        dconst, dtag, dfirst, exitq, ot = tc._diag_parts
        box_T = tc.transitions
        (g_ref, _, _), t_ref = timed(lambda x, y: ref._masses(x, y, tc.M, dconst, dtag, dfirst, np.zeros_like(dconst),  # noqa: B023 (timed calls it at once)
                                                              exitq, ot, tc.ptr, tc.src, tc.dg, tc.tagged, tc.rate,  # noqa: B023 (timed calls it at once)
                                                              tc.wrow, K, 0.0), x0)  # noqa: B023 (timed calls it at once)
        (g_box, _, _), t_box = timed(lambda x, y: tc.masses(x, K, kernel=True), x0)  # noqa: B023 (timed calls it at once; its layout copy included)
        tc.set_level_caps(tc.caps_from_occupation(pi.reshape(S.M, -1), PRUNE * 1e-10))
        p0, _ = tc.initial_law(pi.reshape(S.M, -1))
        (g_pr, _, _), t_pr = timed(lambda x, y: tc.masses(x, K, kernel=True), p0.ravel().copy())  # noqa: B023 (timed calls it at once)
        diff = float(np.max(np.abs(g_ref - g_box)))
        ok &= diff <= 1e-13
        row = dict(R=R, rho=rho, M=S.M, D=S.D, steps=K, box_transitions=box_T, pruned_transitions=tc.transitions,
                   kept=tc.size / max(1, int(tc.valid.sum())), reference_cpu=t_ref, box_cpu=t_box, pruned_cpu=t_pr,
                   max_mass_difference=diff)
        rows.append(row)
        print(
            f"R={R} rho={rho}: reference {t_ref:.3f} s ({1e9 * t_ref / K / box_T:.2f} ns/transition), box "
            f"{t_box:.3f} s ({1e9 * t_box / K / box_T:.2f}), pruned {t_pr:.3f} s ({1e9 * t_pr / K / tc.transitions:.2f}"
            f" ns per kept transition; {100 * row['kept']:.0f} % of the states): reference/pruned "
            f"{t_ref / t_pr:.2f}; box masses against the reference within {diff:.1e}",
            flush=True,
        )
    with OUT.open("a") as f:
        f.write(json.dumps({"reference": args.reference, "load_average": os.getloadavg()[0], "cells": rows}) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
