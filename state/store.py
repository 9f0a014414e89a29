"""The node's shared state: one LMDB environment (on /dev/shm) with a sub-database per table.

Several processes open the same environment. Readers take one read
transaction per request (a consistent multi-table view that never waits for a
writer); writers are serialized by LMDB's robust process-shared lock, so a
writer killed at any instruction leaves the last committed state and no held
lock behind. The environment is opened without fsync: it outlives the processes
of a node (a restart on the same data dir reopens it, `state.restore`) but not
the machine; the KV file is made durable separately (`state.kvconfig`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import lmdb
import orjson

from state import topicsets

TABLES: tuple[str, ...] = (
    "topic", "broker", "cluster", "live", "filter", "channel", "kv", "config", "meta",
    "applied", "applied_queues", "applied_delta", "applied_stamp", "mapping",
)
# "mapping": topic → {brokerName: TopicQueueMappingInfo} of static topics (5.x).
# "topic": topic → {brokerName: QueueData} as read and written here; stored as
# `state.topicsets` lays it out (with "topic_sets", "topic_refs" and "topic_index").
# Tables whose content is visible in route replies: a real change bumps meta["gen"], which
# empties every cache of route replies. "kv" and "config" count too: with
# orderMessageEnable, a reply carries the topic's ORDER_TOPIC_CONFIG entry.
ROUTE_TABLES = frozenset({"topic", "broker", "cluster", "filter", "kv", "config", "mapping"})
# brokerName → digest of the topic table that broker last applied (state.route);
# brokerName → the QueueData fields per topic of a table it applied whole; brokerName → the
# fields of the topics its later registrations changed since (applied incrementally);
# brokerName → a random stamp rewritten with either of the last two, so a process that
# remembers them knows they are still current without reading them. An entry holds only
# while the topic table changed through registrations alone: any other change of the topic
# table empties all four tables in the same transaction.
APPLIED = "applied"
APPLIED_QUEUES = "applied_queues"
APPLIED_DELTA = "applied_delta"
APPLIED_STAMP = "applied_stamp"
APPLIED_TABLES = (APPLIED, APPLIED_QUEUES, APPLIED_DELTA, APPLIED_STAMP)
TOPIC = topicsets.TOPIC
MAX_READERS = 256
# meta["format"]: the layout of the tables; a store of another layout is not reopened
FORMAT = 3
DEFAULT_MAP_SIZE = 256 * 1024 * 1024
_OPTS = orjson.OPT_NON_STR_KEYS


def dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=_OPTS)


class Txn:
    """One LMDB transaction with JSON values and str keys, per named table."""

    __slots__ = ("_txn", "_dbs", "route_changed", "_applied_cleared", "_topics")

    def __init__(self, txn: lmdb.Transaction, dbs: dict[str, Any]) -> None:
        self._txn = txn
        self._dbs = dbs
        self.route_changed = False
        self._applied_cleared = False
        self._topics: topicsets.TopicSets | None = None

    @property
    def topics(self) -> topicsets.TopicSets:
        """The topic table's layout in this transaction."""
        if self._topics is None:
            self._topics = topicsets.TopicSets(self._txn, self._dbs)
        return self._topics

    def get(self, table: str, key: str) -> Any:
        raw = self._txn.get(key.encode(), db=self._dbs[table])
        if raw is not None and table == TOPIC:  # the topic's group (`state.topicsets`)
            raw = self._txn.get(raw, db=self._dbs[topicsets.SETS])
            if raw is None:
                raise topicsets.TopicSetError(f"topic table: no value for {key!r}")
        return None if raw is None else orjson.loads(raw)

    def get_raw(self, table: str, key: str) -> bytes | None:
        """The stored JSON text of `key`, undecoded."""
        if table == TOPIC:
            return self.topics.get(key.encode())
        raw = self._txn.get(key.encode(), db=self._dbs[table])
        return None if raw is None else bytes(raw)

    def put(self, table: str, key: str, value: Any, *, registering: bool = False) -> None:
        """Store `value`; an identical value is not rewritten (no spurious generation bump).

        `registering` marks a topic-table write made by a broker applying its own
        registered topic table, which keeps the APPLIED records valid.
        """
        self.put_raw(table, key, dumps(value), registering=registering)

    def put_raw(self, table: str, key: str, raw: bytes, *, registering: bool = False,
                differs: bool = False) -> None:
        """`put` of a value already encoded with `dumps`; `differs`: the caller knows it is
        not the stored value (which is then not read to compare)."""
        db = self._dbs[table]
        k = key.encode()
        if table == TOPIC:
            if self.topics.put(k, raw):
                self._changed(table, registering)
            return
        if not differs and self._txn.get(k, db=db) == raw:
            return
        self._txn.put(k, raw, db=db)
        self._changed(table, registering)

    def put_topics(self, moves: dict[tuple[bytes | None, bytes], list[bytes]], *,
                   registering: bool = True) -> None:
        """Writes to the topic table: (group, new value) → the topics of that group to give
        that value, each topic once (`topicsets.TopicSets.put_many`); the caller read the
        groups. `registering`: as for `put`."""
        if self.topics.put_many(moves):
            self._changed(TOPIC, registering)

    def delete(self, table: str, key: str) -> bool:
        if table == TOPIC:
            removed = self.topics.delete(key.encode())
            if removed:
                self._changed(table, False)
            return removed
        removed = self._txn.delete(key.encode(), db=self._dbs[table])
        if removed:
            self._changed(table, False)
        return bool(removed)

    def _changed(self, table: str, registering: bool) -> None:
        if table in ROUTE_TABLES:
            self.route_changed = True
        if table in APPLIED_TABLES:
            self._applied_cleared = False
        elif table == "topic" and not registering and not self._applied_cleared:
            for applied in APPLIED_TABLES:
                self._txn.drop(self._dbs[applied], delete=False)
            self._applied_cleared = True

    def items(self, table: str, prefix: str = "") -> Iterator[tuple[str, Any]]:
        """(key, value) pairs in key order, optionally only keys starting with `prefix`."""
        p = prefix.encode()
        if table == TOPIC:
            for k, raw in self.topics.items():
                if k.startswith(p):
                    yield k.decode(), orjson.loads(raw)
            return
        with self._txn.cursor(db=self._dbs[table]) as cur:
            ok = cur.set_range(p) if p else cur.first()
            while ok:
                k = bytes(cur.key())
                if not k.startswith(p):
                    break
                yield k.decode(), orjson.loads(cur.value())
                ok = cur.next()

    def items_raw(self, table: str) -> Iterator[tuple[str, bytes | memoryview]]:
        """(key, encoded value) pairs in key order: a scan that looks for a few values
        decodes only those."""
        if table == TOPIC:
            for topic, raw in self.topics.items():
                yield topic.decode(), raw
            return
        with self._txn.cursor(db=self._dbs[table]) as cur:
            for k, v in cur.iternext():
                yield bytes(k).decode(), v

    def clear(self, table: str) -> None:
        """Empty `table` (a route table's generation bumps)."""
        if table == TOPIC:
            self.topics.clear()
        else:
            self._txn.drop(self._dbs[table], delete=False)
        if table in ROUTE_TABLES:
            self.route_changed = True

    def count(self, table: str) -> int:
        """How many keys `table` holds (the topic table: how many topics), without reading
        them."""
        return int(self._txn.stat(self._dbs[table])["entries"])

    def keys(self, table: str) -> list[str]:
        with self._txn.cursor(db=self._dbs[table]) as cur:
            return [bytes(k).decode() for k in cur.iternext(keys=True, values=False)]

    def generation(self) -> int:
        return self.get("meta", "gen") or 0


