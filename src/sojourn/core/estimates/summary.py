"""Summaries across replications for the command lines of every study: means and percentiles with confidence
intervals, the customers beyond each percentile, and the text that prints them (one format for all studies).

A percentile's CI: each replication's own percentile (its histogram's CDF, linear between the bin edges:
:func:`sojourn.core.estimates.stats.percentiles_per_replication`) is one observation;
:func:`sojourn.core.estimates.stats.interval` across
the replications gives a Student-t interval, or a
BCa bootstrap one where there are at least ``bootstrap_from`` (20) replications and they are skewed (the
pipeline's comparison uses the same rule; with fewer the bootstrap's intervals are too narrow). A percentile with fewer
than ``TAIL_MIN`` customers per replication beyond it (or none in
some replication: the sample maximum) is flagged ``too_few`` and printed as such, not as a number. A mean's CI
is the Student-t interval of the replication means.

Printing (:func:`percentile_text`): a percentile whose CI is narrower than the histogram's bin width dt is
limited by the bin, not by the replications; it prints as ``± dt (bin)``
(:func:`sojourn.core.estimates.stats.format_with_ci`),
and :func:`ci_header` says what that means.
"""
from __future__ import annotations

import math

import numpy as np
import xarray as xr

from ..checks.config import DEFAULT_CONFIDENCE
from .stats import (
    BIN_NOTE,
    CI_BOOTSTRAP,
    CI_NAMES,
    CI_T,
    TAIL_MIN,
    format_with_ci,
    interval,
    mean_ci,
    percentiles_per_replication,
)

#: the CI settings of the summaries (the pipeline's comparison defaults, at the project's one level)
SUMMARY_CI = {
    "confidence": DEFAULT_CONFIDENCE,
    "ci": "auto",
    "bootstrap_from": 20,
    "skew_threshold": 1.0,
    "n_resamples": 2000,
}


def summary_dataset(count, overflow, t, dt, percentiles, *, prefix: str, replication, means: dict | None = None,
                    confidence: float = DEFAULT_CONFIDENCE, units: str = "", what: str = "customers") -> xr.Dataset:
    """Percentiles (given in percent) of the histograms ``count`` (replication, t) + ``overflow`` (replication,)
    with CIs across replications, and the CIs of the per-replication ``means`` ({name: values (replication,)}).

    Variables: ``<prefix>_percentile`` (replication, percentile) and its ``_mean``, ``_ci_low``, ``_ci_high``,
    ``_ci_method`` (percentile); ``<prefix>_beyond`` (replication, percentile), the ``what`` with a value at or
    beyond the replication's percentile; ``<prefix>_percentile_too_few`` (percentile) = 1 where fewer than
    ``TAIL_MIN`` per replication (on average) or none in some replication lie beyond; ``<name>_ci_low``,
    ``<name>_ci_high`` for each mean (its point estimate is the mean of ``<name>`` over replications).
    The bootstrap, where used, has a fixed seed: the same inputs give the same summary.
    """
    pct = np.atleast_1d(np.asarray(percentiles, dtype=float))
    x, beyond = percentiles_per_replication(count, overflow, t, dt, pct / 100.0)
    cfg = {**SUMMARY_CI, "confidence": float(confidence)}
    m, lo, hi, method = interval(x.T, cfg, seed=0)
    recorded = float(np.mean(np.sum(count, axis=-1) + np.asarray(overflow)))
    too_few = (beyond.mean(axis=0) < TAIL_MIN) | (beyond == 0).any(axis=0)
    conf = f"{100 * confidence:g}%"
    flags = {"flag_values": np.array([CI_T, CI_BOOTSTRAP], np.int8), "flag_meanings": "student_t bootstrap_bca"}
    rep, p = ("replication", "percentile")
    name = f"{prefix}_percentile"
    ds = xr.Dataset(
        {
            name: ((rep, p), x, {"long_name": f"{prefix} percentile of each replication (its histogram's CDF linear "
                                              "between the bin edges, where it first exceeds p; NaN past t_max)",
                                 "units": units, "resolution": float(dt)}),
            f"{name}_mean": (p, m, {"long_name": f"mean over replications of {name}", "units": units}),
            f"{name}_ci_low": (p, lo, {"long_name": f"lower end of the {conf} CI of {name}_mean", "units": units,
                                       "confidence": float(confidence)}),
            f"{name}_ci_high": (p, hi, {"long_name": f"upper end of the {conf} CI of {name}_mean", "units": units,
                                        "confidence": float(confidence)}),
            f"{name}_ci_method": (p, method, {"long_name": f"method of the CI of {name}_mean", **flags}),
            f"{prefix}_beyond": ((rep, p), beyond, {"long_name": f"{what} of the replication at or beyond its "
                                                                 "percentile", "units": "1",
                                                    "recorded_per_replication": recorded}),
            f"{name}_too_few": (p, too_few.astype(np.int8),
                                {"long_name": f"1: fewer than {TAIL_MIN} {what} per replication beyond the percentile "
                                              "(or none in some replication): too few to estimate it", "units": "1",
                                 "tail_min": TAIL_MIN}),
        },
        coords={rep: (rep, np.asarray(replication)), p: (p, pct, {"long_name": "percentile", "units": "%"})},
    )
    for var, values in (means or {}).items():
        mean, half = mean_ci(np.asarray(values, dtype=float), confidence=confidence)
        for end, v in (("low", mean - half), ("high", mean + half)):
            ds[f"{var}_ci_{end}"] = ((), float(v), {"long_name": f"{'lower' if end == 'low' else 'upper'} end of the "
                                                               f"{conf} Student-t CI of the mean of {var} over "
                                                               "replications", "confidence": float(confidence)})
    return ds


