"""JSQ-PS captions and key tables are written from the data they describe (sojourn.jsq_ps.plots), the way they can
fail: the same code on two runs with different winners says different things, every claim it writes is re-derived
from the comparison file by its query, and a simulated reference too short to estimate a percentile counts in no
statistic and is named as such.

The runs are synthetic (tests.support.synthetic): Exp(1) sojourn times as the simulation, exponential CDFs as the
methods, at R = 2 and two loads; exact ran at the first load only.
"""
from __future__ import annotations

import numpy as np
import pytest

from sojourn.core.files.io import read_netcdf, write_netcdf
from sojourn.core.present.claims import read_claims, verify
from sojourn.jsq_ps import plots
from sojourn.jsq_ps.compare import against_reference, compare
from support.synthetic import jsq_run

FIGURES = ["wasserstein_vs_rho", "best_method_map", "recommended_map", "percentile_error_vs_rho",
           "percentile_error_vs_rho_corrected", "runtime_vs_R"]
#: T closest to exact (A* 3 % off, T 0.3 %), and the other way round
T_WINS = {0.5: {"A": 1.3, "A*": 0.97, "exact": 1.0, "T": 1.003}, 0.6: {"A": 1.3, "A*": 0.97, "exact": None, "T": 1.003}}
ASTAR_WINS = {0.5: {"A": 1.3, "A*": 0.999, "exact": 1.0, "T": 1.02},
              0.6: {"A": 1.3, "A*": 0.999, "exact": None, "T": 1.02}}


def _comparison(tmp_path, scales, name, n=60_000):
    sim, approx = jsq_run(scales, n=n)
    cmp = compare(sim, approx, {"percentiles": [99.0, 99.9], "n_resamples": 200})
    folder = tmp_path / name
    folder.mkdir()
    write_netcdf(cmp, folder / "comparison.nc")
    return read_netcdf(folder / "comparison.nc"), folder


def _captions(cmp, folder):
    """Every figure's and the key table's caption for ``cmp``, written into ``folder``: {name: Caption file}."""
    out = {}
    for f in FIGURES:
        paths = getattr(plots, f)(cmp, folder / f, formats=("png",), dpi=60)
        out[f] = [p for p in paths if p.suffix == ".rst"][0]
    out["key_results"] = [p for p in plots.key_results(cmp, folder / "key_results") if p.suffix == ".rst"][0]
    return out


def _verify_all(captions, folder):
    data = read_netcdf(folder / "comparison.nc")
    n = 0
    for name, path in captions.items():
        for claim in read_claims(path):
            ok, derived = verify(claim, lambda source: data)
            assert ok, f"{name}: {claim.text!r} states {claim.value!r}, the data say {derived!r}"
            n += 1
    return n


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("captions")
    out = {}
    for name, scales in (("T", T_WINS), ("A*", ASTAR_WINS)):
        cmp, folder = _comparison(tmp, scales, name.replace("*", "star"))
        out[name] = (cmp, folder, _captions(cmp, folder))
    return out


def _findings(path) -> str:
    return [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.startswith("**What this run shows")][0]


def test_different_winners_give_different_words(runs):
    t_map, a_map = (_findings(runs[k][2]["best_method_map"]) for k in ("T", "A*"))
    assert t_map != a_map
    # the closest to exact at the first load (where exact is the reference): the caption names it
    assert "Clear winners: T in" in t_map and "Clear winners: A\\* in" in a_map
    for k in ("T", "A*"):
        b = plots.best_by_reference(runs[k][0])
        assert b["best"][0, 0] == k and not b["tie"][0, 0]


def test_every_claim_is_rederived_from_its_data(runs):
    for _cmp, folder, captions in runs.values():
        assert _verify_all(captions, folder) >= 10


def test_a_caption_contradicted_by_the_data_fails(runs):
    """The check can fail: a claim read from one run's caption does not hold on the other run's file."""
    (_, _, cap_t), (_, folder_a, _) = runs["T"], runs["A*"]
    other = read_netcdf(folder_a / "comparison.nc")
    claims = read_claims(cap_t["best_method_map"])
    assert not all(verify(c, lambda source: other)[0] for c in claims)


def test_a_reference_too_short_counts_nowhere(tmp_path):
    """With 60 000 customers per replication, 60 lie beyond the 99.9th percentile: no reference there. Where exact did
    not run (the second load), the 99.9th has no number in the key tables, the percentile figure marks it, and
    every claim still holds."""
    cmp, folder = _comparison(tmp_path, T_WINS, "short")
    assert (cmp["few_tail_customers"].sel(percentile=99.9) != 0).all()
    a = against_reference(cmp)
    assert (a["status"].sel(rho=0.6, percentile=99.9, approximation=["A", "A*", "T"]) == "too_short").all()
    assert np.isnan(a["error"].sel(rho=0.6, percentile=99.9)).all()
    assert (a["reference"].sel(rho=0.5, approximation=["A", "A*", "T"]) == 1).all()  # against exact at rho = 0.5
    captions = _captions(cmp, folder)
    _verify_all(captions, folder)
    page = (folder / "key_results.html").read_text(encoding="utf-8")
    trust = page.split("When to trust")[1].split("</table>")[0]
    row999 = [r for r in trust.split("<tr>") if "<td>99.9</td>" in r]
    assert row999 and all("reference too short" in r for r in row999)
    assert "No reference at" in captions["percentile_error_vs_rho_corrected"].read_text(encoding="utf-8")
    per_method = page.split("Each method against the best reference")[1].split("</table>")[0]
    t_row = [r for r in per_method.split("<tr>") if "T (bound" in r][0]
    assert "vs exact" in t_row  # T's numbers: against exact where it ran, none from the short reference


def test_no_recommendation_points_beyond_the_time_grid(tmp_path):
    """Exact (mean 4) on a grid to t = 25: its 99th percentile (18.4) lies on the grid, its 99.9th (27.6) beyond it,
    and so does T's. The recommended map must not name exact there: the caption says how many such points and what
    is used instead (here "simulate": the simulation has too few customers beyond the 99.9th), each claim holds, and
    the too-short sentence does not count those points a second time."""
    far = {0.5: {"A": 1.3, "exact": 4.0, "T": 4.01}, 0.6: {"A": 1.3, "exact": None, "T": 4.01}}
    cmp, folder = _comparison(tmp_path, far, "far")
    rec = cmp["recommended"].sel(service="exponential", R=2)
    assert rec.sel(rho=0.5, percentile=99.0).item() == "exact"
    assert rec.sel(rho=0.5, percentile=99.9).item() != "exact"
    path = next(p for p in plots.recommended_map(cmp, folder / "recommended_map", formats=("png",), dpi=60)
                if p.suffix == ".rst")
    text = path.read_text(encoding="utf-8")
    assert "At 1 point exact ran but its percentile lies beyond its time grid" in text
    # in the legend's words (round 6: the caption counted "simulate" as a method the legend says is none)
    assert "no method at 1 (simulate longer, or rerun exact with a larger t_max) instead" in text
    assert "simulate at" not in text
    _verify_all({"recommended_map": path}, folder)
    # the same code on the comfortable run says nothing of the kind
    cmp2, folder2 = _comparison(tmp_path, T_WINS, "near")
    path2 = next(p for p in plots.recommended_map(cmp2, folder2 / "recommended_map", formats=("png",), dpi=60)
                 if p.suffix == ".rst")
    assert "beyond its time grid" not in path2.read_text(encoding="utf-8")
