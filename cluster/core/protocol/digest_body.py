"""GET_NODE_DIGEST (60002, pynamesrv extension): digests of a node's tables, and their drill-down.

Pure: the hashing, the summaries and the request/reply bodies, shared by the node
(``state.digest`` feeds its stored entries) and by every reader that computes the
same digests from snapshot-shaped tables (``summary_of_tables``), so a node that
cannot be asked can still be compared.

A table is a set of *units*, the audit's key granularity: ``(key, sub, value)``
with ``sub`` the broker name of a topic's queue data, the key of a KV entry
within its namespace, and ``""`` for the flat tables. A unit's hash is XXH3-64
of ``table \\0 key \\0 sub \\0`` and the canonical JSON of its value (sorted
keys); a key's, bucket's, group's and table's digest is the sum of its units'
hashes modulo 2**64, so it does not depend on the order a node stored them in.
A key's bucket is XXH3-64 of the key modulo ``BUCKETS``. Format in
docs/architecture.md ("Digest request").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import xxhash

TABLES: tuple[str, ...] = ("cluster", "broker", "topic", "filter", "live", "kv")
NESTED = frozenset({"topic", "kv"})
BUCKETS = 256
MASK = (1 << 64) - 1
MAX_VALUES = 1000  # units whose values one request may ask for
_SORTED = orjson.OPT_SORT_KEYS
_hash = xxhash.xxh3_64_intdigest

Subs = list[tuple[str, bytes]]  # a key's units: (sub, canonical bytes of the value)


class DigestQueryError(ValueError):
    """A GET_NODE_DIGEST request body that does not have the documented shape."""


def hex16(h: int) -> str:
    return f"{h:016x}"


def canonical(value: Any) -> bytes:
    """Compact JSON with sorted keys: equal values give equal bytes."""
    return orjson.dumps(value, option=_SORTED)


def bucket_of(key: str) -> int:
    return _hash(key.encode()) % BUCKETS


def unit_hashes(table: str, key: str, subs: Subs) -> tuple[tuple[str, int], ...]:
    prefix = b"%s\0%s\0" % (table.encode(), key.encode())
    return tuple((sub, _hash(prefix + sub.encode() + b"\0" + canon)) for sub, canon in subs)


def subs_of(table: str, value: Any) -> Subs:
    """A snapshot-shaped entry's units."""
    if table in NESTED:
        return [(str(sub), canonical(v)) for sub, v in value.items()]
    return [("", canonical(value))]


def _add(table: dict[Any, list[int]], key: Any, n: int, h: int) -> None:
    """Add (or with n < 0 take away) n units summing to h; an emptied slot goes."""
    slot = table.get(key)
    if slot is None:
        table[key] = [n, h & MASK]
        return
    slot[0] += n
    slot[1] = (slot[1] + h) & MASK
    if slot[0] == 0:
        del table[key]


@dataclass(slots=True)
class _Entry:
    stored: int  # hash of the bytes the key was read from
    bucket: int
    units: tuple[tuple[str, int], ...]


class TableDigest:
    """One table's counts and digests, kept up to date key by key.

    ``refresh`` takes every ``(key, stored bytes)`` of the table; a key whose bytes
    did not change since the last refresh is neither decoded nor hashed again, so a
    node recomputes only what changed.
    """

    def __init__(self, table: str, decode: Callable[[bytes | memoryview], Subs]) -> None:
        self.table = table
        self.decode = decode
        self.entries: dict[str, _Entry] = {}
        self.units = 0
        self.total = 0
        self.buckets: dict[int, list[int]] = {}  # bucket -> [keys, digest]
        self.groups: dict[str, list[int]] = {}  # group -> [units, digest]
        self.in_bucket: dict[int, set[str]] = {}  # bucket -> its keys

    def refresh(self, items: Iterable[tuple[str, bytes | memoryview]]) -> TableDigest:
        seen: set[str] = set()
        for key, stored in items:
            seen.add(key)
            h = _hash(stored)
            old = self.entries.get(key)
            if old is not None and old.stored == h:
                continue
            if old is not None:
                self._account(key, old, -1)
            new = _Entry(h, bucket_of(key), unit_hashes(self.table, key, self.decode(stored)))
            self.entries[key] = new
            self._account(key, new, 1)
        if len(seen) != len(self.entries):
            for gone in self.entries.keys() - seen:
                self._account(gone, self.entries.pop(gone), -1)
        return self

    def _account(self, key: str, e: _Entry, sign: int) -> None:
        summed = sum(h for _, h in e.units)
        self.units += sign * len(e.units)
        self.total = (self.total + sign * summed) & MASK
        _add(self.buckets, e.bucket, sign, sign * summed)
        if sign > 0:
            self.in_bucket.setdefault(e.bucket, set()).add(key)
        else:
            self.in_bucket[e.bucket].discard(key)
        if self.table == "topic":
            for sub, h in e.units:
                _add(self.groups, sub, sign, sign * h)
        elif self.table == "kv" and e.units:
            _add(self.groups, key, sign * len(e.units), sign * summed)

    def units_in(self, buckets: frozenset[int]) -> dict[str, dict[str, str]]:
        """A drill-down's answer from the kept hashes: ``{key: {sub: digest}}``."""
        return {key: {sub: hex16(h) for sub, h in self.entries[key].units}
                for b in buckets for key in self.in_bucket.get(b, ())}

    def as_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "units": self.units, "keys": len(self.entries), "digest": hex16(self.total),
            "buckets": {str(b): hex16(h) for b, (_, h) in sorted(self.buckets.items())}}
        if self.table in NESTED:
            doc["groups"] = {g: [n, hex16(h)] for g, (n, h) in sorted(self.groups.items())}
        return doc


