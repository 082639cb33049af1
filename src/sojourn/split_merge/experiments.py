"""The seed's experiments as pipeline jobs: cells, one Dask task per replication, exact values, one netCDF each.

(a) ``experiment_a``: one system (default n = r = 3, q = 2, a documented 3-phase PH replica law, load 0.9):
    the simulated latency (mean, percentiles, CDF) beside the exact one (M/PH/1).
(b) ``experiment_b``: r = 1..5, q = 1..r at ``hosts`` (null: n = r, the paper's (n, n, q) systems), load 0.9.
(c) ``experiment_c``: n = 100, q ∈ quorums, r ∈ replicas (q ≤ r), λ = load·⌊n/r⌋/E[S_{q:r}], several replica
    laws; split-merge and (optionally, with its own run length) fork-join with cancellation.

Every result file is a hypercube over (law, model, quorum, replicas) (cells with q > r are NaN) with the
simulated means/percentiles and their CIs (t-interval across replications), the pooled histograms, the
per-replication means, and the exact values with ``is_exact`` and ``exact_method`` (never an approximation
presented as exact: where nothing exact exists the value is NaN and the method "none").
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import xarray as xr

from ..core.cache import cached_cells, content_key, store_entry
from ..core.config import ConfigError
from ..core.io import log_line as _log
from ..core.precision import attrs as precision_attrs
from ..core.precision import histogram_statistic, run_replications
from ..core.precision import parse as parse_precision
from ..core.precision import variables as precision_variables
from ..core.io import provenance, report_progress, write_netcdf
from ..core.seeds import spec_hash
from ..core.stats import cdf_from_histogram, mean_ci, quantile
from ..core.timegrid import grid_size, time_grid
from .solve import exact_results
from .model import SplitMerge
from .simulate import DEFAULT_PERCENTILE, simulate_replication

EXPERIMENTS = ("a", "b", "c")
EXACT_METHODS = ("none", "pollaczek-khinchine", "erlang-c", "qbd")


# ---------------------------------------------------------------------------------------------
# config
def check_config(cfg: dict) -> None:
    """Cross-field checks JSON schema cannot do; ConfigError naming the key."""
    for x in EXPERIMENTS:
        e = cfg[f"experiment_{x}"]
        if not e["enabled"]:
            continue
        try:
            grid_size(e["time_grid"]["t_max"], e["time_grid"]["dt"])
        except ValueError as exc:
            raise ConfigError(f"split_merge.experiment_{x}.time_grid: {exc}") from None
        try:
            cells(cfg, x)
        except ValueError as exc:
            raise ConfigError(f"split_merge.experiment_{x}: {exc}") from None
        try:
            precision_for(cfg, x)
        except ValueError as exc:
            raise ConfigError(f"split_merge.{exc}") from None


def laws(e: dict) -> dict:
    """{name: law string} of an experiment (``replica_law`` or the ``laws`` mapping)."""
    return dict(e["laws"]) if "laws" in e else {"law": e["replica_law"]}


def models(e: dict) -> list[str]:
    fj = e.get("fork_join", {})
    return ["split_merge"] + (["fork_join"] if fj.get("enabled", False) else [])


def cells(cfg: dict, x: str) -> list[dict]:
    """The cells of experiment ``x``: dicts with law, model, quorum, replicas, spec, workunits."""
    e = cfg[f"experiment_{x}"]
    out = []
    for lname, law in laws(e).items():
        for model in models(e):
            wu = e["workunits"] if model == "split_merge" else e["fork_join"]["workunits"]
            if x == "a":
                pairs = [(e["replicas"], e["quorum"])]
            else:
                pairs = [(r, q) for r in e["replicas"] for q in (e.get("quorums") or range(1, r + 1)) if q <= r]
            for r, q in pairs:
                hosts = e["hosts"] if e["hosts"] is not None else r
                spec = SplitMerge.from_load(hosts, r, q, e["load"], law, model)
                out.append({"law": lname, "model": model, "quorum": int(q), "replicas": int(r), "spec": spec,
                            "workunits": int(wu)})
    return out


# ---------------------------------------------------------------------------------------------
# the Dask task
def replication_task(spec: SplitMerge, k: int, seed: int, workunits: int, warmup: float, dt: float, t_max: float):
    """Replication k of ``spec``: its means and histograms as plain arrays (cheap to send back)."""
    ds = simulate_replication(spec, k, seed=seed, workunits=workunits,
                              warmup_workunits=int(round(warmup * workunits)), dt=dt, t_max=t_max)
    scal = {v: float(ds[v].values[0]) for v in ("mean_delay", "mean_latency", "host_utilisation", "host_computing",
                                                 "throughput", "wall_time")}
    return scal, ds["latency_count"].values[0], int(ds["latency_overflow"].values[0]), \
        ds["delay_count"].values[0], int(ds["delay_overflow"].values[0])


# ---------------------------------------------------------------------------------------------
# the cache of replications (the experiment's file holds summaries, so the replications are kept beside it)
SCALARS = ("mean_delay", "mean_latency", "host_utilisation", "host_computing", "throughput", "wall_time")


def cell_label(c: dict) -> str:
    return f"{c['law']}/{c['model']}/q{c['quorum']}/r{c['replicas']}"


def cell_key(c: dict, seed: int, warm: float, dt: float, t_max: float, code: str) -> str:
    """Content key of a cell's replications: everything that changes their values except their number."""
    return content_key(c["spec"].to_dict(), c["workunits"], warm, dt, t_max, seed, code)


