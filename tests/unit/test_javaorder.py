"""The iteration order of a ConcurrentHashMap, against a plain model of its bins."""

from __future__ import annotations

import random
import tracemalloc

import pytest

from cluster.core import javaorder
from cluster.core.javaorder import (
    ConcurrentKeys,
    chm_spread,
    concurrent_order,
    hashmap_order,
    java_hash,
)


class ModelKeys:
    """Every bin a list, every chain split key by key at each growth, as `transfer` does:
    the tail run bound for one side keeps its order, each key before it goes to the head
    of its side's chain."""

    def __init__(self, bins: int) -> None:
        self.bins: list[list[str]] = [[] for _ in range(bins)]
        self.count = 0

    def put(self, key: str) -> None:
        n = len(self.bins)
        chain = self.bins[chm_spread(key) & (n - 1)]
        if key in chain:
            return
        chain.append(key)
        self.count += 1
        if self.count >= n - (n >> 2):
            grown: list[list[str]] = [[] for _ in range(2 * n)]
            for i, old in enumerate(self.bins):
                bits = [chm_spread(k) & n for k in old]
                last = len(old) - 1
                while last > 0 and bits[last - 1] == bits[last]:
                    last -= 1
                for key_, bit in zip(old[:last], bits[:last], strict=True):
                    grown[i + n if bit else i].insert(0, key_)
                if old:
                    grown[i + n if bits[last] else i] += old[last:]
            self.bins = grown

    def ordered(self) -> list[str]:
        return [k for chain in self.bins for k in chain]


@pytest.mark.parametrize("seed", range(40))
def test_the_order_is_the_models(seed: int) -> None:
    rnd = random.Random(seed)
    bins = rnd.choice((1, 2, 16, 64, 1024))
    # few bins for many keys: long chains, split again and again; some keys twice
    names = [f"{rnd.choice(('T', 'topic-', '%RETRY%g', ''))}{rnd.randrange(5000)}"
             for _ in range(rnd.randrange(1, 3000))]
    model = ModelKeys(bins)
    for name in names:
        model.put(name)
    assert concurrent_order(names, bins) == model.ordered()
    keys = ConcurrentKeys.of(names[: len(names) // 2], bins)  # puts after an ordering
    keys.ordered()
    for name in names[len(names) // 2 :]:
        keys.put(name)
    assert keys.ordered() == model.ordered() and keys.count == model.count


def test_an_empty_map_iterates_nothing() -> None:
    assert concurrent_order([]) == [] and ConcurrentKeys(4).ordered() == []


@pytest.mark.parametrize("seed", range(10))
def test_orderings_sharing_their_hashes_order_alike(seed: int) -> None:
    rnd = random.Random(seed)
    names = [f"T{rnd.randrange(5000)}" for _ in range(rnd.randrange(1, 3000))]
    spreads: dict[str, int] = {}
    table = concurrent_order(names, 2048, spreads)
    assert spreads == {name: chm_spread(name) for name in names}
    # the second ordering reads the first's hashes: a wrong one would move its key
    assert concurrent_order(table, spreads=spreads) == concurrent_order(table)


def test_ordering_a_big_list_keeps_nothing_of_it() -> None:
    names = [f"BenchTopic-{i}" for i in range(10_000)]
    only_here = [tracemalloc.Filter(True, javaorder.__file__)]  # not the test runner's
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces(only_here)
        ordered = concurrent_order(concurrent_order(names, 2048))
        listed = hashmap_order(dict.fromkeys(names), java_hash)
        assert len(ordered) == len(listed) == len(names)
        del ordered, listed
        after = tracemalloc.take_snapshot().filter_traces(only_here)
    finally:
        tracemalloc.stop()
    kept = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert kept < 64 << 10  # a remembered hash of each name held about 1 MB
