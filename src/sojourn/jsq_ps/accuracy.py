"""The accuracy table: how far each approximation's percentiles were from simulation, per (R, ρ, percentile).

Built from a comparison (``comparison.nc``, :mod:`sojourn.jsq_ps.compare`) of the M/M/R system (service law
``exponential``; the approximations model nothing else) by :func:`build_accuracy`, written as CSV by
:func:`write_accuracy` (the pipeline's ``jsq_ps_accuracy`` rule: ``<results>/jsq_ps/accuracy.csv``), shipped
with the package (``sojourn/jsq_ps/data/accuracy.csv``) and read by :func:`read_accuracy` for ``sojourn
plan`` (:mod:`sojourn.jsq_ps.plan`), which picks its method with :meth:`AccuracyTable.choose`.

Columns (one row per R, rho, percentile and approximation computed there; a row without an estimate of the
error — e.g. the simulated percentile beyond the comparison's grid — has empty error columns and usable = 0,
and is kept so that the reader knows the table's ρ grid: a load between rows is read at the row above it):

``R, rho, percentile`` (percent), ``approximation``;
``relative_error_mean, relative_error_ci_low, relative_error_ci_high``: the mean over replications of
    (approximated − simulated percentile) / simulated percentile, and its 95 % CI (the comparison's
    ``relative_percentile_error_*``); negative = the approximation promises shorter sojourns than simulated;
``optimistic``: 1 if the CI of the mean percentile error lies entirely below 0 (an underestimate beyond the
    simulation's noise), 0 if not, −1 without a verdict (the comparison's ``optimistic`` when it has one);
``usable``: 1 if the method may be trusted there at all: computed, its CDF a CDF (``fit_invalid`` = 0,
    and not flagged by the comparison's ``usable``), a finite mean and CI, and a simulated percentile that is a
    reference (:mod:`sojourn.core.estimates.reference`): at least ``min_tail_customers`` (100) customers beyond it in
    every replication (``few_tail_customers`` = 0 in the comparison) and a run the run-length guard did not judge
    too short (``sim_run_valid`` ≠ 0). Below that a replication's percentile is biased towards its largest values
    and the row's error measures the simulation, not the method. The customers beyond the percentile are counted
    as n·(1 − p) per replication, n = Λ·(horizon − warm-up − cool-down) (the window is in the file's header).
    Tables written before this rule (their header: "over all replications") are read with it
    (:func:`parse_accuracy`): a row with fewer than 100 customers per replication beyond its percentile is not
    usable, whatever its column says.

Errors are written with 4 significant digits (the table ships with the package: ~2 MB).

Reading between rows is conservative (:meth:`AccuracyTable.choose`): the nearest ρ at or above the asked
load, the nearest R at or above (beyond the largest R: the largest, flagged as extrapolated), the nearest
percentile at or above; among the usable, non-optimistic methods other than ``exact`` the one with the
smallest |mean relative error|; none → "simulate".

Method T (:mod:`sojourn.jsq_ps.solve.tail`) has rows like any approximation, from the comparison of a run that
computed it (``approximation.methods`` includes it by default); the shipped table predates T and has none. The
planner does not need them: it runs T itself wherever exact does not run cheaply (T's error there is its own
stated margin) and asks the table only where T has failed, with ``exclude=("exact", "T")``.
"""
from __future__ import annotations

import bisect
import csv
import functools
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

#: the shipped table
PACKAGE_TABLE = Path(__file__).resolve().parent / "data" / "accuracy.csv"
COLUMNS = ("R", "rho", "percentile", "approximation", "relative_error_mean", "relative_error_ci_low",
           "relative_error_ci_high", "optimistic", "usable")
#: ``optimistic`` values (as the comparison's)
NO_VERDICT, NOT_OPTIMISTIC, OPTIMISTIC = -1, 0, 1
#: fewer expected customers beyond a percentile, over all replications together, and it is not estimated
MIN_TAIL_CUSTOMERS = 100
SIMULATE = "simulate"
_TOL = 1e-9


