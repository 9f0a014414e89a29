"""``pynamesrv node``: run one NameServer node in the foreground.

The node lives in its own process tree (``python -m worker.node``); this command
replaces the current process with it, so the CLI never imports node internals.
"""

from __future__ import annotations

import argparse
import os
import sys


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("node", help="run one NameServer node in the foreground",
                       add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    argv = [sys.executable, "-m", "worker.node", *args.rest]
    os.execv(sys.executable, argv)
    return 0  # not reached
