"""The Wasserstein-distance figure: each method's distance to the reference CDF against the load."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from ...core.present.claims import Caption, Claim, sig_tol
from ...core.present.figures import (
    REFERENCE_TOO_SHORT,
    TIME_UNIT,
    log_ticks,
    status_strip,
)
from .. import claims as Q
from ..compare import (
    REF_EXACT,
    REF_SIMULATION,
    exact_usable,
    run_usable,
    w_against_reference,
)
from . import common  # save, looked up when called: tests replace common.save
from .common import (
    EXPONENTIAL,
    FAITHFUL,
    NOISE_FILL,
    NOISE_LABEL,
    NOISE_WORDS,
    RULE,
    TAIL,
    W_FLOOR,
    _g,
    _legend_below,
    _shown_note,
    _shown_R,
    series,
)


# =========================================================================== Wasserstein distance
def _family_lines(cmp):
    """The two rows of the method figures: the paper's A–F, and the corrected chains with T (exact is the
    reference there, so it is no line of its own)."""
    rows = [("paper-faithful A–F", series(cmp, "faithful")),
            ("corrected A*–F* and T", [s for s in series(cmp, "corrected") if s.method != "exact"])]
    return [r for r in rows if r[1]]


#: a W below the axis floor, drawn on the bottom edge: an arrow down (no method's marker)
_CLIP_MARK = {"marker": r"$\downarrow$", "ms": 11}
#: the type size (pt) of every letter a reader must read in the Wasserstein figure
_LETTER_PT = 9.5


def _load_forward(rho):
    """The load axis's scale: −log10(1 − ρ), so that 0.9, 0.95 and 0.99 stand as far apart as 0.1, 0.5 and 0.9
    (high load, where the methods part, gets the room)."""
    with np.errstate(all="ignore"):
        return -np.log10(1.0 - np.minimum(np.asarray(rho, float), 1.0 - 1e-9))


def _load_inverse(u):
    return 1.0 - 10.0 ** (-np.asarray(u, float))


def _load_axis(ax, ticks) -> None:
    """A load axis on the scale −log10(1 − ρ) (:func:`_load_forward`), ticked and labelled at the grid's loads
    ``ticks`` (horizontal), a margin either side."""
    ax.set_xscale("function", functions=(_load_forward, _load_inverse))
    ticks = np.asarray(ticks, float)
    if ticks.size:
        u = _load_forward(ticks)
        pad = 0.07 * max(float(u.max() - u.min()), 0.3)
        ax.set_xlim(float(_load_inverse(u.min() - pad)), float(_load_inverse(u.max() + pad)))
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.xaxis.set_minor_locator(plt.NullLocator())


def wasserstein_vs_rho(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Wasserstein distance W of each method to its best reference (exact where it ran, else the simulation) against
    ρ on a high-load-friendly axis (:func:`_load_axis`), one row per R that ran (at most five), one column per family;
    where a method is set against the simulation, the simulation's own noise (``sim_noise_wasserstein``: no method
    can look closer) as a grey area; status marks in a strip above each panel, one labelled row per method (every
    panel keeps the same strip height); a panel where every line lies below the floor is a note instead. Letters at
    the points are placed where they meet no other (:func:`_place_letters`)."""
    c = cmp.sel(service=service)
    d = w_against_reference(cmp, service)
    all_R = c["R"].values
    Rv = _shown_R(all_R)
    rows = _family_lines(cmp)
    fig, axes = plt.subplots(len(Rv), len(rows), figsize=(5.6 * len(rows) + 1.4, 2.8 * len(Rv) + 1.9),
                             sharex=True, sharey=True, squeeze=False, gridspec_kw={"hspace": 0.75, "wspace": 0.3})
    kinds, floor_hit, noise_drawn, strips, letters = set(), False, False, [], []
    for f, (title, lines) in enumerate(rows):
        for k, R in enumerate(Rv):
            strip, hit, nz, low = _w_panel(axes[k, f], cmp, c, d, lines, int(np.nonzero(all_R == R)[0][0]), letters)
            floor_hit, noise_drawn = floor_hit or hit, noise_drawn or nz
            kinds |= strip.kinds
            strips.append((strip, R, low, title, k))
    fig.subplots_adjust(left=0.09, right=0.95, top=1 - 1.25 / fig.get_figheight(), bottom=0.9 / fig.get_figheight())
    reserve = max(len(s.rows) for s, *_ in strips)
    first = {title: min((k for _, _, low, t, k in strips if t == title and not low), default=0) for title, _ in rows}
    for (strip, R, low, title, k), ax in zip(strips, axes.T.ravel(), strict=True):
        if low:  # nothing above the floor: a note where the panel would be (its lines say nothing more)
            ax.set_axis_off()
            ax.text(0.5, 0.45, f"R = {R}, {title}:\nevery line W < {W_FLOOR:g} against exact at every load\n"
                    "(nothing to draw)", transform=ax.transAxes, ha="center", va="center", fontsize=_LETTER_PT + 0.5,
                    color="0.2", bbox={"boxstyle": "round,pad=0.6", "fc": "0.97", "ec": "0.6"})
            continue
        strip.finish(title=(f"{title} — " if k == first[title] else "") + f"R = {R}", fontsize=10.5,
                     reserve=reserve, label_size=9, row_pt=10.5)
    for ax in axes.ravel():
        ax.tick_params(axis="both", labelsize=_LETTER_PT)
        ax.tick_params(axis="x", labelbottom=True, rotation=0)
    for ax in axes[-1, :]:
        ax.set_xlabel("load ρ (axis: −log(1 − ρ), so that high loads stand apart)", fontsize=10)
    for ax in axes.ravel():  # every panel its own y labels (the right column's too: shared, but read on its own)
        ax.set_ylabel(f"W ({TIME_UNIT})", fontsize=10)
        ax.tick_params(axis="y", labelleft=True)
    axes[0, 0].set_ylim(bottom=W_FLOOR)
    log_ticks(axes[0, 0].yaxis)
    h, lab = _w_legend(rows, noise_drawn, kinds, floor_hit)
    _legend_below(fig, h, lab, ncol=2, fontsize=_LETTER_PT, y=0.0)
    _place_letters(fig, letters)
    cap = _wasserstein_caption(cmp, d, service, Rv, all_R, noise_drawn, kinds, floor_hit)
    # the title's finding is the caption's (the same claim, from the same data)
    lead = next((getattr(c, "text", "") for c in cap.findings
                 if getattr(c, "text", "").startswith("The closest corrected method")), "")
    fig.suptitle((f"{lead.removesuffix('.')} ({service} service)\n" if lead else
                  f"How far each method's sojourn-time distribution is from the truth ({service} service)\n")
                 + "Wasserstein distance W to exact where it ran (filled markers), else to the simulation (hollow): "
                 "lower = closer", y=0.995, va="top", fontsize=11)
    return common.save(fig, stem, caption=cap, **kw)


