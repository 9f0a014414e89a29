"""Durations on the command line: the one parser of every option that takes a time.

``500ms``, ``2s``, ``1.5m``, ``1h``, or a bare number of seconds (``45`` is 45 s).
``duration`` (more than zero) and ``duration_or_zero`` (zero allowed, where zero
means "off" or "until stopped") are the argparse types; a bad value is one line.
"""

from __future__ import annotations

import argparse
import math
import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h)?\s*$")
UNIT_S: dict[str, float] = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
EXAMPLES = "e.g. 500ms, 45s, 2m, 1h; a bare number is seconds"


def parse_duration(text: str) -> float:
    """Seconds from ``text``; ValueError (one line) for anything else."""
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r} ({EXAMPLES})")
    seconds = float(m.group(1)) * UNIT_S[m.group(2) or "s"]
    if not math.isfinite(seconds):
        raise ValueError(f"not a duration: {text!r} ({EXAMPLES})")
    return seconds


def duration(text: str) -> float:
    """argparse type: a duration of more than zero, in seconds."""
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be more than zero")
    return seconds


def duration_or_zero(text: str) -> float:
    """argparse type: a duration in seconds, zero allowed (the option's "off")."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


DURATION_TYPES = (duration, duration_or_zero)


def go_duration(seconds: float) -> str:
    """The same time as a Go duration string in whole milliseconds (``3000ms``), for
    tools written in Go."""
    return f"{max(1, round(seconds * 1000))}ms"
