"""Parse fastjson's non-standard JSON: bare (unquoted) object keys such as ``{0:"a"}``.

Java brokers and NameServers write integer map keys without quotes in plain
mode (reference §1.9). ``loads_lenient`` quotes bare keys outside string
literals and hands the result to orjson; numeric bare keys stay strings, as
they would after any JSON round trip.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_BARE_KEY = re.compile(rb"([{,]\s*)([A-Za-z0-9_$.+-]+)(\s*:)")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def quote_bare_keys(data: bytes) -> bytes:
    out: list[bytes] = []
    pos = 0
    for m in _STRING.finditer(data):
        out.append(_BARE_KEY.sub(rb'\1"\2"\3', data[pos : m.start()]))
        out.append(m.group())
        pos = m.end()
    out.append(_BARE_KEY.sub(rb'\1"\2"\3', data[pos:]))
    return b"".join(out)


def loads_lenient(data: bytes | str) -> Any:
    """orjson.loads, falling back to quoting bare keys. Raises ValueError."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        return orjson.loads(quote_bare_keys(raw))
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON (even leniently): {exc}") from exc
