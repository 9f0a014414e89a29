"""The topic table's layout: each topic names its queue datas by key, and equal queue datas
are stored once.

Stored shapes: topic → the key of its value (16 bytes, the XXH3-128 of the value);
topic_sets: key → {brokerName: QueueData} as `state.store.dumps` writes it; topic_refs: key
→ how many topics name it (decimal). The brokers of a cluster mostly carry the same topics
with the same queue numbers, so thousands of topics name one value: a broker's first
registration adds its entry to that value once and repoints each topic (16 bytes), where
a value per topic rewrote every topic's queue datas of every broker (brokers² × topics
bytes to set up a cluster). A topic whose queue datas differ from all others has a value of
its own: that costs what a value per topic cost.

`state.store.Txn` reads and writes the topic table through this, so the rest of the
package sees topic → {brokerName: QueueData} as before. The reference counts are summed in
memory during a write transaction and written once at its end (`flush`): a value no topic
names any more is deleted then.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, cast

import lmdb
import xxhash

TOPIC = "topic"
SETS = "topic_sets"
REFS = "topic_refs"
LAYOUT = (SETS, REFS)  # the store's tables besides its named ones (`state.store.TABLES`)
VALUES_KEPT = 4096  # distinct values an iteration over the table remembers


def key_of(raw: bytes) -> bytes:
    """The key of a stored value."""
    return xxhash.xxh3_128_digest(raw)


class TopicSetError(RuntimeError):
    """The table is not consistent (a key without its value, two values with one key)."""


class TopicSets:
    """The topic table within one LMDB transaction."""

    __slots__ = ("_txn", "_topic", "_sets", "_refs", "_delta", "_stored")

    def __init__(self, txn: lmdb.Transaction, dbs: dict[str, Any]) -> None:
        self._txn = txn
        self._topic, self._sets, self._refs = dbs[TOPIC], dbs[SETS], dbs[REFS]
        self._delta: dict[bytes, int] = {}  # key → topics added minus removed, not written yet
        self._stored: set[bytes] = set()  # keys whose value this transaction holds

    def ref(self, topic: bytes) -> bytes | None:
        """The key of `topic`'s value, None when the topic is absent."""
        ref = self._txn.get(topic, db=self._topic)
        return None if ref is None else bytes(ref)

    def refs(self, topics: list[bytes]) -> dict[bytes, bytes]:
        """The key of each of `topics`' values, by topic; absent topics are left out."""
        with self._txn.cursor(db=self._topic) as cur:  # the store's transactions give bytes
            return dict(cast(list[tuple[bytes, bytes]], cur.getmulti(topics)))

    def value(self, ref: bytes) -> bytes:
        """The value of key `ref`."""
        raw = self._txn.get(ref, db=self._sets)
        if raw is None:
            raise TopicSetError(f"topic table: no value for key {ref.hex()}")
        return bytes(raw)

    def get(self, topic: bytes) -> bytes | None:
        ref = self.ref(topic)
        return None if ref is None else self.value(ref)

    def put(self, topic: bytes, raw: bytes) -> bool:
        """Make `raw` the value of `topic`; False when it was already."""
        return self.put_many(((topic, self.ref(topic), raw, key_of(raw)),))

    def put_many(self, changes: Iterable[tuple[bytes, bytes | None, bytes, bytes]]) -> bool:
        """For each (topic, the key of its value now, new value, its key), make that value
        the topic's; False when every topic had its value already."""
        delta, stored = self._delta, self._stored
        puts = []
        for topic, old, raw, new in changes:
            if old == new:
                continue
            if new not in stored:
                self._hold(new, raw)
            puts.append((topic, new))
            delta[new] = delta.get(new, 0) + 1
            if old is not None:
                delta[old] = delta.get(old, 0) - 1
        if puts:
            with self._txn.cursor(db=self._topic) as cur:
                cur.putmulti(puts)
        return bool(puts)

    def delete(self, topic: bytes) -> bool:
        old = self.ref(topic)
        if old is None:
            return False
        self._txn.delete(topic, db=self._topic)
        self._count(old, -1)
        return True

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """(topic, value) in topic order; the topics naming one value share its bytes."""
        values: dict[bytes, bytes] = {}
        with self._txn.cursor(db=self._topic) as cur:
            for topic, ref in cur.iternext():
                ref = bytes(ref)
                raw = values.get(ref)
                if raw is None:
                    if len(values) >= VALUES_KEPT:
                        values.clear()
                    raw = values[ref] = self.value(ref)
                yield bytes(topic), raw

    def clear(self) -> None:
        for db in (self._topic, self._sets, self._refs):
            self._txn.drop(db, delete=False)
        self._delta.clear()
        self._stored.clear()

    def flush(self) -> None:
        """Write the reference counts summed since the last flush; delete the values no
        topic names."""
        for ref, delta in self._delta.items():
            held = self._txn.get(ref, db=self._refs)
            count = (0 if held is None else int(held)) + delta
            if count > 0:
                self._txn.put(ref, str(count).encode(), db=self._refs)
            else:
                self._txn.delete(ref, db=self._refs)
                self._txn.delete(ref, db=self._sets)
                self._stored.discard(ref)
        self._delta.clear()

    def _hold(self, ref: bytes, raw: bytes) -> None:
        """Store value `raw` under `ref` unless it is stored; a different value stored under
        the same key fails the transaction."""
        held = self._txn.get(ref, db=self._sets)
        if held is None:
            self._txn.put(ref, raw, db=self._sets)
        elif held != raw:
            raise TopicSetError(f"topic table: two values with key {ref.hex()}")
        self._stored.add(ref)

    def _count(self, ref: bytes, delta: int) -> None:
        self._delta[ref] = self._delta.get(ref, 0) + delta
