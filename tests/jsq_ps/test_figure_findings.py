"""The findings the JSQ-PS figures print are computed from the data they draw (issue 31: words from data), and change
with it: the CDF figure's headline (the closest of A–F with those nearly tied to it, the direction of the drawn A–F's
tails against exact, the corrected chains' largest W), the M/G/R figure's closest method per cell, and the §6.4 map's
count of cells where the corrected methods are closer beyond both CIs. Synthetic data: Exp(1) simulations and
exponential CDFs of chosen scales as the methods (support.synthetic), or small hand-made datasets."""
from __future__ import annotations

import re

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

from sojourn.core.present.claims import verify
from sojourn.core.present.figures import METHOD_COLORS
from sojourn.jsq_ps import plots
from sojourn.jsq_ps.compare import REF_EXACT, REF_SIMULATION, against_reference, compare, w_against_reference
from support.synthetic import jsq_run

CFG = {"percentiles": [99.0, 99.9], "n_resamples": 200}


def _cdf_findings(scales):
    sim, approx = jsq_run({0.5: scales})
    cmp = compare(sim, approx, CFG)
    w_ref = w_against_reference(cmp).sel(R=2, rho=0.5)
    drawn = sorted((m for m in "ABCDEF" if m in scales), key=lambda m: float(w_ref["W"].sel(approximation=m)))[:3]
    head, claims = plots.cdf._cdf_findings(cmp, w_ref, 2, 0.5, "exponential", drawn)
    for claim in claims:
        ok, derived = verify(claim, lambda source: cmp)
        assert ok, f"{claim.text!r} states {claim.value!r}, the data say {derived!r}"
    return head, [c.text for c in claims]


def test_cdf_headline_names_the_tie_and_the_tail_direction():
    """A and B (scales 1.30 and 1.32: W within 15 %) are named as nearly tied, C (2.0) is not; all three have
    heavier tails than exact, so their percentiles lie above it: conservative."""
    head, texts = _cdf_findings({"A": 1.30, "B": 1.32, "C": 2.0, "A*": 0.999, "exact": 1.0, "T": 1.003})
    assert texts[0].startswith("Closest of the paper's A–F to exact by Wasserstein distance: A and B, nearly tied")
    assert "all conservative (above exact)" in texts[1] and "C +" in texts[1]
    assert texts[2].startswith("The corrected chains and T (A* and T): W to exact at most")
    assert head[0].startswith("closest of A–F: A and B, nearly tied") and "(all conservative)" in head[1]


def test_cdf_headline_states_the_corrected_chains_deep_tail():
    """The title states the corrected chains' and T's error at the deepest percentile against exact, with its
    direction, computed: A* with a lighter tail (scale 0.9: optimistic by 10 %), T heavier (+5 %: conservative), and a
    chain on exact 'within ±0.5 %'."""
    head, texts = _cdf_findings({"A": 1.3, "A*": 0.9, "B*": 0.999, "exact": 1.0, "T": 1.05})
    tail = next(h for h in head if h.startswith("corrected at the 99.9th vs exact: "))
    assert "A* -10 % (optimistic)" in tail and "T +5 % (conservative)" in tail and "B* within ±0.5 %" in tail, tail
    assert any(t.startswith("At the 99.9th percentile the corrected chains and T against exact: ") for t in texts)
    head, _ = _cdf_findings({"A": 1.3, "A*": 0.97, "exact": 1.0, "T": 1.0})
    assert head[-1] == "corrected at the 99.9th vs exact: -3 % (optimistic); T within ±0.5 %", head


def test_cdf_headline_gives_same_side_chains_as_one_range():
    """Chains all on one side are one range without names ('-12 to -9 % (optimistic)'): the short title line the
    reader asked for; the caption's claim still names each."""
    head, texts = _cdf_findings({"A": 1.3, "A*": 0.9, "C*": 0.92, "exact": 1.0, "T": 1.0})
    assert head[-1] == "corrected at the 99.9th vs exact: -10 to -8 % (optimistic); T within ±0.5 %", head
    claim = next(t for t in texts if t.startswith("At the 99.9th percentile the corrected chains"))
    assert "A* -10 %" in claim and "C* -8 %" in claim, claim


def test_cdf_ratio_range_is_symmetric_in_log():
    """The CDF figure's ratio panel spans as far below 1 as above (the simulation's CI band is never cut at the top
    when the methods all lie below), from the data, capped at ×1/30..×30."""
    lo, hi = plots.cdf._ratio_range([np.array([0.9, 0.5, np.nan]), np.array([0.3, 1.6])])
    assert lo * hi == pytest.approx(1.0) and hi == pytest.approx(1.25 / 0.3)
    lo, hi = plots.cdf._ratio_range([np.array([1e-9, 1.0])])
    assert hi == pytest.approx(30 * 1.25) and lo == pytest.approx(1 / hi)
    assert plots.cdf._ratio_range([np.array([1.0, 1.0])]) == pytest.approx((0.8, 1.25))  # at least ×1.25


def test_cdf_headline_changes_with_the_data():
    """One clear winner (A at 0.95), the others far, one lighter-tailed (optimistic) and one heavier: a single name
    and no common verdict on the tails."""
    head, texts = _cdf_findings({"A": 0.95, "B": 1.6, "exact": 1.0, "T": 1.003})
    assert texts[0] == next(t for t in texts if t.startswith("Closest")) and "nearly tied" not in texts[0]
    assert ": A (W = " in texts[0]
    assert "A -" in texts[1] and "B +" in texts[1] and "all " not in texts[1]
    assert head[0].startswith("closest of A–F: A (W = ")


def _mgr(wd):
    """A comparison holding only what the M/G/R figure's closest-method note reads: W of three methods at three
    loads for one law ``wd`` ({method: [W per load]}), every run usable but the last load's."""
    m = list(wd)
    w = np.array([wd[k] for k in m], float).T[None, None]  # (service, R, rho, approximation)
    return xr.Dataset({"wasserstein_mean": (("service", "R", "rho", "approximation"), w),
                       "usable": (("service", "R", "rho", "approximation"), np.ones(w.shape, np.int8)),
                       "sim_run_valid": (("service", "R", "rho"), np.array([[[1, 1, 0]]], np.int8))},
                      coords={"service": ["uniform"], "R": [3], "rho": [0.5, 0.8, 0.9], "approximation": m})


def _rep(ci):
    """A §6.4 dataset of one row, three loads: the best corrected and the best of A–F's W with the CIs ``ci``
    ({family: [(low, mean, high) per load]})."""
    arr = {f: np.array(v, float) for f, v in ci.items()}
    fam = list(arr)
    stack = lambda k: np.stack([arr[f][:, k] for f in fam])[:, None, :]
    return xr.Dataset({"best_wasserstein": (("family", "R", "rho"), stack(1)),
                       "best_wasserstein_ci_low": (("family", "R", "rho"), stack(0)),
                       "best_wasserstein_ci_high": (("family", "R", "rho"), stack(2)),
                       "agreement": (("R", "rho"), np.array([[2, 2, 2]])),
                       "paper_best_method": (("R", "rho"), np.array([["D", "C", "C"]])),
                       "best_method": (("family", "R", "rho"), np.array([[["D", "C", "C"]]] * len(fam)))},
                      coords={"family": fam, "R": [3], "rho": [0.5, 0.8, 0.9]})


@pytest.mark.parametrize(("corrected", "sides"), [
    ([(0.01, 0.02, 0.03), (0.10, 0.12, 0.14), (0.5, 0.6, 0.7)], [-1, 0, 1]),
    ([(0.01, 0.02, 0.03), (0.01, 0.02, 0.03), (0.01, 0.02, 0.03)], [-1, -1, -1]),
])
def test_reproduction_map_counts_only_differences_beyond_noise(corrected, sides):
    """A ratio of ×0.8 whose CIs overlap is 'no difference', not 'closer'; the caption's counts follow, and each
    claim re-derives from the dataset."""
    rep = _rep({"faithful": [(0.1, 0.2, 0.3), (0.11, 0.15, 0.2), (0.1, 0.2, 0.3)], "corrected": corrected})
    _, side = plots.ratio_beyond_noise(rep)
    assert side.ravel().tolist() == sides
    cap = plots.reproduction._reproduction_map_caption(rep)
    claim = next(c for c in cap.findings if "beyond both 95% CIs" in c.text)
    k = [sides.count(-1), sides.count(1), 3]
    assert claim.value == k and f"at {k[0]} of 3 cells, farther at {k[1]}" in claim.text
    for c in cap.findings:
        ok, derived = verify(c, lambda source: rep)
        assert ok, f"{c.text!r} states {c.value!r}, the data say {derived!r}"


def _draw_cdf(monkeypatch, sim, approx):
    """(figure, caption) of the CDF figure of R = 2, ρ = 0.5, kept open instead of saved."""
    cmp = compare(sim, approx, CFG)
    figs = []
    monkeypatch.setattr(plots.common, "save",
                        lambda fig, stem, caption=None, **kw: figs.append((fig, caption)) or [stem])
    plots.cdf_cell(sim, approx, 2, 0.5, "unused", cmp=cmp)
    (out,) = figs
    return out


@pytest.mark.parametrize(("scales", "one", "apart"), [
    ({"A": 1.3, "A*": 0.9995, "exact": 1.0, "T": 1.0005}, "exact (the reference) = corrected chains + T: W < 0.001",
     ["A: W = "]),
    ({"A": 1.3, "A*": 0.97, "exact": 1.0, "T": 1.0005}, "exact (the reference) = T: W < 0.001",
     ["A: W = ", "A*: W = "]),
])
def test_cdf_lines_on_exact_get_one_legend_entry(monkeypatch, scales, one, apart):
    """The CDF figure draws the corrected chains and T that lie on exact in both panels as one line with it, under one
    legend entry computed from the data; a chain 3 % off keeps its own entry; the body panel reaches far enough that
    95 % of each separately drawn line's W lies inside it (the x-range follows the data, not a fixed rule)."""
    sim, approx = jsq_run({0.5: scales})
    fig, cap = _draw_cdf(monkeypatch, sim, approx)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert one in texts and all(any(t.startswith(a) for t in texts) for a in apart), texts
    # exact, the reference, and the lines on it share one entry (round 10: two identical pink swatches read as one
    # line or as a missing one); no simulated tail beyond its reference reach
    assert [t for t in texts if t.startswith("exact")] == [one]
    assert not any("too few customers" in t for t in texts)
    # the tail-ratio panel (exact is the reference): every separately drawn line divided by exact's, 1 drawn
    ratio = fig.get_axes()[2]
    assert ratio.get_yscale() == "log" and "exact's" in ratio.get_ylabel()
    assert any(np.allclose(ln.get_ydata(), 1.0) for ln in ratio.get_lines())
    body = fig.get_axes()[0]
    x1 = body.get_xlim()[1]
    t = sim["t"].values
    for m, s in scales.items():
        if m == "A" or (m == "A*" and s != 1.0 and "A*: W = " in apart):
            d = np.abs(np.exp(-t / s) - np.exp(-t)) * (t[1] - t[0])
            assert d[t <= x1 + 1e-9].sum() >= 0.95 * d.sum() - 1e-12
    assert f"to {x1:.3g}:" in " ".join(cap.how)
    plt.close(fig)


@pytest.mark.parametrize(("errors", "clip"), [([-18.0, 0.3, 14.0], 20.0), ([-18.0, 0.3, 800.0], 1000.0),
                                              ([0.2, -0.1], 10.0), ([-60.0, 4.0], 10.0)])
