"""The shape of the house: a core every study uses, one package per study, no import cycles, no study
importing another, thin rules with a log and a benchmark each, and code fingerprints that see exactly
the code a rule runs."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from sojourn.core import fingerprint as fp
from sojourn.studies import STUDIES, names

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "src" / "sojourn"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = sorted(_module_name(p) for p in PKG.rglob("*.py"))
GRAPH = {m: fp._imports(m, fp.module_path(m), fp.ROOT) for m in MODULES}


def test_every_module_is_seen():
    assert "sojourn.core.io" in MODULES and "sojourn.jsq_ps.kernel" in MODULES
    # the kernel is called through sojourn.jsq_ps.raw (no xarray): a direct edge there, transitive from simulate
    assert GRAPH["sojourn.jsq_ps.raw"] >= {"sojourn.jsq_ps.kernel", "sojourn.core.seeds"}
    assert "sojourn.jsq_ps.raw" in GRAPH["sojourn.jsq_ps.simulate"]
    assert {"sojourn.jsq_ps.kernel", "sojourn.core.seeds"} <= set(fp.closure("sojourn.jsq_ps.simulate"))


def _cycle(graph):
    """A cycle of the directed graph (imports at module level and inside functions alike), or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return stack[stack.index(n):] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_cycles():
    assert _cycle(GRAPH) is None, " -> ".join(_cycle(GRAPH))


def test_the_cycle_finder_finds_cycles():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _owner(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_core_imports_no_study_and_no_study_imports_another():
    studies = set(names())
    for m, deps in GRAPH.items():
        owner = _owner(m)
        for d in deps:
            target = _owner(d)
            if owner == "core":
                assert target == "core", f"core module {m} imports {d}"
            elif owner in studies:
                assert target in ("core", owner), f"study module {m} imports {d} (another study or the top level)"


def test_every_registered_study_has_a_package_rules_and_a_schema():
    for s in STUDIES:
        assert (PKG / s.name / "__init__.py").is_file(), s.name
        assert (ROOT / "workflow" / "rules" / f"{s.name}.smk").is_file(), s.name
        assert (ROOT / "workflow" / "schemas" / f"{s.name}.schema.yaml").is_file(), s.name


def _rules(text: str):
    """(name, {directive: body lines}) of every rule in a .smk file."""
    out = []
    for m in re.finditer(r"^rule (\w+):\n((?:[ \t]+.*\n|\n)*)", text, flags=re.M):
        body = m.group(2).split("\n")
        directives, cur = {}, None
        for line in body:
            d = re.match(r"^    (\w+):", line)
            if d:
                cur = d.group(1)
                directives[cur] = []
            elif cur and line.strip():
                directives[cur].append(line)
        out.append((m.group(1), directives))
    return out


SMK = sorted((ROOT / "workflow" / "rules").glob("*.smk"))


@pytest.mark.parametrize("path", SMK, ids=[p.name for p in SMK])
def test_rules_are_thin_and_logged(path):
    for name, directives in _rules(path.read_text()):
        for key in ("run", "script"):
            if key in directives:
                assert len(directives[key]) <= 10, f"{path.name}: rule {name}'s {key}: body has " \
                                                   f"{len(directives[key])} lines"
        assert "log" in directives, f"{path.name}: rule {name} has no log:"
        assert "benchmark" in directives, f"{path.name}: rule {name} has no benchmark:"


def test_rule_parser_sees_rules():
    rules = dict(_rules((ROOT / "workflow" / "rules" / "jsq_ps.smk").read_text()))
    assert {"jsq_ps_simulate", "jsq_ps_compare", "jsq_ps_figures"} <= set(rules)
    assert len(rules["jsq_ps_simulate"]["run"]) >= 3


# -- code fingerprints ------------------------------------------------------------------------------
def _package(tmp_path, files: dict) -> Path:
    root = tmp_path / "sojourn"
    for rel, text in files.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    return root


def test_fingerprint_follows_imports_at_module_and_function_level(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/a.py": "X = 1\n",
        "core/b.py": "Y = 2\n",
        "study/__init__.py": "from . import unused\n",
        "study/unused.py": "Z = 3\n",
        "study/entry.py": "from ..core.a import X\n\ndef f():\n    from sojourn.core import b\n    return b.Y\n",
    })
    assert fp.closure("sojourn.study.entry", root=root) == ["sojourn.core.a", "sojourn.core.b", "sojourn.study.entry"]


def test_fingerprint_ignores_comments_docstrings_and_layout_but_not_code(tmp_path):
    root = _package(tmp_path, {"__init__.py": "", "m.py": '"""Doc."""\nX = 1\n\ndef f(a):\n    """Doc."""\n    return a + X\n'})
    before = fp.fingerprint("sojourn.m", root=root)
    (root / "m.py").write_text('"""Other doc."""\n# a comment\nX = 1  # one\n\n\ndef f(a):\n    """More."""\n'
                               '    return (a +\n            X)\n')
    assert fp.fingerprint("sojourn.m", root=root) == before
    (root / "m.py").write_text('X = 2\n\ndef f(a):\n    return a + X\n')
    assert fp.fingerprint("sojourn.m", root=root) != before


def test_rule_fingerprints_separate_the_rules():
    """The comparison's code is not in the simulation's fingerprint and the kernel not in the comparison's."""
    sim = set(fp.closure("sojourn.jsq_ps.simulate_blocks"))
    approx = set(fp.closure("sojourn.jsq_ps.approximate_blocks"))
    cmp_ = set(fp.closure("sojourn.jsq_ps.compare"))
    figs = set(fp.closure("sojourn.jsq_ps.plots"))
    assert "sojourn.jsq_ps.kernel" in sim and "sojourn.jsq_ps.kernel" not in approx | cmp_ | figs
    assert "sojourn.jsq_ps.solve.methods" in approx and "sojourn.jsq_ps.solve.methods" not in sim
    assert "sojourn.jsq_ps.compare" not in sim | approx
    assert "sojourn.core.cluster" not in sim | approx  # where replications run never changes results
    assert "sojourn.core.io" in sim & approx & cmp_ & figs
