"""Exact means exact (issue 26), restart: the product form has no state-space truncation; its one cut-off, the
signal fixed point, never stops silently (sojourn.restart.solve)."""
from __future__ import annotations

import numpy as np
import pytest


def test_restart_fixed_point_stops_only_at_its_tolerance():
    """E[N_i] = rho_i/(1 - rho_i) sums the geometric law in closed form (no state-space cut); the fixed point of
    the signal rates (departures that become signals) is the only iteration: one iteration short of the number
    it needs raises, naming max_iterations; the solution it returns satisfies the traffic equations to its tol."""
    from sojourn.restart.model import JobClass, Network, Queue
    from sojourn.restart.solve import _departure_signals, solve

    a = JobClass("A", rates=(3.0,), arrival_rate=0.3, success=1.0, restart_to="B")
    b = JobClass("B", rates=(1.0,), success=0.0)
    net = Network((Queue("q", (a, b), signal_rate=0.1),), signals=(("q", "A", "q", 1.0),))
    for tol in (1e-6, 1e-10, 1e-14):
        sol = solve(net, tol=tol)
        G = sol.signal_rate
        residual = float(np.max(np.abs(net.layout.signal_ext + _departure_signals(net, sol.rho) - G)))
        assert residual <= tol * (1.0 + float(np.max(np.abs(G)))), (tol, residual)
        assert sol.iterations > 1
        with pytest.raises(ValueError, match="max_iterations"):
            solve(net, tol=tol, max_iterations=sol.iterations - 1)
        assert solve(net, tol=tol, max_iterations=sol.iterations).signal_rate == pytest.approx(G, rel=0, abs=0)
    rho = sol.queue_load[0]
    n = np.arange(20_000)
    assert sol.mean_number[0] == pytest.approx(np.sum(n * (1 - rho) * rho**n), rel=1e-12)  # no cut-off
