"""The JSQ-PS approximation blocks as steps of the core's study protocol (:class:`sojourn.core.runs.protocol.Step`): the
M/M/R cells (R, ρ) by every configured method and the M/G/R cells (service law, R, ρ) by the methods that take a
general service law, one task per cell (:mod:`sojourn.jsq_ps.solve.cell`), stored as survival functions. The jobs
:func:`sojourn.jsq_ps.jobs.approximate` and :func:`~sojourn.jsq_ps.jobs.approximate_laws` build them from their rules'
parameters and hand them to :func:`sojourn.core.runs.protocol.run_step`."""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from ...core.runs.protocol import Layout, StepFields
from ...core.runs.runner import cell_key
from ..storage import grid_cell

LOG = logging.getLogger("sojourn.jsq_ps.jobs")


class _Approximations(StepFields):
    """What the two approximation blocks share: deterministic cells (one task each), stored as a survival
    function, the block's provenance and pipeline config."""

    name = "approximation cells"
    def cells(self):
        return self._cells

    def estimate(self, cell, k, result):  # deterministic: no precision target
        raise TypeError("approximation cells have no replications")

    def finish(self, cell, ds):
        return ds

    def attrs(self, cells, cell_attrs):
        from ...core.files.io import provenance

        return {**provenance(None), "pipeline_config": json.dumps(self.config, sort_keys=True)}

    def encoding(self, ds):
        from ..storage import approximation_encoding

        return approximation_encoding(ds)


@dataclass(eq=False)
class ApproximationBlock(_Approximations):
    """All ``methods`` at the M/M/R cells (R, ρ), ρ in ``rhos``: one task per cell
    (:func:`sojourn.jsq_ps.solve.cell.approximate_cell`), each distinct chain stored once (with
    ``share_corrected`` the copies B*, D*, E*, F* are left out and the merge writes them back)."""

    R: int
    rhos: list
    mu: float
    methods: list
    L1: int
    L2: int
    time_grid: dict
    code: str
    share_corrected: bool
    exact_budget: dict

    def __post_init__(self):
        from ...core.checks.timegrid import time_grid as grid
        from ..storage import stored_once
        from .cell import approximate_cell

        self.rhos = [float(r) for r in self.rhos]
        self.copies = stored_once(self.methods, self.share_corrected)
        t = grid(float(self.time_grid["t_max"]), float(self.time_grid["dt"]))
        hyper = {"L1": int(self.L1), "L2": int(self.L2)}
        tg = {k: self.time_grid[k] for k in sorted(self.time_grid)}
        budget = ({k: self.exact_budget[k] for k in sorted(self.exact_budget)}
                  if "exact" in self.methods and self.exact_budget else None)
        self.task, self.layout = approximate_cell, Layout(("R", "rho"), replicated=False)
        self.config = {"L1": int(self.L1), "L2": int(self.L2), "methods": list(self.methods), "code": self.code,
                       "time_grid": self.time_grid, "share_corrected": bool(self.share_corrected),
                       "exact_budget": self.exact_budget}

        def key(rho):
            parts = ["approximation", int(self.R), rho, float(self.mu), list(self.methods), int(self.L1),
                     int(self.L2), tg, self.code, bool(self.share_corrected), "stored once"]
            return cell_key(*parts, *([budget] if budget is not None else []))

        self._cells = [grid_cell(rho, key(rho), (int(self.R), rho, float(self.mu), tuple(self.methods), t, hyper,
                                             bool(self.share_corrected), self.exact_budget), R=int(self.R))
                       for rho in self.rhos]

    def record(self, cell, ds):
        from ..storage import APPROX_ATTRS, fixed_n, to_storage
        from .guards import describe

        for m, reason in zip(ds["approximation"].values, ds["validity_reason"].values, strict=True):
            if int(reason):
                LOG.info(f"  warning: {m} not valid at R={self.R} {cell.label}: {describe(int(reason))}")
        ds = ds.drop_sel(approximation=list(self.copies))  # each distinct chain stored once: the merge copies it
        ds = to_storage(fixed_n(ds, int(self.L2)))
        for name, (long_name, units) in APPROX_ATTRS.items():
            if name in ds:
                ds[name].attrs = {**ds[name].attrs, "long_name": long_name, "units": units}
        ds.attrs = {k: v for k, v in ds.attrs.items()
                    if k in ("title", "model", "spec", "hyper", "shared_corrected", "exact_plan")}
        return ds


@dataclass(eq=False)
class LawApproximationBlock(_Approximations):
    """The methods that take a general service law (``mgr.methods``) at the M/G/R cells (service, R, ρ), ρ in
    ``rhos``: one task per cell (:func:`sojourn.jsq_ps.solve.cell.approximate_law_cell`)."""

    service: str
    law: str
    R: int
    rhos: list
    mu: float
    methods: list
    time_grid: dict
    code: str

    def __post_init__(self):
        from ...core.checks.timegrid import time_grid as grid
        from .cell import approximate_law_cell

        self.rhos = [float(r) for r in self.rhos]
        t = grid(float(self.time_grid["t_max"]), float(self.time_grid["dt"]))
        tg = {k: self.time_grid[k] for k in sorted(self.time_grid)}
        self.task, self.layout = approximate_law_cell, Layout(("service", "R", "rho"), replicated=False)
        self.config = {"law": self.law, "methods": list(self.methods), "code": self.code, "time_grid": self.time_grid}
        self._cells = [grid_cell(rho, cell_key("law approximation", str(self.law), int(self.R), rho,
                                           float(self.mu), list(self.methods), tg, self.code),
                             (str(self.law), int(self.R), rho, float(self.mu), tuple(self.methods), t),
                             service=self.service, R=int(self.R)) for rho in self.rhos]
        self.name = "law approximation cells"

    def record(self, cell, ds):
        from ..storage import to_storage

        return to_storage(ds)
