"""Faithful A–F against the authors' stored F(t): every point of tests/jsq_ps/data/authors_cdf_points.csv
(12 cells, 108 points, copied from geraintpalmer/aggregated-vs-parallel-ps experiments/sweep/method?/…csv;
jsq_ps_methods.md §3.2 and §3.7 as corrected), to 1e-10 absolute.

Conventions the file pins down (a power control below shows the file rejects the alternatives):
λ_n = λ_{L1−1} for n ≥ L1−1; birth–death A_n (B, C, E, F) summed over n = 0..L2−1 (all 130 terms);
A's chain A_n stops at L1.
"""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sojourn.core.checks.timegrid import time_grid
from sojourn.jsq_ps.solve.chain import extend_lambdas, solve_chain
from sojourn.jsq_ps.solve.conditional_survival import expm_tails, recurrence_survival_faithful
from sojourn.jsq_ps.solve.methods import method_cdf
from sojourn.jsq_ps.solve.occupancy import birth_death_occupancy

POINTS = pd.read_csv(Path(__file__).parent / "data" / "authors_cdf_points.csv")
CELLS = sorted({(m, int(R), float(rho), int(L1)) for m, R, rho, L1 in
                POINTS[["method", "R", "rho", "L1"]].itertuples(index=False)})


def test_fixture_is_complete():
    assert len(POINTS) == 108 and len(CELLS) == 12
    assert set(POINTS["method"]) == set("ABCDEF")


@pytest.mark.parametrize("method,R,rho,L1", CELLS)
def test_faithful_reproduces_authors_points(method, R, rho, L1):
    g = POINTS[(POINTS.method == method) & (POINTS.R == R) & (POINTS.rho == rho)]
    t = g["t"].to_numpy(float)
    # at the listed t (one expm per point) and on the published 0.01 grid (expm stepping)
    r = method_cdf(method, R * rho, 1.0, R, t, L1=L1, L2=130)
    np.testing.assert_allclose(r.cdf, g["F"].to_numpy(), rtol=0, atol=1e-10)
    grid = time_grid(float(t.max()), 0.01)
    rg = method_cdf(method, R * rho, 1.0, R, grid)  # Table 4 L1 and L2 = 130 by default
    assert rg.L1 == L1 and rg.L2 == 130
    np.testing.assert_allclose(rg.cdf[np.rint(t / 0.01).astype(int)], g["F"].to_numpy(), rtol=0, atol=1e-10)


def test_extend_lambdas_holds_the_last_chain_value():
    raw = np.array([0.9, 0.4, 0.2])
    np.testing.assert_array_equal(extend_lambdas(raw, 6), [0.9, 0.4, 0.2, 0.2, 0.2, 0.2])
    np.testing.assert_array_equal(extend_lambdas(raw, 2), [0.9, 0.4])


def _variant(method, R, rho, L1, t, hold, top, L2=130):
    """Chain-based methods with a chosen λ hold (index held from) and sum range ``top``."""
    raw = solve_chain(R * rho, 1.0, R, L1)
    lam = np.r_[raw.lambda_n[:hold], np.full(L2 - hold, raw.lambda_n[hold])]
    A = np.pad(raw.A_n, (0, L2 - L1)) if method in "AD" else birth_death_occupancy(lam, 1.0, L2)
    A = np.where(np.arange(L2) < top, A, 0.0)
    if method in "ABC":
        return 1.0 - expm_tails(lam, 1.0, L2, t) @ A
    return 1.0 - recurrence_survival_faithful(lam, 1.0, L2, t, A)


@pytest.mark.parametrize("method,R,rho,L1", [c for c in CELLS if c[0] in "ABDE"])
def test_power_control_rejects_the_old_conventions(method, R, rho, L1):
    """The same fixture accepts the corrected conventions and rejects the earlier edition's: hold from
    λ_{L1−2} (all chain methods) and the B sum cut at n < L1 (where they change anything)."""
    g = POINTS[(POINTS.method == method) & (POINTS.R == R) & (POINTS.rho == rho)]
    t, F = g["t"].to_numpy(float), g["F"].to_numpy()
    right = _variant(method, R, rho, L1, t, hold=L1 - 1, top=130)
    assert np.max(np.abs(right - F)) <= 1e-10
    old_hold = _variant(method, R, rho, L1, t, hold=max(L1 - 2, 0), top=130)
    moved = np.max(np.abs(old_hold - F))
    if R == 1:  # one server: the chain's λ_n = Λ for every n, the hold cannot matter
        assert moved <= 1e-10
    else:  # every other chain cell of the fixture sits where the tail matters
        assert moved > 1e-5, moved
    if method == "B":
        assert np.max(np.abs(_variant(method, R, rho, L1, t, hold=L1 - 1, top=L1) - F)) > 1e-3
