"""The percentile-error maps: each method's relative error at each percentile against the best reference."""
from __future__ import annotations

import math
import textwrap

import numpy as np
import xarray as xr

from ...core.present.claims import Caption, Claim, half_unit, listing
from ...core.present.figures import (
    NO_DIFFERENCE_CELL,
    REFERENCE_TOO_SHORT,
    STATUS,
    TOO_SHORT_CELL,
    status_handles,
    status_style,
)
from ...core.present.mpl import plt  # imported on first use (core/present/mpl.py)
from .. import claims as Q
from ..compare import (
    REF_EXACT,
    REF_SIMULATION,
    against_reference,
    exact_usable,
    reference_usable,
)
from . import common  # save, looked up when called: tests replace common.save
from .common import _SIM_DOT, EXPONENTIAL, RULE, TAIL, _message_panel, _pct, _rgb, series, skip_reason

# =========================================================================== percentile errors
#: the colour scale of both percentile-error maps, in %: signed-logarithmic (linear within ±LIN_PCT, then
#: logarithmic to ±REL_CLIP, beyond which it saturates), so +100 % and +800 % differ in colour and a shade means the
#: same error in both figures
REL_CLIP = 1000.0
LIN_PCT = 5.0
#: the optimistic (red) side of both maps always runs to −100 % (no error lies below): the same shade is the same error
#: in both figures (round 19: on a −20 % range, the corrected map's −18 % was darker than the A–F map's −65 %); only
#: the conservative side takes the figure's own range (:func:`_colour_range`), in its own hue
OPT_CLIP = 100.0
REL_TICKS = (-100, -50, -20, -5, 0, 5, 20, 100, 500)
#: a map cell's fill where a method has no value: ∅ not run mid-grey, × not a CDF near white under a light hatch
#: (:data:`INVALID_HATCH`; a dark fill would pull the eye as if it were an extreme value), the same in every map
STATUS_FILL = {"not_run": "0.72", "invalid": "0.94"}
INVALID_HATCH = {"hatch": "////", "edgecolor": "0.62", "facecolor": "none", "lw": 0.0}
#: the frame of a map cell whose difference counts (beyond the noise): a T cell of +0.1 % is nearly white, and the frame
#: tells it from a white "no difference" cell without relying on its colour
SIG_FRAME = {"color": "0.25", "lw": 0.8, "inset": 0.05}
#: the method names beside the maps' rows: neutral, not the A–F palette, which read as the error scale (round 20)
LABEL_COLOR = "k"
#: the two percentile-error maps' palettes (colour map, word for below, word for above): optimistic (below the
#: reference) is the same red in both, conservative differs (blue, purple), so that a shade of one (±1000 %) is not
#: read on the other's scale (±20 %) while "red = optimistic" holds across both figures
PALETTES = {"faithful": ("RdBu", "red", "blue"), "corrected": ("red-white-purple", "red", "purple")}


def palette_cmap(palette: str):
    """The colour map of :data:`PALETTES` entry ``palette``: matplotlib's RdBu, or RdBu's red half joined to PRGn's
    purple half (one optimistic hue in both maps)."""
    from matplotlib.colors import LinearSegmentedColormap

    name = PALETTES[palette][0]
    if name != "red-white-purple":
        return plt.get_cmap(name)
    red = plt.get_cmap("RdBu")(np.linspace(0.0, 0.5, 128))
    purple = plt.get_cmap("PRGn")(np.linspace(0.5, 0.0, 128))
    return LinearSegmentedColormap.from_list(name, np.vstack([red, purple]))


def _error_norm(clip=REL_CLIP):
    """The maps' colour norm from −:data:`OPT_CLIP` to +``clip`` (%), each side signed-logarithmic:
    f(x) = sign(x)·log(1 + |x|/LIN_PCT) / log(1 + side/LIN_PCT), with side = OPT_CLIP below 0 and ``clip`` above."""
    from matplotlib.colors import FuncNorm

    lo, hi = np.log1p(OPT_CLIP / LIN_PCT), np.log1p(clip / LIN_PCT)

    def fwd(x):
        x = np.clip(np.asarray(x, dtype=float), -OPT_CLIP, clip)
        return np.sign(x) * np.log1p(np.abs(x) / LIN_PCT) / np.where(x < 0, lo, hi)

    def inv(y):
        y = np.asarray(y, dtype=float)
        return np.sign(y) * LIN_PCT * np.expm1(np.abs(y) * np.where(y < 0, lo, hi))

    return FuncNorm((fwd, inv), vmin=-OPT_CLIP, vmax=clip)


#: the colour ranges a percentile-error map may take (%): the smallest that holds every error that counts
_CLIP_STEPS = (10.0, 20.0, 50.0, 100.0, 200.0, 500.0, REL_CLIP)


def _colour_range(m, rows, panels) -> float:
    """The map's conservative colour range: the smallest of :data:`_CLIP_STEPS` that holds every drawn conservative
    error that counts (rows ``rows``, percentile indices ``panels``), so that a figure of small errors is not all pale;
    the optimistic side is fixed (:data:`OPT_CLIP`)."""
    vals = [m["err"][i, :, j, k][m["sig"][i, :, j, k] & (m["ref"][i, :, j, k] != 0)] for j, i in rows for k in panels]
    top = max((float(np.nanmax(v)) for v in vals if v.size and np.isfinite(v).any()), default=0.0)
    return next((c for c in _CLIP_STEPS if top <= c), REL_CLIP)


def _shown_percentiles(P, have) -> list:
    """The panels of a percentile-error map: the lowest and the highest percentile with a reference somewhere (all
    of them if two or fewer), so that each panel stays readable."""
    idx = [k for k in range(len(P)) if have[k]] or list(range(len(P)))
    return idx if len(idx) <= 2 else [idx[0], idx[-1]]


def _error_digits(v: float, counts: bool = False) -> int:
    """The decimals a cell's error ``v`` (%) is printed with (:func:`_error_text`)."""
    if abs(v) >= 0.95:
        return 0
    if abs(v) >= 0.05 or not counts:
        return 1
    return next((d for d in (2, 3) if round(abs(v), d) > 0), 4)


