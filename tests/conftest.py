"""Shared by every test folder (core/, jsq_ps/, split_merge/, restart/, workflow/): this folder is on sys.path (pytest
puts a rootdir conftest's folder there), so tests import reference code as ``from support.<module> import …``.

Tests marked ``ci_only`` (long checks, e.g. the documentation's slow examples) run where ``SOJOURN_CI=1`` — ``.ci/run``
sets it — and are skipped otherwise: ``SOJOURN_CI=1 python -m pytest …`` runs them by hand.

numba's compiled kernels: a run keeps them in its work folder's ``.sojourn/numba-cache`` (issue 35), so each test's
fresh work folder would compile every kernel again; the suite shares one cache instead, ``NUMBA_CACHE_DIR`` (which a
run keeps when set) in pytest's cache folder, unless the environment names one. Tests of the default unset it.

A pipeline run that several test files only read (the same command on the same config) is made once per session by
the ``shared_run`` fixture, whichever file asks first, on whichever xdist worker: the workers take turns under a
file lock in the session's temporary root, and the second finds the run done (issue 36: the CI's time).

The pipeline tests that compare runs over time import a frozen copy of the package (``frozen_package``), so that edits
others make to src/ meanwhile cannot rerun jobs between them. One copy per session, at one path: numba's cache is
keyed by a kernel's source folder, so a copy per test compiled every kernel again in each (~40 CPU-s a run)."""
from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".pytest_cache" / "numba"))


def pytest_collection_modifyitems(config, items):
    if os.environ.get("SOJOURN_CI") == "1":
        return
    skip = pytest.mark.skip(reason="a long check run in CI only (SOJOURN_CI=1, set by .ci/run)")
    for item in items:
        if item.get_closest_marker("ci_only") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_run(tmp_path_factory) -> Callable[[str, Callable[[Path], None]], Path]:
    """``shared_run(name, build)``: the folder ``build(folder)`` filled, built once per test session under ``name``.

    The folder lives in the root every xdist worker's temporary folder is under (the session's own: a later session
    builds anew), so both workers see one copy; a lock file there makes the second wait while the first builds. A
    build that fails leaves no done-mark: the next caller builds again, from an empty folder, and fails on its own.
    The folder is for reading: a test that changes files works on a copy."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-runs"
    root.mkdir(exist_ok=True)

    def get(name: str, build: Callable[[Path], None]) -> Path:
        folder, done = root / name, root / f"{name}.done"
        with open(root / f"{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not done.exists():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                build(folder)
                done.touch()
        return folder

    return get


@pytest.fixture(scope="session")
def frozen_package(shared_run) -> Path:
    """The folder to put on ``PYTHONPATH`` for a copy of src/sojourn taken once per session (the module docstring)."""
    return shared_run("frozen-package", lambda folder: shutil.copytree(
        ROOT / "src" / "sojourn", folder / "sojourn", ignore=shutil.ignore_patterns("__pycache__")))
