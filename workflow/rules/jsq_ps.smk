# JSQ-PS study: one simulation job per block of cells (service, R, rho interval of width grid.rho_block;
# every replication of every cell a Dask task), one approximation job per (R, rho interval) block (one
# Dask task per cell, all methods), then streaming merges and the comparison.


rule simulate:
    output:
        f"{RES}/blocks/simulation/{{service}}/R~{{R}}/rho~{{block}}.nc",
    params:
        rhos=lambda wc: BLOCKS.simulation[(wc.service, int(wc.R), wc.block)],
        law=lambda wc: LAWS[wc.service],
        mu=config["grid"]["mu"],
        simulation=G.canonical(config["simulation"]),
        time_grid=G.canonical(config["time_grid"]),
        code=CODE["simulate"],
    log:
        f"{LOGS}/simulate/{{service}}/R~{{R}}/rho~{{block}}.log",
    run:
        from sojourn.pipeline import simulate_block

        with open(log[0], "w") as fh:
            simulate_block(dask(), service=wildcards.service, law=params.law, R=int(wildcards.R),
                           rhos=params.rhos, mu=params.mu, sim=params.simulation, tg=params.time_grid,
                           code=params.code, output=output[0], log=fh,
                           cache_dir=f"{RES}/cache/simulation/{wildcards.service}/R~{wildcards.R}/rho~{wildcards.block}")


rule approximate:
    output:
        f"{RES}/blocks/approximation/R~{{R}}/rho~{{block}}.nc",
    params:
        rhos=lambda wc: BLOCKS.approximation[(int(wc.R), wc.block)],
        methods=lambda wc: G.methods_for(config, int(wc.R)),
        L1=lambda wc: G.L1_for(config, int(wc.R)),
        L2=config["approximation"]["L2"],
        share_corrected=config["approximation"]["share_corrected"],
        mu=config["grid"]["mu"],
        time_grid=G.canonical(config["time_grid"]),
        code=CODE["approximate"],
    log:
        f"{LOGS}/approximate/R~{{R}}/rho~{{block}}.log",
    run:
        from sojourn.pipeline import approximate_block

        with open(log[0], "w") as fh:
            approximate_block(dask(), R=int(wildcards.R), rhos=params.rhos, mu=params.mu, methods=params.methods,
                              L1=params.L1, L2=params.L2, tg=params.time_grid, code=params.code,
                              share_corrected=params.share_corrected, output=output[0], log=fh,
                              cache_dir=f"{RES}/cache/approximation/R~{wildcards.R}/rho~{wildcards.block}")


rule merge_simulation:
    input:
        [f"{RES}/blocks/simulation/{s}/R~{R}/rho~{b}.nc" for s, R, b in BLOCKS.simulation],
    output:
        f"{RES}/simulation.nc",
    params:
        code=CODE["merge"],
    run:
        from sojourn.pipeline import merge_cells

        merge_cells(input, output[0], "simulation", config)


rule merge_approximation:
    input:
        [f"{RES}/blocks/approximation/R~{R}/rho~{b}.nc" for R, b in BLOCKS.approximation],
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