def test_percentile_map_colour_range_follows_the_errors_that_count(errors, clip):
    """A map of small conservative errors gets its own conservative colour range (the smallest step holding every
    conservative error that counts), so that +14 % is not pale on a +1000 % scale; an error within the noise (not
    significant) does not widen it. The optimistic side is fixed at −100 % in every map (round 19: −18 % on a −20 %
    range was darker than −65 % on the other map's): the same negative error, the same colour, whatever the range."""
    n = len(errors)
    m = {"err": np.array(errors + [5000.0], float).reshape(1, n + 1, 1, 1),
         "sig": np.array([True] * n + [False]).reshape(1, n + 1, 1, 1),
         "ref": np.ones((1, n + 1, 1, 1), int)}
    assert plots.errors._colour_range(m, [(0, 0)], [0]) == clip
    cmap = plots.errors.palette_cmap("faithful")
    for v in (-18.0, -65.0):
        assert np.allclose(plots.errors.norm_rgb(cmap, plots.errors._error_norm(clip), v),
                           plots.errors.norm_rgb(cmap, plots.errors._error_norm(1000.0), v))
    assert plots.errors._error_norm(clip)(-65.0) < plots.errors._error_norm(20.0)(-18.0) < 0.5
    assert plots.errors._error_text(-0.03) == plots.errors._error_text(0.04) == "<0.1"  # within the noise
    # a difference that counts is never "<0.1" (round 15: bold and framed, it read as self-contradictory)
    assert (plots.errors._error_text(0.03, True), plots.errors._error_text(-0.004, True)) == ("+0.03", "-0.004")


def test_percentile_map_says_counts_by_number_style_and_frame():
    """A map cell whose (pale, +2 %) difference counts carries a bold number and a frame (round 12: T's significant
    +0.1 % cells were as white as the noise cells); one within the noise a grey italic number and no frame; ∅ not run
    and × not a CDF on fills of their own."""
    err = np.array([2.0, 0.3, np.nan, np.nan]).reshape(1, 4, 1)
    sig, ref = np.array([True, False, False, False]).reshape(1, 4, 1), np.array([1, 1, 0, 0]).reshape(1, 4, 1)
    status = np.array(["", "", "not_run", "invalid"], object).reshape(1, 4, 1)
    norm, cmap = plots.errors._error_norm(20.0), plt.get_cmap("RdBu")
    fig, ax = plt.subplots()
    kinds = plots.errors._error_map(ax, err, sig, ref, status, [(0, 0)], 4, cmap, norm, True, [],
                                    {"text": 7, "mark": 4},
                             corners=False)
    bold, noise = ax.texts
    assert bold.get_text() == "+2" and bold.get_fontweight() == "bold"
    assert noise.get_style() == "italic" and noise.get_fontweight() != "bold"
    assert [pt.get_hatch() for pt in ax.patches] == [plots.errors.INVALID_HATCH["hatch"], None], "× hatched"
    frame = ax.patches[1]
    assert not frame.get_fill() and abs(frame.get_x() + 0.5) < 0.1, "the framed cell is the one that counts (j = 0)"
    assert kinds == {"not_run", "invalid"}
    rgb = ax.images[0].get_array()[0]
    assert np.allclose(rgb[2], plots.common._rgb(plots.STATUS_FILL["not_run"]))
    assert np.allclose(rgb[3], plots.common._rgb(plots.STATUS_FILL["invalid"])) and not np.allclose(rgb[2], rgb[3])
    plt.close(fig)


def _both_percentile_maps(monkeypatch, scales, t_max=False):
    """The comparison of ``scales`` and the (figure, caption) of its A–F map and of its corrected map; ``t_max``: the
    comparison knows the time grid's end, as the pipeline's figures job gives it (plots.all_figures)."""
    sim, approx = jsq_run(scales)
    cmp = compare(sim, approx, CFG)
    if t_max:
        cmp.attrs["t_max"] = float(approx["t"].values[-1])
    figs = []
    monkeypatch.setattr(plots.common, "save",
                        lambda fig, stem, caption=None, **kw: figs.append((fig, caption)) or [stem])
    plots.percentile_error_vs_rho(cmp, "unused")
    plots.percentile_error_vs_rho_corrected(cmp, "unused")
    return cmp, figs


def test_percentile_maps_each_have_their_palette_and_a_computed_title(monkeypatch):
    """The A–F map (±1000 %) and the corrected map (±20 %) use different palettes, each named with its range in the
    title; the corrected map's title states from the data whether T is ever optimistic and the others' worst; no
    check panel (its numbers are in the caption)."""
    cmp, figs = _both_percentile_maps(monkeypatch, {0.5: {"A": 1.3, "A*": 0.97, "exact": 1.0, "T": 1.003},
                                                    0.6: {"A": 0.6, "A*": 0.9, "exact": 1.0, "T": 1.004}})
    (faith, _), (corr, cap) = figs
    assert plots.PALETTES["faithful"][0] != plots.PALETTES["corrected"][0]
    t1, t2 = faith._suptitle.get_text(), corr._suptitle.get_text()
    assert "colour range" not in t1 + t2, "the title does not repeat the colour bar (round 15)"
    # one optimistic hue in both (round 12: orange in one, red in the other), the conservative ends apart
    from sojourn.jsq_ps.plots.errors import palette_cmap

    lo_f, lo_c = (np.asarray(palette_cmap(k)(0.15))[:3] for k in ("faithful", "corrected"))
    hi_f, hi_c = (np.asarray(palette_cmap(k)(0.85))[:3] for k in ("faithful", "corrected"))
    assert np.allclose(lo_f, lo_c, atol=0.02) and lo_f[0] > lo_f[2] + 0.2  # red
    assert np.abs(hi_f - hi_c).max() > 0.1
    # the colour bar is horizontal, its ends named "← … optimistic" and "conservative … →"
    words = [t.get_text() for ax in faith.get_axes() if getattr(ax, "_colorbar", None) is not None for t in ax.texts]
    assert any(w.startswith("← red: optimistic") for w in words) and any(w.endswith("→") for w in words)
    # the colour bar states its range (−100 % at most below: no error lies below −100 %)
    for f in (faith, corr):
        bar = next(ax for ax in f.get_axes() if getattr(ax, "_colorbar", None) is not None)
        lo, hi = bar.get_xlim()
        assert f"colour range {lo:g} to +{hi:g} %" in bar.get_xlabel(), (bar.get_xlabel(), lo, hi)
        assert any(t.get_text().startswith("← red: optimistic") for t in bar.texts)
    # both extremes from the data: A is 30 % long at ρ = 0.5 and 40 % short at ρ = 0.6 (scales 1.3 and 0.6)
    assert "conservative by up to +30 % (ρ = 0.5" in t1 and "optimistic by up to 40 % (ρ = 0.6" in t1, t1
    a = against_reference(cmp, "exponential").sel(approximation="T")
    below = int((a["significant"] & (a["reference"] != 0) & (a["error"] < 0)).sum())
    assert ("T is never significantly optimistic" in t2) == (below == 0)
    assert not any(ax.get_title(loc="left").startswith("the check") for ax in corr.get_axes())
    for f, _ in figs:
        plt.close(f)


def _pct_rep(ref):
    """A §6.1/§6.2 dataset of one percentile, two loads × two R's: our reference kind per cell ``ref`` (1 exact,
    2 simulation, 0 none, -1 not in this run), the same for every family; the second cell without a reference lies
    beyond the time grid."""
    ref = np.array(ref, np.int8).reshape(1, 2, 2)
    fams = ["faithful", "corrected", "T"]
    err = np.where(ref > 0, -0.5, np.nan)
    dims = ("pct_percentile", "pct_rho", "pct_R")
    fam = lambda a: (("family", *dims), np.stack([a] * len(fams)))
    return xr.Dataset({"percentile_error_reference": fam(ref), "percentile_error": fam(err),
                       "percentile_error_ci_low": fam(err - 0.1), "percentile_error_ci_high": fam(err + 0.1),
                       "paper_percentile_error": (dims, np.array([-3.0, 1.0, -100.0, -50.0]).reshape(1, 2, 2)),
                       "percentile_beyond_grid": (dims, np.array([0, 0, 0, 1], np.int8).reshape(1, 2, 2))},
                      coords={"pct_percentile": [99.99], "pct_rho": [0.5, 0.9], "pct_R": [1, 3], "family": fams})


def test_reproduction_percentile_caption_counts_add_up(monkeypatch):
    """The §6.1/§6.2 caption's first sentence counts every point of the paper's table in this run: against exact,
    against the simulation and without a value of ours, which add up (issue 31: the reader could not make 20 + 0 of
    32 add up); the figure prints the paper's and our values under the cells, and marks the missing ones in one strip
    row where every family agrees."""
    rep = _pct_rep([1, 2, 0, 0])
    cap = plots.reproduction._reproduction_caption(rep, "pct", "percentile_error_reference",
                                                   [(0, 0), (0, 1), (1, 0), (1, 1)],
                                      "§6.1")
    first = cap.findings[0]
    n, k_ex, k_sim, k_none = first.value
    assert (n, k_ex, k_sim, k_none) == (4, 1, 1, 2) and k_ex + k_sim + k_none == n
    assert first.text.startswith("Of the 4 (percentile, cell) points") and "no value at 2" in first.text
    for c in cap.claims():
        ok, derived = verify(c, lambda source: rep)
        assert ok, f"{c.text!r} states {c.value!r}, the data say {derived!r}"
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.reproduction_percentile_errors(rep, "unused")
    (fig,) = figs
    _check_pct_scatter(fig, rep)
    plt.close(fig)


def _pct_points(ax):
    """(paper's x, our x) of every row of a §6.1/§6.2 dot-plot panel, paired by the row (the nearest whole y), and
    the rows (y) of the "ours not nearer" glyphs; the paper's mark and ours are drawn apart within the row (round 15:
    one over the other, the reader could not tell which was which)."""
    marks = {gid: {round(y): (x, y) for ln in ax.get_lines() if ln.get_gid() == gid
                   for x, y in zip(ln.get_xdata(), ln.get_ydata(), strict=True)} for gid in ("paper", "ours")}
    for row in marks["ours"]:
        assert marks["ours"][row][1] - marks["paper"][row][1] >= 0.3, "the paper's mark and ours overlap in a row"
    pts = [(marks["paper"][y][0], marks["ours"][y][0]) for y in sorted(marks["ours"])]
    flags = [y for ln in ax.get_lines() if ln.get_gid() == "not_nearer" for y in ln.get_ydata()]
    for ln in ax.get_lines():  # round 31: inside the axes the ✖ read as a data point: it sits right of the panel
        if ln.get_gid() == "not_nearer":
            xs = ln.get_transform().transform(np.column_stack([ln.get_xdata(), ln.get_ydata()]))[:, 0]
            assert xs.min() > ax.get_window_extent().x1 and not ln.get_clip_on()
    return np.array(pts, float).reshape(-1, 2), flags


