"""Parse fastjson's non-standard JSON the way fastjson's default parser features accept it.

Java brokers and NameServers write integer map keys without quotes in plain
mode (reference §1.9), and fastjson reads with AllowUnQuotedFieldNames,
AllowSingleQuotes and AllowArbitraryCommas. ``loads_lenient`` tries strict JSON
first (orjson), then quotes bare keys (the common case, still fast), and last
parses the text with a small parser that accepts all three liberties. Numeric
bare keys stay strings, as they would after any JSON round trip.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

_BARE_KEY = re.compile(rb"([{,]\s*)([A-Za-z0-9_$.+-]+)(\s*:)")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER2 = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")  # fastjson2: +1, 007
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*|[0-9]+")
_WORDS = {"true": True, "false": False, "null": None}
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n",
            "r": "\r", "t": "\t"}
MAX_DEPTH = 64


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
    """orjson.loads, falling back to fastjson's lenient syntax. Raises ValueError."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    try:
        return orjson.loads(quote_bare_keys(raw))
    except orjson.JSONDecodeError as exc:
        return _parse(raw, exc, fastjson2=False)


def loads_fastjson2(data: bytes | str) -> Any:
    """orjson.loads, falling back to what fastjson2 (RocketMQ 5.x) also reads: single quotes,
    extra commas, comments, numbers with a sign or leading zeros; never unquoted field names.
    Raises ValueError."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return _parse(raw, exc, fastjson2=True)


def _parse(raw: bytes, first_error: orjson.JSONDecodeError, fastjson2: bool) -> Any:
    """The lenient parser, once orjson refused ``raw`` (``first_error``)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"not JSON (even leniently): {first_error}") from None
    return _Parser(text, fastjson2=fastjson2).document()


def _join_surrogates(s: str) -> str:
    """\\uD83D\\uDE00 escapes decode to two surrogates: make them one character."""
    if not any("\ud800" <= ch <= "\udfff" for ch in s):
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class _Parser:
    """Recursive descent over fastjson's lenient JSON (`fastjson2`: fastjson2's); raises
    ValueError."""

    def __init__(self, text: str, fastjson2: bool = False) -> None:
        self.text = text
        self.pos = 0
        self.fastjson2 = fastjson2

    def fail(self, what: str) -> ValueError:
        return ValueError(f"not JSON (even leniently): {what} at {self.pos}")

    def document(self) -> Any:
        value = self.value(0)
        self.space()
        if self.pos != len(self.text):
            raise self.fail("trailing characters")
        return value

    def space(self) -> None:
        text, pos = self.text, self.pos
        while True:
            while pos < len(text) and text[pos] in " \t\r\n\f\b":
                pos += 1
            if not self.fastjson2 or text[pos : pos + 1] != "/":
                break
            pos = self._comment(pos)
        self.pos = pos

    def _comment(self, pos: int) -> int:
        """Past a `/* */` or `//` comment at `pos` (fastjson2 skips them)."""
        if self.text.startswith("//", pos):
            end = self.text.find("\n", pos)
            return len(self.text) if end < 0 else end + 1
        if self.text.startswith("/*", pos):
            end = self.text.find("*/", pos + 2)
            if end >= 0:
                return end + 2
        self.pos = pos
        raise self.fail("bad comment")

    def peek(self) -> str:
        self.space()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def value(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail("nesting too deep")
        ch = self.peek()
        if ch == "{":
            return self.obj(depth + 1)
        if ch == "[":
            return self.array(depth + 1)
        if ch in "\"'":
            return self.string(ch)
        m = (_NUMBER2 if self.fastjson2 else _NUMBER).match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return _number(m.group()) if self.fastjson2 else orjson.loads(m.group())
        m = _NAME.match(self.text, self.pos)
        if m and m.group() in _WORDS:
            self.pos = m.end()
            return _WORDS[m.group()]
        raise self.fail("unexpected character")

    def commas(self) -> bool:
        """Skip any run of commas (AllowArbitraryCommas); True if there was one."""
        seen = False
        while self.peek() == ",":
            self.pos += 1
            seen = True
        return seen

    def obj(self, depth: int) -> dict[str, Any]:
        self.pos += 1
        out: dict[str, Any] = {}
        self.commas()
        while self.peek() != "}":
            key = self.key()
            if self.peek() != ":":
                raise self.fail("expected ':'")
            self.pos += 1
            out[key] = self.value(depth)
            if not self.commas() and self.peek() != "}":
                raise self.fail("expected ',' or '}'")
        self.pos += 1
        return out

    def key(self) -> str:
        ch = self.peek()
        if ch in "\"'":
            return self.string(ch)
        if self.fastjson2:
            raise self.fail("unquoted field name")
        m = _NAME.match(self.text, self.pos)
        if not m:
            raise self.fail("expected a field name")
        self.pos = m.end()
        return m.group()

    def array(self, depth: int) -> list[Any]:
        self.pos += 1
        out: list[Any] = []
        self.commas()
        while self.peek() != "]":
            out.append(self.value(depth))
            if not self.commas() and self.peek() != "]":
                raise self.fail("expected ',' or ']'")
        self.pos += 1
        return out

    def string(self, quote: str) -> str:
        text, pos = self.text, self.pos + 1
        out: list[str] = []
        while True:
            end = pos
            while end < len(text) and text[end] not in (quote, "\\"):
                end += 1
            if end >= len(text):
                raise self.fail("unterminated string")
            out.append(text[pos:end])
            if text[end] == quote:
                self.pos = end + 1
                return _join_surrogates("".join(out))
            pos = self._escape(end + 1, out)

    def _escape(self, pos: int, out: list[str]) -> int:
        text = self.text
        ch = text[pos] if pos < len(text) else ""
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
            return pos + 1
        if ch == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[pos + 1 : pos + 5]):
            out.append(chr(int(text[pos + 1 : pos + 5], 16)))
            return pos + 5
        self.pos = pos
        raise self.fail("bad escape")


def _number(text: str) -> int | float:
    """A number as fastjson2 reads one: an integer, else a double."""
    if "." in text or "e" in text or "E" in text:
        return float(text)
    return int(text)
