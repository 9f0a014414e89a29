"""``audit watch``'s fallback: a node that does not know GET_NODE_DIGEST is read another way."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest

from cluster.audit.watch import FallbackSource, WatchPlan, watch
from cluster.core.digest_source import TablesDigest
from cluster.core.node_link import NotAnswering
from cluster.core.protocol.codes import RequestCode
from tests.fake_namesrv import FakeNameServer
from tests.fake_namesrv import tables as fake_tables


class NoDigest(TablesDigest):
    """A node answering REQUEST_CODE_NOT_SUPPORTED to the digest code."""

    kind = "digest"

    def __init__(self) -> None:
        super().__init__("j1", "digest", lambda timeout: (0, {}))
        self.closed = False

    def summary(self, timeout: float, heartbeats: bool = False) -> dict[str, Any]:
        raise NotAnswering("response code 3  request type 60002 not supported",
                           unsupported=True)

    def close(self) -> None:
        self.closed = True


def test_a_node_without_the_digest_code_is_read_through_the_fallback() -> None:
    said: list[str] = []
    tables = {"broker": {"b": {"cluster": "C", "brokerAddrs": {"0": "h:1"}}}, "topic": {}}
    digest = NoDigest()
    src = FallbackSource(digest, lambda: TablesDigest("j1", "standard codes",
                                                      lambda t: (5, tables)), said.append)
    doc = src.summary(1.0)
    assert doc["tables"]["broker"]["keys"] == 1 and set(doc["tables"]) == {"broker", "topic"}
    assert src.kind == "standard codes" and digest.closed
    assert said == ["j1 does not answer GET_NODE_DIGEST (response code 3  request type 60002 "
                    "not supported); reading it through the standard request codes "
                    "(standard codes)"]
    assert src.summary(1.0) == doc and len(said) == 1


def test_a_silent_node_stays_on_the_digest_code() -> None:
    def dead(timeout: float) -> tuple[int, dict[str, Any]]:
        raise NotAnswering("no answer within 1s")

    digest = NoDigest()
    src = FallbackSource(digest, lambda: TablesDigest("j1", "standard codes", dead),
                         lambda s: None)
    with pytest.raises(NotAnswering, match="not supported"):
        src.summary(1.0)
    assert src.kind == "digest" and not digest.closed
    no_fallback = FallbackSource(NoDigest(), None, lambda s: None)
    with pytest.raises(NotAnswering):
        no_fallback.summary(1.0)


def test_a_dropped_connection_is_not_taken_for_an_unknown_code() -> None:
    class Restarted(NoDigest):
        def summary(self, timeout: float, heartbeats: bool = False) -> dict[str, Any]:
            raise NotAnswering("connection closed before the reply")

    made: list[str] = []

    def fallback() -> TablesDigest:
        made.append("fallback")
        return TablesDigest("j1", "standard codes", lambda t: (5, {}))

    digest = Restarted()
    src = FallbackSource(digest, fallback, lambda s: None)
    with pytest.raises(NotAnswering, match="connection closed"):
        src.summary(1.0)
    assert src.kind == "digest" and not digest.closed and made == []


def test_watch_reads_java_nodes_through_the_standard_codes() -> None:
    """A 4.9-like node (no reply to the digest code) and a 5.x-like one (code 3) are read with
    the audit's reader and compared with a pynamesrv-like one; one lacks broker-b."""
    full = fake_tables({"broker-a": ["T0"], "broker-b": ["T1"]})
    fakes = {"j4": FakeNameServer(copy.deepcopy(full), "java4"),
             "j5": FakeNameServer(full, "java5"),
             "py": FakeNameServer(fake_tables({"broker-a": ["T0"]}), "pynamesrv")}
    plan = WatchPlan(tuple((n, "127.0.0.1", f.port) for n, f in fakes.items()), 0.3, 0.3,
                     None, 2, 10, None)
    out = io.StringIO()
    try:
        assert watch(plan, out) == 1
    finally:
        for f in fakes.values():
            f.close()
    text = out.getvalue()
    assert "j4 does not answer GET_NODE_DIGEST (no answer within" in text, text
    assert "j5 does not answer GET_NODE_DIGEST (response code 3" in text, text
    assert "DIVERGE" in text and "broker  broker-b  odd: py  missing on py" in text, text
    assert fakes["j4"].requests[RequestCode.GET_BROKER_CLUSTER_INFO] > 0
    assert fakes["py"].requests[RequestCode.GET_NODE_SNAPSHOT] > 0
