"""Connections handed to the large-frame worker: when an I/O worker lets one go, what
travels (the socket and the bytes read of its frame), and what the receiving side makes of it."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.test_io_route_hits import CFG, Loop, Transport, request
from tests.unit.test_large_frames import reads, registration
from worker.io.connection import LARGE_FRAME, Connection
from worker.io.handoff import (
    BUSY_RETRY_S,
    BUSY_WAIT_S,
    RETRY_S,
    HandoffSender,
    Outcome,
    bind_receiver,
    receive,
)
from worker.io.hub import Hub
from worker.io.route_replies import RouteReplies


class Sender:
    """Stands for HandoffSender: records what it passes; refuses when told to, and says
    busy ``busy`` times first."""

    def __init__(self, accept: bool = True, busy: int = 0) -> None:
        self.accept = accept
        self.busy = busy
        self.offered: list[bytes] = []
        self.held_off = False
        self.sent: list[tuple[int, bytes]] = []

    def send(self, conn_fd: int, raw: bytes) -> Outcome:
        self.offered.append(raw)
        if self.held_off:
            return Outcome.REFUSED
        if self.busy:
            self.busy -= 1
            return Outcome.BUSY
        if self.accept:
            self.sent.append((conn_fd, raw))
        return Outcome.HANDED if self.accept else Outcome.REFUSED

    def hold_off(self) -> None:
        self.held_off = True


class TimedLoop(Loop):
    """A loop whose clock is set by the test and whose timers it runs."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def time(self) -> float:
        return self.now

    def call_later(self, delay: float, fn: Callable[[], None]) -> None:
        self.timers.append((self.now + delay, fn))

    def advance(self, seconds: float) -> None:
        """Move the clock, running the timers due on the way."""
        self.now += seconds
        due = [t for t in self.timers if t[0] <= self.now]
        self.timers = [t for t in self.timers if t[0] > self.now]
        for _, fn in due:
            fn()


class Sock:
    def fileno(self) -> int:
        return 42

    def setsockopt(self, *args: Any) -> None:
        pass


class PlainTransport(Transport):
    """A plain TCP transport: it has a socket and can be aborted."""

    def __init__(self) -> None:
        super().__init__()
        self.aborted = False
        self.paused = False

    def get_extra_info(self, name: str) -> Any:
        return Sock() if name == "socket" else super().get_extra_info(name)

    def abort(self) -> None:
        self.aborted = True

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


def plain(sender: Sender | None, loop: Loop | None = None
          ) -> tuple[Hub, Connection, PlainTransport]:
    hub = Hub(CFG, loop or Loop(), None, RouteReplies(lambda: b"1"))  # type: ignore[arg-type]
    hub._schedule_flush = lambda: None  # type: ignore[method-assign]
    hub.handoff = sender  # type: ignore[assignment]
    conn, transport = Connection(hub), PlainTransport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    return hub, conn, transport


@pytest.fixture(scope="module")
def big() -> bytes:
    frame = registration(3000)
    assert len(frame) > LARGE_FRAME + 4
    return frame


def test_a_connection_whose_next_frame_is_large_is_handed_over(big: bytes) -> None:
    sender = Sender()
    hub, conn, transport = plain(sender)
    conn.data_received(big[:3])  # not even a length word yet: nothing to judge
    assert sender.sent == []
    conn.data_received(big[3:5000])
    assert sender.sent == [(42, big[:5000])]  # the socket and every byte read of the frame
    assert transport.aborted and conn.handed_off
    conn.connection_lost(None)
    assert not hub.events and not hub.conns  # no channel closed for it
    assert hub.m.counters["connections_handed_off"] == 1
    assert "connections_closed" not in hub.m.counters


def test_a_connection_with_a_request_in_flight_is_kept(big: bytes) -> None:
    sender = Sender()
    hub, conn, transport = plain(sender)
    conn.data_received(request("A", 1))  # a route lookup goes to the pool: in flight
    assert conn.pending
    reads(conn, big[:5000], 7000)
    assert sender.sent == [] and not transport.aborted
    reads(conn, big[5000:], 7000)
    assert [f for _, f, _, _ in hub.lanes.brokers] == [big[4:]]  # read here, whole


def test_a_small_frame_before_it_in_the_same_read_keeps_it_here(big: bytes) -> None:
    sender = Sender()
    hub, conn, transport = plain(sender)
    conn.data_received(request("A", 1) + big[:5000])
    assert sender.sent == [] and not transport.aborted


def test_a_refused_hand_off_loses_nothing(big: bytes) -> None:
    sender = Sender(accept=False)
    hub, conn, transport = plain(sender)
    reads(conn, big, 7000)
    assert not transport.aborted and not conn.handed_off
    assert [f for _, f, _, _ in hub.lanes.brokers] == [big[4:]]


