"""Compare approximated with simulated sojourn-time CDFs: Wasserstein distances, percentile errors, CIs.

Convention (explicit, as in the paper): every CDF is evaluated on the grid t_i = i·dt, i = 0..N
(``t`` coordinate of both files). The simulated CDF is the empirical P(S < t_i), i.e. the paper's
``percentileofscore(kind='strict')/100``, which from the histogram (bin i = [t_i, t_i + dt)) is
:func:`sojourn.core.stats.cdf_at_left_edges`. The approximations' ``cdf`` is F(t_i). Then

* Wasserstein (paper eq. 27): W = dt · Σ_i |F_sim(t_i) − F_approx(t_i)|;
* percentile x_p: the first grid t_i with F(t_i) > p (:func:`sojourn.core.stats.quantile`);
* percentile error = x_p^approx − x_p^sim (negative = the approximation is optimistic about the tail);
  relative error = that difference / x_p^sim.

Per-replication statistics get a 95% confidence interval across replications: Student-t, or a
bootstrap (``scipy.stats.bootstrap``, BCa) when the t-interval is doubtful (few replications or a
skewed sample, see ``comparison.ci``). Pooled statistics use all replications' customers together.
The best method of a cell minimises the mean Wasserstein distance; methods whose CI overlaps the
best one's are marked as ties.

Invalid fits: an approximated "CDF" can leave [0, 1] or decrease (Gupta's fit at low load, §3.3: the
published Method C at R = 2, ρ = 0.01 reaches −9.93). ``fit_invalid`` (R, rho, approximation) flags such
cells (bit mask, see :func:`fit_validity`; round-off tolerance ``FIT_TOLERANCE``) and
``fit_violation`` says by how much. Their raw statistics stay in the dataset (faithful mode still
reproduces the published numbers), but they never win: ``best_method``, ``tied_with_best`` and
``best_method_percentile`` consider only unflagged methods.

:func:`compare_files` computes the same dataset as :func:`compare` from the merged files, reading
one (R, rho) cell at a time (bounded memory: the paper grid's ``count`` is ~4 GB decompressed).
"""
from __future__ import annotations

import contextlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import xarray as xr

from ..core.io import NETCDF_LOCK, provenance, write_netcdf
from ..core.stats import CI_BOOTSTRAP, CI_T, cdf_at_left_edges, interval, quantile, wasserstein
from .analytic.guards import ABOVE_ONE as FIT_ABOVE_ONE, BELOW_ZERO as FIT_BELOW_ZERO  # noqa: F401 (API)
from .analytic.guards import NON_FINITE as FIT_NON_FINITE, NON_MONOTONE as FIT_DECREASING  # noqa: F401
from .analytic.guards import TOLERANCE as FIT_TOLERANCE, cdf_flags as fit_validity  # noqa: F401
from .naming import label_coords

DEFAULTS = {
    "percentiles": [99, 99.9, 99.99, 99.999],
    "confidence": 0.95,
    "ci": "auto",
    "bootstrap_below": 10,
    "skew_threshold": 1.0,
    "n_resamples": 2000,
    "against_exact": True,
}


#: ``fit_invalid`` bits and round-off tolerance: the analytic guards' CDF checks (imported above), so the
#: comparison and the approximation's ``validity_reason`` flag a CDF alike
FIT_FLAG_ATTRS = {
    "flag_masks": np.array([FIT_BELOW_ZERO, FIT_ABOVE_ONE, FIT_DECREASING, FIT_NON_FINITE], np.int8),
    "flag_meanings": "below_zero above_one non_monotone non_finite",
}


def ties_with_best(mean, low, high, m: int, best: int) -> bool:
    """The tie rule of ``tied_with_best``: method ``m``'s Wasserstein CI reaches down to the best
    method's CI (low_m ≤ high_best; a missing CI end falls back to the mean). ``mean``/``low``/``high``
    are indexed by method."""
    lo_m = low[m] if np.isfinite(low[m]) else mean[m]
    hi_b = high[best] if np.isfinite(high[best]) else mean[best]
    return bool(lo_m <= hi_b)


