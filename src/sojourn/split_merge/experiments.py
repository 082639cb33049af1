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

from ..core.config import ConfigError
from ..core.io import log_line as _log
from ..core.io import provenance, report_progress, write_netcdf
from ..core.seeds import spec_hash
from ..core.stats import cdf_from_histogram, mean_ci, quantile
from ..core.timegrid import grid_size, time_grid
from .exact import exact_results
from .model import SplitMerge
from .simulate import simulate_replication

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
# the job
def run_experiment(client, x: str, cfg: dict, output, code: str = "", log=None) -> Path:
    """Experiment ``x`` ('a' | 'b' | 'c'): every replication of every cell one Dask task; write ``output``."""
    e = cfg[f"experiment_{x}"]
    sim = cfg["simulation"]
    tg = e["time_grid"]
    dt, t_max = float(tg["dt"]), float(tg["t_max"])
    nrep, seed, warm = int(sim["replications"]), int(sim["seed"]), float(sim["warmup_fraction"])
    ps = np.asarray(cfg["percentiles"], dtype=float) / 100.0
    conf = float(cfg["confidence"])
    cs = cells(cfg, x)
    t0 = time.perf_counter()
    tasks = [(c, k) for c in cs for k in range(nrep)]
    _log(log, f"experiment {x}: {len(cs)} cells x {nrep} replications = {len(tasks)} Dask tasks")
    futures = client.map(replication_task, [c["spec"] for c, _ in tasks], [k for _, k in tasks],
                         [seed] * len(tasks), [c["workunits"] for c, _ in tasks], [warm] * len(tasks),
                         [dt] * len(tasks), [t_max] * len(tasks), pure=False,
                         key=[f"sm-{x}-{spec_hash(c['spec']):016x}-rep{k}" for c, k in tasks])
    exact = client.map(exact_results, [c["spec"] for c in cs], [ps] * len(cs), pure=False,
                       key=[f"sm-{x}-exact-{i}" for i in range(len(cs))])  # in parallel with the replications
    step = max(1, len(futures) // 20)
    report_progress(futures, lambda i, n: (i % step == 0 or i == n) and _log(
        log, f"  [{i}/{n}] replications done ({time.perf_counter() - t0:.2f} s)"))
    results = client.gather(futures)
    _log(log, f"simulation done in {time.perf_counter() - t0:.2f} s")
    exact = client.gather(exact)
    _log(log, f"exact values done in {time.perf_counter() - t0:.2f} s")
    ds = _assemble(x, cs, results, exact, nrep, ps, conf, dt, t_max)
    ds.attrs.update(provenance(
        {"experiment": x, "settings": e, "simulation": sim, "percentiles": cfg["percentiles"], "confidence": conf},
        title=f"split-merge experiment ({x})", code_fingerprint=code,
        result_kind="simulation (sim_*: mean and t-interval across replications) beside exact values (exact_*, "
                    "is_exact, exact_method; NaN and 'none' where no exact value exists)",
        seed=seed, replications=nrep, warmup_fraction=warm, dt=dt, t_max=t_max,
        seed_recipe="replication k of a cell: sojourn.core.seeds.replication_rng(seed, cell spec, k)"))
    write_netcdf(ds, output)
    _log(log, f"wrote {output} ({time.perf_counter() - t0:.2f} s)")
    return Path(output)


def _assemble(x, cs, results, exact, nrep, ps, conf, dt, t_max) -> xr.Dataset:
    lawn = list(dict.fromkeys(c["law"] for c in cs))
    modn = list(dict.fromkeys(c["model"] for c in cs))
    qs = sorted({c["quorum"] for c in cs})
    rs = sorted({c["replicas"] for c in cs})
    shape = (len(lawn), len(modn), len(qs), len(rs))
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
    edges = time_grid(t_max, dt) + dt
    for ci, c in enumerate(cs):
        idx = (lawn.index(c["law"]), modn.index(c["model"]), qs.index(c["quorum"]), rs.index(c["replicas"]))
        reps = results[ci * nrep:(ci + 1) * nrep]
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
        V["rep_mean_latency"][idx] = [r[0]["mean_latency"] for r in reps]
        V["rep_mean_delay"][idx] = [r[0]["mean_delay"] for r in reps]
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
        "rep_mean_latency": ("mean latency of each replication", U),
        "rep_mean_delay": ("mean delay of each replication", U),
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
    ds.attrs["law_strings"] = json.dumps({c["law"]: str(c["spec"].replica_law) for c in cs})
    return ds
