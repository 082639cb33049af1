"""The JSQ-PS study's commands: ``sojourn simulate`` (simulate R PS servers behind a dispatcher, write the
netCDF dataset, print a one-screen summary) and ``sojourn approximate`` (one analytic sojourn-time CDF)."""
from __future__ import annotations

import time

import numpy as np

PERCENTILES = (0.99, 0.999, 0.9999, 0.99999)


def _dispatch(text: str) -> dict:
    text = text.strip().lower()
    if text.startswith("jsq-d"):
        _, _, d = text.partition(":")
        try:
            return {"dispatch": "jsq-d", "choices": int(d)}
        except ValueError:
            raise ValueError(f"dispatch must be jsq|random|round-robin|jsq-d:D with integer D; got {text!r}") from None
    if text in ("jsq", "random", "round-robin"):
        return {"dispatch": text}
    raise ValueError(f"dispatch must be one of jsq, random, round-robin, jsq-d:D; got {text!r}")


def _discipline(text: str) -> dict:
    text = text.strip().lower()
    name, _, value = text.partition(":")
    try:
        if name == "ps" and not value:
            return {"discipline": "ps"}
        if name == "limited":
            return {"discipline": "limited", "ps_limit": int(value)}
        if name == "capacitated":
            return {"discipline": "capacitated", "ps_threshold": float(value)}
    except ValueError:
        pass
    raise ValueError(f"discipline must be ps, limited:C (integer C) or capacitated:THETA; got {text!r}")


def register(subparsers) -> None:
    _register_simulate(subparsers)
    _register_approximate(subparsers)


def _register_simulate(subparsers) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="simulate R PS servers behind a dispatcher and write the sojourn-time histogram (netCDF)",
        description="Simulate the JSQ-PS system (or a variant) and write an xarray/netCDF dataset.",
    )
    p.add_argument("--servers", "-R", type=int, required=True, help="number of servers R >= 1")
    p.add_argument("--load", "--rho", dest="load", type=float, required=True, help="load rho in (0, 1)")
    p.add_argument("--mu", type=float, default=1.0, help="service rate (1/mean service requirement); default 1")
    p.add_argument("--service", default="exponential", help="service law NAME[:k=v,...], rescaled to mean 1/mu")
    p.add_argument("--arrivals", default="exponential", help="inter-arrival law shape (default Poisson)")
    p.add_argument("--dispatch", default="jsq", help="jsq | random | round-robin | jsq-d:D")
    p.add_argument("--discipline", default="ps", help="ps | limited:C | capacitated:THETA")
    p.add_argument("--horizon", type=float, default=160_000.0, help="run length T (default 160000)")
    p.add_argument("--warmup", type=float, default=8_000.0, help="warm-up W (default 8000)")
    p.add_argument("--cooldown", type=float, default=None, help="cool-down C (default = warm-up)")
    p.add_argument("--replications", type=int, default=1, help="independent replications (default 1)")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--backend", default="fast", help="fast (numba) | ciw")
    p.add_argument("--dt", type=float, default=0.01, help="histogram bin width (default 0.01)")
    p.add_argument("--t-max", dest="t_max", type=float, default=182.32, help="last bin left edge (default 182.32)")
    p.add_argument("--output", "-o", required=True, help="output netCDF file")
    p.set_defaults(func=run_simulate)


