"""The fuzzer (issue 32 item 6): hostile values for every flag of every command and every key of every config
section, drawn by Hypothesis from the argparse parsers and the JSON schemas themselves (tests/support/fuzz.py), and
the property every one must keep: exit 0 with a valid output, or exit 2 with one line naming the flag (the key);
never a traceback; within a time bound (each command runs with ``--max-time 2s``) and a memory bound (the peak
resident memory of this process may grow by at most 500 MiB).

Commands run in this process (``sojourn.cli.main``, SystemExit caught, stdout and stderr captured); a few run as
the real console script, where isolation matters (the Ciw backend's worker processes, the watchdog). Profiles:
the default runs in the default test run (a few hundred examples, well under a minute); ``SOJOURN_CI=1``
(set by .ci/run) runs thousands. The defects it found are kept as explicit cases in
tests/workflow/test_guard.py.
"""
from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support import fuzz
from support.configs import deep_update

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"

settings.register_profile("sojourn-default", max_examples=120, deadline=None, derandomize=True,
                          suppress_health_check=list(HealthCheck), database=None)
settings.register_profile("sojourn-ci", max_examples=1500, deadline=None, derandomize=True,
                          suppress_health_check=list(HealthCheck), database=None)
#: CI's larger profile where SOJOURN_CI=1 (.ci/run sets it, as for the ci_only tests)
PROFILE = "sojourn-ci" if os.environ.get("SOJOURN_CI") == "1" else "sojourn-default"
#: config examples per CLI example (config checks are cheaper: they run no compute)
CONFIG_SHARE = 1.5

PARSERS = fuzz.leaf_parsers()


def test_every_command_has_a_baseline_and_every_flag_a_strategy():
    """New commands and flags are covered by construction: a command without a baseline invocation, or a flag
    whose kind has no strategy, fails here."""
    assert set(PARSERS) == set(fuzz.BASELINES), set(PARSERS) ^ set(fuzz.BASELINES)
    for parser in PARSERS.values():
        for action in fuzz.flags_of(parser):
            fuzz.flag_strategy(action)  # raises for a flag without a kind or a family without a strategy


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module", autouse=True)
def _warm(folder):
    """Every command's baseline once, so that the examples' time bound does not count loading numba's cache."""
    for path in sorted(fuzz.BASELINES):
        argv = [*path, *fuzz.BASELINES[path]]
        outcome = fuzz.run_in_process(argv, folder)
        assert outcome.status == 0, (argv, outcome.stderr[-2000:])


@settings(settings.get_profile(PROFILE))
@given(drawn=fuzz.command_lines(PARSERS))
def test_every_command_keeps_the_property_under_hostile_flags(drawn, folder):
    path, argv = drawn
    out = folder / "out.nc"
    if out.exists():
        out.unlink()
    fuzz.judge(path, argv, fuzz.run_in_process(argv, folder), folder)


# -- config keys ---------------------------------------------------------------------------------------------------
def _leaves():
    from sojourn.core.checks.config import load_schema

    top = load_schema(SCHEMAS / "config.schema.yaml")
    out = [(p, s) for p, s in fuzz.schema_leaves(top) if p.split(".")[0] not in ("jsq_ps", "split_merge", "restart")]
    for study in ("jsq_ps", "split_merge", "restart"):
        out += [(f"{study}.{p}", s) for p, s in fuzz.schema_leaves(load_schema(SCHEMAS / f"{study}.schema.yaml"))]
    return out


LEAVES = _leaves()
DEFAULT = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
TEST_CONFIG = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())


def test_every_config_key_has_a_strategy():
    assert len(LEAVES) > 100
    for _, schema in LEAVES:
        fuzz.key_strategy(schema)


