"""Public API: ``approximate(spec, method, t=None, **hyper)`` and ``approximate_all``.

Dataset layout (one method)::

    coords    t (grid), n (occupancy found by an arrival)
    cdf       (t)   P(sojourn ≤ t)
    lambda_n  (n)   per-server arrival rate given n present (NaN where the method has none)
    A_n       (n)   P(an arrival joins a server holding n)
    run_time  ()    seconds (for approximate_all: the method's own work plus building blocks it
                    was first to need)
    valid     ()    int8, 1 = the result passed every guard (:mod:`sojourn.jsq_ps.solve.guards`)
    validity_reason ()  int16 bit mask (CF flag_masks/flag_meanings): why not; 0 = valid
    validity_violation () the CDF's largest excursion below 0, above 1 or downwards (0 = none)
    attrs     method, faithful, L1, L2, servers, arrival_rate, service_rate, load, method-specific
              diagnostics (chain_boundary_mass, truncated_mass, truncation_reached, truncation_tolerance, …)
              and sojourn provenance.

``approximate_all`` returns the same variables with a leading ``approximation`` dimension (named so because
``method`` is a keyword of xarray's ``sel``), and the per-method scalars (L1, L2, faithful, run_time, …) as
variables on it: ``ds.sel(approximation="A")``.
"""
from __future__ import annotations

import json
import time

import numpy as np
import xarray as xr

from ...core.checks.timegrid import DT, T_MAX, time_grid
from ...core.checks.validate import integer_at_least, positive_finite
from ...core.files.io import provenance
from ...core.laws.distributions import Exponential
from ..model import JSQPS
from ..naming import ALL_METHODS as METHODS
from ..naming import DEFAULT_L2, FAITHFUL_METHODS, label_coords, table4_L1
from .budget import ExactOverBudget, check_budget
from .exact import exact_sojourn_cdf
from .guards import OVER_BUDGET, reason_attrs, truncation_flags, valid_attrs, validity
from .methods import Cell
from .tail import api_result as tail_result

_APPROX_HYPER = {"L1", "L2", "chain_eps", "state_budget", "clamp_gupta"}
_EXACT_HYPER = {"eps", "M", "D", "state_budget", "max_states", "exact_budget"}
_TAIL_HYPER = {"tail_D", "tail_seconds"}  # method T (sojourn.jsq_ps.solve.tail)
_TAIL_LAW_HYPER = {"tail_h", "tail_cstar"}  # method T with a general service law (sojourn.jsq_ps.solve.tail_ph)
_GRID_HYPER = {"t_max", "dt"}


_VIOLATION_ATTRS = {"long_name": "largest excursion of the CDF below 0, above 1 or downwards (0 = none)", "units": "1"}


def _check_spec(spec, methods=()):
    if not isinstance(spec, JSQPS):
        raise ValueError(f"spec must be a sojourn.JSQPS; got {type(spec).__name__}")
    if not isinstance(spec.interarrival, Exponential):
        raise ValueError("interarrival must be Exponential (Poisson arrivals) for the analytic methods; got "  # noqa: TRY004 (a wrong law, not a wrong type)
                         f"{spec.describe()}")
    if not spec.is_markovian:
        others = sorted(set(methods) - {"T"})
        if others or not methods:
            raise ValueError(f"method{'s' if len(others) > 1 else ''} {', '.join(others) or 'A-F, A*-F*, exact'} "
                             f"need{'' if len(others) > 1 else 's'} exponential service (the M/M/R model); for the "
                             f"service law {spec.service} use method T (sojourn.jsq_ps.solve.tail_ph); got "
                             f"{spec.describe()}")
    if spec.discipline != "ps":
        raise ValueError(f"discipline must be 'ps' for the analytic methods; got {spec.discipline!r}")
    if spec.dispatch != "jsq":
        raise ValueError(f"dispatch must be 'jsq' for the analytic methods; got {spec.dispatch!r}")
    if not spec.rho < 1.0:
        raise ValueError(f"rho must be in (0, 1); got rho={spec.rho:.6g}")


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


def _allowed_hyper(method_set, spec) -> set:
    """The hyper-parameters the methods of ``method_set`` take."""
    allowed = set(_GRID_HYPER)
    if any(m not in ("exact", "T") for m in method_set):
        allowed |= _APPROX_HYPER
    if "exact" in method_set:
        allowed |= _EXACT_HYPER
    if "T" in method_set:
        allowed |= _TAIL_HYPER
        if not spec.is_markovian:
            allowed |= _TAIL_LAW_HYPER
    return allowed


