"""sojourn.jsq_ps.reproduction: the paper's §6 tables side by side with ours (reference jsq_ps_methods.md §6).

A synthetic comparison dataset with hand-set Wasserstein distances and percentile errors checks the
selection and agreement logic cell by cell; a real one from tiny simulations checks the whole path
(compare → reproduce → files)."""
from __future__ import annotations

import docutils.core
import docutils.utils
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from sojourn.core.checks.timegrid import time_grid
from sojourn.core.files.io import read_netcdf
from sojourn.jsq_ps.compare import compare
from sojourn.jsq_ps.model import JSQPS
from sojourn.jsq_ps.plots import FIGURES
from sojourn.jsq_ps.reproduction import (
    ABSENT,
    DISAGREE,
    SAME,
    TIE,
    largest_disagreements,
    paper_best_map,
    paper_tables,
    report_html,
    report_text,
    reproduce,
    write_reproduction,
)
from sojourn.jsq_ps.simulate import simulate
from sojourn.jsq_ps.solve import approximate_all

METHODS = ["A", "B", "C", "D", "E", "F", "A*", "C*", "exact", "T"]
RS = [1, 3, 10]
RHOS = [0.1, 0.333, 0.5, 0.9]
PCTS = [99.0, 99.9, 99.99, 99.999]
NK = 4


def _synthetic():
    """A comparison-shaped dataset: every W = 1 ± 0.05 (CI), percentile errors 5 ± 1; the cells below
    are then set by hand."""
    S, NR, NP, NM, NQ = 1, len(RS), len(RHOS), len(METHODS), len(PCTS)
    Wm = np.full((S, NR, NP, NM), 1.0)
    E = np.full((S, NR, NP, NM, NQ), 5.0)
    Q = np.full((S, NR, NP, NM, NQ), 0.5)
    fit = np.zeros((NR, NP, NM), np.int8)
    sim = np.broadcast_to(np.array([20.0, 21.0, 22.0, 23.0])[None, None, None, :, None], (S, NR, NP, NK, NQ)).copy()
    m = {x: i for i, x in enumerate(METHODS)}
    r = {x: i for i, x in enumerate(RS)}
    p = {x: i for i, x in enumerate(RHOS)}
    # (R=3, rho=0.5): the paper says D (best.csv); ours D as well -> same letter
    Wm[0, r[3], p[0.5], m["D"]] = 0.5
    # (R=10, rho=0.9): the paper says C; ours B, C's CI [0.55, 0.65] overlaps B's [0.45, 0.55]... tie
    Wm[0, r[10], p[0.9], m["B"]] = 0.5
    Wm[0, r[10], p[0.9], m["C"]] = 0.6
    # a corrected method better than every faithful one: must not change the faithful best or its ties
    Wm[0, r[10], p[0.9], m["A*"]] = 0.1
    # (R=1, rho=0.9): the paper says B; ours D, B's CI far above -> disagreement, gap 0.8
    Wm[0, r[1], p[0.9], m["D"]] = 0.2
    Wm[0, r[1], p[0.9], m["B"]] = 1.0
    # (R=3, rho=0.9): the paper says D; D has the smallest W but is fit_invalid -> never best, disagreement
    Wm[0, r[3], p[0.9], m["D"]] = 0.01
    Wm[0, r[3], p[0.9], m["E"]] = 0.3
    fit[r[3], p[0.9], m["D"]] = 4
    # (R=1, rho=0.5): nothing computed -> absent everywhere
    Wm[0, r[1], p[0.5], :] = np.nan
    E[0, r[1], p[0.5]] = np.nan
    Q[0, r[1], p[0.5]] = np.nan
    sim[0, r[1], p[0.5]] = np.nan
    # exact only at R = 1
    Wm[0, r[3]:, :, m["exact"]] = np.nan
    E[0, r[3]:, :, m["exact"]] = np.nan
    Q[0, r[3]:, :, m["exact"]] = np.nan
    # 99.99th at (R=10, rho=0.5): F has the smallest |error| among A–F (−1.5), A* among the corrected (1.0);
    # C's |error| is smaller still but C is fit_invalid there
    q = PCTS.index(99.99)
    E[0, r[10], p[0.5], m["F"], q] = -1.5
    E[0, r[10], p[0.5], m["A*"], q] = 1.0
    E[0, r[10], p[0.5], m["C"], q] = 0.01
    fit[r[10], p[0.5], m["C"]] = 1
    # relative error of the best-by-W method at (R=3, rho=0.5): D (set above) -> −0.2
    Q[0, r[3], p[0.5], m["D"], :] = -0.2
    # T, a family of its own: +0.1 % of a 25 time-unit percentile everywhere it ran (not at R = 1, rho = 0.5)
    E[0, :, :, m["T"]] = 0.025
    E[0, r[1], p[0.5], m["T"]] = np.nan
    dims4 = ("service", "R", "rho", "approximation")
    dq = dims4 + ("percentile",)
    return xr.Dataset(
        {"wasserstein_mean": (dims4, Wm), "wasserstein_ci_low": (dims4, Wm - 0.05),
         "wasserstein_ci_high": (dims4, Wm + 0.05),
         "percentile_error_mean": (dq, E), "percentile_error_ci_low": (dq, E - 1.0),
         "percentile_error_ci_high": (dq, E + 1.0),
         "relative_percentile_error_mean": (dq, Q), "relative_percentile_error_ci_low": (dq, Q - 0.1),
         "relative_percentile_error_ci_high": (dq, Q + 0.1),
         "fit_invalid": (("R", "rho", "approximation"), fit),
         "sim_percentile": (("service", "R", "rho", "replication", "percentile"), sim)},
        coords={"service": ["exponential"], "R": RS, "rho": RHOS, "approximation": METHODS,
                "replication": np.arange(NK), "percentile": PCTS})


