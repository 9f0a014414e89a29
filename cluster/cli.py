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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"pynamesrv: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
