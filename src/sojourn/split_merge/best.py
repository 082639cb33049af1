"""The operator's question: for n hosts, arrival rate λ and a replica law, which (r, q) gives the lowest latency?

Every feasible (r, q) (q ≥ quorum_min, q ≤ r ≤ min(n, max_replicas), λ E[S_{q:r}] < ⌊n/r⌋) is scored by
its mean latency or a latency percentile: exact where :mod:`.exact` has it (P-K, Erlang C, the M/PH/c QBD
for the mean; the delay law for percentiles when c = 1 or Erlang C), else by simulation (replications ×
workunits, a Student-t CI across replications). The ranking says whether the top two are within noise:
their CIs overlap (an exact value has a zero-width interval; two exact values are never "within noise").
"""
from __future__ import annotations

import math

import numpy as np
import xarray as xr

from ..core.checks.config import DEFAULT_CONFIDENCE
from ..core.checks.validate import integer_at_least, positive_finite, probability_open
from ..core.estimates.runlength import describe, format_length
from ..core.estimates.stats import mean_ci
from ..core.files.io import provenance
from .model import SplitMerge, as_law
from .order_stats import order_statistic_moments
from .simulate import simulate
from .solve import exact_results
from .summary import percentile_per_replication


def parse_criterion(text: str):
    """'mean' → None; 'p99' / 'p99.9' → 0.99 / 0.999."""
    t = str(text).strip().lower()
    if t == "mean":
        return None
    if t.startswith("p"):
        try:
            return probability_open("criterion percentile", float(t[1:]) / 100.0)
        except ValueError:
            pass
    raise ValueError(f"criterion must be 'mean' or 'pNN' (e.g. p99, p99.9); got {text!r}")


