"""``sojourn restart {solve,simulate,optimise,schema}``: the restart study's commands.

Each takes ``--model`` (a YAML model file, see ``sojourn restart schema``, or a built-in example name:
example1, example2, example3), writes an xarray/netCDF file with ``--output`` and prints a summary.
"""
from __future__ import annotations

import sys
import time

from ..core.checks.config import DEFAULT_CONFIDENCE
from ..core.checks.flags import (
    LAW,
    add_group,
    add_limits,
    add_output,
    add_precision,
    add_run,
    add_window,
)
from ..core.checks.guard import (
    NONNEGATIVE,
    POSITIVE,
    PROBABILITY_OPEN,
    Choice,
    Int,
    Text,
    requires,
)

# Building the parser imports nothing heavy (numpy, scipy, xarray, dask: each --help answers at once); the
# commands import what they run (tests/workflow/test_cli_imports.py)


#: what the two restart semantics mean, stated once for --help, the model schema and docs/restart.md (issue 26)
SIGNAL_MEANING = ("a restart signal at a busy queue hits one job chosen uniformly among the n present, so each "
                  "job is hit at rate g/n (g the queue's signal rate; signals finding the queue empty vanish)")
TIMEOUT_MEANING = ("a job's timeout clock counts wall-clock time since it entered the queue or last (re)started, "
                   "not the service it received (under PS with n jobs it receives 1/n of it); at expiry it restarts "
                   "with its success probability, and a fresh timeout is drawn either way")


def register(subparsers) -> None:
    add_group(subparsers, "restart", "multi-class G-networks of PS queues with restart (seed 001)",
              "Restart study: product form, simulation under signal and timeout semantics, optimal restart rate. "
              f"Signal semantics: {SIGNAL_MEANING}. Timeout semantics: {TIMEOUT_MEANING}.",
              (_solve, _simulate, _optimise, _schema))


def _schema(sub):
    s = sub.add_parser("schema", help="print the JSON schema of model files (YAML)")
    s.set_defaults(func=run_schema)


def _solve(sub):
    p = sub.add_parser("solve", help="product-form measures (traffic equations, E[N], E[T], per class and phase)")
    _model_args(p)
    add_limits(p)
    requires(p, "--queue", "--signal-rate", why="--queue says which queue's signal rate --signal-rate sets")
    p.set_defaults(func=run_solve)


def _simulate(sub):
    p = sub.add_parser("simulate", help="simulate under signal or timeout semantics (replications with CIs)",
                       description=f"Simulate a restart model. Signal semantics: {SIGNAL_MEANING}. Timeout semantics: "
                                   f"{TIMEOUT_MEANING}.")
    _model_args(p)
    p.add_argument("--semantics", type=Choice("signal", "timeout"), default="signal",
                   help=f"signal: Poisson restart signals (G-network): {SIGNAL_MEANING}; timeout: a timeout per job: "
                        f"{TIMEOUT_MEANING}")
    p.add_argument("--timeout", type=LAW, default=None,
                   help="timeout law with --semantics timeout, e.g. deterministic:value=0.5 or exponential:rate=2 "
                        "(wall-clock time since the job entered the queue or last restarted, not service received)")
    _sim_args(p)
    add_precision(p, "mean", None)
    requires(p, "--queue", "--signal-rate", why="--queue says which queue's signal rate --signal-rate sets")
    requires(p, "--timeout", "--semantics", why="timeouts replace restart signals under --semantics timeout")
    p.set_defaults(func=run_simulate)


def _optimise(sub):
    p = sub.add_parser("optimise", help="optimal signal rate g* (product form) beside the simulated timeout optimum")
    _model_args(p)
    p.add_argument("--bounds", nargs=2, type=NONNEGATIVE, default=(0.0, 100.0), metavar=("LO", "HI"),
                   help="search interval of the signal rate (default 0 100)")
    p.add_argument("--taus", type=POSITIVE, nargs="+", default=None,
                   help="deterministic timeouts of the sweep (default: 13 log-spaced over [0.1/g*, 10/g*])")
    p.add_argument("--max-jobs", dest="max_jobs", type=Int(1), default=None,
                   help="a run with more jobs present is stopped and its tau reported unstable (default: where a "
                        "geometric queue of the product form's E[N] at g* gets with probability 1e-3, at least 50)")
    _sim_args(p)
    p.set_defaults(func=run_optimise)