def unit_digests(table: str, keyed: Iterable[tuple[str, Subs]]) -> dict[str, dict[str, str]]:
    """``{key: {sub: unit digest}}``: a drill-down's answer."""
    return {key: {sub: hex16(h) for sub, h in unit_hashes(table, key, subs)}
            for key, subs in keyed}


def summary_reply(node: str, taken_at: int, tables: dict[str, Any],
                  heartbeats: Mapping[str, int] | None) -> dict[str, Any]:
    doc: dict[str, Any] = {"node": node, "takenAt": taken_at, "buckets": BUCKETS,
                           "tables": tables}
    if heartbeats is not None:
        doc["heartbeats"] = dict(heartbeats)
    return doc


def broker_rows(content: Mapping[str, Any]) -> int:
    """Broker addresses of a snapshot-shaped broker table: the rows clusterList prints."""
    return sum(len(bd.get("brokerAddrs") or {}) for bd in content.values())


def table_summary(table: str, content: Mapping[str, Any]) -> dict[str, Any]:
    """One snapshot-shaped table's summary, as a node gives it."""
    items = ((str(k), canonical(v)) for k, v in content.items())
    doc = TableDigest(table, lambda b: subs_of(table, orjson.loads(b))).refresh(items).as_json()
    if table == "broker":
        doc["rows"] = broker_rows(content)
    return doc


def summary_of_tables(node: str, taken_at: int, tables: Mapping[str, Any],
                      heartbeats: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The summary a node holding these snapshot-shaped tables gives (only the tables
    given: a reader that cannot see a table leaves it out)."""
    return summary_reply(node, taken_at, {t: table_summary(t, tables[t]) for t in TABLES
                                          if t in tables}, heartbeats)


def drill_of_tables(table: str, content: Mapping[str, Any], buckets: frozenset[int]
                    ) -> dict[str, Any]:
    keyed = ((str(k), subs_of(table, v)) for k, v in content.items()
             if bucket_of(str(k)) in buckets)
    return {"table": table, "units": unit_digests(table, keyed)}


def values_of_tables(table: str, content: Mapping[str, Any],
                     units: Iterable[tuple[str, str]]) -> dict[str, Any]:
    out = []
    for key, sub in units:
        value = content.get(key)
        if value is None:
            continue
        if table not in NESTED:
            if sub == "":
                out.append([key, sub, value])
        elif sub in value:
            out.append([key, sub, value[sub]])
    return {"table": table, "values": out}


# ---------------------------------------------------------------- requests

@dataclass(frozen=True, slots=True)
class DigestQuery:
    """What one request asks: a summary (``table`` None), a drill-down (``buckets``) or
    the canonical values of some units (``units``)."""

    table: str | None = None
    buckets: frozenset[int] = frozenset()
    units: tuple[tuple[str, str], ...] = ()
    heartbeats: bool = False


def encode_query(q: DigestQuery) -> bytes | None:
    if q.table is None:
        return orjson.dumps({"heartbeats": True}) if q.heartbeats else None
    if q.units:
        return orjson.dumps({"table": q.table, "values": [list(u) for u in q.units]})
    return orjson.dumps({"table": q.table, "buckets": sorted(q.buckets)})


def parse_query(body: bytes | None) -> DigestQuery:
    """The query of a request body (none: a summary); DigestQueryError on any other shape."""
    if not body:
        return DigestQuery()
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise DigestQueryError(f"body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise DigestQueryError("body is not a JSON object")
    table = doc.get("table")
    if table is None:
        return DigestQuery(heartbeats=doc.get("heartbeats") is True)
    if table not in TABLES:
        raise DigestQueryError(f"unknown table {table!r}; tables: {', '.join(TABLES)}")
    if "values" in doc:
        return DigestQuery(table, units=_units(doc["values"]))
    return DigestQuery(table, buckets=_buckets(doc.get("buckets")))


def _buckets(raw: Any) -> frozenset[int]:
    if not isinstance(raw, list) or not raw or not all(
            isinstance(b, int) and not isinstance(b, bool) and 0 <= b < BUCKETS for b in raw):
        raise DigestQueryError(f"buckets must be a non-empty list of integers 0..{BUCKETS - 1}")
    return frozenset(raw)


def _units(raw: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, list) or not raw or len(raw) > MAX_VALUES:
        raise DigestQueryError(f"values must list 1..{MAX_VALUES} [key, sub] pairs")
    out = []
    for u in raw:
        if not (isinstance(u, list) and len(u) == 2 and all(isinstance(p, str) for p in u)):
            raise DigestQueryError("each of values must be a [key, sub] pair of strings")
        out.append((u[0], u[1]))
    return tuple(out)
