"""Command-line entry point ``sojourn``: every registered study adds its own sub-commands.

Errors end in one line ``sojourn <command>: error: <flag or field>: <reason>`` and an exit status:
2 for invalid input (a bad flag value, an unknown flag or command, flags that need or exclude each other, an
output that cannot be written, a request predicted above the time or memory limits: all detected before any
compute, by :mod:`sojourn.core.checks.guard`), 1 for an operating-system error while running (disk full, …), 3 for a
run stopped by the watchdog past the limits its flags or the environment set.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import re
import sys

from .core.checks.guard import check_relations, relations
from .core.checks.inputs import did_you_mean
from .studies import STUDIES

_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$", re.IGNORECASE)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser that names an unknown flag (with "did you mean …") before complaining about
    missing required ones, and suggests the closest command for a misspelt one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # a value that is a negative number, written as people write numbers (-1e300, -inf): argparse's own
        # matcher knows only -1 and -1.5, and took -1e300 in `--taus 2 -1e300` for an unknown flag
        self._negative_number_matcher = _NUMBER

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        self._given: set = set()
        namespace, extras = super().parse_known_args(self._checked(args), namespace)
        if self._given or relations(self):  # this parser's flags (a command's, not the top level's)
            try:
                check_relations(self, self._given)
            except ValueError as exc:
                self.error(str(exc))
            namespace.given_flags = frozenset(self._given)
            # the command's fields in the user's terms (sojourn.core.checks.guard.naming): t_max -> --t-max
            namespace.flag_names = {a.dest: _long(a) for a in self._actions if a.option_strings
                                    and a.dest not in ("help", "version")}
        return namespace, extras

    def error(self, message):
        """One line, ``sojourn <command>: error: <message>``, status 2 (the usage is what --help prints); argparse's
        "argument --flag/-f: must be …" is said the project's way, "--flag must be …"."""
        m = re.match(r"argument (-[^/: ]+)(?:/[^: ]+)*: (.*)$", message, re.DOTALL)
        if m:
            flag = next((o for o in m.group(0).split(":")[0][9:].split("/") if o.startswith("--")), m.group(1))
            message = f"{flag} {m.group(2)}" if m.group(2).startswith("must ") else f"{flag}: {m.group(2)}"
        self.exit(2, f"{self.prog}: error: {message}\n")

    def _checked(self, args: list) -> list:
        """``args`` with each unknown flag or command rejected (self.error) and each negative number given
        as a flag's value attached to it (``--horizon -1e3`` -> ``--horizon=-1e3``: argparse would take
        ``-1e3`` for a flag)."""
        known = self._option_string_actions
        sub = next((a for a in self._actions if isinstance(a, argparse._SubParsersAction)), None)
        out: list = []
        expects = 0  # values still owed to the previous flag
        single = False  # that flag takes exactly one value (a negative number may then be attached to it)
        for i, tok in enumerate(args):
            if tok == "--":
                return out + args[i:]
            is_flag = tok.startswith("-") and len(tok) > 1 and not _NUMBER.match(tok)
            if not is_flag:
                if expects:
                    expects -= 1
                    if tok.startswith("-") and single:
                        out[-1] += ("=" if out[-1].startswith("--") else "") + tok
                    else:
                        out.append(tok)
                    continue
                if sub is not None:  # the first positional is the command; the subparser checks the rest
                    if tok not in sub.choices:
                        self.error(f"unknown command {tok!r}{did_you_mean(tok, sub.choices)} "
                                   f"(commands: {', '.join(sub.choices)})")
                    return out + args[i:]
                out.append(tok)
                continue
            out.append(tok)
            name = tok.split("=", 1)[0]
            action = known.get(name)
            if action is None and not name.startswith("--") and name[:2] in known:
                action = known[name[:2]]  # -R3: short flag with its value attached
                if action.nargs != 0:
                    self._given.add(_long(action))
                    continue
            if action is None and self.allow_abbrev and name.startswith("--"):
                hits = {a for opt, a in known.items() if opt.startswith(name)}
                action = hits.pop() if len(hits) == 1 else None
            if action is None:
                flags = [o for o in known if o.startswith("--")]
                self.error(f"unknown flag {name}{did_you_mean(name, flags)}")
            self._given.add(_long(action))
            expects = 0 if ("=" in tok or action.nargs == 0) else 1
            single = action.nargs is None
        return out


def _long(action) -> str:
    """The flag relations and messages name: the action's ``primary`` (``-R``, whose alias is ``--servers``) if it
    has one, else its long form."""
    if getattr(action, "primary", None):
        return action.primary
    return next((o for o in action.option_strings if o.startswith("--")), action.option_strings[0])


