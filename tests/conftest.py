"""Shared by every test folder (core/, jsq_ps/, split_merge/, restart/, workflow/): this folder is on sys.path (pytest
puts a rootdir conftest's folder there), so tests import reference code as ``from support.<module> import …``.

Tests marked ``ci_only`` (long checks, e.g. the documentation's slow examples) run where ``SOJOURN_CI=1`` — ``.ci/run``
sets it — and are skipped otherwise: ``SOJOURN_CI=1 python -m pytest …`` runs them by hand.

numba's compiled kernels: a run keeps them in its work folder's ``.sojourn/numba-cache`` (issue 35), so each test's
fresh work folder would compile every kernel again; the suite shares one cache instead, ``NUMBA_CACHE_DIR`` (which a
run keeps when set) in pytest's cache folder, unless the environment names one. Tests of the default unset it."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "numba"))


def pytest_collection_modifyitems(config, items):
    if os.environ.get("SOJOURN_CI") == "1":
        return
    skip = pytest.mark.skip(reason="a long check run in CI only (SOJOURN_CI=1, set by .ci/run)")
    for item in items:
        if item.get_closest_marker("ci_only") is not None:
            item.add_marker(skip)
