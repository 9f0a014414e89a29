"""Audit rows, manifest, collector and CLI parsing: no Spark, fake node on a socket."""

from __future__ import annotations

import argparse
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
    Target,
    collect,
    fetch_snapshot,
    poll_node,
    prepare_out_dir,
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
from cluster.core.protocol.command import response_to
from cluster.core.protocol.frame import FrameReader, decode_command, encode_command

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


class FakeNode:
    """Answers GET_NODE_SNAPSHOT on a loopback port; ``mute`` makes it accept but not reply."""

    def __init__(self, body: Callable[[], bytes], mute: bool = False) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.body = body
        self.mute = mute
        self.requests: list[int] = []
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.mute:
                self._held.append(conn)
                continue
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        reader = FrameReader()
        frames: list[bytes] = []
        while not frames:
            data = conn.recv(65536)
            if not data:
                return
            frames = reader.feed(data)
        cmd = decode_command(frames[0])
        self.requests.append(cmd.code)
        reply = response_to(cmd, ResponseCode.SUCCESS, body=self.body())
        conn.sendall(encode_command(reply))

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self.sock.close()
        self._thread.join(5)
        for c in self._held:
            c.close()


@pytest.fixture
def fake_nodes() -> Iterator[Callable[..., FakeNode]]:
    made: list[FakeNode] = []

    def make(body: Callable[[], bytes] | None = None, mute: bool = False) -> FakeNode:
        made.append(FakeNode(body or serving(itertools.count(1)), mute))
        return made[-1]

    yield make
    for n in made:
        n.close()


def serving(seqs: Iterator[int]) -> Callable[[], bytes]:
    """SNAPSHOT bodies with the ``seq`` of each request from ``seqs`` (a node run's count)."""
    return lambda: orjson.dumps({**SNAPSHOT, "seq": next(seqs)})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_fetch_snapshot_speaks_request_code_60001(fake_nodes: Callable[..., FakeNode]) -> None:
    node = fake_nodes()
    body = fetch_snapshot(Target("n1", "127.0.0.1", node.port), timeout=5)
    assert body == {**SNAPSHOT, "seq": 1}
    assert node.requests == [RequestCode.GET_NODE_SNAPSHOT]


def test_unreachable_and_mute_nodes_are_recorded_unavailable(
        fake_nodes: Callable[..., FakeNode]) -> None:
    refused = poll_node(Target("n1", "127.0.0.1", _closed_port()), 4, timeout=2)
    mute = fake_nodes(mute=True)
    silent = poll_node(Target("n2", "127.0.0.1", mute.port), 4, timeout=0.3)
    garbage = fake_nodes(body=lambda: b"not json")
    bad = poll_node(Target("n3", "127.0.0.1", garbage.port), 4, timeout=5)
    for rows, reason in ((refused, "ConnectionRefused"), (silent, "timeout"),
                         (bad, "not JSON")):
        assert len(rows) == 1
        assert rows[0]["available"] is False and rows[0]["table"] is None
        assert reason in rows[0]["error"]


def test_collect_writes_rows_per_node_and_a_manifest(
        tmp_path: Path, fake_nodes: Callable[..., FakeNode]) -> None:
    up = fake_nodes()
    targets = [Target("n1", "127.0.0.1", up.port), Target("n2", "127.0.0.1", _closed_port())]
    seen: list[str] = []
    plan = CollectPlan(targets, tmp_path / "out", interval_s=0.05, duration_s=0.1,
                       timeout_s=0.05, bound_inputs=BoundInputs(1000, 200, 3000))
    manifest = collect(plan, progress=lambda r, total: seen.append(r.status_line()))
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


def test_a_node_that_restarted_between_rounds_is_recorded_unavailable(
        tmp_path: Path, fake_nodes: Callable[..., FakeNode]) -> None:
    """Its seq went back (5 -> 1): it was down between the rounds, though none saw it so."""
    restarted = fake_nodes(body=serving(iter([4, 5, 1, 2])))
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
    argv = ["audit", "collect", "-n", down, "--interval", "50ms", "--duration", "100ms",
            "--out", str(tmp_path / "out")]
    assert cli_main(argv) == EXIT_NEVER_ANSWERED == 1
    err = capsys.readouterr().err
    assert f"warning: no node answered the first round ({down}: ConnectionRefused" in err
    assert f"warning: {down} answered in none of the 3 rounds" in err


def test_collect_with_one_node_never_answering_names_it(
        tmp_path: Path, fake_nodes: Callable[..., FakeNode],
        capsys: pytest.CaptureFixture[str]) -> None:
    up = fake_nodes()
    argv = ["audit", "collect", "--node", f"n1=127.0.0.1:{up.port}",
            "--node", f"n2=127.0.0.1:{_closed_port()}", "--interval", "50ms",
            "--duration", "50ms", "--out", str(tmp_path / "out")]
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
