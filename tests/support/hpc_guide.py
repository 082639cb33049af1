"""The commands of docs/hpc.md, as the tests take them (issue 35 item 6: the guide tested as it reads).

A command block is a fenced ``bash`` block of the guide; its commands are its lines (``\\``-continued lines joined,
``# comments`` dropped). Each block is either run by a test, which takes its command from the guide with
:func:`guide_command` — so a test runs what the guide shows, and fails when the guide no longer shows it — or is
marked in the guide as not runnable on the single-node test cluster: the paragraph just before the block starts
with :data:`MARKER` and says why (a multi-node site, a whole paper run) and what would differ there.
``tests/workflow/test_slurm_profile.py`` checks that every block is one or the other.
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


def commands() -> list[str]:
    return [c for b in blocks() for c in b.commands]


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
