"""Iteration order of RouteInfoManager's brokerAddrTable and clusterAddrTable.

Where Java takes "the first" entry of brokerAddrTable or clusterAddrTable, or prints them,
the answer is the map's iteration order: bin by bin (a table that never shrinks, created
with RouteInfoManager's capacities), and within a bin in insertion order. 4.9.8 uses
`HashMap`s (128 and 32 bins), 5.x `ConcurrentHashMap`s (created with 128 and 32, hence 256
and 64 bins, grown one entry earlier). The capacity reached and each key's insertion
number live in the `meta` table.
"""

from __future__ import annotations

from collections.abc import Iterable

from cluster.core.javaorder import concurrent_capacity, string_hash
from state import nsconfig
from state.store import Txn

CAPACITY = {"cluster": 32, "broker": 128}  # as RouteInfoManager creates the maps


def _meta(table: str, what: str) -> str:
    return f"hashmap:{table}:{what}"


def _initial(t: Txn, table: str) -> int:
    cap = CAPACITY[table]
    return concurrent_capacity(cap) if nsconfig.dialect(t).five else cap


def _grown(t: Txn, cap: int, size: int) -> int:
    """The bins after `size` entries: a HashMap resizes above 3/4 load, a ConcurrentHashMap
    at 3/4."""
    concurrent = nsconfig.dialect(t).five
    while size > cap * 3 // 4 or (concurrent and size >= cap - (cap >> 2)):
        cap *= 2
    return cap


def hm_added(t: Txn, table: str, key: str) -> None:
    """`key` was just created in `table`: number it and grow the capacity as Java would."""
    seq = (t.get("meta", _meta(table, "next")) or 0) + 1
    t.put("meta", _meta(table, "next"), seq)
    t.put("meta", _meta(table, f"key:{key}"), seq)
    cap = t.get("meta", _meta(table, "capacity")) or _initial(t, table)
    t.put("meta", _meta(table, "capacity"), _grown(t, cap, t.count(table)))


def hm_removed(t: Txn, table: str, key: str) -> None:
    t.delete("meta", _meta(table, f"key:{key}"))


def java_order(t: Txn, table: str, keys: Iterable[str]) -> list[str]:
    """`keys` of `table` in the order Java's map iterates them."""
    mask = (t.get("meta", _meta(table, "capacity")) or _initial(t, table)) - 1

    def position(key: str) -> tuple[int, int]:
        h = string_hash(key) & 0xFFFFFFFF
        seq = t.get("meta", _meta(table, f"key:{key}")) or 0
        return ((h ^ (h >> 16)) & mask, seq)

    return sorted(keys, key=position)
