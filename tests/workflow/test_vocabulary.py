"""One vocabulary end to end (issue 33 item 3): R, rho, mu from the config to the models, one run-window block in
every study, ρ carried as one float from the config to the model and the dataset coordinate, old keys refused in
one line that names the new one."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from sojourn.core.checks.config import ConfigError, validate_config
from sojourn.core.laws.seeds import spec_hash
from sojourn.jsq_ps.model import JSQPS

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"
DEFAULT = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def section(study: str, change: dict | None = None) -> dict:
    """The default config's section of ``study`` with ``change`` merged in, validated (the schema's defaults)."""
    from support.configs import deep_update

    cfg = copy.deepcopy(DEFAULT[study])
    deep_update(cfg, change or {})
    return validate_config(cfg, SCHEMAS / f"{study}.schema.yaml", study)


def test_the_load_walks_as_one_float_from_config_to_model_and_coordinate():
    """config float -> (rounded once) Cell coordinate -> model (R, rho, mu) -> λ: no string form read back."""
    from sojourn.jsq_ps import config as G
    from sojourn.jsq_ps.blocks import SimulationBlock

    cfg = section("jsq_ps", {"grid": {"R": [10], "rho": [0.95], "mu": 2.0}, "mgr": {"laws": []}})
    (key, rhos), = G.blocks(cfg).simulation.items()
    assert key == ("exponential", 10, "0.90-1.00") and rhos == [0.95] and type(rhos[0]) is float
    step = SimulationBlock("exponential", "exponential", 10, rhos, 2.0, cfg["simulation"], cfg["time_grid"], "c")
    (cell,) = step.cells()
    spec = cell.args[0]
    assert cell.coords == {"service": "exponential", "R": 10, "rho": 0.95}
    assert (spec.R, spec.rho, spec.service_rate) == (10, pytest.approx(0.95), 2.0)
    assert spec.arrival_rate == pytest.approx(0.95 * 10 * 2.0)  # λ = ρ R μ


def test_streams_are_those_of_every_release_before_the_rename():
    """The model's field is R now; a replication's stream is still derived from the spec's JSON with R named
    servers (JSQPS.seed_json), so the rename moved no result; a spec stored before the rename still reads."""
    spec = JSQPS.from_rho(3, 0.8, service="lognormal", dispatch="jsq-d", choices=2)
    stored = json.loads(spec.to_json())
    assert stored["R"] == 3 and "servers" not in stored
    before = {("servers" if k == "R" else k): v for k, v in stored.items()}
    assert spec_hash(spec) == spec_hash(json.dumps(before, sort_keys=True))
    assert JSQPS.from_dict(before) == spec


def test_one_run_window_block_in_every_study():
    """simulation.window {length, warmup, cooldown} in each study; an experiment's or example's window replaces the
    keys it gives, the others come from the study's."""
    from sojourn.restart.config import sim_kwargs
    from sojourn.split_merge.config import cells

    jsq = section("jsq_ps")
    assert jsq["simulation"]["window"] == {"length": 20000, "warmup": 1000, "cooldown": 1000}
    sm = section("split_merge", {"simulation": {"window": {"length": 4000, "warmup": 300}},
                                 "experiment_b": {"window": {"length": 1000}}})
    a, b = cells(sm, "a")[0], cells(sm, "b")[0]
    assert (a["workunits"], a["warmup"]) == (100000, 10000)  # its own window
    assert (b["workunits"], b["warmup"]) == (1000, 300)  # its length, the study's warm-up
    sm["experiment_b"]["window"] = {}
    assert (cells(sm, "b")[0]["workunits"], cells(sm, "b")[0]["warmup"]) == (4000, 300)  # the study's window
    assert {(c["workunits"], c["warmup"]) for c in cells(sm, "c") if c["model"] == "fork_join"} == {(5000, 500)}
    rs = section("restart")
    kw = {name: sim_kwargs(rs["simulation"], rs["time_grid"], ex) for name, ex in rs["examples"].items()}
    assert (kw["example1"]["horizon"], kw["example1"]["warmup"]) == (1.2e6, 10000.0)  # its length, the study's
    assert (kw["example2"]["horizon"], kw["example2"]["warmup"]) == (150000.0, 2000.0)


@pytest.mark.parametrize("study, old, line", [
    ("jsq_ps", {"simulation": {"horizon": 5000}},
     "jsq_ps.simulation.horizon: this key has moved: jsq_ps.simulation.window.length"),
    ("jsq_ps", {"simulation": {"warmup": 100}}, "jsq_ps.simulation.warmup: this key has moved: "
     "jsq_ps.simulation.window.warmup"),
    ("split_merge", {"experiment_a": {"load": 0.5}},
     "split_merge.experiment_a.load: this key has moved: split_merge.<experiment>.rho"),
    ("split_merge", {"experiment_c": {"workunits": 100}}, "split_merge.experiment_c.workunits: this key has moved: "
     "window.length"),
    ("split_merge", {"experiment_c": {"fork_join": {"warmup": 10}}},
     "split_merge.experiment_c.fork_join.warmup: this key has moved: split_merge.experiment_c.fork_join.window.warmup"),
    ("restart", {"examples": {"example2": {"cooldown": 10}}},
     "restart.examples.example2.cooldown: this key has moved: restart.examples.<name>.window.cooldown"),
])
def test_an_old_key_is_refused_in_one_line_naming_the_new_one(study, old, line):
    with pytest.raises(ConfigError) as err:
        section(study, old)
    assert str(err.value).startswith(line) and "\n" not in str(err.value)