def _model_args(p, output=True):
    p.add_argument("--model", "-m", type=Text("model", "a model file or example name"), required=True,
                   help="YAML model file or example1|example2|example3")
    p.add_argument("--signal-rate", dest="signal_rate", type=NONNEGATIVE, default=None,
                   help="override the external signal rate g of --queue (Poisson; each signal restarts one job chosen "
                        "uniformly among the n present, so each job is hit at rate g/n)")
    p.add_argument("--queue", type=Text("name", "a queue name"), default=None,
                   help="queue whose signal rate is set (default: the only queue)")
    if output:
        add_output(p)


def _sim_args(p):
    add_window(p, horizon=200_000.0, unit="jobs")
    add_run(p, dt=0.05, t_max=200.0, what="response-time")
    p.add_argument(
        "--confidence",
        type=PROBABILITY_OPEN,
        default=DEFAULT_CONFIDENCE,
        help=f"CI level of the printed means and 99th percentile, across replications (default {DEFAULT_CONFIDENCE:g})",
    )


def _window(args) -> None:
    """--horizon, --warmup (default 5 % of --horizon), --cooldown (default the warm-up) and --confidence checked in
    flag terms before any compute; the default warm-up resolved in ``args``."""
    from ..core.checks import validate as V
    from ..core.estimates.replications import WARMUP_FRACTION

    horizon = V.positive_finite("--horizon", args.horizon)
    args.warmup_default = args.warmup is None
    warmup = WARMUP_FRACTION * horizon if args.warmup is None else V.nonnegative_finite("--warmup", args.warmup)
    cooldown = warmup if args.cooldown is None else V.nonnegative_finite("--cooldown", args.cooldown)
    if not horizon > warmup + cooldown:
        note = " (--cooldown defaults to --warmup)" if args.cooldown is None else ""
        raise ValueError(f"--horizon must be > --warmup + --cooldown = {warmup:g} + {cooldown:g} = "
                         f"{warmup + cooldown:g}{note}; got {horizon:g}")
    args.warmup, args.cooldown = warmup, cooldown
    if args.replications is not None:
        V.integer_at_least("--replications", args.replications, 1)
    V.integer_at_least("--seed", args.seed, 0)
    V.probability_open("--confidence", args.confidence)
    _grid(args)


def _grid(args) -> None:
    """--dt and --t-max in flag terms, and the memory of the response-time histograms over that grid checked
    before any of it exists (:func:`sojourn.core.checks.inputs.check_grid`)."""
    from ..core.checks import validate as V
    from ..core.checks.inputs import check_grid, in_flag_terms
    from ..core.checks.timegrid import grid_size

    V.positive_finite("--dt", args.dt)
    V.positive_finite("--t-max", args.t_max)
    try:
        grid_size(args.t_max, args.dt)
    except ValueError as exc:
        raise ValueError(in_flag_terms(str(exc), {"dt": "--dt", "t_max": "--t-max"})) from None
    precision = getattr(args, "precision", None)
    reps = (args.max_replications or 200) if precision else (args.replications or 10)
    sweeps = len(args.taus) if getattr(args, "taus", None) else 13
    cells = sweeps if args.func is run_optimise else 1
    check_grid(
        args.t_max,
        args.dt,
        8.0 * (2 * reps * cells + 6),
        f"the response-time histogram of each of {reps} replications{f' x {cells} timeouts' if cells > 1 else ''}"
        " and the summary",
    )


def _load(args):
    """The model of --model with --signal-rate applied; a model that this rate makes unsolvable or unstable is
    refused here, before any compute, naming the flag (the model's own errors name its keys). Every command that
    loads a model writes --output: it is checked first, before the model is even solved for its stability."""
    from ..core.checks.inputs import check_output
    from .files import load_model
    from .solve import solve

    check_output(args.output, "--output", mkdir=args.mkdir)
    try:
        net = load_model(args.model, check_stable=False)
    except ValueError as exc:  # the file's own errors name its keys; the line names the flag that gave it
        raise ValueError(f"--model {args.model}: {exc}") from None
    if args.signal_rate is not None:
        try:
            net = net.with_signal_rate(args.signal_rate, args.queue)
        except ValueError as exc:
            raise ValueError(_flag_terms(str(exc))) from None
        if getattr(args, "semantics", "signal") == "signal":
            try:
                solve(net)
            except ValueError as exc:
                where = f" at --queue {args.queue}" if args.queue is not None else ""
                raise ValueError(f"--signal-rate {args.signal_rate:g}{where}: {exc}") from None
    elif getattr(args, "semantics", "signal") == "signal":  # the model's own signals: solvable and stable
        try:
            solve(net)
        except ValueError as exc:
            raise ValueError(f"--model {args.model}: {exc}") from None
    return net


