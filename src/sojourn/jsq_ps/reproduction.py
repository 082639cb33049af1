"""Reproduction report: the paper's result tables recomputed from our comparison, side by side with the
published ones (reference jsq_ps_methods.md §6), for the faithful methods A–F, the corrected A*–F*,
``exact`` and ``T`` (the conservative tail chain, :mod:`sojourn.jsq_ps.solve.tail`).

Published data (package data under ``data/``, read by :func:`paper_tables` and :func:`paper_best_map`):

* ``paper_tables.csv``: §6.1 (99.99th) and §6.2 (99.999th percentile) signed errors x_p^approx − x_p^sim
  of the best method for that percentile, ρ ∈ {.1,.25,.5,.75,.85,.9,.95,.99} × R ∈ {1,3,5,7,10}; §6.3
  relative errors |x_p^sim − x_p^approx| / x_p^sim of the best-by-Wasserstein method (99th, 99.9th,
  99.99th; ρ ∈ {.2..8} × R ∈ {1,3,6,9}) and the simulated 99.99th percentiles of the same notebook; the
  §6.1/§6.2 method letters are those of the authors' ``experiments/best-percentile-method.csv``;
* ``paper_best_wasserstein.csv``: the authors' ``experiments/best.csv`` (best of A–F by Wasserstein
  distance, 990 cells R = 1..10 × ρ = .01...99; §6.4).

Our side, per method *family* (``faithful`` A–F, ``corrected`` A*–F*, ``exact``, ``T``), from ``comparison.nc``
(exponential service only; :mod:`sojourn.jsq_ps.compare`; its unmasked ``raw_`` statistics, so that a
flagged method's numbers stay visible; "flagged" = not ``usable`` there: ``fit_invalid`` or flagged by the
approximation's own guards):

* percentile tables: the family's best method for that percentile = smallest |mean signed error over
  replications| (the paper's criterion with its one seed), its mean and 95 % CI; methods flagged
  ``fit_invalid`` never count as best;
* relative-error table: the family's best method by W against the best reference (exact where it ran, else
  mean W against our simulation: ``best_method_by_reference``), its mean signed relative error and CI (the
  paper reports |·|);
* best-of-A–F map: ``best_method_by_reference`` per family (which reference picked it in
  ``best_method_reference``) and ``best_method``, the pick against our simulation (the paper's reference); the
  latter's faithful letter per cell against the paper's: *agreement* = same letter, or a
  *tie*: the paper's letter's Wasserstein CI overlaps our best's (the rule of ``tied_with_best``,
  :func:`sojourn.jsq_ps.compare.ties_with_best`, applied within A–F: ``tied_with_best`` itself is relative
  to the best of all methods, corrected ones included). The agreement share is over the cells present
  in both; cells the run does not have are absent (NaN / empty / −1), never an error.

Entry points: :func:`reproduce` (Dataset), :func:`report_text` (rst or markdown), :func:`reproduction_figures`,
and :func:`write_reproduction` (all of it from and to files, for the workflow rule).
"""
from __future__ import annotations

import csv
import io
import json
import warnings
from importlib import resources
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import xarray as xr

from ..core.estimates.stats import interval
from ..core.files.integrity import write_atomic
from ..core.files.io import cf_attrs as _a
from ..core.files.io import cf_flags, provenance, read_netcdf, write_netcdf
from ..core.present.figures import serialized
from .compare import REF_EXACT, REF_NONE, REF_SIMULATION, reference_usable, ties_with_best
from .naming import CORRECTED_METHODS, EXPONENTIAL, FAITHFUL_METHODS

#: method families compared with the paper (the paper's own is ``faithful``); exact and T are families of one
FAMILIES = {"faithful": FAITHFUL_METHODS, "corrected": CORRECTED_METHODS, "exact": ("exact",), "T": ("T",)}

#: §6.1/§6.2 grid and percentiles
PCT_TABLE_RHOS = (0.10, 0.25, 0.50, 0.75, 0.85, 0.90, 0.95, 0.99)
PCT_TABLE_RS = (1, 3, 5, 7, 10)
PCT_TABLE_PERCENTILES = (99.99, 99.999)
#: §6.3 grid and percentiles
REL_TABLE_RHOS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
REL_TABLE_RS = (1, 3, 6, 9)
REL_TABLE_PERCENTILES = (99.0, 99.9, 99.99)

#: ``map_agreement`` values
from .claims import ABSENT, DISAGREE, SAME, TIE, TOO_SHORT  # noqa: E402

_AGREE_ATTRS = cf_flags({TOO_SHORT: "reference_too_short", ABSENT: "absent", DISAGREE: "disagree", TIE: "tie",
                         SAME: "same_letter"})
_TU = "time units (1/mu)"
#: what a percentile or relative error is measured against (-1: not in this run)
#: two methods whose W against exact differ by less than this (time units: mean service times) tie: both sit on exact
#: to the CDF solvers' accuracy (at R = 1 D and E are both exact and differ by ~1e-8), far below the simulation's
#: noise (~1e-2) and any figure's resolution
EXACT_W_TIE = 1e-4
_REF_FLAGS = {-1: "absent", REF_NONE: "too_short", REF_EXACT: "exact", REF_SIMULATION: "simulation"}
_DECIMALS = 6  # loads are matched to the paper's two-decimal grid after rounding to this many decimals


# ------------------------------------------------------------------------------------------- published data
def _data_rows(name: str) -> list[dict]:
    text = resources.files("sojourn.jsq_ps").joinpath("data", name).read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


