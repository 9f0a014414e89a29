"""The status page without a cluster: agreement, the gatherer's deadline, views and HTTP routes."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from cluster.core.config import load_cluster
from cluster.core.errors import ConfigError
from supervisor.agreement import compare, counts
from supervisor.node_snapshot import NotAnswering, fetch_snapshot
from supervisor.report_finder import latest_reports
from supervisor.status_board import StatusBoard
from supervisor.status_gather import Gatherer
from supervisor.status_page import StatusPage
from supervisor.status_view import banner
from tests.nodeproc import free_port, poll_until


def tables(brokers: dict[str, Any], topics: dict[str, Any] | None = None,
           kv: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"cluster": {}, "broker": brokers, "topic": topics or {}, "filter": {}, "live": {},
            "kv": kv or {}}


A = {"cluster": "C", "brokerAddrs": {"0": "127.0.0.1:10911"}}
Q = {"broker-a": {"perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}}


def test_agreement_names_missing_and_different_entries() -> None:
    same = tables({"broker-a": A}, {"T": Q}, {"NS": {"k": "v"}})
    lacking = tables({}, {}, {"NS": {"k": "v"}})
    other = tables({"broker-a": {**A, "brokerAddrs": {"0": "127.0.0.1:1"}}}, {"T": Q},
                   {"NS": {"k": "v"}})
    a = compare({"n1": same, "n2": lacking, "n3": other}, stale=["n2", "gone"])
    got = [(d.table, d.key, d.present, d.missing, d.differs) for d in a.differences]
    assert got == [("broker", "broker-a", ("n1", "n3"), ("n2",), False),
                   ("topic", "T", ("n1", "n3"), ("n2",), False)]
    assert a.by_table == {"broker": 1, "topic": 1} and a.stale == ("n2",)
    a2 = compare({"n1": same, "n3": other})
    assert [(d.key, d.differs) for d in a2.differences] == [("broker-a", True)]
    assert compare({"n1": same, "n2": dict(same)}).agrees
    assert compare({"n1": same}).agrees and counts(same).kv == 1


class _Silent:
    """A TCP listener that accepts and never answers, as a SIGSTOPped node does."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def silent() -> Iterator[_Silent]:
    s = _Silent()
    yield s
    s.close()


def test_a_silent_node_costs_one_deadline(silent: _Silent) -> None:
    t0 = time.monotonic()
    with pytest.raises(NotAnswering, match="no answer within 0.3s"):
        fetch_snapshot("127.0.0.1", silent.port, 0.3)
    assert time.monotonic() - t0 < 2.0
    with pytest.raises(NotAnswering):
        fetch_snapshot("127.0.0.1", free_port(), 0.3)


def _node(name: str, port: int, pid: int = 100) -> dict[str, Any]:
    return {"name": name, "host": "127.0.0.1", "port": port, "pid": pid, "pgid": pid,
            "state": "running", "uptime_s": 3.0, "restarts": 0, "last_exit": None}


def test_gatherer_compares_a_silent_node_as_last_seen(silent: _Silent) -> None:
    board = StatusBoard()
    answers = {1: tables({"broker-a": A}), 2: tables({"broker-a": A}), silent.port: tables({})}

    def fetch(host: str, port: int, timeout: float) -> dict[str, Any]:
        if port == silent.port and board.read().readings:
            return fetch_snapshot(host, port, timeout)
        return {"tables": answers[port]}

    g = Gatherer(board, [], deadline_s=0.3, fetch=fetch)
    board.publish_supervisor(time.time(), False,
                             [_node("n1", 1), _node("n2", 2), _node("n3", silent.port)], [])
    g.gather_once()
    assert banner(board.read()) == {"cls": "bad", "text": "The nodes disagree on 1 broker."}
    t0 = time.monotonic()
    g.gather_once()
    assert time.monotonic() - t0 < 2.0
    state = board.read()
    assert state.readings["n3"].stale and state.agreement is not None
    assert state.agreement.stale == ("n3",)
    text = banner(state)["text"]
    assert text.startswith("The nodes disagree on 1 broker.")
    assert "n3 is not answering (compared with its tables as of" in text
    board.publish_supervisor(time.time(), False,
                             [_node("n1", 1), _node("n2", 2), _node("n3", silent.port, pid=7)],
                             [])
    g.gather_once()
    state = board.read()
    assert not state.readings["n3"].stale, "a new process does not inherit old tables"
    assert banner(state) == {"cls": "warn", "text": "All 2 nodes agree: 1 broker, 0 topics, "
                             "0 KV entries. n3 is not answering."}
    g.close()


