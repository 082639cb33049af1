"""The measured table of method T in docs/jsq_ps.md states what benchmarks/tail_method.jsonl recorded (the last
run of ``python benchmarks/tail_method.py``): each band's median |relative error| per percentile, its optimistic
cells and the CPU per cell, to the digits the table prints."""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BANDS = {"ρ ≤ 0.5": "rho <= 0.5", "0.5 < ρ ≤ 0.9": "0.5 < rho <= 0.9", "ρ > 0.9": "rho > 0.9"}
PERCENTILES = ("99.0", "99.9", "99.99", "99.999")


def _doc_rows() -> dict:
    text = (ROOT / "docs" / "jsq_ps.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] in BANDS and len(cells) == 7:
            rows[cells[0]] = cells
    return rows


def _expected(record: dict, band: str) -> list[str]:
    t = [record["table"][f"T|{BANDS[band]}|{p}"] for p in PERCENTILES]
    errors = [f"{100 * r['median']:.2f} %" for r in t]
    optimistic = f"{sum(r['optimistic_cells'] for r in t)} of {sum(r['cells'] for r in t)}"
    cpu = f"{t[0]['cpu_median']:.2f} s, {t[0]['cpu_max']:.2f} s"
    return [band, *errors, optimistic, cpu]


def test_the_documented_table_is_the_recorded_one():
    record = json.loads((ROOT / "benchmarks" / "tail_method.jsonl").read_text().splitlines()[-1])
    rows = _doc_rows()
    assert set(rows) == set(BANDS)
    for band, cells in rows.items():
        assert cells == _expected(record, band), band


def test_the_check_reads_every_figure():
    """The check can fail: one changed figure in the record is found."""
    record = json.loads((ROOT / "benchmarks" / "tail_method.jsonl").read_text().splitlines()[-1])
    record["table"]["T|rho > 0.9|99.99"]["median"] *= 1.1
    rows = _doc_rows()
    assert any(cells != _expected(record, band) for band, cells in rows.items())
    assert re.fullmatch(r"\d+\.\d\d %", rows["ρ > 0.9"][3])
