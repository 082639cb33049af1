"""Model spec and model files: invalid inputs are rejected with the field named."""
from __future__ import annotations

import json

import pytest
import yaml

from sojourn.restart.files import load_model
from sojourn.restart.model import JobClass, Network, Queue, model_from_dict
from sojourn.restart.solve import solve


def ok_class(**kw):
    d = dict(name="a", rates=(2.0, 3.0), H=((0.0, 0.5), (0.0, 0.0)), arrival_rate=0.1, success=(1.0, 0.5),
             restart_to="a")
    d.update(kw)
    return JobClass(**d)


@pytest.mark.parametrize("kw, field", [
    (dict(rates=(2.0, -1.0)), "classes[a].service.rates[1]"),
    (dict(arrival_rate=-0.1), "classes[a].arrival_rate"),
    (dict(H=((0.0, 0.7), (0.6, 0.5))), "classes[a].service.H[1] must sum to at most 1"),
    (dict(H=((0.0, 1.2), (0.0, 0.0))), "classes[a].service.H[0][1]"),
    (dict(H=((0.0, 1.0), (1.0, 0.0))), "classes[a].service"),  # no exit: service never ends
    (dict(success=(1.2, 0.5)), "classes[a].success[0]"),
    (dict(success=(-0.1, 0.5)), "classes[a].success[0]"),
    (dict(success=(1.0,)), "classes[a].success must have 2 entries"),
    (dict(entry=(0.5, 0.6)), "classes[a].service.entry must sum to 1"),
    (dict(restart_to={"a": 0.5}), "classes[a].restart_to probabilities must sum to 1"),
    (dict(restart_to=()), "classes[a].restart_to is required"),
])
def test_invalid_class_names_the_field(kw, field):
    with pytest.raises(ValueError, match=__import__("re").escape(field)):
        ok_class(**kw)


def test_invalid_queue_and_network():
    with pytest.raises(ValueError, match=r"queues\[q\]\.signal_rate"):
        Queue("q", (ok_class(),), signal_rate=-1.0)
    with pytest.raises(ValueError, match=r"restart_to: unknown class 'b'"):
        Queue("q", (ok_class(restart_to="b"),))
    with pytest.raises(ValueError, match=r"queues\[q\]\.restart must be one of"):
        Queue("q", (ok_class(),), restart="resume")
    q = Queue("q", (ok_class(),))
    with pytest.raises(ValueError, match=r"routing\[0\]\.to: unknown queue 'x'"):
        Network((q,), routing=(("q", "a", "x", "a", 0.5),))
    with pytest.raises(ValueError, match=r"signals\[0\]\.probability must be in \[0, 1\]"):
        Network((q,), signals=(("q", "a", "q", 1.5),))
    with pytest.raises(ValueError, match="out of queue 'q' class 'a' must sum to at most 1"):
        Network((q,), routing=(("q", "a", "q", "a", 0.6),), signals=(("q", "a", "q", 0.6),))


def test_unstable_model_names_the_queue():
    heavy = Network((Queue("srv", (ok_class(arrival_rate=2.0),), signal_rate=0.5),))
    with pytest.raises(ValueError, match=r"queues\[srv\]: unstable, load sum of rho = .* >= 1"):
        solve(heavy)


def test_routing_cycle_without_exit_is_rejected():
    q = Queue("q", (ok_class(),))
    with pytest.raises(ValueError, match="routing: .* never leave"):
        solve(Network((q,), routing=(("q", "a", "q", "a", 1.0),)))


def test_non_converging_fixed_point_is_rejected():
    a = JobClass("A", rates=(3.0,), arrival_rate=0.3, success=1.0, restart_to="B")
    b = JobClass("B", rates=(1.0,), success=0.0)
    net = Network((Queue("q", (a, b), signal_rate=0.1),), signals=(("q", "A", "q", 1.0),))
    assert solve(net).iterations > 3
    with pytest.raises(ValueError, match="max_iterations: the signal fixed point .* did not converge"):
        solve(net, max_iterations=3)


def test_model_file_round_trip_and_schema_errors(tmp_path):
    net = load_model("example3")
    d = json.loads(net.to_json())
    d.pop("model")  # the description stored beside the spec
    assert model_from_dict(d) == net
    d = yaml.safe_load(open(__import__("sojourn.restart.files", fromlist=["x"]).EXAMPLES_DIR / "example2.yaml"))
    d["queues"][0]["classes"][1]["arival_rate"] = 0.1  # typo
    with pytest.raises(ValueError, match=r"queues\[0\]\.classes\[1\]: Additional properties"):
        model_from_dict(d)
    d = yaml.safe_load(open(__import__("sojourn.restart.files", fromlist=["x"]).EXAMPLES_DIR / "example2.yaml"))
    d["queues"][0]["classes"][0]["arrival_rate"] = 0.8  # rho = 0.8 E[S_eff](g = 1) = 1.15
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(d))
    with pytest.raises(ValueError, match=r"queues\[server\]: unstable"):
        load_model(p)
    assert load_model(p, check_stable=False).arrival_rate == 0.8
    with pytest.raises(ValueError, match="model must be a YAML model file or one of"):
        load_model(tmp_path / "missing.yaml")
