# JSQ-PS study (seed 000; sojourn.jsq_ps): one simulation job per block of cells (service law, R, rho
# interval of width grid.rho_block; the replications of every cell Dask tasks, several to a task on a local
# cluster), one approximation job per (R, rho interval) block (one Dask task per cell, all methods), streaming
# merges, the comparison, figures.
from sojourn.jsq_ps.plots import figures as _jsq_figures

JSQ, JSQ_CONFIG, JSQ_RES = study_config("jsq_ps")
JSQ_LAWS = JSQ_CONFIG.service_laws(JSQ)
JSQ_BLOCKS = JSQ_CONFIG.blocks(JSQ)  # the cell jobs: cells grouped by (service, R, rho interval)
JSQ_LAW_METHODS = JSQ_CONFIG.law_methods(JSQ)
JSQ_LAW_BLOCKS = JSQ_CONFIG.law_blocks(JSQ)  # the M/G/R cells' law methods (mgr.methods), by (service, R, rho interval)
# the paper's published tables and best-method map (package data): their content is a rerun trigger of the
# report, wherever the package is installed
JSQ_PUBLISHED = data_fingerprint(Path(JSQ_CONFIG.__file__).parent / "data", "*.csv")
JSQ_SIM_SETTINGS = canonical({k: JSQ[k] for k in ("grid", "mgr", "time_grid", "simulation")})
JSQ_APPROX_SETTINGS = canonical({k: JSQ[k] for k in ("grid", "mgr", "time_grid", "approximation")})
JSQ_FIGURES = [
    f"{JSQ_RES}/figures/{f.stem}.{fmt}"
    for job in ("figures", "reproduction")
    for f in _jsq_figures(JSQ, job)
    for fmt in (*JSQ["figures"]["formats"], "rst")
]  # rst: its caption
JSQ_SIM_BLOCKS = [f"{JSQ_RES}/blocks/simulation/{s}/R~{R}/rho~{b}.nc" for s, R, b in JSQ_BLOCKS.simulation]
JSQ_APPROX_BLOCKS = [f"{JSQ_RES}/blocks/approximation/R~{R}/rho~{b}.nc" for R, b in JSQ_BLOCKS.approximation]
JSQ_LAW_INPUT = {"law": f"{JSQ_RES}/law_approximation.nc"} if JSQ_LAW_BLOCKS else {}
TARGETS["jsq_ps"] = [
    *JSQ_LAW_INPUT.values(),
    f"{JSQ_RES}/simulation.nc",
    f"{JSQ_RES}/approximation.nc",
    f"{JSQ_RES}/comparison.nc",
    f"{JSQ_RES}/accuracy.csv",
    f"{JSQ_RES}/reproduction.nc",
    f"{JSQ_RES}/reproduction.html",
    f"{JSQ_RES}/key_results.html",
    f"{JSQ_RES}/key_results.rst",
    f"{JSQ_RES}/reproduction.rst",
    *JSQ_FIGURES,
]


wildcard_constraints:
    service=r"[a-z0-9_]+",
    R=r"\d+",
    block=r"0\.\d+(-[01]\.\d+)?",


rule jsq_ps_simulate:
    output:
        f"{JSQ_RES}/blocks/simulation/{{service}}/R~{{R}}/rho~{{block}}.nc",
    log:
        logs("jsq_ps", "simulate/{service}/R~{R}/rho~{block}"),
    benchmark:
        benchmarks("jsq_ps", "simulate/{service}/R~{R}/rho~{block}")
    params:
        rhos=lambda wc: JSQ_BLOCKS.simulation[(wc.service, int(wc.R), wc.block)],
        law=lambda wc: JSQ_LAWS[wc.service],
        mu=JSQ["grid"]["mu"],
        simulation=canonical(JSQ["simulation"]),
        time_grid=canonical(JSQ["time_grid"]),
        code=code("jsq_ps.simulate"),
        cache=lambda wc: f"{JSQ_RES}/cache/simulation/{wc.service}/R~{wc.R}/rho~{wc.block}",
    run:
        job(
            "jsq_ps.simulate",
            log,
            params,
            client=dask,
            service=wildcards.service,
            R=int(wildcards.R),
            output=output[0],
        )


rule jsq_ps_approximate:
    output:
        f"{JSQ_RES}/blocks/approximation/R~{{R}}/rho~{{block}}.nc",
    log:
        logs("jsq_ps", "approximate/R~{R}/rho~{block}"),
    benchmark:
        benchmarks("jsq_ps", "approximate/R~{R}/rho~{block}")
    params:
        rhos=lambda wc: JSQ_BLOCKS.approximation[(int(wc.R), wc.block)],
        methods=lambda wc: JSQ_CONFIG.methods_for(JSQ, int(wc.R)),
        L1=lambda wc: JSQ_CONFIG.L1_for(JSQ, int(wc.R)),
        L2=JSQ["approximation"]["L2"],
        share_corrected=JSQ["approximation"]["share_corrected"],
        exact_budget=canonical(JSQ_CONFIG.exact_budget(JSQ)),
        mu=JSQ["grid"]["mu"],
        time_grid=canonical(JSQ["time_grid"]),
        code=code("jsq_ps.approximate"),
        cache=lambda wc: f"{JSQ_RES}/cache/approximation/R~{wc.R}/rho~{wc.block}",
    run:
        job("jsq_ps.approximate", log, params, client=dask, R=int(wildcards.R), output=output[0])


