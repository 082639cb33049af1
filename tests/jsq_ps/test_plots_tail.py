"""Method T in the figures (sojourn.jsq_ps.plots): its own colour and line, the legend entry
"T (bound)", in every figure that draws methods — the Wasserstein and percentile-error panels,
the CDF of a cell, the maps of the best and the recommended method, the run time and the reproduction's panels.

The comparison is computed from small synthetic data (Exp(1) samples as the simulation, exponential CDFs as the
methods, as in test_compare_recommend.py) at R = 2 and two loads: exact ran at the first only, so T is the
recommendation at the second. Each figure is drawn into memory (``save`` replaced) and its artists inspected.
"""
from __future__ import annotations

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

from sojourn.jsq_ps import plots
from sojourn.jsq_ps.compare import compare
from sojourn.jsq_ps.reproduction import reproduce
from support.synthetic import jsq_run

SCALES = {0.5: {"A": 1.3, "A*": 0.97, "exact": 1.0, "T": 1.003},
          0.6: {"A": 1.3, "A*": 0.97, "exact": None, "T": 1.003}}
TAIL_RGBA = mcolors.to_rgba(plots.common._TAIL_COLOR)


def _data():
    return jsq_run(SCALES)


@pytest.fixture(scope="module")
def data():
    sim, approx = _data()
    return sim, approx, compare(sim, approx, {"percentiles": [99.0, 99.9], "n_resamples": 200})


@pytest.fixture
def drawn(monkeypatch):
    """The figures a drawing function makes, kept open instead of saved."""
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    yield figs
    for f in figs:
        plt.close(f)


def _axes(fig):
    """Every axes of a figure, the status strips (inset axes) included."""
    out = []
    for ax in fig.get_axes():
        out += [ax, *ax.child_axes]
    return out


def _lines(fig):
    return [ln for ax in _axes(fig) for ln in ax.get_lines()]


def _legend_texts(fig):
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.get_axes() if ax.get_legend() is not None]
    for sub in getattr(fig, "subfigs", ()):
        legends += list(sub.legends)
    return [t.get_text() for lg in legends for t in lg.get_texts()]


def _has_tail_line(fig):
    return any(mcolors.to_rgba(ln.get_color()) == TAIL_RGBA and ln.get_linestyle() == "-." for ln in _lines(fig))


def test_T_is_a_series_of_its_own():
    sr = plots.common.tail_series()
    assert (sr.members, sr.label, sr.style) == (["T"], "T (bound)", "-.")
    assert plots.common.method_color("T") == plots.common._TAIL_COLOR


@pytest.mark.parametrize("draw", ["wasserstein_vs_rho", "runtime_vs_R"])
def test_T_line_and_legend_in_the_method_figures(data, drawn, draw):
    getattr(plots, draw)(data[2], "unused")
    (fig,) = drawn
    assert "T (bound)" in _legend_texts(fig)
    if draw == "runtime_vs_R":
        assert any(mcolors.to_rgba(ln.get_color()) == TAIL_RGBA for ln in _lines(fig))
    else:
        assert _has_tail_line(fig)


def test_T_rows_in_the_percentile_error_map(data, drawn):
    """The corrected figure is a map with a block of rows per method: T's block is named, in the neutral ink of every
    row name (round 20: names in the method palette read as the error scale)."""
    from sojourn.jsq_ps.plots import errors

    plots.percentile_error_vs_rho_corrected(data[2], "unused")
    (fig,) = drawn
    names = {t.get_text().replace("\n", " "): t.get_color() for ax in fig.get_axes() for t in ax.texts}
    assert mcolors.to_rgba(names["T (bound)"]) == mcolors.to_rgba(errors.LABEL_COLOR) != TAIL_RGBA


def test_T_in_the_cdf_of_a_cell(data, drawn):
    sim, approx, cmp = data
    plots.cdf_cell(sim, approx, 2, 0.6, "unused", cmp=cmp)
    (fig,) = drawn
    # the legend names T with its W against the reference (the body panel draws differences from it)
    # "T (bound)": apart from the sojourn time S (round 15: both read "T")
    assert _has_tail_line(fig) and any(t.startswith("T (bound): W") for t in _legend_texts(fig))


