"""Phase-type representations of service laws, for the analytic methods that need one.

Three routes, each giving PH(α, S) (:mod:`sojourn.core.laws.phase_type` conventions):

* :func:`exact_representation` — the laws that *are* phase-type: exponential, Erlang, hyperexponential, gamma with
  an integer shape (Erlang), a general :class:`~sojourn.core.laws.distributions.PhaseType`;
* :func:`stage_representation` — any law with a CDF: a Coxian of exponential *stages* whose means tile the size
  axis (width h·E[S] up to a knee, then growing by the ratio 1 + 2h, a relative resolution 2h in the tail: against
  1 + h it cut a lognormal's stages by 40 % and moved no 99.99th percentile by more than 1.2 %), completing after
  stage j with the probability that the size lies around the end of stage j
  (midpoint rule). As h → 0 it converges to the law; its error in a sojourn-time percentile is smooth in h
  (an O(h) spread — a stage's exponential duration — plus O(h²) from the midpoint rule), which is what lets a
  method extrapolate h → 0 from three values (:func:`richardson`). A bounded law (deterministic, uniform,
  triangular: :func:`upper_end`) is tiled up to its upper end with equal stages; a deterministic size d is
  then Erlang-(d/h);
* :func:`three_moment_representation` — a mixture of two Erlang laws of a common order matching three given
  moments (Johnson & Taaffe 1989, in closed form), for a user who knows only moments. A moment fit gives the law
  an exponential tail beyond its support and a shape the moments do not fix; for sojourn-time tails under
  processor sharing that matters (``docs/jsq_ps.md``: a three-moment fit of the paper's lognormal measured up to
  15 % high at the 99.99th percentile), so the analytic methods use it only when moments are all there is.

:func:`survival` and :func:`equilibrium_survival` (the residual-size law of a customer found in service by a
Poisson arrival under processor sharing, Ḡ_e(y) = ∫_y^∞ Ḡ(u) du / E[S]) are the exact functions the methods use
beside the representations.
"""
from __future__ import annotations

import math

import numpy as np

from . import distributions as D
from .phase_type import erlang, three_moment_representation  # noqa: F401 (re-exported: the representations' API)

#: the stage representation of an unbounded law ends where the survival is below this (the rest of the mass goes
#: to the last stage)
STAGE_TAIL = 1e-9
#: the largest number of stages a representation may have (memory and time of the methods built on it)
MAX_STAGES = 400


def upper_end(law) -> float | None:
    """The largest possible size of a bounded law (deterministic, uniform, triangular), else None."""
    if isinstance(law, D.Deterministic):
        return float(law.value)
    if isinstance(law, D.Uniform):
        return float(law.high)
    if isinstance(law, D.Triangular):
        return float(law.high)
    return None


def exact_representation(law):
    """(α, S) of a law that is phase-type (exponential, Erlang, hyperexponential, gamma with an integer shape up to
    1e-9, general phase-type), else None."""
    if isinstance(law, D.Exponential):
        return np.ones(1), np.array([[-law.rate]])
    if isinstance(law, D.Erlang):
        return erlang(law.k, law.rate)
    if isinstance(law, D.Gamma) and abs(law.shape - round(law.shape)) <= 1e-9 and round(law.shape) <= MAX_STAGES:
        k = round(law.shape)
        return erlang(k, 1.0 / law.scale)
    if isinstance(law, D.HyperExponential):
        return np.asarray(law.probs, float), np.diag(-np.asarray(law.rates, float))
    if isinstance(law, D.PhaseType):
        return np.asarray(law.alpha, float), np.asarray(law.T, float)
    return None


def survival(law):
    """The exact survival function x ↦ P(S > x) of ``law`` (vectorised)."""
    if isinstance(law, D.Deterministic):
        v = float(law.value)
        return lambda x: (np.asarray(x, float) < v).astype(float)
    if isinstance(law, D.PhaseType):
        return lambda x: np.asarray(law.sf(np.asarray(x, float)), float).reshape(np.shape(x))
    frozen = _frozen(law)
    if frozen is not None:  # scipy's frozen law once (freezing costs ~0.7 ms, a survival call ~10 µs)
        return lambda x: np.asarray(frozen.sf(np.asarray(x, float)), float)
    return lambda x: np.asarray(law.sf(np.asarray(x, float)), float)


def _frozen(law):
    """scipy's frozen distribution of ``law``, or None if it has none."""
    try:
        return law._frozen()
    except (AttributeError, NotImplementedError):
        return None


def _tail_end(law, eps: float) -> float:
    """Where the survival of ``law`` falls below ``eps`` (its upper end if bounded; scipy's isf where it has one)."""
    up = upper_end(law)
    if up is not None:
        return up
    frozen = _frozen(law)
    if frozen is not None:
        x = float(frozen.isf(eps))
        if math.isfinite(x) and x > 0.0:
            return x
    sf = survival(law)
    x = max(law.mean, 1e-300)
    while float(sf(np.array([x]))[0]) > eps:
        x *= 1.5
    lo = x / 1.5
    for _ in range(60):  # bisection on the survival
        mid = 0.5 * (lo + x)
        if float(sf(np.array([mid]))[0]) > eps:
            lo = mid
        else:
            x = mid
    return x


