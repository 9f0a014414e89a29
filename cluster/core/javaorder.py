"""Iteration orders of Java collections, for replies and tool output that expose them.

Some replies expose a Java order as data (GET_SYSTEM_TOPIC_LIST_FROM_NS picks the
first broker of `brokerAddrTable`), and mqadmin prints what it decoded in the order
its `HashMap`, `HashSet`, `TreeSet` or `Properties` iterates. Mirroring those orders
keeps replies and admin output identical to Java's (Java 8+ `HashMap`, Java 9+
`Properties`). Keys that share a bucket keep the order they were put in.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import TypeVar

K = TypeVar("K")

_MAX_TABLE = 1 << 30
# Names whose hash is remembered: the brokers and clusters a route or a table lists, ordered
# again and again. A topic list's hundred thousand topics are hashed once a list and not
# kept (remembered, they held 40 MB in each worker that lists them).
NAMES_KEPT = 4096
# java.util.Properties() is a ConcurrentHashMap(8): 16 bins (Java 9 and later).
_DEFAULT_BINS = 16


@lru_cache(maxsize=NAMES_KEPT)
def string_hash(s: str) -> int:
    """:func:`java_hash`, remembered."""
    return java_hash(s)


def java_hash(s: str) -> int:
    """`java.lang.String.hashCode()` as a signed 32-bit value over UTF-16 code units."""
    h = 0
    if s.isascii():  # one UTF-16 code unit per character
        data = s.encode("ascii")
        for i in range(len(data)):
            h = (31 * h + data[i]) & 0xFFFFFFFF
    else:
        units = array("H", s.encode("utf-16-le" if sys.byteorder == "little" else "utf-16-be",
                                    "surrogatepass"))
        for unit in units:
            h = (31 * h + unit) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def long_hash(v: int) -> int:
    """`java.lang.Long.hashCode()`: the two 32-bit halves xor-ed (unsigned here)."""
    u = v & 0xFFFFFFFFFFFFFFFF
    return (u ^ (u >> 32)) & 0xFFFFFFFF


def _spread(h: int) -> int:
    """HashMap.hash: the high half folded into the low one (unsigned)."""
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def _table_size(n: int, initial: int) -> int:
    """Table length of a HashMap made with ``initial`` capacity after ``n`` puts."""
    size = 1
    while size < initial:
        size *= 2
    while n > size * 3 // 4 and size < _MAX_TABLE:
        size *= 2
    return size


def hashmap_order(keys: Iterable[K], hash_of: Callable[[K], int] | None = None,
                     initial: int = 16) -> list[K]:
    """``keys`` (distinct, in put order) as a Java HashMap/HashSet made with ``initial``
    capacity iterates them; ``hash_of`` is the key's ``hashCode`` (default: String's)."""
    ks = list(keys)
    mask = _table_size(len(ks), initial) - 1
    code: Callable[[K], int] = hash_of or string_hash
    return sorted(ks, key=lambda k: _spread(code(k)) & mask)


def utf16_key(s: str) -> bytes:
    """Sort key of `String.compareTo` (UTF-16 code units), as a TreeSet orders names."""
    return s.encode("utf-16-be", "surrogatepass")


def java_sorted(names: Iterable[str]) -> list[str]:
    """``names`` as a Java `TreeSet<String>` iterates them (no duplicates)."""
    return sorted(set(names), key=utf16_key)


# ------------------------------------------------------- ConcurrentHashMap, Properties


def chm_spread(key: str) -> int:
    """Where a ConcurrentHashMap puts `key`: its hash spread, masked by the table."""
    return _spread(java_hash(key)) & 0x7FFFFFFF


Chain = str | list[str]  # a bin's keys: one key as itself (most bins), more as a list


class ConcurrentKeys:
    """Keys of a `ConcurrentHashMap` (also `java.util.Properties` since Java 9 and
    `ConcurrentHashMap.newKeySet()`), ``bins`` bins to start with (16 by default).

    Bins are iterated in index order, a bin's chain in insertion order; growth at 3/4
    load splits each chain as `ConcurrentHashMap.transfer` does.
    """

    def __init__(self, bins: int = _DEFAULT_BINS, spreads: dict[str, int] | None = None
                 ) -> None:
        self.bins: list[Chain | None] = [None] * bins  # None: an empty bin
        self.count = 0
        # each key's chm_spread, read again at each growth; orderings of the same keys may
        # share it
        self._spreads = {} if spreads is None else spreads

    @classmethod
    def of(cls, keys: Iterable[str], bins: int = _DEFAULT_BINS,
           spreads: dict[str, int] | None = None) -> ConcurrentKeys:
        props = cls(bins, spreads)
        for key in keys:
            props.put(key)
        return props

    def put(self, key: str) -> None:
        spread = self._spreads.get(key)
        if spread is None:
            spread = self._spreads[key] = chm_spread(key)
        bins = self.bins
        n = len(bins)
        at = spread & (n - 1)
        chain = bins[at]
        if chain is None:
            bins[at] = key
        elif isinstance(chain, str):
            if chain == key:
                return
            bins[at] = [chain, key]
        elif key in chain:
            return
        else:
            chain.append(key)
        self.count += 1
        if self.count >= n - (n >> 2):
            self._grow()

    def _grow(self) -> None:
        bins = self.bins
        n = len(bins)
        spreads = self._spreads
        grown: list[Chain | None] = [None] * (2 * n)
        for i in range(n):
            chain = bins[i]
            if chain is None:
                continue
            if isinstance(chain, str):  # the key moves as it is
                grown[i + n if spreads[chain] & n else i] = chain
            else:
                grown[i], grown[i + n] = _split(chain, n, spreads)
        self.bins = grown

    def ordered(self) -> list[str]:
        out: list[str] = []
        for chain in self.bins:
            if chain is None:
                continue
            if isinstance(chain, str):
                out.append(chain)
            else:
                out.extend(chain)
        return out


def _split(chain: list[str], n: int, spreads: dict[str, int]
           ) -> tuple[Chain | None, Chain | None]:
    """One chain moved to a table of 2n bins: (stays at i, moves to i + n), None for a
    side that gets no key.

    The tail run of keys bound for one side keeps its order; each key before it is
    put at the head of its side's chain. A chain bound whole for one side is that run:
    it moves as it is.
    """
    bits = [spreads[k] & n for k in chain]
    last = len(chain) - 1
    while last > 0 and bits[last - 1] == bits[last]:
        last -= 1
    if not last:
        return (None, chain) if bits[0] else (chain, None)
    low: list[str] = []
    high: list[str] = []
    (high if bits[last] else low).extend(chain[last:])
    for key, bit in zip(chain[:last], bits[:last], strict=True):
        (high if bit else low).insert(0, key)
    return _chain(low), _chain(high)


def _chain(keys: list[str]) -> Chain | None:
    return keys if len(keys) > 1 else keys[0] if keys else None


def properties_order(keys: Iterable[str]) -> list[str]:
    """``keys`` in put order -> the order a fresh `Properties` iterates them."""
    return ConcurrentKeys.of(keys).ordered()


def concurrent_capacity(initial: int) -> int:
    """Bins of `new ConcurrentHashMap<>(initial)`: the power of two at or above 1.5 × initial
    + 1 (1024 → 2048)."""
    wanted = initial + (initial >> 1) + 1
    size = 1
    while size < wanted:
        size <<= 1
    return size


def concurrent_order(keys: Iterable[str], bins: int = _DEFAULT_BINS,
                     spreads: dict[str, int] | None = None) -> list[str]:
    """``keys``, put in this order into a `ConcurrentHashMap` of ``bins`` bins, in the order
    it iterates them; ``spreads`` (filled as keys are hashed) may be shared by orderings of
    the same keys."""
    return ConcurrentKeys.of(keys, bins, spreads).ordered()
