"""Precision-driven replications: replications are added in batches until the confidence interval of a
statistic is as narrow as asked, or a cap is reached. One mechanism for every study's simulations.

The statistic across replications. Each replication k yields one estimate x_k of the statistic — its own
mean sojourn time, the p-quantile of its own histogram, or its own histogram CDF at a time t
(:func:`histogram_statistic`). The replications are independent and identically distributed, so the
x_k are too, and the interval is the Student-t interval of their mean (:func:`sojourn.core.estimates.stats.mean_ci`):
x̄_n ± t_{(1+c)/2, n−1} · s_n/√n, at confidence c (0.95, DEFAULT_CONFIDENCE). This is the same estimator and
interval the studies' comparisons report (per-replication statistics, t-interval across replications),
so the precision asked for is the precision they get. It controls the estimator's spread, not its bias
(a 99.99th percentile of a short replication is biased; longer replications, not more of them, fix that).

Stopping rule, after n replications (:func:`decide`), with target ε = ``relative_half_width``:

* ``target_met`` if n ≥ ``min_replications`` and h_n ≤ ε · ref, ref = |x̄_n| (for ``cdf``: the smaller of
  x̄_n and 1 − x̄_n, i.e. relative to the probability of the rarer side — a tail probability P(T > t)
  near the 99.99th percentile, not F ≈ 1);
* ``statistic_undefined`` if some x_k is not finite (a percentile beyond the histogram's last edge, an
  unstable replication with no measures): more replications cannot give an interval;
* ``max_replications`` if n reached ``max_replications`` first;
* otherwise continue with the next batch.

No stop before ``min_replications`` (default 5: below that s_n is too unreliable, and stopping on a
lucky small s_n is the known weakness of sequential rules — the interval's coverage at the stop is
somewhat below c).

Batch rule (:func:`next_count`): the first batch is ``min_replications``; after n replications with
standard deviation s_n the projected count n* is the least m with t_{(1+c)/2, m−1} · s_n/√m ≤ ε · ref
(the same interval, s_n held fixed); the next total is min(cap, max(n + 1, min(2n, n*))) — the projection,
but at most doubling (s_n from 5 replications can be far off; overshooting wastes replications,
undershooting costs only another round).

Bit-identity. Replication k's random stream depends only on (seed, spec, k) (:mod:`sojourn.core.laws.seeds`),
so the first n replications of a precision-driven run are exactly a fixed-count run of n replications;
decisions use only the values of replications already done, so the whole schedule is deterministic
(same config + seed → same counts on any number of workers). A cached replication (the studies' content-
keyed caches, :mod:`sojourn.core.files.cache`) is the same replication, so a tighter target simulates only the
replications beyond those cached.

The driver (:func:`run_replications`) is the one loop every study uses: the study supplies how to submit a
batch of (cell, k) replications (Dask tasks in the pipeline, a loop in the API), the per-replication
statistic, and the replications it already has (its cache).
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import asdict, dataclass

import numpy as np

from ..checks.config import DEFAULT_CONFIDENCE
from ..checks.inputs import did_you_mean
from ..checks.validate import integer_at_least
from .stats import cdf_from_histogram, histogram_quantile, mean_ci, student_t_quantile

STATISTICS = ("percentile", "mean", "cdf")
KEYS = ("statistic", "at", "relative_half_width", "max_replications", "min_replications", "confidence")

#: ``stop_reason`` flag values (CF flag_values / flag_meanings of the datasets' ``stop_reason``)
NOT_SIMULATED, TARGET_MET, MAX_REPLICATIONS, UNDEFINED = 0, 1, 2, 3
STOP_REASONS = {NOT_SIMULATED: "not_simulated", TARGET_MET: "target_met", MAX_REPLICATIONS: "max_replications",
                UNDEFINED: "statistic_undefined"}
#: the variables a precision-driven run adds per cell (:func:`variables`)
VARIABLES = ("replications_used", "precision_estimate", "achieved_half_width", "achieved_relative_half_width",
             "stop_reason")
#: gap values of the integer ones in merged hypercubes (a cell not simulated)
FILL = {"replications_used": 0, "stop_reason": NOT_SIMULATED}


@dataclass(frozen=True)
class Precision:
    """A precision target (see the module doc). ``at``: the percentile level in percent (``percentile``),
    the time t of F(t) (``cdf``), None (``mean``)."""

    statistic: str
    at: float | None
    relative_half_width: float
    max_replications: int = 200
    min_replications: int = 5
    confidence: float = DEFAULT_CONFIDENCE

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def describe(self) -> str:
        what = ("the mean" if self.statistic == "mean" else
                f"the {self.at:g}th percentile" if self.statistic == "percentile" else f"F({self.at:g})")
        return (f"{what}: {100 * self.confidence:g}% t-interval half-width <= {self.relative_half_width:g} "
                f"relative, {self.min_replications}..{self.max_replications} replications")


def parse(block, *, field: str = "precision", t_max: float | None = None, default_at: float | None = None,
          default_statistic: str = "percentile") -> Precision | None:
    """A :class:`Precision` from a config block / keyword dict (or a Precision, or None = fixed count).

    Missing keys take the defaults of the config schemas (statistic ``default_statistic``, at
    ``default_at`` for a percentile, relative_half_width 0.05, max_replications 200, min_replications 5,
    confidence 0.95). ``t_max``: the last histogram edge, bound of ``at`` for ``cdf``. ValueError whose
    message starts with ``field.<key>``.
    """
    if block is None:
        return None
    if isinstance(block, Precision):
        block = block.to_dict()
    if not isinstance(block, dict):
        raise ValueError(f"{field} must be a mapping with keys {', '.join(KEYS)} (or null); got {block!r}")
    for k in block:
        if k not in KEYS:
            raise ValueError(f"{field}.{k}: unknown key{did_you_mean(k, KEYS)} (allowed: {', '.join(KEYS)})")
    statistic = block.get("statistic", default_statistic)
    if statistic not in STATISTICS:
        raise ValueError(f"{field}.statistic must be one of {', '.join(STATISTICS)}; got {statistic!r}"
                         f"{did_you_mean(statistic, STATISTICS)}")
    at = block.get("at")
    if statistic == "mean":
        if at is not None:
            raise ValueError(f"{field}.at does not apply to statistic mean (give null or leave it out); got {at!r}")
    else:
        if at is None and statistic == "percentile":
            at = default_at
        if at is None:
            raise ValueError(f"{field}.at is required with statistic {statistic} "
                             f"({'a percentile level in (0, 100)' if statistic == 'percentile' else 'a time t > 0'})")
        at = _real(f"{field}.at", at)
        if statistic == "percentile" and not 0.0 < at < 100.0:
            raise ValueError(f"{field}.at must be a percentile level in (0, 100) with statistic percentile; got {at!r}")
        if statistic == "cdf" and not at > 0.0:
            raise ValueError(f"{field}.at must be a time > 0 with statistic cdf; got {at!r}")
        if statistic == "cdf" and t_max is not None and at > float(t_max):
            raise ValueError(f"{field}.at must be <= the histogram's t_max = {float(t_max):g} with statistic cdf; "
                             f"got {at!r}")
    eps = _real(f"{field}.relative_half_width", block.get("relative_half_width", 0.05))
    if not 0.0 < eps <= 1.0:
        raise ValueError(f"{field}.relative_half_width must be in (0, 1]; got {eps!r}")
    cap = integer_at_least(f"{field}.max_replications", block.get("max_replications", 200), 2, allow_float=False)
    low = integer_at_least(f"{field}.min_replications", block.get("min_replications", 5), 2, allow_float=False)
    if low > cap:
        raise ValueError(f"{field}.min_replications must be <= {field}.max_replications = {cap}; got {low}")
    conf = _real(f"{field}.confidence", block.get("confidence", DEFAULT_CONFIDENCE))
    if not 0.0 < conf < 1.0:
        raise ValueError(f"{field}.confidence must be in (0, 1); got {conf!r}")
    return Precision(statistic, at, eps, cap, low, conf)


def resolve(precision, replications, replication_offset, seed, *, t_max=None, default_at: float | None = None,
            default_statistic: str = "percentile"):
    """The run-count arguments every study's ``simulate`` takes, checked together: (precision or None,
    replications (default 1), replication_offset, seed). ``precision`` as for :func:`parse`; it replaces
    ``replications`` and needs offset 0 (replications 0, 1, … are added in order)."""
    precision = parse(precision, t_max=t_max if isinstance(t_max, (int, float)) else None, default_at=default_at,
                      default_statistic=default_statistic)
    if precision is not None and replications is not None:
        raise ValueError("give replications or precision, not both (with precision the count is decided between "
                         "precision.min_replications and precision.max_replications)")
    from ..checks.guard import SEED_MAX, Int

    replications = Int(1, strict=True).check("replications", 1 if replications is None else replications)
    offset = Int(0, strict=True).check("replication_offset", replication_offset)
    if precision is not None and offset != 0:
        raise ValueError("replication_offset must be 0 with precision (replications 0, 1, ... are added in order)")
    seed = Int(0, SEED_MAX, strict=True).check("seed", seed)
    return precision, replications, offset, seed


def _real(field, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ValueError(f"{field} must be a finite number; got {value!r}")
    return float(value)


# ---------------------------------------------------------------------------------------------
# the statistic of one replication
def histogram_statistic(p: Precision, count, overflow, edges, mean=None) -> np.ndarray:
    """The statistic of each replication from its histogram: ``count`` (..., bins), ``overflow`` (...),
    ``edges`` the bins' right edges (F is known there exactly, :func:`sojourn.core.estimates.stats.cdf_from_histogram`);
    ``mean`` (...) the replications' means (statistic ``mean``).

    percentile: interpolated within the first bin whose right edge has F > at/100
    (:func:`sojourn.core.estimates.stats.histogram_quantile`, the summaries' and comparisons' percentile; NaN beyond the
    last edge). cdf: F at the last right edge <= at (P(S < edge)); 0 if at is below the first edge."""
    if p.statistic == "mean":
        if mean is None:
            raise ValueError("statistic mean needs the replications' means")
        return np.asarray(mean, dtype=float)
    F = cdf_from_histogram(count, overflow)
    edges = np.asarray(edges, dtype=float)
    if p.statistic == "percentile":
        dt = float(edges[1] - edges[0]) if edges.size > 1 else float(edges[0])  # the grid starts at 0
        return np.asarray(histogram_quantile(F, edges - dt, dt, p.at / 100.0), dtype=float)
    i = int(np.searchsorted(edges, p.at + 1e-9 * max(1.0, p.at), side="right")) - 1
    return np.zeros(F.shape[:-1]) if i < 0 else F[..., i]


# ---------------------------------------------------------------------------------------------
# the stopping rule and the batch schedule
@dataclass(frozen=True)
class Decision:
    """The state of one cell after ``replications`` replications: the estimate x̄, the interval's half-width
    (absolute and relative to the reference), and why it stopped (a STOP_REASONS key) or the next count."""

    replications: int
    estimate: float
    half_width: float
    relative_half_width: float
    reason: int | None  # None: not stopped
    next: int  # the next total count when not stopped (else = replications)

    @property
    def reason_name(self) -> str:
        return "continue" if self.reason is None else STOP_REASONS[self.reason]


def reference(p: Precision, estimate: float) -> float:
    """What the half-width is relative to: |x̄|, or min(x̄, 1 − x̄) for a CDF value (the rarer side)."""
    return min(estimate, 1.0 - estimate) if p.statistic == "cdf" else abs(estimate)


def _tq(p: Precision, n):
    return student_t_quantile(np.asarray(n) - 1, 0.5 + p.confidence / 2.0)


def decide(values, p: Precision) -> Decision:
    """The stopping rule (module doc) on the per-replication statistics ``values`` (replications 0..n−1)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    if n == 0:
        return Decision(0, math.nan, math.nan, math.nan, None, p.min_replications)
    if not np.isfinite(x).all():
        return Decision(n, math.nan, math.nan, math.nan, UNDEFINED, n)
    m, h = mean_ci(x, confidence=p.confidence)
    m, h = float(m), float(h)
    ref = reference(p, m)
    if n < 2:
        rel = math.nan
    elif ref > 0:
        rel = h / ref
    else:
        rel = 0.0 if h == 0 else math.inf
    if n >= p.min_replications and rel <= p.relative_half_width:
        return Decision(n, m, h, rel, TARGET_MET, n)
    if n >= p.max_replications:
        return Decision(n, m, h, rel, MAX_REPLICATIONS, n)
    return Decision(n, m, h, rel, None, next_count(n, float(np.std(x, ddof=1)) if n > 1 else math.nan, ref, p))


