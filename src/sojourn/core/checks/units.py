"""Times and rates as people write them: ``72ms``, ``1.2 ms``, ``250µs``, ``9000/s``, ``9/ms``, ``9000 per s``.

Everything is converted to SI (seconds, per second) and remembers the unit it was written in, so that an
answer can be printed in the user's own units. Accepted time units: s (sec, second, seconds), ms (msec,
millisecond[s]), us / µs / μs (microsecond[s]), ns (nanosecond[s]); a rate is a number per time unit
(``/s``, ``/ms``, ``/us``, ``/µs``, ``/ns``, ``per s``, ``1/s`` …) or in Hz (= per second). A bare number is
refused for text (``72`` could be seconds or milliseconds); in the Python API a number (not a string) is
taken in SI units (seconds, per second). Invalid input raises ``ValueError`` naming the field.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

#: seconds per unit, by the canonical name used in output
SECONDS = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}
#: every spelling accepted -> canonical name (lower-cased lookups; the micro sign and Greek mu both mean µ)
_ALIASES = {
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "ms": "ms", "msec": "ms", "millisecond": "ms", "milliseconds": "ms",
    "us": "µs", "µs": "µs", "μs": "µs", "usec": "µs", "microsecond": "µs", "microseconds": "µs",
    "ns": "ns", "nsec": "ns", "nanosecond": "ns", "nanoseconds": "ns",
}
_NUMBER = r"[+-]?(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_TIME = re.compile(rf"^\s*(?P<num>{_NUMBER})\s*(?P<unit>[^\s\d/][^\s/]*)?\s*$")
_RATE = re.compile(rf"^\s*(?P<num>{_NUMBER})\s*(?:(?:/|per\s+)\s*(?P<unit>[^\s\d/][^\s/]*)|(?P<hz>hz))?\s*$",
                   re.IGNORECASE)
TIME_UNITS_TEXT = "s, ms, us (µs), ns"


@dataclass(frozen=True)
class Quantity:
    """A value in SI units (seconds, or per second) and the unit it was written in (``ms``, or ``/ms``)."""

    si: float
    unit: str
    text: str

    def __float__(self) -> float:
        return self.si


def time_unit(name: str, field: str = "unit") -> str:
    """The canonical name (``s``, ``ms``, ``µs``, ``ns``) of a time unit spelling; ValueError naming ``field``."""
    key = str(name).strip()
    canon = _ALIASES.get(key) or _ALIASES.get(key.lower())
    if canon is None:
        from .inputs import did_you_mean

        raise ValueError(f"{field}: unknown time unit {name!r}; use one of {TIME_UNITS_TEXT}"
                         f"{did_you_mean(key, list(_ALIASES))}")
    return canon


def _finite(field: str, text: str, num: str) -> float:
    v = float(num)
    if not math.isfinite(v):
        raise ValueError(f"{field} must be a finite number with a unit; got {text!r}")
    return v


def _time_text(value: str, field: str) -> tuple[float, str]:
    """(seconds, unit) of a duration written as text."""
    m = _TIME.match(value)
    if not m:
        raise ValueError(f"{field} must be a number with a time unit ({TIME_UNITS_TEXT}), e.g. '72ms'; got {value!r}")
    if m.group("unit") is None:
        raise ValueError(f"{field} needs a time unit ({TIME_UNITS_TEXT}), e.g. '{m.group('num')}ms'; got {value!r}")
    unit = time_unit(m.group("unit"), field)
    return _finite(field, value, m.group("num")) * SECONDS[unit], unit


def _rate_text(value: str, field: str) -> tuple[float, str]:
    """(per second, /unit) of a rate written as text."""
    m = _RATE.match(value)
    if not m:
        raise ValueError(f"{field} must be a number per time unit, e.g. '9000/s' or '9/ms'; got {value!r}")
    if m.group("hz"):
        unit = "s"
    elif m.group("unit") is None:
        raise ValueError(f"{field} needs a unit, e.g. '{m.group('num')}/s' or '{m.group('num')}/ms'; got {value!r}")
    else:
        unit = time_unit(m.group("unit"), field)
    return _finite(field, value, m.group("num")) / SECONDS[unit], "/" + unit


#: what a time and a rate are: how an error names them, the prefix of their units ("ms", "/ms"), how a number of SI
#: units is written back, how text is read
_KINDS = {
    "time": ("a duration such as '72ms' or a number of seconds", "", " s", _time_text),
    "rate": ("a rate such as '9000/s' or a number per second", "/", "/s", _rate_text),
}


def _parse(kind: str, value, field: str, allow_zero: bool) -> Quantity:
    what, prefix, si_text, from_text = _KINDS[kind]
    if isinstance(value, Quantity):  # one of its own kind passes as its SI value, another as its text (refused)
        own = value.unit.startswith(prefix) and value.unit[len(prefix):] in SECONDS
        value = value.si if own else value.text
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        si, unit, text = float(value), prefix + "s", f"{value!r}{si_text}"
    elif isinstance(value, str):
        si, unit = from_text(value, field)
        text = value.strip()
    else:
        raise ValueError(f"{field} must be {what}; got {value!r}")
    if not math.isfinite(si) or si < 0 or (si == 0 and not allow_zero):
        raise ValueError(f"{field} must be {'>= 0' if allow_zero else '> 0'} (and finite); got {value!r}")
    return Quantity(si, unit, text)


def parse_time(value, field: str = "time", *, allow_zero: bool = False) -> Quantity:
    """A duration: text with a unit (``72ms``, ``0.1 s``, ``250µs``) or a number of seconds (API only).

    Must be > 0 (≥ 0 with ``allow_zero``). ValueError naming ``field``."""
    return _parse("time", value, field, allow_zero)


def parse_rate(value, field: str = "rate") -> Quantity:
    """A rate: text per time unit (``9000/s``, ``9/ms``, ``9000 per s``, ``9000 Hz``) or a number per second
    (API only). Must be > 0. ValueError naming ``field``."""
    return _parse("rate", value, field, False)


def in_unit(seconds: float, unit: str) -> float:
    """``seconds`` expressed in ``unit`` (a time unit name)."""
    return float(seconds) / SECONDS[time_unit(unit)]


def readable_unit(seconds: float) -> str:
    """The unit in which ``seconds`` reads with 1 to 3 digits before the point (s at most)."""
    s = abs(float(seconds))
    for unit in ("ns", "µs", "ms"):
        if s < 1000 * SECONDS[unit]:
            return unit
    return "s"


def format_time(seconds: float, unit: str | None = None, digits: int = 4) -> str:
    """``seconds`` as text in ``unit`` (default: :func:`readable_unit`) with ``digits`` significant digits:
    ``format_time(0.0713, 'ms') == '71.3 ms'``. Infinite: ``'inf ms'``; NaN: ``'n/a'``."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "n/a"
    unit = time_unit(unit) if unit is not None else readable_unit(seconds)
    v = in_unit(seconds, unit)
    return f"{v:.{digits}g} {unit}" if math.isfinite(v) else f"{'-' if v < 0 else ''}inf {unit}"
