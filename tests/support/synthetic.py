"""Small synthetic JSQ-PS runs for the figure and caption tests: Exp(scale) samples as the simulation, exponential
CDFs as the methods (sojourn.jsq_ps.compare.compare turns them into a comparison)."""
from __future__ import annotations

import numpy as np
import xarray as xr

DT, NT, NK = 0.01, 2500, 4


def jsq_run(scales: dict, n: int = 60_000, R: int = 2, seed: int = 0):
    """(simulation, approximation) datasets at one R and the loads of ``scales`` ({rho: {method: scale or None}}):
    per load, ``NK`` replications of ``n`` Exp(1) sojourn times, and each method's CDF 1 − exp(−t/scale) (None: the
    method did not run there). Run times: 0.01 s for the first method, then 0.05, 0.3, 0.2, …"""
    t = np.round(np.arange(NT) * DT, 12)
    sims, apps = [], []
    for k, (rho, sc) in enumerate(scales.items()):
        rng = np.random.default_rng(seed + k)
        count = np.zeros((1, 1, 1, NK, NT), np.int64)
        overflow = np.zeros((1, 1, 1, NK), np.int64)
        for r in range(NK):
            b = np.floor(rng.exponential(1.0, n) / DT).astype(int)
            count[0, 0, 0, r] = np.bincount(b[b < NT], minlength=NT)[:NT]
            overflow[0, 0, 0, r] = int((b >= NT).sum())
        sims.append(xr.Dataset({"count": (("service", "R", "rho", "replication", "t"), count),
                                "overflow": (("service", "R", "rho", "replication"), overflow)},
                               coords={"service": ["exponential"], "R": [R], "rho": [rho],
                                       "replication": np.arange(NK), "t": t}))
        cdf = np.stack([np.full(NT, np.nan) if s is None else 1.0 - np.exp(-t / s) for s in sc.values()])
        rt = np.array([0.01, 0.05, 0.3, 0.2, 0.1, 0.1, 0.1][:len(sc)])
        apps.append(xr.Dataset({"cdf": (("R", "rho", "approximation", "t"), cdf[None, None]),
                                "run_time": (("R", "rho", "approximation"), rt[None, None])},
                               coords={"R": [R], "rho": [rho], "approximation": list(sc), "t": t}))
    return xr.concat(sims, "rho"), xr.concat(apps, "rho")
