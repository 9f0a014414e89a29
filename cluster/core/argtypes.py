"""argparse types for numbers and names, so nonsense is one line and exit 2 before anything runs.

Times are ``cluster.core.durations``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeAlias


def int_range(lo: int, hi: int) -> Callable[[str], int]:
    """argparse type: an integer within ``lo``..``hi``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is outside {lo}..{hi}")
        return value
    parse.__name__ = f"int_{lo}_{hi}"
    return parse


def one_line(text: str) -> str:
    """argparse type: a non-empty name on one line, trimmed."""
    value = text.strip()
    if not value or "\n" in value or "\r" in value:
        raise argparse.ArgumentTypeError(f"expected a non-empty one-line name, got {text!r}")
    return value


def host_port(text: str) -> tuple[str, int]:
    """argparse type: ``HOST:PORT`` (``[::1]:PORT`` for IPv6), port 0 for any free one."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


# What ``add_subparsers()`` returns: each area's ``register(sub)`` adds its commands to it.
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