def _cached(cache_dir, keys: dict, log) -> dict:
    """{label: {k: replication result}} of the cells whose key matches an earlier run's cache entry."""
    out = {}
    for label, (ds, _) in cached_cells(cache_dir, keys, lambda d, lab: d.sel(cell=lab), log=log).items():
        used = int(ds["replications_used"])
        out[label] = {k: ({v: float(ds[v].values[k]) for v in SCALARS}, ds["latency_count"].values[k].astype(np.int64),
                          int(ds["latency_overflow"].values[k]), ds["delay_count"].values[k].astype(np.int64),
                          int(ds["delay_overflow"].values[k])) for k in range(used)}
    return out


def _cache_dataset(labels, keys, done, nb) -> xr.Dataset:
    """Every cell's replications (padded to the longest) as one Dataset (dims cell, replication, t)."""
    K = max(done[lab].replications for lab in labels)
    n = len(labels)
    sc = {v: np.full((n, K), np.nan) for v in SCALARS}
    counts = {v: np.zeros((n, K, nb), np.int32) for v in ("latency_count", "delay_count")}
    over = {v: np.zeros((n, K), np.int64) for v in ("latency_overflow", "delay_overflow")}
    for i, lab in enumerate(labels):
        for k, r in enumerate(done[lab].results):
            for v in SCALARS:
                sc[v][i, k] = r[0][v]
            counts["latency_count"][i, k], over["latency_overflow"][i, k] = r[1], r[2]
            counts["delay_count"][i, k], over["delay_overflow"][i, k] = r[3], r[4]
    data = {v: (("cell", "replication"), a) for v, a in {**sc, **over}.items()}
    data.update({v: (("cell", "replication", "t"), a) for v, a in counts.items()})
    data["replications_used"] = (("cell",), np.array([done[lab].replications for lab in labels], np.int64))
    ds = xr.Dataset(data, coords={"cell": np.array(labels, dtype=object), "replication": np.arange(K)})
    ds.attrs["cell_keys"] = json.dumps(keys, sort_keys=True)
    return ds


def _cache_encoding(ds) -> dict:
    return {v: {"zlib": True, "complevel": 4, "shuffle": True,
                **({"chunksizes": (1, 1, ds.sizes["t"])} if ds[v].ndim == 3 else {})} for v in ds.data_vars}