def _attrs(long_name, units="1", **kw):
    return {"long_name": long_name, "units": units, **kw}


class _Grid:
    """Coordinates, output arrays and index maps shared by :func:`compare` and :func:`compare_files`.

    Built from the coordinates only, so it works on lazily opened and on in-memory datasets alike.
    """

    def __init__(self, sim: xr.Dataset, approx: xr.Dataset, cfg: dict):
        self.cfg = cfg
        pct = np.asarray(cfg["percentiles"], dtype=float)
        self.pct, self.p = pct, pct / 100.0
        t = sim["t"].values
        if not np.allclose(t, approx["t"].values, rtol=0, atol=1e-9):
            raise ValueError("simulation and approximation use different t grids")
        self.t = t
        self.dt = float(np.round(t[1] - t[0], 12))
        self.services = sim["service"].values.tolist()
        self.Rs = sim["R"].values.tolist()
        self.rhos = sim["rho"].values
        self.reps = sim["replication"].values
        self.methods = approx["approximation"].values.tolist()
        self.exact = self.methods.index("exact") if ("exact" in self.methods and cfg["against_exact"]) else None
        self.expo = self.services.index("exponential") if "exponential" in self.services else None
        S, NR, NP, NM, NK, NQ = (len(self.services), len(self.Rs), len(self.rhos), len(self.methods),
                                 len(self.reps), len(self.p))
        self.shape = (S, NR, NP, NM, NK, NQ)
        # (R, rho) label -> position in the approximation file (label-based, as .sel does)
        a_R = approx.indexes["R"]
        a_rho = approx.indexes["rho"]
        self.a_R = {i: int(a_R.get_loc(R)) for i, R in enumerate(self.Rs) if R in a_R}
        self.a_rho = [int(a_rho.get_loc(r)) for r in self.rhos]
        self.W = np.full((S, NR, NP, NM, NK), np.nan)
        self.Wpool = np.full((S, NR, NP, NM), np.nan)
        self.xsim = np.full((S, NR, NP, NK, NQ), np.nan)
        self.xsim_pool = np.full((S, NR, NP, NQ), np.nan)
        self.xapp = np.full((NR, NP, NM, NQ), np.nan)
        self.W_vs_exp_sim = np.full((S, NR, NP), np.nan)
        self.W_exact = np.full((NR, NP, NM), np.nan)
        self.fit_invalid = np.zeros((NR, NP, NM), np.int8)
        self.fit_violation = np.full((NR, NP, NM), np.nan)
        self.err_exact = np.full((NR, NP, NM, NQ), np.nan)

    def cell(self, i: int, j: int, Fa: np.ndarray, counts: list, overflows: list) -> None:
        """All per-cell statistics of cell (R index i, rho index j) into the output arrays.

        ``Fa`` (method, t): approximated CDFs; ``counts[s]`` (replication, t) / ``overflows[s]``
        (replication,): the histograms of service law s, or None when the law has no data there.
        """
        t, p, dt, e = self.t, self.p, self.dt, self.exact
        Fa = np.asarray(Fa, dtype=float)
        have_a = np.all(np.isfinite(Fa), axis=1)
        self.fit_invalid[i, j], self.fit_violation[i, j] = fit_validity(Fa)
        xapp = self.xapp[i, j] = np.where(have_a[:, None], quantile(t, Fa, p), np.nan)
        if e is not None and have_a[e]:
            self.W_exact[i, j] = wasserstein(Fa, Fa[e], dt)
            self.err_exact[i, j] = xapp - xapp[e]
        pooled, buf = {}, None
        for s, (c, o) in enumerate(zip(counts, overflows)):
            if c is None:
                continue
            c = np.asarray(c, dtype=float)
            o = np.asarray(o, dtype=float)
            if not np.isfinite(c).all() or c.sum() + o.sum() == 0:
                continue
            Fr = cdf_at_left_edges(c, o)  # (rep, t)
            Fp = cdf_at_left_edges(c.sum(axis=0), o.sum())
            # one method at a time into a reused buffer: the same per-row sums as the
            # (method, rep, t) broadcast without its ~20 MB temporaries (3x faster)
            if buf is None or buf.shape != Fr.shape:
                buf = np.empty_like(Fr)
            W = self.W[s, i, j]
            for m in range(len(Fa)):
                np.subtract(Fr, Fa[m], out=buf)
                np.abs(buf, out=buf)
                W[m] = dt * buf.sum(axis=-1)
            self.Wpool[s, i, j] = wasserstein(Fp[None, :], Fa, dt)
            self.xsim[s, i, j] = quantile(t, Fr, p)
            self.xsim_pool[s, i, j] = quantile(t, Fp, p)
            pooled[s] = Fp
        if self.expo in pooled:
            for s, Fp in pooled.items():
                self.W_vs_exp_sim[s, i, j] = wasserstein(Fp, pooled[self.expo], dt)

    def dataset(self, run_time: xr.DataArray | None) -> xr.Dataset:
        return _assemble(self, run_time)


