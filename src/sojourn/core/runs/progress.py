"""Progress of long command-line runs on stderr, with the time left: one mechanism for every command.

A library loop wraps its iterations in :func:`steps` (``for k in steps(reps, "replications")``); a computation
without countable steps runs inside :func:`working`; a function that takes a progress callback gets one from
:func:`reporter`. Nothing is shown unless a command line turned progress on (:func:`enabled`, around a ``sojourn``
command's run), so the Python API, the pipeline's jobs (which log their own ``[i/n]`` lines,
:mod:`sojourn.core.runs.runner`) and the tests print nothing. stdout keeps only the result.

When on, a run that lasts longer than :data:`DELAY` seconds shows:

* on a terminal, a tqdm bar (redrawn twice a second, removed when done) with the steps done, the time elapsed
  and the time left;
* anywhere else (a log file, a pipe), one line per step: ``sojourn: replications: 3/10 done, 12 s elapsed, about
  28 s left`` (a computation without steps: a line every :data:`LINE_EVERY` seconds).

The time left is counted from the steps done once one is; before that, from the cost model's estimate that the
guard admitted (:func:`sojourn.core.checks.guard.admitted`). A command whose estimate is longer than :data:`DELAY`
announces it before it starts (:func:`announce`; Ciw's backend always does). ``SOJOURN_PROGRESS=always`` shows
everything at once whatever stderr is; ``never`` turns it off.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager

from ..checks.guard import ON_ADMIT, admitted, format_bytes, format_seconds

#: seconds a run lasts before its progress appears (short runs stay silent)
DELAY = 2.0
#: seconds between the lines of a computation without steps, off a terminal
LINE_EVERY = 30.0
ENV = "SOJOURN_PROGRESS"
_ON = {"enabled": False}


@contextmanager
def enabled():
    """Progress is shown inside this block (a ``sojourn`` command's run), unless SOJOURN_PROGRESS=never."""
    before = _ON["enabled"]
    _ON["enabled"] = True
    _ANNOUNCED["done"] = False
    try:
        yield
    finally:
        _ON["enabled"] = before


def _mode() -> str | None:
    """``"bar"`` (a terminal), ``"lines"`` (anything else), or None (nothing shown)."""
    mode = os.environ.get(ENV, "auto").strip().lower()
    if not _ON["enabled"] or mode in ("never", "0", "off", "no"):
        return None
    tty = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    return "bar" if tty else "lines"


def _delay() -> float:
    return 0.0 if os.environ.get(ENV, "auto").strip().lower() in ("always", "1", "on", "yes") else DELAY


def _format(seconds: float) -> str:
    """A progress line's time: to a tenth of a second at the least (a first line drawn at once says 0 s)."""
    return format_seconds(seconds) if seconds >= 0.1 else "0 s"


def _left(elapsed: float, done: int, total: int | None, est) -> str:
    """The time left: from the steps done, else from the admitted estimate ``est``; "" when unknown."""
    if total and done:
        return f"about {_format(elapsed / done * (total - done))} left"
    if est is not None and est.seconds > 0:
        left = est.seconds - elapsed
        return f"about {_format(left)} left (estimate)" if left > 0 else "longer than estimated"
    return ""


_ANNOUNCED: dict = {"done": False}


def announce(estimate, force: bool = False) -> None:
    """Print the estimate a command line's request was admitted with, before it starts, where it is longer than
    :data:`DELAY` (or ``force``: Ciw's backend); once per command (the command, then the library, admit it)."""
    if _mode() is None or not (force or estimate.seconds > DELAY) or _ANNOUNCED["done"]:
        return
    _ANNOUNCED["done"] = True
    sys.stderr.write(f"sojourn: estimate: about {_format(estimate.seconds)} and {format_bytes(estimate.memory)} "
                     f"({estimate.what})\n")
    sys.stderr.flush()


class _Progress:
    """One progress display: a tqdm bar on a terminal, lines elsewhere; ``update(done, total)`` moves it."""

    def __init__(self, what: str, total: int | None, unit: str, mode: str):
        self.what, self.total, self.unit, self.mode = what, total, unit, mode
        self.done = 0
        self.estimate = admitted()  # read here: the display's thread does not see the command's context
        self.t0 = time.monotonic()
        self.delay = _delay()
        self.last_line = -1.0
        self.bar = None
        self.lock = threading.Lock()
        if mode == "bar":
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=what, unit=unit, leave=False, file=sys.stderr, dynamic_ncols=True,
                            delay=self.delay, bar_format="{desc}: {n_fmt}/{total_fmt} {bar} {elapsed} elapsed{postfix}"
                            if total else "{desc}: {n_fmt} {unit} {elapsed} elapsed{postfix}")

    def update(self, done: int, total: int | None = None) -> None:
        with self.lock:
            if total is not None:
                self.total = total
                if self.bar is not None:
                    self.bar.total = total
            step = done > self.done
            self.done = done
            self._show(step)

    def tick(self) -> None:
        with self.lock:
            self._show(False)

    def _show(self, step: bool) -> None:
        elapsed = time.monotonic() - self.t0
        left = _left(elapsed, self.done, self.total, self.estimate)
        if self.bar is not None:
            self.bar.set_postfix_str(f", {left}" if left else "", refresh=False)
            self.bar.update(self.done - self.bar.n)
            return
        if elapsed < self.delay:
            return
        due = step or (self.total is None and self.done == 0 and elapsed - self.last_line >= LINE_EVERY) \
            or self.last_line < 0
        if not due:
            return
        self.last_line = elapsed
        count = f"{self.done}/{self.total} done, " if self.total else (f"{self.done} done, " if self.done else "")
        sys.stderr.write(f"sojourn: {self.what}: {count}{_format(elapsed)} elapsed"
                         f"{', ' + left if left else ''}\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@contextmanager
def _display(what: str, total, unit: str):
    """A display redrawn every half second (so a slow first step, or a computation without steps, still shows its
    elapsed time and the estimate's time left); None where progress is off."""
    mode = _mode()
    if mode is None:
        yield None
        return
    p = _Progress(what, total, unit, mode)
    p.tick()  # without a delay (SOJOURN_PROGRESS=always) the first line at once: a computation may end before a tick
    stop = threading.Event()

    def tick():
        while not stop.wait(0.5):
            p.tick()

    thread = threading.Thread(target=tick, daemon=True, name="sojourn-progress")
    thread.start()
    try:
        yield p
    finally:
        stop.set()
        thread.join()
        p.close()


def steps(iterable, what: str, total: int | None = None, unit: str = "it"):
    """``iterable`` itself, or with progress ``what`` over its ``total`` (default ``len(iterable)``) items."""
    if _mode() is None:
        return iterable
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)

    def gen():
        with _display(what, total, unit) as p:
            for i, item in enumerate(iterable):
                yield item
                p.update(i + 1)

    return gen()


@contextmanager
def working(what: str):
    """Progress of a computation without countable steps (an exact solve, a plan): elapsed and estimated time left."""
    with _display(what, None, "s") as p:
        yield p


@contextmanager
def reporter(what: str, unit: str = "it"):
    """A callback ``report(done, total, *rest)`` that shows progress ``what``, for a function taking a progress
    callback (:func:`sojourn.split_merge.best.best`); None when nothing is shown."""
    with _display(what, None, unit) as p:
        if p is None:
            yield None
            return

        def report(done: int, total: int, *_) -> None:
            p.update(done, total)

        yield report


ON_ADMIT.append(announce)
