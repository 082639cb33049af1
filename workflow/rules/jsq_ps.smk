# JSQ-PS study (seed 000; sojourn.jsq_ps): one simulation job per block of cells (service law, R, rho
# interval of width grid.rho_block; every replication of every cell a Dask task), one approximation job per
# (R, rho interval) block (one Dask task per cell, all methods), streaming merges, the comparison, figures.
import sojourn.jsq_ps.config as JSQ_GRID
from sojourn.jsq_ps.plots import figures as _jsq_figures

JSQ = config["jsq_ps"]
try:
    JSQ_GRID.check_config(JSQ)
except ConfigError as exc:
    raise WorkflowError(f"invalid config: {exc}")
JSQ_RES = f"{RESULTS}/jsq_ps"
JSQ_LAWS = JSQ_GRID.service_laws(JSQ)
JSQ_BLOCKS = JSQ_GRID.blocks(JSQ)  # the cell jobs: cells grouped by (service, R, rho interval)
JSQ_LAW_METHODS = JSQ_GRID.law_methods(JSQ)
JSQ_LAW_BLOCKS = JSQ_GRID.law_blocks(JSQ)  # the M/G/R cells' law methods (mgr.methods), by (service, R, rho interval)
# the paper's published tables and best-method map (package data): their content is a rerun trigger of the
# report, wherever the package is installed
JSQ_PUBLISHED = data_fingerprint(Path(JSQ_GRID.__file__).parent / "data", "*.csv")
JSQ_SIM_SETTINGS = canonical({k: JSQ[k] for k in ("grid", "mgr", "time_grid", "simulation")})
JSQ_APPROX_SETTINGS = canonical({k: JSQ[k] for k in ("grid", "mgr", "time_grid", "approximation")})
JSQ_FIGURES = [f"{JSQ_RES}/figures/{f.stem}.{fmt}" for job in ("figures", "reproduction")
               for f in _jsq_figures(JSQ, job) for fmt in (*JSQ["figures"]["formats"], "rst")]  # rst: its caption
JSQ_SIM_BLOCKS = [f"{JSQ_RES}/blocks/simulation/{s}/R~{R}/rho~{b}.nc" for s, R, b in JSQ_BLOCKS.simulation]
JSQ_APPROX_BLOCKS = [f"{JSQ_RES}/blocks/approximation/R~{R}/rho~{b}.nc" for R, b in JSQ_BLOCKS.approximation]
JSQ_LAW_INPUT = {"law": f"{JSQ_RES}/law_approximation.nc"} if JSQ_LAW_BLOCKS else {}
TARGETS["jsq_ps"] = [*JSQ_LAW_INPUT.values(),
                     f"{JSQ_RES}/simulation.nc", f"{JSQ_RES}/approximation.nc", f"{JSQ_RES}/comparison.nc",
                     f"{JSQ_RES}/accuracy.csv", f"{JSQ_RES}/reproduction.nc", f"{JSQ_RES}/reproduction.html",
                     f"{JSQ_RES}/key_results.html", f"{JSQ_RES}/key_results.rst", f"{JSQ_RES}/reproduction.rst",
                     *JSQ_FIGURES]


wildcard_constraints:
    service=r"[a-z0-9_]+",
    R=r"\d+",
    block=r"0\.\d+(-[01]\.\d+)?",


rule jsq_ps_simulate:
    output:
        f"{JSQ_RES}/blocks/simulation/{{service}}/R~{{R}}/rho~{{block}}.nc",
    params:
        rhos=lambda wc: JSQ_BLOCKS.simulation[(wc.service, int(wc.R), wc.block)],
        law=lambda wc: JSQ_LAWS[wc.service],
        mu=JSQ["grid"]["mu"],
        simulation=canonical(JSQ["simulation"]),
        time_grid=canonical(JSQ["time_grid"]),
        code=code("jsq_ps.simulate"),
        cache=lambda wc: f"{JSQ_RES}/cache/simulation/{wc.service}/R~{wc.R}/rho~{wc.block}",
    log:
        f"{JSQ_RES}/logs/simulate/{{service}}/R~{{R}}/rho~{{block}}.log",
    benchmark:
        f"{JSQ_RES}/benchmarks/simulate/{{service}}/R~{{R}}/rho~{{block}}.tsv"
    run:
        job("jsq_ps.simulate", log, params, client=dask, service=wildcards.service, R=int(wildcards.R),
            output=output[0])


