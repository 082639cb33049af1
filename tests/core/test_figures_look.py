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


def test_table_written_as_csv_and_html(tmp_path):
    out = write_table(tmp_path / "key", "Best <r, q>", ["q", "best r"], [[1, 5], [2, "4 & 5"]], notes=["a|b|"],
                      more=[("second", ["x"], [["y"]])])
    assert [p.name for p in out] == ["key.csv", "key.html"]
    assert list(csv.reader(out[0].read_text().splitlines())) == [["q", "best r"], ["1", "5"], ["2", "4 & 5"]]
    page = out[1].read_text()
    assert page.count("<table>") == 2 and "Best &lt;r, q&gt;" in page and "4 &amp; 5" in page
    assert not list(tmp_path.glob(".*tmp"))  # written atomically, nothing left behind
