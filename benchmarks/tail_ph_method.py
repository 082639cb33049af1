"""Method T with a service law (``sojourn.jsq_ps.solve.tail_ph``) against the long simulations of
``benchmarks/tail_ph_reference.csv``: accuracy, CPU per cell, and the exponential model's error beside it (not a test).

    python benchmarks/tail_ph_method.py                 # every reference cell: the record benchmarks/tail_ph_method.csv
    python benchmarks/tail_ph_method.py --summary       # the tables from the record (no compute)
    python benchmarks/tail_ph_method.py --three-moment lognormal --cells 3:0.5 10:0.5   # a three-moment fit instead
    python benchmarks/tail_ph_method.py --model-error   # tail_ph.MODEL_ERROR from the record
    python benchmarks/tail_ph_method.py --write-docs    # docs/jsq_ps.md's summary from the record (a test checks it)
    python benchmarks/tail_ph_method.py --laws triangular --cells 10:0.7 --replace   # again, after a new reference

Per reference cell (law, R, rho): the method on the paper's grid (dt = 0.01, t up to 182.32; CPU seconds of the
whole call, ``cpu_seconds``, with the process's load average), and, where a percentile lies beyond that grid, on a
grid to 1.5 times the reference's 99.999th percentile; its reported percentile (the conservative CDF, what the
pipeline and the planner use), its estimate (``sf_best``) and its stated margin; the reference's pooled value, its
95 % half-width (Student-t across replications) and the run-length guard's verdict; and T of the exponential model
(the M/M/R method, the same mean) for the seed's question. ``error`` = method / reference − 1 (reported),
``optimistic`` = the error is below −(the reference's relative half-width). ``class`` = the law's variability class
of ``tail_ph.MODEL_ERROR``. ``widths_at`` (``paper_grid_widths_at``: on the paper's grid) = where the stage widths
were solved: "D" (every width at the spread cap D), or the cheaper extrapolation on the D − 1 chain of a cell whose
least choice was predicted over the CPU budget (``tail_ph`` module doc, "Cost").
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
REF = HERE / "tail_ph_reference.csv"
OUT = HERE / "tail_ph_method.csv"
PAPER_T_MAX, DT = 182.32, 0.01
FIELDS = ["law", "class", "R", "rho", "percentile", "method", "estimate", "margin", "reference", "sim_half_width",
          "run_valid", "min_beyond", "error", "optimistic", "within_5pct", "expo_T", "expo_error", "t_max",
          "cpu_seconds", "paper_grid_cpu_seconds", "load_average", "D", "h", "cstar", "representation", "widths_at",
          "paper_grid_widths_at", "variant"]


def reference():
    out = {}
    with open(REF) as fh:
        for r in csv.DictReader(fh):
            out.setdefault((r["law"], int(r["R"]), float(r["rho"])), {})[float(r["percentile"])] = r
    return out


def evaluate(law_key, law_text, R, rho, refs, variant="method"):
    from sojourn.core.checks.timegrid import time_grid
    from sojourn.core.estimates.stats import quantile
    from sojourn.core.laws.distributions import parse_law
    from sojourn.jsq_ps.solve.tail import margin_at, tail_sojourn
    from sojourn.jsq_ps.solve.tail_ph import tail_ph_sojourn, variability_class

    law = parse_law(law_text, mean=1.0)
    klass = variability_class(law)
    if variant == "three-moment":
        m = [float(law._frozen().moment(k)) for k in (1, 2, 3)]
        law = parse_law(f"moments:m1={m[0]!r},m2={m[1]!r},m3={m[2]!r}")
    pcts = sorted(refs)
    lam = rho * R
    t_paper = time_grid(PAPER_T_MAX, DT)
    c0 = time.process_time()
    res = tail_ph_sojourn(lam, law, R, t_paper)
    cpu_paper = time.process_time() - c0
    widths_paper = res.info["widths_at"]
    load = os.getloadavg()[0]
    top = max(float(refs[p]["value"]) for p in pcts)
    t, cpu = t_paper, cpu_paper
    if not top < 0.95 * PAPER_T_MAX:
        t_max = math.ceil(1.5 * top / 10.0) * 10.0
        t = time_grid(t_max, DT)
        c0 = time.process_time()
        res = tail_ph_sojourn(lam, law, R, t)
        cpu = time.process_time() - c0
    p = np.array(pcts) / 100.0
    x = quantile(t, res.cdf, p)
    xb = quantile(t, 1.0 - res.sf_best, p)
    t_e = t
    for _ in range(4):  # the exponential model's percentiles lie further out: its grid grows until they are on it
        xe = quantile(t_e, tail_sojourn(lam, 1.0, R, t_e).cdf, p)
        if np.all(np.isfinite(xe)):
            break
        t_e = time_grid(2.0 * float(t_e[-1]), DT)
    rows = []
    for q, xm, xest, xexp in zip(pcts, x, xb, xe, strict=True):
        r = refs[q]
        ref = float(r["value"])
        half = (float(r["ci_high"]) - float(r["ci_low"])) / 2.0 / ref if r["ci_high"] not in ("", "nan") else math.nan
        err = xm / ref - 1.0
        rows.append({"law": law_key, "class": klass, "R": R, "rho": rho, "percentile": q, "method": xm,
                     "estimate": xest, "margin": margin_at(t, res, q / 100.0), "reference": ref,
                     "sim_half_width": half, "run_valid": r["run_valid"], "min_beyond": r["min_beyond"],
                     "error": err, "optimistic": int(err < -half) if math.isfinite(half) else "",
                     "within_5pct": int(abs(err) <= 0.05), "expo_T": float(xexp), "expo_error": xexp / ref - 1.0,
                     "t_max": float(t[-1]), "cpu_seconds": round(cpu, 3), "paper_grid_cpu_seconds": round(cpu_paper, 3),
                     "load_average": round(load, 2), "D": res.D, "h": res.info["h"], "cstar": res.info["cstar"],
                     "representation": res.info["representation"], "widths_at": res.info["widths_at"],
                     "paper_grid_widths_at": widths_paper, "variant": variant})
    return rows


def _rows(path):
    with open(path) as fh:
        return list(csv.DictReader(fh))


def summary(path=OUT, variant="method"):
    rows = [r for r in _rows(path) if r["variant"] == variant]
    print(f"{len(rows)} cell-percentiles ({variant}), record {path.name}")
    for q in ("99.9", "99.99"):
        print(f"\n{q}th percentile: method / reference - 1 (reported CDF); exponential model's T beside it")
        print(f"{'law':18} {'cells':>5} {'median|err|':>11} {'min':>7} {'max':>7} {'in 5%':>6} {'optimistic':>10} "
              f"{'expo min':>8} {'expo max':>8}")
        laws = sorted({r["law"] for r in rows}, key=lambda s: list(LAW_ORDER).index(s) if s in LAW_ORDER else 99)
        for law in laws:
            sel = [r for r in rows if r["law"] == law and r["percentile"] == q and r["error"] not in ("", "nan")]
            e = np.array([float(r["error"]) for r in sel])
            ee = np.array([float(r["expo_error"]) for r in sel])
            if not e.size:
                continue
            opt = sum(r["optimistic"] == "1" for r in sel)
            print(
                f"{law:18} {e.size:5d} {100 * np.median(np.abs(e)):10.1f}% {100 * e.min():+6.1f}% "
                f"{100 * e.max():+6.1f}% {int(np.sum(np.abs(e) <= 0.05)):3d}/{e.size:<2d} {opt:10d} "
                f"{100 * ee.min():+7.1f}% {100 * ee.max():+7.1f}%"
            )
    cpu = np.array([float(r["paper_grid_cpu_seconds"]) for r in rows if r["percentile"] == "99.9"])
    loads = np.array([float(r["load_average"]) for r in rows if r["percentile"] == "99.9"])
    if cpu.size:
        print(f"\nCPU per cell on the paper grid (t <= 182.32, dt = 0.01): median {np.median(cpu):.2f} s, max "
              f"{cpu.max():.2f} s over {cpu.size} cells (load average {loads.min():.1f}-{loads.max():.1f})")
    for r in rows:
        if r["percentile"] == "99.9" and float(r["t_max"]) > PAPER_T_MAX + 1e-9:
            print(f"  longer grid: {r['law']} R = {r['R']} rho = {r['rho']} t <= {float(r['t_max']):g}: "
                  f"{float(r['cpu_seconds']):.2f} s CPU (load average {r['load_average']})")


LAW_ORDER = ("uniform", "deterministic", "lognormal", "gamma", "triangular", "lognormal_s1", "hyperexponential")
#: the laws as the docs name them
LAW_NAMES = {"uniform": "uniform(0, 2)", "deterministic": "deterministic", "lognormal": "lognormal σ = ln 2",
             "gamma": "gamma shape 2", "triangular": "triangular(0, 1, 2)", "lognormal_s1": "lognormal σ = 1",
             "hyperexponential": "H2 (scv 1.5)"}
#: where docs/jsq_ps.md holds the generated summary (between these two lines)
DOC = HERE.parent / "docs" / "jsq_ps.md"
DOC_BEGIN = "<!-- tail_ph_method summary: generated by `python benchmarks/tail_ph_method.py --write-docs` -->"
DOC_END = "<!-- tail_ph_method summary: end -->"


def usable(r) -> bool:
    """A reference percentile the project's rules accept: the run-length guard passed and >= 100 customers lay
    beyond the percentile in every replication."""
    return r["run_valid"] == "1" and int(r["min_beyond"]) >= 100 and r["error"] not in ("", "nan")


def _pc(x: float) -> str:
    return f"{100 * x:+.1f} %".replace("-", "−")


def markdown(path=OUT, variant="method") -> str:
    """The validation summary docs/jsq_ps.md shows (between :data:`DOC_BEGIN` and :data:`DOC_END`): per law and R,
    the method's error range at the 99.9th and 99.99th percentiles over the loads, the references' largest 95 %
    half-width, the cells where the method is optimistic beyond that half-width, the exponential model's error at
    the 99.99th; then the worst case per law, the references left out and the CPU per cell."""
    rows = [r for r in _rows(path) if r["variant"] == variant]
    laws = sorted({r["law"] for r in rows}, key=lambda s: LAW_ORDER.index(s) if s in LAW_ORDER else 99)
    ok = [r for r in rows if r["percentile"] in ("99.9", "99.99") and usable(r)]
    out = [("| law | R | loads ρ | 99.9th: T-law error | 99.99th: T-law error | largest CI half-width | optimistic "
            "beyond the CI | 99.99th: exponential model's error |"), "|---|---|---|---|---|---|---|---|"]
    for law in laws:
        for R in sorted({int(r["R"]) for r in ok if r["law"] == law}):
            sel = [r for r in ok if r["law"] == law and int(r["R"]) == R]
            e3 = [float(r["error"]) for r in sel if r["percentile"] == "99.9"]
            e4 = [float(r["error"]) for r in sel if r["percentile"] == "99.99"]
            x4 = [float(r["expo_error"]) for r in sel if r["percentile"] == "99.99"]
            rhos = sorted({float(r["rho"]) for r in sel})
            half = max(float(r["sim_half_width"]) for r in sel)
            opt = sum(r["optimistic"] == "1" for r in sel)
            rng = (lambda v: f"{_pc(min(v))} … {_pc(max(v))}" if v else "—")
            out.append(f"| {LAW_NAMES.get(law, law)} | {R} | {', '.join(f'{x:g}' for x in rhos)} | {rng(e3)} | "
                       f"{rng(e4)} | {100 * half:.1f} % | {opt} of {len(sel)} | {rng(x4)} |")
    out += ["", ("| law | worst 99.9th (R, ρ) | worst 99.99th (R, ρ) | within ±5 % | exponential model at the 99.99th: "
                 "optimistic (below the CI) in | its worst (R, ρ) |"), "|---|---|---|---|---|---|"]
    for law in laws:
        sel = [r for r in ok if r["law"] == law]
        if not sel:
            continue

        def worst(q, key="error", sel=sel):
            v = [r for r in sel if r["percentile"] == q]
            w = max(v, key=lambda r: abs(float(r[key])))
            return f"{_pc(float(w[key]))} ({w['R']}, {float(w['rho']):g})"

        inside = sum(r["within_5pct"] == "1" for r in sel)
        s4 = [r for r in sel if r["percentile"] == "99.99"]
        xopt = sum(float(r["expo_error"]) < -float(r["sim_half_width"]) for r in s4)
        out.append(f"| {LAW_NAMES.get(law, law)} | {worst('99.9')} | {worst('99.99')} | {inside} of {len(sel)} | "
                   f"{xopt} of {len(s4)} cells | {worst('99.99', 'expo_error')} |")
    out += ["", ("The seed's question — is the exponential model's 99.99th percentile conservative or optimistic for "
                 "these laws? — from these cells (exponential model = T for M/M/R, the same mean; conservative = "
                 "above the simulation's CI, optimistic = below it):"), ""]
    for law in laws:
        s4 = [r for r in ok if r["law"] == law and r["percentile"] == "99.99"]
        if not s4:
            continue
        x = [(float(r["expo_error"]), float(r["sim_half_width"]), int(r["R"]), float(r["rho"])) for r in s4]
        cons = [c for c in x if c[0] > c[1]]
        opt = [c for c in x if c[0] < -c[1]]
        e = [float(r["error"]) for r in s4]
        part = []
        if cons:
            part.append(f"conservative in {len(cons)} of {len(x)} cells, by {_pc(min(c[0] for c in cons))} to "
                        f"{_pc(max(c[0] for c in cons))}")
        if opt:
            part.append(
                f"optimistic in {len(opt)} of {len(x)} cells, by {_pc(max(c[0] for c in opt))} to "
                f"{_pc(min(c[0] for c in opt))} (at ρ ∈ {{{', '.join(f'{v:g}' for v in sorted({c[3] for c in opt}))}}})"
            )
        if len(cons) + len(opt) < len(x):
            part.append(f"inside the CI in {len(x) - len(cons) - len(opt)}")
        out.append(f"* {LAW_NAMES.get(law, law)}: the exponential model is {'; '.join(part)}. T-law: "
                   f"{_pc(min(e))} to {_pc(max(e))}, optimistic beyond the CI in "
                   f"{sum(r['optimistic'] == '1' for r in s4)} of {len(s4)}.")
    three = [r for r in _rows(path) if r["variant"] == "three-moment" and r["percentile"] in ("99.9", "99.99")
             and usable(r)]
    if three:
        out += ["", ("The same cells through the law's three-moment fit (a mixture of two Erlangs of a common order, "
                     "`moments:` — `--three-moment`) instead of the stage family:"), ""]
        for law in sorted({r["law"] for r in three}, key=lambda s: LAW_ORDER.index(s) if s in LAW_ORDER else 99):
            sel = [r for r in three if r["law"] == law]
            e3 = [float(r["error"]) for r in sel if r["percentile"] == "99.9"]
            e4 = [float(r["error"]) for r in sel if r["percentile"] == "99.99"]
            out.append(f"* {LAW_NAMES.get(law, law)} ({len(e4)} cells): 99.9th {_pc(min(e3))} to {_pc(max(e3))}, "
                       f"99.99th {_pc(min(e4))} to {_pc(max(e4))}; within ±5 % in "
                       f"{sum(r['within_5pct'] == '1' for r in sel)} of {len(sel)}, optimistic beyond the CI in "
                       f"{sum(r['optimistic'] == '1' for r in sel)}.")
    left = [r for r in rows if r["percentile"] in ("99.9", "99.99") and not usable(r)]
    cpu = np.array([float(r["paper_grid_cpu_seconds"]) for r in rows if r["percentile"] == "99.9"])
    load = np.array([float(r["load_average"]) for r in rows if r["percentile"] == "99.9"])
    cells = len({(r["law"], r["R"], r["rho"]) for r in ok})
    longer = [r for r in rows if r["percentile"] == "99.9" and float(r["t_max"]) > PAPER_T_MAX + 1e-9]
    long_text = ""
    if longer:
        w = max(longer, key=lambda r: float(r["cpu_seconds"]))
        long_text = (f" On the longer grids of the {len(longer)} cells whose percentiles lie beyond it (t up to "
                     f"{max(float(r['t_max']) for r in longer):g}): max {float(w['cpu_seconds']):.2f} s "
                     f"({LAW_NAMES.get(w['law'], w['law'])}, R = {w['R']}, ρ = {float(w['rho']):g}, t ≤ "
                     f"{float(w['t_max']):g}).")
    out += ["", (f"{len(ok)} cell-percentiles from {cells} reference cells; {len(left)} left out (run-length guard "
                 "failed or < 100 customers beyond the percentile in a replication). CPU per cell on the paper's grid "
                 f"(t ≤ 182.32, dt = 0.01): median {np.median(cpu):.2f} s, max {cpu.max():.2f} s over {cpu.size} "
                 f"cells (load average {load.min():.1f}–{load.max():.1f} on 2 cores).{long_text}")]
    return "\n".join(out) + "\n"


def doc_block(doc=DOC) -> str:
    """The text between :data:`DOC_BEGIN` and :data:`DOC_END` in docs/jsq_ps.md."""
    text = Path(doc).read_text()
    return text.split(DOC_BEGIN + "\n", 1)[1].split(DOC_END, 1)[0]


def write_docs(path=OUT, doc=DOC) -> None:
    text = Path(doc).read_text()
    head, rest = text.split(DOC_BEGIN + "\n", 1)
    tail = rest.split(DOC_END, 1)[1]
    Path(doc).write_text(head + DOC_BEGIN + "\n" + markdown(path) + DOC_END + tail)


def model_error(path=OUT):
    """tail_ph.MODEL_ERROR from the record: per class, (min(error − half-width), max(error + half-width)) over the
    99.9th and 99.99th percentiles, rounded outwards to the per cent."""
    rows = [r for r in _rows(path) if r["variant"] == "method" and r["percentile"] in ("99.9", "99.99")
            and r["error"] not in ("", "nan")]
    out = {}
    for r in rows:
        e, h = float(r["error"]), float(r["sim_half_width"]) if r["sim_half_width"] not in ("", "nan") else 0.0
        lo, hi = out.get(r["class"], (math.inf, -math.inf))
        out[r["class"]] = (min(lo, e - h), max(hi, e + h))
    return {k: (math.floor(100 * lo) / 100, math.ceil(100 * hi) / 100) for k, (lo, hi) in out.items()}


def main(argv=None):
    sys.path.insert(0, str(HERE))
    from tail_ph_reference import LAWS, rewrite

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--laws", nargs="*", default=list(LAWS))
    ap.add_argument("--cells", nargs="*", help="R:rho (default: every reference cell)")
    ap.add_argument("--three-moment", nargs="*", default=None, metavar="LAW",
                    help="evaluate these laws through their three-moment fit instead (variant three-moment)")
    ap.add_argument("--summary", action="store_true")
    ap.add_argument("--model-error", action="store_true")
    ap.add_argument("--markdown", action="store_true", help="print docs/jsq_ps.md's summary from the record")
    ap.add_argument("--write-docs", action="store_true", help="rewrite docs/jsq_ps.md's summary from the record")
    ap.add_argument("--replace", action="store_true",
                    help="re-evaluate the given cells and replace their rows (after a reference changed)")
    ap.add_argument("--output", type=Path, default=OUT)
    a = ap.parse_args(argv)
    if a.summary:
        summary(a.output)
        if a.output.exists() and any(r["variant"] == "three-moment" for r in _rows(a.output)):
            summary(a.output, "three-moment")
        return 0
    if a.model_error:
        print(model_error(a.output))
        return 0
    if a.markdown:
        print(markdown(a.output), end="")
        return 0
    if a.write_docs:
        write_docs(a.output)
        return 0
    refs = reference()
    done = set()
    if a.output.exists():
        done = {(r["law"], int(r["R"]), float(r["rho"]), r["variant"]) for r in _rows(a.output)}
    variant = "three-moment" if a.three_moment is not None else "method"
    laws = a.three_moment if a.three_moment else a.laws
    cells = [(int(c.split(":")[0]), float(c.split(":")[1])) for c in a.cells] if a.cells else None
    if a.replace and a.output.exists():  # the cells to re-evaluate leave the record (rewritten atomically)
        def again(r):
            return (r["law"] in laws and r["variant"] == variant
                    and (cells is None or (int(r["R"]), float(r["rho"])) in cells))
        kept = [r for r in _rows(a.output) if not again(r)]
        rewrite(a.output, kept, FIELDS)
        done = {(r["law"], int(r["R"]), float(r["rho"]), r["variant"]) for r in kept}
    new = not a.output.exists()
    with open(a.output, "a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        if new:
            w.writeheader()
        for (law, R, rho), refrows in sorted(refs.items(), key=lambda kv: (list(LAWS).index(kv[0][0]), kv[0][1],
                                                                           kv[0][2])):
            if law not in laws or (cells and (R, rho) not in cells) or (law, R, rho, variant) in done:
                continue
            rows = evaluate(law, LAWS[law], R, rho, refrows, variant)
            for r in rows:
                w.writerow(r)
            fh.flush()
            print(law, R, rho, " ".join(f"{r['percentile']:g}: {100 * r['error']:+.1f}%" for r in rows),
                  f"cpu {rows[0]['paper_grid_cpu_seconds']:.2f} s (load {rows[0]['load_average']})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
