# Split-merge study (seed 002; sojourn.split_merge): per experiment (a), (b), (c) the exact values of its cells
# (split_merge_exact: one Dask task per cell, cached by content key under cache/exact_<x>/) and its simulation
# (split_merge_experiment: every replication of every cell one Dask task, a fixed count or batches to a precision
# target, cached under cache/experiment_<x>/: a rerun simulates only replications not stored before) beside them in
# one netCDF hypercube; one figures job.
from sojourn.split_merge.plots import figures as _sm_figures

SM, SM_CONFIG, SM_RES = study_config("split_merge")
SM_RUNS = [x for x in SM_CONFIG.EXPERIMENTS if SM[f"experiment_{x}"]["enabled"]]
SM_FIGURES = [f"{SM_RES}/figures/{f.stem}.{fmt}" for f in _sm_figures(SM) for fmt in (*SM["figures"]["formats"], "rst")]
TARGETS["split_merge"] = (
    [f"{SM_RES}/experiment_{x}.nc" for x in SM_RUNS]
    + SM_FIGURES
    + [f"{SM_RES}/key_results.{x}" for x in ("html", "rst")]
)


wildcard_constraints:
    experiment=r"[abc]",


rule split_merge_exact:
    output:
        f"{SM_RES}/exact_{{experiment}}.nc",
    log:
        logs("split_merge", "exact_{experiment}"),
    benchmark:
        benchmarks("split_merge", "exact_{experiment}")
    params:
        settings=lambda wc: canonical(
            {
                "simulation": {"window": SM["simulation"]["window"]},  # the cells' run window (not their count)
                **{k: SM[k] for k in ("comparison", f"experiment_{wc.experiment}")},
            }
        ),
        code=code("split_merge.exact"),
        cache=lambda wc: f"{SM_RES}/cache/exact_{wc.experiment}",
    run:
        job("split_merge.exact", log, params, client=dask, experiment=wildcards.experiment, output=output[0])


rule split_merge_experiment:
    input:
        exact=f"{SM_RES}/exact_{{experiment}}.nc",
    output:
        f"{SM_RES}/experiment_{{experiment}}.nc",
    log:
        logs("split_merge", "experiment_{experiment}"),
    benchmark:
        benchmarks("split_merge", "experiment_{experiment}")
    params:
        settings=lambda wc: canonical({k: SM[k] for k in ("simulation", "comparison", f"experiment_{wc.experiment}")}),
        code=code("split_merge.experiment"),
        cache=lambda wc: f"{SM_RES}/cache/experiment_{wc.experiment}",
    run:
        job(
            "split_merge.experiment",
            log,
            params,
            client=dask,
            experiment=wildcards.experiment,
            exact=input.exact,
            output=output[0],
        )


rule split_merge_figures:
    input:
        **{x: f"{SM_RES}/experiment_{x}.nc" for x in SM_RUNS},
    output:
        **figure_outputs("split_merge", _sm_figures(SM), f"{SM_RES}/figures", SM["figures"]["formats"]),
        **key_results("split_merge", f"{SM_RES}/key_results"),
    log:
        logs("split_merge", "figures"),
    benchmark:
        benchmarks("split_merge", "figures")
    params:
        settings=canonical({k: SM[k] for k in ("figures", "experiment_a", "experiment_b", "experiment_c")}),
        code=code("split_merge.figures"),
    run:
        job(
            "split_merge.figures",
            log,
            params,
            inputs={x: input[x] for x in SM_RUNS},
            outdir=f"{SM_RES}/figures",
            key_results=f"{SM_RES}/key_results",
        )
