"""The JSQ-PS simulation cell job: a block of cells (one law, one R, several ρ), every replication of every
cell one Dask task, cached by content key (see :mod:`sojourn.core.cache`).

Replication k of a cell is bit-identical whether computed now or earlier, in any worker, because its
random stream depends only on (seed, spec, k) (:mod:`sojourn.core.seeds`).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import xarray as xr

from ..core import precision as _precision
from ..core.cache import cached_cells, content_key, store_block
from ..core.io import log_line as _log
from ..core.io import TASK_RETRIES, report_progress
from .model import JSQPS
from .naming import DEFAULT_PERCENTILE
from .simulate import UNITS, concat_replications, simulate_replication
from .storage import SIM_FILL, SIM_VARS, select_rho, simulation_encoding


def _sim_kwargs(sim: dict, tg: dict) -> dict:
    cooldown = sim.get("cooldown")
    return dict(
        horizon=float(sim["horizon"]),
        warmup=float(sim["warmup"]),
        cooldown=float(cooldown) if cooldown is not None else None,
        backend=str(sim.get("backend", "fast")),
        dt=float(tg["dt"]),
        t_max=float(tg["t_max"]),
    )


def simulation_key(spec, sim: dict, tg: dict, code: str) -> str:
    """Content key of a cell's replications: everything that changes their values except their number."""
    kw = _sim_kwargs(sim, tg)
    return content_key(spec.to_dict(), kw, int(sim["seed"]), code)


#: engine attrs that differ between the cells of a block (kept per cell in the block's ``cell_attrs``)
CELL_SPECIFIC = ("model", "spec", "seed_entropy", "title")


