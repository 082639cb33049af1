"""Exact means exact (issue 26), split-merge: the QBD truncates no level; its value is exact only where G reaches
its precision (sojourn.split_merge.solve)."""
from __future__ import annotations

import numpy as np

from sojourn.cli import main


def test_split_merge_qbd_is_exact_only_within_its_tolerance():
    """q = 1, exponential replicas: the QBD against Erlang C (closed form). Its error estimate, G's row-sum defect
    over (1 - rho), follows the true error; beyond QBD_RTOL the value is not exact (NaN, 'none', is_exact 0)."""
    from sojourn.split_merge.model import SplitMerge
    from sojourn.split_merge.order_stats import order_statistic_ph
    from sojourn.split_merge.solve import QBD_RTOL, erlang_c, exact_dataset, exact_results, mphc_qbd

    for load in (0.99, 0.9999, 1 - 1e-7):
        s = SplitMerge.from_rho(6, 2, 1, load, "exponential")
        res = mphc_qbd(s.arrival_rate, s.super_servers, *order_statistic_ph(s.replica_law, 1, 2))
        nu = 2 * s.replica_law.rate
        truth = erlang_c(3, s.arrival_rate / nu) / (3 * nu - s.arrival_rate)
        err = abs(res["mean_delay"] / truth - 1)
        assert res["converged"] and res["exact"] == (res["relative_error"] < QBD_RTOL), load
        assert err < 3 * res["relative_error"] + 1e-12, (load, err, res["relative_error"])
        assert res["exact"] or err > QBD_RTOL / 10, (load, err)
    assert not mphc_qbd(s.arrival_rate, 3, *order_statistic_ph(s.replica_law, 1, 2))["exact"]  # 1 - 1e-7: 2 %

    PH3 = "phasetype:alpha=0.5/0.3/0.2,T=-2/1/0.5|0.3/-1.5/0.2|0/0.4/-3"
    near = SplitMerge.from_rho(6, 2, 2, 1 - 1e-7, PH3)  # the QBD path (q = 2)
    e = exact_results(near)
    assert e["delay_method"] == "none" and not e["exact"] and np.isnan(e["mean_delay"]) and e["qbd_phases"] > 0
    assert e["qbd_relative_error"] > QBD_RTOL
    ds = exact_dataset(near)
    assert (
        int(ds["is_exact"]) == 0 and ds.attrs["qbd_relative_error"] > QBD_RTOL and ds.attrs["qbd_tolerance"] == QBD_RTOL
    )
    ok = exact_results(SplitMerge.from_rho(6, 2, 2, 0.9, PH3))
    assert ok["delay_method"] == "qbd" and ok["exact"] and ok["qbd_relative_error"] < 1e-11


def test_split_merge_qbd_not_converged_is_not_exact(monkeypatch, capsys):
    import sojourn.split_merge.solve as sm
    from sojourn.split_merge.model import SplitMerge

    s = SplitMerge.from_rho(6, 2, 2, 0.9, "hyperexponential")
    assert sm.exact_results(s)["exact"]
    monkeypatch.setattr(sm, "QBD_MAX_ITERATIONS", 2)  # the reduction stopped short of its tolerance
    e = sm.exact_results(s)
    assert not e["exact"] and e["delay_method"] == "none" and np.isnan(e["mean_delay"])
    monkeypatch.undo()
    assert main(["split-merge", "exact", "--hosts", "6", "--replicas", "2", "--quorum", "2", "--load", "0.99999",
                 "--replica-law", "hyperexponential"]) == 0
    out = capsys.readouterr().out
    assert "not available exactly: the QBD reached an estimated relative error" in out and "1e-09" in out


