"""The README and the pages under docs/: every relative link and every #anchor resolves (GitHub's heading slugs),
the README opens with its two set-up commands, each with its time on 2 cores, and stays short (issue 25 item 3)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^\s*(```|~~~)")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_HTML_ID = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.I)


def prose_lines(text: str):
    """(line number, line) of the text outside fenced code blocks."""
    fenced = False
    for i, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield i, line


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: its rendered text lower-cased, every character that is not a letter, digit,
    underscore, hyphen or space dropped, spaces turned into hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)      # a link renders as its text
    text = re.sub(r"<[^>]+>", "", text)                           # inline HTML
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor a page defines: its headings' slugs (a repeated slug gets -1, -2, … as on GitHub) and HTML ids."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        out.update(_HTML_ID.findall(line))
        m = _HEADING.match(line)
        if not m:
            continue
        s = slug(m.group(2))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def links(path: Path):
    """(line number, target) of every inline link and image outside code blocks and code spans."""
    for i, line in prose_lines(path.read_text(encoding="utf-8")):
        for m in _LINK.finditer(_CODE_SPAN.sub("", line)):
            yield i, m.group(1)


def broken_links(path: Path) -> list[str]:
    """One line per relative link of ``path`` whose file or #anchor does not exist."""
    problems = []
    for line, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):         # http:, https:, mailto: — not checked here
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line}: {target}"
        if not dest.exists():
            problems.append(f"{where}: no such file {file_part}")
        elif anchor:
            if dest.suffix != ".md":
                problems.append(f"{where}: an anchor into a file that is not Markdown")
            elif anchor not in anchors(dest):
                problems.append(f"{where}: no heading with the anchor #{anchor} in {dest.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(page):
    assert not broken_links(page), "\n".join(broken_links(page))


def test_every_docs_page_is_linked_from_the_readme():
    readme = {t.partition("#")[0] for _, t in links(ROOT / "README.md")}
    unlinked = [p.name for p in PAGES[1:] if f"docs/{p.name}" not in readme]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"


def test_docs_pages_open_with_purpose_and_contents():
    for page in PAGES[1:]:
        lines = page.read_text(encoding="utf-8").splitlines()
        assert lines[0].startswith("# "), page.name
        assert lines[1] == "" and lines[2].strip(), f"{page.name}: a one-line purpose under the title"


def test_readme_opens_with_the_two_setup_commands():
    """The README's first code block is the set-up: the default pipeline, then the tests (the command .ci/run runs),
    each with its time on 2 cores; the README stays short (≤ 20 KB)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert text.startswith("# sojourn\n\n```bash\n"), "the README's first lines are its set-up block"
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    commands = [ln for ln in block.group(1).splitlines() if ln.strip()]
    assert len(commands) == 2
    run, comment = [c.split("#", 1) for c in commands][0]
    assert run.split("&&")[-1].strip() == "snakemake --cores 2" and "on 2 cores" in comment
    run, comment = [c.split("#", 1) for c in commands][1]
    assert run.split("&&")[-1].strip() == "python -m pytest -q" and "on 2 cores" in comment
    # each line sets everything up on a fresh machine: a venv, activated, the package installed (issue 31 item 6)
    for command in commands:
        steps = [step.strip() for step in command.split("#", 1)[0].split("&&")]
        assert steps[:3] == ["python3 -m venv .venv", ". .venv/bin/activate", 'pip install -e ".[test]"'], steps
    floor = re.search(r'requires-python = ">=(\d+\.\d+)"', (ROOT / "pyproject.toml").read_text()).group(1)
    first_screen = text[:3000]
    assert f"Python ≥ {floor}" in first_screen, "the first screen names the Python the package requires"
    assert "seed 00" not in first_screen, "the studies in plain words: the seed labels belong to the study pages"
    assert "Then open the results:" in first_screen and "report.html" in first_screen, \
        "the first screen says what to open after the run"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "python -m pytest -q" in [ln.strip() for ln in ci], ".ci/run no longer runs the README's test command"
    assert len(text.encode("utf-8")) <= 20_000


# power controls: the checker finds what it is meant to find

def test_slug_matches_github():
    assert slug("The approximations and when to trust them") == "the-approximations-and-when-to-trust-them"
    assert slug("Planning capacity: `sojourn plan`") == "planning-capacity-sojourn-plan"
    assert slug("Interrupted runs, locks and damaged files: what to type") == \
        "interrupted-runs-locks-and-damaged-files-what-to-type"
    assert slug("The pipeline (Snakemake × Dask × xarray)") == "the-pipeline-snakemake--dask--xarray"
    assert slug("Simulated rows and `--confirm`") == "simulated-rows-and---confirm"
    assert slug("The paper's full grid") == "the-papers-full-grid"
    assert slug("Route 1: Snakemake's SLURM executor") == "route-1-snakemakes-slurm-executor"


def test_checker_reports_missing_files_and_anchors(tmp_path):
    (tmp_path / "other.md").write_text("# Other\n\n## A section\n\n## A section\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n## Here\n\n"
        "[ok](other.md#a-section) [ok](other.md#a-section-1) [ok](#here) [ok](https://example.org/x#y)\n"
        "`[in a span](missing.md)`\n```\n[in a block](missing.md)\n```\n"
        "[bad](missing.md) [bad](other.md#nowhere) [bad](#gone) [bad](other.md#a-section-2)\n",
        encoding="utf-8")
    problems = broken_links(page)
    assert len(problems) == 4, problems
    assert any("no such file missing.md" in p for p in problems)
    assert sum("no heading with the anchor" in p for p in problems) == 3