def candidates(hosts, arrival_rate, replica_law, quorum_min=1, max_replicas=10):
    """Feasible (r, q) pairs with their load, in order of r then q; infeasible ones are listed with why."""
    n = integer_at_least("hosts", hosts, 1)
    lam = positive_finite("arrival_rate", arrival_rate)
    qmin = integer_at_least("quorum_min", quorum_min, 1)
    rmax = min(n, integer_at_least("max_replicas", max_replicas, 1))
    if qmin > rmax:
        limit = (f"max_replicas = {rmax}" if rmax == max_replicas else
                 f"min(max_replicas = {max_replicas}, hosts = {n}) = {rmax}")
        raise ValueError(f"quorum_min must be <= {limit}: no pair (r, q) with q <= r exists for q >= {qmin}; "
                         f"got quorum_min = {qmin}")
    law = as_law(replica_law)
    from ..core.checks.guard import Estimate, admit
    from .cost import SECONDS_PER_EXACT_PAIR, SECONDS_PER_QUADRATURE, pairs

    n_pairs = pairs(qmin, rmax)  # each pair's moments, before any of them is computed
    admit(Estimate(n_pairs * (SECONDS_PER_EXACT_PAIR + SECONDS_PER_QUADRATURE), n_pairs * 400.0, "hosts/max_replicas",
                   f"the moments of {n_pairs:.3g} pairs (r, q) with {qmin} <= q <= r <= {rmax}"), record=False)
    ok, skipped = [], []
    for r in range(qmin, rmax + 1):
        for q in range(qmin, r + 1):
            m1 = order_statistic_moments(law, q, r)[0]
            load = lam * m1 / (n // r)
            (ok if load < 1.0 else skipped).append((r, q, load))
    if not ok:
        raise ValueError(f"arrival_rate {lam:g} is unstable for every (replicas, quorum) with quorum >= {qmin} and "
                         f"replicas <= {rmax}: lambda E[S_q:r] >= floor(hosts/replicas) for all")
    return law, ok, skipped


def admit_cost(hosts, replica_law, quorum_min, max_replicas, workunits, replications, model, dt, t_max) -> None:
    """The ranking's predicted time and memory (every pair simulated at worst: :func:`sojourn.split_merge.cost.best`)
    admitted before any pair is looked at (:func:`sojourn.core.checks.guard.admit_parts`)."""
    from ..core.checks.guard import Int, admit_parts
    from .cost import best as best_cost

    n = integer_at_least("hosts", hosts, 1)
    qmin = integer_at_least("quorum_min", quorum_min, 1)
    rmax = integer_at_least("max_replicas", max_replicas, 1)
    wu = Int(1).check("workunits", workunits)
    reps = Int(1).check("replications", replications)
    admit_parts(best_cost(n, replica_law, qmin, rmax, wu, reps, model, dt, t_max))


def half_width_text(half_width: float, exact: bool, resolution: float) -> str:
    """The ± column of ``split-merge best``: ``exact``, the half-width, or — for a simulated percentile whose
    interval is narrower than its histogram's bin (``resolution``) — ``"dt (bin)"``: the bin bounds the error
    (:func:`sojourn.core.estimates.stats.format_with_ci`'s rule)."""
    if exact:
        return "exact"
    if 0 < resolution and half_width < resolution:
        return f"{resolution:.3g} (bin)"
    return f"{half_width:.3g}"


def _value(spec, p, confidence, *, workunits, replications, seed, dt, t_max) -> tuple:
    """(latency, half-width, is_exact, method, run_valid) of one (r, q): its exact mean or percentile ``p`` where
    one exists, else simulated (a CI over the replications, marked when the run is too short to trust)."""
    e = exact_results(spec, percentiles=[p] if p is not None else [0.99])
    if p is None and e["exact"]:
        return e["mean_latency"], 0.0, 1, e["delay_method"], 1
    if p is not None and e["percentile_method"] != "none":
        return float(e["latency_percentile"][0]), 0.0, 1, e["percentile_method"], 1
    ds = simulate(spec, workunits=workunits, replications=replications, seed=seed, dt=dt, t_max=t_max)
    x = ds["mean_latency"].values if p is None else percentile_per_replication(ds, "latency", [p])[:, 0]
    m, h = mean_ci(x, confidence=confidence)
    how = f"simulation ({replications} x {workunits} workunits)"
    if not int(ds["run_valid"]):  # the run-length guard (sojourn.core.estimates.runlength): marked, said
        need = format_length(float(ds["needed_window"]) * spec.arrival_rate)
        how += f", TOO SHORT to trust ({describe(int(ds['run_validity_reason']))}; needs --workunits >= {need})"
    return float(m), float(h), 0, how, int(ds["run_valid"])


def _top_two_within_noise(rows, p, dt) -> bool:
    """Whether the two best ranked rows differ by less than their half-widths together (not both exact)."""
    if len(rows) < 2:
        return False
    (_, _, _, v1, h1, x1, _, _), (_, _, _, v2, h2, x2, _, _) = rows[0], rows[1]
    # a simulated percentile is known to its histogram's bin dt at best (core.estimates.stats.format_with_ci)
    res = (lambda h, exact: h if exact or p is None else max(h, dt))
    return bool(not (x1 and x2) and abs(v2 - v1) <= (res(h1, x1) if np.isfinite(h1) else math.inf) + (
        res(h2, x2) if np.isfinite(h2) else math.inf))


def best(hosts, arrival_rate, replica_law, *, quorum_min=1, max_replicas=10, criterion="mean", workunits=100_000,
         replications=5, seed=0, confidence=DEFAULT_CONFIDENCE, model="split_merge", dt=0.01, t_max=200.0,
         progress=None) -> xr.Dataset:
    """Rank the feasible (r, q) by ``criterion`` ('mean' or 'pNN'); a Dataset over dim ``rank`` (best first)."""
    p = parse_criterion(criterion)
    admit_cost(hosts, replica_law, quorum_min, max_replicas, workunits, replications, model, dt, t_max)
    law, ok, skipped = candidates(hosts, arrival_rate, replica_law, quorum_min, max_replicas)
    rows = []
    run = {"workunits": workunits, "replications": replications, "seed": seed, "dt": dt, "t_max": t_max}
    for i, (r, q, load) in enumerate(ok):
        spec = SplitMerge(hosts, r, q, arrival_rate, law, model)
        rows.append((r, q, load, *_value(spec, p, confidence, **run)))
        if progress:
            progress(i + 1, len(ok), rows[-1])
    order = sorted(range(len(rows)), key=lambda k: (math.inf if not np.isfinite(rows[k][3]) else rows[k][3]))
    rows = [rows[k] for k in order]
    col = lambda j, dt_=float: np.array([row[j] for row in rows], dtype=dt_)
    within = _top_two_within_noise(rows, p, dt)
    name = "mean latency" if p is None else f"{100 * p:g}th percentile of latency"
    U = "time units of the replica law"
    ds = xr.Dataset(
        {
            "replicas": ("rank", col(0, np.int64), {"long_name": "replicas r", "units": "1"}),
            "quorum": ("rank", col(1, np.int64), {"long_name": "quorum q", "units": "1"}),
            "rho": ("rank", col(2), {"long_name": "load lambda E[S_q:r]/floor(n/r)", "units": "1"}),
            "latency": ("rank", col(3), {"long_name": name, "units": U}),
            "half_width": (
                "rank",
                col(4),
                {
                    "long_name": f"half-width of the {100 * confidence:g}% t-interval "
                    "across replications (0 for exact values)",
                    "units": U,
                },
            ),
            "is_exact": ("rank", col(5, np.int8), {"long_name": "1 exact, 0 simulated", "units": "1"}),
            "method": (
                "rank",
                np.array([row[6] for row in rows], dtype=object),
                {"long_name": "how the value was obtained"},
            ),
            "run_valid": (
                "rank",
                col(7, np.int8),
                {
                    "long_name": "1: exact, or simulated long enough to trust; 0: simulated too short (the run-length "
                    "guard, sojourn.core.estimates.runlength; method says what it needs)",
                    "units": "1",
                },
            ),
        },
        coords={
            "rank": ("rank", np.arange(1, len(rows) + 1), {"long_name": "rank (1 = lowest latency)", "units": "1"})
        },
    )
    ds.attrs.update(provenance(
        {"hosts": hosts, "arrival_rate": arrival_rate, "replica_law": law.to_dict(), "quorum_min": quorum_min,
         "max_replicas": max_replicas, "criterion": criterion, "workunits": workunits, "replications": replications,
         "seed": seed, "confidence": confidence, "model": model},
        title=f"(r, q) ranked by {name}: n={hosts}, lambda={arrival_rate:g}, replicas {law}",
        criterion=name, confidence=float(confidence), top_two_within_noise=int(within),
        resolution=float(dt) if p is not None else 0.0,  # a simulated percentile's histogram bin width
        too_short=int((col(7, np.int8) == 0).sum()),
        unstable_pairs=", ".join(f"(r={r}, q={q}, load {ld:.3g})" for r, q, ld in skipped) or "none"))
    return ds
