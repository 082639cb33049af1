"""The JSQ-PS study's commands: ``sojourn simulate`` (simulate R PS servers behind a dispatcher, write the
netCDF dataset, print a one-screen summary) and ``sojourn approximate`` (one analytic sojourn-time CDF)."""
from __future__ import annotations

import math
import sys
import time

from ..core.checks import validate as V
from ..core.checks.config import DEFAULT_CONFIDENCE
from ..core.checks.flags import LAW, add_limits, add_output, add_precision, add_run, add_window
from ..core.checks.guard import POSITIVE, PROBABILITY_OPEN, Choice, Int, Text
from ..core.checks.inputs import (
    check_output,
    choice,
    did_you_mean,
    in_flag_terms,
)
from .naming import DEFAULT_PERCENTILE

# Building the parser imports nothing heavy (numpy, scipy, xarray, dask: each --help answers at once); the
# commands import what they run (tests/workflow/test_cli_imports.py)

DISPATCH_FORMS = ("jsq", "random", "round-robin", "jsq-d:D")

# API field names in the messages of the library -> the flags a user of these commands typed
FLAGS = {
    "rho": "--rho",
    "mu": "--mu",
    "horizon": "--horizon",
    "warmup": "--warmup",
    "cooldown": "--cooldown",
    "replications": "--replications",
    "seed": "--seed",
    "backend": "--backend",
    "dt": "--dt",
    "t_max": "--t-max",
    "method": "--method",
    "L1": "--L1",
    "L2": "--L2",
    "max_states": "--max-states",
    "choices": "--dispatch jsq-d:D",
    "ps_limit": "--discipline limited:C",
    "ps_threshold": "--discipline capacitated:THETA",
}


def _in_flag_terms(message: str) -> str:
    """A library message with its field names (``t_max``, ``L1`` …) replaced by the flags (``--t-max``)."""
    return in_flag_terms(message, FLAGS)


def _dispatch(text: str) -> dict:
    name, colon, d = text.strip().lower().partition(":")
    if name == "jsq-d":
        try:
            return {"dispatch": "jsq-d", "choices": int(d)}
        except ValueError:
            raise ValueError(f"--dispatch jsq-d:D needs an integer number of choices D; got {text!r}") from None
    if name in DISPATCH_FORMS and not colon:
        return {"dispatch": name}
    raise ValueError(f"--dispatch must be one of {', '.join(DISPATCH_FORMS)}; got {text!r}"
                     f"{did_you_mean(name, ('jsq', 'random', 'round-robin', 'jsq-d'))}")


def _discipline(text: str) -> dict:
    name, _, value = text.strip().lower().partition(":")
    try:
        if name == "ps" and not value:
            return {"discipline": "ps"}
        if name == "limited":
            return {"discipline": "limited", "ps_limit": V.integer_at_least("--discipline limited:C", int(value), 1)}
        if name == "capacitated":
            return {"discipline": "capacitated",
                    "ps_threshold": V.positive_finite("--discipline capacitated:THETA", float(value))}
    except ValueError as exc:
        if str(exc).startswith("--discipline"):
            raise
    raise ValueError(f"--discipline must be ps, limited:C (integer C >= 1) or capacitated:THETA (THETA > 0); "
                     f"got {text!r}{did_you_mean(name, ('ps', 'limited', 'capacitated'))}")


def _law(flag: str, text: str):
    from ..core.laws.distributions import parse_law

    try:
        return parse_law(text)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None


def _time_grid(args) -> None:
    from ..core.checks.timegrid import grid_size

    V.positive_finite("--dt", args.dt)
    V.positive_finite("--t-max", args.t_max)
    try:
        grid_size(args.t_max, args.dt)
    except ValueError as exc:
        raise ValueError(_in_flag_terms(str(exc))) from None


def _system(args):
    """R, rho, mu checked in flag terms (cheap; before any compute)."""
    R = V.integer_at_least("-R", args.R, 1)
    rho = V.probability_open("--rho", args.rho)
    mu = V.positive_finite("--mu", args.mu)
    return R, rho, mu


def system_flags(p) -> None:
    """-R and --rho, the project's names (config keys, dataset coordinates); --servers and --load are their aliases."""
    action = p.add_argument("-R", "--servers", dest="R", metavar="R", type=Int(1), required=True,
                            help="number of servers R >= 1 (alias --servers)")
    action.primary = "-R"
    p.add_argument("--rho", "--load", dest="rho", metavar="RHO", type=PROBABILITY_OPEN, required=True,
                   help="load rho = Lambda/(R mu) in (0, 1) (alias --load)")


