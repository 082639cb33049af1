"""An experiment's exact values as a step of the core's study protocol (:class:`sojourn.core.runs.protocol.Step`): one
task per cell (:func:`sojourn.split_merge.solve.exact_results`) along dim ``cell``, and their reading back for the
comparison. The job :func:`sojourn.split_merge.jobs.exact` builds it from its rule's parameters and hands it to
:func:`sojourn.core.runs.protocol.run_step`."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.runs.protocol import Layout
from ..core.runs.runner import Cell, cell_key
from .config import ExperimentCells

#: the exact values an experiment's comparison uses (:func:`sojourn.split_merge.solve.exact_results`)
EXACT_SCALARS = ("mean_service", "max_throughput", "mean_latency", "mean_delay")


def exact_values(spec, ps) -> dict:
    """The exact values of a cell (a task of :class:`Exact`; :func:`sojourn.split_merge.solve.exact_results`)."""
    from .solve import exact_results

    return exact_results(spec, ps)


@dataclass(eq=False)
class Exact(ExperimentCells):
    """The exact values of every cell of an experiment (P-K, Erlang C, QBD; NaN and method "none" where none
    exists): one task per cell, cached by the cell's spec and percentiles."""

    experiment: str
    settings: dict
    code: str
    name: str = "exact values"

    def __post_init__(self):
        self.task, self.layout = exact_values, Layout(("cell",), replicated=False)
        self._setup()
        self._cells = [Cell(lab, cell_key("exact", c["spec"].to_dict(), self.ps.tolist(), self.code),
                            (c["spec"], self.ps), {"cell": lab}) for lab, c in zip(self.labels, self.cs, strict=True)]

    def estimate(self, cell, k, result):
        raise TypeError("exact values have no replications")

    def record(self, cell, e):
        import numpy as np
        import xarray as xr

        data = {v: ((), float(e[v])) for v in EXACT_SCALARS}
        data["exact"] = ((), np.int8(bool(e["exact"])))
        data["delay_method"] = ((), str(e["delay_method"]))
        data["latency_percentile"] = (("percentile",), np.asarray(e["latency_percentile"], float))
        return xr.Dataset(data, coords={"percentile": ("percentile", self.ps)})

    def encoding(self, ds):
        return None


def read_exact(path, labels) -> list[dict]:
    """The exact values of the cells ``labels`` from an :class:`Exact` step's file, as
    :func:`sojourn.split_merge.solve.exact_results` returns them (the keys the comparison uses)."""
    from ..core.files.io import read_netcdf

    ds = read_netcdf(path)
    out = []
    for lab in labels:
        c = ds.sel(cell=lab)
        e = {v: float(c[v].values) for v in EXACT_SCALARS}
        e.update(exact=bool(int(c["exact"].values)), delay_method=str(c["delay_method"].values),
                 latency_percentile=c["latency_percentile"].values.astype(float))
        out.append(e)
    return out
