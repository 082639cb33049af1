"""Words that must match the figure they describe (issue 31, round 12): a caption's place words (the left column, not
"the top row", after the Wasserstein figure's rows and columns were swapped), a mark's glyph as drawn (▶, not "grey
▸"), one ratio from one computation (the run-time title's medians and the caption's "times faster"), legend entries
only for marks drawn, and a method that did not run never reading as beaten (the best-method map's ∅) or as cheap
(the run-time figure's ▲ on the not-run line). Synthetic data (support.synthetic), figures drawn into memory."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr
from test_figure_findings import mgr_two_laws

from sojourn.core.present.claims import listing, verify
from sojourn.core.present.figures import STATUS
from sojourn.jsq_ps import plots
from sojourn.jsq_ps.compare import compare, w_against_reference
from support.synthetic import jsq_run

CFG = {"percentiles": [99.0, 99.9], "n_resamples": 200}
#: the glyph a word must use for each matplotlib marker the status marks draw
GLYPH = {">": "▶", "D": "◇", "x": "×", r"$\varnothing$": "∅", r"$\gg$": "≫", "$?$": "?"}


@pytest.fixture(scope="module")
def cmp():
    """R = 2, loads 0.5 and 0.6: exact ran at the first only (not_run at the second)."""
    sim, approx = jsq_run({0.5: {"A": 1.3, "A*": 0.97, "exact": 1.0, "T": 1.003},
                           0.6: {"A": 1.3, "A*": 0.97, "exact": None, "T": 1.003}})
    return compare(sim, approx, CFG)


@pytest.fixture
def drawn(monkeypatch):
    """(figure, caption) of each figure drawn, kept open instead of saved."""
    out = []
    monkeypatch.setattr(plots.common, "save",
                        lambda fig, stem, caption=None, **kw: out.append((fig, caption)) or [stem])
    yield out
    for fig, _ in out:
        plt.close(fig)


def test_percentile_map_mark_words_use_the_drawn_glyph():
    """Round 11's caption said "grey ▸" where a ▶ on a grey cell is drawn: each mark's word starts with the glyph
    of the marker it names, and no word gives the mark a colour."""
    for key, words in plots.errors._MARK_WORDS.items():
        assert words.startswith(GLYPH[STATUS[key].marker]), (key, words)
        assert not words.startswith(("grey", "black")), words


def test_wasserstein_caption_places_the_families_where_they_are_drawn(cmp, drawn):
    """The best of A–F, the best of A*–F* and T share each R's panel (round 12: the headline needed comparing a
    left panel with its neighbour): the caption says "on the same axes", never a column or a row."""
    plots.wasserstein_vs_rho(cmp, "unused")
    (fig, cap), = drawn
    panels = [ax for ax in fig.get_axes() if ax.axison and ax.get_yscale() == "log"]
    assert len(panels) == cmp.sizes["R"]
    words = " ".join([cap.what, *cap.how])
    assert "on the same axes" in words
    assert not any(w in words for w in ("left column", "right column", "top row", "bottom row", "upper row",
                                        "lower row"))


def test_runtime_ratio_is_the_title_medians_ratio_and_skips_sit_in_a_strip_above(cmp, drawn):
    """One computation: the caption's "k times faster" is the ratio of the slowest and fastest medians the title
    prints (round 11: 6.5× in the title, 11× in the caption). The load exact did not run is a ▲ in exact's colour in
    a strip above the plot (its own axes, no time axis: round 13 read a ▲ at ~6 s as a time), with its count, in the
    row named for exact, and the caption's words for the skip rows say where they are (under the axis)."""
    import matplotlib.colors as mcolors

    plots.runtime_vs_R(cmp, "unused")
    (fig, cap), = drawn
    ax = fig.get_axes()[0]
    meds = [float(c.value) for c in cap.findings if " s per cell over the " in c.text]
    ratio = next(c for c in cap.findings if "times faster" in c.text)
    assert ratio.value == pytest.approx(max(meds) / min(meds))
    assert verify(ratio, lambda source: cmp)[0]
    exact = mcolors.to_rgba(plots.common.METHOD_COLORS["exact"])
    assert not [ln for ln in ax.get_lines() if ln.get_marker() == "^"]  # none on the time axis
    (strip,) = ax.child_axes
    up = [ln for ln in strip.get_lines() if ln.get_marker() == "^" and mcolors.to_rgba(ln.get_color()) == exact]
    assert len(up) == 1 and strip.get_position().y0 >= ax.get_position().y1
    row = int(up[0].get_ydata()[0])
    assert strip.get_yticklabels()[row].get_text() == "exact: loads not run"
    assert any(t.get_text() == "1" for t in strip.texts)
    limits = " ".join(c.text if hasattr(c, "text") else c for c in cap.limits)
    assert "under the axis" in limits and "label above" not in limits