# -- building -------------------------------------------------------------------------------------
def build_accuracy(comparison, *, window: float | None = None, mu: float = 1.0,
                   min_tail_customers: float = MIN_TAIL_CUSTOMERS, service: str = "exponential") -> list[dict]:
    """The table's rows from a comparison dataset (see the module doc).

    ``window``: the simulation's recording window, horizon − warm-up − cool-down (time units of the
    comparison, μ = ``mu``), from which the customers beyond each percentile are counted when the comparison
    has no ``few_tail_customers``; without either, every row counts as having enough. Older comparisons
    with a ``method`` dimension are read too.
    """
    import numpy as np

    ds = _of_service(comparison, service)
    dims = ("R", "rho", "approximation", "percentile")
    rel = ds["relative_percentile_error_mean"].transpose(*dims).values.astype(float)
    lo = ds["relative_percentile_error_ci_low"].transpose(*dims).values.astype(float)
    hi = ds["relative_percentile_error_ci_high"].transpose(*dims).values.astype(float)
    err_hi = ds["percentile_error_ci_high"].transpose(*dims).values.astype(float)
    Rs = ds["R"].values.astype(int)
    rhos = ds["rho"].values.astype(float)
    methods = [str(m) for m in ds["approximation"].values]
    pct = ds["percentile"].values.astype(float)
    reps = int(ds.sizes.get("replication", 0))
    shape = rel.shape

    valid = np.ones(shape[:3], bool)
    if "fit_invalid" in ds:
        valid &= ds["fit_invalid"].transpose("R", "rho", "approximation").values == 0
    if "usable" in ds and set(ds["usable"].dims) <= {"R", "rho", "approximation"}:
        valid &= ds["usable"].transpose("R", "rho", "approximation").values.astype(bool)
    valid = np.broadcast_to(valid[..., None], shape)

    if "optimistic" in ds:  # the comparison's own verdict (sojourn.jsq_ps.compare)
        optimistic = ds["optimistic"].transpose(*dims).values.astype(int)
    else:  # the same rule: the CI of the mean percentile error lies entirely below 0
        verdict = np.isfinite(err_hi) & np.isfinite(rel)
        optimistic = np.where(verdict, np.where(err_hi < 0, OPTIMISTIC, NOT_OPTIMISTIC), NO_VERDICT)

    tail, enough = _tail_customers(ds, shape, window, mu, min_tail_customers)
    usable = (valid & enough & np.isfinite(rel) & np.isfinite(lo) & np.isfinite(hi) & (optimistic != NO_VERDICT))

    if "fit_violation" in ds:  # NaN where the method was not computed (compare.fit_validity)
        computed = np.isfinite(ds["fit_violation"].transpose("R", "rho", "approximation").values.astype(float))
    else:
        computed = np.isfinite(rel).any(axis=-1)
    rows = []
    for i, R in enumerate(Rs):
        for j, rho in enumerate(rhos):
            for m, name in enumerate(methods):
                if not computed[i, j, m]:
                    continue  # e.g. exact, which the pipeline runs for small R only
                for q, p in enumerate(pct):
                    rows.append({
                        "R": int(R), "rho": float(rho), "percentile": float(p), "approximation": name,
                        "relative_error_mean": float(rel[i, j, m, q]),
                        "relative_error_ci_low": float(lo[i, j, m, q]),
                        "relative_error_ci_high": float(hi[i, j, m, q]),
                        "optimistic": int(optimistic[i, j, m, q]), "usable": int(bool(usable[i, j, m, q])),
                        "tail_customers": float(tail[i, j, m, q]), "replications": reps,
                    })
    return rows