def _w_panel(ax, cmp, c, d, lines, i, letters):
    """One panel of the Wasserstein figure (R index ``i``) on the load axis (:func:`_load_axis`): each line's W
    (filled against exact, hollow against the simulation; the line broken where W drops below :data:`W_FLOOR`, one
    arrow per load on the bottom edge there: :func:`_floor_arrows`). In the A–F column the six lines are thin and grey,
    and the closest of them at each load is one bold line, its letter asked for at each point (appended to
    ``letters``: :func:`_closest_line`); the simulation's noise as a grey area where a line is set against it, the
    status marks in the panel's strip (not finished). Returns (the strip, whether an arrow is drawn, whether the noise
    is drawn, whether every line lies below the floor)."""
    methods, rho = c["approximation"].values.tolist(), c["rho"].values
    xp = np.asarray(rho, dtype=float)
    W, ref, status = d["W"].values, d["reference"].values, d["status"].values
    strip = status_strip(ax)
    vs_sim = np.zeros(len(rho), bool)
    cols = [methods.index(sr.method) for sr in lines]
    below_all = np.isfinite(W[i][:, cols]) & (W[i][:, cols] < W_FLOOR)  # (rho, line)
    under = all(sr.method in FAITHFUL for sr in lines) and len(lines) > 1  # A–F: grey underlay, the closest bold
    shown = False
    for sr in lines:
        m = methods.index(sr.method)
        shown = _w_line(ax, xp, W[i, :, m], ref[i, :, m], sr, under) or shown
        vs_sim |= np.isfinite(W[i, :, m]) & (ref[i, :, m] == REF_SIMULATION)
        for key in ("not_run", "invalid"):
            strip.mark(sr.method, xp, status[i, :, m] == key, key, sr.color, sr.method)
    if under:
        letters += _closest_line(ax, xp, W[i][:, cols], ref[i][:, cols], [sr.method for sr in lines])
    noise_drawn = _w_noise(ax, cmp, c, i, xp, vs_sim)
    too_short = np.any(np.stack([status[i, :, methods.index(sr.method)] == "too_short" for sr in lines]), 0)
    strip.mark("reference", xp, too_short, REFERENCE_TOO_SHORT.key, "0.3", "all")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    _load_axis(ax, xp)
    low = not shown and bool(np.isfinite(W[i][:, cols]).any()) and not strip.kinds
    floor_hit = bool(below_all.any()) and not low  # a panel where every line is below says so in a note instead
    if floor_hit:
        letters += _floor_arrows(ax, xp, below_all, lines)
    return strip, floor_hit, noise_drawn, low