def _error_text(v: float, counts: bool = False) -> str:
    """A cell's error in % as printed: whole percent from ±0.95, else one decimal; below 0.05 % "<0.1" within the
    noise, and where such a small difference counts (``counts``: beyond one grid step of a long percentile) the first
    non-zero decimal (round 15: a bold, framed "<0.1" read as a difference that counts while it rounds to 0); "0" where
    it is zero."""
    if v == 0:
        return "0"
    if abs(v) < 0.05 and not counts:
        return "<0.1"
    return f"{v:+.{_error_digits(v, counts)}f}"


def _error_pct(v: float) -> str:
    """A relative error ``v`` (a fraction) that counts, in the caption's and title's words as its cell prints it:
    '+0.9 %', '-18 %'."""
    return f"{_error_text(100 * v, True)} %"


def _size_pct(v: float) -> str:
    """A relative error ``v`` (a fraction) that counts, by its size only, for a sentence that names its side
    ("optimistic by up to 65 %", round 21: "by up to -65 %" read as a double negative): '65 %', '0.9 %'."""
    return _error_pct(abs(v)).lstrip("+")


#: the kinds of a cell whose percentile lies beyond the time grid t_max, each its own mark (round 20: one ▶ covered a
#: conservative and an optimistic case): ▶ exact's (the reference's) percentile beyond t_max, the method's within — its
#: error is at most (x_method − t_max)/t_max, optimistic by at least that; ≫ the method's own beyond t_max, its
#: reference's within — its error is at least (t_max − x_ref)/x_ref, conservative; ? neither known
BEYOND_KINDS = ("beyond_grid", "beyond_own", "beyond_both")
#: the status of every cell of a map that is drawn light grey with its mark (no reference there)
GREY_STATUS = ("too_short", *BEYOND_KINDS)


def split_beyond(c: xr.Dataset, a: xr.Dataset) -> xr.Dataset:
    """``a`` (:func:`against_reference` of ``c``, one service) with its "beyond_grid" cells split into
    :data:`BEYOND_KINDS` and ``bound`` (%, NaN elsewhere): the one-sided bound on the error known there from the time
    grid's end t_max (``c.attrs['t_max']``; without it no bound is known): ≤ (x_method − t_max)/t_max where exact's
    percentile lies beyond t_max (▶), ≥ (t_max − x_ref)/x_ref where the method's own does and its reference's (exact's,
    or else the mean simulated percentile where the simulation is a usable reference) lies within (≫)."""
    dims = a["status"].dims
    status = a["status"].values.astype(object)
    methods = a["approximation"].values.tolist()
    x = c["approx_percentile"].sel(approximation=methods, percentile=a["percentile"].values).transpose(*dims).values
    tmax = float(c.attrs.get("t_max", np.nan))
    refv = np.full(x.shape, np.nan)
    if "sim_percentile_mean" in c:
        ok = reference_usable(c)
        sm = c["sim_percentile_mean"].sel(percentile=a["percentile"].values).transpose("R", "rho", "percentile").values
        refv = np.where(ok.sel(percentile=a["percentile"].values).transpose("R", "rho", "percentile").values, sm,
                        np.nan)[:, :, None, :] * np.ones(x.shape)
    ex = exact_usable(c)
    if ex is not None:
        xe = c["approx_percentile"].sel(approximation="exact", percentile=a["percentile"].values)
        xe = np.where(ex.transpose("R", "rho").values[..., None], xe.transpose("R", "rho", "percentile").values,
                      np.nan)[:, :, None, :]
        use = np.isfinite(xe) & np.array([m != "exact" for m in methods])[None, None, :, None]
        refv = np.where(use, xe, refv)
    bg = status == "beyond_grid"
    own = bg & ~np.isfinite(x)
    status[own] = np.where(np.isfinite(refv[own]), "beyond_own", "beyond_both")
    with np.errstate(invalid="ignore", divide="ignore"):
        bound = np.where(bg & ~own, 100 * (x - tmax) / tmax,
                         np.where(status == "beyond_own", 100 * (tmax - refv) / refv, np.nan))
    return a.assign(status=(dims, status.astype(str)), bound=(dims, bound))


def _bound_text(b: float) -> str:
    """A one-sided bound's words in its cell: '≥+823', '≤-30' (%)."""
    return ("≥" if b >= 0 else "≤") + _error_text(b, True)


def _error_map(ax, err, sig, ref, status, rows, ncols, cmap, norm, small, group_colors, sizes, corners=True, ci=None,
               bound=None):
    """One panel of a percentile-error map: ``rows`` (row index → (method index, R index)); every cell with a reference
    shows its error (bold, black or white on its colour, where it counts; grey italic on white where it lies within
    the noise); a cell set against the simulation gets a dot (white ring) in its corner; status cells a grey fill and
    their mark (in black). ``ci``: (low, high) in % — each value's CI printed under it (the check panel)."""
    kinds = set()
    rgb = np.ones((len(rows), ncols, 3))
    for r, (m, i) in enumerate(rows):
        for j in range(ncols):
            st = status[i, j, m]
            if st in GREY_STATUS:
                rgb[r, j] = _rgb(TOO_SHORT_CELL)
            elif st in STATUS_FILL:  # unlike the white "within noise", the light "too short" and each other
                rgb[r, j] = _rgb(STATUS_FILL[st])
            elif ref[i, j, m] and sig[i, j, m]:
                rgb[r, j] = norm_rgb(cmap, norm, err[i, j, m])
            else:
                rgb[r, j] = _rgb(NO_DIFFERENCE_CELL)
    ax.imshow(rgb, aspect="auto", origin="upper", interpolation="nearest")
    for r, (m, i) in enumerate(rows):
        for key, st in (("not_run", "not_run"), ("invalid", "invalid"), (REFERENCE_TOO_SHORT.key, "too_short"),
                        *((k, k) for k in BEYOND_KINDS)):
            jj = np.nonzero(status[i, :, m] == st)[0]
            if not jj.size:
                continue
            kinds.add(key)
            b = bound[i, jj, m] if bound is not None else np.full(jj.size, np.nan)
            lone = ~np.isfinite(b) | (not small)
            ax.plot(jj[lone], np.full(int(lone.sum()), r), **status_style(key, "0.15", ms=sizes["mark"]))
            for j, v in zip(jj[~lone], b[~lone], strict=True):
                _bound_cell(ax, r, j, v, key, cmap, norm, sizes)
        for j in np.nonzero(ref[i, :, m] != 0)[0]:
            _error_cell(ax, r, j, err[i, j, m], bool(sig[i, j, m]), corners and ref[i, j, m] == REF_SIMULATION, norm,
                        small, sizes, None if ci is None else (ci[0][i, j, m], ci[1][i, j, m]))
    from matplotlib.patches import Rectangle

    for r, (m, i) in enumerate(rows):
        for j in np.nonzero(status[i, :, m] == "invalid")[0]:
            ax.add_patch(Rectangle((j - 0.5, r - 0.5), 1.0, 1.0, **INVALID_HATCH, zorder=1))
        for j in np.nonzero((ref[i, :, m] != 0) & sig[i, :, m])[0]:  # counts: framed, however pale its colour
            ax.add_patch(Rectangle((j - 0.5 + SIG_FRAME["inset"], r - 0.5 + SIG_FRAME["inset"]),
                                   1.0 - 2 * SIG_FRAME["inset"], 1.0 - 2 * SIG_FRAME["inset"], fill=False,
                                   edgecolor=SIG_FRAME["color"], lw=SIG_FRAME["lw"], zorder=2))
    for g, _ in group_colors:
        ax.axhline(g - 0.5, color="k", lw=1.0)
    return kinds