def _spec(build):
    """Build a spec; a remaining ValueError of the model speaks of flags, not of the model's fields."""
    try:
        return build()
    except ValueError as exc:
        raise ValueError(_in_flag_terms(str(exc))) from None


def register(subparsers) -> None:
    from .plan.cli import register as register_plan

    _register_simulate(subparsers)
    _register_approximate(subparsers)
    register_plan(subparsers)


SIMULATE = ("Simulate the JSQ-PS system (or a variant) and write an xarray/netCDF dataset. The summary gives the mean "
            f"sojourn and the 99th to 99.999th percentiles with {100 * DEFAULT_CONFIDENCE:g}% confidence intervals "
            "across replications, each to the digits its interval supports; a percentile with fewer than 100 recorded "
            "customers per replication beyond it is reported as 'too few customers' with the --horizon it would need. "
            "The output file holds the summary beside the histograms.")


def _register_simulate(subparsers) -> None:
    help_ = "simulate R PS servers behind a dispatcher and write the sojourn-time histogram (netCDF)"
    p = subparsers.add_parser("simulate", help=help_, description=SIMULATE)
    system_flags(p)
    p.add_argument("--mu", type=POSITIVE, default=1.0, help="service rate (1/mean service requirement); default 1")
    p.add_argument(
        "--service", type=LAW, default="exponential", help="service law NAME[:k=v,...], rescaled to mean 1/mu"
    )
    p.add_argument("--arrivals", type=LAW, default="exponential", help="inter-arrival law shape (default Poisson)")
    p.add_argument("--dispatch", type=Text("dispatch", "a dispatch policy"), default="jsq",
                   help="jsq | random | round-robin | jsq-d:D")
    p.add_argument("--discipline", type=Text("discipline", "a discipline"), default="ps",
                   help="ps | limited:C | capacitated:THETA")
    add_window(p, horizon=160_000.0, unit="customers",
               settle="from empty at load 0.95 one server settles in ~1700 time units")
    add_run(p, dt=0.01, t_max=182.32)
    p.add_argument("--backend", type=Choice("fast", "ciw"), default="fast", help="fast (numba) | ciw")
    add_precision(p, "percentile", DEFAULT_PERCENTILE)
    add_output(p)
    p.set_defaults(func=run_simulate, extra_names={**FLAGS, "R": "-R"})


def _check_simulate(args):
    """Every flag of ``simulate`` in flag terms, then the output file: all before any compute."""
    from ..core.estimates.precision import from_flags as precision_from_flags
    from ..core.estimates.replications import WARMUP_FRACTION
    from .model import JSQPS
    from .simulate import BACKENDS

    R, rho, mu = _system(args)
    horizon = V.positive_finite("--horizon", args.horizon)
    warmup = (WARMUP_FRACTION * horizon if args.warmup is None else V.nonnegative_finite("--warmup", args.warmup))
    cooldown = warmup if args.cooldown is None else V.nonnegative_finite("--cooldown", args.cooldown)
    if not horizon > warmup + cooldown:
        note = " (--cooldown defaults to --warmup)" if args.cooldown is None else ""
        raise ValueError(f"--horizon must be > --warmup + --cooldown = {warmup:g} + {cooldown:g} = "
                         f"{warmup + cooldown:g}{note}; got {horizon:g}")
    args.warmup, args.cooldown = warmup, cooldown  # the window the run uses, defaults resolved
    if args.replications is not None:
        V.integer_at_least("--replications", args.replications, 1)
    V.integer_at_least("--seed", args.seed, 0)
    choice("--backend", args.backend, BACKENDS)
    _time_grid(args)
    precision_from_flags(args, t_max=args.t_max, default_at=DEFAULT_PERCENTILE)
    kwargs = {**_dispatch(args.dispatch), **_discipline(args.discipline)}
    if kwargs.get("choices") is not None and not 1 <= kwargs["choices"] <= R:
        raise ValueError(f"--dispatch jsq-d:D: the number of choices D must be in [1, -R = {R}]; "
                         f"got {kwargs['choices']}")
    service = _law("--service", args.service)
    arrivals = _law("--arrivals", args.arrivals)
    spec = _spec(lambda: JSQPS.from_rho(R, rho, mu=mu, service=service, arrivals=arrivals, **kwargs))
    check_output(args.output, "--output", mkdir=args.mkdir)  # before the estimate is announced
    _simulate_cost(args, spec)
    return spec