# ---------------------------------------------------------------------------------------------
# the job
def run_experiment(client, x: str, cfg: dict, output, code: str = "", log=None, cache_dir=None) -> Path:
    """Experiment ``x`` ('a' | 'b' | 'c'): every replication of every cell one Dask task; write ``output``.

    ``simulation.replications`` replications per cell, or with ``simulation.precision`` as many as each
    cell's target needs (:mod:`sojourn.core.precision`; the statistic is of the latency). ``cache_dir``
    (optional) keeps every cell's replications under its content key, so a rerun — replications added,
    a tighter target — simulates only replications not stored before.
    """
    e = cfg[f"experiment_{x}"]
    sim = cfg["simulation"]
    tg = e["time_grid"]
    dt, t_max = float(tg["dt"]), float(tg["t_max"])
    nrep, seed, warm = int(sim["replications"]), int(sim["seed"]), float(sim["warmup_fraction"])
    precision = precision_for(cfg, x)
    ps = np.asarray(cfg["percentiles"], dtype=float) / 100.0
    conf = float(cfg["confidence"])
    cs = cells(cfg, x)
    labels = [cell_label(c) for c in cs]
    by_label = dict(zip(labels, cs))
    keys = {lab: cell_key(c, seed, warm, dt, t_max, code) for lab, c in by_label.items()}
    have = _cached(cache_dir, keys, log) if cache_dir is not None else {}
    t0 = time.perf_counter()
    cached = f"{sum(len(v) for v in have.values())} replications of {len(have)} cells cached"
    if precision is None:
        _log(log, f"experiment {x}: {len(cs)} cells x {nrep} replications = {len(cs) * nrep} Dask tasks ({cached})")
    else:
        _log(log, f"experiment {x}: {len(cs)} cells x replications to the precision target ({precision.describe()}), "
                  f"one Dask task each ({cached})")
    exact = client.map(exact_results, [c["spec"] for c in cs], [ps] * len(cs), pure=False,
                       key=[f"sm-{x}-exact-{i}" for i in range(len(cs))])  # in parallel with the replications

    def submit(tasks):
        futures = client.map(replication_task, [by_label[lab]["spec"] for lab, _ in tasks], [k for _, k in tasks],
                             [seed] * len(tasks), [by_label[lab]["workunits"] for lab, _ in tasks], [warm] * len(tasks),
                             [dt] * len(tasks), [t_max] * len(tasks), pure=False,
                             key=[f"sm-{x}-{spec_hash(by_label[lab]['spec']):016x}-rep{k}" for lab, k in tasks])
        step = max(1, len(futures) // 20)
        report_progress(futures, lambda i, n: (i % step == 0 or i == n) and _log(
            log, f"  [{i}/{n}] replications done ({time.perf_counter() - t0:.2f} s)"))
        return client.gather(futures)

    edges = time_grid(t_max, dt) + dt

    def estimate(_, k, r):
        return float(histogram_statistic(precision, r[1], r[2], edges, r[0]["mean_latency"]))

    done = run_replications(labels, submit, precision=precision, replications=nrep, estimate=estimate, have=have,
                            log=(lambda text: _log(log, text)) if precision is not None else None)
    _log(log, f"simulation done in {time.perf_counter() - t0:.2f} s")
    exact = client.gather(exact)
    _log(log, f"exact values done in {time.perf_counter() - t0:.2f} s")
    ds = _assemble(x, cs, [done[lab].results for lab in labels], exact, ps, conf, dt, t_max,
                   decisions=[done[lab].decision for lab in labels], precision=precision)
    extra = {"replications": nrep} if precision is None else {
        "replications": "precision-driven: see replications_used", **precision_attrs(precision),
        "precision_statistic_of": "latency"}
    ds.attrs.update(provenance(
        {"experiment": x, "settings": e, "simulation": sim, "percentiles": cfg["percentiles"], "confidence": conf},
        title=f"split-merge experiment ({x})", code_fingerprint=code,
        result_kind="simulation (sim_*: mean and t-interval across replications) beside exact values (exact_*, "
                    "is_exact, exact_method; NaN and 'none' where no exact value exists)",
        seed=seed, warmup_fraction=warm, dt=dt, t_max=t_max, **extra,
        seed_recipe="replication k of a cell: sojourn.core.seeds.replication_rng(seed, cell spec, k, \"sfc64\")"))
    write_netcdf(ds, output)
    if cache_dir is not None:
        entry = _cache_dataset(labels, keys, done, grid_size(t_max, dt))
        store_entry(entry, cache_dir, content_key(keys, nrep if precision is None else precision.to_dict()),
                    _cache_encoding(entry))
    _log(log, f"wrote {output} ({time.perf_counter() - t0:.2f} s)")
    return Path(output)


def precision_for(cfg: dict, x: str):
    """The precision target of experiment ``x`` (None: a fixed count); ValueError naming the key."""
    e = cfg[f"experiment_{x}"]
    return parse_precision((cfg["simulation"] or {}).get("precision"), field="simulation.precision",
                           t_max=float(e["time_grid"]["t_max"]), default_at=DEFAULT_PERCENTILE,
                           default_statistic="mean")


def _assemble(x, cs, reps_by_cell, exact, ps, conf, dt, t_max, decisions=None, precision=None) -> xr.Dataset:
    lawn = list(dict.fromkeys(c["law"] for c in cs))
    modn = list(dict.fromkeys(c["model"] for c in cs))
    qs = sorted({c["quorum"] for c in cs})
    rs = sorted({c["replicas"] for c in cs})
    shape = (len(lawn), len(modn), len(qs), len(rs))
    nrep = max(len(r) for r in reps_by_cell)
    nb = grid_size(t_max, dt)
    f = lambda *extra: np.full(shape + extra, np.nan)
    V = {k: f() for k in ("arrival_rate", "load", "hosts", "mean_service", "max_throughput", "exact_mean_latency",
                          "exact_mean_delay", "is_exact", "exact_method", "sim_mean_latency", "sim_mean_latency_hw",
                          "sim_mean_delay", "sim_mean_delay_hw", "sim_utilisation", "sim_utilisation_hw",
                          "sim_computing", "sim_throughput", "workunits", "wall_time")}
    V["exact_latency_percentile"] = f(len(ps))
    V["sim_latency_percentile"] = f(len(ps))
    V["sim_latency_percentile_hw"] = f(len(ps))
    V["rep_mean_latency"] = f(nrep)
    V["rep_mean_delay"] = f(nrep)
    hl = np.zeros(shape + (nb,), np.int64)
    hd = np.zeros(shape + (nb,), np.int64)
    ol = np.zeros(shape, np.int64)
    dec = np.full(shape, None, dtype=object)
    edges = time_grid(t_max, dt) + dt
    for ci, c in enumerate(cs):
        idx = (lawn.index(c["law"]), modn.index(c["model"]), qs.index(c["quorum"]), rs.index(c["replicas"]))
        reps = reps_by_cell[ci]
        n = len(reps)
        dec[idx] = decisions[ci] if decisions is not None else None
        spec = c["spec"]
        ex = exact[ci]
        V["arrival_rate"][idx] = spec.arrival_rate
        V["load"][idx] = spec.load
        V["hosts"][idx] = spec.hosts
        V["mean_service"][idx] = ex["mean_service"]
        V["max_throughput"][idx] = ex["max_throughput"]
        V["exact_mean_latency"][idx] = ex["mean_latency"]
        V["exact_mean_delay"][idx] = ex["mean_delay"]
        V["is_exact"][idx] = float(ex["exact"])
        V["exact_method"][idx] = EXACT_METHODS.index(ex["delay_method"])
        V["exact_latency_percentile"][idx] = ex["latency_percentile"]
        V["workunits"][idx] = c["workunits"]
        for name, key in (("mean_latency", "sim_mean_latency"), ("mean_delay", "sim_mean_delay"),
                          ("host_utilisation", "sim_utilisation")):
            m, h = mean_ci(np.array([r[0][name] for r in reps]), confidence=conf)
            V[key][idx], V[key + "_hw"][idx] = m, h
        V["sim_computing"][idx] = np.mean([r[0]["host_computing"] for r in reps])
        V["sim_throughput"][idx] = np.mean([r[0]["throughput"] for r in reps])
        V["wall_time"][idx] = np.sum([r[0]["wall_time"] for r in reps])
        V["rep_mean_latency"][idx][:n] = [r[0]["mean_latency"] for r in reps]  # NaN beyond the cell's n
        V["rep_mean_delay"][idx][:n] = [r[0]["mean_delay"] for r in reps]
        counts = np.array([r[1] for r in reps])
        over = np.array([r[2] for r in reps])
        per = quantile(edges, cdf_from_histogram(counts, over), ps)  # (replication, p)
        m, h = mean_ci(per, confidence=conf)
        V["sim_latency_percentile"][idx], V["sim_latency_percentile_hw"][idx] = m, h
        hl[idx] = counts.sum(axis=0)
        ol[idx] = over.sum()
        hd[idx] = np.array([r[3] for r in reps]).sum(axis=0)
    U = "time units of the replica law"
    dims = ("law", "model", "quorum", "replicas")
    meta = {
        "arrival_rate": ("Poisson arrival rate lambda = load floor(n/r)/E[S_q:r]", "1/" + U),
        "load": ("load per super-server lambda E[S_q:r]/floor(n/r)", "1"),
        "hosts": ("hosts n", "1"),
        "mean_service": ("E[S_q:r] (exact: phase-type algebra or quadrature)", U),
        "max_throughput": ("maximal throughput floor(n/r)/E[S_q:r] (exact)", "1/" + U),
        "exact_mean_latency": ("exact mean latency (NaN: none available; see exact_method)", U),
        "exact_mean_delay": ("exact mean delay (NaN: none available)", U),
        "is_exact": ("1 if exact_mean_* are exact, 0 if no exact value exists (NaN)", "1"),
        "exact_method": ("method of exact_mean_*: " + ", ".join(f"{i}={m}" for i, m in enumerate(EXACT_METHODS)), "1"),
        "exact_latency_percentile": ("exact latency percentile (c = 1 with PH replicas, or Erlang C; else NaN)", U),
        "sim_mean_latency": ("simulated mean latency, mean across replications", U),
        "sim_mean_latency_hw": ("half-width of its t-interval across replications", U),
        "sim_mean_delay": ("simulated mean delay, mean across replications", U),
        "sim_mean_delay_hw": ("half-width of its t-interval across replications", U),
        "sim_utilisation": ("fraction of host-time held by workunits", "1"),
        "sim_utilisation_hw": ("half-width of its t-interval across replications", "1"),
        "sim_computing": ("fraction of host-time computing replicas until the quorum", "1"),
        "sim_throughput": ("recorded workunits per unit time", "1/" + U),
        "sim_latency_percentile": ("simulated latency percentile: mean across replications of each one's "
                                   "histogram percentile (a right bin edge)", U),
        "sim_latency_percentile_hw": ("half-width of its t-interval across replications", U),
        "rep_mean_latency": ("mean latency of each replication (NaN beyond the cell's replications)", U),
        "rep_mean_delay": ("mean delay of each replication (NaN beyond the cell's replications)", U),
        "workunits": ("recorded workunits per replication", "1"),
        "wall_time": ("total simulation wall time of the cell's replications (not reproducible)", "s"),
    }
    data = {}
    for k, v in V.items():
        extra = ("percentile",) if "percentile" in k else (("replication",) if k.startswith("rep_") else ())
        data[k] = (dims + extra, v, {"long_name": meta[k][0], "units": meta[k][1]})
    data["latency_count"] = (dims + ("t",), hl, {"long_name": "pooled (all replications) workunits with latency in "
                                                              "[t, t + dt)", "units": "1"})
    data["latency_overflow"] = (dims, ol, {"long_name": "pooled workunits with latency >= t_max + dt", "units": "1"})
    data["delay_count"] = (dims + ("t",), hd, {"long_name": "pooled workunits with delay in [t, t + dt)", "units": "1"})
    ds = xr.Dataset(data, coords={
        "law": ("law", np.array(lawn, dtype=object), {"long_name": "replica law name"}),
        "model": ("model", np.array(modn, dtype=object), {"long_name": "split_merge or fork_join (cancellation)"}),
        "quorum": ("quorum", np.array(qs), {"long_name": "quorum q", "units": "1"}),
        "replicas": ("replicas", np.array(rs), {"long_name": "replicas r", "units": "1"}),
        "percentile": ("percentile", ps, {"long_name": "probability level", "units": "1"}),
        "replication": ("replication", np.arange(nrep), {"long_name": "replication index (seed spawn key)",
                                                         "units": "1"}),
        "t": ("t", time_grid(t_max, dt), {"long_name": "time, left edge of histogram bin", "units": U}),
    })
    if precision is not None:
        for name, (d, values, a) in precision_variables(dec, dims, precision, U).items():
            ds[name] = (d, values, a)
    ds.attrs["law_strings"] = json.dumps({c["law"]: str(c["spec"].replica_law) for c in cs})
    return ds
