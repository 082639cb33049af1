"""Figures of the pipeline (matplotlib, Agg backend): one function per figure, each saved in every format.

All functions take the merged datasets (``comparison.nc``, ``simulation.nc``, ``approximation.nc``)
and a path *stem*; :func:`save` writes ``<stem>.<fmt>`` for each requested format.

Cells whose approximated CDF is not a CDF (``fit_invalid`` in ``comparison.nc``, e.g. Gupta's fit at low
load) are never drawn as values (they would stretch a log axis over 40 decades): line plots omit the point
and put a × in the method's colour at the top of the panel, the CDF figure leaves the curve out, and
the titles say so.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

from ..core.figures import save, serialized  # noqa: E402,F401  (save: also the reproduction's)
from ..core.io import NETCDF_LOCK, read_netcdf  # noqa: E402
from ..core.stats import cdf_at_left_edges  # noqa: E402
from .compare import fit_validity  # noqa: E402
from .naming import cdf_stem  # noqa: E402

_PAPER = ("A", "B", "C", "D", "E", "F")


def _colors(methods):
    cmap = plt.get_cmap("tab20")
    return {m: cmap(i % 20) for i, m in enumerate(methods)}


def _style(m):
    return "--" if m.endswith("*") else (":" if m == "exact" else "-")


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


INVALID_NOTE = "×: fit invalid (approximated CDF outside [0, 1] or decreasing), value omitted"


def _invalid(c: xr.Dataset, R, m) -> np.ndarray:
    """fit_invalid mask over ρ of method ``m`` at R (all False for a comparison without the flag)."""
    if "fit_invalid" not in c:
        return np.zeros(c.sizes["rho"], bool)
    return c["fit_invalid"].sel({"R": R, "approximation": m}).values != 0


def _mark_invalid(ax, x, bad, color, row=0) -> bool:
    """× near the top edge of ``ax`` where ``bad`` (y in axes coordinates: never changes the y limits);
    ``row`` staggers the marks of several methods downwards. Black outline: pale colours stay visible."""
    if not np.any(bad):
        return False
    from matplotlib import patheffects

    ax.plot(np.asarray(x)[bad], np.full(int(np.sum(bad)), 0.95 - 0.07 * row), "x", color=color, ms=6, mew=1.6,
            transform=ax.get_xaxis_transform(), clip_on=False,
            path_effects=[patheffects.withStroke(linewidth=3, foreground="k")])
    return True


def wasserstein_vs_rho(cmp: xr.Dataset, stem, service="exponential", **kw):
    """Mean Wasserstein distance (with CI band) vs ρ, one panel per R, one line per method."""
    c = cmp.sel(service=service)
    methods = cmp["approximation"].values.tolist()
    col = _colors(methods)
    fig, axes = _grid(c.sizes["R"], sharex=True)
    _hold_autoscale(axes, False)
    rho = c["rho"].values
    any_bad = False
    for ax, R in zip(axes, c["R"].values):
        row = 0
        for m in methods:
            d = c.sel({"R": R, "approximation": m})
            bad = _invalid(c, R, m)
            y = np.where(bad, np.nan, d["wasserstein_mean"].values)
            if _mark_invalid(ax, rho, bad, col[m], row):  # flagged = a CDF was computed there, not a valid one
                any_bad, row = True, row + 1
            if not np.isfinite(y).any():
                continue
            ax.plot(rho, y, _style(m), color=col[m], label=m, lw=1.2, marker=".", ms=3)
            ax.fill_between(rho, np.where(bad, np.nan, d["wasserstein_ci_low"].values),
                            np.where(bad, np.nan, d["wasserstein_ci_high"].values), color=col[m], alpha=0.15, lw=0)
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
    note = f"\n{INVALID_NOTE}" if any_bad else ""
    fig.suptitle(f"Wasserstein distance to the simulated CDF ({service} service; mean and 95% CI over replications)"
                 f"{note}", y=1.0, va="bottom")
    return save(fig, stem, **kw)


def best_method_map(cmp: xr.Dataset, stem, service="exponential", **kw):
    """Best method (min mean Wasserstein) over (R, ρ); hatched cells have CI-overlap ties."""
    c = cmp.sel(service=service)
    best = c["best_method"].values  # (R, rho)
    methods = [m for m in cmp["approximation"].values.tolist() if m != "exact"]
    idx = {m: i for i, m in enumerate(methods)}
    Z = np.full(best.shape, np.nan)
    for (i, j), b in np.ndenumerate(best):
        if b in idx:
            Z[i, j] = idx[b]
    ntied = c["tied_with_best"].sum("approximation").values
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
    ax.set_title(f"Best method by mean Wasserstein distance ({service}); '·' = tie within CI\n"
                 "(methods whose CDF is not a CDF there, fit_invalid, are never best)", fontsize=10)
    return save(fig, stem, **kw)


def percentile_error_vs_rho(cmp: xr.Dataset, stem, service="exponential", **kw):
    """Signed percentile error (approx − sim, pooled) vs ρ: rows = percentiles, columns = R."""
    c = cmp.sel(service=service)
    methods = cmp["approximation"].values.tolist()
    col = _colors(methods)
    P, Rv = c["percentile"].values, c["R"].values
    fig, axes = plt.subplots(len(P), len(Rv), figsize=(2.8 * len(Rv), 2.3 * len(P)), squeeze=False, sharex=True)
    _hold_autoscale(axes.flat, False)
    rho = c["rho"].values
    any_bad = False
    for a, p in enumerate(P):
        for b, R in enumerate(Rv):
            ax = axes[a, b]
            marks = []
            for m in methods:
                d = c.sel({"R": R, "approximation": m, "percentile": p})
                bad = _invalid(c, R, m)
                y = np.where(bad, np.nan, d["percentile_error_mean"].values)
                marks.append((bad, col[m]))
                if not np.isfinite(y).any():
                    continue
                ax.plot(rho, y, _style(m), color=col[m], lw=1, label=m)
                ax.fill_between(rho, np.where(bad, np.nan, d["percentile_error_ci_low"].values),
                                np.where(bad, np.nan, d["percentile_error_ci_high"].values),
                                color=col[m], alpha=0.12, lw=0)
            _hold_autoscale([ax], True)  # before axhline/symlog, as the y limits were autoscaled then
            row = 0
            for bad, color in marks:
                if _mark_invalid(ax, rho, bad, color, row):
                    any_bad, row = True, row + 1
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
    note = f"\n{INVALID_NOTE}" if any_bad else ""
    fig.suptitle(f"Percentile error approx - sim ({service}; negative = optimistic; mean and 95% CI){note}",
                 y=1.0, va="bottom")
    return save(fig, stem, **kw)


def runtime_vs_R(cmp: xr.Dataset, stem, **kw):
    """Median (over ρ) run time per method vs R, with the min–max range."""
    rt = cmp["run_time"]
    methods = cmp["approximation"].values.tolist()
    col = _colors(methods)
    fig, ax = plt.subplots(figsize=(6, 4))
    Rv = cmp["R"].values
    for m in methods:
        d = rt.sel({"approximation": m})
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
    Fa = a[var].transpose("approximation", "t").values
    Fa = Fa.astype(float) if var == "cdf" else 1.0 - Fa.astype(np.float64)
    Fr = cdf_at_left_edges(count, overflow)
    Fp = cdf_at_left_edges(count.sum(0), float(overflow.sum()))
    methods = approx["approximation"].values.tolist()
    col = _colors(methods)
    flags, _ = fit_validity(Fa)
    omitted = [m for m, f in zip(methods, flags) if f]
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
        for m, F, bad in zip(methods, Fa, flags):
            if np.isfinite(F).any() and not bad:
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
    note = f"\nnot drawn, fit invalid (not a CDF): {', '.join(omitted)}" if omitted else ""
    fig.suptitle(f"Sojourn-time CDF, R = {R}, ρ = {float(rho):.2f}{note}")
    return save(fig, stem, **kw)


def mgr_laws(cmp: xr.Dataset, stem, **kw):
    """M/G/R: Wasserstein distance of each law's simulation to the exponential simulation and to the best
    exponential approximation, vs ρ per R."""
    services = [s for s in cmp["service"].values.tolist() if s != "exponential"]
    # only the R the M/G/R laws ran at (they cover a sub-grid): no empty panels
    have = np.isfinite(cmp["wasserstein_vs_exponential_sim"].sel(service=services).values).any(axis=(0, 2))
    Rv = cmp["R"].values[have] if have.any() else cmp["R"].values
    fig, axes = _grid(len(Rv), sharex=True)
    cmap = plt.get_cmap("tab10")
    rho = cmp["rho"].values
    cand = [m for m in cmp["approximation"].values.tolist() if m != "exact"]
    for ax, R in zip(axes, Rv):
        for k, svc in enumerate(services):
            d = cmp.sel(service=svc, R=R)
            y1 = d["wasserstein_vs_exponential_sim"].values
            w = d["wasserstein_mean"]
            if "fit_invalid" in d:
                w = w.where(d["fit_invalid"] == 0)  # an invalid fit is never "the best approximation"
            y2 = w.sel({"approximation": cand}).min("approximation", skipna=True).values
            ok1, ok2 = np.isfinite(y1), np.isfinite(y2)  # the laws' sub-grid: join its points, skip the gaps
            if ok1.any():
                ax.plot(rho[ok1], y1[ok1], "-", color=cmap(k), marker=".", ms=3, label=f"{svc} vs M/M/R sim")
            if ok2.any():
                ax.plot(rho[ok2], y2[ok2], "--", color=cmap(k), lw=1, label=f"{svc} vs best approx")
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


@serialized
def all_figures(cmp_path, sim_path, approx_path, outdir, cdf_cells=(), formats=("png", "pdf"), dpi=120, decimals=2):
    """Every figure of the pipeline into ``outdir``; returns the written paths."""
    cmp = read_netcdf(cmp_path)  # small: (service, R, rho, approximation, replication, percentile)
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


# --------------------------------------------------------------------------- reproduction report (§6)
_FAMILY_STYLE = {"faithful": ("tab:blue", "o", "ours, best of A–F"), "corrected": ("tab:orange", "s", "ours, best of A*–F*"),
                 "exact": ("tab:green", "^", "ours, exact")}


def _family_errorbars(ax, x, rep_vals, fams, width=0.22, absolute=False):
    """One error bar per family at x + offset; ``rep_vals[f] = (mean, low, high)`` arrays over x."""
    n = len(fams)
    for f, fam in enumerate(fams):
        mean, lo, hi = (np.asarray(v, dtype=float) for v in rep_vals[f])
        if absolute:  # |mean| and the image of the CI under |.|
            a, b = np.abs(lo), np.abs(hi)
            straddle = (lo <= 0) & (hi >= 0)
            lo, hi = np.where(straddle, 0.0, np.minimum(a, b)), np.maximum(a, b)
            mean = np.abs(mean)
        ok = np.isfinite(mean)
        if not ok.any():
            continue
        color, marker, label = _FAMILY_STYLE.get(fam, ("tab:gray", "d", fam))
        xs = np.asarray(x, dtype=float)[ok] + (f - (n - 1) / 2) * width / max(n - 1, 1)
        err = np.vstack([np.where(np.isfinite(lo[ok]), mean[ok] - lo[ok], 0),
                         np.where(np.isfinite(hi[ok]), hi[ok] - mean[ok], 0)])
        ax.errorbar(xs, mean[ok], yerr=np.maximum(err, 0), fmt=marker, color=color, ms=4, lw=1, capsize=2, label=label)


def reproduction_percentile_errors(rep: xr.Dataset, stem, **kw):
    """§6.1/§6.2: published signed percentile errors (black) vs ours per family (mean, 95% CI), per R."""
    fams = rep["family"].values.tolist()
    P, rhos, Rv = rep["pct_percentile"].values, rep["pct_rho"].values, rep["pct_R"].values
    fig, axes = plt.subplots(len(P), len(Rv), figsize=(3.1 * len(Rv), 3.0 * len(P)), squeeze=False, sharey="row")
    x = np.arange(len(rhos))
    for a, p in enumerate(P):
        for k, R in enumerate(Rv):
            ax = axes[a, k]
            ax.axhline(0, color="0.5", lw=0.6)
            ax.plot(x, rep["paper_percentile_error"].values[a, :, k], "D", mfc="none", color="k", ms=6, mew=1.2,
                    label="paper (one seed)")
            _family_errorbars(ax, x, [[rep[v].values[f, a, :, k] for v in ("percentile_error", "percentile_error_ci_low",
                                                                             "percentile_error_ci_high")]
                                      for f in range(len(fams))], fams)
            ax.set_yscale("symlog", linthresh=1.0)
            ax.set_xticks(x, [f"{r:g}" for r in rhos], rotation=45, fontsize=8)
            ax.grid(alpha=0.3)
            if a == 0:
                ax.set_title(f"R = {R}")
            if k == 0:
                ax.set_ylabel(f"{p:g}th percentile error\n(approx − sim, symlog)")
            if a == len(P) - 1:
                ax.set_xlabel("load ρ")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    for ax in axes.flat:  # a family absent from the first panel may appear in another
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h); labels.append(lab)
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle("Paper §6.1/§6.2: signed percentile error of the best method for that percentile; "
                 "ours: mean and 95% CI over replications (negative = optimistic)", y=1.02)
    return save(fig, stem, **kw)


def reproduction_relative_errors(rep: xr.Dataset, stem, **kw):
    """§6.3: published |relative error| of the best-by-Wasserstein method vs ours (|mean|, CI image)."""
    fams = rep["family"].values.tolist()
    P, rhos, Rv = rep["rel_percentile"].values, rep["rel_rho"].values, rep["rel_R"].values
    fig, axes = plt.subplots(len(P), len(Rv), figsize=(3.1 * len(Rv), 2.7 * len(P)), squeeze=False, sharey="row")
    x = np.arange(len(rhos))
    for a, p in enumerate(P):
        for k, R in enumerate(Rv):
            ax = axes[a, k]
            ax.plot(x, rep["paper_relative_error"].values[a, :, k], "D", mfc="none", color="k", ms=6, mew=1.2,
                    label="paper (one seed)")
            _family_errorbars(ax, x, [[rep[v].values[f, a, :, k] for v in ("relative_error", "relative_error_ci_low",
                                                                             "relative_error_ci_high")]
                                      for f in range(len(fams))], fams, absolute=True)
            ax.set_xticks(x, [f"{r:g}" for r in rhos], fontsize=8)
            ax.grid(alpha=0.3)
            if a == 0:
                ax.set_title(f"R = {R}")
            if k == 0:
                ax.set_ylabel(f"{p:g}th percentile\n|relative error|")
            if a == len(P) - 1:
                ax.set_xlabel("load ρ")
        tops = [ax.dataLim.y1 for ax in axes[a] if ax.has_data() and np.isfinite(ax.dataLim.y1)]
        top = max(tops) if tops else 1.0  # after every panel of the row (shared y)
        axes[a, 0].set_ylim(0, 1.08 * top if top > 0 else 1.0)
    handles, labels = [], []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h); labels.append(lab)
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), frameon=False, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle("Paper §6.3: relative percentile error of the best method by Wasserstein distance; "
                 "ours: |mean| over replications and the 95% CI of |·|", y=1.02)
    return save(fig, stem, **kw)


def reproduction_map(rep: xr.Dataset, stem, **kw):
    """§6.4: the paper's best of A–F, ours with agreement marks, and how much the corrected methods gain."""
    from matplotlib.colors import ListedColormap

    letters = list("ABCDEF")
    R, rho = rep["R"].values, rep["rho"].values
    paper = rep["paper_best_method"].values
    ours = rep["best_method"].sel(family="faithful").values
    agree = rep["agreement"].values

    def codes(L):
        Z = np.full(L.shape, np.nan)
        for (i, j), v in np.ndenumerate(L):
            if v in letters:
                Z[i, j] = letters.index(v)
        return Z

    cmap = ListedColormap([plt.get_cmap("tab10")(i) for i in range(len(letters))]).with_extremes(bad="0.9")
    few = len(R) * len(rho) <= 150  # small runs: letters written into the cells
    w = max(8.0, min(16.0, 0.13 * len(rho) + 3.5))
    fig, axes = plt.subplots(3, 1, figsize=(w, 3 * (0.32 * len(R) + 1.3)), squeeze=False)
    axes = axes[:, 0]
    step = max(1, len(rho) // 20)
    for ax, Z, title in ((axes[0], codes(paper), "paper (authors' best.csv, one seed)"),
                         (axes[1], codes(ours), "ours: best of A–F by mean W (× = disagreement, · = tie within CI)")):
        im = ax.imshow(np.ma.masked_invalid(Z), aspect="auto", origin="lower", cmap=cmap, vmin=-0.5,
                       vmax=len(letters) - 0.5, interpolation="nearest")
        ax.set_title(title, fontsize=10)
        cb = fig.colorbar(im, ax=ax, ticks=range(len(letters)), fraction=0.04, pad=0.01)
        cb.ax.set_yticklabels(letters)
        if few:
            L = paper if ax is axes[0] else ours
            for (i, j), v in np.ndenumerate(L):
                if v:
                    ax.text(j, i, v, ha="center", va="center", fontsize=8, color="w", fontweight="bold")
    ii, jj = np.nonzero(agree == 0)
    axes[1].plot(jj, ii, "x", color="k", ms=6 if few else 4, mew=1.5 if few else 1.0, ls="none")
    ii, jj = np.nonzero(agree == 1)
    axes[1].plot(jj + (0.3 if few else 0), ii, ".", color="k", ms=4 if few else 2.5, ls="none")
    ratio = rep["best_wasserstein"].sel(family="corrected").values / rep["best_wasserstein"].sel(family="faithful").values
    with np.errstate(divide="ignore", invalid="ignore"):
        lr = np.log10(ratio)
    lim = max(0.5, float(np.nanmax(np.abs(lr)))) if np.isfinite(lr).any() else 1.0
    im = axes[2].imshow(np.ma.masked_invalid(lr), aspect="auto", origin="lower", cmap=plt.get_cmap("RdBu_r").with_extremes(
        bad="0.9"), vmin=-lim, vmax=lim, interpolation="nearest")
    cb = fig.colorbar(im, ax=axes[2], fraction=0.04, pad=0.01)
    cb.set_label("log10 ratio", fontsize=8)
    axes[2].set_title("W of the best corrected (A*–F*) / W of the best faithful (A–F): blue = corrected better",
                      fontsize=10)
    for ax in axes:
        ax.set_xticks(range(0, len(rho), step), [f"{r:.2f}" for r in rho[::step]], rotation=45, fontsize=8)
        ax.set_yticks(range(len(R)), [str(r) for r in R], fontsize=8)
        ax.set_ylabel("servers R")
    axes[-1].set_xlabel("load ρ")
    fig.tight_layout()  # before the suptitle (placed above the axes; the tight bbox takes it in)
    share = rep.attrs.get("agreement_share", float("nan"))
    same = rep.attrs.get("agreement_share_same_letter", float("nan"))
    n = rep.attrs.get("agreement_cells", 0)
    fig.suptitle(f"Best method by Wasserstein distance (§6.4): ours agrees with the paper in {100 * share:.1f}% of {n} "
                 f"cells\n({100 * same:.1f}% same letter, the rest ties); grey = not in this run or not in the paper's "
                 f"grid; fit-invalid methods are never best", fontsize=10, y=1.0, va="bottom")
    return save(fig, stem, **kw)
