"""Words from data: what a caption or a key table says about a run, as claims that carry how to re-derive them.

Every finding a figure's caption, a key table's note or a figure's title states ("C is closest in 9 of 35
cells", "the exact value lies inside the simulated CI in 15 of 15 cells") is a :class:`Claim`: its sentence,
the value the sentence states, and a :class:`Query` that re-derives that value from the file the job read.
The code that writes the caption computes the value its own way (from the arrays it draws); the query says
the same thing declaratively, and :func:`verify` evaluates it on the file. A test runs :func:`verify` on every
claim of a real run's captions (``tests/core/test_claims.py`` and the pipeline tests), so a caption that the
data contradict fails a test instead of reaching a reader.

A :class:`Caption` is what a figure's or a table's job writes next to its file (``<stem>.rst``, which the
Snakemake report shows under it): what the figure shows (no finding), *What this run shows* (claims), *What it
cannot show* (claims or plain sentences: too few cells, a reference too short), how to read it, and the claims
as JSON in an rST comment (invisible in the report, read back by :func:`read_claims`).

Queries. ``expr`` is an expression over the file's variables (names), numbers and strings with ``+ - * / **``,
comparisons, ``&  |  ~`` (and ``and``/``or``/``not``), ``abs(x)``, ``isfinite(x)``, ``where(cond, a, b)``, ``nan``
and the DataArray methods ``sel isel min max sum mean median any all count`` (values present) ``idxmin idxmax notnull
isnull`` with constant arguments; ``sel`` selects labels first (nearest for
floats), ``where`` (an expression) leaves out the values where it is false, and ``reduce`` is a list of steps
``[op, dims]`` (dims: a list, or None for all): ``min max median mean sum`` of the values, ``count`` (of true
values), ``size`` (of values present), ``any all``, ``argmin argmax`` (the location: {dim: label, …, "value":
v}), ``unique`` ({label: count}), ``list`` (the labels present, sorted). A result over remaining dimensions is a
dict {label: value} (one dimension left) — keep claims small.
"""
from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

#: the rST comment that carries a caption's claims (its JSON in indented lines of _CHUNK characters after it)
CLAIMS_MARK = ".. sojourn-claims"
_CHUNK = 2000


# ---------------------------------------------------------------------------------------------- claims
@dataclass
class Query:
    """How to re-derive a claim's value from ``source`` (a file relative to the study's results folder, e.g.
    ``comparison.nc``; see the module doc)."""

    source: str
    expr: str
    sel: dict = field(default_factory=dict)
    where: str | None = None
    reduce: list = field(default_factory=list)


@dataclass
class Claim:
    """A sentence that states ``value``, re-derivable by ``query``; ``tol``: the absolute tolerance of a numeric
    value (its rounding in the sentence). A sentence stating several values ("k of n cells"): ``value`` a list and
    ``query`` a list of as many queries."""

    text: str
    value: object
    query: Query | list
    tol: float = 0.0

    def to_json(self) -> dict:
        q = [asdict(x) for x in self.query] if isinstance(self.query, list) else asdict(self.query)
        return {"text": self.text, "value": _plain(self.value), "query": q, "tol": self.tol}

    @classmethod
    def from_json(cls, d: dict) -> Claim:
        q = [Query(**x) for x in d["query"]] if isinstance(d["query"], list) else Query(**d["query"])
        return cls(d["text"], d["value"], q, float(d.get("tol", 0.0)))


def _plain(v):
    """``v`` as JSON-able plain Python (numpy scalars, arrays, dicts of them; NaN kept as None)."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [_plain(x) for x in v]
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return None if not math.isfinite(float(v)) else float(v)
    if isinstance(v, np.str_):
        return str(v)
    return v


# ---------------------------------------------------------------------------------------------- evaluation
_METHODS = {"sel", "isel", "min", "max", "sum", "mean", "median", "any", "all", "count", "idxmin", "idxmax", "notnull",
            "isnull"}
_BINOPS = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__",
           ast.Pow: "__pow__", ast.BitAnd: "__and__", ast.BitOr: "__or__"}
_CMPS = {ast.Eq: "__eq__", ast.NotEq: "__ne__", ast.Lt: "__lt__", ast.LtE: "__le__", ast.Gt: "__gt__",
         ast.GtE: "__ge__"}


def _const(node):
    """A constant argument (number, string, list/tuple of them, or a negative number)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_const(e) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_const(node.operand)
    raise ValueError(f"not a constant: {ast.dump(node)}")


