"""Public API: ``approximate(spec, method, t=None, **hyper)`` and ``approximate_all``.

Dataset layout (one method)::

    coords    t (grid), n (occupancy found by an arrival)
    cdf       (t)   P(sojourn ≤ t)
    lambda_n  (n)   per-server arrival rate given n present (NaN where the method has none)
    A_n       (n)   P(an arrival joins a server holding n)
    run_time  ()    seconds (for approximate_all: the method's own work plus building blocks it
                    was first to need)
    attrs     method, faithful, L1, L2, servers, arrival_rate, service_rate, load, method-specific
              diagnostics (chain_boundary_mass, truncated_mass, …) and sojourn provenance.

``approximate_all`` returns the same variables with a leading ``approximation`` dimension (named so because
``method`` is a keyword of xarray's ``sel``), and the per-method scalars (L1, L2, faithful, run_time, …) as
variables on it: ``ds.sel(approximation="A")``.
"""
from __future__ import annotations

import time

import numpy as np
import xarray as xr

from ...core.io import provenance
from ...core.timegrid import DT, T_MAX, time_grid
from ...core.validate import integer_at_least, positive_finite
from ..model import JSQPS
from ..naming import ALL_METHODS as METHODS
from ..naming import CORRECTED_METHODS, DEFAULT_L2, FAITHFUL_METHODS, label_coords, table4_L1
from .exact import exact_sojourn_cdf
from .methods import Cell

_APPROX_HYPER = {"L1", "L2", "chain_eps", "state_budget", "clamp_gupta"}
_EXACT_HYPER = {"eps", "M", "D", "state_budget"}
_GRID_HYPER = {"t_max", "dt"}


def _check_spec(spec):
    if not isinstance(spec, JSQPS):
        raise ValueError(f"spec must be a sojourn.JSQPS; got {type(spec).__name__}")
    if not spec.is_markovian:
        raise ValueError("spec must be Markovian (interarrival Exponential, service Exponential) for the analytic methods; "
                         f"got {spec.describe()}")
    if spec.discipline != "ps":
        raise ValueError(f"discipline must be 'ps' for the analytic methods; got {spec.discipline!r}")
    if spec.dispatch != "jsq":
        raise ValueError(f"dispatch must be 'jsq' for the analytic methods; got {spec.dispatch!r}")
    if not spec.load < 1.0:
        raise ValueError(f"load must be in (0, 1); got rho={spec.load:.6g}")


def _check_method(method):
    if method not in METHODS:
        raise ValueError(f"method must be one of {list(METHODS)}; got {method!r}")


def _grid(t, hyper):
    t_max = hyper.pop("t_max", None)
    dt = hyper.pop("dt", None)
    if t is None:
        return time_grid(T_MAX if t_max is None else t_max, DT if dt is None else dt)
    if t_max is not None or dt is not None:
        raise ValueError("give either t or (t_max, dt), not both")
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"t must be a non-empty 1-D array; got shape {t.shape}")
    if not np.all(np.isfinite(t)) or t.min() < 0 or np.any(np.diff(t) < 0):
        raise ValueError("t must be finite, >= 0 and non-decreasing")
    return t


def _check_hyper(method_set, spec, hyper):
    allowed = set(_GRID_HYPER)
    if any(m != "exact" for m in method_set):
        allowed |= _APPROX_HYPER
    if "exact" in method_set:
        allowed |= _EXACT_HYPER
    unknown = set(hyper) - allowed
    if unknown:
        raise ValueError(f"unknown hyper-parameter(s) {sorted(unknown)}; allowed for {sorted(method_set)}: {sorted(allowed)}")
    out = dict(hyper)
    if "L1" in out:
        out["L1"] = integer_at_least("L1", out["L1"], 2)
    if "L2" in out:
        L1 = out.get("L1", table4_L1(spec.servers) if any(m in FAITHFUL_METHODS for m in method_set) else 2)
        out["L2"] = integer_at_least("L2", out["L2"], max(L1, 2))
    elif "L1" in out and any(m in FAITHFUL_METHODS for m in method_set) and out["L1"] > DEFAULT_L2:
        raise ValueError(f"L2 must be an integer >= L1={out['L1']}; got the default {DEFAULT_L2}")
    for name in ("chain_eps", "eps"):
        if name in out:
            v = positive_finite(name, out[name])
            if v >= 1:
                raise ValueError(f"{name} must be in (0, 1); got {v!r}")
            out[name] = v
    if "state_budget" in out:
        out["state_budget"] = integer_at_least("state_budget", out["state_budget"], 1)
    if "M" in out:
        out["M"] = integer_at_least("M", out["M"], 2)
    if "D" in out:
        out["D"] = integer_at_least("D", out["D"], 0)
    if "clamp_gupta" in out and not isinstance(out["clamp_gupta"], bool):
        raise ValueError(f"clamp_gupta must be True or False; got {out['clamp_gupta']!r}")
    return out


