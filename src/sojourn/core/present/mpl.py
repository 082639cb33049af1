"""matplotlib on first use: ``from ...core.present.mpl import matplotlib, plt, mticker`` in a figure module.

Every Snakemake start imports each study's figure declarations (the rules name their outputs), and matplotlib with
pyplot costs about a second and a half of CPU to import; a dry run, a run of the data jobs only, or a job other than a
figure's draws nothing. The names below are stand-ins for the modules: the first attribute taken from any of them
imports matplotlib, selects the Agg backend (no display; the same in a job thread and a test), imports pyplot and the
module, and from then on each passes its attributes straight through (``plt.subplots``, ``matplotlib.colors``,
``mticker.FixedLocator``). A check that a dry run leaves matplotlib unimported: tests/workflow/test_cli_imports.py."""
from __future__ import annotations

import importlib
import threading

_LOADING = threading.Lock()


def _load(name: str):
    with _LOADING:  # two job threads taking their first attribute at once import once, Agg selected before pyplot
        import matplotlib

        matplotlib.use("Agg")
        importlib.import_module("matplotlib.pyplot")
        return importlib.import_module(name)


class _OnFirstUse:
    """A module imported when its first attribute is taken (see the module's docstring)."""

    __slots__ = ("_name", "_module")

    def __init__(self, name: str):
        self._name, self._module = name, None

    def __getattr__(self, attr: str):
        if self._module is None:
            self._module = _load(self._name)
        return getattr(self._module, attr)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "imported on first use"
        return f"<module {self._name!r}, {state}>"


matplotlib = _OnFirstUse("matplotlib")
plt = _OnFirstUse("matplotlib.pyplot")
mticker = _OnFirstUse("matplotlib.ticker")
