"""The divergence signal without nodes: comparisons, watch rounds over in-memory tables,
agreement over time on a fake clock, the gauges."""

from __future__ import annotations

import copy
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cluster.core.agreement_history import AGREE, CLUSTER, DIVERGE, SILENT, History
from cluster.core.digest_source import RemoteDigest, TablesDigest
from cluster.core.divergence import compare_units, describe, majority
from cluster.core.divergence_gauges import divergence_gauges
from cluster.core.divergence_watch import Watch
from cluster.core.node_link import NotAnswering
from tests.nodeproc import free_port

Q = {"perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}


def tables(topics: int = 600, brokers: tuple[str, ...] = ("a", "b")) -> dict[str, Any]:
    return {
        "cluster": {"C": sorted(brokers)},
        "broker": {b: {"cluster": "C", "brokerAddrs": {"0": f"h:{i}"}}
                   for i, b in enumerate(brokers)},
        "topic": {f"T{i}": {b: dict(Q) for b in brokers} for i in range(topics)},
        "filter": {}, "live": {f"h:{i}": {"dataVersion": {"counter": 1}, "haServerAddr": None}
                               for i in range(len(brokers))},
        "kv": {"NS": {"k": "v"}},
    }


class Fake:
    """An in-memory node: tables, and whether it answers."""

    def __init__(self, t: dict[str, Any]) -> None:
        self.tables = t
        self.silent = False
        self.reads = 0

    def read(self, timeout: float) -> tuple[int, dict[str, Any]]:
        if self.silent:
            raise NotAnswering(f"no answer within {timeout:g}s")
        self.reads += 1
        return 1000, self.tables


@pytest.fixture
def nodes() -> Iterator[tuple[dict[str, Fake], Watch]]:
    fakes = {n: Fake(tables()) for n in ("n1", "n2", "n3")}
    clock = iter(range(1000, 100000, 2))
    watch = Watch({n: TablesDigest(n, "tables", f.read) for n, f in fakes.items()},
                  deadline_s=0.5, clock=lambda: float(next(clock)))
    yield fakes, watch
    watch.close()


def test_majority_names_the_odd_node() -> None:
    assert majority([("x", ("n1", "n2")), ("y", ("n3",))], 3) == ("n3",)
    assert majority([("x", ("n1",)), (None, ("n2",))], 2) == ("n1", "n2")
    found = compare_units("topic", {"n1": {"T": {"a": "1", "b": "2"}},
                                    "n2": {"T": {"a": "1", "b": "3"}},
                                    "n3": {"T": {"a": "1"}}})
    assert [(d.label, d.present, d.missing, d.odd, d.differs) for d in found] == [
        ("T/b", ("n1", "n2"), ("n3",), ("n1", "n2", "n3"), True)]


def test_describe_says_what_differs() -> None:
    assert describe({"n1": Q, "n2": Q, "n3": {**Q, "perm": 4}}) == "perm: 4 on n3; 6 on n1, n2"
    assert describe({"n1": ["a", "b"], "n2": ["a"]}) == "a on n2; a,b on n1"
    assert describe({"n1": {"x": 1}, "n2": {"x": 1}}) == ""


def test_agreeing_nodes_cost_one_summary_each(nodes: tuple[dict[str, Fake], Watch]) -> None:
    fakes, watch = nodes
    rnd = watch.round()
    assert rnd.comparison.agrees and rnd.comparison.nodes == ("n1", "n2", "n3")
    assert all(f.reads == 1 for f in fakes.values())


def test_a_lagging_node_is_located_and_described(nodes: tuple[dict[str, Fake], Watch]) -> None:
    fakes, watch = nodes
    n3 = fakes["n3"].tables
    n3["topic"]["T5"]["b"]["perm"] = 4
    for i in range(100, 200):
        del n3["topic"][f"T{i}"]["a"]
    del n3["broker"]["b"]
    rnd = watch.round()
    c = rnd.comparison
    assert c.by_table["topic"] == 101 and c.by_table["broker"] == 1
    assert c.per_node == {"n1": 0, "n2": 0, "n3": 102}
    assert (c.topics, c.brokers) == (101, 2)
    t5 = next(d for d in c.differences if d.label == "T5/b")
    assert t5.odd == ("n3",) and rnd.note(t5) == "perm: 4 on n3; 6 on n1, n2"
    gone = next(d for d in c.differences if d.label == "T150/a")
    assert gone.missing == ("n3",) and rnd.note(gone) == ""


def test_a_silent_node_is_left_out_and_named(nodes: tuple[dict[str, Fake], Watch]) -> None:
    fakes, watch = nodes
    fakes["n2"].silent = True
    fakes["n3"].tables["kv"]["NS"]["k"] = "w"
    rnd = watch.round()
    assert rnd.answers["n2"].error == "no answer within 0.5s"
    assert rnd.comparison.nodes == ("n1", "n3")
    d = rnd.comparison.differences[0]
    assert (d.table, d.label, d.odd) == ("kv", "NS/k", ("n1", "n3"))  # two nodes: no majority


def test_history_and_gauges_follow_rounds(nodes: tuple[dict[str, Fake], Watch]) -> None:
    fakes, watch = nodes
    h = History(window_s=100)
    names = list(fakes)
    r1 = watch.round()
    h.add(r1, names)
    assert h.seconds_since_agreement(r1.at + 5) == 0.0
    good = copy.deepcopy(fakes["n3"].tables)
    fakes["n3"].tables["topic"]["T1"]["a"]["perm"] = 2
    r2 = watch.round()
    h.add(r2, names)
    fakes["n3"].silent = True
    r3 = watch.round()
    h.add(r3, names)
    assert h.seconds_since_agreement(r3.at + 1) == r3.at + 1 - r1.at
    assert [s.state for s in h.lanes["n3"]] == [AGREE, DIVERGE, SILENT]
    assert [s.state for s in h.lanes[CLUSTER]] == [AGREE, DIVERGE, SILENT]
    div = h.lanes["n3"][1]
    assert (div.start, div.end, div.worst) == (r2.at, r3.at, 1)
    assert div.sample[0].label == "T1/a" and div.sample[0].note == "perm: 2 on n3; 6 on n1, n2"
    fakes["n3"].silent, fakes["n3"].tables = False, good
    r4 = watch.round()
    h.add(r4, names)
    assert h.seconds_since_agreement(r4.at) == 0.0
    gauges = {g.name: g for g in divergence_gauges(r2, h, r4.at, names)}
    assert gauges["pynamesrv_divergence_node_entries"].samples == [
        (("n1",), 0.0), (("n2",), 0.0), (("n3",), 1.0)]
    assert (("topic",), 1.0) in gauges["pynamesrv_divergence_entries"].samples
    h.add(watch.round(), names)  # an hour later only the recent segments stay
    later = watch.round()
    h.add(type(later)(later.at + 500, later.answers, later.comparison), names)
    assert [s.state for s in h.lanes["n3"]] == [AGREE]


def test_drilled_buckets_are_asked_again_only_when_they_move() -> None:
    calls: list[frozenset[int]] = []

    class Counting(TablesDigest):
        def drill(self, table: str, buckets: frozenset[int], timeout: float) -> Any:
            calls.append(buckets)
            return super().drill(table, buckets, timeout)

    a, b = Fake(tables()), Fake(tables())
    b.tables["topic"]["T9"]["a"]["perm"] = 2
    w = Watch({"a": Counting("a", "t", a.read), "b": Counting("b", "t", b.read)}, deadline_s=1)
    try:
        first = w.round()
        assert len(first.comparison.differences) == 1
        assert len(calls) == 2
        again = w.round()
        assert again.comparison is first.comparison  # nothing moved: not compared again
        assert len(calls) == 2  # nor drilled into
        b.tables["topic"]["T9"]["a"]["perm"] = 6
        assert w.round().comparison.agrees
    finally:
        w.close()


def test_remote_source_of_a_silent_node_costs_one_deadline() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:
        src = RemoteDigest("x", "127.0.0.1", silent.getsockname()[1], "status")
        t0 = time.monotonic()
        with pytest.raises(NotAnswering, match="no answer within 0.3s"):
            src.summary(0.3)
        assert time.monotonic() - t0 < 2.0
        src.close()
    refused = RemoteDigest("y", "127.0.0.1", free_port(), "status")
    with pytest.raises(NotAnswering, match="refused"):
        refused.summary(0.3)
