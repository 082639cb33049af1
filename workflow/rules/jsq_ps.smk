# JSQ-PS study: one simulation job per (service, R, rho) cell (its replications are Dask tasks),
# one approximation job per (R, rho) cell (all methods in one Dask task), then merges and comparison.


rule simulate:
    output:
        f"{RES}/cells/simulation/{{service}}/R~{{R}}/rho~{{rho}}.nc",
    params:
        law=lambda wc: LAWS[wc.service],
        mu=config["grid"]["mu"],
        simulation=G.canonical(config["simulation"]),
        time_grid=G.canonical(config["time_grid"]),
        code=CODE["simulate"],
    log:
        f"{LOGS}/simulate/{{service}}/R~{{R}}/rho~{{rho}}.log",
    run:
        from sojourn.pipeline import simulate_cell

        with open(log[0], "w") as fh:
            simulate_cell(dask(), service=wildcards.service, law=params.law, R=int(wildcards.R),
                          rho=wildcards.rho, mu=params.mu, sim=params.simulation, tg=params.time_grid,
                          code=params.code, output=output[0], cache_dir=f"{RES}/cache/simulation", log=fh)


rule approximate:
    output:
        f"{RES}/cells/approximation/R~{{R}}/rho~{{rho}}.nc",
    params:
        methods=lambda wc: G.methods_for(config, int(wc.R)),
        L1=lambda wc: G.L1_for(config, int(wc.R)),
        L2=config["approximation"]["L2"],
        mu=config["grid"]["mu"],
        time_grid=G.canonical(config["time_grid"]),
        code=CODE["approximate"],
    log:
        f"{LOGS}/approximate/R~{{R}}/rho~{{rho}}.log",
    run:
        from sojourn.pipeline import approximate_cell

        with open(log[0], "w") as fh:
            approximate_cell(dask(), R=int(wildcards.R), rho=wildcards.rho, mu=params.mu, methods=params.methods,
                             L1=params.L1, L2=params.L2, tg=params.time_grid, code=params.code,
                             output=output[0], log=fh)


rule merge_simulation:
    input:
        [f"{RES}/cells/simulation/{c.service}/R~{c.R}/rho~{c.rho}.nc" for c in CELLS],
    output:
        f"{RES}/simulation.nc",
    params:
        code=CODE["merge"],
    run:
        from sojourn.pipeline import merge_cells

        merge_cells(input, output[0], "simulation", config)


rule merge_approximation:
    input:
        [f"{RES}/cells/approximation/R~{R}/rho~{rho}.nc" for R, rho in APPROX_CELLS],
    output:
        f"{RES}/approximation.nc",
    params:
        code=CODE["merge"],
    run:
        from sojourn.pipeline import merge_cells

        merge_cells(input, output[0], "approximation", config)


rule compare:
    input:
        sim=f"{RES}/simulation.nc",
        approx=f"{RES}/approximation.nc",
    output:
        f"{RES}/comparison.nc",
    params:
        comparison=G.canonical(config["comparison"]),
        code=CODE["compare"],
    run:
        from sojourn.pipeline import write_comparison

        write_comparison(input.sim, input.approx, output[0], config)
