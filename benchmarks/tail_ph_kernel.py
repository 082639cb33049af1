"""Method T's product-chain kernel (:mod:`sojourn.jsq_ps.solve._tail_ph_kernel`), this checkout's against a reference
one's, side by side in one process: the largest numba solve of each of a few M/G/R law cells is captured (its
environment, own phase-type law, uniformisation rate and stop), then stepped by both kernels alternately, the CPU
seconds of each kept at the least of ``--repeat`` runs; prints the seconds, their ratio and whether the masses g are
the same bits, then the load average.

    git -C /work/main archive main src | tar -x -C /tmp/ref        # a reference source tree
    nice -n 10 python benchmarks/tail_ph_kernel.py --reference /tmp/ref/src [--repeat 3]

The reference kernel is the file ``sojourn/jsq_ps/solve/_tail_ph_kernel.py`` of the reference tree, loaded under
another module name (it imports only numpy and numba), so that both kernels run on the same arrays in the same process.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

#: (law, R, rho): cells whose largest solve runs in the numba kernel at 8 to 128 own phases
CELLS = [("uniform:low=0,high=2", 5, 0.8), ("uniform:low=0,high=2", 10, 0.95), ("deterministic", 10, 0.5),
         ("lognormal:sigma=0.6931471805599453", 3, 0.9), ("triangular:low=0,mode=1,high=2", 1, 0.5)]


def capture(law: str, R: int, rho: float):
    """The arguments of the cell's largest kernel solve (states × phases × steps)."""
    from sojourn.core.checks.timegrid import time_grid
    from sojourn.jsq_ps.solve import tail_ph
    from sojourn.jsq_ps.solve.cell import approximate_law_cell

    got, orig = [], tail_ph.product_masses

    def spy(env, a, S, t_max, stop=tail_ph.STOP, q=None):
        out = orig(env, a, S, t_max, stop, q)
        got.append((env, np.asarray(a, float), np.asarray(S, float), t_max, stop, out))
        return out

    tail_ph.product_masses = spy
    try:
        approximate_law_cell(law, R, rho, 1.0, ["T"], time_grid(182.32, 0.01))
    finally:
        tail_ph.product_masses = orig
    big = [c for c in got if tail_ph._coxian(c[2]) is not None and c[1].size > tail_ph.SCIPY_PHASES]
    return max(big, key=lambda c: c[0].size * c[1].size * c[5][1])


def runner(kern, case):
    """A call of ``kern.masses`` on the captured solve (fresh vectors each time)."""
    from sojourn.jsq_ps.solve import tail_ph
    from sojourn.jsq_ps.solve.uniformization import poisson_cutoff

    env, a, S, t_max, stop, (_, _, q) = case
    K = poisson_cutoff(q * float(t_max), 1e-13)
    args = (env.ptr, env.src, env.rate / q, 1.0 - env.out / q, (1.0 / env.k) / q, -np.diag(S), tail_ph._coxian(S), K,
            stop)

    def run():
        x = np.ascontiguousarray(np.outer(env.p0, a))
        return kern.masses(x, np.zeros_like(x), *args)

    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", type=Path, required=True, help="the reference checkout's src folder")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    from sojourn.jsq_ps.solve import _tail_ph_kernel as new

    spec = importlib.util.spec_from_file_location(
        "reference_tail_ph_kernel", args.reference / "sojourn" / "jsq_ps" / "solve" / "_tail_ph_kernel.py")
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    load0 = os.getloadavg()
    print(f"{'law':>14} {'R':>3} {'rho':>5} {'states':>7} {'phases':>6} {'steps':>6} {'ref s':>7} {'new s':>7} "
          f"{'ratio':>6}  same bits")
    tot = [0.0, 0.0]
    same_all = True
    for law, R, rho in CELLS:
        case = capture(law, R, rho)
        runs = {"ref": runner(ref, case), "new": runner(new, case)}
        best, out = {"ref": np.inf, "new": np.inf}, {}
        for r in range(args.repeat + 1):  # the first round compiles / loads from the cache: not timed
            for name in (("ref", "new") if r % 2 == 0 else ("new", "ref")):
                c0 = time.process_time()
                out[name] = runs[name]()
                if r:
                    best[name] = min(best[name], time.process_time() - c0)
        same = bool(np.array_equal(out["ref"][0], out["new"][0]) and out["ref"][1] == out["new"][1])
        same_all &= same
        tot[0] += best["ref"]
        tot[1] += best["new"]
        env, a = case[0], case[1]
        print(f"{law[:14]:>14} {R:>3} {rho:>5g} {env.size:>7} {a.size:>6} {out['new'][1]:>6} {best['ref']:7.3f} "
              f"{best['new']:7.3f} {best['ref'] / best['new']:6.2f}  {'yes' if same else 'NO'}", flush=True)
    load1 = os.getloadavg()
    print(f"total {tot[0]:.3f} s -> {tot[1]:.3f} s: {tot[0] / tot[1]:.2f}x; "
          f"load average at start {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f}, at end {load1[0]:.2f} {load1[1]:.2f} "
          f"{load1[2]:.2f}")
    return 0 if same_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
