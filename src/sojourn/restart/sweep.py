"""An example's restart-rate sweep as a step of the core's study protocol (:class:`sojourn.core.runs.protocol.Step`):
the
points at typed (semantics, restart rate), every replication one task, the run-length guard of each point, the
sweep's attributes. The job :func:`sojourn.restart.jobs.simulate` builds it from its rule's parameters and hands it
to :func:`sojourn.core.runs.protocol.run_step`."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.runs.protocol import Layout, StepFields
from ..core.runs.runner import Cell, cell_key

#: per-replication variables kept in the sweep file (the rest is recomputable)
SIM_VARS = ("count", "overflow", "n_customers", "sum", "sumsq", "mean", "max", "restart_count", "mean_restarts",
            "mean_number_type", "mean_number_station", "mean_number", "throughput", "restarts_per_time",
            "signal_hit_rate", "timeout_rate", "events", "unstable", "wall_time")

#: gap values where a point's replications stop before the longest one's
SIM_FILL = {"count": 0, "overflow": 0, "n_customers": 0, "restart_count": 0, "events": -1, "unstable": 0}

SWEEP_COORDS = {"restart_rate": {"long_name": "restart rate r: signal rate g = r, exponential timeouts of rate r, "
                                              "deterministic timeouts tau = 1/r", "units": "1/time"},
                "semantics": {"long_name": "restart semantics"}}


def point_label(semantics: str, rate: float) -> str:
    return f"{semantics}/r{rate:.6g}"


@dataclass(eq=False)
class Sweep(StepFields):
    """An example's restart-rate sweep: for each semantics s and restart rate r
    (:func:`sojourn.restart.simulate.spec_for`) every replication one task, a fixed count or to the precision
    target (the statistic is of the response time)."""

    example_name: str
    example: dict
    simulation: dict
    time_grid: dict
    code: str
    name: str = "replications"

    def __post_init__(self):
        from ..core.checks.timegrid import time_grid as grid
        from ..core.estimates import precision as P
        from .config import precision_for, restart_rates, sim_kwargs
        from .files import load_model
        from .simulate import simulate_replication, spec_for

        self.net = load_model(self.example["model"])
        self.rates = [float(r) for r in restart_rates(self.example["rates"])]
        self.semantics = list(self.example["semantics"])
        self.seed = int(self.simulation["seed"])
        self.precision = precision_for(self.simulation, self.time_grid)
        self.kw = sim_kwargs(self.simulation, self.time_grid, self.example)
        self.specs = {point_label(s, r): spec_for(self.net, s, r) for s in self.semantics for r in self.rates}
        self.layout = Layout(("semantics", "restart_rate"), SIM_VARS, {**SIM_FILL, **P.FILL}, "time",
                             coords=SWEEP_COORDS)
        self.task, self.shared = simulate_replication, {"seed": self.seed, **self.kw}
        self.edges = grid(float(self.time_grid["t_max"]), float(self.time_grid["dt"])) + float(self.time_grid["dt"])
        self._cells = [Cell(point_label(s, r), cell_key(self.specs[point_label(s, r)].to_json(), self.kw, self.seed,
                                                        self.code),
                            (self.specs[point_label(s, r)],), {"semantics": s, "restart_rate": r})
                       for s in self.semantics for r in self.rates]

    def cells(self):
        return self._cells

    def estimate(self, cell, k, ds):
        import numpy as np

        from ..core.estimates.precision import histogram_statistic

        if int(ds["unstable"].values[0]) > 0:
            return np.nan  # stopped: no stationary measures, no interval
        return float(histogram_statistic(self.precision, ds["count"].values[0], ds["overflow"].values[0], self.edges,
                                         ds["mean"].values[0]))

    def record(self, cell, ds):
        ds = ds[list(SIM_VARS)]
        ds["wall_time"].attrs["long_name"] += " (varies run to run)"
        return ds

    def finish(self, cell, ds):
        from ..core.estimates.replications import check_window
        from ..core.estimates.runlength import variables
        from .simulate import guard

        H, W, C = check_window(self.kw["horizon"], self.kw.get("warmup"), self.kw.get("cooldown"))
        # the run-length guard (sojourn.core.estimates.runlength)
        verdict = guard(self.specs[cell.label], ds, H - W - C)
        for v, (_, value, a) in variables(verdict).items():
            ds[v] = ((), value, {k: x for k, x in a.items() if k not in ("window", "replications")})
        return ds

    def attrs(self, cells, cell_attrs):
        from ..core.estimates.precision import attrs as precision_attrs
        from ..core.files.io import provenance

        ref = next((a for a in cell_attrs.values() if "seed_recipe" in a), cell_attrs[cells[0].label])
        n_rep = int(self.simulation["replications"])
        extra = {"replications": n_rep} if self.precision is None else {
            "replications": "precision-driven: see replications_used", **precision_attrs(self.precision),
            "precision_statistic_of": "response time"}
        return provenance(
            {"example": self.example, "simulation": self.simulation, "time_grid": self.time_grid},
            title=f"Restart study, {self.example_name}: simulated restart-rate sweep",
            model=self.net.describe(), spec=self.net.to_json(), code_fingerprint=self.code, example=self.example_name,
            seed_recipe=ref["seed_recipe"], histogram_convention=ref["histogram_convention"],
            spec_recipe="spec = sojourn.restart.simulate.spec_for(model, semantics, restart_rate); replication k "
                        "uses sojourn.core.laws.seeds.replication_rng(seed, spec, k)", seed=self.seed, **extra,
            **dict(self.kw))

    def encoding(self, ds):
        return None
