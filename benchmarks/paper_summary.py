"""The "what our runs say" figures of docs/jsq_ps.md, computed from a paper-config comparison (``comparison.nc``).

    python benchmarks/paper_summary.py [results/paper/jsq_ps/comparison.nc]

Prints, for the exponential service law (the approximations model M/M/R):

* per method group (A–F; the corrected A* (= B*, D*, E*) and C* (= F*); exact; T) and load band, the median
  |relative error| of the p-th percentile (default the 99.99th) over the cells where it has a value, the
  90th percentile of |error|, and the share of those cells where the method is optimistic (the CI of its mean
  error entirely below 0);
* where ``exact`` ran (cells with a value), per R, the largest load;
* the best method by mean Wasserstein distance (exact excluded): counts of corrected vs faithful winners and the
  faithful winners by load band;
* the recommendation status counts at the percentile (exact / T / non-optimistic / all optimistic / too few
  customers), and the comparison's check of T against exact (its ``tail_*`` attributes): T − exact per percentile
  where both ran (relative: smallest, median, largest).
"""
from __future__ import annotations

import sys
from collections import Counter

import numpy as np
import xarray as xr

BANDS = ((0.0, 0.5, "rho <= 0.5"), (0.5, 0.9, "0.5 < rho <= 0.9"), (0.9, 1.0, "rho > 0.9"))
GROUPS = {"A-F": ["A", "B", "C", "D", "E", "F"], "A* (= B*, D*, E*)": ["A*"], "C* (= F*)": ["C*"], "exact": ["exact"],
          "T": ["T"]}
STATUS = ("exact", "non_optimistic", "all_optimistic", "too_few_customers", "no_verdict", "no_simulation",
          "tail_conservative")


def band_mask(rho, lo, hi):
    return (rho > lo) & (rho <= hi) if lo > 0 else rho <= hi


def main(argv) -> int:
    path = argv[0] if argv else "results/paper/jsq_ps/comparison.nc"
    pct = float(argv[1]) if len(argv) > 1 else 99.99
    ds = xr.open_dataset(path).sel(service="exponential")
    rho = ds["rho"].values
    err = ds["relative_percentile_error_mean"].sel(percentile=pct)
    opt = ds["optimistic"].sel(percentile=pct)
    print(f"{path}: relative error of the {pct:g}th percentile (exponential service)")
    print("per group and load band: median |error| (90th percentile of |error|), share of cells optimistic, cells")
    present = ds["approximation"].values.tolist()
    for name, methods in GROUPS.items():
        if not set(methods) <= set(present):
            continue  # e.g. T in a comparison of an earlier release
        print(f"  {name}")
        for lo, hi, label in BANDS:
            m = band_mask(rho, lo, hi)
            e = err.sel(approximation=methods).isel(rho=np.flatnonzero(m)).values.ravel()
            o = opt.sel(approximation=methods).isel(rho=np.flatnonzero(m)).values.ravel()
            ok = np.isfinite(e)
            if not ok.any():
                print(f"    {label:18s} no value")
                continue
            a = np.abs(e[ok])
            print(f"    {label:18s} {100 * np.median(a):6.1f} % ({100 * np.quantile(a, 0.9):6.1f} %), optimistic in "
                  f"{100 * np.mean(o[ok] == 1):3.0f} % of {ok.sum()} cells")
    ex = ds["wasserstein_mean"].sel(approximation="exact")  # a value wherever exact ran (within its budget)
    ran = {int(R): float(rho[np.flatnonzero(np.isfinite(ex.sel(R=R).values))].max())
           if np.isfinite(ex.sel(R=R).values).any() else None for R in ds["R"].values}
    print("exact ran up to rho:", ", ".join(f"R={R}: {v}" for R, v in ran.items()))
    best = ds["best_method"].values
    corrected = np.char.endswith(best.astype(str), "*")
    faithful = np.isin(best, GROUPS["A-F"])
    print(f"best by Wasserstein: {corrected.sum()} of {best.size} cells a corrected method "
          f"({dict(Counter(best[corrected].tolist()).most_common())}), {faithful.sum()} a faithful one "
          f"({dict(Counter(best[faithful].tolist()).most_common())}), {(best == 'T').sum()} T")
    for lo, hi, label in BANDS:
        m = np.broadcast_to(band_mask(rho, lo, hi), best.shape)
        print(f"  faithful winners, {label}: {dict(Counter(best[m & faithful].tolist()).most_common())}")
    status = ds["recommendation_status"].sel(percentile=pct).values.ravel()
    print(
        "recommendation at this percentile:", {STATUS[k]: int(v) for k, v in sorted(Counter(status.tolist()).items())}
    )
    rec = ds["recommended"].sel(percentile=pct).values.ravel()
    print("recommended methods:", dict(Counter(rec.tolist()).most_common()))
    if "T" in present and "exact" in present:
        print("T against exact:", {k: ds.attrs[k].item() if hasattr(ds.attrs[k], "item") else ds.attrs[k]
                                   for k in ds.attrs if k.startswith("tail_") and k != "tail_rule"})
        x = ds["approx_percentile"]
        for p in ds["percentile"].values:
            d = ((x.sel(approximation="T", percentile=p) - x.sel(approximation="exact", percentile=p))
                 / x.sel(approximation="exact", percentile=p)).values.ravel()
            d = d[np.isfinite(d)]
            if d.size:
                print(f"  {p:g}th: {d.size} cells, (T - exact)/exact from {100 * d.min():+.2f} % to "
                      f"{100 * d.max():+.2f} %, median {100 * np.median(d):+.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
