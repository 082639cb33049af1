"""The split-merge study's commands: ``sojourn split-merge {exact,simulate,best}``.

exact     what is known exactly for (n, r, q, λ | load, replica law), each value with its method; netCDF
simulate  replications of split-merge or fork-join; netCDF with histograms; prints means with CIs
best      the feasible (r, q) ranked by mean or percentile latency for (n, λ, replica law)
"""
from __future__ import annotations

import sys
import time

from ..core.checks.config import DEFAULT_CONFIDENCE
from ..core.checks.flags import LAW, add_group, add_limits, add_output, add_precision, add_run
from ..core.checks.guard import (
    NONNEGATIVE,
    POSITIVE,
    PROBABILITY_OPEN,
    SEED,
    Choice,
    Int,
    Text,
)

#: latency percentiles in percent, comma separated (checked by the command: :func:`_percentiles`)
PERCENTILES = Text("percent-list", "percent levels such as 50,90,99")

# Building the parser imports nothing heavy (numpy, scipy, xarray, dask: each --help answers at once); the
# commands import what they run (tests/workflow/test_cli_imports.py)


def register(subparsers) -> None:
    add_group(subparsers, "split-merge", "(n, r, q) workunit replication with quorum (seed 002)",
              "Split-merge / fork-join replication with quorum: exact results, simulation, the best (r, q).",
              (_exact, _simulate, _best))


def _system_args(p, replicas=True):
    p.add_argument("--hosts", "-n", type=Int(1), required=True, help="number of hosts n")
    if replicas:
        p.add_argument("--replicas", "-r", type=Int(1), required=True, help="replicas r per workunit (1 <= r <= n)")
        p.add_argument("--quorum", "-q", type=Int(1), required=True, help="results q needed (1 <= q <= r)")
        g = p.add_mutually_exclusive_group(required=True)
        g.add_argument("--arrival-rate", dest="arrival_rate", type=POSITIVE, help="Poisson arrival rate lambda")
        g.add_argument("--rho", "--load", dest="rho", metavar="RHO", type=PROBABILITY_OPEN,
                       help="load rho in (0, 1): lambda = rho floor(n/r) / E[S_q:r] (alias --load)")
    p.add_argument(
        "--replica-law",
        dest="replica_law",
        type=LAW,
        default="exponential",
        help="replica time law NAME[:k=v,...], e.g. exponential, hyperexponential:probs=0.5/0.5,rates=2/0.667,"
        " phasetype:alpha=0.5/0.5,T=-2/1|0/-1 (default exponential, rate 1)",
    )


#: the model's and the library's field names -> the flags of these commands (errors speak of what was typed)
FLAGS = {"hosts": "--hosts", "replicas": "--replicas", "quorum": "--quorum", "arrival_rate": "--arrival-rate",
         "rho": "--rho", "replica_law": "--replica-law", "quorum_min": "--quorum-min",
         "max_replicas": "--max-replicas", "workunits": "--workunits", "replications": "--replications",
         "seed": "--seed", "criterion": "--criterion", "horizon": "--horizon", "warmup_workunits": "--warmup",
         "warmup_time": "--warmup", "dt": "--dt", "t_max": "--t-max"}


def _in_flag_terms(message: str) -> str:
    from ..core.checks.inputs import in_flag_terms

    return in_flag_terms(message, FLAGS)


def _spec(args, model="split_merge"):
    from .model import SplitMerge

    try:
        if args.rho is not None:
            return SplitMerge.from_rho(args.hosts, args.replicas, args.quorum, args.rho, args.replica_law, model)
        return SplitMerge(args.hosts, args.replicas, args.quorum, args.arrival_rate, args.replica_law, model)
    except ValueError as exc:
        raise ValueError(_in_flag_terms(str(exc))) from None


def _hosts_cost(hosts, replicas) -> None:
    """The hosts' state (a winner tree over floor(n/r) super-servers, fork-join's per-host clocks) checked for
    memory before anything is built (:func:`sojourn.core.checks.inputs.check_cost`)."""
    from ..core.checks.inputs import check_cost

    if isinstance(hosts, int) and hosts >= 1:
        check_cost("--hosts", memory=32.0 * hosts, what=f"the state of {hosts:,} hosts")


