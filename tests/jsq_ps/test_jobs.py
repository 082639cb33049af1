"""Pipeline pieces without Snakemake: shared corrected methods."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.solve.cell import SHARED_CORRECTED
from sojourn.jsq_ps.solve.cell import approximate_cell as _approximate_task


def test_shared_corrected_methods_equal_their_own_routes():
    """B*, D*, E* copied from A* and F* from C* (approximation.share_corrected) agree with computing each
    name by its own route (expm vs uniformisation, chain vs birth–death A_n) to 1e-9."""
    t = time_grid(40.0, 0.01)
    methods = ("A", "A*", "B*", "C*", "D*", "E*", "F*")
    shared = _approximate_task(2, 0.8, 1.0, methods, t, {"L1": 22, "L2": 130}, share_corrected=True)
    own = _approximate_task(2, 0.8, 1.0, methods, t, {"L1": 22, "L2": 130}, share_corrected=False)
    assert shared["approximation"].values.tolist() == list(methods)
    for m, src in SHARED_CORRECTED.items():
        np.testing.assert_array_equal(shared["cdf"].sel({"approximation": m}).values,
                                      shared["cdf"].sel({"approximation": src}).values)
    np.testing.assert_allclose(shared["cdf"].values, own["cdf"].values, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(shared["cdf"].sel({"approximation": "A"}).values,
                                  own["cdf"].sel({"approximation": "A"}).values)
    assert json.loads(shared.attrs["shared_corrected"]) == SHARED_CORRECTED
    assert "shared_corrected" not in own.attrs


def test_a_cell_of_T_alone_or_with_exact_takes_the_config_truncations_without_complaint():
    """The pipeline passes the faithful methods' L1, L2 to every cell; T (like exact) sizes its own state space and
    runs in the second group: a configuration with T alone, or with exact, computes (T's CDF the same either way)."""
    t = time_grid(30.0, 0.05)
    alone = _approximate_task(3, 0.7, 1.0, ("T",), t, {"L1": 22, "L2": 130})
    both = _approximate_task(3, 0.7, 1.0, ("exact", "T", "A"), t, {"L1": 22, "L2": 130})
    assert alone["approximation"].values.tolist() == ["T"] and int(alone["valid"].item()) == 1
    assert both["approximation"].values.tolist() == ["exact", "T", "A"]
    np.testing.assert_array_equal(alone["cdf"].sel({"approximation": "T"}).values,
                                  both["cdf"].sel({"approximation": "T"}).values)
    assert np.all(both["cdf"].sel({"approximation": "T"}).values
                  <= both["cdf"].sel({"approximation": "exact"}).values + 1e-12)


def _environ(name):
    import os

    return os.environ.get(name)


def test_local_workers_keep_glibcs_adaptive_malloc():
    """LocalCluster workers do not get Dask's MALLOC_TRIM_THRESHOLD_=65536 (it made large temporary
    arrays page-fault on every allocation); the other pre-spawn settings (single-threaded BLAS) stay."""
    from sojourn.core.cluster.cluster import dask_client

    with dask_client({"kind": "local"}, 1) as client:
        assert client.submit(_environ, "MALLOC_TRIM_THRESHOLD_", pure=False).result() is None
        assert client.submit(_environ, "OMP_NUM_THREADS", pure=False).result() == "1"


def test_slurm_scheduler_listens_where_the_workers_can_reach_it():
    from sojourn.core.cluster.cluster import scheduler_host

    assert scheduler_host("10.1.2.3", ["n1", "n2"], {"login"}) == "10.1.2.3"  # routable: as the name resolves
    assert scheduler_host("127.0.1.1", ["vm"], {"vm", "localhost"}) == "127.0.0.1"  # single-node cluster
    assert scheduler_host("127.0.0.1", ["vm.example.org"], {"vm"}) == "127.0.0.1"
    with pytest.raises(ValueError, match=r"cluster\.slurm\.interface.*node1, node2"):
        scheduler_host("127.0.0.1", ["node1", "node2", "vm"], {"vm"})
