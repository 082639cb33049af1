"""The pipeline's figures of one example: mean response time and mean number of jobs vs restart rate
(product form line with g* marked, the three simulated semantics with CI bars, unstable points marked),
and the response-time percentile vs restart rate."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core.figures import FIGURE_LOCK, Figure, instance, log_ticks, save
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


def _title(pf, name) -> str:
    """The message of an example's figure (g*, its E[T] against no restart) over its model, wrapped (the model's
    signal rate λ⁻ is left out: the sweep varies it, and the stored model holds g*)."""
    import re
    import textwrap

    g, tg, t0 = float(pf["g_star"]), float(pf["response_time_at_g_star"]), float(pf["response_time_no_restart"])
    head = (f"{name}: restarting at the product form's optimum g* = {g:.3g} gives E[T] = {tg:.3g} model time units "
            f"against {t0:.3g} without restart ({100 * (tg - t0) / t0:+.0f}%)") if np.isfinite(t0) else \
        f"{name}: optimum g* = {g:.3g}, E[T] = {tg:.3g} model time units"
    model = re.sub(r"signals λ⁻=[^,]*, ", "", str(pf.attrs.get("model", "")))
    model = model.split(": ", 1)[1] if model.startswith(f"{name}: ") else model
    return head + ("\n" + "\n".join(textwrap.wrap(model, 170)) if model else "")


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
        log_ticks(ax.xaxis)
        ax.set_xlabel("restart rate r (per model time unit)")
        ax.set_ylabel(ylab)
        if var == "response_time":
            ax.set_ylabel(f"{ylab} (model time units)")
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.suptitle(_title(pf, name), fontsize=9, y=1.0, va="bottom")  # after the layout: no gap reserved under it
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
        log_ticks(ax.xaxis)
        ax.set_ylim(bottom=0.0)
        ax.set_xlabel("restart rate r (per model time unit)")
        ax.set_ylabel(f"{level:g}th percentile of the response time\n(model time units)")
        ax.grid(True, which="both", alpha=0.3)
        ax.set_title(f"{name}: the {level:g}th percentile of the response time against the restart rate; "
                     f"g* = {g:.3g} (dashed)", fontsize=9)
    fig.tight_layout()
    axs[0][0].legend(fontsize=7, loc="upper center", ncol=2, frameon=False, bbox_to_anchor=(0.5, -0.15))
    return save(fig, stem, formats, dpi)


def key_results(pf, cmp, stem, name: str) -> list:
    """The example's key result as a table (``<stem>.csv``/``.html``): g* and E[T] there against no restart
    (product form), and per simulated semantics the best swept rate (for deterministic timeouts: τ = 1/r), its
    E[T] ± CI and the gain over no restart."""
    from ..core.tables import write_table

    g, tg, t0 = float(pf["g_star"]), float(pf["response_time_at_g_star"]), float(pf["response_time_no_restart"])
    gain = (lambda t: f"{100 * (t - t0) / t0:+.1f}%" if np.isfinite(t0) and t0 > 0 and np.isfinite(t) else "—")
    rows = [["product form (signal semantics)", f"g* = {g:.4g}", f"{tg:.4g}", f"{t0:.4g}", gain(tg)]]
    for s in cmp["semantics"].values.tolist():
        rb = float(cmp["best_rate_response_time"].sel(semantics=s))
        tb = float(cmp["best_response_time"].sel(semantics=s))
        hw = cmp["best_response_time_half_width"].sel(semantics=s) if "best_response_time_half_width" in cmp else None
        at = (f"τ = 1/r = {1 / rb:.4g}" if s == "timeout_deterministic" else f"r = {rb:.4g}") if np.isfinite(rb) else "—"
        rows.append([STYLE.get(s, (None, None, s))[2], at,
                     f"{tb:.4g}" + (f" ± {float(hw):.2g}" if hw is not None and np.isfinite(float(hw)) else ""),
                     f"{t0:.4g}", gain(tb)])
    notes = [f"{name}: mean response time E[T] in the model's time units. Product form: the optimal signal rate g* "
             "and E[T] there against no restart (r → 0). Simulation: the swept rate with the smallest simulated "
             "mean under each semantics (for deterministic timeouts the timeout τ = 1/r), its CI, and the change "
             "against the product form's E[T] without restart (negative = restart helps)."]
    return write_table(stem, f"{name}: the best restart rate and what it gains",
                       ["", "best rate", "E[T] there", "E[T] without restart", "change"], rows, notes)