def _percentiles(text, flag="--percentiles"):
    """Percent levels ``50,90,99`` -> probabilities; ValueError naming ``flag`` for an empty list, a level
    outside (0, 100), a word, or a level given twice."""
    items = [x.strip() for x in str(text).split(",")]
    if not any(items):
        raise ValueError(f"{flag} must list at least one level in (0, 100), comma separated (e.g. 50,90,99); "
                         f"got {text!r}")
    vals = []
    for x in items:
        try:
            v = float(x)
        except ValueError:
            raise ValueError(f"{flag} must be numbers in (0, 100), comma separated (e.g. 50,90,99); got {x!r} in "
                             f"{text!r}") from None
        if not 0 < v < 100:
            raise ValueError(f"{flag} must be in (0, 100); got {x} in {text!r}")
        if v / 100.0 in vals:
            raise ValueError(f"{flag}: level {x} is given twice in {text!r}; give each level once")
        vals.append(v / 100.0)
    return vals


def _exact(sub):
    p = sub.add_parser("exact", help="exact stability, throughput, mean delay/latency (and percentiles where known)")
    _system_args(p)
    p.add_argument("--percentiles", type=PERCENTILES, default="50,90,99",
                   help="latency percentiles, comma separated (default 50,90,99)")
    add_output(p, required=False)
    add_limits(p)
    p.set_defaults(func=run_exact, extra_names=FLAGS)


def run_exact(args) -> int:
    import numpy as np

    from ..core.checks.inputs import check_output
    from ..core.files.io import write_netcdf
    from .solve import exact_dataset

    spec = _spec(args)
    ps = _percentiles(args.percentiles)
    if args.output:
        check_output(args.output, "--output", mkdir=args.mkdir)
    ds = exact_dataset(spec, ps)
    print(f"system        {spec.describe()}")
    print(f"E[S_q:r]      {float(ds.mean_service):.6g}  ({ds.mean_service.attrs['method']})")
    print(f"max throughput {float(ds.max_throughput):.6g}  (stability: lambda < this)")
    if int(ds.is_exact):
        print(f"mean delay    {float(ds.mean_delay):.6g}  (exact: {ds.mean_delay.attrs['method']})")
        print(f"mean latency  {float(ds.mean_latency):.6g}  (exact: {ds.mean_latency.attrs['method']})")
    elif np.isfinite(ds.attrs.get("qbd_relative_error", np.nan)):  # the QBD ran but missed its tolerance
        print(f"mean delay    not available exactly: the QBD reached an estimated relative error "
              f"{ds.attrs['qbd_relative_error']:.2g}, above its tolerance {ds.attrs['qbd_tolerance']:g} (round-off "
              "near load 1): use `sojourn split-merge simulate`")
    else:
        print("mean delay    not available exactly for this system: use `sojourn split-merge simulate`")
    for pc, v in zip(ds.percentile.values, ds.latency_percentile.values, strict=True):
        txt = (
            f"{v:.6g}  (exact: {ds.latency_percentile.attrs['method']})" if np.isfinite(v) else "not available exactly"
        )
        print(f"latency p{100 * pc:g}".ljust(14) + txt)
    if args.output:
        write_netcdf(ds, args.output)
        print(f"output        {args.output}")
    return 0