@pytest.fixture(scope="module")
def rep():
    return reproduce(_synthetic())


def test_published_numbers_are_carried_exactly(rep):
    path = __import__("sojourn.jsq_ps", fromlist=["x"]).__path__[0] + "/data/paper_tables.csv"
    csv = pd.read_csv(path, comment="#")
    assert len(csv) == 40 + 40 + 84 + 28
    for row in csv.itertuples(index=False):
        if row.table in ("6.1", "6.2"):
            sel = {"pct_percentile": row.percentile, "pct_rho": row.rho, "pct_R": row.R}
            assert rep["paper_percentile_error"].sel(sel).item() == row.value
            assert rep["paper_percentile_method"].sel(sel).item() == ("" if pd.isna(row.method) else row.method)
        elif row.table == "6.3":
            sel = {"rel_percentile": row.percentile, "rel_rho": row.rho, "rel_R": row.R}
            assert rep["paper_relative_error"].sel(sel).item() == row.value
        else:
            assert rep["paper_sim_percentile_9999"].sel(rel_rho=row.rho, rel_R=row.R).item() == row.value
    # spot checks against the notes' tables (§6.1, §6.2, §6.3) themselves
    p = paper_tables()
    assert set(np.unique(p["pct_method"].values)) <= set("ABCDEF")  # every letter known
    assert p["pct_method"].sel(pct_percentile=99.99, pct_rho=0.9, pct_R=3).item() == "D"
    assert p["pct_error"].sel(pct_percentile=99.99, pct_rho=0.85, pct_R=1).item() == -56.60
    assert p["pct_method"].sel(pct_percentile=99.99, pct_rho=0.85, pct_R=1).item() == "D"
    assert p["pct_error"].sel(pct_percentile=99.99, pct_rho=0.5, pct_R=10).item() == 1.78  # the abstract's 1.78
    assert p["pct_error"].sel(pct_percentile=99.999, pct_rho=0.5, pct_R=1).item() == -4.70  # OJCOMS "< 4.7"
    assert p["rel_error"].sel(rel_percentile=99.99, rel_rho=0.8, rel_R=1).item() == 0.24
    assert p["sim_p9999"].sel(rel_rho=0.8, rel_R=1).item() == 104.95


def test_paper_best_map_matches_the_notes_summary():
    """990 cells; the §6.4 summary of the notes (an independent description of best.csv)."""
    b = paper_best_map()
    assert len(b) == 990 and set(b.values()) == set("BCDEF")
    assert all(b[(1, r / 100)] == "F" for r in range(12, 28))
    assert all(b[(1, r / 100)] == "D" for r in range(28, 51))
    assert all(b[(1, r / 100)] == "F" for r in range(51, 77))
    assert b[(1, 0.88)] == "F" and b[(1, 0.95)] == "C"
    assert all(b[(1, r / 100)] == "B" for r in range(89, 100) if r != 95)
    assert all(b[(2, r / 100)] == "D" for r in range(1, 71)) and b[(2, 0.71)] == "C" and b[(2, 0.72)] == "D"
    assert all(b[(2, r / 100)] == "E" for r in range(96, 100))
    for R, lo, hi in ((3, 76, 78), (4, 77, 80), (8, 57, 60), (9, 56, 61), (10, 64, 71)):  # the B bands
        assert all(b[(R, r / 100)] == "B" for r in range(lo, hi + 1)), R
    assert all(b[(R, r / 100)] == "E" for R in range(3, 11) for r in range(96, 100))


def test_shapes_and_absent_cells(rep):
    assert rep.sizes == {"family": 4, "pct_percentile": 2, "pct_rho": 8, "pct_R": 5, "rel_percentile": 3,
                         "rel_rho": 7, "rel_R": 4, "R": 3, "rho": 4}
    assert rep["family"].values.tolist() == ["faithful", "corrected", "exact", "T"]
    pe = rep["percentile_error"]
    # R = 5, 7 and rho = .25, .75, .85, .95, .99 are not in the run: NaN, not an error
    assert pe.sel(pct_R=[5, 7]).isnull().all() and pe.sel(pct_rho=[0.25, 0.75, 0.85, 0.95, 0.99]).isnull().all()
    assert pe.sel(pct_R=1, pct_rho=0.5).isnull().all()  # present in the grid, nothing computed
    assert (
        pe.sel(family="exact", pct_R=[3, 10]).isnull().all()
        and pe.sel(family="exact", pct_R=1, pct_rho=0.1).notnull().all()
    )
    assert (rep["paper_value_in_ci"].where(pe.isnull()).fillna(-1) == -1).all()
    t = pe.sel(family="T", pct_R=[1, 3, 10], pct_rho=[0.1, 0.5, 0.9])
    assert t.isnull().sum() == 2 and float(t.max()) == float(t.min()) == 0.025  # absent at (R = 1, rho = 0.5) only
    assert (
        rep["percentile_error_method"].sel(family="T").values == np.where(pe.sel(family="T").isnull(), "", "T")
    ).all()
    assert rep["agreement"].sel(R=1, rho=0.5).item() == ABSENT
    assert rep["agreement"].sel(rho=0.333).values.tolist() == [ABSENT] * 3  # not on the paper's grid
    assert rep["paper_best_method"].sel(rho=0.333).values.tolist() == [""] * 3
    assert rep["relative_error"].sel(rel_R=[6, 9]).isnull().all()


