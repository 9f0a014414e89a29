"""The ``pynamesrv`` command line: one parser, subcommands contributed by area modules.

Each module in COMMAND_MODULES exposes ``register(subparsers)``, which adds its
subcommands and sets ``func`` (``Callable[[argparse.Namespace], int]``) on them.
A command line naming a command imports only that command's module (the others stand in
as bare names): importing every area (Spark's reader, the bench, chaos) cost each
``pynamesrv up`` and each child it starts a good part of their start-up.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from cluster.core.errors import UserError

# module -> the commands its register() adds (a test keeps the two equal)
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "cluster.cli.node": ("node",),
    "cluster.bench.cli": ("bench",),
    "supervisor.cli": ("up", "status", "stop", "start", "restart", "pause", "resume", "kill",
                       "reload"),
    "cluster.audit.cli": ("audit",),
    "cluster.client.cli": (
        "broker-sim", "clusterList", "topicRoute", "topicList", "topicClusterList",
        "getKvConfig", "updateKvConfig", "deleteKvConfig", "getNamesrvConfig",
        "updateNamesrvConfig", "wipeWritePerm", "addWritePerm", "deleteTopic",
        "getBrokerMemberGroup"),
    "cluster.chaos.cli": ("chaos",),
    "cluster.peers.cli": ("peer",),
    "cluster.cli.monitoring": ("monitoring",),
    "cluster.addr.cli": ("addr-service",),
}


class Parser(argparse.ArgumentParser):
    """A bad option is one line on stderr and exit 2, like every other error of the command
    (argparse's usage block is what ``--help`` is for). Subcommands inherit the class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def module_of(command: str) -> str | None:
    """The module that registers ``command``, None for a word that is no command."""
    return next((m for m, names in COMMAND_MODULES.items() if command in names), None)


def load(module: str) -> ModuleType:
    return importlib.import_module(module)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; for a command line ``argv`` naming a command, only that
    command's module is imported and the other commands are bare names."""
    parser = Parser(prog="pynamesrv", description="RocketMQ NameServer cluster on one machine")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    wanted = module_of(argv[0]) if argv else None
    for module, names in COMMAND_MODULES.items():
        if wanted is None or module == wanted:
            load(module).register(sub)
        else:
            for name in names:
                sub.add_parser(name, add_help=False)
    return parser


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line; a subcommand with ``passthrough`` gets its arguments unparsed."""
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv)
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
