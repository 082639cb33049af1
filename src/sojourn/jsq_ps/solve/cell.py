"""One approximation cell of the pipeline: every configured method at one (R, ρ), as one Dask task (the methods
share building blocks)."""
from __future__ import annotations

import json

import numpy as np
import xarray as xr

from ..model import JSQPS
from ..naming import FAITHFUL_METHODS, SHARED_CORRECTED
from .api import approximate_all


def approximate_cell(R, rho, mu, methods, t, hyper, share_corrected=False, exact_budget=None) -> xr.Dataset:
    """Faithful methods with the config's L1 (Table 4) and L2; corrected methods, ``exact`` and ``T`` choose their
    own truncations (passing L1 to them would undo the correction; T and exact accept none), so they run as a
    second group.
    ``share_corrected``: B*, D*, E* are copies of A* and F* of C* (their run_time is the source's).
    ``exact_budget``: ``exact`` runs where it fits, else NaN with ``validity_reason`` over_budget."""
    faithful, computed, alias = cell_parts(R, rho, mu, methods, t, hyper, share_corrected, exact_budget)
    parts = [] if faithful is None else [faithful]
    if computed is not None:
        if alias:
            others = [m for m in methods if m not in FAITHFUL_METHODS]
            computed = _relabel(computed, [alias.get(m, m) for m in others], others)
            computed.attrs["shared_corrected"] = json.dumps(alias, sort_keys=True)
        parts.append(computed)
    return _stack(parts, list(methods))


def cell_parts(R, rho, mu, methods, t, hyper, share_corrected=False, exact_budget=None):
    """The computing half of :func:`approximate_cell`: (the faithful methods' dataset or None, the other methods'
    dataset — each shared corrected method once, under its source's name — or None, {copy: source})."""
    spec = JSQPS.from_rho(int(R), float(rho), mu=float(mu))
    faithful = [m for m in methods if m in FAITHFUL_METHODS]
    others = [m for m in methods if m not in faithful]
    alias = {m: SHARED_CORRECTED[m] for m in others if share_corrected and m in SHARED_CORRECTED}
    computed = list(dict.fromkeys(alias.get(m, m) for m in others))
    first = approximate_all(spec, faithful, t=t, **hyper) if faithful else None
    if not computed:
        return first, None, alias
    extra = {"exact_budget": exact_budget} if "exact" in computed and exact_budget is not None else {}
    return first, approximate_all(spec, computed, t=t, **extra), alias


def _relabel(ds: xr.Dataset, src, names) -> xr.Dataset:
    """``ds.sel(approximation=src)`` labelled ``names`` (B*, D*, E* as copies of A*, F* of C*), in numpy: the same
    dataset as xarray's ``sel`` and ``assign_coords`` (tests/jsq_ps/test_solve_cell.py), without their overhead."""
    pos = {m: i for i, m in enumerate(ds.variables["approximation"].values.tolist())}
    out = _take([ds], [(0, pos[m]) for m in src], names)
    out["approximation"].attrs = {}  # as assign_coords left them: new labels, no attributes
    return out


def _stack(parts, methods) -> xr.Dataset:
    """The approximation datasets ``parts`` on one ``approximation`` axis in the order ``methods``: what
    ``xr.concat(parts, "approximation", data_vars="all", coords="different", compat="equals", join="outer",
    combine_attrs="drop_conflicts").sel(approximation=methods)`` gives (the ``n`` axis the union of the parts',
    NaN beyond a part's own; the attributes merged, conflicting ones dropped), assembled in numpy (issue 36: xarray's
    concat and sel took 0.05 CPU-s of a 0.33 s cell, the same dataset, tests/jsq_ps/test_solve_cell.py)."""
    where = {}
    for i, ds in enumerate(parts):
        for j, m in enumerate(ds.variables["approximation"].values.tolist()):
            where.setdefault(m, (i, j))
    return _take(parts, [where[m] for m in methods], methods)