def _simulate(sub):
    p = sub.add_parser("simulate", help="simulate split-merge or fork-join with cancellation; write netCDF",
                       description="Simulate split-merge or fork-join and write a netCDF dataset with the histograms "
                                   "and the summary. Means and latency percentiles are printed with "
                                   f"{100 * DEFAULT_CONFIDENCE:g}% confidence intervals across replications, to the "
                                   "digits the interval supports; a percentile with fewer than 100 workunits per "
                                   "replication beyond it is reported as 'too few workunits' with the run length it "
                                   "would need.")
    _system_args(p)
    p.add_argument("--model", type=Choice("split_merge", "fork_join"), default="split_merge",
                   help="split_merge (FCFS, concurrent release; default) or fork_join (cancellation); fork_join with "
                        "q = 1 and r dividing n is split-merge exactly, and its exact values are printed")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--workunits", type=Int(1), default=None, help="recorded workunits per replication (default 500000)")
    g.add_argument("--horizon", type=POSITIVE, default=None, help="or: simulated time per replication")
    p.add_argument("--warmup", type=NONNEGATIVE, default=None,
                   help="warm-up: workunits discarded (with --workunits; default 10%% of --workunits) or time "
                        "(with --horizon; default 10%% of --horizon); must be < --horizon")
    add_run(p, dt=0.01, t_max=200.0, what="latency and delay")
    p.add_argument("--percentiles", type=PERCENTILES, default="50,90,99",
                   help="latency percentiles to print (default 50,90,99)")
    add_precision(p, "mean", None)
    add_output(p)
    p.set_defaults(func=run_simulate, extra_names={**FLAGS, **_SIM_FLAGS})


#: library field names in the run-length and grid checks -> the flags of ``simulate``
_SIM_FLAGS = {"workunits": "--workunits", "horizon": "--horizon", "warmup_workunits": "--warmup",
              "warmup_time": "--warmup", "dt": "--dt", "t_max": "--t-max", "replications": "--replications",
              "seed": "--seed"}


def _run_length(args) -> dict:
    """The run length keywords of simulate from --horizon/--warmup or --workunits/--warmup."""
    kw = {}
    if args.horizon is not None:
        kw.update(horizon=args.horizon, warmup_time=args.warmup)
    else:
        w = args.warmup
        if w is not None and not float(w).is_integer():
            raise ValueError(f"--warmup must be a whole number of workunits with --workunits; got {w!r}")
        kw.update(workunits=500_000 if args.workunits is None else args.workunits,
                  warmup_workunits=None if w is None else int(w))
    return kw


def _report(args, spec, ds, s, plan, ps, wall) -> None:
    """The run's summary on stdout (its run-length warning on stderr): means and percentiles beside the exact
    values, utilisation, throughput, the run-length verdict."""
    import numpy as np

    from ..core.estimates.precision import summary as precision_summary
    from ..core.estimates.runlength import format_length, from_dataset, status, warning
    from ..core.estimates.summary import ci_header, mean_text, percentile_text, round_up
    from .solve import exact_results

    e = exact_results(spec, ps)
    k = int(ds.sizes["replication"])
    workunits, horizon, warm_n, warm_t = plan[:4]
    per_rep = float(ds.workunits.mean())
    print(f"system        {spec.describe()}")
    if args.horizon is None:
        share = 100 * workunits / (workunits + warm_n)
        print(f"run           {k} replication{'s' * (k > 1)}, seed {args.seed}; recorded: {workunits:,} workunits per "
              f"replication after {warm_n:,} discarded ({share:.3g}% of those simulated"
              f"{', warm-up default: 10% of --workunits' if args.warmup is None else ''})")
    else:
        print(
            f"run           {k} replication{'s' * (k > 1)}, seed {args.seed}; "
            f"recorded: {100 * (horizon - warm_t) / horizon:.3g}% "
            f"of the horizon, {int(ds.workunits.sum()):,} workunits ({per_rep:,.0f} per replication"
            f"{'; warm-up default: 10% of --horizon' if args.warmup is None else ''})"
        )
    if "stop_reason" in ds:
        print(f"precision     {precision_summary(ds)} (latency)")
    ci = f"  ({100 * DEFAULT_CONFIDENCE:g}% Student-t CI across replications)" if k > 1 else ""
    for v, label in (("mean_delay", "mean delay"), ("mean_latency", "mean latency")):
        ex = e[v] if e["exact"] else float("nan")
        how = e["delay_method"] + (f"; {e['reduction']}" if e["reduction"] else "")
        tail = f"   exact {ex:.6g} ({how})" if np.isfinite(ex) else "   (no exact value)"
        print(f"{label:14s}{mean_text(ds[v].values)}{ci}{tail}")
    print(f"{'latency':14s}percentiles: {ci_header(s, 'latency')}")

    def need(factor: float) -> str:  # the run length that records `factor` times the workunits of this run
        factor *= 1.2  # a margin: at exactly the estimated length, half the runs would fall short
        if args.horizon is None:
            return f"--workunits >= {round_up(workunits * factor):,.0f}"
        longer = horizon * factor if args.warmup is None else warm_t + (horizon - warm_t) * factor
        return f"--horizon >= {round_up(longer):,.0f}"

    for i, pc in enumerate(ps):
        ex = e["latency_percentile"][i]
        tail = f"   exact {ex:.6g}" if np.isfinite(ex) else ""
        text = percentile_text(s, "latency", i, what="workunits", need=need, t_max=args.t_max)
        print(f"  p{100 * pc:g}".ljust(14) + text + tail)
    print(f"{'utilisation':14s}{mean_text(ds.host_utilisation.values)} held, "
          f"{mean_text(ds.host_computing.values)} computing{ci}")
    print(f"{'throughput':14s}{mean_text(ds.throughput.values)}   (max {spec.max_throughput:.6g}){ci}")
    verdict = from_dataset(ds)

    def needed() -> str:  # the run length whose recording window is the guard's needed_window
        if args.horizon is None:
            return f"--workunits >= {format_length(verdict.needed_window * spec.arrival_rate)}"
        w = verdict.needed_window
        return f"--horizon >= {format_length(w / 0.9 if args.warmup is None else warm_t + w)}"

    print(f"{'run length':14s}{status(verdict, needed(), what='mean latency')}")
    print(f"{'wall time':14s}{wall:.3f} s")
    print(f"{'output':14s}{args.output}")
    if not verdict.valid:
        print(warning(verdict, f"{needed()} (at --replications {verdict.replications}); its numbers are printed as "
                               "computed, do not rely on them", what="mean latency"), file=sys.stderr)