def paper_tables() -> xr.Dataset:
    """The published §6.1–§6.3 numbers as a Dataset (``paper_tables.csv``).

    ``pct_error`` / ``pct_method`` (pct_percentile, pct_rho, pct_R): §6.1/§6.2 and the method letters;
    ``rel_error`` (rel_percentile, rel_rho, rel_R): §6.3; ``sim_p9999`` (rel_rho, rel_R): §6.3 simulated
    99.99th percentiles.
    """
    pe = np.full((2, 8, 5), np.nan)
    pm = np.full((2, 8, 5), "", dtype=object)
    re = np.full((3, 7, 4), np.nan)
    sp = np.full((7, 4), np.nan)
    for r in _data_rows("paper_tables.csv"):
        pct, R, rho, v = float(r["percentile"]), int(r["R"]), float(r["rho"]), float(r["value"])
        if r["table"] in ("6.1", "6.2"):
            idx = (PCT_TABLE_PERCENTILES.index(pct), PCT_TABLE_RHOS.index(rho), PCT_TABLE_RS.index(R))
            pe[idx], pm[idx] = v, r["method"]
        elif r["table"] == "6.3":
            re[REL_TABLE_PERCENTILES.index(pct), REL_TABLE_RHOS.index(rho), REL_TABLE_RS.index(R)] = v
        elif r["table"] == "6.3sim":
            sp[REL_TABLE_RHOS.index(rho), REL_TABLE_RS.index(R)] = v
        else:
            raise ValueError(f"paper_tables.csv: unknown table {r['table']!r}")
    if np.isnan(pe).any() or np.isnan(re).any() or np.isnan(sp).any():
        raise ValueError("paper_tables.csv is incomplete")
    return xr.Dataset(
        {"pct_error": (("pct_percentile", "pct_rho", "pct_R"), pe),
         "pct_method": (("pct_percentile", "pct_rho", "pct_R"), pm.astype(str)),
         "rel_error": (("rel_percentile", "rel_rho", "rel_R"), re),
         "sim_p9999": (("rel_rho", "rel_R"), sp)},
        coords=_table_coords())


def paper_best_map() -> dict:
    """{(R, round(rho, 2)): letter} of the authors' ``experiments/best.csv`` (990 cells, §6.4)."""
    out = {(int(r["R"]), round(float(r["rho"]), 2)): r["best"] for r in _data_rows("paper_best_wasserstein.csv")}
    if len(out) != 990:
        raise ValueError(f"paper_best_wasserstein.csv: expected 990 cells, got {len(out)}")
    return out


def _table_coords() -> dict:
    def coord(name, values, long_name, units="1"):
        return (name, np.asarray(values), {"long_name": long_name, "units": units})

    return {
        "pct_percentile": coord("pct_percentile", PCT_TABLE_PERCENTILES, "percentile level (§6.1, §6.2)", "percent"),
        "pct_rho": coord("pct_rho", PCT_TABLE_RHOS, "load of the §6.1/§6.2 tables"),
        "pct_R": coord("pct_R", np.array(PCT_TABLE_RS, np.int64), "servers of the §6.1/§6.2 tables"),
        "rel_percentile": coord("rel_percentile", REL_TABLE_PERCENTILES, "percentile level (§6.3)", "percent"),
        "rel_rho": coord("rel_rho", REL_TABLE_RHOS, "load of the §6.3 tables"),
        "rel_R": coord("rel_R", np.array(REL_TABLE_RS, np.int64), "servers of the §6.3 tables"),
    }


# ------------------------------------------------------------------------------------------- our side
def _index(values, targets, tol=10.0 ** -_DECIMALS) -> list:
    """Position of each target in ``values`` (None if absent), matching floats to ``tol``."""
    values = np.asarray(values, dtype=float)
    out = []
    for x in targets:
        hit = np.flatnonzero(np.abs(values - float(x)) < tol)
        out.append(int(hit[0]) if hit.size else None)
    return out


