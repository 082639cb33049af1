# Restart study (seed 001; sojourn.restart): per example, the product form over a fine grid of signal rates
# with g* (restart_solve: each rate and g* a cell cached by content key under cache/<example>/product_form/), the
# simulated restart-rate sweep under signal / exponential-timeout / deterministic-timeout semantics
# (restart_simulate: every point's replications as Dask tasks, several to a task on a local cluster, a fixed count
# or rounds to a precision target, cached by content key under cache/<example>/), the comparison with CIs and coverage (restart_compare),
# and the figures (restart_figures).
from sojourn.restart.plots import figures as _restart_figures

RS, RS_CONFIG, RS_RES = study_config("restart")
RS_EXAMPLES = sorted(RS["examples"])
TARGETS["restart"] = [
    f"{RS_RES}/{ex}/{f}"
    for ex in RS_EXAMPLES
    for f in ("product_form.nc", "simulation.nc", "comparison.nc", "key_results.html", "key_results.rst")
] + [
    f"{RS_RES}/figures/{f.stem}.{fmt}"
    for ex in RS_EXAMPLES
    for f in _restart_figures(ex)
    for fmt in (*RS["figures"]["formats"], "rst")  # rst: each figure's caption
]


wildcard_constraints:
    example=r"[a-z0-9_]+",


rule restart_solve:
    output:
        f"{RS_RES}/{{example}}/product_form.nc",
    log:
        logs("restart", "solve/{example}"),
    benchmark:
        benchmarks("restart", "solve/{example}")
    params:
        example=lambda wc: canonical({k: RS["examples"][wc.example][k] for k in ("model", "rates")}),
        model=lambda wc: file_fingerprint(RS_CONFIG.model_path(RS["examples"][wc.example]["model"])),
        analytic=canonical(RS["analytic"]),
        code=code("restart.solve"),
        cache=lambda wc: f"{RS_RES}/cache/{wc.example}/product_form",
    run:
        job("restart.solve", log, params, name=wildcards.example, output=output[0])


rule restart_simulate:
    output:
        f"{RS_RES}/{{example}}/simulation.nc",
    log:
        logs("restart", "simulate/{example}"),
    benchmark:
        benchmarks("restart", "simulate/{example}")
    params:
        example=lambda wc: canonical(RS["examples"][wc.example]),
        model=lambda wc: file_fingerprint(RS_CONFIG.model_path(RS["examples"][wc.example]["model"])),
        simulation=canonical(RS["simulation"]),
        time_grid=canonical(RS["time_grid"]),
        code=code("restart.simulate"),
        cache=lambda wc: f"{RS_RES}/cache/{wc.example}",
    run:
        job("restart.simulate", log, params, client=dask, name=wildcards.example, output=output[0])


rule restart_compare:
    input:
        pf=f"{RS_RES}/{{example}}/product_form.nc",
        sim=f"{RS_RES}/{{example}}/simulation.nc",
    output:
        f"{RS_RES}/{{example}}/comparison.nc",
    log:
        logs("restart", "compare/{example}"),
    benchmark:
        benchmarks("restart", "compare/{example}")
    params:
        settings=canonical(RS["comparison"]),
        code=code("restart.compare"),
    run:
        job("restart.compare", log, params, product_form=input.pf, simulation=input.sim, output=output[0])


rule restart_figures:
    # one job for every example: each figure's caption is a file this job writes, and the report reads a caption
    # from a fixed path (a wildcard rule could not name it)
    input:
        pf=[f"{RS_RES}/{ex}/product_form.nc" for ex in RS_EXAMPLES],
        comparison=[f"{RS_RES}/{ex}/comparison.nc" for ex in RS_EXAMPLES],
    output:
        **figure_outputs(
            "restart",
            [f for ex in RS_EXAMPLES for f in _restart_figures(ex)],
            f"{RS_RES}/figures",
            RS["figures"]["formats"],
        ),
        **{
            k: v
            for ex in RS_EXAMPLES
            for k, v in key_results("restart", f"{RS_RES}/{ex}/key_results", f"_{ex}").items()
        },
    log:
        logs("restart", "figures"),
    benchmark:
        benchmarks("restart", "figures")
    params:
        settings=canonical(RS["figures"]),
        examples=RS_EXAMPLES,
        code=code("restart.figures"),
    run:
        job(
            "restart.figures",
            log,
            params,
            product_form=list(input.pf),
            comparison=list(input.comparison),
            outdir=f"{RS_RES}/figures",
            key_results=[f"{RS_RES}/{ex}/key_results" for ex in RS_EXAMPLES],
        )
