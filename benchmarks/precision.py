"""Precision-driven vs fixed replications on the default config (issue 14: "precision-driven runs of the default config
spend >= 30 % fewer customer-events than fixed ten replications for the same worst-cell half-width").

    python benchmarks/precision.py            # JSQ-PS, the default config's 62 cells (35 M/M/R + 27 M/G/R)
    python benchmarks/precision.py --study split_merge   # or restart, or all
    python benchmarks/precision.py --statistic mean      # another statistic than the study's default

For every simulated cell of the study's section of config/config.yaml (its run length, grid and seed), with the
study's default precision statistic (JSQ-PS: the 99.99th sojourn percentile; split-merge: the mean latency;
restart: the mean response time E[T]):

1. fixed: 10 replications per cell; each cell's relative half-width of the 95 % Student-t interval of the
   statistic across replications (sojourn.core.estimates.precision.decide); H = the worst cell's;
2. precision: the same cells with ``precision: {relative_half_width: H, max_replications: 200}`` — every cell
   stops once its own half-width is <= H (none before 5 replications), so the worst cell is no wider than with
   fixed ten;
3. the cost of each: customer-events = arrivals + departures simulated (the kernels' ``events``; split-merge:
   workunits simulated, its kernels' unit of work), summed over every replication used.

Cells whose statistic is undefined in some fixed replication (a percentile beyond the histogram) have no
half-width: they are reported and left out of both totals. Both runs use sojourn.simulate & co. in this process
(the same stopping rule and seeds as the pipeline's cell jobs; replication k is bit-identical either way), so the
counts are exact and independent of the machine; only the wall times printed beside them depend on it.
Results are appended as JSON lines to benchmarks/precision.jsonl.
"""
from __future__ import annotations

import argparse
import copy
import functools
import json
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from sojourn.core.checks.config import validate_config  # noqa: E402
from sojourn.core.estimates.precision import STOP_REASONS, TARGET_MET, decide, histogram_statistic, parse  # noqa: E402

FIXED = 10
CAP = 200


def section(study: str) -> dict:
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())[study]
    return validate_config(copy.deepcopy(cfg), ROOT / "workflow" / "schemas" / f"{study}.schema.yaml", study)


# -- per study: the cells, how to simulate one, its per-replication statistic and its events ------------------
def jsq_ps():
    from sojourn.jsq_ps.config import cells, service_laws
    from sojourn.jsq_ps.model import JSQPS
    from sojourn.jsq_ps.simulate import simulate

    cfg = section("jsq_ps")
    sim, tg = cfg["simulation"], cfg["time_grid"]
    laws = service_laws(cfg)
    w = sim["window"]
    kw = dict(horizon=float(w["length"]), warmup=float(w["warmup"]), cooldown=w["cooldown"],
              seed=int(sim["seed"]), dt=float(tg["dt"]), t_max=float(tg["t_max"]))
    out = {}
    for c in cells(cfg):
        spec = JSQPS.from_rho(c.R, c.rho, mu=float(cfg["grid"]["mu"]), service=laws[c.service])
        out[f"{c.service} R={c.R} rho={c.rho}"] = (lambda s: lambda **k: simulate(s, **kw, **k))(spec)

    def values(p, ds):
        return histogram_statistic(p, ds["count"].values, ds["overflow"].values, ds["t"].values + kw["dt"],
                                   ds["mean"].values)

    return out, {"statistic": "percentile", "at": 99.99}, values, lambda ds: int(ds["events"].sum())


def split_merge():
    from sojourn.split_merge.config import EXPERIMENTS, cells
    from sojourn.split_merge.simulate import simulate

    cfg = section("split_merge")
    out = {}
    for x in EXPERIMENTS:
        e = cfg[f"experiment_{x}"]
        if not e["enabled"]:
            continue
        for c in cells(cfg, x):
            kw = dict(workunits=c["workunits"], warmup_workunits=c["warmup"],
                      seed=int(cfg["simulation"]["seed"]), dt=float(e["time_grid"]["dt"]),
                      t_max=float(e["time_grid"]["t_max"]))
            name = f"({x}) {c['law']} {c['model']} r={c['replicas']} q={c['quorum']}"
            out[name] = functools.partial(simulate, c["spec"], **kw)

    def values(p, ds):
        return histogram_statistic(p, ds["latency_count"].values, ds["latency_overflow"].values,
                                   ds["t"].values + float(ds.attrs["dt"]), ds["mean_latency"].values)

    return out, {"statistic": "mean"}, values, lambda ds: int(ds["simulated_workunits"].sum())


def restart():
    from sojourn.restart.config import restart_rates, sim_kwargs
    from sojourn.restart.files import load_model
    from sojourn.restart.simulate import simulate, spec_for

    cfg = section("restart")
    sim = cfg["simulation"]
    out = {}
    for name, ex in sorted(cfg["examples"].items()):
        net = load_model(ex["model"])
        kw = {**sim_kwargs(sim, cfg["time_grid"], ex), "seed": int(sim["seed"])}
        for s in ex["semantics"]:
            for r in restart_rates(ex["rates"]):
                out[f"{name} {s} r={r:g}"] = functools.partial(simulate, spec_for(net, s, r), **kw)

    def values(p, ds):
        x = histogram_statistic(p, ds["count"].values, ds["overflow"].values, ds["t"].values + float(ds.attrs["dt"]),
                                ds["mean"].values)
        return np.where(ds["unstable"].values > 0, np.nan, x)

    return out, {"statistic": "mean"}, values, lambda ds: int(ds["events"].sum())


