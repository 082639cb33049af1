"""The study protocol: what every study supplies, and the one driver that runs it.

A study (``sojourn.<name>``) declares one object satisfying :class:`Study` (``sojourn.<name>.protocol.STUDY``,
named by :mod:`sojourn.studies`): its cached steps, its replication task, its comparison and its figures. A
*step* (:class:`Step`) is one cached unit of work of a rule — a block of simulation cells, the exact values of
an experiment, a product form over a grid of rates — and says only what is particular to it:

* its cells (:class:`sojourn.core.runs.runner.Cell`: a content key, the task's arguments, and ``coords``, the typed
  values the cell sits at in the stored file, e.g. ``{"rho": 0.8}``; nothing is parsed back from a label);
* its task (``task(*cell.args, k, **shared)``, or ``task(*cell.args, **shared)`` for a deterministic step),
  and for a replicated step its precision estimate ``estimate(cell, k, result)`` (``result``: the task's, or a
  replication from the cache: its record);
* ``record(cell, result)``: one task's result as it is stored (a replicated step: a length-1 ``replication``
  dim);
* ``finish(cell, ds)``: the cell's dataset once its replications are joined (e.g. the run-length guard);
* its storage layout (:class:`Layout`: the grid dims, the variables a record keeps, the gap values, the
  precision units) and ``encoding(ds)``; ``attrs(cells, cell_attrs)``: the stored file's attributes.

:func:`run_step` does everything else, once for every study: the cache lookup per (cell, replication), the run
on an executor (retries, the watchdog, the precision loop: :func:`sojourn.core.runs.runner.run_cells`), the join of
each cell's replications, its precision variables, the assembly of the cells into one dataset along the
layout's dims (gaps filled), and the sealed store under the cells' keys. The Python API's loop over
replications is :func:`sojourn.core.estimates.replications.replicate`, also once.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from . import runner

if TYPE_CHECKING:
    import xarray as xr

    from ..estimates.precision import Precision

LOG = logging.getLogger("sojourn.runner")


@dataclass(frozen=True)
class Layout:
    """How a step's result is stored: ``dims`` the grid dims (each cell one coordinate of each, its ``coords``);
    ``record`` the variables a stored result keeps (None: all); ``fill`` the gap values of integer variables
    where cells stop at different replication counts or a grid is incomplete (floats: NaN); ``units`` of the
    precision variables; ``replicated``: False for a deterministic step (one task per cell); ``coords``: the
    attributes of the grid coordinates (long_name, units)."""

    dims: tuple[str, ...]
    record: tuple[str, ...] | None = None
    fill: Mapping[str, Any] = field(default_factory=dict)
    units: str = "1"
    replicated: bool = True
    coords: Mapping[str, dict] = field(default_factory=dict)  # attributes of the grid coordinates


@runtime_checkable
class Step(Protocol):
    """One cached step of a study's rule (module doc)."""

    name: str  # what its tasks are, in logs and task names
    layout: Layout
    task: Callable  # a picklable module-level function
    shared: Mapping  # keyword arguments of every task

    def cells(self) -> Sequence[runner.Cell]: ...

    def estimate(self, cell: runner.Cell, k: int, result) -> float: ...

    def record(self, cell: runner.Cell, result) -> xr.Dataset: ...

    def finish(self, cell: runner.Cell, ds: xr.Dataset) -> xr.Dataset: ...

    def attrs(self, cells: Sequence[runner.Cell], cell_attrs: Mapping[str, dict]) -> dict: ...

    def encoding(self, ds: xr.Dataset) -> dict | None: ...


@runtime_checkable
class Study(Protocol):
    """What a study is to the core: its cached steps by name (each a :class:`Step` class its job builds from the
    rule's parameters; ``analytic`` names the exact/analytic one), the replication task of the Python API and the
    pipeline, and its comparison and figures (functions of the rule's inputs, as the jobs call them)."""

    name: str
    steps: Mapping[str, type]
    analytic: str
    replication: Callable

    def compare(self, **inputs) -> Any: ...

    def figures(self, **inputs) -> Any: ...


