"""Java's text conversions that mqadmin's output goes through, for byte-equal admin output.

``String.valueOf`` (``null``, ``true``), ``Formatter``'s ``%.Nf`` (half-up on the
shortest decimal form of the double, not Python's half-even on its binary value),
``Double.parseDouble`` / ``Long.parseLong`` (what they accept), ``List.toString`` and
``AbstractMap.toString``. Pure functions; no I/O.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Iterable
from decimal import ROUND_HALF_UP, Decimal

_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)")
_LONG = re.compile(r"[+-]?\d+")
_LONG_MAX = (1 << 63) - 1


def jstr(value: object) -> str:
    """``String.valueOf``: ``null`` for None, ``true``/``false`` for booleans."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def fixed(x: float, digits: int) -> str:
    """``String.format("%.<digits>f", x)`` as Java prints it."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    quantum = Decimal(1).scaleb(-digits)
    return f"{Decimal(repr(x)).quantize(quantum, rounding=ROUND_HALF_UP):f}"


def as_float32(x: float) -> float:
    """A Java ``float`` value (what ``Float.parseFloat`` or float arithmetic keeps)."""
    return float(struct.unpack("f", struct.pack("f", x))[0])


def parse_double(text: str | None) -> float:
    """``Double.parseDouble``; ValueError where Java throws (None included)."""
    if text is None:
        raise ValueError("null")
    s = text.strip(" \t\n\r\x0b\x0c\x00")
    if not _DOUBLE.fullmatch(s):
        raise ValueError(f"not a Java double: {text!r}")
    if s[-1] in "fFdD":  # a type suffix (never the end of NaN or Infinity)
        s = s[:-1]
    return float(s.replace("Infinity", "inf").replace("NaN", "nan"))


def parse_long(text: str | None) -> int:
    """``Long.parseLong``; ValueError where Java throws (None included)."""
    if text is None or not _LONG.fullmatch(text):
        raise ValueError(f"not a Java long: {text!r}")
    value = int(text)
    if not -_LONG_MAX - 1 <= value <= _LONG_MAX:
        raise ValueError(f"out of a Java long's range: {text!r}")
    return value


def list_str(items: Iterable[object]) -> str:
    """``List.toString()``: ``[a, b]``."""
    return "[" + ", ".join(jstr(i) for i in items) + "]"


def map_str(entries: Iterable[tuple[object, object]]) -> str:
    """``AbstractMap.toString()`` of entries in iteration order: ``{0=a, 1=b}``."""
    return "{" + ", ".join(f"{jstr(k)}={jstr(v)}" for k, v in entries) + "}"
