"""The example blocks of README.md and docs/*.md, run and checked against what their commands print (issue 31).

An example block is a fenced block whose first line is a command prompt, ``$ <command>``: every ``$`` line (with
its ``\\``-continued lines) is a command, and the lines under it, up to the next ``$`` line, are what it prints on
stdout (``2>&1`` in the command shows stderr too). The commands of a block run one after the other, in a scratch
folder of their own that holds a copy of the workflow files (``Snakefile``, ``config/``, ``workflow/``) and no
results — a fresh checkout — with this interpreter's ``sojourn`` and ``snakemake`` first on PATH and progress bars
off (``SOJOURN_PROGRESS=never``: their timings are not reproducible).

A block may be abridged, and then what it shows is checked, not what it leaves out:

* a line that is only ``…`` stands for one or more omitted lines (a command's output shown as ``…`` alone is stale:
  it would check nothing): the shown lines around it must appear in the
  real output in the same order, each run of shown lines between two ``…`` lines as consecutive real lines, the
  first run at the start of the output and the last at its end unless the block starts or ends with ``…``;
* a ``…`` inside a line stands for omitted text of that line: the text around it must match the real line.

So every number that is shown is compared with the real output; none can go stale behind an ellipsis.

Volatile fields — wall times, which differ from run to run — are compared after a normalisation that
replaces them with ``…`` in both the block and the real output: the patterns are :data:`VOLATILE` below, and
nothing else is exempt (the scratch folder's path, where a command prints it, is shown as ``…``). A rewrite keeps the block's own value of a volatile field where the rest of the line is
unchanged.

Usage (from the repository root, in the project's environment)::

    python docs/examples.py                 # run every block and rewrite the ones that differ, in place
    python docs/examples.py --check         # exit 1 and print a diff for every block that differs
    python docs/examples.py --list          # the blocks, their commands and their tier
    python docs/examples.py --determinism   # run each block twice (once on one CPU) and compare the outputs
    options: PAGE ... (only these pages), -k TEXT (only blocks whose commands contain TEXT),
             --tier cheap (only the blocks the default test run checks)

``tests/test_docs_examples.py`` checks every block: the cheap ones in the default test run, the long ones
(:data:`LONG`) where ``SOJOURN_CI=1`` (``.ci/run`` sets it).
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ELLIPSIS = "…"

#: Volatile fields: (pattern, replacement), applied to every line of a block and of the real output before they
#: are compared. Wall times only; each pattern names the output it is for.
VOLATILE = [
    (re.compile(r"run_time=[0-9.]+s"), "run_time=…s"),                           # sojourn approximate
    (re.compile(r"^(wall time\s+)[0-9.]+ s \(simulation [0-9.]+ s\)"), r"\1… s (simulation … s)"),  # simulate
    (re.compile(r"(events), [0-9.]+ s$"), r"\1, … s"),                            # sojourn restart simulate
]

#: Commands that take long enough (measured on 2 busy cores, see docs/development.md) that their blocks run in CI
#: only (``SOJOURN_CI=1``), not in the default test run: regular expressions on a block's command text.
LONG = [
    r"sojourn restart optimise",        # 15 simulations of example 2 (6 s)
    r"sojourn restart simulate",        # 10 replications of 200 000 time units (3-4 s)
    r"sojourn plan .*--confirm",        # 3 R x 10 replications of 10^6 customers (3-5 s)
    r"sojourn simulate",                # 10 replications of 160 000 (numba) or Ciw (3-20 s)
    r"sojourn split-merge best",        # ten (r, q) pairs (3-5 s)
    r"sojourn approximate -R 8 --rho 0.95 --method exact",  # the exact chain to its state cap (8-15 s)
    r"snakemake .*--configfile config/paper\.yaml",  # the paper config's DAG (6 CPU-s)
]

#: The programs the examples call, run with this interpreter (module to run with ``python -m``).
PROGRAMS = {"sojourn": "sojourn.cli", "snakemake": "snakemake"}

#: What a scratch folder gets from the repository: the workflow, no results.
WORKFLOW_FILES = ["Snakefile", "config", "workflow", "profiles"]

_FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")


@dataclass
class Command:
    """One ``$`` command of a block: its text as shown (continuation lines included) and the lines shown under it."""
    shown: list[str]
    expected: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The command as bash runs it (the prompt removed, continuation lines kept)."""
        return "\n".join([self.shown[0][2:], *self.shown[1:]])


