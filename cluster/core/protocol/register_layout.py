"""Where a REGISTER_BROKER body in fastjson's layout holds its topic table, and where in the
table one topic's entry (a *piece*, :mod:`register_scan`) closes.

After the DataVersion: a 5.x ``mappingDataVersion`` (read as JSON, as the full decode reads
past it), then ``,"topicConfigTable":{``, the entries, the ``}`` closing the table, then
either ``}}`` (4.9) or 5.x's static-topic maps (``,"topicQueueMappingDetailMap":{…},
"topicQueueMappingInfoMap":{…}}}``), read each time as the wrapper's last members as the
full decode reads them; none may be a second ``topicConfigTable`` or ``dataVersion``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from cluster.core.protocol.lenient import loads_lenient

_TABLE_KEY = b',"topicConfigTable":{'
_END = b"}}"  # closes the wrapper and the body, after the table and its tail
_TAIL_KEY = b'},"topicQueueMappingDetailMap":'  # 5.x: the table's close, then its maps
# A 5.x tail is looked for this far from the end of the body (beyond: no cut, full decode).
MAX_TAIL = 64 * 1024
_NOT_IN_TAIL = frozenset(("dataVersion", "topicConfigTable"))
# A 5.x broker writes its static topics' DataVersion after the topics' one; it is no part of
# the topic table (and a tool may stamp it anew on every registration).
MAPPING_VERSION = re.compile(rb',"mappingDataVersion":\{[^{}]*\}')


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a body's table lies: its first piece at ``first``, its closing ``}`` at ``end``,
    ``per`` fragments per piece (1: 4.9's TopicConfig, 2: 5.x's with attributes)."""

    first: int
    end: int
    per: int


_MAPPING_VERSION_KEY = b',"mappingDataVersion":'


def table_layout(body: bytes, start: int) -> Layout | None:
    """Where the topic table of a body lies, ``start`` being the end of its DataVersion:
    after a 5.x ``mappingDataVersion`` (valid JSON, which the full decode reads past), then
    up to the 5.x tail (its maps, read here as the wrapper's last members) or, without one,
    to the ``}}}`` closing table, wrapper and body. None for any other layout; whether the
    table's pieces read as entries is for the caller to see."""
    at = start
    if body.startswith(_MAPPING_VERSION_KEY, at):
        m = MAPPING_VERSION.match(body, at)
        if m is None or not _json_object(body[at + len(_MAPPING_VERSION_KEY) : m.end()]):
            return None
        at = m.end()
    if not body.startswith(_TABLE_KEY, at):
        return None
    first = at + len(_TABLE_KEY)
    end = body.rfind(_TAIL_KEY, max(first, len(body) - MAX_TAIL))
    if end >= 0:
        if not body.endswith(_END):
            return None
        members = _tail_members(body[end + 2 : -len(_END)])
        if members is None or not _NOT_IN_TAIL.isdisjoint(members):
            return None
    elif body.endswith(b"}" + _END) and len(body) - len(_END) - 1 >= first:
        end = len(body) - len(_END) - 1
    else:
        return None
    fragment = body[first : body.find(b"}", first, end + 1)]
    per = fragment.count(b"{")
    return Layout(first, end, per) if per in (1, 2) else None


def _tail_members(text: bytes) -> dict[str, Any] | None:
    """The wrapper's members after the table, read as the full decode reads the body
    (fastjson's liberties: a static topic's ``currIdMap`` has bare integer keys)."""
    try:
        obj = loads_lenient(b"{" + text + b"}")
    except ValueError:
        return None
    return obj if type(obj) is dict else None


def _json_object(text: bytes) -> dict[str, Any] | None:
    """``text`` read as one strict JSON object, or None."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return obj if type(obj) is dict else None


def group(fragments: list[bytes], per: int) -> list[bytes] | None:
    """Fragments (a table cut at every ``}``) joined into pieces of ``per`` each; None when
    they do not come out even."""
    if per == 1:
        return fragments
    if len(fragments) % per:
        return None
    return list(map(b"}".join, zip(fragments[::2], fragments[1::2], strict=True)))


# Where a table's pieces close. With 4.9's layout every "}" closes a piece; with 5.x's
# (``per`` 2) a piece holds a "}" of its own, which closes its attributes: the text before
# that one, from the "}" before it, holds the "{" of the entry and of its attributes, the
# text before a piece's closing holds none. In a table cut into pieces that read as entries
# this tells them apart; anywhere else a wrong guess gives pieces that do not read so.


def _closes(body: bytes, at: int, p: int) -> bool:
    """Whether the "}" at ``p`` closes a piece (5.x), ``at`` being where a piece starts
    at or before it."""
    q = body.rfind(b"}", at, p)
    return body.find(b"{", q + 1 if q >= 0 else at, p) < 0


def close_before(body: bytes, at: int, hi: int, per: int) -> int:
    """The last "}" closing a piece in ``body[at:hi]``, ``at`` being where a piece starts;
    -1 when none."""
    p = body.rfind(b"}", at, hi)
    if per == 1 or p < 0 or _closes(body, at, p):
        return p
    return body.rfind(b"}", at, p)


def close_after(body: bytes, at: int, lo: int, hi: int, per: int) -> int:
    """The first "}" closing a piece in ``body[lo:hi]``, ``at`` <= ``lo`` being where a piece
    starts; -1 when none."""
    p = body.find(b"}", lo, hi)
    if per == 1 or p < 0 or _closes(body, at, p):
        return p
    return body.find(b"}", p + 1, hi)


def close_in_end(body: bytes, lo: int, end: int, per: int) -> int:
    """The first "}" closing a piece in ``body[lo:end]``, ``end`` being where the table
    closes, told apart by what follows it only (a piece after a piece's closing holds a
    "{" before its first "}"): the bytes from ``lo`` on are the same in both tables."""
    p = body.find(b"}", lo, end)
    if p < 0:
        return end - 1
    if per == 1:
        return p
    q = body.find(b"}", p + 1, end)
    if q < 0 or body.find(b"{", p + 1, q) >= 0:
        return p
    return q
