"""Figures of the split-merge experiments (matplotlib, Agg): one function per figure, saved in every format.

(a) ``experiment_a_latency``: the latency CDF (pooled simulation vs the exact M/PH/1 law) and the mean and
    percentiles, exact beside simulated with their CIs (at the section's comparison.confidence).
(b) ``experiment_b_heatmap``: mean latency over (r, q): exact, simulated (± CI), and their relative difference.
(c) ``experiment_c_<law>``: mean and 99th-percentile latency vs r per q with CIs (split-merge solid, fork-join
    dashed), exact values as markers (Erlang C for q = 1 with exponential replicas drawn as a curve).
"""
from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..core import phase_type as ph  # noqa: E402
from ..core.figures import Figure, instance, log_ticks, save, serialized  # noqa: E402
from ..core.io import read_netcdf  # noqa: E402
from ..core.stats import cdf_from_histogram  # noqa: E402
from .model import TIME_UNITS, SplitMerge  # noqa: E402
from .order_stats import order_statistic_ph  # noqa: E402
from .solve import UniformizedSF, mph1_delay_ph  # noqa: E402

#: every figure of the study, declared once: the workflow's outputs and report captions come from here
#: (:func:`figures`), and the figure job draws exactly these (:func:`all_figures`)
FIGURES = (
    Figure("experiment_a_latency", "experiment_a_latency", "figure_a"),
    Figure("experiment_b_heatmap", "experiment_b_heatmap", "figure_b"),
    Figure("experiment_c_{law}", "experiment_c", "figure_c"),
)


def figures(cfg: dict) -> list:
    """The figures (:class:`sojourn.core.figures.FigureFile`) of the enabled experiments of the study's config
    section: (a), (b), and one (c) figure per replica law."""
    from .config import laws

    out = []
    for f in FIGURES:
        x = f.draw[-1]  # figure_a -> experiment a
        e = cfg[f"experiment_{x}"]
        if not e.get("enabled", True):
            continue
        out += [instance(f, law=name) for name in laws(e)] if "{law}" in f.stem else [instance(f)]
    return out


def _level(ds) -> str:
    """The CI level of an experiment file, as "95%" (its ``confidence`` attribute; files of an earlier release: 99%)."""
    return f"{100 * float(ds.attrs.get('confidence', 0.99)):g}%"


