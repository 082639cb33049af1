"""One guard for every entry point: what a command, a Python API function or a pipeline job is given is checked
here before anything is allocated or computed, and refused in one line that names what the user wrote.

Three checks, always in this order:

1. **Kinds** — every input's type and finite range. A :class:`Kind` (:class:`Int`, :class:`Real`, :data:`SEED`,
   :class:`Text` …) is at once the ``type=`` of a command-line flag (argparse calls it on the text), the check of
   an API argument (:meth:`Kind.check`) and, through the JSON schemas' bounds (:data:`INT_MAX`, :data:`SEED_MAX`),
   of a config key. Integers stay within what is stored (int64; seeds below 2**64), reals are finite. A test walks
   every parser and fails on a flag without a kind (``tests/workflow/test_guard.py``).
2. **Relations** — a flag that means something only with another (:func:`requires`) is refused alone; flags that
   exclude each other (:func:`excludes`) are refused together. Declared where the flags are added, checked by the
   command-line parser (:class:`sojourn.cli.Parser`) once it knows which flags were given.
3. **Cost** — each long entry point predicts what a request will take, an :class:`Estimate` (seconds, bytes,
   which inputs drive them), from its inputs alone; :func:`admit` refuses one above the limits (``--max-time`` /
   ``--max-memory``, else ``SOJOURN_MAX_TIME`` / ``SOJOURN_MAX_MEMORY``, else one hour and 80 % of the available
   memory) naming the inputs that drive it and how to raise the limit on purpose. An admitted estimate is what
   progress (:mod:`sojourn.core.runs.progress`) counts the time left from until the first step is measured.

Names: a library raises in its own field names (``horizon``); inside :func:`naming` (a command's flags, a config
section's key paths) :func:`term` and :func:`admit` speak the caller's terms (``--horizon``,
``restart.examples.example1.horizon``).

Also here, because every entry point reads them the same way: YAML that cannot be read two ways
(:func:`load_yaml`: duplicate keys and aliases that expand beyond :data:`YAML_MAX_NODES` are refused), derived
quantities checked where computed (:func:`derived`), and the watchdog that holds a command line's run to its
limits once it has started (:func:`watchdog`: a cost model that missed ends in one line, not in a hang).
"""
from __future__ import annotations

import argparse
import contextlib
import contextvars
import math
import os
import re
import sys
import threading
import time
from dataclasses import dataclass

#: the largest integer an input may take: what is stored (netCDF int64 attributes and variables)
INT_MAX = 2**63 - 1
#: the largest seed: numpy's SeedSequence takes any non-negative integer, the files store it as uint64
SEED_MAX = 2**64 - 1


def did_you_mean(word, choices, n: int = 1) -> str:
    """``"; did you mean 'x'?"`` (or ``'x' or 'y'`` for n > 1) when ``word`` is close to one of ``choices``
    (difflib ratio >= 0.6, case-insensitive), else ``""``. Append it to the message of an unknown name."""
    import difflib

    if not isinstance(word, str):
        return ""
    by_lower: dict[str, str] = {}
    for c in choices:
        by_lower.setdefault(str(c).lower(), str(c))
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(by_lower[c]) for c in close) + "?"


# -- names: the caller's terms ---------------------------------------------------------------------------------
_NAMES: contextvars.ContextVar = contextvars.ContextVar("sojourn_guard_names", default=({}, "api"))


@contextlib.contextmanager
def naming(names: dict, where: str | None = None):
    """Inside this block a field name ``f`` is spoken of as ``names[f]`` (a flag, a config key path); ``where``
    says how the limits are raised: ``"cli"`` (flags), ``"config"`` (the environment of the pipeline), ``"api"``
    (the environment, or :func:`set_limits`); default: the enclosing block's (outermost: ``"api"``)."""
    outer_names, outer_where = _NAMES.get()
    token = _NAMES.set(({**outer_names, **names}, where or outer_where))
    try:
        yield
    finally:
        _NAMES.reset(token)


