"""The status page without a cluster: agreement, the gatherer's deadline, views and HTTP routes."""

from __future__ import annotations

import copy
import re
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
from cluster.core.digest_source import TablesDigest
from cluster.core.errors import ConfigError
from cluster.core.node_link import NotAnswering
from supervisor.broker_rows import BrokerBook
from supervisor.report_finder import latest_reports
from supervisor.status.board import StatusBoard
from supervisor.status.gather import Gatherer, remote_source
from supervisor.status.keys import keys_context, parse_filter
from supervisor.status.page import StatusPage
from supervisor.status.templates import environment
from supervisor.status.view import Header, banner, context, difference_rows
from tests.nodeproc import free_port, poll_until

Q = {"perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}


def tables(brokers: dict[str, Any], topics: dict[str, Any] | None = None,
           kv: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"cluster": {}, "broker": brokers, "topic": topics or {}, "filter": {}, "live": {},
            "kv": kv or {}}


A = {"cluster": "C", "brokerAddrs": {"0": "127.0.0.1:10911", "1": "127.0.0.1:10921"}}


class Fakes:
    """In-memory nodes behind the gatherer's sources; a name in ``silent`` does not answer."""

    def __init__(self, per_node: dict[str, dict[str, Any]]) -> None:
        self.tables = per_node
        self.silent: set[str] = set()

    def source(self, name: str, host: str, port: int) -> TablesDigest:
        def read(timeout: float) -> tuple[int, dict[str, Any]]:
            if name in self.silent:
                raise NotAnswering(f"no answer within {timeout:g}s")
            return 1000, self.tables[name]
        return TablesDigest(name, "tables", read)


def _node(name: str, port: int, pid: int = 100, state: str = "running") -> dict[str, Any]:
    return {"name": name, "host": "127.0.0.1", "port": port, "pid": pid, "pgid": pid,
            "state": state, "uptime_s": 3.0, "restarts": 0, "last_exit": None}


def _gatherer(fakes: Fakes) -> tuple[StatusBoard, Gatherer]:
    board = StatusBoard()
    book = BrokerBook(version_of=lambda addr: "V4_9_8" if addr.endswith("10911") else "")
    return board, Gatherer(board, [], deadline_s=0.3, make_source=fakes.source, brokers=book)


def test_banner_never_says_all_agree_while_a_node_is_silent() -> None:
    same = tables({"broker-a": A}, {"T": {"broker-a": Q}})
    fakes = Fakes({"n1": same, "n2": copy.deepcopy(same), "n3": copy.deepcopy(same)})
    board, g = _gatherer(fakes)
    nodes = [_node("n1", 1), _node("n2", 2), _node("n3", 3)]
    board.publish_supervisor(time.time(), False, nodes, [])
    g.gather_once()
    assert banner(board.read()) == {"cls": "ok", "text": "All 3 nodes agree: 1 broker (2 "
                                    "addresses, 0 live), 1 topic, 0 KV entries."}
    fakes.silent.add("n3")
    board.publish_supervisor(time.time(), False,
                             [*nodes[:2], _node("n3", 3, state="paused")], [])
    g.gather_once()
    b = banner(board.read())
    assert b["cls"] == "warn" and "All 3" not in b["text"]
    assert b["text"].startswith("n1 and n2 agree: ")
    assert b["text"].endswith("n3 is not answering: whether it agrees is unknown.")
    board.publish_supervisor(time.time(), False,
                             [*nodes[:2], {**_node("n3", 3, pid=0), "state": "stopped"}], [])
    g.gather_once()
    assert banner(board.read())["text"].endswith("n3 is not running.")
    g.close()


def test_the_page_names_the_odd_node_and_what_differs() -> None:
    base = tables({"broker-a": A}, {f"T{i}": {"broker-a": dict(Q)} for i in range(30)},
                  {"NS": {"k": "v"}})
    odd = copy.deepcopy(base)
    odd["topic"]["T3"]["broker-a"]["perm"] = 4
    for i in range(10, 30):
        del odd["topic"][f"T{i}"]
    fakes = Fakes({"n1": base, "n2": copy.deepcopy(base), "n3": odd})
    board, g = _gatherer(fakes)
    nodes = [_node(n, i) for i, n in enumerate(fakes.tables, 1)]
    board.publish_supervisor(time.time(), False, nodes, [])
    g.gather_once()
    state = board.read()
    assert banner(state)["text"] == "The nodes disagree on 21 topic entries (odd: n3 on 21)."
    rows = {d["key"]: d for d in difference_rows(state.round, 100)}
    assert rows["T3"]["what"] == "perm: 4 on n3; 6 on n1, n2" and rows["T3"]["odd"] == ("n3",)
    assert rows["T12"]["what"] == "missing on n3" and rows["T12"]["missing"] == ("n3",)
    assert [(x.table, x.group, x.count, x.odd) for x in state.groups] == [
        ("topic", "broker-a", 21, (("n3", 21),))]
    assert [(b.addr, b.role, b.version, b.on) for b in state.brokers] == [
        ("127.0.0.1:10911", "master", "V4_9_8", ("n1", "n2", "n3")),
        ("127.0.0.1:10921", "slave 1", "", ("n1", "n2", "n3"))]
    keys = keys_context(state, parse_filter("table=topic&q=T1&node=n3"))
    assert [r["key"] for r in keys["rows"]] == [f"T1{i}" for i in range(10)]
    assert keys["matched"] == 10 and keys["total"] == 21
    lane = state.history.lanes["n3"][-1]
    past = keys_context(state, parse_filter(f"lane=n3&at={int(lane.start)}"))
    assert past["past"] and past["rows"][0]["key"] == "T10/broker-a"
    env = environment()
    ctx = context(state, Header("c.yaml", "a;b", "tcp://x"), 2000)
    page = env.get_template("page").render(ctx)
    assert "missing on n3" in page and ">what differs</th>" in page
    assert '<tr data-group="topic/broker-a">' in page and "V4_9_8" in page
    assert re.search(r'data-updated="\d\d:\d\d:\d\d"', page)
    assert 'href="/keys?lane=n3&amp;at=' in page
    keys_page = env.get_template("keys").render(keys)
    assert keys_page.count('<tr data-table="topic">') == 10
    t3 = env.get_template("keys").render(keys_context(state, parse_filter("q=T3")))
    assert "perm: 4 on n3; 6 on n1, n2" in t3 and "<b>n3</b>" in t3
    g.close()


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
    src = remote_source("n1", "127.0.0.1", silent.port)
    t0 = time.monotonic()
    with pytest.raises(NotAnswering, match="no answer within 0.3s"):
        src.summary(0.3)
    assert time.monotonic() - t0 < 2.0
    src.close()


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
