"""The core's study protocol and its driver (sojourn.core.runs.protocol.run_step) on a toy study of a few lines: the
cache per (cell, replication), the join of replications, the assembly over an incomplete two-dimensional grid with
its gap values, the stored file, and the Python loop over replications
(sojourn.core.estimates.replications.replicate)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
import xarray as xr

from sojourn.core.estimates.replications import replicate
from sojourn.core.runs.protocol import Layout, Step, missing, run_step
from sojourn.core.runs.runner import Cell, LocalExecutor, cell_key


def toy_replication(level: float, k: int, *, seed: int) -> dict:
    rng = np.random.default_rng([seed, int(level * 1000), k])
    return {"count": rng.integers(0, 9, size=4), "mean": level + rng.random()}


@dataclass(eq=False)
class ToyStep:
    """Cells at (kind, level); (b, 2.0) is left out: the grid is incomplete."""

    seed: int = 7
    name: str = "toy replications"
    layout: Layout = field(default=Layout(("kind", "level"), ("count", "mean"), {"count": -1, "replications_seen": 0},
                                                   units="s"))
    shared: dict = field(default_factory=dict)
    task: object = None
    finished: list = field(default_factory=list)

    def __post_init__(self):
        self.task, self.shared = toy_replication, {"seed": self.seed}

    def cells(self):
        points = [("a", 1.0), ("a", 2.0), ("b", 1.0)]
        return [Cell(f"{k}/{v}", cell_key(k, v, self.seed), (v,), {"kind": k, "level": v}) for k, v in points]

    def estimate(self, cell, k, result):
        return float(result["mean"])

    def record(self, cell, r):
        return xr.Dataset({"count": (("t",), r["count"]), "mean": ((), r["mean"])}, attrs={"level": cell.args[0]})

    def finish(self, cell, ds):
        self.finished.append(cell.label)
        ds["replications_seen"] = ((), np.int64(ds.sizes["replication"]))
        return ds

    def attrs(self, cells, cell_attrs):
        return {"title": "toy"}

    def encoding(self, ds):
        return None


def test_a_step_satisfies_the_protocol_and_is_assembled_over_its_grid(tmp_path):
    step = ToyStep()
    assert isinstance(step, Step) and not missing(ToyStep)
    ds, done = run_step(step, LocalExecutor(), cache=tmp_path / "cache", output=tmp_path / "out.nc", replications=2)
    assert ds["count"].dims == ("kind", "level", "replication", "t") and ds.sizes["replication"] == 2
    assert list(ds["kind"].values) == ["a", "b"] and list(ds["level"].values) == [1.0, 2.0]
    gap = ds.sel(kind="b", level=2.0)
    assert (gap["count"].values == -1).all() and np.isnan(gap["mean"].values).all()  # the cell not in the grid
    assert ds["count"].dtype.kind == "i" and ds["replications_seen"].dtype.kind == "i"
    for kind, level in (("a", 1.0), ("a", 2.0), ("b", 1.0)):  # each replication is the task's, in order
        for k in range(2):
            raw = toy_replication(level, k, seed=7)
            np.testing.assert_array_equal(ds["count"].sel(kind=kind, level=level, replication=k).values, raw["count"])
    assert sum(o.simulated for o in done.values()) == 6 and (tmp_path / "out.nc").is_file()
    assert ds.attrs["title"] == "toy" and '"a/1.0": {"level": 1.0}' in ds.attrs["cell_attrs"]


def test_a_rerun_takes_each_stored_replication_from_the_cache(tmp_path):
    first, _ = run_step(ToyStep(), LocalExecutor(), cache=tmp_path, replications=2)
    again, done = run_step(ToyStep(), LocalExecutor(), cache=tmp_path, replications=3)
    assert [(o.simulated, o.reused) for o in done.values()] == [(1, 2)] * 3  # only replication 2 of each cell
    xr.testing.assert_identical(again.isel(replication=slice(0, 2)).drop_vars("replications_seen"),
                                first.drop_vars("replications_seen"))
    fresh, _ = run_step(ToyStep(), LocalExecutor(), replications=3)  # the same data as computed in one go
    xr.testing.assert_equal(again, fresh)
    _, done = run_step(ToyStep(seed=8), LocalExecutor(), cache=tmp_path, replications=3)  # a changed key: all anew
    assert sum(o.reused for o in done.values()) == 0


def test_the_driver_refuses_what_is_not_a_step():
    class NoRecord:
        name, layout, task, shared = "x", Layout(()), print, {}

        def cells(self):
            return []

    with pytest.raises(TypeError, match=r"missing: \['attrs', 'encoding', 'estimate', 'finish', 'record'\]"):
        run_step(NoRecord(), LocalExecutor())


def test_replicate_is_the_same_loop_with_a_count_and_with_a_target():
    from sojourn.core.estimates.precision import parse

    run = lambda requests: [10 * i + k for i, k in requests]
    raws, decisions = replicate(run, [1, 2], replications=3, offset=4)
    assert raws == [[14, 15, 16], [24, 25, 26]] and decisions == [None, None]
    target = parse({"statistic": "mean", "relative_half_width": 0.5, "max_replications": 6})
    raws, decisions = replicate(lambda req: [1.0 + 0.01 * k for _, k in req], [0], precision=target,
                                estimate=lambda i, k, r: r)
    assert decisions[0] is not None and raws[0] == [1.0 + 0.01 * k for k in range(len(raws[0]))]
