"""Figures of the pipeline (matplotlib, Agg backend): one function per figure, each saved in every format.

All functions take the merged datasets (``comparison.nc``, ``simulation.nc``, ``approximation.nc``)
and a path *stem*; :func:`save` writes ``<stem>.<fmt>`` for each requested format.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from ..core.io import NETCDF_LOCK, read_netcdf  # noqa: E402
from ..core.stats import cdf_at_left_edges  # noqa: E402
from .naming import cdf_stem  # noqa: E402

_PAPER = ("A", "B", "C", "D", "E", "F")


def _colors(methods):
    cmap = plt.get_cmap("tab20")
    return {m: cmap(i % 20) for i, m in enumerate(methods)}


def _style(m):
    return "--" if m.endswith("*") else (":" if m == "exact" else "-")


def save(fig, stem, formats=("png", "pdf"), dpi=120) -> list[Path]:
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        # fixed metadata: identical inputs give identical files
        meta = {"Software": None} if fmt == "png" else ({"CreationDate": None} if fmt == "pdf" else {"Date": None})
        fig.savefig(path, dpi=dpi, bbox_inches="tight", metadata=meta)
        out.append(path)
    plt.close(fig)
    return out


def _grid(n, ncols=5, w=3.2, h=2.6, **kw):
    ncols = min(ncols, n)
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(w * ncols, h * nrows), squeeze=False, **kw)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)


def _hold_autoscale(axes, on: bool):
    """Autoscaling off while a ``sharex`` grid is filled, back on (lazy, as usual) before layout.

    With shared x every ``fill_between`` re-autoscales all sibling axes (quadratic in the number of
    artists; most of the time of the 40-panel percentile figure). The limits come out the same: they
    are computed once from the same data limits when the figure is laid out or drawn.
    """
    for ax in axes:
        if on:
            ax.autoscale(True)
        else:
            ax.set_autoscale_on(False)


def wasserstein_vs_rho(cmp: xr.Dataset, stem, service="exponential", **kw):
    """Mean Wasserstein distance (with CI band) vs ρ, one panel per R, one line per method."""
    c = cmp.sel(service=service)
    methods = cmp["method"].values.tolist()
    col = _colors(methods)
    fig, axes = _grid(c.sizes["R"], sharex=True)
    _hold_autoscale(axes, False)
    rho = c["rho"].values
    for ax, R in zip(axes, c["R"].values):
        for m in methods:
            d = c.sel({"R": R, "method": m})
            y = d["wasserstein_mean"].values
            if not np.isfinite(y).any():
                continue
            ax.plot(rho, y, _style(m), color=col[m], label=m, lw=1.2, marker=".", ms=3)
            ax.fill_between(rho, d["wasserstein_ci_low"].values, d["wasserstein_ci_high"].values,
                            color=col[m], alpha=0.15, lw=0)
        ax.set_yscale("log")
        ax.set_title(f"R = {R}")
        ax.set_xlabel("load ρ")
        ax.set_ylabel("Wasserstein distance")
        ax.grid(alpha=0.3)
    _hold_autoscale(axes, True)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 13), frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"Wasserstein distance to the simulated CDF ({service} service; mean and 95% CI over replications)",
                 y=1.02)
    return save(fig, stem, **kw)


def best_method_map(cmp: xr.Dataset, stem, service="exponential", **kw):
    """Best method (min mean Wasserstein) over (R, ρ); hatched cells have CI-overlap ties."""
    c = cmp.sel(service=service)
    best = c["best_method"].values  # (R, rho)
    methods = [m for m in cmp["method"].values.tolist() if m != "exact"]
    idx = {m: i for i, m in enumerate(methods)}
    Z = np.full(best.shape, np.nan)
    for (i, j), b in np.ndenumerate(best):
        if b in idx:
            Z[i, j] = idx[b]
    ntied = c["tied_with_best"].sum("method").values
    cmap = plt.get_cmap("tab20", max(len(methods), 2))
    fig, ax = plt.subplots(figsize=(max(6, 0.09 * c.sizes["rho"] + 4), 0.45 * c.sizes["R"] + 2))
    rho = c["rho"].values
    Rv = c["R"].values
    im = ax.imshow(Z, aspect="auto", origin="lower", cmap=cmap, vmin=-0.5, vmax=len(methods) - 0.5,
                   interpolation="nearest")
    for (i, j), n in np.ndenumerate(ntied):
        if n > 1:
            ax.text(j, i, "·", ha="center", va="center", fontsize=8, color="k")
    step = max(1, len(rho) // 12)
    ax.set_xticks(range(0, len(rho), step), [f"{r:.2f}" for r in rho[::step]], rotation=45)
    ax.set_yticks(range(len(Rv)), [str(r) for r in Rv])
    ax.set_xlabel("load ρ")
    ax.set_ylabel("servers R")
    cb = fig.colorbar(im, ax=ax, ticks=range(len(methods)))
    cb.ax.set_yticklabels(methods)
    ax.set_title(f"Best method by mean Wasserstein distance ({service}); '·' = tie within CI")
    return save(fig, stem, **kw)


def percentile_error_vs_rho(cmp: xr.Dataset, stem, service="exponential", **kw):
    """Signed percentile error (approx − sim, pooled) vs ρ: rows = percentiles, columns = R."""
    c = cmp.sel(service=service)
    methods = cmp["method"].values.tolist()
    col = _colors(methods)
    P, Rv = c["percentile"].values, c["R"].values
    fig, axes = plt.subplots(len(P), len(Rv), figsize=(2.8 * len(Rv), 2.3 * len(P)), squeeze=False, sharex=True)
    _hold_autoscale(axes.flat, False)
    rho = c["rho"].values
    for a, p in enumerate(P):
        for b, R in enumerate(Rv):
            ax = axes[a, b]
            for m in methods:
                d = c.sel({"R": R, "method": m, "percentile": p})
                y = d["percentile_error_mean"].values
                if not np.isfinite(y).any():
                    continue
                ax.plot(rho, y, _style(m), color=col[m], lw=1, label=m)
                ax.fill_between(rho, d["percentile_error_ci_low"].values, d["percentile_error_ci_high"].values,
                                color=col[m], alpha=0.12, lw=0)
            _hold_autoscale([ax], True)  # before axhline/symlog, as the y limits were autoscaled then
            ax.axhline(0, color="k", lw=0.6)
            ax.set_yscale("symlog", linthresh=1.0)
            if a == 0:
                ax.set_title(f"R = {R}")
            if b == 0:
                ax.set_ylabel(f"{p:g}th pct error")
            if a == len(P) - 1:
                ax.set_xlabel("load ρ")
            ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=min(len(labels), 13), frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(f"Percentile error approx - sim ({service}; negative = optimistic; mean and 95% CI)", y=1.01)
    return save(fig, stem, **kw)


def runtime_vs_R(cmp: xr.Dataset, stem, **kw):
    """Median (over ρ) run time per method vs R, with the min–max range."""
    rt = cmp["run_time"]
    methods = cmp["method"].values.tolist()
    col = _colors(methods)
    fig, ax = plt.subplots(figsize=(6, 4))
    Rv = cmp["R"].values
    for m in methods:
        d = rt.sel({"method": m})
        med = d.median("rho").values
        if not np.isfinite(med).any():
            continue
        ax.plot(Rv, med, _style(m), color=col[m], marker="o", ms=3, label=m)
        ax.fill_between(Rv, d.min("rho").values, d.max("rho").values, color=col[m], alpha=0.1, lw=0)
    ax.set_yscale("log")
    ax.set_xlabel("servers R")
    ax.set_ylabel("run time per cell (s)")
    ax.set_title("Approximation run time (median over ρ, band = min–max)")
    ax.legend(ncol=2, fontsize=7)
    ax.grid(alpha=0.3)
    return save(fig, stem, **kw)


def cdf_cell(sim: xr.Dataset, approx: xr.Dataset, R, rho, stem, service="exponential", **kw):
    """Simulated (pooled, with the replication range) vs approximated CDFs of one cell, plus the tail.

    ``sim``/``approx`` may be lazily opened files: only this cell's slices are read. ``approx``
    needs ``cdf`` or ``sf`` (then cdf = 1 − sf, as :func:`sojourn.jsq_ps.storage.read_approximation`).
    """
    s = sim[["count", "overflow"]].sel(service=service, R=R).sel(rho=rho, method="nearest")
    var = "cdf" if "cdf" in approx else "sf"
    a = approx[[var]].sel(R=R).sel(rho=rho, method="nearest")
    t = sim["t"].values
    count = s["count"].values.astype(float)
    overflow = s["overflow"].values.astype(float)
    Fa = a[var].transpose("method", "t").values
    Fa = Fa.astype(float) if var == "cdf" else 1.0 - Fa.astype(np.float64)
    Fr = cdf_at_left_edges(count, overflow)
    Fp = cdf_at_left_edges(count.sum(0), float(overflow.sum()))
    methods = approx["method"].values.tolist()
    col = _colors(methods)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    q = np.nanquantile(Fp, 0.9999) if np.isfinite(Fp).any() else 1
    tmax = t[min(len(t) - 1, int(np.argmax(Fp >= min(q, 0.99999))) + 1)] if np.isfinite(Fp).any() else t[-1]
    xmax = max(float(tmax), 5 * float(t[1]))
    # draw only the visible part of the t grid (+1 point past the right edge): the paper grid has
    # 18k points per curve, mostly far right of the view (slow rendering, large PDF paths)
    n = min(len(t), int(np.searchsorted(t, xmax, side="right")) + 1)
    lo_r, hi_r = np.nanmin(Fr, 0), np.nanmax(Fr, 0)
    for ax, logy in ((ax1, False), (ax2, True)):
        curves = [(lo_r, hi_r) if not logy else (1 - hi_r, 1 - lo_r), (Fp if not logy else 1 - Fp,)]
        ax.fill_between(t[:n], curves[0][0][:n], curves[0][1][:n], color="0.7", alpha=0.5,
                        label="simulation (replication range)")
        ax.plot(t[:n], curves[1][0][:n], color="k", lw=1.6, label="simulation (pooled)")
        for m, F in zip(methods, Fa):
            if np.isfinite(F).any():
                y = F if not logy else 1 - F
                curves.append((y,))
                ax.plot(t[:n], y[:n], _style(m), color=col[m], lw=1, label=m)
        if not logy:  # y autoscaling as if the whole curves were drawn
            ys = np.concatenate([np.ravel(y) for c in curves for y in c])
            ys = ys[np.isfinite(ys)]
            if ys.size:
                ax.update_datalim([(float(t[0]), float(ys.min())), (float(t[0]), float(ys.max()))])
                ax.autoscale_view()
        ax.set_xlim(0, xmax)
        ax.set_xlabel("sojourn time t")
        ax.grid(alpha=0.3)
    ax1.set_ylabel("F(t) = P(S < t)")
    ax2.set_yscale("log")
    ax2.set_ylim(1e-6, 1.0)
    ax2.set_ylabel("1 − F(t)")
    ax2.legend(fontsize=7, ncol=2)
    fig.suptitle(f"Sojourn-time CDF, R = {R}, ρ = {float(rho):.2f}")
    return save(fig, stem, **kw)


def mgr_laws(cmp: xr.Dataset, stem, **kw):
    """M/G/R: Wasserstein distance of each law's simulation to the exponential simulation and to the best
    exponential approximation, vs ρ per R."""
    services = [s for s in cmp["service"].values.tolist() if s != "exponential"]
    Rv = cmp["R"].values
    fig, axes = _grid(len(Rv), sharex=True)
    cmap = plt.get_cmap("tab10")
    rho = cmp["rho"].values
    cand = [m for m in cmp["method"].values.tolist() if m != "exact"]
    for ax, R in zip(axes, Rv):
        for k, svc in enumerate(services):
            d = cmp.sel(service=svc, R=R)
            y1 = d["wasserstein_vs_exponential_sim"].values
            y2 = d["wasserstein_mean"].sel({"method": cand}).min("method", skipna=True).values
            if np.isfinite(y1).any():
                ax.plot(rho, y1, "-", color=cmap(k), marker=".", ms=3, label=f"{svc} vs M/M/R sim")
            if np.isfinite(y2).any():
                ax.plot(rho, y2, "--", color=cmap(k), lw=1, label=f"{svc} vs best approx")
        ax.set_title(f"R = {R}")
        ax.set_xlabel("load ρ")
        ax.set_ylabel("Wasserstein distance")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=4, frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle("M/G/R laws vs the exponential (M/M/R) simulation and approximations", y=1.02)
    return save(fig, stem, **kw)


def all_figures(cmp_path, sim_path, approx_path, outdir, cdf_cells=(), formats=("png", "pdf"), dpi=120, decimals=2):
    """Every figure of the pipeline into ``outdir``; returns the written paths."""
    cmp = read_netcdf(cmp_path)  # small: (service, R, rho, method, replication, percentile)
    outdir = Path(outdir)
    kw = {"formats": tuple(formats), "dpi": dpi}
    out = []
    out += wasserstein_vs_rho(cmp, outdir / "wasserstein_vs_rho", **kw)
    out += best_method_map(cmp, outdir / "best_method_map", **kw)
    out += percentile_error_vs_rho(cmp, outdir / "percentile_error_vs_rho", **kw)
    out += runtime_vs_R(cmp, outdir / "runtime_vs_R", **kw)
    for c in cdf_cells:
        # one cell each: read just its slices (the merged files are GBs once decompressed)
        R, rho = int(c["R"]), float(c["rho"])
        with NETCDF_LOCK, xr.open_dataset(sim_path, engine="netcdf4") as sim, \
                xr.open_dataset(approx_path, engine="netcdf4") as approx:
            sim_c = sim[["count", "overflow"]].sel(R=[R]).sel(rho=[rho], method="nearest").load()
            var = "cdf" if "cdf" in approx else "sf"
            approx_c = approx[[var]].sel(R=[R]).sel(rho=[rho], method="nearest").load()
        out += cdf_cell(sim_c, approx_c, R, rho, outdir / cdf_stem(c, decimals), **kw)
    if cmp.sizes["service"] > 1:
        out += mgr_laws(cmp, outdir / "mgr_laws", **kw)
    return out
