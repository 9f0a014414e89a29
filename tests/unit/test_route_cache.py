"""The business worker's route-body cache: generation-scoped, bounded in bytes."""

from __future__ import annotations

from worker.business.context import RouteCache


def test_generation_change_drops_bodies_and_broker_entries() -> None:
    cache = RouteCache()
    assert cache.get(1, ("T", True)) is None
    cache.put(("T", True), b"body")
    cache.brokers["b"] = ({}, {})
    assert cache.get(1, ("T", True)) == b"body"
    assert cache.get(2, ("T", True)) is None
    assert cache.brokers == {} and cache.size == 0


def test_full_cache_evicts_oldest_entries_not_everything() -> None:
    cache = RouteCache(max_bytes=100)
    cache.get(1, ("x",))
    for i in range(10):
        cache.put((i,), b"0123456789")
    assert cache.size == 100
    cache.put((10,), b"0123456789")
    assert cache.size <= 100
    assert cache.get(1, (0,)) is None and cache.get(1, (10,)) == b"0123456789"
    assert cache.get(1, (9,)) == b"0123456789"
