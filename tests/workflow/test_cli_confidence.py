"""One confidence level across the commands, printed with every interval (issue 25 item 4: `split-merge best`
printed ± at 99 % while `simulate` printed 95 %). Every command that prints a ± interval is run small, the way a
user runs it; each line with an interval must state the level (the project's one default,
sojourn.core.checks.config.DEFAULT_CONFIDENCE) on the line itself or in the header of its block, and no other level may
appear."""
from __future__ import annotations

import re

import pytest

from sojourn.cli import main
from sojourn.core.checks.config import DEFAULT_CONFIDENCE

LEVEL = f"{100 * DEFAULT_CONFIDENCE:g}%"

COMMANDS = {
    "simulate": ["simulate", "-R", "2", "--load", "0.5", "--horizon", "2000", "--replications", "3"],
    "split-merge simulate": ["split-merge", "simulate", "-n", "4", "-r", "2", "-q", "1", "--load", "0.6",
                             "--workunits", "3000", "--replications", "3", "--percentiles", "50,90"],
    "split-merge best": ["split-merge", "best", "-n", "20", "--arrival-rate", "3", "--replica-law",
                         "lognormal:sigma=1", "--max-replicas", "2", "--quorum-min", "2", "--workunits", "3000",
                         "--replications", "3"],
    "restart simulate": ["restart", "simulate", "--model", "example2", "--horizon", "3000", "--replications", "3"],
}


def _header(line: str) -> bool:
    """A line that introduces a block of intervals (the percentiles' or the ranking's header), itself none."""
    return bool(re.search(r"percentiles|CI across|^\s*rank\b", line)) and not re.search(r"\d ± \d", line)


def _blocks(text: str):
    """(line, header) pairs: an indented line (a row of a block) goes with the nearest header above it; any
    line also with a header right below it (restart's percentile, then its parenthesised CI header)."""
    lines = text.splitlines()
    above = ""
    for i, line in enumerate(lines):
        if _header(line):
            above = line
        elif line[:1].strip():  # an unindented line ends a block
            above = ""
        below = lines[i + 1] if i + 1 < len(lines) and _header(lines[i + 1]) else ""
        yield line, f"{above if line[:1].isspace() else ''} {below}"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_interval_is_printed_with_the_one_default_level(name, tmp_path, capsys):
    out = tmp_path / "out.nc"
    assert main([*COMMANDS[name], "-o", str(out)]) == 0
    text = capsys.readouterr().out
    levels = set(re.findall(r"(\d+(?:\.\d+)?) ?%(?= Student-t| CI| t-interval|\))", text))
    assert levels == {LEVEL[:-1]}, (levels, text)
    with_interval = [(line, header) for line, header in _blocks(text)
                     if re.search(r"\d ± \d|±\s*\(", line) or re.search(r"\d\s+\d\.?\d*e?-?\d*\s+simulation", line)]
    assert with_interval, text
    for line, header in with_interval:
        stated = LEVEL in line or LEVEL in header
        assert stated, f"{name}: an interval without its level: {line!r} (block header {header!r})"
