# sojourn pipeline: (service law x R x rho) grid -> Dask replications -> xarray results -> comparison,
# figures, report. Run:  snakemake --cores 2   (default config)   or add  --configfile config/paper.yaml
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.0")


# the default config sits next to this file, whatever --directory says; --configfile files update it
configfile: str(Path(workflow.basedir) / "config" / "config.yaml")


validate(config, schema="workflow/schemas/config.schema.yaml")

import sojourn.grid as G

try:
    G.check_config(config)
except G.ConfigError as exc:
    raise WorkflowError(f"invalid config: {exc}")


report: "workflow/report/workflow.rst"


# `run:` jobs execute as threads of this Snakemake process and share one Dask cluster
# (sojourn.cluster.shared_client): `force-use-threads: true` in workflow/profiles/default/profile.yaml,
# auto-loaded through the `profiles -> workflow/profiles` link next to this file (Snakemake looks for
# profiles/default beside a top-level Snakefile). Without it every job would spawn a new Snakemake
# process that re-parses this file and starts its own cluster (~8 s per job instead of ~0.1 s).


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
