"""argparse types for numbers and names, so nonsense is one line and exit 2 before anything runs.

Times are ``cluster.core.durations``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable


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