class _Cells:
    """One service law's slice of a comparison dataset as plain arrays (R, rho, approximation[, percentile])."""

    def __init__(self, cmp: xr.Dataset, service: str):
        c = cmp.sel(service=service)
        self.R = c["R"].values.astype(int)
        self.rho = c["rho"].values.astype(float)
        self.methods = [str(m) for m in c["approximation"].values]
        self.pct = c["percentile"].values.astype(float)

        def get(v, dims):
            # the unmasked numbers where the comparison masks unusable methods (faithful mode reproduces the
            # paper's numbers, flagged or not); which methods may be chosen is decided by self.valid below
            v = f"raw_{v}" if f"raw_{v}" in c else v
            return c[v].transpose(*dims).values.astype(float)

        d3 = ("R", "rho", "approximation")
        self.Wm, self.Wlo, self.Whi = (get(v, d3) for v in
                                       ("wasserstein_mean", "wasserstein_ci_low", "wasserstein_ci_high"))
        dq = ("R", "rho", "approximation", "percentile")
        self.E = [get(v, dq) for v in
                  ("percentile_error_mean", "percentile_error_ci_low", "percentile_error_ci_high")]
        self.Q = [get(v, dq) for v in ("relative_percentile_error_mean", "relative_percentile_error_ci_low",
                                       "relative_percentile_error_ci_high")]
        # usable (computed, a CDF, not flagged by the approximation's guards); a comparison written before it
        # existed: not fit_invalid; before that flag existed too: every fit counts as valid
        self.valid = (get("usable", d3) != 0 if "usable" in c else get("fit_invalid", d3) == 0 if "fit_invalid" in c
                      else np.ones(self.Wm.shape, bool))
        self.sim_pct = c["sim_percentile"].transpose("R", "rho", "replication", "percentile").values.astype(float)
        # a precision-driven run pads each cell's replications beyond replications_used (not missing data)
        self.used = c["replications_used"].transpose("R", "rho").values if "replications_used" in c else None
        # the best reference per (R, rho, percentile) (sojourn.jsq_ps.compare.against_reference's rule): exact where
        # it ran and is usable, else the simulation where its percentile is a usable reference, else none
        NR, NP, NQ = len(self.R), len(self.rho), len(self.pct)
        self.sim_ok = (reference_usable(cmp).sel(service=service).transpose("R", "rho", "percentile").values
                       if "few_tail_customers" in c else np.ones((NR, NP, NQ), bool))
        self.run_ok = ((c["sim_run_valid"] != 0).transpose("R", "rho").values if "sim_run_valid" in c
                       else np.ones((NR, NP), bool))
        xa = "raw_approx_percentile" if "raw_approx_percentile" in c else "approx_percentile"
        self.xa = (c[xa].transpose("R", "rho", "approximation", "percentile").values.astype(float) if xa in c
                   else np.full(self.E[0].shape, np.nan))
        self.xe = np.full((NR, NP, NQ), np.nan)
        if "exact" in self.methods and service == EXPONENTIAL:
            e = self.methods.index("exact")
            self.xe = np.where(self.valid[:, :, e, None], self.xa[:, :, e, :], np.nan)
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a cell without replications: NaN
            self.sim_mean = np.nanmean(self.sim_pct, axis=2)
        # each method's W against exact where exact ran and both are usable (no noise; the rule of
        # sojourn.jsq_ps.compare.w_against_reference); exact itself has none
        self.W_exact = np.full(self.Wm.shape, np.nan)
        if "exact" in self.methods and service == EXPONENTIAL and "wasserstein_vs_exact" in cmp:
            e = self.methods.index("exact")
            wx = cmp["wasserstein_vs_exact"].transpose("R", "rho", "approximation").values.astype(float)
            self.W_exact = np.where(self.valid & self.valid[:, :, e, None], wx, np.nan)
            self.W_exact[:, :, e] = np.nan

    def reference(self, i, j, q, m) -> int:
        """REF_EXACT, REF_SIMULATION or REF_NONE for method index ``m`` at (i, j, percentile q)."""
        if self.methods[m] != "exact" and np.isfinite(self.xe[i, j, q]) and np.isfinite(self.xa[i, j, m, q]):
            return REF_EXACT
        return REF_SIMULATION if self.sim_ok[i, j, q] else REF_NONE

    def beyond_grid(self, i, j, q) -> int:
        """1 where exact ran and is usable at (i, j) but its percentile q lies beyond the time grid (t_max): why
        there is no exact reference there, rather than a simulation too short."""
        return int("exact" in self.methods and self.valid[i, j, self.methods.index("exact")]
                   and not np.isfinite(self.xa[i, j, self.methods.index("exact"), q]))

    def error(self, i, j, q, m, relative=False) -> tuple:
        """(mean, low, high) of method ``m``'s (relative) percentile error against its reference, and the reference."""
        ref = self.reference(i, j, q, m)
        if ref == REF_EXACT:
            d = self.xa[i, j, m, q] - self.xe[i, j, q]
            v = d / self.xe[i, j, q] if relative else d
            return (v, v, v), ref
        if ref == REF_SIMULATION:
            src = self.Q if relative else self.E
            return tuple(src[v][i, j, m, q] for v in range(3)), ref
        return (np.nan, np.nan, np.nan), ref

    def ref_percentile(self, i, j, q) -> float:
        """The reference's percentile at (i, j, q): exact's, else the mean simulated one where usable, else NaN."""
        if np.isfinite(self.xe[i, j, q]):
            return float(self.xe[i, j, q])
        return float(self.sim_mean[i, j, q]) if self.sim_ok[i, j, q] else np.nan

    def family(self, name) -> list[int]:
        return [self.methods.index(m) for m in FAMILIES[name] if m in self.methods]

    def best_by_w(self, i, j, fam) -> int | None:
        """Index of the family's best method by mean W in cell (i, j) (valid fits only), or None."""
        ok = [m for m in fam if self.valid[i, j, m] and np.isfinite(self.Wm[i, j, m])]
        return min(ok, key=lambda m: self.Wm[i, j, m]) if ok else None

    def best_by_reference(self, i, j, fam) -> tuple[int | None, int, list[int]]:
        """(index, reference, tied indices) of the family's best method by W against the best reference in cell
        (i, j): against exact where exact ran for a valid method of the family (no noise; a method within
        :data:`EXACT_W_TIE` of the best ties with it), else by mean W against our simulation (:meth:`best_by_w`,
        the paper's reference; a method whose 95 % CI of W overlaps the best's ties with it: within the noise)."""
        ok = [m for m in fam if self.valid[i, j, m] and np.isfinite(self.W_exact[i, j, m])]
        if ok:
            b = min(ok, key=lambda m: self.W_exact[i, j, m])
            tied = [m for m in ok if m != b and self.W_exact[i, j, m] - self.W_exact[i, j, b] <= EXACT_W_TIE]
            return b, REF_EXACT, tied
        b = self.best_by_w(i, j, fam)
        if b is None:
            return None, REF_NONE, []
        ties = [m for m in fam if m != b and self.valid[i, j, m] and np.isfinite(self.Wm[i, j, m])
                and ties_with_best(self.Wm[i, j], self.Wlo[i, j], self.Whi[i, j], m, b)]
        return b, REF_SIMULATION, ties

    def best_by_pct(self, i, j, q, fam) -> int | None:
        """Index of the family's method with the smallest |percentile error| against its reference (valid fits
        only; none where no method has a reference)."""
        err = {m: self.error(i, j, q, m)[0][0] for m in fam if self.valid[i, j, m]}
        ok = [m for m, e in err.items() if np.isfinite(e)]
        return min(ok, key=lambda m: abs(err[m])) if ok else None


def _mean_ci(x: np.ndarray, confidence=0.95):
    """Student-t mean and CI over the last axis (NaN-free rows only; else NaN)."""
    return interval(x, {"confidence": confidence, "ci": "t"})[:3]


def _percentile_tables(c: _Cells, paper: xr.Dataset, fams: list, fam_idx: dict) -> dict:
    """§6.1/§6.2: each family's best method per percentile, its signed error against the reference, and the
    published one's."""
    nF = len(fams)
    iR, iP = _index(c.R, PCT_TABLE_RS), _index(c.rho, PCT_TABLE_RHOS)
    iQ = _index(c.pct, PCT_TABLE_PERCENTILES)
    shp = (nF, len(PCT_TABLE_PERCENTILES), len(PCT_TABLE_RHOS), len(PCT_TABLE_RS))
    pe = [np.full(shp, np.nan) for _ in range(3)]
    pe_m = np.full(shp, "", dtype=object)
    pe_ref = np.full(shp, -1, np.int8)  # -1: not in this run
    pe_x = np.full(shp[1:], np.nan)  # the reference percentile
    pe_paper_m = [np.full(shp[1:], np.nan) for _ in range(3)]  # faithful, the paper's letter
    pe_beyond = np.zeros(shp[1:], np.int8)  # exact ran there, but its percentile lies beyond the time grid
    for f, fam in enumerate(fams):
        for a, q in enumerate(iQ):
            for b, j in enumerate(iP):
                for k, i in enumerate(iR):
                    if q is None or j is None or i is None:
                        continue
                    pe_x[a, b, k] = c.ref_percentile(i, j, q)
                    pe_beyond[a, b, k] = c.beyond_grid(i, j, q)
                    m = c.best_by_pct(i, j, q, fam_idx[fam])
                    pe_ref[f, a, b, k] = REF_NONE if fam_idx[fam] else -1
                    if m is not None:
                        vals, pe_ref[f, a, b, k] = c.error(i, j, q, m)
                        for v in range(3):
                            pe[v][f, a, b, k] = vals[v]
                        pe_m[f, a, b, k] = c.methods[m]
                    letter = str(paper["pct_method"].values[a, b, k])
                    if fam == "faithful" and letter in c.methods:
                        vals, _ = c.error(i, j, q, c.methods.index(letter))
                        for v in range(3):
                            pe_paper_m[v][a, b, k] = vals[v]
    paper_pe = paper["pct_error"].values
    in_ci = np.where(np.isfinite(pe[1]) & np.isfinite(pe[2]) & (pe_ref == REF_SIMULATION),
                     ((pe[1] <= paper_pe[None]) & (paper_pe[None] <= pe[2])).astype(np.int8), np.int8(-1))
    return {
        "pe": pe,
        "pe_m": pe_m,
        "pe_ref": pe_ref,
        "pe_x": pe_x,
        "pe_paper_m": pe_paper_m,
        "pe_beyond": pe_beyond,
        "paper_pe": paper_pe,
        "in_ci": in_ci,
    }


