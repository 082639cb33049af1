"""The pipeline's product-form job: one example's measures over a fine grid of signal rates, and g*."""
from __future__ import annotations

import numpy as np
import xarray as xr

from ..core.io import provenance, write_netcdf
from .files import load_model
from .solve import optimal_signal_rate, solve
from .grid import restart_rates


def solve_sweep(*, name: str, example: dict, analytic: dict, code: str, output):
    """E[T], E[N], utilisation and restarts per unit time at ``analytic['points']`` log-spaced signal rates over
    the example's sweep range plus the sweep's own rates (dim ``signal_rate``), and g* (bounded search)."""
    net = load_model(example["model"])
    rates = restart_rates(example["rates"])
    grid = np.unique(np.concatenate([np.geomspace(rates[0], rates[-1], int(analytic["points"])), rates]))
    sols = [solve(net.with_signal_rate(float(g))) for g in grid]
    opt = optimal_signal_rate(net, bounds=tuple(analytic["bounds"]))
    ds = xr.Dataset(
        {
            "response_time": ("signal_rate", [s.response_time for s in sols],
                              {"long_name": "product-form network mean response time E[T]", "units": "time"}),
            "mean_number": ("signal_rate", [float(s.mean_number.sum()) for s in sols],
                            {"long_name": "product-form mean number of jobs E[N]", "units": "1"}),
            "utilisation": ("signal_rate", [float(s.queue_load.sum()) for s in sols],
                            {"long_name": "utilisation (sum of loads rho)", "units": "1"}),
            "restart_rate": ("signal_rate", [s.restart_rate for s in sols],
                             {"long_name": "successful restarts per unit time", "units": "1/time"}),
            "mean_number_station": (("signal_rate", "station"), np.array([s.mean_number_station for s in sols]),
                                    {"long_name": "product-form mean number of jobs of (queue, class)", "units": "1"}),
            "g_star": ((), opt.signal_rate, {"long_name": "optimal signal rate g* (bounded search)", "units": "1/time"}),
            "response_time_at_g_star": ((), opt.response_time, {"long_name": "E[T] at g*", "units": "time"}),
            "response_time_no_restart": ((), opt.response_time_without,
                                         {"long_name": "E[T] without restart signals", "units": "time"}),
        },
        coords={"signal_rate": ("signal_rate", grid, {"long_name": "restart signal rate g", "units": "1/time"}),
                "station": ("station", list(net.layout.station_labels), {"long_name": "queue/class"})},
    )
    ds.attrs = provenance({"example": example, "analytic": analytic}, title=f"Restart study, {name}: product form",
                          model=net.describe(), spec=net.to_json(), example=name, code_fingerprint=code,
                          bounds=list(opt.bounds))
    write_netcdf(ds, output)
    return output
