"""Merge many small netCDF files into one hypercube, streaming: memory is one input file, not the cube.

The pipeline's block files each hold a few (service, R, ρ) cells; the merged ``simulation.nc`` of
the paper config is a (service 6 × R 10 × ρ 99 × replication 10 × t 18 233) cube whose M/G/R laws
cover only 28 of the 990 (R, ρ) points. ``xarray.combine_by_coords`` builds that cube in memory
(~9 GB as int64) and, lazily through dask, took minutes for a fraction of the files; here the output
file is laid out first (the union of every dimension's coordinates) and each input is written into
its hyperslab, then the hyperslabs no input covered are written with the fill values.

Semantics are those of ``combine_by_coords(join="outer")`` on the same inputs: every dimension's
coordinate is the sorted union (or an order given by the caller), gaps hold ``fill`` (a per-variable
value; NaN for floats when not given). Each input must cover a rectangular set of points of the
``stack`` dimensions (true for block files: one service, one R, several ρ).
"""
from __future__ import annotations

import contextlib
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .integrity import no_space, release, seal

#: write at most this many elements per netCDF call when filling gaps (bounded memory)
FILL_CHUNK = 8_000_000


def _runs(positions: np.ndarray) -> list[tuple[int, int, int]]:
    """Consecutive runs of ``positions`` as (offset in positions, start, stop) triples."""
    out = []
    a = 0
    for i in range(1, len(positions) + 1):
        if i == len(positions) or positions[i] != positions[i - 1] + 1:
            out.append((a, int(positions[a]), int(positions[i - 1]) + 1))
            a = i
    return out


def _union(values: list[np.ndarray], order=None) -> np.ndarray:
    allv = np.concatenate([np.asarray(v) for v in values])
    if order is not None:
        missing = set(allv.tolist()) - set(order)
        if missing:
            raise ValueError(f"coordinate values {sorted(missing)} not in the given order {list(order)}")
        return np.asarray(list(order), dtype=allv.dtype if allv.dtype.kind != "U" else object)
    if allv.dtype.kind in "OU":
        return np.asarray(sorted(set(allv.tolist())), dtype=object)
    return np.unique(allv)


def _fill_for(name, dtype, fill):
    if fill and name in fill:
        return fill[name]
    if np.dtype(dtype).kind == "f":
        return np.nan
    raise ValueError(f"variable {name!r} ({dtype}) has gaps in the merged cube but no fill value")


def _nc_kwargs(enc: dict) -> dict:
    """xarray-style encoding → netCDF4 ``createVariable`` keywords."""
    keys = ("zlib", "complevel", "shuffle", "chunksizes", "contiguous", "significant_digits", "quantize_mode")
    out = {k: enc[k] for k in keys if k in enc}
    if out.get("contiguous"):
        out = {"contiguous": True}
    return out


def _read(path, lock, data=True) -> dict:
    """A file's coordinates, variables (dims, on-disk dtype, attrs) and, with ``data``, raw values.

    netCDF4 directly, without CF decoding: the pipeline's files use none beyond a NaN ``_FillValue``
    on floats (raw values are then already NaN) — and xarray's open costs ~45 ms per file."""
    import netCDF4

    out = {"coords": {}, "vars": {}}
    with _held(lock):
        with netCDF4.Dataset(path, "r") as nc:
            nc.set_auto_maskandscale(False)
            for d in nc.dimensions:
                if d not in nc.variables:
                    raise ValueError(f"{path}: dimension {d!r} has no coordinate")
                v = nc.variables[d]
                out["coords"][d] = (np.asarray(v[:]), v.dtype, _attrs(v))
            for name, v in nc.variables.items():
                if name in nc.dimensions:
                    continue
                out["vars"][name] = {"dims": v.dimensions, "disk": np.dtype(v.dtype), "attrs": _attrs(v),
                                     "values": np.asarray(v[:]) if data else None}
    return out


def _attrs(v) -> dict:
    return {k: v.getncattr(k) for k in v.ncattrs() if not k.startswith("_")}


def _conform(values, dims, coords, union, stack, fill_value):
    """Place ``values`` on the union coordinates of every non-stack dimension (gaps = ``fill_value``)."""
    for ax, d in enumerate(dims):
        if d in stack:
            continue
        have = coords[d]
        if len(have) == len(union[d]) and np.array_equal(have, union[d]):
            continue
        pos = {v: i for i, v in enumerate(union[d].tolist())}
        idx = np.array([pos[v] for v in have.tolist()], dtype=np.int64)
        shape = list(values.shape)
        shape[ax] = len(union[d])
        dtype = values.dtype
        if isinstance(fill_value, float) and np.isnan(fill_value) and dtype.kind != "f":
            dtype = np.float64
        out = np.full(shape, fill_value, dtype=dtype)
        key = [slice(None)] * values.ndim
        key[ax] = idx
        out[tuple(key)] = values
        values = out
    return values


