"""Small validators shared by the model specs: each names the field and the allowed range."""
from __future__ import annotations

import math
from numbers import Integral, Real


def positive_finite(field: str, value) -> float:
    """Return ``value`` as float if it is a finite number > 0, else raise ValueError naming ``field``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{field} must be a real number in (0, inf); got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v <= 0.0:
        raise ValueError(f"{field} must be in (0, inf); got {value!r}")
    return v


def nonnegative_finite(field: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{field} must be a real number in [0, inf); got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0.0:
        raise ValueError(f"{field} must be in [0, inf); got {value!r}")
    return v


def integer_at_least(field: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"{field} must be an integer >= {minimum}; got {value!r}")
    v = int(value)
    if v < minimum:
        raise ValueError(f"{field} must be an integer >= {minimum}; got {value!r}")
    return v


def probability_open(field: str, value) -> float:
    """A number in the open interval (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{field} must be a real number in (0, 1); got {value!r}")
    v = float(value)
    if not (0.0 < v < 1.0):
        raise ValueError(f"{field} must be in (0, 1); got {value!r}")
    return v
