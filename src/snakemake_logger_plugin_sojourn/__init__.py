"""Snakemake's terminal output for the sojourn pipeline: a short summary, every error in full (issue 31 item 6).

A Snakemake logger plugin (``--logger sojourn``; the workflow profile ``workflow/profiles/default/profile.yaml``
turns it on). It replaces Snakemake's terminal output only: Snakemake's log file
(``.snakemake/log/<date>.snakemake.log``) still gets every message, and each job's own log is under
``<results>/<study>/logs/``. On the terminal a run shows

* one line with the number of jobs per study (from Snakemake's job table, which the log file keeps),
* progress — done of total, percent, elapsed time — at every tenth of the jobs, and at the first job to finish
  after a minute without a progress line,
* every warning and error in full: a failed job's rule, log path and log content (``show-failed-logs`` in the
  profile), a workflow error (an invalid config names its key), Snakemake's own warnings,
* Snakemake's closing lines (where its log is, the elapsed time) and the workflow's own (``onsuccess``: what to
  open),

and not the per-job chatter (rule, inputs, outputs, wildcards, "Select jobs to execute…", finished job ids), nor the
host header. A dry run (``-n``) prints what Snakemake prints (with ``--quiet``: its job table only, as Snakemake's
help describes). ``--verbose``, or ``--logger-sojourn-jobs``, shows everything as Snakemake's default output does.
"""
# no "from __future__ import annotations": Snakemake reads the settings fields' types as classes

import logging
import sys
import time
from dataclasses import dataclass, field

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent
from snakemake_interface_logger_plugins.settings import LogHandlerSettingsBase

#: Snakemake's per-job messages: hidden from the terminal in a run (the log file keeps them)
JOB_CHATTER = {LogEvent.JOB_INFO, LogEvent.GROUP_INFO, LogEvent.SHELLCMD, LogEvent.JOB_STARTED,
               LogEvent.JOB_FINISHED, LogEvent.RESOURCES_INFO, LogEvent.WORKFLOW_STARTED, LogEvent.DEBUG_DAG,
               LogEvent.RULEGRAPH}
#: Snakemake's scheduling messages without an event (matched at their start): hidden from the terminal in a run. A
#: message Snakemake adds or rewords later is shown — more lines, never a hidden error.
CHATTER_PREFIXES = ("Select jobs to execute", "Execute ", "Using shell:", "Assuming unrestricted shared filesystem",
                    "Building DAG of jobs", "Waiting for more resources", "Ready jobs", "Selected jobs",
                    "host: ")  # Snakemake < 9.22's host line (later ones send WORKFLOW_STARTED)
#: a progress line at every tenth of the jobs, and when a job finishes this many seconds after the last line
PROGRESS_EVERY = 60.0


@dataclass
class LogHandlerSettings(LogHandlerSettingsBase):
    jobs: bool = field(default=False, metadata={
        "help": "Show every job on the terminal, as Snakemake's default output does (the sojourn logger shows a "
                "summary, every warning and error; Snakemake's log file has everything either way)."})


def _quietness(settings) -> set[str]:
    return {str(getattr(q, "value", q)).lower() for q in (getattr(settings, "quiet", None) or ())}