def mean_text(values, confidence: float = DEFAULT_CONFIDENCE) -> str:
    """The mean of per-replication ``values`` with its Student-t CI (``format_with_ci``)."""
    m, h = mean_ci(np.asarray(values, dtype=float), confidence=confidence)
    return format_with_ci(m, m - h, m + h)


def round_up(x: float, digits: int = 2) -> float:
    """``x`` rounded up to ``digits`` significant digits (for the run length a percentile needs)."""
    if not (np.isfinite(x) and x > 0):
        return x
    e = math.floor(math.log10(x)) - digits + 1
    return math.ceil(x / 10.0 ** e) * 10.0 ** e


def percentile_text(s: xr.Dataset, prefix: str, i: int, *, what: str = "customers", need=None, t_max=None) -> str:
    """What to print for percentile ``i`` of ``summary_dataset`` output ``s``: the value with its CI (as many
    digits as the CI supports), the CI method and the ``what`` beyond it per replication; or "too few …" with
    ``need(factor)`` (a hint: the run length ``factor`` times longer) when it cannot be estimated."""
    name = f"{prefix}_percentile"
    x = s[name].isel(percentile=i).values
    beyond = s[f"{prefix}_beyond"].isel(percentile=i).values
    k = x.size
    per_rep = float(beyond.mean())
    missing = int(np.isnan(x).sum())
    if missing:
        where = f" ({t_max:g})" if t_max is not None else ""
        return f"> t_max{where} in {missing} of {k} replication(s): raise --t-max"
    if int(s[f"{name}_too_few"].isel(percentile=i)):
        zero = int((beyond == 0).sum())
        at_max = f"; the sample maximum in {zero} of {k} replication(s)" if zero else ""
        p = float(s["percentile"][i]) / 100.0
        hint = ""
        if need is not None:
            n_per_rep = float(s[f"{prefix}_beyond"].attrs.get("recorded_per_replication", np.nan))
            if np.isfinite(n_per_rep) and n_per_rep > 0:
                hint = f"; needs {need(TAIL_MIN / (1.0 - p) / n_per_rep)}"
        return f"too few {what} ({per_rep:,.0f} beyond it per replication, < {TAIL_MIN}{at_max}){hint}"
    m, lo, hi = (float(s[f"{name}{e}"].isel(percentile=i)) for e in ("_mean", "_ci_low", "_ci_high"))
    value = format_with_ci(m, lo, hi, resolution=s[name].attrs.get("resolution"))
    if k < 2:
        return f"{value}  ({per_rep:,.0f} {what} beyond)"
    method = CI_NAMES[int(s[f"{name}_ci_method"].isel(percentile=i))]
    return f"{value}  ({method}; {per_rep:,.0f} {what} beyond per replication)"


def bin_limited(s: xr.Dataset, prefix: str) -> np.ndarray:
    """(percentile,) True where the percentile is printed, with a CI narrower than the histogram's bin width
    (:func:`sojourn.core.estimates.stats.format_with_ci`: ``± dt (bin)``)."""
    name = f"{prefix}_percentile"
    dt = s[name].attrs.get("resolution")
    m, lo, hi = (s[f"{name}{e}"].values for e in ("_mean", "_ci_low", "_ci_high"))
    half = np.fmax(np.fmax(hi - m, m - lo), (hi - lo) / 2.0)
    shown = (s[f"{name}_too_few"].values == 0) & np.isfinite(s[name].values).all(axis=0) & np.isfinite(half)
    return shown & (half < dt) if dt is not None else np.zeros(m.shape, bool)


def ci_header(s: xr.Dataset, prefix: str) -> str:
    """One line saying what the percentiles' intervals are (and what ``± dt (bin)`` means where one is)."""
    k = s.sizes["replication"]
    conf = s[f"{prefix}_percentile_ci_low"].attrs["confidence"]
    if k < 2:
        return "1 replication: no confidence intervals (use --replications >= 2)"
    note = f"; {BIN_NOTE}" if bin_limited(s, prefix).any() else ""
    return (f"each replication's own, {100 * conf:g}% CI across the {k} (t = Student-t, BCa = bootstrap); "
            f"given where >= {TAIL_MIN} per replication lie beyond{note}")
