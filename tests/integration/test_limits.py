"""Connection limits of a node: each one refuses or closes only the offending peer,
counts the hit and logs it once per peer, while other clients keep being answered."""

from __future__ import annotations

import socket
import struct
import time

import orjson
import psutil
import pytest

from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import encode_command
from tests.integration.test_node import BROKER, register
from tests.nodeproc import Conn, NodeProcess, poll_until

pytestmark = pytest.mark.integration

LIMITS = {"maxConnectionsPerAddress": "4", "headerMaxLength": "1024",
          "frameReadTimeoutSeconds": "1", "connectionWriteTimeoutSeconds": "2",
          "connectionMaxPendingBytes": "65536"}


@pytest.fixture
def node_props() -> dict[str, str]:
    return LIMITS


def answered(node: NodeProcess) -> bool:
    return answered_within(node, 5.0)


def answered_within(node: NodeProcess, timeout: float) -> bool:
    conn = Conn(node.addr, timeout=timeout)
    try:
        info = RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO, version=409)
        return conn.call(info).code == ResponseCode.SUCCESS
    except TimeoutError:
        return False
    finally:
        conn.close()


def closed_by_node(sock: socket.socket, timeout: float = 10.0) -> bool:
    sock.settimeout(timeout)
    try:
        while sock.recv(1 << 16):
            continue
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True


def limit_lines(node: NodeProcess, limit: str) -> list[str]:
    """The node's log lines for ``limit`` so far (stderr is read at stop: use the log file)."""
    return [ln for ln in node.stop().splitlines() if f"limit={limit}" in ln]


def test_connections_beyond_the_per_address_limit_are_refused(node: NodeProcess) -> None:
    held = [Conn(node.addr) for _ in range(4)]
    for _ in range(5):
        extra = socket.create_connection(("127.0.0.1", node.port))
        assert closed_by_node(extra)
        extra.close()
    held[0].close()
    poll_until(lambda: answered(node), timeout=10, what="a freed slot to be usable")
    for conn in held[1:]:
        conn.close()
    lines = limit_lines(node, "maxConnectionsPerAddress")
    assert len(lines) == 1 and "peer=127.0.0.1" in lines[0], lines


def test_a_header_over_the_limit_closes_its_connection_at_once(node: NodeProcess) -> None:
    sock = socket.create_connection(("127.0.0.1", node.port))
    # declares a 2000-byte header: refused from the first 8 bytes, the rest never comes
    sock.sendall(struct.pack(">iI", 4000, 2000))
    assert closed_by_node(sock, timeout=5)
    sock.close()
    assert answered(node)
    assert len(limit_lines(node, "frameMaxLength/headerMaxLength")) == 1


def test_a_slow_sender_is_closed_and_others_are_answered(node: NodeProcess) -> None:
    data = encode_command(register("Slow"))  # a real request, sent one byte at a time
    sock = socket.create_connection(("127.0.0.1", node.port))
    started = time.monotonic()
    closed = False
    for byte in data:
        try:
            sock.send(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
        assert answered(node)  # the node serves others meanwhile
        time.sleep(0.2)  # the slow sender's pace: the behaviour under test
        if time.monotonic() - started > 10:
            break
    assert closed or closed_by_node(sock, timeout=5)
    sock.close()
    assert len(limit_lines(node, "frameReadTimeoutSeconds")) == 1


def test_a_peer_that_reads_nothing_is_closed_with_bounded_memory(node: NodeProcess) -> None:
    broker = Conn(node.addr)
    topics = [f"T{i:05d}-{'x' * 40}" for i in range(2000)]  # a ~100 kB topic list reply
    assert broker.call(register_many(topics)).code == ResponseCode.SUCCESS
    io = next(p for p in node.workers("io") if p.name() == "pns-io-0")
    before = io.memory_info().rss
    sock = socket.create_connection(("127.0.0.1", node.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    request = RemotingCommand(code=RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, version=409)
    sent = 0
    sock.settimeout(0.5)
    try:
        for i in range(2000):
            request.opaque = i + 1
            sock.sendall(encode_command(request))
            sent += 1
    except (TimeoutError, BrokenPipeError, ConnectionResetError):
        pass  # the node stopped reading from this peer, or closed it
    poll_until(lambda: "limit=connectionWriteTimeoutSeconds" in node.log(), timeout=20,
               what="the stalled peer to be closed")
    poll_until(lambda: answered_within(node, 2.0), timeout=30,
               what="the node to answer others once the requests in flight are done")
    growth = io.memory_info().rss - before
    assert growth < 64 << 20, f"I/O worker grew by {growth >> 20} MB after {sent} requests"
    sock.close()
    broker.close()


def register_many(topics: list[str]) -> RemotingCommand:
    table = {t: {"order": False, "perm": 6, "readQueueNums": 4, "topicFilterType": "SINGLE_TAG",
                 "topicName": t, "topicSysFlag": 0, "writeQueueNums": 4} for t in topics}
    body = orjson.dumps({"filterServerList": [], "topicConfigSerializeWrapper": {
        "dataVersion": {"counter": 1, "timestamp": 1}, "topicConfigTable": table}})
    return RemotingCommand(code=RequestCode.REGISTER_BROKER, version=409, body=body,
                           ext_fields={**BROKER, "compressed": "false", "bodyCrc32": "0"})


def test_limits_leave_the_workers_alone(node: NodeProcess) -> None:
    workers = {p.pid for p in node.children()}
    for _ in range(3):
        extra = socket.create_connection(("127.0.0.1", node.port))
        extra.sendall(struct.pack(">iI", 10, 0xFF000000))
        assert closed_by_node(extra)
        extra.close()
    assert answered(node) and {p.pid for p in node.children()} == workers
    assert all(p.is_running() for p in map(psutil.Process, workers))


def _malformed() -> dict[str, bytes]:
    header = b"{not json"
    language = b'{"code":105,"language":99,"opaque":1,"flag":0,"extFields":{"topic":"T"}}'
    return {
        "negative length": struct.pack(">i", -5) + b"abcd",
        "unknown encoding": struct.pack(">iI", 8, 7 << 24 | 4) + b"abcd",
        "bad JSON header": struct.pack(">iI", 4 + len(header), len(header)) + header,
        "bad language": struct.pack(">iI", 4 + len(language), len(language)) + language,
        "short binary header": struct.pack(">iI", 8, 1 << 24 | 4) + b"abcd",
    }


def test_malformed_requests_are_logged_once_per_peer_and_kind(node: NodeProcess) -> None:
    """Every malformed request closes its connection; a client sending thousands makes a
    handful of log lines, not one per request."""
    frames = _malformed()
    for _ in range(50):
        for frame in frames.values():
            sock = socket.create_connection(("127.0.0.1", node.port))
            sock.sendall(frame)
            assert closed_by_node(sock)
            sock.close()
    assert answered(node)
    log = node.stop()
    bad = [ln for ln in log.splitlines() if "event=bad_request reason=" in ln]
    # one line per kind (frame, header) and process that saw it: I/O and business workers
    # (and, were this to last a minute, one line per kind with the count)
    assert 2 <= len(bad) <= 4 and all("peer=127.0.0.1" in ln for ln in bad), bad
    assert len(log) < 8192, log[-3000:]
