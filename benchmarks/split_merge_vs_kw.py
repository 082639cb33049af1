"""Split-merge simulator vs a plain NumPy port of the Kiefer–Wolfowitz workload recursion (hpcwld-style), n = 100.

The port (written here from split_merge.md §6-§7, concurrent release): a workload vector w of the n hosts,
sorted ascending; for task i needing N_i hosts: D_i = w[N_i] (1-based), entries 1..N_i := D_i + S_i, subtract
the inter-arrival time T_i, clip at 0, sort. O(n log n) per workunit in NumPy calls.

Both run side by side in this process on the settings of experiment (c) (λ = 0.9⌊n/r⌋/E[S_{q:r}];
exponential and hyperexponential scv 4 replicas, plus the 3-phase PH of experiments (a)/(b)). Two ratios:

* whole simulator: our time is the whole simulation (drawing the inter-arrival times and S_{q:r}, the queue,
  both histograms and every sum); the port's time is its recursion alone on pre-drawn T and S (its sampling
  and statistics are not counted: the ratio is the port's best case);
* recursion only: our super-server recursion (``tests/support/split_merge_reference.super_server_delays``, the
streaming kernel's winner
  tree) and the port on the same pre-drawn T and S, both returning every delay (identical delays, checked
  first, also against the host-level model ``split_merge_reference.split_merge_delays``).

Shared machines are noisy in bursts, so the three timings of a cell are taken in alternation, ``--rounds``
times, and each ratio is the median over rounds of the ratio within a round (the per-workunit times printed
are medians too).

Run: python benchmarks/split_merge_vs_kw.py [--workunits 200000] [--kw-workunits 5000] [--rounds 7] [--record]
(--record appends the figures to benchmarks/split_merge_vs_kw.jsonl)
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the reference recursions
from sojourn.split_merge.model import SplitMerge
from sojourn.split_merge.simulate import simulate
from support import split_merge_reference as REF  # noqa: E402

HYPER = "hyperexponential:probs=0.8873/0.1127,rates=1.7746/0.2254"  # mean 1, scv 4 (balanced means)
PH3 = "phasetype:alpha=0.5/0.3/0.2,T=-2/1/0.5|0.3/-1.5/0.2|0/0.4/-3"
LAWS = (("exponential", "exponential"), ("hyperexp scv 4", HYPER), ("3-phase PH", PH3))
PAIRS = ((1, 1), (1, 3), (2, 3), (1, 5), (3, 5), (1, 10), (3, 10))


def kw_delays(T, S, N, s):
    """Plain NumPy port of the KW recursion with concurrent release (delays D_i)."""
    w = np.zeros(s)
    D = np.empty(len(T))
    for i in range(len(T)):
        n_i = N[i]
        d = w[n_i - 1]
        D[i] = d
        w[:n_i] = d + S[i]
        w -= T[i]
        np.maximum(w, 0.0, out=w)
        w.sort()
    return D


def _timed(f, *args):
    t0 = time.perf_counter()
    out = f(*args)
    return time.perf_counter() - t0, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--workunits", type=int, default=200_000, help="recorded workunits per run of our simulator")
    ap.add_argument("--kw-workunits", type=int, default=5_000, help="workunits per run of the NumPy port")
    ap.add_argument("--rounds", type=int, default=7, help="alternating rounds per cell")
    ap.add_argument("--record", action="store_true", help="append the figures to benchmarks/split_merge_vs_kw.jsonl")
    args = ap.parse_args(argv)
    n = args.hosts
    rng = np.random.default_rng(2017)

    # 1. the port is right: identical delays to our recursions on one sequence
    for r in (1, 3, 10):
        c = n // r
        T = rng.exponential(1 / (0.9 * c), 20_000)
        S = rng.exponential(1.0, 20_000)
        # the port's T_i is the time from task i to task i+1; ours takes the time before each arrival
        before = np.concatenate([[0.0], T[:-1]])
        kw = kw_delays(T, S, np.full(T.size, r), n)
        diff = max(np.max(np.abs(kw - REF.super_server_delays(before, S, c))),
                   np.max(np.abs(kw - REF.split_merge_delays(before, S, n, r))))
        print(f"check r={r:2d}: max |KW port - ours| = {diff:.3g}")
        assert diff < 1e-9

    print(f"\nn = {n}, load 0.9; our run {args.workunits} workunits (+10% warm-up), port {args.kw_workunits}; "
          f"medians over {args.rounds} alternating rounds")
    print(f"{'law':15s} {'q':>2s} {'r':>3s} {'ours ns/wu':>11s} {'KW ns/wu':>9s} {'ratio':>7s}"
          f" {'recursion ns':>12s} {'ratio':>7s}")
    rows = []
    for lawname, law in LAWS:
        for q, r in PAIRS:
            spec = SplitMerge.from_rho(n, r, q, 0.9, law)
            simulate(spec, workunits=1000, seed=0, t_max=10.0, dt=0.01)  # compile / load the cached kernels
            m = args.kw_workunits
            T = rng.exponential(1 / spec.arrival_rate, m)
            S = rng.exponential(spec.mean_service, m)  # the service law does not change the recursions' cost
            before = np.concatenate([[0.0], T[:-1]])
            N = np.full(m, r)
            REF.super_server_delays(before[:10], S[:10], n // r)
            ours, kw, rec = [], [], []
            for k in range(args.rounds):
                ds = simulate(spec, workunits=args.workunits, seed=k, t_max=10.0, dt=0.01)
                ours.append(float(ds["wall_time"][0]) / int(ds["simulated_workunits"][0]))
                kw.append(_timed(kw_delays, T, S, N, n)[0] / m)
                rec.append(_timed(REF.super_server_delays, before, S, n // r)[0] / m)
            ours, kw, rec = np.array(ours), np.array(kw), np.array(rec)
            row = {"law": lawname, "quorum": q, "replicas": r, "ours_ns": float(np.median(ours)) * 1e9,
                   "kw_ns": float(np.median(kw)) * 1e9, "recursion_ns": float(np.median(rec)) * 1e9,
                   "ratio": float(np.median(kw / ours)), "ratio_recursion": float(np.median(kw / rec))}
            rows.append(row)
            print(f"{lawname:15s} {q:2d} {r:3d} {row['ours_ns']:11.1f} {row['kw_ns']:9.0f} {row['ratio']:7.1f}"
                  f" {row['recursion_ns']:12.1f} {row['ratio_recursion']:7.1f}", flush=True)
    summary = {}
    for key, label in (("ratio", "whole simulator"), ("ratio_recursion", "recursion only ")):
        v = np.array([row[key] for row in rows])
        summary[key] = {"min": float(v.min()), "median": float(np.median(v)), "max": float(v.max())}
        print(f"{label}, ratio KW-port/ours: min {v.min():.1f}, median {np.median(v):.1f}, max {v.max():.1f}")
    if args.record:
        rec_path = Path(__file__).with_name("split_merge_vs_kw.jsonl")
        entry = {"benchmark": "split_merge_vs_kw", "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
                 "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                 "load_average": os.getloadavg(), "settings": vars(args), "rows": rows, "summary": summary}
        with open(rec_path, "a") as fh:
            fh.write(json.dumps(entry) + "\n")
        print(f"recorded in {rec_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