rule jsq_ps_approximate_laws:
    output:
        f"{JSQ_RES}/blocks/law_approximation/{{service}}/R~{{R}}/rho~{{block}}.nc",
    log:
        logs("jsq_ps", "approximate_laws/{service}/R~{R}/rho~{block}"),
    benchmark:
        benchmarks("jsq_ps", "approximate_laws/{service}/R~{R}/rho~{block}")
    params:
        rhos=lambda wc: JSQ_LAW_BLOCKS[(wc.service, int(wc.R), wc.block)],
        law=lambda wc: JSQ_LAWS[wc.service],
        mu=JSQ["grid"]["mu"],
        methods=JSQ_LAW_METHODS,
        time_grid=canonical(JSQ["time_grid"]),
        code=code("jsq_ps.approximate_laws"),
        cache=lambda wc: f"{JSQ_RES}/cache/law_approximation/{wc.service}/R~{wc.R}/rho~{wc.block}",
    run:
        job(
            "jsq_ps.approximate_laws",
            log,
            params,
            client=dask,
            service=wildcards.service,
            R=int(wildcards.R),
            output=output[0],
        )


rule jsq_ps_merge_law_approximation:
    input:
        [f"{JSQ_RES}/blocks/law_approximation/{s}/R~{R}/rho~{b}.nc" for s, R, b in JSQ_LAW_BLOCKS],
    output:
        f"{JSQ_RES}/law_approximation.nc",
    log:
        logs("jsq_ps", "merge_law_approximation"),
    benchmark:
        benchmarks("jsq_ps", "merge_law_approximation")
    params:
        settings=canonical({"mgr": JSQ["mgr"], "time_grid": JSQ["time_grid"], "grid": JSQ["grid"]}),
        code=code("jsq_ps.merge_law_approximation"),
    run:
        job("jsq_ps.merge_law_approximation", log, params, inputs=list(input), output=output[0])


rule jsq_ps_merge_simulation:
    input:
        JSQ_SIM_BLOCKS,
    output:
        f"{JSQ_RES}/simulation.nc",
    log:
        logs("jsq_ps", "merge_simulation"),
    benchmark:
        benchmarks("jsq_ps", "merge_simulation")
    params:
        settings=JSQ_SIM_SETTINGS,
        code=code("jsq_ps.merge_simulation"),
    run:
        job("jsq_ps.merge_simulation", log, params, inputs=list(input), output=output[0])


rule jsq_ps_merge_approximation:
    input:
        JSQ_APPROX_BLOCKS,
    output:
        f"{JSQ_RES}/approximation.nc",
    log:
        logs("jsq_ps", "merge_approximation"),
    benchmark:
        benchmarks("jsq_ps", "merge_approximation")
    params:
        settings=JSQ_APPROX_SETTINGS,
        code=code("jsq_ps.merge_approximation"),
    run:
        job("jsq_ps.merge_approximation", log, params, inputs=list(input), output=output[0])


rule jsq_ps_compare:
    input:
        **JSQ_LAW_INPUT,
        sim=f"{JSQ_RES}/simulation.nc",
        approx=f"{JSQ_RES}/approximation.nc",
    output:
        f"{JSQ_RES}/comparison.nc",
    log:
        logs("jsq_ps", "compare"),
    benchmark:
        benchmarks("jsq_ps", "compare")
    params:
        settings=canonical({"comparison": JSQ["comparison"], "seed": JSQ["simulation"]["seed"]}),
        code=code("jsq_ps.compare"),
    run:
        job(
            "jsq_ps.compare",
            log,
            params,
            simulation=input.sim,
            approximation=input.approx,
            law_approximation=input.get("law"),
            output=output[0],
        )


rule jsq_ps_accuracy:
    # the accuracy table `sojourn plan` chooses its method from (sojourn.jsq_ps.accuracy); the package ships
    # the one of the paper config (src/sojourn/jsq_ps/data/accuracy.csv: copy this output there)
    input:
        f"{JSQ_RES}/comparison.nc",
    output:
        f"{JSQ_RES}/accuracy.csv",
    log:
        logs("jsq_ps", "accuracy"),
    benchmark:
        benchmarks("jsq_ps", "accuracy")
    params:
        settings=canonical(
            {
                "window": JSQ["simulation"]["window"],
                "mu": JSQ["grid"]["mu"],
            }
        ),
        code=code("jsq_ps.accuracy"),
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
    log:
        logs("jsq_ps", "figures"),
    benchmark:
        benchmarks("jsq_ps", "figures")
    params:
        settings=canonical({k: JSQ[k] for k in ("figures", "grid", "mgr")}),
        code=code("jsq_ps.figures"),
    run:
        job(
            "jsq_ps.figures",
            log,
            params,
            comparison=input.comparison,
            simulation=input.simulation,
            approximation=input.approximation,
            outdir=f"{JSQ_RES}/figures",
            key_results=f"{JSQ_RES}/key_results",
        )


rule jsq_ps_reproduction:
    input:
        comparison=f"{JSQ_RES}/comparison.nc",
    output:
        **figure_outputs("jsq_ps", _jsq_figures(JSQ, "reproduction"), f"{JSQ_RES}/figures", JSQ["figures"]["formats"]),
        nc=f"{JSQ_RES}/reproduction.nc",
        html=report(
            f"{JSQ_RES}/reproduction.html",
            caption=generated_caption(f"{JSQ_RES}/reproduction.rst"),
            category="JSQ-PS",
            subcategory="2 figures",
        ),
        caption=f"{JSQ_RES}/reproduction.rst",
    log:
        logs("jsq_ps", "reproduction"),
    benchmark:
        benchmarks("jsq_ps", "reproduction")
    params:
        settings=canonical({k: JSQ["figures"][k] for k in ("formats", "dpi")}),
        code=code("jsq_ps.reproduction"),
        published=JSQ_PUBLISHED,
    run:
        job(
            "jsq_ps.reproduction",
            log,
            params,
            comparison=input.comparison,
            output=output.nc,
            report=output.html,
            caption=output.caption,
            outdir=f"{JSQ_RES}/figures",
        )
