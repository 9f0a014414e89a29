"""Audit rows, manifest, collector and CLI parsing: no Spark, fake node on a socket."""

from __future__ import annotations

import argparse
import copy
import itertools
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from cluster.audit.cli import EXIT_NEVER_ANSWERED, node_spec
from cluster.audit.collector import (
    CollectPlan,
    RoundResult,
    Target,
    collect,
    prepare_out_dir,
    run_round,
)
from cluster.audit.restarts import RestartWatch
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
from cluster.cli.main import main as cli_main
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


class FakeNode(FakeNameServer):
    """A pynamesrv node answering SNAPSHOT's tables, each snapshot with the next ``seq`` of
    ``seqs`` (a node run's count); ``garbage`` answers a snapshot that is not JSON."""

    def __init__(self, seqs: Iterator[int], mute: bool = False, garbage: bool = False) -> None:
        super().__init__(copy.deepcopy(SNAPSHOT["tables"]), "pynamesrv", mute)
        self.seqs = seqs
        self.garbage = garbage

    def _reply(self, cmd: RemotingCommand) -> RemotingCommand | None:
        if cmd.code != RequestCode.GET_NODE_SNAPSHOT:
            return super()._reply(cmd)
        body = b"not json" if self.garbage else orjson.dumps({**SNAPSHOT, "seq": next(self.seqs)})
        return response_to(cmd, ResponseCode.SUCCESS, body=body)


@pytest.fixture
def fake_nodes() -> Iterator[Callable[..., FakeNode]]:
    made: list[FakeNode] = []

    def make(seqs: Iterator[int] | None = None, mute: bool = False,
             garbage: bool = False) -> FakeNode:
        made.append(FakeNode(seqs or itertools.count(1), mute, garbage))
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
        fake_nodes: Callable[..., FakeNode]) -> None:
    node = fake_nodes()
    rows = _round([Target("n1", "127.0.0.1", node.port)], timeout=5)["n1"]
    assert rows == entry_rows("n1", 4, {**SNAPSHOT, "seq": 1})
    assert node.requests[RequestCode.GET_NODE_SNAPSHOT] == 1


def test_unreachable_and_mute_nodes_are_recorded_unavailable(
        fake_nodes: Callable[..., FakeNode]) -> None:
    mute, garbage = fake_nodes(mute=True), fake_nodes(garbage=True)
    rows = _round([Target("n1", "127.0.0.1", _closed_port()),
                   Target("n2", "127.0.0.1", mute.port),
                   Target("n3", "127.0.0.1", garbage.port)], timeout=0.5)
    for node, reason in (("n1", "Connection refused"), ("n2", "timeout"), ("n3", "not JSON")):
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
    assert [r["available"] for r in n2] == [False, False, False]
    assert all(requests >= 1 for requests, _ in seen_cost)


def test_a_node_that_restarted_between_rounds_is_recorded_unavailable(
        tmp_path: Path, fake_nodes: Callable[..., FakeNode]) -> None:
    """Its seq went back (5 -> 1): it was down between the rounds, though none saw it so."""
    restarted = fake_nodes(iter([4, 5, 1, 2]))
    steady = fake_nodes()
    targets = [Target("n1", "127.0.0.1", restarted.port), Target("n2", "127.0.0.1", steady.port)]
    seen: list[str] = []
    plan = CollectPlan(targets, tmp_path / "out", interval_s=0.05, duration_s=0.16,
                       timeout_s=1.0, bound_inputs=BoundInputs())  # 4 rounds
    collect(plan, progress=lambda r, total: seen.append(r.status_line()))
    assert seen == ["n1:6 n2:6", "n1:6 n2:6", "n1:RESTARTED n2:6", "n1:6 n2:6"]
    rows = [orjson.loads(x) for x in (tmp_path / "out" / "rows-n1.jsonl").read_bytes()
            .splitlines()]
    down = [r for r in rows if r["round"] == 2]
    assert len(down) == 1 and down[0]["available"] is False
    assert down[0]["error"] == "restarted since the previous round (snapshot seq 5 -> 1)"
    assert {r["round"] for r in rows if r["available"]} == {0, 1, 3}


def test_restarts_are_told_by_a_seq_not_above_the_last_answered_one() -> None:
    watch = RestartWatch()
    body = dict(SNAPSHOT)
    assert watch.check("n1", {**body, "seq": 3}, None) == ({**body, "seq": 3}, None)
    assert watch.check("n1", {**body, "seq": 9}, None)[1] is None
    assert watch.check("n2", {**body, "seq": 1}, None)[1] is None  # each node its own count
    assert watch.check("n1", {**body, "seq": 9}, None) == (
        None, "restarted since the previous round (snapshot seq 9 -> 9)")
    assert watch.check("n1", None, "timeout after 1s") == (None, "timeout after 1s")
    assert watch.check("n1", {**body, "seq": 1}, None)[1] is None  # the outage was recorded
    assert watch.check("n1", {"takenAt": 1, "tables": {}}, None)[1] is None  # no seq: no claim
    assert watch.check("n3", {**body, "run": 100, "seq": 40}, None)[1] is None
    # A young node that restarted and served more snapshots since than before: its run tells.
    assert watch.check("n3", {**body, "run": 700, "seq": 41}, None) == (
        None, "restarted since the previous round (snapshot seq 40 -> 41)")


def test_collect_with_every_node_down_warns_and_exits_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    down = f"127.0.0.1:{_closed_port()}"
    argv = ["audit", "collect", "-n", down, "--interval", "200ms", "--duration", "400ms",
            "--out", str(tmp_path / "out")]
    assert cli_main(argv) == EXIT_NEVER_ANSWERED == 1
    err = capsys.readouterr().err
    assert f"warning: no node answered the first round ({down}: " in err
    assert "Connection refused" in err
    assert f"warning: {down} answered in none of the 3 rounds" in err


def test_collect_with_one_node_never_answering_names_it(
        tmp_path: Path, fake_nodes: Callable[..., FakeNode],
        capsys: pytest.CaptureFixture[str]) -> None:
    up = fake_nodes()
    argv = ["audit", "collect", "--node", f"n1=127.0.0.1:{up.port}",
            "--node", f"n2=127.0.0.1:{_closed_port()}", "--interval", "200ms",
            "--duration", "200ms", "--out", str(tmp_path / "out")]
    assert cli_main(argv) == 1
    err = capsys.readouterr().err
    assert "first round" not in err and "warning: n2 answered in none of the 2 rounds" in err


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


def test_node_spec() -> None:
    assert node_spec("n1=127.0.0.1:9876") == Target("n1", "127.0.0.1", 9876)
    for bad in ("n1", "n1=host", "=h:1", "n1=h:x"):
        with pytest.raises(argparse.ArgumentTypeError):
            node_spec(bad)
