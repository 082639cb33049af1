"""sojourn.core.runs.runner on a local executor: a cell's replications are the same whether computed now, taken from the
cache or run in another order; only the missing (cell, replication) pairs are computed; deterministic cells run once;
the stored result is one file under two sealed names."""
from __future__ import annotations

import numpy as np
import xarray as xr

from sojourn.core.estimates.precision import Precision
from sojourn.core.files import integrity
from sojourn.core.runs.runner import Cell, LocalExecutor, lookup, run_cells, store

CALLS: list = []


def task(mean, k, *, seed):
    """Replication k of a cell: a number that depends only on (seed, mean, k)."""
    CALLS.append((mean, k))
    return float(np.random.default_rng([seed, int(1000 * mean), k]).exponential(mean))


def _dataset(cells, done):
    K = max(o.replications for o in done.values())
    x = np.full((len(cells), K), np.nan)
    for i, c in enumerate(cells):
        x[i, :done[c.label].replications] = done[c.label].results
    return xr.Dataset({"x": (("cell", "replication"), x),
                       "used": ("cell", [done[c.label].replications for c in cells])},
                      coords={"cell": [c.label for c in cells]})


def _split(part, cell):
    return {k: float(part["x"].values[k]) for k in range(int(part["used"]))}


def test_only_missing_replications_are_computed_and_values_do_not_depend_on_the_cache(tmp_path):
    cells = [Cell("a", "key-a", (1.0,)), Cell("b", "key-b", (2.0,))]
    CALLS.clear()
    done = run_cells(LocalExecutor(), cells, task, replications=3, shared={"seed": 7})
    assert len(CALLS) == 6
    store(_dataset(cells, done), tmp_path / "cache", cells, 3, tmp_path / "out.nc")
    have, _ = lookup(tmp_path / "cache", cells + [Cell("c", "key-c", (3.0,))], lambda ds, c: ds.sel(cell=c.label),
                     _split)
    assert set(have) == {"a", "b"} and list(have["a"]) == [0, 1, 2]
    CALLS.clear()
    more = run_cells(LocalExecutor(), cells + [Cell("c", "key-c", (3.0,))], task, replications=5, have=have,
                     shared={"seed": 7})
    assert sorted(CALLS) == sorted([(1.0, 3), (1.0, 4), (2.0, 3), (2.0, 4)] + [(3.0, k) for k in range(5)])
    assert more["a"].results[:3] == done["a"].results and (more["a"].simulated, more["a"].reused) == (2, 3)
    fresh = run_cells(LocalExecutor(), cells, task, replications=5, shared={"seed": 7})
    assert [fresh[c.label].results for c in cells] == [more[c.label].results for c in cells]


def test_a_changed_key_is_not_taken_from_the_cache(tmp_path):
    cells = [Cell("a", "key-a", (1.0,))]
    done = run_cells(LocalExecutor(), cells, task, replications=2, shared={"seed": 1})
    store(_dataset(cells, done), tmp_path / "cache", cells, 2)
    have, _ = lookup(tmp_path / "cache", [Cell("a", "other", (1.0,))], lambda ds, c: ds.sel(cell=c.label), _split)
    assert have == {}


def test_precision_loop_and_deterministic_cells():
    cells = [Cell("a", "ka", (1.0,))]
    p = Precision("mean", None, 0.2, max_replications=40, min_replications=5)
    done = run_cells(LocalExecutor(), cells, task, precision=p, estimate=lambda c, k, r: r, shared={"seed": 3})
    d = done["a"].decision
    assert d is not None and done["a"].replications == d.replications >= 5
    assert d.reason_name in ("target_met", "max_replications")
    CALLS.clear()
    det = run_cells(LocalExecutor(), [Cell("x", "kx", (4.0, 0)), Cell("y", "ky", (5.0, 0))], task,
                    have={"y": {0: -1.0}}, shared={"seed": 0})
    assert CALLS == [(4.0, 0)] and det["y"].results == [-1.0] and det["x"].simulated == 1


def test_stored_once_under_two_sealed_names_and_other_entries_dropped(tmp_path):
    cells = [Cell("a", "ka", (1.0,))]
    done = run_cells(LocalExecutor(), cells, task, replications=2, shared={"seed": 1})
    store(_dataset(cells, done), tmp_path / "cache", cells, 2, tmp_path / "out.nc")
    first = sorted((tmp_path / "cache").glob("*.nc"))
    store(_dataset(cells, done), tmp_path / "cache", cells, 3, tmp_path / "out.nc")  # another count: a new entry
    (entry,) = sorted((tmp_path / "cache").glob("*.nc"))
    assert entry not in first and not any(p.exists() for p in first)
    assert entry.stat().st_ino == (tmp_path / "out.nc").stat().st_ino
    assert integrity.check(entry) == integrity.check(tmp_path / "out.nc") == "ok"


def test_batches_are_runs_of_one_cell_and_keep_tasks_per_slot():
    from sojourn.core.runs.runner import TASKS_PER_SLOT, batches

    requests = [(c, k) for c in "abcd" for k in range(10)]  # 40 requests
    assert batches(requests, None) == [[i] for i in range(40)]  # no slots (another cluster): one request a task
    for slots in (1, 2, 3, 8):
        groups = batches(requests, slots)
        assert [i for g in groups for i in g] == list(range(40))  # every request once, in order
        assert all(len({requests[i][0] for i in g}) == 1 for g in groups)  # one cell per task
        size = max(1, 40 // (TASKS_PER_SLOT * slots))
        assert max(map(len, groups)) == size and len(groups) == sum(-(-10 // size) for _ in "abcd")


def _where(mean, k, *, seed):
    import os

    return task(mean, k, seed=seed), os.getpid()


def test_batched_dask_tasks_give_the_results_of_one_task_per_replication(tmp_path, monkeypatch):
    """On a local Dask cluster the replications travel in batches of one cell's (fewer tasks: each one's CPU line
    in SOJOURN_TASK_CPU), with the same results in the same order as one task per replication (LocalExecutor)."""
    from sojourn.core.cluster.cluster import dask_client
    from sojourn.core.runs.runner import TASK_CPU, DaskExecutor

    cells = [Cell(f"c{i}", f"key-{i}", (1.0 + i,)) for i in range(6)]
    expected = run_cells(LocalExecutor(), cells, task, replications=40, shared={"seed": 3})
    monkeypatch.setenv(TASK_CPU, str(tmp_path / "tasks.tsv"))
    with dask_client({"kind": "local"}, 2) as client:
        done = run_cells(DaskExecutor(client), cells, _where, replications=40, shared={"seed": 3})
        profiling = client.run(lambda: __import__("dask").config.get("distributed.worker.profile.enabled"))
    assert set(profiling.values()) == {False}  # no dashboard: the workers' sampling profiler is off
    for c in cells:
        assert [r for r, _ in done[c.label].results] == expected[c.label].results
        assert done[c.label].simulated == 40
    lines = [line.split("\t") for line in (tmp_path / "tasks.tsv").read_text().splitlines()]
    assert sum(int(n) for _, n, _, _ in lines) == 240 and len(lines) == 6 * 3  # 240 // 16 = 15 a batch: 3 per cell
    assert {fn for fn, *_ in lines} == {f"{__name__}._where"}
