"""Every example block of README.md and docs/*.md — ``$ <command>`` and what it prints — against what the command
prints now (docs/examples.py; issue 31 item 4). The cheap blocks run in the default test run, the long ones
(``LONG`` in docs/examples.py) where SOJOURN_CI=1 (.ci/run), so that CI covers every block. A stale block fails with
the diff; ``python docs/examples.py`` rewrites it. The matching rules (abridged blocks, volatile fields) are tested
below on blocks made to fail."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("sojourn_doc_examples", ROOT / "docs" / "examples.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


ex = _load()
BLOCKS = ex.blocks()


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id, marks=[pytest.mark.ci_only] if b.long else [])
                                   for b in BLOCKS])
def test_example_block_shows_what_its_command_prints(block, tmp_path):
    result = ex.check(block, tmp_path)
    assert not result.stale, f"stale example (python docs/examples.py rewrites it):\n{result.diff()}"


def test_every_page_with_a_command_prompt_has_its_blocks_found():
    """A fenced block whose first line is a ``$`` prompt is an example; a page whose text shows a prompt line outside
    such a block (a block starting with prose, then ``$``) would escape the check."""
    found = {(b.page, b.first) for b in BLOCKS}
    for page in ex.pages():
        lines = page.read_text(encoding="utf-8").splitlines()
        fenced, start = False, None
        for i, line in enumerate(lines):
            if line.lstrip().startswith(("```", "~~~")):
                fenced, start = (not fenced), (i + 1 if not fenced else None)
                continue
            if fenced and line.startswith("$ "):
                assert (page, start) in found, f"{page.name}:{i + 1}: a prompt inside a block that is not checked"
    assert len(BLOCKS) >= 20 and {b.page.name for b in BLOCKS} >= {"README.md", "jsq_ps.md", "plan.md", "restart.md",
                                                                   "simulation.md", "split_merge.md", "pipeline.md"}


# ---- the matching rules, on blocks made to fail ------------------------------------------------------------------

REAL = ["model  M/M/3 (rho=0.8)", "mean   2.283 ± 0.024", "p99    14.22 ± 0.25", "p99.9  26.14 ± 0.62",
        "wall time    1.644 s (simulation 0.887 s)", "output run.nc"]


def test_a_whole_block_matches_only_the_whole_output():
    assert ex.matches(REAL, REAL)
    assert not ex.matches(REAL[:-1], REAL)                       # a line left out without '…'
    assert not ex.matches(REAL[1:], REAL)
    stale = [*REAL[:2], "p99    14.25 ± 0.25", *REAL[3:]]
    assert not ex.matches(stale, REAL)                            # one digit
    assert not ex.matches([], REAL) and ex.matches([], [])


def test_an_abridged_block_checks_every_line_it_shows():
    assert ex.matches(["…", "p99    14.22 ± 0.25", "…"], REAL)
    assert ex.matches([REAL[0], "…", REAL[2], REAL[3], "…"], REAL)
    assert ex.matches([REAL[0], "…", REAL[-1]], REAL)
    assert not ex.matches(["…", "p99    14.21 ± 0.25", "…"], REAL)  # a stale number cannot hide behind '…'
    assert not ex.matches([REAL[0], "…", REAL[3], REAL[2], "…"], REAL)  # shown lines out of order
    assert not ex.matches([REAL[0], "…", REAL[2], REAL[4], "…"], REAL)  # lines shown together are consecutive
    assert not ex.matches([REAL[1], "…"], REAL)                   # without a leading '…' the first line is the first
    assert not ex.matches(["…", REAL[-2]], REAL)                  # without a trailing '…' the last line is the last
    assert not ex.matches([REAL[0], "…", REAL[1], "…"], REAL)     # '…' stands for at least one line
    assert not ex.matches([*REAL, "…"], REAL)
    assert ex.matches(["  …", REAL[2], "   …"], REAL)             # its indentation is free


def test_an_ellipsis_inside_a_line_stands_for_text_of_that_line():
    assert ex.matches(["model  M/M/3 …", "…"], REAL)
    assert ex.matches(["model  … (rho=0.8)", "…"], REAL)
    assert not ex.matches(["model  M/M/4 …", "…"], REAL)
    assert not ex.matches(["model  … (rho=0.9)", "…"], REAL)


def test_volatile_fields_are_normalised_and_nothing_else():
    other_time = [*REAL[:4], "wall time    9.000 s (simulation 3.100 s)", REAL[5]]
    assert ex.matches(other_time, REAL)
    assert ex.normalise("M/M/4-JSQ-PS (…)  method=exact  L1=28  run_time=2.365s") == \
        "M/M/4-JSQ-PS (…)  method=exact  L1=28  run_time=…s"
    assert ex.normalise("recorded     90%: 179,615 jobs, 2,144,004 events, 0.92 s").endswith("2,144,004 events, … s")
    assert ex.normalise("mean   2.283 ± 0.024") == "mean   2.283 ± 0.024"
    line = "     99th    14.22 ± 0.25  (t; 3,452 customers beyond per replication)"
    assert ex.normalise(line) == line


def test_an_output_shown_as_a_lone_ellipsis_is_stale(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```console\n$ printf 'a\\nb\\n'\n…\n$ true\n```\n", encoding="utf-8")
    result = ex.check(ex.parse(page)[0], tmp_path / "scratch")
    assert result.stale and result.new == [["a", "b"], []]


def test_a_rewrite_keeps_the_abridgement_and_matches():
    shown = ["model  M/M/3 …", "…", "p99    14.00 ± 0.99", "…"]
    new = ex.rewrite(shown, REAL)
    assert new == ["model  M/M/3 …", "…", "p99    14.22 ± 0.25", "…"] and ex.matches(new, REAL)
    moved = ["…", "p99    14.22 ± 0.25", "p99.9  26.14 ± 0.62"]  # the end is no longer the end: a '…' is added
    assert ex.rewrite(moved, REAL) == ["…", *REAL[2:4], "…"]
    old_time = [*REAL[:4], "wall time    1.111 s (simulation 0.500 s)", "output old.nc"]
    assert ex.rewrite(old_time, REAL) == [*REAL[:4], old_time[4], REAL[5]]  # the block's own wall time kept


def test_a_stale_page_is_found_rewritten_and_then_matches(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Page\n\ntext\n\n```console\n$ printf 'a\\nb 1\\nc\\n'\n…\nb 2\n…\n$ ls Snakefile config \\\n"
                    "    workflow\nconfig\n```\n\n```bash\nsnakemake --cores 2   # not an example: no prompt\n```\n",
                    encoding="utf-8")
    (block,) = ex.parse(page)
    assert [c.text for c in block.commands] == ["printf 'a\\nb 1\\nc\\n'", "ls Snakefile config \\\n    workflow"]
    result = ex.check(block, tmp_path / "scratch")
    assert result.stale and "-b 2" in result.diff() and "+b 1" in result.diff()
    assert result.run.codes == [0, 0] and "Snakefile" in result.new[1]  # a scratch checkout of the workflow
    ex.write([result])
    (again,) = ex.parse(page)
    assert again.commands[0].expected == ["…", "b 1", "…"] and not ex.check(again, tmp_path / "scratch2").stale
    assert page.read_text(encoding="utf-8").endswith(
        "```bash\nsnakemake --cores 2   # not an example: no prompt\n```\n"
    )
