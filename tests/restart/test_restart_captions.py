"""The restart percentile figure's caption says exactly what the figure draws (sojourn.restart.plots): a point
stopped as unstable is ✕ (and counted as such, even if it also had too few jobs), a point with too few jobs beyond
the percentile is ◇, and every claim is re-derived from the comparison it names. Synthetic comparison: three
semantics at three rates, one percentile."""
from __future__ import annotations

import numpy as np
import xarray as xr

from sojourn.core.present.claims import verify
from sojourn.restart import plots

SEMS = ["signal", "timeout_exponential", "timeout_deterministic"]
RATES = [0.5, 1.0, 2.0]


def _cmp():
    pct = np.array([[[4.0], [3.0], [3.5]], [[4.2], [np.nan], [3.9]], [[4.4], [3.8], [np.nan]]])
    few = np.zeros(pct.shape, np.int8)
    few[1, 1, 0] = 1  # too few jobs beyond the percentile: ◇
    few[2, 2, 0] = 1  # too few, but also stopped as unstable: ✕, not ◇
    stable = np.array([[5, 5, 5], [5, 5, 5], [5, 5, 3]])
    beyond = np.where(few != 0, 60.0, 500.0)
    best = np.array([[1.0], [0.5], [1.0]])
    dims = ("semantics", "restart_rate")
    return xr.Dataset(
        {"response_time_percentile": (dims + ("percentile",), pct),
         "response_time_percentile_half_width": (dims + ("percentile",), np.full(pct.shape, 0.1)),
         "response_time_percentile_too_few": (dims + ("percentile",), few),
         "response_time_percentile_beyond": (dims + ("percentile",), beyond),
         "replications_stable": (dims, stable), "replications_used": (dims, np.full((3, 3), 5)),
         "run_valid": (dims, np.ones((3, 3), np.int8)),
         "best_rate_response_time_percentile": (("semantics", "percentile"), best),
         "best_response_time_percentile": (("semantics", "percentile"), np.array([[3.0], [4.2], [3.8]]))},
        coords={"semantics": SEMS, "restart_rate": RATES, "percentile": [99.0]})


def test_the_percentile_caption_counts_what_the_strip_marks():
    cmp = _cmp()
    st = plots._status(cmp, "response_time_percentile")
    assert (st == "too_short").sum() == 1 and (st == "unstable").sum() == 1
    cap = plots._percentile_caption(None, cmp, "example2", st)
    limits = " ".join(getattr(c, "text", c) for c in cap.limits)
    assert "at 1 of 9 (semantics, rate) points" in limits and "◇" in limits
    assert "At 1 of 9 (semantics, rate) points the run was stopped as unstable" in limits
    assert "the 99th percentile of the response time" in cap.what and "one panel each" not in cap.what
    assert len(cap.claims()) >= 3
    for claim in cap.claims():
        ok, derived = verify(claim, lambda source: cmp)
        assert ok, f"{claim.text!r} states {claim.value!r}, the data say {derived!r}"


def test_the_caption_changes_with_the_data():
    cmp = _cmp()
    cmp["response_time_percentile_too_few"][:] = 0
    cmp["response_time_percentile"][1, 1, 0] = 3.1
    st = plots._status(cmp, "response_time_percentile")
    cap = plots._percentile_caption(None, cmp, "example2", st)
    limits = " ".join(getattr(c, "text", c) for c in cap.limits)
    assert "◇" not in limits and "stopped as unstable" in limits


