"""The JSQ-PS study's grid: cross-field config checks, cells, blocks of cells (the Snakemake jobs), and
the per-R method lists. Every function takes the study's config section (``config["jsq_ps"]``).

A *cell* is one (service law, R, ρ) point, ρ a float rounded once to ``grid.rho_decimals`` (default 2) decimals
and carried as that float to the model and the dataset coordinate; only the block file names write it, with fixed
decimals so that they are stable: ``rho~0.50-0.60``, never ``rho~0.5000000001``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..core.checks.config import ConfigError
from ..core.checks.inputs import check_grid
from ..core.checks.timegrid import grid_size
from ..core.estimates.precision import parse as parse_precision
from ..core.laws.distributions import parse_law
from .naming import ALL_METHODS, DEFAULT_PERCENTILE, EXPONENTIAL, format_rho, table4_L1

#: the key path of this study's config section, prefixed to every ConfigError
SECTION = "jsq_ps"


def rho_values(grid_cfg: dict, key: str = "grid") -> list[float]:
    """The ρ values of a grid section: an explicit list ``rho`` or ``rho_range: {start, stop, step}``."""
    decimals = int(grid_cfg.get("rho_decimals", 2))
    if grid_cfg.get("rho") is not None and grid_cfg.get("rho_range") is not None:
        raise ConfigError(f"{key}: give either 'rho' or 'rho_range', not both")
    if grid_cfg.get("rho") is not None:
        values = [float(v) for v in grid_cfg["rho"]]
        where = f"{key}.rho"
    elif grid_cfg.get("rho_range") is not None:
        rr = grid_cfg["rho_range"]
        start, stop, step = float(rr["start"]), float(rr["stop"]), float(rr["step"])
        if step <= 0 or stop < start:
            raise ConfigError(f"{key}.rho_range: need step > 0 and stop >= start; got {rr}")
        unit = 10.0 ** -decimals
        if step < unit * (1 - 1e-9):  # before any load is listed: 1e-9 listed 1e9 of them (2.2 GB, issue 32)
            raise ConfigError(f"{key}.rho_range.step: {step:g} is below one unit of {key}.rho_decimals = {decimals} "
                              f"({unit:g}): its loads would be rounded onto each other; raise the step to at least "
                              f"{unit:g}, or rho_decimals")
        n = int(math.floor((stop - start) / step + 1e-9)) + 1
        values = [round(start + i * step, decimals) for i in range(n)]
        where = f"{key}.rho_range"
    else:
        raise ConfigError(f"{key}: needs 'rho' (a list) or 'rho_range'")
    for v in values:
        if not 0.0 < v < 1.0:
            raise ConfigError(f"{where}: every load must be in (0, 1); got {v!r}")
        if abs(round(v, decimals) - v) > 1e-12:
            raise ConfigError(
                f"{where}: {v!r} has more than {key}.rho_decimals={decimals} decimals; "
                "raise rho_decimals or round the value (file names use fixed decimals)"
            )
    values = sorted({round(v, decimals) for v in values})
    return values


# -- cells -------------------------------------------------------------------------------------
@dataclass(frozen=True, order=True)
class SimCell:
    """One simulation cell: a service law (its short name), R servers, load ρ (rounded to ``rho_decimals``)."""

    service: str  # short law name used in file names, e.g. "exponential", "lognormal"
    R: int
    rho: float


def service_laws(cfg: dict) -> dict[str, str]:
    """Map short service names (used in paths and on the ``service`` dim) to law strings.

    The M/M/R system is always ``exponential``; ``mgr.laws`` adds M/G/R laws (each rescaled to mean 1/μ).
    A law string's name (``lognormal:sigma=0.69`` → ``lognormal``) is its short name, so two laws of the
    same family need an explicit ``name``.
    """
    out = {EXPONENTIAL: "exponential"}
    for i, item in enumerate((cfg.get("mgr") or {}).get("laws") or []):
        if isinstance(item, str):
            law, name = item, item.partition(":")[0].strip().lower()
        else:
            law, name = item["law"], item.get("name") or item["law"].partition(":")[0].strip().lower()
        if name in out:
            raise ConfigError(f"mgr.laws[{i}]: service name {name!r} is used twice; give each law a distinct 'name'")
        out[name] = law
    return out


def cells(cfg: dict) -> list[SimCell]:
    """Every simulation cell: the exponential grid plus the M/G/R laws on their (sub)grid."""
    g = cfg["grid"]
    dec = int(g.get("rho_decimals", 2))
    main = [SimCell(EXPONENTIAL, int(R), r) for R in g["R"] for r in rho_values(g)]
    laws = service_laws(cfg)
    out = list(main)
    mgr = cfg.get("mgr") or {}
    if len(laws) > 1:
        R_list = mgr.get("R") or g["R"]
        if mgr.get("rho") is not None or mgr.get("rho_range") is not None:
            rhos = rho_values({**mgr, "rho_decimals": dec}, "mgr")
        else:
            rhos = rho_values(g)
        for name in laws:
            if name == EXPONENTIAL:
                continue
            out += [SimCell(name, int(R), r) for R in R_list for r in rhos]
    return sorted(set(out))


def approximation_cells(cfg: dict) -> list[tuple[int, float]]:
    """(R, ρ) pairs the analytic methods are evaluated at: every (R, ρ) of any simulation cell."""
    return sorted({(c.R, c.rho) for c in cells(cfg)})


def block_label(rho: float, width: float, decimals: int) -> str:
    """Label of the ρ block holding ``rho``: the interval [k·w, (k+1)·w) of width ``w`` as ``"lo-hi"``.

    A block is fixed by ρ alone (not by which other ρ the config lists), so adding a ρ value changes
    one block and leaves the other blocks' jobs alone. When ``width`` is below one unit of the last
    decimal, every cell is its own block and the label is the formatted ρ itself.
    """
    r = float(rho)
    if width < 10.0 ** (-int(decimals)) - 1e-15:
        return format_rho(r, decimals)
    k = math.floor(r / width + 1e-9)
    return f"{format_rho(k * width, decimals)}-{format_rho((k + 1) * width, decimals)}"


@dataclass(frozen=True)
class Blocks:
    """The Snakemake jobs of a config: simulation blocks (service, R, label) and approximation blocks
    (R, label), each mapped to its ρ values (floats, ascending; the label names the block's file, it is never read
    back)."""

    simulation: dict
    approximation: dict


def blocks(cfg: dict) -> Blocks:
    g = cfg["grid"]
    dec = int(g.get("rho_decimals", 2))
    width = float(g.get("rho_block", 0.1))
    sim: dict = {}
    for c in cells(cfg):
        sim.setdefault((c.service, c.R, block_label(c.rho, width, dec)), []).append(c.rho)
    approx: dict = {}
    for R, rho in approximation_cells(cfg):
        approx.setdefault((R, block_label(rho, width, dec)), []).append(rho)
    return Blocks({k: sorted(v) for k, v in sorted(sim.items())}, {k: sorted(v) for k, v in sorted(approx.items())})


#: the methods that take a general service law (``mgr.methods``)
LAW_METHODS = ("T",)


def law_methods(cfg: dict) -> list[str]:
    """``mgr.methods`` (default ["T"]): the analytic methods run on every M/G/R cell with the law itself."""
    return list((cfg.get("mgr") or {}).get("methods", list(LAW_METHODS)))


def law_blocks(cfg: dict) -> dict:
    """The law-method jobs: the simulation blocks of the M/G/R laws (service ≠ exponential), none without
    ``mgr.methods``."""
    if not law_methods(cfg):
        return {}
    return {k: v for k, v in blocks(cfg).simulation.items() if k[0] != EXPONENTIAL}


def methods_for(cfg: dict, R: int) -> list[str]:
    """Methods evaluated at R: the configured ones, at every R. ``exact`` runs on the cells its
    ``approximation.exact_budget`` covers and is NaN, flagged ``over_budget``, on the others
    (:mod:`sojourn.jsq_ps.solve.budget`), so every block has the same method axis."""
    return list(cfg["approximation"]["methods"])


def exact_budget(cfg: dict) -> dict:
    """The ``approximation.exact_budget`` of the study's config, schema defaults filled in."""
    from .solve.budget import DEFAULT_BUDGET

    return {**DEFAULT_BUDGET, **(cfg["approximation"].get("exact_budget") or {})}


