"""The fuzzer's parts (tests/workflow/test_fuzz.py, issue 32 item 6): what it draws for every flag of every command
and every key of every config section, derived from the argparse parsers and the JSON schemas themselves, and how one
drawn input is run and judged.

Flags: each flag's kind (:class:`sojourn.core.checks.guard.Kind`, its ``family``) says what it takes; :data:`FAMILIES`
gives each family its valid values, and every flag also draws the hostile values of :data:`HOSTILE`. A flag whose
family has no strategy fails :func:`flag_strategy` (a new flag kind needs one here). Keys: each leaf of the
schemas (its type, enum, bounds) gets a strategy by :func:`key_strategy`; an unknown form fails it.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import resource
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

#: special-file outputs drawn for every output flag (issue 32 item 3): a device node (a null device of the test's
#: own, never the real /dev/null), a FIFO, a socket, a folder, links to a device and to a FIFO. Each must be refused
#: in one line and left as it was (:func:`judge`)
SPECIAL_OUTPUTS = ["{fifo}", "{device}", "{socket}", "{tmp}", "{devnull-link}", "{fifo-link}"]

#: hostile texts every flag draws, whatever its kind: zeros, negatives, infinities, NaN, 1e±300, beyond int64 and
#: uint64, empty and blank text, lists, duplicates, wrong units, unknown names, control characters
HOSTILE = ["0", "-1", "-0", "1e300", "-1e300", "1e-300", "inf", "-inf", "nan", "NaN", "2e308",
           str(2**63), str(2**64), str(2**64 - 1), "99999999999999999999", "0.5", "1.5", "-0.5", "1e9", "1e12",
           "", " ", "1,1", "50,50", "1,2,3," * 50, "x", "none", "0x10", "1_000", "1e6", "72", "72 parsecs",
           "9000/fortnight", "1.2ms", "9000/s", "nosuchlaw", "lognormal:sigma=1e300", "lognormal:sigma=40",
           "exponential:rate=1e-300", "gamma:shape=1e-300", "phasetype:alpha=1/0,T=-1/2|0/-2", "erlang:k=100000000",
           "jsq-d:0", "limited:0", "capacitated:-1", "percentile:100", "cdf", "mean:3", "example9", "\t", "a\x00b"]

#: hostile numbers inside structured texts (law parameters, times, rates, percent lists, dispatch forms)
NUMBERS = ["0", "-1", "1e300", "-1e300", "1e-300", "inf", "nan", "1e9", "1e-9", "18446744073709551616", "0.5", "2",
           "", "x"]


@st.composite
def hostile_laws(draw):
    """A law of the registry (sojourn.core.laws.distributions.LAWS: new laws are drawn too) with hostile parameters."""
    from dataclasses import fields

    from sojourn.core.laws.distributions import LAWS

    name = draw(st.sampled_from(sorted(LAWS)))
    params = [f.name for f in fields(LAWS[name])] + ["mean"]
    chosen = draw(st.lists(st.sampled_from(params), min_size=0, max_size=3))
    values = []
    for k in chosen:
        v = draw(st.one_of(st.sampled_from(NUMBERS), st.lists(st.sampled_from(NUMBERS), min_size=1,
                                                                max_size=3).map("/".join)))
        values.append(f"{k}={v}")
    return name + (":" + ",".join(values) if values else "")


def _with_units(units):
    return st.builds(lambda n, u: f"{n}{u}", st.sampled_from(NUMBERS), st.sampled_from(units))


#: hostile structured values by family (drawn besides HOSTILE)
STRUCTURED = {
    "law": hostile_laws(),
    "time": _with_units(["s", "ms", "us", "ns", " ms", "parsecs", "h"]),
    "rate": _with_units(["/s", "/ms", "/ns", " Hz", "/fortnight", "/"]),
    "percent-list": st.lists(st.sampled_from(NUMBERS), min_size=1, max_size=5).map(",".join),
    "precision": st.builds(
        lambda s, n: f"{s}:{n}", st.sampled_from(["percentile", "mean", "cdf", "median"]), st.sampled_from(NUMBERS)
    ),
    "dispatch": st.builds(
        lambda s, n: f"{s}:{n}", st.sampled_from(["jsq-d", "jsq", "random"]), st.sampled_from(NUMBERS)
    ),
    "discipline": st.builds(
        lambda s, n: f"{s}:{n}", st.sampled_from(["limited", "capacitated", "ps"]), st.sampled_from(NUMBERS)
    ),
    "probability": st.builds(lambda n, u: f"{n}{u}", st.sampled_from(NUMBERS), st.sampled_from(["", "%"])),
    "size": _with_units(["", "k", "M", "G", "P", "b", "x"]),
    "duration": _with_units(["", "s", "m", "h", "d", "ms"]),
    "criterion": st.builds(lambda n: f"p{n}", st.sampled_from(NUMBERS)),
}

#: valid values by a flag kind's family (a baseline command stays quick with them)
FAMILIES = {
    "int": st.integers(1, 4).map(str),
    "real": st.sampled_from(["0.5", "0.3", "0.8", "1", "2", "0.1"]),
    "text": st.sampled_from(["x", "q"]),
    "law": st.sampled_from(["exponential", "deterministic", "lognormal:sigma=0.69", "gamma:shape=2",
                            "hyperexponential:probs=0.5/0.5,rates=2/0.667", "uniform", "erlang:k=3,rate=3"]),
    "output": st.just("{out}"),
    "dispatch": st.sampled_from(["jsq", "random", "round-robin", "jsq-d:2"]),
    "discipline": st.sampled_from(["ps", "limited:2", "capacitated:1.5"]),
    "precision": st.sampled_from(["mean", "percentile:99", "cdf:2"]),
    "size": st.sampled_from(["500M", "1G", "none", "2e9"]),
    "duration": st.sampled_from(["2s", "1m", "none"]),
    "rate": st.sampled_from(["900/s", "1/ms", "100 Hz"]),
    "time": st.sampled_from(["20ms", "1ms", "5 ms", "0.02s"]),
    "probability": st.sampled_from(["0.99", "99.9%", "0.9"]),
    "unit": st.sampled_from(["ms", "s", "us"]),
    "path": st.just("{tmp}/no-such-file.csv"),
    "percent-list": st.sampled_from(["50,90,99", "99", "10,20"]),
    "criterion": st.sampled_from(["mean", "p99", "p50"]),
    "model": st.sampled_from(["example1", "example2", "example3", "{model}"]),
    "name": st.sampled_from(["q", "server", "nosuch"]),
    "choice": None,  # the kind's own choices
}

#: a quick valid invocation of every command (the flags a drawn example does not set): a command without one
#: fails test_every_command_has_a_baseline
BASELINES = {
    ("simulate",): ["-R", "2", "--load", "0.5", "--horizon", "300", "--replications", "2", "--dt", "0.1",
                    "--t-max", "10", "-o", "{out}"],
    ("approximate",): ["-R", "2", "--load", "0.5", "--method", "A", "--dt", "0.1", "--t-max", "10", "-o", "{out}"],
    ("plan",): ["--arrival-rate", "900/s", "--mean-service", "1ms", "--deadline", "20ms", "--reliability", "0.99"],
    ("split-merge", "exact"): ["-n", "4", "-r", "2", "-q", "1", "--load", "0.5"],
    ("split-merge", "simulate"): ["-n", "4", "-r", "2", "-q", "1", "--load", "0.5", "--workunits", "1000",
                                  "--replications", "2", "--dt", "0.1", "--t-max", "20", "-o", "{out}"],
    ("split-merge", "best"): ["-n", "4", "--arrival-rate", "1", "--workunits", "1000", "--replications", "2",
                              "--max-replicas", "2"],
    ("restart", "solve"): ["-m", "example1", "-o", "{out}"],
    ("restart", "simulate"): ["-m", "example2", "--horizon", "1000", "--replications", "2", "-o", "{out}"],
    ("restart", "optimise"): ["-m", "example2", "--horizon", "500", "--replications", "2", "--taus", "0.5", "1",
                              "-o", "{out}"],
    ("restart", "schema"): [],
}

#: the bounds every drawn command is run with (its --max-time / --max-memory, where it has them) and held to
MAX_TIME, MAX_MEMORY = "2s", "500M"
#: wall-clock seconds an in-process example may take (the machine is shared: 2 s predicted, a margin for load)
WALL_BOUND = 30.0
#: growth of this process's peak resident memory an example may cause (bytes)
MEMORY_BOUND = 500 * 2**20


def leaf_parsers():
    """{command path: its argparse parser} for every command that runs (a leaf of the command tree)."""
    from sojourn.cli import build_parser

    out = {}

    def walk(parser, path):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out[tuple(path)] = parser
            return
        for name, sub in subs[0].choices.items():
            walk(sub, [*path, name])

    walk(build_parser(None), [])
    return out


def flags_of(parser) -> list:
    """The flag actions of a command (help aside)."""
    return [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]


def flag_strategy(action):
    """The texts drawn for one flag: its family's valid values and the hostile ones (a list for nargs)."""
    from sojourn.core.checks.guard import Choice, kind_of

    if action.nargs == 0:
        return st.just(None)  # a switch: given or not
    kind = kind_of(action)
    if kind is None:
        raise AssertionError(f"{'/'.join(action.option_strings)} has no kind (sojourn.core.checks.guard): give it one")
    if isinstance(kind, Choice):
        valid = st.sampled_from(list(kind.choices))
    else:
        if kind.family not in FAMILIES or FAMILIES[kind.family] is None:
            raise AssertionError(f"{'/'.join(action.option_strings)}: no fuzz strategy for kind family "
                                 f"{kind.family!r} (tests/support/fuzz.py FAMILIES)")
        valid = FAMILIES[kind.family]
    hostile = st.sampled_from(HOSTILE)
    if kind.family in STRUCTURED:
        hostile = st.one_of(hostile, STRUCTURED[kind.family])
    if kind.family == "model":
        hostile = st.one_of(hostile, hostile_models())
    if kind.family == "output":
        hostile = st.one_of(hostile, st.sampled_from(SPECIAL_OUTPUTS))
    one = st.one_of(valid, hostile, hostile)
    if action.nargs in ("+", "*"):
        return st.lists(one, min_size=1, max_size=3)
    if isinstance(action.nargs, int):
        return st.lists(one, min_size=action.nargs, max_size=action.nargs)
    return one


