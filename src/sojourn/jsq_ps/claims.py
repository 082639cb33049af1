"""The JSQ-PS captions' and key tables' claims: how each finding is re-derived from ``comparison.nc``.

The figures and tables compute what they state with numpy from the arrays they draw
(:func:`sojourn.jsq_ps.compare.against_reference`, the maps' choices); the queries here state the same rules as
expressions over the file's variables (:mod:`sojourn.core.present.claims`), so that a test evaluating them independently
catches a caption the data contradict. The rules, once in words:

* a simulated percentile is a usable reference where every replication has ≥ 100 customers beyond it and the run
  was not judged too short (``few_tail_customers == 0 & sim_run_valid != 0``, :mod:`sojourn.core.estimates.reference`);
* a method is set against exact where exact ran and is usable (exponential service), else against the simulation
  where its reference is usable; exact itself against the simulation;
* a difference counts (is "significant") against exact when the percentiles differ by more than one grid step,
  against the simulation when the CI of the mean error excludes 0.
"""
from __future__ import annotations

from ..core.present.claims import Claim, Query

SOURCE = "comparison.nc"
#: ``agreement`` values of the reproduction's best-of-A–F map (sojourn.jsq_ps.reproduction)
TOO_SHORT, ABSENT, DISAGREE, TIE, SAME = -2, -1, 0, 1, 2
EXPONENTIAL_SEL = {"service": "exponential"}
REF_SIM = "((few_tail_customers == 0) & (sim_run_valid != 0))"
RUN_OK = "(sim_run_valid != 0)"


def names(methods) -> str:
    """A list literal of method names for an expression."""
    return "[" + ", ".join(repr(str(m)) for m in methods) + "]"


def has_exact(cmp) -> bool:
    return "exact" in cmp["approximation"].values.tolist()


def exact_ok(cmp) -> str:
    """Where exact is the reference of the other methods (exponential service, exact usable)."""
    if not has_exact(cmp):
        return "(approximation != approximation)"  # nowhere
    return ("((service == 'exponential') & (usable.sel(approximation='exact') != 0) & (approximation != 'exact') "
            "& isfinite(percentile_error_vs_exact))")


def exact_ok_w(cmp) -> str:
    if not has_exact(cmp):
        return "(approximation != approximation)"
    return ("((service == 'exponential') & (usable.sel(approximation='exact') != 0) & (approximation != 'exact') "
            "& isfinite(wasserstein_vs_exact))")


def rel_ref(cmp) -> str:
    """Each method's relative percentile error against its reference (NaN: none)."""
    vs_exact = ("percentile_error_vs_exact / approx_percentile.sel(approximation='exact')" if has_exact(cmp)
                else "relative_percentile_error_mean")
    return (f"where({exact_ok(cmp)}, {vs_exact}, where({REF_SIM} & (usable != 0), relative_percentile_error_mean, "
            "nan))")


def ref_kind(cmp) -> str:
    """1 against exact, 2 against the simulation, 0 none."""
    return (
        f"where({exact_ok(cmp)}, 1, where({REF_SIM} & (usable != 0) & isfinite(relative_percentile_error_mean), 2, 0))"
    )


def significant(cmp, dt: float) -> str:
    """Whether each method's error against its reference counts (module doc)."""
    return (f"where({exact_ok(cmp)}, abs(percentile_error_vs_exact) > {dt * (1 + 1e-6)!r}, where({REF_SIM} & "
            "(usable != 0), (relative_percentile_error_ci_low > 0) | (relative_percentile_error_ci_high < 0), False))")


def beyond_grid(cmp) -> str:
    """Where a method's percentile, or exact's where exact is the reference, lies beyond the time grid."""
    ex = (" | ((service == 'exponential') & (usable.sel(approximation='exact') != 0) & "
          "~isfinite(approx_percentile.sel(approximation='exact')))") if has_exact(cmp) else ""
    return f"(~isfinite(approx_percentile){ex})"


def w_ref(cmp) -> str:
    """Each method's Wasserstein distance to its reference: exact where it ran, else the simulation (its run usable)."""
    return f"where({exact_ok_w(cmp)}, wasserstein_vs_exact, where({RUN_OK}, wasserstein_mean, nan))"


def w_ref_kind(cmp) -> str:
    return f"where({exact_ok_w(cmp)}, 1, where({RUN_OK} & isfinite(wasserstein_mean), 2, 0))"


def query(expr: str, reduce=(("count", None),), where: str | None = None, sel: dict | None = None,
          source: str = SOURCE) -> Query:
    """A query of ``comparison.nc`` on the exponential service law (unless ``sel`` says otherwise)."""
    return Query(source, expr, dict(EXPONENTIAL_SEL if sel is None else sel), where, [list(s) for s in reduce])


def claim(text: str, value, expr: str, reduce=(("count", None),), where=None, sel=None, tol=0.0,
          source: str = SOURCE) -> Claim:
    return Claim(text, value, query(expr, reduce, where, sel, source), tol)


def k_of_n(text: str, k: int, n: int, expr: str, where: str, sel=None, source: str = SOURCE) -> Claim:
    """'… k of n …': k = the count of ``expr`` where ``where`` holds, n = how many places ``where`` holds."""
    return Claim(text, [int(k), int(n)], [query(expr, (("count", None),), where, sel, source),
                                          query(where, (("count", None),), None, sel, source)])