def next_count(n: int, sd: float, ref: float, p: Precision) -> int:
    """The batch rule (module doc): min(cap, max(n + 1, min(2n, n*)))."""
    cap = p.max_replications
    if n < p.min_replications:
        return min(cap, p.min_replications)
    grow = min(cap, 2 * n)
    if not (np.isfinite(sd) and ref > 0):
        return max(n + 1, grow)
    m = np.arange(n + 1, grow + 1)
    ok = _tq(p, m) * sd / np.sqrt(m) <= p.relative_half_width * ref
    star = int(m[np.argmax(ok)]) if ok.any() else grow
    return min(cap, max(n + 1, star))


# ---------------------------------------------------------------------------------------------
# the driver
@dataclass
class Outcome:
    """One cell's replications 0..n−1 (the study's results, in order), the final decision (None with a fixed
    count) and how many replications were simulated now vs taken from ``have``."""

    results: list
    decision: Decision | None
    simulated: int
    reused: int

    @property
    def replications(self) -> int:
        return len(self.results)


def run_replications(cells: Iterable[Hashable], submit: Callable[[list], list], *, precision: Precision | None = None,
                     replications: int | None = None, estimate: Callable | None = None, have: dict | None = None,
                     log: Callable[[str], None] | None = None, name: Callable = str) -> dict:
    """Run every cell to a fixed count ``replications`` (``precision`` None) or to its precision target.

    submit(requests) -> results: simulate the (cell, k) requests (all of them at once, e.g. as Dask
    tasks) and return their results in the same order. estimate(cell, k, result) -> float: replication k's
    statistic (:func:`histogram_statistic`), needed with ``precision``. have: {cell: {k: result}} replications
    already available (a cache); only those with k below the count a cell reaches are used. ``log`` gets a
    line per round and per stopped cell (``name(cell)`` names it). Each round
    submits the missing replications of every cell still running, then decides for each (:func:`decide`).
    Returns {cell: :class:`Outcome`}.
    """
    cells = list(cells)
    have = {c: dict((have or {}).get(c, {})) for c in cells}
    cached = {c: set(have[c]) for c in cells}
    if precision is None:
        target = {c: integer_at_least("replications", replications, 1, allow_float=False) for c in cells}
    else:
        if estimate is None:
            raise ValueError("run_replications with a precision target needs estimate(cell, k, result)")
        target = {c: precision.min_replications for c in cells}
    values: dict = {c: {} for c in cells}
    simulated = {c: 0 for c in cells}
    final: dict = {}
    active = list(cells)
    rnd = 0
    while active:
        rnd += 1
        missing = [(c, k) for c in active for k in range(target[c]) if k not in have[c]]
        if log is not None:
            reused = sum(1 for c in active for k in range(target[c]) if k in cached[c])
            log(f"round {rnd}: {len(active)} cell(s) at {_counts(target, active)} replications; "
                f"{len(missing)} to simulate, {reused} from the cache")
        if missing:
            for (c, k), r in zip(missing, submit(missing), strict=True):
                have[c][k] = r
                simulated[c] += 1
        still = []
        for c in active:
            if precision is None:
                final[c] = None
                continue
            for k in range(target[c]):
                if k not in values[c]:
                    values[c][k] = float(estimate(c, k, have[c][k]))
            d = decide([values[c][k] for k in range(target[c])], precision)
            if d.reason is None:
                target[c] = d.next
                still.append(c)
            else:
                final[c] = d
        active = still
    out = {}
    for c in cells:
        n = target[c]
        out[c] = Outcome([have[c][k] for k in range(n)], final[c], simulated[c],
                         sum(1 for k in range(n) if k in cached[c]))
        if log is not None and final[c] is not None:
            d = final[c]
            log(
                f"cell {name(c)}: {d.reason_name} after {n} replications, "
                f"estimate {d.estimate:.6g} ± {d.half_width:.3g} "
                f"(relative {d.relative_half_width:.3g}); {out[c].simulated} simulated, {out[c].reused} from the cache"
            )
    return out