def _check_pct_scatter(fig, rep):
    """The §6.1/§6.2 dot plot against its data: one row per (percentile, cell) with both values per panel, none
    where we have no value (named once, under the panels); all panels on one x scale; each panel's title count is
    the number of rows whose ● is nearer to 0 than the paper's ○, each other row carries a separate ✖ glyph at its end
    (round 15: a heavy edge could not be recounted where the marks coincide), and the title states every panel's
    count; no legend key of a colour is a circle (round 14: the colours' circles read as a shape); the x axis names
    its linear range."""
    panels = [ax for ax in fig.get_axes() if ax.get_xscale() == "symlog"]
    assert len(panels) == 3
    assert len({ax.get_xlim() for ax in panels}) == 1
    paper = rep["paper_percentile_error"].values
    for ax, fam in zip(panels, ("faithful", "corrected", "T"), strict=True):
        ours = rep["percentile_error"].sel(family=fam).values
        both = np.isfinite(ours) & np.isfinite(paper)
        pts, flags = _pct_points(ax)
        assert len(pts) == int(both.sum()), (fam, pts)
        assert sorted(map(tuple, pts)) == sorted(zip(paper[both], ours[both], strict=True))
        k = int((np.abs(pts[:, 1]) < np.abs(pts[:, 0])).sum())
        assert f"smaller than the paper's at {k} of {len(pts)} points" in ax.get_title(loc="left")
        assert len(flags) == len(pts) - k
        nearer = {round(y) for y in sorted(flags)}
        assert len(nearer) == len(flags)  # one glyph per row, at the row's own y
        assert f"linear within ±{plots.reproduction._PCT_LINTHRESH:g}" in ax.get_xlabel()
        th = plots.reproduction._PCT_LINTHRESH  # the switch points carry labelled ticks (round 16)
        labels = dict(zip(ax.get_xticks(), (t.get_text() for t in ax.get_xticklabels()), strict=True))
        assert labels[th] == f"+{th:g}" and labels[-th] == f"−{th:g}"
        if fam == "faithful":
            assert f"the paper's error is the larger at {k} of {len(pts)} points" in fig._suptitle.get_text()
        else:
            assert f"{k} of {len(pts)} (ours " in fig._suptitle.get_text()
    from matplotlib.lines import Line2D

    (leg,) = fig.legends
    for h, t in zip(leg.legend_handles, leg.get_texts(), strict=True):
        if isinstance(h, Line2D) and h.get_marker() == "o":
            # circles: the paper's mark only (no colour keyed by a circle)
            assert t.get_text().startswith("the paper's"), t.get_text()
    flag = [t.get_text() for h, t in zip(leg.legend_handles, leg.get_texts(), strict=True)
            if isinstance(h, Line2D) and h.get_marker() == plots.reproduction._PCT_NOT_NEARER["marker"]]
    assert len(flag) == 1 and "not nearer to 0" in flag[0]
    note = " ".join(t.get_text() for t in fig.texts)
    ref = rep["percentile_error_reference"].sel(family="faithful").values
    assert f"at {int((ref == 0).sum())} points" in note
    assert min(t.get_fontsize() for ax in panels for t in ax.get_xticklabels() + ax.get_yticklabels()) >= 9


def test_reproduction_scatter_title_follows_the_data(monkeypatch):
    """The same code on two datasets with different outcomes gives different titles: ours −0.5 against the paper's
    −3 and +1 (the paper's larger at 2 of 2), then ours −5 and +2 (the paper's larger at 0 of 2); each title's count
    is the points in the first panel's shaded area."""
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    rep = _pct_rep([1, 2, 0, 0])
    plots.reproduction_percentile_errors(rep, "unused")
    rep2 = rep.copy(deep=True)
    rep2["percentile_error"].loc[{"family": "faithful"}] = np.where(
        np.isfinite(rep["percentile_error"].sel(family="faithful").values), [[[-5.0, 2.0], [np.nan, np.nan]]], np.nan)
    plots.reproduction_percentile_errors(rep2, "unused")
    (f1, f2) = figs
    assert "larger at 2 of 2 points" in f1._suptitle.get_text()
    assert "larger at 0 of 2 points" in f2._suptitle.get_text()
    for fig, data in ((f1, rep), (f2, rep2)):
        _check_pct_scatter(fig, data)
        plt.close(fig)


def _draw_wasserstein(monkeypatch, cmp):
    """(figure, caption) of the Wasserstein figure of ``cmp``, drawn, not saved."""
    figs = []
    monkeypatch.setattr(plots.common, "save",
                        lambda fig, stem, caption=None, **kw: figs.append((fig, caption)) or [stem])
    plots.wasserstein_vs_rho(cmp, "unused")
    (fig, cap), = figs
    return fig, cap