def stage_boundaries(law, h: float, eps: float = STAGE_TAIL) -> np.ndarray:
    """b_0 = 0 < b_1 < … < b_J: stage ends of :func:`stage_representation` (width h·E[S] up to the knee — the upper
    end of a bounded law, else E[S] — then ratio 1 + 2h up to where the survival is below ``eps``)."""
    h = float(h)
    if not (0.0 < h <= 1.0):
        raise ValueError(f"stage width h must be in (0, 1] (a fraction of the mean); got {h!r}")
    m = float(law.mean)
    up = upper_end(law)
    knee = up if up is not None else m
    n_lin = max(1, round(knee / (h * m)))
    b = list(np.linspace(0.0, knee, n_lin + 1))
    if up is None:
        end = _tail_end(law, eps)
        while b[-1] < end:
            b.append(b[-1] * (1.0 + 2.0 * h))
    b = np.asarray(b)
    if b.size - 1 > MAX_STAGES:
        raise ValueError(f"the stage representation of {law} with h = {h:g} needs {b.size - 1} stages "
                         f"(> {MAX_STAGES}); use a larger h")
    return b


def stage_representation(law, h: float, eps: float = STAGE_TAIL):
    """(α, S): the Coxian of stages with ends :func:`stage_boundaries` (stage j exponential with mean
    b_j − b_{j−1}), completing after stage j with P(size around b_j | size beyond stage j − 1): the size is given to
    the stage end nearest to it (midpoint rule; the mass beyond the last end goes to the last stage)."""
    b = stage_boundaries(law, h, eps)
    w = np.diff(b)
    mid = 0.5 * (b[:-1] + b[1:])
    cdf = lambda x: 1.0 - survival(law)(x)
    edges = np.concatenate([[0.0], cdf(mid[1:]), [1.0]])  # stage j takes (mid_j, mid_{j+1}]
    if isinstance(law, D.Deterministic):  # the atom sits on a stage end: all of it to that stage
        edges = np.concatenate([[0.0], (mid[1:] >= law.value).astype(float), [1.0]])
    p = np.maximum(np.diff(edges), 0.0)
    p /= p.sum()
    last = int(np.flatnonzero(p > 0)[-1]) + 1
    p, w = p[:last], w[:last]
    J = last
    tail = np.cumsum(p[::-1])[::-1]  # P(completes at stage ≥ j)
    go_on = np.where(tail[:-1] > 0, tail[1:] / np.where(tail[:-1] > 0, tail[:-1], 1.0), 0.0)
    S = np.diag(-1.0 / w)
    S[np.arange(J - 1), np.arange(1, J)] = go_on / w[:-1]
    a = np.zeros(J)
    a[0] = 1.0
    return a, S


def two_moment_representation(law, max_phases: int):
    """(α, S): the Coxian matching the mean and the squared coefficient of variation c² ≤ 1 of ``law`` — Erlang-k
    with probability 1 − p, Erlang-(k − 1) with p, both at one rate ν (Tijms, *A First Course in Stochastic Models*,
    2003, §2.3: k = ⌈1/c²⌉, p = (k c² − √(k(1 + c²) − k² c²))/(1 + c²), ν = (k − p)/E[S]), its order k at most
    ``max_phases`` (a law less variable than Erlang-``max_phases`` — the deterministic — gets that Erlang: the mean
    kept, the variance larger)."""
    m, c2 = float(law.mean), float(law.scv)
    if not (0.0 <= c2 <= 1.0 + 1e-12):
        raise ValueError(f"a two-moment Erlang mixture needs a squared coefficient of variation in [0, 1]; got {c2!r}")
    k = int(min(max(1, math.ceil(1.0 / c2 - 1e-9)) if c2 > 0 else max_phases, int(max_phases)))
    p = 0.0
    if k > 1 and c2 > 1.0 / k + 1e-12:
        p = (k * c2 - math.sqrt(max(0.0, k * (1.0 + c2) - k * k * c2))) / (1.0 + c2)
    nu = (k - p) / m
    a, S = erlang(k, nu)
    if p > 0.0:  # after phase k − 1 it completes with probability p
        S[k - 2, k - 1] = nu * (1.0 - p)
    return a, S


def richardson(values, order: int | None = None):
    """Extrapolation to h → 0 of quantities computed at h, h/2, h/4 (``values`` in that order, arrays alike):
    two values remove the O(h) term, three the O(h) and O(h²) terms."""
    v = [np.asarray(x, dtype=float) for x in values]
    order = len(v) if order is None else int(order)
    if order == 1:
        return v[-1]
    if order == 2:
        return 2.0 * v[-1] - v[-2]
    if order == 3:
        return (v[-3] - 6.0 * v[-2] + 8.0 * v[-1]) / 3.0
    raise ValueError(f"richardson takes 1 to 3 values; got {order}")


def equilibrium_survival(law, points: int = 20001):
    """y ↦ Ḡ_e(y) = ∫_y^∞ Ḡ(u) du / E[S]: the survival of the residual size of a customer in service seen by a
    Poisson arrival under processor sharing (exact for M/G/1-PS; Kelly's symmetric queues). Trapezoid rule on
    ``points`` points up to where Ḡ < 1e-12 (the upper end of a bounded law), interpolated linearly; exact for a
    deterministic law."""
    if isinstance(law, D.Deterministic):
        v = float(law.value)
        return lambda y: np.clip(1.0 - np.asarray(y, float) / v, 0.0, 1.0)
    end = _tail_end(law, 1e-12)
    x = np.linspace(0.0, end, int(points))
    g = survival(law)(x)
    area = np.concatenate([[0.0], np.cumsum(0.5 * (g[1:] + g[:-1]) * np.diff(x))])
    total = area[-1]
    rest = (total - area) / total
    return lambda y: np.interp(np.asarray(y, float), x, rest, right=0.0)