#: the Wasserstein figure's A–F row: each method thin and light grey behind the closest of them (bold)
_UNDERLAY = {"color": "0.8", "lw": 0.8, "zorder": 2}
_CLOSEST = {"color": "0.1", "lw": 2.4, "zorder": 4}


def _w_line(ax, xp, y, ref, sr, under) -> bool:
    """One method's W line (broken below :data:`W_FLOOR`), markers filled against exact, hollow against the
    simulation; ``under``: thin light grey without markers (the closest line is drawn over it). Returns whether any
    point lies above the floor."""
    from ...core.present.figures import METHOD_MARKERS

    ok = np.isfinite(y)
    above = ok & (y >= W_FLOOR)
    if not above.any():
        return False
    yy = np.where(above, y, np.nan)[ok]
    if under:
        ax.plot(xp[ok], yy, "-", **_UNDERLAY)
        return True
    ax.plot(xp[ok], yy, sr.style, color=sr.color, lw=sr.lw, label=sr.label, zorder=3)
    for rk, face in ((REF_EXACT, sr.color), (REF_SIMULATION, "white")):
        sel = above & (ref == rk)
        ax.plot(xp[sel], y[sel], METHOD_MARKERS.get(sr.method, "o"), ms=6, mfc=face, mec=sr.color, mew=1.3,
                ls="none", zorder=4)
    return True


def closest_letters(W, names, tol=None) -> list[str]:
    """Per load (row of ``W``: (load, method)): the closest method's letter with those within ``tol`` of it
    ('B=C'), '' where no W is finite or the closest lies below :data:`W_FLOOR`."""
    tol = W_COINCIDE if tol is None else tol
    out = []
    for row in W:
        fin = np.isfinite(row)
        if not fin.any() or np.nanmin(row) < W_FLOOR:
            out.append("")
            continue
        best = np.nanmin(row)
        out.append("=".join(n for n, v in zip(names, row, strict=True) if np.isfinite(v) and v <= best * (1 + tol)))
    return out


def _closest_line(ax, xp, W, ref, names) -> list:
    """The closest of ``names`` at each load as one bold line (filled marker against exact, hollow against the
    simulation); returns the letters it asks for, one per point (with those within :data:`W_COINCIDE`): (axes, x,
    y, text, colour, None) for :func:`_place_letters`."""
    with np.errstate(all="ignore"):
        k = np.argmin(np.where(np.isfinite(W), W, np.inf), axis=1)
    best = W[np.arange(len(xp)), k]
    on = np.isfinite(best) & (best >= W_FLOOR)
    if not on.any():
        return []
    ax.plot(xp, np.where(on, best, np.nan), "-", **_CLOSEST)
    vs_exact = on & (ref[np.arange(len(xp)), k] == REF_EXACT)
    ax.plot(xp[vs_exact], best[vs_exact], "o", ms=6, color=_CLOSEST["color"], zorder=5)
    ax.plot(xp[on & ~vs_exact], best[on & ~vs_exact], "o", ms=6, mfc="white", mec=_CLOSEST["color"], zorder=5)
    return [(ax, x, y, text, _CLOSEST["color"], None)
            for x, y, text in zip(xp, best, closest_letters(W, names), strict=True) if text]


