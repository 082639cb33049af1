"""What every study's figures share: the Agg backend, reproducible files, and one lock.

Matplotlib is not thread-safe (its mathtext parser, font cache and pyplot state are process-wide), and
Snakemake runs the jobs of a workflow as threads of one process: two studies' figure jobs running at the
same time corrupted each other's tick labels ("ParseException: Expected end of text"). Every figure
entry function therefore runs under :data:`FIGURE_LOCK` (decorate it with :func:`serialized`).
"""
from __future__ import annotations

import functools
import threading
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

#: held while any figure of any study is drawn in this process
FIGURE_LOCK = threading.RLock()


def serialized(fn):
    """Run ``fn`` under :data:`FIGURE_LOCK` (for a study's figure entry function)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with FIGURE_LOCK:
            return fn(*args, **kwargs)

    return wrapper


def save(fig, stem, formats=("png", "pdf"), dpi=120) -> list[Path]:
    """``fig`` as ``<stem>.<fmt>`` for each format, with fixed metadata (identical inputs give identical
    files), each written atomically; closes the figure."""
    import io

    from .integrity import replaceable, write_atomic

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [replaceable(stem.with_name(f"{stem.name}.{fmt}")) for fmt in formats]  # before drawing any
    with FIGURE_LOCK:
        for fmt, path in zip(formats, paths):
            meta = {"Software": None} if fmt == "png" else ({"CreationDate": None} if fmt == "pdf" else {"Date": None})
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight", metadata=meta)
            write_atomic(path, buf.getvalue())  # atomic: a figure is whole or absent
        plt.close(fig)
    return paths


# ---------------------------------------------------------------------------------------------
# the registry: every study declares its figures once (plots.FIGURES), the workflow derives from it the rule
# outputs and the report captions, and the study's figure job draws exactly those
from dataclasses import dataclass, field  # noqa: E402


@dataclass(frozen=True)
class Figure:
    """One kind of figure of a study: ``stem`` (its file name without extension; ``{name}`` fields are filled per
    instance, e.g. ``cdf_R~{R}_rho~{rho}``), ``caption`` (the caption file ``workflow/report/<study>/<caption>.rst``,
    which says what to see), ``draw`` (the study's function that draws it) and ``job`` (the study's job that
    draws it)."""

    stem: str
    caption: str
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

#: the colour of each method in every figure (lines, maps, markers): A–F the first six tab10 colours, the corrected
#: chains a darker set (A* = B* = D* = E* give one CDF and are drawn in A*'s colour, C* = F* in C*'s), exact pink,
#: T dark teal
METHOD_COLORS = {
    "A": "#1f77b4", "B": "#ff7f0e", "C": "#2ca02c", "D": "#d62728", "E": "#9467bd", "F": "#8c564b",
    "A*": "#4d4d4d", "B*": "#17becf", "C*": "#bcbd22", "D*": "#a6761d", "E*": "#7570b3", "F*": "#666600",
    "exact": "#e377c2", "T": "#00685a",
}


def method_color(m: str) -> str:
    return METHOD_COLORS.get(m, "#7f7f7f")


def log_ticks(axis, minor_labels=False):
    """A log ``axis`` (ax.xaxis / ax.yaxis) labelled 0.1, 0.2, 0.5, 1, 2, 5, 10 … (never 2×10⁻¹, 6×10⁰)."""
    from matplotlib import ticker

    import math

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