def simulate_block(client, *, service: str, law: str, R: int, rhos, mu: float, sim: dict, tg: dict, code: str,
                   output, cache_dir, log=None) -> Path:
    """Simulate the cells (service, R, ρ), ρ in ``rhos``: ``sim['replications']`` replications each, or with
    ``sim['precision']`` as many as each cell's precision target needs (:mod:`sojourn.core.precision`);
    write them as one file ``output`` (dims service, R, rho, replication, t, n).

    Every missing replication of every cell is one Dask task; a round's tasks (all of them with a fixed
    count; with a precision target, the next batch of every cell not yet stopped) are submitted at once and
    gathered in order. Cells that stop at different counts share the ``replication`` axis, padded (count 0,
    floats NaN, events -1) beyond each cell's ``replications_used``. ``cache_dir`` is this block's cache:
    the file is stored there under the block's content key (``output`` is a copy of it) together with each
    cell's content key, so a rerun of the block — a ρ added, replications added, a tighter target —
    simulates only cells and replications not stored before.
    """
    rhos = [str(r) for r in rhos]
    n_rep = int(sim["replications"])
    precision = _precision.parse(sim.get("precision"), field="simulation.precision", t_max=float(tg["t_max"]),
                                 default_at=DEFAULT_PERCENTILE)
    seed = int(sim["seed"])
    kw = _sim_kwargs(sim, tg)
    specs = {rho: JSQPS.from_load(int(R), float(rho), mu=float(mu), service=law) for rho in rhos}
    keys = {rho: simulation_key(specs[rho], sim, tg, code) for rho in rhos}
    cache_dir = Path(cache_dir)
    have: dict = {rho: {} for rho in rhos}
    cell_attrs: dict = {}
    for rho, (old, attrs) in cached_cells(cache_dir, keys, select_rho, log=log).items():
        cell_attrs[rho] = attrs
        used = int(old["replications_used"].values.ravel()[0]) if "replications_used" in old else old.sizes["replication"]
        old = old[[v for v in SIM_VARS if v in old.data_vars]]
        for k in old["replication"].values.tolist():
            if k < used:
                have[rho][int(k)] = old.sel(replication=[k]).squeeze(["service", "R", "rho"], drop=True)
    for rho in rhos:
        cached = sum(1 for k in have[rho] if precision is not None or k < n_rep)
        todo = (f"precision target: {precision.describe()}" if precision is not None
                else f"{n_rep - cached} to simulate")
        _log(log, f"cell {service} R={R} rho={rho}: {specs[rho].describe()}; key {keys[rho]}; "
                  f"{cached} replications cached, {todo}")
    t0 = time.perf_counter()

    def submit(missing):
        futures = client.map(
            simulate_replication, [specs[rho] for rho, _ in missing], [k for _, k in missing],
            [seed] * len(missing), pure=False, retries=TASK_RETRIES,
            key=[f"sim-{service}-R{R}-rho{rho}-rep{k}-{keys[rho]}" for rho, k in missing], **kw,
        )
        report_progress(futures, lambda i, n: _log(log, f"  [{i}/{n}] replications done ({time.perf_counter() - t0:.2f} s)"),
                        client, what=f"replications of cells {service} R={R} rho={','.join(rhos)}")
        return client.gather(futures)

    def estimate(rho, k, ds):
        edges = ds["t"].values + float(tg["dt"])
        return float(_precision.histogram_statistic(precision, ds["count"].values[0], ds["overflow"].values[0], edges,
                                                    ds["mean"].values[0]))

    done = _precision.run_replications(rhos, submit, precision=precision, replications=n_rep, estimate=estimate,
                                       have=have, log=lambda text: _log(log, text), name=lambda rho: f"rho={rho}")
    cells = []
    for rho in rhos:
        parts = [p[[v for v in SIM_VARS if v in p.data_vars]] for p in done[rho].results]
        fresh = [p for k, p in enumerate(done[rho].results) if k not in have[rho]]
        attrs = dict(fresh[0].attrs) if fresh else dict(cell_attrs[rho])
        for p in parts:  # cached parts come from this block's own files (same content key): same attrs
            p.attrs = dict(attrs)
        ds = concat_replications(parts) if len(parts) > 1 else parts[0]
        ds = ds.expand_dims(service=[service], R=[int(R)], rho=[float(rho)])
        ds["spec_hash"] = xr.DataArray(
            np.array([[[int(json.loads(attrs["seed_entropy"])[1])]]], dtype=np.uint64),
            dims=("service", "R", "rho"),
            attrs={"long_name": "64-bit hash of the cell's spec (second entropy word of every replication's "
                                "SeedSequence)", "units": "1"})
        if precision is not None:
            decision = np.empty((1, 1, 1), dtype=object)
            decision[0, 0, 0] = done[rho].decision
            for name, (dims, values, a) in _precision.variables(decision, ("service", "R", "rho"), precision,
                                                                UNITS).items():
                ds[name] = (dims, values, a)
        ds.attrs = {}
        cell_attrs[rho] = attrs
        cells.append(ds)
    block = cells[0] if len(cells) == 1 else xr.concat(
        cells, dim="rho", data_vars="all", coords="different", compat="equals", join="outer",
        fill_value=SIM_FILL, combine_attrs="drop")
    first = cell_attrs[rhos[0]]
    block.attrs = _cell_attrs({k: v for k, v in first.items() if k not in CELL_SPECIFIC}, sim=sim, tg=tg,
                              code=code, law=law)
    if precision is not None:
        block.attrs.update(_precision.attrs(precision))
    block.attrs["cell_keys"] = json.dumps(keys, sort_keys=True)
    block.attrs["cell_attrs"] = json.dumps({rho: cell_attrs[rho] for rho in rhos}, sort_keys=True, default=str)
    block_key = content_key(keys, n_rep) if precision is None else content_key(keys, precision.to_dict())
    store_block(block, cache_dir, block_key, output, simulation_encoding(block))
    return Path(output)


def _cell_attrs(engine_attrs: dict, **extra) -> dict:
    keep = ("Conventions", "source", "sojourn_version", "git_commit", "model", "spec", "backend", "kernel",
            "horizon", "warmup", "cooldown", "dt", "t_max", "seed", "seed_entropy", "seed_recipe",
            "histogram_convention", "title")
    out = {k: engine_attrs[k] for k in keep if k in engine_attrs}
    out["pipeline_config"] = json.dumps(extra, sort_keys=True, default=str)
    return out
