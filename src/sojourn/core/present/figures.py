"""What every study's figures share: the Agg backend, reproducible files, and one lock.

Matplotlib is not thread-safe (its mathtext parser, font cache and pyplot state are process-wide), and
Snakemake runs the jobs of a workflow as threads of one process: two studies' figure jobs running at the
same time corrupted each other's tick labels ("ParseException: Expected end of text"). Every figure
entry function therefore runs under :data:`FIGURE_LOCK` (decorate it with :func:`serialized`).
"""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .mpl import plt  # imported on first use (mpl.py)

#: held while any figure of any study is drawn in this process
FIGURE_LOCK = threading.RLock()


def serialized(fn):
    """Run ``fn`` under :data:`FIGURE_LOCK` (for a study's figure entry function)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with FIGURE_LOCK:
            return fn(*args, **kwargs)

    return wrapper


#: the widest a figure may be in the report, in pixels of its PNG (a report page shows about this much unscaled)
MAX_WIDTH_PX = 1600


def _fitting_dpi(fig, dpi: float) -> float:
    """``dpi``, or less where the figure's tight box (legends and labels included, which vary by matplotlib
    release) would make its PNG wider than :data:`MAX_WIDTH_PX`."""
    original = fig.get_dpi()
    for _ in range(4):  # text extents change with the dpi they are laid out at: measure again at the new dpi
        fig.set_dpi(dpi)
        width = fig.get_tightbbox(fig.canvas.get_renderer()).width + 2 * plt.rcParams["savefig.pad_inches"]
        if width * dpi <= MAX_WIDTH_PX - 2:
            break
        dpi = (MAX_WIDTH_PX - 2) / width * 0.995
    fig.set_dpi(original)
    return dpi


def save(fig, stem, formats=("png", "pdf"), dpi=120, caption=None) -> list[Path]:
    """``fig`` as ``<stem>.<fmt>`` for each format, with fixed metadata (identical inputs give identical
    files), each written atomically, and its caption (:class:`sojourn.core.present.claims.Caption`) as ``<stem>.rst``;
    closes the figure."""
    import io

    from ..files.integrity import replaceable, write_atomic

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [replaceable(stem.with_name(f"{stem.name}.{fmt}")) for fmt in formats]  # before drawing any
    with FIGURE_LOCK:
        for fmt, path in zip(formats, paths, strict=True):
            meta = {"Software": None} if fmt == "png" else ({"CreationDate": None} if fmt == "pdf" else {"Date": None})
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=_fitting_dpi(fig, dpi) if fmt == "png" else dpi, bbox_inches="tight",
                        metadata=meta)
            write_atomic(path, buf.getvalue())  # atomic: a figure is whole or absent
        plt.close(fig)
    if caption is not None:
        paths.append(caption.write(stem.with_name(f"{stem.name}.rst")))
    return paths


# ---------------------------------------------------------------------------------------------
# the registry: every study declares its figures once (plots.FIGURES), the workflow derives from it the rule
# outputs and the report captions, and the study's figure job draws exactly those


@dataclass(frozen=True)
class Figure:
    """One kind of figure of a study: ``stem`` (its file name without extension; ``{name}`` fields are filled per
    instance, e.g. ``cdf_R~{R}_rho~{rho}``), ``draw`` (the study's function that draws it, and writes its caption
    ``<stem>.rst`` from the same data: :class:`sojourn.core.present.claims.Caption`) and ``job`` (the study's job that
    draws it)."""

    stem: str
    draw: str
    job: str = "figures"


@dataclass(frozen=True)
class FigureFile:
    """One figure a config produces: its ``stem`` (fields filled), its kind, and the values the fields took."""

    stem: str
    kind: Figure
    fields: dict = field(default_factory=dict)


def instance(kind: Figure, **fields) -> FigureFile:
    return FigureFile(kind.stem.format(**fields) if fields else kind.stem, kind, dict(fields))


def registry(figures) -> dict:
    """{draw name: Figure} of a study's ``FIGURES`` (each draw function declared once)."""
    out = {}
    for f in figures:
        if f.draw in out:
            raise ValueError(f"figure {f.draw!r} declared twice")
        out[f.draw] = f
    return out


