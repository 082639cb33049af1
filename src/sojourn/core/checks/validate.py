"""Validators for specs and arguments: each returns the clean value or raises ValueError naming the
field and the allowed range (the one set every study and every entry point uses)."""
from __future__ import annotations

import math
from numbers import Integral, Real


def _number(field: str, value, allowed: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{field} must be a real number in {allowed}; got {value!r}")
    return float(value)


def finite_real(field: str, value) -> float:
    """A finite real number."""
    v = _number(field, value, "(-inf, inf)")
    if not math.isfinite(v):
        raise ValueError(f"{field} must be a finite real number; got {value!r}")
    return v


def positive_finite(field: str, value) -> float:
    """A finite number > 0."""
    v = _number(field, value, "(0, inf)")
    if not math.isfinite(v) or v <= 0.0:
        raise ValueError(f"{field} must be in (0, inf); got {value!r}")
    return v


def nonnegative_finite(field: str, value) -> float:
    """A finite number >= 0."""
    v = _number(field, value, "[0, inf)")
    if not math.isfinite(v) or v < 0.0:
        raise ValueError(f"{field} must be in [0, inf); got {value!r}")
    return v


def integer_at_least(field: str, value, minimum: int, allow_float: bool = True) -> int:
    """An integer >= ``minimum``; a float with an integer value is accepted unless ``allow_float=False``
    (counts and seeds of a run, where 2.0 more likely hides a mistake)."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        if allow_float and isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"{field} must be an integer >= {minimum}; got {value!r}")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{field} must be an integer >= {minimum}; got {value!r}")
    return v


def probability_open(field: str, value) -> float:
    """A number in the open interval (0, 1)."""
    v = _number(field, value, "(0, 1)")
    if not (0.0 < v < 1.0):
        raise ValueError(f"{field} must be in (0, 1); got {value!r}")
    return v


def probability(field: str, value) -> float:
    """A number in the closed interval [0, 1]."""
    v = _number(field, value, "[0, 1]")
    if not (0.0 <= v <= 1.0):
        raise ValueError(f"{field} must be in [0, 1]; got {value!r}")
    return v
