"""Snakemake's SLURM executor route (``--executor slurm --workflow-profile workflow/profiles/slurm``): what the
pipeline adds to Snakemake and to snakemake-executor-plugin-slurm so that the route behaves on a real cluster.

* :func:`fit_cores_to_allocation` — in a Snakemake that runs jobs inside a SLURM allocation: the cores are
  the allocation's CPUs, not the node's (the plugin's job step starts Snakemake with ``--cores all``, which
  counts every CPU of the node where the site's SLURM does not bind tasks to their CPUs,
  ``TaskPlugin=task/none``: "Provided cores: 2" in a ``cpus_per_task: 1`` job).
* :func:`threads_in_group_jobs` — the jobs of a group job run as threads sharing one Dask cluster (Snakemake
  passes ``--force-use-threads`` to single jobs but not to group jobs, whose ``run:`` jobs then each
  spawned a Snakemake process and a Dask cluster of their own: 3 min 44 s instead of ~1 min for the test
  config's nine cell blocks).
* :func:`end_jobs_slurm_ended` — in the main Snakemake process: a job that SLURM reports ended
  (cancelled, timed out, out of memory, failed, preempted and not requeued) fails the Snakemake job with a
  message naming the SLURM job, its rules and its state, however the plugin spells or misses that state;
  and the plugin's growing wait between status checks is capped at ``--seconds-between-status-checks``.
  Up to at least plugin 2.8.0 the plugin compares ``sacct``'s state with exact words, so "CANCELLED by 0"
  (what ``sacct`` prints for an ``scancel``) was never matched and the run polled forever; and PREEMPTED
  is left to SLURM to requeue even where the partition cancels preempted jobs.
* :func:`account_guess_without_shell` — the plugin's guess of a SLURM account when the profile names none runs
  ``sacct -nu <user> -o Account%256 | tail -1`` without a shell (plugin 2.8.0), so ``sacct`` reads ``| tail -1``
  as its own options and every route-1 run printed "sacct: invalid option -- '1'"; here the guess runs ``sacct``
  alone and takes the last account itself.
* :func:`require_workarounds` — all of the above applied, or a clear error naming the plugin version and what
  could not be applied (a plugin release that renamed what they wrap), checked when the workflow starts.
"""
from __future__ import annotations

import subprocess

#: sacct states after which a job never runs again (sacct(1), JOB STATE CODES)
FINAL_FAILURES = frozenset({"BOOT_FAIL", "CANCELLED", "DEADLINE", "FAILED", "OUT_OF_MEMORY", "TIMEOUT", "REVOKED"})
#: states after which SLURM may requeue the job (PreemptMode=REQUEUE, --requeue): failed once squeue
#: no longer holds the job as waiting or running
MAYBE_REQUEUED = frozenset({"NODE_FAIL", "PREEMPTED"})
#: squeue states of a job that is still, or again, on its way to run
ALIVE = frozenset({"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED",
                   "RESIZING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD"})


def fit_cores_to_allocation(workflow) -> int | None:
    """In a Snakemake process that runs jobs inside a SLURM allocation (not the main process): cores = the
    allocation's CPUs. Returns the cores set, or None where nothing changed (the main process, outside SLURM,
    or cores already within the allocation)."""
    if workflow.is_main_process:
        return None
    from .cluster import (
        allocation,  # the one reading of SLURM's allocation (also sizes the local Dask cluster)
    )

    alloc = allocation()
    n = alloc["cpus"] if alloc["in_slurm_job"] else None
    cores = workflow.resource_settings.cores
    if n is None or (isinstance(cores, int) and cores <= n):
        return None
    workflow.resource_settings.cores = n
    workflow.global_resources["_cores"] = n
    return n


