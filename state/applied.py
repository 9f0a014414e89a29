"""A broker's applied topic tables: what a master registered last, so the next table of
that name decodes and writes only what changed (4.9.8 applies every topic each time).

Stored shapes: applied → digest of the topic table a broker name last applied (`TopicTable`);
applied_queues → {topic: [perm, readQueueNums, topicSysFlag, writeQueueNums]} of the last
table that name applied whole, and applied_delta → the same for the topics its later
registrations changed, so the next table of that name touches only the topics whose fields
differ (topics a table leaves out keep their queue data, so the records may hold more topics
than the last table; each still holds what the topic table holds for that name);
applied_stamp → random bytes rewritten with those two records, by which a process knows the
records it remembers are still current.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from cluster.core.protocol.plain_config import QueueFields
from cluster.core.protocol.register_body import queue_fields
from cluster.core.protocol.register_scan import KnownPieces, PieceMemo, PlainTable, TableDiff
from cluster.core.protocol.table_memo import TableMemo
from state.store import (
    APPLIED,
    APPLIED_DELTA,
    APPLIED_QUEUES,
    APPLIED_STAMP,
    APPLIED_TABLES,
    Txn,
    dumps,
)


class TopicTable:
    """A registration's topic table as QueueFields per topic, decoded on first use.

    `digest`, when given, names the table's content: a broker name whose last applied
    table had the same digest already holds exactly these queue data (any other edit
    of the topic table empties the APPLIED records), so applying it again is skipped
    without decoding. `plain`, when given, is the same table read piece by piece: against
    the pieces of the table this name applied before, only the pieces that differ are
    decoded; a table whose pieces this process read before, in any broker's table, is not
    decoded whole (`_PIECES`), nor a large one whose very text another broker registered
    (`_TABLES`). The QueueFields share topic names and fields (`_shared`).
    """

    __slots__ = ("_load", "_make_digest", "_queues", "_digest", "plain", "_plan", "_known")

    def __init__(self, load: Callable[[], dict[str, QueueFields]],
                 digest: Callable[[], str] | None = None, plain: PlainTable | None = None
                 ) -> None:
        self._load = load
        self._make_digest = digest
        self._queues: dict[str, QueueFields] | None = None
        self._digest: str | None = None
        self.plain = plain
        self._plan: tuple[Applied, TableDiff | None] | None = None
        self._known: KnownPieces | None | bool = False  # False: not cut yet

    @classmethod
    def of_configs(cls, configs: Mapping[str, Mapping[str, Any]]) -> TopicTable:
        """From decoded TopicConfigs ({key: TopicConfig}); no digest."""
        return cls(lambda: queue_fields(configs))

    @classmethod
    def of_plain(cls, plain: PlainTable, digest: Callable[[], str]) -> TopicTable:
        return cls(plain.queues, digest, plain)

    def queues(self) -> dict[str, QueueFields]:
        if self._queues is not None:
            return self._queues
        plain = self.plain
        if plain is not None:
            self._queues = _TABLES.get(plain)
            if self._queues is not None:
                return self._queues
            self._queues = plain.queues_from(_PIECES)
        if self._queues is None:  # (else its entries are the memo's, shared)
            self._queues = _shared(self._load())
            known = self.known()
            if known is None:
                return self._queues  # not read piece by piece
            _PIECES.learn(known.entries)
        assert plain is not None  # (read piece by piece)
        _TABLES.keep(plain, self._queues)
        return self._queues

    def known(self) -> KnownPieces | None:
        """The pieces of a plain table after its first, each with its entry (computed
        once); None when it is not one (`PlainTable.known`)."""
        if self._known is False:
            self._known = None if self.plain is None else self.plain.known(self.queues())
        return self._known  # type: ignore[return-value]

    def digest(self) -> str | None:
        if self._digest is None and self._make_digest is not None:
            self._digest = self._make_digest()
        return self._digest

    def diff(self, applied: Applied) -> TableDiff | None:
        """This table against the pieces `applied` records, None when it must be decoded
        whole; computed once per record."""
        if self.plain is None or applied.pieces is None:
            return None
        if self._plan is None or self._plan[0] is not applied:
            self._plan = (applied, self.plain.diff(applied.pieces))
        return self._plan[1]


@dataclass(frozen=True, slots=True)
class Applied:
    """A broker name's APPLIED_QUEUES and APPLIED_DELTA records as this process read or wrote
    them: their APPLIED_STAMP (the records are current while the stored stamp is this one),
    the fields per topic they hold together, and pieces of the tables applied, each of whose
    entry they hold (None until a table read piece by piece was applied over earlier
    records)."""

    stamp: bytes | None
    queues: dict[str, QueueFields]
    delta_queues: dict[str, QueueFields]
    pieces: KnownPieces | None


# Applied records read or written by this process, by broker name (most recent last).
_APPLIED_MEMO: dict[str, Applied] = {}


# One tuple per distinct QueueFields held by the memo (`_shared`).
_FIELDS: dict[QueueFields, QueueFields] = {}


def already_applied(t: Txn, name: str, table: TopicTable) -> bool:
    stored = t.get(APPLIED, name)
    return stored is not None and table.digest() == stored


def topic_count(t: Txn, name: str, table: TopicTable) -> int:
    """How many topics `table` holds; not decoded when it is the table `name` applied last
    (its records then hold exactly its topics): a slave registers its master's table."""
    if already_applied(t, name, table):
        known = last_applied_queues(t, name)
        if known is not None:
            return len(known)
    return len(table.queues())


