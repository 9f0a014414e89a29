"""``java.util.Properties`` text: parse like ``Properties.load``, write like ``MixAll``.

Parsing follows the JDK ``LineReader`` / ``loadConvert`` rules:

* natural lines end at ``\\n``, ``\\r`` or ``\\r\\n`` (no other Unicode breaks);
* leading spaces, tabs and form feeds are skipped; blank lines and lines whose
  first non-blank char is ``#`` or ``!`` are ignored (a trailing backslash does
  not continue a comment);
* a line ending in an odd number of backslashes continues on the next natural
  line, whose leading blanks are skipped;
* the key ends at the first unescaped ``=``, ``:`` or blank; blanks and at most
  one ``=``/``:`` after it are skipped; trailing blanks of the value are kept;
* escapes: ``\\t \\n \\r \\f``, ``\\uXXXX`` (exactly four hex digits, otherwise
  :class:`PropertiesError`), any other ``\\c`` is ``c``.

Java's ``MixAll.string2Properties`` feeds ``Properties.load(InputStream)``, which
decodes bytes as ISO-8859-1; pass ``body.decode("latin-1")`` to reproduce that,
or ``body.decode("utf-8")`` for ``Properties.load(Reader)`` semantics.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

_TERMINATOR = re.compile(r"\r\n|\r|\n")
_BLANKS = " \t\f"
_KEY_END = re.compile(r"[=: \t\f]")
_ESCAPE = re.compile(r"\\(u(.{0,4})|.?)", re.S)
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
_SIMPLE = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class PropertiesError(ValueError):
    """Malformed properties text (Java: IllegalArgumentException from load)."""


def _natural_lines(text: str) -> Iterator[tuple[str, str]]:
    """(line, terminator) pairs; the last pair has an empty terminator."""
    pos = 0
    for m in _TERMINATOR.finditer(text):
        yield text[pos : m.start()], m.group()
        pos = m.end()
    yield text[pos:], ""


def _odd_backslashes(s: str) -> bool:
    return (len(s) - len(s.rstrip("\\"))) % 2 == 1


def _logical_lines(text: str) -> Iterator[str]:
    """The logical lines ``LineReader.readLine`` returns, escapes untouched."""
    end = len(text)
    pos = 0
    pending: str | None = None
    for line, term in _natural_lines(text):
        pos += len(line) + len(term)
        stripped = line.lstrip(_BLANKS)
        if pending is None and stripped[:1] in ("#", "!"):
            continue
        current = stripped if pending is None else pending + stripped
        pending = None
        if not current:
            continue
        odd = _odd_backslashes(stripped)
        if odd:
            current = current[:-1]
        if term == "" or (pos == end and len(term) == 1):
            yield current
        elif odd:
            pending = current
        else:
            yield current
    if pending is not None and pending != "":
        yield pending


def _unescape_match(m: re.Match[str]) -> str:
    body = m.group(1)
    if body.startswith("u"):
        digits = m.group(2)
        if not _HEX4.fullmatch(digits):
            raise PropertiesError("Malformed \\uxxxx encoding.")
        return chr(int(digits, 16))
    return _SIMPLE.get(body, body)


def _join_surrogates(s: str) -> str:
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out = _ESCAPE.sub(_unescape_match, s)
    return _join_surrogates(out) if _SURROGATE.search(out) else out


def _split_key(line: str) -> tuple[str, str]:
    """Raw key and raw value of one logical line, escapes untouched."""
    search_from = 0
    while True:
        m = _KEY_END.search(line, search_from)
        if m is None:
            return line, ""
        at = m.start()
        if not _odd_backslashes(line[:at]):
            break
        search_from = at + 1
    key = line[:at]
    rest = line[at:]
    has_sep = rest[0] in "=:"
    rest = rest[1:].lstrip(_BLANKS)
    if not has_sep and rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_BLANKS)
    return key, rest


def parse_properties(text: str) -> dict[str, str]:
    """Properties.load semantics; later duplicates win. Raises PropertiesError."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        raw_key, raw_value = _split_key(line)
        props[_unescape(raw_key)] = _unescape(raw_value)
    return props


def _java_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def format_properties(props: Mapping[str, str | None], sort: bool = True) -> str:
    """``MixAll.properties2String``: ``key=value\\n`` per non-null entry, unescaped."""
    keys = sorted(props, key=_java_order) if sort else list(props)
    return "".join(f"{k}={props[k]}\n" for k in keys if props[k] is not None)