def evaluate_expr(expr: str, ds):
    """The value of ``expr`` (module doc) over the variables of the xarray Dataset ``ds``."""
    return _Evaluator(ds).ev(ast.parse(expr, mode="eval"))


#: a comparison with a constant on the left, turned round
_FLIPPED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


class _Evaluator:
    """The expression's syntax tree evaluated node by node over the Dataset's variables (one method a node kind)."""

    def __init__(self, ds):
        self.ds = ds

    def ev(self, node):
        if isinstance(node, ast.Expression):
            return self.ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        kind = {ast.Name: self.name, ast.BinOp: self.binop, ast.UnaryOp: self.unary, ast.BoolOp: self.boolop,
                ast.Compare: self.compare, ast.Call: self.call}.get(type(node))
        out = kind(node) if kind is not None else _UNSUPPORTED
        if out is _UNSUPPORTED:
            raise ValueError(f"unsupported expression element: {ast.dump(node)[:80]}")
        return out

    def name(self, node):
        if node.id == "nan":
            return np.nan
        if node.id not in self.ds.variables:
            raise KeyError(f"{node.id!r} is not a variable of the data")
        return self.ds[node.id]

    def binop(self, node):
        if type(node.op) not in _BINOPS:
            return _UNSUPPORTED
        a, b = self.ev(node.left), self.ev(node.right)
        op = _BINOPS[type(node.op)]
        return getattr(a, op)(b) if not isinstance(a, (int, float)) else getattr(b, "__r" + op[2:])(a)

    def unary(self, node):
        v = self.ev(node.operand)
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, (ast.Invert, ast.Not)):
            return ~v
        raise ValueError("unsupported unary operator")

    def boolop(self, node):
        vals = [self.ev(v) for v in node.values]
        out = vals[0]
        for v in vals[1:]:
            out = (out & v) if isinstance(node.op, ast.And) else (out | v)
        return out

    def compare(self, node):
        left, out = self.ev(node.left), None
        for op, right in zip(node.ops, node.comparators, strict=True):
            r = self.ev(right)
            if type(op) not in _CMPS:
                raise ValueError("unsupported comparison")
            if isinstance(left, (int, float, str)):
                c = getattr(r, _CMPS[_FLIPPED.get(type(op), type(op))])(left)
            else:
                c = getattr(left, _CMPS[type(op)])(r)
            out = c if out is None else (out & c)
            left = r
        return out

    def call(self, node):
        args, func = node.args, node.func
        if isinstance(func, ast.Name) and func.id in ("abs", "isfinite") and len(args) == 1:
            v = self.ev(args[0])
            return abs(v) if func.id == "abs" else np.isfinite(v)
        if isinstance(func, ast.Name) and func.id == "where" and len(args) == 3:
            import xarray as xr

            return xr.where(*(self.ev(a) for a in args))
        if isinstance(func, ast.Attribute) and func.attr in _METHODS:
            obj = self.ev(func.value)
            pos = [_const(a) for a in args]
            kw = {k.arg: _const(k.value) for k in node.keywords}
            if func.attr == "sel":  # positional labels name the leading dimensions (fewer are allowed)
                return _select(obj, {**dict(zip(obj.dims, pos, strict=False)), **kw})
            return getattr(obj, func.attr)(*pos, **kw)
        return _UNSUPPORTED


_UNSUPPORTED = object()  # a node of a kind (or form) the expressions do not have


def _select(obj, sel: dict):
    """Label selection; float coordinates matched to the nearest label (a JSON round trip keeps them exact, the
    nearest match guards the rest)."""
    if not sel:
        return obj
    exact, near = {}, {}
    for k, v in sel.items():
        if k not in obj.dims:  # a selection of a dimension this value does not have (a constant along it)
            continue
        values = v if isinstance(v, list) else [v]
        kind = obj[k].dtype.kind if k in obj.coords else "O"
        (near if kind == "f" and all(isinstance(x, (int, float)) for x in values) else exact)[k] = v
    out = obj.sel(exact) if exact else obj
    return out.sel(near, method="nearest") if near else out


def _label(x):
    x = x.item() if hasattr(x, "item") else x
    return round(x, 10) if isinstance(x, float) else x