def test_agreement_logic(rep):
    ag = rep["agreement"]
    best = rep["best_method"].sel(family="faithful")
    assert best.sel(R=3, rho=0.5).item() == "D" and ag.sel(R=3, rho=0.5).item() == SAME
    # tie: the paper's C overlaps our B within A–F, although A* (corrected) is far better than both
    assert best.sel(R=10, rho=0.9).item() == "B" and ag.sel(R=10, rho=0.9).item() == TIE
    assert rep["best_method"].sel(family="corrected", R=10, rho=0.9).item() == "A*"
    assert best.sel(R=1, rho=0.9).item() == "D" and ag.sel(R=1, rho=0.9).item() == DISAGREE
    assert rep["wasserstein_gap"].sel(R=1, rho=0.9).item() == pytest.approx(0.8)
    # the paper's D is fit_invalid here: E is our best, a disagreement flagged as such
    assert best.sel(R=3, rho=0.9).item() == "E" and ag.sel(R=3, rho=0.9).item() == DISAGREE
    assert rep["paper_method_fit_invalid"].sel(R=3, rho=0.9).item() == 1
    present = int((ag != ABSENT).sum())
    agreeing = int(((ag == SAME) | (ag == TIE)).sum())
    assert rep.attrs["agreement_cells"] == present == 8  # 3 R x {0.1, 0.5, 0.9} minus the empty (1, 0.5)
    assert rep.attrs["agreement_share"] == pytest.approx(agreeing / present)
    assert rep.attrs["agreement_share_same_letter"] == pytest.approx(int((ag == SAME).sum()) / present)
    rows = largest_disagreements(rep)
    assert [(r["R"], r["rho"]) for r in rows][:1] == [(1, 0.9)] and {(r["R"], r["rho"]) for r in rows} == {
        (1, 0.9),
        (3, 0.9),
    }


def test_percentile_and_relative_selection(rep):
    sel = dict(pct_percentile=99.99, pct_rho=0.5, pct_R=10)
    assert rep["percentile_error_method"].sel(family="faithful", **sel).item() == "F"  # C is fit_invalid
    assert rep["percentile_error"].sel(family="faithful", **sel).item() == -1.5
    assert rep["percentile_error_ci_low"].sel(family="faithful", **sel).item() == -2.5
    assert rep["percentile_error_method"].sel(family="corrected", **sel).item() == "A*"
    assert rep["paper_percentile_error"].sel(sel).item() == 1.78
    assert rep["paper_value_in_ci"].sel(family="faithful", **sel).item() == 0  # 1.78 outside [-2.5, -0.5]
    assert rep["paper_value_in_ci"].sel(family="corrected", **sel).item() == 1  # inside [0, 2]
    # our error of the paper's letter (99.99th, R=3, rho=0.5: B)
    assert rep["percentile_error_paper_method"].sel(pct_percentile=99.99, pct_rho=0.5, pct_R=3).item() == 5.0
    rel = rep["relative_error"].sel(family="faithful", rel_rho=0.5, rel_R=3)
    assert rep["relative_error_method"].sel(family="faithful", rel_rho=0.5, rel_R=3).item() == "D"
    assert np.allclose(rel.values, -0.2)
    assert rep["sim_percentile_9999"].sel(rel_rho=0.5, rel_R=3).item() == pytest.approx(21.5)
    lo, hi = (
        rep[v].sel(rel_rho=0.5, rel_R=3).item() for v in ("sim_percentile_9999_ci_low", "sim_percentile_9999_ci_high")
    )
    assert lo < 21.5 < hi


def _rst_problems(text):
    doc = docutils.core.publish_doctree(text, settings_overrides={"report_level": 5, "halt_level": 5})
    return [m for m in doc.findall(docutils.nodes.system_message) if m["level"] >= 2]


def test_report_text(rep):
    for fmt in ("rst", "markdown"):
        text = report_text(rep, fmt)
        assert "-56.60 (D)" in text and "1.78" in text and "104.95" in text
        assert f"{100 * rep.attrs['agreement_share']:.1f} %" in text
        assert "5.00 [4.00, 6.00] (A)" in text  # an ordinary cell: mean [CI] (method)
    assert _rst_problems(report_text(rep, "rst")) == []
    with pytest.raises(ValueError, match="fmt"):
        report_text(rep, "html")