#: integer hyper-parameters and their least value
_AT_LEAST = {"state_budget": 1, "M": 2, "D": 0, "tail_D": 2, "tail_cstar": 0}


def _check_hyper(method_set, spec, hyper):
    allowed = _allowed_hyper(method_set, spec)
    unknown = set(hyper) - allowed
    if unknown:
        raise ValueError(
            f"unknown hyper-parameter(s) {sorted(unknown)}; allowed for {sorted(method_set)}: {sorted(allowed)}"
        )
    out = dict(hyper)
    if "L1" in out:
        out["L1"] = integer_at_least("L1", out["L1"], 2)
    if "L2" in out:
        L1 = out.get("L1", table4_L1(spec.R) if any(m in FAITHFUL_METHODS for m in method_set) else 2)
        out["L2"] = integer_at_least("L2", out["L2"], max(L1, 2))
    elif "L1" in out and any(m in FAITHFUL_METHODS for m in method_set) and out["L1"] > DEFAULT_L2:
        raise ValueError(f"L2 must be an integer >= L1={out['L1']}; got the default {DEFAULT_L2}")
    for name in ("chain_eps", "eps"):
        if name in out:
            v = positive_finite(name, out[name])
            if v >= 1:
                raise ValueError(f"{name} must be in (0, 1); got {v!r}")
            out[name] = v
    for name, least in _AT_LEAST.items():
        if name in out:
            out[name] = integer_at_least(name, out[name], least)
    if "max_states" in out:
        out["max_states"] = integer_at_least("max_states", out["max_states"], 1)
        if out.get("exact_budget") is not None:
            raise ValueError("give max_states or exact_budget (whose max_states caps exact in budget mode), not both")
    if "tail_seconds" in out:
        out["tail_seconds"] = positive_finite("tail_seconds", out["tail_seconds"])
    if "tail_h" in out:
        out["tail_h"] = positive_finite("tail_h", out["tail_h"])
        if out["tail_h"] > 0.25:
            raise ValueError(f"tail_h must be in (0, 0.25] (the finest stage width, a fraction of the mean service "
                             f"time; the coarsest of its three is 4 tail_h); got {out['tail_h']!r}")
    if out.get("exact_budget") is not None:
        out["exact_budget"] = check_budget(out["exact_budget"])
    if "clamp_gupta" in out and not isinstance(out["clamp_gupta"], bool):
        raise ValueError(f"clamp_gupta must be True or False; got {out['clamp_gupta']!r}")
    return out


def _exact(spec, hyper, t, system=None) -> dict:
    """Exact CDF plus exact λ_n, A_n read off its stationary system law (same rules as §3.2/§3.4); with
    ``exact_budget``, a NaN result flagged ``over_budget`` where it does not fit (:mod:`.budget`); a truncation
    stopped by the state cap (``max_states``, else ``state_budget``) is flagged ``truncation_not_reached``
    by :func:`_run`. ``system``: the corrected methods' spread chain, reused when it is the same chain."""
    kw = {k: hyper[k] for k in ("eps", "M", "D", "state_budget") if k in hyper}
    if "max_states" in hyper:  # exact's own name for its cap (system states × R); state_budget is shared
        kw["state_budget"] = hyper["max_states"]
    budget = hyper.get("exact_budget")
    if budget is not None:
        kw.update(state_budget=budget["max_states"], max_seconds=budget["max_seconds"])
    t0 = time.perf_counter()
    try:
        if budget is None:  # asked for by name: within the limits of the guard, or refused
            res = _exact_within_limits(spec, t, system, kw)
        else:
            res = exact_sojourn_cdf(spec.arrival_rate, spec.service_rate, spec.R, t, system=system, **kw)
    except ExactOverBudget as exc:
        info = {"over_budget": str(exc), **{f"plan_{k}": v for k, v in exc.plan.items() if v is not None}}
        return dict(cdf=np.full(t.size, np.nan), lambda_n=np.full(0, np.nan), A_n=np.full(0, np.nan),
                    run_time=time.perf_counter() - t0, L1=-1, L2=-1, faithful=-1, info=info,
                    reason=OVER_BUDGET, violation=np.nan)  # -1: not run (as the merged files' gaps)
    attrs = {"M": res.M, "D": res.D, "n_system_states": res.n_system_states, "n_tagged_states": res.n_tagged_states,
             "truncated_mass": res.truncated_mass, **res.info}
    # exact: L1 = M (min cap), L2 = M + D (largest occupancy)
    return dict(cdf=res.cdf, lambda_n=res.lambda_n, A_n=res.A_n, run_time=time.perf_counter() - t0, L1=res.M,
                L2=res.M + res.D, faithful=False, info=attrs)