def _relative_tables(c: _Cells, best_map: dict, fams: list, fam_idx: dict) -> dict:
    """§6.3: each family's best method by W, its relative percentile errors; the simulated 99.99th percentiles."""
    nF = len(fams)
    iR3, iP3, iQ3 = _index(c.R, REL_TABLE_RS), _index(c.rho, REL_TABLE_RHOS), _index(c.pct, REL_TABLE_PERCENTILES)
    shp3 = (nF, len(REL_TABLE_PERCENTILES), len(REL_TABLE_RHOS), len(REL_TABLE_RS))
    rel = [np.full(shp3, np.nan) for _ in range(3)]
    rel_ref = np.full(shp3, -1, np.int8)
    rel_m = np.full(shp3[:1] + shp3[2:], "", dtype=object)
    rel_m_ref = np.full(shp3[:1] + shp3[2:], -1, np.int8)
    sim_p = [np.full(shp3[2:], np.nan) for _ in range(3)]
    q9999 = _index(c.pct, [99.99])[0]
    for b, j in enumerate(iP3):
        for k, i in enumerate(iR3):
            if j is None or i is None:
                continue
            if q9999 is not None:
                x = c.sim_pct[i, j, :, q9999] if c.used is None else c.sim_pct[i, j, :int(c.used[i, j]), q9999]
                if x.size and np.isfinite(x).all():
                    for v, val in enumerate(_mean_ci(x[None])):
                        sim_p[v][b, k] = val[0]
            for f, fam in enumerate(fams):
                m, ref, _ = c.best_by_reference(i, j, fam_idx[fam])
                if m is None:
                    continue
                rel_m[f, b, k], rel_m_ref[f, b, k] = c.methods[m], ref
                for a, q in enumerate(iQ3):
                    if q is not None:
                        vals, rel_ref[f, a, b, k] = c.error(i, j, q, m, relative=True)
                        for v in range(3):
                            rel[v][f, a, b, k] = vals[v]
    paper_rel_letter = np.array([[best_map.get((R, round(r, 2)), "") for R in REL_TABLE_RS] for r in REL_TABLE_RHOS])
    return {"rel": rel, "rel_ref": rel_ref, "rel_m": rel_m, "rel_m_ref": rel_m_ref, "sim_p": sim_p,
            "paper_rel_letter": paper_rel_letter}


def _map_agreement(c: _Cells, best_map: dict, fams: list, fam_idx: dict) -> dict:
    """§6.4: each family's best method by W on the run's own (R, rho) cells, and the agreement of the faithful
    family's with the paper's best.csv."""
    nF = len(fams)
    NR, NP = len(c.R), len(c.rho)
    mp_best = np.full((nF, NR, NP), "", dtype=object)
    mp_w = [np.full((nF, NR, NP), np.nan) for _ in range(3)]
    mp_ref_best = np.full((nF, NR, NP), "", dtype=object)
    mp_ref = np.full((nF, NR, NP), -1, np.int8)
    mp_ties = np.full((nF, NR, NP), "", dtype=object)
    mp_differs = np.zeros((nF, NR, NP), np.int8)
    paper_letter = np.full((NR, NP), "", dtype=object)
    agree = np.full((NR, NP), ABSENT, np.int8)
    gap = np.full((NR, NP), np.nan)
    paper_invalid = np.zeros((NR, NP), np.int8)
    for i, R in enumerate(c.R):
        for j, rho in enumerate(c.rho):
            paper_letter[i, j] = best_map.get((int(R), round(float(rho), 2)), "") \
                if abs(round(float(rho), 2) - float(rho)) < 10.0 ** -_DECIMALS else ""
            for f, fam in enumerate(fams):
                m = c.best_by_w(i, j, fam_idx[fam])
                if m is not None:
                    mp_best[f, i, j] = c.methods[m]
                    mp_w[0][f, i, j], mp_w[1][f, i, j], mp_w[2][f, i, j] = c.Wm[i, j, m], c.Wlo[i, j, m], c.Whi[i, j, m]
                m, ref, ties = c.best_by_reference(i, j, fam_idx[fam])
                if m is not None:
                    mp_ref_best[f, i, j], mp_ref[f, i, j] = c.methods[m], ref
                    mp_ties[f, i, j] = ",".join(c.methods[t] for t in ties)
                    x = mp_best[f, i, j]
                    mp_differs[f, i, j] = bool(x) and x != c.methods[m] and x not in [c.methods[t] for t in ties]
            ours = mp_best[0, i, j]
            p = paper_letter[i, j]
            if not ours or not p or p not in c.methods:
                continue
            if not c.run_ok[i, j]:  # our W against a simulation too short to trust: no verdict, left out of the share
                agree[i, j] = TOO_SHORT
                continue
            b, pm = c.methods.index(ours), c.methods.index(p)
            if not np.isfinite(c.Wm[i, j, pm]):
                continue  # the paper's method was not run here: not comparable
            gap[i, j] = c.Wm[i, j, pm] - c.Wm[i, j, b]
            if not c.valid[i, j, pm]:
                paper_invalid[i, j] = 1
                agree[i, j] = DISAGREE
            elif pm == b:
                agree[i, j] = SAME
            else:
                agree[i, j] = TIE if ties_with_best(c.Wm[i, j], c.Wlo[i, j], c.Whi[i, j], pm, b) else DISAGREE
    present = (agree != ABSENT) & (agree != TOO_SHORT)
    n_present = int(present.sum())
    share = float(np.isin(agree, (TIE, SAME)).sum() / n_present) if n_present else float("nan")
    share_same = float((agree == SAME).sum() / n_present) if n_present else float("nan")
    return {
        "mp_best": mp_best,
        "mp_w": mp_w,
        "mp_ref_best": mp_ref_best,
        "mp_ref": mp_ref,
        "mp_ties": mp_ties,
        "mp_differs": mp_differs,
        "paper_letter": paper_letter,
        "agree": agree,
        "gap": gap,
        "paper_invalid": paper_invalid,
        "share": share,
        "share_same": share_same,
        "n_present": n_present,
    }


