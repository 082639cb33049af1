"""Command-line entry point ``sojourn``: each subpackage registers its own sub-commands."""
from __future__ import annotations

import argparse
import importlib
import sys

# module providing ``register(subparsers)`` for each sub-command group
_COMMAND_MODULES = ("sojourn.simulate.cli", "sojourn.analytic.cli")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="sojourn", description="Sojourn-time experiments on multi-server queues.")
    parser.add_argument("--version", action="version", version=f"sojourn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _COMMAND_MODULES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        mod.register(sub)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as exc:
        print(f"sojourn {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
