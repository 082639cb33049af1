"""The experiment grid of the pipeline: config checks, cells, blocks, file names and code hashes.

The Snakemake workflow (``Snakefile``, ``workflow/rules/*.smk``) only decides *what* to compute and
*where files go*; everything it needs from the config goes through this module so the rules stay
declarative and the same logic is unit-tested without Snakemake.

A *cell* is one (service law, R, ρ) point. ρ is written with a fixed number of decimals
(``grid.rho_decimals``, default 2) so file names are stable: ``rho~0.50``, never ``rho~0.5000000001``.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path


#: Methods the analytic engine knows: paper-faithful A–F, corrected A*–F*, and the exact chain.
PAPER_METHODS = ("A", "B", "C", "D", "E", "F")
CORRECTED_METHODS = tuple(m + "*" for m in PAPER_METHODS)
ALL_METHODS = PAPER_METHODS + CORRECTED_METHODS + ("exact",)

#: Service-law name used for the M/M/R system (the one the approximations model).
EXPONENTIAL = "exponential"


class ConfigError(ValueError):
    """A config value that JSON schema cannot reject; the message starts with the key path."""


# -- ρ formatting --------------------------------------------------------------------------------
def format_rho(rho: float, decimals: int) -> str:
    return f"{float(rho):.{int(decimals)}f}"


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
class Cell:
    service: str  # short law name used in file names, e.g. "exponential", "lognormal"
    R: int
    rho: str  # formatted, e.g. "0.50"

    @property
    def load(self) -> float:
        return float(self.rho)

    @property
    def wildcards(self) -> dict:
        return {"service": self.service, "R": str(self.R), "rho": self.rho}


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


def cells(cfg: dict) -> list[Cell]:
    """Every simulation cell: the exponential grid plus the M/G/R laws on their (sub)grid."""
    g = cfg["grid"]
    dec = int(g.get("rho_decimals", 2))
    main = [Cell(EXPONENTIAL, int(R), format_rho(r, dec)) for R in g["R"] for r in rho_values(g)]
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
            out += [Cell(name, int(R), format_rho(r, dec)) for R in R_list for r in rhos]
    return sorted(set(out))


def approximation_cells(cfg: dict) -> list[tuple[int, str]]:
    """(R, ρ) pairs the analytic methods are evaluated at: every (R, ρ) of any simulation cell."""
    return sorted({(c.R, c.rho) for c in cells(cfg)})


def block_label(rho: str | float, width: float, decimals: int) -> str:
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
    (R, label), each mapped to its formatted ρ values (ascending)."""

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


def methods_for(cfg: dict, R: int) -> list[str]:
    """Methods evaluated at R: the configured ones, ``exact`` only up to ``approximation.exact_max_servers``."""
    a = cfg["approximation"]
    out = []
    for m in a["methods"]:
        if m == "exact" and int(R) > int(a.get("exact_max_servers", 0)):
            continue
        out.append(m)
    return out


def L1_for(cfg: dict, R: int) -> int:
    """Table 4's L1 (Markov-chain truncation per server) for R servers."""
    L1 = cfg["approximation"]["L1"]
    return int(L1[int(R) - 1])


# -- whole-config checks beyond JSON schema --------------------------------------------------------
def check_config(cfg: dict) -> None:
    """Range and cross-field checks JSON schema cannot express. Raises :class:`ConfigError` naming the key."""
    from .distributions import parse_law

    sim = cfg["simulation"]
    horizon, warmup = float(sim["horizon"]), float(sim["warmup"])
    cooldown = float(sim["cooldown"] if sim.get("cooldown") is not None else sim["warmup"])
    if warmup + cooldown >= horizon:
        raise ConfigError(
            f"simulation.warmup + simulation.cooldown must be < simulation.horizon; "
            f"got {warmup:g} + {cooldown:g} >= {horizon:g}"
        )
    tg = cfg["time_grid"]
    if float(tg["dt"]) >= float(tg["t_max"]):
        raise ConfigError(f"time_grid.dt must be < time_grid.t_max; got dt={tg['dt']}, t_max={tg['t_max']}")
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
    if max(all_R) > len(approx["L1"]):
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
    if mgr.get("rho") is not None or mgr.get("rho_range") is not None:
        rho_values({**mgr, "rho_decimals": cfg["grid"].get("rho_decimals", 2)}, "mgr")
    for i, c in enumerate((cfg.get("figures") or {}).get("cdf_cells") or []):
        if int(c["R"]) not in cfg["grid"]["R"] or not any(
            abs(float(c["rho"]) - r) < 1e-9 for r in rho_values(cfg["grid"])
        ):
            raise ConfigError(f"figures.cdf_cells[{i}]: (R={c['R']}, rho={c['rho']}) is not a cell of the grid")


# -- code hashes (rerun triggers for package code Snakemake cannot see) ---------------------------------
def code_hash(package_dir, *relative: str) -> str:
    """sha256 (16 hex digits) of the named files/folders (``*.py`` inside folders) under ``package_dir``.

    Passed as a ``params:`` value so that editing e.g. ``src/sojourn/simulate/`` reruns the simulate
    rules and nothing else. Missing paths hash as absent (a file appearing later changes the hash).
    """
    root = Path(package_dir)
    h = hashlib.sha256()
    for rel in sorted(relative):
        p = root / rel
        files = sorted(p.rglob("*.py")) if p.is_dir() else ([p] if p.exists() else [])
        h.update(f"<{rel}>".encode())
        for f in files:
            h.update(str(f.relative_to(root)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def canonical(value):
    """Recursively key-sorted copy of a config value, for ``params:``.

    Snakemake compares params by ``repr``, in which dict order shows: without this, the same settings
    written in another key order (e.g. a YAML dump) would rerun every job."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    return value


def stable_key(*parts) -> str:
    """Short content hash of JSON-able parts (used to address cached simulation results)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cdf_stem(c, decimals=2) -> str:
    """File stem of the CDF figure of a ``figures.cdf_cells`` entry."""
    return f"cdf_R~{int(c['R'])}_rho~{float(c['rho']):.{decimals}f}"


def figure_stems(config: dict) -> list[str]:
    """The figure stems :func:`sojourn.plots.all_figures` writes for ``config`` (the figures rule's outputs)."""
    stems = ["wasserstein_vs_rho", "best_method_map", "percentile_error_vs_rho", "runtime_vs_R"]
    dec = int(config["grid"].get("rho_decimals", 2))
    stems += [cdf_stem(c, dec) for c in (config.get("figures") or {}).get("cdf_cells") or []]
    if (config.get("mgr") or {}).get("laws"):
        stems.append("mgr_laws")
    return stems
