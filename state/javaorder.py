"""Iteration order of a Java `HashMap`/`HashSet` with String keys.

Some replies expose that order as data (GET_SYSTEM_TOPIC_LIST_FROM_NS picks the
first broker of `brokerAddrTable`); mirroring it keeps those replies identical
to Java's. Collisions inside one bucket keep the given order.
"""

from __future__ import annotations

from collections.abc import Iterable

_MAX_TABLE = 1 << 30


def string_hash(s: str) -> int:
    """`java.lang.String.hashCode()` as a signed 32-bit value."""
    h = 0
    for unit in s.encode("utf-16-be").hex(" ", 2).split():
        h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _table_size(n: int) -> int:
    size = 16
    while n > size * 3 // 4 and size < _MAX_TABLE:
        size *= 2
    return size


def hashmap_order(keys: Iterable[str]) -> list[str]:
    """`keys` in the order a Java HashMap built from them (by growth) iterates."""
    ks = list(keys)
    mask = _table_size(len(ks)) - 1

    def bucket(k: str) -> int:
        h = string_hash(k) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return sorted(ks, key=bucket)