def _simulate_cost(args, spec) -> None:
    """The predicted memory (histograms over the grid, per-server state or Ciw's records) and time (events x cost
    per event) of ``simulate``, admitted before any array exists (:func:`sojourn.jsq_ps.cost.simulate`, the same
    estimate the API admits)."""
    import os

    from ..core.checks.guard import admit_parts
    from ..core.runs.threads import threads_for
    from . import cost

    precision = getattr(args, "precision", None)
    reps = (args.max_replications or 200) if precision else (args.replications or 10)
    workers = min(reps, os.cpu_count() or 1) if args.backend == "ciw" else threads_for(reps, None)
    # Ciw is slow: it says what it will take before it starts, however short (issue 31)
    admit_parts(cost.simulate(spec, args.horizon, reps, args.backend, args.dt, args.t_max, workers),
                announce=args.backend == "ciw")


#: what ``sojourn simulate`` imports beside its replications (:func:`_load_first`)
AFTER_REPLICATIONS = ("xarray", "scipy.special", "netCDF4", "sojourn.core.estimates.summary", "sojourn.core.files.io")


def _load_first(spec, args) -> None:
    """With the fast backend, load the replications' kernel before anything else (numba's registries and cache, on
    one core) and then import :data:`AFTER_REPLICATIONS` in a thread beside the replications (the kernels release
    the GIL): about 0.4 s less wall time of a 2.4 s ``sojourn simulate`` (benchmarks/simulate_vs_ciw.py
    --whole-process). The results are those of the serial order."""
    if args.backend != "fast":
        return
    from ..core.runs.threads import import_in_background
    from .raw import check_run, load_kernel

    kernel = check_run(spec, args.horizon, args.warmup, args.cooldown, args.dt, args.t_max, "fast", 200, "auto",
                       None)[6]
    load_kernel(spec, kernel, args.dt)
    import_in_background(AFTER_REPLICATIONS)


def run_simulate(args) -> int:
    from ..core.estimates import runlength
    from ..core.estimates.precision import from_flags as precision_from_flags
    from ..core.estimates.precision import summary as precision_summary
    from ..core.estimates.replications import WARMUP_FRACTION
    from .simulate import SUMMARY_PERCENTILES, simulate, summary

    defaults = (args.warmup is None, args.cooldown is None)
    spec = _check_simulate(args)
    precision = precision_from_flags(args, t_max=args.t_max, default_at=DEFAULT_PERCENTILE)
    t0 = time.perf_counter()
    _load_first(spec, args)
    reps = None if precision is not None else 10 if args.replications is None else args.replications
    ds = simulate(spec, horizon=args.horizon, warmup=args.warmup, cooldown=args.cooldown, replications=reps,
                  seed=args.seed, backend=args.backend, dt=args.dt, t_max=args.t_max, precision=precision)
    wall = time.perf_counter() - t0
    from ..core.estimates.summary import ci_header, mean_text, percentile_text, round_up
    from ..core.files.io import write_netcdf

    s = summary(ds, SUMMARY_PERCENTILES)
    write_netcdf(ds.merge(s), args.output)

    H, W, C = args.horizon, float(ds.attrs["warmup"]), float(ds.attrs["cooldown"])
    k = ds.sizes["replication"]
    n = int(ds["n_customers"].sum())
    print(f"model        {spec.describe()}")
    print(f"dispatch     {spec.dispatch}{'' if spec.choices is None else f' (d={spec.choices})'}, "
          f"discipline {spec.discipline}, backend {ds.attrs['backend']} ({ds.attrs['kernel']} kernel)")
    if all(defaults):
        window = f"warm-up {W:g} and cool-down {C:g} (default: {100 * WARMUP_FRACTION:g}% of the horizon each)"
    else:
        window = (f"warm-up {W:g}{f' (default: {100 * WARMUP_FRACTION:g}% of the horizon)' if defaults[0] else ''}, "
                  f"cool-down {C:g}{' (default: the warm-up)' if defaults[1] else ''}")
    print(f"window       horizon {H:g} per replication, {window}; {k} replication{'s' * (k > 1)}, seed {args.seed}")
    if "stop_reason" in ds:
        print(f"precision    {precision_summary(ds)}")
    print(f"recorded     {100 * (H - W - C) / H:.3g}% of the horizon: {n:,} customers ({n / k:,.0f} per replication; "
          f"{int(ds['overflow'].sum())} beyond t_max)")
    ci = f"  ({100 * DEFAULT_CONFIDENCE:g}% Student-t CI across replications)" if k > 1 else ""
    print(f"mean sojourn {mean_text(ds['mean'].values)}{ci}")
    print(f"mean number  {mean_text(ds['mean_number_per_server'].values)} per server (time average){ci}")
    verdict = runlength.from_dataset(ds)
    run_need = _needed_horizon(verdict, W, C, defaults[0])
    print(f"run length   {runlength.status(verdict, run_need)}")
    print(f"percentiles  {ci_header(s, 'sojourn')}")

    def need(factor: float) -> str:  # the --horizon that records `factor` times the customers of this run
        factor *= 1.2  # a margin: at exactly the estimated length, half the runs would fall short
        longer = H * factor if defaults[0] else W + C + (H - W - C) * factor
        return f"--horizon >= {round_up(longer):,.0f}"

    for i, pc in enumerate(s["percentile"].values):
        label = f"{pc:g}th"
        print(f"{label:>9}    {percentile_text(s, 'sojourn', i, need=need, t_max=args.t_max)}")
    print(f"wall time    {wall:.3f} s (simulation {float(ds['wall_time'].sum()):.3f} s)")
    print(f"output       {args.output}")
    if not verdict.valid:
        print(runlength.warning(verdict, f"{run_need} (at --replications {verdict.replications}); its numbers "
                                         "are printed as computed, do not rely on them"), file=sys.stderr)
    return 0