def apply_topic_table(t: Txn, name: str, table: TopicTable) -> None:
    if already_applied(t, name, table):
        return
    applied = last_applied(t, name)
    diff = None if applied is None else table.diff(applied)
    if applied is not None and diff is not None:
        _apply_diff(t, name, table, applied, diff)
        return
    queues = table.queues()
    _apply_queues(t, name, queues if applied is None else changed_queues(queues,
                                                                        applied.queues))
    _put_digest(t, name, table)
    t.put_raw(APPLIED_QUEUES, name, dumps(queues))
    t.delete(APPLIED_DELTA, name)
    # Pieces are kept once a name applies a second table: a first table may be its only one.
    pieces = None if applied is None else table.known()
    _remember_applied(name, Applied(_new_stamp(t, name), queues, {}, pieces))


def _apply_diff(t: Txn, name: str, table: TopicTable, applied: Applied, diff: TableDiff
                ) -> None:
    """Apply a table read piece by piece: only the pieces read alone can differ from the
    records. The table is not digested (that would cost more than the diff): APPLIED goes."""
    assert applied.pieces is not None
    # The records are updated in place below; until this transaction's are remembered, this
    # process reads them back from the store.
    _APPLIED_MEMO.pop(name, None)
    get = applied.queues.get
    changed = {topic: fields for topic, fields in diff.changed().items()
               if get(topic) != fields}
    _apply_queues(t, name, changed)
    t.delete(APPLIED, name)
    stamp, queues, delta_queues = applied.stamp, applied.queues, applied.delta_queues
    if changed:
        queues.update(changed)
        delta_queues.update(changed)
        if len(delta_queues) > DELTA_FOLD_SHARE * len(queues):
            delta_queues.clear()
            t.put_raw(APPLIED_QUEUES, name, dumps(queues))
            t.delete(APPLIED_DELTA, name)
        else:
            t.put_raw(APPLIED_DELTA, name, dumps(delta_queues))
        stamp = _new_stamp(t, name)
    applied.pieces.learn(diff)
    _remember_applied(name, Applied(stamp, queues, delta_queues, applied.pieces))


def _put_digest(t: Txn, name: str, table: TopicTable) -> None:
    digest = table.digest()
    if digest is None:
        t.delete(APPLIED, name)
    else:
        t.put(APPLIED, name, digest)


def changed_queues(queues: dict[str, QueueFields], last: Mapping[str, QueueFields]
                   ) -> dict[str, QueueFields]:
    """The topics of `queues` whose fields differ from `last` or that `last` lacks."""
    get = last.get
    return {topic: fields for topic, fields in queues.items() if get(topic) != fields}


def last_applied(t: Txn, name: str) -> Applied | None:
    """The applied records of `name`, while the topic table has changed through
    registrations alone since they were written (each topic in them then still holds their
    fields for `name`)."""
    stamp = t.get_raw(APPLIED_STAMP, name)
    memo = _APPLIED_MEMO.get(name)
    if memo is not None and stamp is not None and memo.stamp == stamp:
        return memo
    raw = t.get_raw(APPLIED_QUEUES, name)
    if raw is None:
        return None
    delta = t.get_raw(APPLIED_DELTA, name)
    queues = _shared(_fields_of(raw))
    delta_queues = {} if delta is None else _fields_of(delta)
    queues.update(delta_queues)
    applied = Applied(stamp, queues, delta_queues, None)
    if stamp is not None:
        _remember_applied(name, applied)
    return applied


