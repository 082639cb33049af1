"""Are two runs' results the same data? Compares every data variable and coordinate of the merged netCDF files
of one study in two results folders, leaving out measurements (wall_time, run_time) and attributes.

    python benchmarks/identical_results.py RESULTS_A/jsq_ps RESULTS_B/jsq_ps [simulation.nc approximation.nc …]
    python benchmarks/identical_results.py RESULTS_A RESULTS_B --all    # every merged .nc of every study

``--all``: every netCDF file under RESULTS_A outside the per-job blocks/ and cache/ folders (the merged results of
each study: JSQ-PS, split-merge, restart), which RESULTS_B must hold too.

Used to check that a refactoring left the JSQ-PS data bit-identical (e.g. results of the same config run at
two commits, each from its own worktree). Exit status 0 when identical, 1 otherwise.
"""
from __future__ import annotations

import sys
from pathlib import Path

import xarray as xr

MEASUREMENTS = ("wall_time", "run_time")


def differences(a_root, b_root, names) -> list[str]:
    out = []
    for name in names:
        with xr.open_dataset(Path(a_root) / name) as a, xr.open_dataset(Path(b_root) / name) as b:
            va, vb = set(a.data_vars) - set(MEASUREMENTS), set(b.data_vars) - set(MEASUREMENTS)
            if va != vb:
                out.append(f"{name}: variables differ: {sorted(va ^ vb)}")
            for v in sorted(va & vb):
                x, y = a[v], b[v]
                if x.dims != y.dims or x.dtype != y.dtype or not x.equals(y):
                    out.append(f"{name}: {v} differs")
            for c in a.coords:
                if c not in b.coords or not a[c].equals(b[c]):
                    out.append(f"{name}: coordinate {c} differs")
            print(f"{name}: {len(va & vb)} data variables compared")
    return out


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    files = sys.argv[3:] or ["simulation.nc", "approximation.nc", "comparison.nc"]
    if files == ["--all"]:
        root = Path(sys.argv[1])
        files = sorted(str(p.relative_to(root)) for p in root.rglob("*.nc")
                       if not {"blocks", "cache"} & set(p.relative_to(root).parts))
    diff = differences(sys.argv[1], sys.argv[2], files)
    print("\n".join(diff) if diff else "identical")
    sys.exit(1 if diff else 0)