def test_T_in_the_maps(data, drawn):
    cmp = data[2]
    assert cmp["recommended"].sel(service="exponential", rho=0.6).values.tolist() == [["T", "T"]]
    plots.recommended_map(cmp, "unused")
    plots.best_method_map(cmp, "unused")
    rec, best = drawn
    # one legend per map: a patch per method, in its colour of the one palette (T: its own)
    patches = {
        t.get_text().split(":")[0]: h
        for lg in rec.legends
        for h, t in zip(lg.legend_handles, lg.get_texts(), strict=True)
    }
    tail = plots.maps.TAIL_BOUND  # "T (bound, …)": apart from the sojourn time (round 15)
    assert tail.startswith("T (bound") and tail in patches and "exact" in patches
    assert mcolors.to_rgba(patches[tail].get_facecolor()) == TAIL_RGBA
    # T's entry says why (exact over budget) and its margin over exact, from the data
    text = next(t.get_text() for lg in rec.legends for t in lg.get_texts() if t.get_text().startswith("T ("))
    assert "over budget" in text and "above it where both ran" in text
    image = rec.get_axes()[0].get_images()[0].get_array()  # T's cells drawn in T's colour
    assert any(np.allclose(px[:3], TAIL_RGBA[:3]) for px in np.asarray(image).reshape(-1, image.shape[-1]))
    assert best.get_axes()  # T is a candidate of the Wasserstein map too (drawn without error)


def test_T_family_in_the_reproduction_panels(data, drawn):
    """The §6 panels draw one point per family; T's (a family of its own in reproduction.nc) in its colour. This
    synthetic run (R = 2) shares no cell with the paper's tables: the panels say so instead of drawing empty axes."""
    rep = reproduce(data[2])
    assert rep["family"].values.tolist() == ["faithful", "corrected", "exact", "T"]
    color, _, label = plots.reproduction._FAMILY_STYLE["T"]
    assert mcolors.to_rgba(color) == TAIL_RGBA and label == "ours: T (bound)"
    plots.reproduction_percentile_errors(rep, "unused")
    (fig,) = drawn
    assert any("shares no (R, ρ) cell" in t.get_text() for ax in fig.get_axes() for t in ax.texts)
    plots.reproduction_relative_errors(rep, "unused")  # the §6.3 panels, drawn with each family's marker
    assert any("shares no (R, ρ) cell" in t.get_text() for ax in drawn[1].get_axes() for t in ax.texts)


def test_not_run_and_invalid_fit_are_drawn_differently(data, drawn):
    """exact did not run at the second load: the corrected map draws no check panel (exact against the simulation:
    its numbers are in the caption) and names no × of an invalid fit in its legend; ∅ and × have fills of their own
    (sojourn.jsq_ps.plots.STATUS_FILL)."""
    plots.percentile_error_vs_rho_corrected(data[2], "unused")
    (fig,) = drawn
    assert not [ax for ax in fig.get_axes() if ax.get_title(loc="left").startswith("the check")]
    assert "invalid fit (not a CDF)" not in _legend_texts(fig)
    assert plots.STATUS_FILL["not_run"] != plots.STATUS_FILL["invalid"]


def test_key_results_tables(data, tmp_path):
    csv_path, html_path, rst_path = plots.key_results(data[2], tmp_path / "key_results")
    rows = csv_path.read_text().splitlines()
    assert rows[0].startswith("servers R,") and len(rows) == 2  # one R band (R = 2)
    page = html_path.read_text()
    assert page.count("<table>") == 3 and "When to trust" in page and "T (" in page
    assert "What this run shows" in page and rst_path.name == "key_results.rst"


def test_a_simulation_too_short_to_trust_has_its_own_mark(data, drawn):
    """With the run-length guard's verdict in the comparison (sim_run_valid = 0 at the second load, where exact did
    not run), the Wasserstein figure and the best-method map mark that load as "reference too short", one mark and
    one legend entry (sojourn.core.present.figures.REFERENCE_TOO_SHORT); without the verdict, nothing."""
    cmp = data[2].copy()
    cmp["sim_run_valid"] = xr.DataArray(np.array([[[1, 0]]], np.int8), dims=("service", "R", "rho"),
                                        coords={"service": cmp["service"], "R": cmp["R"], "rho": cmp["rho"]})
    caps = []
    save = plots.common.save
    plots.common.save = lambda fig, stem, caption=None, **kw: caps.append(caption) or save(fig, stem, **kw)
    try:
        plots.wasserstein_vs_rho(cmp, "unused")
        plots.best_method_map(cmp, "unused")
        plots.wasserstein_vs_rho(data[2], "unused")
    finally:
        plots.common.save = save
    lines, best, plain = drawn
    label = plots.errors.REFERENCE_TOO_SHORT.label
    assert label in _legend_texts(best)
    # the Wasserstein figure's legend holds the line styles only: its caption names the strip's ◇ where drawn
    how = lambda cap: " ".join(cap.how)
    assert "◇ reference too short" in how(caps[0]) and "◇" not in how(caps[2])
    assert label not in _legend_texts(plain)
    # the mark sits in the strip above the panel, never at a y of the data
    marks = [ln for ax in lines.get_axes() for child in ax.child_axes for ln in child.get_lines()
             if ln.get_marker() == plots.errors.REFERENCE_TOO_SHORT.marker]
    assert marks and not [ln for ax in lines.get_axes() for ln in ax.get_lines()
                          if ln.get_marker() == plots.errors.REFERENCE_TOO_SHORT.marker]