STUDIES = {"jsq_ps": jsq_ps, "split_merge": split_merge, "restart": restart}


def measure(study: str, statistic: str | None = None) -> dict:
    cells, stat, values, events = STUDIES[study]()
    if statistic:
        name, _, at = statistic.partition(":")
        stat = {"statistic": name, **({"at": float(at)} if at else {})}
    probe = parse({**stat, "relative_half_width": 1.0})
    t0 = time.perf_counter()
    fixed = {}
    for name, run in cells.items():
        ds = run(replications=FIXED)
        fixed[name] = (decide(values(probe, ds), probe), events(ds))
    t_fixed = time.perf_counter() - t0
    rel = {n: d.relative_half_width for n, (d, _) in fixed.items()}
    undefined = sorted(n for n, r in rel.items() if not np.isfinite(r))
    kept = [n for n in cells if n not in undefined]
    worst = max(kept, key=lambda n: rel[n])
    H = rel[worst]
    target = {**stat, "relative_half_width": float(H), "max_replications": CAP}
    t0 = time.perf_counter()
    prec = {}
    for name in kept:
        ds = cells[name](precision=target)
        prec[name] = (int(ds["replications_used"]), int(ds["stop_reason"]), float(ds["achieved_relative_half_width"]),
                      events(ds))
    t_prec = time.perf_counter() - t0
    ev_fixed = sum(fixed[n][1] for n in kept)
    ev_prec = sum(prec[n][3] for n in kept)
    achieved = max(prec[n][2] for n in kept)
    counts = [prec[n][0] for n in kept]
    out = {
        "benchmark": "precision", "study": study, "statistic": stat, "cells": len(cells), "cells_compared": len(kept),
        "cells_undefined": undefined, "fixed_replications": FIXED, "worst_cell": worst,
        "worst_relative_half_width_fixed": H, "worst_relative_half_width_precision": achieved,
        "events_fixed": ev_fixed, "events_precision": ev_prec, "saving": 1.0 - ev_prec / ev_fixed,
        "replications_fixed": FIXED * len(kept), "replications_precision": int(sum(counts)),
        "replications_per_cell_precision": {"min": min(counts), "median": float(np.median(counts)), "max": max(counts)},
        "stop_reasons": {STOP_REASONS[k]: sum(1 for n in kept if prec[n][1] == k) for k in sorted(STOP_REASONS)
                         if any(prec[n][1] == k for n in kept)},
        "all_met": all(prec[n][1] == TARGET_MET for n in kept),
        "wall_s_fixed": round(t_fixed, 1), "wall_s_precision": round(t_prec, 1),
        "per_cell": {n: {"fixed_rel_hw": rel[n], "replications": prec[n][0], "rel_hw": prec[n][2],
                         "events_fixed": fixed[n][1], "events": prec[n][3]} for n in kept},
    }
    return out


def report(r: dict) -> None:
    what = r["statistic"]["statistic"] + (f" {r['statistic']['at']:g}" if r["statistic"].get("at") else "")
    unit = "workunits simulated" if r["study"] == "split_merge" else "customer-events"
    print(f"{r['study']}: {r['cells_compared']} of {r['cells']} cells, statistic {what}")
    if r["cells_undefined"]:
        print(f"  left out (statistic undefined in a fixed replication): {', '.join(r['cells_undefined'])}")
    print(f"  fixed {r['fixed_replications']} replications: worst-cell relative half-width "
          f"{r['worst_relative_half_width_fixed']:.4g} ({r['worst_cell']}); {r['events_fixed']:,} {unit}")
    pc = r["replications_per_cell_precision"]
    print(f"  precision (target {r['worst_relative_half_width_fixed']:.4g}): worst-cell relative half-width "
          f"{r['worst_relative_half_width_precision']:.4g}; {r['events_precision']:,} {unit}; replications per cell "
          f"{pc['min']}..{pc['max']} (median {pc['median']:g}), {r['replications_precision']} in all vs "
          f"{r['replications_fixed']}; stops: {r['stop_reasons']}")
    print(f"  saving: {100 * r['saving']:.1f} % of the {unit} "
          f"(wall {r['wall_s_fixed']} s vs {r['wall_s_precision']} s on this machine, not the measure)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", default="jsq_ps", choices=[*STUDIES, "all"])
    ap.add_argument("--statistic", default=None, metavar="STATISTIC[:AT]",
                    help="instead of the study's default: mean, percentile:P or cdf:T")
    args = ap.parse_args()
    for study in (STUDIES if args.study == "all" else [args.study]):
        r = measure(study, args.statistic)
        report(r)
        with open(ROOT / "benchmarks" / "precision.jsonl", "a") as fh:
            fh.write(json.dumps({k: v for k, v in r.items() if k != "per_cell"}) + "\n")