#: where a point's letter may stand, tried in this order (offset in points, horizontal and vertical alignment)
_LETTER_SPOTS = (((0, 6), "center", "bottom"), ((0, -7), "center", "top"), ((7, 2), "left", "bottom"),
                 ((-7, 2), "right", "bottom"), ((7, -2), "left", "top"), ((-7, -2), "right", "top"),
                 ((0, 17), "center", "bottom"), ((0, -18), "center", "top"))


def _place_letters(fig, letters) -> int:
    """Draw each letter (``letters``: (axes, x, y, text, colour, fixed offset or None)) at the first of
    :data:`_LETTER_SPOTS` where its box meets no letter placed before it, no point of the letters' own lines and
    stays inside its panel (the fixed ones — the floor arrows' — first, where they are). Computed with the figure's
    renderer once the axes' limits are final. Returns how many letters found no free spot (drawn at the first)."""
    from matplotlib.transforms import Bbox

    renderer = fig.canvas.get_renderer()
    pt = fig.dpi / 72.0
    points = [ax.transData.transform((x, y)) for ax, x, y, *_ in letters]
    dots = [Bbox.from_extents(px - 4 * pt, py - 4 * pt, px + 4 * pt, py + 4 * pt) for px, py in points]
    placed, crowded = [], 0
    for ax, x, y, text, color, fixed in sorted(letters, key=lambda r: r[5] is None):
        spots = [fixed] if fixed is not None else _LETTER_SPOTS
        frame = ax.get_window_extent(renderer).expanded(1.0, 1.0).padded(-1)
        for n, (off, ha, va) in enumerate(spots):
            t = ax.annotate(text, (x, y), xytext=off, textcoords="offset points", ha=ha, va=va, fontsize=_LETTER_PT,
                            fontweight="bold", color=color, zorder=6, annotation_clip=False)
            box = t.get_window_extent(renderer)
            free = (fixed is not None or (not any(box.overlaps(b) for b in placed)
                                          and not any(box.overlaps(b) for b in dots)
                                          and frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)))
            if free or n == len(spots) - 1:
                if not free:
                    t.remove()
                    t = ax.annotate(text, (x, y), xytext=spots[0][0], textcoords="offset points", ha=spots[0][1],
                                    va=spots[0][2], fontsize=_LETTER_PT, fontweight="bold", color=color, zorder=6)
                    box = t.get_window_extent(renderer)
                    crowded += 1
                placed.append(box)
                break
            t.remove()
    return crowded


def _w_noise(ax, cmp, c, i, xp, vs_sim) -> bool:
    """The simulation's noise (``sim_noise_wasserstein``) as a light area from the bottom up, at the load positions
    ``xp`` where a line is set against the simulation: no line can be told apart from exact in it. Returns whether
    it is drawn."""
    if "sim_noise_wasserstein" not in c:
        return False
    noise = c["sim_noise_wasserstein"].where(run_usable(cmp).sel(service=c["service"].item())).transpose(
        "R", "rho").values[i]
    sel = vs_sim & np.isfinite(noise)
    if not sel.any():
        return False
    x = xp[sel]
    x = np.minimum(np.repeat(x, 2) + np.tile([-0.02, 0.02], x.size), 0.999) if x.size == 1 else x
    ax.fill_between(x, W_FLOOR, np.interp(x, xp[sel], noise[sel]), color=NOISE_FILL, edgecolor="0.7", lw=0.6,
                    zorder=1)
    return True


#: lines whose W differ by less than this share are named together as the closest ('B=C')
W_COINCIDE = 0.10