_FAITHFUL_BLUE = plots.common.FAMILY_COLORS["faithful"]  # the run-time figure's A–F family


def test_runtime_leaves_out_the_cells_a_method_did_not_run(data, drawn):
    """Survivorship: exact did not run at the second load (its run_time there is the time to refuse), so its point is
    the first load's time alone, drawn hollow; every other family at that R is compared over the same load (like with
    like, round 10: exact looked cheaper at R = 10 having skipped its costly loads), hollow too; the rows under the
    axis say "1/2" loads compared and "exact: 1" skipped, and the legend says why."""
    cmp = data[2]
    assert cmp["not_run"].sel(approximation="exact").values.tolist() == [[0, 1]]
    slow = cmp.copy(deep=True)  # a refusal that looks cheap: a tiny run time where exact did not run
    slow["run_time"].loc[{"approximation": "exact", "rho": 0.6}] = 1e-6
    plots.runtime_vs_R(slow, "unused")
    (fig,) = drawn
    exact = mcolors.to_rgba(plots.common.METHOD_COLORS["exact"])
    pts = [ln for ln in _lines(fig) if ln.get_marker() == "o" and mcolors.to_rgba(ln.get_color()) == exact]
    assert len(pts) == 1 and pts[0].get_mfc() == "white"
    assert np.isclose(pts[0].get_ydata()[0], cmp["run_time"].sel(approximation="exact", rho=0.5).values.item())
    texts = [t.get_text() for ax in fig.get_axes() for t in ax.texts]
    assert "1/2 partial" in texts and "exact: 1" in texts and "skipped (over budget)" in texts, texts
    assert any("partial median" in t and "not the trend" in t.replace("\n", " ") for t in _legend_texts(fig))
    # the budget is a cap on the chain (state space, predicted cost), said in the ▲ legend entry, not a time-out
    assert any(t.startswith("▲ in the strip above the plot") and "not a time-out" in t.replace("\n", " ")
               for t in _legend_texts(fig))
    faith = mcolors.to_rgba(_FAITHFUL_BLUE)
    pts = [ln for ln in _lines(fig) if ln.get_marker() == "o" and mcolors.to_rgba(ln.get_color()) == faith]
    faithful = [m for m in plots.common.FAITHFUL if m in cmp["approximation"].values.tolist()]
    want = np.median(cmp["run_time"].sel(approximation=faithful, rho=0.5).values)
    assert len(pts) == 1 and pts[0].get_mfc() == "white" and np.isclose(pts[0].get_ydata()[0], want)