def _counts(target, active) -> str:
    ns = sorted({target[c] for c in active})
    return str(ns[0]) if len(ns) == 1 else f"{ns[0]}..{ns[-1]}"


# ---------------------------------------------------------------------------------------------
# what a dataset records
def variables(decisions, dims: tuple, p: Precision, units: str) -> dict:
    """{name: (dims, values, attrs)} of the per-cell precision variables (:data:`VARIABLES`, CF attributes) from
    an array-like of :class:`Decision` (None = a cell not simulated) shaped like ``dims``."""
    d = np.asarray(decisions, dtype=object)
    units = "1" if p.statistic == "cdf" else units
    get = lambda f, fill: np.vectorize(lambda x: fill if x is None else f(x), otypes=[float])(d) if d.size else \
        np.zeros(d.shape)
    used = get(lambda x: x.replications, 0).astype(np.int64)
    reason = get(lambda x: x.reason if x.reason is not None else NOT_SIMULATED, NOT_SIMULATED).astype(np.int8)
    what = ("mean" if p.statistic == "mean" else f"{p.at:g}th percentile (per replication, from its histogram)"
            if p.statistic == "percentile" else f"CDF at t = {p.at:g} (per replication, from its histogram)")
    ref = "min(estimate, 1 - estimate)" if p.statistic == "cdf" else "|estimate|"
    conf = f"{100 * p.confidence:g}%"
    return {
        "replications_used": (dims, used, {
            "long_name": "replications of the cell (indices 0..replications_used-1; later replication entries are "
                         "padding: NaN, 0 counts)", "units": "1"}),
        "precision_estimate": (dims, get(lambda x: x.estimate, math.nan), {
            "long_name": f"mean across replications of the precision statistic: the {what}", "units": units}),
        "achieved_half_width": (dims, get(lambda x: x.half_width, math.nan), {
            "long_name": f"half-width of the {conf} Student-t interval of precision_estimate", "units": units}),
        "achieved_relative_half_width": (dims, get(lambda x: x.relative_half_width, math.nan), {
            "long_name": f"achieved_half_width / {ref}; the target is {p.relative_half_width:g}", "units": "1"}),
        "stop_reason": (dims, reason, {
            "long_name": "why the cell's replications stopped",
            "flag_values": np.array(sorted(STOP_REASONS), np.int8),
            "flag_meanings": " ".join(STOP_REASONS[k] for k in sorted(STOP_REASONS)), "units": "1"}),
    }


