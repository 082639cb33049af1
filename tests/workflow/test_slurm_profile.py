"""The SLURM executor route's profile (workflow/profiles/slurm) planned on the paper config, without a cluster:
``snakemake -n --executor slurm --workflow-profile workflow/profiles/slurm --configfile config/paper.yaml``
plans at most 10 SLURM jobs, none predicted under 10 minutes from the measured run (issue 35; issue 23: one SLURM
job per cell block was ~340 jobs of seconds each), and the profiles are what workflow/slurm/size_jobs.py makes of
the measurements; every command of docs/hpc.md is run by a test or marked as needing what the tests lack.
The sojourn side of the route (sojourn.core.cluster.snakemake_slurm) is tested here on its pure parts; its behaviour on
a real cluster (grouped jobs, scancel, rerun) in tests/workflow/test_slurm.py."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
PROFILE = REPO / "workflow" / "profiles" / "slurm"


def _size_jobs():
    import importlib.util

    spec = importlib.util.spec_from_file_location("sojourn_size_jobs", REPO / "workflow" / "slurm" / "size_jobs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


sj = _size_jobs()


def _snakemake(args: list[str]) -> list[str]:
    """A guide command's ``snakemake …`` as this interpreter's ``python -m snakemake …``."""
    assert args[0] == "snakemake", args
    return [sys.executable, "-m", "snakemake", *args[1:]]


def test_paper_config_plans_at_most_10_slurm_jobs_none_under_10_minutes(tmp_path):
    """The guide's dry run (docs/hpc.md, "Checking the plan before submitting") on the paper config through the
    shipped profile: at most MAX_JOBS SLURM jobs (issue 35: 35 jobs of 45 s to 3.5 min before), every rule job in a
    group, and, from the measured run (benchmarks/slurm_sizes.json), none predicted under MIN_MINUTES at the profile's
    CPUs, every time limit at least MARGIN x its prediction (issue 23 before: one SLURM job per cell block)."""
    from support.hpc_guide import guide_command

    cmd = _snakemake(guide_command(
        "snakemake -n --executor slurm --workflow-profile workflow/profiles/slurm --configfile config/paper.yaml"))
    p = subprocess.run([*cmd, "--directory", str(tmp_path)], cwd=REPO, capture_output=True, text=True)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-4000:]
    rule_jobs = int(re.search(r"^total\s+(\d+)$", out, flags=re.MULTILINE).group(1)) - 1  # the job table, less `all`
    assert rule_jobs > 300, f"the paper config's DAG is not what this test assumes ({rule_jobs} rule jobs)"
    jobs = sj.parse_dry_run(out)
    assert sum(len(j.members) for j in jobs) == rule_jobs
    assert all(j.group for j in jobs), [j.members[0].rule for j in jobs if not j.group]  # no single-rule SLURM job
    assert len(jobs) <= sj.MAX_JOBS, [j.group for j in jobs]
    record = json.loads(sj.MEASUREMENTS.read_text())
    planned = sj.plan(record, out, sj.profile_resources(sj.PROFILES["long"]))
    print(sj.table(planned))
    for job in planned:
        assert not job.missing, f"{job.name}: no measurement for {job.missing[:5]}: remeasure (size_jobs.py measure)"
        assert job.predicted_s >= 60 * sj.MIN_MINUTES, job
        assert job.limit_min >= sj.MARGIN * job.predicted_s / 60, job
        assert job.cpus == sj.CPUS and job.mem_mb == sj.memory_mb(record, sj.CPUS), job
    # the guide's words on it are these figures (docs/hpc.md, "Sizing"; `size_jobs.py plan` prints them)
    guide = (REPO / "docs" / "hpc.md").read_text()
    for text in (sj.measured(record), sj.summary(planned), sj.table(planned)):
        assert text in guide, f"docs/hpc.md does not show (size_jobs.py plan prints it):\n{text}"


def test_route3_default_memory_covers_its_cpus():
    """pipeline.sbatch's default allocation holds what the measured memory rule asks for its CPUs (docs/hpc.md, route
    3: 1.5 x (the Snakemake process + one worker per CPU))."""
    text = (REPO / "workflow" / "slurm" / "pipeline.sbatch").read_text()
    cpus = int(re.search(r"^#SBATCH --cpus-per-task=(\d+)$", text, re.M).group(1))
    mem_g = int(re.search(r"^#SBATCH --mem=(\d+)G$", text, re.M).group(1))
    record = json.loads(sj.MEASUREMENTS.read_text())
    assert mem_g * 1024 >= sj.memory_mb(record, cpus), (cpus, mem_g, sj.memory_mb(record, cpus))


def test_group_limit_packs_layers_as_snakemake_does():
    """A group job's time limit as Snakemake sums it (``basic_layered``): narrow rule jobs side by side up to the
    profile's ``resources`` (the small profile's cell blocks of 1 CPU: two a layer at 2 CPUs, so 62 one-minute blocks
    get 31 minutes, not 62), whole-width jobs a layer each, jobs without CPUs or memory of their own one layer."""
    def job(cpus, mem, runtime):
        return sj.RuleJob("r", resources={"cpus_per_task": str(cpus), "mem_mb": str(mem), "runtime": str(runtime)})

    width = {"cpus_per_task": 2, "mem_mb": 4700}
    assert sj.group_limit([job(1, 2300, 1)] * 62, width) == 31
    assert sj.group_limit([job(1, 2300, 1)] * 61, width) == 31
    assert sj.group_limit([job(1, 2400, 1)] * 6, width) == 6  # two would pass the memory: one a layer
    assert sj.group_limit([job(1, 2300, 1)] * 6, {"cpus_per_task": 4, "mem_mb": 9400}) == 2
    assert sj.group_limit([job(0, 0, 9)] * 40 + [job(2, 4700, 3), job(2, 4700, 2)], width) == 14
    three = [job(1, 1000, 5), job(1, 1000, 1), job(1, 1000, 4)]
    assert sj.group_limit(three, width) == 6  # longest first: 5 beside 4, then 1
    assert sj.group_size(three, width) == (2, 2000) and sj.group_size([job(1, 2300, 1)] * 62, width) == (2, 4600)
    assert sj.group_size([job(0, 0, 9)] * 3, width) == (1, 0)


def test_small_jobs_profile_plans_short_cell_jobs(tmp_path):
    """workflow/profiles/slurm-small on the paper config: the cell blocks in jobs predicted SMALL_MINUTES on average at
    the profile's CPUs, every limit at least MARGIN x its prediction, as the guide says."""
    record = json.loads(sj.MEASUREMENTS.read_text())
    out = sj.dry_run(sj.PROFILES["small"], REPO / "config" / "paper.yaml", tmp_path)
    planned = sj.plan(record, out, sj.profile_resources(sj.PROFILES["small"]))
    cells = [p for p in planned if p.name == "jsq_ps_cells"]
    assert len(cells) >= 5 and len(planned) == len(cells) + 2, [p.name for p in planned]
    for job in planned:
        assert not job.missing and job.limit_min >= sj.MARGIN * job.predicted_s / 60, job
    # sized by the mean block: the cell jobs' mean is within SMALL_MINUTES (Snakemake picks which blocks share a job)
    assert sum(p.predicted_s for p in cells) / len(cells) <= 60 * sj.SMALL_MINUTES, sj.table(cells)
    assert sj.small_summary(planned) in (REPO / "docs" / "hpc.md").read_text(), sj.small_summary(planned)


