"""Where the approximation jobs' CPU goes (issue 36 item 3): the pipeline's M/M/R cell task
(:func:`sojourn.jsq_ps.solve.cell.approximate_cell`, the paper config's methods, L1 of Table 4, L2 = 130, the exact
budget of config/paper.yaml, B*, D*, E*, F* shared) over a slice of the paper grid, CPU seconds per group of methods
(each group alone in a fresh cell, as :func:`approximate_cell` runs it), the whole cell's CPU (timed without the
profiler: cProfile's ~2 µs per Python call made a profiled small cell 0.05-0.2 s dearer than its groups' sum) and,
from one profile of a second whole-cell call (``profiled``), the CPU by the building block it was spent in.

    python benchmarks/approximation_profile.py [--R 1 3 5 10] [--rho 0.1 0.5 0.9 0.99] [--record]

``--record`` appends the table to benchmarks/approximation_profile.jsonl with the load average.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import time
from collections import Counter
from pathlib import Path

from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.naming import table4_L1
from sojourn.jsq_ps.solve.cell import approximate_cell
from sojourn.jsq_ps.solve.exact import forget_solves

GROUPS = {"A-F": ["A", "B", "C", "D", "E", "F"], "A*..F*": ["A*", "B*", "C*", "D*", "E*", "F*"], "exact": ["exact"],
          "T": ["T"]}
BUDGET = {"max_states": 600000, "max_seconds": 2}  # config/paper.yaml


#: building blocks, by the first matching function on a profiled call's path (file:function, most specific first)
BLOCKS = [
    ("corrected chain: truncation search (exact.choose_truncation)", "exact.py", "choose_truncation"),
    ("uniformised steps and Poisson sums (uniformization: exact's and T's)", "uniformization.py", ""),
    ("exact: the rest of the tagged chain (exact.exact_sojourn_cdf)", "exact.py", "exact_sojourn_cdf"),
    ("T: the rest (tail.tail_sojourn)", "tail.py", "tail_sojourn"),
    ("w_n: dense matrix exponential (conditional_survival.expm_survival)", "conditional_survival.py",
     "expm_survival"),
    ("w_n: recurrence (conditional_survival)", "conditional_survival.py", ""),
    ("chain: sorted-occupancy solve (chain.solve_chain)", "chain.py", ""),
]


def cell(R, rho, methods, t):
    forget_solves()  # each call from a clean slate, as the pipeline computes a cell once
    return approximate_cell(R, rho, 1.0, methods, t, {"L1": table4_L1(R), "L2": 130}, True, BUDGET)


def by_block(stats: pstats.Stats) -> Counter:
    """Own time (tottime) of every function, charged to the first of :data:`BLOCKS` that it or any function on a
    path of callers above it belongs to (so a sparse solve called by the truncation search counts there)."""
    raw = stats.stats  # {(file, line, fn): (cc, nc, tt, ct, callers)}
    names = [b[0] for b in BLOCKS]
    memo: dict = {}

    def own(key):
        file, _, fn = key
        return {name for name, f, func in BLOCKS if file.endswith(f) and (not func or fn == func)}

    def reach(key, visiting):
        if key in memo:
            return memo[key]
        if key in visiting:
            return set()
        visiting.add(key)
        found = set(own(key))
        for caller in raw.get(key, (0, 0, 0, 0, {}))[4]:
            found |= reach(caller, visiting)
        visiting.discard(key)
        memo[key] = found
        return found

    out = Counter()
    for key, (_, _, tt, _, _) in raw.items():
        found = reach(key, set())
        out[min(found, key=names.index) if found else "other (Python glue, xarray assembly)"] += tt
    return out


#: each method's entry point in a whole-cell call (file, function): its cumulative CPU is the method's, building blocks
#: it was first to need included (the corrected chain in A*/C*, reused by exact where it reaches exact's tolerance)
METHOD_ENTRIES = [("A-F (faithful)", "methods.py", "faithful"), ("A*..F* (corrected)", "methods.py", "corrected"),
                  ("exact", "api.py", "_exact"), ("T", "tail.py", "api_result")]


def by_method(stats: pstats.Stats, whole: float) -> dict:
    """Cumulative CPU per method (:data:`METHOD_ENTRIES`) and the rest of the cell (assembly, guards, xarray)."""
    out = {}
    for name, file, fn in METHOD_ENTRIES:
        out[name] = sum(ct for (f, _, func), (_, _, _, ct, _) in stats.stats.items() if f.endswith(file) and func == fn)
    out["the rest (datasets, guards, concat)"] = whole - sum(out.values())
    return out


def top_functions(stats: pstats.Stats, n: int = 15) -> list:
    """The ``n`` functions of most own CPU time: (seconds, calls, 'file:line(function)')."""
    rows = [(tt, nc, f"{Path(f).name}:{line}({fn})") for (f, line, fn), (_, nc, tt, _, _) in stats.stats.items()]
    return sorted(rows, reverse=True)[:n]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--R", type=int, nargs="+", default=[1, 2, 3, 5, 7, 10])
    ap.add_argument("--rho", type=float, nargs="+", default=[0.1, 0.5, 0.8, 0.9, 0.95, 0.99])
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args(argv)
    t = time_grid(182.32, 0.01)
    cell(2, 0.5, [m for g in GROUPS.values() for m in g], t)  # compile / load the kernels
    rows, totals = [], Counter()
    print(f"{'R':>3}{'rho':>6}" + "".join(f"{g:>10}" for g in GROUPS) + f"{'cell':>10}{'profiled':>10}   (CPU s)")
    prof = cProfile.Profile(time.process_time)  # CPU, not wall: the machine is shared
    for R in args.R:
        for rho in args.rho:
            row = {"R": R, "rho": rho}
            for g, methods in GROUPS.items():
                c0 = time.process_time()
                cell(R, rho, methods, t)
                row[g] = time.process_time() - c0
            # the whole cell timed without the profiler: cProfile adds ~2 µs to each of the cell's 35 000-65 000 Python
            # calls, the 0.05-0.2 s by which a profiled cell exceeded its groups' sum (issue 36); then profiled apart
            c0 = time.process_time()
            cell(R, rho, [m for g in GROUPS.values() for m in g], t)
            row["cell"] = time.process_time() - c0
            c0 = time.process_time()
            prof.enable()
            cell(R, rho, [m for g in GROUPS.values() for m in g], t)
            prof.disable()
            row["cell_profiled"] = time.process_time() - c0
            rows.append(row)
            totals.update({k: v for k, v in row.items() if k not in ("R", "rho")})
            print(f"{R:>3}{rho:>6g}" + "".join(f"{row[g]:10.3f}" for g in GROUPS)
                  + f"{row['cell']:10.3f}{row['cell_profiled']:10.3f}",
                  flush=True)
    print(f"{'sum':>9}" + "".join(f"{totals[g]:10.3f}" for g in GROUPS) + f"{totals['cell']:10.3f}"
          f"{totals['cell_profiled']:10.3f}")
    stats = pstats.Stats(prof)
    blocks = by_block(stats)
    whole = sum(blocks.values())
    methods = by_method(stats, sum(r["cell_profiled"] for r in rows))
    print("\nthe whole-cell calls by method (profiled cumulative CPU time):")
    for name, sec in methods.items():
        print(f"  {name:72s}{sec:8.2f} s {100 * sec / max(sum(methods.values()), 1e-12):5.1f} %")
    print("\nthe functions of most own CPU time (profiled):")
    top = top_functions(stats)
    for tt, nc, where in top:
        print(f"  {where:72s}{tt:8.2f} s {nc:8d} calls")
    print("\nthe whole-cell calls by building block (profiled own CPU time; the profiler inflates Python glue; a"
          "\nfunction reached from several blocks, e.g. the sparse LU from the truncation search and from T, is"
          "\ncharged to the first in BLOCKS, so they overstate the truncation search: see the methods above):")
    for name, sec in blocks.most_common():
        print(f"  {name:72s}{sec:8.2f} s {100 * sec / whole:5.1f} %")
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    if args.record:
        with open(Path(__file__).with_name("approximation_profile.jsonl"), "a") as fh:
            fh.write(json.dumps({"date": time.strftime("%Y-%m-%dT%H:%M:%S"), "load_average": load, "rows": rows,
                                 "blocks": dict(blocks), "methods": methods,
                                 "top_functions": [[w, tt, nc] for tt, nc, w in top]}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
