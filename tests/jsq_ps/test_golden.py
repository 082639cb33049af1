"""Golden outputs: the simulation kernels' results for fixed seeds, pinned across commits.

Every output array of a few runs (both kernels, every dispatch, the three PS disciplines, several laws) is
hashed (sha256 of the raw bytes) and compared with tests/jsq_ps/data/golden_kernels.json, so that a change that
alters a single random draw or a floating-point operation of a kernel fails here. After a *deliberate*
change of the kernels' output, regenerate the file and say why in the commit:

    python tests/jsq_ps/test_golden.py --regenerate
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from sojourn.jsq_ps.model import JSQPS
from sojourn.jsq_ps.simulate import simulate

GOLDEN = Path(__file__).resolve().parent / "data" / "golden_kernels.json"
VARS = ("count", "overflow", "n_customers", "sum", "sumsq", "max", "occupancy_at_arrival",
        "mean_number_per_server", "events")

CASES = {
    "MM3-jsq-0.8": (dict(R=3, rho=0.8), "auto"),
    "MM10-jsq-0.95": (dict(R=10, rho=0.95), "auto"),
    "MM1-0.5-general": (dict(R=1, rho=0.5), "general"),
    "lognormal-R3-0.8": (dict(R=3, rho=0.8, service="lognormal"), "auto"),
    "uniform-R2-0.9": (dict(R=2, rho=0.9, service="uniform"), "auto"),
    "deterministic-jsqd2-R4": (dict(R=4, rho=0.7, service="deterministic", dispatch="jsq-d", choices=2), "auto"),
    "gamma-limited2-R3": (dict(R=3, rho=0.85, service="gamma", discipline="limited", ps_limit=2), "auto"),
    "hyperexp-capacitated2-R2": (dict(R=2, rho=0.8, service="hyperexponential", discipline="capacitated",
                                      ps_threshold=2.0), "auto"),
    "erlang-roundrobin-R5": (dict(R=5, rho=0.6, service="erlang", dispatch="round-robin"), "auto"),
    "MM3-random-0.9": (dict(R=3, rho=0.9, dispatch="random"), "auto"),
    "phasetype-R2-0.7": (dict(R=2, rho=0.7, service="phasetype:alpha=0.6/0.4,T=-3/1|0.5/-2"), "auto"),
}


def _run(name):
    kw, kernel = CASES[name]
    kw = dict(kw)
    spec = JSQPS.from_rho(kw.pop("R"), kw.pop("rho"), **kw)
    ds = simulate(spec, horizon=3_000.0, warmup=100.0, replications=2, seed=7, kernel=kernel, t_max=50.0, dt=0.01)
    out = {}
    for v in VARS:
        a = np.ascontiguousarray(ds[v].values)
        out[v] = hashlib.sha256(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes()).hexdigest()
    out["n_customers_values"] = ds["n_customers"].values.tolist()
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernel_outputs_are_the_golden_ones(name):
    golden = json.loads(GOLDEN.read_text())
    assert name in golden, f"no golden output for {name}: python tests/jsq_ps/test_golden.py --regenerate"
    got = _run(name)
    want = golden[name]
    assert got["n_customers_values"] == want["n_customers_values"], name
    for v in VARS:
        assert got[v] == want[v], (
            f"{name}: {v} changed (a deliberate change? python tests/jsq_ps/test_golden.py --regenerate)"
        )


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit(__doc__)
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps({name: _run(name) for name in sorted(CASES)}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN} ({len(CASES)} cases)")