# ---------------------------------------------------------------------------------------------
def figure_a(path, stem, formats=("png", "pdf"), dpi=130):
    ds = read_netcdf(path)
    c = ds.isel(law=0, quorum=0, replicas=0).sel(model="split_merge")
    e = json.loads(ds.attrs["config"])["settings"]
    spec = SplitMerge.from_load(e["hosts"], e["replicas"], e["quorum"], e["load"], e["replica_law"])
    dt = float(ds.attrs["dt"])
    t = ds["t"].values + dt
    F = cdf_from_histogram(c["latency_count"].values, c["latency_overflow"].values)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
    n = int(c["replications_used"]) if "replications_used" in c else ds.sizes["replication"]
    a1.plot(t, 1 - F, color="k", lw=1.6, label=f"simulation (pooled, {n} replications)")
    if int(c["is_exact"]) and spec.super_servers == 1 and order_statistic_ph(spec.replica_law, spec.quorum,
                                                                              spec.replicas) is not None:
        beta, B = order_statistic_ph(spec.replica_law, spec.quorum, spec.replicas)
        wa, wT = mph1_delay_ph(spec.arrival_rate, beta, B)
        la, lT = ph.convolution(wa, wT, beta, B)
        sf = UniformizedSF(la, lT)
        tt = t[:: max(1, len(t) // 400)]
        a1.plot(tt, [sf(x) for x in tt], color="tab:red", ls="--", lw=1.4, label="exact (M/PH/1 latency law)")
    a1.set_yscale("log")
    a1.set_ylim(1e-4, 1.2)
    hi = float(c["sim_latency_percentile"].max()) * 1.6
    a1.set_xlim(0, hi if np.isfinite(hi) else t[-1])
    a1.set_xlabel(f"latency t ({TIME_UNITS})")
    a1.set_ylabel("P(latency > t)")
    a1.legend(fontsize=8)
    a1.set_title("latency tail", fontsize=10)
    labels = ["mean"] + [f"p{100 * p:g}" for p in ds["percentile"].values]
    sim = np.concatenate([[float(c["sim_mean_latency"])], c["sim_latency_percentile"].values])
    hw = np.concatenate([[float(c["sim_mean_latency_hw"])], c["sim_latency_percentile_hw"].values])
    ex = np.concatenate([[float(c["exact_mean_latency"])], c["exact_latency_percentile"].values])
    x = np.arange(len(labels))
    a2.errorbar(x - 0.08, sim, yerr=hw, fmt="o", color="k", capsize=4, label=f"simulation ± {_level(ds)} CI")
    a2.plot(x + 0.08, ex, "D", color="tab:red", label="exact")
    a2.set_xticks(x, [f"{lab}\nexact {e_:.4g}\nsim {s_:.4g}\n±{h_:.2g}" for lab, s_, h_, e_ in zip(labels, sim, hw, ex)],
                  fontsize=7.5)
    a2.set_xlim(-0.5, len(labels) - 0.2)
    a2.set_ylabel(f"latency ({TIME_UNITS})")
    a2.legend(fontsize=8, loc="upper left")
    a2.set_title("mean and percentiles, exact vs simulated", fontsize=10)
    inside = np.abs(sim - ex) <= hw
    verdict = (f"the exact value lies inside the simulated {_level(ds)} CI for {int(inside.sum())} of {int(np.isfinite(ex).sum())} "
               "statistics" if np.isfinite(ex).any() else "no exact value for this law")
    fig.suptitle(f"(a) latency of one split-merge system, exact against simulated: {verdict}\n{spec.describe()}",
                 fontsize=9, y=1.0, va="bottom")
    return save(fig, stem, formats, dpi)


def figure_b(path, stem, formats=("png", "pdf"), dpi=130):
    ds = read_netcdf(path).isel(law=0).sel(model="split_merge")
    rs, qs = ds["replicas"].values, ds["quorum"].values
    ex = ds["exact_mean_latency"].values  # (quorum, replicas)
    sim, hw = ds["sim_mean_latency"].values, ds["sim_mean_latency_hw"].values
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = 100 * (sim - ex) / ex
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    fig.subplots_adjust(wspace=0.35, top=0.95)
    vmin, vmax = np.nanmin([np.nanmin(ex) if np.isfinite(ex).any() else np.nan, np.nanmin(sim)]), np.nanmax(
        [np.nanmax(ex) if np.isfinite(ex).any() else np.nan, np.nanmax(sim)])
    from matplotlib.colors import LogNorm

    for ax, vals, title in ((axes[0], ex, "exact mean latency"), (axes[1], sim, f"simulated mean latency ± {_level(ds)} CI")):
        im = ax.imshow(vals, origin="lower", cmap="viridis", norm=LogNorm(vmin, vmax), aspect="auto")
        for i in range(len(qs)):
            for j in range(len(rs)):
                if qs[i] > rs[j]:
                    continue
                v = vals[i, j]
                txt = "—" if not np.isfinite(v) else (f"{v:.3g}" if vals is ex else f"{v:.3g}\n±{hw[i, j]:.2g}")
                ax.text(j, i, txt, ha="center", va="center", fontsize=7, color="w")
        cb = fig.colorbar(im, ax=ax, shrink=0.85, label=f"mean latency\n({TIME_UNITS})")
        log_ticks(cb.ax.yaxis)
        ax.set_title(title, fontsize=10)
    lim = np.nanmax(np.abs(rel)) if np.isfinite(rel).any() else 1.0
    im = axes[2].imshow(rel, origin="lower", cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
    for i in range(len(qs)):
        for j in range(len(rs)):
            if qs[i] <= rs[j] and np.isfinite(rel[i, j]):
                inside = abs(sim[i, j] - ex[i, j]) <= hw[i, j]
                axes[2].text(j, i, f"{rel[i, j]:+.2f}%\n{'in CI' if inside else 'OUT'}", ha="center", va="center",
                             fontsize=7)
    fig.colorbar(im, ax=axes[2], shrink=0.85, label="relative difference (%)")
    axes[2].set_title(f"(sim − exact)/exact; exact inside the {_level(ds)} CI?", fontsize=10)
    for ax in axes:
        ax.set_xticks(range(len(rs)), rs)
        ax.set_yticks(range(len(qs)), qs)
        ax.set_xlabel("replicas r")
        ax.set_ylabel("quorum q")
    e = json.loads(ds.attrs["config"])["settings"]
    n = "n = r" if e["hosts"] is None else f"n = {e['hosts']}"
    cells = np.isfinite(rel)
    inside = int((np.abs(sim - ex) <= hw)[cells].sum())
    i, j = np.unravel_index(np.nanargmin(sim), sim.shape)
    fig.suptitle(f"(b) mean latency over (r, q): lowest at r = {rs[j]}, q = {qs[i]}; exact inside the simulated "
                 f"{_level(ds)} CI in {inside} of {int(cells.sum())} cells\n{n}, load {e['load']}, replicas "
                 f"{e['replica_law']}", fontsize=9, y=1.0, va="bottom")
    return save(fig, stem, formats, dpi)


def figure_c(path, law, stem, formats=("png", "pdf"), dpi=130, percentile=0.99):
    full = read_netcdf(path)
    ds = full.sel(law=law)
    rs, qs = ds["replicas"].values, ds["quorum"].values
    pi = int(np.argmin(np.abs(ds["percentile"].values - percentile)))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.4), sharex=True)
    fig.subplots_adjust(wspace=0.28, top=0.97)
    colors = plt.get_cmap("tab10")
    for qi, q in enumerate(qs):
        col = colors(qi)
        for model in ds["model"].values:
            d = ds.sel(model=model, quorum=q)
            ok = np.isfinite(d["sim_mean_latency"].values)
            ls, mk = ("-", "o") if model == "split_merge" else ("--", "s")
            lab = f"q={q} {'split-merge' if model == 'split_merge' else 'fork-join'} (sim ± {_level(ds)} CI)"
            a1.errorbar(rs[ok], d["sim_mean_latency"].values[ok], yerr=d["sim_mean_latency_hw"].values[ok], ls=ls,
                        marker=mk, ms=3.5, color=col, capsize=2.5, lw=1.1, label=lab)
            pv, ph_ = d["sim_latency_percentile"].values[:, pi], d["sim_latency_percentile_hw"].values[:, pi]
            okp = np.isfinite(pv)
            a2.errorbar(rs[okp], pv[okp], yerr=ph_[okp], ls=ls, marker=mk, ms=3.5, color=col, capsize=2.5, lw=1.1)
        d = ds.sel(model="split_merge", quorum=q)
        meth = d["exact_method"].values
        exm = d["exact_mean_latency"].values
        # exact_method codes: experiments.EXACT_METHODS
        for code, (marker, name) in {2: ("*", "Erlang C"), 3: ("x", "QBD (exact M/PH/c)"),
                                     1: ("D", "P-K")}.items():
            sel = meth == code
            if sel.any():
                style = dict(color=col, ms=9 if code == 2 else 7, mew=1.5)
                if code == 2:  # the Erlang C curve of q = 1, exponential replicas
                    a1.plot(rs[sel], exm[sel], ":", marker=marker, label=f"q={q} exact ({name})", **style)
                    ep = d["exact_latency_percentile"].values[:, pi]
                    a2.plot(rs[sel], ep[sel], ":", marker=marker, label=f"q={q} exact ({name})", **style)
                else:
                    a1.plot(rs[sel], exm[sel], ls="none", marker=marker, label=f"q={q} exact ({name})", **style)
    for ax in (a1, a2):
        ax.set_yscale("log")
        log_ticks(ax.yaxis)
        ax.set_xlabel("replicas r")
        ax.set_xticks(rs)
        ax.grid(alpha=0.3, which="both")
    a1.set_ylabel(f"mean latency ({TIME_UNITS})")
    a2.set_ylabel(f"{100 * ds['percentile'].values[pi]:g}th percentile of latency\n({TIME_UNITS})")
    from matplotlib.lines import Line2D

    names = {2: ("*", "exact (Erlang C, q = 1)"), 3: ("x", "exact (QBD, M/PH/c)"), 1: ("D", "exact (P-K)")}
    codes = ds.sel(model="split_merge")["exact_method"].values
    used = sorted({int(v) for v in np.unique(codes[np.isfinite(codes)]) if int(v) in names})
    handles = [Line2D([], [], color=colors(qi), lw=2) for qi in range(len(qs))]
    labels = [f"quorum q = {q}" for q in qs]
    handles += [Line2D([], [], color="0.3", ls="-", marker="o", ms=3.5),
                Line2D([], [], color="0.3", ls="--", marker="s", ms=3.5)]
    labels += [f"split-merge (simulation ± {_level(ds)} CI)", f"fork-join (simulation ± {_level(ds)} CI)"]
    handles += [Line2D([], [], color="0.3", ls="none", marker=names[c][0], ms=8, mew=1.5) for c in used]
    labels += [names[c][1] for c in used]
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=4, fontsize=8, frameon=False)
    hosts = int(np.nanmax(ds["hosts"].values))
    e = json.loads(full.attrs["config"])["settings"]
    law_str = json.loads(full.attrs["law_strings"])[law]
    sm = ds.sel(model="split_merge")["sim_mean_latency"].transpose("quorum", "replicas").values
    lowest = {}
    for qi, q in enumerate(qs):
        if np.isfinite(sm[qi]).any():
            lowest.setdefault(int(rs[int(np.nanargmin(sm[qi]))]), []).append(str(q))
    where = "; ".join(f"r = {r} for q = {', '.join(q)}" for r, q in lowest.items())
    fig.suptitle(f"(c) latency against the number of replicas r, one colour per quorum q: lowest simulated mean "
                 f"latency of split-merge at {where}\nn = {hosts}, load {e['load']} per super-server, replicas {law_str}", fontsize=9,
                 y=1.0, va="bottom")
    return save(fig, stem, formats, dpi)


