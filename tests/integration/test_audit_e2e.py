"""Audit end to end: real nodes, a broker registered to all, a paused node, a one-node KV put."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from cluster.audit.collector import CollectPlan, RoundResult, Target, collect
from cluster.audit.rows import BoundInputs
from cluster.cli.main import main
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.hide_snapshot import HideSnapshot
from tests.nodeproc import ROOT, Conn, NodeProcess, poll_until, start_all, stop_all

pyspark = pytest.importorskip("pyspark")

from pyspark.sql import SparkSession  # noqa: E402

from cluster.audit.session import build_session, has_active_session  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.spark]

INTERVAL = 1.0
TIMEOUT = 0.8
BROKER = {"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911",
          "clusterName": "DefaultCluster", "haServerAddr": "127.0.0.1:10912", "brokerId": "0",
          "compressed": "false", "bodyCrc32": "0"}
TOPIC_BODY = (b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":'
              b'{"counter":1,"timestamp":1},"topicConfigTable":{"TopicTest":{"order":false,'
              b'"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":'
              b'"TopicTest","topicSysFlag":0,"writeQueueNums":4}}}}')


@pytest.fixture(scope="session")
def spark_session() -> Iterator[SparkSession]:
    owned = not has_active_session()
    session = build_session("local[2]", "pynamesrv-audit-tests")
    yield session
    if owned:
        session.stop()


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[list[NodeProcess]]:
    started = start_all(NodeProcess(tmp_path / name, name=name) for name in ("n1", "n2", "n3"))
    try:
        yield started
    finally:
        for n in started:
            if n.proc is not None and n.proc.poll() is None:
                os.killpg(n.proc.pid, signal.SIGCONT)
        stop_all(started)


@pytest.fixture
def broker(nodes: list[NodeProcess]) -> Iterator[list[Conn]]:
    """broker-a registered to every node over connections kept open, as a real broker does
    (a closed connection makes the node forget the broker)."""
    conns = [Conn(n.addr) for n in nodes]
    try:
        register = RemotingCommand(code=RequestCode.REGISTER_BROKER, version=409,
                                   ext_fields=dict(BROKER), body=TOPIC_BODY)
        for c in conns:
            assert c.call(register).code == ResponseCode.SUCCESS
        yield conns
    finally:
        for c in conns:
            c.close()


def targets(nodes: list[NodeProcess]) -> list[Target]:
    return [Target(n.name, "127.0.0.1", n.port) for n in nodes]


class Recorder:
    """Progress callback that remembers which nodes answered in each round."""

    def __init__(self) -> None:
        self.rounds: list[dict[str, bool]] = []

    def __call__(self, result: RoundResult, total: int) -> None:
        self.rounds.append({n: rows[0]["available"] for n, rows in result.rows_by_node.items()})

    def trailing(self, node: str, up: bool) -> int:
        """How many of the latest rounds in a row had ``node`` up (or down)."""
        count = 0
        for r in reversed(list(self.rounds)):
            if r[node] != up:
                break
            count += 1
        return count


def test_paused_node_is_reported_for_the_pause_and_the_cluster_recovers(
        nodes: list[NodeProcess], broker: list[Conn], tmp_path: Path,
        spark_session: SparkSession, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "audit"
    rec, stop = Recorder(), threading.Event()
    plan = CollectPlan(targets(nodes), out, INTERVAL, 120, TIMEOUT, BoundInputs(2000, 1000, 5000))
    worker = threading.Thread(target=collect, args=(plan, rec, stop), daemon=True)
    worker.start()
    try:
        poll_until(lambda: len(rec.rounds) >= 2, timeout=20, what="two rounds before the pause")
        paused = nodes[1].proc
        assert paused is not None
        os.killpg(paused.pid, signal.SIGSTOP)
        t_stop = time.monotonic()
        poll_until(lambda: rec.trailing("n2", up=False) >= 3, timeout=20,
                   what="three rounds with n2 down")
        os.killpg(paused.pid, signal.SIGCONT)
        pause_s = time.monotonic() - t_stop
        poll_until(lambda: rec.trailing("n2", up=True) >= 3, timeout=20,
                   what="three rounds with n2 back")
    finally:
        stop.set()
        worker.join(30)
    assert not worker.is_alive()

    assert main(["audit", "run", str(out)]) == 0, capsys.readouterr()
    text = capsys.readouterr().out
    assert "verdict: EVENTUALLY CONSISTENT" in text
    doc = orjson.loads((out / "audit-report.json").read_bytes())
    down = [u for u in doc["unavailability"] if u["node"] == "n2"]
    assert len(down) == 1 and not down[0]["open"]
    assert abs(down[0]["duration_ms"] / 1000 - pause_s) <= INTERVAL, (down, pause_s)
    n2 = [n for n in doc["node_intervals"] if n["node"] == "n2"]
    assert len(n2) == 1 and n2[0]["causes"] == ["unavailable"], n2
    assert abs(n2[0]["duration_ms"] / 1000 - pause_s) <= INTERVAL, (n2, pause_s)
    assert "node n2 diverged from" in text
    assert doc["verdict"]["holds"] and doc["never_converged"] == []
    last = doc["rounds"][-1]
    assert last["unavailable_nodes"] == [] and last["agree"] == 4  # cluster broker topic live


def test_kv_put_to_one_node_never_converges(
        nodes: list[NodeProcess], broker: list[Conn], tmp_path: Path,
        spark_session: SparkSession, capsys: pytest.CaptureFixture[str]) -> None:
    put = RemotingCommand(code=RequestCode.PUT_KV_CONFIG, version=409,
                          ext_fields={"namespace": "ns", "key": "orphan", "value": "v"})
    assert broker[0].call(put).code == ResponseCode.SUCCESS
    out = tmp_path / "audit"
    argv = ["audit", "collect", "--interval", "0.5s", "--duration", "1s", "--out", str(out)]
    for t in targets(nodes):
        argv += ["--node", f"{t.name}={t.address}"]
    assert main(argv) == 0
    assert "collected 3 rounds from 3 nodes" in capsys.readouterr().out

    assert main(["audit", "run", str(out), "--bound", "60"]) == 1
    text = capsys.readouterr().out
    assert "kv       ns/orphan  extra on n1" in text and "never converged" in text
    doc = orjson.loads((out / "audit-report.json").read_bytes())
    assert [(i["table"], i["key"], i["kind"], i["nodes"]) for i in doc["never_converged"]] == [
        ("kv", "ns/orphan", "extra", ["n1"])]
    assert doc["verdict"]["holds"] is False and doc["verdict"]["bound_ms"] == 60_000
    assert all(r["agree"] == 4 and r["extra"] == 1 for r in doc["rounds"])


def _register(conn: Conn, name: str, addr: str) -> None:
    ext = {**BROKER, "brokerName": name, "brokerAddr": addr}
    reply = conn.call(RemotingCommand(code=RequestCode.REGISTER_BROKER, version=409,
                                      ext_fields=ext, body=TOPIC_BODY))
    assert reply.code == ResponseCode.SUCCESS


def _rounds_written(path: Path) -> int:
    try:
        return 1 + max(orjson.loads(line)["round"] for line in path.read_bytes().splitlines())
    except (OSError, ValueError):
        return 0


def test_nodes_that_do_not_answer_the_snapshot_are_audited_alike(
        nodes: list[NodeProcess], broker: list[Conn], tmp_path: Path,
        spark_session: SparkSession, capsys: pytest.CaptureFixture[str]) -> None:
    """n2 looks like Java 4.9 (no reply to code 60001), n3 like Java 5.x (code 3); n2 misses
    broker-b for a while: the verdict names the broker, the node and the interval."""
    out = tmp_path / "audit"
    j4, j5 = HideSnapshot(nodes[1].addr, "silent"), HideSnapshot(nodes[2].addr, "unsupported")
    late = Conn(nodes[1].addr)
    early = [Conn(nodes[0].addr), Conn(nodes[2].addr)]
    argv = [str(ROOT / ".venv" / "bin" / "pynamesrv"), "audit", "collect", "--interval", "0.5s",
            "--duration", "8s", "--timeout", "0.5s", "--out", str(out),
            "--node", f"n1={nodes[0].addr}", "--node", f"n2={j4.addr}", "--node", f"n3={j5.addr}"]
    try:
        collector = subprocess.Popen(argv, cwd=ROOT, stderr=subprocess.PIPE, text=True)
        rows = out / "rows-n1.jsonl"
        poll_until(lambda: _rounds_written(rows) >= 3, 20, what="three rounds before broker-b")
        for c in early:
            _register(c, "broker-b", "127.0.0.1:11911")
        missed_from = _rounds_written(rows)
        poll_until(lambda: _rounds_written(rows) >= missed_from + 4, 20, what="n2 missing it")
        _register(late, "broker-b", "127.0.0.1:11911")
        _, err = collector.communicate(timeout=30)
        assert collector.returncode == 0, err
    finally:
        for c in (late, *early):
            c.close()
        j4.close()
        j5.close()
    assert j4.hidden == 1 and j5.hidden == 1  # each asked once, then remembered

    per_node = {n: [orjson.loads(x) for x in (out / f"rows-{n}.jsonl").read_bytes().splitlines()]
                for n in ("n1", "n2", "n3")}
    for n, rows_of in per_node.items():
        assert all(r["available"] for r in rows_of), (n, [r for r in rows_of if r.get("error")])
        assert {r["table"] for r in rows_of} == {None, "cluster", "broker", "topic"}, n
    assert main(["audit", "run", str(out), "--bound", "60"]) == 0, capsys.readouterr()
    doc = orjson.loads((out / "audit-report.json").read_bytes())
    b = [i for i in doc["intervals"] if i["key"] == "broker-b"]
    assert len(b) == 1 and b[0]["nodes"] == ["n2"] and b[0]["kind"] == "missing", b
    assert not b[0]["open"] and 1.0 <= b[0]["duration_ms"] / 1000 <= 6.0, b
