"""Plain TopicConfigs: a topicConfigTable entry exactly as a broker writes it (4.9's seven
fields, each of the type written, or those and 5.x's ``attributes``, a map of strings),
whose QueueFields need none of the full decode's coercions (``register_body._topic_config``
gives the same for them)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import orjson

# What a QueueData takes from a TopicConfig: (perm, readQueueNums, topicSysFlag, writeQueueNums).
QueueFields = tuple[int, int, int, int]
# (topic, QueueFields) of one table entry.
Entry = tuple[str, QueueFields]

_QUEUE_ROW = operator.itemgetter(
    "order", "perm", "readQueueNums", "topicFilterType", "topicName", "topicSysFlag",
    "writeQueueNums",
)
_QUEUE_ROW_TYPES = (bool, int, int, str, str, int, int)


def plain_queue_table(table: dict[str, Any]) -> dict[str, QueueFields] | None:
    """QueueFields when every config is a plain TopicConfig (exactly the seven fields of 4.9,
    each of the type a broker writes, or those and the ``attributes`` of 5.x, a map of
    strings), checked column by column; None otherwise."""
    configs = list(table.values())
    if not configs:
        return {}
    if set(map(type, configs)) != {dict}:
        return None
    lengths = set(map(len, configs))
    if lengths == {len(_QUEUE_ROW_TYPES) + 1}:
        try:
            attributes = list(map(_ATTRIBUTES, configs))
        except KeyError:
            return None
        # most are empty: only the others are looked into
        if set(map(type, attributes)) != {dict} or not all(
                map(_plain_attributes, filter(None, attributes))):
            return None
    elif lengths != {len(_QUEUE_ROW_TYPES)}:
        return None
    try:
        columns = list(zip(*map(_QUEUE_ROW, configs), strict=True))
    except KeyError:
        return None
    typed = zip(columns, _QUEUE_ROW_TYPES, strict=True)
    if any(set(map(type, col)) != {typ} for col, typ in typed):
        return None
    _, perm, read, _, names, flag, write = columns
    topics = names if all(names) else [n or k for n, k in zip(names, table, strict=True)]
    return dict(zip(topics, zip(perm, read, flag, write, strict=True), strict=True))


_ATTRIBUTES = operator.itemgetter("attributes")


def _plain_attributes(attributes: Any) -> bool:
    """A 5.x TopicConfig's ``attributes`` as a broker writes them: a map of strings (which
    the full decode keeps as they are)."""
    return type(attributes) is dict and all(type(v) is str for v in attributes.values())


def plain_entry(key: str, cfg: Any) -> QueueFields | None:
    """QueueFields of one topicConfigTable entry when :func:`plain_queue_table` would take it
    as a plain TopicConfig (4.9's or 5.x's) and its topic is its key; None otherwise."""
    if type(cfg) is not dict:
        return None
    n = len(cfg)
    if n == _PLAIN_5X:
        attributes = cfg.get("attributes")
        if type(attributes) is not dict or (attributes and not _plain_attributes(attributes)):
            return None
    elif n != _PLAIN_49:
        return None
    try:
        row = _QUEUE_ROW(cfg)
    except KeyError:
        return None
    if tuple(map(type, row)) != _QUEUE_ROW_TYPES:
        return None
    _, perm, read, _, name, flag, write = row
    return (perm, read, flag, write) if (name or key) == key else None


_PLAIN_49 = len(_QUEUE_ROW_TYPES)  # 4.9's seven fields
_PLAIN_5X = _PLAIN_49 + 1  # and 5.x's attributes


def read_piece(piece: bytes, first: bool) -> Entry | None:
    """The entry of one piece of a topic table (``register_scan``: an entry without its
    closing brace, with a leading comma unless ``first``) read alone, or None when it is not
    a plain entry keyed by its topic."""
    if not first and piece[:1] != b",":
        return None
    try:
        obj = orjson.loads(b"{%s}}" % (piece if first else piece[1:]))
    except orjson.JSONDecodeError:
        return None
    if len(obj) != 1:
        return None
    ((key, cfg),) = obj.items()
    fields = plain_entry(key, cfg)
    return None if fields is None else (key, fields)


def read_pieces(pieces: Sequence[bytes], per: int) -> list[Entry] | None:
    """What :func:`read_piece` gives for each of ``pieces`` (the first of them the table's
    first), read in one decode; None unless every one is a plain entry keyed by its topic,
    read so, and no topic repeats.

    The pieces are cut from a table at every ``}``, ``per`` fragments each: joined by ``}``
    into one object, the text holds ``per`` braces ``}`` a piece. When it reads as one member
    a piece, each a plain TopicConfig of ``per`` objects (4.9's seven fields: one; 5.x's with
    its attributes: two) keyed by its topic, those members' own braces are every ``}`` of the
    text (none lies in a string), so member i closes where piece i ends: it is what piece i
    reads alone."""
    if not pieces:
        return []
    if any(p[:1] != b"," for p in pieces[1:]):
        return None
    try:
        obj = orjson.loads(b"{%s}}" % b"}".join(pieces))
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict or len(obj) != len(pieces):
        return None
    cfg = next(iter(obj.values()))
    if type(cfg) is not dict or len(cfg) != _PLAIN_49 - 1 + per:
        return None
    table = plain_queue_table(obj)
    if table is None or list(table) != list(obj):
        return None  # a topic named otherwise than its key
    return list(table.items())