def _cfg(tmp_path: Path, http_port: int) -> Path:
    p = tmp_path / "cluster.yaml"
    p.write_text(f"control: tcp://127.0.0.1:{free_port()}\nsupervisor:\n"
                 f"  status_http: 127.0.0.1:{http_port}\n"
                 f"nodes:\n  - {{name: n1, port: {free_port()}}}\n")
    return p


class _Host:
    def __init__(self) -> None:
        self.shutting_down = False

    def now(self) -> float:
        return time.monotonic()

    def children(self) -> list[Any]:
        return []


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_page_routes_escape_and_serve_the_latest_reports(tmp_path: Path) -> None:
    run = tmp_path / "chaos-out" / "pause-node-7"
    (run / "audit").mkdir(parents=True)
    (run / "chaos-report.html").write_text("<html>chaos</html>")
    (run / "result.json").write_text('{"ok": false, "scenario": "pause-node", "seed": 7, '
                                     '"checks": [{"name": "converged", "ok": false}]}')
    (run / "audit" / "audit-report.html").write_text("<html>audit</html>")
    (run / "audit" / "audit-report.json").write_text('{"verdict": {"holds": true}}')
    reports = {r.kind: r for r in latest_reports([tmp_path])}
    assert reports["chaos"].summary == "pause-node seed 7: FAIL (converged)"
    assert reports["audit"].ok is True

    port = free_port()
    page = StatusPage(load_cluster(_cfg(tmp_path, port)), "127.0.0.1", port)
    page.gatherer.report_roots = [tmp_path]
    page.start()
    try:
        page.publish(_Host())
        poll_until(lambda: page.board.read().reports, timeout=10, interval=0.05,
                   what="the report list gathered")
        status, body = _get(page.url)
        assert status == 200 and b"pynamesrv cluster" in body
        assert b'href="/reports/chaos"' in body and b"FAIL (converged)" in body
        assert _get(page.url + "reports/chaos") == (200, b"<html>chaos</html>")
        assert _get(page.url + "reports/audit") == (200, b"<html>audit</html>")
        assert _get(page.url + "reports/../../etc/passwd")[0] == 404
        assert _get(page.url + "nothing")[0] == 404
        doc = orjson.loads(_get(page.url + "status.json")[1])
        assert doc["nodes"] == [] and doc["header"]["control"].startswith("tcp://")
        assert b'id="agreement"' in _get(page.url + "fragment")[1]
        page.board.publish_supervisor(time.time(), False, [_node("<b>x</b>", 1)], [])
        assert b"&lt;b&gt;x&lt;/b&gt;" in _get(page.url + "fragment")[1]
    finally:
        page.close()


def test_status_http_is_validated(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    for value, msg in (("9880", "expected HOST:PORT"), ("127.0.0.1:0", "expected HOST:PORT"),
                       ("127.0.0.1:70000", "expected HOST:PORT")):
        bad.write_text(f"supervisor:\n  status_http: '{value}'\nnodes:\n"
                       "  - {name: n1, port: 9876}\n")
        with pytest.raises(ConfigError, match=f"supervisor.status_http: {msg}"):
            load_cluster(bad)
    bad.write_text("supervisor:\n  status_http: 127.0.0.1:9876\nnodes:\n"
                   "  - {name: n1, port: 9876}\n")
    with pytest.raises(ConfigError, match="9876 is also the port of nodes"):
        load_cluster(bad)
    with socket.create_server(("127.0.0.1", 0)) as busy:
        p = _cfg(tmp_path, busy.getsockname()[1])
        with pytest.raises(ConfigError, match="supervisor.status_http: .* is in use"):
            load_cluster(p, for_start=True)
        with pytest.raises(ConfigError, match="cannot bind"):
            StatusPage.open(load_cluster(p))
    assert load_cluster(_cfg(tmp_path, 9880)).supervisor.status_host_port == ("127.0.0.1", 9880)
