"""The pipeline's figures of the restart study, per example: mean response time and mean number of jobs vs restart
rate (the product form's line with g* marked, the three simulated semantics with CI bars), and the response-time
percentile vs restart rate; each saved with its caption (``<stem>.rst``, :class:`sojourn.core.present.claims.Caption`)
written from the data it draws. Points without a value — a run stopped as unstable, a run the run-length guard judged
too short, a percentile with fewer than 100 jobs per replication beyond it — are marked in a strip above the panel,
never drawn at a y."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..core.estimates.reference import rule_words
from ..core.estimates.stats import TAIL_MIN
from ..core.files.io import read_netcdf
from ..core.present.claims import Caption, Claim, Query, listing, sig_tol
from ..core.present.figures import (
    ESTIMATE_TOO_SHORT,
    FIGURE_LOCK,
    REFERENCE_TOO_SHORT,
    Figure,
    instance,
    log_ticks,
    save,
    status_handles,
    status_strip,
)

STYLE = {"signal": ("C0", "o", "simulation, signal semantics (g = r)"),
         "timeout_exponential": ("C1", "s", "simulation, exponential timeouts (rate r)"),
         "timeout_deterministic": ("C2", "^", "simulation, deterministic timeouts (tau = 1/r)")}
NAMES = {"signal": "signals", "timeout_exponential": "exponential timeouts", "timeout_deterministic":
         "deterministic timeouts"}
RULE = rule_words("jobs")
#: the legend's entry for the ▼ of each semantics' best rate (its row of the status strip), "{}": of what
BEST_LABEL = "▼ in the strip above the panel, in each semantics' row and colour: the rate of its {}"
#: the legend's entry for the bar through a ▼ (:func:`_best_marks`)
WITHIN_LABEL = "bar through a ▼: the rates whose CI reaches that value (within CI: the sweep cannot tell them apart)"

#: every figure of the study, declared once: the workflow's outputs and report captions come from here
#: (:func:`figures`), and the figure job draws exactly these (:func:`all_figures`)
FIGURES = (
    Figure("{example}_means", "means"),
    Figure("{example}_percentile", "percentile"),
)


def figures(example: str) -> list:
    """The figures (:class:`sojourn.core.present.figures.FigureFile`) of one example of the sweep."""
    return [instance(f, example=example) for f in FIGURES]


def _g(x, digits=3) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{float(f'{x:.{digits}g}'):g}"


def _status(cmp, var):
    """(semantics, rate): 'unstable' where a replication was stopped, 'too_short' where the run-length guard judged
    the point too short (or, for a percentile, too few jobs lie beyond it), '' where the value may be drawn."""
    m = cmp[var].values
    stopped = cmp["replications_stable"].values < (cmp["replications_used"].values if "replications_used" in cmp
                                                   else cmp["replications_stable"].values.max())
    short = cmp["run_valid"].values == 0 if "run_valid" in cmp else np.zeros(m.shape[:2], bool)
    if m.ndim == 3:
        stopped, short = stopped[..., None], short[..., None]
        if f"{var}_too_few" in cmp:
            short = short | (cmp[f"{var}_too_few"].values != 0)
    return np.where(stopped, "unstable", np.where(short | ~np.isfinite(m), "too_short", ""))


#: how each semantics' markers differ, since all three sit at the same (true) rate: signals filled and small on
#: top (they must lie on the product form's line), the timeouts open and larger around them — never shifted along r
MARKER = {"signal": {"ms": 4.5, "mfc": None, "zorder": 6},
          "timeout_exponential": {"ms": 7.0, "mfc": "none", "zorder": 5},
          "timeout_deterministic": {"ms": 9.0, "mfc": "none", "zorder": 4}}


def _marker_kw(s: str, color) -> dict:
    kw = dict(MARKER.get(s, {"ms": 7, "mfc": "none", "zorder": 4}))
    if kw["mfc"] is None:
        kw["mfc"] = color
    return kw


def _sim(ax, strip, cmp, var, status, estimate=False, join=False):
    """The simulated points of each semantics at their true rate (told apart by marker, filled or open:
    :data:`MARKER`) with their CIs; points without a value in the strip: ✕ unstable, ◇ too short (``estimate``: the
    value is the simulation's own estimate, not a reference); ``join``: a thin line through each semantics' points
    in its colour (where no model curve is drawn to follow)."""
    r = cmp["restart_rate"].values
    sems = cmp["semantics"].values.tolist()
    short = ESTIMATE_TOO_SHORT.key if estimate else REFERENCE_TOO_SHORT.key
    for i, s in enumerate(sems):
        color, marker, label = STYLE.get(s, ("k", "x", s))
        m, h = cmp[var].values[i], cmp[f"{var}_half_width"].values[i]
        ok = status[i] == ""
        kw = _marker_kw(s, color)
        ax.errorbar(r[ok], m[ok], yerr=h[ok], fmt=marker, color=color, mec=color, capsize=2 + i, lw=1.0, mew=1.2,
                    label=label if ok.any() else None, **kw)
        # the CI once more on top, its caps wider than the marker: a tiny CI shows as caps beside an open marker,
        # not as nothing inside it
        ax.errorbar(r[ok], m[ok], yerr=h[ok], fmt="none", ecolor=color, capsize=kw["ms"] / 2 + 2.5, lw=1.0,
                    capthick=1.0, zorder=kw["zorder"] + 0.5)
        if join and ok.sum() > 1:
            ax.plot(r[ok], m[ok], color=color, lw=0.8, alpha=0.55, zorder=1)
        strip.mark(s, r, status[i] == "unstable", "unstable", color, NAMES.get(s, s))
        strip.mark(s, r, status[i] == "too_short", short, color, NAMES.get(s, s))


def _best_marks(strip, r_best: dict, reach: dict) -> tuple[bool, bool]:
    """In the status strip above the panel (one row per semantics, named and coloured as its ✕/◇), a ▼ at each
    semantics' best rate (true r): the rate of the sweep's smallest simulated value, and a bar through it over the
    rates ``reach[s]`` whose CI reaches that value (where there are others: the caption's "within its CI"). Marked
    first, in semantics order, so the rows keep one order in every figure; never at a y of the panel's data. Returns
    whether any ▼, any bar was drawn."""
    drawn = spans = False
    for s, rb in r_best.items():
        if np.isfinite(rb):
            color = STYLE.get(s, ("k",))[0]
            drawn |= strip.mark(s, [rb], [True], "best_rate", color, NAMES.get(s, s))
            if len(reach.get(s, [])) > 1:
                strip.span(s, min(reach[s]), max(reach[s]), color)
                spans = True
    return drawn, spans


def _best_legend(handles, labels, best: bool, spans: bool, what: str) -> None:
    """The legend's entries for the strip's ▼ (the rate of each semantics' ``what``) and its bars."""
    from matplotlib.lines import Line2D

    from ..core.present.figures import SPAN_STYLE

    if best:
        handles.append(Line2D([], [], ls="none", marker="v", ms=7, color="0.3"))
        labels.append(BEST_LABEL.format(what))
    if spans:
        handles.append(Line2D([], [], color="0.3", **{k: v for k, v in SPAN_STYLE.items() if k != "zorder"}))
        labels.append(WITHIN_LABEL)


def _g_star_label(ax, g, text="g*") -> None:
    """The dashed g* line's name in the plot, at its top (the optimum's star sits low; the legend says more): right
    of the line in the panel's left half, left of it in its right half, so that it stays inside the axes (round 15:
    "g* (optimum of the mean)" spilled out of the box). Call it once the x axis has its scale and data."""
    ax.get_xlim()  # the limits autoscaled now: where the line falls in the panel
    left = ax.transAxes.inverted().transform(ax.transData.transform((g, 1.0)))[0] > 0.55
    ax.annotate(text, xy=(g, 1.0), xycoords=("data", "axes fraction"), xytext=(-3 if left else 3, -4),
                textcoords="offset points", ha="right" if left else "left", va="top", fontsize=8.5, color="0.3",
                bbox={"facecolor": "w", "edgecolor": "none", "alpha": 0.8, "pad": 0.5})


def describe_plainly(pf) -> str:
    """The example's model in plain words (from the stored spec): its servers, arrivals, service laws and where a
    restart sends a job; the signal rate is left out (the sweep varies it)."""
    import json

    try:
        spec = json.loads(pf.attrs["spec"])
    except (KeyError, ValueError):
        return ""
    parts = []
    for q in spec.get("queues", []):
        classes = q.get("classes", [])
        means, scvs, phases = [], [], set()
        for c in classes:
            sv = c["service"]
            rates = np.asarray(sv["rates"], float)
            H = np.asarray(sv.get("H") or np.zeros((rates.size, rates.size)), float)
            entry = np.asarray(sv.get("entry") or [1.0] + [0.0] * (rates.size - 1), float)
            m1 = np.linalg.solve(np.eye(rates.size) - H, 1.0 / rates)  # (−T)⁻¹1, T = diag(rates)(H − I)
            means.append(float(entry @ m1))
            # E[S²] = 2 β(−T)⁻²1: the SCV says why restart helps (it cuts the long services of a law with SCV > 1)
            scvs.append(2 * float(entry @ np.linalg.solve(np.eye(rates.size) - H, m1 / rates)) / means[-1] ** 2 - 1)
            phases.add(rates.size)
        ph = "/".join(str(k) for k in sorted(phases))
        arrivals = [(c["name"], float(c["arrival_rate"])) for c in classes if float(c["arrival_rate"]) > 0]
        arr = ", ".join(f"{lam:g}" + (f" (class {n})" if len(classes) > 1 else "") for n, lam in arrivals)
        if len(classes) == 1:
            lam0 = sum(lam for _, lam in arrivals)
            parts.append(f"one processor-sharing server; jobs arrive at rate {arr}; service time: a {ph}-phase law of "
                         f"mean {means[0]:.3g}, SCV {scvs[0]:.2g} (load without restart λ E[S] = "
                         f"{lam0 * means[0]:.2g}); a restarted job begins its service anew")
        else:
            moves = all(list(c.get("restart_to", {})) in ([classes[min(k + 1, len(classes) - 1)]["name"]],)
                        for k, c in enumerate(classes))
            parts.append(f"one processor-sharing server; jobs arrive at rate {arr}; classes "
                         f"{classes[0]['name']}–{classes[-1]['name']} with mean service times "
                         + ", ".join(f"{m:.2g}" for m in means) + f" ({ph}-phase laws)"
                         + ("; a restart moves a job on to the next class" if moves
                            else "; a restart changes its class"))
    return "; ".join(parts)


def _beating(pf, cmp) -> list:
    """(semantics, its smallest simulated mean, its CI half-width, its rate) of each simulated semantics other than
    signals whose smallest mean lies below the product form's E[T] at g* beyond its CI: it beats g*."""
    tg = float(pf["response_time_at_g_star"])
    out = []
    for s in cmp["semantics"].values.tolist():
        tb, hb = (float(cmp[v].sel(semantics=s)) for v in ("best_response_time", "best_response_time_half_width"))
        if s != "signal" and np.isfinite(tb) and np.isfinite(tg) and tb + (hb if np.isfinite(hb) else 0.0) < tg:
            out.append((s, tb, hb, float(cmp["best_rate_response_time"].sel(semantics=s))))
    return out


def _below_signals(cmp) -> list:
    """(semantics, its usable rates, those where its simulated mean lies below the product form's E[T] (the signals'
    model) at that rate beyond its CI, the largest gain there in %) of each timeout semantics below it at some rate."""
    if "response_time_pf" not in cmp:
        return []
    st, pfv, r = _status(cmp, "response_time"), cmp["response_time_pf"].values, cmp["restart_rate"].values
    out = []
    for i, s in enumerate(cmp["semantics"].values.tolist()):
        m, h = cmp["response_time"].values[i], cmp["response_time_half_width"].values[i]
        ok = (st[i] == "") & np.isfinite(m) & np.isfinite(pfv)
        below = ok & (m + np.where(np.isfinite(h), h, 0.0) < pfv)
        if s != "signal" and below.any():
            out.append((s, [float(x) for x in r[ok]], [float(x) for x in r[below]],
                        float(np.max(100 * (pfv - m)[below] / pfv[below]))))
    return out


def _below_words(s, usable, below, gain, short=False) -> str:
    """Where a timeout semantics lies below the product form (:func:`_below_signals`), in words (``short``: the
    title's)."""
    at = (f"every rate r ≤ {_g(max(below))}" if len(below) > 1 and below == [x for x in usable if x <= max(below)] else
          f"r = {listing([_g(x) for x in below])}")
    by = f"by up to {gain:.0f}%" if len(below) > 1 else f"by {gain:.0f}%"
    if short:  # a sentence of its own in the title (round 26: "below …: exponential timeouts at …" read awkwardly)
        return f"{NAMES.get(s, s)} lie below the product form (signals), beyond the CI, at {at} ({by})"
    return (f"{NAMES.get(s, s)} lie below the product form (signals) beyond the CI at {at} ({len(below)} of the "
            f"{len(usable)} rates with a value), {by}")


def _title(pf, name, cmp=None) -> str:
    """The message of an example's figure (g*, its E[T] against no restart; which timeouts beat g*, from ``cmp``)
    over its model in plain words."""
    import textwrap

    g, tg, t0 = float(pf["g_star"]), float(pf["response_time_at_g_star"]), float(pf["response_time_no_restart"])
    head = (f"{name}: restarting at the product form's optimum g* = {g:.3g} gives E[T] = {tg:.3g} model time units "
            f"against {t0:.3g} without restart ({100 * (tg - t0) / t0:+.0f}%)") if np.isfinite(t0) else \
        f"{name}: optimum g* = {g:.3g}, E[T] = {tg:.3g} model time units"
    beat = _beating(pf, cmp) if cmp is not None else []
    if beat:
        head += "\n" + "; ".join(f"{NAMES.get(s, s)} beat g*: {_g(tb)} at r = {_g(rb)}, below {_g(tg)} beyond the CI"
                                 for s, tb, _, rb in beat)
    if cmp is not None:
        # the headline names a semantics below the signals at most of its rates (example 2's exponential timeouts);
        # a few rates below (example 1) are the caption's, with the title at five lines otherwise
        below = [_below_words(*b, short=True) for b in _below_signals(cmp) if 2 * len(b[2]) > len(b[1])]
        head += ("\n" + "; ".join(below)) if below else ""
    model = re.sub(r"\([^()]*\)", lambda m: m.group(0).replace(" ", "\u00a0"), describe_plainly(pf))
    # no line break inside a parenthesis (round 16: "(load without restart / λ E[S] = …)"): its spaces are kept
    # from textwrap, which breaks at ASCII whitespace only, then given back
    lines = [ln.replace("\u00a0", " ") for ln in textwrap.wrap(model, 120)]
    return head + ("\n" + "\n".join(lines) if lines else "")


def all_figures(pf_path, cmp_path, outdir, name: str, formats=("png",), dpi: int = 150) -> list:
    """Every figure :func:`figures` lists for example ``name``, in every format, with its caption, into ``outdir``."""
    pf, cmp = read_netcdf(pf_path), read_netcdf(cmp_path)
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    out = []
    with FIGURE_LOCK:
        for f in figures(name):
            out += globals()[f.kind.draw](pf, cmp, outdir / f.stem, name, formats, dpi)
    return out


def _reach(cmp, i, var="response_time", st=None):
    """The restart rates whose CI reaches the smallest simulated value of semantics ``i`` (usable points only:
    ``st``, its row of :func:`_status`, where ``cmp`` is one level of a percentile)."""
    st = _status(cmp, var)[i] if st is None else st
    m, h = cmp[var].values[i], cmp[f"{var}_half_width"].values[i]
    ok = (st == "") & np.isfinite(m)
    if not ok.any():
        return []
    b = int(np.nanargmin(np.where(ok, m, np.inf)))
    hb = h[b] if np.isfinite(h[b]) else 0.0
    r = cmp["restart_rate"].values
    return [float(r[k]) for k in np.nonzero(ok & (m - np.where(np.isfinite(h), h, 0.0) <= m[b] + hb))[0]]


def means(pf, cmp, stem, name, formats, dpi) -> list:
    """Mean response time against the restart rate: the product form with g*, the mean without restart, the three
    simulated semantics with their CIs (at their true r), the smallest simulated mean of each semantics. (E[N] = λ E[T]
    by Little's law: comparison.nc holds it, the figure does not repeat it.)"""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    g, tg, t0 = (float(pf[v]) for v in ("g_star", "response_time_at_g_star", "response_time_no_restart"))
    fig, ax = plt.subplots(figsize=(9.0, 5.2))
    var = "response_time"
    strip = status_strip(ax)
    ax.plot(pf["signal_rate"].values, pf[var].values, "-", color="k", lw=1.4, label="product form (signal semantics)",
            zorder=3)
    if np.isfinite(t0):
        ax.axhline(t0, color="0.35", ls=":", lw=1.3, label=f"no restart: E[T] = {t0:.3g}", zorder=2)
    r_best = {s: float(cmp["best_rate_response_time"].sel(semantics=s)) for s in cmp["semantics"].values.tolist()}
    sems = cmp["semantics"].values.tolist()
    best, spans = _best_marks(strip, r_best, {s: _reach(cmp, i) for i, s in enumerate(sems)})
    _sim(ax, strip, cmp, var, _status(cmp, var))
    _ring_missed(ax, cmp, _status(cmp, var))
    ax.axvline(g, color="0.5", ls="--", lw=0.8, label="g* (dashed)")
    ax.plot([g], [tg], "*", color="crimson", ms=14, label=f"g* = {g:.4g}: the product form's optimum", zorder=6)
    ax.set_xscale("log")
    log_ticks(ax.xaxis)
    _g_star_label(ax, g)
    ax.set_xlabel("restart rate r (per model time unit)")
    ax.set_ylabel("mean response time E[T] (model time units)")
    ax.grid(True, which="both", alpha=0.3)
    title = "mean response time against the restart rate"
    strip.finish(title=title, fontsize=10, label_size=8.5, row_pt=11, series_color=True)
    fig.tight_layout()
    fig.suptitle(_title(pf, name, cmp), fontsize=9, y=1.0, va="bottom")
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], ls="none"))
    labels.append("the three semantics run at the same rates: markers at their true r")
    _best_legend(handles, labels, best, spans, "smallest simulated mean")
    sh, sl = status_handles(strip.kinds - {"best_rate"})
    fig.legend(handles + sh, _wrapped(labels + sl), fontsize=7.5, loc="upper center", ncol=2, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    return save(fig, stem, formats, dpi, caption=_means_caption(pf, cmp, name))


#: a legend entry's longest line (characters): two columns within the axes' width (round 26: the longest entries set
#: the figure's width and left a third of it blank)
_LEGEND_CHARS = 58


def _wrapped(labels) -> list:
    """The legend's labels, each broken into lines of at most _LEGEND_CHARS characters."""
    import textwrap

    return [textwrap.fill(t, _LEGEND_CHARS) for t in labels]


def _missed(cmp, st) -> list:
    """The rates (usable points, ``st``: :func:`_status`) where the signals' simulated CI misses the product form."""
    sems = cmp["semantics"].values.tolist()
    if "signal" not in sems or "response_time_covered" not in cmp:
        return []
    i = sems.index("signal")
    miss = (st[i] == "") & (cmp["response_time_covered"].values[i] == 0)
    return [float(r) for r in cmp["restart_rate"].values[miss]]


def _ring_missed(ax, cmp, st) -> None:
    """A red ring around each signals' point whose CI misses the product form (the caption's "covers it at k of n
    rates": which one misses), named in the legend with its count."""
    missed = _missed(cmp, st)
    if missed:
        i = cmp["semantics"].values.tolist().index("signal")
        at = np.isin(cmp["restart_rate"].values, missed)
        ax.plot(cmp["restart_rate"].values[at], cmp["response_time"].values[i][at], ls="none", marker="o", ms=13,
                mfc="none", mec="crimson", mew=1.6, zorder=7,
                label=f"ringed: the signals' CI misses the product form ({len(missed)} of "
                      f"{int((st[i] == '').sum())} rates; ≈ 1 in 20 expected by chance at 95%)")


def _means_caption(pf, cmp, name) -> Caption:
    pfs, cs = f"{name}/product_form.nc", f"{name}/comparison.nc"
    g, tg, t0 = (float(pf[v]) for v in ("g_star", "response_time_at_g_star", "response_time_no_restart"))
    findings, limits = [], []
    findings.append(Claim(f"The product form's optimal signal rate g* = {_g(g)} gives E[T] = {_g(tg)} model time "
                          f"units against {_g(t0)} without restart ({100 * (tg - t0) / t0:+.0f} %).", [g, tg, t0],
                          [Query(pfs, v, {}, None, []) for v in ("g_star", "response_time_at_g_star",
                                                                  "response_time_no_restart")],
                          max(sig_tol(g), sig_tol(tg), sig_tol(t0))))
    st = _status(cmp, "response_time")
    sems = cmp["semantics"].values.tolist()
    if "signal" in sems:
        i = sems.index("signal")
        ok = st[i] == ""
        cov = cmp["response_time_covered"].values[i]
        k = int((cov[ok] != 0).sum())
        where = ("(replications_stable == replications_stable.max()) & (run_valid != 0) & isfinite(response_time)"
                 if "replications_used" not in cmp else
                 "(replications_stable >= replications_used) & (run_valid != 0) & isfinite(response_time)")
        findings.append(Claim(f"Under signal semantics, which the product form models, the simulated 95% CI covers the "
                              f"product form at {k} of {int(ok.sum())} rates.", [k, int(ok.sum())],
                              [Query(cs, "response_time_covered != 0", {"semantics": "signal"}, where, [["count"]]),
                               Query(cs, where, {"semantics": "signal"}, None, [["count"]])]))
        missed = _missed(cmp, st)
        if missed:
            findings.append(Claim(f"It misses it at r = {listing([_g(r) for r in missed])} (ringed in red).", missed,
                                  Query(cs, "restart_rate", {"semantics": "signal"},
                                        f"{where} & (response_time_covered == 0)", [["list"]]),
                                  max(sig_tol(r) for r in missed)))
    usable = ("(run_valid != 0) & isfinite(response_time) & (replications_stable >= "
              + ("replications_used)" if "replications_used" in cmp else "replications_stable.max())"))
    reaches = ("((response_time - where(isfinite(response_time_half_width), response_time_half_width, 0)) <= "
               "(best_response_time + where(isfinite(best_response_time_half_width), best_response_time_half_width, "
               "0)))")
    for i, s in enumerate(sems):
        rb = float(cmp["best_rate_response_time"].sel(semantics=s))
        if not np.isfinite(rb):
            continue
        reach = _reach(cmp, i)
        extra = f" (r = {_g(min(reach))} to {_g(max(reach))} within its CI)" if len(reach) > 1 else ""
        findings.append(Claim(f"{NAMES.get(s, s).capitalize()}: the smallest simulated mean response time of the sweep "
                              f"is at r = {_g(rb)}{extra}.", [rb, min(reach), max(reach)],
                              [Query(cs, "best_rate_response_time", {"semantics": s}, None, []),
                               Query(cs, "restart_rate", {"semantics": s}, f"{usable} & {reaches}", [["min"]]),
                               Query(cs, "restart_rate", {"semantics": s}, f"{usable} & {reaches}", [["max"]])],
                              sig_tol(rb)))
    for s, tb, hb, rb in _beating(pf, cmp):  # its best simulated mean beats the product form's optimum beyond its CI
        findings.append(Claim(f"{NAMES.get(s, s).capitalize()} beat the product form's optimum: their smallest "
                              f"simulated mean, {_g(tb)} ± {_g(hb, 2)} at r = {_g(rb)}, lies below E[T] = {_g(tg)} "
                              "at g* beyond its CI.", True,
                              Query(cs, "(best_response_time + where(isfinite(best_response_time_half_width), "
                                    "best_response_time_half_width, 0)) < response_time_at_g_star",
                                    {"semantics": s}, None, [])))
    below_pf = (f"{usable} & ((response_time + where(isfinite(response_time_half_width), response_time_half_width, "
                "0)) < response_time_pf)")
    for s, rates, below, gain in _below_signals(cmp):  # a timeout semantics better than signals at a given rate
        words = _below_words(s, rates, below, gain)
        findings.append(Claim(words[0].upper() + words[1:] + ".", [below, len(rates), gain],
                              [Query(cs, "restart_rate", {"semantics": s}, below_pf, [["list"]]),
                               Query(cs, usable, {"semantics": s}, None, [["count"]]),
                               Query(cs, "100 * (response_time_pf - response_time) / response_time_pf",
                                     {"semantics": s}, below_pf, [["max"]])], 1e-9))
    for i, s in enumerate(sems):
        un = [float(r) for r, x in zip(cmp["restart_rate"].values, st[i], strict=True) if x == "unstable"]
        if un:
            limits.append(Claim(f"Under {NAMES.get(s, s)} the run was stopped as unstable (more jobs than max_jobs: no "
                                f"steady state) at r = {listing([_g(r) for r in un])}: no value there (✕ above the "
                                "panel).", un, Query(cs, "restart_rate", {"semantics": s},
                                                     "replications_stable < replications_stable.max()"
                                                     if "replications_used" not in cmp else
                                                     "replications_stable < replications_used", [["list"]]),
                                1e-9))
    return Caption(
        f"Restart study, {name}: mean response time E[T] against the restart rate r ({describe_plainly(pf)}). The "
        "mean number of jobs E[N] = λ E[T] (Little's law) is in comparison.nc.", findings, limits,
        [("Black line: the product form of the G-network (signal semantics, signal rate g = r); red star: its optimal "
         "signal rate g* and E[T] there. Markers: simulations (bars: 95% Student-t intervals over replications) under "
         "signal semantics (must lie on the line), exponential per-job timeouts of rate r and deterministic per-job "
         "timeouts τ = 1/r. Per-job timeouts do not slow down as 1/n when the queue fills, so they restart more under "
         "load and can have no steady state although the signal model is stable. The three semantics run at the same "
         "rates and are drawn at their true r (signals filled, the timeouts open around them). Dotted: E[T] without "
         "restart. ▼ in the strip above the panel, in each semantics' row and colour: the rate of the sweep's smallest "
         "simulated mean of that semantics (comparison.nc: best_rate_response_time); a light bar through it: the "
         "rates whose CI reaches that mean (within its CI). Points without a value are "
         "marked in the strip above the panel: ✕ (in its semantics' colour) stopped as unstable, ◇ a run the "
         "run-length guard judged too short.")])


def percentile(pf, cmp, stem, name, formats, dpi) -> list:
    """The response-time percentiles of the comparison against the restart rate, one panel per level; a percentile
    with fewer than 100 jobs per replication beyond it is marked, not drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = float(pf["g_star"])
    levels = cmp["percentile"].values.tolist()
    # as wide as the legend under it (round 15's reader: a quarter of the canvas right of the axes was empty)
    fig, axs = plt.subplots(1, len(levels), figsize=(min(9.8 * len(levels), 12.0), 5.0), squeeze=False)
    st_all = _status(cmp, "response_time_percentile")
    kinds, any_best, any_span = set(), False, False
    for k, (ax, level) in enumerate(zip(axs[0], levels, strict=True)):
        c = cmp.sel(percentile=level)
        st = st_all[..., k]
        strip = status_strip(ax)
        best = {sm: (float(c["best_response_time_percentile"].sel(semantics=sm)),
                     float(c["best_rate_response_time_percentile"].sel(semantics=sm)))
                for sm in c["semantics"].values.tolist() if "best_response_time_percentile" in c}
        best = {sm: v for sm, v in best.items() if np.isfinite(v[0])}
        sems = c["semantics"].values.tolist()
        marked = _best_marks(strip, {sm: v[1] for sm, v in best.items()},
                             {sm: _reach(c, i, "response_time_percentile", st[i]) for i, sm in enumerate(sems)})
        any_best, any_span = any_best or marked[0], any_span or marked[1]
        _sim(ax, strip, c, "response_time_percentile", st, estimate=True, join=True)
        ax.axvline(g, color="0.5", ls="--", lw=0.8, label=f"g* = {g:.4g} (the product form's optimum of the mean)")
        ax.set_xscale("log")
        log_ticks(ax.xaxis)
        _g_star_label(ax, g, "g* (optimum of the mean)")
        ax.set_xlabel("restart rate r (per model time unit)")
        ax.set_ylabel(f"{level:g}th percentile of the response time\n(model time units)")
        ax.grid(True, which="both", alpha=0.3)
        if not (st == "").any():
            beyond = c["response_time_percentile_beyond"].values if "response_time_percentile_beyond" in c else None
            med = float(np.nanmedian(beyond)) if beyond is not None and np.isfinite(beyond).any() else float("nan")
            ax.set_ylim(0, 1)
            ax.set_yticks([])
            longer = f", about {TAIL_MIN / med:.1f} times longer" if np.isfinite(med) and med > 0 else ""
            ax.text(0.5, 0.5, f"this run cannot estimate the {level:g}th percentile at any rate:\n"
                              + (f"about {med:.0f} jobs per replication lie beyond it, {TAIL_MIN} are needed\n"
                                 if np.isfinite(med) else "")
                              + f"(run longer: restart.examples.{name}.horizon{longer})", transform=ax.transAxes,
                    ha="center", va="center", fontsize=9.5, bbox={"facecolor": "0.96", "edgecolor": "0.7"})
        else:
            ax.set_ylim(bottom=0.0)
        kinds |= strip.kinds - {"best_rate"}
        title = f"{name}: the {level:g}th percentile of the response time" + _lowest_words(c)
        strip.finish(title=title, fontsize=9.5, label_size=8.5, row_pt=11, series_color=True)
    fig.tight_layout()
    handles, labels = axs[0][0].get_legend_handles_labels()
    _best_legend(handles, labels, any_best, any_span, "lowest simulated percentile")
    sh, sl = status_handles(kinds)
    fig.legend(handles + sh, _wrapped(labels + sl), fontsize=7.5, loc="upper center", ncol=2, frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    return save(fig, stem, formats, dpi, caption=_percentile_caption(pf, cmp, name, st_all))


def lowest_across(c, var="response_time_percentile"):
    """(the semantics whose smallest simulated ``var`` is the lowest of all, that value, its rate, the other semantics
    whose smallest value's CI reaches it — no lower beyond the CIs) from one level ``c`` of the comparison; None where
    no semantics has a value."""
    best, hw = c[f"best_{var}"], c[f"best_{var}_half_width"] if f"best_{var}_half_width" in c else None
    v = best.values.astype(float)
    if not np.isfinite(v).any():
        return None
    h = np.where(np.isfinite(hw.values), hw.values, 0.0) if hw is not None else np.zeros_like(v)
    sems = c["semantics"].values.tolist()
    i = int(np.nanargmin(np.where(np.isfinite(v), v, np.inf)))
    reach = sorted(s for k, s in enumerate(sems) if k != i and np.isfinite(v[k]) and v[k] - h[k] <= v[i] + h[i])
    return sems[i], float(v[i]), float(c[f"best_rate_{var}"].values[i]), reach


def _lowest_words(c) -> str:
    """The percentile panel's title clause on the lowest value across the semantics: "lowest", and where another
    semantics' lowest lies within the CIs, "but within the CI of …" (round 20's reader: "lowest" for a value no lower
    beyond the CIs)."""
    low = lowest_across(c) if "best_response_time_percentile" in c else None
    if low is None:
        return ""
    s, v, r, reach = low
    return (f":\nlowest, {v:.3g}, with {NAMES.get(s, s)} at r = {r:.3g}"  # its own line (round 26: at the edge)
            + (f", but within the CI of {listing([NAMES.get(x, x) for x in reach])}' lowest" if reach else ""))


def _lowest_claim(cmp, cs, level) -> Claim | None:
    """The caption's claim behind :func:`_lowest_words`: the lowest value across the semantics, and which other
    semantics' lowest lies within the CIs of it (re-derived from the comparison)."""
    v = "response_time_percentile"
    low = lowest_across(cmp.sel(percentile=level), v)
    if low is None:
        return None
    s, val, r, reach = low
    hwz = f"where(isfinite(best_{v}_half_width), best_{v}_half_width, 0)" if f"best_{v}_half_width" in cmp else "0"
    lowest = f"best_{v}.min('semantics')"
    mask = (f"isfinite(best_{v}) & (best_{v} != {lowest}) & "
            f"(best_{v} - {hwz} <= where(best_{v} == {lowest}, best_{v} + {hwz}, nan).max('semantics'))")
    others = listing([NAMES.get(x, x) for x in reach])
    text = (f"Across the semantics the lowest {level:g}th percentile is {val:.3g}, with {NAMES.get(s, s)} at r = "
            f"{_g(r)}; " + (f"the lowest values of {others} lie within the CIs of it: no semantics is lowest beyond "
                            "the CIs." if reach else "every other semantics' lowest lies above it beyond the CIs."))
    return Claim(text, [val, reach], [Query(cs, f"best_{v}", {"percentile": level}, None, [["min"]]),
                                      Query(cs, "semantics", {"percentile": level}, mask, [["list"]])],
                 sig_tol(val, 3))


def _within_ci_claims(cmp, cs, level, st, stopped, best) -> list:
    """Per semantics with a lowest percentile (``best``: its rate), the other rates whose CI reaches that value
    (the bar through its ▼; the means caption's "within its CI"), re-derived from the comparison."""
    v = "response_time_percentile"
    few = f" & ({v}_too_few == 0)" if f"{v}_too_few" in cmp else ""
    usable = f"~({stopped}) & (run_valid != 0){few} & isfinite({v})"
    reaches = (f"(({v} - where(isfinite({v}_half_width), {v}_half_width, 0)) <= (best_{v} + "
               f"where(isfinite(best_{v}_half_width), best_{v}_half_width, 0)))")
    c = cmp.sel(percentile=level)
    out = []
    for i, s in enumerate(cmp["semantics"].values.tolist()):
        reach = _reach(c, i, v, st[i]) if s in best else []
        if len(reach) > 1:
            sel = {"semantics": s, "percentile": level}
            out.append(Claim(f"{NAMES.get(s, s).capitalize()}: r = {_g(min(reach))} to {_g(max(reach))} lie within "
                             f"the CI of its lowest {level:g}th percentile (the bar through its ▼).",
                             [min(reach), max(reach)],
                             [Query(cs, "restart_rate", sel, f"{usable} & {reaches}", [["min"]]),
                              Query(cs, "restart_rate", sel, f"{usable} & {reaches}", [["max"]])],
                             max(sig_tol(min(reach)), sig_tol(max(reach)))))
    return out


def _percentile_caption(pf, cmp, name, st_all) -> Caption:
    cs = f"{name}/comparison.nc"
    findings, limits = [], []
    sems = cmp["semantics"].values.tolist()
    stopped = "replications_stable < " + ("replications_used" if "replications_used" in cmp else
                                          "replications_stable.max()")
    for k, level in enumerate(cmp["percentile"].values.tolist()):
        st = st_all[..., k]
        n = int(st.size)
        drawn_short = st == "too_short"  # exactly the points the strip marks ◇ (an unstable point is ✕ instead)
        kf = int(drawn_short.sum())
        if kf:
            beyond = cmp["response_time_percentile_beyond"].values[..., k] \
                if "response_time_percentile_beyond" in cmp else np.full(st.shape, np.nan)
            fin = beyond[drawn_short & np.isfinite(beyond) & (beyond > 0)]
            med = float(np.median(fin)) if fin.size else float("nan")
            where = (f"~({stopped}) & ((run_valid == 0) | (response_time_percentile_too_few != 0) | "
                     "~isfinite(response_time_percentile))")
            limits.append(Claim(f"The {level:g}th percentile has too few jobs beyond it ({RULE}) at {kf} of {n} "
                                f"(semantics, rate) points"
                                + (f" (there a median {med:.0f} jobs per replication lie beyond it)"
                                   if np.isfinite(med) else "") + ": not drawn (◇ above the panel).",
                                [kf, n], [Query(cs, where, {"percentile": level}, None, [["count"]]),
                                          Query(cs, "isfinite(restart_rate) & (semantics == semantics)", {}, None,
                                                [["count"]])]))
        ku = int((st == "unstable").sum())
        if ku:
            limits.append(Claim(f"At {ku} of {n} (semantics, rate) points the run was stopped as unstable (more jobs "
                                "than max_jobs: no steady state): no value (✕ above the panel).", [ku, n],
                                [Query(cs, f"({stopped}) & isfinite(restart_rate)", {"percentile": level}, None,
                                       [["count"]]),
                                 Query(cs, "isfinite(restart_rate) & (semantics == semantics)", {}, None,
                                       [["count"]])]))
        best = {s: float(cmp["best_rate_response_time_percentile"].sel(semantics=s, percentile=level)) for s in sems}
        best = {s: v for s, v in best.items() if np.isfinite(v)}
        if best:
            findings.append(Claim(f"The {level:g}th percentile is smallest at "
                                  + listing([f"r = {_g(v)} ({NAMES.get(s, s)})" for s, v in best.items()])
                                  + " among the points that can estimate it.", best,
                                  Query(cs, "best_rate_response_time_percentile",
                                        {"semantics": list(best), "percentile": level}, None, []),
                                  max(sig_tol(v) for v in best.values())))
        findings += _within_ci_claims(cmp, cs, level, st, stopped, best)
        if (low := _lowest_claim(cmp, cs, level)) is not None:
            findings.append(low)
    P = cmp["percentile"].values
    what = (f"the {P[0]:g}th percentile" if P.size == 1 else
            f"the percentiles {listing([f'{p:g}th' for p in P])} (one panel each)")
    return Caption(
        f"Restart study, {name}: {what} of the response time against the restart rate r, for the three semantics "
        "(signals of rate r, exponential timeouts of rate r, deterministic timeouts 1/r).", findings, limits,
        [("Each replication's percentile from its streamed histogram, averaged over replications with 95% Student-t "
         "intervals (the three semantics run at the same rates, drawn at their true r: signals filled, the timeouts "
         "open around them; a thin line in its colour joins each semantics' points). No value without restart is "
         "drawn: the study computes none for the tail. The dashed line is the product form's g* (which minimises the "
         "mean, not the tail). ▼ in the strip above the panel, in each semantics' row and colour: the rate of its "
         "lowest simulated percentile (comparison.nc: best_rate_response_time_percentile); a light bar through it: "
         "the rates whose CI reaches that percentile (within its CI). "
         + ("Points without a value are marked in the strip above the panel: " + ", ".join(
             w for k, w in (("too_short", "◇ too few jobs beyond the percentile (or a run too short)"),
                            ("unstable", "✕ (in its semantics' colour) stopped as unstable")) if (st_all == k).any())
            + "."
            if (st_all != "").any() else "Every point has a value: the strip above the panel holds only the ▼."))])


def key_results(pf, cmp, stem, name: str) -> list:
    """The example's key result as a table (``<stem>.csv``/``.html``) with its caption (``<stem>.rst``): g* and E[T]
    there against no restart (product form), and per simulated semantics the best swept rate (for deterministic
    timeouts: τ = 1/r), its E[T] ± CI, the rates whose CI reaches it, and the gain over no restart."""
    from ..core.present.tables import write_table

    g, tg, t0 = float(pf["g_star"]), float(pf["response_time_at_g_star"]), float(pf["response_time_no_restart"])
    gain = (lambda t: f"{100 * (t - t0) / t0:+.1f}%" if np.isfinite(t0) and t0 > 0 and np.isfinite(t) else "—")
    rows = [["product form (signal semantics)", f"g* = {g:.4g}", f"{tg:.4g}", "", f"{t0:.4g}", gain(tg)]]
    sems = cmp["semantics"].values.tolist()
    for i, s in enumerate(sems):
        rb = float(cmp["best_rate_response_time"].sel(semantics=s))
        tb = float(cmp["best_response_time"].sel(semantics=s))
        hw = cmp["best_response_time_half_width"].sel(semantics=s) if "best_response_time_half_width" in cmp else None
        at = ((f"τ = 1/r = {1 / rb:.4g}" if s == "timeout_deterministic" else f"r = {rb:.4g}") if np.isfinite(rb)
              else "—")
        reach = _reach(cmp, i)
        rows.append([STYLE.get(s, (None, None, s))[2], at,
                     f"{tb:.4g}" + (f" ± {float(hw):.2g}" if hw is not None and np.isfinite(float(hw)) else ""),
                     (f"r = {_g(min(reach))} to {_g(max(reach))}" if len(reach) > 1 else "none") if reach else "—",
                     f"{t0:.4g}", gain(tb)])
    notes = [(f"{name}: mean response time E[T] in the model's time units. Product form: the optimal signal rate g* "
             "and E[T] there against no restart (r → 0). Simulation: the swept rate with the smallest simulated mean "
             "under each semantics (for deterministic timeouts the timeout τ = 1/r; points stopped as unstable or "
             "judged too short by the run-length guard left out), its CI, the other swept rates whose CI reaches it "
             "(the sweep cannot tell them apart), and the change against the product form's E[T] without restart "
             "(negative = restart helps).")]
    cap = _means_caption(pf, cmp, name)
    cap = Caption(f"Key result of restart, {name}: the best restart rate and what it gains. CSV beside it: "
                  "key_results.csv.", [c for c in cap.findings if "covers" not in c.text], cap.limits,
                  ["A sweep's best rate is only as sharp as its CIs: the rates whose CI reaches it are named."])
    return write_table(stem, f"{name}: the best restart rate and what it gains",
                       ["", "best rate", "E[T] there", "rates within its CI", "E[T] without restart", "change"], rows,
                       notes, caption=cap)