@st.composite
def command_lines(draw, parsers):
    """(command path, argv): a command's baseline with one to three of its flags set to drawn texts."""
    path = draw(st.sampled_from(sorted(parsers)))
    parser = parsers[path]
    argv = list(BASELINES[path])
    flags = flags_of(parser)
    picks = draw(st.lists(st.integers(0, len(flags) - 1), min_size=1, max_size=min(3, len(flags)), unique=True)) \
        if flags else []
    chosen = [flags[i] for i in picks]
    for action in chosen:
        value = draw(flag_strategy(action))
        opt = action.option_strings[-1] if action.option_strings[-1].startswith("--") else action.option_strings[0]
        opt = next((o for o in action.option_strings if o.startswith("--")), opt)
        argv = _without(argv, action)
        if value is None:
            argv.append(opt)
        elif isinstance(value, list):
            argv += [opt, *value]
        else:
            argv.append(f"{opt}={value}")
    names = {a.dest for a in flags}
    for flag, limit in (("max_time", MAX_TIME), ("max_memory", MAX_MEMORY)):
        if flag in names and not any(a.dest == flag for a in chosen):
            argv += [f"--{flag.replace('_', '-')}", limit]
    return path, [*path, *argv]


def _without(argv: list, action) -> list:
    """``argv`` without the baseline's occurrence of ``action`` (and its values)."""
    out, skip = [], 0
    n = 0 if action.nargs == 0 else (action.nargs if isinstance(action.nargs, int) else 1)
    for i, tok in enumerate(argv):
        if skip:
            skip -= 1
            continue
        if tok in action.option_strings:
            skip = n if action.nargs not in ("+", "*") else _count_values(argv, i)
            continue
        out.append(tok)
    return out