def threads_in_group_jobs(executor_class=None) -> bool:
    """Spawned group jobs run their ``run:`` jobs as threads, like single jobs: ``--force-use-threads`` added to
    the command line of a group job (Snakemake's executors pass it to single jobs only; a group's jobs then
    each spawned a Snakemake process and a Dask cluster). Patched at the class every executor, the SLURM
    plugin's and its job step's, builds that command line with. Idempotent."""
    if executor_class is None:
        from snakemake_interface_executor_plugins.executors.real import (
            RealExecutor as executor_class,
        )
    original = getattr(executor_class, "get_job_args", None)
    if original is None:
        return False
    if getattr(original, "sojourn_wrapped", False):
        return True

    def get_job_args(self, job, **kwargs):
        args = original(self, job, **kwargs)
        if job.is_group() and "--force-use-threads" not in args:
            args = f"{args} --force-use-threads"
        return args

    get_job_args.sojourn_wrapped = True
    executor_class.get_job_args = get_job_args
    return True


def jobs_in_the_batch_step(executor_class=None) -> bool:
    """The SLURM job's batch script runs the Snakemake job itself (main process, SLURM executor plugin).

    The plugin's batch script starts Snakemake with its job-step executor, which starts every rule job of the
    SLURM job as an ``srun`` step running yet another Snakemake, one job at a time (``--jobs 1``): a group job's
    ten cell blocks cost eleven Snakemake start-ups and ten Dask clusters, one after another. Without the
    job-step executor the batch script's Snakemake runs the jobs itself, as threads on the allocation's CPUs
    (the SLURM job is still confined to its allocation, and accounted as its ``batch`` step). The plugin's job
    arrays (``--slurm-array-jobs``) need the job step and keep it. Idempotent."""
    if executor_class is None:
        try:
            from snakemake_executor_plugin_slurm import Executor as executor_class
        except ImportError:
            return False

    def replacement(original):
        def additional_general_args(self):
            if getattr(self.workflow.executor_settings, "array_jobs", None):
                return original(self)
            return ""

        return additional_general_args

    return _replace(executor_class, "additional_general_args", replacement)


def _replace(owner, name: str, build) -> bool:
    """``owner.name`` replaced by ``build(original)``, once (marked ``sojourn_wrapped``): False if ``owner`` has no
    ``name`` (a plugin release without it), True once in force."""
    original = getattr(owner, name, None)
    if original is None:
        return False
    if getattr(original, "sojourn_wrapped", False):
        return True
    new = build(original)
    new.sojourn_wrapped = True
    setattr(owner, name, new)
    return True


def parse_states(text: str) -> dict[str, str]:
    """``sacct -X -P -n -o JobIdRaw,State`` or ``squeue -h -o %i|%T`` output -> job id -> state as printed."""
    out = {}
    for line in text.splitlines():
        jid, _, state = line.partition("|")
        if jid.strip() and state.strip():
            out[jid.strip()] = state.strip()
    return out


def _query(cmd: list[str]) -> dict[str, str]:
    try:
        p = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return parse_states(p.stdout) if p.returncode == 0 else {}


def sacct_states(ids) -> dict[str, str]:
    """Job id -> sacct state (allocations only, e.g. "CANCELLED by 0"); jobs sacct does not know are absent."""
    ids = sorted(ids)
    if not ids:
        return {}
    return _query(["sacct", "-X", "-P", "-n", "-o", "JobIdRaw,State", "-j", ",".join(ids)])


def squeue_states(ids) -> dict[str, str]:
    """Job id -> squeue state for the jobs slurmctld still holds."""
    ids = sorted(ids)
    if not ids:
        return {}
    return _query(["squeue", "-h", "-o", "%i|%T", "-j", ",".join(ids)])


def state_word(state: str) -> str:
    """The state's code: "CANCELLED by 0" -> "CANCELLED", "FAILED+" -> "FAILED", "" -> ""."""
    words = state.split()
    return words[0].rstrip("+") if words else ""


