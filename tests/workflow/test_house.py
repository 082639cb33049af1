"""The shape of the house: a core every study uses, one package per study with the same roles under the same
module names, no import cycles, no study importing another, no study submitting to Dask itself (the core cell
runner does), thin rules that each call one job through the one job helper with a log and a benchmark, figures
declared once, and code fingerprints that see exactly the code a rule runs."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from sojourn.core.files import fingerprint as fp
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
    assert {"sojourn.core.files.io", "sojourn.jsq_ps.kernel", "sojourn.core.runs.runner"} <= set(MODULES)
    # the kernel is called through sojourn.jsq_ps.raw (no xarray): a direct edge there, transitive from simulate
    assert GRAPH["sojourn.jsq_ps.raw"] >= {"sojourn.jsq_ps.kernel", "sojourn.core.laws.seeds"}
    assert "sojourn.jsq_ps.raw" in GRAPH["sojourn.jsq_ps.simulate"]
    assert {"sojourn.jsq_ps.kernel", "sojourn.core.laws.seeds"} <= set(fp.closure("sojourn.jsq_ps.simulate"))


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


# -- the core's rooms: each a sub-package, on floors from the ground up ---------------------------------------------
#: the core's rooms, lowest first: a module imports only its own room and the rooms below it (docs/development.md)
ROOMS = ("files", "checks", "laws", "estimates", "cluster", "runs", "present")
#: core modules beside the rooms, leaves every floor may import: the version and the package's lazy exports
CORE_FLOOR = ("sojourn.core", "sojourn.core.version", "sojourn.core.exports")


def _room(module: str) -> str | None:
    """The room of a core module (``sojourn.core.<room>.<module>``), or None outside the rooms."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["sojourn", "core"] and parts[2] in ROOMS else None


def _climbs(graph) -> list[str]:
    """Every import (module level or inside a function) of a core module from a higher room, or from outside the
    rooms, as 'a (room) -> b (room)'."""
    out = []
    for m in sorted(graph):
        if not m.startswith("sojourn.core"):
            continue
        here = _room(m)
        for d in sorted(graph[m]):
            if not d.startswith("sojourn.core") or d in CORE_FLOOR[1:]:  # leaves below every room
                continue
            there = _room(d)
            if here is None or there is None or ROOMS.index(there) > ROOMS.index(here):
                out.append(f"{m} ({here}) -> {d} ({there})")
    return out


