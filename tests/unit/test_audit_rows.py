"""Audit rows, manifest, collector and CLI parsing: no Spark, fake node on a socket."""

from __future__ import annotations

import argparse
import copy
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from cluster.audit.cli import duration, node_spec
from cluster.audit.collector import (
    CollectPlan,
    RoundResult,
    Target,
    collect,
    prepare_out_dir,
    run_round,
)
from cluster.audit.rows import (
    BoundInputs,
    Manifest,
    NodeRef,
    SnapshotError,
    canonical,
    digest,
    entry_rows,
    rows_file_name,
    status_row,
)
from cluster.core.errors import UserError
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand, response_to
from tests.fake_namesrv import FakeNameServer

SNAPSHOT: dict[str, Any] = {
    "node": "n1", "seq": 17, "takenAt": 1700000000000,
    "tables": {
        "cluster": {"DefaultCluster": ["broker-a"]},
        "broker": {"broker-a": {"cluster": "DefaultCluster",
                                "brokerAddrs": {"0": "127.0.0.1:10911"}}},
        "topic": {"TopicTest": {"broker-a": {"perm": 6, "readQueueNums": 4,
                                             "topicSysFlag": 0, "writeQueueNums": 4}}},
        "filter": {"127.0.0.1:10911": ["127.0.0.1:20000"]},
        "live": {"127.0.0.1:10911": {"dataVersion": {"counter": 1, "timestamp": 1},
                                     "haServerAddr": "127.0.0.1:10912"}},
        "kv": {"ORDER_TOPIC_CONFIG": {"TopicTest": "broker-a:4"}},
    },
}


# ------------------------------------------------------------------ rows


def test_canonical_text_ignores_key_order() -> None:
    a = canonical({"b": 1, "a": [1, 2]})
    assert a == canonical({"a": [1, 2], "b": 1}) == '{"a":[1,2],"b":1}'
    assert digest(a) == digest(canonical({"a": [1, 2], "b": 1}))
    assert digest(a) != digest(canonical({"a": [2, 1], "b": 1}))
    assert len(digest(a)) == 16


def test_snapshot_flattens_to_one_row_per_entry_with_documented_keys() -> None:
    rows = entry_rows("n1", 3, SNAPSHOT)
    assert rows[0] == status_row("n1", 3, 1700000000000, available=True)
    keys = {(r["table"], r["key"]) for r in rows[1:]}
    assert keys == {("cluster", "DefaultCluster"), ("broker", "broker-a"),
                    ("topic", "TopicTest/broker-a"), ("filter", "127.0.0.1:10911"),
                    ("live", "127.0.0.1:10911"), ("kv", "ORDER_TOPIC_CONFIG/TopicTest")}
    for r in rows[1:]:
        assert r["node"] == "n1" and r["round"] == 3 and r["available"] is True
        assert r["taken_at"] == 1700000000000
        assert r["digest"] == digest(r["value"])
    kv = next(r for r in rows if r["table"] == "kv")
    assert orjson.loads(kv["value"]) == "broker-a:4"


def test_empty_tables_still_give_the_status_row() -> None:
    rows = entry_rows("n2", 0, {"takenAt": 5, "tables": {"broker": {}, "kv": {}}})
    assert rows == [status_row("n2", 0, 5, available=True)]


@pytest.mark.parametrize("body, message", [
    ({"takenAt": 1}, "no 'tables'"),
    ({"tables": {}}, "takenAt"),
    ({"takenAt": 1, "tables": {"broker": []}}, "'broker' is not an object"),
    ({"takenAt": 1, "tables": {"topic": {"T": 3}}}, "'topic' entry 'T'"),
])
def test_malformed_snapshot_is_rejected(body: dict[str, Any], message: str) -> None:
    with pytest.raises(SnapshotError, match=message):
        entry_rows("n1", 0, body)


def test_unavailable_row_has_null_entry_fields_and_the_reason() -> None:
    row = status_row("n3", 7, 99, available=False, error="timeout after 1s")
    assert row["available"] is False and row["error"] == "timeout after 1s"
    assert row["table"] is None and row["key"] is None and row["digest"] is None


def test_rows_file_name_is_safe() -> None:
    assert rows_file_name("n1") == "rows-n1.jsonl"
    assert rows_file_name("a/b c") == "rows-a_b_c.jsonl"


# -------------------------------------------------------------- manifest


def test_manifest_round_trip_and_default_bound() -> None:
    m = Manifest(nodes=[NodeRef("n1", "127.0.0.1:1"), NodeRef("n2", "127.0.0.1:2")],
                 interval_ms=2000, bound_inputs=BoundInputs(1000, 500, 3000),
                 started_at=1, ended_at=2, rounds=3, fault_end=4)
    back = Manifest.from_json(m.to_json())
    assert back == m
    assert back.node_names == ["n1", "n2"]
    assert back.bound_inputs.default_bound_ms() == 4500
    assert BoundInputs().default_bound_ms() == 30_000 + 5_000 + 120_000


