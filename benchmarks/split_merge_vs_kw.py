"""Split-merge simulator vs a plain NumPy port of the Kiefer–Wolfowitz workload recursion (hpcwld-style), n = 100.

The port (written here from split_merge.md §6-§7, concurrent release): a workload vector w of the n hosts,
sorted ascending; for task i needing N_i hosts: D_i = w[N_i] (1-based), entries 1..N_i := D_i + S_i, subtract
the inter-arrival time T_i, clip at 0, sort. O(n log n) per workunit in NumPy calls.

Both run side by side in this process on the same settings (λ = 0.9⌊n/r⌋/E[S_{q:r}], exponential and
hyperexponential scv 4 replicas). Two comparisons:

* whole simulator: our time is the whole simulation (drawing the replicas, the queue, the histograms and
  sums); the port's time is the recursion alone on pre-drawn T and S (its sampling is not counted);
* recursion only: our n-host split-merge recursion (``kernel.split_merge_delays``) and the port on the same
  pre-drawn T and S, both returning every delay (identical delays, checked first).

Prints per-workunit times and the ratios.

Run: python benchmarks/split_merge_vs_kw.py [--workunits 500000] [--kw-workunits 20000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from sojourn.split_merge import kernel as K
from sojourn.split_merge.model import SplitMerge
from sojourn.split_merge.simulate import simulate

HYPER = "hyperexponential:probs=0.8873/0.1127,rates=1.7746/0.2254"  # mean 1, scv 4 (balanced means)


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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--workunits", type=int, default=500_000, help="workunits per run of our simulator")
    ap.add_argument("--kw-workunits", type=int, default=20_000, help="workunits per run of the NumPy port")
    ap.add_argument("--repeats", type=int, default=3, help="best of this many runs each")
    args = ap.parse_args(argv)
    n = args.hosts
    rng = np.random.default_rng(2017)

    # 1. the port is right: identical delays to our n-host split-merge on one sequence
    for r in (1, 3, 10):
        c = n // r
        T = rng.exponential(1 / (0.9 * c), 20_000)
        S = rng.exponential(1.0, 20_000)
        # the port's T_i is the time from task i to task i+1; ours takes the time before each arrival
        before = np.concatenate([[0.0], T[:-1]])
        diff = np.max(np.abs(kw_delays(T, S, np.full(T.size, r), n) - K.split_merge_delays(before, S, n, r)))
        print(f"check r={r:2d}: max |KW port - ours| = {diff:.3g}")
        assert diff < 1e-9

    print(f"\nn = {n}, load 0.9, our run {args.workunits} workunits (+10% warm-up), port {args.kw_workunits} "
          f"workunits; best of {args.repeats}")
    print(f"{'law':16s} {'q':>2s} {'r':>3s} {'ours ns/wu':>11s} {'KW ns/wu':>10s} {'ratio':>8s}"
          f" {'recursion ns':>12s} {'ratio':>9s}")
    ratios, ratios_rec = [], []
    for lawname, law in (("exponential", "exponential"), ("hyperexp scv 4", HYPER)):
        for q, r in ((1, 1), (1, 3), (2, 3), (1, 5), (3, 5), (1, 10), (3, 10)):
            spec = SplitMerge.from_load(n, r, q, 0.9, law)
            simulate(spec, workunits=1000, seed=0, t_max=10.0, dt=0.01)  # compile / load the cached kernel
            ours = []
            for k in range(args.repeats):
                ds = simulate(spec, workunits=args.workunits, seed=k, t_max=10.0, dt=0.01)
                ours.append(float(ds["wall_time"][0]) / int(ds["simulated_workunits"][0]))
            m = args.kw_workunits
            T = rng.exponential(1 / spec.arrival_rate, m)
            S = rng.exponential(spec.mean_service, m)  # the service law does not change the recursions' cost
            kw = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                kw_delays(T, S, np.full(m, r), n)
                kw.append((time.perf_counter() - t0) / m)
            before = np.concatenate([[0.0], T[:-1]])
            K.split_merge_delays(before[:10], S[:10], n, r)
            rec = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                K.split_merge_delays(before, S, n, r)
                rec.append((time.perf_counter() - t0) / m)
            ratio = min(kw) / min(ours)
            ratios.append(ratio)
            ratios_rec.append(min(kw) / min(rec))
            print(f"{lawname:16s} {q:2d} {r:3d} {min(ours) * 1e9:11.1f} {min(kw) * 1e9:10.1f} {ratio:8.1f}"
                  f" {min(rec) * 1e9:12.1f} {ratios_rec[-1]:9.1f}")
    print(f"\nwhole simulator, ratio KW-port/ours: min {min(ratios):.1f}, median {np.median(ratios):.1f}, "
          f"max {max(ratios):.1f}")
    print(f"recursion only,  ratio KW-port/ours: min {min(ratios_rec):.1f}, median {np.median(ratios_rec):.1f}, "
          f"max {max(ratios_rec):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