def ended(states: dict[str, str], queued: dict[str, str], seen_before: set[str]) -> dict[str, str]:
    """The jobs that SLURM has ended without success: job id -> state word.

    ``states``: sacct states of the jobs still believed active; ``queued``: their squeue states;
    ``seen_before``: jobs that were in a possibly-requeued state at the previous check already.
    A final failure counts at once; NODE_FAIL or PREEMPTED once it has lasted two checks and squeue no
    longer holds the job as waiting or running (so a requeued job is waited for).
    """
    out = {}
    for jid, raw in states.items():
        word = state_word(raw)
        requeue_over = jid in seen_before and state_word(queued.get(jid, "")) not in ALIVE
        if word in FINAL_FAILURES or (word in MAYBE_REQUEUED and requeue_over):
            out[jid] = word
    return out


def _describe(job) -> str:
    """``rule jsq_ps_simulate (wildcards)`` or ``group jsq_ps_cells: rule a (n jobs), rule b (m jobs)``."""
    if job.is_group():
        counts = {}
        for j in job.jobs:
            counts[j.rule.name] = counts.get(j.rule.name, 0) + 1
        rules = ", ".join(f"rule {r} ({n} job{'s' if n > 1 else ''})" for r, n in sorted(counts.items()))
        return f"group {job.groupid}: {rules}"
    wc = ", ".join(f"{k}={v}" for k, v in job.wildcards_dict.items())
    return f"rule {job.rule.name}" + (f" ({wc})" if wc else "")


WHAT_NEXT = {
    "CANCELLED": "it was cancelled (scancel, or by an administrator)",
    "TIMEOUT": "it ran past its time limit: raise `runtime` for its rules in the profile (minutes)",
    "OUT_OF_MEMORY": "it ran out of memory: raise `mem_mb` for its rules in the profile",
    "PREEMPTED": "a job of higher priority took its node and SLURM did not requeue it",
    "NODE_FAIL": "its node failed",
    "DEADLINE": "it reached its deadline",
    "BOOT_FAIL": "its node failed to boot",
    "FAILED": "it exited non-zero: see its SLURM log and the rules' logs",
    "REVOKED": "it was revoked (a sibling of a federated job started)",
}


def message(jobid: str, state: str, raw: str, job) -> str:
    return (f"SLURM job {jobid} ({_describe(job)}) ended with SLURM state {state}"
            f"{f' ({raw})' if raw != state else ''}: {WHAT_NEXT.get(state, '')}. The outputs it finished are "
            "kept; run the same command again to do the rest (with --retries N Snakemake resubmits it itself). ")


def end_jobs_slurm_ended(executor_class=None) -> bool:
    """Wrap the SLURM executor plugin's status check (main Snakemake process). Returns False if the plugin
    is not installed. Idempotent."""
    if executor_class is None:
        try:
            from snakemake_executor_plugin_slurm import Executor as executor_class
        except ImportError:
            return False
    original = getattr(executor_class, "check_active_jobs", None)
    report = getattr(executor_class, "report_job_error", None)
    if original is None or report is None:
        return False
    if getattr(original, "sojourn_wrapped", False):
        return True

    async def check_active_jobs(self, active_jobs):
        still = [j async for j in original(self, active_jobs)]
        ids = {str(j.external_jobid) for j in still if j.external_jobid}
        states = sacct_states(ids) if ids else {}
        maybe = {i for i, s in states.items() if state_word(s) in MAYBE_REQUEUED}
        queued = squeue_states(maybe) if maybe else {}
        seen = getattr(self, "_sojourn_maybe_requeued", set())
        gone = ended(states, queued, seen)
        self._sojourn_maybe_requeued = maybe
        for j in still:
            jid = str(j.external_jobid)
            if jid in gone:
                self.report_job_error(j, msg=message(jid, gone[jid], states[jid], j.job),
                                      aux_logs=[str(j.aux["slurm_logfile"])] if j.aux.get("slurm_logfile") else [])
            else:
                yield j
        # the plugin adds 10 s to the wait after each check in which no job finished, up to 180 s: a job's
        # end would go unseen for up to 3 minutes; --seconds-between-status-checks caps it
        cap = self.workflow.remote_execution_settings.seconds_between_status_checks
        if cap and self.next_seconds_between_status_checks and self.next_seconds_between_status_checks > cap:
            self.next_seconds_between_status_checks = cap

    def report_job_error(self, job_info, msg=None, **kwargs):
        # Snakemake prints no message for a failed group job (GroupJob.log_error drops it): log it here, with the
        # SLURM job and the group's rules, whoever found the failure (the plugin's TIMEOUT, this module's CANCELLED)
        if msg and job_info.job.is_group():
            jid = job_info.external_jobid
            self.logger.error(
                msg if f"SLURM job {jid} (" in msg else f"SLURM job {jid} ({_describe(job_info.job)}): {msg}"
            )
        return report(self, job_info, msg=msg, **kwargs)

    check_active_jobs.sojourn_wrapped = True
    executor_class.check_active_jobs = check_active_jobs
    executor_class.report_job_error = report_job_error
    return True