def test_wasserstein_caption_names_the_noise_as_drawn(monkeypatch):
    """The Wasserstein figure draws the simulation's noise as a filled area (where a method is set against the
    simulation: exact did not run at the second load); its caption and legend name that shape — round 5's caption
    said "grey bars" over an area. Any bar-like artist in the noise colour, or a caption word for another shape,
    fails. Two lines with W < 0.001 at one load get a ▼ each above the bottom edge at that load, in their colours."""
    import matplotlib.colors as mcolors
    from matplotlib.collections import PolyCollection

    sim, approx = jsq_run({0.5: {"A": 1.3, "A*": 0.9995, "exact": 1.0, "T": 1.0005},
                           0.6: {"A": 1.3, "A*": 0.97, "exact": None, "T": 1.003}})
    cmp = compare(sim, approx, CFG)
    fig, cap = _draw_wasserstein(monkeypatch, cmp)
    noise = mcolors.to_rgba(plots.common.NOISE_FILL)
    areas = [c for ax in fig.get_axes() for c in ax.collections if isinstance(c, PolyCollection)
             and np.allclose(c.get_facecolor()[0], noise)]
    assert areas, "the noise is drawn as an area"
    how = " ".join(cap.how)
    assert plots.common.NOISE_WORDS in how.lower() and "bar" not in how.lower()
    legend = [t.get_text() for ax in fig.get_axes() if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert any(t.startswith(plots.common.NOISE_WORDS.removeprefix("a ")) for t in legend)
    floor = [ln for ax in fig.get_axes() for ln in ax.get_lines()
             if ln.get_marker() == plots.wasserstein._FLOOR_MARK["marker"]]
    assert sorted(mcolors.to_hex(ln.get_color()) for ln in floor) == sorted(
        mcolors.to_hex(c) for c in (plots.wasserstein._BEST_CORRECTED["color"], plots.common._TAIL_COLOR))
    assert all(list(ln.get_xdata()) == [0.5] and list(ln.get_ydata()) == [plots.common.W_FLOOR] for ln in floor)
    assert [t.get_text() for t in fig.get_axes()[0].get_xticklabels()] == ["0.5", "0.6"], "ticks at the grid loads"
    assert "▼ in its colour just above the bottom edge" in how
    # inside the axes, clear of the tick labels under the bottom edge (round 21: the ▼s sat on the labels 0.1, 0.3)
    fig.canvas.draw()
    for ln in floor:
        ax, (y,) = ln.axes, ln.get_transform().transform(np.c_[ln.get_xdata(), ln.get_ydata()])[:, 1]
        half = ln.get_markersize() / 2 * fig.dpi / 72
        assert y - half >= ax.get_window_extent().y0 + 1, (y, half, ax.get_window_extent())
    # round 15: the load axis names its scale; T's point against the simulation (ρ = 0.6) is a shape of its own,
    # not a hollow ✖ that reads as the filled one at print size, and the legend's key and the words say which
    assert fig.get_axes()[0].get_xlabel() == "load ρ (scale −log10(1 − ρ))"
    marks = {ln.get_gid(): ln for ax in fig.get_axes() for ln in ax.get_lines() if ln.get_gid()}
    vs_exact, vs_sim = marks[f"T:{REF_EXACT}"], marks[f"T:{REF_SIMULATION}"]
    assert list(vs_exact.get_xdata()) == [] and list(vs_sim.get_xdata()) == [0.6]  # at 0.5 T is on the floor (▼)
    assert vs_exact.get_marker() == plots.wasserstein.METHOD_MARKERS["T"] == "X" and vs_sim.get_marker() == "+"
    assert "(hollow; method T: +)" in fig._suptitle.get_text() and "method T a bold +" in how
    assert any(t.get_text().startswith("hollow (method T: +)") for t in fig.get_axes()[-1].get_legend().get_texts())
    h, lab = plots.wasserstein._w_legend(cmp, True)
    key = next(h for h, t in zip(h, lab, strict=True) if t.startswith("hollow (method T: +)"))
    assert [ln.get_marker() for ln in key] == ["o", "+"]  # the key: both glyphs, as drawn
    plt.close(fig)


def test_wasserstein_layout_is_legible(monkeypatch):
    """The Wasserstein figure on a load axis that spreads the high loads (−log(1 − ρ): 0.9 to 0.95 three quarters
    as wide as 0.5 to 0.8, not a sixth), ticks upright, one panel per R with the legend in the free slot; every word
    ≥ 9 pt; no letters scattered over the panels (round 12: ~6 px at display size)."""
    sim, approx = jsq_run({r: {"A": 1.3, "B": 1.31, "C": 1.6, "A*": 0.95, "exact": 1.0, "T": 1.02}
                           for r in (0.5, 0.8, 0.9, 0.95)})
    cmp = compare(sim, approx, CFG)
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.wasserstein_vs_rho(cmp, "unused")
    (fig,) = figs
    fig.canvas.draw()
    panel = fig.get_axes()[0]
    assert panel.get_xscale() == "function"
    u = panel.transData.transform([(r, 1.0) for r in (0.5, 0.8, 0.9, 0.95)])[:, 0]
    assert (u[3] - u[2]) / (u[1] - u[0]) == pytest.approx(np.log10(2) / np.log10(2.5), rel=0.01)  # linear: 1/6
    assert all(t.get_rotation() == 0 for t in panel.get_xticklabels())
    assert not panel.texts, [t.get_text() for t in panel.texts]
    panels = [ax for ax in fig.get_axes() if ax.axison and ax.get_yscale() == "log"]
    assert len(panels) == cmp.sizes["R"]
    slot = [ax for ax in fig.get_axes() if not ax.axison and ax.get_legend() is not None]
    assert len(slot) == 1
    texts = [t for ax in panels for t in ax.get_xticklabels() + ax.get_yticklabels() + [ax.xaxis.label]
             if t.get_text()] + list(slot[0].get_legend().get_texts())
    assert min(t.get_fontsize() for t in texts) >= 9
    plt.close(fig)


def test_wasserstein_markers_of_equal_w_stand_side_by_side(monkeypatch):
    """Round 20's reader: at high load the three lines' markers stacked on one another (W's alike), unreadable. Here
    A, A* and T have the same W at every load: each line's markers sit at their load's position shifted by their own
    offset, the neighbours at least DODGE_PT apart (display points), the middle one on the tick; the caption says so."""
    sim, approx = jsq_run({r: {"A": 1.02, "A*": 1.02, "exact": 1.0, "T": 1.02} for r in (0.5, 0.9)})
    cmp = compare(sim, approx, CFG)
    fig, cap = _draw_wasserstein(monkeypatch, cmp)
    fig.canvas.draw()
    ax = fig.get_axes()[0]
    pt = fig.dpi / 72.0
    at = {}
    for ln in ax.get_lines():
        if str(ln.get_gid()).endswith(f":{REF_EXACT}") and len(ln.get_xdata()):
            xy = ln.get_transform().transform(np.column_stack([ln.get_xdata(), ln.get_ydata()]))
            at[ln.get_gid().split(":")[0]] = xy
    assert set(at) == {"A–F", "A*–F*", "T"}
    ticks = ax.transData.transform([(r, 1.0) for r in (0.5, 0.9)])[:, 0]
    for k in range(2):
        xs = sorted(xy[k, 0] for xy in at.values())
        assert np.diff(xs).min() >= plots.wasserstein.DODGE_PT * pt - 0.5, xs
        assert xs[1] == pytest.approx(ticks[k], abs=0.5)
        assert len({round(xy[k, 1], 3) for xy in at.values()}) == 1  # the same W: one height, apart only in x
    assert f"side by side, {plots.wasserstein.DODGE_PT:g} points apart" in " ".join(cap.how)
    plt.close(fig)


def _w_lines(ax):
    """{label of a Wasserstein line: W per load} read back from a panel's drawn lines (the NaN where the line is
    broken)."""
    styles = {plots.wasserstein._BEST_FAITHFUL["color"]: "faithful", plots.wasserstein._BEST_CORRECTED["color"]:
              "corrected", plots.common._TAIL_COLOR: "T"}
    import matplotlib.colors as mcolors

    out = {}
    for ln in ax.get_lines():
        name = next((v for k, v in styles.items() if mcolors.to_hex(k) == mcolors.to_hex(ln.get_color())), None)
        if name and ln.get_linestyle() not in ("None", "") and len(ln.get_xdata()) > 1:
            out[name] = np.asarray(ln.get_ydata(), float)
    return out


@pytest.mark.parametrize("scales, k", [({"A": 1.3, "A*": 1.05, "T": 1.02}, 2), ({"A": 1.01, "A*": 1.3, "T": 1.2}, 0)])
def test_wasserstein_headline_is_read_from_one_panel(monkeypatch, scales, k):
    """The title's count compares lines drawn on the same axes: at each load the best of A–F (bold grey) against the
    best corrected line (A*–F* or T). Two datasets with different winners give different titles, and each title's
    count is what the lines show."""
    sim, approx = jsq_run({r: {**scales, "exact": 1.0} for r in (0.5, 0.8)})
    cmp = compare(sim, approx, CFG)
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.wasserstein_vs_rho(cmp, "unused")
    (fig,) = figs
    lines = _w_lines(fig.get_axes()[0])
    assert set(lines) == {"faithful", "corrected", "T"}
    shown = int((np.fmin(lines["corrected"], lines["T"]) < lines["faithful"]).sum())
    assert shown == k
    assert f"closer than the closest of A–F at {k} of 2 cells" in fig._suptitle.get_text()
    plt.close(fig)


def test_wasserstein_legend_names_every_symbol():
    """Round 10: the strip's ×, ∅ and the floor's ▼ are in the legend (only the ones drawn), with the three lines."""
    cmp = compare(*jsq_run({0.5: {"A": 1.3, "A*": 1.05, "exact": 1.0, "T": 1.01}}), CFG)
    _, lab = plots.wasserstein._w_legend(cmp, False, {"not_run", "invalid"}, True)
    assert any(t.startswith("strip mark: not run") for t in lab), lab
    assert any(t.startswith("strip mark: invalid fit") for t in lab), lab
    assert any(t.startswith("▼ just above the bottom edge: W < 0.001") for t in lab), lab
    assert [x.split("\n")[0] for x in lab[:3]] == [plots.wasserstein._BEST_FAITHFUL["label"],
                                                   plots.wasserstein._BEST_CORRECTED["label"], "T (bound)"]
    _, lab = plots.wasserstein._w_legend(cmp, False)
    assert not any(t.startswith(("strip mark", "▼")) for t in lab), "nothing drawn, nothing named"


def test_mgr_error_panel_titles_state_their_finding():
    """The M/G/R error row's panel titles carry the range of the errors they draw and a verdict from the CIs:
    conservative where every CI lies above 0, else how many points lie within ±5 %; the exponential model's T and the
    law methods are told apart."""
    y = np.array([10.0, 185.0, np.nan])
    vals = {"deterministic": {None: (y, y - 5, y + 5), "T": (np.array([-1.0, 8.0, np.nan]),) * 3},
            "uniform": {None: (np.array([90.0, 95.0, np.nan]),) * 3, "T": (np.array([3.0, 4.0, np.nan]),) * 3}}
    assert plots.laws._law_panel_finding(vals, True) == "\n+10 to +185 % (conservative)"
    assert plots.laws._law_panel_finding(vals, False) == "\n-1 to +8 % (3 of 4 within ±5 %)"
    assert plots.laws._law_panel_finding({"x": {None: (np.full(2, np.nan),) * 3}}, True) == ""


def mgr_two_laws(noise=None) -> xr.Dataset:
    """A synthetic M/G/R comparison: R = 3, loads 0.5/0.8/0.9, two laws beside the exponential, methods A and T
    (``noise``: every cell's sim_noise_wasserstein)."""
    sh = ("service", "R", "rho")
    vs = np.array([np.nan, 0.8, 0.4])[:, None, None] * np.array([1.0, 1.5, 2.0])[None, None, :]
    w = np.stack([vs * 0.8, vs * 1.2], -1)
    cmp = xr.Dataset({"wasserstein_vs_exponential_sim": (sh, vs),
                      "wasserstein_mean": (sh + ("approximation",), w),
                      "usable": (sh + ("approximation",), np.ones(w.shape, np.int8)),
                      "sim_run_valid": (sh, np.ones(vs.shape, np.int8))},
                     coords={"service": ["exponential", "deterministic", "uniform"], "R": [3], "rho": [0.5, 0.8, 0.9],
                             "approximation": ["A", "T"]})
    if noise is not None:
        cmp["sim_noise_wasserstein"] = (sh, np.full(vs.shape, noise))
    return cmp


def test_mgr_distance_figure_is_legible_and_trimmed(tmp_path, monkeypatch):
    """The M/G/R distance figure on a synthetic run with two laws: every text a reader must read is ≥ 9 pt, the W
    axis spans the drawn markers within a factor 2 (no empty decade), one kind of marker (no second, hollow
    distance), every marker inside its own load's category, and no per-cell "closest method" table (issue 31)."""
    cmp = mgr_two_laws()
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.mgr_laws_distance(cmp, tmp_path / "x")
    fig = figs[0]
    fig.canvas.draw()
    texts = [t for ax in fig.get_axes() for t in ax.texts + [ax.title, ax._left_title, ax.xaxis.label,
                                                                ax.yaxis.label] + ax.get_xticklabels()
             + ax.get_yticklabels() if t.get_text() and t.get_visible()]
    assert texts and min(t.get_fontsize() for t in texts) >= 9, sorted((t.get_fontsize(), t.get_text())
                                                                        for t in texts)[:3]
    top = fig.get_axes()[0]
    lo, hi = top.get_ylim()
    drawn = np.concatenate([ln.get_ydata() for ln in top.get_lines() if ln.get_marker() == "o"])
    assert drawn.min() / lo < 2 and hi / drawn.max() < 2, (lo, hi, drawn)
    faces = {ln.get_markerfacecolor() for ln in top.get_lines() if ln.get_marker() == "o"}
    assert "white" not in faces
    assert [t.get_text() for t in top.get_xticklabels()] == ["0.5", "0.8", "0.9"]
    for ln in top.get_lines():
        if ln.get_marker() == "o":
            x = np.asarray(ln.get_xdata(), float)
            assert np.all(np.abs(x - np.round(x)) < 0.45), x
    words = " ".join(t.get_text() for t in texts) + fig._suptitle.get_text()
    assert "closest" not in words
    assert "median W: deterministic" in fig._suptitle.get_text()  # farthest first
    plt.close(fig)


def mgr_law_rows(law=(0.02, -0.01), half=0.02, expo=(0.9, 1.8)) -> xr.Dataset:
    """:func:`mgr_two_laws` with 99.9th-percentile errors: the exponential model's T ``expo`` per law (+90 % / +180 %,
    CI ±10 %), T with the law ``law`` per law (CI ± ``half``), at every load."""
    cmp = mgr_two_laws()
    sh = ("service", "R", "rho")
    e = np.array([np.nan, *expo])[:, None, None] * np.ones((1, 1, 3))
    cmp["relative_percentile_error_mean"] = (sh + ("approximation", "percentile"),
                                             np.stack([e, e], -1)[..., None])
    for v, d in (("ci_low", -0.1), ("ci_high", 0.1)):
        cmp[f"relative_percentile_error_{v}"] = cmp["relative_percentile_error_mean"] + d
    cmp["few_tail_customers"] = (sh + ("percentile",), np.zeros((3, 1, 3, 1), np.int8))
    cmp = cmp.assign_coords(percentile=[99.9], law_method=["T"])
    le = np.array([np.nan, *law])[:, None, None] * np.ones((1, 1, 3))
    cmp["law_relative_error_mean"] = (sh + ("law_method", "percentile"), le[..., None, None])
    cmp["law_relative_error_ci_low"] = cmp["law_relative_error_mean"] - half
    cmp["law_relative_error_ci_high"] = cmp["law_relative_error_mean"] + half
    return cmp


def _all_words(fig, cap) -> str:
    """Every text of a figure (suptitle, axes' titles, labels, ticks, texts, legends) and its caption, one string."""
    texts = [fig._suptitle.get_text() if fig._suptitle else ""] + [t.get_text() for leg in fig.legends
                                                                    for t in leg.get_texts()]
    for ax in fig.get_axes():
        texts += [ax.get_title(loc=k) for k in ("left", "center", "right")] + [ax.get_xlabel(), ax.get_ylabel()]
        texts += [t.get_text() for t in ax.texts + ax.get_xticklabels()]
    return "\n".join(texts + [cap.text()])


def test_mgr_figures_name_the_jsq_ps_system_not_a_bare_mmr(monkeypatch):
    """Round 17: "M/M/R" reads as the central-queue M/M/c, not the JSQ-PS farm with exponential service: both M/G/R
    figures say "JSQ-PS with exponential service" in their title / legend and caption, and never a bare M/M/R. The
    distance figure's title gives each law's SCV (a lognormal of SCV 0.62 is no usual lognormal) and its legend says
    what no grey means; the percentile figure's caption names the law method's marker as drawn (hollow △, round 17:
    it said "filled marker") and a law method's label beyond ±5 % prints its 95 % CI (whether it spans 0)."""
    out = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: out.append((fig, caption)) or [])
    laws = ["deterministic", "uniform:low=0,high=2"]
    plots.mgr_laws_distance(mgr_two_laws(noise=0.5), "unused", laws=laws)
    plots.mgr_laws_percentile(mgr_law_rows(law=(0.08, -0.01), half=0.1, expo=(0.1, 1.8)), "unused", laws=laws)
    (dist, dcap), (pct, pcap) = out
    for fig, cap in out:
        words = _all_words(fig, cap)
        assert not re.search(r"M/M/R(?!-JSQ-PS)", words), words
        assert plots.laws.EXPO_SYSTEM == "JSQ-PS with exponential service" and plots.laws.EXPO_SYSTEM in cap.what
    assert plots.laws.EXPO_SYSTEM in dist._suptitle.get_text()
    assert "M/M/R-JSQ-PS" in dcap.what and "not the central-queue M/M/c" in dcap.what
    assert any(t.get_text() == f"method T for {plots.laws.EXPO_SYSTEM}" for t in pct.legends[0].get_texts())
    head = dist._suptitle.get_text()
    assert "deterministic (SCV 0) " in head and "uniform (SCV 0.33) " in head, head
    assert any("no grey: the noise lies below the axis" in t.get_text() for t in dist.legends[0].get_texts())
    # the marker's words follow the drawn face
    ax = pct.get_axes()[0]
    tri = [ln for ln in ax.get_lines() if ln.get_marker() == "^"]
    assert tri and {ln.get_markerfacecolor() for ln in tri} == {"white"}
    assert "method T with the law itself (hollow triangle △)" in pcap.what and "filled" not in pcap.what
    # +8 % (CI −2 … +18 %) prints its CI; −1 % (within ±5 %) and the exponential model's ✕ do not
    labels = [t.get_text() for t in ax.texts]
    assert labels.count("+8\nCI −2…+18") == 3, labels
    assert "−1" in labels and not any("CI" in t for t in labels if not t.startswith("+8"))
    pct.canvas.draw()  # a CI label clear of its neighbour's mean (+8 with its CI beside the ✕'s +10, same height)
    r = pct.canvas.get_renderer()
    boxes = [t.get_window_extent(r) for t in ax.texts if t.get_text()[:1] in "+−"]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    # a CI end near 0 prints the digit that shows its side of 0, never a bare "0" (round 17 read "CI 0…+14")
    assert plots.laws._mean_label(7.0, -0.3, 14.2, True) == "+7\nCI −0.3…+14"
    assert plots.laws._mean_label(7.0, 0.04, 14.2, True) == "+7\nCI +0.04…+14"
    assert plots.laws._mean_label(7.0, -0.3, 14.2, False) == "+7"
    for fig, _ in out:
        plt.close(fig)