def _approx_cdf(a: xr.Dataset) -> xr.DataArray:
    """(R, rho, approximation, t) CDF of an approximation dataset: ``cdf``, else 1 − ``sf`` (lazy if ``a`` is)."""
    if "cdf" in a:
        return a["cdf"].transpose("R", "rho", "approximation", "t")
    return a["sf"].transpose("R", "rho", "approximation", "t")


def compare(sim: xr.Dataset, approx: xr.Dataset, cfg: dict | None = None) -> xr.Dataset:
    """The comparison dataset of a merged simulation and approximation dataset (see module doc).

    In-memory entry point; :func:`compare_files` computes the same dataset streaming from the files.
    """
    cfg = {**DEFAULTS, **(cfg or {})}
    g = _Grid(sim, approx, cfg)
    count = sim["count"].transpose("service", "R", "rho", "replication", "t").values
    overflow = sim["overflow"].transpose("service", "R", "rho", "replication").values
    acdf = _approx_cdf(approx)
    is_cdf = "cdf" in approx
    acdf = acdf.values
    for i in range(len(g.Rs)):
        if i not in g.a_R:
            continue
        for j in range(len(g.rhos)):
            F = acdf[g.a_R[i], g.a_rho[j]].astype(float)
            Fa = F if is_cdf else 1.0 - F
            g.cell(i, j, Fa, list(count[:, i, j]), list(overflow[:, i, j]))
    return g.dataset(approx["run_time"] if "run_time" in approx else None)