def _take(parts, picks, names) -> xr.Dataset:
    """The rows ``picks`` [(part, position), …] of the datasets ``parts`` (same variables, same ``t``) labelled
    ``names``: variables on ``n`` padded with NaN to the longest part's ``n``, attributes (of the dataset, its
    variables and coordinates) as xarray's ``drop_conflicts`` merges them."""
    from xarray.structure.merge import merge_attrs  # xarray's own rule (pyproject: xarray >= 2025.8)

    def merged(attrs):
        return merge_attrs(attrs, "drop_conflicts") if len(attrs) > 1 else dict(attrs[0])

    first = parts[0]
    n = max(ds.sizes.get("n", 0) for ds in parts)
    data = {}
    for v in first.data_vars:
        var = [ds.variables[v] for ds in parts]  # Variables: no DataArray built per row
        values = [x.values for x in var]
        rows = []
        for i, j in picks:
            a = values[i][j]
            if "n" in var[0].dims and a.shape[-1] < n:
                a = np.concatenate([a, np.full(n - a.shape[-1], np.nan)])
            rows.append(a)
        data[v] = (var[0].dims, np.stack(rows), merged([x.attrs for x in var]))
    coords = {"approximation": ("approximation", np.array(list(names), dtype=str),
                                merged([ds.variables["approximation"].attrs for ds in parts])),
              "t": ("t", first.variables["t"].values, merged([ds.variables["t"].attrs for ds in parts]))}
    if "n" in first.coords:
        coords["n"] = ("n", np.arange(n, dtype=first.variables["n"].dtype),
                       merged([ds.variables["n"].attrs for ds in parts]))
    return xr.Dataset(data, coords=coords, attrs=merged([ds.attrs for ds in parts]))


#: the percentile levels (percent) whose stated margins a law-method cell stores as a variable
MARGIN_PERCENTILES = (99.0, 99.9, 99.99, 99.999)


def approximate_law_cell(law: str, R, rho, mu, methods, t, hyper=None) -> xr.Dataset:
    """The methods that take a general service law (``T``: :mod:`sojourn.jsq_ps.solve.tail_ph`) at one M/G/R cell
    (law string ``law``, rescaled to mean 1/μ): the single-method datasets of :func:`~.api.approximate` on an
    ``approximation`` axis, their stated margins as ``margin`` (approximation, percentile) and the choices the
    method made (``D``, ``h``, ``cstar``, ``predicted_seconds``) as variables."""
    from .api import approximate

    spec = JSQPS.from_rho(int(R), float(rho), mu=float(mu), service=law)
    parts = []
    for m in methods:
        ds = approximate(spec, m, t=t, **(hyper or {}))
        a = ds.attrs
        extra = {
            "margin": (
                ("percentile",),
                np.array([float(a.get(f"margin_{p:g}", np.nan)) for p in MARGIN_PERCENTILES]),
                {
                    "long_name": "the method's stated margin at the percentile (relative; numerical steps only)",
                    "units": "1",
                },
            ),
            "extrapolation": (
                ("percentile",),
                np.array([float(a.get(f"extrapolation_{p:g}", np.nan)) for p in MARGIN_PERCENTILES]),
                {
                    "long_name": "how far the percentile moves between the two- and three-width "
                    "extrapolations of the law's stage family (relative; 0 for a phase-type "
                    "law)",
                    "units": "1",
                },
            ),
            "D": ((), int(a.get("D", -1)), {"long_name": "spread cap of the tagged chain", "units": "1"}),
            "h": (
                (),
                float(a.get("h", np.nan)),
                {
                    "long_name": "finest stage width of the law's representation "
                    "(a fraction of the mean; 0: exact phase-type)",
                    "units": "1",
                },
            ),
            "cstar": (
                (),
                int(a.get("cstar", -1)),
                {"long_name": "co-residents whose phases are tracked", "units": "1"},
            ),
            "predicted_seconds": (
                (),
                float(a.get("predicted_seconds", np.nan)),
                {"long_name": "the method's predicted CPU seconds (its budget's choice)", "units": "s"},
            ),
        }
        ds = ds.drop_vars([v for v in ("lambda_n", "A_n") if v in ds]).drop_dims("n", errors="ignore")
        ds = ds.assign(**{k: v for k, v in extra.items()}).assign_coords(percentile=np.array(MARGIN_PERCENTILES))
        ds.attrs = {"model": spec.describe(), "spec": spec.to_json(), "representation": a.get("representation", "")}
        parts.append(ds.expand_dims(approximation=[m]))
    out = parts[0] if len(parts) == 1 else xr.concat(parts, dim="approximation", combine_attrs="override")
    return out
