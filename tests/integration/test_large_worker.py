"""The large-frame I/O worker on a real node (on by default): a connection that sends a
registration of megabytes goes on in the niced worker, unnoticed by its peer; while its
queue is full the connection waits for it; without it, or while it is down, the
connection is served where it was."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import psutil
import pytest

from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import encode_command
from cluster.core.protocol.route_bodies import decode_cluster_info
from tests.nodeproc import Conn, NodeProcess, poll_until
from tests.unit.test_large_frames import registration

pytestmark = pytest.mark.integration

INFO = RequestCode.GET_BROKER_CLUSTER_INFO


def owner(node: NodeProcess, conn: Conn) -> str | None:
    """The name of the worker holding ``conn``'s server side."""
    port = conn.sock.getsockname()[1]
    for proc in node.workers("io"):
        try:
            if any(c.raddr and c.raddr.port == port for c in proc.net_connections("tcp")):
                return proc.name()
        except psutil.NoSuchProcess:
            continue
    return None


def answered(conn: Conn, frame: bytes, follow: RemotingCommand) -> dict[int, int]:
    """Send a large frame and a request right behind it in one write: code by opaque."""
    conn.send_raw(frame + encode_command(follow))
    replies = [conn.recv(), conn.recv()]
    return {r.opaque: r.code for r in replies}


def call_raw(conn: Conn, frame: bytes) -> RemotingCommand:
    conn.send_raw(frame)
    return conn.recv()


def brokers(conn: Conn) -> set[str]:
    reply = conn.call(RemotingCommand(code=INFO, version=409))
    assert reply.code == ResponseCode.SUCCESS
    return set(decode_cluster_info(reply.body)["brokerAddrTable"])


def test_a_registration_of_megabytes_moves_its_connection_to_the_large_worker(
        node: NodeProcess) -> None:
    assert sorted(p.name() for p in node.workers("io")) == ["pns-io-0", "pns-io-1"]
    conn = Conn(node.addr, timeout=30)
    try:
        assert brokers(conn) == set()
        assert owner(node, conn) == "pns-io-0"
        codes = answered(conn, registration(10_000, opaque=100),
                         RemotingCommand(code=INFO, version=409, opaque=101))
        assert codes == {100: ResponseCode.SUCCESS, 101: ResponseCode.SUCCESS}
        assert owner(node, conn) == "pns-io-1"  # the same TCP connection, served there
        assert brokers(conn) == {"b"}
        route = conn.call(RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, version=409,
                                          ext_fields={"topic": "T09999"}))
        assert route.code == ResponseCode.SUCCESS
        other = Conn(node.addr)  # clients stay with the workers on the port
        assert brokers(other) == {"b"} and owner(node, other) == "pns-io-0"
        other.close()
    finally:
        conn.close()
    # the peer closing it is seen there: the broker of that connection goes
    poll_until(lambda: brokers(Conn(node.addr)) == set(), what="broker removed on close")


def test_without_the_large_worker_the_connection_stays(tmp_path: Path) -> None:
    node = NodeProcess(tmp_path / "n", props={"ioLargeWorker": "false"}).start()
    conn = Conn(node.addr, timeout=30)
    try:
        assert [p.name() for p in node.workers("io")] == ["pns-io-0"]
        codes = answered(conn, registration(10_000, opaque=100),
                         RemotingCommand(code=INFO, version=409, opaque=101))
        assert codes == {100: ResponseCode.SUCCESS, 101: ResponseCode.SUCCESS}
        assert owner(node, conn) == "pns-io-0"
    finally:
        conn.close()
        node.stop()


def test_when_the_large_worker_dies_its_connections_close_and_later_ones_are_served(
        node: NodeProcess) -> None:
    conn = Conn(node.addr, timeout=30)
    assert call_raw(conn, registration(10_000, opaque=100)).code == ResponseCode.SUCCESS
    assert owner(node, conn) == "pns-io-1"
    [large] = [p for p in node.workers("io") if p.name() == "pns-io-1"]
    large.send_signal(signal.SIGKILL)
    assert conn.is_closed_by_peer(10)  # its connections died with it ...
    conn.close()
    probe = Conn(node.addr)
    poll_until(lambda: brokers(probe) == set(), what="its brokers removed")  # ... and brokers
    # a broker registering now is answered, handed over or served where it came in
    again = Conn(node.addr, timeout=30)
    try:
        assert call_raw(again, registration(10_000, opaque=7)).code == ResponseCode.SUCCESS
        assert brokers(probe) == {"b"}
        poll_until(lambda: any(p.name() == "pns-io-1" and p.pid != large.pid
                               for p in node.workers("io")), what="large worker restarted")

        def handed_over_again() -> bool:
            late = Conn(node.addr, timeout=30)
            try:
                assert call_raw(late, registration(10_000, opaque=8)).code == ResponseCode.SUCCESS
                return owner(node, late) == "pns-io-1"
            finally:
                late.close()

        poll_until(handed_over_again, timeout=15, interval=0.2,
                   what="the restarted large worker taking connections")
    finally:
        again.close()
        probe.close()


# not niced: once let go, it drains its queue well within the second a connection waits,
# also on a loaded machine
@pytest.mark.parametrize("node_props", [{"businessWriteNice": "0"}])
def test_brokers_arriving_together_all_reach_the_large_worker(node: NodeProcess) -> None:
    """More connections at once than its queue holds (one more than
    ``net.unix.max_dgram_qlen``): those that find it full wait for it instead of being read
    by the port's worker."""
    [large] = [p for p in node.workers("io") if p.name() == "pns-io-1"]
    room = int(Path("/proc/sys/net/unix/max_dgram_qlen").read_text()) + 1
    n = room + 3
    conns = [Conn(node.addr, timeout=30) for _ in range(n)]
    codes: dict[int, int] = {}
    try:
        poll_until(lambda: all(owner(node, c) == "pns-io-0" for c in conns),
                   what="the connections accepted")
        large.send_signal(signal.SIGSTOP)  # its queue fills and stays full
        try:
            for i, c in enumerate(conns):
                c.send_raw(registration(3000, opaque=i, name=f"b{i}"))
            # sockets queued for it (no process holds them), the rest waiting
            poll_until(lambda: sum(owner(node, c) is None for c in conns) == room,
                       what="the large worker's queue full")
        finally:
            large.send_signal(signal.SIGCONT)

        def answer(i: int, c: Conn) -> None:
            codes[i] = c.recv().code

        threads = [threading.Thread(target=answer, args=(i, c)) for i, c in enumerate(conns)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert codes == dict.fromkeys(range(n), ResponseCode.SUCCESS)
        assert [owner(node, c) for c in conns] == ["pns-io-1"] * n
        assert brokers(conns[0]) == {f"b{i}" for i in range(n)}
    finally:
        for c in conns:
            c.close()