def run_simulate(args) -> int:
    from ..core.io import write_netcdf
    from ..core.stats import mean_ci, pooled_cdf, quantile
    from .model import JSQPS
    from .simulate import simulate

    kwargs = {**_dispatch(args.dispatch), **_discipline(args.discipline)}
    spec = JSQPS.from_load(args.servers, args.load, mu=args.mu, service=args.service, arrivals=args.arrivals, **kwargs)
    t0 = time.perf_counter()
    ds = simulate(spec, horizon=args.horizon, warmup=args.warmup, cooldown=args.cooldown,
                  replications=args.replications, seed=args.seed, backend=args.backend, dt=args.dt,
                  t_max=args.t_max)
    wall = time.perf_counter() - t0
    write_netcdf(ds, args.output)

    k = ds.sizes["replication"]
    m, hw = mean_ci(ds["mean"].values)
    F = pooled_cdf(ds["count"].values, ds["overflow"].values)
    edges = ds["t"].values + args.dt  # the pooled CDF is known at the right bin edges
    qs = quantile(edges, F, np.array(PERCENTILES))
    print(f"model        {spec.describe()}")
    print(f"dispatch     {spec.dispatch}{'' if spec.choices is None else f' (d={spec.choices})'}, "
          f"discipline {spec.discipline}, backend {ds.attrs['backend']} ({ds.attrs['kernel']} kernel)")
    print(f"window       horizon {args.horizon:g}, warm-up {ds.attrs['warmup']:g}, cool-down {ds.attrs['cooldown']:g}, "
          f"{k} replication(s), seed {args.seed}")
    print(f"customers    {int(ds['n_customers'].sum()):,} recorded ({int(ds['overflow'].sum())} beyond t_max)")
    ci = "n/a (1 replication)" if not np.isfinite(hw) else f"± {hw:.4g} (95% t-interval across replications)"
    print(f"mean sojourn {m:.6g} {ci}")
    print(f"mean number  {float(ds['mean_number_per_server'].mean()):.6g} per server (time average)")
    for p, q in zip(PERCENTILES, qs):
        label = f"{100 * p:g}th"
        print(f"{label:>9} percentile  {q:.4g}" if np.isfinite(q) else f"{label:>9} percentile  > t_max")
    print(f"wall time    {wall:.3f} s (simulation {float(ds['wall_time'].sum()):.3f} s)")
    print(f"output       {args.output}")
    return 0


def _register_approximate(subparsers) -> None:
    from .naming import ALL_METHODS as METHODS

    p = subparsers.add_parser("approximate", help="analytic sojourn-time CDF of M/M/R-JSQ-PS (methods A-F, A*-F*, exact)",
                              description="Analytic sojourn-time CDF of M/M/R-JSQ-PS; prints the mean and high percentiles.")
    p.add_argument("--servers", "-R", type=int, required=True, help="number of servers R >= 1")
    p.add_argument("--load", "--rho", dest="load", type=float, required=True, help="load rho in (0, 1)")
    p.add_argument("--mu", type=float, default=1.0, help="service rate (default 1)")
    p.add_argument("--method", required=True, help=f"one of {', '.join(METHODS)}")
    p.add_argument("--L1", type=int, default=None, help="chain truncation (faithful default: Table 4)")
    p.add_argument("--L2", type=int, default=None, help="tail truncation (faithful default: 130)")
    p.add_argument("--t-max", dest="t_max", type=float, default=182.32, help="grid end (default 182.32)")
    p.add_argument("--dt", type=float, default=0.01, help="grid step (default 0.01)")
    p.add_argument("--output", "-o", required=True, help="output netCDF file")
    p.set_defaults(func=run_approximate)


def run_approximate(args) -> int:
    from ..core.io import write_netcdf
    from .analytic.api import approximate, summary
    from .model import JSQPS

    spec = JSQPS.from_load(args.servers, args.load, args.mu)
    hyper = {k: getattr(args, k) for k in ("L1", "L2") if getattr(args, k) is not None}
    ds = approximate(spec, args.method, t_max=args.t_max, dt=args.dt, **hyper)
    write_netcdf(ds, args.output)
    s = summary(ds["t"].values, ds["cdf"].values)
    print(f"{spec.describe()}  method={args.method}  L1={ds.attrs['L1']}  L2={ds.attrs['L2']}  "
          f"run_time={float(ds['run_time']):.3f}s")
    print(f"mean sojourn (integral of 1-F over the grid): {s['mean']:.6g}")
    for p in (0.99, 0.999, 0.9999, 0.99999):
        v = s[p]
        txt = f"{v:.6g}" if v == v else f"> t_max ({ds['t'].values[-1]:g})"
        print(f"{100 * p:g}th percentile: {txt}")
    print(f"wrote {args.output}")
    return 0
