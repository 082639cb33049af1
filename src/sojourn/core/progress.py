"""Progress of long command-line runs on stderr: one mechanism for every command (tqdm bars).

A library loop wraps its iterations in :func:`steps` (``for k in steps(reps, "replications")``); a computation
without countable steps runs inside :func:`working` (a line of elapsed time); a function that takes a progress
callback gets one from :func:`reporter`. Nothing is shown unless a command line turned progress on
(:func:`enabled`, around a ``sojourn`` command's run), so the Python API, the pipeline's jobs (which log their own
``[i/n]`` lines, :mod:`sojourn.core.runner`) and the tests print nothing. When on, a bar goes to stderr (stdout
keeps only the result), appears once the run has lasted :data:`DELAY` seconds, only where stderr is a terminal, and
is removed when done. ``SOJOURN_PROGRESS=always`` shows it at once whatever stderr is (a log file, a test);
``never`` turns it off.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager

#: seconds a run lasts before its bar appears (short runs stay silent)
DELAY = 2.0
ENV = "SOJOURN_PROGRESS"
_ON = {"enabled": False}


@contextmanager
def enabled():
    """Bars are shown inside this block (a ``sojourn`` command's run), unless SOJOURN_PROGRESS=never."""
    before = _ON["enabled"]
    _ON["enabled"] = True
    try:
        yield
    finally:
        _ON["enabled"] = before


def _options() -> dict | None:
    """tqdm's keyword arguments for a bar now, or None: no bar."""
    mode = os.environ.get(ENV, "auto").strip().lower()
    if not _ON["enabled"] or mode in ("never", "0", "off", "no"):
        return None
    if mode in ("always", "1", "on", "yes"):
        return {"disable": False, "delay": 0.0}
    import sys

    if not (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()):
        return None  # auto: a terminal only
    return {"disable": False, "delay": DELAY}


@contextmanager
def _bar(total, what: str, unit: str, bar_format: str | None = None):
    """A tqdm bar on stderr, shown once :data:`DELAY` has passed and redrawn every half second (so a slow first
    step, or a computation without steps, still shows its elapsed time)."""
    import sys

    from tqdm import tqdm

    options = _options()
    stop = threading.Event()
    with tqdm(total=total, desc=what, unit=unit, leave=False, file=sys.stderr, dynamic_ncols=True,
              bar_format=bar_format, **options) as bar:
        def tick():  # update(0) redraws the elapsed time, once the delay has passed (tqdm checks it)
            while not stop.wait(0.5):
                bar.update(0)

        thread = threading.Thread(target=tick, daemon=True, name="sojourn-progress")
        thread.start()
        try:
            yield bar
        finally:
            stop.set()
            thread.join()


def steps(iterable, what: str, total: int | None = None, unit: str = "it"):
    """``iterable`` itself, or with a bar ``what`` over its ``total`` (default ``len(iterable)``) items."""
    if _options() is None:
        return iterable
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)

    def gen():
        with _bar(total, what, unit) as bar:
            for item in iterable:
                yield item
                bar.update(1)

    return gen()


@contextmanager
def working(what: str):
    """A line of the elapsed time around a computation without countable steps (an exact solve, a plan)."""
    if _options() is None:
        yield
        return
    with _bar(None, what, "s", bar_format="{desc}: {elapsed} elapsed"):
        yield


@contextmanager
def reporter(what: str, unit: str = "it"):
    """A callback ``report(done, total, *rest)`` that draws a bar ``what``, for a function taking a progress
    callback (:func:`sojourn.split_merge.best.best`); None when no bar is shown."""
    if _options() is None:
        yield None
        return
    with _bar(None, what, unit) as bar:
        def report(done: int, total: int, *_) -> None:
            bar.total = total
            bar.update(done - bar.n)

        yield report
