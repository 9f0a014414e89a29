"""The business worker's route-body cache: generation-scoped, bounded in bytes."""

from __future__ import annotations

import tracemalloc

import orjson

from worker.business.context import ENTRY_BYTES, RouteCache


def test_generation_change_drops_bodies_and_broker_entries() -> None:
    cache = RouteCache()
    assert cache.get(1, ("T", True)) is None
    cache.put(("T", True), b"body")
    cache.brokers["b"] = ({}, {})
    assert cache.get(1, ("T", True)) == b"body"
    assert cache.get(2, ("T", True)) is None
    assert cache.brokers == {} and cache.size == 0


def test_full_cache_evicts_oldest_entries_not_everything() -> None:
    cost = 10 + ENTRY_BYTES
    cache = RouteCache(max_bytes=10 * cost)
    cache.get(1, ("x",))
    for i in range(10):
        cache.put((i,), b"0123456789")
    assert cache.size == 10 * cost
    cache.put((10,), b"0123456789")
    assert cache.size <= 10 * cost
    assert cache.get(1, (0,)) is None and cache.get(1, (10,)) == b"0123456789"
    assert cache.get(1, (9,)) == b"0123456789"


def test_kept_bodies_take_about_their_length_in_memory() -> None:
    body = {"queueDatas": [{"brokerName": "b0", "perm": 6, "readQueueNums": 8}]}
    cache = RouteCache()
    cache.get(1, ("x",))
    tracemalloc.start()
    try:
        for i in range(2000):
            cache.put((i,), orjson.dumps(body))  # orjson's output holds 4 KiB or more
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(cache.entries) == 2000
    assert held < 2000 * 1024, held