def compare_files(sim_path, approx_path, cfg: dict | None = None, lock=None, workers: int = 2) -> xr.Dataset:
    """:func:`compare` of the merged files at ``sim_path`` and ``approx_path``, streaming over cells.

    Opens both files lazily and reads, per (R, rho) cell, only that cell's ``count``/``overflow``
    (all service laws that have data there) and approximated CDFs (all methods): peak memory is a
    few cells plus the (small) output arrays. A law/cell without customers (a gap of the grid:
    ``n_customers`` all 0) is not read. Every netCDF access holds ``lock`` (if given) while it runs,
    one read at a time, so that other threads may use the HDF5 library in between. ``workers``
    threads process cells concurrently (results do not depend on it).
    """
    cfg = {**DEFAULTS, **(cfg or {})}
    hold = lock if lock is not None else contextlib.nullcontext()
    with hold:
        sim = xr.open_dataset(sim_path, engine="netcdf4")
    try:
        with hold:
            approx = xr.open_dataset(approx_path, engine="netcdf4")
        try:
            with hold:
                g = _Grid(sim, approx, cfg)
                count = sim["count"].transpose("service", "R", "rho", "replication", "t")
                overflow = sim["overflow"].transpose("service", "R", "rho", "replication").values
                if "n_customers" in sim:
                    # n_customers = count.sum(t) + overflow: 0 over all replications <=> nothing to read
                    present = sim["n_customers"].transpose("service", "R", "rho", "replication").values
                    present = ~(np.nan_to_num(present.sum(axis=-1), nan=1.0) == 0)
                else:
                    present = np.ones(overflow.shape[:3], dtype=bool)
                acdf = _approx_cdf(approx)
                is_cdf = "cdf" in approx
                run_time = approx["run_time"].load() if "run_time" in approx else None
            S = len(g.services)

            def read(i, j):
                with hold:
                    F = acdf[g.a_R[i], g.a_rho[j]].values.astype(float)
                counts = [None] * S
                for s in range(S):
                    if present[s, i, j]:
                        with hold:
                            counts[s] = count[s, i, j].values
                return (F if is_cdf else 1.0 - F), counts

            def work(i, j):
                Fa, counts = read(i, j)
                g.cell(i, j, Fa, counts, list(overflow[:, i, j]))

            # cells are independent (disjoint output slices): 2 threads overlap one cell's reads
            # (HDF5 decompression) with another's numpy work (both release the GIL)
            cells = [(i, j) for i in range(len(g.Rs)) if i in g.a_R for j in range(len(g.rhos))]
            with ThreadPoolExecutor(workers, thread_name_prefix="compare") as pool:
                pending = deque()
                for i, j in cells:
                    if len(pending) >= 2 * workers:  # bounded: a few cells in memory at a time
                        pending.popleft().result()
                    pending.append(pool.submit(work, i, j))
                while pending:
                    pending.popleft().result()
        finally:
            with hold:
                approx.close()
    finally:
        with hold:
            sim.close()
    return g.dataset(run_time)


