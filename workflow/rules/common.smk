# Shared by every study's rules: the results root, code fingerprints (rerun triggers for package code,
# computed from what each rule's entry module imports: sojourn.core.files.fingerprint), the final targets of
# each study, and the process-wide Dask client every run: block submits to (profile force-use-threads).
import os
import sys
from pathlib import Path

from sojourn.core.checks.config import ConfigError, canonical
from sojourn.core.files.fingerprint import data_fingerprint, fingerprint

RESULTS = config["results"]
TARGETS = {}  # study name -> its final outputs (rule all)


def study_config(name):
    """The one preamble of every study's rules (.smk) file, returning (its config section, checked by its config
    module's check_config before any job; that module, sojourn.<name>.config; its results folder)."""
    import importlib

    checks = importlib.import_module(f"sojourn.{name}.config")
    try:
        checks.check_config(config[name])
    except ConfigError as exc:
        raise WorkflowError(f"invalid config: {exc}")
    return config[name], checks, f"{RESULTS}/{name}"


def logs(study, name):
    """The log of a study's job ``name`` (a path under its results folder; wildcards allowed)."""
    return f"{RESULTS}/{study}/logs/{name}.log"


def benchmarks(study, name):
    """The benchmark record of a study's job ``name`` (Snakemake's ``benchmark:``; wildcards allowed)."""
    return f"{RESULTS}/{study}/benchmarks/{name}.tsv"


def file_fingerprint(path):
    """Rerun trigger for a data file a job reads by name (e.g. a model file that is package data, which code
    fingerprints do not see): the file's content, or the name itself where there is no such file."""
    path = Path(str(path))
    return data_fingerprint(path.parent, path.name) if path.is_file() else str(path)


#: command-line flags with which Snakemake runs no job (whether the run executes is decided after this file
#: is parsed, so the command line is the only place to read it from)
_NO_JOBS = {
    "-n",
    "--dry-run",
    "--dryrun",
    "--just-print",
    "--report",
    "--summary",
    "-S",
    "--detailed-summary",
    "-D",
    "--list-changes",
    "--lc",
    "--unlock",
    "--lint",
    "--dag",
    "--rulegraph",
    "--filegraph",
    "--touch",
    "-t",
    "--list-rules",
    "-l",
    "--list-target-rules",
    "--lt",
    "--delete-all-output",
    "--delete-temp-output",
    "--cleanup-metadata",
    "--cm",
    "--containerize",
    "--archive",
}


def _executes():
    """True unless the command line asks for a dry run, a report or another run without jobs."""
    import re

    for a in sys.argv[1:]:
        flag = a.split("=", 1)[0]
        if flag in _NO_JOBS or (re.fullmatch(r"-[a-zA-Z]{2,}", a) and ("n" in a or "t" in a)):
            return False
    return True