def _command(argv) -> str | None:
    """The command word of ``argv`` (the first token that is not a flag: the top level has no flag with a
    value), or None."""
    return next((tok for tok in argv if not tok.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``sojourn`` parser. With ``command`` one of a study's ``commands`` (the registry), only that study's
    commands are registered: importing every study's CLI costs seconds (``sojourn plan`` answers in 2 s)."""
    from .core.version import __version__

    parser = Parser(prog="sojourn", description="Sojourn-time experiments on multi-server queues.")
    parser.add_argument("--version", action="version", version=f"sojourn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    light = [module for s in STUDIES for cmd, module in s.light if cmd == command]
    owner = [s for s in STUDIES if s.cli and command in s.commands]
    if light:  # a command with a module of its own (``sojourn plan``: its answer has a 2 s budget)
        importlib.import_module(light[0]).register(sub)
        return parser
    for study in owner or STUDIES:
        if study.cli:
            importlib.import_module(study.cli).register(sub)
    return parser


def command_paths(parser: argparse.ArgumentParser | None = None) -> list[list[str]]:
    """Every command path of ``parser`` (default: the full ``sojourn`` parser): [], each command, each group's
    commands — what ``--help`` can be asked of (benchmarks/cli_help.py, tests/workflow/test_cli_imports.py)."""
    parser = build_parser(None) if parser is None else parser
    out: list[list[str]] = [[]]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += [[name, *path] for path in command_paths(sub)]
    return out


def main(argv=None) -> int:
    """Run ``sojourn`` with ``argv`` (default: the command line); return the exit status. From the command line
    (``argv`` None) Ctrl-C, SIGTERM and SIGHUP end it at once, its worker processes with it
    (:mod:`sojourn.core.cluster.processes`), and the run is held to the limits the flags or the environment set, once it
    has started (:func:`sojourn.core.checks.guard.watchdog`: a request the cost models admitted that then runs past
    ``--max-time`` or grows past ``--max-memory`` ends in one line, status 3)."""
    console = argv is None
    if console:  # the program itself (not a caller's in-process use)
        _default_signals()
        _skip_unused_imports()
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command(argv))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (status 2), --help and --version (status 0)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    from .core.checks.guard import naming
    from .core.checks.inputs import in_flag_terms
    from .core.runs.progress import enabled

    names = {**getattr(args, "flag_names", {}), **getattr(args, "extra_names", {})}
    group = getattr(args, f"{args.command.replace('-', '_')}_command", None)  # split-merge exact, restart solve …
    command = f"{args.command} {group}" if group else args.command
    try:
        _limits(args)
        # the library's refusals name this command's flags; long runs show their progress on stderr
        import contextlib

        from .core.checks.guard import watchdog

        with naming(names, "cli"), enabled(), (watchdog(command) if console else contextlib.nullcontext()):
            return int(args.func(args) or 0)
    except ValueError as exc:
        message = str(exc)
        if "--" not in message and names:  # a library's check that names its field, not the flag: say the flag
            message = in_flag_terms(message, names)
        print(f"sojourn {command}: error: {message}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.errno == errno.ENOSPC:  # a full device: one line naming the file (sojourn.core.files.integrity.NoSpace)
            print(f"sojourn {command}: error: no space left on device: {exc.filename or '?'}", file=sys.stderr)
            return 1
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"sojourn {command}: error:{where}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    finally:  # the limits were this command's: a later call in the same process (a test, a script) starts afresh
        from .core.checks.guard import set_limits

        set_limits(None, None)
        if console:  # the program ends next (its files are closed): see _skip_final_collection
            _skip_final_collection()


def _default_signals() -> None:
    """Ctrl-C (SIGINT) ends the process at once, as SIGTERM and SIGHUP do by default: Python would hold the
    KeyboardInterrupt until a numba kernel returns, minutes into a long replication, and a pool's shutdown would
    wait for its queued tasks. Worker processes end with the process
    (:class:`sojourn.core.cluster.processes.OwnedPool`).
    A signal the process was started with ignored (``nohup``, a background job) stays ignored. Only for the
    program itself: the Python API keeps KeyboardInterrupt."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    # the helper that frees a killed pool's semaphores (multiprocessing's resource tracker, started with these
    # options) would say it did, in a warning under the shell prompt
    sys.warnoptions.append("ignore:resource_tracker:UserWarning")


#: optional back-ends that libraries import when they are installed but that no ``sojourn`` command uses in its own
#: process (the pipeline's Dask runs in Snakemake's jobs, :mod:`sojourn.core.runs.job`): xarray imports dask.array
#: (and, writing netCDF, dask.distributed) at its first Dataset to recognise dask arrays, numba imports cffi (and
#: pycparser, which builds its lexer) at its first compile or cache load to type cffi functions. Together about
#: 0.5 CPU seconds of a 2.5 s ``sojourn simulate`` (benchmarks/simulate_vs_ciw.py --whole-process).
UNUSED_IMPORTS = {"dask": "xarray", "cffi": "numba"}  # {module: the library that looks for it}


def _skip_unused_imports() -> None:
    """Mark each of :data:`UNUSED_IMPORTS` as absent for this process (``sys.modules[name] = None``: an ``import``
    of it raises ImportError, which xarray and numba take for "not installed"), unless it or the library that looks
    for it is imported already (xarray remembers at import whether dask is installed). Only for the program itself:
    a caller's process (a test, a notebook, a Dask worker) keeps them."""
    for name, user in UNUSED_IMPORTS.items():
        if user not in sys.modules:
            sys.modules.setdefault(name, None)


def _skip_final_collection() -> None:
    """Move every object the program built into the garbage collector's permanent generation (``gc.freeze``):
    the interpreter's shutdown then stops walking them all in its last collections — numba's registries and
    compiled kernels, xarray's and pandas' modules: about 0.3 of 2.2 CPU seconds of ``sojourn simulate``
    (benchmarks/simulate_vs_ciw.py --whole-process). Exit handlers still run; the operating system frees the
    memory."""
    import gc

    gc.freeze()


def _limits(args) -> None:
    """``--max-memory`` / ``--max-time`` of the command (where it has them) as this process's cost limits."""
    from .core.checks.inputs import parse_duration, parse_size, set_limits

    mem, sec = getattr(args, "max_memory", None), getattr(args, "max_time", None)
    set_limits(None if mem is None else parse_size("--max-memory", mem),
               None if sec is None else parse_duration("--max-time", sec))


if __name__ == "__main__":
    sys.exit(main())
