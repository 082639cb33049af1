"""Figures of the JSQ-PS study (matplotlib, Agg backend): one function per figure, each saved in every format with its
caption (``<stem>.rst``, :class:`sojourn.core.present.claims.Caption`) written from the data it draws.

Every comparison is against the best reference there (:func:`sojourn.jsq_ps.compare.against_reference`): exact where it
ran, else the simulation where it can tell (enough customers beyond the percentile, a run long enough), else none —
drawn as "reference too short" (:data:`sojourn.core.present.figures.REFERENCE_TOO_SHORT`), never as a value, and left
out of every statistic a caption or table states. A difference counts only beyond its CI (against the simulation) or
beyond the grid's resolution (against exact); the colour maps draw the rest as "no difference". Status marks (not run,
invalid fit, reference too short) sit in a strip above a panel or inside a map cell, never at a y that reads as data.

The package holds one module per figure family; each family's public functions are importable from
``sojourn.jsq_ps.plots``, the pieces they share from :mod:`.common` (series, styles, legends, number words). The
families: :mod:`.wasserstein`, :mod:`.maps` (best and recommended method), :mod:`.errors` (percentile errors),
:mod:`.runtime`, :mod:`.cdf` (one cell's distribution), :mod:`.laws` (M/G/R), :mod:`.reproduction` (the paper's §6)
and :mod:`.tables` (key results). A figure module calls ``common.save``, looked up when it draws, so that a test
can replace it (``plots.common.save``).
"""
from __future__ import annotations

import json
from pathlib import Path

import xarray as xr

from ...core.files.io import NETCDF_LOCK, read_netcdf
from ...core.present.figures import Figure, instance, save, serialized
from .cdf import cdf_cell
from .errors import (
    LIN_PCT,
    PALETTES,
    REL_CLIP,
    REL_TICKS,
    STATUS_FILL,
    norm_rgb,
    percentile_error_vs_rho,
    percentile_error_vs_rho_corrected,
)
from .laws import mgr_laws_distance, mgr_laws_percentile
from .maps import best_by_reference, best_method_map, recommended_map
from .reproduction import (
    REP_SOURCE,
    ratio_beyond_noise,
    reproduction_map,
    reproduction_percentile_errors,
    reproduction_relative_errors,
)
from .runtime import runtime_vs_R
from .tables import R_BANDS, RHO_BANDS, key_results, page_caption
from .wasserstein import wasserstein_vs_rho

__all__ = [
    "all_figures",
    "best_by_reference",
    "best_method_map",
    "cdf_cell",
    "FIGURES",
    "figures",
    "key_results",
    "LIN_PCT",
    "mgr_laws_distance",
    "mgr_laws_percentile",
    "norm_rgb",
    "page_caption",
    "PALETTES",
    "percentile_error_vs_rho",
    "percentile_error_vs_rho_corrected",
    "R_BANDS",
    "ratio_beyond_noise",
    "recommended_map",
    "REL_CLIP",
    "REL_TICKS",
    "REP_SOURCE",
    "reproduction_map",
    "reproduction_percentile_errors",
    "reproduction_relative_errors",
    "RHO_BANDS",
    "runtime_vs_R",
    "save",
    "STATUS_FILL",
    "wasserstein_vs_rho",
]

#: every figure of the study, declared once: the workflow's outputs and report captions come from here
#: (:func:`figures`), and the figure jobs draw exactly these (:func:`all_figures`, reproduction's figures)
FIGURES = (
    Figure("wasserstein_vs_rho", "wasserstein_vs_rho"),
    Figure("best_method_map", "best_method_map"),
    Figure("recommended_map", "recommended_map"),
    Figure("percentile_error_vs_rho", "percentile_error_vs_rho"),
    Figure("percentile_error_vs_rho_corrected", "percentile_error_vs_rho_corrected"),
    Figure("runtime_vs_R", "runtime_vs_R"),
    Figure("cdf_R~{R}_rho~{rho}", "cdf_cell"),
    Figure("mgr_laws_distance", "mgr_laws_distance"),
    Figure("mgr_laws_percentile", "mgr_laws_percentile"),
    Figure("reproduction_percentile_errors", "reproduction_percentile_errors", "reproduction"),
    Figure("reproduction_relative_errors", "reproduction_relative_errors", "reproduction"),
    Figure("reproduction_best_map", "reproduction_map", "reproduction"),
)