def _percentile_variables(v: SimpleNamespace, paper: xr.Dataset) -> dict:
    """Data variables of the reproduction: the §6.1/§6.2 percentile tables."""
    P3 = ("pct_percentile", "pct_rho", "pct_R")
    F4 = ("family",) + P3
    return {
        "paper_percentile_error": (P3, v.paper_pe, _a(
            "published signed percentile error approx - sim of the best method for that percentile (§6.1 99.99th, "
            "§6.2 99.999th)", _TU)),
        "paper_percentile_method": (P3, paper["pct_method"].values,
            _a("published best method for that percentile (best-percentile-method.csv)")),
        "percentile_error": (F4, v.pe[0], _a(
            "our signed percentile error (approx - reference) of the family's best method for that percentile: "
            "against exact where it ran, else the mean over replications against the simulation "
            "(percentile_error_reference)", _TU)),
        "percentile_error_ci_low": (F4, v.pe[1], _a("lower end of the 95% CI of percentile_error", _TU)),
        "percentile_error_ci_high": (F4, v.pe[2], _a("upper end of the 95% CI of percentile_error", _TU)),
        "percentile_error_method": (F4, v.pe_m.astype(str), _a(
            "family's best method for that percentile: smallest |mean error|, fit_invalid excluded ('' = absent)")),
        "paper_value_in_ci": (F4, v.in_ci, _a(
            "1 if the published value lies in our 95% CI (against the simulation), 0 if not, -1 absent or against "
            "exact (no interval)", flags={-1: "absent", 0: "outside", 1: "inside"})),
        "percentile_error_reference": (F4, v.pe_ref, _a(
            "what percentile_error is measured against: 1 exact (where it ran), 2 the simulation (where its "
            "percentile is a usable reference), 0 none: reference too short (sojourn.core.estimates.reference), "
            "-1 not in this run", flags=_REF_FLAGS)),
        "percentile_beyond_grid": (P3, v.pe_beyond, _a(
            "1 where exact ran but its percentile lies beyond the time grid (t_max): there no exact reference "
            "exists for this reason, not because the simulation is too short",
            flags={0: "within_grid", 1: "beyond_grid"})),
        "reference_percentile": (P3, v.pe_x, _a(
            "the reference's percentile there: exact's where it ran, else the mean simulated one where usable "
            "(NaN: none)", _TU)),
        "percentile_error_paper_method": (P3, v.pe_paper_m[0], _a(
            "our mean signed percentile error of the paper's method for that percentile (NaN: letter unknown)", _TU)),
        "percentile_error_paper_method_ci_low": (P3, v.pe_paper_m[1], _a("lower end of its 95% CI", _TU)),
        "percentile_error_paper_method_ci_high": (P3, v.pe_paper_m[2], _a("upper end of its 95% CI", _TU)),
    }


def _relative_variables(v: SimpleNamespace, paper: xr.Dataset) -> dict:
    """Data variables of the reproduction: the §6.3 relative errors and simulated percentiles."""
    Q3 = ("rel_percentile", "rel_rho", "rel_R")
    return {
        "paper_relative_error": (
            Q3,
            paper["rel_error"].values,
            _a(
                "published relative percentile error "
                "|x_sim - x_approx| / x_sim of the best-by-"
                "Wasserstein method (§6.3)"
            ),
        ),
        "paper_relative_method": (("rel_rho", "rel_R"), v.paper_rel_letter.astype(str),
            _a("the paper's best-by-Wasserstein method there (best.csv)")),
        "relative_error": (
            ("family",) + Q3,
            v.rel[0],
            _a(
                "our signed relative percentile error (approx - reference)/"
                "reference of the family's best method by W (relative_error_method) "
                "(relative_error_reference)"
            ),
        ),
        "relative_error_ci_low": (("family",) + Q3, v.rel[1], _a("lower end of the 95% CI of relative_error")),
        "relative_error_ci_high": (("family",) + Q3, v.rel[2], _a("upper end of the 95% CI of relative_error")),
        "relative_error_reference": (
            ("family",) + Q3,
            v.rel_ref,
            _a(
                "what relative_error is measured against (as percentile_error_reference)",
                flags=_REF_FLAGS,
            ),
        ),
        "relative_error_method": (("family", "rel_rho", "rel_R"), v.rel_m.astype(str),
            _a("family's best method by W against the best reference (as best_method_by_reference)")),
        "relative_error_method_reference": (("family", "rel_rho", "rel_R"), v.rel_m_ref,
            _a("the reference that picked relative_error_method (-1 no method)", flags=_REF_FLAGS)),
        "paper_sim_percentile_9999": (("rel_rho", "rel_R"), paper["sim_p9999"].values,
            _a("published simulated 99.99th sojourn-time percentile (one seed, §6.3)", _TU)),
        "sim_percentile_9999": (("rel_rho", "rel_R"), v.sim_p[0],
            _a("our simulated 99.99th percentile, mean over replications", _TU)),
        "sim_percentile_9999_ci_low": (("rel_rho", "rel_R"), v.sim_p[1],
            _a("lower end of its 95% CI (Student t)", _TU)),
        "sim_percentile_9999_ci_high": (("rel_rho", "rel_R"), v.sim_p[2],
            _a("upper end of its 95% CI (Student t)", _TU)),
    }