rule jsq_ps_approximate:
    output:
        f"{JSQ_RES}/blocks/approximation/R~{{R}}/rho~{{block}}.nc",
    params:
        rhos=lambda wc: JSQ_BLOCKS.approximation[(int(wc.R), wc.block)],
        methods=lambda wc: JSQ_GRID.methods_for(JSQ, int(wc.R)),
        L1=lambda wc: JSQ_GRID.L1_for(JSQ, int(wc.R)),
        L2=JSQ["approximation"]["L2"],
        share_corrected=JSQ["approximation"]["share_corrected"],
        exact_budget=canonical(JSQ_GRID.exact_budget(JSQ)),
        mu=JSQ["grid"]["mu"],
        time_grid=canonical(JSQ["time_grid"]),
        code=code("jsq_ps.approximate"),
        cache=lambda wc: f"{JSQ_RES}/cache/approximation/R~{wc.R}/rho~{wc.block}",
    log:
        f"{JSQ_RES}/logs/approximate/R~{{R}}/rho~{{block}}.log",
    benchmark:
        f"{JSQ_RES}/benchmarks/approximate/R~{{R}}/rho~{{block}}.tsv"
    run:
        job("jsq_ps.approximate", log, params, client=dask, R=int(wildcards.R), output=output[0])


rule jsq_ps_approximate_laws:
    output:
        f"{JSQ_RES}/blocks/law_approximation/{{service}}/R~{{R}}/rho~{{block}}.nc",
    params:
        rhos=lambda wc: JSQ_LAW_BLOCKS[(wc.service, int(wc.R), wc.block)],
        law=lambda wc: JSQ_LAWS[wc.service],
        mu=JSQ["grid"]["mu"],
        methods=JSQ_LAW_METHODS,
        time_grid=canonical(JSQ["time_grid"]),
        code=code("jsq_ps.approximate_laws"),
        cache=lambda wc: f"{JSQ_RES}/cache/law_approximation/{wc.service}/R~{wc.R}/rho~{wc.block}",
    log:
        f"{JSQ_RES}/logs/approximate_laws/{{service}}/R~{{R}}/rho~{{block}}.log",
    benchmark:
        f"{JSQ_RES}/benchmarks/approximate_laws/{{service}}/R~{{R}}/rho~{{block}}.tsv"
    run:
        job("jsq_ps.approximate_laws", log, params, client=dask, service=wildcards.service, R=int(wildcards.R),
            output=output[0])


rule jsq_ps_merge_law_approximation:
    input:
        [f"{JSQ_RES}/blocks/law_approximation/{s}/R~{R}/rho~{b}.nc" for s, R, b in JSQ_LAW_BLOCKS],
    output:
        f"{JSQ_RES}/law_approximation.nc",
    params:
        settings=canonical({"mgr": JSQ["mgr"], "time_grid": JSQ["time_grid"], "grid": JSQ["grid"]}),
        code=code("jsq_ps.merge_law_approximation"),
    log:
        f"{JSQ_RES}/logs/merge_law_approximation.log",
    benchmark:
        f"{JSQ_RES}/benchmarks/merge_law_approximation.tsv"
    run:
        job("jsq_ps.merge_law_approximation", log, params, inputs=list(input), output=output[0])


rule jsq_ps_merge_simulation:
    input:
        JSQ_SIM_BLOCKS,
    output:
        f"{JSQ_RES}/simulation.nc",
    params:
        settings=JSQ_SIM_SETTINGS,
        code=code("jsq_ps.merge_simulation"),
    log:
        f"{JSQ_RES}/logs/merge_simulation.log",
    benchmark:
        f"{JSQ_RES}/benchmarks/merge_simulation.tsv"
    run:
        job("jsq_ps.merge_simulation", log, params, inputs=list(input), output=output[0])