@pytest.mark.parametrize("why", ["few", "guard"])
def test_mgr_percentile_caption_names_the_absent_cells_and_why(monkeypatch, why):
    """Round 20's reader: the line under the M/G/R percentile figure named R = 10, ρ = 0.5 (no point), the caption did
    not. Here the laws ran at the third load but no point has a value there — too few customers beyond the
    percentile, or every law's run judged too short by the guard: the caption names the cell and the reason, and its
    claim re-derives the cells from the comparison; with every cell drawn there is no such sentence."""
    out = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: out.append((fig, caption)) or [])
    cmp = mgr_law_rows()
    plots.mgr_laws_percentile(cmp, "unused")
    assert not [c for c in out[0][1].claims() if "no point in the figure" in c.text]
    cmp = mgr_law_rows()
    laws = [s for s in cmp["service"].values.tolist() if s != "exponential"]
    cell = {"service": laws, "rho": cmp["rho"].values[2]}
    if why == "few":
        cmp["few_tail_customers"].loc[cell] = 1
        cmp["law_relative_error_mean"].loc[cell] = np.nan
    else:
        cmp["sim_run_valid"].loc[cell] = 0
    plots.mgr_laws_percentile(cmp, "unused")
    fig, cap = out[1]
    claims = [c for c in cap.claims() if "no point in the figure" in c.text]
    assert len(claims) == 1 and claims[0] in cap.limits
    R, rho = int(cmp["R"].values[0]), float(cmp["rho"].values[2])
    words = {"few": "fewer than 100 customers per replication lie beyond the percentile",
             "guard": "the run-length guard judged every law's simulation too short"}[why]
    assert claims[0].text == f"One cell of the sub-grid the laws ran at has no point in the figure: at R = {R}, " \
                             f"ρ = {rho:g} {words}" + (" in every law's simulation (reference too short)." if
                                                         why == "few" else ".")
    ok, derived = verify(claims[0], lambda source: cmp)
    assert ok, (claims[0].value, derived)
    for f, _ in out:
        plt.close(f)


def test_mgr_percentile_figure_labels_clear_of_markers_and_spines(tmp_path, monkeypatch):
    """The M/G/R percentile figure: each mean printed above its CI (never on its marker, never across the y axis),
    inside the axes; the panel title one line; the suptitle the headline's two ranges."""
    cmp = mgr_law_rows()
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.mgr_laws_percentile(cmp, tmp_path / "x")
    fig = figs[0]
    fig.canvas.draw()
    ax = fig.get_axes()[0]
    r = fig.canvas.get_renderer()
    frame = ax.get_window_extent(r)
    labels = [t for t in ax.texts if t.get_text()[:1] in "+−"]
    assert len(labels) == 12  # two laws × three loads × (T, T with the law)
    for t in labels:
        box = t.get_window_extent(r)
        assert frame.x0 < box.x0 and box.x1 < frame.x1 and box.y1 < frame.y1, t.get_text()
        assert box.y0 >= ax.transData.transform(t.xy)[1], t.get_text()  # above its CI's top, clear of the marker
    assert "\n" not in ax.get_title(loc="left")
    assert "method T errs by" in fig._suptitle.get_text() and "with the law itself" in fig._suptitle.get_text()
    # each CI drawn above its marker, caps wider than it, filled markers hollow (round 16: a filled ▲ covered the lower
    # half of its CI, so "CI spans 0" could not be seen)
    marks = [ln for ln in ax.get_lines() if ln.get_marker() in ("x", "^") and len(ln.get_xdata()) == 1]
    bars = [c for c in ax.containers if c.has_yerr]
    assert len(marks) == len(bars) == 12
    for ln in marks:
        assert ln.get_marker() == "x" or ln.get_markerfacecolor() == "white"
    for bar in bars:
        assert all(cap.get_zorder() > max(ln.get_zorder() for ln in marks) for cap in bar[1])
        assert all(col.get_zorder() > max(ln.get_zorder() for ln in marks) for col in bar[2])
        assert all(cap.get_markersize() > ln.get_markersize() for cap in bar[1] for ln in marks)  # 2 × capsize
    plt.close(fig)


@pytest.mark.parametrize(("law", "ci", "words"), [
    ([-0.004, 0.08, np.nan], [(-0.05, 0.04), (-0.15, 0.31)],
     "method T with the law itself by 0 to +8 %: 1 of 2 within ±5 %, the other within noise (95 % CI spans 0)"),
    ([-0.01, 0.08, 0.12], [(-0.05, 0.04), (0.02, 0.14), (-0.01, 0.3)],
     "method T with the law itself by -1 to +12 %: 1 of 3 within ±5 %, 1 of the other 2 within noise (95 % CI "
     "spans 0)"),
    ([-0.01, 0.02, np.nan], [(-0.05, 0.04), (-0.01, 0.05)], "method T with the law itself by -1 to +2 %: all 2 "
     "within ±5 %"),
])
def test_mgr_headline_states_both_ranges(law, ci, words):
    """The M/G/R title's finding: the exponential model's method T's error range with its verdict, and each law
    method's — "method T", never a bare T (which reads as the sojourn time) — with how many points lie within ±5 % and
    whether the others' 95 % CIs span 0 (round 15: +8 %, CI −15 to +32 %, is noise and the title must say so); a
    mean that rounds to 0 is "0", never "-0" (title, labels and the caption's claims, each re-derived)."""
    q = 99.9
    sh = ("service", "R", "rho")
    lo, hi = (np.array([c[k] for c in ci] + [np.nan] * (3 - len(ci))).reshape(1, 1, 3, 1, 1) for k in (0, 1))
    cmp = xr.Dataset(
        {"relative_percentile_error_mean": (sh + ("approximation", "percentile"),
                                            np.array([0.08, 1.86, np.nan]).reshape(1, 1, 3, 1, 1)),
         **{f"relative_percentile_error_ci_{k}": (sh + ("approximation", "percentile"),
                                                  np.array([a, b, np.nan]).reshape(1, 1, 3, 1, 1))
            for k, a, b in (("low", 0.05, 1.5), ("high", 0.11, 2.2))},
         "few_tail_customers": (sh + ("percentile",), np.zeros((1, 1, 3, 1), np.int8)),
         "law_relative_error_mean": (sh + ("law_method", "percentile"), np.array(law).reshape(1, 1, 3, 1, 1)),
         "law_relative_error_ci_low": (sh + ("law_method", "percentile"), lo),
         "law_relative_error_ci_high": (sh + ("law_method", "percentile"), hi),
         "sim_run_valid": (sh, np.ones((1, 1, 3), np.int8))},
        coords={"service": ["deterministic"], "R": [10], "rho": [0.8, 0.9, 0.95], "approximation": ["T"],
                "law_method": ["T"], "percentile": [q]})
    assert plots.laws._mgr_headline(cmp, ["deterministic"]) == (
        "At the 99.9th percentile the exponential model's method T errs by +8 to +186 % (conservative);\n" + words)
    claims = plots.laws._law_method_claims(cmp, ["deterministic"])
    for c in claims:
        assert verify(c, lambda source: cmp)[0], c.text
        assert "-0.0 %" not in c.text and "+0.0 %" not in c.text
    assert [plots.laws._pm(x, d) for x, d in ((-0.4, 0), (0.3, 0), (-0.04, 1), (-0.6, 0), (7.96, 0))] == [
        "0", "0", "0.0", "-1", "+8"]
    noise = [c for c in claims if "beyond ±5 %" in c.text]
    assert len(noise) == ("within noise" in words) and all("spans 0" in c.text for c in noise)


def test_reproduction_map_panels_labelled_and_colour_blind_safe(monkeypatch):
    """The §6.4 map: "load ρ" under every panel (round 12: the top two had none), A–F in the one method palette of
    every figure (round 16), each letter in the ink that reads on its colour, a tie with the paper hatched over our
    letter (round 18; the paper's letter right above), and the ratio panel's title says that both W are against the
    simulation."""
    from matplotlib.colors import to_hex

    from sojourn.jsq_ps.claims import SAME, TIE

    R, rho = [1, 2], [0.5, 0.9]
    fams = ["faithful", "corrected"]
    w = np.array([[[0.1, 0.2], [0.3, 0.4]], [[0.01, 0.2], [0.03, 0.4]]])
    rep = xr.Dataset({"paper_best_method": (("R", "rho"), np.array([["D", "C"], ["C", "D"]])),
                      "best_method": (("family", "R", "rho"), np.array([[["E", "C"], ["C", "D"]]] * 2)),
                      "agreement": (("R", "rho"), np.array([[TIE, SAME], [SAME, SAME]], np.int8)),
                      "best_wasserstein": (("family", "R", "rho"), w),
                      "best_wasserstein_ci_low": (("family", "R", "rho"), w * 0.9),
                      "best_wasserstein_ci_high": (("family", "R", "rho"), w * 1.1)},
                     coords={"R": R, "rho": rho, "family": fams}, attrs={"agreement_cells": 4})
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.reproduction_map(rep, "unused")
    (fig,) = figs
    maps = [ax for ax in fig.get_axes() if ax.get_images()]
    assert len(maps) == 3 and all(ax.get_xlabel() == "load ρ" for ax in maps)
    # one A–F palette in every figure (round 16: this map had its own, F in exact's pink, D orange, C light blue)
    palette = {to_hex(METHOD_COLORS[m]) for m in "ABCDEF"}
    cmap = maps[0].get_images()[0].get_cmap()
    got = {to_hex(cmap(k)) for k in range(cmap.N)}
    assert got <= palette and {to_hex(METHOD_COLORS[m]) for m in "CD"} <= got
    assert to_hex(METHOD_COLORS["exact"]) not in palette | got
    legend = {t.get_text(): to_hex(h.get_facecolor()) for t, h in zip(fig.legends[0].get_texts(),
                                                                       fig.legends[0].legend_handles, strict=True)
              if t.get_text() in "ABCDEF"}
    assert legend and all(c == to_hex(METHOD_COLORS[m]) for m, c in legend.items())
    assert "against the simulation" in maps[2].get_title(loc="left")
    assert all(t.get_color() == plots.reproduction._ink(plots.reproduction._MAP_COLORS[t.get_text()])
               for t in maps[0].texts if t.get_text() in "ABCDEF")
    # a tie with the paper (round 18: judged against the simulation): our letter, hatched over its colour, and
    # (round 28) the paper's method it ties with said under it (the paper's D stands in the top map right above)
    hatched = [p for p in maps[1].patches if p.get_hatch() == "///"]
    assert len(hatched) == 1 and hatched[0].get_xy() == (-0.5, -0.5)
    assert [t.get_text() for t in maps[1].texts][:1] == ["E\n≈ paper D"]
    plt.close(fig)