# ---------------------------------------------------------------------------------------------
# one look for every study: the colour and name of each method, the unit of time, readable log ticks
#: time on every axis is in mean service times (1/μ = 1), as the README defines; split-merge: mean replica
#: service times of the experiment's replica law
TIME_UNIT = "mean service times"

#: the colour of each method in every figure (lines, maps, markers): A–D the first four tab10 colours, E olive (round
#: 12: tab10's lilac read as exact's pink in the CDF panels) and F cyan (tab10's brown beside E read as one colour),
#: the corrected chains their own hues (A* = B* = D* = E* give one CDF and are drawn in A*'s brown, C* = F* in C*'s
#: dark purple, unlike C's green — round 12: navy beside T's dark teal read as one line; no grey, which reads as
#: "missing" beside grey ties), exact pink, T dark teal
METHOD_COLORS = {
    "A": "#1f77b4", "B": "#ff7f0e", "C": "#2ca02c", "D": "#d62728", "E": "#bcbd22", "F": "#17becf",
    "A*": "#8c564b", "B*": "#7570b3", "C*": "#6a3d9a", "D*": "#a6761d", "E*": "#b2df8a", "F*": "#666600",
    "exact": "#e377c2", "T": "#00685a",
}
#: a marker per method, so that lines of one colour family stay apart where they coincide (the A–F panels)
METHOD_MARKERS = {"A": "o", "B": "s", "C": "^", "D": "v", "E": "D", "F": "P", "A*": "o", "B*": "s", "C*": "^",
                  "D*": "v", "E*": "D", "F*": "P", "exact": "o", "T": "X"}


def method_color(m: str) -> str:
    return METHOD_COLORS.get(m, "#7f7f7f")


def log_ticks(axis, minor_labels=False):
    """A log ``axis`` (ax.xaxis / ax.yaxis) labelled 0.1, 0.2, 0.5, 1, 2, 5, 10 … (never 2×10⁻¹, 6×10⁰)."""
    import math

    from matplotlib import ticker

    def label(v, _):  # 2 and 5 only where the axis spans under two and a half decades
        lo, hi = sorted(axis.get_view_interval())
        wide = lo > 0 and math.log10(hi / lo) > 2.5
        mant = v / 10 ** math.floor(math.log10(v) + 1e-9) if v > 0 else 0
        return "" if wide and abs(mant - 1) > 1e-6 else f"{v:g}"

    axis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(ticker.FuncFormatter(label))
    axis.set_minor_locator(ticker.LogLocator(subs=(3.0, 4.0, 6.0, 7.0, 8.0, 9.0)))
    axis.set_minor_formatter(ticker.NullFormatter())


def signed_log_ticks(axis, linthresh=1.0):
    """A symlog ``axis`` labelled −100, −10, −1, 0, 1, 10, 100 (never −10⁰, 10¹)."""
    from matplotlib import ticker

    axis.set_major_locator(ticker.SymmetricalLogLocator(base=10, linthresh=linthresh))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}".replace("-", "−")))
    axis.set_minor_formatter(ticker.NullFormatter())


# ---------------------------------------------------------------------------------------------
# status marks: why a value is not drawn, one mark and one legend entry per status in every figure of every study.
# They never sit at a y that reads as data: line figures draw them in a strip above the panel (status_strip), maps
# in the cell (a grey cell for a reference too short).
@dataclass(frozen=True)
class Status:
    """How a missing value is marked: ``marker`` (matplotlib), ``label`` (the legend entry), ``filled``, ``color``
    (None: the colour of the series it belongs to)."""

    key: str
    marker: str
    label: str
    filled: bool = True
    color: str | None = None


#: the one reference-too-short rule's mark: a simulated reference with fewer than 100 customers (jobs, workunits) per
#: replication beyond the percentile, or a run the run-length guard (sojourn.core.estimates.runlength) judged too short
REFERENCE_TOO_SHORT = Status("reference_too_short", "D", "reference too short (simulation too short to estimate it)",
                             filled=False, color="0.35")