def _bound_cell(ax, r, j, v, key, cmap, norm, sizes) -> None:
    """A cell with a one-sided bound ``v`` (%): its mark at the cell's left, the bound right of it in the colour of
    its side (the colour bar's end: red optimistic, blue/purple conservative)."""
    from matplotlib.transforms import offset_copy

    ms = sizes["mark"]
    edge = offset_copy(ax.transData, fig=ax.figure, x=ms / 2 + 2.0, units="points")
    ax.plot([j - 0.5], [r], **status_style(key, "0.15", ms=ms * 0.9), transform=edge, zorder=4)
    at = offset_copy(ax.transData, fig=ax.figure, x=ms / 2 + 1.0, units="points")
    ax.text(j, r, _bound_text(v), ha="center", va="center", fontsize=sizes["text"] - 0.8, fontweight="bold",
            color=norm_rgb(cmap, norm, norm.vmin if v < 0 else norm.vmax), transform=at, zorder=4)


#: the corner dot of a map cell set against the simulation: larger than the figures' common dot (round 15: tiny at
#: page size), with its white ring; the cell's number moves left of it (:data:`DOT_CLEAR`)
MAP_DOT = {**_SIM_DOT, "ms": 6.5}
#: the gap in points between the corner dot (with its white ring) and its cell's frame
SIM_DOT_GAP = 1.5
#: how far (points) a cell's number moves left where its cell has a corner dot, so that the two never touch (round 20)
DOT_CLEAR = MAP_DOT["ms"] / 2 + MAP_DOT["mew"] / 2 + SIM_DOT_GAP + 1.5


def _sim_dot_at(ax, r, j) -> tuple:
    """([x], [y], transform=…) of the corner dot of map cell (row ``r``, column ``j``): its top-right corner inside the
    frame (:data:`SIG_FRAME`), moved in by the dot's radius with its ring and :data:`SIM_DOT_GAP`, in points — wholly
    inside its own cell however small the cell is drawn (round 14: a dot placed in data units sat on the border of
    the R = 10 rows, touching the neighbouring cell). Rows run downwards (the map's origin is upper)."""
    from matplotlib.transforms import offset_copy

    d = MAP_DOT["ms"] / 2 + MAP_DOT["mew"] / 2 + SIM_DOT_GAP
    at = offset_copy(ax.transData, fig=ax.figure, x=-d, y=-d if ax.yaxis_inverted() else d, units="points")
    edge = 0.5 - SIG_FRAME["inset"]
    return [j + edge], [r - edge if ax.yaxis_inverted() else r + edge], {"transform": at}


def _error_cell(ax, r, j, v, significant, against_sim, norm, small, sizes, ci) -> None:
    """A map cell's marks: the dot of a cell set against the simulation, its number (bold where it counts, grey
    italic within the noise) and CI."""
    if against_sim:  # a dot with a white ring in the corner: against the simulation (exact did not run)
        x, y, at = _sim_dot_at(ax, r, j)
        ax.plot(x, y, **MAP_DOT, **at, zorder=4)
    if not (small and np.isfinite(v)):
        return
    txt = _error_text(v, significant)
    if ci is not None and np.isfinite(ci[0]) and np.isfinite(ci[1]):
        txt += f"\n[{_error_text(ci[0])}, {_error_text(ci[1])}]"
    dark = significant and abs(norm(v) - 0.5) > 0.33
    style = ({"color": "w" if dark else "k", "fontweight": "bold"} if significant else
             {"color": "0.5", "style": "italic"})
    from matplotlib.transforms import offset_copy

    at = offset_copy(ax.transData, fig=ax.figure, x=-DOT_CLEAR if against_sim else 0.0, units="points")
    ax.text(j, r, txt, ha="center", va="center", fontsize=sizes["text"] - (1.3 if ci is not None else 0),
            linespacing=0.95, transform=at, **style)


def norm_rgb(cmap, norm, v):
    return np.asarray(cmap(norm(v)))[:3]


def _row_label(label: str) -> str:
    """A method row's name in the maps: at most two names a line, broken after ' = ' (never inside a name), and a
    parenthesis on its own line."""
    head, _, tail = label.partition(" (")
    names = head.split(" = ")
    lines = [" = ".join(names[k:k + 2]) for k in range(0, len(names), 2)]
    return " =\n".join(lines) + (f"\n({tail}" if tail else "")


