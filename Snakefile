# sojourn pipeline: (service law x R x rho) grid -> Dask replications -> xarray results -> comparison,
# figures, report. Run:  snakemake --cores 2   (default config)   or add  --configfile config/paper.yaml
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, schema="workflow/schemas/config.schema.yaml")

import sojourn.grid as G

try:
    G.check_config(config)
except G.ConfigError as exc:
    raise WorkflowError(f"invalid config: {exc}")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/jsq_ps.smk"
include: "workflow/rules/figures.smk"


rule all:
    default_target: True
    input:
        f"{RES}/simulation.nc",
        f"{RES}/approximation.nc",
        f"{RES}/comparison.nc",
        FIGURES,