def test_write_reproduction_files(tmp_path):
    cmp_path = tmp_path / "comparison.nc"
    _synthetic().to_netcdf(cmp_path)
    out = write_reproduction(cmp_path, tmp_path / "reproduction.nc", tmp_path / "figures", {"formats": ["png", "pdf"]},
                             report_path=tmp_path / "reproduction.rst")
    names = {p.name for p in out}
    stems = [f.stem for f in FIGURES if f.job == "reproduction"]
    assert len(stems) == 3
    assert names == {"reproduction.nc", "reproduction.rst"} | {f"{s}.{f}" for s in stems for f in ("png", "pdf", "rst")}
    got = read_netcdf(tmp_path / "reproduction.nc")
    want = reproduce(_synthetic())
    for v in want.data_vars:
        np.testing.assert_array_equal(got[v].values, want[v].values, err_msg=v)
    assert got.attrs["agreement_share"] == want.attrs["agreement_share"] and "git_commit" in got.attrs
    assert (tmp_path / "reproduction.rst").read_text(encoding="utf-8") == report_text(want, "rst")
    html = report_html(want).decode("utf-8")
    assert html.count("<table") == len(report_text(want, "rst").split(".. csv-table::")) - 1 and "-56.60 (D)" in html
    with pytest.raises(ValueError, match="report_path"):  # before any work
        write_reproduction(cmp_path, tmp_path / "r3.nc", tmp_path / "fig3", {"formats": ["png"]},
                           report_path=tmp_path / "reproduction.txt")


@pytest.fixture(scope="module")
def real_comparison():
    """compare() of tiny simulations (R = 1, 3; rho = .1, .5; 3 replications) with the methods run on the paper grid."""
    t = time_grid()
    Rs, rhos, methods = [1, 3], [0.1, 0.5], ["A", "B", "C", "D", "E", "F", "A*", "C*", "exact", "T"]
    count, overflow = [], []
    cdf = np.full((len(Rs), len(rhos), len(methods), t.size), np.nan)
    for i, R in enumerate(Rs):
        cs, os_ = [], []
        for j, rho in enumerate(rhos):
            spec = JSQPS.from_rho(R, rho)
            s = simulate(spec, horizon=1500.0, warmup=100.0, replications=3, seed=3)
            cs.append(s["count"].values)
            os_.append(s["overflow"].values)
            run = [m for m in methods if m != "exact" or R == 1]
            for group in ([m for m in run if m in "ABCDEF"], [m for m in run if m not in "ABCDEF"]):
                ds = approximate_all(spec, group, t=t)
                for m in group:
                    cdf[i, j, methods.index(m)] = ds["cdf"].sel({"approximation": m}).values
        count.append(cs)
        overflow.append(os_)
    sim = xr.Dataset({"count": (("service", "R", "rho", "replication", "t"), np.array([count])),
                      "overflow": (("service", "R", "rho", "replication"), np.array([overflow]))},
                     coords={"service": ["exponential"], "R": Rs, "rho": rhos, "replication": np.arange(3), "t": t})
    approx = xr.Dataset(
        {"cdf": (("R", "rho", "approximation", "t"), cdf)},
        coords={"R": Rs, "rho": rhos, "approximation": methods, "t": t},
    )
    return compare(sim, approx, {"percentiles": [99, 99.9, 99.99, 99.999]})


def test_real_comparison(real_comparison, tmp_path):
    rep = reproduce(real_comparison)
    cells = [(R, rho) for R in (1, 3) for rho in (0.1, 0.5)]
    assert rep.attrs["agreement_cells"] == 4 and 0 <= rep.attrs["agreement_share"] <= 1
    for R, rho in cells:
        b = rep["best_method"].sel(R=R, rho=rho).values.tolist()
        assert b[0] in "ABCDEF" and b[1] in ("A*", "C*") and (b[2] == "exact") == (R == 1) and b[3] == "T"
        assert rep["agreement"].sel(R=R, rho=rho).item() in (DISAGREE, TIE, SAME)
        assert int(real_comparison["fit_invalid"].sel({"R": R, "rho": rho, "approximation": b[0]})) == 0
        assert rep["paper_best_method"].sel(R=R, rho=rho).item() == paper_best_map()[(R, rho)]
    pe = rep["percentile_error"].sel(family="faithful")
    ref = rep["percentile_error_reference"].sel(family="faithful")
    # exact ran at R = 1: every point there is against exact, a difference of percentiles (no interval); at R = 3
    # the tiny simulations (~1400 customers per replication) have no customer beyond the 99.99th: no reference, no
    # number (reference too short) — never an error against a percentile the simulation cannot estimate
    assert (ref.sel(pct_R=1, pct_rho=[0.1, 0.5]) == 1).all() and (ref.sel(pct_R=3, pct_rho=[0.1, 0.5]) == 0).all()
    assert pe.sel(pct_R=1, pct_rho=[0.1, 0.5]).notnull().all() and pe.sel(pct_R=3).isnull().all()
    m = rep["percentile_error_method"].sel(family="faithful", pct_percentile=99.99, pct_rho=0.5, pct_R=1).item()
    c = real_comparison.sel(service="exponential", R=1, rho=0.5, percentile=99.99)
    want = float(c["raw_approx_percentile"].sel(approximation=m) - c["approx_percentile"].sel(approximation="exact"))
    assert pe.sel(pct_percentile=99.99, pct_rho=0.5, pct_R=1).item() == pytest.approx(want, rel=1e-12)
    assert rep["percentile_error"].sel(family="exact", pct_R=3).isnull().all()
    assert rep["percentile_error"].sel(family="T", pct_R=1, pct_rho=[0.1, 0.5]).notnull().all()
    assert "reference too short" in report_text(rep, "markdown")
    assert "| T |" in report_text(rep, "markdown")
    # §6.3 grid: only rho = 0.5 (R = 1, 3) in the run; at R = 1 against exact, at R = 3 against the simulation only
    # where it can estimate the percentile (its 99th: ~14 customers per replication beyond it: too short)
    rel = rep["relative_error"].sel(family="faithful").notnull()
    rref = rep["relative_error_reference"].sel(family="faithful", rel_rho=0.5)
    assert (rref.sel(rel_R=1) == 1).all() and (rref.sel(rel_R=3) == 0).all()
    assert int(rel.sum()) == 3 and rel.sel(rel_rho=0.5, rel_R=1).all()
    real_comparison.to_netcdf(tmp_path / "comparison.nc")
    out = write_reproduction(tmp_path / "comparison.nc", tmp_path / "r.nc", tmp_path / "fig", {"formats": ["png"]})
    assert all(p.exists() and p.stat().st_size > 0 for p in out)


