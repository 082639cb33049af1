"""The key-results tables of the report and the page caption."""
from __future__ import annotations

import numpy as np
import xarray as xr

from ...core.present.claims import Caption, Claim, listing
from .. import claims as Q
from ..compare import (
    REF_EXACT,
    REF_SIMULATION,
    against_reference,
    reference_usable,
)
from .common import EXPONENTIAL, RULE, _cells_text, _groups, series
from .maps import best_by_reference
from .reproduction import _reproduction_map_caption, _rq

# =========================================================================== key results (report tables)
RHO_BANDS = ((0.0, 0.5), (0.5, 0.8), (0.8, 0.9), (0.9, 1.0))
R_BANDS = ((1, 1), (2, 3), (4, 6), (7, 10), (11, 10**6))


def _bands(values, bands):
    """[(label, mask, (lo, hi))] of the ``bands`` (closed integer or half-open real intervals) that hold any of
    ``values``."""
    v = np.asarray(values)
    out = []
    for lo, hi in bands:
        if isinstance(lo, int):
            m = (v >= lo) & (v <= hi)
            lab = f"{lo}" if lo == hi else (f"{lo}–{int(v[m].max())}" if m.any() else "")
        else:
            m = (v >= lo) & (v < hi)
            lab = f"{lo:g} ≤ ρ < {hi:g}"
        if m.any():
            out.append((lab, m, (lo, hi)))
    return out


def _band_where(dim, lo, hi, integer):
    return f"(({dim} >= {lo!r}) & ({dim} <= {hi!r}))" if integer else f"(({dim} >= {lo!r}) & ({dim} < {hi!r}))"


def key_results(cmp: xr.Dataset, stem, service=EXPONENTIAL) -> list:
    """The study's key result as tables (``<stem>.csv``/``.html``) with the report's caption (``<stem>.rst``): the
    clearly closest method by Wasserstein distance to the best reference per (R, ρ) band; when to trust which method
    per load band and percentile (the recommendation and how the simulation checks it); and each method's error
    against the best reference per percentile. Points without a reference ("reference too short") count in no
    statistic."""
    from ...core.present.tables import write_table

    c = cmp.sel(service=service)
    b = best_by_reference(cmp, service)
    _, joined = _groups(cmp)
    pb = _bands(c["rho"].values, RHO_BANDS)
    header = ["servers R"] + [lab for lab, _, _ in pb]
    rows = _key_band_rows(b, _bands(c["R"].values, R_BANDS), pb)
    rec = c["recommended"].transpose("R", "rho", "percentile").values.astype(str)
    ru = reference_usable(cmp).sel(service=service).transpose("R", "rho", "percentile").values
    trust = _key_trust_rows(c, rec, ru, pb)
    per = _key_method_rows(cmp, service)
    P = c["percentile"].values
    notes = [f"Table 1: per band of servers R and load ρ, the method most often clearly closest to the truth by "
             f"Wasserstein distance (to exact's CDF where exact ran, else to the simulated CDF; exact itself is the "
             f"reference and no candidate; {service} service), in how many of the band's cells with a reference; ties "
             "(another method within the CI, or within a tenth of the grid step of exact) and cells without a "
             "reference are counted apart and in no share. "
             + ("; ".join(f"{k} stands for {v}" for k, v in joined.items()) + " (identical CDFs)." if joined else ""),
             ("Table 2: the recommendation (exact where it ran; else T where the comparison found it never below "
             "exact; else the most accurate method that does not underestimate the percentile beyond its CI) and, as a "
             "check, the recommended method's median / largest |relative error| (%) against the simulated percentile "
             f"at the cells where the simulation is a usable reference ({RULE}); 'reference too short' where it is at "
             "none. Exact's own error is its computed truncation bound; T's is at most its stated margin."),
             ("Table 3: each method's median |relative percentile error| / its most negative error (%) against the "
             "best reference: exact's percentile where exact ran (no noise), else the simulated one where usable; the "
             "points of each kind in brackets; exact is set against the simulation. 'reference too short': no point "
             "with a reference.")]
    more = [("When to trust which method (all R)",
             ["load band", "percentile", "recommended (cells)", "check against the simulation: median / max |error| %",
              "no recommendation %"], trust),
            ("Each method against the best reference: median |error| / most negative error (%)",
             ["method"] + [f"{p:g}th" for p in P], per)]
    cap = _key_caption(cmp, service, b, rec, ru, trust, per)
    return write_table(stem, "Closest method per (R, ρ) band (Wasserstein distance to the best reference)", header,
                       rows, notes, more, caption=cap)


