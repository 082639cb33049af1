"""The key-result tables of the HTML report: each study's section opens with one (its figure job writes it).

A table is written twice, atomically: ``<stem>.csv`` (for programs) and ``<stem>.html`` (a standalone page that
Snakemake's report embeds as a result, like the reproduction's page). The HTML is written directly (no docutils:
the report then carries no docutils message whatever the cell text is).
"""
from __future__ import annotations

import csv
import html
import io
from pathlib import Path

from ..files.integrity import write_atomic

_STYLE = ("body{font-family:sans-serif;font-size:14px;margin:1em}table{border-collapse:collapse;margin:.6em 0}"
          "th,td{border:1px solid #bbb;padding:3px 8px;text-align:right}th{background:#eee}"
          "td:first-child,th:first-child{text-align:left}p.note{color:#444;max-width:70em}")


def write_table(stem, title: str, header: list, rows: list, notes=(), more=(), caption=None) -> list[Path]:
    """``<stem>.csv`` and ``<stem>.html``: a table ``header`` + ``rows`` (cells printed as given) under ``title``,
    ``notes`` (paragraphs) below it; ``more``: further (title, header, rows) tables on the same page (the CSV
    holds the first); ``caption`` (:class:`sojourn.core.present.claims.Caption`): the report's caption of the page,
    written
    from the same data as ``<stem>.rst``, its findings also opening the page. Returns the written paths."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    csv_path = stem.with_name(stem.name + ".csv")
    write_atomic(csv_path, buf.getvalue().encode())
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_STYLE}</style></head><body>"]
    if caption is not None and caption.findings:
        parts.append(
            f"<p class='note'><b>What this run shows.</b> {html.escape(caption.sentences(caption.findings))}</p>"
        )
    if caption is not None and caption.limits:
        parts.append(
            f"<p class='note'><b>What it cannot show.</b> {html.escape(caption.sentences(caption.limits))}</p>"
        )
    for t, h, r in ((title, header, rows), *more):
        parts.append(f"<h3>{html.escape(t)}</h3><table><tr>" + "".join(f"<th>{html.escape(str(x))}</th>" for x in h)
                     + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in row) + "</tr>" for row in r]
        parts.append("</table>")
    parts += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
    parts.append("</body></html>")
    html_path = stem.with_name(stem.name + ".html")
    write_atomic(html_path, "".join(parts).encode())
    out = [csv_path, html_path]
    if caption is not None:
        out.append(caption.write(stem.with_name(stem.name + ".rst")))
    return out