@dataclass
class Block:
    page: Path
    first: int              # 0-based index of the block's first content line in the page
    last: int               # 0-based index one past its last content line
    commands: list[Command]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page}:{self.first + 1}"

    @property
    def long(self) -> bool:
        return any(re.search(p, c.text, re.DOTALL) for p in LONG for c in self.commands)

    @property
    def id(self) -> str:
        first = " ".join(self.commands[0].text.split())
        return f"{self.where} {first[:60]}"

    def lines(self) -> list[str]:
        return [line for c in self.commands for line in (*c.shown, *c.expected)]


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def parse(page: Path) -> list[Block]:
    """Every example block of a Markdown page (a fenced block whose first line starts with ``$ ``)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, j = m.group(2), i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence) and not lines[j].strip().strip(fence[0])):
            j += 1
        body = lines[i + 1:j]
        if body and body[0].startswith("$ "):
            blocks.append(Block(page, i + 1, j, _commands(body)))
        i = j + 1
    return blocks


def _commands(body: list[str]) -> list[Command]:
    commands: list[Command] = []
    k = 0
    while k < len(body):
        if body[k].startswith("$ "):
            shown = [body[k]]
            while shown[-1].endswith("\\") and k + 1 < len(body):
                k += 1
                shown.append(body[k])
            commands.append(Command(shown))
        else:
            commands[-1].expected.append(body[k])
        k += 1
    return commands


def blocks(selected: list[Path] | None = None) -> list[Block]:
    return [b for page in (selected or pages()) for b in parse(page)]


# ----------------------------------------------------------------------------------------------- running commands

def scratch_folder(where: Path) -> Path:
    """A fresh checkout's workflow files (no results) in ``where``, and a bin/ folder of :data:`PROGRAMS` that run
    with this interpreter."""
    where.mkdir(parents=True, exist_ok=True)
    for name in WORKFLOW_FILES:
        src = ROOT / name
        if src.is_symlink():
            (where / name).symlink_to(os.readlink(src))
        elif src.is_dir():
            shutil.copytree(src, where / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.exists():
            shutil.copy2(src, where / name)
    bin_dir = where / ".bin"
    bin_dir.mkdir(exist_ok=True)
    for program, module in PROGRAMS.items():
        wrapper = bin_dir / program
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n', encoding="utf-8")
        wrapper.chmod(0o755)
    return where


def environment(where: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOJOURN_", "SNAKEMAKE_"))}
    env["PATH"] = f"{where / '.bin'}{os.pathsep}{env.get('PATH', '')}"
    env["SOJOURN_PROGRESS"] = "never"
    return env


@dataclass
class Run:
    outputs: list[list[str]]   # per command, its stdout lines (trailing blank lines dropped)
    seconds: list[float]       # per command, its wall time
    codes: list[int]           # per command, its exit status
    errors: list[str]          # per command, its stderr


_CACHE: dict[tuple, Run] = {}


def run_block(block: Block, where: Path | None = None, one_cpu: bool = False, cache: bool = True) -> Run:
    """Run a block's commands one after the other in a scratch folder (``where``, else a temporary one). Blocks with
    the same commands (the README repeats some of docs/) run once per process unless ``cache`` is false."""
    key = (tuple(c.text for c in block.commands), one_cpu)
    if cache and key in _CACHE:
        return _CACHE[key]
    tmp = None
    if where is None:
        tmp = tempfile.TemporaryDirectory(prefix="sojourn-example-")
        where = Path(tmp.name)
    where = Path(where).resolve()
    try:
        scratch_folder(where)
        env, run = environment(where), Run([], [], [], [])
        for c in block.commands:
            argv = ["bash", "-c", c.text]
            if one_cpu:
                argv = ["taskset", "-c", str(min(os.sched_getaffinity(0))), *argv]
            t0 = time.perf_counter()
            proc = subprocess.run(argv, cwd=where, env=env, capture_output=True, text=True, timeout=3600, check=False)
            run.seconds.append(time.perf_counter() - t0)
            run.codes.append(proc.returncode)
            out = [line.rstrip().replace(str(where), ELLIPSIS) for line in proc.stdout.splitlines()]
            while out and not out[-1]:
                out.pop()
            run.outputs.append(out)
            run.errors.append(proc.stderr)
    finally:
        if tmp is not None:
            tmp.cleanup()
    if cache:
        _CACHE[key] = run
    return run


# ------------------------------------------------------------------------------------------------------- matching

def normalise(line: str) -> str:
    line = line.rstrip()
    for pattern, repl in VOLATILE:
        line = pattern.sub(repl, line)
    return line


def _is_gap(line: str) -> bool:
    return line.strip() == ELLIPSIS


def _line_pattern(shown: str) -> re.Pattern:
    """A shown line as a pattern of the real one: a ``…`` inside it stands for omitted text."""
    parts = normalise(shown).split(ELLIPSIS)
    return re.compile("^" + ".*".join(map(re.escape, parts)) + "$", re.DOTALL)


def _line_matches(shown: str, real: str) -> bool:
    real = normalise(real)
    return normalise(shown) == real or (ELLIPSIS in shown and bool(_line_pattern(shown).match(real)))


def _segments(shown: list[str]) -> tuple[list[list[str]], bool, bool]:
    """The runs of shown lines between ``…`` lines; whether the block starts and ends with a ``…`` line."""
    segments, current = [], []
    for line in shown:
        if _is_gap(line):
            segments.append(current)
            current = []
        else:
            current.append(line)
    segments.append(current)
    open_start, open_end = not segments[0], not segments[-1]
    return [s for s in segments if s], open_start, open_end


def _runs_at(segment: list[str], real: list[str], at: int) -> bool:
    return at + len(segment) <= len(real) and all(_line_matches(s, r) for s, r in zip(segment, real[at:]))


def _bounds(k: int, n: int, open_start: bool, open_end: bool, at: int, real: int, size: int) -> range:
    """Where run k of n (``size`` lines) may start in a real output of ``real`` lines, the previous run ending at
    ``at``: at the start if it is the first and the block does not start with ``…``, at the end if it is the last
    and the block does not end with ``…``, else after at least one omitted line."""
    lo = 0 if (k == 0 and not open_start) else at + 1
    hi = real - size
    if k == 0 and not open_start:
        hi = min(hi, 0)
    if k == n - 1 and not open_end:
        lo = max(lo, real - size)
    return range(lo, hi + 1)


def placement(shown: list[str], real: list[str]) -> list[int] | None:
    """Where each run of shown lines sits in the real output (its first line's index), or None if the shown lines
    are not the real ones in order: each run consecutive, a ``…`` line standing for at least one omitted line."""
    if not shown:
        return [] if not real else None
    segments, open_start, open_end = _segments(shown)
    if not segments:  # only '…'
        return [] if real else None
    starts, at = [], 0
    for k, seg in enumerate(segments):
        where = _bounds(k, len(segments), open_start, open_end, at, len(real), len(seg))
        found = next((c for c in where if _runs_at(seg, real, c)), None)
        if found is None:
            return None
        starts.append(found)
        at = found + len(seg)
    if open_end and at >= len(real):
        return None  # a trailing '…' stands for at least one line
    return starts


def matches(shown: list[str], real: list[str]) -> bool:
    return placement(shown, real) is not None


# ------------------------------------------------------------------------------------------------------ rewriting

def _shape(line: str) -> str:
    return re.sub(r"\d", "0", normalise(line))


def _similarity(shown: str, real: str) -> float:
    if _line_matches(shown, real):
        return 2.0
    head = normalise(shown).split(ELLIPSIS)[0] if ELLIPSIS in shown else shown
    return difflib.SequenceMatcher(None, _shape(head), _shape(real)[:max(len(head), 1) * 2]).ratio()


def _rewrite_line(shown: str, real: str) -> str:
    if _line_matches(shown, real):
        return shown  # unchanged, or only a volatile field differs: keep the block's own
    parts = shown.rstrip().split(ELLIPSIS)
    if len(parts) == 2:  # keep as much of the line's head and tail as the shown line kept
        head, tail = len(parts[0]), len(parts[1])
        return real if head + tail >= len(real) else real[:head] + ELLIPSIS + real[len(real) - tail:]
    return real


def rewrite(shown: list[str], real: list[str]) -> list[str]:
    """The block's lines made true to the real output, keeping its abridgement: an unabridged block becomes the
    output; an abridged one keeps its ``…`` lines, each run of shown lines moved to where the real lines look most
    like it (numbers ignored), each line replaced by its real counterpart (truncated as the shown one was)."""
    if not any(ELLIPSIS in line for line in shown):
        out = list(real)
        for k, r in enumerate(real):  # keep the block's volatile values where a line is otherwise unchanged
            if k < len(shown) and normalise(shown[k]) == normalise(r):
                out[k] = shown[k]
        return out
    if matches(shown, real):
        return list(shown)
    segments, _, _ = _segments(shown)
    gaps = [line for line in shown if _is_gap(line)]
    indent = gaps[0][:len(gaps[0]) - len(gaps[0].lstrip())] if gaps else ""
    out: list[str] = []
    at = 0
    for k, seg in enumerate(segments):  # each run where it fits best, in order; '…' wherever lines are left out
        best, best_score = None, -1.0
        for c in range(at, len(real) - len(seg) + 1):
            score = sum(_similarity(s, r) for s, r in zip(seg, real[c:c + len(seg)]))
            if score > best_score:
                best, best_score = c, score
        if best is None:  # the output is too short for the shown lines: show it whole
            return list(real)
        if best > at:
            out.append(indent + ELLIPSIS)
        out.extend(_rewrite_line(s, r) for s, r in zip(seg, real[best:best + len(seg)]))
        at = best + len(seg)
    if at < len(real):
        out.append(indent + ELLIPSIS)
    return out if matches(out, real) else list(real)


# ------------------------------------------------------------------------------------------- checking and updating

@dataclass
class Result:
    block: Block
    run: Run
    new: list[list[str]]      # per command, the lines the block should show

    @property
    def stale(self) -> bool:
        return any(c.expected != n for c, n in zip(self.block.commands, self.new))

    def diff(self) -> str:
        notes = "".join(f"{self.block.where}: `{' '.join(c.text.split())}` exited with status {code}; its stderr "
                        f"ends:\n{err[-1500:]}\n" for c, code, err in
                        zip(self.block.commands, self.run.codes, self.run.errors) if code != 0)
        old = self.block.lines()
        new = [line for c, n in zip(self.block.commands, self.new) for line in (*c.shown, *n)]
        return notes + "".join(difflib.unified_diff([x + "\n" for x in old], [x + "\n" for x in new],
                                                    f"{self.block.where} (shown)", f"{self.block.where} (real)", n=2))


def check(block: Block, where: Path | None = None) -> Result:
    """Run a block; per command, the lines it should show (its own where they match the real output)."""
    run = run_block(block, where)
    new = []
    for c, out in zip(block.commands, run.outputs):
        if out and not [line for line in c.expected if not _is_gap(line)]:
            new.append(list(out))  # a block that shows nothing of an output checks nothing: show it all
        else:
            new.append(c.expected if matches(c.expected, out) else rewrite(c.expected, out))
    return Result(block, run, new)


def write(results: list[Result]) -> list[Path]:
    """Rewrite the stale blocks in their pages; the pages changed."""
    by_page: dict[Path, list[Result]] = {}
    for r in results:
        if r.stale:
            by_page.setdefault(r.block.page, []).append(r)
    for page, rs in by_page.items():
        lines = page.read_text(encoding="utf-8").splitlines()
        for r in sorted(rs, key=lambda r: r.block.first, reverse=True):
            body = [line for c, n in zip(r.block.commands, r.new) for line in (*c.shown, *n)]
            lines[r.block.first:r.block.last] = body
        page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return list(by_page)


def determinism(block: Block) -> list[str]:
    """Differences between two runs of a block, one on all CPUs and one on a single CPU (as many workers as cores:
    ``sojourn plan --confirm`` forks one per core)."""
    first = run_block(block, cache=False)
    second = run_block(block, one_cpu=True, cache=False)
    problems = []
    for c, a, b in zip(block.commands, first.outputs, second.outputs):
        a, b = [normalise(x) for x in a], [normalise(x) for x in b]
        if a != b:
            problems.append(f"{block.where}: {c.text!r} prints differently on one CPU:\n" + "".join(
                difflib.unified_diff([x + "\n" for x in a], [x + "\n" for x in b], "all CPUs", "one CPU", n=1)))
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pages", nargs="*", type=Path, help="only these pages (default: README.md and docs/*.md)")
    ap.add_argument("--check", action="store_true", help="do not rewrite: exit 1 and show a diff where a block differs")
    ap.add_argument("--list", action="store_true", help="list the blocks, their commands and tiers")
    ap.add_argument("--determinism", action="store_true", help="run each block on all CPUs and on one; compare")
    ap.add_argument("-k", dest="keyword", default=None, help="only blocks with a command containing this text")
    ap.add_argument("--tier", choices=["cheap", "all"], default="all", help="cheap: the default test run's blocks")
    args = ap.parse_args(argv)
    selected = blocks([p.resolve() for p in args.pages] or None)
    if args.keyword:
        selected = [b for b in selected if any(args.keyword in c.text for c in b.commands)]
    if args.tier == "cheap":
        selected = [b for b in selected if not b.long]
    if args.list:
        for b in selected:
            print(f"{b.where:28s} {'CI only' if b.long else 'default'}  " +
                  " ; ".join(" ".join(c.text.split()) for c in b.commands))
        return 0
    if args.determinism:
        problems = [p for b in selected for p in determinism(b)]
        print("\n".join(problems) or f"{len(selected)} blocks print the same on all CPUs and on one")
        return 1 if problems else 0
    results = []
    for b in selected:
        r = check(b)
        results.append(r)
        took = " + ".join(f"{s:.1f} s" for s in r.run.seconds)
        print(f"{'STALE' if r.stale else 'ok   '} {b.where:28s} {took:>16s}  {' '.join(b.commands[0].text.split())[:70]}",
              file=sys.stderr)
        if r.stale and args.check:
            print(r.diff())
    stale = [r for r in results if r.stale]
    if args.check:
        print(f"{len(stale)} of {len(results)} example blocks differ from what their commands print"
              if stale else f"all {len(results)} example blocks match what their commands print", file=sys.stderr)
        return 1 if stale else 0
    for page in write(results):
        print(f"rewrote {page.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