def format_elapsed(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def studies(stats: dict) -> str:
    """Snakemake's job counts per rule as counts per study (a rule is named <study>_<job>), e.g.
    ``jsq_ps 93, split_merge 4, restart 8, all 1``."""
    try:
        from sojourn.studies import STUDIES

        names = [s.name for s in STUDIES]
    except ImportError:  # not the sojourn workflow: count per rule
        names = []
    counts: dict[str, int] = {}
    for rule, n in stats.items():
        if rule == "total":
            continue
        study = next((s for s in names if str(rule).startswith(f"{s}_")), str(rule))
        counts[study] = counts.get(study, 0) + int(n)
    return ", ".join(f"{k} {v}" for k, v in counts.items())


class LogHandler(LogHandlerBase):
    def __post_init__(self) -> None:
        if not hasattr(self, "filters"):  # snakemake-interface-logger-plugins < 2 does not initialise the Handler
            logging.Handler.__init__(self)
        self.stream = sys.stdout if getattr(self.common_settings, "stdout", False) else sys.stderr
        self.start = time.monotonic()
        self.last_tenth = -1
        self.last_progress = self.start
        quiet = _quietness(self.common_settings)
        self.full = bool(getattr(self.common_settings, "verbose", False) or (self.settings and self.settings.jobs))
        self.dryrun = bool(getattr(self.common_settings, "dryrun", False))
        self.quiet = quiet
        self.colour = (not getattr(self.common_settings, "nocolor", False) and hasattr(self.stream, "isatty")
                       and self.stream.isatty())
        self.addFilter(self.shown)

    # what the terminal shows ------------------------------------------------------------------------------------
    def shown(self, record: logging.LogRecord) -> bool:
        event = getattr(record, "event", None)
        if "all" in self.quiet and not self.dryrun:
            return False
        if record.levelno >= logging.WARNING or event in (LogEvent.JOB_ERROR, LogEvent.GROUP_ERROR, LogEvent.ERROR):
            return True  # warnings and errors, always
        if self.full or self.dryrun:
            return self._as_snakemake(record, event)
        if event == LogEvent.RUN_INFO:
            stats = getattr(record, "stats", None) or {}
            total = stats.get("total")
            if total is None:
                return False
            record.msg = (f"{total} jobs to run ({studies(stats)}); each job's messages go to Snakemake's log in "
                          ".snakemake/log/")
            record.event = None
            return True
        if event == LogEvent.PROGRESS:
            return self._progress(record)
        if event in JOB_CHATTER:
            return False
        return not (event is None and str(record.msg or "").startswith(CHATTER_PREFIXES))

    def _as_snakemake(self, record, event) -> bool:
        """Snakemake's default filter, except that the host header is left out unless --verbose or the jobs option
        asks for everything, and that a quiet dry run keeps its job table (Snakemake's help promises a summary)."""
        if hasattr(record, "quietness") and str(getattr(record.quietness, "value", record.quietness)) in self.quiet:
            return False
        if event == LogEvent.WORKFLOW_STARTED:
            return self.full
        if event == LogEvent.SHELLCMD and not getattr(self.common_settings, "printshellcmds", False):
            return False
        if event == LogEvent.DEBUG_DAG and not getattr(self.common_settings, "debug_dag", False):
            return False
        if event in (LogEvent.JOB_INFO, LogEvent.GROUP_INFO, LogEvent.SHELLCMD) and "rules" in self.quiet:
            return False
        return not (event in (LogEvent.PROGRESS, LogEvent.JOB_FINISHED, LogEvent.RESOURCES_INFO)
                    and "progress" in self.quiet)

    def _progress(self, record) -> bool:
        done, total = int(getattr(record, "done", 0)), int(getattr(record, "total", 0) or 1)
        now = time.monotonic()
        tenth = 10 * done // total
        if done < total and tenth <= self.last_tenth and now - self.last_progress < PROGRESS_EVERY:
            return False
        self.last_tenth, self.last_progress = tenth, now
        record.msg = f"{done} of {total} jobs done ({100 * done // total}%), {format_elapsed(now - self.start)} elapsed"
        record.event = None
        return True

    # writing ----------------------------------------------------------------------------------------------------
    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            if not text:
                return
            if self.colour and record.levelno >= logging.WARNING:
                text = f"\033[{31 if record.levelno >= logging.ERROR else 33}m{text}\033[0m"
            self.stream.write(text + "\n")
            self.stream.flush()
        except Exception:  # noqa: BLE001 -- logging.Handler's contract: report through handleError, never raise
            self.handleError(record)

    # what the handler is, for Snakemake: LogHandlerBase's abstract properties, constants here, so class attributes
    writes_to_stream = True  # the terminal only
    writes_to_file = False
    has_filter = True  # shown()
    has_formatter = False
    needs_rulegraph = False