def _map_variables(v: SimpleNamespace, paper: xr.Dataset) -> dict:
    """Data variables of the reproduction: the §6.4 map."""
    return {
        "paper_best_method": (("R", "rho"), v.paper_letter.astype(str),
            _a("the paper's best of A-F by Wasserstein distance (best.csv; '' = not in its grid)")),
        "best_method": (("family", "R", "rho"), v.mp_best.astype(str),
            _a("our family's best method by mean Wasserstein distance (fit_invalid excluded)")),
        "best_method_by_reference": (("family", "R", "rho"), v.mp_ref_best.astype(str),
            _a("our family's best method by W against the best reference: exact where it ran (no noise), else "
               "best_method (mean W against our simulation)")),
        "best_method_ties": (("family", "R", "rho"), v.mp_ties.astype(str),
            _a("the family's methods tied with best_method_by_reference (comma-separated): against exact within "
               f"{EXACT_W_TIE:g} of its W, against the simulation their 95% CIs of W overlap")),
        "best_method_simulation_differs": (("family", "R", "rho"), v.mp_differs,
            _a("1 where best_method (our pick against the simulation, the paper's reference) is neither "
               "best_method_by_reference nor tied with it")),
        "best_method_reference": (("family", "R", "rho"), v.mp_ref,
            _a("the reference that picked best_method_by_reference (-1 no method)", flags=_REF_FLAGS)),
        "best_wasserstein": (("family", "R", "rho"), v.mp_w[0], _a("mean Wasserstein distance of best_method", _TU)),
        "best_wasserstein_ci_low": (("family", "R", "rho"), v.mp_w[1], _a("lower end of its 95% CI", _TU)),
        "best_wasserstein_ci_high": (("family", "R", "rho"), v.mp_w[2], _a("upper end of its 95% CI", _TU)),
        "agreement": (
            ("R", "rho"),
            v.agree,
            _a(
                "our best of A-F vs the paper's: same letter, tie (the paper's "
                "method's W CI overlaps our best's), disagree, absent, or no verdict "
                "(our simulation too short to trust there)",
                **_AGREE_ATTRS,
            ),
        ),
        "paper_method_fit_invalid": (("R", "rho"), v.paper_invalid,
            _a("1 if the paper's best method is fit_invalid in our run (counted as disagreement)")),
        "wasserstein_gap": (("R", "rho"), v.gap,
            _a("mean W of the paper's best method minus mean W of our best of A-F (0 if the same)", _TU)),
    }


def reproduce(cmp: xr.Dataset, service: str = EXPONENTIAL) -> xr.Dataset:
    """The reproduction Dataset of a comparison dataset (see the module doc and the variables' attrs)."""
    if service not in cmp["service"].values.tolist():
        raise ValueError(f"service must be one of {cmp['service'].values.tolist()}; got {service!r}")
    paper = paper_tables()
    best_map = paper_best_map()
    c = _Cells(cmp, service)
    fams = list(FAMILIES)
    fam_idx = {f: c.family(f) for f in fams}
    v = SimpleNamespace(**_percentile_tables(c, paper, fams, fam_idx), **_relative_tables(c, best_map, fams, fam_idx),
                        **_map_agreement(c, best_map, fams, fam_idx))
    coords = _table_coords()
    coords.update(
        {
            "family": ("family", np.array(fams, dtype=str),
                {"long_name": "method family: faithful A-F, corrected A*-F*, exact, T (the conservative tail chain)"}),
            "R": ("R", c.R.astype(np.int64), {"long_name": "number of servers", "units": "1"}),
            "rho": ("rho", c.rho, {"long_name": "load Lambda/(R mu)", "units": "1"}),
        }
    )
    variables = {**_percentile_variables(v, paper), **_relative_variables(v, paper), **_map_variables(v, paper)}
    ds = xr.Dataset(variables, coords=coords)
    ds.attrs.update(
        {
            "agreement_share": v.share,
            "agreement_share_same_letter": v.share_same,
            "agreement_cells": v.n_present,
            "agreement_too_short_cells": int((v.agree == TOO_SHORT).sum()),
            "paper_cells": 990,
            "service": service,
            "reference": "jsq_ps_methods.md section 6 (Palmer & Martin-Perez, arXiv 2210.17227); "
            "geraintpalmer/aggregated-vs-parallel-ps experiments/best.csv",
            "selection": "percentile tables: smallest |mean signed error| per family; relative errors and map: "
            "smallest mean "
            "Wasserstein distance per family; fit_invalid methods excluded everywhere",
        }
    )
    return ds


# ------------------------------------------------------------------------------------------- summaries
def largest_disagreements(rep: xr.Dataset, n: int = 10) -> list[dict]:
    """Map cells where our best of A–F and the paper's differ beyond a tie, largest W gap first."""
    ag = rep["agreement"].values
    gap = rep["wasserstein_gap"].values
    rows = []
    for i, j in zip(*np.nonzero(ag == DISAGREE), strict=True):
        w = float(rep["best_wasserstein"].values[0, i, j])
        rows.append(
            {
                "R": int(rep["R"].values[i]),
                "rho": float(rep["rho"].values[j]),
                "paper": str(rep["paper_best_method"].values[i, j]),
                "ours": str(rep["best_method"].values[0, i, j]),
                "w_ours": w,
                "w_gap": float(gap[i, j]),
                "paper_fit_invalid": bool(rep["paper_method_fit_invalid"].values[i, j]),
            }
        )
    rows.sort(key=lambda r: -r["w_gap"] if np.isfinite(r["w_gap"]) else np.inf)
    return rows[:n]


def largest_table_differences(rep: xr.Dataset, n: int = 5) -> list[dict]:
    """§6.1/§6.2 cells with the largest |ours (faithful) − published|."""
    ours = rep["percentile_error"].sel(family="faithful").values
    paper = rep["paper_percentile_error"].values
    d = np.abs(ours - paper)
    rows = []
    for a, b, k in zip(*np.nonzero(np.isfinite(d)), strict=True):
        rows.append({"percentile": float(rep["pct_percentile"].values[a]), "rho": float(rep["pct_rho"].values[b]),
                     "R": int(rep["pct_R"].values[k]), "paper": float(paper[a, b, k]),
                     "paper_method": str(rep["paper_percentile_method"].values[a, b, k]),
                     "ours": float(ours[a, b, k]),
                     "ci": (float(rep["percentile_error_ci_low"].values[0, a, b, k]),
                            float(rep["percentile_error_ci_high"].values[0, a, b, k])),
                     "ours_method": str(rep["percentile_error_method"].values[0, a, b, k]),
                     "ours_with_paper_method": float(rep["percentile_error_paper_method"].values[a, b, k]),
                     "difference": float(ours[a, b, k] - paper[a, b, k])})
    rows.sort(key=lambda r: -abs(r["difference"]))
    return rows[:n]


