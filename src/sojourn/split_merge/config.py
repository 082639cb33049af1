"""The split-merge study's config section (``config["split_merge"]``): its experiments' cells and run windows, the
precision target, and the cross-field checks JSON schema cannot express (ConfigError naming the key path).

(a) ``experiment_a``: one system (default n = r = 3, q = 2, a documented 3-phase PH replica law, ρ = 0.9).
(b) ``experiment_b``: r = 1..5, q = 1..r at ``hosts`` (null: n = r, the paper's (n, n, q) systems), ρ = 0.9.
(c) ``experiment_c``: n = 100, q ∈ quorums, r ∈ replicas (q ≤ r), λ = ρ·⌊n/r⌋/E[S_{q:r}], several replica
    laws; split-merge and (optionally, with its own run window) fork-join with cancellation.

Every experiment's run window is ``simulation.window`` with the keys of its own ``window`` in their place
(fork-join: its ``fork_join.window`` over those), in workunits (:func:`run_window`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.checks.config import DEFAULT_PERCENTILE, ConfigError
from ..core.checks.config import run_window as study_window
from ..core.checks.inputs import check_grid
from ..core.checks.timegrid import grid_size
from ..core.estimates.replications import WARMUP_FRACTION
from ..core.runs.protocol import StepFields
from .model import SplitMerge

EXPERIMENTS = ("a", "b", "c")


def check_config(cfg: dict) -> None:
    """Cross-field checks JSON schema cannot do; ConfigError naming the key."""
    for x in EXPERIMENTS:
        e = cfg[f"experiment_{x}"]
        if not e["enabled"]:
            continue
        key = f"split_merge.experiment_{x}"
        try:
            grid_size(e["time_grid"]["t_max"], e["time_grid"]["dt"])
        except ValueError as exc:
            raise ConfigError(f"{key}.time_grid: {exc}") from None
        try:
            check_grid(e["time_grid"]["t_max"], e["time_grid"]["dt"], 8.0 * (4 * 200 + 8), "the delay and latency "
                       "histograms of a cell's replications (at most 200)", flags=f"{key}.time_grid.t_max/dt",
                       cli=False)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        _check_cells(key, x, e)  # how many cells, before any is listed
        try:
            found = cells(cfg, x)
        except ValueError as exc:
            raise ConfigError(f"{key}: {exc}") from None
        if not found:
            raise ConfigError(f"{key}: no cell has q <= r (quorums {e.get('quorums')}, replicas {e.get('replicas')}): "
                              "every quorum exceeds every number of replicas")
        try:
            precision_for(cfg, x)
        except ValueError as exc:
            raise ConfigError(f"split_merge.{exc}") from None
        _check_cost(key, e, found)


#: what one cell costs before it runs (its spec, its entry in the DAG and the merged file): seconds, bytes
SECONDS_PER_CELL, BYTES_PER_CELL = 1e-3, 20e3


def _check_cells(key: str, x: str, e: dict) -> None:
    """The number of cells of experiment ``x`` (every q <= r of each r, for each law and model) admitted before any
    is listed (issue 32's fuzzer: ``replicas: [1.0e9]`` listed a billion pairs)."""
    from ..core.checks.guard import Estimate, admit, naming

    if x == "a":
        return
    quorums = e.get("quorums")
    per_law = sum((len([q for q in quorums if q <= r]) if quorums else int(r)) for r in e["replicas"])
    n = float(per_law) * len(laws(e)) * len(models(e))
    try:
        with naming({"replicas": f"{key}.replicas"}, "config"):
            admit(Estimate(SECONDS_PER_CELL * n, BYTES_PER_CELL * n, "replicas", f"{n:.3g} cells (r, q) to list"),
                  record=False)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _check_cost(key: str, e: dict, found: list) -> None:
    """Each Dask task of experiment ``key`` (one replication of one cell) admitted by the guard before any job
    (limits from SOJOURN_MAX_TIME / SOJOURN_MAX_MEMORY or the defaults), naming the config keys."""
    from ..core.checks.guard import admit_parts, naming
    from .cost import simulate as simulate_cost

    names = {"workunits": f"{key}.window.length", "horizon": f"{key}.window.length",
             "replications": f"{key}.window.length",
             "hosts": f"{key}.hosts",
             "t_max": f"{key}.time_grid.t_max", "dt": f"{key}.time_grid.dt"}
    tg = e["time_grid"]
    try:
        with naming(names, "config"):
            for c in found:
                admit_parts(simulate_cost(c["spec"], c["workunits"] + c["warmup"], 1, tg["dt"], tg["t_max"]))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def laws(e: dict) -> dict:
    """{name: law string} of an experiment (``replica_law`` or the ``laws`` mapping)."""
    return dict(e["laws"]) if "laws" in e else {"law": e["replica_law"]}


def models(e: dict) -> list[str]:
    fj = e.get("fork_join", {})
    return ["split_merge"] + (["fork_join"] if fj.get("enabled", False) else [])


def run_window(cfg: dict, e: dict, model: str) -> tuple[int, int]:
    """(recorded workunits, discarded warm-up workunits) of experiment ``e``'s ``model``: ``simulation.window`` with
    the keys of the experiment's ``window`` (fork-join: and then of its ``fork_join.window``) in their place; a null
    warmup is ``WARMUP_FRACTION`` of the length, the project's rule."""
    w = study_window((cfg.get("simulation") or {}).get("window"), e.get("window"))
    if model == "fork_join":
        w = study_window(w, e["fork_join"].get("window"))
    workunits = int(w["length"])
    return workunits, int(round(WARMUP_FRACTION * workunits)) if w["warmup"] is None else int(w["warmup"])


def cells(cfg: dict, x: str) -> list[dict]:
    """The cells of experiment ``x``: dicts with law, model, quorum, replicas, spec, workunits, warmup."""
    e = cfg[f"experiment_{x}"]
    out = []
    for lname, law in laws(e).items():
        for model in models(e):
            wu, warm = run_window(cfg, e, model)
            if x == "a":
                pairs = [(e["replicas"], e["quorum"])]
            else:
                pairs = [(r, q) for r in e["replicas"] for q in (e.get("quorums") or range(1, r + 1)) if q <= r]
            for r, q in pairs:
                hosts = e["hosts"] if e["hosts"] is not None else r
                spec = SplitMerge.from_rho(hosts, r, q, e["rho"], law, model)
                out.append({"law": lname, "model": model, "quorum": int(q), "replicas": int(r), "spec": spec,
                            "workunits": int(wu), "warmup": int(warm)})
    return out


def precision_for(cfg: dict, x: str):
    """The precision target of experiment ``x`` (None: a fixed count); ValueError naming the key."""
    from ..core.estimates.precision import parse

    e = cfg[f"experiment_{x}"]
    return parse((cfg["simulation"] or {}).get("precision"), field="simulation.precision",
                 t_max=float(e["time_grid"]["t_max"]), default_at=DEFAULT_PERCENTILE, default_statistic="mean")


def cell_label(c: dict) -> str:
    return f"{c['law']}/{c['model']}/q{c['quorum']}/r{c['replicas']}"


@dataclass(eq=False)
class ExperimentCells(StepFields):
    """What both steps of an experiment share: its cells (``experiment`` 'a' | 'b' | 'c' of the study's config
    section ``settings``) along dim ``cell`` (a cell's label: law/model/quorum/replicas)."""

    def _setup(self):
        import numpy as np

        self.cfg = self.settings[f"experiment_{self.experiment}"]
        self.dt, self.t_max = float(self.cfg["time_grid"]["dt"]), float(self.cfg["time_grid"]["t_max"])
        self.ps = np.asarray(self.settings["comparison"]["percentiles"], dtype=float) / 100.0
        self.cs = cells(self.settings, self.experiment)
        self.labels = [cell_label(c) for c in self.cs]

    def cells(self):
        return self._cells

    def finish(self, cell, ds):
        return ds

    def attrs(self, cells, cell_attrs):
        return {"code_fingerprint": self.code, "experiment": self.experiment}