def test_the_guides_plan_command_prints_the_paper_jobs():
    """``python workflow/slurm/size_jobs.py plan`` as the guide shows it: one table row per SLURM job of the paper
    config, the figures of the test above."""
    from support.hpc_guide import guide_command

    cmd = guide_command("python workflow/slurm/size_jobs.py plan")
    p = subprocess.run([sys.executable, *cmd[1:]], cwd=REPO, capture_output=True, text=True)
    assert p.returncode == 0 and not p.stderr.strip(), p.stdout + p.stderr
    rows = [line for line in p.stdout.splitlines() if line.startswith("| ") and not line.startswith("| SLURM job")]
    assert 1 <= len(rows) <= sj.MAX_JOBS, p.stdout
    for row in rows:
        predicted = float(re.search(r"\| ([\d.]+) min \|", row).group(1))
        assert predicted >= sj.MIN_MINUTES, row


def test_profiles_are_what_the_measurements_give():
    """workflow/profiles/slurm and slurm-small hold what ``size_jobs.py write`` makes of benchmarks/slurm_sizes.json:
    no hand-edited size drifts from the measurements (regenerate: docs/hpc.md, "Sizing")."""
    record = json.loads(sj.MEASUREMENTS.read_text())
    for kind, path in sj.PROFILES.items():
        assert (path / "profile.yaml").read_text() == sj.profile_text(record, kind), (
            f"{path}/profile.yaml differs from the measurements: python workflow/slurm/size_jobs.py write")
    run = record["run"]
    assert run["jobs"] == len(record["jobs"]) and run["cpu_s"] > 0
    measured = [j for j in record["jobs"].values() if j["measured"]]
    assert len(measured) == run["measured_jobs"] > 0
    assert abs(sum(j["cpu_s"] for j in measured) - run["cpu_s"]) < 0.01 * run["cpu_s"]  # scaled to the run's CPU