def _percentile_error_figure(cmp, stem, lines, what, service, exact_check=False, palette="faithful", **kw):
    """Maps of each method's relative percentile error against its reference: one panel per shown percentile (the
    lowest and the highest: :func:`_shown_percentiles`), rows = (method, R), columns = ρ; coloured by ``palette``
    (:data:`PALETTES`: its first colour optimistic, below the reference), white with a grey number = no difference
    (within the CI, or within the grid step of exact), grey ◇ = reference too short. ``exact_check``: exact against
    the simulation where the simulation can tell (the check of both), stated in the caption."""
    if not lines:  # the run computed none of these methods (approximation.methods): say so, draw no empty map
        fig, ax = plt.subplots(figsize=(6.5, 2.0))
        _message_panel(ax, f"this run computed none of {what}\n(approximation.methods in the config)")
        return common.save(fig, stem, caption=Caption(
            f"Relative percentile error of {what} against the best reference ({service} service).", [],
            [f"This run computed none of {what} (approximation.methods in the config): nothing to draw."], []), **kw)
    c = cmp.sel(service=service)
    a = split_beyond(c, against_reference(cmp, service))
    methods = c["approximation"].values.tolist()
    P, rho, Rv = c["percentile"].values, c["rho"].values, c["R"].values
    m = {"err": 100 * a["error"].values, "sig": a["significant"].values, "ref": a["reference"].values,
         "status": a["status"].values, "bound": a["bound"].values}
    rows = [(methods.index(sr.method), int(np.nonzero(Rv == R)[0][0])) for sr in lines for R in Rv]
    have = [any(m["ref"][i, :, j, k].any() for j, i in rows) for k in range(len(P))]
    shown = _shown_percentiles(P, have)
    e_idx = methods.index("exact") if (exact_check and "exact" in methods) else None
    check = [k for k in range(len(P)) if e_idx is not None and (m["ref"][:, :, e_idx, k] == REF_SIMULATION).any()]
    small = len(rho) <= 12 and len(rows) <= 40
    rh = 0.27 if len(rows) <= 30 else max(0.1, 8.0 / len(rows))
    sizes = {"text": 7.8 if small else 5, "mark": 4.5 if small else 2}
    left = 1.9 if len(lines) > 1 else 1.1  # inches: the R labels and the method names beside them
    width = len(shown) * ((0.5 if len(rho) <= 12 else min(0.08, 3.4 / len(rho))) * len(rho) + 0.3) + left + 0.3
    height = rh * len(rows) + 2.0  # title above; tick labels, the colour bar and its words below
    fig, axes = plt.subplots(1, len(shown), figsize=(width, height), squeeze=False, gridspec_kw={"wspace": 0.06})
    axes = list(axes[0])
    clip = _colour_range(m, rows, shown)
    norm, cmap = _error_norm(clip), palette_cmap(palette)
    kinds = set()
    for ax, k in zip(axes, shown, strict=True):
        kinds |= _error_map(ax, m["err"][..., k], m["sig"][..., k], m["ref"][..., k], m["status"][..., k], rows,
                            len(rho), cmap, norm, small, [(g * len(Rv), sr.color) for g, sr in enumerate(lines) if g],
                            sizes, bound=m["bound"][..., k])
        step = max(1, math.ceil(len(rho) / 8))
        ax.set_xticks(range(0, len(rho), step), [f"{x:g}" for x in rho[::step]], fontsize=7.5,
                      rotation=0 if len(rho) <= 12 else 90)
        ax.set_xlabel("load ρ", fontsize=9)
        ax.set_title(f"{P[k]:g}th percentile", fontsize=10)
        ax.set_yticks(range(len(rows)), [f"R = {Rv[i]}" for _, i in rows] if ax is axes[0] else [],
                      fontsize=7 if len(rows) > 20 else 7.5)
    for g, sr in enumerate(lines):
        axes[0].annotate(_row_label(sr.label), xy=(0, (g + 0.5) * len(Rv) - 0.5), xycoords=("axes fraction", "data"),
                         xytext=(-40, 0), textcoords="offset points", ha="right", va="center", fontsize=8.5,
                         fontweight="bold", color=LABEL_COLOR)  # round 20: A–F's hues clashed with the error scale
    fig.subplots_adjust(left=left / width, right=1 - 0.3 / width, top=1 - 0.3 / height, bottom=1.35 / height)
    _error_colorbar(fig, axes, norm, cmap, clip, PALETTES[palette][1:])
    _error_legend(fig, m, rows, kinds, float(cmp.attrs.get("time_step", 0.01)), cmap, norm, _names_clause(lines))
    rest = [P[k] for k in range(len(P)) if k not in shown and have[k]]
    cap = _percentile_error_caption(cmp, a, lines, what, service, [P[k] for k in shown],
                                    [P[k] for k in range(len(P)) if not have[k]], kinds, rest,
                                    [P[k] for k in check], clip, PALETTES[palette])
    fig.suptitle(_pe_title(a, lines, what, service, [P[k] for k in shown]), fontsize=10,
                 y=1.0, va="bottom")
    return common.save(fig, stem, caption=cap, **kw)


#: the paper's methods in the percentile-error title's headline, one line per family (the aggregated-state chains
#: A–C and the truncated ones D–F behave alike within a family)
_FAMILIES = (("A–C", ("A", "B", "C")), ("D–F", ("D", "E", "F")))