def _exact_blocks(spec, hyper, t):
    """Exact CDF plus exact λ_n, A_n read off its stationary system law (same rules as §3.2/§3.4)."""
    from .chain import stationary
    from .exact import system_chain

    kw = {k: hyper[k] for k in ("eps", "M", "D", "state_budget") if k in hyper}
    t0 = time.perf_counter()
    res = exact_sojourn_cdf(spec.arrival_rate, spec.service_rate, spec.servers, t, **kw)
    S, Q = system_chain(spec.arrival_rate, spec.service_rate, spec.servers, res.M, res.D)
    pi = stationary(Q, levels=S.states.sum(axis=1))
    top = int(S.states.max()) + 1
    A = np.bincount(S.states[:, 0], weights=pi, minlength=top)
    cnt = sum(np.bincount(S.states[:, j], weights=pi, minlength=top) for j in range(S.R))
    lam = np.where((A > 0) & (cnt > 0), spec.arrival_rate * A / np.where(cnt > 0, cnt, 1), 0.0)
    run_time = time.perf_counter() - t0
    attrs = {"M": res.M, "D": res.D, "n_system_states": res.n_system_states, "n_tagged_states": res.n_tagged_states,
             "truncated_mass": res.truncated_mass, **res.info}
    return res.cdf, lam, A, run_time, attrs


def _run(spec, methods, t, hyper):
    cellkw = {}
    if "L1" in hyper:
        cellkw["L1"] = hyper["L1"]
        cellkw["corrected_L1"] = hyper["L1"]
    if "L2" in hyper:
        cellkw["L2"] = hyper["L2"]
        cellkw["corrected_L2"] = hyper["L2"]
    for k in ("chain_eps", "state_budget", "clamp_gupta"):
        if k in hyper:
            cellkw[k] = hyper[k]
    cell = Cell(spec.arrival_rate, spec.service_rate, spec.servers, t, **cellkw)
    out = {}
    for m in methods:
        if m == "exact":
            cdf, lam, A, rt, attrs = _exact_blocks(spec, hyper, t)
            out[m] = dict(cdf=cdf, lambda_n=lam, A_n=A, run_time=rt, L1=attrs["M"], L2=attrs["M"] + attrs["D"],
                          faithful=False, info=attrs)  # exact: L1 = M (min cap), L2 = M + D (largest occupancy)
        else:
            r = cell.run(m)
            out[m] = dict(cdf=r.cdf, lambda_n=r.lambda_n, A_n=r.A_n, run_time=r.run_time, L1=r.L1, L2=r.L2,
                          faithful=r.faithful, info=r.info)
    return out


def _base_attrs(spec, hyper):
    attrs = provenance(config=spec.to_dict(), hyper=hyper)
    attrs.update(servers=spec.servers, arrival_rate=spec.arrival_rate, service_rate=spec.service_rate, load=spec.load,
                 model=spec.describe(), reference="jsq_ps_methods.md (Palmer & Martín-Pérez, arXiv 2210.17227)")
    return attrs


def _scalar_attr(v):
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    return v