def _count_values(argv, i):
    k = 0
    for tok in argv[i + 1:]:
        if tok.startswith("-") and not _is_number(tok):
            break
        k += 1
    return k


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


# -- model files: every key of the restart model schema -----------------------------------------------------------
MODEL_BASE = {"name": "m", "queues": [{"name": "q", "signal_rate": 0.5, "restart": "anew", "classes": [
    {"name": "job", "arrival_rate": 0.3, "success": [0.5, 0.5], "restart_to": {"job": 1.0},
     "service": {"rates": [2.0, 3.0], "entry": [1.0, 0.0], "H": [[0.0, 1.0], [0.0, 0.0]]}}]}]}
MODEL_VALUES = [0, -1, 1e300, -1e300, 1e-300, 2**64, float("inf"), float("nan"), "", "x", [], [1e300, 1e-300], {},
                None, 100_000_000, [[1e300]], True]


def model_leaves():
    """(key path, schema) of every leaf of the restart model schema (sojourn.restart.schema.MODEL_SCHEMA: new keys are
    drawn too), a list's items at ``[0]``."""
    from sojourn.restart.schema import MODEL_SCHEMA

    out = []

    def walk(node, path):
        if node.get("type") == "array" and isinstance(node.get("items"), dict) and node["items"].get("properties"):
            walk(node["items"], path + "[0]")
            return
        props = node.get("properties")
        if props:
            for k, sub in props.items():
                walk(sub, f"{path}.{k}" if path else k)
            return
        alts = node.get("oneOf")
        if alts and any(a.get("properties") for a in alts):
            for a in alts:
                for k, sub in (a.get("properties") or {}).items():
                    out.append((f"{path}.{k}", sub))
            return
        out.append((path, node))

    walk(MODEL_SCHEMA, "")
    return out