def predicted_task_seconds(cfg: dict) -> tuple[list[tuple[float, str]], list[str]]:
    """What the study predicts of the run time of one Dask task, for checking a worker's walltime:
    ``([(seconds, what), ...], [parts with no prediction])``. ``exact`` runs on an approximation cell only
    where its cost model predicts at most ``approximation.exact_budget.max_seconds``
    (:mod:`sojourn.jsq_ps.solve.budget`), so that is the prediction of the longest exact part of a cell; the
    other methods and the simulation replications have no cost model."""
    out, none = [], ["simulation replications (jsq_ps.simulation)"]
    methods = list(cfg["approximation"]["methods"])
    if "exact" in methods:
        out.append((float(exact_budget(cfg)["max_seconds"]),
                    "exact on one approximation cell (jsq_ps.approximation.exact_budget.max_seconds)"))
    others = [m for m in methods if m != "exact"]
    if others:
        none.append(f"the approximation methods {', '.join(others)}")
    return out, none


def L1_for(cfg: dict, R: int) -> int:
    """L1 (Markov-chain truncation per server) of the faithful methods for R servers: the configured list
    ``approximation.L1`` (one entry per R = 1, 2, …), else Table 4."""
    L1 = cfg["approximation"].get("L1")
    return int(L1[int(R) - 1]) if L1 else table4_L1(int(R))


