"""Pipeline benchmarks (not a test): wall times, per-job and per-task overheads, DAG/no-op time, result sizes.

    python benchmarks/pipeline.py all            # everything below (about 10 min on 2 cores)
    python benchmarks/pipeline.py default        # snakemake --cores 2 on config/config.yaml, fresh workdir
    python benchmarks/pipeline.py slice          # paper settings on R=1..10 x 5 loads, extrapolated to 990 cells
    python benchmarks/pipeline.py overhead       # per Snakemake job and per Dask task
    python benchmarks/pipeline.py noop           # DAG build and no-op rerun of config/paper.yaml
    python benchmarks/pipeline.py paper          # the whole config/paper.yaml, measured (~12 min; not in 'all')

Every run happens in a temporary --directory; the repository is not touched. Results are printed and
appended as JSON lines to benchmarks/pipeline.jsonl (machine, date-free, so reruns can be compared).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SLICE_RHO = [0.1, 0.3, 0.5, 0.7, 0.9]


def _snakemake(workdir, *args, configfile=None):
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(workdir),
           "--cores", "2", *map(str, args)]
    if configfile:
        cmd += ["--configfile", str(configfile)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return time.perf_counter() - t0, proc


def _phases(log_text: str) -> dict:
    """Seconds spent per rule group, from Snakemake's log: first job start to last job end of the cell
    rules, and each later rule's own duration."""
    import datetime as dt
    import re

    stamp = None
    start, end = {}, {}
    for line in log_text.splitlines():
        m = re.match(r"\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]", line)
        if m:
            stamp = dt.datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y").timestamp()
            continue
        m = re.match(r"(?:local)?rule (\w+):", line)
        if m and stamp is not None:
            start.setdefault(m.group(1), stamp)
        m = re.match(r"Finished jobid: \d+ \(Rule: (\w+)\)", line)
        if m and stamp is not None:
            end[m.group(1)] = stamp
    out = {}
    cells = [r for r in ("jsq_ps_simulate", "jsq_ps_approximate") if r in start]
    if cells:
        out["cells"] = max(end[r] for r in cells) - min(start[r] for r in cells)
    for r in ("merge_simulation", "merge_approximation", "compare", "figures"):
        if f"jsq_ps_{r}" in start and f"jsq_ps_{r}" in end:
            out[r] = end[f"jsq_ps_{r}"] - start[f"jsq_ps_{r}"]
    return out


def _du(path) -> int:
    seen, total = set(), 0
    for p in Path(path).rglob("*"):
        if p.is_file():
            st = p.stat()
            if (st.st_dev, st.st_ino) not in seen:  # hard links (cache <-> blocks) count once
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def _record(**kw):
    print(json.dumps(kw, indent=1))
    with open(ROOT / "benchmarks" / "pipeline.jsonl", "a") as fh:
        fh.write(json.dumps(kw) + "\n")


def bench_default():
    with tempfile.TemporaryDirectory() as work:
        wall, _ = _snakemake(work)
        noop, _ = _snakemake(work, "-n")
        _record(what="default config, fresh workdir", wall_s=round(wall, 1), noop_dry_run_s=round(noop, 2),
                results_MB=round(_du(Path(work) / "results") / 1e6, 2), target_wall_s=300)


def _study_results(work, cfg) -> Path:
    """The JSQ-PS results folder of a run of ``cfg`` in ``work``."""
    return Path(work) / cfg.get("results", "results") / "jsq_ps"


