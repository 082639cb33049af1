# Restart study (seed 001; sojourn.restart): per example, the product form over a fine grid of signal rates
# with g* (restart_solve), the simulated restart-rate sweep under signal / exponential-timeout /
# deterministic-timeout semantics (restart_simulate: every replication of every point one Dask task, a fixed
# count or batches to a precision target, cached by content key under cache/<example>/), the
# comparison with CIs and coverage (restart_compare), and the figures (restart_figures).
from sojourn.restart.config import check_config as _restart_check
from sojourn.restart.plots import figures as _restart_figures

RS = config["restart"]
try:
    _restart_check(RS)
except ConfigError as exc:
    raise WorkflowError(f"invalid config: {exc}")
RS_RES = f"{RESULTS}/restart"
RS_EXAMPLES = sorted(RS["examples"])


def _rs_model(example):
    """Rerun trigger for an example's model file: the file's content (a built-in example is package data, which
    code fingerprints do not see)."""
    from sojourn.restart.files import EXAMPLES_DIR

    m = Path(str(RS["examples"][example]["model"]))
    f = m if m.exists() else EXAMPLES_DIR / f"{m.name}.yaml"
    return data_fingerprint(f.parent, f.name) if f.is_file() else str(m)
TARGETS["restart"] = [f"{RS_RES}/{ex}/{f}" for ex in RS_EXAMPLES
                      for f in ("product_form.nc", "simulation.nc", "comparison.nc", "key_results.html",
                                "key_results.rst")] + [
    f"{RS_RES}/figures/{f.stem}.{fmt}" for ex in RS_EXAMPLES for f in _restart_figures(ex)
    for fmt in (*RS["figures"]["formats"], "rst")]  # rst: each figure's caption


wildcard_constraints:
    example=r"[a-z0-9_]+",


rule restart_solve:
    output:
        f"{RS_RES}/{{example}}/product_form.nc",
    params:
        example=lambda wc: canonical(RS["examples"][wc.example]),
        model=lambda wc: _rs_model(wc.example),
        analytic=canonical(RS["analytic"]),
        code=code("restart.solve"),
    log:
        f"{RS_RES}/logs/solve/{{example}}.log",
    benchmark:
        f"{RS_RES}/benchmarks/solve/{{example}}.tsv"
    run:
        job("restart.solve", log, params, name=wildcards.example, output=output[0])


rule restart_simulate:
    output:
        f"{RS_RES}/{{example}}/simulation.nc",
    params:
        example=lambda wc: canonical(RS["examples"][wc.example]),
        model=lambda wc: _rs_model(wc.example),
        simulation=canonical(RS["simulation"]),
        time_grid=canonical(RS["time_grid"]),
        code=code("restart.simulate"),
        cache=lambda wc: f"{RS_RES}/cache/{wc.example}",
    log:
        f"{RS_RES}/logs/simulate/{{example}}.log",
    benchmark:
        f"{RS_RES}/benchmarks/simulate/{{example}}.tsv"
    run:
        job("restart.simulate", log, params, client=dask, name=wildcards.example, output=output[0])


rule restart_compare:
    input:
        pf=f"{RS_RES}/{{example}}/product_form.nc",
        sim=f"{RS_RES}/{{example}}/simulation.nc",
    output:
        f"{RS_RES}/{{example}}/comparison.nc",
    params:
        settings=canonical(RS["comparison"]),
        code=code("restart.compare"),
    log:
        f"{RS_RES}/logs/compare/{{example}}.log",
    benchmark:
        f"{RS_RES}/benchmarks/compare/{{example}}.tsv"
    run:
        job("restart.compare", log, params, product_form=input.pf, simulation=input.sim, output=output[0])


rule restart_figures:
    # one job for every example: each figure's caption is a file this job writes, and the report reads a caption
    # from a fixed path (a wildcard rule could not name it)
    input:
        pf=[f"{RS_RES}/{ex}/product_form.nc" for ex in RS_EXAMPLES],
        comparison=[f"{RS_RES}/{ex}/comparison.nc" for ex in RS_EXAMPLES],
    output:
        **figure_outputs("restart", [f for ex in RS_EXAMPLES for f in _restart_figures(ex)], f"{RS_RES}/figures",
                         RS["figures"]["formats"]),
        **{k: v for ex in RS_EXAMPLES for k, v in key_results("restart", f"{RS_RES}/{ex}/key_results", f"_{ex}").items()},
    params:
        figures=canonical(RS["figures"]),
        examples=RS_EXAMPLES,
        code=code("restart.figures"),
    log:
        f"{RS_RES}/logs/figures.log",
    benchmark:
        f"{RS_RES}/benchmarks/figures.tsv"
    run:
        job("restart.figures", log, params, product_form=list(input.pf), comparison=list(input.comparison),
            outdir=f"{RS_RES}/figures", key_results=[f"{RS_RES}/{ex}/key_results" for ex in RS_EXAMPLES])