def _reduce(da, op: str, dims):
    """One reduction step of a query (module doc); ``dims`` None: all dimensions."""
    import xarray as xr

    dims = list(da.dims) if dims is None else [d for d in dims if d in da.dims]
    if op in ("min", "max", "median", "mean", "sum"):
        return getattr(da, op)(dim=dims, skipna=True) if da.size else xr.DataArray(np.nan)
    if op == "count":
        return ((da.fillna(0) != 0) if da.dtype.kind != "b" else da).astype(int).sum(dim=dims)
    if op == "size":
        if da.dtype.kind in "USO":
            return (da != "").astype(int).sum(dim=dims)
        return da.notnull().astype(int).sum(dim=dims) if da.dtype.kind in "fc" else xr.full_like(da, 1, dtype=int).sum(
            dim=dims)
    if op in ("any", "all"):
        return getattr(da.fillna(0).astype(bool), op)(dim=dims)
    raise ValueError(f"unknown reduction {op!r}")


def _locate(da, op: str) -> dict | None:
    """{dim: label, …, "value": v} of the smallest (argmin) or largest (argmax) value present; None if none."""
    v = np.asarray(da.values, dtype=float)
    if not np.isfinite(v).any():
        return None
    flat = int(np.nanargmin(v) if op == "argmin" else np.nanargmax(v))
    idx = np.unravel_index(flat, v.shape)
    out = {d: _label(da[d].values[i]) for d, i in zip(da.dims, idx, strict=True) if d in da.coords}
    out["value"] = float(v[idx])
    return out


def evaluate(query: Query, ds):
    """The value ``query`` derives from the Dataset ``ds`` (module doc)."""
    da = _select(evaluate_expr(query.expr, ds), query.sel)
    if query.where:
        mask = _select(evaluate_expr(query.where, ds), query.sel)
        mask = mask.fillna(0).astype(bool) if mask.dtype.kind != "b" else mask
        da = da.where(mask, "") if da.dtype.kind in "USO" else da.where(mask)  # left out: NaN / ""
    for step in query.reduce:
        op, dims = (step[0], step[1] if len(step) > 1 else None)
        if op in ("argmin", "argmax"):
            return _locate(da, op)
        if op == "unique":
            vals = [str(x) for x in np.ravel(da.values) if str(x) not in ("", "nan", "None")]
            u, n = np.unique(vals, return_counts=True) if vals else ([], [])
            return {str(a): int(b) for a, b in zip(u, n, strict=True)}
        if op == "list":
            vals = {_label(x) for x in np.ravel(da.values) if str(x) not in ("", "nan", "None")}
            return sorted(vals, key=lambda x: (isinstance(x, str), x))
        da = _reduce(da, op, dims)
    return _value_of(da)


def _value_of(da):
    if da.ndim == 0:
        v = da.values.item() if hasattr(da.values, "item") else da.values
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, float):
            return v if math.isfinite(v) else None
        return v
    if da.ndim == 1:
        d = da.dims[0]
        return {str(_label(k)): _value_of(da.isel({d: i})) for i, k in enumerate(da[d].values)}
    raise ValueError(f"a claim's value must have at most one dimension left; got {da.dims}")


def agrees(stated, derived, tol: float = 0.0) -> bool:
    """Whether a stated value equals the derived one (numbers within ``tol``, recursively in dicts and lists)."""
    stated, derived = _plain(stated), _plain(derived)
    if isinstance(stated, dict) and isinstance(derived, dict):
        return set(stated) == set(derived) and all(agrees(stated[k], derived[k], tol) for k in stated)
    if isinstance(stated, list) and isinstance(derived, list):
        return len(stated) == len(derived) and all(agrees(a, b, tol) for a, b in zip(stated, derived, strict=True))
    if isinstance(stated, bool) or isinstance(derived, bool):
        return isinstance(stated, bool) and isinstance(derived, bool) and stated == derived
    if isinstance(stated, (int, float)) and isinstance(derived, (int, float)):
        return abs(float(stated) - float(derived)) <= tol * (1 + 1e-9) + 1e-12
    return stated == derived


def verify(claim: Claim, open_source) -> tuple[bool, object]:
    """(agrees, derived value) of ``claim`` against its source; ``open_source(name)`` returns the Dataset."""
    if isinstance(claim.query, list):
        derived = [evaluate(q, open_source(q.source)) for q in claim.query]
    else:
        derived = evaluate(claim.query, open_source(claim.query.source))
    return agrees(claim.value, derived, claim.tol), derived