def test_every_core_module_lives_in_a_room():
    core = PKG / "core"
    assert sorted(p.name for p in core.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(ROOMS)
    loose = [m for m in MODULES if m.startswith("sojourn.core") and _room(m) is None and m not in CORE_FLOOR]
    assert not loose, f"core modules outside the rooms {ROOMS}: {loose}"


def test_no_core_import_climbs_to_a_higher_room():
    assert not _climbs(GRAPH), "imports that climb back up a floor:\n" + "\n".join(_climbs(GRAPH))


def test_the_climb_check_can_fail(tmp_path):
    """The files room (the ground) importing the runner inside a function, as io once reached for the cluster: a
    climb; the runner importing a file helper is the way down and passes."""
    root = _package(tmp_path, {
        "__init__.py": "",
        "core/__init__.py": "",
        "core/files/__init__.py": "",
        "core/files/io.py": "def wait():\n    from ..runs.runner import go\n    return go\n",
        "core/runs/__init__.py": "",
        "core/runs/runner.py": "from ..files import io\n\ndef go():\n    return io\n",
        "core/version.py": "V = 1\n",
    })
    names = ["sojourn.core.files.io", "sojourn.core.runs.runner", "sojourn.core.version"]
    graph = {m: fp._imports(m, fp.module_path(m, root), root) for m in names}
    assert _climbs(graph) == ["sojourn.core.files.io (files) -> sojourn.core.runs.runner (runs)"]
    assert _climbs({"sojourn.core.runs.runner": {"sojourn.core.files.io", "sojourn.core.version"}}) == []
    assert _climbs({"sojourn.core.version": {"sojourn.core.files.io"}}) == [
        "sojourn.core.version (None) -> sojourn.core.files.io (files)"]


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
    for m in re.finditer(r"^rule (\w+):\n((?:[ \t]+.*\n|\n)*)", text, flags=re.MULTILINE):
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
    """Every rule has a log and a benchmark, and its run: is one call of the job helper (common.smk's job(): the
    log opened, routed, timed and closed by sojourn.core.runs.job.run) naming a job of the study's jobs module."""
    for name, directives in _rules(path.read_text()):
        assert "log" in directives, f"{path.name}: rule {name} has no log:"
        assert "benchmark" in directives, f"{path.name}: rule {name} has no benchmark:"
        if path.stem == "common" or name == "all":
            continue
        body = " ".join(line.strip() for line in directives.get("run", []))
        m = re.fullmatch(r'job\(\s*"(\w+)\.(\w+)", log\b.*\)', body)  # (snakefmt may break after the bracket)
        assert m, f"{path.name}: rule {name}'s run: is not one job(...) call: {body[:120]}"
        assert m.group(1) == path.stem and m.group(2) in JOBS[path.stem], \
            f"{path.name}: rule {name} runs {m.group(0)[:60]}"
        assert f'code("{m.group(1)}.{m.group(2)}")' in "".join(directives.get("params", [])), \
            f"{path.name}: rule {name}'s code fingerprint is not its job's"


def test_rule_parser_sees_rules():
    rules = dict(_rules((ROOT / "workflow" / "rules" / "jsq_ps.smk").read_text()))
    assert {"jsq_ps_simulate", "jsq_ps_compare", "jsq_ps_figures"} <= set(rules)
    assert len(rules["jsq_ps_simulate"]["run"]) >= 1


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
    root = _package(tmp_path, {"__init__.py": "",
                               "m.py": '"""Doc."""\nX = 1\n\ndef f(a):\n    """Doc."""\n    return a + X\n'})
    before = fp.fingerprint("sojourn.m", root=root)
    (root / "m.py").write_text('"""Other doc."""\n# a comment\nX = 1  # one\n\n\ndef f(a):\n    """More."""\n'
                               '    return (a +\n            X)\n')
    assert fp.fingerprint("sojourn.m", root=root) == before
    (root / "m.py").write_text('X = 2\n\ndef f(a):\n    return a + X\n')
    assert fp.fingerprint("sojourn.m", root=root) != before


def test_rule_fingerprints_separate_the_rules():
    """Every job of a study's jobs module is its own rerun trigger: the comparison's code is not in the
    simulation's fingerprint and the kernel not in the comparison's, in every study."""
    jobs = {s: {name: set(fp.closure(f"sojourn.{s}.jobs:{name}")) for name in JOBS[s]} for s in names()}
    j = jobs["jsq_ps"]
    sim, approx, cmp_, figs = j["simulate"], j["approximate"], j["compare"], j["figures"]
    assert "sojourn.jsq_ps.kernel" in sim and "sojourn.jsq_ps.kernel" not in approx | cmp_ | figs
    assert "sojourn.jsq_ps.solve.methods" in approx and "sojourn.jsq_ps.solve.methods" not in sim
    laws = j["approximate_laws"]  # the M/G/R law methods: T with the law, not the kernel nor the comparison
    assert "sojourn.jsq_ps.solve.tail_ph" in laws and "sojourn.jsq_ps.kernel" not in laws
    assert "sojourn.jsq_ps.compare" not in laws
    assert "sojourn.jsq_ps.compare" not in sim | approx
    assert "sojourn.core.cluster.cluster" not in sim | approx  # where replications run never changes results
    assert "sojourn.core.files.io" in sim & approx & cmp_ & figs
    for s in ("split_merge", "restart"):
        simulate = jobs[s]["experiment" if s == "split_merge" else "simulate"]
        assert f"sojourn.{s}.kernel" in simulate and f"sojourn.{s}.plots" not in simulate
        assert f"sojourn.{s}.kernel" not in jobs[s]["figures"]
    r = jobs["restart"]
    assert "sojourn.restart.solve" in r["solve"] and "sojourn.restart.kernel" not in r["solve"]


def test_a_job_fingerprint_changes_with_its_own_code_only(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "", "core/__init__.py": "", "core/a.py": "X = 1\n", "core/b.py": "Y = 2\n",
        "study/__init__.py": "",
        "study/jobs.py": "from ..core import a\n\nK = 3\n\n\ndef one():\n    return a.X + K + _help()\n\n\n"
                         "def _help():\n    return 1\n\n\ndef two():\n    from ..core import b\n    return b.Y\n",
    })
    assert fp.closure("sojourn.study.jobs:one", root=root) == ["sojourn.core.a"]
    assert fp.closure("sojourn.study.jobs:two", root=root) == ["sojourn.core.b"]
    one, two = fp.fingerprint("sojourn.study.jobs:one", root=root), fp.fingerprint("sojourn.study.jobs:two", root=root)
    text = (root / "study" / "jobs.py").read_text()
    (root / "study" / "jobs.py").write_text(text.replace("return b.Y", "return b.Y + 1"))
    assert fp.fingerprint("sojourn.study.jobs:one", root=root) == one
    assert fp.fingerprint("sojourn.study.jobs:two", root=root) != two
    (root / "study" / "jobs.py").write_text(text.replace("return 1", "return 2"))  # a helper `one` uses
    assert fp.fingerprint("sojourn.study.jobs:one", root=root) != one
    (root / "core" / "a.py").write_text("X = 5\n")  # a module `one` imports at module level
    assert fp.fingerprint("sojourn.study.jobs:two", root=root) == two


