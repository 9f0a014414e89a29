"""A REGISTER_BROKER topic table read as one byte range per topic, so that a table differing
from the one a broker last applied in a few topics is decoded only in those topics.

fastjson writes a 4.9 broker's table after the DataVersion as
``,"topicConfigTable":{"T1":{…},"T2":{…}}}}``, each TopicConfig a flat object. Cut at every
``}``, the table gives one *piece* per topic: its entry without the closing brace, every piece
but the first starting with ``,``. A piece that holds a ``}`` of its own (in a string, or a
5.x ``attributes`` object) splits into fragments that do not read as an entry, so such a
table falls back to the full decode.

A piece is read alone as ``{`` piece ``}}`` and kept only when it is a plain 4.9 TopicConfig
keyed by its own topic (:func:`register_body.plain_entry`: exactly the seven fields with the types a
broker writes, hence no nesting and no number orjson cannot hold). The whole table is the
``,``-joined pieces, so when every piece reads alone as such an entry and no topic repeats,
the full decode of the body gives exactly these entries in this order: the caller may take
a piece it saw (byte for byte, at a position other than the first) in a table it decoded
before as the entry it was then (:class:`KnownPieces`).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping
from dataclasses import dataclass

import orjson

from cluster.core.protocol.register_body import (
    QueueFields,
    RegisterHead,
    decode_register_named_queues,
    plain_entry,
)

# (topic, QueueFields) of one table entry, and piece → entry for the pieces after the first.
Entry = tuple[str, QueueFields]
Entries = dict[bytes, Entry]

_TABLE_KEY = b',"topicConfigTable":{'
_END = b"}}}"  # closes the table, the wrapper and the body
# Beyond this share of pieces not seen before, the diff gives up for the full decode.
MAX_UNSEEN_SHARE = 1 / 8


# A piece read alone: the piece (None for the first, which is read in every table), its entry.
Decoded = tuple[bytes | None, str, QueueFields]


@dataclass(frozen=True, slots=True)
class TableDiff:
    """A table against the pieces of tables applied before it: only ``decoded`` can differ."""

    decoded: list[Decoded]

    def changed(self) -> dict[str, QueueFields]:
        return {topic: fields for _, topic, fields in self.decoded}


class KnownPieces:
    """Pieces read before, each with its entry, at most one per topic (the latest read).

    The caller keeps these only while the topic table holds every entry here.
    """

    __slots__ = ("entries", "_owners")

    def __init__(self, entries: Entries) -> None:
        self.entries = entries
        self._owners: dict[str, bytes] | None = None  # topic → its piece, made on first use

    def _owner_map(self) -> dict[str, bytes]:
        if self._owners is None:
            self._owners = {entry[0]: piece for piece, entry in self.entries.items()}
        return self._owners

    def owner(self, topic: str) -> bytes | None:
        """The piece kept for ``topic``."""
        return self._owner_map().get(topic)

    def learn(self, diff: TableDiff) -> None:
        """Keep the pieces ``diff`` read alone in place of the earlier ones of their topics."""
        owners = self._owner_map()
        for piece, topic, fields in diff.decoded:
            old = owners.pop(topic, None)
            if old is not None:
                del self.entries[old]
            if piece is not None:
                self.entries[piece] = (topic, fields)
                owners[topic] = piece


class PlainTable:
    """The topic table of a plain JSON body whose head :func:`register_body.register_head` read."""

    __slots__ = ("_body", "_start", "_version", "_now_ms", "_named", "_pieces")

    def __init__(self, body: bytes, head: RegisterHead, version: int, now_ms: int | None
                 ) -> None:
        self._body = body
        self._start = head.table_offset
        self._version = version
        self._now_ms = now_ms
        self._named = False
        self._pieces: list[bytes] | None | bool = False  # False: not cut yet

    def queues(self) -> dict[str, QueueFields]:
        """The full decode (:func:`register_body.decode_register_queues`, same BodyErrors)."""
        queues, self._named = decode_register_named_queues(self._body, self._version,
                                                           now_ms=self._now_ms)
        return queues

    def pieces(self) -> list[bytes] | None:
        """The table cut into pieces, or None when it is not laid out as fastjson writes it."""
        if self._pieces is False:
            self._pieces = self._cut()
        return self._pieces  # type: ignore[return-value]

    def _cut(self) -> list[bytes] | None:
        body, start = self._body, self._start + len(_TABLE_KEY)
        if (len(body) < start + len(_END) or not body.startswith(_TABLE_KEY, self._start)
                or not body.endswith(_END)):
            return None
        pieces = body[start : -len(_END)].split(b"}")
        return None if pieces.pop() else pieces

    def known(self, queues: Mapping[str, QueueFields]) -> KnownPieces | None:
        """The pieces after the first with their entries in ``queues``, this table's full
        decode; None unless each piece is exactly one plain entry keyed by its topic."""
        pieces = self.pieces()
        if pieces is None or not self._named or len(queues) != len(pieces):
            return None
        # Each entry holds at least one "{" and one "}"; with no other brace in the table,
        # piece i is entry i.
        braces = self._body.count(b"{", self._start + len(_TABLE_KEY))
        if braces != len(pieces):
            return None
        rest = itertools.islice(queues.items(), 1, None)
        return KnownPieces(dict(zip(itertools.islice(pieces, 1, None), rest, strict=True)))

    def diff(self, known: KnownPieces) -> TableDiff | None:
        """This table against ``known``; None when a piece not known is not a plain entry or
        a topic repeats (then decode it whole)."""
        pieces = self.pieces()
        if pieces is None:
            return None
        found: list[Entry | None] = list(map(known.entries.get, pieces))
        if found:
            found[0] = None
        if found.count(None) > MAX_UNSEEN_SHARE * len(found) + 1:
            return None  # decoding the whole body at once costs less
        decoded: list[Decoded] = []
        topics: set[str] = set()
        unseen = itertools.compress(range(len(found)), map(operator.is_, found,
                                                           itertools.repeat(None)))
        for i in unseen:
            entry = read_piece(pieces[i], i == 0)
            if entry is None or entry[0] in topics:
                return None
            topics.add(entry[0])
            decoded.append((pieces[i] if i else None, *entry))
        # Known pieces have one topic each; a topic read alone must not also be in a known
        # piece of this table.
        owners = [q for q in map(known.owner, topics) if q is not None]
        if owners and not set(pieces).isdisjoint(owners):
            return None
        return TableDiff(decoded)


def read_piece(piece: bytes, first: bool) -> Entry | None:
    """The entry of one piece read alone, or None when it is not a plain entry."""
    if not first:
        if piece[:1] != b",":
            return None
        piece = piece[1:]
    try:
        obj = orjson.loads(b"{" + piece + b"}}")
    except orjson.JSONDecodeError:
        return None
    if len(obj) != 1:
        return None
    ((key, cfg),) = obj.items()
    fields = plain_entry(key, cfg)
    return None if fields is None else (key, fields)
