# Split-merge study (seed 002; sojourn.split_merge): one job per experiment (a), (b), (c) — every replication of
# every cell one Dask task (a fixed count, or batches to a precision target), the exact values of the cells Dask
# tasks beside them — each writing one netCDF hypercube, its cells' replications kept in a content-keyed cache
# (cache/experiment_<x>/: a rerun simulates only replications not stored before); one figures job.
import sojourn.split_merge.experiments as SM_EXP
from sojourn.split_merge.plots import figure_stems as _sm_figure_stems

SM = config["split_merge"]
try:
    SM_EXP.check_config(SM)
except ConfigError as exc:
    raise WorkflowError(f"invalid config: {exc}")
SM_RES = f"{RESULTS}/split_merge"
SM_RUNS = [x for x in SM_EXP.EXPERIMENTS if SM[f"experiment_{x}"]["enabled"]]
# each rule's rerun trigger: the fingerprint of the code its entry module imports
SM_CODE = {rule: fingerprint(f"sojourn.split_merge.{module}") for rule, module in {
    "experiment": "experiments", "figures": "plots"}.items()}
SM_FIGURES = [f"{SM_RES}/figures/{s}.{fmt}" for s in _sm_figure_stems(SM) for fmt in SM["figures"]["formats"]]
TARGETS["split_merge"] = [f"{SM_RES}/experiment_{x}.nc" for x in SM_RUNS] + SM_FIGURES


rule split_merge_experiment:
    output:
        f"{SM_RES}/experiment_{{experiment,[abc]}}.nc",
    params:
        settings=lambda wc: canonical({k: SM[k] for k in ("simulation", "percentiles", "confidence",
                                                          f"experiment_{wc.experiment}")}),
        code=SM_CODE["experiment"],
        cache=lambda wc: f"{SM_RES}/cache/experiment_{wc.experiment}",
    log:
        f"{SM_RES}/logs/experiment_{{experiment}}.log",
    benchmark:
        f"{SM_RES}/benchmarks/experiment_{{experiment}}.tsv"
    run:
        from sojourn.split_merge.experiments import run_experiment

        with open(log[0], "w") as fh:
            run_experiment(dask(), wildcards.experiment, params.settings, output[0], code=params.code, log=fh,
                           cache_dir=params.cache)


def _sm_figure_outputs():
    out = {}
    for stem in _sm_figure_stems(SM):
        caption = f"../report/split_merge/{'experiment_c' if stem.startswith('experiment_c_') else stem}.rst"
        for fmt in SM["figures"]["formats"]:
            path = f"{SM_RES}/figures/{stem}.{fmt}"
            # the PNGs go into the HTML report; other formats are for papers
            out[f"{stem}_{fmt}"] = report(path, caption=caption, category="Split-merge") if fmt == "png" else path
    return out


rule split_merge_figures:
    input:
        **{x: f"{SM_RES}/experiment_{x}.nc" for x in SM_RUNS},
    output:
        **_sm_figure_outputs(),
    params:
        figures=canonical(SM["figures"]),
        laws_c=canonical(SM["experiment_c"]["laws"]),
        code=SM_CODE["figures"],
    log:
        f"{SM_RES}/logs/figures.log",
    benchmark:
        f"{SM_RES}/benchmarks/figures.tsv"
    run:
        from sojourn.split_merge.plots import all_figures

        with open(log[0], "w") as fh:
            paths = all_figures({x: input[x] for x in SM_RUNS}, f"{SM_RES}/figures",
                                {"experiment_c": {"laws": params.laws_c}}, formats=params.figures["formats"],
                                dpi=params.figures["dpi"])
            print("\n".join(map(str, paths)), file=fh)
