"""Command-line entry point ``sojourn``: every registered study adds its own sub-commands."""
from __future__ import annotations

import argparse
import importlib
import sys

from .studies import STUDIES


def build_parser() -> argparse.ArgumentParser:
    from .core.version import __version__

    parser = argparse.ArgumentParser(prog="sojourn", description="Sojourn-time experiments on multi-server queues.")
    parser.add_argument("--version", action="version", version=f"sojourn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for study in STUDIES:
        if study.cli:
            importlib.import_module(study.cli).register(sub)
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