def _with_copies(f: dict, copies: dict) -> dict:
    """The file read by :func:`_read` with, along each dimension d of ``copies`` ({d: {target: source}}), the
    entries of every target it lacks copied from its source (when it has the source): values stored once in the
    inputs, written under both names in the output."""
    for d, pairs in (copies or {}).items():
        if d not in f["coords"]:
            continue
        have, dtype, a = f["coords"][d]
        names = have.tolist()
        add = [(t, names.index(src)) for t, src in pairs.items() if t not in names and src in names]
        if not add:
            continue
        f["coords"][d] = (np.concatenate([have, np.array([t for t, _ in add], dtype=have.dtype)]), dtype, a)
        for v in f["vars"].values():
            if d in v["dims"] and v["values"] is not None:
                ax = v["dims"].index(d)
                v["values"] = np.concatenate([v["values"], np.take(v["values"], [i for _, i in add], axis=ax)], axis=ax)
    return f


def _as_expected(path, meta: dict, want: dict | None, root: Path) -> None:
    """:class:`Inconsistent` (``path`` set aside) unless the input's coordinates are ``want`` ({dim: values})."""
    from .integrity import Inconsistent, linked_entries, set_aside

    for d, values in (want or {}).items():
        got = meta["coords"].get(d, (np.array([]),))[0]
        values = np.asarray(values, dtype=got.dtype if got.dtype.kind in "iuf" else object)
        if len(got) != len(values) or not np.array_equal(np.sort(got), np.sort(values)):
            what = f"holds {d} = {_listed(got)} where its job wrote {_listed(values)}"
            raise Inconsistent(path, what, set_aside(path, f"it {what}", linked_entries(root)))


def _listed(values) -> str:
    items = [f"{v:g}" if isinstance(v, float) else str(v) for v in np.asarray(values).tolist()]
    return ", ".join(items[:6]) + (f" … ({len(items)} values)" if len(items) > 6 else "") if items else "nothing"


def merge_files(paths, output, *, stack=("service", "R", "rho"), fill: dict | None = None, order: dict | None = None,
                encoding=None, attrs: dict | None = None, coord_attrs: dict | None = None, lock=None,
                copies: dict | None = None, expect: dict | None = None) -> Path:
    """Merge ``paths`` into ``output`` (written to a temporary name, then renamed: atomic).

    stack: dimensions along which inputs are placed side by side (each input holds a rectangle);
    fill: per-variable gap values (floats default to NaN; an integer variable without a fill value
    that has gaps is stored as float with NaN, as an outer join would); order: explicit coordinate
    order per dim; encoding(name, dims, shape, dtype, disk_dtype) -> xarray-style encoding dict;
    attrs: global attributes of the output; coord_attrs: {dim: attributes} set on those coordinates
    (over the inputs' own); lock: held around every netCDF access (HDF5 is not thread-safe); copies: {dim:
    {target: source}}: an input that holds ``source`` but not ``target`` along ``dim`` gets the source's values
    under the target's name too (results an input stores once, e.g. identical methods); expect: {input path:
    {dim: values}} the coordinates its job wrote into it — an input that holds others is damaged although it reads
    (it had lost its checksum, and was sealed anew): it is set aside with its cache entries
    (:func:`sojourn.core.files.integrity.set_aside`: the next run rebuilds it) and
    :class:`sojourn.core.files.integrity.Inconsistent` names it, before anything is written.
    """
    import netCDF4

    paths = [str(p) for p in paths]
    if not paths:
        raise ValueError("merge_files: no input files")
    fill = dict(fill or {})
    cube = _layout(paths, stack, fill, dict(order or {}), lock, copies, expect, Path(output).parent)
    written = np.zeros(tuple(cube.sizes[d] for d in cube.stack), dtype=bool)

    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp = output.with_name(f".{output.name}.tmp")
    with _held(lock):
        nc = netCDF4.Dataset(tmp, "w", format="NETCDF4")
    try:
        with _held(lock):
            _create(nc, cube, encoding, attrs, coord_attrs)
        for p in paths:  # pass 2: place every input
            _place(p, cube, written, fill, lock, copies)
        # gaps: the points of the stack dims no input covered
        with _held(lock):
            _fill_gaps(cube.vars_meta, cube.stack, cube.sizes, written, fill)
            nc.close()
        seal(tmp, output)  # sidecar checksum, umask permissions, then the rename
    except BaseException as exc:
        full = _discard(exc, nc, tmp, output, paths, lock)
        if full is not None:
            raise full from None
        raise
    return output