def test_runtime_title_rounds_as_the_caption_and_labels_its_axes(data, monkeypatch):
    """The run-time figure's header gives each family's median per cell at the smallest and the largest R drawn (round
    24: medians pooled over every R hid the trend), recomputed here from the data, in the figure's rounding; the R
    axis says it is logarithmic, and the y axis ends on a labelled decade above the longest whisker."""
    from sojourn.jsq_ps.plots import runtime as RT

    got = []
    monkeypatch.setattr(plots.common, "save",
                        lambda fig, stem, caption=None, **kw: got.append((fig, caption)) or [stem])
    plots.runtime_vs_R(data[2], "unused")
    (fig, cap), = got
    ax = fig.get_axes()[0]
    title = ax.get_title()
    cmp = data[2]
    nr = cmp["not_run"] if "not_run" in cmp else xr.zeros_like(cmp["run_time"], dtype=np.int8)
    fams = RT._families(cmp)
    common = RT._common_cells(nr, fams)
    Rv = cmp["R"].values
    for two in (False, True):
        if two:  # a second R, twice as slow: the title gives the trend from the first R to the last
            cmp = xr.concat([cmp, cmp.assign(run_time=cmp["run_time"] * 2).assign_coords(R=cmp["R"] + 3)], "R")
            got.clear()
            plots.runtime_vs_R(cmp, "unused")
            title = got[0][0].get_axes()[0].get_title()
        nr = cmp["not_run"] if "not_run" in cmp else xr.zeros_like(cmp["run_time"], dtype=np.int8)
        fams = RT._families(cmp)
        common = RT._common_cells(nr, fams)
        Rv = cmp["R"].values
        assert (f"from R = {int(Rv[0])} to R = {int(Rv[-1])}" if two else f"at R = {int(Rv[0])}") in title, title
        for label, ms, _ in fams:
            med = cmp["run_time"].sel(approximation=ms).where(common).median(["approximation", "rho"]).values
            ok = np.flatnonzero(np.isfinite(med))
            want = (f"{RT._g(med[ok[0]])} → {RT._g(med[ok[-1]])} s" if two else f"{RT._g(med[ok[0]])} s")
            assert f"{RT._title_name(label)} {want}" in title, (title, label)
        if two:
            plt.close(got[0][0])
    assert "log scale" in ax.get_xlabel()
    top = ax.get_ylim()[1]
    whiskers = max(float(np.nanmax(seg[:, 1])) for c in ax.collections for seg in c.get_segments())
    assert top >= whiskers and np.isclose(np.log10(top), round(np.log10(top)))
    plt.close(fig)


def test_cdf_body_differences_are_0_at_t_0_and_the_legend_names_the_undrawn(data, drawn):
    """Every CDF difference drawn in the body panel is 0 at t = 0 (the smoothing keeps the ends: a fixed window padded
    at the edge would average the curve's first steps into t = 0), the panel's title states the sign, and the legend
    names the methods computed but not drawn."""
    sim, approx, cmp = data
    plots.cdf_cell(sim, approx, 2, 0.5, "unused", cmp=cmp)
    (fig,) = drawn
    body = fig.get_axes()[0]
    curves = [ln for ln in body.get_lines() if len(ln.get_xdata()) > 2]
    assert curves and all(float(ln.get_xdata()[0]) == 0.0 and float(ln.get_ydata()[0]) == 0.0 for ln in curves)
    assert "> 0: optimistic" in body.get_title()
    # a steep first step survives the smoothing away from the ends, and the ends stay put
    y = np.r_[0.0, np.full(999, -0.01)]
    s = plots.cdf._smooth(y, 1000)
    assert s[0] == 0.0 and s[-1] == pytest.approx(-0.01) and s[50] == pytest.approx(-0.01)
    shown = {m for ln in plots.cdf._cdf_data(sim, approx, 2, 0.5, "exponential", cmp).lines for m in ln.members}
    hidden = [m for m in approx["approximation"].values.tolist() if m not in shown]
    texts = _legend_texts(fig)
    if hidden:
        assert any("not drawn" in t and hidden[0] in t for t in texts)


def test_cdf_figure_names_the_sojourn_time_S_and_reads_in_line_order(drawn):
    """Round 15: the sojourn time and method T both read "T" — the axes name P(S ≤ t) / P(S > t), T is "T (bound)";
    the ratio panel says it is a ratio of probabilities, not of percentiles, and draws the simulation's CI band only
    where it lies within ×2 of the ratio; the legend reads row by row in the order of its entries."""
    from types import SimpleNamespace

    from matplotlib.collections import PolyCollection

    sim, approx = jsq_run({0.5: {"A": 1.3, "A*": 0.97, "exact": 1.0, "T": 1.003}})
    plots.cdf_cell(sim, approx, 2, 0.5, "unused", cmp=compare(sim, approx, {"percentiles": [99.0], "n_resamples": 50}))
    (fig,) = drawn
    words = " ".join([ax.get_ylabel() + " " + ax.get_xlabel() + " " + ax.get_title() for ax in fig.get_axes()]
                     + [fig._suptitle.get_text()])
    assert "P(S > t)" in words and "P(T" not in words and "S: the sojourn time" in words
    ratio = fig.get_axes()[-1]
    assert "not of percentiles" in ratio.get_title()
    band = [p for p in ratio.collections if isinstance(p, PolyCollection)]
    assert band and all(p.get_alpha() < 0.45 for p in band), "lighter than in the tail panel"
    lo_hi = np.array([[1.0, 0.4], [1.0, 0.6], [0.5, 0.2]])  # (ratio, CI half-width): within ×2, beyond, within
    assert plots.cdf._ratio_band(lo_hi[:, 0], lo_hi[:, 1]).tolist() == [True, False, True]
    assert plots.cdf._row_major(list(range(9)), 4) == [0, 4, 8, 1, 5, 2, 6, 3, 7]
    # T's start below 0 is named in its entry, as computed (its margin by design)
    c = SimpleNamespace(same=[], w_ref=None, steep={"T": (-0.0093, 0.24)})
    label = plots.cdf._cdf_label(c, plots.common.tail_series(), {})
    assert label == "T (bound) (-0.009 near t = 0: margin by design)", label