def _needed_horizon(verdict, W: float, C: float, default_warmup: bool) -> str:
    """The --horizon whose window is the guard's ``needed_window`` (sojourn.core.estimates.runlength)."""
    from ..core.estimates.replications import WARMUP_FRACTION
    from ..core.estimates.runlength import format_length, horizon_for

    H = horizon_for(verdict.needed_window, W, C, WARMUP_FRACTION if default_warmup else None)
    return f"--horizon >= {format_length(H)}"


def _register_approximate(subparsers) -> None:
    from .naming import ALL_METHODS as METHODS

    p = subparsers.add_parser(
        "approximate",
        help="analytic sojourn-time CDF of M/M/R-JSQ-PS (methods A-F, A*-F*, exact, T) "
        "or M/G/R-JSQ-PS (method T with --service)",
        description="Analytic sojourn-time CDF of M/M/R-JSQ-PS, or with --service LAW of "
        "M/G/R-JSQ-PS by method T; prints the mean and high percentiles.",
    )
    system_flags(p)
    p.add_argument("--mu", type=POSITIVE, default=1.0, help="service rate (default 1)")
    p.add_argument("--method", type=Choice(*METHODS), required=True, help=f"one of {', '.join(METHODS)}")
    p.add_argument("--service", type=LAW, default="exponential",
                   help="service law NAME[:k=v,...], rescaled to mean 1/mu (default exponential); any other law "
                        "needs --method T, which tracks the tagged customer's own size in a phase-type "
                        "representation of the law (moments:m1=..,m2=..,m3=.. fits one to three moments)")
    p.add_argument("--L1", type=Int(2), default=None, help="chain truncation (faithful default: Table 4)")
    p.add_argument("--L2", type=Int(2), default=None, help="tail truncation (faithful default: 130)")
    p.add_argument("--max-states", dest="max_states", type=Int(1), default=None,
                   help="state cap of the truncated chain: exact, tagged-chain states (system states x R, default "
                        "400000); A*, B*, D*, E*, system states (default 60000). Raise it where a result is flagged "
                        "truncation_not_reached")
    p.add_argument("--t-max", dest="t_max", type=POSITIVE, default=182.32, help="grid end (default 182.32)")
    p.add_argument("--dt", type=POSITIVE, default=0.01, help="grid step (default 0.01)")
    add_limits(p)
    add_output(p)
    p.set_defaults(func=run_approximate, extra_names={**FLAGS, "R": "-R", "state_budget": "--max-states"})


#: the methods whose chain has a state cap (``--max-states``): exact's ``max_states``, the corrected chain's
#: ``state_budget``
MAX_STATES_METHODS = ("exact", "A*", "B*", "D*", "E*")