class Reading:
    """``with store.read() as t``: a read-only transaction, aborted on leaving. A class, not
    a generator: the I/O worker opens one per first route lookup."""

    __slots__ = ("_env", "_dbs", "_txn")

    def __init__(self, env: lmdb.Environment, dbs: dict[str, Any]) -> None:
        self._env = env
        self._dbs = dbs

    def __enter__(self) -> Txn:
        self._txn = self._env.begin(write=False, buffers=False)
        return Txn(self._txn, self._dbs)

    def __exit__(self, *exc: object) -> None:
        self._txn.abort()


class Store:
    """An opened environment. `create` in the controller, `open` in every worker after spawn."""

    def __init__(self, path: str | os.PathLike[str], env: lmdb.Environment,
                 dbs: dict[str, Any]) -> None:
        self.path = os.fspath(path)
        self.env = env
        self._dbs = dbs

    @classmethod
    def create(cls, path: str | os.PathLike[str], map_size: int = DEFAULT_MAP_SIZE) -> Store:
        """Wipe whatever is at `path` and create an empty store there."""
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path, mode=0o700)
        store = cls._open(path, map_size, create=True)
        with store.write() as t:
            t.put("meta", "format", FORMAT)
        return store

    @classmethod
    def reopen(cls, path: str | os.PathLike[str]) -> Store | None:
        """The store a previous run left at `path`, or None when there is none, it cannot be
        opened, or its layout is not this version's `FORMAT`."""
        if not os.path.isfile(os.path.join(path, "data.mdb")):
            return None
        try:
            store = cls._open(path, 0, create=False)
        except lmdb.Error:
            return None
        try:
            store.reader_check()
            with store.read() as t:
                if t.get("meta", "format") == FORMAT:
                    return store
        except (lmdb.Error, ValueError):
            pass
        store.close()
        return None

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Store:
        """Open an existing store; the map size recorded by the creator is used."""
        if not os.path.isdir(path):
            raise FileNotFoundError(f"no store at {path}")
        return cls._open(path, 0, create=False)

    @classmethod
    def _open(cls, path: str | os.PathLike[str], map_size: int, create: bool) -> Store:
        env = lmdb.open(
            os.fspath(path), map_size=map_size, subdir=True, create=create,
            max_dbs=len(TABLES) + len(topicsets.LAYOUT) + 2, max_readers=MAX_READERS, lock=True,
            sync=False, metasync=False, readahead=False, meminit=False,
        )
        try:
            dbs = {name: env.open_db(name.encode(), create=create)
                   for name in (*TABLES, *topicsets.LAYOUT)}
        except lmdb.Error:
            env.close()
            raise
        return cls(path, env, dbs)

    def read(self) -> Reading:
        """A read transaction, for ``with``."""
        return Reading(self.env, self._dbs)

    @contextmanager
    def write(self) -> Iterator[Txn]:
        """A write transaction; commits on normal exit, aborts on exception."""
        with self.env.begin(write=True) as txn:
            t = Txn(txn, self._dbs)
            yield t
            if t._topics is not None:
                t._topics.flush()
            if t.route_changed:
                txn.put(b"gen", dumps(t.generation() + 1), db=self._dbs["meta"])
        if t._topics is not None:
            t._topics.committed()

    def generation_token(self) -> bytes | None:
        """The route generation as stored, to compare for equality; one short read."""
        txn = self.env.begin(db=self._dbs["meta"])  # no `with`: this is read per received chunk
        try:
            return txn.get(b"gen")
        finally:
            txn.abort()

    def reader_check(self) -> int:
        """Free reader slots of dead processes; returns how many were freed."""
        return int(self.env.reader_check())

    def close(self) -> None:
        self.env.close()  # idempotent

    def destroy(self) -> None:
        """Close and remove the store's files."""
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)