def admit_cost(spec, methods, t, hyper) -> None:
    """The methods' predicted time and memory on grid ``t`` admitted before anything is computed
    (:func:`sojourn.jsq_ps.cost.approximate`; exact's time by its own budget, :func:`_exact_within_limits`)."""
    from ...core.checks.guard import admit_parts
    from .. import cost

    admit_parts([p for m in methods for p in cost.approximate(spec, m, t.size, float(t.max()), hyper)])


def _exact_within_limits(spec, t, system, kw):
    """``exact`` asked for by name (no ``exact_budget``): its truncation searched within the guard's limits
    (:func:`sojourn.core.checks.guard.limits`: the time, and the tagged states the memory holds) and the state cap
    ``max_states`` (:func:`sojourn.jsq_ps.solve.exact.exact_plan`: small solves only). Where the limits stop the
    search before the truncation reaches its tolerance, the request is refused (:func:`sojourn.core.checks.guard.admit`)
    with the prediction of the truncation refused; else its prediction is admitted (progress counts the time left
    from it) and exact runs as it always has — where the state cap stops its search first, at the largest caps
    within it, flagged ``truncation_not_reached``."""
    import math

    from ...core.checks.guard import Estimate, admit, limits
    from .budget import BYTES_PER_TAGGED_STATE
    from .exact import exact_plan

    mem_limit, _, sec_limit, _ = limits()
    cap = int(kw.get("state_budget", 400_000))
    mem_cap = int(min(mem_limit / BYTES_PER_TAGGED_STATE, 2**62)) if math.isfinite(mem_limit) else 2**62
    lam, mu, R = spec.arrival_rate, spec.service_rate, spec.R
    eps = kw.get("eps", 1e-10)
    t_max = float(np.max(t)) if np.size(t) else 0.0
    plan = exact_plan(lam, mu, R, t_max, eps, min(cap, mem_cap), sec_limit if math.isfinite(sec_limit) else 1e300,
                      kw.get("M"), kw.get("D"))
    what = f"exact's tagged chain at R = {R}, rho = {spec.rho:.4g}"
    if not plan["fits"]:
        need = float(plan.get("refused_states") or 0)
        refused = f"{what} needs more than {need:.3g} states (system states x R) to reach its truncation {eps:g}"
        if plan.get("bound_by") == "seconds":
            admit(Estimate(float(plan.get("refused_seconds") or math.inf), 0.0, "R/rho", refused))
        if mem_cap < cap:  # the memory, not the state cap, stopped it
            admit(Estimate(0.0, need * BYTES_PER_TAGGED_STATE, "R/rho", refused))
    states = float(plan["system_states"]) * R
    admit(Estimate(float(plan["predicted_seconds"]), states * BYTES_PER_TAGGED_STATE, "R/rho",
                   f"{what}: {plan['system_states']:,} system states, {plan['poisson_terms']:,} uniformised steps"))
    # the same call as without the guard (its truncation search again: the results stay those of every release)
    return exact_sojourn_cdf(lam, mu, R, t, system=system, **kw)


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
    cell = Cell(spec.arrival_rate, spec.service_rate, spec.R, t, **cellkw)
    out = {}
    for m in methods:
        if m == "exact":
            out[m] = _exact(spec, hyper, t, system=cell._cache.get("cchain"))
        elif m == "T" and not spec.is_markovian:  # a general service law: sojourn.jsq_ps.solve.tail_ph
            from .tail_ph import api_result as tail_law_result

            out[m] = tail_law_result(spec, hyper, t)
        elif m == "T":
            out[m] = tail_result(spec, hyper, t)
        else:
            r = cell.run(m)
            out[m] = dict(cdf=r.cdf, lambda_n=r.lambda_n, A_n=r.A_n, run_time=r.run_time, L1=r.L1, L2=r.L2,
                          faithful=r.faithful, info=r.info)
        if "reason" not in out[m]:  # the guards (sojourn.jsq_ps.solve.guards), on every method alike
            out[m]["reason"], out[m]["violation"] = validity(out[m]["cdf"], out[m]["lambda_n"], out[m]["A_n"],
                                                             spec.arrival_rate, spec.R, spec.rho)
            out[m]["reason"] |= truncation_flags(out[m]["info"])  # a truncation short of its tolerance
    return out


