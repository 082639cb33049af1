"""Code fingerprints: the rerun trigger of a rule for the package code it runs.

Snakemake does not see code imported from a package, so every rule passes a fingerprint of its code
as a ``params:`` value (and the cell caches put it in their content keys). The fingerprint of an entry
module is computed, not listed by hand:

* its closure: the ``sojourn`` modules it imports, at module level or inside functions, transitively
  (``import sojourn.x``, ``from ..x import y`` where ``y`` may itself be a module). A package's
  ``__init__`` counts only where a name is taken from it (``from .analytic import f``), not where only
  submodules are (``from . import kernel``) nor merely because one of its submodules is imported:
  package ``__init__`` files here only re-export;
* the source of each module in the closure with comments, docstrings and formatting removed: the
  hash is taken over ``ast.dump`` of the parse tree without docstrings, so editing a comment or a
  docstring, or re-wrapping lines, changes nothing.
"""
from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

#: the top-level package whose modules are fingerprinted
PACKAGE = "sojourn"
ROOT = Path(__file__).resolve().parents[1]  # .../sojourn


def module_path(name: str, root: Path = ROOT) -> Path | None:
    """The file of module ``name`` (``sojourn.a.b`` → ``<root>/a/b.py`` or ``<root>/a/b/__init__.py``)."""
    parts = name.split(".")
    if parts[0] != PACKAGE:
        return None
    base = root.joinpath(*parts[1:])
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def _imports(name: str, path: Path, root: Path) -> set[str]:
    """The ``sojourn`` modules imported anywhere in module ``name`` (file ``path``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if _is_package(path) else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE and module_path(alias.name, root):
                    found.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                if node.level > 1:
                    parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] != PACKAGE:
                continue
            subs = [f"{base}.{a.name}" for a in node.names if module_path(f"{base}.{a.name}", root)]
            found.update(subs)  # `from . import kernel`: the submodule
            if len(subs) < len(node.names) and module_path(base, root):
                found.add(base)  # a name defined by the module or package itself
    # a module's own package __init__ is not an import of it
    found.discard(name)
    return found


def closure(*entries: str, root: Path = ROOT) -> list[str]:
    """Sorted names of the ``sojourn`` modules the entry modules import, transitively (entries included)."""
    seen: set[str] = set()
    todo = list(entries)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_path(name, root)
        if path is None:
            raise ValueError(f"no module {name!r} under {root}")
        seen.add(name)
        todo.extend(_imports(name, path, root) - seen)
    return sorted(seen)


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


@functools.lru_cache(maxsize=None)
def _source_hash(path: Path, mtime_ns: int, size: int) -> str:
    tree = _strip_docstrings(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def source_hash(path: Path) -> str:
    """sha256 of a module's parse tree without docstrings (comments and layout never reach the tree)."""
    st = path.stat()
    return _source_hash(path, st.st_mtime_ns, st.st_size)


def fingerprint(*entries: str, root: Path = ROOT) -> str:
    """16 hex digits over (name, code) of every module in the closure of ``entries``."""
    h = hashlib.sha256()
    for name in closure(*entries, root=root):
        h.update(name.encode())
        h.update(source_hash(module_path(name, root)).encode())
    return h.hexdigest()[:16]


def data_fingerprint(folder, pattern: str = "*") -> str:
    """16 hex digits over (name, bytes) of the files matching ``pattern`` in ``folder`` (package data a rule
    reads: a rerun trigger that does not depend on where the package is installed)."""
    h = hashlib.sha256()
    for f in sorted(Path(folder).glob(pattern)):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]
