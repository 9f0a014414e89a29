"""The I/O worker's hub: owns client connections, splits frames, feeds the business pool
(the process around it, sockets, timers and shutdown: ``worker.io.process``).

One uvloop event loop per process. Connections use asyncio buffered Protocols; the hub
batches complete frames to business workers over a ZeroMQ ROUTER socket with a
credit window per worker, writes replies back, and turns closed connections into
channel-destroyed events. Requests are never dropped silently: an overflowing
queue answers SYSTEM_BUSY, a lost business worker answers SYSTEM_ERROR.

The router's ``ZMQ_FD`` is edge-triggered: any send or receive may consume the
notification of messages that already arrived. So every send is followed by a
read of whatever is pending (``_schedule_read``), and the heartbeat tick drains
the socket before it judges any worker silent. A business worker's exit is seen
through its pidfd, not through its silence.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import Counter, deque
from typing import cast

import zmq

from cluster.core.procs import stopped_or_gone
from cluster.core.protocol.codes import ResponseCode
from cluster.core.protocol.command import response_to
from cluster.core.protocol.dialect import dialect_of
from cluster.core.protocol.frame import FrameError, decode_command, encode_command
from cluster.core.protocol.peek import peek_code, without_body
from worker import limits, wire
from worker.frame_arena import FrameArena
from worker.io.connection import READ_SIZE, TURN_BYTES, Connection, IoConfig
from worker.io.dispatch import ROUTE_CODE as ROUTE
from worker.io.dispatch import Dispatcher, Peer
from worker.io.go_away import go_away_reply
from worker.io.handoff import HandoffSender
from worker.io.route_replies import (
    HeaderKey,
    RequestShapes,
    RouteReplies,
    Sibling,
    header_key,
)
from worker.metrics import NO_REPLY, Pusher, WorkerMetrics, frame_code, origin_of

log = logging.getLogger("pynamesrv.io")

BUSY_REMARK = "[OVERLOAD]system busy, start flow control for a while"
LOST_REMARK = "business worker lost while processing the request; retry"
MAX_EVENTS = 100_000
EVENTS_PER_MESSAGE = 512  # closed connections per channel-destroyed message
FORGET_PEER_S = 600.0  # a silent business worker is dropped from the table after this
SUCCESS = int(ResponseCode.SUCCESS)
# A pooled request's tag: (template key to learn its reply under, with what it shares with
# other topics' (None: nothing), or None; store generation then, perf_counter when its
# frame came in, request code).
Tag = tuple[tuple[HeaderKey, Sibling | None] | None, bytes | None, float, int]


class Hub:
    """Connection table, the business-pool dispatcher and the ZeroMQ side of this worker."""

    def __init__(self, cfg: IoConfig, loop: asyncio.AbstractEventLoop, router: zmq.Socket[bytes],
                 replies: RouteReplies, arena: FrameArena | None = None) -> None:
        self.cfg = cfg
        self.replies = replies
        self.loop = loop
        self.router = router
        self.conns: dict[bytes, Connection] = {}
        self.per_address: Counter[str] = Counter()
        self.hits = limits.LimitHits()
        self.bad = limits.bad_requests()
        self.events: deque[tuple[bytes, bytes]] = deque()
        self.arena = arena  # where large frames are read (None: they go through ZeroMQ)
        self.lanes = Dispatcher(cfg.window, cfg.max_pending, wire.PEER_STOPPED_S,
                                wire.PEER_HUNG_S, FORGET_PEER_S, self.arena)
        self.pidfds: dict[bytes, int] = {}
        self.closing = False
        self._seq = 0
        self._flush_scheduled = False
        self._read_scheduled = False
        self._prefix = f"{cfg.index}.{os.getpid()}.".encode()
        self.m = WorkerMetrics("io", cfg.index)
        self.pusher: Pusher | None = None
        # Where every connection reads (one read at a time, consumed before the next): a long
        # frame's rest, up to all of it; else its first TURN_BYTES.
        self.read_view = memoryview(bytearray(READ_SIZE))
        self.turn_view = self.read_view[:TURN_BYTES]
        # Where connections whose next frame is large go (None: kept here).
        self.handoff: HandoffSender | None = None
        self.dialect = dialect_of(cfg.dialect)
        self.five = self.dialect.five  # read per frame: an Enum property costs a lookup
        self.shapes = RequestShapes(self.five)  # first route lookups' requests, read
        self.going_away = False  # shutting down gracefully: new clients get GO_AWAY
        self.draining = False  # shutting down: nothing more is read (``stop_reading``)

    def now(self) -> float:
        return self.loop.time()

    # -- connections -------------------------------------------------------

    def add(self, conn: Connection) -> bool:
        """Admit a new connection; False when a connection limit refuses it."""
        if len(self.conns) >= self.cfg.max_connections:
            self.hits.hit(limits.MAX_CONNECTIONS, conn.address)
            return False
        if self.per_address[conn.address] >= self.cfg.max_connections_per_address:
            self.hits.hit(limits.MAX_CONNECTIONS_PER_ADDRESS, conn.address)
            return False
        self._seq += 1
        if not conn.adopted:  # a connection handed over was counted where it came in
            self.m.add("connections_opened")
        # the channel id names the peer too: the business pool checks ACL white lists by it
        conn.conn_id = b"%s%d@%s" % (self._prefix, self._seq, conn.peer.encode())
        conn.last_active = self.now()
        self.conns[conn.conn_id] = conn
        self.per_address[conn.address] += 1
        return True

    def remove(self, conn: Connection) -> None:
        if self.conns.pop(conn.conn_id, None) is None:
            return
        self.per_address[conn.address] -= 1
        if self.per_address[conn.address] <= 0:
            del self.per_address[conn.address]
        self.lanes.discard(conn.conn_id)  # its queued work: nobody is left to answer
        if conn.handed_off:  # it goes on in the large-frame worker: no channel closed
            self.m.add("connections_handed_off")
            return
        self.m.add("connections_closed")
        if self.closing:
            return
        if len(self.events) >= MAX_EVENTS:
            log.error("event=events_overflow dropped_conn=%s", conn.conn_id.decode())
            return
        self.events.append((conn.conn_id, conn.peer.encode()))
        self._schedule_flush()

    def check_connections(self) -> None:
        """Close idle connections, slow senders and peers that read none of their replies."""
        now = self.now()
        idle = now - self.cfg.idle_timeout_s
        for conn in list(self.conns.values()):
            if conn.last_active < idle:
                log.info("event=idle_close peer=%s conn=%s", conn.peer, conn.conn_id.decode())
                conn.close()
            elif conn.partial_since is not None and conn.reading and \
                    now - conn.partial_since > self.cfg.frame_timeout_s:
                self.hits.hit(limits.FRAME_READ_TIMEOUT, conn.address)
                conn.close(abort=True)
            elif conn.write_blocked_since is not None and \
                    now - conn.write_blocked_since > self.cfg.write_timeout_s:
                self.hits.hit(limits.WRITE_TIMEOUT, conn.address)
                conn.close(abort=True)

    # -- requests ----------------------------------------------------------

    def on_frames(self, conn: Connection, frames: list[bytes]) -> None:
        """Answer the route lookups whose reply is known; send everything else to the pool."""
        if not frames:
            return
        t0 = time.perf_counter()
        replies = self.replies
        replies.refresh()  # once per chunk: every write acknowledged before it is seen
        templates, five, going_away = replies.templates, self.five, self.going_away
        out: list[bytes] = []  # the replies' pieces (`Template.put`)
        hits = 0
        unusual: list[int] = []  # codes of the answers from templates other than SUCCESS
        ok = SUCCESS
        for frame in frames:
            if going_away and self._go_away(conn, frame):
                continue
            # only route lookups are ever learned under a key
            found = header_key(frame, five)
            if found is not None:
                t = templates.get(found[0])
                if t is not None:
                    t.put(out, found[1], found[0])
                    hits += 1
                    if t.code != ok:
                        unusual.append(t.code)
                    continue
                ask = self.shapes.read(frame, found[0]) \
                    if peek_code(frame) == ROUTE else None
                if ask is not None:
                    sibling = replies.sibling(*ask)
                    t = None if sibling is None else replies.derive(found[0], sibling, ask[0])
                    if t is not None:  # a topic of the same route was learned
                        t.put(out, found[1], found[0])
                        hits += 1
                        self.m.add("route_template_shared")
                        continue
                    self.submit(conn.conn_id, frame,
                                ((found[0], sibling), replies.generation, t0, ROUTE))
                    self.m.add("route_template_misses")
                    continue
            self.submit(conn.conn_id, frame, (None, None, t0, frame_code(frame)))
        if hits:
            conn.write(b"".join(out))
            self._count_hits(hits, unusual, time.perf_counter() - t0)

    def _go_away(self, conn: Connection, frame: bytes | memoryview) -> bool:
        """Answer GO_AWAY to a new client's request (``worker.io.go_away``); False: serve it."""
        reply = go_away_reply(frame, self.dialect)
        if reply is None:
            return False
        if reply:
            conn.write(reply)
        self.m.request(frame_code(without_body(frame)), ResponseCode.GO_AWAY if reply else NO_REPLY)
        return True

    def on_large_frame(self, conn: Connection, frame: memoryview) -> None:
        """A frame read into its own message (``wire.pair_buffer``): to the pool, as it is."""
        if self.going_away and self._go_away(conn, frame):
            self.lanes.release(frame)
            return
        code = frame_code(without_body(frame))
        self.submit(conn.conn_id, frame, (None, None, time.perf_counter(), code))

    def _count_hits(self, n: int, unusual: list[int], took: float) -> None:
        """``n`` route lookups answered from templates (those in ``unusual`` not with SUCCESS):
        one latency for the chunk they came in."""
        m = self.m
        m.counters["route_template_hits"] = m.counters.get("route_template_hits", 0) + n
        m.observe(ROUTE, took, n)
        if n > len(unusual):
            m.request(ROUTE, SUCCESS, n - len(unusual))
        for code in set(unusual):  # mostly none, else TOPIC_NOT_EXIST alone
            m.request(ROUTE, code, unusual.count(code))

    def submit(self, conn_id: bytes, frame: bytes | memoryview, tag: Tag) -> None:
        """Queue a request for the pool; when the queues are full, the request they give
        back (this one, or the newest of the busiest connection) is answered SYSTEM_BUSY."""
        conn = self.conns.get(conn_id)
        refused = self.lanes.submit(conn_id, frame, tag, tag[3],
                                    conn.address if conn is not None else "")
        if refused is None or refused[1] is not frame:
            if conn is not None:
                conn.add_pending(len(frame), 1)
            self._schedule_flush()
        if refused is not None:
            r_conn, r_frame, r_tag, _ = refused
            if r_frame is not frame:  # it was counted as its connection's work
                self._settled(r_conn, len(r_frame))
            self.m.add("system_busy")
            self.answer_error(r_conn, r_frame, ResponseCode.SYSTEM_BUSY, BUSY_REMARK, r_tag[2])
            self.lanes.release(r_frame)

    def answer_error(self, conn_id: bytes, frame: bytes | memoryview, code: int, remark: str,
                     t0: float | None) -> None:
        """Answer ``code``; ``t0`` (perf_counter when the frame came in) times the answer."""
        conn = self.conns.get(conn_id)
        if conn is None:
            return
        try:
            cmd = decode_command(frame, fastjson2=self.dialect.five)
        except FrameError as exc:
            self.bad.hit(limits.BAD_HEADER, conn.address, str(exc))
            conn.close(abort=True)
            return
        except Exception:  # a codec defect: close this connection, answer the others
            log.exception("event=decode_crash conn=%s", conn_id.decode())
            conn.close(abort=True)
            return
        if cmd.is_response:
            return
        if cmd.is_oneway:
            self.m.request(cmd.code, NO_REPLY, origin=origin_of(cmd))
            return
        conn.write(encode_command(self.dialect.stamp(response_to(cmd, code, remark))))
        self.m.request(cmd.code, code, origin=origin_of(cmd))
        if t0 is not None:
            self.m.observe(cmd.code, time.perf_counter() - t0)

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self.flush)

    def _schedule_read(self) -> None:
        if not self._read_scheduled:
            self._read_scheduled = True
            self.loop.call_soon(self.on_router_readable)

    def flush(self) -> None:
        self._flush_scheduled = False
        for peer, batch in self.lanes.batches():
            self._send_batch(peer, batch)
        self._send_events()

    def _send_batch(self, peer: Peer, batch: list[tuple[bytes, bytes | memoryview]]) -> None:
        """One message for the batch; a large frame (a memoryview) goes in its place among the
        others as a message of its own: a reference to it in shared memory, or the message
        it was read into."""
        if not any(type(frame) is memoryview for _, frame in batch):
            self._send(peer, wire.pack_pairs(batch, wire.REQUESTS))
            return
        run: list[tuple[bytes, bytes]] = []
        for conn_id, frame in batch:
            if type(frame) is not memoryview:
                run.append((conn_id, frame))
                continue
            if run and not self._send(peer, wire.pack_pairs(run, wire.REQUESTS)):
                return
            run = []
            message: bytes | bytearray
            if self.arena is not None and self.arena.owns(frame):
                message = wire.shared_ref(os.getpid(), self.arena.offset(frame), len(frame),
                                          conn_id)
            else:
                message = cast(bytearray, frame.obj)
            if not self._send(peer, message):
                return
        if run:
            self._send(peer, wire.pack_pairs(run, wire.REQUESTS))

    def _send_events(self) -> None:
        """Closed connections, up to EVENTS_PER_MESSAGE in one message (one write there)."""
        while self.events:
            peer = next((p for p in self.lanes.peers.values() if p.alive), None)
            if peer is None:
                break
            batch = [self.events[i] for i in range(min(len(self.events), EVENTS_PER_MESSAGE))]
            if self._send(peer, wire.pack_pairs(batch, wire.EVENT)):
                for _ in batch:
                    self.events.popleft()

    def _send(self, peer: Peer, message: bytes | bytearray) -> bool:
        try:
            # without a copy: registrations of megabytes (pyzmq copies small messages anyway)
            self.router.send_multipart((peer.ident, message), flags=wire.NOBLOCK, copy=False)
        except zmq.ZMQError as exc:
            log.warning("event=peer_unreachable peer=%s error=%r", peer.ident.decode(), str(exc))
            self.fail_peer(peer)
            return False
        finally:
            self._schedule_read()  # the send may have consumed the FD's read notification
        return True

    def fail_peer(self, peer: Peer) -> None:
        lost = self.lanes.fail(peer)
        log.warning("event=business_worker_lost peer=%s inflight=%d", peer.ident.decode(),
                    len(lost))
        self._answer_lost(lost)

    def _answer_lost(self, lost: list[tuple[bytes, bytes | memoryview]]) -> None:
        for conn_id, frame in lost:
            self._settled(conn_id, len(frame))
            self.answer_error(conn_id, frame, ResponseCode.SYSTEM_ERROR, LOST_REMARK, None)

    def _settled(self, conn_id: bytes, size: int) -> None:
        """A request of ``size`` bytes from ``conn_id`` is answered (or will never be)."""
        conn = self.conns.get(conn_id)
        if conn is not None:
            conn.add_pending(-size, -1)

    def writable(self, conn: Connection, ok: bool) -> None:
        """``conn``'s replies can (again) or cannot be written: its queued work runs, or
        waits without being run for replies that would only pile up."""
        if ok:
            self.lanes.unpark(conn.conn_id)
            self._schedule_flush()
        else:
            self.lanes.park(conn.conn_id, conn.address)

    # -- business worker processes -------------------------------------------

    def _watch(self, peer: Peer) -> None:
        """Follow the worker's process through a pidfd: its exit is known at once."""
        try:
            fd = os.pidfd_open(peer.pid)
        except OSError:  # already gone
            self.loop.call_soon(self._peer_exited, peer.ident)
            return
        self.pidfds[peer.ident] = fd
        self.loop.add_reader(fd, self._peer_exited, peer.ident)

    def _peer_exited(self, ident: bytes) -> None:
        fd = self.pidfds.pop(ident, None)
        if fd is not None:
            self.loop.remove_reader(fd)
            os.close(fd)
        self.on_router_readable()  # replies it sent before exiting are still answers
        peer = self.lanes.peers.get(ident)
        if peer is None or peer.exited:
            return
        lost = self.lanes.drop(peer, self.now())
        log.warning("event=business_worker_exited peer=%s inflight=%d", ident.decode(), len(lost))
        self._answer_lost(lost)
        self._schedule_flush()

    def unwatch_all(self) -> None:
        for ident in list(self.pidfds):
            fd = self.pidfds.pop(ident)
            self.loop.remove_reader(fd)
            os.close(fd)

    # -- replies -----------------------------------------------------------

    def on_router_readable(self) -> None:
        self._read_scheduled = False
        router = self.router
        try:
            while cast(int, router.getsockopt(wire.EVENTS)) & wire.POLLIN:
                self._on_message(router.recv_multipart(flags=wire.NOBLOCK, copy=False))
        except zmq.Again:
            pass
        except zmq.ZMQError as exc:
            if not self.closing:
                log.error("event=router_error error=%r", str(exc))
        self._schedule_flush()

    def _on_message(self, msg: list[zmq.Frame]) -> None:
        """A business worker's message, read in place: only its replies are copied out."""
        if len(msg) != 2 or not len(msg[1]):
            log.error("event=bad_internal_message parts=%d", len(msg))
            return
        ident, message = msg[0].bytes, msg[1].buffer
        kind, payload = bytes(message[:1]), message[1:]
        lane, pid = wire.parse_hello(bytes(payload)) if kind == wire.HELLO else (None, 0)
        peer, back = self.lanes.seen(ident, self.now(), lane, pid)
        if peer is None:
            return
        if back:
            log.warning("event=business_worker_back peer=%s stale=%d", peer.ident.decode(),
                        len(peer.stale))
        if peer.pid and peer.ident not in self.pidfds and not self.closing:
            self._watch(peer)
        if kind == wire.REPLIES:
            self._on_replies(peer, *wire.unpack_replies(payload))

    def _on_replies(self, peer: Peer, replies: list[tuple[bytes, bytes | memoryview]],
                    micros: list[int]) -> None:
        """Write replies, one write per connection per batch; the time each took prices
        its code."""
        out: dict[bytes, list[bytes | memoryview]] = {}
        timed: list[tuple[float, int]] = []  # (frame in, request code) of the replies written
        for (conn_id, reply), took in zip(replies, micros, strict=False):
            answered, tag, size = self.lanes.finish(peer, took, len(reply))
            if answered:
                self._settled(conn_id, size)
            if answered and reply:
                out.setdefault(conn_id, []).append(reply)
                if tag is not None:
                    timed.append((tag[2], tag[3]))
                    if tag[0] is not None:
                        self.replies.learn(tag[0][0], tag[1], bytes(reply), tag[0][1])
        for conn_id, chunks in out.items():
            conn = self.conns.get(conn_id)
            if conn is None:
                continue
            if wire.CLOSE in chunks:
                conn.write(b"".join(chunks[: chunks.index(wire.CLOSE)]))
                conn.close(abort=False)
            else:
                conn.write(b"".join(chunks) if len(chunks) > 1 else chunks[0])
        if timed:  # one clock read per batch, after its writes
            now, observe = time.perf_counter(), self.m.observe
            for t0, code in timed:
                observe(code, now - t0)

    # -- timers ------------------------------------------------------------

    def tick(self) -> None:
        self.on_router_readable()  # judge silence on what the workers sent, not on what was read
        now = self.now()
        self.hits.summarize(now)
        self.bad.summarize(now)
        silent, alive = self.lanes.expire(now, stopped_or_gone)
        for peer in silent:
            self.fail_peer(peer)
        for peer in alive:
            self._send(peer, wire.hello())
        self._schedule_flush()
        if self.pusher is not None and self.pusher.due():
            self.pusher.push(self.metrics())

    def metrics(self) -> WorkerMetrics:
        """This worker's totals, with the gauges and limit counts of now."""
        m = self.m
        lanes = self.lanes
        m.gauges = {"connections": len(self.conns),
                    "queue_reads": len(lanes.routes) + len(lanes.reads),
                    "queue_others": len(lanes.brokers) + len(lanes.writes)}
        m.limits = {}
        for (limit, _), n in self.hits.counts.items():
            m.limits[limit] = m.limits.get(limit, 0) + n
        return m

    def stop_reading(self) -> None:
        """Shutting down: what was read is answered, nothing more is read."""
        self.draining = True
        for conn in list(self.conns.values()):
            conn.update_reading()