def _check_approximate(args):
    """Every flag of ``approximate`` in flag terms, then the output file: all before any compute."""
    from .model import JSQPS
    from .naming import ALL_METHODS, DEFAULT_L2, FAITHFUL_METHODS, table4_L1

    R, rho, mu = _system(args)
    choice("--method", args.method, ALL_METHODS)
    given = [f"--{k}" for k in ("L1", "L2") if getattr(args, k) is not None]
    if args.method in ("exact", "T") and given:
        raise ValueError(f"{' and '.join(given)} {'does' if len(given) == 1 else 'do'} not apply to --method "
                         f"{args.method} (it sizes its own state space); its flags: --t-max, --dt"
                         + (", --max-states" if args.method == "exact" else ""))
    if args.max_states is not None:
        V.integer_at_least("--max-states", args.max_states, 1)
        if args.method not in MAX_STATES_METHODS:
            raise ValueError(f"--max-states does not apply to --method {args.method} (no chain with a state cap); "
                             f"it applies to {', '.join(MAX_STATES_METHODS)}")
        if args.L1 is not None:
            raise ValueError(f"--max-states does not apply with --L1 (method {args.method} then builds the chain "
                             "capped at --L1 per server)")
    if args.L1 is not None:
        V.integer_at_least("--L1", args.L1, 2)
    if args.L2 is None and args.L1 is not None and args.method in FAITHFUL_METHODS and args.L1 > DEFAULT_L2:
        raise ValueError(f"--L2 must be >= --L1 = {args.L1}; the default --L2 is {DEFAULT_L2}: give --L2")
    if args.L2 is not None:
        L1, note = args.L1, ""
        if L1 is None and args.method in FAITHFUL_METHODS:
            L1, note = (
                table4_L1(R),
                f" (the default --L1 of the faithful methods for -R {R}, Table 4)",
            )
        if not (isinstance(args.L2, int) and args.L2 >= max(2, L1 or 2)):
            raise ValueError(f"--L2 must be an integer >= {'--L1 = ' if L1 else ''}{max(2, L1 or 2)}{note}; "
                             f"got {args.L2!r}")
    _time_grid(args)
    service = _law("--service", args.service)
    if service.name != "exponential" and args.method != "T":
        raise ValueError(f"--service {args.service} needs --method T (the other methods solve M/M/R-JSQ-PS, "
                         f"exponential service); got --method {args.method}")
    spec = _spec(lambda: JSQPS.from_rho(R, rho, mu, service=service))
    check_output(args.output, "--output", mkdir=args.mkdir)  # before the estimate is announced
    _approximate_cost(args, spec)
    return spec


def _hyper(args) -> dict:
    """The API's hyper-parameters of ``approximate`` from the flags (``--max-states``: exact's ``max_states``, the
    corrected chain's ``state_budget``)."""
    hyper = {k: getattr(args, k) for k in ("L1", "L2") if getattr(args, k) is not None}
    if args.max_states is not None:  # exact's cap, or the corrected chain's (MAX_STATES_METHODS)
        hyper["max_states" if args.method == "exact" else "state_budget"] = args.max_states
    return hyper


def _approximate_cost(args, spec) -> None:
    """Predicted memory and time of ``approximate`` from the flags that size it, admitted before anything is
    allocated: the estimate the API admits (:func:`sojourn.jsq_ps.cost.approximate`), named in flags."""
    from ..core.checks.guard import admit_parts
    from . import cost

    points = float(args.t_max) / float(args.dt) + 1.0
    admit_parts(cost.approximate(spec, args.method, points, args.t_max, _hyper(args)))


