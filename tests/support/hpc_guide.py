"""The commands of docs/hpc.md, as the tests take them (issue 35 item 6: the guide tested as it reads).

The guide shows commands in two ways, and both are taken the same way:

* a **command block**: a fenced ``bash`` block; its commands are its lines (``\\``-continued lines joined,
  ``# comments`` dropped);
* an **inline command**: a code span in the prose (outside fenced blocks) that starts with the name of a command an
  operator types (:data:`COMMANDS`; after ``NAME=value`` assignments, as in ``SOJOURN_ACTIVATE='…' sbatch …``) and
  has at least one argument. A bare name (``sacct``) names a tool; ``dask worker`` is what the worker jobs run,
  not something the guide has the operator type, so ``dask`` is not in the list.

Each command is either run by a test, which takes it from the guide with :func:`guide_command` — so a test runs what
the guide shows, and fails when the guide no longer shows it — or is marked in the guide as not runnable on the
single-node test cluster: the paragraph that introduces it starts with :data:`MARKER` and says why (a multi-node
site, modules, a whole paper run) and what would differ there. For a block that is the paragraph just before it, for
an inline command the paragraph (or list item) it stands in. ``tests/workflow/test_slurm_profile.py`` checks that
every command is one or the other.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "hpc.md"
MARKER = "*Not run by the tests*"
#: how a test names a guide command (found in the tests' sources by :func:`claimed`)
CALL = re.compile(r"""guide_command\(\s*(["'])(.+?)\1""", re.DOTALL)
#: what an inline code span must start with to be a command (after any NAME=value assignments)
COMMANDS = ("snakemake", "sbatch", "scancel", "squeue", "sacct", "scontrol", "sinfo", "srun", "salloc", "python",
            "pip", "conda", "module", "source", "ssh", "tmux", "screen", "cp", "cd", "sojourn")
FENCE = re.compile(r"^\s*```")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class Block:
    line: int           # of the opening fence, 1-based
    commands: list[str]
    marked: bool        # the paragraph before it starts with MARKER


def _join(lines: list[str]) -> list[str]:
    out, pending = [], ""
    for raw in lines:
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        pending += text
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip() + " "
            continue
        out.append(re.sub(r"\s+#\s.*$", "", pending).strip())
        pending = ""
    return out


def blocks(text: str | None = None) -> list[Block]:
    lines = (GUIDE.read_text() if text is None else text).splitlines()
    out, i = [], 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and not re.match(r"^\s*```\s*$", lines[end]):
            end += 1
        if m.group(2) in ("bash", "sh", "console", "shell"):
            para, k = [], i - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            while k >= 0 and lines[k].strip() and not lines[k].lstrip().startswith("```"):
                para.insert(0, lines[k].strip())
                k -= 1
            paragraph = " ".join(para)
            out.append(Block(i + 1, _join(lines[i + 1:end]), paragraph.startswith(MARKER)))
        i = end + 1
    return out


@dataclass
class Inline:
    line: int           # where the span starts, 1-based
    command: str
    marked: bool        # the paragraph it stands in starts with MARKER


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an unbalanced quote: not a command line
        return text.split()


def is_command(text: str) -> bool:
    """An inline code span that is a command: :data:`COMMANDS`' name (after NAME=value assignments) and an argument."""
    words = _words(text)
    while words and ASSIGNMENT.match(words[0]):
        words = words[1:]
    return len(words) >= 2 and words[0] in COMMANDS


def _paragraphs(lines: list[str]) -> list[tuple[int, list[str]]]:
    """The prose paragraphs outside fenced blocks: (first line's index, lines); a list item, heading or table row
    group starts one, a blank line or a fence ends one."""
    out, current, fenced = [], None, False
    for i, raw in enumerate(lines):
        if FENCE.match(raw):
            fenced, current = not fenced, None
            continue
        if fenced or not raw.strip():
            current = None
            continue
        starts = re.match(r"^\s*([*+-]|\d+\.)\s", raw) or raw.lstrip().startswith("#")
        if current is None or starts:
            current = (i, [])
            out.append(current)
        current[1].append(raw.strip())
    return out


def inline(text: str | None = None) -> list[Inline]:
    """The inline commands of the guide (see the module's docstring)."""
    lines = (GUIDE.read_text() if text is None else text).splitlines()
    out = []
    for first, para in _paragraphs(lines):
        joined = "\n".join(para)
        marked = re.sub(r"^([*+-]|\d+\.)\s+", "", joined).startswith(MARKER)  # a list item's text after its bullet
        for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", joined):
            span = " ".join(m.group(1).split())
            if is_command(span):
                out.append(Inline(first + 1 + joined.count("\n", 0, m.start()), span, marked))
    return out


def commands() -> list[str]:
    """Every command the guide shows: the lines of its command blocks, then its inline commands."""
    return [c for b in blocks() for c in b.commands] + [c.command for c in inline()]


def unmarked(text: str | None = None) -> list[tuple[int, str]]:
    """(line, command) of every command not marked :data:`MARKER`: each must be run by a test."""
    return ([(b.line, c) for b in blocks(text) if not b.marked for c in b.commands]
            + [(c.line, c.command) for c in inline(text) if not c.marked])


def guide_command(text: str, replace: dict[str, str] | None = None) -> list[str]:
    """The guide's command that is ``text`` (whitespace aside), as an argument list, each argument that is a key of
    ``replace`` replaced by its value (what the test cluster needs instead: a config, a path). Fails when the guide
    no longer shows that command."""
    want = " ".join(text.split())
    shown = [c for c in commands() if " ".join(c.split()) == want]
    assert shown, f"docs/hpc.md no longer shows the command `{want}`: update the test with the guide"
    args = shlex.split(shown[0])
    return [(replace or {}).get(a, a) for a in args]


def claimed(tests: Path = REPO / "tests") -> set[str]:
    """The guide commands the tests take (every ``guide_command("…")`` in their sources), whitespace normalised."""
    out = set()
    for path in tests.rglob("*.py"):
        for m in CALL.finditer(path.read_text()):
            out.add(" ".join(m.group(2).split()))
    return out