def _base_attrs(spec, hyper):
    attrs = provenance(config=spec.to_dict(), hyper=hyper)
    attrs.update(R=spec.R, arrival_rate=spec.arrival_rate, service_rate=spec.service_rate, rho=spec.rho,
                 model=spec.describe(), reference="jsq_ps_methods.md (Palmer & Martín-Pérez, arXiv 2210.17227)")
    return attrs


def _scalar_attr(v):
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    return v


def approximate(spec, method, t=None, **hyper) -> xr.Dataset:
    """Sojourn-time CDF of the M/M/R-JSQ-PS ``spec`` by ``method`` ∈ A…F, A*…F*, exact, T.

    Hyper-parameters: ``L1`` (≥ 2; faithful default Table 4 per R, corrected default chosen from the
    chain's boundary mass), ``L2`` (≥ L1; faithful default 130, corrected default from the
    birth–death tail), ``chain_eps``, ``state_budget``, ``clamp_gupta`` (faithful Gupta λ clamp);
    exact: ``eps`` (the boundary mass each cap must get below, 1e-10), ``M``, ``D``, ``max_states`` (the
    state cap, system states × R, default 400 000; overrides ``state_budget`` for exact: a truncation it
    stops above ``eps`` is flagged ``truncation_not_reached``, raise it to go on), ``exact_budget``
    ({max_states, max_seconds}: run only where the predicted cost fits, else NaN flagged ``over_budget``;
    :mod:`.budget`); T: ``tail_D`` (its spread cap, ≥ 2; default: the largest that keeps the call within
    ``tail_seconds`` CPU seconds, default 0.85; :mod:`.tail`). Every result is checked by the guards
    (:mod:`.guards`): ``valid``, ``validity_reason`` (with the truncation each method promises:
    ``truncation_reached``, ``truncation_tolerance`` and the masses reached in the attributes). Grid: ``t`` or
    ``t_max``/``dt`` (default 0..182.32 step 0.01). Invalid input raises ValueError naming the field.
    """
    _check_method(method)
    _check_spec(spec, [method])
    hyper = dict(hyper)
    t = _grid(t, hyper)
    hyper = _check_hyper({method}, spec, hyper)
    admit_cost(spec, [method], t, hyper)
    r = _run(spec, [method], t, hyper)[method]
    n = np.arange(max(r["lambda_n"].size, r["A_n"].size))
    lam = np.full(n.size, np.nan)
    lam[: r["lambda_n"].size] = r["lambda_n"]
    A = np.zeros(n.size)
    A[: r["A_n"].size] = r["A_n"]
    if r["reason"] & OVER_BUDGET:
        A[:] = np.nan
    attrs = _base_attrs(spec, hyper)
    attrs.update(method=method, faithful=int(r["faithful"]), L1=int(r["L1"]), L2=int(r["L2"]))
    attrs.update({k: _scalar_attr(v) for k, v in r["info"].items()})
    ds = xr.Dataset(
        {"cdf": ("t", r["cdf"], {"long_name": "P(sojourn <= t)"}),
         "lambda_n": ("n", lam, {"long_name": "arrival rate to a server holding n"}),
         "A_n": ("n", A, {"long_name": "P(arrival joins a server holding n)"}),
         "run_time": ((), float(r["run_time"]), {"units": "s"}),
         "valid": ((), np.int8(r["reason"] == 0), valid_attrs()),
         "validity_reason": ((), np.int16(r["reason"]), reason_attrs()),
         "validity_violation": ((), float(r["violation"]), _VIOLATION_ATTRS)},
        coords={"t": t, "n": n},
        attrs=attrs,
    )
    return label_coords(ds)


