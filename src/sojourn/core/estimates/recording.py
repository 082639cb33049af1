"""What every simulation kernel does with a recorded time (a sojourn, a delay, a latency, a response time): count
it in its histogram bin, or as an overflow beyond the last bin, and update the running count, sum, sum of squares
and maximum. One numba function, inlined into each kernel (``benchmarks/kernels.py`` times the kernels with it
against a release that repeated it in each)."""
from __future__ import annotations

from numba import njit


@njit(inline="always")
def record(x, inv_dt, hist, count, over, total, squares, largest):
    """Count ``x`` in bin ⌊x/dt⌋ of ``hist`` (``inv_dt`` = 1/dt; bin i holds [i dt, (i + 1) dt)), or in ``over``
    beyond the last bin; return (count + 1, over, total + x, squares + x², max(largest, x))."""
    b = int(x * inv_dt)
    if b < hist.shape[0]:
        hist[b] += 1
    else:
        over += 1
    if x > largest:
        largest = x
    return count + 1, over, total + x, squares + x * x, largest