def _of_service(comparison, service: str):
    """The comparison of one service law (an older one's ``method`` dimension read as ``approximation``);
    ValueError where the law or the variables the table reads are missing."""
    ds = comparison
    if "approximation" not in ds.dims and "method" in ds.dims:
        ds = ds.rename({"method": "approximation"})
    if service not in ds["service"].values.tolist():
        raise ValueError(f"comparison has no {service!r} service law (laws: {ds['service'].values.tolist()})")
    ds = ds.sel(service=service)
    need = ("relative_percentile_error_mean", "relative_percentile_error_ci_low", "relative_percentile_error_ci_high",
            "percentile_error_ci_high")
    missing = [v for v in need if v not in ds]
    if missing:
        raise ValueError(f"comparison lacks {', '.join(missing)}: not a sojourn.jsq_ps.compare dataset")
    return ds


def _tail_customers(ds, shape, window, mu, min_tail_customers):
    """(expected customers beyond each percentile over all replications' ``window``, NaN without a window;
    whether there are enough to judge the row: the comparison's ``few_tail_customers`` where it has it, else
    counted from the window, and its run long enough to trust), each of ``shape`` (R, rho, approximation,
    percentile)."""
    import numpy as np

    Rs, rhos, pct = ds["R"].values.astype(int), ds["rho"].values.astype(float), ds["percentile"].values.astype(float)
    n = None  # expected customers per replication (R, rho)
    if window is not None:
        n = Rs[:, None] * rhos[None, :] * float(mu) * float(window)
    tail = (np.full(shape, np.nan) if n is None
            else np.broadcast_to((n[:, :, None] * (1.0 - pct / 100.0)[None, None, :])[:, :, None, :], shape))
    if "few_tail_customers" in ds:
        enough = ds["few_tail_customers"].transpose("R", "rho", "percentile").values == 0
        enough = np.broadcast_to(enough[:, :, None, :], shape)
    elif n is not None:
        enough = np.round(tail, 6) >= float(min_tail_customers)
    else:
        enough = np.ones(shape, bool)
    if "sim_run_valid" in ds:  # a run too short to trust is no reference either
        enough = enough & np.broadcast_to((ds["sim_run_valid"].transpose("R", "rho").values != 0)[:, :, None, None],
                                          shape)
    return tail, enough


def _fmt(v, digits: int = 10) -> str:
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.{digits}g}"
    return str(v)


#: the columns written with 4 significant digits (the rest exactly)
_ROUNDED = {"relative_error_mean", "relative_error_ci_low", "relative_error_ci_high"}