def _pe_title(a, lines, what, service, shown) -> str:
    """The percentile-error map's title: what it shows with its colour range, and its findings from the drawn points:
    T never significantly optimistic (how many of its negative errors lie within the noise) or at how many points;
    for the paper's A–F one headline per family (:data:`_FAMILIES`): its most conservative and most optimistic
    significant error and where, or "within the noise"; for the others, their most optimistic and conservative — the
    larger |error| first."""
    A = a.sel(approximation=[sr.method for sr in lines], percentile=shown)
    err, sig = 100 * A["error"].values, A["significant"].values & (A["reference"].values != 0)
    has = A["reference"].values != 0
    names = A["approximation"].values.tolist()
    head = []
    if TAIL in names:
        t = names.index(TAIL)
        below_t = int((sig[:, :, t] & (err[:, :, t] < 0)).sum())
        noise = int((has[:, :, t] & ~sig[:, :, t] & (err[:, :, t] < 0)).sum())
        if below_t == 0:
            head.append("T is never significantly optimistic" + (
                f" ({noise} negative error{'s' if noise > 1 else ''} within the noise)" if noise else ""))
        else:
            worst = float(np.nanmin(np.where(sig[:, :, t] & (err[:, :, t] < 0), err[:, :, t], np.nan)))
            head.append(f"T is significantly optimistic at {below_t} point{'s' if below_t > 1 else ''} (by up to "
                        f"{_size_pct(worst / 100)})")
    rho = A["rho"].values
    fams = [(f, [names.index(m) for m in ms if m in names]) for f, ms in _FAMILIES]
    fams = [(f, k) for f, k in fams if k]
    if not fams or any(n not in {m for _, ms in _FAMILIES for m in ms} | {TAIL} for n in names):
        fams = [("the others" if TAIL in names else "the methods", [k for k, n in enumerate(names) if n != TAIL])]
    for fam, idx in fams:
        ends = []
        for side, pick in (("conservative", np.nanargmax), ("optimistic", np.nanargmin)):  # both extremes, as drawn
            keep = sig[:, :, idx] & ((err[:, :, idx] > 0) if side == "conservative" else (err[:, :, idx] < 0))
            v = np.where(keep, err[:, :, idx], np.nan)
            if np.isfinite(v).any():
                i = np.unravel_index(int(pick(v)), v.shape)
                size = (_error_pct if side == "conservative" else _size_pct)(v[i] / 100)  # no "by up to -65 %"
                ends.append((abs(float(v[i])), f"{side} by up to {size} ({_where_printed(v, i, rho, shown)})"))
        if ends:  # the larger |error| first: it is the message (round 17: "+1 % and −18 %" led with the +1 %)
            head.append(f"{fam} are " + " and ".join(w for _, w in sorted(ends, key=lambda e: -e[0])))
        elif has[:, :, idx].any():
            head.append(f"{fam} are within the reference's noise")
    head = [h[0].upper() + h[1:] for h in head]
    head += [_bounds_line(A, rho, shown)] if any(head) and (A["status"].values == "beyond_grid").any() else []
    return (f"Tail-percentile error of {what} against the best reference ({service} service)"
            + "".join(f"\n{h}" for h in head))  # the colour range and sides: on the colour bar (round 15)


def _where_printed(v, i, rho, shown) -> str:
    """Every place (ρ, percentile) where the errors ``v`` (R, ρ, method, percentile; %) print as the one at ``i`` does:
    'ρ = 0.8 and 0.9, 99.999th' (round 20: the title named ρ = 0.8 for a −18 % that ρ = 0.9 has too)."""
    text = np.vectorize(lambda x: _error_text(x, True) if np.isfinite(x) else "")(v)
    same = text == text[i]
    groups: dict = {}  # the loads → the percentiles where the value prints at each of them
    for k in range(v.shape[3]):
        rr = tuple(sorted({float(rho[j]) for j in np.nonzero(same[..., k].any(axis=(0, 2)))[0]}))
        if rr:
            groups.setdefault(rr, []).append(f"{shown[k]:g}th")
    return "; ".join(f"ρ = {listing([f'{x:g}' for x in rr])}, {listing(pp)}" for rr, pp in groups.items())


def _bounds_line(A, rho, shown) -> str:
    """The title's honest end (round 20): its extremes cover measured cells only; where exact's percentile lies beyond
    t_max (▶) the method is optimistic by at least the bound, the largest such bound with where."""
    st, b = A["status"].values, A["bound"].values
    v = np.where(st == "beyond_grid", b, np.nan)
    if not np.isfinite(v).any():
        return "Extremes over measured cells only; ▶: exact's percentile beyond t_max, the error there unknown"
    i = np.unravel_index(int(np.nanargmin(v)), v.shape)
    return (f"Extremes over measured cells only; where exact's percentile is beyond t_max (▶), optimistic by "
            f"≥ {_size_pct(v[i] / 100)} ({_where_printed(v, i, rho, shown)})")


#: the colour bar's tick labels (points) and the least room between two (points; round 20: "+500 +1000" read as one)
TICK_SIZE = 7.5
TICK_GAP = 8.0


def _tick_label(t) -> str:
    return f"{t:+d}" if t else "0"


def _bar_ticks(norm, clip, width_pt, size=TICK_SIZE) -> list:
    """The colour bar's ticks: :data:`REL_TICKS` within −OPT_CLIP … ``clip`` and both ends, leaving out an inner tick
    whose label would come within :data:`TICK_GAP` points of a kept neighbour's on a bar ``width_pt`` points wide
    (round 20: "+500" and "+1000" overlapped; a label is taken as 0.62 em a character wide)."""
    ticks = sorted({t for t in REL_TICKS if -OPT_CLIP <= t <= clip} | {int(clip), int(-OPT_CLIP)})
    x = {t: float(norm(t)) * width_pt for t in ticks}
    half = {t: 0.31 * size * len(_tick_label(t)) for t in ticks}
    kept = [ticks[0]]
    for t in ticks[1:-1]:
        gap = lambda u, v: x[v] - half[v] - (x[u] + half[u])  # noqa: E731 (points between two labels)
        if gap(kept[-1], t) >= TICK_GAP and gap(t, ticks[-1]) >= TICK_GAP:
            kept.append(t)
    return kept + [ticks[-1]]


def _error_colorbar(fig, axes, norm, cmap, clip=REL_CLIP, words=("red", "blue")) -> None:
    """The maps' colour bar to ±``clip`` (%), horizontal under the panels: "← optimistic" over its left end and
    "conservative →" over its right end, each in its colour (``words``: their colour names), the range and the
    linear band (±LIN_PCT, black lines) in one line under the ticks."""
    x0, x1 = axes[0].get_position().x0, axes[-1].get_position().x1
    span = x1 - x0
    H = fig.get_figheight()
    cax = fig.add_axes([x0 + 0.1 * span, 0.52 / H, 0.8 * span, 0.13 / H])
    cb = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), cax=cax, orientation="horizontal")
    lo = -OPT_CLIP
    ticks = _bar_ticks(norm, clip, 0.8 * span * fig.get_figwidth() * 72, TICK_SIZE)
    cb.set_ticks(ticks, labels=[_tick_label(t) for t in ticks])
    cb.ax.tick_params(labelsize=TICK_SIZE, pad=1.5)
    cb.ax.set_xlim(lo, clip)  # no error lies below −100 %
    for x in (-LIN_PCT, LIN_PCT):
        cb.ax.axvline(x, color="k", lw=1.0)
    for x, ha, text, v in ((0.0, "left", f"← {words[0]}: optimistic (shorter than the reference)", lo),
                           (1.0, "right", f"{words[1]}: conservative (longer) →", clip)):
        cb.ax.text(x, 1.25, text, transform=cb.ax.transAxes, ha=ha, va="bottom", fontsize=8.5, fontweight="bold",
                   color=norm_rgb(cmap, norm, v))
    cb.ax.set_xlabel(f"error (%), colour range {lo:g} to +{clip:g} % in this figure; linear between the black lines "
                     f"at ±{LIN_PCT:g} %, logarithmic beyond", fontsize=8, labelpad=2)


