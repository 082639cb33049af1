# Shared by every study's rules: the results root, code fingerprints (rerun triggers for package code,
# computed from what each rule's entry module imports: sojourn.core.fingerprint), the final targets of
# each study, and the process-wide Dask client every run: block submits to (profile force-use-threads).
import sys
from pathlib import Path

from sojourn.core.config import ConfigError, canonical
from sojourn.core.fingerprint import data_fingerprint, fingerprint

RESULTS = config["results"]
TARGETS = {}  # study name -> its final outputs (rule all)


#: command-line flags with which Snakemake runs no job (whether the run executes is decided after this file
#: is parsed, so the command line is the only place to read it from)
_NO_JOBS = {"-n", "--dry-run", "--dryrun", "--just-print", "--report", "--summary", "-S", "--detailed-summary",
            "-D", "--list-changes", "--lc", "--unlock", "--lint", "--dag", "--rulegraph", "--filegraph",
            "--touch", "-t", "--list-rules", "-l", "--list-target-rules", "--lt", "--delete-all-output",
            "--delete-temp-output", "--cleanup-metadata", "--cm", "--containerize", "--archive"}


def _executes():
    """True unless the command line asks for a dry run, a report or another run without jobs."""
    import re

    for a in sys.argv[1:]:
        flag = a.split("=", 1)[0]
        if flag in _NO_JOBS or (re.fullmatch(r"-[a-zA-Z]{2,}", a) and ("n" in a or "t" in a)):
            return False
    return True


def _damaged_results():
    """Result files that no longer match their checksum, or that have none and do not read in full
    (sojourn.core.integrity), are moved aside before the DAG is built, so that this run rebuilds them and what
    depends on them (a dry run only reports); sound files without a checksum are sealed anew."""
    from sojourn.core.integrity import scan

    move = workflow.is_main_process and _executes()
    for study in ENABLED:
        for path, reason in scan(Path(RESULTS) / study.name, move=move,
                                 log=lambda text: print(f"sojourn: {text}", file=sys.stderr)):
            what = f"moved aside to {path.name}.damaged; it will be rebuilt" if move else "it would be rebuilt"
            print(f"sojourn: damaged result {path} ({reason}): {what}", file=sys.stderr)


if workflow.is_main_process:
    _damaged_results()


def _walltime_warnings():
    """cluster.slurm.walltime against what each enabled study predicts of one task's run time (a study's
    ``config.predicted_task_seconds``; a study without one is named as unchecked)."""
    import importlib

    from sojourn.core.cluster import walltime_warnings

    predicted, unpredicted = [], []
    for study in ENABLED:
        study_config = importlib.import_module(f"{study.package}.config")
        if hasattr(study_config, "predicted_task_seconds"):
            p, u = study_config.predicted_task_seconds(config[study.name])
            predicted += p
            unpredicted += u
        else:
            unpredicted.append(f"the {study.name} study")
    for line in walltime_warnings(config["cluster"], predicted, unpredicted):
        print(f"sojourn: warning: {line}", file=sys.stderr)


if workflow.is_main_process and _executes():
    _walltime_warnings()


def generated_caption(path):
    """The report caption of an output: the caption file its job writes from the same data (``<stem>.rst`` next to
    it, sojourn.core.claims.Caption), absolute (the report reads it relative to the rule file otherwise)."""
    import os

    return os.path.abspath(path)


def figure_outputs(study, files, folder, formats):
    """The output files of a figure job: every figure ``files`` lists (the study's registry,
    ``sojourn.<study>.plots.figures``) in every format, and its caption ``<stem>.rst``, which the job writes from
    the data it draws; the PNGs go into the HTML report with that caption, the other formats are for papers."""
    import re

    from sojourn.studies import get

    out = {}
    for f in files:
        rst = f"{folder}/{f.stem}.rst"
        out[re.sub(r"\W", "_", f"{f.stem}_caption")] = rst
        for fmt in formats:
            path = f"{folder}/{f.stem}.{fmt}"
            key = re.sub(r"\W", "_", f"{f.stem}_{fmt}")
            out[key] = report(path, caption=generated_caption(rst), category=get(study).category,
                              subcategory="2 figures") if fmt == "png" else path
    return out


