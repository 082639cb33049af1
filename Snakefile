# sojourn pipeline: one config section per study (see sojourn.studies), each expanded into cell jobs on one
# shared Dask cluster, merged into netCDF, compared and plotted; a section per study in the report.
# Run:  snakemake --cores 2   (default config)   or add  --configfile config/paper.yaml
from pathlib import Path

from snakemake.utils import min_version, validate

min_version("9.19")  # the auto-loaded workflow profile is a profile.yaml (read from 9.19 on)


# the default config sits next to this file, whatever --directory says; --configfile files update it
configfile: str(Path(workflow.basedir) / "config" / "config.yaml")


validate(config, schema="workflow/schemas/config.schema.yaml")

from sojourn.studies import STUDIES

for _study in STUDIES:
    validate(config[_study.name], schema=f"workflow/schemas/{_study.name}.schema.yaml")
ENABLED = [s for s in STUDIES if config[s.name]["enabled"]]


report: "workflow/report/workflow.rst"


# `run:` jobs execute as threads of this Snakemake process and share one Dask cluster
# (sojourn.core.cluster.shared_client): `force-use-threads: true` in workflow/profiles/default/profile.yaml,
# auto-loaded through the `profiles -> workflow/profiles` link next to this file. Without it every job
# would spawn a new Snakemake process that re-parses this file and starts its own cluster.


include: "workflow/rules/common.smk"


for _study in ENABLED:

    include: f"workflow/rules/{_study.name}.smk"


rule all:
    default_target: True
    input:
        [path for s in ENABLED for path in TARGETS[s.name]],