def write_accuracy(rows: list[dict], output, header: list[str] = ()) -> Path:
    """Write ``rows`` as CSV to ``output`` atomically (a temporary file, then rename), ``#`` lines first."""
    from ..core.files.integrity import write_atomic

    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    fh = io.StringIO(newline="")
    for line in header:
        fh.write(f"# {line}\n")
    w = csv.writer(fh, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([_fmt(r[c], 4 if c in _ROUNDED else 10) for c in COLUMNS])
    write_atomic(output, fh.getvalue().encode("utf-8"))
    return output


def accuracy_from_comparison(comparison_path, output, settings: dict) -> Path:
    """The pipeline rule's body: ``accuracy.csv`` from ``comparison.nc``. ``settings``: ``window`` (the run window
    ``simulation.window``: length, warmup, cooldown), ``mu``, optionally ``min_tail_customers``."""
    from ..core.estimates.replications import check_window
    from ..core.files.io import read_netcdf

    w = settings["window"]
    H, W, C = check_window(float(w["length"]), w.get("warmup"), w.get("cooldown"))  # null: the defaults
    window = H - W - C
    ds = read_netcdf(comparison_path)
    rows = build_accuracy(ds, window=window, mu=float(settings.get("mu", 1.0)),
                          min_tail_customers=float(settings.get("min_tail_customers", MIN_TAIL_CUSTOMERS)))
    header = [
        "sojourn JSQ-PS accuracy table: relative percentile errors of the M/M/R-JSQ-PS approximations against "
        "simulation (columns: sojourn.jsq_ps.accuracy)",
        f"from {Path(comparison_path).name}: sojourn {ds.attrs.get('sojourn_version', '?')}, "
        f"git {ds.attrs.get('git_commit', '?')}; simulation recording window {window:g} (1/mu) per replication, "
        f"{rows[0]['replications'] if rows else 0} replications; usable needs >= "
        f"{settings.get('min_tail_customers', MIN_TAIL_CUSTOMERS):g} customers beyond the percentile per replication",
        *settings.get("note", ()),
    ]
    return write_accuracy(rows, output, header)


# -- reading --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Row:
    approximation: str
    mean: float
    low: float
    high: float
    optimistic: int
    usable: bool


@dataclass
class Choice:
    """What the table says for one (R, ρ, p): the method to use, or ``simulate`` and why."""

    method: str  # an approximation, or "simulate"
    reason: str
    table_R: int | None = None
    table_rho: float | None = None
    table_percentile: float | None = None
    extrapolated: list = field(default_factory=list)  # "R", "rho": the table was left on that side
    error: tuple = (math.nan, math.nan, math.nan)  # the method's relative error: mean, CI low, CI high
    candidates: int = 0
    short: str = ""  # the reason in a few words (a table cell)

    @property
    def simulate(self) -> bool:
        return self.method == SIMULATE


class AccuracyTable:
    """The rows of an accuracy table, indexed for :meth:`choose` and :meth:`error`.

    Built from CSV lines grouped by (R, percentile); a group's rows are parsed when first asked for (a
    query needs one group of the ~50 000 rows, and the planner's answer has a 2 s budget). ``window``: for a
    table written under the pooled rule (its header), the recording window per replication (1/μ) by which a row
    with fewer than ``MIN_TAIL_CUSTOMERS`` customers per replication beyond its percentile is read as not
    usable."""

    def __init__(self, groups: dict, source: str = "", window: float | None = None):
        self._groups = groups  # (R, percentile) -> [line, ...] (unparsed) or {rho: {approximation: Row}}
        self.source = source
        self.window = window
        self.Rs = sorted({R for R, _ in groups})
        self.percentiles = sorted({p for _, p in groups})

    def __len__(self) -> int:
        return sum(len(m) for k in self._groups for m in self._group(k).values())

    def _group(self, key) -> dict:
        g = self._groups[key]
        if isinstance(g, list):
            g = self._groups[key] = _parse_group(g, self.source, key, self.window)
        return g

    def _rhos(self, key) -> list:
        return sorted(self._group(key))

    def _where(self, R: int, rho: float, p: float):
        """(table R, table ρ, table percentile, extrapolated) for a query, or None where not covered."""
        extrapolated = []
        pct = 100.0 * p
        above = [q for q in self.percentiles if q >= pct - _TOL]
        if not above:
            return None
        q = above[0]
        Rs = [r for r in self.Rs if (r, q) in self._groups]
        if not Rs:
            return None
        ge = [r for r in Rs if r >= R]
        if ge:
            Rt = ge[0]
        else:
            Rt = Rs[-1]
            extrapolated.append("R")
        rhos = self._rhos((Rt, q))
        k = bisect.bisect_left(rhos, rho - _TOL)
        if k == len(rhos):
            k = len(rhos) - 1
            extrapolated.append("rho")
        return Rt, rhos[k], q, extrapolated

    def error(self, R: int, rho: float, p: float, approximation: str) -> tuple:
        """(mean, CI low, CI high, table R, table ρ, table percentile, extrapolated) of ``approximation``'s
        relative error at the conservative neighbour of (R, ρ, p); NaNs where the table has no such row."""
        where = self._where(R, rho, p)
        if where is None:
            return (math.nan,) * 3 + (None, None, None, [])
        Rt, rt, q, ext = where
        row = self._group((Rt, q))[rt].get(approximation)
        if row is None or not row.usable:
            return (math.nan,) * 3 + (Rt, rt, q, ext)
        return (row.mean, row.low, row.high, Rt, rt, q, ext)

    def choose(self, R: int, rho: float, p: float, exclude=("exact",)) -> Choice:
        """The most accurate usable, non-optimistic approximation at the conservative neighbour of (R, ρ, p), or
        simulate. ``exclude``: methods that are not candidates (default ``exact``: whether it runs is a question
        of cost, decided by the planner; the planner also excludes T, which it asks the table about only where T
        itself has failed)."""
        where = self._where(R, rho, p)
        if where is None:
            top = f"{self.percentiles[-1]:g}" if self.percentiles else "none"
            return Choice(SIMULATE, f"the accuracy table covers percentiles up to the {top}th",
                          short=f"percentile beyond the table's {top}th")
        Rt, rt, q, ext = where
        rows = self._group((Rt, q))[rt]
        usable = [r for r in rows.values() if r.usable and r.approximation not in exclude]
        ok = [r for r in usable if r.optimistic == NOT_OPTIMISTIC]
        at = f"R = {Rt}, ρ = {rt:g}, {q:g}th percentile"
        if not ok:
            why = (f"every usable approximation is optimistic at {at}" if usable
                   else f"no approximation is usable at {at} (too few simulated customers beyond the percentile, "
                        "or no estimate)")
            return Choice(
                SIMULATE, why, Rt, rt, q, ext, short="all methods optimistic" if usable else "no usable method"
            )
        best = min(ok, key=lambda r: (abs(r.mean), r.approximation))
        return Choice(best.approximation, f"most accurate non-optimistic approximation at {at}", Rt, rt, q, ext,
                      (best.mean, best.low, best.high), len(ok), "most accurate non-optimistic")


def _float(text: str) -> float:
    return float(text) if text else math.nan


def _parse_group(lines: list, source: str, key=None, window: float | None = None) -> dict:
    out: dict = {}
    for line in lines:
        rec = line.rstrip("\n").split(",")
        try:
            usable = rec[8] == "1"
            if usable and window is not None and key is not None:  # the per-replication rule (module doc)
                R, pct = key
                usable = round(R * float(rec[1]) * window * (1.0 - pct / 100.0), 6) >= MIN_TAIL_CUSTOMERS
            row = Row(rec[3], _float(rec[4]), _float(rec[5]), _float(rec[6]), int(rec[7]), usable)
            out.setdefault(float(rec[1]), {})[row.approximation] = row
        except (ValueError, IndexError):
            raise ValueError(f"{source or 'accuracy table'}: malformed row {line.strip()!r}") from None
    return out


def parse_accuracy(lines, source: str = "") -> AccuracyTable:
    """An :class:`AccuracyTable` from CSV lines (``#`` lines skipped; fields never quoted: numbers and method
    names); ValueError on a malformed table."""
    import re

    lines = iter(lines)
    comments = []
    header_line = ""
    for line in lines:
        if line.startswith("#"):
            comments.append(line)
            continue
        header_line = line
        break
    it = lines
    header = header_line.strip().split(",")
    # a table written under the pooled rule ("over all replications"): read with the per-replication one
    window = None
    for c in comments:
        m = re.search(r"recording window ([0-9.eE+-]+) \(1/mu\) per replication.*over all replications", c)
        if m:
            window = float(m.group(1))
    if tuple(header[:9]) != COLUMNS[:9]:
        raise ValueError(f"{source or 'accuracy table'}: header must be {','.join(COLUMNS)}; got {','.join(header)}")
    raw: dict = {}  # keyed by the text of R and percentile: ~40 keys to convert, not ~50 000
    for line in it:
        parts = line.split(",", 3)
        if len(parts) < 4:
            if not line.strip():
                continue
            raise ValueError(f"{source or 'accuracy table'}: malformed row {line.strip()!r}")
        raw.setdefault((parts[0], parts[2]), []).append(line)
    groups: dict = {}
    for (R, pct), lines in raw.items():
        try:
            groups[(int(R), float(pct))] = lines
        except ValueError:
            raise ValueError(f"{source or 'accuracy table'}: malformed row {lines[0].strip()!r}") from None
    if not groups:
        raise ValueError(f"{source or 'accuracy table'}: no rows")
    return AccuracyTable(groups, source, window)


#: the largest accuracy table read from a user's file (the shipped one is 3 MB)
MAX_TABLE_BYTES = 200 * 2**20


def check_accuracy(path, field: str = "accuracy") -> AccuracyTable:
    """A user's accuracy table read in full and checked before it is used (issue 32: an empty file, wrong
    columns or NaN values were accepted, and read only when T failed): the header, every row's fields (R an
    integer >= 1, rho in (0, 1), percentile in (0, 100), a known method, errors finite numbers, or empty where
    ``usable`` is 0, ``optimistic`` -1/0/1, ``usable`` 0/1), at least one usable row. ValueError naming ``field``."""
    from .naming import ALL_METHODS

    p = Path(path)
    try:
        found = p.is_file()
        size = p.stat().st_size if found else 0
    except (OSError, ValueError) as exc:
        raise ValueError(f"{field} {str(path)[:200]}: {getattr(exc, 'strerror', None) or exc}") from None
    if not found:
        raise ValueError(f"{field} {path}: no such file")
    if size > MAX_TABLE_BYTES:
        raise ValueError(f"{field} {path}: {size / 2**20:.0f} MiB, larger than an accuracy table can be "
                         f"({MAX_TABLE_BYTES / 2**20:.0f} MiB)")
    try:
        with open(p, encoding="utf-8") as fh:
            table = parse_accuracy(fh, source=str(path))
    except UnicodeDecodeError:
        raise ValueError(f"{field} {path}: not a text (CSV) file") from None
    except ValueError as exc:
        raise ValueError(f"{field}: {exc}") from None
    usable = 0
    for (R, pct), lines in table._groups.items():
        for line in lines if isinstance(lines, list) else ():
            rec = line.rstrip("\n").split(",")
            bad = None
            try:
                rho, errs = float(rec[1]), [_float(x) for x in rec[4:7]]
                if len(rec) < 9 or R < 1 or not 0 < rho < 1 or not 0 < pct < 100:
                    bad = "R >= 1, rho in (0, 1) and percentile in (0, 100)"
                elif rec[3] not in ALL_METHODS:
                    bad = f"approximation one of {', '.join(ALL_METHODS)}"
                elif rec[7] not in ("-1", "0", "1") or rec[8] not in ("0", "1"):
                    bad = "optimistic -1, 0 or 1 and usable 0 or 1"
                elif rec[8] == "1" and not all(math.isfinite(e) for e in errs):
                    bad = "finite relative errors where usable is 1"
                elif any(math.isinf(e) for e in errs):
                    bad = "finite relative errors (empty where not measured)"
            except (ValueError, IndexError):
                bad = "numbers where numbers belong"
            if bad:
                raise ValueError(f"{field} {path}: row {line.strip()!r}: needs {bad}")
            usable += rec[8] == "1"
    if not usable:
        raise ValueError(f"{field} {path}: no usable row (usable = 1): the table measures nothing")
    return table


@functools.lru_cache(maxsize=4)
def _read(path: str, mtime: float) -> AccuracyTable:
    with open(path, encoding="utf-8") as fh:
        return parse_accuracy(fh, source=path)


def read_accuracy(path=None) -> AccuracyTable:
    """The accuracy table at ``path`` (default: the one shipped with the package), read once per process."""
    p = Path(path) if path is not None else PACKAGE_TABLE
    try:
        mtime = p.stat().st_mtime
    except FileNotFoundError:
        raise ValueError(
            f"accuracy table {p}: no such file"
            + ("; regenerate it with the pipeline's jsq_ps_accuracy rule" if path is None else "")
        ) from None
    return _read(str(p), mtime)
