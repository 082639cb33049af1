"""The findings the JSQ-PS figures print are computed from the data they draw (issue 31: words from data), and change
with it: the CDF figure's headline (the closest of A–F with those nearly tied to it, the direction of the drawn A–F's
tails against exact, the corrected chains' largest W), the M/G/R figure's closest method per cell, and the §6.4 map's
count of cells where the corrected methods are closer beyond both CIs. Synthetic data: Exp(1) simulations and
exponential CDFs of chosen scales as the methods (support.synthetic), or small hand-made datasets."""
from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from sojourn.core.present.claims import verify
from sojourn.jsq_ps import plots
from sojourn.jsq_ps.compare import compare, w_against_reference
from support.synthetic import jsq_run

CFG = {"percentiles": [99.0, 99.9], "n_resamples": 200}


def _cdf_findings(scales):
    sim, approx = jsq_run({0.5: scales})
    cmp = compare(sim, approx, CFG)
    w_ref = w_against_reference(cmp).sel(R=2, rho=0.5)
    drawn = sorted((m for m in "ABCDEF" if m in scales), key=lambda m: float(w_ref["W"].sel(approximation=m)))[:3]
    head, claims = plots._cdf_findings(cmp, w_ref, 2, 0.5, "exponential", drawn)
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
    tail = next(h for h in head if h.startswith("their 99.9th vs exact"))
    assert "A* -10 % (optimistic)" in tail and "T +5 % (conservative)" in tail and "B* within ±0.5 %" in tail, tail
    assert any(t.startswith("At the 99.9th percentile the corrected chains and T against exact: ") for t in texts)
    head, _ = _cdf_findings({"A": 1.3, "A*": 0.97, "exact": 1.0, "T": 1.0})
    assert "A* -3 % (optimistic)" in head[-1] and "T within ±0.5 %" in head[-1], head


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


def test_mgr_closest_method_per_cell():
    cmp = _mgr({"A": [0.3, 0.2, 0.1], "T": [0.1, 0.25, 0.05], "C*": [0.2, 0.3, 0.01]})
    assert plots.closest_methods(cmp, "uniform", 3, ["A", "T", "C*"]) == {0.5: "T", 0.8: "A"}  # 0.9: run too short
    cmp["usable"].loc[{"approximation": "T"}] = 0  # an unusable method is never the closest
    assert plots.closest_methods(cmp, "uniform", 3, ["A", "T", "C*"]) == {0.5: "C*", 0.8: "A"}