def _flag_terms(message: str) -> str:
    from ..core.checks.inputs import in_flag_terms

    return in_flag_terms(message, {"signal_rate": "--signal-rate", "queue": "--queue"})


def run_solve(args) -> int:
    from ..core.files.io import write_netcdf
    from .solve import closed_form, solve

    net = _load(args)
    sol = solve(net)
    write_netcdf(sol.to_dataset(), args.output)
    L = net.layout
    print(f"model      {net.describe()}")
    if sol.iterations:
        print(f"fixed point: {sol.iterations} iterations (departures that become signals)")
    for i, q in enumerate(net.queues):
        print(f"queue {q.name}: signal rate {sol.signal_rate[i]:.6g}, utilisation {sol.queue_load[i]:.6g}, "
              f"E[N] {sol.mean_number[i]:.6g}, E[T] per visit {sol.queue_response_time[i]:.6g}")
    print(f"{'queue/class/phase':<24}{'rho':>12}{'E[N]':>12}")
    for j, lab in enumerate(L.labels):
        print(f"{lab:<24}{sol.rho[j]:>12.6g}{sol.mean_number_type[j]:>12.6g}")
    print(f"network    E[T] = {sol.response_time:.8g}, restarts per unit time {sol.restart_rate:.6g}")
    if len(net.queues) == 1 and not net.has_departure_signals:
        cf = closed_form(net, net.queues[0].signal_rate)
        print(
            f"closed form E[S_eff] = {cf['effective_service']:.8g}, "
            f"E[T] = E[S_eff]/(1 - rho) = {cf['response_time']:.8g}"
        )
    print(f"output     {args.output}")
    return 0


def _timeout_law(args):
    """The law of ``--timeout`` (None without it), which ``--semantics timeout`` needs and no other allows."""
    from ..core.laws.distributions import parse_law

    try:
        timeout = parse_law(args.timeout) if args.timeout else None
    except ValueError as exc:
        raise ValueError(f"--timeout: {exc}") from None
    if args.semantics == "timeout" and timeout is None:
        raise ValueError("--timeout is required with --semantics timeout: a law such as deterministic:value=0.5 or "
                         "exponential:rate=2")
    if args.semantics != "timeout" and timeout is not None:
        raise ValueError(f"--timeout applies only with --semantics timeout; got --semantics {args.semantics}")
    return timeout


