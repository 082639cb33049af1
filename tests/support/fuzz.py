"""The fuzzer's parts (tests/workflow/test_fuzz.py, issue 32 item 6): what it draws for every flag of every command
and every key of every config section, derived from the argparse parsers and the JSON schemas themselves, and how one
drawn input is run and judged.

Flags: each flag's kind (:class:`sojourn.core.guard.Kind`, its ``family``) says what it takes; :data:`FAMILIES`
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
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

#: special-file outputs (a device node, a FIFO, a socket, a folder) drawn for every output flag: enabled when
#: wip/i32-files is merged (that branch makes every writing command refuse a non-regular output; until then a
#: drawn FIFO would block the writer)
SPECIAL_FILE_OUTPUTS = False

#: hostile texts every flag draws, whatever its kind: zeros, negatives, infinities, NaN, 1e±300, beyond int64 and
#: uint64, empty and blank text, lists, duplicates, wrong units, unknown names, control characters
HOSTILE = ["0", "-1", "-0", "1e300", "-1e300", "1e-300", "inf", "-inf", "nan", "NaN", "2e308",
           str(2**63), str(2**64), str(2**64 - 1), "99999999999999999999", "0.5", "1.5", "-0.5", "1e9", "1e12",
           "", " ", "1,1", "50,50", "1,2,3," * 50, "x", "none", "0x10", "1_000", "1e6", "72", "72 parsecs",
           "9000/fortnight", "1.2ms", "9000/s", "nosuchlaw", "lognormal:sigma=1e300", "lognormal:sigma=40",
           "exponential:rate=1e-300", "gamma:shape=1e-300", "phasetype:alpha=1/0,T=-1/2|0/-2", "erlang:k=100000000",
           "jsq-d:0", "limited:0", "capacitated:-1", "percentile:100", "cdf", "mean:3", "example9", "\t", "a\x00b"]

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
    from sojourn.core.guard import Choice, kind_of

    if action.nargs == 0:
        return st.just(None)  # a switch: given or not
    kind = kind_of(action)
    if kind is None:
        raise AssertionError(f"{'/'.join(action.option_strings)} has no kind (sojourn.core.guard): give it one")
    if isinstance(kind, Choice):
        valid = st.sampled_from(list(kind.choices))
    else:
        if kind.family not in FAMILIES or FAMILIES[kind.family] is None:
            raise AssertionError(f"{'/'.join(action.option_strings)}: no fuzz strategy for kind family "
                                 f"{kind.family!r} (tests/support/fuzz.py FAMILIES)")
        valid = FAMILIES[kind.family]
    hostile = st.sampled_from(HOSTILE)
    if kind.family == "output" and SPECIAL_FILE_OUTPUTS:
        hostile = st.one_of(hostile, st.sampled_from(["{fifo}", "{device}", "{socket}", "{tmp}"]))
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
    chosen = draw(st.lists(st.sampled_from(flags), min_size=1, max_size=3, unique_by=id)) if flags else []
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
    """A FIFO, a device node (where this process may make one: root) and a socket in ``folder``, by placeholder."""
    import socket

    out = {"{tmp}": str(folder)}
    fifo = folder / "a-fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
    out["{fifo}"] = str(fifo)
    dev = folder / "a-device"
    if not dev.exists():
        try:
            os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a private /dev/null
        except PermissionError:
            dev = fifo
    out["{device}"] = str(dev)
    sock = folder / "a-socket"
    if not sock.exists():
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(sock))
        s.close()
    out["{socket}"] = str(sock)
    return out


def run_in_process(argv: list, folder: Path) -> Outcome:
    """``sojourn argv`` in this process (stdout and stderr captured, SystemExit caught), placeholders filled in,
    held to :data:`WALL_BOUND` by an alarm."""
    from sojourn.cli import main

    model = folder / "model.yaml"
    if not model.exists():
        model.write_text("name: m\nqueues:\n  - name: q\n    signal_rate: 0.5\n    classes:\n      - name: job\n"
                         "        arrival_rate: 0.3\n        success: 0\n        service: {erlang: 2, rate: 2}\n")
    fill = {"{out}": str(folder / "out.nc"), "{tmp}": str(folder), "{model}": str(model)}
    if SPECIAL_FILE_OUTPUTS:
        fill.update(special_files(folder))
    args = []
    for a in argv:
        for k, v in fill.items():
            a = a.replace(k, v)
        args.append(a)
    out, err = io.StringIO(), io.StringIO()

    def alarm(*_):
        raise Hang(f"sojourn {' '.join(args)} ran past {WALL_BOUND:g} s")

    before = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, WALL_BOUND)
    peak0, t0 = _peak(), time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main(args)
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 2
    finally:
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
            inner = key_strategy(item) if item.get("type") or item.get("enum") or item.get("oneOf") else st.integers(1, 3)
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
    """``cfg`` with the key ``path`` (``a.b[0]``, ``a.*``: a new key ``fuzzed``) set to ``value``."""
    parts = path.replace("[0]", ".[0]").split(".")
    node = cfg
    for i, p in enumerate(parts[:-1]):
        p = "fuzzed" if p == "*" else p
        if p == "[0]":
            continue
        nxt = node.get(p) if isinstance(node, dict) else None
        if parts[i + 1] == "[0]":
            node[p] = [value] if not isinstance(nxt, list) or not nxt else [value, *nxt[1:]]
            return
        if not isinstance(nxt, dict):
            nxt = node[p] = {}
        node = nxt
    last = "fuzzed" if parts[-1] == "*" else parts[-1]
    node[last] = value
