"""The ``pynamesrv`` command line: one parser, subcommands contributed by area modules.

Each module in COMMAND_MODULES exposes ``register(subparsers)``, which adds its
subcommands and sets ``func`` (``Callable[[argparse.Namespace], int]``) on them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from cluster.errors import UserError

COMMAND_MODULES: tuple[str, ...] = (
    "cluster.cli_node",
    "cluster.bench.cli",
    "supervisor.cli",
    "cluster.audit.cli",
    "cluster.client.cli",
    "cluster.chaos.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pynamesrv", description="RocketMQ NameServer cluster on one machine")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line; a subcommand with ``passthrough`` gets its arguments unparsed."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and not getattr(args, "passthrough", False):
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.passthrough_args = rest
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"pynamesrv: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
