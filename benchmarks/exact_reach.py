"""The exact method's reach (issue 36 item 4): the current route and a reference revision side by side (not a test).

    python benchmarks/exact_reach.py                           # R = 5, 6 x rho = 0.9, 0.95, both routes
    python benchmarks/exact_reach.py --cells 4:0.95 5:0.9      # R:rho cells
    python benchmarks/exact_reach.py --reference 5a98ac9       # the git revision of the reference route

Both routes are loaded into this process: the current package, and the reference's ``exact.py``,
``tagged_levels.py`` and ``_tagged_kernel.py`` from git (the rest of the solver — the system chain, the
uniformisation helpers — is shared). Each (route, cell) call runs in a child forked from this process (so each has
its own peak memory), in alternating order, with no time budget and no state cap (the truncation reaches its
tolerance, eps = 1e-10), on the paper's grid t = 0..182.32 step 0.01. This process measures the child's wall
seconds, and the child's CPU seconds (user + system, every thread) and peak resident memory (``os.wait4``; it
includes the imports the parent holds, about 0.2 GB). The target (issue 36): every R ≤ 6, ρ ≤ 0.95 cell reaches
its tolerance with a certified bound ≤ 1e-8, in ≤ 10 s wall on 2 cores and ≤ 1 GB. Also checked: the two CDFs
within 1e-9 (exit status 1 otherwise). Prints the load average (the machine may be shared: wall seconds then
mean little, CPU seconds still do); appends a JSON line to ``benchmarks/exact_reach.jsonl``.

Columns: ``cpu s`` the child's CPU seconds (every thread), ``par %`` the share of it in the uniformised steps (the part
on numba's threads), ``est s`` the estimate of the wall time on two quiet cores — the rest on one core plus the steps
halved (an estimate: it assumes the steps scale perfectly to two threads; the machine here was never quiet), ``wall s``
the measured wall time at the load printed. ``target``: reached, bound ≤ 1e-8, peak ≤ 1 GB, and the wall time or, on
a busy machine, its estimate ≤ 10 s.

Where the cost goes (2026-12-07, load average 19-28, CPU seconds; the reference is 685cf06, main before issue 36's
vectorised kernel, occupation-measure pruning and faster truncation):

    cell          tagged kept        bound             CPU s (steps %)          est. quiet wall   |dF|
    R=5 rho=0.90  182 662 -> 136 155  2.3e-10 -> 4.9e-10   5.3 (77) -> 2.9 (64)    3.2 -> 2.0 s     2.6e-10
    R=5 rho=0.95  476 518 -> 394 114  3.9e-10 -> 6.3e-10  11.7 (80) -> 5.6 (68)    7.0 -> 3.7 s     2.2e-10
    R=6 rho=0.90  354 987 -> 259 466  1.5e-10 -> 4.1e-10  13.7 (85) -> 7.3 (74)    7.9 -> 4.6 s     2.6e-10
    R=6 rho=0.95  888 256 -> 773 140  6.6e-10 -> 8.4e-10  28.9 (86) -> 14.4 (78)  16.4 -> 8.8 s     1.8e-10

Peak memory 0.23-0.52 GB either way (the whole process, imports included). The steps (K = 2 053-2 487, the Poisson
cut of (Λ + Rμ)·t_max: one system event each, so no uniformisation takes fewer) cost about 1 ns per kept transition
since the kernel is vectorised (1.9 before: numba's wrapping of negative signed indices kept every row loop scalar),
and the occupation-measure pruning keeps 13-27 % fewer states; the rest, on one core (the system chain's cap search
and final solve, the chain's construction, numba's import), is 2.3-3.2 CPU-s at R = 6, ρ = 0.95.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.solve import exact as current

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _record  # noqa: E402

REFERENCE = "685cf06"  # main before the vectorised kernel and the occupation-measure pruning (issue 36)
CELLS = ["5:0.9", "5:0.95", "6:0.9", "6:0.95"]
TOLERANCE = 1e-9  # largest CDF difference allowed between the routes
TARGET_SECONDS, TARGET_BYTES, TARGET_BOUND = 10.0, 1e9, 1e-8
OUT = Path(__file__).with_name("exact_reach.jsonl")


def load_reference(rev: str):
    """The reference's exact.py, with its own tagged_levels.py and numba kernel (compiled from a temporary file: numba
    caches by file)."""
    repo = Path(__file__).resolve().parents[1]

    def show(name):
        return subprocess.run(["git", "-C", str(repo), "show", f"{rev}:src/sojourn/jsq_ps/solve/{name}.py"],
                              capture_output=True, text=True, check=True).stdout

    d = tempfile.mkdtemp(prefix="exact_reach_")
    kernel = Path(d) / f"exact_reach_kernel_{rev}.py"
    kernel.write_text(show("_tagged_kernel"))
    sys.path.insert(0, d)
    mods = {}
    for name, src in (("tagged_levels", show("tagged_levels").replace("from ._tagged_kernel import",
                                                                        f"from {kernel.stem} import")),
                      ("exact", show("exact").replace("from .tagged_levels import",
                                                      "from ._reference_tagged_levels import"))):
        mod = types.ModuleType(f"sojourn.jsq_ps.solve._reference_{name}")
        mod.__package__ = "sojourn.jsq_ps.solve"
        mod.__file__ = f"{name}.py@{rev}"
        sys.modules[mod.__name__] = mod  # dataclasses and the relative import above look it up
        exec(compile(src, mod.__file__, "exec"), mod.__dict__)
        mods[name] = mod
    return mods["exact"]


def in_child(fn):
    """fn() run in a forked child: (its return value, wall s, CPU s of the child, peak RSS bytes of the child)."""
    fd, path = tempfile.mkstemp(suffix=".npz")
    os.close(fd)
    w0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: compute, save, leave without the parent's clean-up
        code = 0
        try:
            np.savez(path, **fn())
        except BaseException as e:  # noqa: BLE001 (reported by the parent)
            print(f"child failed: {e!r}", file=sys.stderr, flush=True)
            code = 1
        os._exit(code)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - w0
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("a child failed (above)")
    with np.load(path) as z:
        out = {k: z[k] for k in z.files}
    os.unlink(path)
    return out, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss * 1024


def run(mod, R, rho, t):
    """One call of ``mod``'s exact; also the CPU seconds of its uniformised steps (the part on numba's threads: it runs
    in a forked child, so the patch below dies with it)."""
    steps_cpu = []
    masses = mod.LevelTaggedChain.masses

    def timed_masses(self, *a, **k):
        c0 = time.process_time()
        out = masses(self, *a, **k)
        steps_cpu.append(time.process_time() - c0)
        return out

    mod.LevelTaggedChain.masses = timed_masses
    r = mod.exact_sojourn_cdf(rho * R, 1.0, R, t, state_budget=10**9)
    return dict(cdf=r.cdf, M=r.M, D=r.D, system=r.n_system_states, tagged=r.n_tagged_states,
                bound=r.info["cdf_error_bound"], reached=int(r.reached), steps=r.info["steps"],
                truncation_seconds=r.info["truncation_time"], run_time=r.run_time, steps_cpu=sum(steps_cpu))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", nargs="*", default=CELLS)
    ap.add_argument("--reference", default=REFERENCE)
    ap.add_argument("--current-only", action="store_true", help="skip the reference route")
    a = ap.parse_args(argv)
    ref = load_reference(a.reference)
    routes = [("current", current)] + ([] if a.current_only else [("reference", ref)])
    t = time_grid()
    for _, mod in routes:  # compile and cache both kernels (in a child: this process starts no OpenMP threads)
        in_child(lambda mod=mod: run(mod, 3, 0.9, t[:2000]))
    print(f"load average {os.getloadavg()}, {os.cpu_count()} cpus; reference {a.reference}", flush=True)
    print(f"{'R':>2} {'rho':>5} {'route':>9} {'M':>3} {'D':>3} {'tagged':>8} {'steps':>5} {'bound':>8} {'cpu s':>6} "
          f"{'par %':>5} {'est s':>5} {'wall s':>6} {'trunc s':>7} {'peak GB':>7} {'target':>6} {'load':>5}")
    rows, worst = [], 0.0
    for k, cell in enumerate(a.cells):
        R, rho = int(cell.split(":")[0]), float(cell.split(":")[1])
        out = {}
        for name, mod in (routes if k % 2 == 0 else routes[::-1]):
            res, wall, cpu, rss = in_child(lambda mod=mod, R=R, rho=rho: run(mod, R, rho, t))
            # the estimate of a quiet 2-core wall time: the steps (numba's threads) on two cores, the rest on one
            par = float(res["steps_cpu"])
            est = (cpu - par) + par / 2
            ok = (bool(res["reached"]) and res["bound"] <= TARGET_BOUND and min(wall, est) <= TARGET_SECONDS
                  and rss <= TARGET_BYTES)
            load = os.getloadavg()[0]
            print(f"{R:>2} {rho:>5.2f} {name:>9} {int(res['M']):>3} {int(res['D']):>3} {int(res['tagged']):>8} "
                  f"{int(res['steps']):>5} {float(res['bound']):>8.1e} {cpu:>6.2f} {100 * par / cpu:>5.0f} "
                  f"{est:>5.1f} {wall:>6.2f} "
                  f"{float(res['truncation_seconds']):>7.2f} {rss / 1e9:>7.2f} {'met' if ok else 'missed':>6} "
                  f"{load:>5.1f}", flush=True)
            out[name] = res
            rows.append(dict(R=R, rho=rho, route=name, M=int(res["M"]), D=int(res["D"]),
                             system_states=int(res["system"]), tagged_states=int(res["tagged"]),
                             steps=int(res["steps"]), cdf_error_bound=float(res["bound"]),
                             reached=bool(res["reached"]), cpu=cpu, steps_cpu=par, quiet_wall_estimate=est,
                             wall=wall,
                             truncation_seconds=float(res["truncation_seconds"]), peak_rss=rss, target_met=ok,
                             load_average=load))
        if "reference" in out:
            dF = float(np.max(np.abs(out["reference"]["cdf"] - out["current"]["cdf"])))
            worst = max(worst, dF)
            cpu_of = {r["route"]: r["cpu"] for r in rows[-2:]}
            ratio = cpu_of["reference"] / cpu_of["current"]
            print(f"   reference/current CPU {ratio:.2f}, max |dF| {dF:.1e}", flush=True)
            rows[-1]["max_abs_cdf_difference"] = rows[-2]["max_abs_cdf_difference"] = dF
    _record.append(OUT, "exact_reach", reference=a.reference, rows=rows, max_abs_cdf_difference=worst,
                   tolerance=TOLERANCE,
                   target={"seconds": TARGET_SECONDS, "bytes": TARGET_BYTES, "bound": TARGET_BOUND})
    print(f"largest CDF difference between the routes: {worst:.1e} (must be <= {TOLERANCE:g})")
    return 0 if worst <= TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())