def _names_clause(lines) -> str:
    """What the drawn method names mean, for a reader who has not read the paper (round 20: A* and T were not
    defined on the figure)."""
    names = {m for sr in lines for m in sr.members}
    out = []
    if names & set("ABCDEF"):
        out.append("A–F: the paper's six approximations")
    if any(n.endswith("*") for n in names):
        out.append("A*–F*: the paper's A–F with our corrections (identical ones share a row)")
    if TAIL in names:
        out.append("T (bound): the conservative tail method, its percentile never below the true one")
    return "; ".join(out)


def _error_legend(fig, m, rows, kinds, dt, cmap, norm, names="") -> None:
    """The maps' legend: what the method names mean (``names``), the framed coloured cell (in this figure's colours,
    both sides), the white "no difference" cell (with the grid-step rule), the corner dot and the status marks drawn,
    each once (its glyph is the handle, never repeated in the words)."""
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles, labels = [], []
    if names:
        handles.append(Patch(facecolor="none", edgecolor="none"))
        labels.append(names)
    if any((m["sig"][i, :, j, :] & (m["ref"][i, :, j, :] != 0)).any() for j, i in rows):
        handles.append(tuple(Patch(facecolor=norm_rgb(cmap, norm, v), edgecolor=SIG_FRAME["color"],
                                   lw=SIG_FRAME["lw"]) for v in (-3 * LIN_PCT, 3 * LIN_PCT)))
        labels.append("framed coloured cell, bold number: the difference counts (beyond the CI, or beyond one time "
                      "step of exact), however pale its colour")
    if any(((m["ref"][i, :, j, :] != 0) & ~m["sig"][i, :, j, :]).any() for j, i in rows):
        handles.append(Patch(facecolor=NO_DIFFERENCE_CELL, edgecolor="0.8"))
        labels.append("white cell, grey italic number: no difference — inside the simulation's 95 % CI, or within one "
                      f"time step Δt = {dt:g}\nof exact (so the same % counts at a long percentile and not at a short "
                      "one)")
    if any((m["ref"][i, :, j, :] == REF_SIMULATION).any() for j, i in rows):
        handles.append(Line2D([], [], **{**MAP_DOT, "mec": "0.6"}))
        labels.append("dot in a cell's corner: against the simulation (exact did not run); elsewhere against exact")
    bounds = np.isfinite(m["bound"]).any()
    keys = [k for k in STATUS if k in kinds]
    sh, _ = status_handles(keys)
    # the handle is the glyph, never repeated in the words (round 20: "∅ ∅: …"); long words on two lines
    sl = [textwrap.fill(_mark_words(k, bounds).split(": ", 1)[1], 115) for k in keys]
    for h in sh:
        h.set_color("0.15")
        if h.get_markerfacecolor() != "none":
            h.set_markerfacecolor("0.15")
        h.set_markeredgecolor("0.15")
    handles, labels = handles + sh, labels + sl
    if handles:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=1, frameon=False,
                   fontsize=7.5, handlelength=2.4, handler_map={tuple: HandlerTuple(ndivide=None, pad=0)})


_MARK_WORDS = {"not_run": f"∅ on a mid-grey cell: not run ({skip_reason()})",
               "invalid": "× on a light hatched cell: the method's output is not a CDF there",
               REFERENCE_TOO_SHORT.key: "◇ on a light grey cell: reference too short",
               "beyond_grid": "▶ on a light grey cell: exact's percentile (the reference) lies beyond the time grid "
                              "t_max, the method's within it, and the simulation is too short to replace it: the error "
                              "is at most (x_method − t_max)/t_max{printed} — optimistic by at least that much, by how "
                              "much more unknown",
               "beyond_own": "≫ on a light grey cell: the method's own percentile lies beyond the time grid t_max, its "
                             "reference's within it: the error is at least (t_max − x_ref)/x_ref{printed} — "
                             "conservative",
               "beyond_both": "? on a light grey cell: the method's percentile lies beyond the time grid t_max and no "
                              "reference lies within it: nothing is known"}


def _mark_words(key: str, printed: bool) -> str:
    """Mark ``key``'s words; ``printed``: the bounds are printed in their cells (the time grid's end is known)."""
    return _MARK_WORDS[key].format(printed={"beyond_grid": ", printed as ≤…", "beyond_own": ", printed as ≥…"}.get(
        key, "") if printed else "")


def _cells(n: int) -> str:
    return f"{n} cell" + ("" if n == 1 else "s")


