"""The SLURM executor route's profile (workflow/profiles/slurm) planned on the paper config, without a cluster:
``snakemake -n --executor slurm --workflow-profile workflow/profiles/slurm --configfile config/paper.yaml``
plans at most 40 SLURM jobs (issue 23: one SLURM job per cell block was ~340 jobs of seconds each).
The sojourn side of the route (sojourn.core.cluster.snakemake_slurm) is tested here on its pure parts; its behaviour on
a real cluster (grouped jobs, scancel, rerun) in tests/workflow/test_slurm.py."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "workflow" / "profiles" / "slurm"


def _planned_slurm_jobs(out: str) -> tuple[list[str], list[str]]:
    """From a dry run's listing: the group jobs (one SLURM job each, by group name) and the rule jobs outside
    any group that would be submitted on their own (``rule x:`` at the start of a line; jobs inside a group are
    indented, rules Snakemake runs itself are ``localrule x:``)."""
    groups = re.findall(r"^\[[^\]]+\] Group job (\S+) ", out, flags=re.MULTILINE)
    singles = [r for r in re.findall(r"^rule (\w+):", out, flags=re.MULTILINE)
               if r != "all"]  # the target rule has no action: Snakemake completes it without a job
    return groups, singles


def test_paper_config_plans_at_most_40_slurm_jobs(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--snakefile", str(REPO / "Snakefile"),
         "--executor", "slurm", "--workflow-profile", str(PROFILE),
         "--configfile", str(REPO / "config" / "paper.yaml"), "--directory", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    rule_jobs = sum(int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", out, flags=re.MULTILINE)
                    if rule not in ("total", "all"))
    groups, singles = _planned_slurm_jobs(out)
    # the paper config: one cell block per (law, R) (grid.rho_block 1.0): 60 blocks and 24 other rule jobs
    assert rule_jobs >= 80, f"the paper config's DAG is not what this test assumes ({rule_jobs} rule jobs)"
    assert len(groups) + len(singles) <= 40, (len(groups), len(singles), sorted(set(singles)))
    # every study's rules travel in groups: cell blocks ten to a job, the rest one job per study
    profile = yaml.safe_load((PROFILE / "profile.yaml").read_text())
    per_job = profile["group-components"]["jsq_ps_cells"]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, flags=re.MULTILINE))
    blocks = sum(int(counts.get(r, 0)) for r in ("jsq_ps_simulate", "jsq_ps_approximate", "jsq_ps_approximate_laws"))
    assert groups.count("jsq_ps_cells") == -(-blocks // per_job), (blocks, groups)
    assert {g for g in groups if g != "jsq_ps_cells"} == {"jsq_ps_summary", "split_merge", "restart"}, groups
    assert not singles, singles


def test_profile_names_no_site_partition_or_account():
    """The profile runs on any site as shipped: the partition is the site's default one, no account is
    assumed; the keys an operator sets are documented in its comments."""
    text = (PROFILE / "profile.yaml").read_text()
    profile = yaml.safe_load(text)
    for res in [profile.get("default-resources") or {}, *(profile.get("set-resources") or {}).values()]:
        assert "slurm_partition" not in res and "slurm_account" not in res, res
    for key in ("slurm_account", "slurm_partition", "qos", "constraint", "slurm_extra"):
        assert re.search(rf"^#\s+{key}: ", text, flags=re.MULTILINE), key


def test_ended_states():
    from sojourn.core.cluster.snakemake_slurm import ended, parse_states, state_word

    sacct = parse_states("11|CANCELLED by 0\n12|RUNNING\n13|TIMEOUT\n14|OUT_OF_MEMORY\n15|PREEMPTED\n"
                         "16|PREEMPTED\n17|COMPLETED\n18|NODE_FAIL\n19|FAILED\n")
    assert state_word(sacct["11"]) == "CANCELLED"
    # a preempted job counts once it was preempted at the previous check already and squeue no longer has it
    # waiting or running (16 was requeued: PENDING)
    queued = {"16": "PENDING"}
    first = ended(sacct, queued, seen_before=set())
    assert first == {"11": "CANCELLED", "13": "TIMEOUT", "14": "OUT_OF_MEMORY", "19": "FAILED"}
    second = ended(sacct, queued, seen_before={"15", "16", "18"})
    assert second == {**first, "15": "PREEMPTED", "18": "NODE_FAIL"}




def test_account_guess_runs_sacct_without_a_shell_pipe():
    """The plugin's account guess (plugin 2.8.0: ``sacct … | tail -1`` without a shell, "sacct: invalid option --
    '1'" in every route-1 run) is replaced: sacct alone, its last line taken here; quiet when there is none."""
    import snakemake_executor_plugin_slurm as plugin

    from sojourn.core.cluster.snakemake_slurm import account_guess_without_shell, guess_account

    assert account_guess_without_shell(plugin) and plugin.get_account.sojourn_wrapped
    assert guess_account("no-such-user-anywhere") is None


def test_workarounds_not_in_force_stop_the_run_naming_the_plugin_version():
    """A plugin release that renamed what the workarounds wrap is refused with the version, each missing workaround
    and the release they are tested with (the installed plugin has them all)."""
    import types

    import pytest

    from sojourn.core.cluster.snakemake_slurm import TESTED_PLUGIN, WorkaroundMissing, require_workarounds

    assert len(require_workarounds()) == 3
    changed = types.SimpleNamespace(Executor=type("Executor", (), {}))
    with pytest.raises(WorkaroundMissing) as err:
        require_workarounds(changed, have="9.9.9")
    msg = str(err.value)
    assert msg.startswith("snakemake-executor-plugin-slurm 9.9.9") and f"tested with {TESTED_PLUGIN}" in msg
    assert "end_jobs_slurm_ended" in msg and "account_guess_without_shell" in msg, msg


def test_constraints_pin_every_dependency_and_the_tested_plugin():
    """envs/constraints.txt (docs/hpc.md, "Installing on a cluster"; written by envs/freeze_constraints.py from a
    working install) pins every [project] dependency and every test/tls extra at one version within its declared
    range, and the SLURM executor plugin at the release sojourn's workarounds are tested with."""
    import tomllib

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    from sojourn.core.cluster.snakemake_slurm import TESTED_PLUGIN

    pins = {}
    for line in (REPO / "envs" / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version
    py = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = py["dependencies"] + py["optional-dependencies"]["test"] + py["optional-dependencies"]["tls"]
    for text in wanted:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not pinned in envs/constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), (req, pins[name])
    assert pins["snakemake-executor-plugin-slurm"] == TESTED_PLUGIN


def test_profile_polls_sacct_gently():
    """Status checks (one sacct call for all the run's jobs) no more often than every 30 s, as site guides ask; the
    plugin's growing wait is capped there by sojourn (end_jobs_slurm_ended), so a job's end is seen within it."""
    profile = yaml.safe_load((PROFILE / "profile.yaml").read_text())
    assert 30 <= profile["seconds-between-status-checks"] <= 60
    assert profile["slurm-status-command"] == "sacct"