# -- one shape ----------------------------------------------------------------------------------------
#: the roles every study package has, under these names
ROLES = ("model", "kernel", "simulate", "solve", "config", "jobs", "compare", "plots", "cli")

#: the jobs (functions of sojourn.<study>.jobs) of each study's rules
JOBS = {"jsq_ps": ("simulate", "approximate", "approximate_laws", "merge_simulation", "merge_approximation",
                   "merge_law_approximation", "compare", "accuracy", "figures", "reproduction"),
        "split_merge": ("exact", "experiment", "figures"),
        "restart": ("solve", "simulate", "compare", "figures")}


@pytest.mark.parametrize("study", names())
def test_every_study_has_the_same_roles(study):
    import importlib

    for role in ROLES:
        assert fp.module_path(f"sojourn.{study}.{role}"), f"sojourn.{study} has no {role} module or package"
    simulate = importlib.import_module(f"sojourn.{study}.simulate")
    for name in ("simulate", "simulate_replication", "concat_replications"):  # the same API in every study
        assert callable(getattr(simulate, name, None)), f"sojourn.{study}.simulate has no {name}"
    pkg = importlib.import_module(f"sojourn.{study}")
    for name in ("simulate_replication", "concat_replications", "FIGURES"):  # the same kinds of names
        assert name in pkg.__all__ and getattr(pkg, name) is not None, f"sojourn.{study} does not export {name}"
    assert any(isinstance(getattr(pkg, n), type) for n in pkg.__all__), f"sojourn.{study} exports no model class"
    jobs = importlib.import_module(f"sojourn.{study}.jobs")
    for name in JOBS[study]:
        assert callable(getattr(jobs, name)), f"sojourn.{study}.jobs has no job {name}"


def test_no_study_submits_to_dask_itself():
    """Only the core (sojourn.core.runs.runner, sojourn.core.cluster.cluster) talks to a Dask client: retries, the
    watchdog and progress are the runner's, the same for every study."""
    pattern = re.compile(r"\b(client|self\.client)\s*\.\s*(map|submit|gather|compute|scatter)\s*\(")
    for path in PKG.rglob("*.py"):
        owner = _owner(_module_name(path))
        if owner == "core":
            continue
        hits = [i + 1 for i, line in enumerate(path.read_text().splitlines()) if pattern.search(line)]
        assert not hits, f"{path.relative_to(ROOT)} lines {hits} submit to Dask: use sojourn.core.runs.runner"