def _f(x, fmt="{:.2f}"):
    return "–" if x is None or not np.isfinite(x) else fmt.format(x)


def _ci(m, lo, hi, fmt="{:.2f}"):
    if not np.isfinite(m):
        return "–"
    if np.isfinite(lo) and np.isfinite(hi):
        return f"{fmt.format(m)} [{fmt.format(lo)}, {fmt.format(hi)}]"
    return fmt.format(m)


def _with_reference(text: str, method: str, rep, var: str, idx) -> str:
    """A table cell of ours: the value and its method, 'vs exact' where exact is the reference, and 'reference too
    short' where we have none (sojourn.core.estimates.reference)."""
    ref = int(rep[var].values[idx]) if var in rep else REF_SIMULATION
    if ref == REF_NONE:
        return "reference too short"
    return text + (f" ({method})" if method else "") + (" vs exact" if ref == REF_EXACT and text != "–" else "")


def _table(header: list[str], rows: list[list[str]], fmt: str) -> str:
    if fmt == "markdown":
        out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(out) + "\n"
    esc = lambda s: '"' + s.replace('"', '""') + '"'
    out = [".. csv-table::", "   :header: " + ", ".join(esc(h) for h in header), ""]
    out += ["   " + ", ".join(esc(x) for x in r) for r in rows]
    return "\n".join(out) + "\n"


def _heading(text: str, level: int, fmt: str) -> str:
    if fmt == "markdown":
        return "#" * (level + 1) + " " + text + "\n"
    return text + "\n" + "=-~^"[level - 1] * len(text) + "\n"


def _map_section(rep: xr.Dataset, fmt: str) -> list[str]:
    """The report's §6.4 paragraph and its largest disagreements."""
    out = []
    n = int(rep.attrs["agreement_cells"])
    share, same = rep.attrs["agreement_share"], rep.attrs["agreement_share_same_letter"]
    short = int(rep.attrs.get("agreement_too_short_cells", 0))
    out.append(f"Best of A–F by Wasserstein distance (§6.4, the authors' best.csv): over the {n} of "
               f"{rep.attrs['paper_cells']} published cells present in this run"
               + (f" with a simulation long enough to judge ({short} more too short: no verdict)" if short else "")
               + f", our best letter agrees with the "
               f"paper's in {_f(100 * share, '{:.1f}')} % of the cells ({_f(100 * same, '{:.1f}')} % the same letter, "
               f"the rest ties: the paper's method's 95 % CI of W overlaps our best's). Methods whose approximated "
               f"CDF is not a CDF (``fit_invalid``) never count as best.\n")
    dis = largest_disagreements(rep, 10)
    if dis:
        out.append(_heading("Largest disagreements with the paper's best method", 2, fmt))
        out.append(
            _table(
                ["R", "ρ", "paper", "ours", "W ours", "W paper − W ours"],
                [
                    [
                        str(r["R"]),
                        f"{r['rho']:.2f}",
                        r["paper"] + (" (fit invalid)" if r["paper_fit_invalid"] else ""),
                        r["ours"],
                        _f(r["w_ours"], "{:.4f}"),
                        _f(r["w_gap"], "{:.4f}"),
                    ]
                    for r in dis
                ],
                fmt,
            )
        )
    return out


def _percentile_sections(rep: xr.Dataset, fams: list, fmt: str) -> list[str]:
    """The report's §6.1/§6.2 tables and their largest differences from the published ones."""
    out = []
    for a, pct in enumerate(rep["pct_percentile"].values):
        sec = "6.1" if a == 0 else "6.2"
        out.append(_heading(f"§{sec}: {pct:g}th percentile, signed error approx − sim (time units)", 2, fmt))
        out.append("Each cell: published value (its method), then ours per family: against exact where it ran ('vs "
                   "exact'), else the mean over replications against our simulation [95 % CI] (best method of the "
                   "family for that percentile); 'reference too short': neither exact nor a usable simulation there "
                   "(fewer than 100 customers per replication beyond the percentile). – = not in this run.\n")
        header = ["ρ", "R"] + ["paper"] + fams
        rows = []
        for b, rho in enumerate(rep["pct_rho"].values):
            for k, R in enumerate(rep["pct_R"].values):
                pm = str(rep["paper_percentile_method"].values[a, b, k])
                paper = f"{rep['paper_percentile_error'].values[a, b, k]:.2f}" + (f" ({pm})" if pm else "")
                row = [f"{rho:.2f}", str(R), paper]
                for f in range(len(fams)):
                    m = str(rep["percentile_error_method"].values[f, a, b, k])
                    s = _ci(
                        rep["percentile_error"].values[f, a, b, k],
                        rep["percentile_error_ci_low"].values[f, a, b, k],
                        rep["percentile_error_ci_high"].values[f, a, b, k],
                    )
                    row.append(_with_reference(s, m, rep, "percentile_error_reference", (f, a, b, k)))
                rows.append(row)
        out.append(_table(header, rows, fmt))
    diffs = largest_table_differences(rep, 5)
    if diffs:
        out.append(_heading("Largest differences from the §6.1/§6.2 tables (faithful A–F)", 2, fmt))
        out.append(
            _table(
                ["percentile", "ρ", "R", "paper", "ours [95 % CI]", "ours with the paper's method", "ours − paper"],
                [
                    [
                        f"{r['percentile']:g}",
                        f"{r['rho']:.2f}",
                        str(r["R"]),
                        f"{r['paper']:.2f}" + (f" ({r['paper_method']})" if r["paper_method"] else ""),
                        _ci(r["ours"], *r["ci"]) + f" ({r['ours_method']})",
                        _f(r["ours_with_paper_method"]),
                        _f(r["difference"]),
                    ]
                    for r in diffs
                ],
                fmt,
            )
        )
    return out


