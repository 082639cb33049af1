"""An experiment's replications as a step of the core's study protocol (:class:`sojourn.core.runs.protocol.Step`): every
replication of every cell one task, stored as its per-replication means, counts and overflows along dim ``cell``.
The job :func:`sojourn.split_merge.jobs.experiment` builds it from its rule's parameters and hands it to
:func:`sojourn.core.runs.protocol.run_step`."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.runs.protocol import Layout
from ..core.runs.runner import Cell, cell_key
from .config import ExperimentCells

#: per-replication counts and overflows (the rest of a replication is :data:`SUMMARY_SCALARS` floats)
COUNTS = ("latency_count", "delay_count")
OVERFLOWS = ("latency_overflow", "delay_overflow")


@dataclass(eq=False)
class Replications(ExperimentCells):
    """Every replication of every cell of an experiment one task
    (:func:`sojourn.split_merge.simulate.replication_summary`), a fixed count or to the precision target (the
    statistic is of the latency); stored as its per-replication means, counts and overflows."""

    experiment: str
    settings: dict
    code: str
    name: str = "replications"

    def __post_init__(self):
        from ..core.checks.timegrid import time_grid
        from ..core.estimates.precision import FILL
        from .config import precision_for
        from .simulate import replication_summary

        self._setup()
        sim = self.settings["simulation"]
        self.seed = int(sim["seed"])
        self.precision = precision_for(self.settings, self.experiment)
        self.edges = time_grid(self.t_max, self.dt) + self.dt
        self.layout = Layout(("cell",), fill={**{v: 0 for v in COUNTS + OVERFLOWS}, **FILL})
        self.task, self.shared = replication_summary, {"seed": self.seed, "dt": self.dt, "t_max": self.t_max}
        self._cells = [Cell(lab, cell_key(c["spec"].to_dict(), c["workunits"], c["warmup"], self.dt, self.t_max,
                                          self.seed, self.code), (c["spec"], c["workunits"], c["warmup"]),
                            {"cell": lab}) for lab, c in zip(self.labels, self.cs, strict=True)]

    def estimate(self, cell, k, r):
        from ..core.estimates.precision import histogram_statistic

        if not isinstance(r, tuple):  # a replication from the cache: its record
            return float(histogram_statistic(self.precision, r["latency_count"].values[0],
                                             int(r["latency_overflow"].values[0]), self.edges,
                                             float(r["mean_latency"].values[0])))
        return float(histogram_statistic(self.precision, r[1], r[2], self.edges, r[0]["mean_latency"]))

    def record(self, cell, r):
        import xarray as xr

        from .simulate import SUMMARY_SCALARS

        data = {v: ((), r[0][v]) for v in SUMMARY_SCALARS}
        data.update({v: (("t",), r[i]) for v, i in zip(COUNTS, (1, 3), strict=True)})
        data.update({v: ((), int(r[i])) for v, i in zip(OVERFLOWS, (2, 4), strict=True)})
        return xr.Dataset(data)  # the driver puts it at its replication

    def encoding(self, ds):
        nb = ds.sizes["t"]
        return {v: {"zlib": True, "complevel": 4, "shuffle": True,
                    **({"chunksizes": (1, 1, nb)} if ds[v].ndim == 3 else {})} for v in ds.data_vars}

    def summaries(self, block, done) -> list[list[tuple]]:
        """Each cell's replications as the task returns them (:func:`replication_summary`), from the assembled
        block (the cache's and the fresh ones alike)."""
        import numpy as np

        from .simulate import SUMMARY_SCALARS

        out = []
        for lab in self.labels:
            part = block.sel(cell=lab)
            out.append([({v: float(part[v].values[k]) for v in SUMMARY_SCALARS},
                         part["latency_count"].values[k].astype(np.int64), int(part["latency_overflow"].values[k]),
                         part["delay_count"].values[k].astype(np.int64), int(part["delay_overflow"].values[k]))
                        for k in range(done[lab].replications)])
        return out
