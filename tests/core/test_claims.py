"""Words from data (sojourn.core.present.claims): claims that carry the query re-deriving them, the caption files that
carry
the claims, and what a Snakemake report makes of them (Jinja, then docutils)."""
from __future__ import annotations

import docutils.core
import docutils.nodes
import numpy as np
import pytest
import xarray as xr

from sojourn.core.present.claims import (
    Caption,
    Claim,
    Query,
    agrees,
    caption_sentences,
    evaluate,
    evaluate_expr,
    read_claims,
    rst_escape,
    verify,
)


@pytest.fixture
def ds():
    """Three methods over (R, rho): W, a usable flag, a best label."""
    W = np.array([[[0.5, 0.2, 0.9], [0.4, 0.6, 0.1]], [[0.3, 0.35, np.nan], [1.0, 0.7, 0.8]]])
    return xr.Dataset({"W": (("R", "rho", "approximation"), W),
                       "ok": (("R", "rho"), np.array([[1, 1], [0, 1]], np.int8)),
                       "best": (("R", "rho"), np.array([["B", "C"], ["A", "B"]]))},
                      coords={"R": [1, 2], "rho": [0.5, 0.8], "approximation": ["A", "B", "C"]})


def test_expressions(ds):
    assert evaluate_expr("W.sel(approximation='A') * 2", ds).values.tolist() == [[1.0, 0.8], [0.6, 2.0]]
    best = evaluate_expr("W.idxmin('approximation')", ds)
    assert best.values.tolist() == [["B", "C"], ["A", "B"]]
    m = evaluate_expr("where(ok != 0, W.min('approximation'), nan)", ds)
    assert np.isnan(m.values[1, 0]) and m.values[0, 1] == pytest.approx(0.1)
    assert bool(evaluate_expr("(approximation != 'C') & isfinite(W)", ds).sel(R=2, rho=0.5, approximation="B"))
    assert float(evaluate_expr("abs(-W).max()", ds)) == 1.0


@pytest.mark.parametrize("expr", ["W.__class__", "open('x')", "W.to_netcdf('x')", "__import__('os')", "[W][0]",
                                  "lambda: 1", "W.sel(approximation=W)"])
def test_expressions_allow_nothing_else(ds, expr):
    with pytest.raises((ValueError, KeyError)):
        evaluate_expr(expr, ds)


def test_reductions(ds):
    q = lambda expr, reduce, where=None, sel=None: evaluate(Query("x.nc", expr, sel or {}, where, reduce), ds)  # noqa: E731
    assert q("W < 0.5", [["count"]]) == 5
    assert q("W", [["size"]]) == 11  # one value missing
    assert q("W", [["median"]]) == pytest.approx(0.5)
    assert q("W", [["argmin"]]) == {"R": 1, "rho": 0.8, "approximation": "C", "value": 0.1}
    assert q("best", [["unique"]]) == {"A": 1, "B": 2, "C": 1}
    assert q("best", [["unique"]], where="ok != 0") == {"B": 2, "C": 1}
    assert q("rho", [["list"]], where="ok == 0") == [0.5]
    assert q("W", [["min", ["rho", "approximation"]]]) == {"1": 0.1, "2": 0.3}  # one dimension left: a dict
    assert q("W.sel(approximation='A')", [["max"]], sel={"R": 1}) == 0.5
    with pytest.raises(ValueError, match="at most one dimension"):
        q("W", [])


def test_verify_and_tolerance(ds):
    claim = Claim("The median W is 0.5.", 0.5, Query("x.nc", "W", {}, None, [["median"]]), tol=0.005)
    assert verify(claim, lambda name: ds) == (True, pytest.approx(0.5))
    wrong = Claim("The median W is 0.6.", 0.6, claim.query, tol=0.005)
    assert verify(wrong, lambda name: ds)[0] is False
    two = Claim("k of n", [5, 11], [Query("x.nc", "W < 0.5", {}, None, [["count"]]),
                                     Query("x.nc", "W", {}, None, [["size"]])])
    assert verify(two, lambda name: ds)[0]
    assert agrees({"a": 1.0, "b": "x"}, {"a": 1.004, "b": "x"}, 0.005) and not agrees({"a": 1}, {"b": 1})
    assert not agrees([1, 2], [1, 2, 3]) and agrees(True, True) and not agrees(True, 1)


def _render(rst: str) -> tuple[str, list]:
    """A caption as Snakemake's report renders it: Jinja (trim_blocks, lstrip_blocks), then docutils to HTML."""
    from jinja2 import Environment

    text = Environment(trim_blocks=True, lstrip_blocks=True).from_string(rst).render(snakemake=None)
    doc = docutils.core.publish_doctree(text, settings_overrides={"report_level": 5, "halt_level": 5})
    problems = [m for m in doc.findall(docutils.nodes.system_message) if m["level"] >= 2]
    html = docutils.core.publish_parts(text, writer="html")["body"]
    return html, problems


def test_caption_file_round_trip_and_report_rendering(tmp_path, ds):
    long_query = Query("x.nc", " | ".join(["(W > 0.1)"] * 1500), {}, None, [["count"]])  # a line docutils would refuse
    claims = [Claim("B is best at 2 of 4 cells (|x| *and* {{ braces }} _under_).", {"A": 1, "B": 2, "C": 1},
                    Query("x.nc", "best", {}, None, [["unique"]]), 0.0),
              Claim("A long one.", 11, long_query)]
    cap = Caption("What the figure shows: W = dt·Σ|F − G|.", findings=claims[:1], limits=[claims[1], "Plain words."],
                  how=["How to read it."])
    path = cap.write(tmp_path / "fig.rst")
    back = read_claims(path)
    assert [c.to_json() for c in back] == [c.to_json() for c in claims]
    assert all(verify(c, lambda name: ds)[0] for c in back[:1])
    html, problems = _render(path.read_text(encoding="utf-8"))
    assert problems == []
    assert "B is best at 2 of 4 cells (|x| *and* {{ braces }} _under_)." in html  # literal, not markup
    assert "What this run shows." in html and "What it cannot show." in html and "Plain words." in html
    assert "{%" not in html and "sojourn-claims" not in html.split("<!--")[0]  # the claims: a comment only
    visible = caption_sentences(path)
    assert "How to read it." in visible and "sojourn-claims" not in visible
    assert rst_escape("a_b|c*d`e\\f") == "a\\_b\\|c\\*d\\`e\\\\f"


def test_the_same_caption_code_on_different_data_says_different_things(ds):
    """A caption built from data (here, the commonest best label) changes when the data do, and each version
    verifies against its own data only."""
    def caption(d):
        counts = {str(k): int(v) for k, v in zip(*np.unique(d["best"].values, return_counts=True), strict=True)}
        top = max(counts, key=counts.get)
        return Claim(f"{top} is best most often.", counts, Query("x.nc", "best", {}, None, [["unique"]]))

    other = ds.copy(deep=True)
    other["best"] = (("R", "rho"), np.array([["C", "C"], ["A", "C"]]))
    a, b = caption(ds), caption(other)
    assert a.text != b.text
    assert verify(a, lambda n: ds)[0] and verify(b, lambda n: other)[0]
    assert not verify(a, lambda n: other)[0] and not verify(b, lambda n: ds)[0]