def _rep(ci):
    """A §6.4 dataset of one row, three loads: the best corrected and the best of A–F's W with the CIs ``ci``
    ({family: [(low, mean, high) per load]})."""
    arr = {f: np.array(v, float) for f, v in ci.items()}
    fam = list(arr)
    stack = lambda k: np.stack([arr[f][:, k] for f in fam])[:, None, :]
    return xr.Dataset({"best_wasserstein": (("family", "R", "rho"), stack(1)),
                       "best_wasserstein_ci_low": (("family", "R", "rho"), stack(0)),
                       "best_wasserstein_ci_high": (("family", "R", "rho"), stack(2)),
                       "agreement": (("R", "rho"), np.array([[2, 2, 2]]))},
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
    cap = plots._reproduction_map_caption(rep)
    claim = next(c for c in cap.findings if "beyond both 95% CIs" in c.text)
    k = [sides.count(-1), sides.count(1), 3]
    assert claim.value == k and f"at {k[0]} of 3 cells, farther at {k[1]}" in claim.text
    for c in cap.findings:
        ok, derived = verify(c, lambda source: rep)
        assert ok, f"{c.text!r} states {c.value!r}, the data say {derived!r}"


@pytest.mark.parametrize(("scales", "one", "apart"), [
    ({"A": 1.3, "A*": 0.9995, "exact": 1.0, "T": 1.0005}, "corrected chains + T ≈ exact: W < 0.001", ["A: W = "]),
    ({"A": 1.3, "A*": 0.97, "exact": 1.0, "T": 1.0005}, "T ≈ exact: W < 0.001", ["A: W = ", "A*: W = "]),
])
def test_cdf_lines_on_exact_get_one_legend_entry(monkeypatch, scales, one, apart):
    """The CDF figure draws the corrected chains and T that lie on exact in both panels as one line with it, under one
    legend entry computed from the data; a chain 3 % off keeps its own entry; the body panel reaches far enough that
    95 % of each separately drawn line's W lies inside it (the x-range follows the data, not a fixed rule)."""
    sim, approx = jsq_run({0.5: scales})
    cmp = compare(sim, approx, CFG)
    figs = []
    monkeypatch.setattr(plots, "save", lambda fig, stem, caption=None, **kw: figs.append((fig, caption)) or [stem])
    plots.cdf_cell(sim, approx, 2, 0.5, "unused", cmp=cmp)
    (fig, cap), = figs
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert one in texts and all(any(t.startswith(a) for t in texts) for a in apart), texts
    # exact, the reference, has its own entry; the lines on it share one; no simulated tail beyond its reference reach
    assert [t for t in texts if t.startswith("exact")] == ["exact (the reference; wide, light)"]
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
    plots.plt.close(fig)


@pytest.mark.parametrize(("errors", "clip"), [([-18.0, 0.3, 4.0], 20.0), ([-18.0, 0.3, 800.0], 1000.0),
                                              ([0.2, -0.1], 10.0)])
def test_percentile_map_colour_range_follows_the_errors_that_count(errors, clip):
    """A map of small errors gets its own colour range (the smallest step holding every error that counts), so that
    −18 % is not pale on a ±1000 % scale; an error within the noise (not significant) does not widen it."""
    n = len(errors)
    m = {"err": np.array(errors + [5000.0], float).reshape(1, n + 1, 1, 1),
         "sig": np.array([True] * n + [False]).reshape(1, n + 1, 1, 1),
         "ref": np.ones((1, n + 1, 1, 1), int)}
    assert plots._colour_range(m, [(0, 0)], [0]) == clip
    assert plots._error_text(-0.03) == plots._error_text(0.04) == "<0.1"


def test_percentile_map_says_counts_by_number_style_not_frames():
    """A map cell whose (pale, +2 %) difference counts carries a bold number and no frame (a frame reads as a
    highlight); one within the noise a grey italic number; the check panel fills its significant cell with its own
    colour (off the error scale) in a bold frame."""
    err = np.array([2.0, 0.3]).reshape(1, 2, 1)
    sig, ref = np.array([True, False]).reshape(1, 2, 1), np.ones((1, 2, 1), int)
    status = np.full((1, 2, 1), "", object)
    norm, cmap = plots._error_norm(20.0), plots.plt.get_cmap("RdBu")
    for flag in (False, True):
        fig, ax = plots.plt.subplots()
        plots._error_map(ax, err, sig, ref, status, [(0, 0)], 2, cmap, norm, True, [], {"text": 7, "mark": 4,
                                                                                       "flag": flag}, corners=False)
        bold, noise = ax.texts
        assert bold.get_text() == "+2" and bold.get_fontweight() == "bold"
        assert noise.get_style() == "italic" and noise.get_fontweight() != "bold"
        assert len(ax.patches) == int(flag)
        rgb = ax.images[0].get_array()[0, 0]
        assert np.allclose(rgb, plots._rgb(plots.CHECK_FILL)) == flag
        plots.plt.close(fig)


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
    cap = plots._reproduction_caption(rep, "pct", "percentile_error_reference", [(0, 0), (0, 1), (1, 0), (1, 1)],
                                      "§6.1")
    first = cap.findings[0]
    n, k_ex, k_sim, k_none = first.value
    assert (n, k_ex, k_sim, k_none) == (4, 1, 1, 2) and k_ex + k_sim + k_none == n
    assert first.text.startswith("Of the 4 (percentile, cell) points") and "no value at 2" in first.text
    for c in cap.claims():
        ok, derived = verify(c, lambda source: rep)
        assert ok, f"{c.text!r} states {c.value!r}, the data say {derived!r}"
    figs = []
    monkeypatch.setattr(plots, "save", lambda fig, stem, caption=None, **kw: figs.append(fig) or [stem])
    plots.reproduction_percentile_errors(rep, "unused")
    (fig,) = figs
    texts = [t.get_text() for ax in fig.get_axes() for a in (ax, *ax.child_axes) for t in a.texts]
    assert "−3" in texts and "−0.5" in texts and texts.count("no value of ours") == 1
    plots.plt.close(fig)


def test_wasserstein_caption_names_the_noise_as_drawn(monkeypatch):
    """The Wasserstein figure draws the simulation's noise as a filled area (where a method is set against the
    simulation: exact did not run at the second load); its caption and legend name that shape — round 5's caption
    said "grey bars" over an area. Any bar-like artist in the noise colour, or a caption word for another shape,
    fails. Two methods with W < 0.001 at one load get one arrow on the bottom edge, their letters above it (in their
    colours)."""
    import matplotlib.colors as mcolors
    from matplotlib.collections import PolyCollection

    sim, approx = jsq_run({0.5: {"A": 1.3, "A*": 0.9995, "exact": 1.0, "T": 1.0005},
                           0.6: {"A": 1.3, "A*": 0.97, "exact": None, "T": 1.003}})
    cmp = compare(sim, approx, CFG)
    figs = []
    monkeypatch.setattr(plots, "save", lambda fig, stem, caption=None, **kw: figs.append((fig, caption)) or [stem])
    plots.wasserstein_vs_rho(cmp, "unused")
    (fig, cap), = figs
    noise = mcolors.to_rgba(plots.NOISE_FILL)
    areas = [c for ax in fig.get_axes() for c in ax.collections if isinstance(c, PolyCollection)
             and np.allclose(c.get_facecolor()[0], noise)]
    assert areas, "the noise is drawn as an area"
    how = " ".join(cap.how)
    assert plots.NOISE_WORDS in how.lower() and "bar" not in how.lower()
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith(plots.NOISE_WORDS.removeprefix("a ")) for t in legend)
    arrows = [ln for ax in fig.get_axes() for ln in ax.get_lines() if ln.get_marker() == plots._CLIP_MARK["marker"]]
    xs = [x for ln in arrows for x in ln.get_xdata()]
    assert xs == [0.5], "one arrow per load (arrows side by side per method piled up)"
    letters = [t for ax in fig.get_axes() for t in ax.texts if t.get_text() in ("A*", "T")]
    assert sorted(t.get_text() for t in letters) == ["A*", "T"] and all(t.xy[0] == 0.5 for t in letters)
    assert [t.get_color() for t in letters if t.get_text() == "T"] == [plots._TAIL_COLOR]
    plots.plt.close(fig)