def guess_account(user: str | None = None) -> str | None:
    """The SLURM account of ``user``'s most recent job (``sacct -nu <user> -o Account%256``, its last line), or None
    where sacct knows none ("(null)", "none", nothing) or fails. Quiet: no account is what most test clusters and
    many sites have."""
    import getpass

    try:
        p = subprocess.run(["sacct", "-nu", user or getpass.getuser(), "-o", "Account%256"], check=False,
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [x.strip() for x in p.stdout.splitlines() if x.strip()] if p.returncode == 0 else []
    account = lines[-1].replace("(null)", "").strip() if lines else ""
    return account if account and account.lower() != "none" else None


def account_guess_without_shell(module=None) -> bool:
    """The plugin's account guess (its module-level ``get_account``) replaced by :func:`guess_account`. Returns
    False if the plugin is not installed or has no such function. Idempotent."""
    if module is None:
        try:
            import snakemake_executor_plugin_slurm as module
        except ImportError:
            return False
    return _replace(module, "get_account", lambda original: lambda logger=None: guess_account())


#: the plugin release the workarounds were written against and tested with on the single-node SLURM (.ci/slurm)
TESTED_PLUGIN = "2.8.0"


class WorkaroundMissing(RuntimeError):
    """A workaround for snakemake-executor-plugin-slurm could not be applied to the installed plugin."""


def require_workarounds(plugin=None, have: str | None = None) -> list[str]:
    """Apply every workaround of this module in the main Snakemake process and check that each is in force for the
    installed plugin (nothing to do where the plugin is not installed: route 1 is then unavailable anyway).
    Raises :class:`WorkaroundMissing` naming the plugin version and each workaround that found nothing to wrap.
    Returns the names of the workarounds applied."""
    if plugin is None:
        try:
            import snakemake_executor_plugin_slurm as plugin
        except ImportError:
            return []
    if have is None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            have = version("snakemake-executor-plugin-slurm")
        except PackageNotFoundError:  # pragma: no cover - importable but not installed as a distribution
            have = "unknown"
    applied = {
        "jobs_in_the_batch_step (a group's jobs as threads of one Snakemake)": jobs_in_the_batch_step(plugin.Executor),
        "end_jobs_slurm_ended (CANCELLED/PREEMPTED jobs end the run; status checks capped)":
            end_jobs_slurm_ended(plugin.Executor),
        "account_guess_without_shell (no 'sacct: invalid option' noise)": account_guess_without_shell(plugin),
    }
    missing = [name for name, ok in applied.items() if not ok]
    if missing:
        raise WorkaroundMissing(
            f"snakemake-executor-plugin-slurm {have} (sojourn's workarounds are tested with {TESTED_PLUGIN}): "
            f"cannot apply {'; '.join(missing)}: the plugin changed what they wrap. Install the tested release "
            f"(pip install 'snakemake-executor-plugin-slurm=={TESTED_PLUGIN}', as envs/constraints.txt pins it) "
            "or run the pipeline by route 2 or 3 (docs/hpc.md)")
    return list(applied)