def _means_inputs():
    """A product form and a mean-response comparison for the means figure: three semantics at three rates, the
    deterministic timeouts stopped as unstable at the last rate, two semantics best at one rate."""
    dims = ("semantics", "restart_rate")
    rt = np.array([[1.2, 1.0, 1.1], [1.25, 1.05, 1.15], [1.3, 1.2, np.nan]])
    pf = xr.Dataset({"g_star": 1.1, "response_time_at_g_star": 0.99, "response_time_no_restart": 1.4,
                     "response_time": ("signal_rate", [1.2, 1.0, 1.1])}, coords={"signal_rate": RATES})
    cmp = xr.Dataset(
        {"response_time": (dims, rt), "response_time_half_width": (dims, np.full(rt.shape, 0.02)),
         "response_time_covered": (dims, np.ones(rt.shape, np.int8)),
         "replications_stable": (dims, np.array([[5, 5, 5], [5, 5, 5], [5, 5, 3]])),
         "replications_used": (dims, np.full((3, 3), 5)), "run_valid": (dims, np.ones((3, 3), np.int8)),
         "best_rate_response_time": ("semantics", [1.0, 1.0, 0.5]),
         "best_response_time": ("semantics", [1.0, 1.05, 1.3]),
         "best_response_time_half_width": ("semantics", [0.02, 0.02, 0.02])},
        coords={"semantics": SEMS, "restart_rate": RATES})
    return pf, cmp


def _drawn(monkeypatch, draw, *args):
    drawn = []
    monkeypatch.setattr(plots, "save", lambda fig, stem, formats, dpi, caption=None: drawn.append(fig) or [stem])
    draw(*args, "unused", "example2", ("png",), 60)
    (fig,) = drawn
    return fig


def _strip_rows(fig, ax):
    """(x, row y, colour) of every ▼ in the panel's status strip, and the strip's row names top down with colour."""
    import matplotlib.colors as mcolors

    (strip,) = ax.child_axes
    down = [(float(x), float(y), mcolors.to_hex(ln.get_color())) for ln in strip.get_lines() if ln.get_marker() == "v"
            for x, y in zip(ln.get_xdata(), ln.get_ydata(), strict=True)]
    names = sorted(((t.get_position()[1], t.get_text(), mcolors.to_hex(t.get_color())) for t in strip.texts),
                   reverse=True)
    return down, names