def _with_exact(cmp: xr.Dataset) -> xr.Dataset:
    """The synthetic comparison with exact's W at R = 1 only, set so that exact and the simulation disagree: at
    (1, 0.9) the simulation picks D (0.2 vs B's 1.0) but exact E (0.01 vs D's 0.5); at (1, 0.1) D and E both sit on
    exact (1e-9 apart); elsewhere at R = 1 exact agrees with every method at 1.0."""
    wx = xr.full_like(cmp["wasserstein_mean"].isel(service=0, drop=True), 1.0).transpose("R", "rho", "approximation")
    wx.loc[dict(R=[3, 10])] = np.nan
    wx.loc[dict(approximation="exact")] = np.nan
    wx.loc[dict(R=1, rho=0.5)] = np.nan  # nothing computed there
    wx.loc[dict(R=1, rho=0.9, approximation="E")] = 0.01
    wx.loc[dict(R=1, rho=0.9, approximation="D")] = 0.5
    wx.loc[dict(R=1, rho=0.1, approximation="D")] = 2e-9
    wx.loc[dict(R=1, rho=0.1, approximation="E")] = 1e-9
    return cmp.assign(wasserstein_vs_exact=wx)


def test_map_pick_uses_exact_where_it_ran_and_the_simulation_elsewhere():
    """Issue 31 item 2 (round 17): where exact ran our best of A–F is picked by W against exact (no noise), not
    against the noisy simulation; the simulation's pick stays in best_method (the paper's reference, which the
    agreement uses) and a pick that differs from it is flagged; ties: exact within EXACT_W_TIE, the simulation
    within the 95 % CI."""
    from sojourn.jsq_ps.compare import REF_EXACT, REF_SIMULATION

    rep = reproduce(_with_exact(_synthetic()))
    f = rep.sel(family="faithful")
    at = lambda v, R, rho: f[v].sel(R=R, rho=rho).item()  # noqa: E731
    assert at("best_method", 1, 0.9) == "D" and at("best_method_by_reference", 1, 0.9) == "E"
    assert at("best_method_reference", 1, 0.9) == REF_EXACT and at("best_method_simulation_differs", 1, 0.9) == 1
    assert rep["agreement"].sel(R=1, rho=0.9).item() == DISAGREE  # judged against the simulation, as the paper
    assert at("best_method_by_reference", 1, 0.1) == "E" and at("best_method_ties", 1, 0.1) == "D"
    assert at("best_method_simulation_differs", 1, 0.1) == 1  # the simulation's A (all at W = 1) is not tied
    assert at("best_method_ties", 1, 0.333) == "B,C,D,E,F" and at("best_method_simulation_differs", 1, 0.333) == 0
    assert at("best_method_reference", 10, 0.9) == REF_SIMULATION and at("best_method_by_reference", 10, 0.9) == "B"
    assert at("best_method_ties", 10, 0.9) == "C"  # C's CI [0.55, 0.65] reaches B's [0.45, 0.55]
    assert at("best_method_reference", 1, 0.5) == -1  # nothing computed there
    # the §6.3 relative table picks by the same rule and says which reference picked
    rel = dict(family="faithful", rel_rho=0.5, rel_R=3)
    assert rep["relative_error_method"].sel(rel).item() == "D"
    assert rep["relative_error_method_reference"].sel(rel).item() == REF_SIMULATION
    # without exact's W the pick is the simulation's everywhere
    base = reproduce(_synthetic()).sel(family="faithful")
    ok = base["best_method"] != ""
    assert (base["best_method_by_reference"] == base["best_method"]).all()
    assert (base["best_method_reference"].where(ok) == REF_SIMULATION).sum() == int(ok.sum())