def _held(lock):
    """``lock``, or a context that holds nothing when there is none."""
    return lock or contextlib.nullcontext()


@dataclass
class _Cube:
    """The merged file's layout, from every input's coordinates and variables (pass 1)."""

    union: dict[str, np.ndarray]  # {dim: the output's coordinate values}
    index: dict[str, dict]  # {dim: {value: its position in union[dim]}}
    stack: tuple[str, ...]  # the stack dimensions the inputs have, in the caller's order
    sizes: dict[str, int]  # {dim: len(union[dim])}
    coord_meta: dict[str, tuple]  # {dim: (dtype, attributes)} of the first input that has it
    vars_meta: dict[str, dict] = field(default_factory=dict)  # {name: {"dims", "disk", "attrs"}}: see _variables


def _layout(paths, stack, fill, order, lock, copies, expect, root: Path) -> _Cube:
    """Pass 1 (coordinates and variables, no data): the merged cube's layout; an input whose coordinates are not
    what its job wrote is set aside first (:func:`_as_expected`)."""
    metas = [_with_copies(_read(p, lock, data=False), copies) for p in paths]
    for p, meta in zip(paths, metas, strict=True):
        _as_expected(p, meta, (expect or {}).get(p), root)
    coords: dict[str, list] = {}
    coord_meta: dict[str, tuple] = {}
    for meta in metas:
        for d, (values, dtype, a) in meta["coords"].items():
            coords.setdefault(d, []).append(values)
            coord_meta.setdefault(d, (dtype, a))
    union = {d: _union(v, order.get(d)) for d, v in coords.items()}
    index = {d: {v: i for i, v in enumerate(u.tolist())} for d, u in union.items()}
    stack = tuple(d for d in stack if d in union)
    sizes = {d: len(u) for d, u in union.items()}
    cube = _Cube(union, index, stack, sizes, coord_meta)
    cube.vars_meta = _variables(cube, paths, metas, fill)
    return cube


def _variables(cube: _Cube, paths, metas, fill) -> dict[str, dict]:
    """Each variable's dims, attributes and on-disk dtype: the widest of the inputs' (promoted across kinds), and
    float where an integer variable without a fill value has gaps (NaN there, as in an outer join)."""
    vars_meta: dict[str, dict] = {}
    for p, meta in zip(paths, metas, strict=True):
        for name, v in meta["vars"].items():
            m = vars_meta.setdefault(name, {"dims": v["dims"], "disk": v["disk"], "attrs": v["attrs"]})
            if m["dims"] != v["dims"]:
                raise ValueError(f"{p}: variable {name!r} has dims {v['dims']}, elsewhere {m['dims']}")
            disk = v["disk"]
            gaps = any(d not in cube.stack and not np.array_equal(meta["coords"][d][0], cube.union[d])
                       for d in v["dims"])
            if gaps and disk.kind in "iu" and name not in fill:
                disk = np.dtype(np.float64)  # an outer join turns an int variable with NaN gaps into float
            if m["disk"].kind == disk.kind:
                m["disk"] = max(m["disk"], disk, key=lambda x: x.itemsize)
            else:
                m["disk"] = np.promote_types(m["disk"], disk)
    for name, m in vars_meta.items():
        if m["disk"].kind in "iu" and name not in fill and any(d in cube.stack for d in m["dims"]):
            cover = np.zeros(tuple(cube.sizes[d] for d in cube.stack), dtype=bool)
            for meta in metas:
                cover[np.ix_(*[[cube.index[d][v] for v in meta["coords"][d][0].tolist()] for d in cube.stack])] = True
            if not cover.all():
                m["disk"] = np.dtype(np.float64)
    return vars_meta


def _create(nc, cube: _Cube, encoding, attrs, coord_attrs) -> None:
    """The output's dimensions, its coordinates (written), its variables (created; each gets ``"nc"``, the netCDF
    variable, and ``"disk_dtype"`` in ``cube.vars_meta``) and its global attributes."""
    for d, u in cube.union.items():
        nc.createDimension(d, len(u))
    for d, u in cube.union.items():
        dtype, a = cube.coord_meta[d]
        a = {**a, **(coord_attrs or {}).get(d, {})}
        if u.dtype.kind in "OU" or dtype is str:
            v = nc.createVariable(d, str, (d,))
            for i, s in enumerate(u.tolist()):
                v[i] = str(s)
        else:
            v = nc.createVariable(d, dtype, (d,), **(
                {"zlib": True, "complevel": 5, "shuffle": True} if len(u) > 1000 else {}))
            v[:] = u
        v.setncatts(a)
    for name, m in cube.vars_meta.items():
        shape = tuple(cube.sizes[d] for d in m["dims"])
        enc = encoding(name, m["dims"], shape, m["disk"], m["disk"]) if encoding else {}
        disk = np.dtype(enc.get("dtype", m["disk"]))
        if m["disk"].kind == "f" and disk.kind != "f":
            disk = m["disk"]
        fv = np.array(np.nan, dtype=disk) if disk.kind == "f" else None  # ints: gaps written by _fill_gaps
        kw = _nc_kwargs(enc)
        if "chunksizes" in kw:
            kw["chunksizes"] = tuple(min(c, s) for c, s in zip(kw["chunksizes"], shape, strict=True))
        v = nc.createVariable(name, disk, m["dims"], fill_value=fv, **kw)
        v.setncatts(m["attrs"])
        m["nc"], m["disk_dtype"] = v, disk
    nc.setncatts(dict(attrs or {}))