@st.composite
def hostile_models(draw):
    """A model file (its YAML text, as ``{modeltext:…}``): the base model with one key set to a hostile value."""
    import copy
    import json

    d = copy.deepcopy(MODEL_BASE)
    path, _ = draw(st.sampled_from(model_leaves()))
    value = draw(st.sampled_from(MODEL_VALUES))
    if path.endswith((".erlang", ".rate")):  # the erlang form of the service
        d["queues"][0]["classes"][0]["service"] = {"erlang": 2, "rate": 2.0}
    elif path.endswith((".T", ".alpha")):
        d["queues"][0]["classes"][0]["service"] = {"alpha": [1.0, 0.0], "T": [[-2.0, 2.0], [0.0, -3.0]]}
    set_key(d, path, value)
    return "{modeltext:" + json.dumps(d, allow_nan=True) + "}"


# -- running one drawn command ---------------------------------------------------------------------------------
class Hang(Exception):
    """An example ran past :data:`WALL_BOUND` (raised by the alarm in the main thread)."""


@dataclass
class Outcome:
    status: int
    stdout: str
    stderr: str
    seconds: float
    grew: float  # bytes by which the peak resident memory of this process grew


def _peak() -> float:
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def special_files(folder: Path) -> dict:
    """One file of each kind of :mod:`support.special` this process can make (a device needs root; a FIFO stands
    in for it otherwise) in ``folder``, made once, by placeholder (:data:`SPECIAL_OUTPUTS`: ``{tmp}`` is the folder
    itself, ``{devnull-link}`` the link to a device)."""
    from support import special

    can = special.kinds(folder)
    out = {"{tmp}": str(folder)}
    for placeholder, kind in (("{fifo}", "fifo"), ("{device}", "device"), ("{socket}", "socket"),
                              ("{devnull-link}", "link-to-device"), ("{fifo-link}", "link-to-fifo")):
        if kind not in can:
            kind = kind.replace("device", "fifo")
        path = folder / f"a-{placeholder.strip('{}')}"
        if not os.path.lexists(path):
            _KEEP.append(special.make(path, kind))
        out[placeholder] = str(path)
    return out


#: what keeps a special file alive (a bound socket)
_KEEP: list = []


def file_kinds(folder: Path) -> dict:
    """The identity of each special file of ``folder`` (:func:`support.special.identity`): a run must leave them as
    they were."""
    from support import special

    return {k: special.identity(v) for k, v in special_files(folder).items()}


#: the special files' kinds when first made, by folder (:func:`judge` compares every run's leftovers with them)
_FIRST_KINDS: dict = {}