def _percentile_error_caption(cmp, a, lines, what, service, shown, without, kinds, rest, check, clip=REL_CLIP,
                              palette=PALETTES["faithful"]) -> Caption:
    dt = float(cmp.attrs.get("time_step", 0.01))
    methods = [sr.method for sr in lines]
    rel, sig_q, kind_q = Q.rel_ref(cmp), Q.significant(cmp, dt), Q.ref_kind(cmp)
    sel = {"service": service, "approximation": methods, "percentile": [float(p) for p in shown]}
    A = a.sel(approximation=methods, percentile=shown)
    err, sig, ref = A["error"].values, A["significant"].values, A["reference"].values
    findings = []
    n_ref = int((ref != 0).sum())
    pw = listing([f"{p:g}th" for p in shown])
    if n_ref:
        k = int(sig.sum())
        findings.append(Q.k_of_n(f"At the {pw} percentile{'s' if len(shown) > 1 else ''}: a difference beyond the "
                                 f"reference's noise at {k} of the {n_ref} cells with a reference (a cell: one "
                                 "method at one R, load ρ and percentile).", k, n_ref, sig_q, f"{kind_q} != 0", sel))
    findings += _pe_extreme_claims(A, rel, sig_q, sel, {sr.method: sr.label.split(" (")[0] for sr in lines})
    if TAIL in methods:
        m = methods.index(TAIL)
        has = ref[:, :, m, :] != 0
        if has.any():
            s1 = {**sel, "approximation": TAIL}
            below = int((sig[:, :, m, :] & (err[:, :, m, :] < 0)).sum())
            text = (f"T is significantly below its reference at {below} of its {int(has.sum())} cells"
                    + (": it errs on the safe side." if below == 0 else "."))
            findings.append(Q.k_of_n(text, below, int(has.sum()), f"({sig_q}) & ({rel} < 0)", f"{kind_q} != 0", s1))
    if check:
        findings.append(_pe_check_claim(cmp, a, service, check))
    printed = bool(np.isfinite(A["bound"].values).any())
    marks = "; ".join(_mark_words(k, printed) for k in _MARK_WORDS if k in kinds)
    return Caption(
        f"Relative percentile error (x_method − x_ref) / x_ref of {what} at the {pw} percentile (one panel each), per "
        "number of servers R (rows, grouped by method) and load ρ (columns)"
        + ("; the check of both, exact against the simulation, is not drawn: its numbers are the last finding."
           if check else "."), findings,
        _pe_limits(cmp, A, sel, without, rest),
        [("The reference is exact's percentile where exact ran (no noise: a difference counts beyond one grid step) "
         "and the mean simulated percentile elsewhere (a dot in the cell's corner; a difference counts where the "
         "95% CI of the mean error excludes 0). Every cell with a reference shows its error in %: coloured where it "
         f"counts ({palette[1]}: the method promises shorter sojourns than the reference, optimistic; "
         f"{palette[2]}: longer; the number in bold, however pale the colour), grey italic on white where it lies "
         "within the reference's noise; \"<0.1\": "
         "|error| below 0.05 % within the noise (where so small a difference counts, beyond one grid step of a long "
         "percentile, it is printed to its first non-zero decimal, e.g. +0.03). Colour range "
         f"−{OPT_CLIP:g} % to +{clip:g} % in this figure, linear within ±{LIN_PCT:g} %, logarithmic beyond: the "
         f"optimistic side always to −{OPT_CLIP:g} %, red in both percentile-error figures, so that one shade is one "
         "error in both; the conservative side to the smallest of "
         f"{', '.join(f'{c:g}' for c in _CLIP_STEPS)} % that holds every conservative error that counts, blue for "
         "the paper's A–F and purple for the corrected methods, so that a shade of one range is not read on the "
         "other's. A cell whose difference counts is framed."
         + (f" Marks: {marks}." if marks else ""))])


def _pe_extreme_claims(A, rel, sig_q, sel, labels=None) -> list:
    """The percentile-error caption's most optimistic and most conservative significant point (if on that side), and
    every other method that reaches the same rounded error, with where (``labels``: a method's name in the text)."""
    err, sig, ref = A["error"].values, A["significant"].values, A["reference"].values
    dims = A["error"].dims
    out = []
    for op, word in (("argmin", "Most below its reference (optimistic)"), ("argmax", "Most above")):
        v = np.where(sig, err, np.nan)
        if not np.isfinite(v).any():
            continue
        idx = np.unravel_index(int(np.nanargmin(v) if op == "argmin" else np.nanargmax(v)), v.shape)
        loc = {d: (float(A[d].values[x]) if A[d].dtype.kind == "f" else
                   (int(A[d].values[x]) if A[d].dtype.kind in "iu" else str(A[d].values[x])))
               for d, x in zip(dims, idx, strict=True)}
        loc["value"] = float(v[idx])
        if (op == "argmin" and loc["value"] >= 0) or (op == "argmax" and loc["value"] <= 0):
            continue
        name = (labels or {}).get(loc["approximation"], loc["approximation"])
        also = _pe_also(A, v, idx, labels or {})
        size = (_size_pct if op == "argmin" else _error_pct)(loc["value"])  # the side is in the words: its size
        out.append(Claim(f"{word}: {name} by {size} at R = {loc['R']}, "
                         f"ρ = {loc['rho']:g}, the {loc['percentile']:g}th percentile (against "
                         f"{'exact' if ref[idx] == REF_EXACT else 'the simulation'})"
                         + (f"; the same {size} also {also}" if also else "") + ".", loc,
                         Q.query(f"where({sig_q}, {rel}, nan)", ((op, None),), None, sel),
                         half_unit(_error_digits(100 * loc["value"], True), 100)))
    return out


def _pe_also(A, v, idx, labels) -> str:
    """Every other point whose significant error ``v`` (in A's dims) prints in its cell (``_error_text``) as the one
    at ``idx`` does — the same method's other cells first (round 14: A's +823 % at R = 5 went unnamed beside
    R = 10), then each other method — with its (R, ρ, percentile) points: 'at R = 5, ρ = 0.1, 99th; for C* (R = 5,
    ρ = 0.8 and 0.9, 99.999th)', point by point where they are not every combination; '' if none."""
    dims = A["error"].dims
    a_ax = dims.index("approximation")
    shown = np.vectorize(lambda x: _error_text(100 * x, True) if np.isfinite(x) else "")(v)
    same = shown == shown[idx]  # the same error as the cells print it (+0.5 and +0.9 are not "+1")
    same[idx] = False
    out = []
    names = A["approximation"].values.tolist()
    for k in [idx[a_ax]] + [k for k in range(len(names)) if k != idx[a_ax]]:
        m = names[k]
        pts = np.argwhere(np.take(same, k, axis=a_ax))
        if not pts.size:
            continue
        rest = [d for d in dims if d != "approximation"]
        where = {d: sorted({A[d].values[p[j]].item() for p in pts}) for j, d in enumerate(rest)}
        if len(pts) == np.prod([len(w) for w in where.values()]):  # every combination: one compact phrase
            pw = listing([f"{x:g}th" for x in where["percentile"]])
            at = f"R = {listing([str(x) for x in where['R']])}, ρ = {listing([f'{x:g}' for x in where['rho']])}, {pw}"
        else:  # not a product (round 15: "R = 2, 3 and 5, ρ = 0.3, 99th and 99.999th" named points that differ)
            pt = [{d: A[d].values[p[j]].item() for j, d in enumerate(rest)} for p in pts]
            at = "; ".join(f"R = {q['R']}, ρ = {q['rho']:g}, {q['percentile']:g}th" for q in pt)
        out.append((f"at {at}" if len(pts) == 1 or ";" not in at else f"at ({at})") if k == idx[a_ax]
                   else f"for {labels.get(m, m)} ({at})")
    return "; ".join(out)


