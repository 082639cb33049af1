"""``sojourn plan``: the least number of servers that meets a sojourn-time percentile (:mod:`sojourn.jsq_ps.plan`).

Kept apart from the study's other commands and light at import: the answer's budget is 2 s of wall time,
imports included, so nothing heavy (xarray, scipy.stats, numba) is imported unless the answer needs it.
"""
from __future__ import annotations

import sys

from ...core.checks.flags import LAW, add_limits
from ...core.checks.guard import POSITIVE, SEED, Choice, Int, Text

EXAMPLE = ("sojourn plan --arrival-rate 9000/s --mean-service 1.2ms --budget 100ms --network-latency 28ms "
           "--reliability 0.9999")


DESCRIPTION = ("The least number of processor-sharing servers behind join-the-shortest-queue that keeps "
               "P(T <= deadline) >= reliability, with a table for R-1, R, R+1 (predicted percentile, the method used "
               "and its measured error; with --confirm a simulated percentile with its 95 % CI). "
               f"Example: {EXAMPLE}")


#: a rate or a time with a unit (sojourn.core.checks.units)
RATE = Text("rate", "a rate with a unit such as 9000/s")
TIME = Text("time", "a time with a unit such as 72ms")


def register(subparsers) -> None:
    help_ = "the least number of JSQ-PS servers R with P(sojourn <= deadline) >= reliability"
    p = subparsers.add_parser("plan", help=help_, description=DESCRIPTION)
    g = p.add_argument_group("arrivals (one of)")
    g.add_argument("--arrival-rate", type=RATE, metavar="RATE", help="Poisson arrival rate with a unit: 9000/s, 9/ms")
    g.add_argument("--rho", "--load", dest="rho", type=POSITIVE, metavar="RHO",
                   help="the load at -R (instead of --arrival-rate); may be >= 1 (alias --load)")
    action = g.add_argument("-R", "--servers", dest="R", type=Int(1), metavar="R",
                            help="the number of servers at which --rho is measured (alias --servers)")
    action.primary = "-R"
    g = p.add_argument_group("service (one of)")
    g.add_argument(
        "--mean-service", type=TIME, metavar="TIME", help="mean service requirement with a unit: 1.2ms, 800us"
    )
    g.add_argument("--service-rate", type=RATE, metavar="RATE", help="service rate 1/E[S] with a unit: 833/s")
    p.add_argument("--service-law", type=LAW, default="exponential", metavar="LAW",
                   help="service law NAME[:k=v,...] as for `sojourn simulate --service`, rescaled to the mean "
                        "(default exponential; any other law is answered by T with the law itself, simulated only "
                        "where it fails)")
    g = p.add_argument_group("deadline (one of)")
    g.add_argument("--deadline", type=TIME, metavar="TIME", help="sojourn-time deadline d with a unit: 72ms")
    g.add_argument(
        "--budget", type=TIME, metavar="TIME", help="end-to-end latency budget (with --network-latency): 100ms"
    )
    g.add_argument("--network-latency", type=TIME, metavar="TIME", help="network latency taken from the budget: 28ms")
    p.add_argument("--reliability", type=Text("probability", "a probability"), required=True, metavar="P",
                   help="required P(T <= d), in (0, 1): 0.9999 or 99.99%%")
    p.add_argument(
        "--dispatch",
        type=Text("dispatch", "a dispatch policy"),
        default="jsq",
        help="dispatch policy: only jsq is modelled",
    )
    p.add_argument("--max-servers", type=Int(1), default=64, metavar="N", help="the largest R considered (default 64)")
    p.add_argument("--confirm", action="store_true",
                   help="simulate R-1, R, R+1 and never answer an R the simulation shows to fail")
    p.add_argument("--replications", type=Int(2), default=None, metavar="K",
                   help="replications per simulated R (default 10): with --confirm, or a --service-law that is not "
                        "exponential (where an R is simulated if T with the law fails there)")
    p.add_argument("--seed", type=SEED, default=0, help="base seed of the simulations (default 0)")
    p.add_argument(
        "--unit",
        type=Text("unit", "a time unit"),
        default=None,
        help="time unit of the answer: s, ms, us, ns (default: the deadline's)",
    )
    p.add_argument("--accuracy", type=Text("path", "a file path"), default=None, metavar="CSV",
                   help="an accuracy table (the pipeline's <results>/jsq_ps/accuracy.csv) instead of the shipped one")
    p.add_argument("--format", type=Choice("table", "json"), default="table", help="table (default) or json")
    add_limits(p)
    p.set_defaults(func=run_plan)


def run_plan(args) -> int:
    from ...core.checks.inputs import choice
    from ...core.runs.progress import working
    from .request import FLAGS
    from .result import plan

    choice("--format", args.format, ("table", "json"))
    with working("planning" + (" (simulating to confirm)" if args.confirm else "")):
        res = plan(arrival_rate=args.arrival_rate, rho=args.rho, R=args.R, mean_service=args.mean_service,
                   service_rate=args.service_rate, service_law=args.service_law, deadline=args.deadline,
                   budget=args.budget, network_latency=args.network_latency, reliability=args.reliability,
                   dispatch=args.dispatch, max_servers=args.max_servers, confirm=args.confirm,
                   replications=args.replications, seed=args.seed, unit=args.unit, accuracy=args.accuracy,
                   _names=FLAGS)
    sys.stdout.write((res.to_json() if args.format == "json" else res.table()) + "\n")
    return 0