def test_map_marks_equal_the_caption_counts(monkeypatch):
    """Each count of the §6.4 caption and title is the number of marks drawn: ▾ (picked against the simulation),
    "exact X" (exact's pick differs from the simulation's, which colours the cell), "D=E" (ties); each claim
    re-derives from the dataset."""
    import matplotlib.pyplot as plt

    from sojourn.core.present.claims import verify
    from sojourn.jsq_ps import plots

    rep = reproduce(_with_exact(_synthetic()))
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.reproduction_map(rep, "unused")
    (fig,) = figs
    middle = [ax for ax in fig.get_axes() if ax.get_images()][1]
    texts = [t.get_text() for t in middle.texts]
    k_ex, k_sim, k_diff = plots.reproduction._pick_counts(rep)
    assert (k_ex, k_sim, k_diff) == (3, 8, 2)  # exact at R = 1 (ρ = 0.5 empty), the simulation at R = 3 and 10
    assert sorted(t for t in texts if "\nexact " in t) == ["A\n≈ paper E\nexact E=D", "D\nexact E"]  # a tie: said
    ties = rep["best_method_ties"].sel(family="faithful").values
    assert sum("=" in t for t in texts) == int((ties != "").sum()) == 8
    tri = [ln for ln in middle.get_lines() if ln.get_marker() == "v"]
    assert sum(len(ln.get_xdata()) for ln in tri) == k_sim
    cap = plots.reproduction._reproduction_map_caption(rep)
    claim = next(c for c in cap.findings if "against exact, which has no noise" in c.text)
    assert claim.value == [k_ex, k_sim, k_diff]
    for c in cap.findings:
        ok, derived = verify(c, lambda source: rep)
        assert ok, f"{c.text!r} states {c.value!r}, the data say {derived!r}"
    assert f"the best is another method at {k_diff}" in fig._suptitle.get_text().replace("\n", " ")
    plt.close(fig)


def test_relative_figure_prints_each_pick_and_its_reference(monkeypatch):
    """§6.3 figure (round 17: "its best method by W" named neither the method nor the reference): the letter of our
    best method stands above each dot of ours (A–F and A*–F*), equal to relative_error_method at that cell, and the
    title and caption count which reference picked it; each claim re-derives from the dataset."""
    import matplotlib.pyplot as plt

    from sojourn.core.present.claims import verify
    from sojourn.jsq_ps import plots

    rep = reproduce(_with_exact(_synthetic()))
    figs = []
    monkeypatch.setattr(plots.common, "save",
                        lambda fig, stem, caption=None, **kw: figs.append((fig, caption)) or [stem])
    plots.reproduction_relative_errors(rep, "unused")
    ((fig, cap),) = figs
    k_ex, k_sim = plots.reproduction._rel_pick_counts(rep)
    pr = rep["relative_error_method_reference"].sel(family="faithful")
    assert (k_ex, k_sim) == (int((pr == 1).sum()), int((pr == 2).sum())) and k_sim >= 1
    panels = [ax for ax in fig.get_axes() if any(t.get_gid() == "method_letter" for t in ax.texts)]
    assert len(panels) == rep.sizes["rel_percentile"]
    for a, ax in enumerate(panels):  # one letter per dot of ours, the cell's pick
        letters = sorted(t.get_text() for t in ax.texts if t.get_gid() == "method_letter")
        expect = []
        for fam in ("faithful", "corrected"):
            m = rep["relative_error_method"].sel(family=fam).values
            expect += m[np.isfinite(rep["relative_error"].sel(family=fam).values[a]) & (m != "")].tolist()
        assert letters == sorted(expect) and letters
    title = fig._suptitle.get_text().replace("\n", " ")
    assert f"against our simulation at {k_sim} cells, its letter above each dot" in title
    claim = next(c for c in cap.findings if "its letter above each dot" in c.text)
    assert claim.value == [k_ex, k_sim]
    for c in cap.findings:
        ok, derived = verify(c, lambda source: rep)
        assert ok, f"{c.text!r} states {c.value!r}, the data say {derived!r}"
    plt.close(fig)


def test_percentile_figure_prints_ours_where_the_symlog_misleads(monkeypatch):
    """§6.1/§6.2 figure (round 17: T's +0.15 looked as far from 0 as −1 on the symlog axis): each dot of ours between
    ±linthresh and ±1 carries its value, no other; the subtitle says the errors are absolute, not %."""
    import matplotlib.pyplot as plt

    from sojourn.jsq_ps import plots

    rep = reproduce(_synthetic())
    pe = rep["percentile_error"].values  # (family, percentile, rho, R)
    fams = rep["family"].values.tolist()
    ref = rep["percentile_error_reference"].values
    have = np.argwhere((ref[fams.index("T")] > 0) & np.isfinite(pe[fams.index("T")]))
    assert len(have) >= 2
    (a, b, k), (a2, b2, k2) = have[:2]
    pe[fams.index("T"), a, b, k] = 0.15  # shown: within the log part below 1
    pe[fams.index("T"), a2, b2, k2] = -0.05  # within the linear part: no text
    rep["paper_percentile_error"].values[a2, b2, k2] = 0.23  # the paper's in the band: its value printed too
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.reproduction_percentile_errors(rep, "unused")
    (fig,) = figs
    values = [t.get_text() for ax in fig.get_axes() for t in ax.texts if t.get_gid() == "ours_value"]
    lin = plots.reproduction._PCT_LINTHRESH
    expect = [x for f, _ in plots.reproduction._PCT_PANELS if f in fams
              for x in pe[fams.index(f)][(ref[fams.index(f)] > 0) & (np.abs(pe[fams.index(f)]) > lin)
                                        & (np.abs(pe[fams.index(f)]) < 1)]]
    assert "+0.15" in values and len(values) == len(expect)
    # round 32: the paper's circles in that band carry their value too (+0.23 read as about +2), in each panel of ours
    # where the row is drawn
    pp = rep["paper_percentile_error"].values
    theirs = [t.get_text() for ax in fig.get_axes() for t in ax.texts if t.get_gid() == "paper_value"]
    want = [x for f, _ in plots.reproduction._PCT_PANELS if f in fams
            for x in pp[(ref[fams.index(f)] > 0) & np.isfinite(pe[fams.index(f)]) & (np.abs(pp) > lin)
                        & (np.abs(pp) < 1)]]
    assert "+0.23" in theirs and sorted(theirs) == sorted(f"{x:+.2g}".replace("-", "−") for x in want)
    assert "errors absolute" in " ".join(t.get_text() for t in fig.texts) and "not %" in " ".join(
        t.get_text() for t in fig.texts)
    plt.close(fig)


