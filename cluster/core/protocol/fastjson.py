"""JSON text the way fastjson 1.x writes it (reference §1.9).

Two modes:
- plain (``standard=False``): maps keep their order, non-string keys are written
  bare (``{0:"a"}``), strings escape only what fastjson escapes by default;
- standard (``standard=True``, BrowserCompatible + MapSortField): every map is
  sorted by key, integer keys are quoted, ``/`` and every char >= 0x7F are escaped.

Beans are passed as dicts whose keys are already alphabetical. ``None`` values
inside dicts are omitted, as fastjson omits null properties and map values.
"""

from __future__ import annotations

import re
from typing import Any

_PLAIN_UNSAFE = re.compile(r'["\\\x00-\x1f\x7f-\x9f\u2028\u2029]')
_STANDARD_UNSAFE = re.compile(r'["\\/\x00-\x1f\x7f-\U0010ffff]')
_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
          "\r": "\\r", "/": "\\/"}


def _utf16_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04X}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"


def _escape_plain(m: re.Match[str]) -> str:
    ch = m.group()
    return _SHORT.get(ch) if ch != "/" and ch in _SHORT else _utf16_escape(ch)  # type: ignore[return-value]


def _escape_standard(m: re.Match[str]) -> str:
    ch = m.group()
    return _SHORT.get(ch) or _utf16_escape(ch)


def quote(s: str, standard: bool = False) -> str:
    """One JSON string literal with fastjson's escaping for the given mode."""
    if standard:
        return '"' + _STANDARD_UNSAFE.sub(_escape_standard, s) + '"'
    return '"' + _PLAIN_UNSAFE.sub(_escape_plain, s) + '"'


def _key(k: Any, standard: bool) -> str:
    if isinstance(k, str):
        return quote(k, standard)
    return f'"{k}"' if standard else str(k)


def _sort_key(k: Any) -> tuple[int, Any]:
    return (0, k) if isinstance(k, int) else (1, str(k))


def _write(v: Any, standard: bool, out: list[str]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, str):
        out.append(quote(v, standard))
    elif isinstance(v, int):
        out.append(str(v))
    elif isinstance(v, dict):
        _write_dict(v, standard, out)
    elif isinstance(v, (list, tuple, set, frozenset)):
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _write(item, standard, out)
        out.append("]")
    elif isinstance(v, float):
        out.append(repr(v))
    else:
        raise TypeError(f"cannot encode {type(v).__name__} as fastjson")


def _write_dict(d: dict[Any, Any], standard: bool, out: list[str]) -> None:
    items = sorted(d.items(), key=lambda kv: _sort_key(kv[0])) if standard else d.items()
    out.append("{")
    first = True
    for k, val in items:
        if val is None:
            continue
        if not first:
            out.append(",")
        first = False
        out.append(_key(k, standard))
        out.append(":")
        _write(val, standard, out)
    out.append("}")


def dumps(value: Any, standard: bool = False) -> str:
    out: list[str] = []
    _write(value, standard, out)
    return "".join(out)


def dumpb(value: Any, standard: bool = False) -> bytes:
    return dumps(value, standard).encode("utf-8")
