"""NumPy's SFC64 bit generator stepped inline in numba kernels: uniform and exponential draws without a call.

A numba kernel that draws through a ``numpy.random.Generator`` pays an indirect call into the bit generator
for every number (about 6 ns here, more than the rest of a split-merge workunit's bookkeeping). This module
steps the same generator inline instead: the state is NumPy's own ``SFC64`` state (seeded by NumPy from a
``SeedSequence``), copied into a ``uint64[4]`` array, advanced by Chris Doty-Humphrey's SFC64 step (the
algorithm of ``numpy/random/src/sfc64``) and copied back, so the raw stream is NumPy's, word for word
(a test checks it against ``SFC64.random_raw``).

* :func:`uniform` — ``(word >> 11) · 2⁻⁵³`` in [0, 1), NumPy's ``next_double`` for a 64-bit generator;
* :func:`standard_exponential` — the 256-layer ziggurat of Marsaglia & Tsang (J. Stat. Softw. 5(8), 2000)
  in NumPy's 53-bit form (3 bits dropped, 8 bits of layer index, 53 bits of abscissa; the base layer's tail
  by ``r − log(1 − U)``). The layer tables are computed here from the paper's recursion; they agree with
  NumPy's to rounding, so the draws equal ``Generator(SFC64).standard_exponential`` to ~1e-14 relative
  (a test checks that too).

The state travels as a tuple of four uint64 (``s = load(st)`` … ``x, s = uniform(s)`` … ``store(st, s)``):
numba keeps a tuple in registers, while state kept in an array is stored and reloaded at every draw (it may
alias the kernel's other arrays), which cost 70 % more per exponential draw here. Words are shifted to at
most 61 bits and converted through int64: a uint64 → float64 conversion costs a branch on x86-64 and tripled
the cost of a draw.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

_U1 = np.uint64(1)
_U3 = np.uint64(3)
_U11 = np.uint64(11)
_U24 = np.uint64(24)
_U40 = np.uint64(40)
_TWO_M53 = 1.0 / 9007199254740992.0

#: right edge of the exponential ziggurat's base layer and the common area of its 256 layers (Marsaglia & Tsang)
ZIGGURAT_R = 7.69711747013104972
_ZIGGURAT_V = 3.949659822581572e-3


def _ziggurat_tables():
    """(k, w, f): acceptance bounds on the 53-bit abscissa, its scale to x, and exp(−x_i) per layer."""
    m = 2.0 ** 53
    x = ZIGGURAT_R
    q = _ZIGGURAT_V / math.exp(-x)
    k = np.zeros(256, np.int64)
    w = np.zeros(256)
    f = np.zeros(256)
    k[0] = int(x / q * m)
    w[0] = q / m
    w[255] = x / m
    f[0] = 1.0
    f[255] = math.exp(-x)
    prev = x
    for i in range(254, 0, -1):  # x_i from x_{i+1}: equal areas v = x_{i+1}(f(x_i) − f(x_{i+1})) ... (M&T §2)
        x = -math.log(_ZIGGURAT_V / x + math.exp(-x))
        k[i + 1] = int(x / prev * m)
        prev = x
        f[i] = math.exp(-x)
        w[i] = x / m
    return k, w, f


ZIG_K, ZIG_W, ZIG_F = _ziggurat_tables()


def _exponential_words() -> float:
    """Expected words per :func:`standard_exponential` draw, exactly from the tables: an attempt takes one
    word, a second in the slow branch (a layer's wedge or the base layer's tail); the tail always accepts, a
    wedge point under e^(−x) with the wedge's mean height of e^(−x) above its floor."""
    fast = ZIG_K.astype(float) / 2.0**53
    accept = np.ones(256)
    for i in range(1, 256):
        hi = ZIG_W[i] * 2.0**53
        lo = fast[i] * hi
        mean_f = (math.exp(-lo) - math.exp(-hi)) / (hi - lo)
        accept[i] = (mean_f - ZIG_F[i]) / (ZIG_F[i - 1] - ZIG_F[i])
    return float(np.mean(2.0 - fast) / np.mean(fast + (1.0 - fast) * accept))


#: expected words per exponential draw (1.0336: the one-word branch is taken 97.8 % of the time)
EXPONENTIAL_WORDS = _exponential_words()


def state_of(bit_generator) -> np.ndarray:
    """The state of a ``numpy.random.SFC64`` as the ``uint64[4]`` array the kernels step."""
    if not isinstance(bit_generator, np.random.SFC64):
        raise TypeError(f"an inline stream needs numpy.random.SFC64; got {type(bit_generator).__name__}")
    return np.array([int(v) for v in bit_generator.state["state"]["state"]], dtype=np.uint64)


def store_state(bit_generator, state: np.ndarray) -> None:
    """Write a stepped state back, so that ``bit_generator`` continues where the kernel stopped."""
    st = bit_generator.state
    st["state"]["state"] = np.asarray(state, np.uint64).copy()
    st["has_uint32"] = 0
    st["uinteger"] = 0
    bit_generator.state = st


@njit(inline="always")
def load(st):
    """The state array as the tuple the draws take and return (kept in registers inside a kernel's loop)."""
    return (st[0], st[1], st[2], st[3])


@njit(inline="always")
def store(st, s):
    """Write a tuple state back into its array (at the end of a kernel's loop)."""
    st[0] = s[0]
    st[1] = s[1]
    st[2] = s[2]
    st[3] = s[3]


@njit(inline="always")
def next_u64(s):
    """One SFC64 step on the state s = (a, b, c, counter): (the next 64-bit word, the new state)."""
    a, b, c, w = s
    out = a + b + w
    return out, (b ^ (b >> _U11), c + (c << _U3), ((c << _U24) | (c >> _U40)) + out, w + _U1)


@njit(inline="always")
def uniform(s):
    """(a uniform draw in [0, 1) with 53 random bits, the new state)."""
    u, s = next_u64(s)
    return np.int64(u >> _U11) * _TWO_M53, s


@njit
def _exponential_slow(s, idx, x):
    if idx == 0:  # the base layer's tail beyond r: r + Exp(1) by memorylessness
        u, s = uniform(s)
        return ZIGGURAT_R - math.log1p(-u), s
    u, s = uniform(s)
    if (ZIG_F[idx - 1] - ZIG_F[idx]) * u + ZIG_F[idx] < math.exp(-x):
        return x, s
    return -1.0, s  # rejected: the caller draws again


@njit(inline="always")
def standard_exponential(s):
    """(an Exp(1) draw by the ziggurat, one word 97.8 % of the time, 1.034 on average; the new state)."""
    while True:
        u, s = next_u64(s)
        ri = np.int64(u >> _U3)
        idx = ri & 0xFF
        ri >>= 8
        x = ri * ZIG_W[idx]
        if ri < ZIG_K[idx]:
            return x, s
        x, s = _exponential_slow(s, idx, x)
        if x >= 0.0:
            return x, s


@njit(cache=True)
def fill_standard_exponential(out, st):
    """out[i] = successive Exp(1) draws from the state array ``st`` (advanced in place)."""
    s = load(st)
    for i in range(out.size):
        x, s = standard_exponential(s)
        out[i] = x
    store(st, s)