def test_best_rates_sit_in_the_strip_one_row_per_semantics_not_in_the_data_area(monkeypatch):
    """Means and percentile figures mark each semantics' best rate the same way: a ▼ in its colour in its own row
    of the status strip above the panel (the row that holds its ✕/◇, named in its colour), in semantics order —
    never in the data axes, where round 14's reader read ▼s at E[T] ≈ 2.7–3.5 as measurements (issue 31)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    colour = {s: mcolors.to_hex(plots.STYLE[s][0]) for s in SEMS}
    pf, cmp = _means_inputs()
    pcmp = _cmp()
    for fig, want in ((_drawn(monkeypatch, plots.means, pf, cmp), cmp["best_rate_response_time"].values),
                      (_drawn(monkeypatch, plots.percentile, xr.Dataset({"g_star": 1.3}), pcmp),
                       pcmp["best_rate_response_time_percentile"].values[:, 0])):
        ax = fig.get_axes()[0]
        assert not [ln for ln in ax.get_lines() if ln.get_marker() == "v"], "no ▼ inside the data axes"
        down, names = _strip_rows(fig, ax)
        assert [t for _, t, _ in names] == [plots.NAMES[s] for s in SEMS], "one row per semantics, in its order"
        assert [c for _, _, c in names] == [colour[s] for s in SEMS]
        row = {t: y for y, t, _ in names}
        assert sorted(down) == sorted((float(w), row[plots.NAMES[s]], colour[s]) for s, w in zip(SEMS, want,
                                                                                               strict=True))
        legend = [t.get_text().replace("\n", " ") for lg in fig.legends for t in lg.get_texts()]
        assert any(t.startswith("▼ in the strip above the panel") for t in legend)
        plt.close(fig)


def test_the_caption_names_only_the_strip_marks_drawn():
    """The caption's sentence on the strip names the marks the figure draws: none at all (no strip) when every
    point has a value, only ✕ when only unstable points lack one (issue 31: a sentence about a strip that was not
    drawn)."""
    cmp = _cmp()
    how = lambda st: " ".join(plots._percentile_caption(None, cmp, "example2", st).how)
    st = plots._status(cmp, "response_time_percentile")
    assert "◇" in how(st) and "✕" in how(st)
    only_unstable = np.where(st == "too_short", "", st)
    assert "◇" not in how(only_unstable) and "✕ (in its semantics' colour) stopped as unstable" in how(only_unstable)
    none = np.full(st.shape, "", dtype=st.dtype)
    assert "holds only the ▼" in how(none) and "◇" not in how(none) and "✕" not in how(none)


def test_percentile_figure_marks_each_semantics_lowest_and_colours_its_strip(monkeypatch):
    """The percentile figure, like the means figure, puts a ▼ in each semantics' colour at the rate of its lowest
    simulated percentile (round 12: the minima had to be found by eye), its legend says so, the strip's ✕/◇ are in
    the colour of the semantics they belong to (round 12: black marks named only by text beside the strip), and the
    dashed g* line is named in the plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    drawn = []
    monkeypatch.setattr(plots, "save", lambda fig, stem, formats, dpi, caption=None: drawn.append(fig) or [stem])
    plots.percentile(xr.Dataset({"g_star": 1.3}), _cmp(), "unused", "example2", ("png",), 60)
    (fig,) = drawn
    ax = fig.get_axes()[0]
    down = [ln for a in ax.child_axes for ln in a.get_lines() if ln.get_marker() == "v"]
    cmp = _cmp()
    want = {float(cmp["best_rate_response_time_percentile"].sel(semantics=s).item()):
            mcolors.to_hex(plots.STYLE[s][0]) for s in SEMS}
    got = sorted((float(m.get_xdata()[0]), mcolors.to_hex(m.get_color())) for m in down)
    assert len(got) == 3 and all(want.get(x) is not None for x, _ in got)
    assert {c for _, c in got} == {mcolors.to_hex(plots.STYLE[s][0]) for s in SEMS}
    legend = [t.get_text().replace("\n", " ") for lg in fig.legends for t in lg.get_texts()]
    assert any(t.startswith("▼ in the strip above the panel") and "lowest simulated percentile" in t for t in legend)
    marks = [ln for a in ax.child_axes for ln in a.get_lines() if ln.get_marker() == "X"]  # ✕: stopped as unstable
    # the unstable point is timeout_deterministic's (replications_stable 3 of 5 at the last rate): ✕ in its colour
    assert [mcolors.to_hex(ln.get_color()) for ln in marks] == [mcolors.to_hex(plots.STYLE[SEMS[2]][0])]
    assert any(t.get_text().startswith("g*") for t in ax.texts)
    plt.close(fig)