@dataclass(eq=False)
class StepFields:
    """The members of a :class:`Step` a study's step sets in its ``__post_init__`` from the rule's parameters
    (a base for its dataclass: ``class SimulationBlock(StepFields)``)."""

    layout: Layout = field(init=False, repr=False)
    task: Callable = field(init=False, repr=False)
    shared: dict = field(init=False, repr=False, default_factory=dict)


@dataclass(frozen=True)
class Declaration:
    """A study's :class:`Study`: its steps, its analytic step's name, its replication task, its comparison and its
    figures (the functions its jobs call)."""

    name: str
    steps: Mapping[str, type]
    analytic: str
    replication: Callable
    compare: Callable
    figures: Callable


def members(protocol) -> tuple[str, ...]:
    """The names a class must provide to satisfy ``protocol`` (its annotations and its methods)."""
    names = set(getattr(protocol, "__annotations__", {}))
    names |= {n for n, v in vars(protocol).items() if callable(v) and not n.startswith("_")}
    return tuple(sorted(names))


def missing(cls, protocol=Step) -> list[str]:
    """The members of ``protocol`` that class ``cls`` does not define (instances' dataclass fields count)."""
    fields = set(getattr(cls, "__dataclass_fields__", {}))
    return [m for m in members(protocol) if m not in fields and not hasattr(cls, m)]


# ---------------------------------------------------------------------------------------------
# the driver
def run_step(step: Step, executor, *, cache=None, output=None, replications: int | None = None,
             precision: Precision | None = None, prefix: str = "task"):
    """Run ``step`` end to end on ``executor``: cells from the cache where their key is stored, the rest computed
    (a replicated step: ``replications`` each, or to ``precision``), assembled along ``step.layout.dims`` and
    stored (:func:`sojourn.core.runs.runner.store`; without ``cache`` only into ``output``; neither: not written).
    Returns (the dataset, {label: :class:`sojourn.core.estimates.precision.Outcome`})."""
    if not isinstance(step, Step):
        raise TypeError(f"{type(step).__name__} is not a sojourn.core.runs.protocol.Step "
                        f"(missing: {missing(type(step))})")
    lay = step.layout
    clock = _Phases()
    cells = list(step.cells())
    have, cached_attrs = runner.lookup(cache, cells, lambda ds, c: _select(ds, c, lay), lambda p, c: _split(p, lay))
    if lay.replicated:
        done = runner.run_cells(executor, cells, step.task, replications=replications, precision=precision,
                                estimate=step.estimate, have=have, shared=dict(step.shared), what=step.name,
                                prefix=prefix)
    else:
        done = runner.run_cells(executor, cells, step.task, have=have, shared=dict(step.shared), what=step.name,
                                prefix=prefix)
    clock.lap("lookup+compute")
    parts, cell_attrs = [], {}
    for c in cells:
        ds, cell_attrs[c.label] = _cell(step, c, done[c.label], have.get(c.label, {}), cached_attrs.get(c.label),
                                        precision if lay.replicated else None)
        parts.append(ds)
    block = combine(parts, [c.coords for c in cells], lay.dims, lay.fill)
    for d, a in lay.coords.items():
        block[d].attrs = dict(a)
    block.attrs = {**step.attrs(cells, cell_attrs),
                   "cell_attrs": json.dumps(cell_attrs, sort_keys=True, default=str)}  # sojourn.core.files.cache
    if precision is not None and lay.replicated:
        from ..estimates.precision import attrs as precision_attrs

        block.attrs.update(precision_attrs(precision))
    if cache is not None or output is not None:
        count = (precision or replications) if lay.replicated else "cells"
        clock.lap("assemble")
        runner.store(block, cache, cells, count, output, step.encoding(block))
        clock.lap("store")
    LOG.info(f"{step.name}: {clock}")  # benchmarks/paper_profile.py reads it
    return block, done