def approximate(spec, method, t=None, **hyper) -> xr.Dataset:
    """Sojourn-time CDF of the M/M/R-JSQ-PS ``spec`` by ``method`` ∈ A…F, A*…F*, exact.

    Hyper-parameters: ``L1`` (≥ 2; faithful default Table 4 per R, corrected default chosen from the
    chain's boundary mass), ``L2`` (≥ L1; faithful default 130, corrected default from the
    birth–death tail), ``chain_eps``, ``state_budget``, ``clamp_gupta`` (faithful Gupta λ clamp);
    exact: ``eps``, ``M``, ``D``, ``state_budget``. Grid: ``t`` or ``t_max``/``dt``
    (default 0..182.32 step 0.01). Invalid input raises ValueError naming the field.
    """
    _check_spec(spec)
    _check_method(method)
    hyper = dict(hyper)
    t = _grid(t, hyper)
    hyper = _check_hyper({method}, spec, hyper)
    r = _run(spec, [method], t, hyper)[method]
    n = np.arange(max(r["lambda_n"].size, r["A_n"].size))
    lam = np.full(n.size, np.nan); lam[: r["lambda_n"].size] = r["lambda_n"]
    A = np.zeros(n.size); A[: r["A_n"].size] = r["A_n"]
    attrs = _base_attrs(spec, hyper)
    attrs.update(method=method, faithful=int(r["faithful"]), L1=int(r["L1"]), L2=int(r["L2"]))
    attrs.update({k: _scalar_attr(v) for k, v in r["info"].items()})
    ds = xr.Dataset(
        {"cdf": ("t", r["cdf"], {"long_name": "P(sojourn <= t)"}),
         "lambda_n": ("n", lam, {"long_name": "arrival rate to a server holding n"}),
         "A_n": ("n", A, {"long_name": "P(arrival joins a server holding n)"}),
         "run_time": ((), float(r["run_time"]), {"units": "s"})},
        coords={"t": t, "n": n},
        attrs=attrs,
    )
    return label_coords(ds)


def approximate_all(spec, methods=FAITHFUL_METHODS, t=None, **hyper) -> xr.Dataset:
    """Several methods on one cell sharing the building blocks; a ``method`` dimension."""
    _check_spec(spec)
    methods = list(methods)
    if not methods:
        raise ValueError(f"methods must be a non-empty list from {list(METHODS)}")
    for m in methods:
        _check_method(m)
    if len(set(methods)) != len(methods):
        raise ValueError(f"methods must not repeat; got {methods}")
    hyper = dict(hyper)
    t = _grid(t, hyper)
    hyper = _check_hyper(set(methods), spec, hyper)
    t0 = time.perf_counter()
    res = _run(spec, methods, t, hyper)
    total = time.perf_counter() - t0
    nmax = max(max(r["lambda_n"].size, r["A_n"].size) for r in res.values())
    lam = np.full((len(methods), nmax), np.nan)
    A = np.zeros((len(methods), nmax))
    for i, m in enumerate(methods):
        lam[i, : res[m]["lambda_n"].size] = res[m]["lambda_n"]
        A[i, : res[m]["A_n"].size] = res[m]["A_n"]
    attrs = _base_attrs(spec, hyper)
    attrs["total_run_time"] = total
    data = {
        "cdf": (("approximation", "t"), np.stack([res[m]["cdf"] for m in methods])),
        "lambda_n": (("approximation", "n"), lam),
        "A_n": (("approximation", "n"), A),
        "run_time": ("approximation", np.array([res[m]["run_time"] for m in methods]), {"units": "s"}),
        "L1": ("approximation", np.array([res[m]["L1"] for m in methods], dtype=np.int64)),
        "L2": ("approximation", np.array([res[m]["L2"] for m in methods], dtype=np.int64)),
        "faithful": ("approximation", np.array([int(res[m]["faithful"]) for m in methods], dtype=np.int8)),
        "truncation_mass": ("approximation", np.array([float(res[m]["info"].get("truncated_mass", res[m]["info"].get("chain_boundary_mass", np.nan)))
                                                for m in methods])),
    }
    return label_coords(xr.Dataset(data, coords={"approximation": np.array(methods, dtype=str), "t": t,
                                                 "n": np.arange(nmax)}, attrs=attrs))


def summary(t: np.ndarray, cdf: np.ndarray, probs=(0.99, 0.999, 0.9999, 0.99999)) -> dict:
    """Mean ∫(1−F)dt on the grid (trapezoid; mass beyond the grid ignored) and percentiles x_p =
    first grid t with F(t) > p (§3.8); NaN if F never exceeds p on the grid."""
    t = np.asarray(t, dtype=float)
    F = np.asarray(cdf, dtype=float)
    out = {"mean": float(np.trapezoid(1.0 - F, t))}
    for p in probs:
        above = np.flatnonzero(F > p)
        out[p] = float(t[above[0]]) if above.size else float("nan")
    return out