def run_simulate(args) -> int:
    from ..core.estimates import runlength
    from ..core.estimates.precision import from_flags as precision_from_flags
    from ..core.estimates.precision import summary as precision_summary
    from ..core.estimates.replications import WARMUP_FRACTION
    from ..core.estimates.summary import (
        ci_header,
        mean_text,
        percentile_text,
        round_up,
        summary_dataset,
    )
    from ..core.files.io import write_netcdf
    from .simulate import DEFAULT_PERCENTILE, SimulationSpec, simulate
    from .solve import solve

    net = _load(args)
    timeout = _timeout_law(args)
    precision = precision_from_flags(args, t_max=args.t_max, default_at=DEFAULT_PERCENTILE)
    _window(args)
    if args.semantics == "timeout":
        for i in range(len(net.queues)):
            net = net.with_signal_rate(0.0, i)
    spec = SimulationSpec(net, args.semantics, timeout)
    reps = None if precision is not None else (10 if args.replications is None else args.replications)
    t0 = time.perf_counter()
    ds = simulate(spec, replications=reps, seed=args.seed, horizon=args.horizon, warmup=args.warmup,
                  cooldown=args.cooldown, dt=args.dt, t_max=args.t_max, precision=precision)
    wall = time.perf_counter() - t0
    conf = args.confidence
    s = summary_dataset(ds["count"].values, ds["overflow"].values, ds["t"].values, args.dt, [99.0],
                        prefix="response_time", replication=ds["replication"].values,
                        means={"mean": ds["mean"].values, "throughput": ds["throughput"].values,
                               "mean_restarts": ds["mean_restarts"].values},
                        confidence=conf, units=ds["mean"].attrs.get("units", ""), what="jobs")
    write_netcdf(ds.merge(s), args.output)
    k = int(ds.sizes["replication"])
    H, W, C = args.horizon, args.warmup, args.cooldown
    n = int(ds["n_customers"].sum())
    c = f"  ({100 * conf:g}% Student-t CI across {k} replications)" if k > 1 else ""
    print(f"model        {spec.describe()}")
    print(f"window       horizon {H:g} per replication, warm-up {W:g}, cool-down {C:g}"
          f"{' (default: 5% of the horizon)' if args.warmup_default else ''}; {k} replication{'s' * (k > 1)}, "
          f"seed {args.seed}")
    if "stop_reason" in ds:
        print(f"precision    {precision_summary(ds)} (response time)")
    print(f"recorded     {100 * (H - W - C) / H:.3g}% of the horizon: {n:,} jobs ({n / k:,.0f} per replication), "
          f"{int(ds['events'].sum()):,} events, {wall:.2f} s")
    print(f"{'mean response time':<19}{mean_text(ds['mean'].values, conf)}{c}")

    def need(factor: float) -> str:  # the --horizon that records `factor` times the jobs of this run
        factor *= 1.2  # a margin: at exactly the estimated length, half the runs would fall short
        return f"--horizon >= {round_up(H * factor if args.warmup_default else W + C + (H - W - C) * factor):,.0f}"

    print(f"{'99th percentile':<19}{percentile_text(s, 'response_time', 0, what='jobs', need=need, t_max=args.t_max)}")
    print(f"{'':<19}({ci_header(s, 'response_time')})")
    print(f"{'mean number':<19}{mean_text(ds['mean_number'].values.sum(axis=-1), conf)}{c}")
    print(f"{'throughput':<19}{mean_text(ds['throughput'].values, conf)}{c}")
    print(f"{'restarts per job':<19}{mean_text(ds['mean_restarts'].values, conf)}{c}")
    if args.semantics == "signal":
        pf = solve(net)
        print(f"product form       E[T] = {pf.response_time:.6g}, E[N] = {pf.mean_number.sum():.6g}")
    verdict = runlength.from_dataset(ds)
    run_need = "--horizon >= " + runlength.format_length(runlength.horizon_for(
        verdict.needed_window, W, C, WARMUP_FRACTION if args.warmup_default else None))
    print(f"run length   {runlength.status(verdict, run_need, what='mean response time')}")
    print(f"output       {args.output}")
    if not verdict.valid:
        print(runlength.warning(verdict, f"{run_need} (at --replications {verdict.replications}); its numbers "
                                         "are printed as computed, do not rely on them", what="mean response time"),
              file=sys.stderr)
    return 0


def run_optimise(args) -> int:
    import math

    from ..core.checks import validate as V
    from ..core.checks.inputs import limits
    from ..core.files.io import write_netcdf
    from .optimise import optimise, report_lines

    lo = V.nonnegative_finite("--bounds LO", args.bounds[0])
    hi = V.positive_finite("--bounds HI", args.bounds[1])
    if not hi > lo:
        raise ValueError(f"--bounds LO HI must satisfy 0 <= LO < HI; got {lo:g} {hi:g}")
    for tau in args.taus or ():
        V.positive_finite("--taus", tau)
    net = _load(args)
    _window(args)
    if args.max_jobs is not None:
        V.integer_at_least("--max-jobs", args.max_jobs, 1)
    cost = None
    if math.isfinite(limits()[2]):  # a pilot times the sweep; refused over --max-time (none: no pilot)
        def cost(seconds: float, what: str) -> None:  # the request's own estimate: checked whatever its size
            from ..core.checks.guard import Estimate, admit

            admit(Estimate(seconds, 0.0, "--horizon/--replications/--taus", what))

    def progress(line: str) -> None:
        print(f"optimise {line}", file=sys.stderr, flush=True)

    try:
        ds = optimise(net, queue=args.queue, bounds=tuple(args.bounds), taus=args.taus,
                      replications=10 if args.replications is None else args.replications,
                      seed=args.seed, confidence=args.confidence, max_jobs=args.max_jobs, cost_check=cost,
                      progress=progress, sim=dict(horizon=args.horizon, warmup=args.warmup, cooldown=args.cooldown,
                                                  dt=args.dt, t_max=args.t_max))
    except ValueError as exc:  # the library's verdicts on the search interval and the sweep, in flag terms
        from ..core.checks.inputs import in_flag_terms

        raise ValueError(
            in_flag_terms(str(exc), {"bounds": "--bounds", "taus": "--taus", "queue": "--queue"})
        ) from None
    write_netcdf(ds, args.output)
    print(f"model  {net.describe()}")
    for line in report_lines(ds):
        print(line)
    print(f"output {args.output}")
    return 0


def run_schema(args) -> int:
    import yaml

    from .schema import MODEL_SCHEMA

    print(yaml.safe_dump(MODEL_SCHEMA, sort_keys=False, allow_unicode=True))
    return 0