def run_in_process(argv: list, folder: Path) -> Outcome:
    """``sojourn argv`` in this process (stdout and stderr captured, SystemExit caught), placeholders filled in,
    held to :data:`WALL_BOUND` by an alarm."""
    from sojourn.cli import main

    model = folder / "model.yaml"
    if not model.exists():
        model.write_text("name: m\nqueues:\n  - name: q\n    signal_rate: 0.5\n    classes:\n      - name: job\n"
                         "        arrival_rate: 0.3\n        success: 0\n        service: {erlang: 2, rate: 2}\n")
    fill = {"{out}": str(folder / "out.nc"), "{tmp}": str(folder), "{model}": str(model)}
    fill.update(special_files(folder))
    _FIRST_KINDS.setdefault(str(folder), file_kinds(folder))
    args = []
    for a in argv:
        if "{modeltext:" in a:  # a drawn model file: written, then named
            import json

            import yaml

            text = a[a.index("{modeltext:") + 11:a.rindex("}")]
            drawn = folder / "drawn-model.yaml"
            drawn.write_text(yaml.safe_dump(json.loads(text)))
            a = a[:a.index("{modeltext:")] + str(drawn)
        for k, v in fill.items():
            a = a.replace(k, v)
        args.append(a)
    out, err = io.StringIO(), io.StringIO()

    def alarm(*_):
        raise Hang(f"sojourn {' '.join(args)} ran past {WALL_BOUND:g} s")

    before = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, WALL_BOUND)
    peak0, t0 = _peak(), time.perf_counter()
    cwd = os.getcwd()
    os.chdir(folder)  # a drawn relative output lands in the example's folder, never in the checkout
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(args)
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.chdir(cwd)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    return Outcome(int(status), out.getvalue(), err.getvalue(), time.perf_counter() - t0, _peak() - peak0)


#: stderr lines a run may print besides its one error line: progress and estimates, warnings about results
NOISE = ("sojourn: ", "warning:", "optimise [")