def test_best_map_marks_a_method_that_did_not_run(cmp, drawn):
    """Where a candidate did not run (here A* at ρ = 0.6, over budget) the cell says "∅ A*", the legend explains ∅,
    the title counts the cells, and a caption finding (re-derived from the data) says the winner there did not beat
    it; where every candidate ran there is no ∅."""
    c = cmp.copy(deep=True)
    c["not_run"].loc[{"approximation": "A*", "rho": 0.6}] = 1
    plots.best_method_map(c, "unused")
    plots.best_method_map(cmp, "unused")
    (fig, cap), (plain, plain_cap) = drawn
    ax = fig.get_axes()[0]
    marks = [t for t in ax.texts if t.get_text().startswith("∅")]
    assert [t.get_text() for t in marks] == ["∅ A*"] and marks[0].get_position()[0] == 1
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert any(t.startswith("at a cell's top: A* did not run") and "not one that beat it" in t for t in legend), legend
    # the legend draws the badge as in the cell: its text in the same box (round 15: a large bold ∅)
    badges = [h for lg in fig.legends for h in lg.legend_handles if hasattr(h, "get_bbox_patch")]
    assert [h.get_text() for h in badges] == ["∅ A*"] and badges[0].get_bbox_patch() is not None
    assert not [p for p in ax.patches if p.get_hatch()]  # the badge alone: no hatch on top of it (round 13)
    assert "did not run at 1 cell." in fig._suptitle.get_text()
    finding = next(f for f in cap.findings if "no competitor" in f.text)
    assert verify(finding, lambda source: c)[0] and finding.value == [1, 2]
    assert not [t for t in plain.get_axes()[0].texts if t.get_text().startswith("∅")]
    assert not [p for p in plain.get_axes()[0].patches if p.get_hatch()]
    assert not any("no competitor" in f.text for f in plain_cap.findings)
    assert fig._suptitle.get_text().count("\n") <= 2  # the title: at most three short lines


def test_mgr_noise_fills_each_whole_load_slot_and_no_line_joins_categories(drawn, tmp_path):
    """The M/G/R distance figure's noise area covers each load's whole category slot (round 11: a step that stopped half
    way through the last one), and no line joins markers across the categorical load axis."""
    c = mgr_two_laws(noise=0.6)
    plots.mgr_laws_distance(c, tmp_path / "x")
    (fig, _), = drawn
    top = fig.get_axes()[0]
    from matplotlib.collections import PolyCollection

    areas = [p for p in top.collections if isinstance(p, PolyCollection) and len(p.get_paths())]
    assert len(areas) == 3  # one per load slot
    for p in areas:
        x = p.get_paths()[0].vertices[:, 0]
        assert x.max() - x.min() == pytest.approx(1.0) and np.isclose((x.max() + x.min()) / 2 % 1, 0)
    for ln in top.get_lines():
        x = np.asarray(ln.get_xdata(), float)
        if ln.get_linestyle() == "-" and len(x) > 1:
            assert np.allclose(x, x[0]), "only the vertical slot separators are solid lines"


def test_best_map_ties_name_their_count_and_sim_cells_are_framed(cmp, drawn):
    """A tie cell says "tie of k" with k the number of names listed under it (round 12: 2–5 stacked names in ~9 px
    type); a cell judged against the simulation has the dashed dark border (a frame per such cell, none elsewhere) and
    T's legend entry says it is a conservative bound."""
    plots.best_method_map(cmp, "unused")
    (fig, _), = drawn
    ax = fig.get_axes()[0]
    b = plots.best_by_reference(cmp)
    texts = [t.get_text() for t in ax.texts]
    for i, j in zip(*np.nonzero(b["tie"] & (b["best"] != "")), strict=True):
        names = b["tied"][i, j].split("·")
        assert f"tie ({len(names)})" in texts
    # the caption names the tied methods of each tie cell, read off the same data
    cap = drawn[0][1]
    how = " ".join(cap.how)
    for i, j in zip(*np.nonzero(b["tie"] & (b["best"] != "")), strict=True):
        assert listing(b["tied"][i, j].split("·")) + " at " in how, how
    from sojourn.jsq_ps.compare import REF_SIMULATION

    vs_sim = int(((b["reference"] == REF_SIMULATION) & (b["best"] != "")).sum())
    frames = [p for p in ax.patches if p.get_linestyle() != "solid" and not p.get_fill()]
    assert len(frames) == vs_sim
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    if (b["best"] == "T").any() and not b["tie"][b["best"] == "T"].all():
        assert any(t.startswith("T (bound):") for t in legend)
    assert not any("A–F: the paper's methods" in t for t in legend), "in the caption, not the legend (round 15)"
    assert "A–F: the paper's methods" in " ".join(cap.how)


