"""What users type, checked in their own terms: "did you mean …" suggestions for misspelt names, a
choice among names, and the check that a command's output file can be written (run before any compute).

Every error is a ``ValueError`` whose message starts with the flag or key the user wrote.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

# predicted cost: the one mechanism is sojourn.core.checks.guard (check 3); its names are kept here for the callers
from .guard import (  # noqa: F401
    DEFAULT_MAX_SECONDS,
    MEMORY_ENV,
    MEMORY_SHARE,
    TIME_ENV,
    available_memory,
    check_cost,
    check_grid,
    did_you_mean,
    format_bytes,
    format_seconds,
    limits,
    parse_duration,
    parse_size,
    set_limits,
)


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
    """:func:`_check_output`; a path the file system refuses outright (a name too long, a NUL) is said in one line
    naming ``flag`` (issue 32: ``OSError: File name too long`` ended such a command with status 1)."""
    try:
        return _check_output(path, flag, mkdir, sidecar)
    except OSError as exc:
        raise ValueError(f"{flag} {str(path)[:200]}: {exc.strerror or exc}") from None


def _check_output(path, flag: str = "--output", mkdir: bool = False, sidecar: bool = True) -> Path:
    """Make sure a result file can be written at ``path`` before anything is computed.

    The folder must exist (with ``mkdir=True`` missing folders are created, never silently otherwise),
    be a folder, and accept a new file: a probe file is created next to the target and removed at once,
    which is the operation the atomic writer (``core.files.io.write_netcdf``: temporary file, then rename)
    performs. ``path`` itself must be a new or a regular file — never a folder, a device, a FIFO, a socket or a
    link to one (:func:`sojourn.core.files.integrity.not_regular`) — and so must its checksum file ``<path>.sha256``
    (``sidecar``: False for an output written without one). Raises ValueError starting with ``flag``; the file
    system is left as it was (apart from folders asked for with ``mkdir``)."""
    from ..files.integrity import not_regular
    from ..files.integrity import sidecar as checksum_file

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