#: the same rule where the value is the simulation's own estimate, not a reference for something else (a restart
#: sweep's percentile, fork-join's latency): the same mark, worded for what it is
ESTIMATE_TOO_SHORT = Status("estimate_too_short", "D", "simulation too short to estimate it", filled=False,
                            color="0.35")
STATUS = {s.key: s for s in (
    REFERENCE_TOO_SHORT,
    ESTIMATE_TOO_SHORT,
    # ∅ (nothing computed): a dash read as a dashed-line legend sample beside a row's name; letters ("n/r") do not fit
    # between neighbouring loads
    Status("not_run", r"$\varnothing$", "∅: not run (over budget / truncation cap)"),
    Status("invalid", "x", "invalid fit (not a CDF)"),
    Status("beyond_grid", ">", "beyond the time grid (percentile above t_max)", color="0.35"),
    # a method's OWN percentile beyond t_max while its reference's lies within (a one-sided, conservative bound on its
    # error), and neither known (both beyond, or no reference): marks apart from ▶, which is always the reference's
    Status("beyond_own", r"$\gg$", "the method's own percentile lies beyond the time grid (t_max)", color="0.35"),
    Status("beyond_both", "$?$", "the percentile and its reference both unknown within the time grid", color="0.35"),
    Status("unstable", "X", "unstable: stopped, no steady state"),
    # not a missing value but a mark that must not sit at a y either: a sweep's best point, in its series' strip row
    # and colour (the figure's legend words what "best" is)
    Status("best_rate", "v", "strip above, in each series' row: the rate of its best value"),
)}
#: a map cell whose reference is too short: this grey, with the mark in its centre
TOO_SHORT_CELL = "0.86"
#: a map cell whose difference lies within its CI (or within the reference's own error): drawn as "no difference"
NO_DIFFERENCE_CELL = "#ffffff"


#: a status strip's bar (:meth:`StatusStrip.span`): light and thick, square ends, under the row's marks
SPAN_STYLE = {"lw": 4.0, "alpha": 0.35, "solid_capstyle": "butt", "zorder": 1}


def status_style(key: str, color=None, ms=5.0) -> dict:
    """Line2D keyword arguments of status ``key``'s mark (in ``color`` where the status has no colour of its own)."""
    s = STATUS[key]
    c = s.color or color or "0.3"
    text = s.marker.startswith("$")  # a mark in letters: wider, thin strokes
    style = {"marker": s.marker, "ls": "none", "color": c, "ms": ms * 1.3 if text else ms, "mew": 0.2 if text else 1.2}
    if not s.filled:
        style.update(mfc="none", mec=c)
    return style


def status_handles(keys) -> tuple[list, list]:
    """Legend (handles, labels) explaining the status marks ``keys`` (in the order of :data:`STATUS`), grey."""
    from matplotlib.lines import Line2D

    keys = [k for k in STATUS if k in set(keys)]
    return ([Line2D([], [], **status_style(k, "0.3")) for k in keys], [STATUS[k].label for k in keys])


