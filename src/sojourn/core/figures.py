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
    files); closes the figure."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = []
    with FIGURE_LOCK:
        for fmt in formats:
            path = stem.with_name(f"{stem.name}.{fmt}")
            meta = {"Software": None} if fmt == "png" else ({"CreationDate": None} if fmt == "pdf" else {"Date": None})
            fig.savefig(path, dpi=dpi, bbox_inches="tight", metadata=meta)
            out.append(path)
        plt.close(fig)
    return out


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