def test_the_means_title_says_which_timeouts_beat_g_star_as_the_caption_does(monkeypatch):
    """The means figure's title carries the caption's headline, computed: a semantics whose smallest simulated mean
    lies below E[T] at g* beyond its CI "beat g*" (round 15's reader: the title omitted it); none, no such words."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pf, cmp = _means_inputs()
    cmp["response_time_at_g_star"] = pf["response_time_at_g_star"]
    fig = _drawn(monkeypatch, plots.means, pf, cmp)
    assert "beat" not in fig._suptitle.get_text()
    assert not [c for c in plots._means_caption(pf, cmp, "example2").findings if "beat" in c.text]
    plt.close(fig)
    cmp["best_response_time"].loc["timeout_exponential"] = 0.95  # 0.95 + 0.02 < 0.99: beats it beyond its CI
    fig = _drawn(monkeypatch, plots.means, pf, cmp)
    assert "exponential timeouts beat g*: 0.95 at r = 1, below 0.99 beyond the CI" in fig._suptitle.get_text()
    assert "deterministic timeouts beat" not in fig._suptitle.get_text()
    beat = [c for c in plots._means_caption(pf, cmp, "example2").findings if "beat" in c.text]
    assert len(beat) == 1 and "Exponential timeouts beat the product form's optimum" in beat[0].text
    for claim in beat:
        ok, derived = verify(claim, lambda source: cmp)
        assert ok, f"{claim.text!r} states {claim.value!r}, the data say {derived!r}"
    plt.close(fig)
    cmp["best_response_time"].loc["timeout_exponential"] = 0.98  # below 0.99 but not beyond its CI: no claim
    assert "beat" not in plots._title(pf, "example2", cmp)


def test_a_bar_through_each_best_marks_the_rates_within_its_ci(monkeypatch):
    """Each ▼ in the strip carries a bar over the rates whose CI reaches its value — in the means and the percentile
    figure alike (round 15's reader: the signals' lowest percentile lay within its neighbours' CIs, the strip made
    it look distinct); the percentile caption names those rates, re-derived from the comparison; no bar (and no
    legend entry) where no other rate reaches it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.colors as mcolors
    import matplotlib.pyplot as plt

    def bars(fig):
        (strip,) = fig.get_axes()[0].child_axes
        return sorted((tuple(float(x) for x in ln.get_xdata()), mcolors.to_hex(ln.get_color()))
                      for ln in strip.get_lines() if ln.get_marker() in ("None", "", None) and ln.get_linewidth() > 3)

    cmp = _cmp()  # signals: 4.0, 3.0, 3.5 ± 0.1: only r = 1 reaches 3.0; widen r = 2's CI to reach it
    cmp["response_time_percentile_half_width"][0, 2, 0] = 0.45
    cmp["best_response_time_percentile_half_width"] = (("semantics", "percentile"), np.full((3, 1), 0.1))
    fig = _drawn(monkeypatch, plots.percentile, xr.Dataset({"g_star": 1.3}), cmp)
    assert bars(fig) == [((1.0, 2.0), mcolors.to_hex(plots.STYLE["signal"][0]))]
    legend = [t.get_text().replace("\n", " ") for lg in fig.legends for t in lg.get_texts()]
    assert plots.WITHIN_LABEL in legend
    plt.close(fig)
    st = plots._status(cmp, "response_time_percentile")
    cap = plots._percentile_caption(None, cmp, "example2", st)
    within = [c for c in cap.findings if "within the CI" in c.text]
    assert [c.text for c in within] == ["Signals: r = 1 to 2 lie within the CI of its lowest 99th percentile (the bar "
                                        "through its ▼)."]
    for claim in within:
        ok, derived = verify(claim, lambda source: cmp)
        assert ok, f"{claim.text!r} states {claim.value!r}, the data say {derived!r}"
    cmp["response_time_percentile_half_width"][0, 2, 0] = 0.1
    fig = _drawn(monkeypatch, plots.percentile, xr.Dataset({"g_star": 1.3}), cmp)
    legend = [t.get_text().replace("\n", " ") for lg in fig.legends for t in lg.get_texts()]
    assert bars(fig) == [] and plots.WITHIN_LABEL not in legend
    assert not [c for c in plots._percentile_caption(None, cmp, "example2", st).findings if "within the CI" in c.text]
    plt.close(fig)
    pf, mcmp = _means_inputs()  # the means figure: exponential timeouts' best 1.05 ± 0.02; r = 2's 1.15 - 0.12 reaches
    mcmp["response_time_half_width"][1, 2] = 0.12
    fig = _drawn(monkeypatch, plots.means, pf, mcmp)
    assert bars(fig) == [((1.0, 2.0), mcolors.to_hex(plots.STYLE["timeout_exponential"][0]))]
    plt.close(fig)


