"""``sojourn restart {solve,simulate,optimise,schema}`` through the registered CLI."""
from __future__ import annotations

import numpy as np
import yaml

from sojourn.cli import main
from sojourn.core.files.io import read_netcdf


def test_solve_writes_product_form(tmp_path, capsys):
    out = tmp_path / "pf.nc"
    assert main(["restart", "solve", "--model", "example1", "--signal-rate", "0.5", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "network    E[T] = 0.99824163" in text and "closed form" in text
    assert abs(float(read_netcdf(out)["response_time"]) - 0.9982416294) < 1e-9


def test_simulate_and_bad_inputs(tmp_path, capsys):
    out = tmp_path / "sim.nc"
    assert main(["restart", "simulate", "--model", "example2", "--semantics", "timeout", "--timeout",
                 "deterministic:value=0.5", "--replications", "3", "--horizon", "20000", "--warmup", "1000",
                 "-o", str(out)]) == 0
    ds = read_netcdf(out)
    assert ds.attrs["semantics"] == "timeout" and ds.sizes["replication"] == 3
    assert "mean response time" in capsys.readouterr().out
    assert main(["restart", "simulate", "--model", "example2", "--signal-rate", "-1", "-o", str(out)]) == 2
    assert "--signal-rate must be in [0, inf)" in capsys.readouterr().err  # the flag, not the field (issue 26)
    m = tmp_path / "bad.yaml"
    m.write_text(yaml.safe_dump({"queues": [{"name": "q", "classes": [
        {"name": "a", "arrival_rate": 0.1, "service": {"rates": [1.0, 2.0], "H": [[0.5, 0.7], [0, 0]]},
         "restart_to": "a"}]}]}))
    assert main(["restart", "solve", "--model", str(m), "-o", str(out)]) == 2
    assert "queues[q].classes[a].service.H[0] must sum to at most 1" in capsys.readouterr().err


def test_optimise_prints_g_star_and_both_semantics(tmp_path, capsys):
    out = tmp_path / "opt.nc"
    assert main(["restart", "optimise", "--model", "example1", "--replications", "3", "--horizon", "200000",
                 "--warmup", "5000", "--taus", "0.6", "1.2", "2.4", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "g* = 0.8263" in text and "E[T](g*) = 0.978505" in text
    assert "simulated signal" in text and "simulated timeout_exponential" in text and "best tau" in text
    ds = read_netcdf(out)
    assert ds.sizes["tau"] == 3 and np.all(np.isfinite(ds["sim_response_time_half_width"].values))


def test_schema_prints(capsys):
    assert main(["restart", "schema"]) == 0
    assert "restart_to" in capsys.readouterr().out
