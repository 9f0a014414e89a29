"""Iteration order of a Java `HashMap`/`HashSet` or `ConcurrentHashMap` with String keys.

Some replies expose that order as data (GET_SYSTEM_TOPIC_LIST_FROM_NS picks the
first broker of `brokerAddrTable`); mirroring it keeps those replies identical
to Java's. Collisions inside one bucket keep the given order.
"""

from __future__ import annotations

import functools
import sys
from array import array
from collections.abc import Iterable

_MAX_TABLE = 1 << 30


def string_hash(s: str) -> int:
    """`java.lang.String.hashCode()` as a signed 32-bit value (over UTF-16 code units)."""
    units: Iterable[int]
    if s.isascii():
        units = s.encode("ascii")
    else:
        units = array("H", s.encode("utf-16-le" if sys.byteorder == "little" else "utf-16-be"))
    h = 0
    for unit in units:
        h = (31 * h + unit) & 0xFFFFFFFF
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


@functools.lru_cache(maxsize=1 << 18)  # the topics of a big cluster, asked for repeatedly
def _spread(key: str) -> int:
    h = string_hash(key) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 0x7FFFFFFF


class ConcurrentKeys:
    """Keys of a `ConcurrentHashMap` (also `java.util.Properties` since Java 9 and
    `ConcurrentHashMap.newKeySet()`), `bins` bins to start with (16 by default).

    Bins are iterated in index order, a bin's chain in insertion order; growth at 3/4
    load splits each chain as `ConcurrentHashMap.transfer` does.
    """

    def __init__(self, bins: int = 16) -> None:
        self.bins: list[list[str]] = [[] for _ in range(bins)]
        self.count = 0

    @classmethod
    def of(cls, keys: Iterable[str], bins: int = 16) -> ConcurrentKeys:
        props = cls(bins)
        for key in keys:
            props.put(key)
        return props

    def put(self, key: str) -> None:
        n = len(self.bins)
        chain = self.bins[_spread(key) & (n - 1)]
        if key in chain:
            return
        chain.append(key)
        self.count += 1
        if self.count >= n - (n >> 2):
            self._grow()

    def _grow(self) -> None:
        n = len(self.bins)
        grown: list[list[str]] = [[] for _ in range(2 * n)]
        for i, chain in enumerate(self.bins):
            if chain:
                grown[i], grown[i + n] = _split(chain, n)
        self.bins = grown

    def ordered(self) -> list[str]:
        return [k for chain in self.bins for k in chain]


def _split(chain: list[str], n: int) -> tuple[list[str], list[str]]:
    """One chain moved to a table of 2n bins: (stays at i, moves to i + n).

    The tail run of keys bound for one side keeps its order; each key before it is
    put at the head of its side's chain.
    """
    bits = [_spread(k) & n for k in chain]
    last = len(chain) - 1
    while last > 0 and bits[last - 1] == bits[last]:
        last -= 1
    low, high = ([], chain[last:]) if bits[last] else (chain[last:], [])
    for key, bit in zip(chain[:last], bits[:last], strict=True):
        (high if bit else low).insert(0, key)
    return low, high


def concurrent_capacity(initial: int) -> int:
    """Bins of `new ConcurrentHashMap<>(initial)`: the power of two at or above 1.5 × initial
    + 1 (1024 → 2048)."""
    wanted = initial + (initial >> 1) + 1
    size = 1
    while size < wanted:
        size <<= 1
    return size


def concurrent_order(keys: Iterable[str], bins: int = 16) -> list[str]:
    """`keys`, put in this order into a `ConcurrentHashMap` of `bins` bins, in the order it
    iterates them."""
    return ConcurrentKeys.of(keys, bins).ordered()