def figures(settings: dict, job: str = "figures") -> list:
    """The figures (:class:`sojourn.core.present.figures.FigureFile`) the study's config section ``settings``
    produces in job ``job``: every figure of :data:`FIGURES`, a CDF figure per ``figures.cdf_cells`` entry, the M/G/R
    figures only with ``mgr.laws``."""
    dec = int(settings["grid"].get("rho_decimals", 2))
    out = []
    for f in FIGURES:
        if f.job != job:
            continue
        if f.draw == "cdf_cell":
            out += [instance(f, R=int(c["R"]), rho=f"{float(c['rho']):.{dec}f}")
                    for c in (settings.get("figures") or {}).get("cdf_cells") or []]
        elif f.draw.startswith("mgr_laws"):
            out += [instance(f)] if (settings.get("mgr") or {}).get("laws") else []
        else:
            out.append(instance(f))
    return out


@serialized
def all_figures(cmp_path, sim_path, approx_path, outdir, settings: dict, formats=("png", "pdf"), dpi=120):
    """Every figure :func:`figures` lists for the study's config section ``settings`` into ``outdir``, each with its
    caption; returns the written paths."""
    cmp = read_netcdf(cmp_path)  # small: (service, R, rho, approximation, replication, percentile)
    with NETCDF_LOCK, xr.open_dataset(approx_path, engine="netcdf4") as approx:
        if "validity_reason" in approx:  # why a method has no value: over budget vs invalid (status marks)
            cmp["validity_reason"] = approx["validity_reason"].load().reindex_like(cmp["usable"], fill_value=0)
        if "truncation_mass" in approx:  # exact's truncation, stated in the recommended map's legend
            cmp["truncation_mass"] = approx["truncation_mass"].load().reindex_like(cmp["usable"])
        if "t" in approx.coords and approx.sizes.get("t", 0):  # the time grid's end: a percentile beyond it is none
            cmp.attrs["t_max"] = float(approx["t"].values[-1])
    budget = (settings.get("approximation") or {}).get("exact_budget")
    if budget:  # exact runs only where its predicted cost fits this (the maps and the runtime figure say so)
        cmp.attrs["exact_budget"] = json.dumps(budget, sort_keys=True)
    outdir = Path(outdir)
    kw = {"formats": tuple(formats), "dpi": dpi}
    out = []
    for f in figures(settings):
        stem = outdir / f.stem
        if f.kind.draw == "cdf_cell":
            # one cell each: read just its slices (the merged files are GBs once decompressed)
            R, rho = int(f.fields["R"]), float(f.fields["rho"])
            with NETCDF_LOCK, xr.open_dataset(sim_path, engine="netcdf4") as sim, \
                    xr.open_dataset(approx_path, engine="netcdf4") as approx:
                sim_c = sim[["count", "overflow"]].sel(R=[R]).sel(rho=[rho], method="nearest").load()
                var = "cdf" if "cdf" in approx else "sf"
                approx_c = approx[[var]].sel(R=[R]).sel(rho=[rho], method="nearest").load()
            out += cdf_cell(sim_c, approx_c, R, rho, stem, cmp=cmp, **kw)
        elif f.kind.draw == "recommended_map" and "recommended" not in cmp:
            raise ValueError(f"{cmp_path} has no recommendation: it comes from an older release; rerun the comparison")
        elif f.kind.draw.startswith("mgr_laws"):
            out += globals()[f.kind.draw](cmp, stem, laws=(settings.get("mgr") or {}).get("laws"), **kw)
        else:
            out += globals()[f.kind.draw](cmp, stem, **kw)
    return out