def _truncation_warning(args, spec, ds) -> str:
    """One line: which truncation of ``--method`` stopped short of its tolerance, the mass reached, the
    tolerance and the flag that raises its cap (sojourn.jsq_ps.solve.guards, truncation_not_reached)."""
    a = ds.attrs
    if args.method == "T":
        what = (f"stationary mass {a['top_level_mass']:.2g} on the top level of its level cap M={a['M']} against the "
                f"tolerance {a['truncation_tolerance']:g}")
    elif args.method == "exact":
        what = (f"boundary mass {max(a['boundary_mass_min'], a['boundary_mass_spread']):.2g} (truncated mass "
                f"{a['truncated_mass']:.2g}) at the state cap {a['max_states']} (M={a['M']}, D={a['D']}) against the "
                f"tolerance {a['truncation_tolerance']:g}; raise the cap with --max-states")
    else:
        parts = []
        if not a.get("chain_reached", 1):
            cap, flag = ((f"per-server cap --L1 {args.L1}", "--L1") if args.L1 is not None else
                         (f"state cap {a['chain_max_states']} (system states)", "--max-states"))
            parts.append(f"chain boundary mass {a['chain_boundary_mass']:.2g} at the {cap} against the tolerance "
                         f"{a['chain_tolerance']:g}; raise the cap with {flag}")
        if not a.get("tail_reached", 1):
            parts.append(f"mass {a['tail_mass']:.2g} beyond the tail cut N={a['L2']} against the tolerance "
                         f"{a['tail_tolerance']:g}; raise the cut with --L2")
        what = "; ".join(parts)
    return (f"warning: method {args.method} did not reach its truncation at R={spec.R}, rho={spec.rho:g}: "
            f"{what} (truncation_not_reached; its numbers are printed as computed, do not rely on them)")


#: the survival probability at t_max below which nothing beyond the grid matters for what is printed (the
#: 99.999th percentile is the highest printed, so 1e-5 of the law beyond t_max already hides it)
BEYOND_TOLERANCE = 1e-6


def beyond_t_max(t, cdf, tolerance: float = BEYOND_TOLERANCE) -> dict:
    """What lies beyond the grid's end of an analytic CDF: the mass S = P(T > t_max) = 1 − F(t_max), the tail's
    decay rate γ over the grid's last tenth (log-linear), the mean's missing part ∫_{t_max}^∞ (1 − F) ≈ S/γ and the
    t_max at which the mass would fall below ``tolerance`` (t_max + ln(S/tolerance)/γ), both as if the tail went on
    decaying at γ: a hint, not a bound (processor sharing's tail slows down near load 1, so both understate there).
    ``truncation_significant`` = 1 where S > ``tolerance``. NaN where the CDF is not finite."""
    import numpy as np

    t = np.asarray(t, dtype=float)
    S = 1.0 - np.asarray(cdf, dtype=float)
    out = {"mass_beyond_t_max": float(S[-1]), "tail_decay_rate": float("nan"), "mean_beyond_t_max": float("nan"),
           "t_max_needed": float(t[-1]), "truncation_significant": 0}
    if not np.all(np.isfinite(S)):
        return out
    s_end = max(float(S[-1]), 0.0)
    out["mass_beyond_t_max"] = s_end
    if s_end <= tolerance:
        out["mean_beyond_t_max"] = 0.0 if s_end <= 0 else float("nan")
        return out
    i0 = int(0.9 * (len(t) - 1))
    gamma = float(np.log(S[i0] / s_end) / (t[-1] - t[i0])) if S[i0] > s_end and t[-1] > t[i0] else float("nan")
    out["tail_decay_rate"] = gamma
    if np.isfinite(gamma) and gamma > 0:
        out["mean_beyond_t_max"] = s_end / gamma
        out["t_max_needed"] = float(t[-1] + np.log(s_end / tolerance) / gamma)
    out["truncation_significant"] = 1
    return out


def _length(x: float) -> str:
    from ..core.estimates.runlength import format_length

    return format_length(x) if math.isfinite(x) else "(unknown: the tail does not decay on the grid)"


def beyond_text(b: dict, mean: float, t_max: float) -> str:
    """One line: the mass beyond t_max and what it does to the printed mean."""
    m = b["mass_beyond_t_max"]
    if not math.isfinite(m):
        return "beyond t_max: unknown (the CDF is not finite)"
    if not b["truncation_significant"]:
        return f"beyond t_max ({t_max:g}): P(T > t_max) = {m:.2g} (the mean's integral is complete to that mass)"
    return (f"beyond t_max ({t_max:g}): P(T > t_max) = {m:.3g}; the mean above integrates 1-F up to t_max only: "
            f"TRUNCATED, the true mean is larger")