def test_best_map_title_names_who_lies_on_exact_from_the_ties():
    """Round 15: the title said "R = 1 … so all tie" where only 3–5 candidates tie: the row's words name the methods
    tied in every cell of the row (within the resolution of exact), and no others."""
    b = {"best": np.array([["A*", "A*"], ["A*", "A*"]], object), "tie": np.array([[True, True], [False, True]]),
         "tied": np.array([["D·E·A*·C*·T", "A*·C*·T"], ["A*", "A*·C*"]], object),
         "W_best": np.array([[0.0, 0.0005], [0.0, 0.0]]), "w_tie": 0.001,
         "candidates": ["A", "D", "E", "A*", "C*", "T"]}
    assert plots.maps._exact_row_words(b, [1, 2]) == ["R = 1: A*, C* and T lie on exact, so no clear winner"]


def test_cdf_ratio_end_labels_name_each_line_and_merge_only_coinciding_ones():
    """The ratio panel names each line at its right end in its colour (round 12: the corrected chains A*/C* lay on
    top of each other, unnamed); lines ending within 6 % of each other share one label, the others keep their own."""
    import matplotlib.colors as mcolors

    fig, ax = plt.subplots()
    ax.set_yscale("log")
    one = np.ones(5)
    lines = [("A*", "#8c564b", 0.40 * one), ("C*", "#6a3d9a", 0.41 * one), ("D", "#d62728", 0.05 * one),
             ("T", "#00685a", 1.0 * one)]
    plots.cdf._end_labels(ax, lines, 1 / 30, 30)
    got = {t.get_text().strip(): mcolors.to_hex(t.get_color()) for t in ax.texts}
    assert set(got) == {"A* ≈ C*", "D", "T"}
    # a shared label in a neutral colour (round 15: "D ≈ E ≈ F" in D's red read as D alone)
    assert got["D"] == "#d62728" and got["A* ≈ C*"] == mcolors.to_hex(plots.cdf._MERGED_LABEL)
    plt.close(fig)


def test_cdf_ratio_end_labels_merge_only_lines_alike_over_the_drawn_range():
    """Round 16: D, E and F all left the top of the ratio panel, so their clipped ends coincided and one "D ≈ E ≈ F"
    label hid that D ran at ×20 where E and F were at ×30. Lines share a label only when alike (within 6 %) over the
    whole drawn range; a line that left the panel gets an arrow, the earlier exit outermost, all inside its height."""
    fig, ax = plt.subplots()
    ax.set_yscale("log")
    t = np.linspace(0, 14, 141)
    e = np.exp(t / 3.4)  # leaves ×37.5 at t ≈ 12.3
    lines = [("D", "#d62728", e * 0.7), ("E", "#bcbd22", e), ("F", "#17becf", e * 1.03), ("T", "#00685a", 1 + 0 * t)]
    lo, hi = 1 / 37.5, 37.5
    plots.cdf._end_labels(ax, lines, lo, hi)
    got = {x.get_text().strip(): x.xy[1] for x in ax.texts}
    assert set(got) == {"E ≈ F ↑", "D ↑", "T"}, got
    assert got["D ↑"] < got["E ≈ F ↑"] <= hi  # E and F left first: outermost; none above the panel
    fig2, ax2 = plt.subplots()
    plots.cdf._end_labels(ax2, [("D", "#d62728", e * 0.99), ("E", "#bcbd22", e)], lo, hi)
    assert [x.get_text().strip() for x in ax2.texts] == ["D ≈ E ↑"]  # alike throughout: one label
    plt.close(fig)
    plt.close(fig2)


def test_recommended_map_title_states_the_answer_counted(cmp, drawn):
    """Round 15: the title was a question. It states the answer, counted from the recommendation as the caption counts
    it: exact at how many of all points, T where exact is over budget, none at how many."""
    c = cmp.copy(deep=True)
    rec = c["recommended"].values.astype(object)
    flat = rec.reshape(-1)
    flat[0], flat[-1] = "T", "simulate"
    c["recommended"] = (c["recommended"].dims, flat.reshape(rec.shape))
    plots.recommended_map(c, "unused")
    (fig, cap), = drawn
    title = fig._suptitle.get_text()
    r = c["recommended"].values.astype(str)
    n_exact, n_t, n_sim = (int((r == m).sum()) for m in ("exact", "T", "simulate"))
    assert f"exact at {n_exact} of {r.size} points" in title, title
    assert f"T where exact is over budget ({n_t})" in title and f"none at {n_sim} (" in title, title
    assert "?" not in title and not title.startswith("Which")
    assert f"exact at {n_exact}" in cap.findings[0].text


