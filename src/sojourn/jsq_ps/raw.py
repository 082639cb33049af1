"""One JSQ-PS replication as raw streamed statistics (histogram, overflow, occupancy, accumulators) from the
numba kernels, without xarray: the core of :func:`sojourn.jsq_ps.simulate.simulate` (which wraps the results in
Datasets) and what ``sojourn plan`` calls directly, so that an answer does not pay for importing xarray and
scipy.stats (~1.5 s of a 2 s budget)."""
from __future__ import annotations

import time

import numpy as np

from ..core.checks.timegrid import grid_size
from ..core.checks.validate import finite_real, integer_at_least
from ..core.estimates.replications import check_window
from ..core.laws import seeds as _seeds
from ..core.laws.distributions import Exponential
from .model import DISPATCH_CODE, JSQPS

BACKENDS = ("fast", "ciw")
KERNELS = ("auto", "general", "exponential")


# ---------------------------------------------------------------------------------------------
# validation
def check_run(spec, horizon, warmup, cooldown, dt, t_max, backend, occupancy_max, kernel, service_bins):
    if not isinstance(spec, JSQPS):
        raise ValueError(f"spec must be a sojourn.JSQPS; got {type(spec).__name__}")
    spec.require_stable()
    horizon, warmup, cooldown = check_window(horizon, warmup, cooldown)
    grid_size(t_max, dt)  # validates dt > 0, t_max a multiple of dt
    dt, t_max = float(dt), float(t_max)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}")
    occupancy_max = integer_at_least("occupancy_max", occupancy_max, 1, allow_float=False)
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}; got {kernel!r}")
    exact_ok = (
        isinstance(spec.interarrival, Exponential) and isinstance(spec.service, Exponential) and spec.discipline == "ps"
    )
    if kernel == "exponential" and not exact_ok:
        raise ValueError("kernel='exponential' needs Poisson arrivals, exponential service and discipline='ps'")
    if service_bins is not None:
        if backend != "fast" or kernel == "exponential":
            raise ValueError("service_bins needs backend='fast' with kernel 'general' or 'auto'")
        if not (isinstance(service_bins, (tuple, list)) and len(service_bins) == 2):
            raise ValueError(f"service_bins must be (width, number); got {service_bins!r}")
        w = finite_real("service_bins width", service_bins[0])
        if w <= 0:
            raise ValueError(f"service_bins width must be in (0, inf); got {w!r}")
        service_bins = (w, integer_at_least("service_bins number", service_bins[1], 1, allow_float=False))
    if kernel == "auto":
        kernel = "exponential" if (exact_ok and service_bins is None) else "general"
    if backend == "ciw":
        kernel = "ciw"
    return horizon, warmup, cooldown, dt, t_max, occupancy_max, kernel, service_bins


# ---------------------------------------------------------------------------------------------
# kernels
def run_fast(spec, kernel, rng, warmup, rec_end, dt, nbins, occupancy_max, service_bins):
    from . import kernel as K

    _numba_registries()

    hist = np.zeros(nbins, np.int64)
    occ = np.zeros(occupancy_max + 1, np.int64)
    dispatch = DISPATCH_CODE[spec.dispatch]
    d = int(spec.choices or 1)
    out = {}
    t0 = time.perf_counter()
    if kernel == "exponential":
        acc, area, events = K.run_exponential(
            spec.R, spec.interarrival.rate, spec.service.rate, dispatch, d, warmup, rec_end, dt, hist, occ, rng
        )
    else:
        acode, ap = spec.interarrival.kernel_spec()
        scode, sp = spec.service.kernel_spec()
        theta = float(spec.ps_threshold) if spec.discipline == "capacitated" else 1.0
        limit = int(spec.ps_limit) if spec.discipline == "limited" else 0
        xdx, K_ = (service_bins if service_bins is not None else (0.0, 1))
        cx_n = np.zeros(K_, np.int64)
        cx_s = np.zeros(K_)
        cx_ss = np.zeros(K_)
        acc, area, events = K.run_general(
            spec.R, int(acode), np.ascontiguousarray(ap, np.float64), int(scode),
            np.ascontiguousarray(sp, np.float64), theta, limit, dispatch, d, warmup, rec_end, dt,
            hist, occ, float(xdx), cx_n, cx_s, cx_ss, rng,
        )
        if service_bins is not None:
            out.update(cx_n=cx_n, cx_s=cx_s, cx_ss=cx_ss)
    out.update(hist=hist, occ=occ, acc=acc, area=area, events=events, wall_time=time.perf_counter() - t0)
    return out


def load_kernel(spec, kernel: str, dt: float = 0.01) -> None:
    """Load the compiled ``kernel`` (``"exponential"`` or ``"general"``, as :func:`check_run` resolved it) of
    ``spec`` from numba's cache, by a run with an empty window (no event: the types of a real call, no draw from any
    replication's stream), in the calling thread: what the first replication of a process would pay otherwise
    (about 0.5 CPU seconds, one core). ``sojourn simulate`` does it first, so that what it imports next runs beside
    the replications. Numba's registries are loaded without scipy.linalg (:func:`_numba_registries`)."""
    _numba_registries()
    run_fast(spec, kernel, np.random.Generator(np.random.PCG64(0)), 0.0, 0.0, float(dt), 1, 1, None)


def _numba_registries() -> None:
    """Load numba's CPU registries (what its first compile or cache load does, ``CPUContext.refresh``) with
    scipy.linalg marked absent, unless numba or scipy.linalg did so already: one of them (numba.np.arraymath) imports
    scipy.linalg, 0.1 to 0.3 CPU seconds with its array-API set-up, only to learn whether np.correlate / np.convolve
    may call BLAS, which no kernel here does (without it they loop). The mark is removed after: numba's linear
    algebra looks for scipy.linalg again at each compile, and the process may import it later."""
    import sys

    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    name = "scipy.linalg.cython_blas"
    if "numba.np.arraymath" in sys.modules:  # loaded (each replication's call passes here)
        return
    with global_compiler_lock:  # the threads of a process's replications: one of them loads, the others wait
        if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules or name in sys.modules:
            return
        sys.modules[name] = None  # import of it: ImportError, as if scipy were not installed
        try:
            cpu_target.target_context.refresh()
        finally:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def histogram(spec, replication: int, seed: int, horizon: float, warmup: float, dt: float, t_max: float):
    """(count (t,), overflow) of replication ``replication`` of ``spec`` (cool-down 0, the fast backend): the
    same numbers as ``simulate_replication(...)["count"][0]`` and ``["overflow"][0]`` with those arguments."""
    H, W, C, dt, t_max, om, kern, sb = check_run(spec, horizon, warmup, 0.0, dt, t_max, "fast", 1, "auto", None)
    out = run_fast(spec, kern, _seeds.replication_rng(seed, spec, replication), W, H - C, dt, grid_size(t_max, dt), om,
                   sb)
    return out["hist"], int(out["acc"][1])
