"""One client flooding a node must not hurt the others (fair scheduling, issue "one client").

A node holding a 20,000-topic broker (GET_ALL_TOPIC_LIST replies of about 460 KB) and a
1 MB KV namespace is flooded by one connection pipelining heavy reads, once without
reading a byte of the replies and once reading them. Meanwhile another client asks
GET_KV_CONFIG and a route every 20 ms, and a live broker with a 3 s expiry heartbeats
every 300 ms on its own connection. Its latency must stay bounded, the broker must
never expire, and once the flooder closes, nothing it queued may delay anyone.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import select
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from cluster.client.fanout import BrokerIdentity, RegisterPayload, register_command
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import encode_command
from tests.nodeproc import Conn, NodeProcess

# serial: how long other clients wait during a flood assumes the machine to itself
pytestmark = [pytest.mark.integration, pytest.mark.serial]

FLOOD_S = 3.0
EXPIRY_MS = 3000
HEARTBEAT_S = 0.3
# The issue asks p99 < 100 ms on a quiet machine; the CI machine is shared and noisy.
P99_BOUND_S = 0.25
# A write waits for the write in flight and makes its own: each rewrites and fsyncs the
# 1 MB KV file. Without fair queues it waited behind every queued write: seconds.
WRITES_P99_BOUND_S = 1.0
AFTER_CLOSE_BOUND_S = 1.0
BIG = BrokerIdentity("FloodCluster", "big-broker", "127.0.0.1:20911")
LIVE = BrokerIdentity("FloodCluster", "live-broker", "127.0.0.1:20921")


def _topics(prefix: str, n: int) -> dict[str, dict[str, object]]:
    return {f"{prefix}-{i:08d}": {"order": False, "perm": 6, "readQueueNums": 4,
                                  "topicFilterType": "SINGLE_TAG", "topicName": f"{prefix}-{i:08d}",
                                  "topicSysFlag": 0, "writeQueueNums": 4} for i in range(n)}


def _register(conn: Conn, who: BrokerIdentity, topics: dict[str, dict[str, object]],
              expiry_ms: int = EXPIRY_MS) -> None:
    payload = RegisterPayload.build({"counter": 1, "timestamp": 1}, topics)
    cmd = register_command(who, payload)
    cmd.ext_fields = {**(cmd.ext_fields or {}), "heartbeatTimeoutMillis": str(expiry_ms)}
    assert conn.call(cmd).code == ResponseCode.SUCCESS


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    data = tmp_path_factory.mktemp("floods") / "n"
    data.mkdir()
    table = {f"key-{i:05d}": "v" * 1000 for i in range(1000)}  # a 1 MB namespace
    (data / "kvConfig.json").write_text(json.dumps({"configTable": {"BIG": table}}))
    n = NodeProcess(data, props={"brokerChannelExpiredTime": str(EXPIRY_MS),
                                 "scanNotActiveBrokerInterval": "100"}).start()
    big = Conn(n.addr, timeout=60)
    _register(big, BIG, _topics("FloodTopic", 20_000), 600_000)  # no heartbeats needed
    yield n
    big.close()
    n.stop()


class Broker(threading.Thread):
    """A live broker: registered on its own connection, heartbeating every HEARTBEAT_S."""

    def __init__(self, addr: str) -> None:
        super().__init__(daemon=True)
        self.conn = Conn(addr, timeout=10)
        _register(self.conn, LIVE, _topics("LiveTopic", 1))
        self.stop = threading.Event()
        self.worst = 0.0
        self.failures: list[str] = []

    def run(self) -> None:
        beat = RemotingCommand(code=RequestCode.BROKER_HEARTBEAT, version=409,
                               ext_fields={"brokerAddr": LIVE.broker_addr,
                                           "brokerName": LIVE.broker_name,
                                           "clusterName": LIVE.cluster_name, "brokerId": "0"})
        while not self.stop.wait(HEARTBEAT_S):
            start = time.monotonic()
            try:
                reply = self.conn.call(dataclasses.replace(beat, opaque=0))
                if reply.code != ResponseCode.SUCCESS:
                    self.failures.append(f"heartbeat answered {reply.code}")
            except OSError as exc:
                self.failures.append(f"heartbeat: {exc!r}")
            self.worst = max(self.worst, time.monotonic() - start)
        self.conn.close()


class Client(threading.Thread):
    """Another client: GET_KV_CONFIG and the live broker's route every 20 ms (``writes``:
    PUT_KV_CONFIG of its own key instead of the route)."""

    def __init__(self, addr: str, writes: bool = False) -> None:
        super().__init__(daemon=True)
        self.conn = Conn(addr, timeout=10)
        self.writes = writes
        self.stop = threading.Event()
        self.latencies: list[float] = []
        self.failures: list[str] = []

    def run(self) -> None:
        kv = RemotingCommand(code=RequestCode.GET_KV_CONFIG, version=409,
                             ext_fields={"namespace": "BIG", "key": "key-00001"})
        other = RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, version=409,
                                ext_fields={"topic": "LiveTopic-00000000"})
        if self.writes:
            other = RemotingCommand(code=RequestCode.PUT_KV_CONFIG, version=409, ext_fields={
                "namespace": "CALM", "key": "k", "value": "v"})
        while not self.stop.wait(0.02):
            for cmd, want in ((kv, ResponseCode.SUCCESS), (other, ResponseCode.SUCCESS)):
                start = time.monotonic()
                try:
                    reply = self.conn.call(dataclasses.replace(cmd, opaque=0))
                except OSError as exc:
                    self.failures.append(f"{cmd.code}: {exc!r}")
                    return
                self.latencies.append(time.monotonic() - start)
                if reply.code != want:
                    self.failures.append(f"{cmd.code} answered {reply.code} {reply.remark}")
        self.conn.close()

    def p99(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[int(len(ordered) * 0.99)]


def _flood(addr: str, frame: bytes, read: bool, seconds: float, sent: Any) -> None:
    """Pipeline ``frame`` for ``seconds``, reading the replies or never; ``sent.value``: how
    many were sent. The connection is closed with whatever it still has queued. Run in a
    process of its own, as an attacker would be."""
    burst = memoryview(frame * 50)
    sock = socket.create_connection(tuple(addr.rsplit(":", 1)))  # type: ignore[arg-type]
    sock.setblocking(False)
    total, todo = 0, burst
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            try:
                n = sock.send(todo)
                total += n
                todo = todo[n:] or burst
            except BlockingIOError:
                select.select([], [sock], [], 0.05)  # until the node has read some
            if read:
                try:
                    while sock.recv(1 << 20):
                        pass
                except BlockingIOError:
                    pass
    finally:
        sock.close()
    sent.value = total // len(frame)


def flood(addr: str, request: RemotingCommand, read: bool, seconds: float) -> int:
    """``_flood`` in a child process; how many requests it sent."""
    ctx = multiprocessing.get_context("spawn")
    sent = ctx.Value("q", 0)
    proc = ctx.Process(target=_flood, args=(addr, encode_command(request), read, seconds, sent))
    proc.start()
    proc.join(seconds + 30)
    if proc.is_alive():
        proc.kill()
        proc.join()
        raise AssertionError("the flooder did not stop")
    return int(sent.value)


def _answered_at_once(addr: str) -> float:
    conn = Conn(addr, timeout=30)
    try:
        start = time.monotonic()
        reply = conn.call(RemotingCommand(code=RequestCode.GET_KV_CONFIG, version=409,
                                          ext_fields={"namespace": "BIG", "key": "key-00002"}))
        assert reply.code == ResponseCode.SUCCESS
        return time.monotonic() - start
    finally:
        conn.close()


@pytest.mark.parametrize("request_code, read", [
    (RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, False),
    (RequestCode.GET_KVLIST_BY_NAMESPACE, True),
    (RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, True),
    (RequestCode.GET_KVLIST_BY_NAMESPACE, False),
    (RequestCode.PUT_KV_CONFIG, False),
], ids=["206-not-reading", "219-reading", "206-reading", "219-not-reading", "writes"])
def test_one_flooding_client_delays_no_one_and_expires_no_broker(
        node: NodeProcess, request_code: int, read: bool) -> None:
    """(A flood of writes: the other client writes too, and waits for a write or two.)"""
    writes = request_code == RequestCode.PUT_KV_CONFIG
    broker, client = Broker(node.addr), Client(node.addr, writes)
    broker.start()
    client.start()
    request = RemotingCommand(code=request_code, version=409, ext_fields={
        "namespace": "FLOOD" if writes else "BIG", "key": "k", "value": "v"})
    try:
        sent = flood(node.addr, request, read, FLOOD_S)
        after_close = _answered_at_once(node.addr)
    finally:
        client.stop.set()
        broker.stop.set()
        client.join(15)
        broker.join(15)
    assert sent > 1000, "the flood did not flood"
    assert broker.worst < EXPIRY_MS / 1000 / 2, f"heartbeat took {broker.worst:.2f} s"
    assert not client.failures and not broker.failures, (client.failures, broker.failures)
    assert len(client.latencies) > FLOOD_S / 0.05
    bound = WRITES_P99_BOUND_S if writes else P99_BOUND_S
    assert client.p99() < bound, f"p99 {client.p99() * 1000:.0f} ms, {len(client.latencies)}"
    assert after_close < AFTER_CLOSE_BOUND_S, f"{after_close:.2f} s after the flood closed"