#: what one job of the Snakemake DAG costs Snakemake itself (its DAG, its job records): measured on the paper
#: config's dry run, rounded up (seconds, bytes per job)
SECONDS_PER_JOB, BYTES_PER_JOB = 0.01, 100e3


def _check_cost(cfg: dict) -> None:
    """Each Dask task of the section admitted by the guard before any job (:func:`sojourn.core.checks.guard.admit`,
    limits from SOJOURN_MAX_TIME / SOJOURN_MAX_MEMORY or the defaults): one replication of every simulation cell
    and the methods of every approximation cell (exact keeps to its own ``exact_budget``), and Snakemake's DAG of
    the blocks; a refusal names the config keys that drive it."""
    from ..core.checks.guard import Estimate, admit, admit_parts, naming
    from . import cost
    from .model import JSQPS

    sim, tg, g = cfg["simulation"], cfg["time_grid"], cfg["grid"]
    names = {"R": "jsq_ps.grid.R", "horizon": "jsq_ps.simulation.window.length", "t_max": "jsq_ps.time_grid.t_max",
             "dt": "jsq_ps.time_grid.dt", "replications": "jsq_ps.simulation.replications",
             "L1": "jsq_ps.approximation.L1", "L2": "jsq_ps.approximation.L2", "grid": "jsq_ps.grid.R/rho",
             "exact_budget": "jsq_ps.approximation.exact_budget"}
    mu = float(g.get("mu", 1.0))
    laws = service_laws(cfg)
    try:
        with naming(names, "config"):
            b = blocks(cfg)
            jobs = len(b.simulation) + len(b.approximation)
            admit(Estimate(SECONDS_PER_JOB * jobs, BYTES_PER_JOB * jobs, "grid", f"{jobs:,} Snakemake jobs (blocks of "
                           "cells)"), record=False)
            worst = {}
            for c in cells(cfg):  # one Dask task: one replication of one cell
                spec = JSQPS.from_rho(c.R, c.rho, mu, service=laws[c.service])
                parts = cost.simulate(spec, float(sim["window"]["length"]), 1, sim.get("backend", "fast"),
                                      float(tg["dt"]), float(tg["t_max"]))
                key = (sum(p.seconds for p in parts), sum(p.memory for p in parts))
                worst = max(worst, {"key": key, "parts": parts}, key=lambda w: w.get("key", (0, 0)))
            if worst:
                admit_parts(worst["parts"], announce=False)
            points = int(float(tg["t_max"]) / float(tg["dt"])) + 1
            methods = [m for m in cfg["approximation"]["methods"] if m != "exact"]
            if "exact" in cfg["approximation"]["methods"]:  # its budget caps what exact may take on one cell
                from .solve.budget import BYTES_PER_TAGGED_STATE

                budget = exact_budget(cfg)
                admit(Estimate(float(budget["max_seconds"]), float(budget["max_states"]) * BYTES_PER_TAGGED_STATE,
                               "exact_budget", "exact on one cell at most (its budget: where its prediction fits)"),
                      record=False)
            for R, rho in approximation_cells(cfg):
                spec = JSQPS.from_rho(R, rho, mu)
                hyper = {"L1": L1_for(cfg, R), "L2": int(cfg["approximation"]["L2"])}
                admit_parts([p for m in methods for p in cost.approximate(spec, m, points, float(tg["t_max"]),
                                                                         {k: v for k, v in hyper.items()
                                                                          if m in ("A", "B", "C", "D", "E", "F")})])
    except ValueError as exc:
        raise ConfigError(str(exc)[len(SECTION) + 1:] if str(exc).startswith(SECTION + ".") else str(exc)) from None


