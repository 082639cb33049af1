# Figures (PNG + PDF, matplotlib Agg) and their report captions (snakemake --report report.html).

FIG_FORMATS = config["figures"]["formats"]
FIG_STEMS = G.figure_stems(config)
FIGURES = [f"{RES}/figures/{s}.{fmt}" for s in FIG_STEMS for fmt in FIG_FORMATS]


def _caption(stem):
    name = "cdf_cell" if stem.startswith("cdf_") else stem
    return f"../report/{name}.rst"


def _fig_outputs():
    out = {}
    for s in FIG_STEMS:
        for fmt in FIG_FORMATS:
            path = f"{RES}/figures/{s}.{fmt}"
            key = f"{s.replace('~', '_').replace('.', '_')}_{fmt}"
            # the PNGs go into the HTML report; PDFs are for papers
            out[key] = report(path, caption=_caption(s), category="JSQ-PS") if fmt == "png" else path
    return out


rule figures:
    input:
        comparison=f"{RES}/comparison.nc",
        simulation=f"{RES}/simulation.nc",
        approximation=f"{RES}/approximation.nc",
    output:
        **_fig_outputs(),
    params:
        figures=G.canonical(config["figures"]),
        rho_decimals=config["grid"]["rho_decimals"],
        code=CODE["figures"],
    run:
        from sojourn.plots import all_figures

        all_figures(input.comparison, input.simulation, input.approximation, f"{RES}/figures",
                    cdf_cells=params.figures["cdf_cells"], formats=params.figures["formats"],
                    dpi=params.figures["dpi"], decimals=params.rho_decimals)
