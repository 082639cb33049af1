"""Shared by every test folder (core/, jsq_ps/, split_merge/, restart/, workflow/): this folder is on sys.path (pytest
puts a rootdir conftest's folder there), so tests import reference code as ``from support.<module> import …``.

Tests marked ``ci_only`` (long checks, e.g. the documentation's slow examples) run where ``SOJOURN_CI=1`` — ``.ci/run``
sets it — and are skipped otherwise: ``SOJOURN_CI=1 python -m pytest …`` runs them by hand.

numba's compiled kernels: a run keeps them in its work folder's ``.sojourn/numba-cache`` (issue 35), so each test's
fresh work folder would compile every kernel again; the suite shares one cache instead, ``NUMBA_CACHE_DIR`` (which a
run keeps when set) in pytest's cache folder, unless the environment names one. Tests of the default unset it.

Two workers (pyproject: ``-n 2``) share the suite by file, so that a file's module fixtures (a pipeline run, a Dask
cluster) are built once, with two changes to xdist's ``loadfile`` (issue 36: it starts the files with most tests
first, and in the run of benchmarks/ci_time.jsonl one worker was idle for the last 418 s): the files start longest
first, by the times last measured (``benchmarks/ci_time.jsonl``, the largest-first rule, so that the short ones fill
the end), and the documentation's examples — each block its own commands in its own folder — are spread over both
workers, a block with the same commands as another (the README
repeats some of docs/) on the same worker, where the first one's output is reused."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".pytest_cache" / "numba"))

#: the file whose tests are spread over the workers one block at a time (no shared fixture, each block in its folder)
SPREAD = "tests/test_docs_examples.py::"


def _measured_seconds() -> dict[str, float]:
    """{test file: seconds} of the last run recorded by benchmarks/ci_time.py ({} if none)."""
    try:
        lines = (ROOT / "benchmarks" / "ci_time.jsonl").read_text().splitlines()
        return {f: v["s"] for f, v in json.loads(lines[-1])["by_file_s"].items()}
    except (OSError, IndexError, KeyError, ValueError):
        return {}


def pytest_collection_modifyitems(config, items):
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the same order on every worker: xdist checks the collections agree
        seconds = _measured_seconds()
        items.sort(key=lambda item: -seconds.get(item.nodeid.split("::")[0], 0.0))  # stable: a file's order kept
    if os.environ.get("SOJOURN_CI") == "1":
        return
    skip = pytest.mark.skip(reason="a long check run in CI only (SOJOURN_CI=1, set by .ci/run)")
    for item in items:
        if item.get_closest_marker("ci_only") is not None:
            item.add_marker(skip)


def _scope(nodeid: str) -> str:
    """The unit of work a worker takes whole: the file, or for a documentation example the block's commands (its
    id: page:line, then the commands' text)."""
    if nodeid.startswith(SPREAD):
        return SPREAD + nodeid.partition("[")[2].partition(" ")[2]
    return nodeid.split("::", 1)[0]


def pytest_xdist_make_scheduler(config, log):
    """xdist's loadfile with the scopes of :func:`_scope`, in the order of the collection (longest file first)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduler(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _scope(nodeid)

    config.option.loadscopereorder = False  # xdist's default orders the scopes by their number of tests
    return Scheduler(config, log)