# ---------------------------------------------------------------------------------------------- captions
def rst_escape(text: str) -> str:
    """``text`` as literal rST (no emphasis, substitution, reference or role from its characters)."""
    return re.sub(r"([\\*|`_])", r"\\\1", str(text))


@dataclass
class Caption:
    """A figure's or a table's caption (module doc): ``what`` it shows, the ``findings`` of this run (claims),
    its ``limits`` (what it cannot show: claims or sentences) and ``how`` to read it (sentences, no findings)."""

    what: str
    findings: list = field(default_factory=list)
    limits: list = field(default_factory=list)
    how: list = field(default_factory=list)

    def claims(self) -> list[Claim]:
        return [c for c in (*self.findings, *self.limits) if isinstance(c, Claim)]

    def sentences(self, part) -> str:
        return " ".join(c.text if isinstance(c, Claim) else str(c) for c in part)

    def rst(self) -> str:
        parts = []
        if self.findings:
            parts.append("**What this run shows.** " + rst_escape(self.sentences(self.findings)))
        if self.limits:
            parts.append("**What it cannot show.** " + rst_escape(self.sentences(self.limits)))
        parts.append(rst_escape(" ".join([self.what, *self.how]).strip()))
        body = "\n\n".join(parts)
        data = json.dumps([c.to_json() for c in self.claims()], ensure_ascii=False, sort_keys=True)
        # an rST comment block, its JSON cut into indented lines (docutils refuses lines over 10 000 characters);
        # raw: Snakemake renders a caption with Jinja first, and nothing in it is a template
        chunks = "\n".join("   " + data[i:i + _CHUNK] for i in range(0, len(data), _CHUNK))
        return "{% raw %}\n" + body + "\n\n" + CLAIMS_MARK + "\n" + chunks + "\n{% endraw %}\n"

    def text(self) -> str:
        """The caption as plain text (the findings first)."""
        out = []
        if self.findings:
            out.append("What this run shows: " + self.sentences(self.findings))
        if self.limits:
            out.append("What it cannot show: " + self.sentences(self.limits))
        out.append(" ".join([self.what, *self.how]).strip())
        return "\n".join(out)

    def write(self, path) -> Path:
        from ..files.integrity import write_atomic

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, self.rst().encode("utf-8"))
        return path


def _claims_block(path) -> tuple[list[str], list[str]]:
    """(visible lines, claims JSON lines) of a caption file."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    if CLAIMS_MARK not in lines:
        raise ValueError(f"{path}: no '{CLAIMS_MARK}' block: not a caption written by sojourn.core.present.claims")
    k = lines.index(CLAIMS_MARK)
    block = []
    for line in lines[k + 1:]:
        if not line.startswith("   "):
            break
        block.append(line[3:])
    return [ln for ln in lines[:k] if not ln.startswith("{%")], block


def read_claims(path) -> list[Claim]:
    """The claims a caption file (``<stem>.rst``, :meth:`Caption.write`) carries."""
    return [Claim.from_json(d) for d in json.loads("".join(_claims_block(path)[1]))]


def caption_sentences(path) -> str:
    """The visible text of a caption file (what a reader sees, markup left in)."""
    return "\n".join(_claims_block(path)[0]).strip()


# ---------------------------------------------------------------------------------------------- words
def share(k: int, n: int) -> str:
    """'k of n' (the count a claim states, never a rounded percentage)."""
    return f"{k} of {n}"


def listing(items, last="and") -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = [str(x) for x in items]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {last} " + items[-1]


def percent(x: float, digits: int = 0, signed: bool = True) -> str:
    """A relative value ``x`` (a fraction) as '+12 %' (``digits`` decimals)."""
    return f"{100 * x:{'+' if signed else ''}.{digits}f} %"


def half_unit(digits: int, scale: float = 1.0) -> float:
    """The tolerance of a value printed with ``digits`` decimals after multiplying by ``scale``."""
    return 0.5 * 10.0 ** (-digits) / scale


def sig_tol(x: float, sig: int = 3) -> float:
    """The tolerance of ``x`` printed with ``sig`` significant digits (``:.{sig}g``)."""
    if x is None or not math.isfinite(x) or x == 0:
        return 0.0
    return 0.5 * 10.0 ** (math.floor(math.log10(abs(x))) - sig + 1)
