"""The split-merge figures' headers state their findings computed from the data they draw (issue 31: words from
data), and carry no "(see the caption)"."""
from __future__ import annotations

import numpy as np
import xarray as xr

from sojourn.split_merge import plots


def _c(sm, fj, hw=0.01):
    """Experiment (c)'s means for one law: two quorums × three replica counts, split-merge ``sm`` and fork-join
    ``fj`` ((quorum, replicas) arrays), every run long enough."""
    mean = np.stack([np.asarray(sm, float), np.asarray(fj, float)])
    return xr.Dataset({"sim_mean_latency": (("model", "quorum", "replicas"), mean),
                       "sim_mean_latency_hw": (("model", "quorum", "replicas"), np.full(mean.shape, hw))},
                      coords={"model": [plots.SM, plots.FJ], "quorum": [1, 2], "replicas": [1, 2, 3]})


def test_figure_c_header_states_the_finding():
    """Figure (c)'s header, one line, the finding first: at how many replica steps split-merge's mean falls beyond both
    CIs ("all" only where each does: round 10 claimed it for q = 1 where r = 8–10 lie within the CI), and where one
    rises beyond them; then fork-join's count. Where each step lies is the caption's (round 11: a four-line title
    led by its exception list)."""
    rs = np.array([1, 2, 3])
    ok = np.ones((2, 2, 3), bool)
    falling = _c([[1.0, 0.6, 0.4], [np.nan, 1.2, 0.9]], [[1.0, 0.5, 0.3], [np.nan, 1.2, 0.95]])
    assert plots._figure_c_finding(falling, rs, ok) == (
        "beyond both CIs: each added replica lowers split-merge's mean latency (all 3 steps r → r + 1); "
        "fork-join lies below split-merge at 2 of 4 (q, r ≥ 2) points, above at 1")
    rising = _c([[1.0, 0.6, 0.7], [np.nan, 1.2, 0.9]], [[1.0, 0.7, 0.8], [np.nan, 1.3, 1.0]])
    assert plots._figure_c_finding(rising, rs, ok) == (
        "beyond both CIs: each added replica lowers split-merge's mean latency at 2 of 3 steps r → r + 1, raises it "
        "at 1; "
        "fork-join lies below split-merge at 0 of 4 (q, r ≥ 2) points, above at 4")
    assert plots._replica_steps_words(plots.replica_steps(rising, rs, ok)) == (
        "split-merge's mean latency: each added replica lowers it beyond both CIs for q = 2; it rises beyond both "
        "CIs at r = 3 for q = 1")
    flat = _c([[1.0, 0.6, 0.59], [np.nan, 1.2, 0.9]], [[1.0, 0.7, 0.8], [np.nan, 1.3, 1.0]], hw=0.02)
    assert plots.replica_steps(flat, rs, ok) == {1: ([2], [3], []), 2: ([3], [], [])}
    assert plots._figure_c_finding(flat, rs, ok).startswith(
        "beyond both CIs: each added replica lowers split-merge's mean latency at 2 of 3 steps r → r + 1; ")
    # a step names what it spans (round 21: "16 of 24 steps" did not say): with r = 1, 2, 4 not every step adds one
    gapped = falling.assign_coords(replicas=[1, 2, 4])
    assert "(all 3 steps from one r to the next drawn)" in plots._figure_c_finding(gapped, np.array([1, 2, 4]), ok)
    assert plots._replica_steps_words(plots.replica_steps(flat, rs, ok)) == (
        "split-merge's mean latency: each added replica lowers it beyond both CIs for q = 2 except at r = 3 for "
        "q = 1 (within the CIs there; none raises it beyond them)")
    assert plots._ranges([2, 6, 7, 8, 9, 10]) == "2 and 6–10" and plots._ranges([8, 9]) == "8 and 9"


def test_no_see_the_caption_in_titles():
    assert "see the caption" not in plots.load_words(0.9, None)
    assert "see the caption" not in plots.load_words(0.9, 100)