def _paper_cfg(tmp, rhos=SLICE_RHO, mgr=False):
    """config/paper.yaml with only the JSQ-PS study, on the loads ``rhos``; returns (path, config)."""
    top = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())
    top = {"results": top.get("results", "results"), "jsq_ps": top["jsq_ps"]}
    for other in ("split_merge", "restart"):
        top[other] = {"enabled": False}
    cfg = top["jsq_ps"]
    cfg["grid"]["rho"] = rhos
    cfg["grid"]["rho_range"] = None
    if not mgr:
        cfg["mgr"] = {"laws": []}
    cfg["figures"]["cdf_cells"] = [{"R": 1, "rho": rhos[-1]}, {"R": 10, "rho": rhos[len(rhos) // 2]}]
    path = Path(tmp) / "paper_slice.yaml"
    path.write_text(yaml.safe_dump(top))
    return path, top


def bench_slice():
    """Paper settings (160 000 time units, 10 replications, all methods) on R = 1..10 x SLICE_RHO."""
    import numpy as np

    from sojourn.core.files.io import read_netcdf

    with tempfile.TemporaryDirectory() as work:
        cfgfile, cfg = _paper_cfg(work)
        wall, _ = _snakemake(work, configfile=cfgfile)
        res = _study_results(work, cfg)
        sim = read_netcdf(res / "simulation.nc")
        ap = read_netcdf(res / "approximation.nc")
        sim_cpu = float(sim["wall_time"].sum())
        approx_cpu = float(ap["run_time"].sum()) if "run_time" in ap else float("nan")
        # simulation work is proportional to customers = Lambda * horizon = R * rho * horizon (mu = 1)
        R = np.arange(1, 11)
        full_rho = np.round(np.arange(1, 100) / 100, 2)
        ratio_sim = (R.sum() * full_rho.sum()) / (R.sum() * float(np.sum(SLICE_RHO)))
        ratio_cells = 990 / (10 * len(SLICE_RHO))
        n_sim, n_ap = int(sim["spec_hash"].astype(bool).sum()), ap.sizes["R"] * ap.sizes["rho"]
        sim_cell_kB = sum(c.stat().st_size for c in (res / "blocks" / "simulation").rglob("*.nc")) / n_sim / 1e3
        ap_cell_kB = sum(c.stat().st_size for c in (res / "blocks" / "approximation").rglob("*.nc")) / n_ap / 1e3
        merged = {n: (res / n).stat().st_size / 1e6 for n in ("simulation.nc", "approximation.nc", "comparison.nc")}
        log = sorted((Path(work) / ".snakemake" / "log").glob("*.log"))[-1].read_text()
        ph = _phases(log)
        # extrapolation to 990 cells: the cell phase scales with the CPU work (simulation with customers,
        # approximations with cells), the merges/compare/figures with the number of cells; Snakemake start,
        # DAG and cluster start-up (wall minus phases) are paid once
        cell_cpu = sim_cpu * ratio_sim + approx_cpu * ratio_cells
        cell_wall = max(ph.get("cells", 0.0) * (cell_cpu / max(sim_cpu + approx_cpu, 1e-9)), cell_cpu / 2)
        data_tail = sum(v for k, v in ph.items() if k in ("merge_simulation", "merge_approximation", "compare"))
        figures = ph.get("figures", 0.0)  # panels per figure do not grow with rho points
        fixed = wall - sum(ph.values())
        est_wall = cell_wall + data_tail * ratio_cells + figures + fixed
        est_size = (sim_cell_kB * 990 + ap_cell_kB * 990) / 1e3 + sum(merged.values()) * ratio_cells
        _record(what=f"paper slice R=1..10 x rho={SLICE_RHO} (50 cells, 10 replications, horizon 160000)",
                wall_s=round(wall, 1), phases_s={k: round(v, 1) for k, v in ph.items()},
                sim_cpu_s=round(sim_cpu, 1), approx_cpu_s=round(approx_cpu, 1),
                sim_cell_kB=round(sim_cell_kB, 1), approx_cell_kB=round(ap_cell_kB, 1),
                merged_MB={k: round(v, 2) for k, v in merged.items()},
                results_MB=round(_du(Path(work) / "results") / 1e6, 2),
                extrapolated_990_cells_wall_s=round(est_wall), extrapolated_990_cells_results_MB=round(est_size),
                note=f"extrapolation: cell phase x CPU ratio (simulation CPU x {ratio_sim:.1f} by customers, "
                     f"approximation CPU x {ratio_cells:.1f} by cells), merges/compare x {ratio_cells:.1f}, figures "
                     f"and start-up once; sizes x {ratio_cells:.1f}", target_wall_s=900, target_MB=300)


def bench_overhead():
    """Per Snakemake job (threads sharing one cluster) and per Dask task, with trivial work."""
    from sojourn.core.cluster.cluster import dask_client

    with dask_client({"kind": "local"}, 2) as client:
        client.submit(sum, [1]).result()
        n = 2000
        t0 = time.perf_counter()
        client.gather(client.map(abs, range(n), pure=False))
        per_task_ms = (time.perf_counter() - t0) / n * 1e3
    t0 = time.perf_counter()
    with dask_client({"kind": "local"}, 2) as client:
        client.submit(sum, [1]).result()
        start = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as work:
        cfgfile, cfg = _paper_cfg(work, rhos=[0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08])
        cfg["jsq_ps"]["simulation"].update(window={"length": 60, "warmup": 5, "cooldown": 5}, replications=1)
        cfg["jsq_ps"]["approximation"]["methods"] = ["F"]
        Path(cfgfile).write_text(yaml.safe_dump(cfg))
        wall, proc = _snakemake(work, "--until", "jsq_ps_merge_simulation", "jsq_ps_merge_approximation",
                                configfile=cfgfile)
        jobs = 2 * 80 + 2
        _record(what="overheads", dask_task_ms=round(per_task_ms, 2), local_cluster_start_s=round(start, 2),
                snakemake_jobs=jobs, tiny_jobs_wall_s=round(wall, 1),
                per_job_s=round((wall - start) / jobs, 3),
                note="per_job_s: (wall - cluster start) / jobs for 160 near-empty cells incl. Snakemake start, "
                     "DAG, netCDF writes and merges")


def bench_noop():
    """DAG build (fresh) and no-op dry run (all outputs present, metadata written by --touch) for paper.yaml."""
    import sojourn.jsq_ps.config as G
    from sojourn.jsq_ps.plots import figures

    with tempfile.TemporaryDirectory() as work:
        paper = ROOT / "config" / "paper.yaml"
        fresh, proc = _snakemake(work, "-n", configfile=paper)
        cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
        _merge(cfg, yaml.safe_load(paper.read_text()))
        res = _study_results(work, cfg)
        study = cfg["jsq_ps"]
        b = G.blocks(study)
        files = [res / "blocks" / "simulation" / s / f"R~{R}" / f"rho~{lab}.nc" for s, R, lab in b.simulation]
        files += [res / "blocks" / "approximation" / f"R~{R}" / f"rho~{lab}.nc" for R, lab in b.approximation]
        files += [res / n for n in ("simulation.nc", "approximation.nc", "comparison.nc")]
        files += [res / "figures" / f"{fig.stem}.{f}" for job in ("figures", "reproduction")
                  for fig in figures(study, job) for f in study["figures"]["formats"]]
        for i, f in enumerate(files):
            f.parent.mkdir(parents=True, exist_ok=True)
            f.touch()
            os.utime(f, (1e9 + i, 1e9 + i))
        _snakemake(work, "--touch", configfile=paper)
        noop, proc = _snakemake(work, "-n", configfile=paper)
        nothing = "Nothing to be done" in proc.stdout + proc.stderr
        _record(
            what="paper config DAG",
            jobs=len(b.simulation) + len(b.approximation) + 5,
            fresh_dry_run_s=round(fresh, 2),
            noop_dry_run_s=round(noop, 2),
            nothing_to_be_done=nothing,
            target_noop_s=10,
        )


def bench_paper():
    """config/paper.yaml end to end in a fresh workdir: wall, phases, CPU, peak RSS (largest process,
    GNU time), results on disk, and the engines' own CPU (wall_time / run_time summed)."""
    import re
    import shutil

    import numpy as np

    from sojourn.core.files.io import read_netcdf

    with tempfile.TemporaryDirectory() as work:
        paper = ROOT / "config" / "paper.yaml"
        cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", work,
               "--cores", "2", "--configfile", str(paper)]
        timer = shutil.which("time") or "/usr/bin/time"
        t0 = time.perf_counter()
        proc = subprocess.run([timer, "-v", *cmd], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-3000:])
        gnu = {k: float(v) for k, v in re.findall(
            r"(User time \(seconds\)|System time \(seconds\)|Maximum resident set size \(kbytes\)): ([\d.]+)",
            proc.stderr)}
        cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
        _merge(cfg, yaml.safe_load(paper.read_text()))
        res = _study_results(work, cfg)
        sim = read_netcdf(res / "simulation.nc")
        ap = read_netcdf(res / "approximation.nc")
        shared = json.loads(ap.attrs.get("config", "{}")).get("approximation", {}).get("share_corrected", False)
        rt = ap["run_time"]
        if shared:  # copies carry their source's run time: count each computation once
            rt = rt.sel(
                {"approximation": [m for m in ap["approximation"].values.tolist() if m not in ("B*", "D*", "E*", "F*")]}
            )
        log = sorted((Path(work) / ".snakemake" / "log").glob("*.log"))[-1].read_text()
        _record(what="paper config, measured end to end (snakemake --cores 2 --configfile config/paper.yaml)",
                wall_s=round(wall, 1), phases_s={k: round(v, 1) for k, v in _phases(log).items()},
                user_cpu_s=gnu.get("User time (seconds)"), system_cpu_s=gnu.get("System time (seconds)"),
                peak_rss_MB=round(gnu.get("Maximum resident set size (kbytes)", float("nan")) / 1e3),
                sim_engine_cpu_s=round(float(sim["wall_time"].sum()), 1),
                approx_engine_cpu_s=round(float(np.nansum(rt.values)), 1),
                jobs=len(re.findall(r"Finished jobid", log)),
                results_MB=round(_du(Path(work) / "results") / 1e6, 1),
                merged_MB={n: round((res / n).stat().st_size / 1e6, 1)
                           for n in ("simulation.nc", "approximation.nc", "comparison.nc")},
                target_wall_s=900, target_MB=300)


def _merge(a, b):
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(a.get(k), dict):
            _merge(a[k], v)
        else:
            a[k] = v


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    todo = {"default": bench_default, "slice": bench_slice, "overhead": bench_overhead, "noop": bench_noop}
    for name, fn in todo.items():
        if what in (name, "all"):
            fn()
    if what == "paper":
        bench_paper()