def last_applied_queues(t: Txn, name: str) -> dict[str, QueueFields] | None:
    """QueueFields per topic that `name`'s applied records hold (see `last_applied`)."""
    applied = last_applied(t, name)
    return None if applied is None else applied.queues


def _fields_of(raw: bytes) -> dict[str, QueueFields]:
    stored = orjson.loads(raw)
    return dict(zip(stored, map(tuple, stored.values()), strict=True))


def _shared(queues: dict[str, QueueFields]) -> dict[str, QueueFields]:
    """`queues` with its topic names interned and equal fields one tuple: the applied
    records of the brokers of a cluster, which mostly carry the same topics, share them."""
    if len(_FIELDS) > FIELDS_KEPT:
        _FIELDS.clear()
    fields = list(queues.values())
    return dict(zip(map(sys.intern, queues), map(_FIELDS.setdefault, fields, fields),
                    strict=True))


def _new_stamp(t: Txn, name: str) -> bytes:
    """Mark `name`'s applied records as rewritten; random, so no two writes share a stamp."""
    stamp = os.urandom(STAMP_BYTES)
    t.put_raw(APPLIED_STAMP, name, stamp)
    return stamp


def _remember_applied(name: str, applied: Applied) -> None:
    _APPLIED_MEMO.pop(name, None)
    while len(_APPLIED_MEMO) >= APPLIED_MEMO_SIZE:
        del _APPLIED_MEMO[next(iter(_APPLIED_MEMO))]
    _APPLIED_MEMO[name] = applied


def _apply_queues(t: Txn, name: str, queues: Mapping[str, QueueFields]) -> None:
    """Put each topic's QueueData of `name`; topics whose QueueData is unchanged are not
    rewritten.

    A topic's value ({brokerName: QueueData}, as `dumps` writes it) is edited as bytes:
    `name`'s entry replaced where it stands or added at the end, exactly where decoding,
    assigning and encoding would put it, but without decoding the entries of the other
    brokers. Topics that share a value (`state.topicsets`) share its edit, made once."""
    head = dumps(name)
    entry_head = head + b':{"brokerName":' + head + b","
    entries: dict[QueueFields, bytes] = {}
    # (group, fields) → the topics to move to the edited value, or what else to do
    edits: dict[tuple[bytes | None, QueueFields], list[bytes] | bool] = {}
    moves: dict[tuple[bytes | None, bytes], list[bytes]] = {}
    topics = t.topics
    keys = list(map(str.encode, queues))
    refs = topics.refs(keys)
    pairs = list(zip(map(refs.get, keys), queues.values(), strict=True))
    for pair in dict.fromkeys(pairs):  # each (group, fields) once, in the table's order
        ref, fields = pair
        entry = entries.get(fields)
        if entry is None:
            entry = entries[fields] = entry_head + _ENTRY_FIELDS % fields
        raw = None if ref is None else topics.value(ref)
        new = _with_entry(raw, head, entry_head, entry)
        edits[pair] = _DECODE if new is None else _HELD if new is raw \
            else moves.setdefault((ref, new), [])
    if len(edits) == 1:  # a cluster's topics: one group, the same fields
        (edit,) = edits.values()
        if edit.__class__ is list:
            edit.extend(keys)
        elif edit is _DECODE:
            for topic, fields in queues.items():
                _apply_decoded(t, name, topic, fields)
    else:
        for key, pair, topic in zip(keys, pairs, queues, strict=True):
            edit = edits[pair]
            if edit.__class__ is list:
                edit.append(key)
            elif edit is _DECODE:  # not in the form expected: decode it
                _apply_decoded(t, name, topic, pair[1])
    t.put_topics(moves)


_DECODE, _HELD = True, False  # the outcomes of an edit besides a new value
_ENTRY_FIELDS = b'"perm":%d,"readQueueNums":%d,"topicSysFlag":%d,"writeQueueNums":%d}'
_ENTRY_TAIL = re.compile(rb'"perm":-?\d+,"readQueueNums":-?\d+,"topicSysFlag":-?\d+,'
                         rb'"writeQueueNums":-?\d+}')