def test_while_the_large_worker_is_busy_the_connection_reads_nothing_and_tries_again(
        big: bytes) -> None:
    sender, loop = Sender(busy=3), TimedLoop()
    hub, conn, transport = plain(sender, loop)
    conn.data_received(big[:5000])
    assert transport.paused and not transport.aborted and sender.sent == []
    assert conn.reader.collecting() == (0, 0)  # the frame's start is held, not read here
    for _ in range(3):
        loop.advance(BUSY_RETRY_S)
    assert sender.sent == [(42, big[:5000])]  # the same bytes, once it had room
    assert transport.aborted and conn.handed_off and len(sender.offered) == 4
    assert not hub.lanes.brokers


def test_a_large_worker_busy_for_too_long_leaves_the_connection_here(big: bytes) -> None:
    sender, loop = Sender(busy=10**6), TimedLoop()
    hub, conn, transport = plain(sender, loop)
    conn.data_received(big[:5000])
    while loop.now < BUSY_WAIT_S + BUSY_RETRY_S:
        loop.advance(BUSY_RETRY_S)
    assert not transport.paused and not transport.aborted and not conn.handed_off
    assert not loop.timers and conn.reader.collecting() == (len(big) - 4, 4996)
    assert sender.held_off  # nothing is offered for a while
    reads(conn, big[5000:], 7000)
    assert [f for _, f, _, _ in hub.lanes.brokers] == [big[4:]]  # read here, whole


def test_a_connection_gone_while_it_waits_is_not_offered_again(big: bytes) -> None:
    sender, loop = Sender(busy=1), TimedLoop()
    hub, conn, transport = plain(sender, loop)
    conn.data_received(big[:5000])
    transport.is_closing = lambda: True  # type: ignore[method-assign]
    conn.connection_lost(None)
    loop.advance(BUSY_RETRY_S)
    assert len(sender.offered) == 1 and sender.sent == [] and not hub.conns


def test_the_receiving_side_starts_from_the_bytes_handed_over(big: bytes) -> None:
    hub = Hub(CFG, Loop(), None, RouteReplies(lambda: b"1"))  # type: ignore[arg-type]
    conn, transport = Connection(hub, big[:5000]), PlainTransport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    assert conn.reader.collecting() == (len(big) - 4, 4996)
    assert "connections_opened" not in hub.m.counters  # counted where it came in
    reads(conn, big[5000:], 7000)
    assert [f for _, f, _, _ in hub.lanes.brokers] == [big[4:]]


def test_a_socket_and_its_bytes_travel_to_the_receiver(tmp_path: Path) -> None:
    path = tmp_path / "io-large.sock"
    receiver = bind_receiver(path)
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    served, _ = listener.accept()
    try:
        sender = HandoffSender(path, lambda: 0.0)
        assert sender.send(served.fileno(), b"first bytes") is Outcome.HANDED
        served.close()  # the sender lets go of its descriptor: the connection lives on
        [(conn, raw)] = list(receive(receiver))
        assert raw == b"first bytes"
        conn.sendall(b"reply")
        assert client.recv(16) == b"reply"
        client.sendall(b"more")
        conn.setblocking(True)
        assert conn.recv(16) == b"more"
        conn.close()
        assert client.recv(16) == b""  # closed by the receiver, not before
        assert list(receive(receiver)) == []
        sender.close()
    finally:
        for s in (receiver, listener, client):
            s.close()


def test_with_no_receiver_the_sender_says_no_and_waits_before_trying_again(
        tmp_path: Path) -> None:
    now = [100.0]
    sender = HandoffSender(tmp_path / "nobody.sock", lambda: now[0])
    a, b = socket.socketpair()
    try:
        assert sender.send(a.fileno(), b"x") is Outcome.REFUSED
        receiver = bind_receiver(tmp_path / "nobody.sock")
        assert sender.send(a.fileno(), b"x") is Outcome.REFUSED  # within RETRY_S: not tried
        assert list(receive(receiver)) == []
        now[0] += RETRY_S
        assert sender.send(a.fileno(), b"x") is Outcome.HANDED
        [(conn, raw)] = list(receive(receiver))
        assert raw == b"x"
        conn.close()
        receiver.close()
        sender.close()
    finally:
        a.close()
        b.close()


def test_a_full_queue_is_busy_not_refused(tmp_path: Path) -> None:
    receiver = bind_receiver(tmp_path / "r.sock")
    sender = HandoffSender(tmp_path / "r.sock", lambda: 0.0)
    a, b = socket.socketpair()
    try:
        outcomes = [sender.send(a.fileno(), b"x") for _ in range(1000)]
        busy = outcomes.index(Outcome.BUSY)  # net.unix.max_dgram_qlen datagrams fit
        assert set(outcomes[:busy]) == {Outcome.HANDED}
        assert set(outcomes[busy:]) == {Outcome.BUSY}  # no wait of RETRY_S: tried each time
        for conn, _ in receive(receiver):
            conn.close()
        assert sender.send(a.fileno(), b"x") is Outcome.HANDED
    finally:
        for s in (a, b, receiver):
            s.close()
        sender.close()


def test_a_stray_datagram_is_dropped(tmp_path: Path) -> None:
    receiver = bind_receiver(tmp_path / "r.sock")
    stray = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        stray.sendto(b"junk", str(tmp_path / "r.sock"))
        assert list(receive(receiver)) == []
    finally:
        stray.close()
        receiver.close()