def run_simulate(args) -> int:
    from ..core.checks.inputs import check_output, in_flag_terms
    from ..core.checks.validate import positive_finite
    from ..core.estimates.precision import from_flags as precision_from_flags
    from ..core.estimates.summary import summary_dataset
    from ..core.files.io import write_netcdf
    from .simulate import DEFAULT_PERCENTILE, _plan, admit_cost, simulate

    _hosts_cost(args.hosts, args.replicas)
    spec = _spec(args, args.model)
    kw = _run_length(args)
    ps = _percentiles(args.percentiles)
    for flag, v in (("--dt", args.dt), ("--t-max", args.t_max)):
        positive_finite(flag, v)
    try:  # every run-length and grid check before any compute
        plan = _plan(spec, kw.get("workunits"), kw.get("horizon"), kw.get("warmup_workunits"), kw.get("warmup_time"),
                     args.dt, args.t_max)
    except ValueError as exc:
        raise ValueError(in_flag_terms(str(exc), _SIM_FLAGS)) from None
    precision = precision_from_flags(args, t_max=args.t_max, default_at=DEFAULT_PERCENTILE)
    if args.replications is not None and args.replications < 1:
        raise ValueError(f"--replications must be an integer >= 1; got {args.replications}")
    reps = (args.max_replications or 200) if precision is not None else (args.replications or 10)
    check_output(args.output, "--output", mkdir=args.mkdir)  # before the estimate is announced
    admit_cost(spec, plan, reps)  # the API admits the same estimate (sojourn.split_merge.cost.simulate)
    t0 = time.perf_counter()
    reps = None if precision is not None else (10 if args.replications is None else args.replications)
    ds = simulate(spec, replications=reps, seed=args.seed, dt=args.dt, t_max=args.t_max, precision=precision, **kw)
    wall = time.perf_counter() - t0
    s = summary_dataset(ds["latency_count"].values, ds["latency_overflow"].values, ds["t"].values, args.dt,
                        [100 * p for p in ps], prefix="latency", replication=ds["replication"].values,
                        means={v: ds[v].values for v in ("mean_delay", "mean_latency", "host_utilisation",
                                                         "host_computing", "throughput")},
                        what="workunits")
    write_netcdf(ds.merge(s), args.output)
    _report(args, spec, ds, s, plan, ps, wall)
    return 0


