"""Digests of one node's tables (GET_NODE_DIGEST, ``cluster.core.protocol.digest_body``).

Every answer is taken in one read transaction. Each process keeps one
``TableDigest`` per table (``DigestCache``): a summary reads the stored bytes of
every key and decodes and hashes only the keys whose bytes changed since the
last summary, and the tables a route generation covers (all but ``live``) are
not read at all while the generation stays the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from cluster.core.protocol.digest_body import (
    NESTED,
    TABLES,
    DigestQuery,
    Subs,
    TableDigest,
    canonical,
    summary_reply,
)
from state.snapshot import BY_ADDRESS, CANONICAL, QUEUE_FIELDS, public_key
from state.store import Store, Txn

UNCACHED = frozenset({"live"})  # changes without a generation bump (heartbeats)


class _Canon:
    """Units of stored entries; a topic's queue data (four ints, few distinct values in a
    cluster) is serialised once per distinct value."""

    def __init__(self) -> None:
        self.queues: dict[tuple[int, ...], bytes] = {}

    def subs(self, table: str, stored: bytes | memoryview) -> Subs:
        value = orjson.loads(stored)
        if table == "topic":
            queue = self.queue
            return [(name, queue(qd)) for name, qd in value.items()]
        canon = CANONICAL[table](value)
        if table in NESTED:
            return [(sub, canonical(v)) for sub, v in canon.items()]
        return [("", canonical(canon))]

    def queue(self, qd: dict[str, Any]) -> bytes:
        fields = (qd["perm"], qd["readQueueNums"], qd["topicSysFlag"], qd["writeQueueNums"])
        b = self.queues.get(fields)
        if b is None:
            b = self.queues[fields] = canonical(dict(zip(QUEUE_FIELDS, fields, strict=True)))
        return b


@dataclass(slots=True)
class DigestCache:
    """This process's table digests and the generation they were last refreshed at."""

    generation: int = -1
    canon: _Canon = field(default_factory=_Canon)
    tables: dict[str, TableDigest] = field(default_factory=dict)

    def table(self, table: str) -> TableDigest:
        d = self.tables.get(table)
        if d is None:
            d = self.tables[table] = TableDigest(table, lambda b: self.canon.subs(table, b))
        return d


def _refresh(t: Txn, cache: DigestCache) -> None:
    """Bring every table digest to this transaction's state."""
    generation = t.generation()
    stale = [tb for tb in TABLES if tb in UNCACHED or generation != cache.generation]
    for table in stale:
        cache.table(table).refresh((public_key(table, key), stored)
                                   for key, stored in t.items_raw(table))
    cache.generation = generation


def _summaries(t: Txn, cache: DigestCache) -> dict[str, Any]:
    _refresh(t, cache)
    out = {table: cache.table(table).as_json() for table in TABLES}
    out["broker"]["rows"] = sum(len(bd["brokerAddrs"]) for _, bd in t.items("broker"))
    return out


def _drill(t: Txn, table: str, buckets: frozenset[int], cache: DigestCache) -> dict[str, Any]:
    """From the kept hashes, brought up to date first."""
    _refresh(t, cache)
    return {"table": table, "units": cache.table(table).units_in(buckets)}


def _values(t: Txn, table: str, units: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """``[key, sub, canonical value]`` of each asked unit the node holds."""
    out = []
    entries: dict[str, dict[str, Any] | None] = {}
    by_public = ({public_key(table, k): v for k, v in t.items(table)}
                 if table in BY_ADDRESS else None)
    for key, sub in units:
        if key not in entries:
            value = t.get(table, key) if by_public is None else by_public.get(key)
            canon = None if value is None else CANONICAL[table](value)
            entries[key] = None if canon is None else canon if table in NESTED else {"": canon}
        held = entries[key]
        if held is not None and sub in held:
            out.append([key, sub, held[sub]])
    return {"table": table, "values": out}


def answer(store: Store, node: str, now: int, query: DigestQuery,
           cache: DigestCache) -> dict[str, Any]:
    """The reply body of one GET_NODE_DIGEST request, from one read transaction."""
    with store.read() as t:
        if query.table is not None and query.units:
            return _values(t, query.table, query.units)
        if query.table is not None:
            return _drill(t, query.table, query.buckets, cache)
        beats = ({public_key("live", key): entry["lastUpdateTimestamp"]
                  for key, entry in t.items("live")}
                 if query.heartbeats else None)
        return summary_reply(node, now, _summaries(t, cache), beats)
