"""An example's product form as steps of the core's study protocol (:class:`sojourn.core.runs.protocol.Step`): E[T],
E[N], utilisation and restarts per unit time at each signal rate of a grid (one cell per rate), and g* (one cell).
The job :func:`sojourn.restart.jobs.solve` builds them from its rule's parameters and hands them to
:func:`sojourn.core.runs.protocol.run_step`."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.runs.protocol import Layout, StepFields
from ..core.runs.runner import Cell, cell_key


def product_form_point(net, rate: float) -> dict:
    """The product form of ``net`` at signal rate ``rate`` (a task of :class:`ProductForm`)."""
    from .solve import solve

    s = solve(net.with_signal_rate(float(rate)))
    return {"response_time": s.response_time, "mean_number": float(s.mean_number.sum()),
            "utilisation": float(s.queue_load.sum()), "restart_rate": s.restart_rate,
            "mean_number_station": list(map(float, s.mean_number_station))}


PF_VARS = {"response_time": ("product-form network mean response time E[T]", "time"),
           "mean_number": ("product-form mean number of jobs E[N]", "1"),
           "utilisation": ("utilisation (sum of loads rho)", "1"),
           "restart_rate": ("successful restarts per unit time", "1/time"),
           "mean_number_station": ("product-form mean number of jobs of (queue, class)", "1")}


class _Deterministic(StepFields):
    """What the product-form steps share: one task per cell, nothing replicated."""

    def cells(self):
        return self._cells

    def estimate(self, cell, k, result):
        raise TypeError("product-form cells have no replications")

    def finish(self, cell, ds):
        return ds

    def attrs(self, cells, cell_attrs):
        return {"code_fingerprint": self.code}

    def encoding(self, ds):
        return None


@dataclass(eq=False)
class ProductForm(_Deterministic):
    """E[T], E[N], utilisation and restarts per unit time of an example's network at ``points`` log-spaced signal
    rates over its sweep range plus the sweep's own rates: one cell per rate (dim ``signal_rate``), so a finer grid
    computes only its new rates."""

    example: dict
    analytic: dict
    code: str
    name: str = "product-form points"

    def __post_init__(self):
        self.task = product_form_point
        self.layout = Layout(("signal_rate",), replicated=False,
                             coords={"signal_rate": {"long_name": "restart signal rate g", "units": "1/time"}})
        import numpy as np

        from .config import restart_rates
        from .files import load_model

        self.net = load_model(self.example["model"])
        rates = restart_rates(self.example["rates"])
        self.grid = np.unique(np.concatenate([np.geomspace(rates[0], rates[-1], int(self.analytic["points"])), rates]))
        spec = self.net.to_json()
        self._cells = [Cell(f"g={g:.17g}", cell_key("product form", spec, float(g), self.code), (self.net, float(g)),
                            {"signal_rate": float(g)}) for g in self.grid]

    def record(self, cell, r):
        import xarray as xr

        ds = xr.Dataset({k: (("station",) if k == "mean_number_station" else (), r[k], {"long_name": n, "units": u})
                         for k, (n, u) in PF_VARS.items()},
                        coords={"station": ("station", list(self.net.layout.station_labels),
                                            {"long_name": "queue/class"})})
        return ds


def optimum(net, bounds) -> dict:
    """g* (bounded search, :func:`sojourn.restart.solve.optimal_signal_rate`): a task of :class:`GStar`."""
    from .solve import optimal_signal_rate

    opt = optimal_signal_rate(net, bounds=tuple(bounds))
    return {"g_star": opt.signal_rate, "response_time_at_g_star": opt.response_time,
            "response_time_no_restart": opt.response_time_without, "bounds": list(opt.bounds)}


GSTAR_VARS = {"g_star": ("optimal signal rate g* (bounded search)", "1/time"),
              "response_time_at_g_star": ("E[T] at g*", "time"),
              "response_time_no_restart": ("E[T] without restart signals", "time")}


@dataclass(eq=False)
class GStar(_Deterministic):
    """The optimal signal rate g* of an example's network within ``analytic['bounds']``: one cell."""

    example: dict
    analytic: dict
    code: str
    name: str = "g*"

    def __post_init__(self):
        self.task, self.layout = optimum, Layout((), replicated=False)
        from .files import load_model

        self.net = load_model(self.example["model"])
        bounds = [float(b) for b in self.analytic["bounds"]]
        self._cells = [Cell("g*", cell_key("g*", self.net.to_json(), bounds, self.code), (self.net, bounds))]

    def record(self, cell, r):
        import xarray as xr

        ds = xr.Dataset({k: ((), r[k], {"long_name": n, "units": u}) for k, (n, u) in GSTAR_VARS.items()})
        ds.attrs["bounds"] = list(r["bounds"])
        return ds
