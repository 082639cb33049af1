"""The command-line flags every study's ``simulate`` shares, built once: the run window (``--horizon``,
``--warmup``, ``--cooldown``), the replications (``--replications``, ``--seed``), the histogram grid (``--dt``,
``--t-max``), the cost limits (``--max-memory``, ``--max-time``), the precision target (``--precision`` …) and the
output file (``--output``, ``--mkdir``). A study adds only what is its own.

Argparse-level only: building a parser imports nothing heavy (no numpy, scipy, xarray, dask), so that every
``--help`` answers at once; what checks or uses a flag's value is imported by the command that runs
(tests/workflow/test_cli_imports.py keeps it so)."""
from __future__ import annotations

from .config import DEFAULT_CONFIDENCE
from .guard import (
    NONNEGATIVE,
    POSITIVE,
    SEED,
    Amount,
    Int,
    Real,
    Text,
    excludes,
    requires,
)


def add_window(p, *, horizon: float, unit: str, settle: str = "", cooldown: bool = True) -> None:
    """``--horizon`` (default ``horizon``), ``--warmup`` (default 5 % of it), and ``--cooldown`` (default the
    warm-up); ``unit`` names what is recorded (customers, jobs); ``settle`` adds why the warm-up is enough."""
    p.add_argument("--horizon", type=POSITIVE, default=horizon,
                   help=f"run length T per replication, in time units (default {horizon:g})")
    p.add_argument("--warmup", type=NONNEGATIVE, default=None,
                   help=f"warm-up W: {unit} arriving before it are not recorded (default 5%% of --horizon: "
                        f"{0.05 * horizon:g} of {horizon:g}{'; ' + settle if settle else ''})")
    if cooldown:
        p.add_argument("--cooldown", type=NONNEGATIVE, default=None,
                       help=f"cool-down C: {unit} arriving after T - C are not recorded (default = the warm-up); "
                            "--warmup + --cooldown must be < --horizon")


def add_run(p, *, dt: float, t_max: float, what: str = "sojourn time", replications: int = 10) -> None:
    """``--replications`` (default ``replications``, each printed value with its CI across them), ``--seed``,
    and the histogram grid of ``what``: ``--dt``, ``--t-max``."""
    p.add_argument("--replications", type=Int(1), default=None,
                   help=f"independent replications (default {replications}; every mean and percentile is printed "
                        "with its confidence interval across them, none with 1)")
    p.add_argument("--seed", type=SEED, default=0, help="base seed, 0 to 2**64 - 1 (default 0)")
    p.add_argument("--dt", type=POSITIVE, default=dt, help=f"{what} histogram bin width (default {dt:g})")
    p.add_argument("--t-max", dest="t_max", type=POSITIVE, default=t_max,
                   help=f"last bin's left edge (default {t_max:g})")
    add_limits(p)


def add_limits(p) -> None:
    """``--max-memory`` and ``--max-time``: the limits a request's predicted cost is checked against before
    anything is allocated (:func:`sojourn.core.checks.inputs.check_cost`); raise them to run a large request on
    purpose."""
    p.add_argument("--max-memory", dest="max_memory", type=Amount("size"), default=None, metavar="SIZE",
                   help="refuse a request predicted to need more memory than this, e.g. 16G or none (default: "
                        "$SOJOURN_MAX_MEMORY, else 80%% of the memory available)")
    p.add_argument("--max-time", dest="max_time", type=Amount("duration"), default=None, metavar="DURATION",
                   help="refuse a request predicted to take longer than this, e.g. 30m, 2h or none (default: "
                        "$SOJOURN_MAX_TIME, else 1h)")


#: a law NAME[:key=value,...] (sojourn.core.laws.distributions.parse_law, checked by the command that reads it)
LAW = Text("law", "a law NAME[:key=value,...]")
#: an output file's path (what the command writes: checked by sojourn.core.checks.inputs.check_output before any
#: compute)
OUTPUT = Text("output", "a file path")


def add_output(p, required: bool = True) -> None:
    """``--output`` (required unless ``required=False``) and ``--mkdir`` (only with ``--output``)."""
    p.add_argument("--output", "-o", type=OUTPUT, required=required, default=None,
                   help=f"{'' if required else 'optional '}output netCDF file (its folder must exist, see --mkdir)")
    p.add_argument("--mkdir", action="store_true", help="create the output file's missing folders")
    requires(p, "--mkdir", "--output")


def add_group(subparsers, name: str, help: str, description: str, commands) -> None:
    """``sojourn <name> <command> …``: a command group whose commands each ``register(sub)`` themselves."""
    p = subparsers.add_parser(name, help=help, description=description)
    sub = p.add_subparsers(dest=f"{name.replace('-', '_')}_command", required=True)
    for register in commands:
        register(sub)


def add_precision(p, statistic: str, at: float | None) -> None:
    """``--precision STATISTIC[:AT]``, ``--relative-half-width``, ``--max-replications``, ``--min-replications``
    (read back by :func:`sojourn.core.estimates.precision.from_flags`)."""
    at_txt = f":{at:g}" if at is not None else ""
    p.add_argument("--precision", type=Text("precision", "STATISTIC[:AT]"), default=None, metavar="STATISTIC[:AT]",
                   help=f"add replications until the {100 * DEFAULT_CONFIDENCE:g}%% CI of a statistic is narrow "
                        f"enough: percentile:P (level P in percent), mean, cdf:T (F at time T); e.g. "
                        f"{statistic}{at_txt}. Excludes --replications")
    p.add_argument("--relative-half-width", dest="relative_half_width", type=Real(0.0, 1.0, lo_open=True), default=None,
                   help="with --precision: target half-width relative to the estimate (default 0.05)")
    p.add_argument("--max-replications", dest="max_replications", type=Int(2), default=None,
                   help="with --precision: the cap (default 200)")
    p.add_argument("--min-replications", dest="min_replications", type=Int(2), default=None,
                   help="with --precision: no stop before this many (default 5)")
    for flag in ("--relative-half-width", "--max-replications", "--min-replications"):
        requires(p, flag, "--precision")
    excludes(p, "--precision", "--replications", why="--precision chooses the number of replications")