def test_layout_from_measurements_edges():
    """The sizing rules on a made-up record: the long layout's cell phase is one layer as high as MARGIN x the cells'
    predicted time, every other rule takes the whole job; the small layout's cell groups fill SMALL_MINUTES."""
    jobs = {f"jsq_ps/simulate/x/R~1/rho~{i}": {"rule": "jsq_ps_simulate", "dask": True, "cpu_s": 6.0}
            for i in range(200)}
    jobs["jsq_ps/compare"] = {"rule": "jsq_ps_compare", "dask": False, "cpu_s": 100.0}
    jobs["split_merge/experiment_c"] = {"rule": "split_merge_experiment", "dask": True, "cpu_s": 1200.0}
    record = {"workers": 2, "run": {"largest_process_mb": 1000.0, "process_tree_peak_mb": 2000.0}, "jobs": jobs}
    assert sj.memory_mb(record, 2) == 3000 and sj.memory_mb(record, 32) == 25500  # 1.5 x (1000 + C x 500)
    long = sj.layout(record, "long")
    assert set(long["groups"].values()) == {"sojourn"} and long["group-components"] == {"sojourn": sj.ALL}
    cells = (sj.STARTUP_S + 200 * 6.0 / sj.CPUS) * sj.MARGIN / 60  # the first layer: every job without upstream
    assert long["set-resources"]["jsq_ps_simulate"] == {"cpus_per_task": 0, "mem_mb": 0, "runtime": int(-(-cells // 1))}
    assert long["set-resources"]["jsq_ps_compare"]["cpus_per_task"] == sj.CPUS
    # split-merge's experiments follow its exact values: a layer of their own, as wide as the job
    assert long["set-resources"]["split_merge_experiment"] == {
        "cpus_per_task": sj.CPUS, "mem_mb": 3000, "runtime": int(-(-(1200 / sj.CPUS) * sj.MARGIN // 60))}
    small = sj.layout(record, "small")
    blocks = small["group-components"]["jsq_ps_cells"]
    assert sj.predicted_seconds([jobs["jsq_ps/simulate/x/R~1/rho~0"]] * blocks, sj.CPUS) <= 60 * sj.SMALL_MINUTES
    assert small["groups"]["jsq_ps_compare"] == "jsq_ps_summary"


def test_every_command_of_the_hpc_guide_is_run_by_a_test_or_marked():
    """Every command of docs/hpc.md, in a block or inline in the prose, is either taken by a test (``guide_command``;
    the SLURM ones run on the single-node test cluster) or marked "Not run by the tests" with the reason: a command
    added without a test fails here. Checked also on a made-up guide, where an unmarked, untested command of either
    kind is found, and a tool's bare name or an option is no command."""
    from support import hpc_guide

    blocks, inline = hpc_guide.blocks(), hpc_guide.inline()
    claimed = hpc_guide.claimed()
    assert len(blocks) >= 6 and any(b.marked for b in blocks) and claimed
    assert len(inline) >= 15 and any(c.marked for c in inline) and any(not c.marked for c in inline)
    untested = [(line, c) for line, c in hpc_guide.unmarked() if " ".join(c.split()) not in claimed]
    assert not untested, f"docs/hpc.md commands no test runs and not marked {hpc_guide.MARKER!r}: {untested}"
    made_up = ("Text with `sacct`, `--export=ALL` and `scontrol release <id>`.\n\n"
               "```bash\nsnakemake --cores 4 --configfile my-site.yaml\n```\n\n"
               f"{hpc_guide.MARKER}: a site.\n\n```bash\nssh login \\\n  -v   # comment\n```\n\n"
               f"* An item: `squeue --name\n  w`.\n  {hpc_guide.MARKER}: needs modules, `module load x`.\n"
               f"* {hpc_guide.MARKER}: `X='a b' sbatch …`\n")
    found = hpc_guide.blocks(made_up)
    assert [(b.commands, b.marked) for b in found] == [(["snakemake --cores 4 --configfile my-site.yaml"], False),
                                                       (["ssh login -v"], True)]
    assert [(c.line, c.command, c.marked) for c in hpc_guide.inline(made_up)] == [
        (1, "scontrol release <id>", False), (14, "squeue --name w", False), (16, "module load x", False),
        (17, "X='a b' sbatch …", True)]  # a marker inside an item's paragraph marks nothing
    assert hpc_guide.unmarked(made_up) == [(3, "snakemake --cores 4 --configfile my-site.yaml"),
                                           (1, "scontrol release <id>"), (14, "squeue --name w"),
                                           (16, "module load x")]


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
    # the guide's command that writes it, run here into another file: a pin for every declared dependency, each the
    # installed version
    from importlib.metadata import version

    from support.hpc_guide import guide_command

    cmd = guide_command("python envs/freeze_constraints.py > envs/constraints.txt", {"python": sys.executable})
    assert cmd[-2:] == [">", "envs/constraints.txt"], cmd
    fresh = subprocess.run(cmd[:-2], cwd=REPO, capture_output=True, text=True, check=True).stdout
    frozen = dict(line.split("==", 1) for line in fresh.splitlines() if line.strip() and not line.startswith("#"))
    frozen = {canonicalize_name(k): v for k, v in frozen.items()}
    for text in wanted:
        name = canonicalize_name(Requirement(text).name)
        assert frozen.get(name) == version(name), (name, frozen.get(name))


def test_profile_polls_sacct_gently():
    """Status checks (one sacct call for all the run's jobs) no more often than every 30 s, as site guides ask; the
    plugin's growing wait is capped there by sojourn (end_jobs_slurm_ended), so a job's end is seen within it."""
    profile = yaml.safe_load((PROFILE / "profile.yaml").read_text())
    assert 30 <= profile["seconds-between-status-checks"] <= 60
    assert profile["slurm-status-command"] == "sacct"