rule jsq_ps_merge_approximation:
    input:
        JSQ_APPROX_BLOCKS,
    output:
        f"{JSQ_RES}/approximation.nc",
    params:
        settings=JSQ_APPROX_SETTINGS,
        code=code("jsq_ps.merge_approximation"),
    log:
        f"{JSQ_RES}/logs/merge_approximation.log",
    benchmark:
        f"{JSQ_RES}/benchmarks/merge_approximation.tsv"
    run:
        job("jsq_ps.merge_approximation", log, params, inputs=list(input), output=output[0])


rule jsq_ps_compare:
    input:
        sim=f"{JSQ_RES}/simulation.nc",
        approx=f"{JSQ_RES}/approximation.nc",
        **JSQ_LAW_INPUT,
    output:
        f"{JSQ_RES}/comparison.nc",
    params:
        settings=canonical({"comparison": JSQ["comparison"], "seed": JSQ["simulation"]["seed"]}),
        code=code("jsq_ps.compare"),
    log:
        f"{JSQ_RES}/logs/compare.log",
    benchmark:
        f"{JSQ_RES}/benchmarks/compare.tsv"
    run:
        job("jsq_ps.compare", log, params, simulation=input.sim, approximation=input.approx,
            law_approximation=input.get("law"), output=output[0])


rule jsq_ps_accuracy:
    # the accuracy table `sojourn plan` chooses its method from (sojourn.jsq_ps.accuracy); the package ships
    # the one of the paper config (src/sojourn/jsq_ps/data/accuracy.csv: copy this output there)
    input:
        f"{JSQ_RES}/comparison.nc",
    output:
        f"{JSQ_RES}/accuracy.csv",
    params:
        settings=canonical({"simulation": {k: JSQ["simulation"].get(k) for k in ("horizon", "warmup", "cooldown")},
                            "mu": JSQ["grid"]["mu"]}),
        code=code("jsq_ps.accuracy"),
    log:
        f"{JSQ_RES}/logs/accuracy.log",
    benchmark:
        f"{JSQ_RES}/benchmarks/accuracy.tsv"
    run:
        job("jsq_ps.accuracy", log, params, comparison=input[0], output=output[0])


rule jsq_ps_figures:
    input:
        comparison=f"{JSQ_RES}/comparison.nc",
        simulation=f"{JSQ_RES}/simulation.nc",
        approximation=f"{JSQ_RES}/approximation.nc",
    output:
        **figure_outputs("jsq_ps", _jsq_figures(JSQ), f"{JSQ_RES}/figures", JSQ["figures"]["formats"]),
        **key_results("jsq_ps", f"{JSQ_RES}/key_results"),
    params:
        settings=canonical({k: JSQ[k] for k in ("figures", "grid", "mgr")}),
        code=code("jsq_ps.figures"),
    log:
        f"{JSQ_RES}/logs/figures.log",
    benchmark:
        f"{JSQ_RES}/benchmarks/figures.tsv"
    run:
        job("jsq_ps.figures", log, params, comparison=input.comparison, simulation=input.simulation,
            approximation=input.approximation, outdir=f"{JSQ_RES}/figures", key_results=f"{JSQ_RES}/key_results")


rule jsq_ps_reproduction:
    input:
        comparison=f"{JSQ_RES}/comparison.nc",
    output:
        nc=f"{JSQ_RES}/reproduction.nc",
        html=report(f"{JSQ_RES}/reproduction.html", caption=generated_caption(f"{JSQ_RES}/reproduction.rst"),
                    category="JSQ-PS", subcategory="2 figures"),
        caption=f"{JSQ_RES}/reproduction.rst",
        **figure_outputs("jsq_ps", _jsq_figures(JSQ, "reproduction"), f"{JSQ_RES}/figures", JSQ["figures"]["formats"]),
    params:
        settings=canonical({k: JSQ["figures"][k] for k in ("formats", "dpi")}),
        code=code("jsq_ps.reproduction"),
        published=JSQ_PUBLISHED,
    log:
        f"{JSQ_RES}/logs/reproduction.log",
    benchmark:
        f"{JSQ_RES}/benchmarks/reproduction.tsv"
    run:
        job("jsq_ps.reproduction", log, params, comparison=input.comparison, output=output.nc, report=output.html,
            caption=output.caption, outdir=f"{JSQ_RES}/figures")