@pytest.mark.parametrize("study", names())
def test_every_study_satisfies_the_protocol(study):
    """Each registered study provides an object of the core's study protocol (sojourn.core.runs.protocol.Study, checked
    by isinstance on the runtime-checkable Protocol), whose cached steps are classes providing every member of
    sojourn.core.runs.protocol.Step; its analytic step is one of them, and its simulation step is the job of that name
    (each job of a step hands it to sojourn.core.runs.protocol.run_step, which checks the instance by isinstance)."""
    from sojourn.core.runs import protocol
    from sojourn.studies import get

    obj = get(study).protocol()
    assert isinstance(obj, protocol.Study), f"sojourn.{study}.protocol.STUDY is not a sojourn.core.runs.protocol.Study"
    assert obj.name == study and obj.analytic in obj.steps and "simulate" in obj.steps
    assert callable(obj.replication)
    for name, cls in obj.steps.items():
        assert isinstance(cls, type) and not protocol.missing(cls), \
            f"{study}: step {name} lacks {protocol.missing(cls)}"


def test_the_protocol_check_can_fail():
    from sojourn.core.runs import protocol

    class NoStudy:
        name, steps, analytic, replication = "x", {}, "", print

        def figures(self, **inputs):
            return []

    class HalfStep:
        name = "x"

        def cells(self):
            return []

    assert not isinstance(NoStudy(), protocol.Study)  # no compare
    assert set(protocol.missing(HalfStep)) == {"attrs", "encoding", "estimate", "finish", "layout", "record",
                                               "shared", "task"}
    with pytest.raises(TypeError, match="not a sojourn.core.runs.protocol.Step"):
        protocol.run_step(HalfStep(), None)


#: what only the core does: the cache lookup and store, running cells and the precision loop over replications, and
#: joining replications (sojourn.core.runs.protocol.run_step, sojourn.core.estimates.replications.replicate)
CORE_ONLY = {
    "the cell runner's run_cells, lookup or store": re.compile(
        r"\brun_cells\b|\brunner\s*\.\s*(lookup|store)\s*\(|core\.runner import[^\n]*\b(lookup|store)\b"),
    "the cache's cached_cells": re.compile(r"\bcached_cells\b"),
    "the precision loop over replications": re.compile(r"precision\s*\.\s*run_replications|"
                                                       r"core\.precision import[^\n]*\brun_replications\b"),
    "a join of replications": re.compile(r"\bconcat\((?:(?!\n\n).){0,400}?dim\s*=\s*[\"']replication[\"']", re.DOTALL),
    "a call of concat_replications": re.compile(r"(?<!def )\bconcat_replications\s*\("),
}


def _core_only_hits(text: str) -> list[str]:
    return [what for what, pattern in CORE_ONLY.items() if pattern.search(text)]


def test_assembly_and_replication_loops_live_in_the_core():
    """One place assembles a study's results (sojourn.core.runs.protocol.run_step: lookup, run, join, assemble, store)
    and
    one place loops over replications (sojourn.core.estimates.replications.replicate): no study module does any of it
    itself."""
    for path in PKG.rglob("*.py"):
        if _owner(_module_name(path)) not in names():
            continue
        hits = _core_only_hits(path.read_text())
        assert not hits, f"{path.relative_to(ROOT)} does {hits} itself: declare a step (sojourn.core.runs.protocol)"


def test_the_assembly_check_can_fail():
    """What the studies did before the protocol (main 77a9db7) is caught, each kind of it."""
    old = {
        "have, cached_attrs = runner.lookup(cache, cells, select, split)": 1,
        "done = runner.run_cells(runner.DaskExecutor(client), cells, simulate_replication)": 1,
        "runner.store(block, cache, cells, 'cells', output)": 1,
        "done = _precision.run_replications([0], run, precision=precision, estimate=estimate)[0]": 1,
        "row = [xr.concat([p[list(SIM_VARS)].drop_attrs() for p in by_point[(s, r)].results], dim=\"replication\",\n"
        "                 data_vars='all') for r in rates]": 1,
        "ds = with_guard(concat_replications(parts) if len(parts) > 1 else parts[0], spec)": 1,
        "def concat_replications(datasets) -> xr.Dataset:": 0,
        "out = xr.concat(parts, dim='approximation')": 0,
    }
    for text, n in old.items():
        assert len(_core_only_hits(text)) == n, text