@pytest.mark.parametrize("outside", [False, True])
def test_reproduction_map_caption_names_each_mark_as_drawn(monkeypatch, outside):
    """The §6.4 caption names what the maps draw (round 15): a cell in both grids whose simulation is too short is
    light grey with ◇ (not "not in the grid"); "light grey without a mark" is said only where such a cell is drawn
    (the paper's grid lacks the last load when ``outside``); the cross and the tie say "(none here)" when there is
    none; the ratio's colour scale is one log scale, symmetric about ×1, and its label says so."""
    from sojourn.jsq_ps.claims import SAME, TOO_SHORT

    rep = _rep({"faithful": [(0.1, 0.2, 0.3), (0.1, 0.2, 0.3), (0.1, 0.2, 0.3)],
                "corrected": [(0.001, 0.002, 0.003), (0.3, 0.5, 0.6), (0.1, 0.2, 0.3)]})
    rep["agreement"][:] = [[SAME, SAME, TOO_SHORT]]
    if outside:
        rep["paper_best_method"][:] = [["D", "C", ""]]
        rep["agreement"][:] = [[SAME, SAME, -1]]
    rep.attrs["agreement_cells"] = 2
    text = plots.reproduction._reproduction_map_caption(rep).text()
    assert "a cross marks a disagreement (none here)" in text and "a tie (none here)" in text
    assert ("Light grey without a mark: not in this run or not in the paper's grid" in text) == outside
    assert ("light grey with ◇" in text) == (not outside)
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.reproduction_map(rep, "unused")
    (fig,) = figs
    ratio_ax = [ax for ax in fig.get_axes() if ax.get_images()][2]
    norm = ratio_ax.get_images()[0].norm
    for v in (0.3, 1.0, np.log10(500)):  # ×k and ×1/k equally far from the centre: one log scale, not two slopes
        assert norm(v) + norm(-v) == pytest.approx(1.0)
    cbar = next(ax for ax in fig.get_axes() if "symmetric about ×1" in ax.get_ylabel())
    assert "log scale" in cbar.get_ylabel()
    legend_text = " ".join(t.get_text() for t in fig.legends[0].get_texts())
    assert ("light grey: not in this run" in legend_text) == outside
    plt.close(fig)


def test_mgr_distance_title_is_its_caption_claim_and_percentile_figure_says_when_it_has_nothing(monkeypatch):
    """The distance figure's title prints the medians of the caption's claim (one computation, re-derived from the
    data); without a method that takes the law itself the percentile figure is a message, and its caption says so."""
    cmp = mgr_two_laws()
    out = []
    monkeypatch.setattr(plots.common, "save",
                        lambda fig, stem, caption=None, **kw: out.append((fig, caption)) or [stem])
    plots.mgr_laws_distance(cmp, "unused")
    plots.mgr_laws_percentile(cmp, "unused")
    (fig, cap), (msg, msg_cap) = out
    med = next(c for c in cap.findings if c.text.startswith("Median distance"))
    assert verify(med, lambda source: cmp)[0]
    title = fig._suptitle.get_text()
    for law, v in med.value.items():
        assert f"{law} {plots.common._g(v)}" in title
    assert not msg.get_axes()[0].axison
    assert any("no method that takes the service law itself" in t.get_text() for t in msg.get_axes()[0].texts)
    assert any("No method that takes the service law itself ran" in str(x) for x in msg_cap.limits)
    for f in (fig, msg):
        plt.close(f)


@pytest.mark.parametrize("t_scale", [1.003, 0.9])
def test_percentile_titles_change_with_the_data(monkeypatch, t_scale):
    """The corrected map's title says T is never *significantly* optimistic only where no significant negative error
    of T exists (a 10 % short T gets "significantly optimistic at k points"); the A–F map's title gives one headline
    per family computed from the drawn points; the caption names every method reaching the extreme error."""
    cmp, figs = _both_percentile_maps(monkeypatch, {
        0.5: {"A": 1.3, "D": 0.8, "A*": 0.9, "C*": 0.9, "exact": 1.0, "T": t_scale},
        0.6: {"A": 0.6, "D": 1.1, "A*": 0.95, "C*": 0.97, "exact": 1.0, "T": t_scale}})
    (faith, _), (corr, cap) = figs
    t1, t2 = faith._suptitle.get_text(), corr._suptitle.get_text()
    a = against_reference(cmp, "exponential").sel(approximation="T")
    below = int((a["significant"] & (a["reference"] != 0) & (a["error"] < 0)).sum())
    assert (below == 0) == (t_scale > 1)
    assert ("T is never significantly optimistic" in t2) == (below == 0), t2
    assert (f"T is significantly optimistic at {below} point" in t2) == (below > 0), t2
    # the larger |error| first (round 17: "conservative by up to +1 %" led a title whose message was −18 %)
    # every place an extreme prints at is named (round 20: ρ = 0.8 named for a −18 % that ρ = 0.9 had too): the scales
    # are exponential, so A's −40 % at ρ = 0.6 holds at both percentiles
    both = "99th and 99.9th"
    assert f"A–C are optimistic by up to 40 % (ρ = 0.6, {both}) and conservative by up to +30 % (ρ = 0.5, {both})" \
        in t1, t1
    assert f"D–F are optimistic by up to 20 % (ρ = 0.5, {both}) and conservative by up to +10 % (ρ = 0.6" in t1, t1
    for line in (t1 + "\n" + t2).splitlines():
        sizes = [abs(float(v)) for v in re.findall(r"by up to ([-+−]?[\d.]+) %", line.replace("−", "-"))]
        assert sizes == sorted(sizes, reverse=True), line
    # A* and C* both reach -10 % at ρ = 0.5: the caption names both
    text = " ".join(c.text for c in cap.findings if hasattr(c, "text"))
    assert "Most below its reference (optimistic): A* by 10 %" in text and "also " in text and "for C* (" in text, text
    # a side named in words takes the error's size, never a sign against it (round 21: "optimistic by up to -65 %")
    caps = " ".join(getattr(c, "text", c) for _, cp in figs for c in cp.findings + cp.limits)
    for words in (t1, t2, caps):
        assert not re.search(r"(optimistic|below its reference \(optimistic\): \S+) by (up to |at least |≥ )?[-−]",
                             words), words
    if below:  # T's own optimistic points, by their largest size
        worst = float(-a["error"].where(a["significant"] & (a["reference"] != 0)).min()) * 100
        assert f"T is significantly optimistic at {below} point{'s' if below > 1 else ''} (by up to {worst:.0f} %)" \
            in t2, t2
    for f, _ in figs:
        plt.close(f)


def test_reproduction_dot_plot_rows_are_in_table_order():
    """One row per point of the paper's table where some family of ours has a value, sorted by R, then ρ, then
    percentile."""
    rep = _pct_rep([1, 2, 2, 0])
    rows = plots.reproduction._pct_rows(rep)
    Rs, rhos = rep["pct_R"].values, rep["pct_rho"].values
    assert [(int(Rs[k]), float(rhos[b])) for _, b, k in rows] == [(1, 0.5), (1, 0.9), (3, 0.5)]


def test_wasserstein_count_is_the_best_method_maps():
    """'Closer at k of n; m tied' uses the best-method map's tie rule: k is the number of the map's cells whose
    winner is corrected with no A–F method within reach, m those whose methods within reach span both families;
    the tie cells of the map that hold corrected methods only still count as closer."""
    from sojourn.jsq_ps.plots.common import FAITHFUL
    from sojourn.jsq_ps.plots.maps import best_by_reference

    sim, approx = jsq_run({0.5: {"A": 1.3, "A*": 1.05, "T": 1.02, "exact": 1.0},
                           0.8: {"A": 1.0005, "A*": 1.0, "T": 1.0, "exact": 1.0}})
    cmp = compare(sim, approx, CFG)
    b = best_by_reference(cmp)
    spans = np.array([[len({m in FAITHFUL for m in t.split("·")}) == 2 for t in row] for row in b["tied"]])
    corr_win = np.array([[m != "" and m not in FAITHFUL for m in row] for row in b["best"]])
    closer, tied, farther, _ = plots.wasserstein.family_verdict(cmp)
    assert (tied == spans).all() and (closer == corr_win & ~spans).all()
    k, m = int(closer.sum()), int(tied.sum())
    cap = plots.wasserstein._wasserstein_caption(cmp, plots.wasserstein.w_against_reference(cmp, "exponential"),
                                                 "exponential", cmp["R"].values, cmp["R"].values)
    text = " ".join(getattr(c, "text", "") for c in cap.findings)
    assert f"closer than the closest of A–F at {k} of 2 cells" in text
    assert (f"; {m} tied" in text) == (m > 0)
    assert m >= 1  # the 0.8 cell: A within the resolution of A*


@pytest.mark.parametrize("size", [(3.0, 1.2), (9.0, 6.0)])
def test_percentile_map_corner_dot_lies_inside_its_own_cell(size):
    """The dot of a cell set against the simulation lies wholly inside that cell's frame, with its white ring, on
    cells drawn small or large (round 14: on the R = 10 rows it sat on the border, touching the neighbour)."""
    from sojourn.jsq_ps.compare import REF_SIMULATION

    n_rows, n_cols = 5, 4
    err = np.full((n_rows, n_cols, 1), 12.0)
    sig, ref = np.ones(err.shape, bool), np.full(err.shape, REF_SIMULATION)
    status = np.full(err.shape, "", object)
    fig, ax = plt.subplots(figsize=size)
    plots.errors._error_map(ax, err, sig, ref, status, [(0, i) for i in range(n_rows)], n_cols,
                            plt.get_cmap("RdBu"), plots.errors._error_norm(20.0), True, [], {"text": 7, "mark": 4})
    fig.canvas.draw()
    dots = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    assert len(dots) == n_rows * n_cols
    assert all(d.get_markersize() >= 6 for d in dots), "visible at page size (round 15: 5 pt read as tiny)"
    px = fig.dpi / 72.0
    radius = (plots.errors.MAP_DOT["ms"] / 2 + plots.errors.MAP_DOT["mew"] / 2) * px
    inset = plots.errors.SIG_FRAME["inset"]
    for r in range(n_rows):
        for j in range(n_cols):
            (x0, y0), (x1, y1) = ax.transData.transform([(j - 0.5 + inset, r - 0.5 + inset),
                                                         (j + 0.5 - inset, r + 0.5 - inset)])
            lo_x, hi_x, lo_y, hi_y = min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)
            hits = []
            for d in dots:
                cx, cy = d.get_transform().transform((d.get_xdata()[0], d.get_ydata()[0]))
                if lo_x + radius <= cx <= hi_x - radius and lo_y + radius <= cy <= hi_y - radius:
                    hits.append((cx, cy))
            assert len(hits) == 1, f"cell (R row {r}, column {j}) holds {len(hits)} whole dots"
            cx, cy = hits[0]
            assert cx > (lo_x + hi_x) / 2 and cy > (lo_y + hi_y) / 2, "in the top-right corner"
    plt.close(fig)


def test_percentile_caption_names_every_cell_at_the_extreme():
    """The caption's extreme names every cell that reaches the same rounded error — the same method at another R
    (round 14: A's +823 % at R = 5 and R = 10, only R = 10 named) and another method — computed from the errors."""
    R, rho, meth, pct = [3, 5, 10], [0.1, 0.5], ["A", "B"], [99.0]
    err = np.full((3, 2, 2, 1), 0.2)
    err[1, 0, 0, 0], err[2, 0, 0, 0] = 8.2302, 8.2299  # A: +823 % at R = 5 and R = 10
    err[0, 1, 1, 0] = 8.2297  # B: +823 % at R = 3, ρ = 0.5
    err[0, 0, 1, 0] = -0.4
    dims = ("R", "rho", "approximation", "percentile")
    A = xr.Dataset({"error": (dims, err), "significant": (dims, np.ones(err.shape, bool)),
                    "reference": (dims, np.ones(err.shape, int))},
                   coords={"R": R, "rho": rho, "approximation": meth, "percentile": pct})
    claims = plots.errors._pe_extreme_claims(A, "rel", "sig", {})
    text = " ".join(c.text for c in claims)
    assert "Most above: A by +823 % at R = 5, ρ = 0.1, the 99th percentile" in text, text
    assert "the same +823 % also at R = 10, ρ = 0.1, 99th; for B (R = 3, ρ = 0.5, 99th)" in text, text
    err[2, 0, 0, 0] = 8.10  # A's R = 10 now +810 %: no longer named
    text = " ".join(c.text for c in plots.errors._pe_extreme_claims(A.assign(error=(dims, err)), "rel", "sig", {}))
    assert "R = 10" not in text and "for B (R = 3" in text, text