def test_every_method_colour_table_is_the_one_palette():
    """Round 16: the §6.4 map had its own A–F palette (F in exact's pink). Every module-level table of the plots that
    maps method names to colours gives each method its colour in the one palette (core METHOD_COLORS), and no
    method of A–F or A*–F* has exact's colour."""
    import importlib
    import pkgutil

    import matplotlib.colors as mcolors

    from sojourn.core.present.figures import METHOD_COLORS

    tables = 0
    for mod in pkgutil.iter_modules(plots.__path__):
        m = importlib.import_module(f"{plots.__name__}.{mod.name}")
        for name, v in vars(m).items():
            if isinstance(v, dict) and set("ABCDEF") <= set(v) and all(
                    isinstance(c, str) and mcolors.is_color_like(c) for c in v.values()):
                tables += 1
                bad = {k: c for k, c in v.items() if mcolors.to_hex(c) != mcolors.to_hex(METHOD_COLORS[k])}
                assert not bad, f"{mod.name}.{name}: {bad}"
    assert tables >= 2  # _FAITHFUL_COLOR and the §6.4 map's
    ex = mcolors.to_hex(METHOD_COLORS["exact"])
    assert all(mcolors.to_hex(c) != ex for k, c in METHOD_COLORS.items() if k != "exact")


@pytest.mark.parametrize(("t_scale", "k"), [(1.01, 2), (1.003, 0), (1.05, 0)])
def test_wasserstein_names_ts_margin_where_its_w_sits_on_it(drawn, t_scale, k):
    """Round 16: T's flat W ≈ 0.01 at low load read as a weak fit; it is the margin T's survival carries by design
    (FLOOR = 0.01 relative: W ≈ 0.01·E[S], E[S] = 1 here). The legend and the caption count the cells where T's W
    against exact lies within ×1.1 of it — none where T is closer (1.003) or farther (1.05)."""
    from sojourn.jsq_ps.solve.tail import FLOOR

    sim, approx = jsq_run({0.5: {"A": 1.3, "A*": 0.97, "exact": 1.0, "T": t_scale},
                           0.6: {"A": 1.3, "A*": 0.97, "exact": 1.0, "T": t_scale}})
    cmp = compare(sim, approx, CFG)
    plots.wasserstein_vs_rho(cmp, "unused")
    (fig, cap), = drawn
    w = w_against_reference(cmp, "exponential")["W"].sel(approximation="T").values
    assert int(((w >= FLOOR / 1.1) & (w <= FLOOR * 1.1)).sum()) == k, w
    legends = fig.legends + [ax.get_legend() for ax in fig.get_axes() if ax.get_legend()]
    legend = " ".join(t.get_text() for lg in legends for t in lg.get_texts())
    how = " ".join(cap.how)
    assert f"at {k} of the 2 cells where T is set against exact its W lies within ×1.1 of 0.01" in how
    assert (f"W ≈ 0.01 at {k} of 2 cells: its built-in margin" in legend) == bool(k), legend
    # the figure's own service, not the comparison's first (round 17: "deterministic" came first, no note was drawn)
    both = xr.concat([cmp.assign_coords(service=["deterministic"]), cmp], "service", data_vars="minimal",
                     coords="minimal", compat="override")
    _, lab = plots.wasserstein._w_legend(both, False, service="exponential")
    assert any(f"W ≈ 0.01 at {k} of 2 cells" in x for x in lab) == bool(k), lab


