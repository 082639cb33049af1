"""The pipeline's figures of one example: mean response time and mean number of jobs vs restart rate
(product form line with g* marked, the three simulated semantics with CI bars, unstable points marked),
and the response-time percentile vs restart rate."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core.figures import FIGURE_LOCK, Figure, instance, save
from ..core.io import read_netcdf

STYLE = {"signal": ("C0", "o", "simulation, signal semantics (g = r)"),
         "timeout_exponential": ("C1", "s", "simulation, exponential timeouts (rate r)"),
         "timeout_deterministic": ("C2", "^", "simulation, deterministic timeouts (tau = 1/r)")}




#: every figure of the study, declared once: the workflow's outputs and report captions come from here
#: (:func:`figures`), and the figure job draws exactly these (:func:`all_figures`)
FIGURES = (
    Figure("{example}_means", "means", "means"),
    Figure("{example}_percentile", "percentile", "percentile"),
)


def figures(example: str) -> list:
    """The figures (:class:`sojourn.core.figures.FigureFile`) of one example of the sweep."""
    return [instance(f, example=example) for f in FIGURES]


def _sim(ax, cmp, var, unstable_y=None):
    r = cmp["restart_rate"].values
    for i, s in enumerate(cmp["semantics"].values.tolist()):
        color, marker, label = STYLE.get(s, ("k", "x", s))
        d = cmp.sel(semantics=s)
        m, h = d[var].values, d[f"{var}_half_width"].values
        ax.errorbar(r, m, yerr=h, fmt=marker, ms=4, color=color, capsize=2, lw=0.8, label=label)
        bad = ~np.isfinite(m)
        if bad.any() and unstable_y is not None:
            ax.plot(r[bad], np.full(bad.sum(), unstable_y * (1 + 0.03 * i)), "x", color=color, ms=6,
                    label=f"unstable ({s.replace('_', ' ')})")


def all_figures(pf_path, cmp_path, outdir, name: str, formats=("png",), dpi: int = 150) -> list:
    """Every figure :func:`figures` lists for example ``name``, in every format, into ``outdir``."""
    pf, cmp = read_netcdf(pf_path), read_netcdf(cmp_path)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    out = []
    with FIGURE_LOCK:
        for f in figures(name):
            out += globals()[f.kind.draw](pf, cmp, outdir / f.stem, name, formats, dpi)
    return out


def means(pf, cmp, stem, name, formats, dpi) -> list:
    """Mean response time and mean number of jobs against the restart rate: the product form with g*, the three
    simulated semantics with their CIs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g, tg = float(pf["g_star"]), float(pf["response_time_at_g_star"])
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    for ax, var, ylab in ((axes[0], "response_time", "mean response time E[T]"),
                          (axes[1], "mean_number", "mean number of jobs E[N]")):
        ax.plot(pf["signal_rate"].values, pf[var].values, "-", color="k", lw=1.2, label="product form (signal semantics)")
        top = np.nanmax([np.nanmax(pf[var].values), np.nanmax(cmp[var].values)])
        _sim(ax, cmp, var, unstable_y=top)
        ax.axvline(g, color="0.5", ls="--", lw=0.8)
        if var == "response_time":
            ax.plot([g], [tg], "*", color="crimson", ms=12, label=f"g* = {g:.4g}, E[T] = {tg:.4g}")
            for s in cmp["semantics"].values.tolist():  # the sweep's best rate of each semantics
                rb, tb = float(cmp["best_rate_response_time"].sel(semantics=s)), float(cmp["best_response_time"].sel(semantics=s))
                if np.isfinite(rb):
                    ax.plot([rb], [tb], "D", mfc="none", mec=STYLE.get(s, ("k",))[0], ms=10, mew=1.5,
                            label=f"smallest simulated mean, {s.replace('_', ' ')}: r = {rb:.3g}")
        ax.set_xscale("log")
        ax.set_xlabel("restart rate r")
        ax.set_ylabel(ylab)
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(f"{pf.attrs.get('model', name)[:160]}", fontsize=8)
    fig.tight_layout()
    handles, labels = axes[0].get_legend_handles_labels()  # below the panels: never over the data
    fig.legend(handles, labels, fontsize=7, loc="upper center", ncol=3, frameon=False, bbox_to_anchor=(0.5, 0.0))
    return save(fig, stem, formats, dpi)


def percentile(pf, cmp, stem, name, formats, dpi) -> list:
    """The response-time percentiles of the comparison against the restart rate, one panel per level."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = float(pf["g_star"])
    levels = cmp["percentile"].values.tolist()
    fig, axs = plt.subplots(1, len(levels), figsize=(6.5 * len(levels), 4.6), squeeze=False)
    for ax, level in zip(axs[0], levels):
        c = cmp.sel(percentile=level)
        vals = c["response_time_percentile"].values
        top = np.nanmax(vals) if np.isfinite(vals).any() else 1.0
        _sim(ax, c, "response_time_percentile", unstable_y=top)
        ax.axvline(g, color="0.5", ls="--", lw=0.8, label=f"g* = {g:.4g} (product form, mean)")
        ax.set_xscale("log")
        ax.set_ylim(bottom=0.0)
        ax.set_xlabel("restart rate r")
        ax.set_ylabel(f"{level:g}th percentile of the response time")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"{name}: tail of the response time", fontsize=9)
    fig.tight_layout()
    axs[0][0].legend(fontsize=7, loc="upper center", ncol=2, frameon=False, bbox_to_anchor=(0.5, -0.15))
    return save(fig, stem, formats, dpi)