def _floor_arrows(ax, xp, below, lines) -> list:
    """One arrow on the bottom edge at each load position where a line has W < :data:`W_FLOOR`; returns the letters
    of those lines, stacked to its right, each in its line's colour (fixed offsets, for :func:`_place_letters`)."""
    out = []
    for j, x in enumerate(xp):
        who = [sr for sr, b in zip(lines, below[j], strict=True) if b]
        if not who:
            continue
        ax.plot([x], [W_FLOOR], ls="none", **_CLIP_MARK, color="0.3", clip_on=False, zorder=4)
        out += [(ax, x, W_FLOOR, sr.method, sr.color, ((6, 1 + 11 * k), "left", "bottom"))
                for k, sr in enumerate(who)]
    return out


def _w_legend(rows, noise_drawn, kinds=(), floor_hit=False):
    """The Wasserstein figure's legend: the line styles, the noise area, and every symbol drawn — the strip's marks
    (``kinds``: ×, ∅, ◇; the strip row's method named at its right end) and the arrow on the bottom edge where a W
    lies below the floor (``floor_hit``; the methods named beside it)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    from ...core.present.figures import METHOD_MARKERS, status_handles

    h, lab = [], []
    for _, lines in rows:
        if len(lines) > 1 and all(sr.method in FAITHFUL for sr in lines):  # drawn as the closest over grey lines
            h += [Line2D([], [], marker="o", ms=5, **_CLOSEST), Line2D([], [], **_UNDERLAY)]
            lab += [f"bold: the closest of A–F at each load (its letter; B=C: within {W_COINCIDE:.0%})",
                    "thin grey: each of " + "–".join([lines[0].method, lines[-1].method])]
            continue
        for sr in lines:
            h.append(Line2D([], [], ls=sr.style, color=sr.color, lw=sr.lw, marker=METHOD_MARKERS.get(sr.method, "o"),
                            ms=5, mfc=sr.color))
            lab.append(sr.label)
    if noise_drawn:
        h.append(Patch(facecolor=NOISE_FILL, edgecolor="0.7", lw=0.6))
        lab.append(NOISE_LABEL)
    sh, sl = status_handles(kinds)
    h += sh
    lab += [f"strip mark: {t.removeprefix('∅: ')}" + ("\n(its row's method named at the strip's right end)"
                                                      if i == 0 else "") for i, t in enumerate(sl)]
    if floor_hit:
        h.append(Line2D([], [], ls="none", color="0.3", **_CLIP_MARK))
        lab.append(f"on the bottom edge: W < {W_FLOOR:g} against exact\n(the methods named beside the arrow)")
    return h, lab


def _best_of(W, methods, members):
    idx = [methods.index(m) for m in members if m in methods]
    if not idx:
        return np.full(W.shape[:2], np.nan)
    sub = W[:, :, idx]
    with np.errstate(all="ignore"):
        return np.where(np.isfinite(sub).any(-1), np.nanmin(np.where(np.isfinite(sub), sub, np.inf), -1), np.nan)


def _wasserstein_caption(cmp, d, service, Rv, all_R, noise_drawn=False, kinds=(), floor_hit=True) -> Caption:
    c = cmp.sel(service=service)
    methods = c["approximation"].values.tolist()
    W = d["W"].values
    faith = [m for m in FAITHFUL if m in methods]
    corr = [m for m in methods if m.endswith("*") or m == TAIL]
    sel = {"service": service}
    w = Q.w_ref(cmp)
    findings, limits = [], []
    ex = exact_usable(c)
    if ex is not None and service == EXPONENTIAL:
        k = int(ex.sum())
        findings.append(Q.k_of_n(f"Exact ran at {k} of {int(ex.size)} cells; there every other method is set against "
                                 "exact (filled), elsewhere against the simulation (hollow).", k, int(ex.size),
                                 "usable.sel(approximation='exact') != 0", "isfinite(sim_run_valid)", sel))
    if faith and corr:
        bf, bc = _best_of(W, methods, faith), _best_of(W, methods, corr)
        both = np.isfinite(bf) & np.isfinite(bc)
        if both.any():
            k = int((bc < bf)[both].sum())
            ef = f"({w}).sel(approximation={Q.names(faith)}).min('approximation')"
            ec = f"({w}).sel(approximation={Q.names(corr)}).min('approximation')"
            where = f"isfinite({ef}) & isfinite({ec})"
            findings.append(Q.k_of_n(f"The closest corrected method (A*–F* or T) is closer than the closest of A–F at "
                                     f"{k} of {int(both.sum())} cells.", k, int(both.sum()), f"{ec} < {ef}", where,
                                     sel))
            ratio = float(np.median(bf[both] / bc[both]))
            findings.append(Claim(f"Over those cells the closest of A–F is a median {_g(ratio)} times farther from "
                                  f"the reference than the closest corrected method.", ratio,
                                  Q.query(f"{ef} / {ec}", (("median", None),), where, sel), sig_tol(ratio, 2)))
    if "exact" in methods:
        nz = c["wasserstein_mean"].sel(approximation="exact").where(run_usable(cmp).sel(service=service))
        v = nz.values
        if np.isfinite(v).any():
            med = float(np.nanmedian(v))
            i, j = np.unravel_index(int(np.nanargmax(v)), v.shape)
            loc = {"R": int(nz["R"].values[i]), "rho": float(nz["rho"].values[j]), "value": float(v[i, j])}
            findings.append(Claim(f"The simulation itself lies a median W = {_g(med)} {TIME_UNIT} from exact, and up "
                                  f"to W = {_g(loc['value'])} at R = {loc['R']}, ρ = {loc['rho']:g}: at high load a "
                                  "run this long cannot rank the methods, exact can.", [med, loc],
                                  [Q.query("wasserstein_mean.sel(approximation='exact')", (("median", None),), Q.RUN_OK,
                                           sel),
                                   Q.query("wasserstein_mean.sel(approximation='exact')", (("argmax", None),),
                                           Q.RUN_OK, sel)], max(sig_tol(med, 2), sig_tol(loc["value"], 2))))
    short = (c["sim_run_valid"] == 0).values if "sim_run_valid" in c else np.zeros(W.shape[:2], bool)
    if short.any():
        limits.append(Q.k_of_n(f"The run-length guard judged {int(short.sum())} of {int(short.size)} simulated cells "
                               "too short: there a method without exact has no reference"
                               + (" (◇)." if REFERENCE_TOO_SHORT.key in set(kinds) else "."), int(short.sum()),
                               int(short.size), "sim_run_valid == 0", "isfinite(sim_run_valid)", sel))
    if len(Rv) < len(all_R):
        limits.append(f"Panels show {_shown_note(Rv, all_R)} (every R is in comparison.nc).")
    return Caption(
        f"Wasserstein distance W = dt·Σ|F_ref − F_method| (paper eq. 27; in {TIME_UNIT}) between each method's sojourn-"
        f"time CDF and its reference, against the load ρ, one row per number of servers R; left: the paper's A–F, "
        f"right: the corrected chains (one line per group of identical CDFs) and T.",
        findings, limits,
        [("The reference is exact's CDF where exact ran (filled markers, no noise), else the simulated CDF (hollow; "
         "the mean W over replications)."
         + (f" {NOISE_WORDS[0].upper()}{NOISE_WORDS[1:]} from the bottom edge up to the simulation's own noise, "
            "at the loads where a method is set against the simulation (sim_noise_wasserstein, estimated from the "
            "replications alone): such a method cannot come closer than about this, even if it were exact."
            if noise_drawn else "")
         + (f" Below W = {W_FLOOR:g} against exact a line breaks off; one ↓ on the bottom edge marks the load, the "
            "letters of the methods there beside it." if floor_hit else "")
         + f" A panel where every line lies below W = {W_FLOOR:g} is a note instead. The load axis is drawn on the "
         "scale −log10(1 − ρ) (high loads, where the methods part, get the room), ticked at the grid's loads. In the "
         "left column each of A–F is a thin grey line and the closest of them at each load one bold line, its letter "
         f"at each point (with those within {W_COINCIDE:.0%} of it: 'B=C'; placed where it meets no other)."
         + (" The strip above a panel marks loads without a value, one row per method: "
            + ", ".join(w for k, w in (("not_run", "∅ not run (over budget)"), ("invalid", "× not a CDF"),
                                        (REFERENCE_TOO_SHORT.key, f"◇ reference too short ({RULE})"))
                        if k in set(kinds)) + "." if set(kinds) else "")
         + " T lies above the truth in survival by construction (within its stated margin), so its W is no "
         "measure of its tail: see the percentile figures.")])