def test_best_map_draws_a_win_without_its_rival_lighter_and_counts_it_apart(cmp, drawn):
    """Round 26: a winner where a rival did not run (∅) was drawn in full colour and counted as a clear win. It is
    drawn lighter, left out of the clear winners in the title and the caption and counted apart (re-derived from the
    data); with every candidate run the same cell is a clear win in full colour."""
    from sojourn.jsq_ps.plots.maps import _lighter, _rgb, best_by_reference, method_color, uncontested

    c = cmp.copy(deep=True)
    c["not_run"].loc[{"approximation": "A*", "rho": 0.6}] = 1
    titles = []
    for data in (c, cmp):
        plots.best_method_map(data, "unused")
        fig, cap = drawn[-1]
        b = best_by_reference(data)
        alone = uncontested(data, b, "exponential")
        img = fig.get_axes()[0].get_images()[0].get_array()
        for (i, j), m in np.ndenumerate(b["best"]):
            if m and not b["tie"][i, j]:
                want = _lighter(method_color(m)) if alone[i, j] else _rgb(method_color(m))
                assert np.allclose(img[i, j][:3], want), (i, j, m)
        title = fig._suptitle.get_text()
        clear = {m: int(((b["best"] == m) & ~b["tie"] & ~alone).sum()) for m in set(b["best"].ravel()) - {""}}
        words = " ".join(f.text for f in cap.findings)
        for m, k in clear.items():
            if k:
                assert f"{m} at {k}" in title.split("Lighter")[0] and f"{m} in {k}" in words
        for f in cap.findings:
            assert verify(f, lambda source, data=data: data)[0], f.text
        titles.append(title)
    assert alone.sum() == 0 and "Lighter" not in titles[1]
    b = best_by_reference(c)
    i, j = np.argwhere(uncontested(c, b, "exponential"))[0]  # the synthetic data have such a cell
    m = b["best"][i, j]
    assert f"Lighter, a rival did not run: {m} at 1." in titles[0]


def test_best_map_legend_says_what_a_starred_method_is(drawn):
    """Round 30: the map's headline names A* and C*, which nothing in the figure defined. Each starred entry of the
    legend says which of the paper's methods it corrects (its group's letters, from the group's label)."""
    from sojourn.jsq_ps.plots.maps import _starred_meaning

    assert _starred_meaning("A* = B* = D* = E*") == "A* = B* = D* = E*: the paper's A, B, D, E, corrected"
    assert _starred_meaning("C*") == "C*: the paper's C, corrected"
    assert _starred_meaning("D") == "D" and _starred_meaning("C = F") == "C = F"
    sim, approx = jsq_run({0.5: {"A": 1.3, "A*": 1.0001, "exact": 1.0, "T": 1.05},
                           0.6: {"A": 1.3, "A*": 1.0001, "exact": 1.0, "T": 1.05}})  # A* closest
    plots.best_method_map(compare(sim, approx, CFG), "unused")
    (fig, cap), = drawn
    texts = [t.get_text() for lg in fig.legends + [a.get_legend() for a in fig.get_axes() if a.get_legend()]
             for t in lg.get_texts()]
    starred = [t for t in texts if t.split(" ")[0].rstrip(":").endswith("*")]
    assert starred and all("the paper's" in t and "corrected" in t for t in starred)


def test_one_wording_of_why_a_method_did_not_run(cmp, drawn):
    """Rounds 21–26: the ∅/▲ reason read "over budget", "truncation cap" or "state cap" from figure to figure. Every
    figure and caption that says why a method did not run uses skip_reason's words, and no other."""
    from pathlib import Path

    c = cmp.copy(deep=True)
    c["not_run"].loc[{"approximation": "A*", "rho": 0.6}] = 1
    plots.best_method_map(c, "unused")
    (fig, cap), = drawn
    legend = " ".join(t.get_text().replace("\n", " ") for lg in fig.legends for t in lg.get_texts())
    assert f"A* did not run there ({plots.common.skip_reason()})" in legend
    assert any(plots.common.skip_reason() in f.text for f in cap.findings)
    others = ("truncation cap", "state cap", "cost budget", "over its budget")
    src = Path(plots.__file__).parent
    for py in src.glob("*.py"):
        text = py.read_text()
        for w in others:
            assert text.count(w) == (py.name == "common.py" and w in ("truncation cap", "state cap")) * 1, (py, w)


def test_cdf_ratio_end_label_keeps_a_margin_from_the_image_edge():
    """Round 26: the rightmost end label ("exact = corrected chains ≈ T") ended at the saved image's right edge. The
    figure is saved with a tight bounding box: the label's text must end at least a twentieth of an inch inside it
    (beyond savefig's own pad), which blank space after it provides."""
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_yscale("log")
    plots.cdf._end_labels(ax, [("exact = corrected chains ≈ T", "#e377c2", np.ones(5))], 1 / 30, 30)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    (label,) = [t for t in ax.texts if t.get_gid() == "end_label"]
    words = ax.text(0, 0, label.get_text().strip(), fontsize=label.get_fontsize(), fontweight=label.get_fontweight())
    ink = label.get_window_extent(r).x0 + words.get_window_extent(r).width  # where the label's words end
    words.remove()
    tight = fig.get_tightbbox(r).transformed(fig.dpi_scale_trans)  # inches → display
    assert tight.x1 - ink >= 0.05 * fig.dpi
    plt.close(fig)
