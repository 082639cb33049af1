"""The shared look of the figures (sojourn.core.present.figures) and the report's key-result tables
(sojourn.core.present.tables):
readable log ticks, signed-log ticks without "−10⁰", one colour per method, tables as CSV and HTML."""
from __future__ import annotations

import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from sojourn.core.present.figures import (  # noqa: E402
    METHOD_COLORS,
    log_ticks,
    method_color,
    signed_log_ticks,
)
from sojourn.core.present.tables import write_table  # noqa: E402


def _labels(ax, axis="y"):
    ax.figure.canvas.draw()
    ticks = ax.get_yticklabels() if axis == "y" else ax.get_xticklabels()
    return [t.get_text() for t in ticks if t.get_text()]


def test_log_ticks_plain_1_2_5_on_a_short_range():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [0.15, 7.0])
    ax.set_yscale("log")
    log_ticks(ax.yaxis)
    labels = _labels(ax)
    plt.close(fig)
    assert {"0.2", "0.5", "1", "2", "5"} <= set(labels)
    assert not any("10^" in x or "×" in x or "$" in x for x in labels)


def test_log_ticks_decades_only_on_a_wide_range():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1e-3, 50.0])
    ax.set_yscale("log")
    log_ticks(ax.yaxis)
    labels = _labels(ax)
    plt.close(fig)
    assert {"0.001", "0.01", "0.1", "1", "10"} <= set(labels) and "2" not in labels and "5" not in labels


def test_signed_log_ticks_never_print_powers():
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [-150.0, 0.0, 20.0])
    ax.set_yscale("symlog", linthresh=1.0)
    signed_log_ticks(ax.yaxis)
    labels = _labels(ax)
    plt.close(fig)
    assert "0" in labels and "−10" in labels and "10" in labels and "−100" in labels
    assert not any("$" in x or "^" in x for x in labels)


def test_one_colour_per_method():
    assert len(set(METHOD_COLORS.values())) == len(METHOD_COLORS)
    assert method_color("T") == METHOD_COLORS["T"] and method_color("unknown") not in METHOD_COLORS.values()


def test_a_family_is_never_drawn_in_a_method_colour():
    """A colour means one thing across the report (issue 31's reader: "best of A*–F*" was drawn in orange, B's colour
    in the maps): the families drawn as one line ("best of A–F", "best of A*–F*") are shades of grey, apart from each
    other, and every method's colour is a hue; the Wasserstein, reproduction and run-time figures draw the families
    in exactly these, and the caption's word for each shade names it."""
    from matplotlib.colors import to_hex, to_rgb

    from sojourn.jsq_ps import plots

    fam = plots.common.FAMILY_COLORS
    chroma = lambda c: max(to_rgb(c)) - min(to_rgb(c))  # noqa: E731
    assert all(chroma(c) == 0 for c in fam.values()) and len({to_hex(c) for c in fam.values()}) == len(fam)
    assert min(chroma(c) for c in METHOD_COLORS.values()) > 0.25
    assert abs(to_rgb(fam["faithful"])[0] - to_rgb(fam["corrected"])[0]) >= 0.3  # two shades told apart
    words = plots.common.FAMILY_COLOR_WORDS
    assert words["corrected"] == "black" and to_rgb(fam["corrected"])[0] <= 0.15
    assert words["faithful"] == "grey" and 0.3 <= to_rgb(fam["faithful"])[0] <= 0.7
    drawn = {"wasserstein": (plots.wasserstein._BEST_FAITHFUL["color"], plots.wasserstein._BEST_CORRECTED["color"]),
             "reproduction": (plots.reproduction._FAMILY_STYLE["faithful"][0],
                              plots.reproduction._FAMILY_STYLE["corrected"][0])}
    for colors in drawn.values():
        assert colors == (fam["faithful"], fam["corrected"])


def test_table_written_as_csv_and_html(tmp_path):
    out = write_table(tmp_path / "key", "Best <r, q>", ["q", "best r"], [[1, 5], [2, "4 & 5"]], notes=["a|b|"],
                      more=[("second", ["x"], [["y"]])])
    assert [p.name for p in out] == ["key.csv", "key.html"]
    assert list(csv.reader(out[0].read_text().splitlines())) == [["q", "best r"], ["1", "5"], ["2", "4 & 5"]]
    page = out[1].read_text()
    assert page.count("<table>") == 2 and "Best &lt;r, q&gt;" in page and "4 &amp; 5" in page
    assert not list(tmp_path.glob(".*tmp"))  # written atomically, nothing left behind