def test_percentile_caption_extreme_names_only_the_cells_that_print_the_same():
    """Round 15: the corrected map's caption said "the same +1 % also at R = 2, 3 and 5, ρ = 0.3, 99th and 99.999th"
    where those cells print +0.9, +0.5 and -0.5: only cells that print the same error are named, and points that are
    not every combination of their R, ρ and percentile are named one by one."""
    R, rho, meth, pct = [2, 3, 5], [0.3], ["C*"], [99.0, 99.999]
    err = np.zeros((3, 1, 1, 2))
    err[2, 0, 0, 0] = 0.0120  # the extreme: +1 %
    err[0, 0, 0, 0], err[1, 0, 0, 1] = 0.0104, 0.0098  # print "+1" too: named
    err[1, 0, 0, 0], err[2, 0, 0, 1], err[0, 0, 0, 1] = 0.009, 0.005, -0.005  # print +0.9, +0.5, -0.5: not named
    dims = ("R", "rho", "approximation", "percentile")
    A = xr.Dataset({"error": (dims, err), "significant": (dims, np.ones(err.shape, bool)),
                    "reference": (dims, np.ones(err.shape, int))},
                   coords={"R": R, "rho": rho, "approximation": meth, "percentile": pct})
    text = " ".join(c.text for c in plots.errors._pe_extreme_claims(A, "rel", "sig", {}))
    assert "Most above: C* by +1 % at R = 5, ρ = 0.3, the 99th percentile" in text, text
    assert "also at (R = 2, ρ = 0.3, 99th; R = 3, ρ = 0.3, 99.999th)" in text, text
    assert "R = 5, ρ = 0.3, 99.999th" not in text and "R = 3, ρ = 0.3, 99th;" not in text, text


def _listed(words: str) -> list[str]:
    """The items of a listing 'a, b and c'."""
    return [w for part in words.split(", ") for w in part.split(" and ")]


def _named_points(text: str) -> list[tuple]:
    """(name or None, R, ρ, percentile) of each point a percentile-error extreme names after 'also': 'at R = 5, ρ = 0.1
    and 0.3, 99th' (every combination), 'at (R = 2, ρ = 0.3, 99th; R = 3, ρ = 0.3, 99.999th)', 'for C* (…)'."""

    out = []
    for m in re.finditer(r"(?:^|; )(?:at \(([^)]*)\)|for (.+?) \(([^)]*)\)|at ([^;]*))", text):
        name, body = m.group(2), m.group(1) or m.group(3) or m.group(4)
        for part in body.split("; "):
            pm = re.fullmatch(r"R = (.+?), ρ = (.+?), (.+)", part)
            assert pm, part
            out += [(name, int(R), float(r), float(p.removesuffix("th"))) for R in _listed(pm.group(1))
                    for r in _listed(pm.group(2)) for p in _listed(pm.group(3))]
    return out


def _drawn_cells(fig, cmp, lines) -> dict:
    """{(method label, R, ρ, percentile): the error printed in the cell} of a percentile-error map as drawn."""
    from matplotlib.text import Text

    Rv, rho = cmp["R"].values.tolist(), cmp["rho"].values.tolist()
    rows = [(sr.label.split(" (")[0], R) for sr in lines for R in Rv]
    cells = {}
    for ax in fig.get_axes():
        title = ax.get_title()
        if not title.endswith("th percentile"):
            continue
        p = float(title.split("th")[0])
        for t in ax.texts:
            x, y = t.get_position()
            if t.get_text() and type(t) is Text:  # not the row names (annotations beside the panel)
                name, R = rows[int(y)]
                cells[(name, R, rho[int(x)], p)] = t.get_text().split("\n")[0]
    return cells


@pytest.mark.parametrize("scales", [
    {0.5: {"A*": 1.0093, "C*": 1.0112, "exact": 1.0, "T": 1.0031}, 0.6: {"A*": 0.82, "C*": 1.0089, "exact": 1.0,
                                                                          "T": 1.0004}},
    {0.5: {"A*": 1.0093, "C*": 0.97, "exact": 1.0, "T": 1.0031}, 0.6: {"A*": 1.0088, "C*": 0.9951, "exact": 1.0,
                                                                        "T": 1.0092}}])
def test_percentile_caption_values_are_the_labels_drawn_in_their_cells(monkeypatch, scales):
    """Round 15: the corrected map's caption named "+1 %" where its cells print +0.9 and +0.5. Every error the caption's
    extremes and the title name equals the label drawn in the cell it names (the same rounding: +0.9 stays +0.9),
    and a bold, framed cell never prints "<0.1" (a difference that counts is printed to its first non-zero decimal)."""

    cmp, figs = _both_percentile_maps(monkeypatch, scales)
    fig, cap = figs[1]
    lines = [s for s in plots.common.series(cmp, "corrected") if s.method != "exact"]
    cells = _drawn_cells(fig, cmp, lines)
    assert cells, "no cell labels found"
    named = 0
    for claim in cap.findings:
        text = getattr(claim, "text", claim)
        m = re.match(r"Most (?:below its reference \(optimistic\)|above): (.+?) by (\S+) % at R = (\d+), ρ = ([\d.]+), "
                     r"the ([\d.]+)th percentile \([^)]*\)(?:; the same (\S+) % also (.*))?\.$", text)
        if not m:
            continue
        name, val = m.group(1), m.group(2)  # an optimistic extreme is named by its size (round 21): the cell signs it
        val = val if text.startswith("Most above") else f"-{val}"
        assert cells[(name, int(m.group(3)), float(m.group(4)), float(m.group(5)))] == val, (text, cells)
        named += 1
        if m.group(7):
            assert m.group(6) == val.lstrip("-")
            for who, R, r, p in _named_points(m.group(7)):
                assert cells[(who or name, R, r, p)] == val, (text, who or name, R, r, p, cells)
                named += 1
    assert named >= 2
    title = fig._suptitle.get_text()
    others = [sr.label.split(" (")[0] for sr in lines if sr.method != "T"]
    for side, val, r, p in re.findall(r"(conservative|optimistic) by up to (\S+) % \(ρ = ([\d.]+), ([\d.]+)th\)",
                                      title):
        printed = {v for (n, _, rr, pp), v in cells.items() if n in others and rr == float(r) and pp == float(p)}
        assert (val if side == "conservative" else f"-{val}") in printed, (title, printed)
    bold = [t for ax in fig.get_axes() for t in ax.texts if t.get_fontweight() == "bold"]
    assert bold and not any(t.get_text().startswith("<0.1") for t in bold)
    for f, _ in figs:
        plt.close(f)


@pytest.mark.parametrize("sim_ref", [False, True])
def test_reproduction_relative_ours_against_simulation_is_not_hollow(monkeypatch, sim_ref):
    """§6.3: the paper's value is a hollow circle; ours against our simulation is drawn half-filled (round 15: the
    caption's "hollow" for ours clashed with the paper's hollow), in the legend too, and the caption says "(none
    here)" when no value of ours is set against the simulation."""
    from matplotlib.lines import Line2D

    fams = ["faithful", "corrected", "T"]
    ref = np.ones((3, 1, 1, 2), np.int8)  # (family, percentile, rho, R): against exact
    if sim_ref:
        ref[0, 0, 0, 1] = 2  # the best of A–F at R = 3 against the simulation
    err = np.full(ref.shape, 0.05)
    dims = ("family", "rel_percentile", "rel_rho", "rel_R")
    rep = xr.Dataset({"relative_error_reference": (dims, ref), "relative_error": (dims, err),
                      "relative_error_ci_low": (dims, err - 0.02), "relative_error_ci_high": (dims, err + 0.02),
                      "paper_relative_error": (dims[1:], np.array([0.1, 0.2]).reshape(1, 1, 2))},
                     coords={"family": fams, "rel_percentile": [99.0], "rel_rho": [0.5], "rel_R": [1, 3]})
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append((fig, caption)) or [])
    plots.reproduction_relative_errors(rep, "unused")
    ((fig, cap),) = figs
    lines = [ln for ax in fig.get_axes() for ln in ax.get_lines()
             if str(ln.get_gid()).startswith("ours_") and ln.get_marker() not in ("_", "|")]  # not the CI's caps
    paper = [ln for ax in fig.get_axes() for ln in ax.get_lines() if ln.get_marker() == "o" and ln.get_mfc() == "white"]
    assert paper  # the paper's hollow circle
    sim = [ln for ln in lines if ln.get_gid() == "ours_2"]
    assert len(sim) == int(sim_ref)
    for ln in sim:
        assert ln.get_fillstyle() == "bottom" and ln.get_markerfacecolor() != "white"
    keys = [(h, t.get_text()) for h, t in zip(fig.legends[0].legend_handles, fig.legends[0].get_texts(), strict=True)]
    sim_keys = [h for h, t in keys if "against our simulation" in t]
    assert len(sim_keys) == int(sim_ref) and all(isinstance(h, Line2D) and h.get_fillstyle() == "bottom"
                                                 for h in sim_keys)
    text = cap.text()
    assert "hollow, with" not in text and "half-filled" in text
    assert ("(none here)" in text) == (not sim_ref)
    plt.close(fig)


def test_mgr_distance_orders_laws_by_scv_and_keys_them_as_drawn(monkeypatch):
    """Round 15: within a load the laws stood in the data's order (SCV 0, 0.62, 0.33), hiding the distance-vs-SCV
    story, and the legend keyed them with squares over circles. Here the data hold uniform (SCV 1/3) before
    deterministic (SCV 0): both figures place deterministic first, in the same colour, the legend in SCV order with
    the plot's own marker, and the caption says the order."""
    import matplotlib.colors as mcolors

    cmp = mgr_two_laws().assign_coords(service=["exponential", "uniform", "deterministic"])
    laws = ["uniform:low=0,high=2", "deterministic"]
    figs = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: figs.append((fig, caption)) or [])
    plots.mgr_laws_distance(cmp, "unused", laws=laws)
    (fig, cap), = figs
    leg = fig.legends[0]
    keys = [(t.get_text(), h) for h, t in zip(leg.legend_handles, leg.get_texts(), strict=True)
            if t.get_text().endswith(")") and "SCV" in t.get_text()]
    assert [t for t, _ in keys] == ["deterministic service (SCV 0)", "uniform service (SCV 0.33)"]
    color = {t.split()[0]: mcolors.to_hex(h.get_color()) for t, h in keys}
    ax = fig.get_axes()[0]
    pts = [ln for ln in ax.get_lines() if ln.get_marker() == "o" and ln.get_linestyle() in ("None", "")]
    assert {h.get_marker() for _, h in keys} == {"o"}
    assert {h.get_markersize() for _, h in keys} == {pts[0].get_markersize()}
    x = {law: next(ln.get_xdata() for ln in pts if mcolors.to_hex(ln.get_color()) == c) for law, c in color.items()}
    assert (np.asarray(x["deterministic"]) < np.asarray(x["uniform"])).all()  # every load: SCV 0 left of SCV 1/3
    assert "in order of their SCV" in cap.what
    plt.close(fig)


