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