@pytest.mark.parametrize("doc, message", [
    (b"{", "not JSON"),
    (b"[]", "not a JSON object"),
    (b'{"interval_ms": 1000}', "no 'nodes'"),
    (b'{"nodes": [{"name": "a"}, {"name": "a"}], "interval_ms": 1}', "twice"),
    (b'{"nodes": [{"name": "a"}], "interval_ms": 0}', "interval_ms"),
    (b'{"nodes": [{"name": "a"}], "interval_ms": 5, "fault_end": "x"}', "fault_end"),
])
def test_bad_manifest_is_rejected(doc: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Manifest.from_json(doc)


# ------------------------------------------------------------- collector


class GarbageNode(FakeNameServer):
    """Answers GET_NODE_SNAPSHOT with a body that is not JSON."""

    def _reply(self, cmd: RemotingCommand) -> RemotingCommand | None:
        if cmd.code == RequestCode.GET_NODE_SNAPSHOT:
            return response_to(cmd, ResponseCode.SUCCESS, body=b"not json")
        return super()._reply(cmd)


FakeNode = FakeNameServer


@pytest.fixture
def fake_nodes() -> Iterator[Callable[..., FakeNameServer]]:
    made: list[FakeNameServer] = []

    def make(mute: bool = False, cls: type[FakeNameServer] = FakeNameServer) -> FakeNameServer:
        made.append(cls(copy.deepcopy(SNAPSHOT["tables"]), "pynamesrv", mute))
        return made[-1]

    yield make
    for n in made:
        n.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _round(targets: list[Target], timeout: float) -> dict[str, list[dict[str, Any]]]:
    plan = CollectPlan(targets, Path("unused"), 1.0, 1.0, timeout, BoundInputs())
    with plan.reader() as reader:
        return run_round(reader, 4).rows_by_node


def test_a_snapshot_node_is_read_with_request_code_60001(
        fake_nodes: Callable[..., FakeNameServer]) -> None:
    node = fake_nodes()
    rows = _round([Target("n1", "127.0.0.1", node.port)], timeout=5)["n1"]
    assert {(r["table"], r["key"]) for r in rows[1:]} == {
        (r["table"], r["key"]) for r in entry_rows("n1", 4, SNAPSHOT)[1:]}
    assert node.requests[RequestCode.GET_NODE_SNAPSHOT] == 1


def test_unreachable_and_mute_nodes_are_recorded_unavailable(
        fake_nodes: Callable[..., FakeNameServer]) -> None:
    mute = fake_nodes(mute=True)
    garbage = fake_nodes(cls=GarbageNode)
    rows = _round([Target("n1", "127.0.0.1", _closed_port()),
                   Target("n2", "127.0.0.1", mute.port),
                   Target("n3", "127.0.0.1", garbage.port)], timeout=0.5)
    for node, reason in (("n1", "connect failed"), ("n2", "timeout"), ("n3", "not JSON")):
        assert len(rows[node]) == 1
        assert rows[node][0]["available"] is False and rows[node][0]["table"] is None
        assert reason in rows[node][0]["error"], rows[node][0]["error"]


def test_collect_writes_rows_per_node_and_a_manifest(
        tmp_path: Path, fake_nodes: Callable[..., FakeNode]) -> None:
    up = fake_nodes()
    targets = [Target("n1", "127.0.0.1", up.port), Target("n2", "127.0.0.1", _closed_port())]
    seen: list[str] = []
    seen_cost: list[tuple[int, int]] = []
    plan = CollectPlan(targets, tmp_path / "out", interval_s=0.05, duration_s=0.1,
                       timeout_s=0.05, bound_inputs=BoundInputs(1000, 200, 3000))

    def progress(r: RoundResult, total: int) -> None:
        seen.append(r.status_line())
        seen_cost.append(r.cost())

    manifest = collect(plan, progress=progress)
    assert manifest.rounds == 3 and len(seen) == 3
    assert seen[0] == "n1:6 n2:DOWN"
    on_disk = Manifest.from_json((tmp_path / "out" / "manifest.json").read_bytes())
    assert on_disk.rounds == 3 and on_disk.ended_at is not None
    assert on_disk.nodes == [NodeRef("n1", f"127.0.0.1:{up.port}"),
                             NodeRef("n2", targets[1].address)]
    assert on_disk.bound_inputs == BoundInputs(1000, 200, 3000)
    n1 = [orjson.loads(x) for x in (tmp_path / "out" / "rows-n1.jsonl").read_bytes().splitlines()]
    n2 = [orjson.loads(x) for x in (tmp_path / "out" / "rows-n2.jsonl").read_bytes().splitlines()]
    assert len(n1) == 3 * 7 and {r["round"] for r in n1} == {0, 1, 2}
    assert seen_cost and all(requests >= 1 for requests, _ in seen_cost)
    assert [r["available"] for r in n2] == [False, False, False]


def test_collect_refuses_a_directory_that_holds_a_collection(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{}")
    with pytest.raises(UserError, match="already holds a collection"):
        prepare_out_dir(tmp_path)


def test_collect_stops_early_when_asked(tmp_path: Path,
                                        fake_nodes: Callable[..., FakeNode]) -> None:
    up = fake_nodes()
    stop = threading.Event()
    plan = CollectPlan([Target("n1", "127.0.0.1", up.port)], tmp_path / "o", 0.05, 60, 0.05,
                       BoundInputs())
    manifest = collect(plan, progress=lambda r, total: stop.set(), stop=stop)
    assert manifest.rounds == 1


# -------------------------------------------------------------------- CLI


@pytest.mark.parametrize("text, seconds", [
    ("2s", 2.0), ("500ms", 0.5), ("1.5m", 90.0), ("1h", 3600.0), ("3", 3.0)])
def test_duration_parses_units(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0s", "-1s", "2 days", "s"])
def test_duration_rejects_nonsense(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)


def test_node_spec() -> None:
    assert node_spec("n1=127.0.0.1:9876") == Target("n1", "127.0.0.1", 9876)
    for bad in ("n1", "n1=host", "=h:1", "n1=h:x"):
        with pytest.raises(argparse.ArgumentTypeError):
            node_spec(bad)