def _c_full(method):
    """Figure (c)'s drawn variables for one law: quorums 1–2 × replicas 1–3, both models, one percentile; the
    exact values wherever ``method`` ((quorum, replicas) codes, 0 none) has one."""
    mean = np.array([[[1.0, 0.6, 0.4], [np.nan, 1.2, 0.9]], [[1.0, 0.5, 0.3], [np.nan, 1.1, 0.8]]])
    dims = ("model", "quorum", "replicas")
    method = np.stack([np.asarray(method, float), np.zeros((2, 3))])
    return xr.Dataset({"sim_mean_latency": (dims, mean), "sim_mean_latency_hw": (dims, np.full(mean.shape, 0.02)),
                       "sim_latency_percentile": (dims + ("percentile",), 3 * mean[..., None]),
                       "sim_latency_percentile_hw": (dims + ("percentile",), np.full(mean.shape + (1,), 0.1)),
                       "exact_method": (dims, method),
                       "exact_mean_latency": (dims, np.where(method > 0, mean[0] * 1.01, np.nan)),
                       "exact_latency_percentile": (dims + ("percentile",),
                                                    np.where(method[..., None] == 2, 3 * mean[..., None], np.nan))},
                      coords={"model": [plots.SM, plots.FJ], "quorum": [1, 2], "replicas": [1, 2, 3],
                              "percentile": [0.99]})


def _curves(ds):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2)
    ok = np.ones((2, 2, 3), bool)
    plots._figure_c_curves((a1, a2), (plots.status_strip(a1), plots.status_strip(a2)), ds, 0, (ok, ok), [],
                           plt.get_cmap("tab10"))
    return fig, a1, a2


def test_figure_c_draws_exact_values_hollow_at_the_simulated_points_r():
    """Figure (c)'s exact values sit at the simulated point's own r, hollow and larger, so the simulated dot shows in
    their centre (round 15's reader read markers shifted by +0.2 in r as another r), in both panels; a lone exact
    value is named in the legend only, not by a note in the data area (round 15: "exact (r = 1 only)" beside the
    q = 1 line)."""
    import matplotlib.pyplot as plt

    rs = np.array([1, 2, 3])
    for method in ([[2, 2, 2], [0, 3, 3]], [[3, 0, 0], [0, 0, 0]]):
        ds = _c_full(method)
        fig, a1, a2 = _curves(ds)
        for ax in (a1, a2) if 2 in np.asarray(method) else (a1,):  # Erlang C's percentile: the right panel too
            exact = [ln for ln in ax.get_lines() if ln.get_marker() in ("*", "^")]
            assert exact, "the exact values are drawn"
            for ln in exact:
                assert set(np.asarray(ln.get_xdata(), float)) <= set(rs.astype(float)), "at an r of the sweep"
                assert ln.get_markerfacecolor() == "none" and ln.get_markersize() >= 9
            assert not ax.texts, "no note in the data area"
        plt.close(fig)
    legend = plots._figure_c_legend(plt.figure(), _c_full([[3, 0, 0], [0, 0, 0]]), plt.get_cmap("tab10"), [], set())
    assert legend == [3]
    labels = [t.get_text() for t in plt.gcf().legends[0].get_texts()]
    assert any("hollow, around the simulated point" in t and "only at r = 1" in t for t in labels)
    plt.close("all")


def test_figures_over_r_say_the_load_is_held_fixed_on_their_axis():
    """The fixed load, so a λ that changes with r, is in the x-axis label of every figure over r — (b)'s map as (c)'s
    panels (round 15's reader had to find it in (b)'s title's fine print); (c)'s title no smaller than its axis
    labels; (a)'s tail beyond the deepest estimated percentile faint grey, not a dotted black."""
    import matplotlib
    import matplotlib.colors as mcolors

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    assert "load held fixed" in plots.R_AXIS and "λ changes with r" in plots.R_AXIS
    rs, qs = np.array([1, 2]), np.array([1, 2])
    ex = np.array([[2.0, 1.5], [np.nan, 3.0]])
    ds = xr.Dataset({"exact_mean_latency": (("quorum", "replicas"), ex),
                     "sim_mean_latency": (("quorum", "replicas"), ex * 1.01),
                     "sim_mean_latency_hw": (("quorum", "replicas"), np.full((2, 2), 0.1)),
                     "run_valid": (("quorum", "replicas"), np.ones((2, 2), np.int8))},
                    coords={"quorum": qs, "replicas": rs})
    fig, ax = plt.subplots()
    outside = qs[:, None] > rs[None, :]
    plots._figure_b_map(fig, ax, ds, outside, np.zeros((2, 2), bool), np.zeros((2, 2), bool))
    assert ax.get_xlabel() == plots.R_AXIS
    plt.close(fig)
    label_pt = matplotlib.font_manager.FontProperties(size=plt.rcParams["axes.labelsize"]).get_size_in_points()
    assert plots.C_TITLE_PT >= label_pt
    grey = plots.BEYOND_REFERENCE
    assert grey["ls"] == "-" and min(mcolors.to_rgb(grey["color"])) >= 0.6, "a faint grey, solid"