class _Phases:
    """Wall and CPU (of the calling thread) seconds of a job's phases, for its log: ``lap(name)`` ends one."""

    def __init__(self):
        import time

        self._clock, self.laps = time, []
        self._t, self._c = time.perf_counter(), time.thread_time()

    def lap(self, name: str) -> None:
        t, c = self._clock.perf_counter(), self._clock.thread_time()
        self.laps.append((name, t - self._t, c - self._c))
        self._t, self._c = t, c

    def __str__(self) -> str:
        return "; ".join(f"{n} {w:.2f} s (CPU {c:.2f} s)" for n, w, c in self.laps)


def _select(ds, cell, layout):
    """A cell's part of a stored file, without its grid coordinates."""
    return ds.sel({d: cell.coords[d] for d in layout.dims}).drop_vars(list(layout.dims), errors="ignore")


def _split(part, layout) -> dict:
    """{k: stored record} of a cell's part (a replicated step: the replications below ``replications_used``)."""
    import numpy as np

    keep = lambda p: p if layout.record is None else p[[v for v in layout.record if v in p.data_vars]]
    if not layout.replicated:
        return {0: keep(part)}
    used = int(np.asarray(part["replications_used"]).ravel()[0]) if "replications_used" in part \
        else part.sizes["replication"]
    part = keep(part)
    return {int(k): part.sel(replication=[k]) for k in part["replication"].values.tolist() if k < used}


def _record(step, cell, k, result):
    """A fresh result as stored; a replicated step's record is at replication ``k``."""
    rec = step.record(cell, result)
    if step.layout.replicated and "replication" not in rec.dims:
        rec = rec.expand_dims(replication=[k])
    elif step.layout.replicated and "replication" not in rec.coords:
        rec = rec.assign_coords(replication=[k])
    return rec


def _cell(step, cell, outcome, have: dict, cached_attrs, precision):
    """A cell's dataset (its records joined, finished, with its precision variables and its grid coordinates) and
    its attributes (kept per cell in the stored file)."""
    import xarray as xr

    records = [r if k in have else _record(step, cell, k, r) for k, r in enumerate(outcome.results)]
    fresh = [r for k, r in enumerate(records) if k not in have]
    attrs = dict(fresh[0].attrs) if fresh else dict(cached_attrs or {})
    for r in records:  # cached records come from this step's own entries (same content key): the same attrs
        r.attrs = dict(attrs)
    if step.layout.replicated:
        ds = records[0] if len(records) == 1 else xr.concat(
            records, dim="replication", data_vars="all", coords="minimal", compat="override", join="exact",
            combine_attrs="override")
    else:
        ds = records[0]
    ds = step.finish(cell, ds)
    attrs = dict(ds.attrs)
    if precision is not None:
        from ..estimates.precision import variables

        ds.update(variables(outcome.decision, (), precision, step.layout.units))  # one merge, not one per variable
    ds.attrs = {}
    return ds.expand_dims({d: [cell.coords[d]] for d in step.layout.dims}), attrs


def combine(parts: list, coords: list, dims: Sequence[str], fill: Mapping):
    """Cells' datasets (each with length-1 ``dims``, at ``coords``) as one dataset over ``dims``, the cells in
    their order of first appearance along each dim; gaps (a cell missing, a shorter ``replication`` axis) get
    ``fill`` (floats NaN). The variables keep their attributes."""
    import xarray as xr

    if not dims or len(parts) == 1:
        return parts[0]
    groups: dict = {}
    for p, c in zip(parts, coords, strict=True):
        groups.setdefault(c[dims[0]], []).append((p, c))
    rows = [combine([p for p, _ in g], [c for _, c in g], dims[1:], fill) for g in groups.values()]
    if len(rows) == 1:
        return rows[0]
    return xr.concat(rows, dim=dims[0], data_vars="all", coords="minimal", compat="override", join="outer",
                     fill_value=dict(fill), combine_attrs="override")
