"""The JSQ-PS simulation block as a step of the core's study protocol (:class:`sojourn.core.runs.protocol.Step`): the
cells
(service law, R, the ρ of one interval) at typed grid values, every replication one task, the run-length guard of
each cell, the block's attributes and encoding. The job :func:`sojourn.jsq_ps.jobs.simulate` builds it from its rule's
parameters and hands it to :func:`sojourn.core.runs.protocol.run_step`."""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from ..core.runs.protocol import Layout, StepFields
from ..core.runs.runner import cell_key
from .storage import grid_cell

LOG = logging.getLogger("sojourn.jsq_ps.jobs")

#: engine attrs that differ between the cells of a block (kept per cell in the block's ``cell_attrs``)
CELL_SPECIFIC = ("model", "spec", "seed_entropy", "title")

#: engine attrs a simulation block keeps (the rest is per replication or recomputable)
ENGINE_ATTRS = ("Conventions", "source", "sojourn_version", "git_commit", "model", "spec", "backend", "kernel",
                "horizon", "warmup", "cooldown", "dt", "t_max", "seed", "seed_entropy", "seed_recipe",
                "histogram_convention", "title")


def run_window(simulation: dict, time_grid: dict) -> dict:
    """The simulation keywords of every replication of a block: the run window ``simulation.window`` (its length the
    simulator's horizon), backend and histogram grid."""
    w = simulation["window"]
    cooldown, warmup = w.get("cooldown"), w.get("warmup")  # null: the project's defaults
    return {"horizon": float(w["length"]), "warmup": float(warmup) if warmup is not None else None,
            "cooldown": float(cooldown) if cooldown is not None else None,
            "backend": str(simulation.get("backend", "fast")), "dt": float(time_grid["dt"]),
            "t_max": float(time_grid["t_max"])}


@dataclass(eq=False)
class SimulationBlock(StepFields):
    """Simulated cells (service, R, ρ), ρ in ``rhos``: every replication one task
    (:func:`sojourn.jsq_ps.simulate.simulate_replication`), a fixed count or to the precision target."""

    service: str
    law: str
    R: int
    rhos: list
    mu: float
    simulation: dict
    time_grid: dict
    code: str
    name: str = "replications"

    def __post_init__(self):
        from ..core.estimates import precision as P
        from .model import JSQPS
        from .naming import DEFAULT_PERCENTILE
        from .simulate import UNITS, simulate_replication
        from .storage import SIM_FILL, SIM_VARS

        self.rhos = [float(r) for r in self.rhos]
        self.precision = P.parse(self.simulation.get("precision"), field="simulation.precision",
                                 t_max=float(self.time_grid["t_max"]), default_at=DEFAULT_PERCENTILE)
        window = run_window(self.simulation, self.time_grid)
        self.seed = int(self.simulation["seed"])
        specs = [JSQPS.from_rho(int(self.R), rho, mu=float(self.mu), service=self.law) for rho in self.rhos]
        self.layout = Layout(("service", "R", "rho"), SIM_VARS, SIM_FILL, UNITS)
        self.task, self.shared = simulate_replication, {"seed": self.seed, **window}
        self._cells = [grid_cell(rho, cell_key(spec.to_dict(), window, self.seed, self.code), (spec,),
                                 service=self.service, R=int(self.R))
                       for rho, spec in zip(self.rhos, specs, strict=True)]

    def cells(self):
        return self._cells

    def estimate(self, cell, k, ds):
        from ..core.estimates import precision as P

        edges = ds["t"].values + float(self.time_grid["dt"])
        return float(P.histogram_statistic(self.precision, ds["count"].values[0], ds["overflow"].values[0], edges,
                                           ds["mean"].values[0]))

    def record(self, cell, ds):
        return ds[[v for v in self.layout.record if v in ds.data_vars]]

    def finish(self, cell, ds):
        import numpy as np

        from ..core.estimates.runlength import format_length, from_dataset
        from .simulate import with_guard

        ds = with_guard(ds, cell.args[0])  # the cell's model
        if not int(ds["run_valid"]):  # the run-length guard (sojourn.core.estimates.runlength): said, not hidden
            v = from_dataset(ds)
            need = format_length(v.needed_window + float(ds.attrs["warmup"]) + float(ds.attrs["cooldown"]))
            LOG.warning(f"{self.service} R={self.R} {cell.label}: run too short to trust ({v.describe()}; predicted "
                        f"relative standard error of the mean {100 * v.relative_se:.2g} %); needs "
                        f"jsq_ps.simulation.window.length >= {need} (same warm-up and cool-down) at {v.replications} "
                        "replications, or more replications (sojourn.core.estimates.runlength; the cell is kept, "
                        "marked "
                        "run_valid = 0)")
        ds["spec_hash"] = ((), np.uint64(int(json.loads(ds.attrs["seed_entropy"])[1])), {
            "long_name": "64-bit hash of the cell's spec (second entropy word of every replication's SeedSequence)",
            "units": "1"})
        return ds

    def attrs(self, cells, cell_attrs):
        first = cell_attrs[cells[0].label]
        out = {k: first[k] for k in ENGINE_ATTRS if k in first and k not in CELL_SPECIFIC}
        out["pipeline_config"] = json.dumps({"code": self.code, "law": self.law, "sim": self.simulation,
                                             "tg": self.time_grid}, sort_keys=True, default=str)
        return out

    def encoding(self, ds):
        from .storage import simulation_encoding

        return simulation_encoding(ds)