def term(field: str) -> str:
    """``field`` in the caller's terms (:func:`naming`); ``a/b`` names each part."""
    names = _NAMES.get()[0]
    return "/".join(names.get(f, f) for f in str(field).split("/"))


def terms(message: str) -> str:
    """A library message with its field names replaced by the caller's terms (whole words, longest first)."""
    names = _NAMES.get()[0]
    if not names:
        return message
    pattern = r"(?<![\w.-])(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")(?![\w-])"
    return re.sub(pattern, lambda m: names[m.group(1)], message)


# -- 1. kinds ----------------------------------------------------------------------------------------------------
class Kind:
    """The kind of an input: what it must be (:attr:`what`), parsed from text (:meth:`parse`, argparse's ``type``)
    and checked as a value (:meth:`check`). ``family`` names what the fuzzer draws for it."""

    what = "a value"
    family = "text"

    def parse(self, text: str):
        return text

    def check(self, name: str, value):
        return value

    def __call__(self, text):
        """argparse's ``type=``: the checked value, or ArgumentTypeError (argparse prefixes the flag)."""
        try:
            return self.check(None, self.parse(text))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    def _refuse(self, name, value):
        shown = value if isinstance(value, str) else repr(value)
        head = f"{term(name)} must be" if name else "must be"
        raise ValueError(f"{head} {self.what}; got {shown!r}" if isinstance(value, str) else
                         f"{head} {self.what}; got {shown}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.what})"


def _number_text(text: str) -> str:
    return str(text).strip().replace("_", "")


class Int(Kind):
    """An integer in [lo, hi] (``hi`` default :data:`INT_MAX`: what is stored). Text may be written ``1e6`` or
    ``1_000_000``; a float value with an integer value is accepted unless ``strict``."""

    family = "int"

    def __init__(self, lo: int = 0, hi: int = INT_MAX, strict: bool = False):
        self.lo, self.hi, self.strict = int(lo), int(hi), strict
        top = "2**64 - 1" if self.hi == SEED_MAX else "2**63 - 1" if self.hi == INT_MAX else f"{self.hi}"
        self.what = f"an integer >= {self.lo}" if self.hi in (INT_MAX, SEED_MAX) else f"an integer in [{lo}, {hi}]"
        self._top = top

    def parse(self, text):
        s = _number_text(text)
        if re.fullmatch(r"[+-]?\d+", s):
            return int(s)
        if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+", s):  # 1e6: an integer written as a power of ten
            f = float(s)
            if math.isfinite(f) and f.is_integer():
                return int(f)
        self._refuse(None, text)

    def check(self, name, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__index__"):
            self._refuse(name, value)
        if isinstance(value, float):
            if self.strict or not (math.isfinite(value) and value.is_integer()):
                self._refuse(name, value)
            value = int(value)
        value = int(value)
        if value > self.hi:
            head = f"{term(name)} must be" if name else "must be"
            raise ValueError(f"{head} an integer <= {self._top} (what a result file stores); got {value}")
        if value < self.lo:
            self._refuse(name, value)
        return value


#: a seed: an integer in [0, 2**64 − 1]
SEED = Int(0, SEED_MAX)


class Real(Kind):
    """A finite real number in a range: ``lo``/``hi`` (None: unbounded), open or closed at each end."""

    family = "real"

    def __init__(self, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
                 hi_open: bool = False):
        self.lo, self.hi, self.lo_open, self.hi_open = lo, hi, lo_open, hi_open
        left = "(-inf" if lo is None else f"{'(' if lo_open else '['}{lo:g}"
        right = "inf)" if hi is None else f"{hi:g}{')' if hi_open else ']'}"
        self.interval = f"{left}, {right}"
        self.what = f"a finite number in {self.interval}"

    def parse(self, text):
        try:
            return float(_number_text(text))
        except ValueError:
            self._refuse(None, text)

    def check(self, name, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            try:
                value = float(value)  # numpy scalars
            except (TypeError, ValueError):
                self._refuse(name, value)
        v = float(value)
        if not math.isfinite(v):
            self._refuse(name, value)
        ok = True
        if self.lo is not None:
            ok = v > self.lo if self.lo_open else v >= self.lo
        if ok and self.hi is not None:
            ok = v < self.hi if self.hi_open else v <= self.hi
        if not ok:
            head = f"{term(name)} must be" if name else "must be"
            raise ValueError(f"{head} in {self.interval}; got {value!r}")
        return v


#: common ranges
POSITIVE = Real(0.0, None, lo_open=True)
NONNEGATIVE = Real(0.0, None)
PROBABILITY_OPEN = Real(0.0, 1.0, lo_open=True, hi_open=True)


class Text(Kind):
    """A non-empty string of at most ``max_length`` characters without control characters; its meaning is
    checked by the command that reads it (``family`` says what it is: law, output, path, rate, time, …)."""

    def __init__(self, family: str = "text", what: str = "a non-empty text", max_length: int = 10_000,
                 empty: bool = False):
        self.family, self.what, self.max_length, self.empty = family, what, max_length, empty

    def check(self, name, value):
        if not isinstance(value, str) or (not self.empty and not value.strip()) or len(value) > self.max_length \
                or any(ord(c) < 32 and c not in "\t" for c in value):
            self._refuse(name, value)
        return value


class Choice(Kind):
    """One of a few names (with "did you mean …")."""

    family = "choice"

    def __init__(self, *choices: str):
        self.choices = tuple(choices)
        self.what = "one of " + ", ".join(self.choices)

    def check(self, name, value):
        if value in self.choices:
            return value
        head = f"{term(name)} must be" if name else "must be"
        raise ValueError(f"{head} {self.what}; got {value!r}{did_you_mean(value, self.choices)}")


def kind_of(action) -> Kind | None:
    """The kind of an argparse action (its ``type``), or None."""
    return action.type if isinstance(action.type, Kind) else None


# -- 2. relations ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Relation:
    kind: str  # "requires" | "excludes"
    flag: str
    others: tuple
    why: str = ""


def requires(parser, flag: str, *needs: str, why: str = "") -> None:
    """``flag`` means something only with one of ``needs``: given alone it is refused, naming both."""
    parser.__dict__.setdefault("sojourn_relations", []).append(Relation("requires", flag, tuple(needs), why))


def excludes(parser, flag: str, *others: str, why: str = "") -> None:
    """``flag`` and any of ``others`` are refused together."""
    parser.__dict__.setdefault("sojourn_relations", []).append(Relation("excludes", flag, tuple(others), why))


def relations(parser) -> list:
    return list(parser.__dict__.get("sojourn_relations", ()))


def check_relations(parser, given: set) -> None:
    """ValueError (one line) for the first relation of ``parser`` that the ``given`` flags (their first option
    strings) break."""
    for r in relations(parser):
        if r.flag not in given:
            continue
        why = f" ({r.why})" if r.why else ""
        if r.kind == "requires" and not any(o in given for o in r.others):
            raise ValueError(f"{r.flag} applies only with {' or '.join(r.others)}; give {' or '.join(r.others)}, "
                             f"or leave {r.flag} out{why}")
        if r.kind == "excludes":
            both = [o for o in r.others if o in given]
            if both:
                raise ValueError(f"{r.flag} and {both[0]} exclude each other: give one of them{why}")


# -- 3. cost -----------------------------------------------------------------------------------------------------
MEMORY_ENV = "SOJOURN_MAX_MEMORY"
TIME_ENV = "SOJOURN_MAX_TIME"
DEFAULT_MAX_SECONDS = 3600.0
#: share of the available memory a request may plan to use by default
MEMORY_SHARE = 0.8

_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "m": 2**20, "mb": 2**20, "mib": 2**20,
          "g": 2**30, "gb": 2**30, "gib": 2**30, "t": 2**40, "tb": 2**40, "tib": 2**40, "p": 2**50, "pb": 2**50}
_SECONDS = {"": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
_LIMITS: dict = {"memory": None, "seconds": None}


def parse_size(field: str, text) -> float:
    """``16G``, ``500MB``, ``2.5e9`` (bytes), or ``none`` (no limit: inf) -> bytes; ValueError naming ``field``."""
    return _parse_amount(field, text, _UNITS, "a size such as 16G, 500MB or 2e9 (bytes), or none")


def parse_duration(field: str, text) -> float:
    """``90``, ``90s``, ``30m``, ``2h``, ``1d`` or ``none`` (inf) -> seconds; ValueError naming ``field``."""
    return _parse_amount(field, text, _SECONDS, "a duration such as 90s, 30m or 2h, or none")


def _parse_amount(field, text, units, form) -> float:
    s = str(text).strip().lower()
    if s in ("none", "inf", "unlimited"):
        return math.inf
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)", s)
    if not m or m.group(2) not in units or not 0 < float(m.group(1)) * units[m.group(2)] < math.inf:
        raise ValueError(f"{field} must be {form}; got {text!r}")
    return float(m.group(1)) * units[m.group(2)]


class Amount(Kind):
    """A size or a duration with a unit (``--max-memory``, ``--max-time``)."""

    def __init__(self, family: str):
        self.family = family
        self.what = ("a size such as 16G, 500MB or 2e9 (bytes), or none" if family == "size" else
                     "a duration such as 90s, 30m or 2h, or none")

    def check(self, name, value):
        (parse_size if self.family == "size" else parse_duration)(term(name) if name else "value", value)
        return value

    def __call__(self, text):
        try:
            self.check(None, text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {self.what}; got {text!r}") from None
        return text


def available_memory() -> float:
    """Bytes of memory available now (MemAvailable of /proc/meminfo, else the free physical pages)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return float("inf")


def set_limits(memory=None, seconds=None) -> None:
    """The limits of this process's requests (from ``--max-memory`` / ``--max-time``); None: env or default."""
    _LIMITS.update(memory=memory, seconds=seconds)


def limits() -> tuple[float, str, float, str]:
    """(bytes, where from, seconds, where from): the flag, else the environment variable, else the default."""
    if _LIMITS["memory"] is not None:
        mem, mem_src = _LIMITS["memory"], "--max-memory"
    elif os.environ.get(MEMORY_ENV):
        mem, mem_src = parse_size(MEMORY_ENV, os.environ[MEMORY_ENV]), MEMORY_ENV
    else:
        mem, mem_src = MEMORY_SHARE * available_memory(), f"{100 * MEMORY_SHARE:g} % of the available memory"
    if _LIMITS["seconds"] is not None:
        sec, sec_src = _LIMITS["seconds"], "--max-time"
    elif os.environ.get(TIME_ENV):
        sec, sec_src = parse_duration(TIME_ENV, os.environ[TIME_ENV]), TIME_ENV
    else:
        sec, sec_src = DEFAULT_MAX_SECONDS, "the default"
    return mem, mem_src, sec, sec_src


def format_bytes(n: float) -> str:
    if not math.isfinite(n):
        return "an unbounded amount"
    for unit, size in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20),
                       ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} bytes"


def format_seconds(s: float) -> str:
    if not math.isfinite(s):
        return "forever"
    if s >= 86400 * 365:
        return f"{s / (86400 * 365):.3g} years"
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"


@dataclass(frozen=True)
class Estimate:
    """What a request is predicted to take: ``seconds`` (wall time on one core of this machine's class),
    ``memory`` (bytes at its peak), the inputs that drive the cost (``drivers``: field names, spoken in the
    caller's terms) and ``what`` it counts (one phrase: "4e9 events over 10 replications, ~1e-7 s each")."""

    seconds: float = 0.0
    memory: float = 0.0
    drivers: str = ""
    what: str = ""

    def __add__(self, other: Estimate) -> Estimate:
        drivers = "/".join(dict.fromkeys(d for e in (self, other) for d in e.drivers.split("/") if d))
        return Estimate(self.seconds + other.seconds, max(self.memory, other.memory), drivers,
                        "; ".join(w for w in (self.what, other.what) if w))


_ADMITTED: contextvars.ContextVar = contextvars.ContextVar("sojourn_guard_admitted", default=None)
_LAST: dict = {"admitted": None}
#: called with each admitted estimate (``hook(estimate, force=...)``): sojourn.core.runs.progress announces it
ON_ADMIT: list = []


#: a part of a request (a model's tables, a grid: ``admit(..., record=False)``) predicted to take less is never
#: refused for its time, whatever the limit (no model tells that much); the request's own estimate always is checked
MIN_SECONDS = 0.1

#: how a limit is raised on purpose, by where the request comes from (:func:`naming`)
_HOW = {"cli": "{flag} (or {env})", "config": "{env} in the environment of the pipeline run",
        "api": "{env} in the environment (or sojourn.core.checks.guard.set_limits)"}


def admit(estimate: Estimate, *, memory_drivers: str | None = None, memory_what: str | None = None,
          announce: bool = False, record: bool = True) -> Estimate:
    """Refuse ``estimate`` if it exceeds the limits (:func:`limits`), before anything is allocated: one
    ValueError line starting with its drivers in the caller's terms, the estimate and what it counts, the limit
    and where it comes from, and how to raise it on purpose. ``memory_drivers`` names other drivers for the
    memory part. An admitted estimate is kept for progress (:func:`admitted`), and a command line announces it on
    stderr when it is longer than progress's delay, or with ``announce`` (:func:`sojourn.core.runs.progress.announce`);
    ``record=False`` checks a part (an array about to be allocated) without that. Returns it."""
    _, where = _NAMES.get()
    mem_limit, mem_src, sec_limit, sec_src = limits()
    seconds, memory = float(estimate.seconds), float(estimate.memory)
    if math.isnan(seconds) or math.isnan(memory):  # a cost model that cannot tell: its inputs are out of range
        seconds = memory = math.inf
    if seconds < MIN_SECONDS and not record:  # a part below what a time model tells: not refused for its time
        seconds = 0.0
    if memory > mem_limit:
        flags = term(memory_drivers or estimate.drivers)
        how = _HOW[where].format(flag="--max-memory SIZE", env=f"{MEMORY_ENV}=SIZE")
        raise ValueError(f"{flags}: this request needs about {format_bytes(memory)} of memory "
                         f"({memory_what or estimate.what}), "
                         f"above the limit {format_bytes(mem_limit)} ({mem_src}); lower {flags}, or raise the limit "
                         f"on purpose with {how}")
    if seconds > sec_limit:
        flags = term(estimate.drivers)
        how = _HOW[where].format(flag="--max-time DURATION", env=f"{TIME_ENV}=DURATION")
        raise ValueError(f"{flags}: this request is predicted to take about {format_seconds(seconds)} "
                         f"({estimate.what}), above the limit {format_seconds(sec_limit)} ({sec_src}); lower {flags}, "
                         f"or raise the limit on purpose with {how}")
    if not record:
        return estimate
    _ADMITTED.set(estimate)
    _LAST["admitted"] = estimate  # for the threads that watch a run (they do not see this context)
    if _LAST.get("first") is None:  # the request's own (later ones are its parts: a pair's simulation …)
        _LAST["first"] = estimate
    for hook in ON_ADMIT:  # progress announces it (sojourn.core.runs.progress registers itself)
        hook(estimate, force=announce)
    return estimate


def admit_parts(parts, announce: bool = False) -> Estimate:
    """:func:`admit` of a request made of several parts that run one after the other and whose arrays coexist
    (a chain, a tail, a grid): their seconds and bytes add up; a refusal names the drivers of the part that costs
    the most of what is refused, and says what every part counts."""
    parts = [p for p in parts if p is not None]
    seconds = sum(p.seconds for p in parts)
    memory = sum(p.memory for p in parts)
    by_time = max(parts, key=lambda p: p.seconds)
    by_memory = max(parts, key=lambda p: p.memory)

    def what(main):
        others = len([p for p in parts if p is not main and (p.seconds or p.memory)])
        return main.what + (f", and {others} other part{'s' * (others > 1)}" if others else "")

    return admit(Estimate(seconds, memory, by_time.drivers, what(by_time)), memory_drivers=by_memory.drivers,
                 memory_what=what(by_memory), announce=announce)


def admitted() -> Estimate | None:
    """The last estimate :func:`admit` accepted in this context (progress counts the time left from it)."""
    return _ADMITTED.get()


def check_cost(
    flags: str, *, memory: float = 0.0, seconds: float = 0.0, what: str = "", cli: bool | None = None
) -> None:
    """:func:`admit` of an estimate given by its parts (``flags``: the drivers, already in the user's terms;
    ``cli=False``: config keys)."""
    with naming({}, None if cli is None else "cli" if cli else "config"):
        admit(Estimate(seconds, memory, flags, what), record=False)


def check_grid(t_max: float, dt: float, bytes_per_point: float, what: str, flags: str = "t_max/dt",
               cli: bool | None = None) -> int:
    """The histogram/CDF grid t_max/dt + 1 points checked for memory before any array of it exists:
    ``bytes_per_point`` over every array the request keeps of that length (``what`` says which); ``flags``
    names t_max and dt (field names, spoken in the caller's terms). Returns the points."""
    points = float(t_max) / float(dt) + 1.0
    check_cost(term(flags), memory=points * bytes_per_point, cli=cli,
               what=f"{points:.3g} grid points of t_max {float(t_max):g} / dt {float(dt):g}, {what}")
    return round(points)


def derived(name: str, compute, what: str, allowed: str = ""):
    """A derived quantity (a law's mean, 1/rate², a product of rates) computed where it is needed and checked:
    finite, else one ValueError naming the input ``name`` (in the caller's terms) and ``what`` overflowed;
    ``allowed`` says what would fit. ``compute`` is a callable (its OverflowError/ZeroDivisionError are caught)."""
    try:
        with _np_errors():
            value = compute()
    except (OverflowError, ZeroDivisionError, FloatingPointError):
        value = math.inf
    try:
        ok = math.isfinite(float(value))
    except (TypeError, ValueError):
        ok = all(math.isfinite(float(v)) for v in value)
    if not ok:
        raise ValueError(f"{term(name)}: {what} is not a finite double"
                         + (f"; {allowed}" if allowed else ""))
    return value


@contextlib.contextmanager
def _np_errors():
    np = sys.modules.get("numpy")
    if np is None:
        yield
        return
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        yield


# -- YAML that cannot be read two ways ---------------------------------------------------------------------------
#: the most values a YAML document may hold once its aliases are expanded (a model file or a config holds
#: hundreds; a 9-level "billion laughs" bomb holds 10**9)
YAML_MAX_NODES = 200_000


def load_yaml(text: str, what: str):
    """``text`` read as YAML (safe types only), refusing in one ValueError line starting with ``what`` (the file):
    a key given twice in one mapping (its line and both values' lines: the later one would silently win), and
    aliases that expand the document beyond :data:`YAML_MAX_NODES` values (an alias bomb)."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    continue  # SafeLoader says what is wrong with it
                if key in seen:
                    raise ValueError(f"{what}: key {key!r} is given twice in one mapping (lines {seen[key] + 1} and "
                                     f"{key_node.start_mark.line + 1}); give it once (YAML would keep only the last)")
                seen[key] = key_node.start_mark.line
            return super().construct_mapping(node, deep=deep)

    try:
        loader = Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            size = _expanded_size(node)
            if size > YAML_MAX_NODES:
                raise ValueError(
                    f"{what}: its aliases (*name) expand it to "
                    f"{'endless values (an alias inside itself)' if size == math.inf else f'{size:.3g} values'}"
                    f", more than the {YAML_MAX_NODES:,} allowed; write the values out, or reuse fewer"
                )
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"{what}: not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise ValueError(f"{what}: nested too deeply to read") from None


def _expanded_size(root) -> float:
    """The number of values of the YAML node graph ``root`` once every alias is expanded (an alias points at a
    node that is counted again at each use), each node visited once; inf for a node that contains itself."""
    import yaml

    sizes: dict = {}
    visiting: set = set()
    stack = [(root, False)]
    while stack:
        node, ready = stack.pop()
        key = id(node)
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = 1
            continue
        children = [v for pair in node.value for v in pair] if isinstance(node, yaml.MappingNode) else list(node.value)
        if ready:
            visiting.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > YAML_MAX_NODES:
                return sizes[key]
            continue
        if key in sizes:
            continue
        if key in visiting:
            return math.inf  # a node that contains itself: endless once expanded
        visiting.add(key)
        stack.append((node, True))
        for c in children:
            if id(c) in visiting:
                return math.inf
            if id(c) not in sizes:
                stack.append((c, False))
    return sizes[id(root)]


def empty_overrides(override, defaults, path: str = "") -> list[str]:
    """The key paths where ``override`` (a config given by the user) sets an empty mapping over a non-empty
    mapping of ``defaults``: there the merge keeps every default (``restart.examples: {}`` runs all the default
    examples), which is refused (docs/pipeline.md, "Overrides")."""
    out = []
    if not isinstance(override, dict) or not isinstance(defaults, dict):
        return out
    for k, v in override.items():
        where = f"{path}.{k}" if path else str(k)
        d = defaults.get(k)
        if isinstance(v, dict) and not v and isinstance(d, dict) and d:
            out.append(where)
        elif isinstance(v, dict):
            out += empty_overrides(v, d, where)
    return out


# -- the watchdog: a command line held to its limits once it runs ------------------------------------------------
#: exit status of a command stopped by the watchdog (a request that passed the cost check and then exceeded a limit)
WATCHDOG_STATUS = 3


def _rss() -> float:
    """This process's resident memory in bytes (Linux /proc; else the peak, which only grows)."""
    try:
        with open("/proc/self/statm") as f:
            return float(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


#: the watchdog's grace over a time limit (the limit is on the predicted compute; imports, start-up and a loaded
#: machine come on top): it stops a run past GRACE_FACTOR x the limit + GRACE_SECONDS
GRACE_FACTOR, GRACE_SECONDS = 1.5, 5.0


@contextlib.contextmanager
def watchdog(command: str, interval: float = 0.25):
    """Hold the run of ``command`` to the limits (:func:`limits`) set from the flags or the environment (not the
    defaults: a request under them was admitted on a prediction, and the machine's load may slow it): past
    ``--max-time`` / ``SOJOURN_MAX_TIME`` of wall time (with :data:`GRACE_FACTOR` and :data:`GRACE_SECONDS`), or
    with this process's resident memory grown past ``--max-memory`` / ``SOJOURN_MAX_MEMORY``, print one line and
    end the process with :data:`WATCHDOG_STATUS`. For the console script only (it ends the process); a cost model
    that missed then ends in one line, not in a hang."""
    mem, mem_src, sec, sec_src = limits()
    watch_mem = mem_src != f"{100 * MEMORY_SHARE:g} % of the available memory" and math.isfinite(mem)
    watch_sec = sec_src != "the default" and math.isfinite(sec)
    if not (watch_mem or watch_sec):
        yield
        return
    stop = threading.Event()
    t0, rss0 = time.monotonic(), _rss()
    _LAST["admitted"] = _LAST["first"] = None

    def run():
        while not stop.wait(interval):
            elapsed = time.monotonic() - t0
            what = None
            if watch_sec and elapsed > GRACE_FACTOR * sec + GRACE_SECONDS:
                what = f"ran past the time limit {format_seconds(sec)} ({sec_src})"
            elif watch_mem and _rss() - rss0 > mem:
                what = (f"grew past the memory limit {format_bytes(mem)} ({mem_src}): {format_bytes(_rss() - rss0)} "
                        "more than at its start")
            if what:
                est = _LAST["first"]
                pred = (f"; it was predicted to take {format_seconds(est.seconds)} and "
                        f"{format_bytes(est.memory)} ({est.what})" if est is not None else "")
                sys.stderr.write(f"\nsojourn {command}: error: stopped: the run {what} after "
                                 f"{format_seconds(elapsed)}{pred}; nothing was written\n")
                sys.stderr.flush()
                os._exit(WATCHDOG_STATUS)

    thread = threading.Thread(target=run, daemon=True, name="sojourn-watchdog")
    thread.start()
    try:
        yield
    finally:
        stop.set()