def approximate_all(spec, methods=FAITHFUL_METHODS, t=None, **hyper) -> xr.Dataset:
    """Several methods on one cell sharing the building blocks; a ``method`` dimension."""
    methods = list(methods)
    _check_spec(spec, methods)
    if not methods:
        raise ValueError(f"methods must be a non-empty list from {list(METHODS)}")
    for m in methods:
        _check_method(m)
    if len(set(methods)) != len(methods):
        raise ValueError(f"methods must not repeat; got {methods}")
    hyper = dict(hyper)
    t = _grid(t, hyper)
    hyper = _check_hyper(set(methods), spec, hyper)
    admit_cost(spec, methods, t, hyper)
    t0 = time.perf_counter()
    res = _run(spec, methods, t, hyper)
    total = time.perf_counter() - t0
    nmax = max(max(r["lambda_n"].size, r["A_n"].size) for r in res.values())
    lam = np.full((len(methods), nmax), np.nan)
    A = np.zeros((len(methods), nmax))
    for i, m in enumerate(methods):
        lam[i, : res[m]["lambda_n"].size] = res[m]["lambda_n"]
        A[i, : res[m]["A_n"].size] = res[m]["A_n"]
        if res[m]["reason"] & OVER_BUDGET:
            A[i] = np.nan  # not computed
    attrs = _base_attrs(spec, hyper)
    attrs["total_run_time"] = total
    if "exact" in res:
        attrs["exact_plan"] = json.dumps(
            {
                k: v
                for k, v in res["exact"]["info"].items()
                if k.startswith("plan_")
                or k
                in (
                    "over_budget",
                    "M",
                    "D",
                    "n_system_states",
                    "poisson_terms",
                    "shared_system_chain",
                    "boundary_mass_min",
                    "boundary_mass_spread",
                    "truncation_tolerance",
                    "truncation_reached",
                    "max_states",
                    "cdf_error_bound",
                    "tagged_states_kept",
                )
            },
            sort_keys=True,
            default=float,
        )
    data = {
        "cdf": (("approximation", "t"), np.stack([res[m]["cdf"] for m in methods])),
        "lambda_n": (("approximation", "n"), lam),
        "A_n": (("approximation", "n"), A),
        "run_time": ("approximation", np.array([res[m]["run_time"] for m in methods]), {"units": "s"}),
        "L1": ("approximation", np.array([res[m]["L1"] for m in methods], dtype=np.int64)),
        "L2": ("approximation", np.array([res[m]["L2"] for m in methods], dtype=np.int64)),
        "faithful": ("approximation", np.array([int(res[m]["faithful"]) for m in methods], dtype=np.int8)),
        "truncation_mass": (
            "approximation",
            np.array(
                [
                    float(res[m]["info"].get("truncated_mass", res[m]["info"].get("truncation_mass", np.nan)))
                    for m in methods
                ]
            ),
        ),
    }
    data["valid"] = ("approximation", np.array([res[m]["reason"] == 0 for m in methods], dtype=np.int8), valid_attrs())
    data["validity_reason"] = ("approximation", np.array([res[m]["reason"] for m in methods], dtype=np.int16),
                               reason_attrs())
    data["validity_violation"] = ("approximation", np.array([res[m]["violation"] for m in methods]), _VIOLATION_ATTRS)
    return label_coords(xr.Dataset(data, coords={"approximation": np.array(methods, dtype=str), "t": t,
                                                 "n": np.arange(nmax)}, attrs=attrs))


def summary(t: np.ndarray, cdf: np.ndarray, probs=(0.99, 0.999, 0.9999, 0.99999)) -> dict:
    """Mean ∫(1−F)dt on the grid (trapezoid; mass beyond the grid ignored) and percentiles x_p where F,
    linear between the grid points, first exceeds p (:func:`sojourn.core.estimates.stats.quantile`, as the comparison's;
    §3.8's first grid t with F(t) > p is the end of that step, up to dt above); NaN if F never exceeds p on
    the grid."""
    from ...core.estimates.stats import quantile

    t = np.asarray(t, dtype=float)
    F = np.asarray(cdf, dtype=float)
    out = {"mean": float(np.trapezoid(1.0 - F, t))}
    x = quantile(t, F, np.asarray(probs, dtype=float))
    for p, v in zip(probs, x, strict=True):
        out[p] = float(v)
    return out