def test_runtime_names_the_chain_that_skipped_and_a_hidden_whisker(drawn, monkeypatch):
    """Round 15: the strip said "A*–F*: loads not run" where only the A* = B* chain skipped (C* ran there): the strip
    row, the count row under the axis and the ▲ legend entry name the chain that skipped, computed from not_run; where
    every member skipped, the family. T's whisker (one run time at both loads: no spread) hides behind its marker:
    its spread is written beside it and the caption says so; a visible whisker gets no such word."""
    scales = {r: {"A": 1.3, "A*": 0.97, "B*": 0.97, "C*": 0.95, "exact": 1.0, "T": 1.003} for r in (0.5, 0.6)}
    sim, approx = jsq_run(scales)
    cmp = compare(sim, approx, {"percentiles": [99.0], "n_resamples": 50})
    assert [sr.label for sr in plots.common.series(cmp, "corrected")][:2] == ["A* = B*", "C*"]
    cmp["not_run"].loc[{"approximation": ["A*", "B*"], "rho": 0.6}] = 1
    cmp["run_time"].loc[{"approximation": "T"}] = 0.05
    cmp["run_time"].loc[{"approximation": "A", "rho": 0.5}] = 0.001
    cmp["run_time"].loc[{"approximation": "A", "rho": 0.6}] = 0.1
    caps = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: drawn.append(fig)
                        or caps.append(caption) or [stem])
    plots.runtime_vs_R(cmp, "unused")
    (fig,) = drawn
    ax = fig.get_axes()[0]
    (strip,) = ax.child_axes
    assert [t.get_text() for t in strip.get_yticklabels()] == ["A* = B*: loads not run"]
    texts = [t.get_text() for t in ax.texts]
    assert "A* = B*: 1" in texts and not any("A*–F*:" in t for t in texts)
    reason = plots.common.skip_reason()  # one wording in every figure (rounds 21–26)
    assert any(f"A* = B* did not run, {reason}" in t.replace("\n", " ") for t in _legend_texts(fig))
    # the row under the axis gives the legend's reason (round 21: "over budget" for a chain at its state cap), and the
    # legend stays inside the saved image with a margin (round 21: its last line touched the right edge)
    assert f"skipped ({plots.common.skip_reason(short=True)})" in texts, texts
    fig.canvas.draw()
    box, whole = ax.get_legend().get_window_extent(), fig.get_tightbbox().transformed(fig.dpi_scale_trans)
    assert box.x1 <= whole.x1 - 0.05 * fig.dpi, (box, whole)
    # every member skipped: the family's name
    cmp["not_run"].loc[{"approximation": "C*", "rho": 0.6}] = 1
    plots.runtime_vs_R(cmp, "unused")
    strip = drawn[1].get_axes()[0].child_axes[0]
    assert [t.get_text() for t in strip.get_yticklabels()] == ["A*–F*: loads not run"]
    # all ran at both loads: T's whisker (no spread) is hidden and said so; A–F's (×100) is drawn, no word
    cmp["not_run"][:] = 0
    for m in ("A*", "B*", "C*", "exact"):
        cmp["run_time"].loc[{"approximation": m, "rho": 0.6}] = 10 * cmp["run_time"].sel(approximation=m, rho=0.5)
    plots.runtime_vs_R(cmp, "unused")
    limits = " ".join(c if isinstance(c, str) else c.text for c in caps[-1].limits)
    assert "method T at R = 2 ×1." in limits and "hidden behind it" in limits and "A–F at R" not in limits, limits
    assert [t.get_text() for t in drawn[2].get_axes()[0].texts] == ["spread ×1"]
