"""Pipeline config: JSON-schema validation with defaults, cross-field checks, grid and file naming, env file."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

import sojourn.jsq_ps.config as G
from sojourn.core.checks.config import ConfigError, validate_config
from support.configs import deep_update

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = str(ROOT / "workflow" / "schemas" / "config.schema.yaml")
STUDY_SCHEMA = str(ROOT / "workflow" / "schemas" / "jsq_ps.schema.yaml")


def load(name):
    return yaml.safe_load((ROOT / "config" / name).read_text())


def merged(*names):
    """Like snakemake --configfile: later files update the default config recursively."""
    out = {}
    for n in names:
        deep_update(out, load(n))
    return out


def validated(cfg):
    """As the Snakefile does: the top level, then the study's section against its own schema."""
    validate_config(cfg, SCHEMA)
    validate_config(cfg["jsq_ps"], STUDY_SCHEMA, "jsq_ps")
    return cfg


def checked(cfg):
    """The study section, validated and cross-checked."""
    validated(cfg)
    G.check_config(cfg["jsq_ps"])
    return cfg["jsq_ps"]


@pytest.mark.parametrize("names", [("config.yaml",), ("config.yaml", "paper.yaml"), ("config.yaml", "test.yaml")])
def test_shipped_configs_are_valid(names):
    checked(merged(*names))


def test_defaults_come_from_the_schema():
    top = {"jsq_ps": {"grid": {"R": [1], "rho": [0.5]}}}
    cfg = checked(top)
    assert top["results"] == "results" and cfg["enabled"] is True
    assert cfg["simulation"]["replications"] == 5 and cfg["simulation"]["seed"] == 0
    assert cfg["approximation"]["L1"] is None  # Table 4:
    assert [G.L1_for(cfg, R) for R in range(1, 11)] == [22, 22, 22, 13, 7, 5, 4, 3, 3, 2]
    assert cfg["approximation"]["L2"] == 130
    assert cfg["time_grid"] == {"dt": 0.01, "t_max": 182.32}
    assert top["cluster"]["kind"] == "local" and top["cluster"]["slurm"]["jobs"] is None
    from sojourn.core.cluster.cluster import slurm_jobs

    assert slurm_jobs(top["cluster"]["slurm"]) == (1, 2)  # adaptive between 1 and 2 worker jobs by default
    assert cfg["comparison"]["percentiles"] == [99, 99.9, 99.99, 99.999]


def test_paper_config_is_the_paper_grid():
    cfg = checked(merged("config.yaml", "paper.yaml"))
    cells = G.cells(cfg)
    expo = [c for c in cells if c.service == "exponential"]
    assert len(expo) == 990
    assert {c.R for c in expo} == set(range(1, 11))
    rhos = sorted({c.rho for c in expo})
    assert rhos[0] == 0.01 and rhos[-1] == 0.99 and len(rhos) == 99
    assert cfg["simulation"]["window"] == {"length": 160000, "warmup": 8000, "cooldown": 8000}
    assert cfg["simulation"]["replications"] == 10
    assert [G.L1_for(cfg, R) for R in range(1, 11)] == [22, 22, 22, 13, 7, 5, 4, 3, 3, 2]
    laws = G.service_laws(cfg)
    assert set(laws) == {"exponential", "uniform", "deterministic", "lognormal", "gamma", "triangular"}
    assert len(G.approximation_cells(cfg)) == 990


def test_rho_names_are_stable():
    cfg = checked({"jsq_ps": {"grid": {"R": [1], "rho_range": {"start": 0.05, "stop": 0.95, "step": 0.15}}}})
    rhos = [c.rho for c in G.cells(cfg)]
    assert rhos == [0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95]  # each the float nearest its 2-decimal value
    names = [G.block_label(r, 0.001, 2) for r in rhos]  # one cell per block: the file names
    assert all(re.fullmatch(r"0\.\d\d", n) for n in names)
    from sojourn.jsq_ps.naming import format_rho

    assert format_rho(0.1 + 0.2, 2) == "0.30"


def test_exact_at_every_R_within_its_budget():
    """exact is on every block's method axis; its budget (schema defaults filled in) decides per cell where it
    runs (tests/jsq_ps/test_solve_guards.py); the removed exact_max_servers is an unknown key."""
    cfg = checked(merged("config.yaml"))
    assert all("exact" in G.methods_for(cfg, R) for R in (1, 2, 3, 5, 10))
    assert G.exact_budget(cfg) == {"max_states": 2_000_000, "max_seconds": 10}
    cfg = merged("config.yaml")
    cfg["jsq_ps"]["approximation"]["exact_budget"] = {"max_seconds": 2}
    assert G.exact_budget(checked(cfg)) == {"max_states": 4_000_000, "max_seconds": 2}
    cfg["jsq_ps"]["approximation"]["exact_max_servers"] = 2
    with pytest.raises(Exception, match="exact_max_servers"):
        checked(cfg)