# -- whole-config checks beyond JSON schema --------------------------------------------------------
def check_config(cfg: dict) -> None:
    """Range and cross-field checks JSON schema cannot express, on the study's section. Raises
    :class:`ConfigError` whose message starts with the key path (``jsq_ps.simulation.warmup`` …)."""
    try:
        _check(cfg)
    except ConfigError as exc:
        raise ConfigError(f"{SECTION}.{exc}") from None


def _check(cfg: dict) -> None:
    sim = cfg["simulation"]
    from ..core.estimates.replications import WARMUP_FRACTION

    w = sim["window"]
    length = float(w["length"])
    warmup = float(w["warmup"]) if w.get("warmup") is not None else WARMUP_FRACTION * length  # null: 5 %
    cooldown = float(w["cooldown"]) if w.get("cooldown") is not None else warmup
    if warmup + cooldown >= length:
        raise ConfigError(
            f"simulation.window.warmup + simulation.window.cooldown must be < simulation.window.length; "
            f"got {warmup:g} + {cooldown:g} >= {length:g}"
        )
    tg = cfg["time_grid"]
    try:
        grid_size(tg["t_max"], tg["dt"])
        reps = (
            (sim.get("precision") or {}).get("max_replications", 200) if sim.get("precision") else sim["replications"]
        )
        check_grid(tg["t_max"], tg["dt"], 8.0 * (2 * reps + 6), f"the sojourn histograms of a cell's {reps} "
                   "replications", flags="time_grid.t_max/dt", cli=False)
    except ValueError as exc:
        raise ConfigError(f"time_grid.{exc}" if not str(exc).startswith("time_grid") else str(exc)) from None
    try:
        parse_precision(sim.get("precision"), field="simulation.precision", t_max=float(tg["t_max"]),
                        default_at=DEFAULT_PERCENTILE)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    rho_values(cfg["grid"])
    if len(set(cfg["grid"]["R"])) != len(cfg["grid"]["R"]):
        raise ConfigError(f"grid.R: values must be distinct; got {cfg['grid']['R']}")
    approx = cfg["approximation"]
    for m in approx["methods"]:
        if m not in ALL_METHODS:
            raise ConfigError(f"approximation.methods: unknown method {m!r}; allowed: {', '.join(ALL_METHODS)}")
    if len(set(approx["methods"])) != len(approx["methods"]):
        raise ConfigError(f"approximation.methods: methods must be distinct; got {approx['methods']}")
    all_R = set(cfg["grid"]["R"]) | set((cfg.get("mgr") or {}).get("R") or [])
    if approx.get("L1") and max(all_R) > len(approx["L1"]):
        raise ConfigError(
            f"approximation.L1: needs one entry per R up to max R = {max(all_R)}; got {len(approx['L1'])} entries"
        )
    for i, item in enumerate((cfg.get("mgr") or {}).get("laws") or []):
        law = item if isinstance(item, str) else item["law"]
        try:
            parse_law(law)
        except ValueError as exc:
            raise ConfigError(f"mgr.laws[{i}]: {exc}") from None
    service_laws(cfg)
    mgr = cfg.get("mgr") or {}
    for m in mgr.get("methods", []) or []:
        if m not in LAW_METHODS:
            raise ConfigError(f"mgr.methods: unknown method {m!r}; allowed: {', '.join(LAW_METHODS)} (the methods that "
                              "take a general service law)")
    if mgr.get("rho") is not None or mgr.get("rho_range") is not None:
        rho_values({**mgr, "rho_decimals": cfg["grid"].get("rho_decimals", 2)}, "mgr")
    _check_cost(cfg)
    for i, c in enumerate((cfg.get("figures") or {}).get("cdf_cells") or []):
        if int(c["R"]) not in cfg["grid"]["R"] or not any(
            abs(float(c["rho"]) - r) < 1e-9 for r in rho_values(cfg["grid"])
        ):
            raise ConfigError(f"figures.cdf_cells[{i}]: (R={c['R']}, rho={c['rho']}) is not a cell of the grid")
