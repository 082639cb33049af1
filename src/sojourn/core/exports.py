"""Names a package exports on first use: ``import sojourn`` or ``import sojourn.<study>`` stays cheap (nothing heavy
is imported until a name is asked for), and importing one study never loads another."""
from __future__ import annotations

import importlib


def lazy(package: str, exports: dict):
    """A module ``__getattr__`` for ``package`` that imports ``exports[name]`` on first use: the value is a module
    path (relative to ``package`` if it starts with a dot) or ``"module:attribute"`` when the exported name differs
    from the module's."""

    def __getattr__(name):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = exports[name].partition(":")
        return getattr(importlib.import_module(module, package), attribute or name)

    return __getattr__