def parse_like_the_snakefile(cfg: dict) -> None:
    """What the Snakefile and its rule files compute from a config before any job: the checks, then each enabled
    study's cells, blocks and targets (a dry run's work)."""
    from sojourn.core.checks.config import validate_config
    from sojourn.core.cluster.cluster import check_cluster

    validate_config(cfg, SCHEMAS / "config.schema.yaml")
    check_cluster(cfg["cluster"])
    for study in ("jsq_ps", "split_merge", "restart"):
        validate_config(cfg[study], SCHEMAS / f"{study}.schema.yaml", study)
    if cfg["jsq_ps"]["enabled"]:
        import sojourn.jsq_ps.config as G
        from sojourn.jsq_ps.plots import figures

        G.check_config(cfg["jsq_ps"])
        G.service_laws(cfg["jsq_ps"])
        G.blocks(cfg["jsq_ps"])
        figures(cfg["jsq_ps"], "figures")
    if cfg["split_merge"]["enabled"]:
        import sojourn.split_merge.config as S

        S.check_config(cfg["split_merge"])
        for x in S.EXPERIMENTS:
            if cfg["split_merge"][f"experiment_{x}"]["enabled"]:
                S.cells(cfg["split_merge"], x)
    if cfg["restart"]["enabled"]:
        from sojourn.restart.config import check_config

        check_config(cfg["restart"])


@settings(settings.get_profile(PROFILE), max_examples=int(settings.get_profile(PROFILE).max_examples * CONFIG_SHARE))
@given(drawn=st.sampled_from(LEAVES).flatmap(lambda leaf: st.tuples(st.just(leaf[0]), fuzz.key_strategy(leaf[1]))),
       base=st.sampled_from(["default", "test"]))
def test_every_config_key_keeps_the_property_under_hostile_values(drawn, base):
    """A config with one key set to a drawn value is either accepted by every check the Snakefile runs (and its
    cells and blocks computed), or refused by a ConfigError whose first line starts with a key path; nothing else,
    within the bounds."""
    from sojourn.core.checks.config import ConfigError

    key, value = drawn
    cfg = copy.deepcopy(DEFAULT)
    if base == "test":
        deep_update(cfg, copy.deepcopy(TEST_CONFIG))
    fuzz.set_key(cfg, key, copy.deepcopy(value))
    t0 = time.perf_counter()
    peak0 = fuzz._peak()
    try:
        parse_like_the_snakefile(cfg)
    except ConfigError as exc:
        lines = str(exc).splitlines()
        assert lines and len(lines) <= 9, (key, value, str(exc)[:2000])
        first = lines[0]
        assert first.split(":")[0].split(".")[0].split("[")[0] in ("results", "cluster", "jsq_ps", "split_merge",
                                                                  "restart", "(top level)"), (key, value, first)
        assert len(first) < 1200, (key, value, first)
    assert time.perf_counter() - t0 < fuzz.WALL_BOUND, (key, value)
    assert fuzz._peak() - peak0 < fuzz.MEMORY_BOUND, (key, value)


# -- the real console script, where isolation matters -------------------------------------------------------------
SUBPROCESS = [
    ["simulate", "-R", "2", "--load", "0.5", "--horizon", "300", "--replications", "2", "--backend", "ciw",
     "--dt", "0.1", "--t-max", "10", "--max-time", "30s", "-o", "{out}"],
    ["simulate", "-R", "2", "--load", "0.5", "--backend", "ciw", "--horizon", "1e9", "-o", "{out}"],
    ["restart", "simulate", "-m", "example1", "--horizon", "1e300", "-o", "{out}"],
    ["plan", "--arrival-rate", "1e300/s", "--mean-service", "1.2ms", "--deadline", "72ms", "--reliability", "0.9999",
     "--max-servers", str(2**63 - 1)],
]


@pytest.mark.parametrize("argv", SUBPROCESS, ids=["ciw", "ciw-horizon", "restart-horizon", "plan-extreme"])
def test_the_console_script_keeps_the_property(argv, tmp_path):
    """The installed script in a child process: its exit status, its one line, its wall time and its peak memory
    (the child's maximum resident set) within the bounds."""
    import resource

    args = [a.replace("{out}", str(tmp_path / "out.nc")) for a in argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "sojourn.cli", *args], capture_output=True, text=True,
                       check=False, timeout=fuzz.WALL_BOUND * 4)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    outcome = fuzz.Outcome(r.returncode, r.stdout, r.stderr, seconds, 0.0)
    fuzz.judge(tuple(argv[:2]), argv, outcome, tmp_path)
    assert peak <= fuzz.MEMORY_BOUND + 400 * 2**20 or before * 1024 >= peak, f"child peak {peak / 2**20:.0f} MiB"