def _assemble(g: _Grid, run_time) -> xr.Dataset:
    cfg = g.cfg
    p, pct = g.p, g.pct
    services, Rs, rhos, reps, methods = g.services, g.Rs, g.rhos, g.reps, g.methods
    cand = [m for m in methods if m != "exact"]
    S, NR, NP, NM, NK, NQ = g.shape
    W, Wpool, xsim, xsim_pool, xapp = g.W, g.Wpool, g.xsim, g.xsim_pool, g.xapp
    W_vs_exp_sim, W_exact, err_exact = g.W_vs_exp_sim, g.W_exact, g.err_exact
    valid = g.fit_invalid == 0  # (R, rho, approximation): flagged fits never win (module doc)
    W = np.where(np.isfinite(W), W, np.nan)
    err = xapp[None, :, :, :, None, :] - xsim[:, :, :, None, :, :]  # (S, R, rho, approximation, rep, q)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = err / xsim[:, :, :, None, :, :]
    err_pool = xapp[None] - xsim_pool[:, :, :, None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        rel_pool = err_pool / xsim_pool[:, :, :, None, :]

    Wm, Wlo, Whi, Wci = interval(W, cfg, seed=1)
    Em, Elo, Ehi, Eci = interval(np.moveaxis(err, 4, -1), cfg, seed=2)  # (S,R,rho,method,q)
    Rm, Rlo, Rhi, Rci = interval(np.moveaxis(rel, 4, -1), cfg, seed=3)

    # best method by mean W among the non-exact methods with a valid fit; ties = CI overlaps the best's CI
    cand_idx = [methods.index(m) for m in cand]
    best = np.full((S, NR, NP), "", dtype=object)
    tied = np.zeros((S, NR, NP, NM), dtype=np.int8)
    best_pct = np.full((S, NR, NP, NQ), "", dtype=object)
    for s in range(S):
        for i in range(NR):
            for j in range(NP):
                ci_idx = [m for m in cand_idx if valid[i, j, m]]
                if not ci_idx:
                    continue
                wm = Wm[s, i, j, ci_idx]
                if not np.isfinite(wm).any():
                    continue
                b = ci_idx[int(np.nanargmin(wm))]
                best[s, i, j] = methods[b]
                for m in ci_idx:
                    if np.isfinite(Wm[s, i, j, m]):
                        tied[s, i, j, m] = 1 if (m == b or ties_with_best(Wm[s, i, j], Wlo[s, i, j], Whi[s, i, j], m, b)) else 0
                for q in range(NQ):
                    ae = np.abs(err_pool[s, i, j, ci_idx, q])
                    if np.isfinite(ae).any():
                        best_pct[s, i, j, q] = methods[ci_idx[int(np.nanargmin(ae))]]

    dims5 = ("service", "R", "rho", "approximation", "replication")
    dims4 = ("service", "R", "rho", "approximation")
    q5 = ("service", "R", "rho", "approximation", "percentile")
    tu = "time units (1/mu)"
    ci_flags = {"flag_values": np.array([CI_T, CI_BOOTSTRAP], np.int8), "flag_meanings": "student_t bootstrap_bca"}
    conf = float(cfg["confidence"])
    ds = xr.Dataset(
        {
            "wasserstein": (dims5, W, _attrs("Wasserstein-1 distance between approximated and simulated CDF, per replication", tu)),
            "wasserstein_mean": (dims4, Wm, _attrs("mean over replications of the Wasserstein distance", tu)),
            "wasserstein_ci_low": (dims4, Wlo, _attrs(f"lower end of the {conf:.0%} CI of wasserstein_mean", tu)),
            "wasserstein_ci_high": (dims4, Whi, _attrs(f"upper end of the {conf:.0%} CI of wasserstein_mean", tu)),
            "wasserstein_ci_method": (dims4, Wci, _attrs("method of the CI of wasserstein_mean", **ci_flags)),
            "wasserstein_pooled": (dims4, Wpool, _attrs("Wasserstein distance to the pooled simulated CDF", tu)),
            "sim_percentile": (("service", "R", "rho", "replication", "percentile"), xsim,
                               _attrs("simulated sojourn-time percentile (first t with F(t) > p), per replication", tu)),
            "sim_percentile_pooled": (("service", "R", "rho", "percentile"), xsim_pool,
                                      _attrs("simulated sojourn-time percentile of the pooled CDF", tu)),
            "approx_percentile": (("R", "rho", "approximation", "percentile"), xapp,
                                  _attrs("approximated sojourn-time percentile (first t with F(t) > p)", tu)),
            "percentile_error": (("service", "R", "rho", "approximation", "replication", "percentile"), err,
                                 _attrs("approx - sim percentile per replication (negative = optimistic)", tu)),
            "percentile_error_mean": (q5, Em, _attrs("mean over replications of percentile_error", tu)),
            "percentile_error_ci_low": (q5, Elo, _attrs(f"lower end of the {conf:.0%} CI of percentile_error_mean", tu)),
            "percentile_error_ci_high": (q5, Ehi, _attrs(f"upper end of the {conf:.0%} CI of percentile_error_mean", tu)),
            "percentile_error_ci_method": (q5, Eci, _attrs("method of the CI of percentile_error_mean", **ci_flags)),
            "percentile_error_pooled": (q5, err_pool, _attrs("approx - pooled sim percentile (negative = optimistic)", tu)),
            "relative_percentile_error_mean": (q5, Rm, _attrs("mean over replications of (approx - sim)/sim percentile")),
            "relative_percentile_error_ci_low": (q5, Rlo, _attrs("lower end of the CI of relative_percentile_error_mean")),
            "relative_percentile_error_ci_high": (q5, Rhi, _attrs("upper end of the CI of relative_percentile_error_mean")),
            "relative_percentile_error_pooled": (q5, rel_pool, _attrs("(approx - pooled sim)/pooled sim percentile")),
            "best_method": (("service", "R", "rho"), best.astype(str),
                            _attrs("method with the smallest mean Wasserstein distance (exact and fit_invalid "
                                   "excluded)")),
            "tied_with_best": (dims4, tied, _attrs("1 if the method's Wasserstein CI overlaps the best method's CI "
                                                   "(0 for fit_invalid methods)",
                                                   flag_values=np.array([0, 1], np.int8), flag_meanings="no yes")),
            "best_method_percentile": (("service", "R", "rho", "percentile"), best_pct.astype(str),
                                       _attrs("method with the smallest |pooled percentile error| (exact and "
                                              "fit_invalid excluded)")),
            "fit_invalid": (("R", "rho", "approximation"), g.fit_invalid,
                            _attrs(f"approximated CDF is not a CDF on the grid beyond round-off ({FIT_TOLERANCE:g}); "
                                   "0 = valid or not computed", **FIT_FLAG_ATTRS)),
            "fit_violation": (("R", "rho", "approximation"), g.fit_violation,
                              _attrs("largest excursion of the approximated CDF below 0, above 1 or downwards "
                                     "between grid points (0 if valid, NaN if not computed)")),
            "wasserstein_vs_exact": (("R", "rho", "approximation"), W_exact,
                                     _attrs("Wasserstein distance between each method's CDF and the exact CDF", tu)),
            "percentile_error_vs_exact": (("R", "rho", "approximation", "percentile"), err_exact,
                                          _attrs("method - exact percentile", tu)),
            "wasserstein_vs_exponential_sim": (("service", "R", "rho"), W_vs_exp_sim,
                                               _attrs("Wasserstein distance between this law's pooled simulated CDF "
                                                      "and the exponential law's (M/G/R vs M/M/R)", tu)),
        },
        coords={"service": np.asarray(services, dtype=str), "R": np.asarray(Rs, np.int64), "rho": rhos,
                "approximation": np.asarray(methods, dtype=str), "replication": reps, "percentile": pct},
    )
    label_coords(ds)
    if run_time is not None:
        ds["run_time"] = run_time.transpose("R", "rho", "approximation").reindex(R=Rs, rho=rhos)
        ds["run_time"].attrs = _attrs("run time of the approximation method (not reproducible)", "s")
    ds.attrs["cdf_convention"] = (
        "grid t_i = i*dt; simulated F(t_i) = P(S < t_i) from histogram bins [t_i, t_i + dt) "
        "(sojourn.core.stats.cdf_at_left_edges); approximated F(t_i) = cdf at t_i")
    ds.attrs["wasserstein_definition"] = "dt * sum_i |F_sim(t_i) - F_approx(t_i)| (paper eq. 27)"
    ds.attrs["percentile_definition"] = "first grid t_i with F(t_i) > p; error = approx - sim (negative = optimistic)"
    return ds


def comparison_encoding(ds: xr.Dataset) -> dict:
    enc = {}
    for name, var in ds.data_vars.items():
        if var.dtype.kind == "f":
            enc[name] = {"zlib": True, "complevel": 5, "shuffle": True, "dtype": "float32"}
        elif var.dtype.kind in "iu":
            enc[name] = {"zlib": True, "complevel": 5, "shuffle": True}
    return enc


def write_comparison(sim_path, approx_path, output, settings: dict) -> Path:
    """``comparison.nc`` from the merged files (streaming over cells: bounded memory; reading both files
    whole took ~9.6 GB on the paper grid). ``settings``: the comparison section and the simulation seed."""
    ds = compare_files(sim_path, approx_path, settings["comparison"], lock=NETCDF_LOCK)
    ds.attrs.update(provenance(settings, title="sojourn pipeline: approximations vs simulation",
                               seed=int(settings["seed"])))
    write_netcdf(ds, output, encoding=comparison_encoding(ds))
    return Path(output)
