# sojourn pipeline: one config section per study (see sojourn.studies), each expanded into cell jobs on one
# shared Dask cluster, merged into netCDF, compared and plotted; a section per study in the report.
# Run:  snakemake --cores 2   (default config)   or add  --configfile config/paper.yaml
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

from sojourn.core.cluster.cluster import check_cluster
from sojourn.core.checks.config import ConfigError, check_config_files, validate_config

min_version("9.19")  # the auto-loaded workflow profile is a profile.yaml (read from 9.19 on)


# the default config sits next to this file, whatever --directory says; --configfile files update it
configfile: str(Path(workflow.basedir) / "config" / "config.yaml")


# JSON schema with defaults filled in; an error names the key path and the reason in one line (no schema dump)
_SCHEMAS = Path(workflow.basedir) / "workflow" / "schemas"
try:
    # every config file read the guard's way first: duplicate keys, alias bombs, empty overrides (sojourn.core.checks.config)
    check_config_files(workflow.configfiles, Path(workflow.basedir) / "config" / "config.yaml")
    validate_config(config, _SCHEMAS / "config.schema.yaml")
    check_cluster(config["cluster"])  # what the schema cannot say (SLURM sizes, times, options), before any job
except ConfigError as exc:
    raise WorkflowError(f"invalid config: {exc}")

# what a run leaves besides its results in one folder of the work folder (cluster.scratch): Dask's scratch and numba's
# compiled kernels, set before the studies (and their numba kernels) are imported (sojourn.core.cluster.places)
from sojourn.core.cluster.places import scratch_root, use_scratch

use_scratch(scratch_root(config["cluster"]))

from sojourn.studies import STUDIES

for _study in STUDIES:
    try:
        validate_config(config[_study.name], _SCHEMAS / f"{_study.name}.schema.yaml", _study.name)
    except ConfigError as exc:
        raise WorkflowError(f"invalid config: {exc}")
ENABLED = [s for s in STUDIES if config[s.name]["enabled"]]


report: "workflow/report/workflow.rst"


# `run:` jobs execute as threads of this Snakemake process and share one Dask cluster
# (sojourn.core.cluster.cluster.shared_client): `force-use-threads: true` in workflow/profiles/default/profile.yaml,
# auto-loaded through the `profiles -> workflow/profiles` link next to this file. Without it every job
# would spawn a new Snakemake process that re-parses this file and starts its own cluster.


include: "workflow/rules/common.smk"


for _study in ENABLED:

    include: f"workflow/rules/{_study.name}.smk"


if workflow.is_main_process:
    _rebuild_damaged()  # damaged results found at the start are rebuilt with what depends on them


onsuccess:
    finished()  # where the results are, what to open (workflow/rules/common.smk)


rule all:
    default_target: True
    input:
        [path for s in ENABLED for path in TARGETS[s.name]],