def _pe_check_claim(cmp, a, service, check) -> Claim:
    """The check's claim: at how many points exact differs from the simulation beyond its CI, and by how much."""
    dt = float(cmp.attrs.get("time_step", 0.01))
    rel, sig_q, kind_q = Q.rel_ref(cmp), Q.significant(cmp, dt), Q.ref_kind(cmp)
    E = a.sel(approximation="exact", percentile=check)
    has = E["reference"].values != 0
    sg = E["significant"].values & has
    e = E["error"].values[sg]
    s1 = {"service": service, "approximation": "exact", "percentile": [float(p) for p in check]}
    text = (f"The check: exact differs from the simulation beyond the simulation's 95% CI at {int(sg.sum())} of "
            f"the {int(has.sum())} cells where the simulation can tell (about one in 20 would by chance)"
            + ("." if not e.size else f", by {_pct(e.min(), 0)}." if _pct(e.min(), 0) == _pct(e.max(), 0) else
               f", by {_pct(e.min(), 0)} to {_pct(e.max(), 0)}."))
    cl = Q.k_of_n(text, int(sg.sum()), int(has.sum()), sig_q, f"{kind_q} != 0", s1)
    if e.size:
        cl.value += [float(e.min()), float(e.max())]
        cl.query += [Q.query(rel, ((op, None),), f"({kind_q} != 0) & ({sig_q})", s1) for op in ("min", "max")]
        cl.tol = half_unit(0, 100)
    return cl


def _pe_limits(cmp, A, sel, without, rest) -> list:
    """What the percentile-error maps cannot show, from the drawn cells ``A`` (:func:`split_beyond`): cells without a
    reference (too short, beyond the time grid, with the bounds known there), methods not run or invalid,
    percentiles without any reference or left out."""
    kind_q = Q.ref_kind(cmp)
    everywhere = "(usable >= 0) & (percentile > 0)"
    status, bound = A["status"].values, A["bound"].values
    n = int(status.size)
    none_q = f"(usable != 0) & ({kind_q} == 0)"
    limits = []
    n_short = int((status == "too_short").sum())
    if n_short:
        limits.append(Q.k_of_n(f"No reference at {n_short} of the {n} cells drawn: exact did not run there and the "
                               f"simulation is too short ({RULE}); grey ◇.", n_short, n,
                               f"{none_q} & ~{Q.beyond_grid(cmp)}", everywhere, sel))
    n_ex = int((status == "beyond_grid").sum())
    if n_ex:
        b = bound[status == "beyond_grid"]
        worst = (f"; there the methods are optimistic by at least {_size_pct(float(np.nanmin(b)) / 100)} at "
                 "worst" if np.isfinite(b).any() else "")
        limits.append(Q.k_of_n(f"At {n_ex} of the {n} cells drawn exact's percentile (the reference) lies beyond the "
                               "time grid t_max while the method's lies within, and the simulation is too short to "
                               f"replace it (▶): the error is known only to be at most (x_method − t_max)/t_max"
                               f"{worst}.", n_ex, n, f"{none_q} & isfinite(approx_percentile) & {Q.beyond_grid(cmp)}",
                               everywhere, sel))
    n_own, n_both = int((status == "beyond_own").sum()), int((status == "beyond_both").sum())
    if n_own + n_both:
        b = bound[status == "beyond_own"]
        words = [f"its reference's lies within at {_cells(n_own)} (≫: the error is at least (t_max − x_ref)/x_ref, "
                 "conservative" + (f", from {_error_pct(float(np.nanmin(b)) / 100)} to "
                                   f"{_error_pct(float(np.nanmax(b)) / 100)}" if np.isfinite(b).any() else "") + ")"
                 ] if n_own else []
        words += [f"nothing is known at {_cells(n_both)} (?: no reference within t_max)"] if n_both else []
        limits.append(Q.k_of_n(f"At {n_own + n_both} of the {n} cells drawn the method's own percentile lies beyond "
                               f"the time grid t_max: {'; '.join(words)}.", n_own + n_both, n,
                               f"{none_q} & ~isfinite(approx_percentile)", everywhere, sel))
    for key, why in (("not_run", f"the method did not run there ({skip_reason()})"),
                     ("invalid", "the method's output is not a CDF there")):
        k = int((status == key).sum())
        if k:  # round 20: the corrected map did not say how many ∅
            glyph = _MARK_WORDS[key].split(" ", 1)[0]
            limits.append(f"{glyph} at {k} of the {n} cells drawn: {why}.")
    if without:
        limits.append(f"No method has a reference at the {listing([f'{p:g}th' for p in without])} percentile"
                      f"{'s' if len(without) > 1 else ''} in this run: "
                      f"{'it is' if len(without) == 1 else 'they are'} not drawn.")
    if rest:
        limits.append(f"The {listing([f'{p:g}th' for p in rest])} percentile{'s are' if len(rest) > 1 else ' is'} "
                      "left out of the figure to keep it readable: comparison.nc and accuracy.csv hold "
                      f"{'them' if len(rest) > 1 else 'it'}.")
    return limits


def percentile_error_vs_rho(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Relative percentile error of the paper's A–F against the best reference (maps, one panel per percentile)."""
    return _percentile_error_figure(cmp, stem, series(cmp, "faithful"), "the paper's methods A–F", service, **kw)


def percentile_error_vs_rho_corrected(cmp: xr.Dataset, stem, service=EXPONENTIAL, **kw):
    """Relative percentile error of the corrected chains and T against the best reference (maps, one panel per
    shown percentile), in their own palette; exact against the simulation where the simulation can tell (the
    check) in the caption."""
    lines = [s for s in series(cmp, "corrected") if s.method != "exact"]
    return _percentile_error_figure(cmp, stem, lines, "the corrected methods and T", service,
                                    exact_check=service == EXPONENTIAL, palette="corrected", **kw)