def _relative_sections(rep: xr.Dataset, fams: list, fmt: str) -> list[str]:
    """The report's §6.3 tables: relative errors and the simulated 99.99th percentile."""
    out = []
    out.append(_heading("§6.3: relative percentile error of the best-by-Wasserstein method", 2, fmt))
    out.append("Published: |x_sim − x_approx| / x_sim (the paper's best.csv method in brackets). Ours: signed "
               "(x_approx − x_ref) / x_ref against exact where it ran ('vs exact'), else the mean over replications "
               "against our simulation [95 % CI] (the family's best method by W against exact where it ran, else by "
               "mean W against our simulation); 'reference too short' as above.\n")
    for a, pct in enumerate(rep["rel_percentile"].values):
        rows = []
        for b, rho in enumerate(rep["rel_rho"].values):
            for k, R in enumerate(rep["rel_R"].values):
                pl = str(rep["paper_relative_method"].values[b, k])
                paper = f"{rep['paper_relative_error'].values[a, b, k]:.2f}" + (f" ({pl})" if pl else "")
                row = [f"{pct:g}", f"{rho:.1f}", str(R), paper]
                for f in range(len(fams)):
                    m = str(rep["relative_error_method"].values[f, b, k])
                    s = _ci(rep["relative_error"].values[f, a, b, k], rep["relative_error_ci_low"].values[f, a, b, k],
                            rep["relative_error_ci_high"].values[f, a, b, k])
                    row.append(_with_reference(s, m, rep, "relative_error_reference", (f, a, b, k)))
                rows.append(row)
        out.append(_table(["percentile", "ρ", "R", "paper"] + fams, rows, fmt))
    out.append(_heading("§6.3: simulated 99.99th percentile", 2, fmt))
    rows = [[f"{rho:.1f}", str(R), f"{rep['paper_sim_percentile_9999'].values[b, k]:.2f}",
             _ci(rep["sim_percentile_9999"].values[b, k], rep["sim_percentile_9999_ci_low"].values[b, k],
                 rep["sim_percentile_9999_ci_high"].values[b, k])]
            for b, rho in enumerate(rep["rel_rho"].values) for k, R in enumerate(rep["rel_R"].values)]
    out.append(_table(["ρ", "R", "paper (one seed)", "ours [95 % CI]"], rows, fmt))
    return out


def report_text(rep: xr.Dataset, fmt: str = "rst") -> str:
    """The reproduction report as reStructuredText (``fmt="rst"``, for the Snakemake report) or markdown."""
    if fmt not in ("rst", "markdown"):
        raise ValueError(f"fmt must be 'rst' or 'markdown'; got {fmt!r}")
    fams = rep["family"].values.tolist()
    out = [_heading("Reproduction of Palmer & Martín-Pérez (arXiv 2210.17227), §6", 1, fmt), ""]
    out += _map_section(rep, fmt)
    out += _percentile_sections(rep, fams, fmt)
    out += _relative_sections(rep, fams, fmt)
    return "\n".join(out)


# ------------------------------------------------------------------------------------------- figures
@serialized
def reproduction_figures(rep: xr.Dataset, figures_dir, formats=("png", "pdf"), dpi=120) -> list[Path]:
    """The report's figures: those of the study's figure registry drawn by the reproduction job
    (:data:`sojourn.jsq_ps.plots.FIGURES`), each saved as every format."""
    from . import plots

    figures_dir = Path(figures_dir)
    kw = {"formats": tuple(formats), "dpi": dpi}
    out = []
    for f in plots.FIGURES:
        if f.job == "reproduction":
            out += getattr(plots, f.draw)(rep, figures_dir / f.stem, **kw)
    return out


def reproduction_encoding(ds: xr.Dataset) -> dict:
    enc = {}
    for name, var in ds.data_vars.items():
        if var.dtype.kind == "f":
            enc[name] = {"zlib": True, "complevel": 5, "shuffle": True}
    return enc


def write_reproduction(comparison_path, output_nc, figures_dir, settings: dict | None = None,
                       report_path=None, caption_path=None) -> list[Path]:
    """``reproduction.nc`` + figures (+ the report text at ``report_path``, rst) from ``comparison.nc``.

    ``settings`` (all optional): ``service`` (default exponential), ``formats`` (default png, pdf), ``dpi``
    (default 120); the whole dict is recorded as provenance. ``report_path``: the report text as
    reStructuredText (``.rst``), markdown (``.md``) or a standalone HTML page rendered from the rst by
    docutils (``.html``: what a Snakemake report embeds); ``caption_path``: the report page's caption, written from
    the same data (:func:`sojourn.jsq_ps.plots.page_caption`). Returns the written paths.
    """
    settings = dict(settings or {})
    if report_path is not None and Path(report_path).suffix.lower() not in (".rst", ".md", ".html"):
        raise ValueError(f"report_path must end in .rst, .md or .html; got {Path(report_path).name!r}")
    cmp = read_netcdf(comparison_path)
    rep = reproduce(cmp, service=settings.get("service", EXPONENTIAL))
    rep.attrs.update(provenance(settings, title="sojourn JSQ-PS: reproduction of the paper's section 6 tables",
                                comparison=json.dumps({k: cmp.attrs.get(k) for k in ("git_commit", "sojourn_version")
                                                       if k in cmp.attrs}, sort_keys=True)))
    out = [write_netcdf(rep, output_nc, encoding=reproduction_encoding(rep))]
    out += reproduction_figures(rep, figures_dir, formats=settings.get("formats", ("png", "pdf")),
                                dpi=int(settings.get("dpi", 120)))
    if report_path is not None:
        report_path = Path(report_path)
        report_path.parent.mkdir(parents=True, exist_ok=True)
        suffix = report_path.suffix.lower()
        if suffix == ".md":
            write_atomic(report_path, report_text(rep, "markdown").encode("utf-8"))
        elif suffix == ".html":
            write_atomic(report_path, report_html(rep))
        else:
            write_atomic(report_path, report_text(rep, "rst").encode("utf-8"))
        out.append(report_path)
    if caption_path is not None:
        from .plots import page_caption

        out.append(page_caption(rep).write(caption_path))
    return out


def report_html(rep: xr.Dataset) -> bytes:
    """The rst report rendered to a standalone HTML page (UTF-8) by docutils."""
    from docutils.core import publish_string

    return publish_string(report_text(rep, "rst"), writer="html5",
                          settings_overrides={"report_level": 5, "halt_level": 5, "output_encoding": "utf-8",
                                              "embed_stylesheet": True})