def attrs(p: Precision) -> dict:
    """Global attributes of a precision-driven dataset: the target and the rule."""
    return {"precision": p.to_json(),
            "precision_rule": ("per-replication statistic, Student-t interval across replications; stop when "
                               "half-width <= relative_half_width * reference (not before min_replications), at "
                               "max_replications, or when a replication's statistic is undefined; batches: "
                               "min_replications, then min(cap, max(n+1, min(2n, projected n)))")}


def present(replication, used) -> np.ndarray:
    """Which replication entries exist: ``replication`` (the index coordinate) < ``used`` (per cell, any
    leading shape); shape used.shape + (len(replication),)."""
    return np.asarray(replication) < np.asarray(used)[..., None]


# ---------------------------------------------------------------------------------------------
# command-line flags (shared by the studies' simulate commands; added by sojourn.core.checks.flags.add_precision, which
# building a parser imports without this module's numpy and scipy)
def from_flags(args, *, t_max: float | None = None, default_at: float | None = None) -> Precision | None:
    """The Precision of ``args`` (:func:`sojourn.core.checks.flags.add_precision`), or None; ValueError naming the flag.
    ``default_at``: the level of ``--precision percentile`` given without one."""
    extra = [f for f, v in (("--relative-half-width", args.relative_half_width),
                            ("--max-replications", args.max_replications),
                            ("--min-replications", args.min_replications)) if v is not None]
    if args.precision is None:
        if extra:
            raise ValueError(f"{extra[0]} needs --precision STATISTIC[:AT]")
        return None
    if getattr(args, "replications", None) is not None:
        raise ValueError("--replications and --precision exclude each other: with --precision the count is "
                         "decided between --min-replications and --max-replications")
    name, colon, value = str(args.precision).strip().partition(":")
    block: dict = {"statistic": name.strip().lower()}
    if colon:
        try:
            block["at"] = float(value)
        except ValueError:
            raise ValueError(f"--precision {args.precision}: AT must be a number; got {value!r}") from None
    for key in ("relative_half_width", "max_replications", "min_replications"):
        if getattr(args, key) is not None:
            block[key] = getattr(args, key)
    flags = {
        "statistic": "--precision",
        "at": f"--precision {block['statistic']}:AT",
        "relative_half_width": "--relative-half-width",
        "max_replications": "--max-replications",
        "min_replications": "--min-replications",
    }
    try:
        return parse(block, field="precision", t_max=t_max, default_at=default_at)
    except ValueError as exc:
        msg = str(exc)
        for key, flag in sorted(flags.items(), key=lambda kv: -len(kv[0])):
            msg = msg.replace(f"precision.{key}", flag)
        msg = msg.replace("the histogram's t_max", "--t-max")
        raise ValueError(msg) from None


def summary(ds) -> str:
    """One line on a single cell's precision variables: why it stopped, after how many, what it reached."""
    p = json.loads(ds.attrs["precision"])
    reason = STOP_REASONS[int(ds["stop_reason"])]
    n = int(ds["replications_used"])
    text = (f"{reason.replace('_', ' ')} after {n} replications: estimate {float(ds['precision_estimate']):.6g} "
            f"± {float(ds['achieved_half_width']):.4g} ({100 * p['confidence']:g}% t-interval across replications, "
            f"relative {float(ds['achieved_relative_half_width']):.3g}; target {p['relative_half_width']:g})")
    if int(ds["stop_reason"]) == MAX_REPLICATIONS:
        text += " — the target was NOT met: raise max_replications or the run length"
    elif int(ds["stop_reason"]) == UNDEFINED:
        text += " — the statistic is undefined in some replication (beyond the histogram, or unstable)"
    return text