def test_the_signals_point_whose_ci_misses_the_product_form_is_ringed_and_named(monkeypatch):
    """The caption's "covers the product form at k of n rates" shows which rate misses: a red ring around that
    signals' point, its count in the legend, its rate in the caption (re-derived); none where every CI covers it
    (round 15's reader)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def rings(fig):
        ax = fig.get_axes()[0]
        return [(list(ln.get_xdata()), list(ln.get_ydata())) for ln in ax.get_lines()
                if ln.get_marker() == "o" and ln.get_markerfacecolor() == "none" and ln.get_markersize() > 10]

    pf, cmp = _means_inputs()
    fig = _drawn(monkeypatch, plots.means, pf, cmp)
    assert rings(fig) == [] and not [c for c in plots._means_caption(pf, cmp, "example2").findings
                                     if "ringed" in c.text]
    plt.close(fig)
    cmp["response_time_covered"][0, 2] = 0  # signals at r = 2
    cmp["response_time_covered"][1, 0] = 0  # a timeout's miss is no miss of the product form's model: no ring
    fig = _drawn(monkeypatch, plots.means, pf, cmp)
    assert rings(fig) == [([2.0], [1.1])]
    legend = [t.get_text().replace("\n", " ") for lg in fig.legends for t in lg.get_texts()]
    assert ("ringed: the signals' CI misses the product form (1 of 3 rates; ≈ 1 in 20 expected by chance at 95%)"
            in legend)
    plt.close(fig)
    cap = plots._means_caption(pf, cmp, "example2")
    covers = [c for c in cap.findings if "covers the product form" in c.text or "ringed" in c.text]
    assert [c.text for c in covers][-1] == "It misses it at r = 2 (ringed in red)."
    assert "at 2 of 3 rates" in covers[0].text
    for claim in covers:
        ok, derived = verify(claim, lambda source: cmp)
        assert ok, f"{claim.text!r} states {claim.value!r}, the data say {derived!r}"


def test_the_g_star_label_stays_inside_the_axes(monkeypatch):
    """The dashed g* line's name stays inside the panel wherever g* falls — right of the line in the left half, left
    of it in the right half (round 15: "g* (optimum of the mean)" spilled out of the box at g* near the right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for g in (0.55, 1.0, 1.95):
        fig = _drawn(monkeypatch, plots.percentile, xr.Dataset({"g_star": g}), _cmp())
        ax = fig.get_axes()[0]
        renderer = fig.canvas.get_renderer()
        (label,) = [t for t in ax.texts if t.get_text().startswith("g*")]
        box, inside = label.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1, (g, box, inside)
        plt.close(fig)


def test_timeouts_below_the_product_form_are_named_where_the_data_put_them():
    """A timeout semantics whose simulated mean lies below the product form (signals) beyond its CI at a rate is named
    in the means caption with those rates and the gain, re-derived from the comparison, and in the title where that
    holds at most of its rates (round 16's reader: exponential timeouts beat signals at every r < 3 in example 2, and
    nothing said so); nowhere below, no words."""
    pf, cmp = _means_inputs()
    cmp["response_time_pf"] = ("restart_rate", [1.2, 1.0, 1.1])
    assert "below the product form" not in plots._title(pf, "example2", cmp)
    cmp["response_time"].loc["timeout_exponential"] = [1.1, 0.95, 1.2]  # below beyond the CI at r = 0.5 and 1
    title = plots._title(pf, "example2", cmp)
    assert ("exponential timeouts lie below the product form (signals), beyond the CI, at every rate r ≤ 1 "
            "(by up to 8%)") in title and "deterministic timeouts lie below" not in title
    below = [c for c in plots._means_caption(pf, cmp, "example2").findings if "below the product form" in c.text]
    assert [c.text for c in below] == ["Exponential timeouts lie below the product form (signals) beyond the CI at "
                                       "every rate r ≤ 1 (2 of the 3 rates with a value), by up to 8%."]
    cmp["response_time"].loc["timeout_exponential"] = [1.25, 0.95, 1.2]  # only at r = 1 now
    below = [c for c in plots._means_caption(pf, cmp, "example2").findings if "below the product form" in c.text]
    assert below[0].text.startswith("Exponential timeouts lie below the product form (signals) beyond the CI at r = 1 "
                                    "(1 of the 3 rates with a value), by 5%")
    assert "below the product form" not in plots._title(pf, "example2", cmp)  # at a minority of its rates: caption
    cmp["response_time"].loc["timeout_deterministic"] = [1.0, 1.2, np.nan]  # unstable at r = 2: 1 of 2 usable
    below = [c for c in plots._means_caption(pf, cmp, "example2").findings if "below the product form" in c.text]
    assert len(below) == 2 and "r = 0.5 (1 of the 2 rates with a value)" in below[1].text
    for claim in below:
        ok, derived = verify(claim, lambda source: cmp)
        assert ok, f"{claim.text!r} states {claim.value!r}, the data say {derived!r}"
    cmp["response_time"].loc["timeout_exponential"] = [1.19, 0.99, 1.09]  # below, but within the CI: no claim
    cmp["response_time"].loc["timeout_deterministic"] = [1.3, 1.2, np.nan]
    assert "below the product form" not in plots._title(pf, "example2", cmp)


def test_the_model_line_gives_the_service_laws_scv_and_breaks_no_parenthesis():
    """The title's model line names the service law's SCV (why restart helps: round 16's reader), computed from the
    stored PH law (Exp(5) then Exp(2) w.p. 0.9 or Exp(0.1) w.p. 0.1: mean 1.65, E[S²] = 21.11, SCV 6.75), and
    wraps without a line break inside a parenthesis (round 16: "(load without restart / λ E[S] = …)")."""
    import json

    service = {"H": [[0.0, 0.9, 0.1], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], "entry": [1.0, 0.0, 0.0],
               "rates": [5.0, 2.0, 0.1]}
    spec = {"queues": [{"classes": [{"name": "c1", "arrival_rate": 0.012, "service": service}]}]}
    pf, cmp = _means_inputs()
    pf.attrs["spec"] = json.dumps(spec)
    words = plots.describe_plainly(pf)
    assert "a 3-phase law of mean 1.65, SCV 6.8 (load without restart λ E[S] = 0.02)" in words
    service["rates"] = [5.0, 2.0, 2.0]  # no slow branch: mean 0.7, E[S²] = 0.08 + 0.4·0.5 + 0.5 = 0.78, SCV 0.59
    pf.attrs["spec"] = json.dumps(spec)
    assert "mean 0.7, SCV 0.59" in plots.describe_plainly(pf)
    for lines in (plots._title(pf, "example1", cmp).split("\n"),):
        assert all(ln.count("(") == ln.count(")") for ln in lines), lines


def test_lowest_across_the_semantics_says_when_it_is_within_the_ci_of_another(monkeypatch):
    """Round 20's reader: the percentile panel called a value "lowest" that lay within the CI of another semantics'
    lowest. With deterministic timeouts' lowest (3.8 ± 0.3) reaching the signals' (3.0 ± 0.5) the title says "but
    within the CI of deterministic timeouts' lowest"; with narrow CIs it does not; the caption's claim says the same
    and re-derives from the comparison in both."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    titles = {}
    for name, hw in (("wide", [[0.5], [0.1], [0.3]]), ("narrow", [[0.1], [0.1], [0.1]])):
        cmp = _cmp()
        cmp["best_response_time_percentile_half_width"] = (("semantics", "percentile"), np.array(hw))
        drawn = []
        monkeypatch.setattr(plots, "save", lambda fig, stem, formats, dpi, caption=None, drawn=drawn: drawn.append(
            (fig, caption)) or [stem])
        plots.percentile(xr.Dataset({"g_star": 1.3}), cmp, "unused", "example2", ("png",), 60)
        (fig, cap), = drawn
        ax = fig.get_axes()[0]
        titles[name] = " ".join(a.get_title(loc="left") for a in [ax, *ax.child_axes])
        claim = next(c for c in cap.claims() if c.text.startswith("Across the semantics the lowest"))
        ok, derived = verify(claim, lambda source, cmp=cmp: cmp)
        assert ok, (claim.text, claim.value, derived)
        assert claim.value[1] == (["timeout_deterministic"] if name == "wide" else [])
        plt.close(fig)
    assert "lowest, 3, with signals at r = 1, but within the CI of deterministic timeouts' lowest" in titles["wide"]
    assert "lowest, 3, with signals at r = 1" in titles["narrow"] and "within the CI of" not in titles["narrow"]
