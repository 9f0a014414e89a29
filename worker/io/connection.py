"""One client connection of an I/O worker (frames in, replies out, within the connection
limits), and the I/O worker's configuration."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from cluster.core.protocol.frame import FrameError, FrameReader, FrameTooLarge
from worker import limits, wire
from worker.io.handoff import BUSY_RETRY_S, BUSY_WAIT_S, Outcome
from worker.io.proxy_protocol import Prelude, ProxyError

if TYPE_CHECKING:
    from worker.io.hub import Hub

log = logging.getLogger("pynamesrv.io")

READ_SIZE = 256 << 10  # the most one read of a connection brings: of a frame's rest longer
# than TURN_BYTES, and nothing after it
TURN_BYTES = 16 << 10  # else a read brings at most this; one that does and completes
# requests ends the connection's turn (``Connection._end_turn``)
# A frame of this many bytes or more (a registration's topic table) is read straight into
# the message for the business pool once 1 / LARGE_SHARE of it is in: no join of its pieces,
# no copy into a batch.
LARGE_FRAME = 256 << 10
LARGE_SHARE = 8


@dataclass(frozen=True)
class IoConfig:
    index: int
    parent: int
    host: str
    port: int
    run: str
    store_path: str
    frame_max: int
    header_max: int
    max_connections: int  # this worker's share of the node's
    max_connections_per_address: int
    pending_max: int
    requests_max: int  # requests of one connection in the node's hands before reading stops
    frame_timeout_s: float
    write_timeout_s: float
    tls_mode: str
    tls_cert: str
    tls_key: str
    tls_client_auth: str
    tls_trust: str
    idle_timeout_s: float
    max_pending: int
    window: int
    drain_ms: int
    dialect: str = "5.5.0"  # rocketmqVersion: the release whose replies the worker writes
    hand_off: bool = False  # hand connections with a large next frame to the large worker
    large: bool = False  # the large-frame worker: takes connections handed to it, no port
    nice: int = 0


class Connection(asyncio.BufferedProtocol):
    """One client connection: frames in, replies out, within the connection limits.

    Reads land in the hub's read buffer and are split into frames as bytes; the rest of a
    large frame (``LARGE_FRAME``) lands in shared memory (``worker.frame_arena``), else in
    the ZeroMQ message that will carry it, laid out by ``wire.pair_buffer``; the frame is a
    memoryview of either.

    ``pending`` counts the bytes of requests read and not answered yet (``outstanding``
    the requests); with the unsent reply bytes it bounds what one peer can make the worker
    hold: above ``pending_max`` bytes or ``requests_max`` requests reading stops until half
    has drained. While its replies cannot be written, its queued requests wait unrun.

    A peer that pipelines thousands of requests is read ``TURN_BYTES`` at a time, once per
    turn of the event loop, as every other connection is: one client's backlog does not
    keep the worker from the others' requests.
    """

    def __init__(self, hub: Hub, initial: bytes = b"") -> None:
        self.hub = hub
        self._initial = initial  # bytes read by the worker that handed this connection over
        self.handed_off = False  # passed to the large-frame worker (worker.io.handoff)
        self.adopted = bool(initial)  # handed to this worker by another
        self.reader = FrameReader(hub.cfg.frame_max, hub.cfg.header_max)
        self.conn_id = b""
        self.peer = ""
        self.address = ""
        self.transport: asyncio.Transport | None = None
        self.last_active = 0.0
        self.pending = 0
        self.outstanding = 0
        self.write_blocked_since: float | None = None  # replies cannot be written since then
        self.partial_since: float | None = None  # an incomplete frame started then
        self._reading = True
        self._yielded = False  # reading stopped until the other connections had their turn,
        # or until the large-frame worker is tried again (``_held``)
        self._held = b""  # the bytes read of a large frame waiting for a busy large worker
        self._wait_until = 0.0  # until when it waits (0: not waiting)
        self._large: bytearray | memoryview | None = None  # where a large frame is read
        self._large_at = 0  # where the frame starts in it
        self._large_in = 0  # how far it is filled
        # 5.x: the first bytes, held until a PROXY protocol header is ruled out or taken off
        self._prelude: Prelude | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = tr = cast(asyncio.Transport, transport)
        sock = tr.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        name = transport.get_extra_info("peername")
        self.peer = f"{name[0]}:{name[1]}" if name else ""
        self.address = str(name[0]) if name else ""
        if not self.hub.add(self):
            tr.abort()
            return
        if self.hub.dialect.five and not self.adopted and \
                transport.get_extra_info("sslcontext") is None:
            self._prelude = Prelude()
        if self._initial:
            initial, self._initial = self._initial, b""
            self.data_received(initial)

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._large is not None:
            return memoryview(self._large)[self._large_in :]
        total, have = self.reader.collecting()
        left = total - have  # of a frame whose start is in; a long one's rest, and no more
        return self.hub.read_view[: min(left, READ_SIZE)] if left > TURN_BYTES \
            else self.hub.turn_view

    def buffer_updated(self, nbytes: int) -> None:
        large = self._large
        if large is None:
            self.data_received(bytes(self.hub.read_view[:nbytes]))
            return
        self.last_active = self.hub.now()
        self._large_in += nbytes
        if self._large_in == len(large):
            self._large, self.partial_since = None, None
            self.hub.on_large_frame(self, memoryview(large)[self._large_at :])

    def data_received(self, data: bytes) -> None:
        now = self.last_active = self.hub.now()
        if self._prelude is not None and not self._through_prelude(data):
            return
        try:
            frames = self.reader.feed(data)
        except FrameTooLarge as exc:
            self.hub.hits.hit(limits.FRAME_TOO_LARGE, self.address, str(exc))
            self.close(abort=True)
            return
        except FrameError as exc:
            self.hub.bad.hit(limits.BAD_FRAME, self.address, str(exc))
            self.close(abort=True)
            return
        if not frames and self.hub.handoff is not None and self._hand_off():
            return
        if self.reader.buffered >= LARGE_FRAME // LARGE_SHARE:
            self._detach_large()
        if not self.reader.buffered and self._large is None:
            self.partial_since = None
        elif self.partial_since is None or frames:
            self.partial_since = now
        self.hub.on_frames(self, frames)
        if frames and len(data) >= TURN_BYTES:
            self._end_turn()

    def _end_turn(self) -> None:
        """Stop reading until the loop's next turn: this read brought a turn's worth of
        requests and more may be waiting, and the other connections are read first."""
        transport = self.transport
        if transport is None or transport.is_closing() or self._yielded:
            return
        self._yielded = True
        transport.pause_reading()
        self.hub.loop.call_soon(self._next_turn)

    def _next_turn(self) -> None:
        self._yielded = False
        if self._reading and self.transport is not None and not self.transport.is_closing():
            self.transport.resume_reading()

    def _through_prelude(self, data: bytes) -> bool:
        """Pass the first bytes through the PROXY protocol detection (``worker.io.proxy_protocol``);
        True once it is done (it feeds what follows the header itself)."""
        assert self._prelude is not None
        try:
            rest = self._prelude.feed(data)
        except ProxyError as exc:
            log.warning("event=bad_proxy_header peer=%s error=%r", self.peer, str(exc))
            self.close(abort=True)
            return False
        if rest is None:
            if self.partial_since is None:
                self.partial_since = self.hub.now()
            return False
        if self._prelude.source is not None:
            log.info("event=proxied peer=%s source=%s", self.peer, self._prelude.source)
        self._prelude = None
        self.partial_since = None
        if rest:
            self.data_received(rest)
        return False

    def _hand_off(self) -> bool:
        """Pass this connection to the large-frame worker when its next frame is large, it
        is plain TCP and nothing of it is in flight or unsent here; while the large worker's
        queue is full, read nothing and try again (``BUSY_RETRY_S``), for up to
        ``BUSY_WAIT_S``. True when this worker is done with the bytes read."""
        total, _ = self.reader.collecting()
        if total < LARGE_FRAME or self.pending or self._large is not None:
            return False
        fd = self._plain_fd()
        transport = self.transport
        if fd is None or transport is None or transport.get_write_buffer_size():
            return False
        assert self.hub.handoff is not None
        raw = self.reader.take_buffered()
        outcome = self.hub.handoff.send(fd, raw)
        if outcome is Outcome.HANDED:
            self.handed_off = True
            transport.abort()  # closes this process's descriptor only: no FIN, no RST
            return True
        now = self.hub.now()
        if outcome is Outcome.BUSY:
            if not self._wait_until or now < self._wait_until:
                self._wait_until = self._wait_until or now + BUSY_WAIT_S
                self._held, self._yielded = raw, True
                transport.pause_reading()
                self.hub.loop.call_later(BUSY_RETRY_S, self._retry_hand_off)
                return True
            self.hub.handoff.hold_off()
        self._wait_until = 0.0
        self.reader.feed(raw)  # the start of a frame: nothing comes back
        return False

    def _retry_hand_off(self) -> None:
        """Offer the held frame start again: handed over, held again, or read here."""
        raw, self._held = self._held, b""
        if self.transport is None or self.transport.is_closing():
            return
        self._yielded = False
        self.data_received(raw)
        if not self.handed_off and not self._yielded and self._reading:
            self.transport.resume_reading()

    def _plain_fd(self) -> int | None:
        """The descriptor of a plain TCP connection's socket (None under TLS)."""
        if self.transport is None or self.transport.get_extra_info("sslcontext") is not None:
            return None
        sock = self.transport.get_extra_info("socket")
        return None if sock is None else sock.fileno()

    def _detach_large(self) -> None:
        """Read the rest of a large frame into shared memory, else into the message that takes
        it to the business pool.

        Allocated only once ``1 / LARGE_SHARE`` of the frame is in, so a sender can make the
        worker hold at most ``LARGE_SHARE`` times what it sent."""
        total, have = self.reader.collecting()
        if total < LARGE_FRAME or have * LARGE_SHARE < total:
            return
        arena = self.hub.arena
        buf: bytearray | memoryview | None = arena.alloc(total) if arena is not None else None
        at = 0
        if buf is None:
            buf, at = wire.pair_buffer(wire.REQUESTS, self.conn_id, total)
        self._large, self._large_at = buf, at
        self._large_in = at + self.reader.detach_into(buf, at)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._large is not None:  # a large frame cut short
            self.hub.lanes.release(self._large)
            self._large = None
        self.hub.remove(self)

    def pause_writing(self) -> None:
        self.write_blocked_since = self.hub.now()
        self.hub.writable(self, False)
        self.update_reading()

    def resume_writing(self) -> None:
        self.write_blocked_since = None
        self.hub.writable(self, True)
        self.update_reading()

    def add_pending(self, size: int, count: int) -> None:
        self.pending += size
        self.outstanding += count
        cfg = self.hub.cfg
        if size > 0 and self._reading:
            if self.pending > cfg.pending_max:
                self.hub.hits.hit(limits.PENDING_BYTES, self.address)
            elif self.outstanding > cfg.requests_max:
                self.hub.hits.hit(limits.PENDING_REQUESTS, self.address)
        self.update_reading()

    def update_reading(self) -> None:
        """Read while replies can be written and what this peer holds is within bounds."""
        if self.transport is None or self.transport.is_closing():
            return
        held = self.pending + self.transport.get_write_buffer_size()
        limit, count, most = self.hub.cfg.pending_max, self.outstanding, self.hub.cfg.requests_max
        want = not self.hub.draining and self.write_blocked_since is None and (
            (held <= limit // 2 and count <= most // 2)
            or (self._reading and held <= limit and count <= most))
        if want != self._reading:
            self._reading = want
            if want:
                if not self._yielded:  # else it resumes at its next turn
                    self.transport.resume_reading()
                if self.partial_since is not None:  # its sender was not slow: we did not read
                    self.partial_since = self.hub.now()
            else:
                self.transport.pause_reading()

    @property
    def reading(self) -> bool:
        return self._reading

    def write(self, data: bytes | memoryview) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)
            self.last_active = self.hub.now()

    def close(self, abort: bool = False) -> None:
        if self.transport is not None and not self.transport.is_closing():
            if abort:
                self.transport.abort()
            else:
                self.transport.close()
