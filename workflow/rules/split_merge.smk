# Split-merge study (seed 002; sojourn.split_merge): one job per experiment (a), (b), (c) — every replication of
# every cell one Dask task (a fixed count, or batches to a precision target), the exact values of the cells Dask
# tasks beside them — each writing one netCDF hypercube, its cells' replications kept in a content-keyed cache
# (cache/experiment_<x>/: a rerun simulates only replications not stored before); one figures job.
import sojourn.split_merge.config as SM_EXP
from sojourn.split_merge.plots import figures as _sm_figures

SM = config["split_merge"]
try:
    SM_EXP.check_config(SM)
except ConfigError as exc:
    raise WorkflowError(f"invalid config: {exc}")
SM_RES = f"{RESULTS}/split_merge"
SM_RUNS = [x for x in SM_EXP.EXPERIMENTS if SM[f"experiment_{x}"]["enabled"]]
SM_FIGURES = [f"{SM_RES}/figures/{f.stem}.{fmt}" for f in _sm_figures(SM) for fmt in (*SM["figures"]["formats"], "rst")]
TARGETS["split_merge"] = [f"{SM_RES}/experiment_{x}.nc" for x in SM_RUNS] + SM_FIGURES + [
    f"{SM_RES}/key_results.{x}" for x in ("html", "rst")]


rule split_merge_experiment:
    output:
        f"{SM_RES}/experiment_{{experiment,[abc]}}.nc",
    params:
        settings=lambda wc: canonical({k: SM[k] for k in ("simulation", "comparison", f"experiment_{wc.experiment}")}),
        code=code("split_merge.experiment"),
        cache=lambda wc: f"{SM_RES}/cache/experiment_{wc.experiment}",
    log:
        f"{SM_RES}/logs/experiment_{{experiment}}.log",
    benchmark:
        f"{SM_RES}/benchmarks/experiment_{{experiment}}.tsv"
    run:
        job("split_merge.experiment", log, params, client=dask, experiment=wildcards.experiment, output=output[0])


rule split_merge_figures:
    input:
        **{x: f"{SM_RES}/experiment_{x}.nc" for x in SM_RUNS},
    output:
        **figure_outputs("split_merge", _sm_figures(SM), f"{SM_RES}/figures", SM["figures"]["formats"]),
        **key_results("split_merge", f"{SM_RES}/key_results"),
    params:
        settings=canonical({k: SM[k] for k in ("figures", "experiment_a", "experiment_b", "experiment_c")}),
        code=code("split_merge.figures"),
    log:
        f"{SM_RES}/logs/figures.log",
    benchmark:
        f"{SM_RES}/benchmarks/figures.tsv"
    run:
        job("split_merge.figures", log, params, inputs={x: input[x] for x in SM_RUNS}, outdir=f"{SM_RES}/figures",
            key_results=f"{SM_RES}/key_results")
