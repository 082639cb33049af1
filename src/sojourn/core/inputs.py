"""What users type, checked in their own terms: "did you mean …" suggestions for misspelt names, a
choice among names, and the check that a command's output file can be written (run before any compute).

Every error is a ``ValueError`` whose message starts with the flag or key the user wrote.
"""
from __future__ import annotations

import difflib
import os
import re
import tempfile
from pathlib import Path


def did_you_mean(word, choices, n: int = 1) -> str:
    """``"; did you mean 'x'?"`` (or ``'x' or 'y'`` for n > 1) when ``word`` is close to one of ``choices``
    (difflib ratio >= 0.6, case-insensitive), else ``""``. Append it to the message of an unknown name."""
    if not isinstance(word, str):
        return ""
    by_lower: dict[str, str] = {}
    for c in choices:
        by_lower.setdefault(str(c).lower(), str(c))
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(by_lower[c]) for c in close) + "?"


def in_flag_terms(message: str, flags: dict) -> str:
    """A library's message with its field names (``t_max``, ``warmup_time`` …) replaced by the flags the user
    typed (``flags``: field -> flag, e.g. ``{"t_max": "--t-max"}``); whole words only, longest names first."""
    pattern = r"(?<![\w.-])(" + "|".join(sorted(map(re.escape, flags), key=len, reverse=True)) + r")(?![\w-])"
    return re.sub(pattern, lambda m: flags[m.group(1)], message)


def choice(field: str, value, choices) -> str:
    """``value`` if it is one of ``choices``, else ValueError naming ``field``, the allowed names and the
    closest one."""
    choices = list(choices)
    if value in choices:
        return value
    raise ValueError(f"{field} must be one of {', '.join(map(str, choices))}; got {value!r}"
                     f"{did_you_mean(value, choices)}")


def check_output(path, flag: str = "--output", mkdir: bool = False, sidecar: bool = True) -> Path:
    """Make sure a result file can be written at ``path`` before anything is computed.

    The folder must exist (with ``mkdir=True`` missing folders are created, never silently otherwise),
    be a folder, and accept a new file: a probe file is created next to the target and removed at once,
    which is the operation the atomic writer (``core.io.write_netcdf``: temporary file, then rename)
    performs. ``path`` itself must be a new or a regular file — never a folder, a device, a FIFO, a socket or a
    link to one (:func:`sojourn.core.integrity.not_regular`) — and so must its checksum file ``<path>.sha256``
    (``sidecar``: False for an output written without one). Raises ValueError starting with ``flag``; the file
    system is left as it was (apart from folders asked for with ``mkdir``)."""
    from .integrity import not_regular
    from .integrity import sidecar as checksum_file

    text = os.fspath(path)
    if not text.strip():
        raise ValueError(f"{flag} must be a file path; got {text!r}")
    p = Path(text)
    if p.is_dir():
        raise ValueError(f"{flag} {text}: is a folder; give a file name such as {p / 'result.nc'}")
    for target in (p, checksum_file(p)) if sidecar else (p,):
        what = not_regular(target)
        if what is not None:
            whose = "" if target == p else f"its checksum file {target} "
            raise ValueError(f"{flag} {text}: {whose}is {what}, not a regular file; sojourn never replaces one: "
                             "give the name of a new or a regular file")
    parent = p.parent
    missing = [d for d in (parent, *parent.parents) if not d.exists()]
    if missing:
        top = missing[-1]
        if not top.parent.is_dir():
            raise ValueError(f"{flag} {text}: {top.parent} is not a folder")
        if not mkdir:
            raise ValueError(f"{flag} {text}: folder {parent} does not exist; create it or add --mkdir")
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"{flag} {text}: cannot create folder {parent}: {exc.strerror or exc}") from None
    elif not parent.is_dir():
        raise ValueError(f"{flag} {text}: {_first_non_folder(parent)} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".probe", dir=parent)
    except OSError as exc:
        raise ValueError(f"{flag} {text}: cannot write in {parent}: {exc.strerror or exc}") from None
    os.close(fd)
    os.unlink(probe)
    return p


def _first_non_folder(path: Path) -> Path:
    for d in reversed((path, *path.parents)):
        if d.exists() and not d.is_dir():
            return d
    return path


# -- predicted cost: memory and time checked before anything is allocated ----------------------------------
#
# One mechanism for every command: each entry point predicts what a request will take (bytes of the arrays it
# allocates, seconds of its main loop) from the flags alone, and :func:`check_cost` refuses, in one line naming
# the flags that drive the cost, a request above the limits. The limits are the user's to raise on purpose:
# ``--max-memory SIZE`` / ``--max-time DURATION`` on the command line (:func:`sojourn.core.flags.add_limits`) or
# the environment variables ``SOJOURN_MAX_MEMORY`` / ``SOJOURN_MAX_TIME`` (``none`` lifts a limit). Defaults:
# 80 % of the memory available when the command starts, and one hour.

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
    import math

    s = str(text).strip().lower()
    if s in ("none", "inf", "unlimited"):
        return math.inf
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)", s)
    if not m or m.group(2) not in units or not float(m.group(1)) > 0:
        raise ValueError(f"{field} must be {form}; got {text!r}")
    return float(m.group(1)) * units[m.group(2)]


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
    for unit, size in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.0f} bytes"


def format_seconds(s: float) -> str:
    if s >= 86400 * 365:
        return f"{s / (86400 * 365):.3g} years"
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if s >= size:
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"


def check_cost(flags: str, *, memory: float = 0.0, seconds: float = 0.0, what: str = "", cli: bool = True) -> None:
    """Refuse a request whose predicted ``memory`` (bytes) or ``seconds`` exceed the limits (:func:`limits`),
    before anything is allocated: one ValueError line starting with ``flags`` (what drives the cost, in the
    user's terms: flags, or config keys with ``cli=False``), the estimate and ``what`` it counts, the limit, and
    how to raise it on purpose (the flag and the environment variable; a config run: the environment variable)."""
    mem_limit, mem_src, sec_limit, sec_src = limits()
    if memory > mem_limit:
        how = f"--max-memory SIZE (or {MEMORY_ENV}=SIZE)" if cli else f"{MEMORY_ENV}=SIZE in the environment"
        raise ValueError(f"{flags}: this request needs about {format_bytes(memory)} of memory ({what}), above the "
                         f"limit {format_bytes(mem_limit)} ({mem_src}); lower {flags}, or raise the limit on purpose "
                         f"with {how}")
    if seconds > sec_limit:
        how = f"--max-time DURATION (or {TIME_ENV}=DURATION)" if cli else f"{TIME_ENV}=DURATION in the environment"
        raise ValueError(f"{flags}: this request is predicted to take about {format_seconds(seconds)} ({what}), "
                         f"above the limit {format_seconds(sec_limit)} ({sec_src}); lower {flags}, or raise the limit "
                         f"on purpose with {how}")


def check_grid(t_max: float, dt: float, bytes_per_point: float, what: str, flags: str = "--t-max/--dt",
               cli: bool = True) -> int:
    """The histogram/CDF grid t_max/dt + 1 points (already validated) checked for memory before any array of
    it exists: ``bytes_per_point`` over every array the request keeps of that length (``what`` says which);
    ``flags`` names t_max and dt as the user wrote them (config keys with ``cli=False``). Returns the points."""
    points = float(t_max) / float(dt) + 1.0
    check_cost(flags, memory=points * bytes_per_point, cli=cli,
               what=f"{points:.3g} grid points of t_max {float(t_max):g} / dt {float(dt):g}, {what}")
    return int(round(points))
