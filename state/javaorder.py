"""Iteration order of a Java `HashMap`/`HashSet` with String keys.

Some replies expose that order as data (GET_SYSTEM_TOPIC_LIST_FROM_NS picks the
first broker of `brokerAddrTable`); mirroring it keeps those replies identical
to Java's. Collisions inside one bucket keep the given order.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

_MAX_TABLE = 1 << 30
HASHES_KEPT = 1 << 17  # names whose hash is remembered (the 40,000 topics of a big layout fit)


@lru_cache(maxsize=HASHES_KEPT)
def string_hash(s: str) -> int:
    """`java.lang.String.hashCode()` as a signed 32-bit value (remembered: the same topic
    names are ordered again and again)."""
    h = 0
    if s.isascii():  # one UTF-16 code unit per character
        for unit in s.encode():
            h = (31 * h + unit) & 0xFFFFFFFF
    else:
        raw = s.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(raw), 2):
            h = (31 * h + (raw[i] << 8 | raw[i + 1])) & 0xFFFFFFFF
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
