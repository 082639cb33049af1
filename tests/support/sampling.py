"""Many draws from one law through the kernels' own sampler (:func:`sojourn.core.laws.sampling.sample_law`), for testing
it against the law's CDF."""
from __future__ import annotations

import numpy as np
from numba import njit

from sojourn.core.laws.sampling import sample_law


@njit(cache=True)
def _sample_many(code, p, n, rng):
    out = np.empty(n)
    for i in range(n):
        out[i] = sample_law(code, p, rng)
    return out


def sample_many(code: int, params: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws from ``(code, params)``; the same path the kernels use."""
    return _sample_many(int(code), np.ascontiguousarray(params, dtype=np.float64), int(n), rng)