def _with_entry(raw: bytes | None, head: bytes, entry_head: bytes, entry: bytes
                ) -> bytes | None:
    """`raw` with `entry` for its broker (`raw` itself when it holds that entry already), or
    None when `raw` holds the broker in a form this does not edit. In `dumps` output the
    name followed by a colon can only be a key (a string value is followed by a comma or a
    brace, and any quote inside a string is escaped)."""
    if raw is None:
        return b"{" + entry + b"}"
    at = raw.find(head + b":")
    view = memoryview(raw)  # one copy of the other entries, into the result
    if at < 0:
        return b"{" + entry + b"}" if raw == b"{}" else b"".join((view[:-1], b",", entry, b"}"))
    tail = _ENTRY_TAIL.match(raw, at + len(entry_head))
    if tail is None or not raw.startswith(entry_head, at):
        return None
    if view[at:tail.end()] == entry:
        return raw
    return b"".join((view[:at], entry, view[tail.end():]))


def _apply_decoded(t: Txn, name: str, topic: str, fields: QueueFields) -> None:
    perm, read, flag, write = fields
    qd = {"brokerName": name, "perm": perm, "readQueueNums": read, "topicSysFlag": flag,
          "writeQueueNums": write}
    qmap = t.get("topic", topic) or {}
    if qmap.get(name) != qd:
        qmap[name] = qd
        t.put("topic", topic, qmap, registering=True)


APPLIED_MEMO_SIZE = 32


# Pieces of topic tables, with their entries, read in any broker's table (`TopicTable`).
PIECES_MAX_BYTES = 8 << 20  # about 20 MB held: 47,000 pieces of 5.x TopicConfigs
_PIECES = PieceMemo(PIECES_MAX_BYTES)
# Whole tables of 256 KiB or more (about 1,500 5.x TopicConfigs) with what they read as: the
# masters of a cluster of 10,000 topics each register the same 1.7 MB table (`TopicTable`).
_TABLES = TableMemo(256 << 10, 12 << 20)


STAMP_BYTES = 16


FIELDS_KEPT = 4096


# An APPLIED_DELTA holding more than this share of a name's applied topics is folded into
# its APPLIED_QUEUES record.
DELTA_FOLD_SHARE = 1 / 8


def apply_read_only(t: Txn, name: str, queues: Mapping[str, QueueFields]) -> None:
    """A 5.x prime slave acting as master: its whole table, without write permission. The
    records go: they would stand for a table that was not applied as sent."""
    forget_applied(t, name)
    _apply_queues(t, name, {topic: (perm & ~PERM_WRITE, read, flag, write)
                            for topic, (perm, read, flag, write) in queues.items()})


def put_missing_queues(t: Txn, name: str, queues: Mapping[str, QueueFields],
                       read_only: bool = False) -> None:
    """5.x, a registration with an unchanged DataVersion: only the topics whose queue datas
    lack `name` get its QueueData (`read_only`: without write permission). The records
    stay as they are (each topic in them holds `name` already)."""
    known = last_applied_queues(t, name) or {}
    holds: dict[bytes, bool] = {}  # whether a value holds `name`, by its key
    missing = {}
    for topic, (perm, read, flag, write) in queues.items():
        if topic in known:
            continue
        ref = t.topics.ref(topic.encode())
        if ref is not None and ref not in holds:
            holds[ref] = name in orjson.loads(t.topics.value(ref))
        if ref is None or not holds[ref]:
            missing[topic] = (perm & ~PERM_WRITE if read_only else perm, read, flag, write)
    _apply_queues(t, name, missing)


PERM_WRITE = 2


def put_missing_table(t: Txn, name: str, table: TopicTable) -> None:
    """`put_missing_queues` of a table: when it reads piece by piece against `name`'s
    records, only its pieces read alone can name a topic the records lack."""
    applied = last_applied(t, name)
    diff = None if applied is None else table.diff(applied)
    put_missing_queues(t, name, table.queues() if diff is None else diff.changed())


def forget_applied(t: Txn, name: str) -> None:
    """`name` left the route tables: none of its applied records (stamp included) holds,
    and this process forgets what it remembered of them (a table of tens of thousands of
    topics would otherwise stay in memory until 32 other names pushed it out)."""
    for table in APPLIED_TABLES:
        t.delete(table, name)
    _APPLIED_MEMO.pop(name, None)
