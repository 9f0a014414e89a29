"""``pynamesrv node``: run one NameServer node in the foreground.

The node lives in its own process tree (``python -P -m worker.controller``: neither the
working directory nor anything else the user did not install is on its module path);
this command replaces the current process with it, so the CLI never imports node
internals.
Every argument after ``node`` (``--help`` included) is the node's own, parsed by
the node's parser, the one place its options are defined.
"""

from __future__ import annotations

import argparse
import os
import sys

from cluster.core.argtypes import Subparsers
from cluster.core.procs import python_module


def register(sub: Subparsers) -> None:
    p = sub.add_parser("node", help="run one NameServer node in the foreground",
                       add_help=False, usage="pynamesrv node --data-dir DIR [options]; "
                       "pynamesrv node --help lists them")
    p.set_defaults(func=_run, passthrough=True)


def _run(args: argparse.Namespace) -> int:
    argv = [*python_module("worker.controller"), *args.passthrough_args]
    os.execv(sys.executable, argv)