def _best(sub):
    p = sub.add_parser("best", help="rank the feasible (r, q) by mean or percentile latency")
    _system_args(p, replicas=False)
    p.add_argument("--arrival-rate", dest="arrival_rate", type=POSITIVE, required=True,
                   help="Poisson arrival rate lambda")
    p.add_argument(
        "--quorum-min", dest="quorum_min", type=Int(1), default=1, help="smallest acceptable quorum (default 1)"
    )
    p.add_argument("--max-replicas", dest="max_replicas", type=Int(1), default=10, help="largest r tried (default 10)")
    p.add_argument("--criterion", type=Text("criterion", "mean or pNN"), default="mean",
                   help="mean (default) or a latency percentile pNN, e.g. p99")
    p.add_argument("--model", type=Choice("split_merge", "fork_join"), default="split_merge")
    p.add_argument("--workunits", type=Int(1), default=100_000, help="workunits per replication where simulated")
    p.add_argument("--replications", type=Int(1), default=5, help="replications where simulated (default 5)")
    p.add_argument("--seed", type=SEED, default=0, help="base seed (default 0)")
    p.add_argument("--top", type=Int(1), default=10, help="rows to print (default 10)")
    add_output(p, required=False)
    add_limits(p)
    p.set_defaults(func=run_best, extra_names=FLAGS)


def run_best(args) -> int:
    from ..core.checks.inputs import check_output
    from ..core.checks.validate import integer_at_least
    from ..core.files.io import write_netcdf
    from ..core.runs.progress import reporter
    from .best import admit_cost, best, candidates, half_width_text, parse_criterion

    integer_at_least("--top", args.top, 1)
    if args.output:  # before the estimate is announced
        check_output(args.output, "--output", mkdir=args.mkdir)
    try:
        parse_criterion(args.criterion)
        admit_cost(args.hosts, args.replica_law, args.quorum_min, args.max_replicas, args.workunits, args.replications,
                   args.model, 0.01, 200.0)
        candidates(args.hosts, args.arrival_rate, args.replica_law, args.quorum_min, args.max_replicas)
        integer_at_least("--workunits", args.workunits, 1)
        integer_at_least("--replications", args.replications, 1)
        integer_at_least("--seed", args.seed, 0)
    except ValueError as exc:
        raise ValueError(_in_flag_terms(str(exc))) from None

    with reporter("(r, q) pairs") as progress:
        ds = best(args.hosts, args.arrival_rate, args.replica_law, quorum_min=args.quorum_min,
                  max_replicas=args.max_replicas, criterion=args.criterion, workunits=args.workunits,
                  replications=args.replications, seed=args.seed, model=args.model, progress=progress)
    print(ds.attrs["title"])
    level = f"{100 * float(ds.attrs['confidence']):g}%"
    print(f"{'rank':>4s} {'r':>3s} {'q':>3s} {'rho':>6s} {'latency':>12s} {'± (' + level + ')':>10s}  method")
    res, binned = float(ds.attrs.get("resolution", 0.0)), False
    for k in range(min(args.top, ds.sizes["rank"])):
        row = ds.isel(rank=k)
        pm = half_width_text(float(row.half_width), bool(int(row.is_exact)), res)
        binned |= pm.endswith("(bin)")
        print(f"{k + 1:4d} {int(row.replicas):3d} {int(row.quorum):3d} {float(row['rho']):6.3f} "
              f"{float(row.latency):12.6g} {pm:>10s}  {row.method.item()}")
    if binned:
        print(f"'{res:.3g} (bin)': the interval is narrower than the latency histogram's bin width {res:g}, which then "
              "bounds the error (the percentile interpolates the CDF linearly within its bin)")
    if ds.sizes["rank"] >= 2:
        verdict = (f"the top two are WITHIN NOISE (their {level} intervals overlap): more replications/workunits "
                   "are needed to separate them") if ds.attrs["top_two_within_noise"] else "the top two are separated"
        print(verdict)
    if int(ds.attrs.get("too_short", 0)):
        print(f"warning: {ds.attrs['too_short']} simulated (r, q) ran too short to trust (their method says what "
              "--workunits they need); do not rely on their rank", file=sys.stderr)
    if args.output:
        write_netcdf(ds, args.output)
        print(f"output {args.output}")
    return 0