def _key_band_rows(b, rb, pb) -> list:
    """Table 1 of the key results: per (R band, ρ band) the method most often clearly closest, with its count, the
    ties and the cells without a reference."""
    best, tie, too_short = b["best"], b["tie"], b["too_short"]
    rows = []
    for rl, rm, _ in rb:
        row = [rl]
        for _, pm, _ in pb:
            sub, t, sh = best[np.ix_(rm, pm)], tie[np.ix_(rm, pm)], too_short[np.ix_(rm, pm)]
            clear = [m for m, x in zip(sub.ravel(), t.ravel(), strict=True) if m and not x]
            n = int((sub != "").sum())
            if clear:
                u, k = np.unique(clear, return_counts=True)
                top = str(u[np.argmax(k)])
                cell = f"{top} ({int(k.max())} of {n})"
            else:
                cell = "no clear winner" if n else "—"
            extra = []
            if t.any():
                extra.append(f"{int(t[sub != ''].sum())} tie{'s' if t[sub != ''].sum() != 1 else ''}")
            if sh.any():
                extra.append(f"{int(sh.sum())} reference too short")
            row.append(cell + (f"; {', '.join(extra)}" if extra else ""))
        rows.append(row)
    return rows


def _key_trust_rows(c, rec, ru, pb) -> list:
    """Table 2 of the key results: per load band and percentile, the recommendation and how the simulation checks
    it where it is a usable reference."""
    from ..compare import SIMULATE

    methods = c["approximation"].values.tolist()
    trust = []
    for pl, pm, _ in pb:
        for k, p in enumerate(c["percentile"].values):
            r = rec[:, pm, k]
            ok = ~np.isin(r, ["", SIMULATE, "nan"])
            labels = r[ok]
            if labels.size:
                u, n = np.unique(labels, return_counts=True)
                order = np.argsort(-n)
                use = "; ".join(f"{u[i]} ({n[i]} of {r.size})" for i in order)
            else:
                use = "—"
            # the recommended method against the simulation, where the simulation is a usable reference
            vals = []
            for i in range(r.shape[0]):
                for j_, j in enumerate(np.nonzero(pm)[0]):
                    m = r[i, j_]
                    if m in methods and ru[i, j, k]:
                        e = c["relative_percentile_error_mean"].sel(approximation=m, percentile=p).transpose(
                            "R", "rho").values[i, j]
                        if np.isfinite(e):
                            vals.append(abs(float(e)))
            check = (f"{100 * np.median(vals):.1f} / {100 * np.max(vals):.1f} ({len(vals)} of {r.size} cells)" if vals
                     else f"reference too short (0 of {r.size} cells)")
            trust.append([pl, f"{p:g}", use, check, f"{100 * (1 - ok.mean()):.0f}"])
    return trust


def _key_method_rows(cmp, service) -> list:
    """Table 3 of the key results: each method's median |error| and most negative error per percentile against
    the best reference, with how many points of each reference."""
    c = cmp.sel(service=service)
    a = against_reference(cmp, service)
    methods = c["approximation"].values.tolist()
    err = a["error"].transpose("R", "rho", "approximation", "percentile").values
    refk = a["reference"].transpose("R", "rho", "approximation", "percentile").values
    per = []
    P = c["percentile"].values
    for fam in ("faithful", "corrected"):
        for sr in series(cmp, fam):
            m = methods.index(sr.method)
            row = [sr.label]
            for k in range(len(P)):
                e = err[:, :, m, k]
                rk = refk[:, :, m, k]
                have = np.isfinite(e)
                if not have.any():
                    row.append("reference too short" if (a["status"].values[:, :, m, k] == "too_short").any()
                               else "—")
                    continue
                ne, ns = int((rk == REF_EXACT).sum()), int((rk == REF_SIMULATION).sum())
                src = ", ".join(x for x in ((f"{ne} vs exact" if ne else ""), (f"{ns} vs sim" if ns else "")) if x)
                row.append(f"{100 * np.median(np.abs(e[have])):.1f} / {100 * e[have].min():+.1f} ({src})")
            per.append(row)
    return per