def key_results(study, stem, key=""):
    """The outputs of a study's key-result table (sojourn.core.tables): ``<stem>.csv``, ``<stem>.html`` and its caption
    ``<stem>.rst`` (written by the same job from the same data); the page in the report first in the study's
    category (subcategory "1 key results", before the figures' "2 figures"; the report sorts subcategories by
    name). ``key``: a suffix of the output names (several tables in one job)."""
    from sojourn.studies import get

    return {f"key_csv{key}": f"{stem}.csv", f"key_rst{key}": f"{stem}.rst",
            f"key_html{key}": report(f"{stem}.html", caption=generated_caption(f"{stem}.rst"),
                                     category=get(study).category, subcategory="1 key results")}


def code(entry):
    """The rerun trigger of a job: the fingerprint of its entry function ``"<study>.<job>"`` (the function
    ``<job>`` of ``sojourn.<study>.jobs``, the definitions it uses and the modules they import)."""
    return fingerprint(_entry(entry))


def _entry(entry):
    study, _, name = entry.partition(".")
    return f"sojourn.{study}.jobs:{name}"


def job(entry, log, params=None, **arguments):
    """Every rule's ``run:``: the job function ``"<study>.<job>"`` called with the rule's ``params`` and
    ``arguments``, its log opened, routed, timed and closed by sojourn.core.job.run (the traceback on failure)."""
    from sojourn.core.job import run

    return run(_entry(entry), log[0], **{**dict(params.items() if params is not None else {}), **arguments})


# Dask (and dask_jobqueue, which installs a signal handler) imported once by the main thread: jobs run in
# threads, and concurrent first imports of dask raced.
# Ctrl-C (SIGINT): Snakemake waits for its running job threads, so they stop waiting for their Dask tasks
# and new jobs fail at once (sojourn.core.io.INTERRUPTED); the local workers ignore it (worker_plugins).
if workflow.is_main_process:
    from sojourn.core.cluster import import_in_main_thread
    from sojourn.core.io import stop_waiting_on_interrupt

    import_in_main_thread(config["cluster"])
    stop_waiting_on_interrupt()

# SLURM executor route (sojourn.core.snakemake_slurm): the main process fails a job that SLURM cancelled, timed
# out, killed for memory or preempted (the plugin polled forever on "CANCELLED by 0"); a Snakemake started
# inside a SLURM job takes the allocation's CPUs as its cores and runs a group's jobs as threads (one Dask
# cluster per SLURM job).
from sojourn.core.snakemake_slurm import (
    end_jobs_slurm_ended,
    fit_cores_to_allocation,
    jobs_in_the_batch_step,
    threads_in_group_jobs,
)

threads_in_group_jobs()
if workflow.is_main_process:
    jobs_in_the_batch_step()
    end_jobs_slurm_ended()
else:
    fit_cores_to_allocation(workflow)


def dask():
    """The Dask client shared by all jobs of this Snakemake process (started on first use)."""
    from sojourn.core.cluster import shared_client
    from sojourn.core.io import check_interrupted

    check_interrupted("the job")  # Ctrl-C: start nothing new
    return shared_client(config["cluster"], config["cluster"].get("n_workers") or workflow.cores)


def _close_dask():
    from sojourn.core.cluster import close_shared

    close_shared()


onstart:
    # after Snakemake has installed its SIGTERM handler, which could deadlock in the main thread
    from sojourn.core.io import sigterm_handler_in_a_thread

    sigterm_handler_in_a_thread()


onsuccess:
    _close_dask()


onerror:
    _close_dask()