@pytest.mark.parametrize("study", names())
def test_figures_are_declared_once(study):
    """Each study's figures are its plots.FIGURES: every draw function exists; each writes its caption from the data
    it draws (sojourn.core.present.claims.Caption, through sojourn.core.present.figures.save), so no caption is written
    by hand and
    there is no static caption folder; the rule file takes the outputs and captions from the registry
    (figure_outputs, key_results)."""
    import importlib

    plots = importlib.import_module(f"sojourn.{study}.plots")
    for f in plots.FIGURES:
        assert callable(getattr(plots, f.draw, None)), f"{study}: {f.draw} is not a function of its plots"
    # (each study's pipeline test checks that every figure of a real run has its caption, and every claim in it)
    assert not (ROOT / "workflow" / "report" / study).exists(), "captions are generated, not written by hand"
    smk = (ROOT / "workflow" / "rules" / f"{study}.smk").read_text()
    assert "figure_outputs(" in smk and "key_results(" in smk and callable(plots.key_results)
    assert "def _" not in smk.split("figure_outputs")[0].split("rule ")[-1]


# -- one job convention, seen in a real run ----------------------------------------------------------------
TINY_ALL = {
    "cluster": {"kind": "local", "n_workers": 2},
    "jsq_ps": {"grid": {"R": [1], "rho": [0.5]}, "mgr": {"laws": []},
               "simulation": {"window": {"length": 2000, "warmup": 100, "cooldown": 100}, "replications": 2},
               "approximation": {"methods": ["A", "exact"]}, "figures": {"formats": ["png"], "cdf_cells": []},
               "comparison": {"n_resamples": 200}},
    "split_merge": {"simulation": {"replications": 2},
                    "experiment_a": {"window": {"length": 2000, "warmup": 200}}, "experiment_b": {"enabled": False},
                    "experiment_c": {"enabled": False}, "figures": {"formats": ["png"]}},
    "restart": {"examples": {"example2": {"model": "example2", "rates": [0.5, 5.0],
                                          "window": {"length": 4000, "warmup": 200}, "semantics": ["signal"]}},
                "simulation": {"replications": 2}, "figures": {"formats": ["png"]}},
}


@pytest.mark.slow
def test_every_job_writes_its_log(tmp_path):
    """A real Snakemake run of all three studies (tiny): every rule's log exists, names the job function it ran
    on its first line and ends with its duration (sojourn.core.runs.job.run), and every benchmark file exists."""
    import subprocess
    import sys

    import yaml

    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY_ALL))
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory",
                           str(tmp_path), "--cores", "2", "--configfile", str(tmp_path / "tiny.yaml")],
                          capture_output=True, text=True, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    logs = sorted((tmp_path / "results").rglob("logs/**/*.log"))
    studies = {p.relative_to(tmp_path / "results").parts[0] for p in logs}
    assert studies == set(names()) and len(logs) >= 13, logs
    for p in logs:
        lines = p.read_text().splitlines()
        assert lines, f"{p} is empty"
        study = p.relative_to(tmp_path / "results").parts[0]
        assert re.fullmatch(rf"sojourn\.{study}\.jobs:\w+", lines[0]), f"{p}: first line {lines[0]!r}"
        assert re.match(r"done in \d+\.\d\d s \(CPU \d+\.\d\d s in the job.s thread\): ", lines[-1]), \
            f"{p}: last line {lines[-1]!r}"
    bench = sorted((tmp_path / "results").rglob("benchmarks/**/*.tsv"))
    assert len(bench) == len(logs)
    # the report of every study's figures, with their captions: no docutils error boxes or messages
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory",
                           str(tmp_path), "--configfile", str(tmp_path / "tiny.yaml"), "--report",
                           str(tmp_path / "report.html")], capture_output=True, text=True, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (tmp_path / "report.html").read_text(errors="replace")
    assert "System Message" not in html and "Undefined substitution" not in html
    assert not re.search(r"\((INFO|WARNING|ERROR|SEVERE)/\d\)", proc.stdout + proc.stderr), proc.stderr[-2000:]
    for category in ("JSQ-PS", "Split-merge", "Restart"):
        assert category in html