def test_percentile_figure_letters_each_error_with_its_method(monkeypatch):
    """§6.1/§6.2 figure (round 23: the A–F panel was titled "the same methods, only the reference differs" while the
    paper's best method and ours differ row by row): the A–F panel prints the paper's letter beside each ○ and ours
    beside each ●, the corrected panel ours; the A–F header and the title count the rows where the two letters agree,
    recounted here from the letters drawn."""
    import matplotlib.pyplot as plt

    from sojourn.jsq_ps import plots

    rep = reproduce(_with_exact(_synthetic()))
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.reproduction_percentile_errors(rep, "unused")
    (fig,) = figs
    panels = [ax for ax in fig.get_axes() if ax.get_xscale() == "symlog"]
    for ax, fam in zip(panels, ("faithful", "corrected", "T"), strict=True):
        ours = rep["percentile_error"].sel(family=fam).values
        ref = rep["percentile_error_reference"].sel(family=fam).values
        drawn = (ref > 0) & np.isfinite(ours) & np.isfinite(rep["paper_percentile_error"].values)
        mine = sorted(t.get_text() for t in ax.texts if t.get_gid() == "ours_letter")
        theirs = sorted(t.get_text() for t in ax.texts if t.get_gid() == "paper_letter")
        want = sorted(m for m in rep["percentile_error_method"].sel(family=fam).values[drawn].tolist() if m)
        assert mine == (want if fam != "T" else [])
        if fam == "faithful":
            assert theirs == sorted(m for m in rep["paper_percentile_method"].values[drawn].tolist() if m)
            pairs = {(round(t.xy[1] + plots.reproduction._PCT_OFFSET), t.get_text()) for t in ax.texts
                     if t.get_gid() == "paper_letter"}
            same = sum((round(t.xy[1] - plots.reproduction._PCT_OFFSET), t.get_text()) in pairs for t in ax.texts
                       if t.get_gid() == "ours_letter")
            assert 0 < same < len(mine)  # the synthetic data have rows of both kinds
            assert f"the same method at {same} of them" in ax.get_title(loc="left")
            assert f"our A–F pick is the paper's at {same}" in fig._suptitle.get_text()
        else:
            assert theirs == []
    plt.close(fig)


def _rel_at_one(rep, errors, method="E"):
    """``rep`` with a §6.3 value of ours (best of A–F, against exact) at (R = 1, ρ = 0.5): ``errors`` per percentile,
    picked method ``method``."""
    rep = rep.copy(deep=True)
    at = {"family": "faithful", "rel_rho": 0.5, "rel_R": 1}
    rep["relative_error"].loc[at] = errors
    for v in ("relative_error_ci_low", "relative_error_ci_high"):
        rep[v].loc[at] = np.nan
    rep["relative_error_reference"].loc[at] = 1
    rep["relative_error_method"].loc[at] = method
    rep["relative_error_method_reference"].loc[at] = 1
    return rep


def _rel_figure(monkeypatch, rep):
    from sojourn.jsq_ps import plots

    figs = []
    monkeypatch.setattr(plots.common, "save",
                        lambda fig, stem, caption=None, **kw: figs.append((fig, caption)) or [stem])
    plots.reproduction_relative_errors(rep, "unused")
    return figs[0]


