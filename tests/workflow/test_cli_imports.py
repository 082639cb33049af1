"""`sojourn --help` and every sub-command's `--help` build their parser without importing numpy, scipy, xarray,
dask or any other heavy library (issue 25: each answers in well under 0.5 s; the time is measured in
benchmarks/cli_help.py, never here). Structural: each help runs in a fresh interpreter, which then lists what it
imported. Also: no rendered help shows a literal '%%', and every level a help states is the project's one default
(sojourn.core.checks.config.DEFAULT_CONFIDENCE)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest

#: what parsing arguments must not import (each costs 0.1–1 s at start-up)
HEAVY = ("numpy", "scipy", "xarray", "dask", "distributed", "pandas", "numba", "matplotlib", "netCDF4", "ciw",
         "snakemake", "jsonschema", "yaml", "tqdm", "sojourn.core.estimates.precision", "sojourn.core.estimates.stats")

#: a fresh interpreter: the command paths of the full parser, and what building it imported
WALK = textwrap.dedent("""
    import json, sys
    from sojourn.cli import command_paths

    paths = command_paths()
    print(json.dumps({"paths": paths, "heavy": [m for m in HEAVY if m in sys.modules]}))
""")

#: a fresh interpreter: ``sojourn <path> --help`` as the entry point runs it, then what it imported
HELP = textwrap.dedent("""
    import contextlib, io, json, sys
    from sojourn.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(PATH + ["--help"])
    print(json.dumps({"status": status, "help": out.getvalue(), "heavy": [m for m in HEAVY if m in sys.modules]}))
""")


def _run(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{code}"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def helps() -> dict:
    """{"sojourn <path>": (status, rendered help, heavy modules imported)} for every command path."""
    walk = _run(WALK)
    assert walk["heavy"] == [], f"building the full parser imported {walk['heavy']}"
    out = {}
    for path in walk["paths"]:
        r = _run(f"PATH = {path!r}\n{HELP}")
        out[" ".join(["sojourn", *path])] = (r["status"], r["help"], r["heavy"])
    return out


def test_every_command_is_walked(helps):
    """The walk reaches the nested groups' commands (a command added later is checked without editing this)."""
    for cmd in ("sojourn", "sojourn simulate", "sojourn approximate", "sojourn plan", "sojourn split-merge best",
                "sojourn split-merge simulate", "sojourn split-merge exact", "sojourn restart optimise",
                "sojourn restart simulate", "sojourn restart solve", "sojourn restart schema"):
        assert cmd in helps


def test_no_help_imports_a_heavy_library(helps):
    bad = {cmd: heavy for cmd, (_, _, heavy) in helps.items() if heavy}
    assert not bad, f"--help imported heavy modules: {bad}"


def test_every_help_renders_and_shows_no_literal_percent_escape(helps):
    for cmd, (status, text, _) in helps.items():
        assert status == 0 and text.startswith("usage: sojourn"), (cmd, status, text[:200])
        assert "%%" not in text, f"{cmd} --help shows a literal '%%'"


def test_every_confidence_level_in_the_help_is_the_one_default(helps):
    from sojourn.core.checks.config import DEFAULT_CONFIDENCE

    level = f"{100 * DEFAULT_CONFIDENCE:g}"
    said = {}
    for cmd, (_, text, _) in helps.items():
        flat = " ".join(text.split())
        for m in re.finditer(r"(\d+(?:\.\d+)?) ?% (?:confidence|CI|t-interval|Student-t)", flat):
            said.setdefault(m.group(1), set()).add(cmd)
        for m in re.finditer(r"level .{0,80}?\(default (0\.\d+)\)", flat):
            said.setdefault(f"{100 * float(m.group(1)):g}", set()).add(cmd)
    assert set(said) == {level}, said
    # the commands that print intervals say their level in --help
    for cmd in ("sojourn simulate", "sojourn split-merge simulate", "sojourn restart simulate"):
        assert cmd in said[level], cmd


#: a fresh interpreter: what a Snakemake start imports of the package (MODULES), then matplotlib through
#: sojourn.core.present.mpl's stand-ins
FIRST_USE = textwrap.dedent("""
    import importlib, json, sys
    for name in MODULES:
        importlib.import_module(name)
    before = sorted(m for m in sys.modules if m.split(".")[0] == "matplotlib")
    from sojourn.core.present.mpl import matplotlib, mticker, plt
    fig, ax = plt.subplots()
    import matplotlib.pyplot as real_plt
    import matplotlib.ticker as real_ticker
    print(json.dumps({"before": before, "backend": real_plt.get_backend(),
                      "same": [plt.subplots is real_plt.subplots, mticker.FixedLocator is real_ticker.FixedLocator,
                               matplotlib.colors is sys.modules["matplotlib"].colors]}))
""")


def test_a_snakemake_start_imports_no_matplotlib_until_a_figure_is_drawn():
    """The Snakefile and its rule files import each study's figure declarations; matplotlib (~1.5 s of CPU) waits
    for the first figure (sojourn.core.present.mpl), so a dry run or a data job does not pay for it. Then the
    stand-ins are the real modules, with the Agg backend."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    modules = set()
    for path in [root / "Snakefile", *sorted((root / "workflow" / "rules").glob("*.smk"))]:
        modules |= set(re.findall(r"^(?:from|import) (sojourn[\w.]*)", path.read_text(), re.MULTILINE))
    assert {"sojourn.jsq_ps.plots", "sojourn.split_merge.plots", "sojourn.restart.plots"} <= modules, modules
    proc = subprocess.run([sys.executable, "-c", f"MODULES = {sorted(modules)!r}\n{FIRST_USE}"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["before"] == [], f"importing the Snakefile's modules imported {got['before'][:5]}…"
    assert got["backend"].lower() == "agg" and all(got["same"]), got