def judge(path, argv, outcome: Outcome, folder: Path) -> None:
    """The property: exit 0 with a valid output, or exit 2 with one line naming a flag; never a traceback; within
    the time and memory bounds."""
    where = f"sojourn {' '.join(map(str, argv))}"
    assert "Traceback" not in outcome.stderr, f"{where}: a traceback\n{outcome.stderr[-3000:]}"
    assert outcome.status in (0, 2), f"{where}: exit {outcome.status}\n{outcome.stderr[-2000:]}"
    assert outcome.seconds <= WALL_BOUND, f"{where}: {outcome.seconds:.1f} s"
    assert outcome.grew <= MEMORY_BOUND, f"{where}: peak memory grew by {outcome.grew / 2**20:.0f} MiB"
    lines = [ln for ln in outcome.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error:" in ln]
    if _given_output(argv) in SPECIAL_OUTPUTS:
        assert outcome.status == 2, f"{where}: an output onto a special file was not refused\n{outcome.stderr}"
    if str(folder) in _FIRST_KINDS:
        assert file_kinds(folder) == _FIRST_KINDS[str(folder)], f"{where}: a special file was replaced"
    if outcome.status == 2:
        assert len(errors) == 1, f"{where}: {len(errors)} error lines\n{outcome.stderr[-2000:]}"
        other = [ln for ln in lines if ln not in errors and not ln.startswith(NOISE)]
        assert not other, f"{where}: more than one line\n{outcome.stderr[-2000:]}"
        msg = errors[0].split("error:", 1)[1]
        assert "--" in msg or "unknown command" in msg, f"{where}: the error names no flag: {errors[0]}"
        assert len(errors[0]) < 1200, f"{where}: an error line of {len(errors[0])} characters"
        return
    assert not errors, f"{where}: exit 0 with an error line\n{outcome.stderr}"
    assert outcome.stdout.strip(), f"{where}: exit 0 and nothing printed"
    out = folder / "out.nc"
    if "-o" in argv or "--output" in argv or any(str(a).startswith("--output=") for a in argv):
        given = _given_output(argv)
        if given == "{out}":
            assert out.is_file(), f"{where}: exit 0 and no output file"
            import xarray as xr

            with xr.open_dataset(out) as ds:
                assert ds.attrs, f"{where}: an output without attributes"


def _given_output(argv) -> str | None:
    for i, a in enumerate(argv):
        if a in ("-o", "--output") and i + 1 < len(argv):
            return argv[i + 1]
        if str(a).startswith("--output="):
            return a.split("=", 1)[1]
    return None


# -- config keys -----------------------------------------------------------------------------------------------
def schema_leaves(schema: dict, path: str = ""):
    """(key path, schema) of every leaf key of an inlined JSON schema (objects are walked; a list's items are one
    leaf, ``path[0]``; a mapping of free keys, ``path.*``)."""
    props = schema.get("properties")
    if isinstance(props, dict) and props:
        for k, sub in props.items():
            yield from schema_leaves(sub, f"{path}.{k}" if path else k)
        if isinstance(schema.get("additionalProperties"), dict):
            yield from schema_leaves(schema["additionalProperties"], f"{path}.*")
        return
    if isinstance(schema.get("additionalProperties"), dict):
        yield from schema_leaves(schema["additionalProperties"], f"{path}.*")
        return
    yield path, schema


HOSTILE_VALUES = [0, -1, 1e300, -1e300, 1e-300, math.inf, -math.inf, math.nan, 2**63, 2**64, 1.0e30, "", " ",
                  "nosuchlaw", "lognormal:sigma=40", "72 parsecs", [], [1, 1], list(range(2000)), {}, None, True,
                  "1e9", 0.5, 1.0e9]


def key_strategy(schema: dict):
    """The values drawn for one config key: hostile ones and, from its schema, valid-looking ones. Fails on a
    schema form it does not know (a new kind of key needs a strategy)."""
    t = schema.get("type")
    types = t if isinstance(t, list) else [t] if t else []
    valid = []
    if "enum" in schema:
        valid.append(st.sampled_from(schema["enum"]))
    for ty in types:
        if ty == "integer":
            lo = int(schema.get("minimum", 0))
            valid.append(st.integers(lo, lo + 5))
        elif ty == "number":
            lo = float(schema.get("minimum", schema.get("exclusiveMinimum", 0.0)))
            hi = float(schema.get("maximum", schema.get("exclusiveMaximum", lo + 10.0)))
            valid.append(st.floats(lo, hi, allow_nan=False, allow_infinity=False))
        elif ty == "string":
            valid.append(st.sampled_from(["exponential", "x", "results", "2GB", "00:10:00"]))
        elif ty == "boolean":
            valid.append(st.booleans())
        elif ty == "null":
            valid.append(st.none())
        elif ty == "array":
            item = schema.get("items") or {}
            inner = (
                key_strategy(item) if item.get("type") or item.get("enum") or item.get("oneOf") else st.integers(1, 3)
            )
            valid.append(st.lists(inner, min_size=1, max_size=4))
        elif ty == "object":
            valid.append(st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3), max_size=2))
        else:
            raise AssertionError(f"no fuzz strategy for a key of type {ty!r}: {schema}")
    for alt in schema.get("oneOf", []) + schema.get("anyOf", []):
        valid.append(key_strategy(alt))
    if not valid and "const" in schema:
        valid.append(st.just(schema["const"]))
    if not valid:
        raise AssertionError(f"no fuzz strategy for a key with schema {schema}")
    return st.one_of(*valid, st.sampled_from(HOSTILE_VALUES), st.sampled_from(HOSTILE_VALUES))


def set_key(cfg: dict, path: str, value) -> None:
    """``cfg`` with the key ``path`` set to ``value``: ``a.b`` a mapping key, ``a[0]`` the first item of a list
    (made if missing), ``a.*`` a new key ``fuzzed`` of a free mapping."""
    import re

    parts = [p for p in re.split(r"\.|(?=\[0\])", path) if p]
    node = cfg
    for i, p in enumerate(parts):
        last = i == len(parts) - 1
        if p == "[0]":
            if not isinstance(node, list):
                return
            if last or not node:
                if node:
                    node[0] = value
                else:
                    node.append(value)
                return
            if not isinstance(node[0], (dict, list)):
                node[0] = {} if parts[i + 1] != "[0]" else []
            node = node[0]
            continue
        key = "fuzzed" if p == "*" else p
        if not isinstance(node, dict):
            return
        if last:
            node[key] = value
            return
        if not isinstance(node.get(key), (dict, list)):
            node[key] = [] if parts[i + 1] == "[0]" else {}
        node = node[key]