def _key_caption(cmp, service, b, rec, ru, trust, per) -> Caption:
    from ..compare import SIMULATE

    c = cmp.sel(service=service)
    sel = {"service": service}
    findings, limits = [], []
    counts = {m: int((rec == m).sum()) for m in sorted(set(rec.ravel().tolist())) if m and m != SIMULATE}
    n = int(rec.size)
    if counts:
        order = sorted(counts, key=lambda m: -counts[m])
        findings.append(Claim(f"Use {listing([f'{m} at {counts[m]}' for m in order])} of the {n} (R, ρ, percentile) "
                              "points.", counts, Q.query("recommended", (("unique", None),),
                                                         "recommended != 'simulate'", sel)))
    sim_n = int((rec == SIMULATE).sum())
    if sim_n:
        limits.append(Claim(f"At {sim_n} points no method qualifies: simulate.", sim_n,
                            Q.query("recommended == 'simulate'", (("count", None),), None, sel)))
    P = c["percentile"].values
    dead = [float(p) for k, p in enumerate(P) if not ru[:, :, k].any()]
    findings_p = [float(p) for k, p in enumerate(P) if ru[:, :, k].any()]
    limits.append(Claim("The simulation is a usable reference at no cell for the "
                        + (listing([f"{p:g}th" for p in dead]) + " percentile" + ("s" if len(dead) > 1 else "")
                           if dead else "— (none)")
                        + f" ({RULE}): those rows show 'reference too short' and their errors count nowhere.",
                        dead, Q.query("percentile", (("list", None),),
                                      f"~({Q.REF_SIM}).any(['R', 'rho'])", sel))) if dead else None
    limits = [x for x in limits if x is not None]
    if findings_p:
        findings.append(Claim("The simulation can check the recommendation at the "
                              + listing([f"{p:g}th" for p in findings_p]) + " percentile"
                              + ("s" if len(findings_p) > 1 else "") + " (at some cells).", findings_p,
                              Q.query("percentile", (("list", None),), f"({Q.REF_SIM}).any(['R', 'rho'])", sel)))
    short = b["too_short"]
    if short.any():
        limits.append(Claim(f"{_cells_text(int(short.sum())).capitalize()} without exact and with a run too short to "
                            "trust have no closest method.", int(short.sum()),
                            Q.query("(sim_run_valid == 0) & (usable.sel(approximation='exact') == 0)"
                                    if Q.has_exact(cmp) else "(sim_run_valid == 0)", (("count", None),), None, sel)))
    return Caption(
        f"Key result of JSQ-PS ({service} service): which method is closest to the truth per band of servers R and "
        "load ρ; when to trust which method per load band and tail percentile, with how the simulation checks it; and "
        "each method's error against the best reference. CSV beside it: key_results.csv.", findings, limits,
        [("A simulated percentile counts only where at least 100 customers per replication lie beyond it and the run "
         "is long enough; elsewhere the tables say 'reference too short' and no number from there enters a median or "
         "maximum.")])


def page_caption(rep: xr.Dataset):
    """The caption of the reproduction page (:class:`sojourn.core.present.claims.Caption`): how much of the paper's
    §6 this run reproduces, from ``rep``."""
    from ...core.present.claims import Caption, Claim
    findings = list(_reproduction_map_caption(rep).findings[:1])
    limits = []
    ref = rep["percentile_error_reference"].sel(family="faithful").values
    inrun = ref != -1
    if inrun.any() and (ref == 0).any():
        k = int((ref == 0).sum())
        limits.append(Claim(f"Of our {int(inrun.sum())} §6.1/§6.2 points (best of A–F), {k} have no reference (exact "
                            "did not run and our simulation has too few customers beyond the percentile): 'reference "
                            "too short' in the tables.", [int(inrun.sum()), k],
                            [_rq("percentile_error_reference != -1", sel={"family": "faithful"}),
                             _rq("percentile_error_reference == 0", sel={"family": "faithful"})]))
    return Caption(
        "Reproduction of the paper's §6 tables (Palmer & Martín-Pérez, arXiv 2210.17227) from this run: §6.1/§6.2 the "
        "99.99th and 99.999th percentile errors of the best method per percentile beside the published values, §6.3 "
        "the relative errors of the best-by-Wasserstein method, §6.4 the best-of-A–F map, and the same for the "
        "corrected methods, exact and T.", findings, limits,
        [("Ours are measured against exact where it ran, else against our simulation where it is long enough (with "
         "95% CIs over replications). Cells of the paper's tables that this run's grid lacks are left empty. Data: "
         "reproduction.nc.")])