def test_relative_figure_states_the_gap_and_why_R1_differs(monkeypatch):
    """§6.3 figure (round 26, rated 7: no finding, and the paper's 3–8 % at R = 1 against our 0 read as a failed
    reproduction): the title gives the median gap between ours and the paper's and, where ours is 0 at R = 1 (A–F
    are exact there), the paper's range at those points as its simulation's noise — each from the data, the same
    words as a caption claim that re-derives from the dataset; the paper's letter stands beside its circle only where
    its method is not ours; the legend names each side's reference."""
    import matplotlib.pyplot as plt

    from sojourn.core.present.claims import verify
    from sojourn.jsq_ps.plots import reproduction as R

    base = reproduce(_with_exact(_synthetic()))
    paper = base["paper_relative_error"].sel(rel_rho=0.5, rel_R=1).values  # its published 99th, 99.9th, 99.99th
    seen = []
    for errors, words, other in (([0.0, 1e-12, -0.05], "at R = 1 ours (E) is 0 at 2 of 3 points",
                                  '; at the other 1, "tail cut": its truncation'),
                                 ([0.0, 0.0, 0.0], "at R = 1 ours (E) is 0 at all 3 points", None),
                                 ([0.02, 0.03, 0.04], None, None)):
        rep = _rel_at_one(base, errors)
        fig, cap = _rel_figure(monkeypatch, rep)
        title = fig._suptitle.get_text().replace("\n", " ")
        both = np.isfinite(rep["relative_error"].sel(family="faithful").values) & np.isfinite(
            rep["paper_relative_error"].values) & (rep["relative_error_reference"].sel(family="faithful").values > 0)
        gap = np.median(np.abs(np.abs(rep["relative_error"].sel(family="faithful").values[both])
                               - rep["paper_relative_error"].values[both]))
        assert f"within a median {100 * gap:.1f} percentage points of the paper's ({int(both.sum())} points)" in title
        if words is None:
            assert "at R = 1" not in title and not any("At R = 1" in c.text for c in cap.findings)
        else:
            zero = paper[np.abs(errors) <= 1e-9]
            # round 29: no claim that every A–F method is exact at R = 1, nor that the paper's values are noise
            assert f"{words} (exact up to its truncated state space{other or ''}), while the paper reports " \
                   f"{100 * zero.min():.0f}–{100 * zero.max():.0f} % there against its one-seed simulation " \
                   "(its picks: D)" in title
            assert ("at the other" in title) == (other is not None)
            said = words[0].upper() + words[1:].replace(" is 0 at ", " is 0 (|relative error| ≤ 1e-09 against "
                                                           "exact) at ")  # round 30: the bound beside the 0
            assert any(c.text.startswith(said) for c in cap.findings)
        # round 30: "tail cut" beside each R = 1 point of ours that is not 0 (the 99.99th panel here), nowhere else
        cuts = [a for a, ax in enumerate(fig.get_axes()) for t in ax.texts if t.get_gid() == "tail_cut"]
        assert cuts == ([2] if other else [])
        legend_words = " ".join(t.get_text() for t in fig.legends[0].get_texts())
        assert ('"tail cut" (R = 1)' in legend_words) == bool(other)  # round 32: the mark defined in the legend
        seen.append(title)
        for c in cap.claims():
            ok, derived = verify(c, lambda source, rep=rep: rep)
            assert ok, f"{c.text!r} states {c.value!r}, the data say {derived!r}"
        letters = sorted(t.get_text() for ax in fig.get_axes() for t in ax.texts if t.get_gid() == "paper_letter")
        assert letters == ["D"] * 3  # R = 1: the paper's D beside ours E in each panel; R = 3: D beside D, none
        legend = " ".join(t.get_text() for t in fig.legends[0].get_texts())
        assert "paper, against its own simulation" in legend and "best of A–F, against exact" in legend
        plt.close(fig)
    assert len(set(seen)) == 3
    rep = _rel_at_one(base, [0.0, 0.0, 0.0], method="D")  # the same method: no letter of the paper's
    fig, cap = _rel_figure(monkeypatch, rep)
    assert not [t for ax in fig.get_axes() for t in ax.texts if t.get_gid() == "paper_letter"]
    assert R._rel_letters_differ(rep) == (0, 2)
    plt.close(fig)


def test_ratio_map_has_no_method_colour_and_marks_ties_only_above(monkeypatch):
    """§6.4 bottom map (round 26: its red meant "corrected farther" while red is method D in the maps above): no
    colour of its map lies near a colour of A–F. The middle map hatches the cells where our pick ties with the
    paper's; the bottom map does not (round 27: the hatching hid which ratios are noise there)."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb

    from sojourn.core.present.figures import METHOD_COLORS
    from sojourn.jsq_ps import plots
    from sojourn.jsq_ps.claims import TIE

    cmap = plots.reproduction._ratio_cmap()
    rgb = cmap(np.linspace(0, 1, 256))[:, :3]
    for m in "ABCDEF":
        assert np.sqrt(((rgb - np.array(to_rgb(METHOD_COLORS[m]))) ** 2).sum(1)).min() > 0.3, m
    rep = reproduce(_with_exact(_synthetic()))
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.reproduction_map(rep, "unused")
    (fig,) = figs
    middle, bottom = [ax for ax in fig.get_axes() if ax.get_images()][1:3]
    k = int((rep["agreement"].values == TIE).sum())
    assert k >= 1
    assert sum(p.get_gid() == "tie" for p in middle.patches) == k
    # round 28: the hatch alone was invisible on a light cell; each tie says which method of the paper's it ties
    said = [t.get_text() for t in middle.texts if t.get_gid() == "tie_text"]
    paper = rep["paper_best_method"].values[rep["agreement"].values == TIE]
    assert sorted(t.split("\n")[1].rsplit(" ", 1)[1] for t in said) == sorted(paper.tolist())
    assert all("≈ paper " in t for t in said) and len(said) == k
    assert not [p for p in bottom.patches if p.get_gid() == "tie" or p.get_hatch() == "///"]
    plt.close(fig)