@pytest.mark.parametrize("exact", [1.0, 3.0, 4.0])
def test_cdf_tail_panels_reach_the_references_deepest_named_percentile(monkeypatch, exact):
    """Round 16: the tail panels stopped at 1.1 × the simulation's 99.999th percentile, short of exact's, against
    which the title's percentages are measured. The drawn range reaches the reference's deepest named percentile
    (here the 99.9th) when the grid holds it, and the caption says where the panels end and why — the grid's end
    when the percentile lies beyond it (exact scale 4: 27.6 > 25) — and the ratio panel's end as drawn."""
    sim, approx = jsq_run({0.5: {"A": 1.3, "A*": 0.97, "exact": exact, "T": exact * 1.0005}})
    fig, cap = _draw_cdf(monkeypatch, sim, approx)
    how = " ".join(cap.how)
    t = sim["t"].values
    q = exact * -np.log(1 - 0.999)  # exact's 99.9th percentile, the deepest the comparison names
    tail, ratio = fig.get_axes()[1:3]
    x2, xr_end = tail.get_xlim()[1], ratio.get_xlim()[1]
    deep = {ax: [ln for ln in ax.get_lines() if ln.get_gid() == "deep_percentile"] for ax in (tail, ratio)}
    ticks = {ax: [t.get_text() for c in ax.child_axes if c.get_gid() == "deep_tick" for t in c.get_xticklabels()]
             for ax in (tail, ratio)}
    if q <= t[-1]:
        assert q <= x2 and q <= xr_end, (q, x2, xr_end)
        assert f"past exact's 99.9th percentile (t = {t[t > q][0]:.4g})" in how  # the first grid t beyond it
        # round 20: the percentile the title names is marked on both tail panels, a dotted line and a tick naming it
        for ax in (tail, ratio):
            assert [ln.get_xdata()[0] for ln in deep[ax]] == [pytest.approx(t[t > q][0])]
            assert ticks[ax] == [f"exact's 99.9th pct: t = {t[t > q][0]:.3g}"]
        level = [ln for ln in tail.get_lines() if ln.get_gid() == "deep_level"]
        assert [ln.get_ydata()[0] for ln in level] == [pytest.approx(1e-3)]
        assert "a dotted line and a tick above each tail panel mark it" in how
    else:
        assert x2 == pytest.approx(t[-1]) and "the stored grid's end: exact's 99.9th percentile" in how
        assert f"P(S > t) there is {np.exp(-t[-1] / exact):.2g})" in how
        assert not deep[tail] and not deep[ratio] and not ticks[tail]  # beyond the panel: no mark
    assert f"The tail panels run to t = {x2:.4g}" in how
    assert f"drawn to t = {xr_end:.4g}," in how  # the caption's ratio end is the drawn one
    plt.close(fig)


def test_percentile_maps_mark_each_side_of_the_time_grid_with_its_bound(monkeypatch):
    """Round 20: one ▶ covered two cases. On a grid to t_max = 25: exact (scale 4) has its 99.9th at 27.6, beyond it, A
    (1.3) at 9.0 within — ▶, A's error at most (9.0 − 25)/25 = −64 % (optimistic by at least that); D (scale 4 at
    ρ = 0.6) has its own 99.9th beyond, exact's (scale 1) within — ≫, at least (25 − 6.9)/6.9 = +262 %; D (5) at
    ρ = 0.5 with both beyond — ?, nothing known. Each cell prints its bound (computed here from the CDFs' scales), each
    mark has one legend entry, and the title says its extremes cover measured cells only, with the worst ▶ bound."""
    cmp, figs = _both_percentile_maps(monkeypatch, {0.5: {"A": 1.3, "D": 5.0, "A*": 0.97, "exact": 4.0, "T": 4.01},
                                                    0.6: {"A": 1.3, "D": 4.0, "A*": 0.97, "exact": 1.0, "T": 1.003}},
                                      t_max=True)
    (faith, fcap), (corr, ccap) = figs
    t_max = cmp.attrs["t_max"]
    q = -np.log(1 - 0.999)  # an Exp(scale)'s 99.9th percentile is scale · q
    a = plots.errors.split_beyond(cmp.sel(service="exponential"), against_reference(cmp, "exponential"))
    at = a.sel(percentile=99.9).squeeze("R")
    assert str(at["status"].sel(approximation="A", rho=0.5).item()) == "beyond_grid"  # ▶: exact's beyond
    assert str(at["status"].sel(approximation="D", rho=0.6).item()) == "beyond_own"  # ≫: D's own beyond
    assert str(at["status"].sel(approximation="D", rho=0.5).item()) == "beyond_both"  # ?: both beyond
    low = 100 * (1.3 * q - t_max) / t_max  # ≤ this: A's error where exact's percentile is beyond t_max
    high = 100 * (t_max - 1.0 * q) / (1.0 * q)  # ≥ this: D's error where its own is beyond
    assert float(at["bound"].sel(approximation="A", rho=0.5)) == pytest.approx(low, rel=1e-3)
    assert float(at["bound"].sel(approximation="D", rho=0.6)) == pytest.approx(high, rel=1e-3)
    assert np.isnan(float(at["bound"].sel(approximation="D", rho=0.5)))
    texts = {t.get_text(): t for ax in faith.get_axes() for t in ax.texts}
    assert f"≤{low:+.0f}" in texts and f"≥{high:+.0f}" in texts, sorted(texts)
    red, blue = (np.asarray(texts[k].get_color()) for k in (f"≤{low:+.0f}", f"≥{high:+.0f}"))
    assert red[0] > red[2] and blue[2] > blue[0], "each bound in its side's colour"
    # one legend entry per mark, its glyph the handle and never repeated in its words (round 20: "∅ ∅: not run")
    leg = faith.legends[0]
    marks = {h.get_marker(): t.get_text() for h, t in zip(leg.legend_handles, leg.get_texts(), strict=True)
             if hasattr(h, "get_marker") and h.get_marker() not in (None, "None", "o")}
    assert set(marks) == {">", r"$\gg$", "$?$"}, marks
    assert "exact's percentile (the reference) lies beyond" in marks[">"] and "optimistic" in marks[">"]
    assert "own percentile lies beyond" in marks[r"$\gg$"] and "conservative" in marks[r"$\gg$"]
    assert "nothing is known" in marks["$?$"]
    assert not any(g in w for w in marks.values() for g in "▶≫∅")
    title = faith._suptitle.get_text().splitlines()[-1]
    assert title == ("Extremes over measured cells only; where exact's percentile is beyond t_max (▶), optimistic by "
                     f"≥ {-low:.0f} % (ρ = 0.5, 99.9th)"), title
    limits = " ".join(str(x) for x in fcap.limits)
    assert f"optimistic by at least {-low:.0f} % at worst" in limits
    assert f"its reference's lies within at 1 cell (≫: the error is at least (t_max − x_ref)/x_ref, conservative, " \
           f"from {high:+.0f} % to {high:+.0f} %); nothing is known at 1 cell" in limits, limits
    for f in (faith, corr):
        plt.close(f)


def test_percentile_maps_name_methods_neutrally_and_count_what_did_not_run(monkeypatch):
    """Round 20: the row names were in A–F's colours (read as the error scale), A* and T were not defined on the
    figure, the corrected map's caption did not count its ∅ cells, and "points" did not say what a point was."""
    cmp, figs = _both_percentile_maps(monkeypatch, {0.5: {"A": 1.3, "A*": 0.97, "exact": 1.0, "T": None},
                                                    0.6: {"A": 1.3, "A*": 0.97, "exact": 1.0, "T": 1.003}})
    (faith, fcap), (corr, ccap) = figs
    import matplotlib.colors as mcolors

    for f in (faith, corr):
        names = [t for t in f.get_axes()[0].texts if t.get_fontweight() == "bold" and t.get_text()[:1] not in "+-≤≥<"]
        assert names and {mcolors.to_hex(t.get_color()) for t in names} == {"#000000"}, [t.get_text() for t in names]
    words = lambda f: " ".join(t.get_text() for t in f.legends[0].get_texts())
    assert "A–F: the paper's six approximations" in words(faith)
    assert "A*–F*: the paper's A–F with our corrections" in words(corr) and "T (bound): the conservative" in words(corr)
    a = against_reference(cmp, "exponential").sel(approximation=["A*", "T"])
    n_gone = int((a["status"] == "not_run").sum())
    assert n_gone == 2  # T at ρ = 0.5, both percentiles
    assert f"∅ at {n_gone} of the {int(a['status'].size)} cells drawn: the method did not run there" in \
        " ".join(map(str, ccap.limits))
    first = ccap.findings[0].text
    assert "cells with a reference (a cell: one method at one R, load ρ and percentile)" in first, first
    assert verify(ccap.findings[0], lambda source: cmp)[0]
    for f in (faith, corr):
        plt.close(f)


def test_percentile_map_numbers_clear_their_corner_dots_and_bar_ticks_do_not_overlap(monkeypatch):
    """Round 20: the corner dot touched the cell's number, and the colour bar's "+500" and "+1000" overlapped. As
    drawn: no number's box meets a dot (with its ring), and no two tick labels meet."""
    cmp, figs = _both_percentile_maps(monkeypatch, {0.5: {"A": 9.0, "A*": 0.97, "exact": None, "T": 1.003},
                                                    0.6: {"A": 8.0, "A*": 0.97, "exact": None, "T": 1.003},
                                                    0.7: {"A": 1.3, "A*": 0.9, "exact": None, "T": 1.003}})
    for fig, _ in figs:
        fig.canvas.draw()
        r = fig.canvas.get_renderer()
        px = fig.dpi / 72.0
        ring = (plots.errors.MAP_DOT["ms"] / 2 + plots.errors.MAP_DOT["mew"] / 2) * px
        panels = [ax for ax in fig.get_axes() if ax.images]
        dots = [ln for ax in panels for ln in ax.get_lines() if ln.get_marker() == "o"]
        assert dots
        for ax in panels:
            for t in ax.texts:
                box = t.get_window_extent(r)
                for d in (d for d in dots if d.axes is ax):
                    cx, cy = d.get_transform().transform((d.get_xdata()[0], d.get_ydata()[0]))
                    assert not (box.x0 < cx + ring and cx - ring < box.x1 and box.y0 < cy + ring and
                                cy - ring < box.y1), (t.get_text(), box, (cx, cy))
        bar = next(ax for ax in fig.get_axes() if getattr(ax, "_colorbar", None) is not None)
        labels = sorted((t.get_window_extent(r) for t in bar.get_xticklabels() if t.get_text()), key=lambda b: b.x0)
        room = plots.errors.TICK_GAP / 2 * fig.dpi / 72  # apart by at least half the room asked (the width estimate)
        assert all(b1.x0 - b0.x1 >= room for b0, b1 in zip(labels, labels[1:], strict=False)), labels
    for f, _ in figs:
        plt.close(f)


def test_mgr_percentile_title_says_which_R_it_draws(monkeypatch):
    """Round 26: "R = 10 only" stood in the small note under the legend alone. Where some R of the comparison has no
    point, the title names the R values drawn ("R = 10 only"), computed from the values present; with every R drawn
    it names none."""
    out = []
    monkeypatch.setattr(plots.common, "save", lambda fig, stem, caption=None, **kw: out.append((fig, caption)) or [])
    one = mgr_law_rows()
    two = xr.concat([one.assign_coords(R=[3]), one.assign_coords(R=[10])], "R", data_vars="minimal",
                    coords="minimal", compat="override")
    for v in ("law_relative_error_mean", "relative_percentile_error_mean"):
        two[v].loc[{"R": 3}] = np.nan
    plots.mgr_laws_percentile(two, "unused")
    plots.mgr_laws_percentile(one, "unused")
    (fig_two, _), (fig_one, _) = out
    assert fig_two._suptitle.get_text().startswith("At the 99.9th percentile (R = 10 only) ")
    assert "only" not in fig_one._suptitle.get_text()
    for f, _ in out:
        plt.close(f)