def test_mgr_error_panel_titles_state_their_finding():
    """The M/G/R error row's panel titles carry the range of the errors they draw and a verdict from the CIs:
    conservative where every CI lies above 0, else how many points lie within ±5 %; the exponential model's T and the
    law methods are told apart."""
    y = np.array([10.0, 185.0, np.nan])
    vals = {"deterministic": {None: (y, y - 5, y + 5), "T": (np.array([-1.0, 8.0, np.nan]),) * 3},
            "uniform": {None: (np.array([90.0, 95.0, np.nan]),) * 3, "T": (np.array([3.0, 4.0, np.nan]),) * 3}}
    assert plots._law_panel_finding(vals, True) == "\n+10 to +185 % (conservative)"
    assert plots._law_panel_finding(vals, False) == "\n-1 to +8 % (3 of 4 within ±5 %)"
    assert plots._law_panel_finding({"x": {None: (np.full(2, np.nan),) * 3}}, True) == ""


def test_mgr_letter_boxes_at_one_load_are_set_apart():
    """Letter boxes of the M/G/R figure closer than the gap (in decades) at one load sit side by side, centred; a
    box far from the others stays on its point."""
    assert plots._letter_offsets([0.0, 0.05, 1.0]) == [-6.0, 6.0, 0.0]
    assert plots._letter_offsets([0.3]) == [0.0]
