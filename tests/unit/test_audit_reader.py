"""Reading any NameServer: the kind of each node, the standard view, the request budget.

Fake NameServers on loopback ports answer as pynamesrv (GET_NODE_SNAPSHOT), Java 4.9
(no reply to an unknown code) and Java 5.x (REQUEST_CODE_NOT_SUPPORTED) do.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from cluster.audit import standard_view as sv
from cluster.audit.reader import ClusterReader, Kind, ReadLimits
from cluster.audit.rows import entry_rows
from cluster.client.errors import CallTimeout
from cluster.core.protocol.codes import DEFAULT_MAX_FRAME, RequestCode
from cluster.core.protocol.command import response_to
from tests.fake_namesrv import FakeNameServer, tables

RQ = RequestCode
KV = {"ORDER_TOPIC_CONFIG": {"T0": "broker-a:4"}}


@pytest.fixture
def fakes() -> Iterator[Callable[..., FakeNameServer]]:
    made: list[FakeNameServer] = []

    def make(t: dict[str, Any], kind: str = "pynamesrv", mute: bool = False) -> FakeNameServer:
        made.append(FakeNameServer(t, kind, mute))
        return made[-1]

    yield make
    for f in made:
        f.close()


def _reader(nodes: dict[str, FakeNameServer], **limits: Any) -> ClusterReader:
    return ClusterReader({n: f.addr for n, f in nodes.items()},
                         ReadLimits(**{"timeout_s": 2.0, **limits}))


def _rows(read: Any) -> set[tuple[str, str, str]]:
    return {(r["table"], r["key"], r["digest"]) for r in entry_rows(read.node, 0, read.snapshot)
            if r["table"] is not None}


def test_each_kind_is_recognised_and_remembered(fakes: Callable[..., FakeNameServer]) -> None:
    t = tables({"broker-a": ["T0", "T1"]}, KV)
    nodes = {"py": fakes(t), "j4": fakes(t, "java4"), "j5": fakes(t, "java5")}
    with _reader(nodes) as reader:
        started = time.monotonic()
        first = reader.read_round()
        took = time.monotonic() - started
        assert {n: r.kind for n, r in first.items()} == {
            "py": Kind.SNAPSHOT, "j4": Kind.STANDARD, "j5": Kind.STANDARD}
        assert all(r.error is None for r in first.values()), first
        assert took < 2.0  # 4.9's silence on 60001 is never waited for
        for f in nodes.values():
            f.requests.clear()
        reader.read_round()
    assert nodes["py"].requests == {RQ.GET_NODE_SNAPSHOT: 1}
    assert RQ.GET_NODE_SNAPSHOT not in nodes["j4"].requests
    assert RQ.GET_NAMESRV_CONFIG not in nodes["j5"].requests


def test_every_kind_gives_the_same_rows(fakes: Callable[..., FakeNameServer]) -> None:
    t = tables({"broker-a": ["T0", "T1"], "broker-b": ["T1"]}, KV)
    t["topic"]["Orphan"] = {"broker-gone": {"perm": 6, "readQueueNums": 1, "topicSysFlag": 0,
                                            "writeQueueNums": 1}}  # no known broker: no route
    nodes = {"py": fakes(t), "j4": fakes(t, "java4"), "j5": fakes(t, "java5")}
    with _reader(nodes) as reader:
        reads = reader.read_round()
    rows = {n: _rows(r) for n, r in reads.items()}
    assert rows["py"] == rows["j4"] == rows["j5"]
    assert {(table, key) for table, key, _ in rows["py"]} == {
        ("cluster", "DefaultCluster"), ("broker", "broker-a"), ("broker", "broker-b"),
        ("topic", "T0/broker-a"), ("topic", "T1/broker-a"), ("topic", "T1/broker-b"),
        ("kv", "ORDER_TOPIC_CONFIG/T0")}
    assert reads["py"].snapshot is not None and "live" not in reads["py"].snapshot["tables"]


def test_snapshot_nodes_alone_keep_every_table(fakes: Callable[..., FakeNameServer]) -> None:
    t = tables({"broker-a": ["T0"]})
    with _reader({"a": fakes(t), "b": fakes(t)}) as reader:
        reads = reader.read_round()
    assert not reader.standard_view
    snap = reads["a"].snapshot
    assert snap is not None and set(snap["tables"]) >= {"live", "filter"}


def test_a_round_keeps_to_the_budget_and_covers_every_topic_in_a_pass(
        fakes: Callable[..., FakeNameServer]) -> None:
    t = tables({"broker-a": [f"T{i:02d}" for i in range(50)]})
    nodes = {"j4": fakes(t, "java4"), "py": fakes(t)}
    budget = 3 + 10  # 106, 206, one 219, and room for 10 routes
    with _reader(nodes, budget=budget, concurrency=3) as reader:
        seen: list[int] = []
        for _ in range(6):
            nodes["j4"].requests.clear()
            reads = reader.read_round()
            if seen:  # the first round also carries the kind probe
                assert reads["j4"].requests == sum(nodes["j4"].requests.values()) <= budget
            assert reads["j4"].routes_read == 10
            assert reads["j4"].sent_bytes > 0 and reads["j4"].received_bytes > 0
            seen.append(len(reads["j4"].snapshot["tables"]["topic"]))  # type: ignore[index]
            assert _rows(reads["j4"]) == _rows(reads["py"])
    assert seen == [10, 20, 30, 40, 50, 50]


def test_a_difference_is_seen_within_one_pass(fakes: Callable[..., FakeNameServer]) -> None:
    t = tables({"broker-a": [f"T{i:02d}" for i in range(20)]})
    other = tables({"broker-a": [f"T{i:02d}" for i in range(20)]})
    nodes = {"a": fakes(t, "java4"), "b": fakes(other, "java5")}
    with _reader(nodes, budget=3 + 5) as reader:
        for _ in range(4):
            reader.read_round()
        with nodes["b"].lock:
            other["topic"]["T07"]["broker-a"]["perm"] = 4  # write permission wiped on b only
        differs = []
        for _ in range(4):
            reads = reader.read_round()
            differs.append(_rows(reads["a"]) != _rows(reads["b"]))
    assert any(differs)  # T07 is re-read within 20 / 5 rounds
    # and a broker gone from one node shows at once: the broker table is read every round
    with nodes["b"].lock:
        del other["broker"]["broker-a"]
    with _reader(nodes, budget=3 + 5) as reader:
        reads = reader.read_round()
    assert ("broker", "broker-a") in {(a, b) for a, b, _ in _rows(reads["a"])}
    assert ("broker", "broker-a") not in {(a, b) for a, b, _ in _rows(reads["b"])}


def test_a_silent_node_fails_alone_and_is_probed_again(
        fakes: Callable[..., FakeNameServer]) -> None:
    t = tables({"broker-a": ["T0"]})
    up, silent = fakes(t, "java4"), fakes(t, mute=True)
    with _reader({"up": up, "silent": silent}, timeout_s=0.3) as reader:
        reads = reader.read_round()
        assert reads["up"].error is None and reads["silent"].snapshot is None
        assert "timeout" in (reads["silent"].error or "").lower()
        assert reader.kind("silent") is None and reader.kind("up") is Kind.STANDARD
        with pytest.raises(CallTimeout):  # the client error that failed it
            reader.read_node("silent")
        assert reader.read_node("up")["tables"]["broker"]


def test_every_request_names_its_origin(fakes: Callable[..., FakeNameServer]) -> None:
    t = tables({"broker-a": ["T0"]})
    nodes = {"py": fakes(t), "j4": fakes(t, "java4")}
    with ClusterReader({n: f.addr for n, f in nodes.items()}, ReadLimits(timeout_s=2.0),
                       origin="audit") as reader:
        reader.read_round()
    assert set(nodes["py"].origins) == set(nodes["j4"].origins) == {"audit"}


def test_limits_refuse_a_budget_without_room_for_routes() -> None:
    with pytest.raises(ValueError, match="no room for routes"):
        ReadLimits(budget=3)


# ------------------------------------------------------------------ pure parts


def test_rotation_reads_due_topics_first_then_the_oldest() -> None:
    rot = sv.TopicRotation()
    both = frozenset({"a", "b"})
    presence = {t: both for t in ("T1", "T2", "T3", "T4")}
    assert rot.pick(presence, set(), 2, 0) == ["T1", "T2"]
    assert rot.pick(presence, set(), 2, 1) == ["T3", "T4"]
    assert rot.pick(presence, set(), 3, 2) == ["T1", "T2", "T3"]
    presence["T5"] = both  # new
    presence["T4"] = frozenset({"a"})  # presence changed
    assert rot.pick(presence, {"T2"}, 3, 3) == ["T2", "T4", "T5"]
    del presence["T1"]
    assert rot.pick(presence, set(), 10, 4) == ["T3", "T2", "T4", "T5"]


def test_a_topic_is_compared_only_once_read_on_every_node_listing_it() -> None:
    a, b = sv.TopicCache(), sv.TopicCache()
    q = {"broker-a": {"perm": 6}}
    a.update(["T1", "T2"], {"T1": q, "T2": q})
    b.update(["T1", "T2"], {"T1": None})
    presence = {"T1": frozenset({"a", "b"}), "T2": frozenset({"a", "b"})}
    out = sv.topic_tables(presence, {"a": a, "b": b})
    assert out == {"a": {"T1": q}, "b": {}}  # T2 waits for b's reading
    b.update(["T1"], {})  # b no longer lists T2: a's T2 is compared, b lacks it
    out = sv.topic_tables({"T1": frozenset({"a", "b"}), "T2": frozenset({"a"})},
                          {"a": a, "b": b})
    assert out == {"a": {"T1": q, "T2": q}, "b": {}}


class HugeSnapshot(FakeNameServer):
    """A pynamesrv node whose snapshot reply is larger than a frame may be."""

    def _reply(self, cmd: Any) -> Any:
        if cmd.code == RQ.GET_NODE_SNAPSHOT:
            return response_to(cmd, 0, body=b" " * (DEFAULT_MAX_FRAME + 10))
        return super()._reply(cmd)


def test_a_snapshot_too_large_for_a_frame_is_read_the_standard_way(
        fakes: Callable[..., FakeNameServer]) -> None:
    t = tables({"broker-a": ["T0"]})
    huge = HugeSnapshot(t)
    try:
        with _reader({"huge": huge, "py": fakes(t)}) as reader:
            reads = reader.read_round()
            assert reads["huge"].error is None and reads["huge"].kind is Kind.STANDARD
            assert _rows(reads["huge"]) == _rows(reads["py"])
            again = reader.read_round()
        assert again["huge"].error is None and huge.requests[RQ.GET_NODE_SNAPSHOT] == 1
    finally:
        huge.close()