@pytest.mark.parametrize(
    "change, key",
    [
        ({"jsq_ps": {"simulation": {"horizonn": 5}}}, "jsq_ps.simulation.horizonn"),  # unknown key
        ({"bogus_section": 1}, "bogus_section"),
        ({"jsq_ps": {"bogus": 1}}, "jsq_ps.bogus"),
        ({"jsq_ps": {"simulation": {"replications": "five"}}}, "jsq_ps.simulation.replications"),  # type
        ({"jsq_ps": {"simulation": {"replications": 0}}}, "jsq_ps.simulation.replications"),  # range
        ({"jsq_ps": {"grid": {"rho": [0.5, 1.2]}}}, "jsq_ps.grid.rho[1]"),
        ({"jsq_ps": {"grid": {"R": [0]}}}, "jsq_ps.grid.R[0]"),
        ({"cluster": {"kind": "kubernetes"}}, "cluster.kind"),
        ({"jsq_ps": {"approximation": {"L2": 1}}}, "jsq_ps.approximation.L2"),
        ({"jsq_ps": {"enabled": "yes"}}, "jsq_ps.enabled"),
    ],
)
def test_schema_rejects_and_names_the_key(change, key):
    """The message starts with the full key path (sojourn.core.checks.config.validate_config, which the Snakefile
    calls; snakemake.utils.validate named only the last key, after the schema dump)."""
    cfg = merged("config.yaml")
    deep_update(cfg, change)
    with pytest.raises(ConfigError) as err:
        validated(cfg)
    assert str(err.value).startswith(key + ":")


@pytest.mark.parametrize(
    "change, key",
    [
        ({"simulation": {"window": {"length": 1000, "warmup": 500, "cooldown": 500}}},
         "jsq_ps.simulation.window.warmup"),
        ({"approximation": {"methods": ["A", "G"]}}, "jsq_ps.approximation.methods"),
        ({"mgr": {"laws": ["weibull"]}}, "jsq_ps.mgr.laws[0]"),
        ({"mgr": {"laws": ["uniform:low=3,high=1"]}}, "jsq_ps.mgr.laws[0]"),
        ({"grid": {"rho": [0.505]}}, "jsq_ps.grid.rho"),
        ({"grid": {"R": [1, 11]}, "approximation": {"L1": [22] * 10}}, "jsq_ps.approximation.L1"),
        ({"time_grid": {"dt": 5, "t_max": 1}}, "jsq_ps.time_grid.t_max"),
        ({"time_grid": {"dt": 0.03, "t_max": 1}}, "jsq_ps.time_grid.t_max must be a multiple of dt"),
        ({"figures": {"cdf_cells": [{"R": 4, "rho": 0.5}]}}, "jsq_ps.figures.cdf_cells[0]"),
    ],
)
def test_cross_field_checks_name_the_key(change, key):
    cfg = merged("config.yaml")
    deep_update(cfg, {"jsq_ps": change})
    validated(cfg)
    with pytest.raises(G.ConfigError) as err:
        G.check_config(cfg["jsq_ps"])
    assert str(err.value).startswith(key)


def _names_and_specs(reqs):
    out = {}
    for r in reqs:
        m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(.*)", r)
        out[m.group(1).lower().replace("_", "-")] = m.group(2).replace(" ", "")
    return out


def test_conda_env_mirrors_pyproject():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    want = _names_and_specs(py["dependencies"] + py["optional-dependencies"]["test"])
    env = yaml.safe_load((ROOT / "envs" / "sojourn.yaml").read_text())
    got = _names_and_specs([d for d in env["dependencies"] if isinstance(d, str)])
    got.pop("python", None)
    got.pop("pip", None)
    assert got == want


def _floors(specs, op):
    """{name: version} of requirement strings ``name<op>version`` (all of them must have that form)."""
    out = {}
    for r in specs:
        m = re.fullmatch(rf"\s*([A-Za-z0-9_.\-]+)\s*{re.escape(op)}\s*([0-9][0-9A-Za-z.]*)\s*", r)
        assert m, f"{r!r} is not name{op}version"
        out[m.group(1).lower().replace("_", "-")] = m.group(2)
    return out


def test_lowest_versions_are_the_declared_floors():
    """.ci/lowest-versions.txt (what CI's lowest-versions step installs and tests) pins exactly pyproject's
    floors, which envs/sojourn.yaml repeats; the Snakefile asks for the snakemake floor."""
    py = _floors(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"], ">=")
    lines = (ROOT / ".ci" / "lowest-versions.txt").read_text().splitlines()
    pins = _floors([x for x in lines if x.strip() and not x.startswith("#")], "==")
    env = yaml.safe_load((ROOT / "envs" / "sojourn.yaml").read_text())["dependencies"]
    conda = _floors([d for d in env if isinstance(d, str) and d.split(">")[0] in py], ">=")
    assert pins == py == conda
    snakefile = (ROOT / "Snakefile").read_text()
    assert re.search(r'^min_version\("([^"]+)"\)', snakefile, re.M).group(1) == py["snakemake"].removesuffix(".0")