@serialized
def all_figures(inputs: dict, figdir, cfg: dict, formats=("png", "pdf"), dpi=130) -> list[Path]:
    """Every figure :func:`figures` lists for the study's config section ``cfg`` whose experiment is in ``inputs``
    ('a' | 'b' | 'c' → result file)."""
    figdir = Path(figdir)
    out = []
    for f in figures(cfg):
        x = f.kind.draw[-1]
        if x not in inputs:
            continue
        draw = globals()[f.kind.draw]
        if "law" in f.fields:
            out += draw(inputs[x], f.fields["law"], figdir / f.stem, formats, dpi)
        else:
            out += draw(inputs[x], figdir / f.stem, formats, dpi)
    return out


# ---------------------------------------------------------------------------------------------
def key_results(inputs: dict, stem) -> list:
    """The study's key result as a table (``<stem>.csv``/``.html``): for each experiment with a (r, q) sweep
    ((b), and (c) per replica law) and each quorum q, the number of replicas r with the lowest simulated mean
    latency of split-merge, its mean (exact where known, simulated ± CI) and 99th percentile; the best (r, q) of
    the experiment marked."""
    from ..core.tables import write_table

    rows = []
    level = None
    for x in ("b", "c"):
        if x not in inputs:
            continue
        full = read_netcdf(inputs[x])
        level = _level(full)
        law_strings = json.loads(full.attrs.get("law_strings", "{}"))
        for law in full["law"].values.tolist():
            ds = full.sel(law=law, model="split_merge")
            pct = ds["percentile"].values
            pi = int(np.argmin(np.abs(pct - 0.99)))
            sim = ds["sim_mean_latency"].transpose("quorum", "replicas").values
            best_all = np.unravel_index(np.nanargmin(sim), sim.shape) if np.isfinite(sim).any() else None
            for i, q in enumerate(ds["quorum"].values):
                if not np.isfinite(sim[i]).any():
                    continue
                j = int(np.nanargmin(sim[i]))
                d = ds.isel(quorum=i, replicas=j)
                ex = float(d["exact_mean_latency"])
                p99 = d["sim_latency_percentile"].values[pi]
                rows.append([f"({x})", law_strings.get(law, law), int(q), int(ds["replicas"].values[j]),
                             f"{ex:.4g}" if np.isfinite(ex) else "—",
                             f"{float(d['sim_mean_latency']):.4g} ± {float(d['sim_mean_latency_hw']):.2g}",
                             f"{p99:.4g}" if np.isfinite(p99) else "—",
                             "best (r, q)" if best_all is not None and best_all == (i, j) else ""])
    header = ["experiment", "replica law", "quorum q", "best r", "mean latency, exact",
              f"mean latency, simulated ± {level or '95%'} CI", "99th percentile, simulated", ""]
    notes = ["Latency in time units of the replica law. For each quorum q, the number of replicas r (of the "
             "experiment's sweep) with the lowest simulated mean latency of split-merge; 'best (r, q)' marks the "
             "lowest of the experiment. Exact values: P-K, Erlang C or the M/PH/c QBD where they exist (— otherwise)."]
    return write_table(stem, "Best replication (r, q) per quorum", header, rows, notes)
