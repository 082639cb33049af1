"""Run small dense linear algebra single-threaded.

The matrices here are ~100–600 wide: multi-threaded OpenBLAS gains nothing on them, and on a busy
machine its spinning threads made the grid stepping 10–20× slower (measured: 0.12 s vs 1.2 s for
six methods at R=3). This is a minimal, fail-safe thread limiter for the OpenBLAS builds bundled
with numpy/scipy wheels (``scipy_openblas_{get,set}_num_threads64_``); it is a no-op elsewhere.
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import threading

_LOCK = threading.Lock()
_LIBS = None


def _find_libs():
    global _LIBS
    if _LIBS is not None:
        return _LIBS
    libs = []
    try:
        import numpy
        import scipy

        paths = []
        for mod in (numpy, scipy):
            root = os.path.dirname(os.path.dirname(mod.__file__))
            paths += glob.glob(os.path.join(root, f"{mod.__name__}.libs", "*openblas*"))
        for p in sorted(set(paths)):
            try:
                lib = ctypes.CDLL(p)
            except OSError:
                continue
            for suffix in ("64_", ""):
                g = getattr(lib, f"scipy_openblas_get_num_threads{suffix}", None)
                s = getattr(lib, f"scipy_openblas_set_num_threads{suffix}", None)
                if g is not None and s is not None:
                    g.restype = ctypes.c_int
                    libs.append((g, s))
                    break
    except Exception:  # pragma: no cover - best effort only
        libs = []
    _LIBS = libs
    return libs


_DEPTH = 0
_SAVED: list = []


@contextlib.contextmanager
def single_threaded_blas():
    """Limit the bundled OpenBLAS pools to one thread inside the block.

    Reference-counted across threads: the first entrant saves the thread counts and sets 1, the last
    one to leave restores them (so concurrent Dask threads cannot leave the process single-threaded).
    """
    global _DEPTH, _SAVED
    libs = _find_libs()
    if not libs:
        yield
        return
    with _LOCK:
        if _DEPTH == 0:
            _SAVED = [g() for g, _ in libs]
            for _, s in libs:
                s(1)
        _DEPTH += 1
    try:
        yield
    finally:
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0:
                for (_, s), n in zip(libs, _SAVED, strict=True):
                    s(n)
