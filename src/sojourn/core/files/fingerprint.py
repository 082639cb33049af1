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

An entry may also name one function of a module, ``module:function`` (a study's ``jobs`` module holds every
rule's entry point, each its own rerun trigger): then only that function counts, with the module-level
definitions it uses by name (transitively) and the modules those import, at module level or inside them —
so editing the figures job of ``sojourn.<study>.jobs`` does not rerun its simulations.

Modules in :data:`WHERE_NOT_WHAT` decide where and when tasks run, never what they compute (results are
bit-identical on any cluster and number of workers, a tested property): they are left out of every closure, so
that a change to how clusters start, are sized or watched (the runner's watchdog calls into them) reruns nothing.
"""
from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

#: the top-level package whose modules are fingerprinted
PACKAGE = "sojourn"
ROOT = Path(__file__).resolve().parents[2]  # .../sojourn (this file: sojourn/core/files/)


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


def _imports(name: str, path: Path, root: Path, nodes=None) -> set[str]:
    """The ``sojourn`` modules imported anywhere in module ``name`` (file ``path``), or only inside ``nodes``
    (AST nodes of that module)."""
    found: set[str] = set()
    for _node, base, alias in _import_targets(name, path, root, nodes):
        found.add(base if alias is None else alias)
    found.discard(name)  # a module's own package __init__ is not an import of it
    return found


def _import_targets(name: str, path: Path, root: Path, nodes=None):
    """(import node, module, bound submodule or None) for every ``sojourn`` import in ``nodes`` (default: the
    whole module): ``(node, "sojourn.a", None)`` where names are taken from module ``sojourn.a`` itself,
    ``(node, "sojourn.a", "sojourn.a.b")`` where ``b`` is a submodule."""
    if nodes is None:
        statements = _module_imports(path.read_text(encoding="utf-8"), str(path))
    else:
        statements = (n for top in nodes for n in ast.walk(top) if isinstance(n, (ast.Import, ast.ImportFrom)))
    for node in statements:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE and module_path(alias.name, root):
                    yield node, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(name, path, node)
            if base.split(".")[0] != PACKAGE:
                continue
            for a in node.names:
                if module_path(f"{base}.{a.name}", root):
                    yield node, base, f"{base}.{a.name}"  # `from . import kernel`: the submodule
                elif module_path(base, root):
                    yield node, base, None  # a name defined by the module or package itself


# Each Snakemake start fingerprints every rule (a params: value), and the rules' closures share most modules: a
# module's import statements and its source hash are kept per file text, so that one process parses each module
# once for each (it parsed and walked each one per rule and per use). Keyed on the text, not the mtime: an edit within
# the file system's timestamp granularity is still seen. Where the imported names lead (module_path: which files
# exist) is looked up on every call. The parse trees themselves are not kept: a hundred modules' trees alive make
# every garbage collection walk them.
@functools.lru_cache(maxsize=1024)
def _module_imports(text: str, filename: str) -> tuple:
    """The import statements of a module's source (ast nodes without their tree)."""
    return tuple(n for n in ast.walk(ast.parse(text, filename=filename)) if isinstance(n, (ast.Import, ast.ImportFrom)))


def _reached(name: str, path: Path, root: Path, imp, bound: str) -> set[str]:
    """The ``sojourn`` modules that the name ``bound``, bound by the import statement ``imp``, refers to."""
    out = set()
    for a in imp.names:
        local = (a.asname or a.name).split(".")[0] if isinstance(imp, ast.Import) else (a.asname or a.name)
        if local != bound:
            continue
        if isinstance(imp, ast.Import):
            if a.name.split(".")[0] == PACKAGE and module_path(a.name, root):
                out.add(a.name)
            continue
        base = _from_base(name, path, imp)
        if base.split(".")[0] != PACKAGE:
            continue
        if module_path(f"{base}.{a.name}", root):
            out.add(f"{base}.{a.name}")
        elif module_path(base, root):
            out.add(base)
    return out


def _from_base(name: str, path: Path, node) -> str:
    """The absolute module a ``from … import`` statement of module ``name`` takes names from."""
    if not node.level:
        return node.module or ""
    parts = (name if _is_package(path) else name.rpartition(".")[0]).split(".")
    if node.level > 1:
        parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _bound_names(node) -> list[str]:
    """The names an import statement binds in its scope."""
    return [(a.asname or a.name).split(".")[0] for a in node.names]


def function_parts(entry: str, root: Path = ROOT) -> tuple[list, set[str]]:
    """(AST nodes, imported modules) of ``module:function``: the function, the module-level definitions it uses
    by name (transitively), and the ``sojourn`` modules imported inside them or bound at module level to a
    name they use."""
    name, _, func = entry.partition(":")
    path = module_path(name, root)
    if path is None:
        raise ValueError(f"no module {name!r} under {root}")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    defs: dict[str, ast.AST] = {}
    top_imports: dict[str, list] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                if isinstance(t, ast.Name):
                    defs[t.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for bound in _bound_names(node):
                top_imports.setdefault(bound, []).append(node)
    if func not in defs:
        raise ValueError(f"module {name} has no top-level definition {func!r}")
    used: dict[str, ast.AST] = {}
    imports: list = []
    todo = [func]
    while todo:
        n = todo.pop()
        if n in used:
            continue
        used[n] = defs[n]
        for sub in ast.walk(defs[n]):
            if isinstance(sub, ast.Name):
                if sub.id in defs and sub.id not in used:
                    todo.append(sub.id)
                for imp in top_imports.get(sub.id, ()):
                    imports.append((sub.id, imp))
    mods = _imports(name, path, root, [used[n] for n in used])
    for bound, imp in imports:
        mods.update(_reached(name, path, root, imp, bound))
    mods.discard(name)
    return [used[n] for n in sorted(used)], mods


#: modules that place and watch the work without touching its results (see the module doc)
WHERE_NOT_WHAT = frozenset({"sojourn.core.cluster.cluster"})


def closure(*entries: str, root: Path = ROOT) -> list[str]:
    """Sorted names of the ``sojourn`` modules the entry modules import, transitively (entries included; a
    ``module:function`` entry contributes what :func:`function_parts` finds, not its whole module)."""
    seen: set[str] = set()
    todo = []
    for e in entries:
        if ":" in e:
            todo.extend(function_parts(e, root)[1])
        else:
            todo.append(e)
    while todo:
        name = todo.pop()
        if name in seen or name in WHERE_NOT_WHAT:
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


def _copy(node):
    import copy

    return copy.deepcopy(node)


@functools.lru_cache(maxsize=1024)
def _source_hash(text: str, filename: str) -> str:
    tree = _strip_docstrings(ast.parse(text, filename=filename))
    return hashlib.sha256(ast.dump(tree, include_attributes=False).encode()).hexdigest()


def source_hash(path: Path) -> str:
    """sha256 of a module's parse tree without docstrings (comments and layout never reach the tree)."""
    return _source_hash(path.read_text(encoding="utf-8"), str(path))


def fingerprint(*entries: str, root: Path = ROOT) -> str:
    """16 hex digits over (name, code) of every module in the closure of ``entries`` (and, for a
    ``module:function`` entry, of the function and the definitions it uses instead of its whole module)."""
    h = hashlib.sha256()
    for e in entries:
        if ":" in e:
            h.update(e.encode())
            for node in function_parts(e, root)[0]:
                h.update(ast.dump(_strip_docstrings(_copy(node)), include_attributes=False).encode())
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
