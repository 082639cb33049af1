"""No function in ``src/`` longer than :data:`MAX_LINES` lines (issue 33): ruff's PLR0915 counts statements, so a
function that is one long literal (a dataset's variables, a schema) passes it at any length; this counts lines, from
the ``def`` to the function's last line, docstring included."""
from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 100

#: reserved: i33-protocol/i31-figs5/i34-done — remove at merge (files other helpers were rewriting while this gate
#: was added; the same files as pyproject's per-file-ignores)
RESERVED = {
    "sojourn/core/files/merge.py",
    "sojourn/jsq_ps/plots.py",
    "sojourn/restart/jobs.py",
    "sojourn/split_merge/plots.py",
}


def long_functions(root: Path = SRC, limit: int = MAX_LINES) -> list[str]:
    """``path:line name (n lines)`` of every function (methods and nested ones too) longer than ``limit`` lines."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit and rel not in RESERVED:
                    out.append(f"{rel}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_function_in_src_is_over_the_limit():
    assert long_functions() == []


def test_the_check_finds_a_long_function(tmp_path):
    """The check can fail: a 101-line function is found, a 100-line one is not."""
    body = "".join(f"    x{i} = {i}\n" for i in range(99))
    (tmp_path / "ok.py").write_text("def short():\n" + body)
    (tmp_path / "long.py").write_text("def long():\n" + body + "    return x0\n")
    assert long_functions(tmp_path) == ["long.py:1 long (101 lines)"]