def _stop(text):
    """End the run before any job, in one line (no Snakemake frames under it)."""
    print(f"sojourn: error: {text}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def _special_results():
    """Nothing under a study's results folder may be a FIFO, a socket, a device or a link to one: the run would
    replace it with a result (or hang reading it). Refused before the DAG is built, in one line naming the first
    (a dry run or a report only warns)."""
    from sojourn.core.files.integrity import special_files

    found = [hit for study in ENABLED for hit in special_files(Path(RESULTS) / study.name)]
    if not found:
        return
    path, what = found[0]
    more = f" ({len(found) - 1} more such entries under {RESULTS})" if len(found) > 1 else ""
    text = (
        f"results: {path} is {what}, not a regular file{more}; the pipeline writes its results there and never "
        "replaces one: move it away, or choose another results folder (config key results)"
    )
    if _executes():
        _stop(text)
    print(f"sojourn: warning: {text}", file=sys.stderr)


if workflow.is_main_process:
    _special_results()

#: result files found damaged at the start of this run (moved aside unless it is a dry run), or set aside by an
#: earlier run and not rebuilt since: rebuilt by this run with what was made from them, even where that is intact
#: (_rebuild_damaged, at the end of the Snakefile)
DAMAGED = []


def _damaged_results():
    """Result files that no longer match their checksum, or that have none and neither match their cache entry nor
    read in full (sojourn.core.files.integrity.scan), are moved aside before the DAG is built, and so are their cache
    entries (the same bytes), so that this run rebuilds them and what depends on them (a dry run only reports);
    sound files without a checksum are sealed anew. A damaged file that cannot be moved aside (a read-only folder)
    ends the run in one line saying what to do."""
    from sojourn.core.files.integrity import Unmovable, scan, set_aside_before

    move = workflow.is_main_process and _executes()
    for study in ENABLED:
        DAMAGED.extend(set_aside_before(Path(RESULTS) / study.name))  # e.g. by a merge that found one inconsistent
        try:
            found = scan(
                Path(RESULTS) / study.name, move=move, log=lambda text: print(f"sojourn: {text}", file=sys.stderr)
            )
        except Unmovable as exc:
            _stop(str(exc))
        for path, reason in found:
            what = f"moved aside to {path.name}.damaged; it will be rebuilt" if move else "it would be rebuilt"
            print(f"sojourn: damaged result {path} ({reason}): {what}", file=sys.stderr)
            DAMAGED.append(path)


if workflow.is_main_process:
    _damaged_results()


def _rebuild_damaged():
    """What this config made from a damaged file (the outputs of every rule with that file among its inputs, and so
    on down) is removed, so that the run rebuilds the damaged file with it: Snakemake never rebuilds a missing
    intermediate file under intact files made from it ("Nothing to be done"). A dry run only says so. Called by the
    Snakefile once every study's rules are known."""
    from sojourn.core.files.integrity import discard

    if not DAMAGED:
        return
    made_from = {}  # input -> outputs of the rules (without wildcards) that read it
    for r in workflow.rules:
        if r.has_wildcards():
            continue
        for f in r.input:
            if isinstance(f, str):
                made_from.setdefault(os.path.normpath(f), []).extend(str(o) for o in r.output)
    todo, seen = [os.path.normpath(str(p)) for p in DAMAGED], set()
    while todo:
        for out in made_from.get(todo.pop(), []):
            if os.path.normpath(out) not in seen:
                seen.add(os.path.normpath(out))
                todo.append(os.path.normpath(out))
    stale = sorted(f for f in seen if os.path.exists(f))
    if not stale:
        return
    move = _executes()
    for f in stale if move else []:
        try:
            discard(f)
        except OSError as exc:
            _stop(
                f"{f} was made from a damaged result and could not be removed: {exc.strerror or exc}; make "
                f"{os.path.dirname(f) or '.'} writable, or remove it yourself, then rerun"
            )
    what = "removed; they are rebuilt with them" if move else "they would be rebuilt with them"
    print(
        f"sojourn: {len(stale)} result file(s) made from damaged results ({', '.join(stale[:3])}"
        f"{' …' if len(stale) > 3 else ''}): {what}",
        file=sys.stderr,
    )


def _walltime_warnings():
    """cluster.slurm.walltime against what each enabled study predicts of one task's run time (a study's
    ``config.predicted_task_seconds``; a study without one is named as unchecked)."""
    import importlib

    from sojourn.core.cluster.cluster import walltime_warnings

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
    it, sojourn.core.present.claims.Caption), absolute (the report reads it relative to the rule file otherwise)."""
    import os

    return os.path.abspath(path)


def in_report(path, caption, category, subcategory):
    """``path`` as an output the HTML report shows (Snakemake's ``report()``), with its generated caption."""
    return report(path, caption=caption, category=category, subcategory=subcategory)


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
            png = fmt == "png"
            out[key] = in_report(path, generated_caption(rst), get(study).category, "2 figures") if png else path
    return out


def key_results(study, stem, key=""):
    """The outputs of a study's key-result table (sojourn.core.present.tables): ``<stem>.csv``, ``<stem>.html`` and its caption
    ``<stem>.rst`` (written by the same job from the same data); the page in the report first in the study's
    category (subcategory "1 key results", before the figures' "2 figures"; the report sorts subcategories by
    name). ``key``: a suffix of the output names (several tables in one job)."""
    from sojourn.studies import get

    return {
        f"key_csv{key}": f"{stem}.csv",
        f"key_rst{key}": f"{stem}.rst",
        f"key_html{key}": in_report(
            f"{stem}.html", generated_caption(f"{stem}.rst"), get(study).category, "1 key results"
        ),
    }


def finished():
    """The closing lines of a successful run (the Snakefile's ``onsuccess``; on the terminal through the sojourn
    logger plugin, and in Snakemake's log): where the results are and what to open. The report command repeats
    the run's --configfile options, since the report is built from the same config."""
    import os

    from snakemake.logging import logger

    targets = [str(p) for s in ENABLED for p in TARGETS[s.name]]
    figures = sorted({os.path.dirname(p) for p in targets if p.endswith(".png")})
    tables = [p for p in targets if p.endswith("key_results.html")]
    options = "".join(
        f" --configfile {os.path.relpath(f) if not os.path.relpath(f).startswith('..') else f}"
        for f in (getattr(workflow, "overwrite_configfiles", None) or [])
    )
    n = sum(p.endswith(".png") for p in targets)
    logger.info(
        f"Figures ({n}, PNG and PDF): {', '.join(f + '/' for f in figures)}\n"
        f"Key-result tables: {', '.join(tables)}\n"
        f"All of them on one page, with captions: snakemake --report report.html{options}, then open report.html"
    )


def code(entry):
    """The rerun trigger of a job: the fingerprint of its entry function ``"<study>.<job>"`` (the function
    ``<job>`` of ``sojourn.<study>.jobs``, the definitions it uses and the modules they import)."""
    return fingerprint(_entry(entry))


def _entry(entry):
    study, _, name = entry.partition(".")
    return f"sojourn.{study}.jobs:{name}"


def job(entry, log, params=None, **arguments):
    """Every rule's ``run:``: the job function ``"<study>.<job>"`` called with the rule's ``params`` and
    ``arguments``, its log opened, routed, timed and closed by sojourn.core.runs.job.run (the traceback on failure)."""
    from sojourn.core.runs.job import run

    return run(_entry(entry), log[0], **{**dict(params.items() if params is not None else {}), **arguments})


# Dask (and dask_jobqueue, which installs a signal handler) imported once by the main thread: jobs run in
# threads, and concurrent first imports of dask raced.
# Ctrl-C (SIGINT): Snakemake waits for its running job threads, so they stop waiting for their Dask tasks
# and new jobs fail at once (sojourn.core.files.io.INTERRUPTED); the local workers ignore it (worker_plugins).
if workflow.is_main_process:
    from sojourn.core.cluster.cluster import import_in_main_thread
    from sojourn.core.files.io import stop_waiting_on_interrupt

    import_in_main_thread(config["cluster"])
    stop_waiting_on_interrupt()

# SLURM executor route (sojourn.core.cluster.snakemake_slurm): the main process fails a job that SLURM cancelled, timed
# out, killed for memory or preempted (the plugin polled forever on "CANCELLED by 0"); a Snakemake started
# inside a SLURM job takes the allocation's CPUs as its cores and runs a group's jobs as threads (one Dask
# cluster per SLURM job).
# The plugin's account guess runs without its shell pipe here (no "sacct: invalid option" noise); every workaround
# is checked to be in force for the installed plugin version, or the run stops naming it.
from sojourn.core.cluster.snakemake_slurm import (
    WorkaroundMissing,
    fit_cores_to_allocation,
    require_workarounds,
    threads_in_group_jobs,
)

threads_in_group_jobs()
_slurm_workarounds_missing = None
if workflow.is_main_process:
    try:
        require_workarounds()
    except WorkaroundMissing as exc:  # an error where the run submits SLURM jobs (onstart, below)
        _slurm_workarounds_missing = str(exc)
else:
    fit_cores_to_allocation(workflow)


def _refuse_slurm_without_workarounds():
    if _slurm_workarounds_missing and getattr(workflow.executor_plugin, "name", None) == "slurm":
        raise WorkflowError(_slurm_workarounds_missing)


def dask():
    """The Dask client shared by all jobs of this Snakemake process (started on first use)."""
    from sojourn.core.cluster.cluster import shared_client
    from sojourn.core.files.io import check_interrupted

    check_interrupted("the job")  # Ctrl-C: start nothing new
    return shared_client(config["cluster"], config["cluster"].get("n_workers") or workflow.cores)


def _close_dask():
    from sojourn.core.cluster.cluster import close_shared

    close_shared()


def _sigterm_in_a_thread():
    """After Snakemake has installed its SIGTERM handler, which could deadlock in the main thread (onstart)."""
    from sojourn.core.files.io import sigterm_handler_in_a_thread

    sigterm_handler_in_a_thread()


onstart:
    _refuse_slurm_without_workarounds()
    _sigterm_in_a_thread()


onsuccess:
    _close_dask()


onerror:
    _close_dask()