class StatusStrip:
    """A thin strip above a panel that shares its x axis: one row per series with a status mark (and a row for a
    reference too short), so that no mark sits at a y of the panel's data. Create it with :func:`status_strip`;
    ``mark`` returns whether it drew anything; ``finish`` sets the rows once every mark is in."""

    def __init__(self, ax):
        self.ax = ax
        self.rows: list = []  # (row key, colour)
        self.marks: list = []  # (row key, x, status key, colour)
        self.kinds: set = set()
        self.labels: dict = {}
        self.spans: list = []  # (row key, x from, x to, colour)

    def mark(self, row, x, mask, key: str, color=None, label=None) -> bool:
        """Status ``key``'s mark at the ``x`` where ``mask`` holds, in row ``row`` (one per series; ``label``: its
        name at the strip's right end, in ``color``)."""
        x = np.asarray(x)[np.asarray(mask, dtype=bool)]
        if not x.size:
            return False
        if row not in [r for r, _ in self.rows]:
            self.rows.append((row, color))
            if label:
                self.labels[row] = (label, color)
        self.marks.append((row, x, key, color))
        self.kinds.add(key)
        return True

    def span(self, row, x0, x1, color=None) -> None:
        """A bar from ``x0`` to ``x1`` in row ``row`` (an existing row: marked first), under its marks: the range a
        mark stands for (a best value's rates within its CI)."""
        if row in [r for r, _ in self.rows]:
            self.spans.append((row, x0, x1, color))

    def height(self, n, row_pt=None) -> float:
        """The strip's height for ``n`` rows, a share of its panel's: ``row_pt`` points a row where given (a strip as
        thin as its marks and names need, whatever the panel's height), else a fixed share a row."""
        if not row_pt:
            return 0.045 + 0.055 * n
        panel_pt = self.ax.get_position().height * self.ax.figure.get_figheight() * 72.0
        return row_pt * (n + 0.4) / max(panel_pt, 1.0)

    def finish(self, title=None, fontsize=9, reserve=0, label_size=7, row_pt=None, series_color=False):
        """Draw the strip (only if it has marks) and put the panel's ``title`` above it (or on the panel).
        ``reserve``: rows to keep free even without marks (an empty, invisible strip), so that a panel beside one
        with a strip keeps its plot area and title at the same height; ``label_size``: the rows' names' font size;
        ``row_pt``: the height of a row in points (rows of names at ``label_size`` that must not touch, and no
        taller): the strip's height fixed in points, not a share of the panel's; ``series_color``: each mark in its
        row's series colour (where the rows' names alone would not say whose a black mark is)."""
        ax = self.ax
        if not self.marks:
            if reserve:
                blank = ax.inset_axes([0.0, 1.02, 1.0, self.height(reserve, row_pt)])
                blank.set_axis_off()
                if title:
                    blank.set_title(title, fontsize=fontsize, loc="left")
                return blank
            if title:
                ax.set_title(title, fontsize=fontsize, loc="left")
            return None
        n = max(len(self.rows), reserve)
        h = self.height(n, row_pt)
        strip = ax.inset_axes([0.0, 1.02, 1.0, h], sharex=ax)
        order = {r: k for k, (r, _) in enumerate(self.rows)}
        for row, x0, x1, color in self.spans:  # under the marks, in the row's colour, light: the mark stays in front
            strip.plot([x0, x1], [n - 1 - order[row]] * 2, **SPAN_STYLE, color=color or "0.3", clip_on=False)
        for row, x, key, _color in self.marks:  # the mark in its status colour (as in the legend); the row's name
            y = n - 1 - order[row]              # at the right end in the series colour says whose it is
            strip.plot(x, np.full(x.size, y), **status_style(key, _color if series_color else None, ms=5.0),
                       clip_on=False)
        strip.set_ylim(-0.7, n - 0.3)
        strip.set_yticks([])
        strip.tick_params(axis="x", which="both", labelbottom=False, length=0)
        strip.set_facecolor("0.96")
        for row, (text, color) in self.labels.items():
            strip.text(1.01, n - 1 - order[row], text, transform=strip.get_yaxis_transform(), ha="left", va="center",
                       fontsize=label_size, color=color or "0.3", fontweight="bold")
        for side in strip.spines.values():
            side.set_color("0.75")
        if title:
            strip.set_title(title, fontsize=fontsize, loc="left")
        return strip


def status_strip(ax) -> StatusStrip:
    return StatusStrip(ax)


def mark_cells(ax, mask2d, key: str, color=None, ms=5.0) -> bool:
    """Status ``key``'s mark in the centre of each cell of an image map (``imshow``: x = column, y = row) where
    ``mask2d`` holds."""
    ii, jj = np.nonzero(np.asarray(mask2d, dtype=bool))
    if not ii.size:
        return False
    ax.plot(jj, ii, **status_style(key, color, ms=ms))
    return True