def run_approximate(args) -> int:
    from ..core.files.io import write_netcdf
    from ..core.runs.progress import working
    from .solve.api import approximate, summary
    from .solve.guards import TRUNCATION_NOT_REACHED

    spec = _check_approximate(args)
    hyper = _hyper(args)
    try:
        with working(f"method {args.method} at R={spec.R}, rho={spec.rho:g}"):
            ds = approximate(spec, args.method, t_max=args.t_max, dt=args.dt, **hyper)
    except ValueError as exc:  # a check of the analytic API that the flag checks above do not repeat
        raise ValueError(_in_flag_terms(str(exc))) from None
    s = summary(ds["t"].values, ds["cdf"].values)
    print(f"{spec.describe()}  method={args.method}  L1={ds.attrs['L1']}  L2={ds.attrs['L2']}  "
          f"run_time={float(ds['run_time']):.3f}s")
    bound = ds.attrs.get("cdf_error_bound")
    if args.method == "exact" and bound is not None:  # sojourn.jsq_ps.solve.exact, "certified bound"
        print(f"the truncation moves the CDF by at most {float(bound):.2g} at any t (computed: the mass that left "
              "the truncated tagged chain; its initial law is the truncated system's)")
    reason = int(ds["validity_reason"])
    if reason & ~TRUNCATION_NOT_REACHED:
        from .solve.guards import describe

        print(f"warning: method {args.method} is not valid at R={spec.R}, rho={spec.rho:g}: "
              f"{describe(reason)} (sojourn.jsq_ps.solve.guards); "
              "its numbers are printed as computed, do not rely on them", file=sys.stderr)
    if reason & TRUNCATION_NOT_REACHED:
        print(_truncation_warning(args, spec, ds), file=sys.stderr)
    beyond = beyond_t_max(ds["t"].values, ds["cdf"].values)
    for k, v in beyond.items():
        ds.attrs[k] = v
    write_netcdf(ds, args.output)
    print(f"mean sojourn (integral of 1-F over the grid): {s['mean']:.6g}")
    print(beyond_text(beyond, s["mean"], args.t_max))
    if beyond["truncation_significant"]:
        print(f"warning: {beyond['mass_beyond_t_max']:.3g} of the sojourn-time law lies beyond --t-max {args.t_max:g}: "
              f"the mean printed is E[min(T, t_max)], a lower bound (the integral stops at t_max), and percentiles "
              f"above {100 * (1 - beyond['mass_beyond_t_max']):.4g} % are beyond the grid; raise --t-max (the tail's "
              f"decay over the grid's last tenth puts {BEYOND_TOLERANCE:g} of the law beyond about "
              f"{_length(beyond['t_max_needed'])}; a tail that slows down, as processor sharing's does near load 1, "
              "needs more)", file=sys.stderr)
    general = args.method == "T" and not spec.is_markovian
    for p in (0.99, 0.999, 0.9999, 0.99999):
        v = s[p]
        txt = f"{v:.6g}" if v == v else f"> t_max ({ds['t'].values[-1]:g})"
        m = ds.attrs.get(f"margin_{100 * p:g}", float("nan")) if args.method == "T" else float("nan")
        if math.isfinite(m) and general:  # the numerical part of the error only (sojourn.jsq_ps.solve.tail_ph)
            txt += f"  (margin {100 * m:.2g} %: the model's value lies within it below)"
        elif math.isfinite(m):  # T's stated bound (sojourn.jsq_ps.solve.tail): never below the true percentile
            above = 100 * ((1 + m) / (1 - m) - 1)
            txt += f"  (never below the true one, at most {above:.2g} % above; margin {100 * m:.2g} %)"
        print(f"{100 * p:g}th percentile: {txt}")
    if general:
        a = ds.attrs
        n = int(a.get("stage_widths", 0))
        widths = ", ".join(f"{a['h'] * 2 ** (n - 1 - i):g}" for i in range(n))
        rep = (f"{a['representation']}" + (f" (stage widths {widths} of the mean, {a['stage_phases']} phases"
                                           + ("" if a.get("widths_at", "D") == "D" else
                                              f"; over the CPU budget, extrapolated on the D − 1 chain with the "
                                              f"{a['widths_at'].split()[1]} width's change to D added")
                                           + ")" if a.get("h") else ""))
        from .solve.tail_ph import model_error_text

        print(f"T with service {spec.service}: the tagged customer's own size as {rep}; the co-residents' sizes "
              f"tracked up to {a['cstar']} of them; spread cap D = {a['D']}. The margins cover the numerical steps "
              "(spread cap, 1 % allowance); the model error is not in them (the other customers' departures beyond "
              f"those tracked are exponential): {model_error_text(spec.service)} (docs/jsq_ps.md)")
    elif args.method == "T":
        print("T is conservative: its survival function lies above the true one by construction (1 % of it is added "
              "everywhere, so its mean is about 1 % high); the margins bound how far above its percentiles may be")
    print(f"wrote {args.output}")
    return 0
