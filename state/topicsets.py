"""The topic table's layout: topics of equal queue datas form a group whose value is stored
once, and a change made to every topic of a group is made to the group's value alone.

Stored shapes: topic → its group (8 bytes); topic_sets: group → {brokerName: QueueData} as
`state.store.dumps` writes it; topic_refs: group → how many topics it has (decimal);
topic_index: the XXH3-128 of a value → the group holding it, `NEXT` → the last group number
given, and `STAMP` → random bytes rewritten by every write transaction that adds, removes or
regroups a topic. The brokers of a cluster mostly carry the same topics with the same queue
numbers, so thousands of topics are one group: a broker's first registration adds its entry
to the group's value once, and no topic is rewritten; where a value per topic rewrote every
topic's queue datas of every broker (brokers² × topics bytes to set up a cluster), and a
value per content repointed every topic of it. Topics given a value that is not their whole
group's move to the group holding that value (found by the index), or to a new one; a topic
whose queue datas differ from all others has a group of its own: that costs what a value per
topic cost. Two groups can come to hold equal values (a group's value changed in place to
one another group holds): they stay two, each correct.

`state.store.Txn` reads and writes the topic table through this, so the rest of the package
sees topic → {brokerName: QueueData} as before. A process remembers the groups of the topics
it looked up while `STAMP` stays what it read (`refs`): a cluster's brokers joining the one
group of their topics change its value, not a topic's group, so the next broker's thousands
of topics are not looked up again. A write transaction of its own that regroups topics
carries what it remembers to the new `STAMP`, with the transaction's moves (`committed`):
brokers that each bring new topics (a topic on a few of a thousand brokers) look up only
those. The topic counts are summed in memory during a write
transaction and written once at its end (`flush`): a group with no topic left is deleted
then.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
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
STAMP = b"stamp"  # topic_index: rewritten when a topic is added, removed or regrouped
STAMP_BYTES = 16
# Topics whose group a process remembers (`refs`), about 10 MB of the write worker's; beyond,
# it forgets them all and starts again. Brokers that share topics register one after the
# other, so a broker's table is mostly in what the last few brought: at 100,000 topics on
# 1,000 brokers this forgets twice a setup, where remembering every topic held 19 MB more. A
# table of more topics than this is looked up whole each time it is applied whole.
GROUPS_KEPT = 50_000


class _KnownGroups:
    """The groups of topics (None: absent) this process read while the stored `STAMP` was
    ``stamp``; None: nothing known."""

    __slots__ = ("stamp", "groups")

    def __init__(self) -> None:
        self.stamp: bytes | None = None
        self.groups: dict[bytes, bytes | None] = {}

    def forget(self, stamp: bytes | None = None) -> None:
        self.stamp = stamp
        self.groups = {}  # a new one: a caller may still hold the last


_KNOWN = _KnownGroups()


def key_of(raw: bytes) -> bytes:
    """The index key of a stored value."""
    return xxhash.xxh3_128_digest(raw)


class TopicSetError(RuntimeError):
    """The table is not consistent (a topic without its group's value, an index entry naming
    a group that holds another value)."""


class TopicSets:
    """The topic table within one LMDB transaction."""

    __slots__ = ("_txn", "_topic", "_sets", "_refs", "_index", "_delta", "_moved", "_known",
                 "_stamp")

    def __init__(self, txn: lmdb.Transaction, dbs: dict[str, Any]) -> None:
        self._txn = txn
        self._topic, self._sets, self._refs = dbs[TOPIC], dbs[SETS], dbs[REFS]
        self._index = dbs[INDEX]
        self._delta: dict[bytes, int] = {}  # group → topics added minus removed, not written yet
        # The topics added, removed (None) or regrouped in this transaction, with their group;
        # None when the table was cleared.
        self._moved: dict[bytes, bytes | None] | None = {}
        self._known: _KnownGroups | None = None  # `_memo`
        self._stamp: bytes | None = None  # the `STAMP` `flush` wrote

    def ref(self, topic: bytes) -> bytes | None:
        """`topic`'s group, None when the topic is absent."""
        ref = self._txn.get(topic, db=self._topic)
        return None if ref is None else bytes(ref)

    def refs(self, topics: list[bytes]) -> Mapping[bytes, bytes | None]:
        """The group of each of `topics` (None: absent), to look up with ``get``; it may
        hold other topics too. Remembered while the stored `STAMP` stays the same."""
        moved = self._moved
        known = None if moved is None else self._memo()
        if known is None:  # the table cleared in this transaction, or never a stamp
            return self._looked_up(topics)
        assert moved is not None
        groups = known.groups
        missing = set(topics).difference(groups, moved)
        if missing:
            if len(groups) + len(missing) > GROUPS_KEPT:
                known.forget(known.stamp)
                groups = known.groups
                missing = set(topics).difference(moved)
            # as at the transaction's start: none of them moved in it
            groups.update(dict.fromkeys(missing))
            groups.update(self._looked_up(missing))
        if not moved:
            return groups
        return {topic: moved[topic] if topic in moved else groups[topic] for topic in topics}

    def _memo(self) -> _KnownGroups | None:
        """The groups this process remembers, holding for the stored `STAMP` as this
        transaction found it (only `flush` writes it); None when there is no stamp."""
        if self._known is None:
            stamp = self._txn.get(STAMP, db=self._index)
            if stamp is None:
                return None
            known = _KNOWN
            if known.stamp != stamp:
                known.forget(bytes(stamp))
            self._known = known
        return self._known

    def _looked_up(self, topics: Iterable[bytes]) -> dict[bytes, bytes]:
        """The group of each of `topics` as stored; absent topics are left out."""
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
            if self._moved is not None:
                self._moved.update(puts)
            with self._txn.cursor(db=self._topic) as cur:
                cur.putmulti(puts)
        return bool(whole or puts)

    def delete(self, topic: bytes) -> bool:
        old = self.ref(topic)
        if old is None:
            return False
        if self._moved is not None:
            self._moved[topic] = None
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
        self._moved = None
        for db in (self._topic, self._sets, self._refs, self._index):
            self._txn.drop(db, delete=False)
        self._delta.clear()

    def flush(self) -> None:
        """Write the topic counts summed since the last flush; delete the groups with no
        topic left; a new `STAMP` when a topic was added, removed or regrouped."""
        if self._moved is None or self._moved:
            self._stamp = os.urandom(STAMP_BYTES)
            self._txn.put(STAMP, self._stamp, db=self._index)
        for ref, delta in self._delta.items():
            count = self._stored_size(ref) + delta
            if count > 0:
                self._txn.put(ref, str(count).encode(), db=self._refs)
            else:
                self._txn.delete(ref, db=self._refs)
                self._unindex(ref, self._held(ref))
                self._txn.delete(ref, db=self._sets)
        self._delta.clear()

    def committed(self) -> None:
        """The transaction committed: what this process remembers of the groups holds for
        the new `STAMP`, with this transaction's moves."""
        known, moved = self._known, self._moved
        if self._stamp is None or known is None:
            return
        if moved is None or len(known.groups) + len(moved) > GROUPS_KEPT:
            known.forget()
            return
        known.groups.update(moved)
        known.stamp = self._stamp

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