def test_the_host_count_comes_from_the_data():
    """n from the result's ``hosts``: None (n = r, the hardware grows with r) where it equals r at every point, else
    the one n (experiment (c)'s 100; (a)'s one system with n = r = 3 is n = 3), in words for the titles."""
    def ds(hosts, rs):
        h = np.array([[h if q <= r else np.nan for r, h in zip(rs, hosts, strict=True)] for q in (1, 2)], float)
        return xr.Dataset({"hosts": (("quorum", "replicas"), h)}, coords={"quorum": [1, 2], "replicas": rs})

    assert plots.host_count(ds([1, 2, 3], [1, 2, 3])) is None
    assert plots.host_count(ds([100, 100, 100], [1, 2, 3])) == 100
    assert plots.host_count(ds([3], [3])) == 3
    assert plots.hosts_words(None) == "n = r hosts: the hardware grows with r"
    assert plots.hosts_words(100) == "n = 100 hosts at every r"


def test_experiment_a_says_how_sharp_its_check_is():
    """(a)'s "k of n inside the CI" comes with the widest CI among the checked statistics, in % of its value (round
    16's reader: ±21% at p99 with 5 replications makes "4 of 4 inside" a weak check); it follows the data."""
    labels = ["mean", "p50", "p99"]
    sim, hw = np.array([6.0, 4.0, 26.6]), np.array([0.46, 0.18, 5.6])
    assert plots.widest_ci(sim, hw, np.ones(3, bool), labels) == (100 * 5.6 / 26.6, "p99")
    assert plots.widest_ci(sim, hw, np.array([True, True, False]), labels) == (100 * 0.46 / 6.0, "mean")
    assert plots.widest_ci(sim, hw, np.zeros(3, bool), labels) is None


def _b(ex):
    """Experiment (b)'s drawn variables: quorums × replicas 1..3 (q ≤ r), the exact means ``ex``, the simulation
    1 % above them with a CI that holds them, every run long enough."""
    ex = np.asarray(ex, float)
    qs, rs = np.arange(1, ex.shape[0] + 1), np.arange(1, ex.shape[1] + 1)
    dims = ("quorum", "replicas")
    return xr.Dataset({"exact_mean_latency": (dims, ex), "sim_mean_latency": (dims, ex * 1.01),
                       "sim_mean_latency_hw": (dims, np.full(ex.shape, 0.5)),
                       "run_valid": (dims, np.ones(ex.shape, np.int8))}, coords={"quorum": qs, "replicas": rs})


def test_figure_b_header_compares_r_at_one_quorum():
    """Round 20's reader: (b)'s header named the lowest exact mean of the whole map (r = 5, q = 1), a job that waits for
    one replica against jobs that wait for five. The header compares r at one quorum (a row of the map), over the
    quorums with a choice of r; two datasets with different winners give different words, and the caption's claim
    re-derives from the data (q = 3, one cell, is no choice)."""
    from sojourn.core.present.claims import verify

    more = [[3.0, 2.0, 1.5], [np.nan, 4.0, 3.0], [np.nan, np.nan, 5.0]]  # more replicas, lower at every q
    fewer = [[3.0, 2.0, 2.5], [np.nan, 4.0, 3.0], [np.nan, np.nan, 5.0]]  # q = 1 lowest at r = 2
    heads = {}
    for name, ex in (("more", more), ("fewer", fewer)):
        ds = _b(ex)
        cells = np.isfinite(ds["exact_mean_latency"].values)
        findings, _, head = plots._figure_b_claims(ds.expand_dims(law=["x"], model=[plots.SM]).isel(law=0, model=0),
                                                   "x", int(cells.sum()), cells)
        heads[name] = head
        claims = [c for c in findings if "comparing r" in c.text.lower()]
        assert len(claims) == 1
        full = ds.expand_dims(law=["x"], model=[plots.SM])
        ok, derived = verify(claims[0], lambda source, full=full: full)
        assert ok, (claims[0].text, claims[0].value, derived)
    assert heads["more"] == ("comparing r at the same quorum q (q = 1–2), the exact mean latency is lowest at r = 3, "
                             "the most replicas; ")
    assert heads["fewer"] == ("comparing r at the same quorum q, the exact mean latency is lowest at r = 2 for q = 1 "
                              "and r = 3 for q = 2; ")
    assert "lowest exact mean latency at r" not in heads["more"] + heads["fewer"]  # no minimum over the whole map
