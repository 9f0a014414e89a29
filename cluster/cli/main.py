"""The ``pynamesrv`` command line: one parser, subcommands contributed by area modules.

Each module in COMMAND_MODULES exposes ``register(subparsers)``, which adds its
subcommands and sets ``func`` (``Callable[[argparse.Namespace], int]``) on them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

import supervisor.cli
from cluster.addr import cli as addr_cli
from cluster.audit import cli as audit_cli
from cluster.bench import cli as bench_cli
from cluster.chaos import cli as chaos_cli
from cluster.cli import monitoring as monitoring_cli
from cluster.cli import node as node_cli
from cluster.client import cli as client_cli
from cluster.core.errors import UserError
from cluster.peers import cli as peer_cli

COMMAND_MODULES: tuple[ModuleType, ...] = (
    node_cli, bench_cli, supervisor.cli, audit_cli, client_cli, chaos_cli, peer_cli,
    monitoring_cli, addr_cli)


class Parser(argparse.ArgumentParser):
    """A bad option is one line on stderr and exit 2, like every other error of the command
    (argparse's usage block is what ``--help`` is for). Subcommands inherit the class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="pynamesrv", description="RocketMQ NameServer cluster on one machine")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for module in COMMAND_MODULES:
        module.register(sub)
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
