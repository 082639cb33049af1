"""``sojourn approximate``: one analytic sojourn-time CDF to netCDF, with a short summary."""
from __future__ import annotations

from ..datasets import write_netcdf
from ..models import JSQPS


def register(subparsers) -> None:
    from .api import METHODS

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
    p.set_defaults(func=run)


def run(args) -> int:
    from .api import approximate, summary

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
