"""The topic table's layout: topics of equal queue datas form a group whose value is stored
once, and a change made to every topic of a group is made to the group's value alone.

Stored shapes: topic → its group (8 bytes); topic_sets: group → {brokerName: QueueData} as
`state.store.dumps` writes it; topic_refs: group → how many topics it has (decimal);
topic_index: the XXH3-128 of a value → the group holding it, and `NEXT` → the last group
number given. The brokers of a cluster mostly carry the same topics with the same queue
numbers, so thousands of topics are one group: a broker's first registration adds its
entry to the group's value once, and no topic is rewritten; where a value per topic
rewrote every topic's queue datas of every broker (brokers² × topics bytes to set up a
cluster), and a value per content repointed every topic of it. Topics given a value that
is not their whole group's move to the group holding that value (found by the index), or
to a new one; a topic whose queue datas differ from all others has a group of its own:
that costs what a value per topic cost. Two groups can come to hold equal values (a
group's value changed in place to one another group holds): they stay two, each correct.

`state.store.Txn` reads and writes the topic table through this, so the rest of the
package sees topic → {brokerName: QueueData} as before. The topic counts are summed in
memory during a write transaction and written once at its end (`flush`): a group with no
topic left is deleted then.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import lmdb
import xxhash

TOPIC = "topic"
SETS = "topic_sets"
REFS = "topic_refs"
INDEX = "topic_index"
LAYOUT = (SETS, REFS, INDEX)  # the store's tables besides its named ones (`state.store.TABLES`)
VALUES_KEPT = 4096  # distinct values an iteration over the table remembers
NEXT = b"next"  # topic_index: the last group number given (no value hash is this short)


def key_of(raw: bytes) -> bytes:
    """The index key of a stored value."""
    return xxhash.xxh3_128_digest(raw)


class TopicSetError(RuntimeError):
    """The table is not consistent (a topic without its group's value, an index entry naming
    a group that holds another value)."""


class TopicSets:
    """The topic table within one LMDB transaction."""

    __slots__ = ("_txn", "_topic", "_sets", "_refs", "_index", "_delta")

    def __init__(self, txn: lmdb.Transaction, dbs: dict[str, Any]) -> None:
        self._txn = txn
        self._topic, self._sets, self._refs = dbs[TOPIC], dbs[SETS], dbs[REFS]
        self._index = dbs[INDEX]
        self._delta: dict[bytes, int] = {}  # group → topics added minus removed, not written yet

    def ref(self, topic: bytes) -> bytes | None:
        """`topic`'s group, None when the topic is absent."""
        ref = self._txn.get(topic, db=self._topic)
        return None if ref is None else bytes(ref)

    def refs(self, topics: list[bytes]) -> dict[bytes, bytes]:
        """The group of each of `topics`, by topic; absent topics are left out."""
        with self._txn.cursor(db=self._topic) as cur:  # the store's transactions give bytes
            return dict(cast(list[tuple[bytes, bytes]], cur.getmulti(topics)))

    def value(self, ref: bytes) -> bytes:
        """The value of group `ref`."""
        return self._held(ref)

    def _held(self, ref: bytes) -> bytes:
        raw = self._txn.get(ref, db=self._sets)
        if raw is None:
            raise TopicSetError(f"topic table: no value for group {ref.hex()}")
        return bytes(raw)

    def get(self, topic: bytes) -> bytes | None:
        ref = self.ref(topic)
        return None if ref is None else self.value(ref)

    def put(self, topic: bytes, raw: bytes) -> bool:
        """Make `raw` the value of `topic`; False when it was already."""
        ref = self.ref(topic)
        if ref is not None and self.value(ref) == raw:
            return False
        return self.put_many({(ref, raw): [topic]})

    def put_many(self, moves: dict[tuple[bytes | None, bytes], list[bytes]]) -> bool:
        """For each (group, a value other than its group's) → topics of that group (None:
        absent topics), make that value those topics', each topic named once; False when
        there was none. `moves` is consumed.

        The topics given one value that no group holds, all of their group's, change the
        group's value; the others move to the group holding that value, or to a new one."""
        whole = [(ref, raw) for (ref, raw), topics in moves.items()
                 if ref is not None and self._size(ref) == len(topics)
                 and self._txn.get(key_of(raw), db=self._index) is None]
        for ref, raw in whole:  # first, so the topics moving to such a value join them
            assert ref is not None
            self._rewrite(ref, raw)
            del moves[(ref, raw)]
        puts: list[tuple[bytes, bytes]] = []
        delta = self._delta
        for (old, raw), topics in moves.items():
            group = self._group_of(raw)
            puts.extend((topic, group) for topic in topics)
            delta[group] = delta.get(group, 0) + len(topics)
            if old is not None:
                delta[old] = delta.get(old, 0) - len(topics)
        if puts:
            with self._txn.cursor(db=self._topic) as cur:
                cur.putmulti(puts)
        return bool(whole or puts)

    def delete(self, topic: bytes) -> bool:
        old = self.ref(topic)
        if old is None:
            return False
        self._txn.delete(topic, db=self._topic)
        self._delta[old] = self._delta.get(old, 0) - 1
        return True

    def items(self) -> Iterator[tuple[bytes, bytes]]:
        """(topic, value) in topic order; the topics of a group share its bytes."""
        for topic, _, raw in self.entries():
            yield topic, raw

    def entries(self) -> Iterator[tuple[bytes, bytes, bytes]]:
        """(topic, group, value) in topic order; the topics of a group share its bytes."""
        values: dict[bytes, bytes] = {}
        with self._txn.cursor(db=self._topic) as cur:
            for topic, ref in cur.iternext():
                ref = bytes(ref)
                raw = values.get(ref)
                if raw is None:
                    if len(values) >= VALUES_KEPT:
                        values.clear()
                    raw = values[ref] = self.value(ref)
                yield bytes(topic), ref, raw

    def clear(self) -> None:
        for db in (self._topic, self._sets, self._refs, self._index):
            self._txn.drop(db, delete=False)
        self._delta.clear()

    def flush(self) -> None:
        """Write the topic counts summed since the last flush; delete the groups with no
        topic left."""
        for ref, delta in self._delta.items():
            count = self._stored_size(ref) + delta
            if count > 0:
                self._txn.put(ref, str(count).encode(), db=self._refs)
            else:
                self._txn.delete(ref, db=self._refs)
                self._unindex(ref, self._held(ref))
                self._txn.delete(ref, db=self._sets)
        self._delta.clear()

    def _stored_size(self, ref: bytes) -> int:
        held = self._txn.get(ref, db=self._refs)
        return 0 if held is None else int(held)

    def _size(self, ref: bytes) -> int:
        """How many topics group `ref` has in this transaction."""
        return self._stored_size(ref) + self._delta.get(ref, 0)

    def _rewrite(self, ref: bytes, raw: bytes) -> None:
        """Give group `ref` value `raw` in place."""
        self._unindex(ref, self._held(ref))
        self._txn.put(ref, raw, db=self._sets)
        self._txn.put(key_of(raw), ref, db=self._index, overwrite=False)

    def _unindex(self, ref: bytes, raw: bytes) -> None:
        """Forget that group `ref` holds `raw`, unless the index names another group for it."""
        key = key_of(raw)
        if self._txn.get(key, db=self._index) == ref:
            self._txn.delete(key, db=self._index)

    def _group_of(self, raw: bytes) -> bytes:
        """The group holding value `raw`, made when there is none."""
        key = key_of(raw)
        ref = self._txn.get(key, db=self._index)
        if ref is not None:
            ref = bytes(ref)
            if self._held(ref) != raw:
                raise TopicSetError(f"topic table: the index names group {ref.hex()} for a "
                                    "value it does not hold")
            return ref
        last = self._txn.get(NEXT, db=self._index)
        ref = (1 if last is None else int.from_bytes(last, "big") + 1).to_bytes(8, "big")
        self._txn.put(NEXT, ref, db=self._index)
        self._txn.put(ref, raw, db=self._sets)
        self._txn.put(key, ref, db=self._index)
        return ref