def _place(path, cube: _Cube, written: np.ndarray, fill: dict, lock, copies) -> None:
    """Pass 2 for one input: each of its variables written into its hyperslabs of the output, and its points of the
    stack dims marked in ``written`` (points another input wrote already: an error)."""
    f = _with_copies(_read(path, lock), copies)
    fc = {d: c[0] for d, c in f["coords"].items()}
    pos = {d: np.array([cube.index[d][v] for v in fc[d].tolist()]) for d in cube.stack if d in fc}
    runs = {d: _runs(pos[d]) for d in pos}
    with _held(lock):
        for name, v in f["vars"].items():
            m = cube.vars_meta[name]
            vals = _conform(v["values"], v["dims"], fc, cube.union, cube.stack, fill.get(name, np.nan))
            for src, dst in _slabs(v["dims"], cube.stack, runs):
                m["nc"][dst] = vals[src].astype(m["disk_dtype"], copy=False)
    sel = np.ix_(*[pos[d] for d in cube.stack])
    if written[sel].any():
        raise ValueError(f"{path}: overlaps cells written by another input")
    written[sel] = True


def _slabs(dims, stack, runs: dict):
    """(source key, output key) of each piece of an input's variable over ``dims``: one piece per combination of
    its runs (:func:`_runs`) along the stack dims, whole along the others."""
    for combo in itertools.product(*[runs[d] for d in dims if d in stack]):
        src, dst, k = [], [], 0
        for d in dims:
            if d in stack:
                off, a, b = combo[k]
                k += 1
                src.append(slice(off, off + b - a))
                dst.append(slice(a, b))
            else:
                src.append(slice(None))
                dst.append(slice(None))
        yield tuple(src), tuple(dst)


def _discard(exc: BaseException, nc, tmp: Path, output: Path, paths, lock):
    """After a failed merge: the temporary output closed and removed; the error to raise instead of ``exc`` when
    the device is full (else None)."""
    with contextlib.suppress(Exception), _held(lock):
        nc.close()
    # a full device (HDF5 says "NetCDF: HDF error"): one line naming the file; the output holds what the
    # inputs hold, recompressed alike, so their sizes (plus 1 MiB of metadata) bound what it still needed
    full = None
    if isinstance(exc, Exception):
        full = no_space(exc, output, need=sum(os.path.getsize(p) for p in paths if os.path.exists(p)) + (1 << 20))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    with _held(lock):
        release(tmp)  # a handle HDF5 could not close keeps the space taken (sojourn.core.files.integrity.release)
    return full


def _fill_gaps(vars_meta, stack, sizes, written, fill):
    if written.all():
        return
    lead = stack[:-1]
    last = stack[-1]
    for head in itertools.product(*[range(sizes[d]) for d in lead]):
        row = written[head]
        missing = np.flatnonzero(~row)
        if missing.size == 0:
            continue
        for _, a, b in _runs(missing):
            for name, m in vars_meta.items():
                dims = m["dims"]
                if not set(stack) <= set(dims):
                    if any(d in stack for d in dims):
                        raise ValueError(f"variable {name!r} spans only part of the stack dims {stack}")
                    continue
                value = _fill_for(name, m["disk_dtype"], fill)
                if m["disk_dtype"].kind == "f" and np.isnan(value):
                    continue  # the netCDF _FillValue (NaN) already reads back as the gap value
                inner = int(np.prod([sizes[d] for d in dims if d not in stack], dtype=np.int64))
                step = max(1, FILL_CHUNK // max(inner, 1))
                for lo in range(a, b, step):
                    hi = min(b, lo + step)
                    key, shape = [], []
                    for d in dims:
                        if d in lead:
                            key.append(head[lead.index(d)])
                        elif d == last:
                            key.append(slice(lo, hi))
                            shape.append(hi - lo)
                        else:
                            key.append(slice(None))
                            shape.append(sizes[d])
                    m["nc"][tuple(key)] = np.full(shape, value, dtype=m["disk_dtype"])
