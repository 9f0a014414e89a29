"""Business worker process: runs request processors against the shared state.

One DEALER socket per I/O worker (replies must return to the I/O worker that
owns the connection). Each batch of requests is processed in order and
answered with one message, which carries the time each request took (the I/O
worker prices requests by it: ``worker.io.pricing``); channel-destroyed events run the
route cleanup. The loop is a plain blocking poller: no event loop is needed here.
A SIGTERM (a supervisor's reaches the whole process group at once) ends the worker only
once no I/O worker is left to send it work: the I/O workers stop first and answer what
they hold, which needs this worker until they are gone (``worker.controller``).
With ACL on, the accounts file is looked at with every heartbeat (at most once a
second), whatever the traffic, so a withdrawn account is dropped even when every
request it sends is answered by an I/O worker's route reply cache.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import zmq

from cluster.core.protocol.frame import FrameError, decode_command, encode_command_parts
from state.store import Store
from worker import limits, wire
from worker.business.acl.addresses import remote_host
from worker.business.context import NodeContext
from worker.business.failures import WRITE_FAILURES, system_error
from worker.business.processors import BODY_IN_PLACE, handle, on_channel_destroy
from worker.frame_arena import ArenaReader
from worker.metrics import NO_REPLY, Pusher, WorkerMetrics, origin_of
from worker.procs import Trim, announce_ready, io_endpoint, start_worker_process

log = logging.getLogger("pynamesrv.business")
DRAIN_MESSAGES = 16  # messages taken from one socket before looking at the others
FIRST_HELLO_S = 10.0  # at start, how long the first hello waits for the I/O workers to listen
HELLO_SLICE_S = 0.05  # ... looking at whether the worker was told to stop this often
STOPPING_POLL_MS = 20  # once told to stop: how often it looks whether an I/O worker is left


@dataclass(frozen=True)
class BusinessConfig:
    index: int
    parent: int
    run: str
    io_workers: int
    store_path: str
    node_name: str
    read_only: bool = False
    nice: int = 0


class BusinessWorker:
    def __init__(self, cfg: BusinessConfig, zctx: zmq.Context[zmq.Socket[bytes]]) -> None:
        self.cfg = cfg
        self.ident = f"b{cfg.index}-{os.getpid()}".encode()
        self.store = Store.open(Path(cfg.store_path))
        self.ctx = NodeContext.build(self.store, cfg)
        self.sockets = [self._dealer(zctx, i) for i in range(cfg.io_workers)]
        self.arenas = ArenaReader(Path(cfg.store_path))
        self.poller = zmq.Poller()
        for s in self.sockets:
            self.poller.register(s, zmq.POLLIN)
        self.stopping = False
        self.lane = wire.LANE_READ if cfg.read_only else wire.LANE_ALL
        self.hello_message = wire.hello(self.lane, os.getpid())
        self.next_hello = 0.0
        self.trim = Trim(time.monotonic)
        self.m = WorkerMetrics("business", cfg.index)
        self.bad = limits.bad_requests(log)
        self.pusher = Pusher(zctx, Path(cfg.run))

    def _dealer(self, zctx: zmq.Context[zmq.Socket[bytes]], index: int) -> zmq.Socket[bytes]:
        sock = zctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.IDENTITY, self.ident)
        sock.setsockopt(zmq.IMMEDIATE, 1)
        sock.setsockopt(zmq.RECONNECT_IVL, 10)  # an I/O worker binds after us, or restarts
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.SNDHWM, 100_000)
        sock.setsockopt(zmq.RCVHWM, 100_000)
        sock.connect(io_endpoint(Path(self.cfg.run), index))
        return sock

    def hello(self, wait_s: float = 0.0) -> None:
        """Tell every I/O worker this worker is there. ``wait_s`` (at start): wait up to that
        long for each I/O worker's end to be connected first, as IMMEDIATE drops a message no
        connection takes; a node is not announced until its I/O workers know a business
        worker, else its first requests wait for the next hello."""
        deadline = time.monotonic() + wait_s
        for sock in self.sockets:
            # in slices: a SIGTERM meanwhile (the node failed to start) ends the wait
            while (not self.stopping and time.monotonic() < deadline
                   and not connected(sock, min(deadline, time.monotonic() + HELLO_SLICE_S))):
                pass
            self._send(sock, self.hello_message)
        now = time.monotonic()
        self.next_hello = now + wire.HEARTBEAT_S
        self.bad.summarize(now)
        WRITE_FAILURES.summarize(now)
        if self.ctx.acl is not None:
            self.ctx.acl.refresh()

    def _hello_if_due(self) -> None:
        """Long batches (big registrations) must not look like a dead worker."""
        if time.monotonic() >= self.next_hello:
            self.hello()

    def _send(self, sock: zmq.Socket[bytes], message: bytes) -> None:
        # zmq.Again: the I/O worker is gone; its connections died with it. copy=False: a
        # large batch (a topic list) is sent from this bytes object, a small one is copied.
        with contextlib.suppress(zmq.Again):
            sock.send(message, flags=wire.NOBLOCK, copy=False)

    def serve(self) -> None:
        while not self.stopping or self.io_left():
            self._hello_if_due()
            wait_ms = STOPPING_POLL_MS if self.stopping else int(wire.HEARTBEAT_S * 1000)
            for sock, _ in self.poller.poll(timeout=wait_ms):
                self._drain(sock)
            if self.pusher.due():
                self.pusher.push(self.m)

    def io_left(self) -> bool:
        """Whether an I/O worker is still connected (an IMMEDIATE socket can send only then)."""
        now = time.monotonic()
        return any(connected(sock, now) for sock in self.sockets)

    def _drain(self, sock: zmq.Socket[bytes]) -> None:
        for _ in range(DRAIN_MESSAGES):
            try:
                msg = sock.recv(flags=wire.NOBLOCK)
            except zmq.Again:
                return
            self._on_message(sock, msg)

    def _on_message(self, sock: zmq.Socket[bytes], msg: bytes) -> None:
        kind, payload = msg[:1], memoryview(msg)[1:]  # a registration's body is copied once
        if kind == wire.REQUESTS:
            self._send(sock, self._process_batch(payload))
        elif kind == wire.SHARED:
            self._send(sock, self._process_shared(self.sockets.index(sock), payload))
        elif kind == wire.EVENT:
            self._channels_destroyed([(bytes(conn).decode(), bytes(peer).decode())
                                      for conn, peer in wire.unpack_pairs(payload)])

    def _process_batch(self, payload: memoryview) -> bytes:
        replies, micros = [], []
        clock = time.perf_counter
        start = clock()
        for conn, frame in wire.unpack_pairs(payload):
            replies.append((conn, self.process(bytes(conn).decode(), frame)))
            end = clock()
            micros.append(int((end - start) * 1e6))
            self._hello_if_due()
            start = clock()
        packed = wire.pack_replies(replies, micros)
        self.trim.after(len(payload) + len(packed))  # a registration, a topic list
        return packed

    def _process_shared(self, io_index: int, payload: memoryview) -> bytes:
        """A large frame in the I/O worker's shared memory, answered as a batch of one."""
        start = time.perf_counter()
        try:
            pid, offset, length, conn = wire.parse_shared(payload)
        except ValueError as exc:
            log.error("event=bad_internal_message error=%r", str(exc))
            return wire.pack_replies([], [])
        try:
            frame = self.arenas.frame(io_index, pid, offset, length)
        except OSError as exc:  # its I/O worker is gone, and the connection with it
            log.warning("event=shared_frame_unreadable channel=%s error=%r", conn.decode(),
                        str(exc))
            return wire.pack_replies([(conn, wire.CLOSE)], [0])
        reply = self.process(conn.decode(), frame, shared=True)
        end = time.perf_counter()
        self.trim.after(length)
        return wire.pack_replies([(conn, reply)], [int((end - start) * 1e6)])

    def process(self, channel: str, frame: bytes | memoryview, shared: bool = False
                ) -> wire.Reply:
        """The encoded reply to one frame (its head and body, ``wire.Reply``), or b"" when
        nothing must be sent (``wire.CLOSE``: close the connection). A ``shared``
        frame (in an I/O worker's file, valid until this reply) keeps its body there for
        the codes whose handlers read it in place (``BODY_IN_PLACE``)."""
        try:
            cmd = decode_command(frame, view_body=shared, fastjson2=self.ctx.dialect.five)
            if shared and cmd.body is not None and cmd.code not in BODY_IN_PLACE:
                cmd.body = bytes(cmd.body)
        except FrameError as exc:
            self.bad.hit(limits.BAD_HEADER, remote_host(channel.partition("@")[2]), str(exc))
            return wire.CLOSE
        except Exception:  # a codec defect: close this connection, keep serving the others
            log.exception("event=decode_crash channel=%s", channel)
            return wire.CLOSE
        if cmd.is_response:
            return b""
        try:
            reply = handle(self.ctx, cmd, channel, channel.partition("@")[2])
        except Exception as exc:  # handle() answers errors itself; this is the last guard
            log.exception("event=handler_crash code=%d", cmd.code)
            reply = self.ctx.dialect.stamp(system_error(cmd, exc))
        origin = origin_of(cmd)
        if reply is None or cmd.is_oneway:
            self.m.request(cmd.code, NO_REPLY, origin=origin)
            return b""
        self.m.request(cmd.code, reply.code, origin=origin)
        return encode_command_parts(reply)

    def _channels_destroyed(self, closed: list[tuple[str, str]]) -> None:
        try:
            on_channel_destroy(self.ctx, closed)
        except Exception:
            log.exception("event=channel_destroy_failed channels=%d", len(closed))

    def close(self) -> None:
        for sock in self.sockets:
            sock.close(0)
        self.pusher.close()
        self.store.close()


def connected(sock: zmq.Socket[bytes], deadline: float) -> bool:
    """Whether an IMMEDIATE socket has a connection to send on, waiting until ``deadline``
    (``time.monotonic``) at most."""
    return bool(sock.poll(max(0, int((deadline - time.monotonic()) * 1000)), zmq.POLLOUT))


def run(cfg: BusinessConfig) -> None:
    """Process entry point."""
    start_worker_process(cfg.parent, f"pns-biz-{cfg.index}")
    if cfg.nice:
        os.nice(cfg.nice)
    zctx = zmq.Context()
    worker = BusinessWorker(cfg, zctx)
    gc.freeze()  # start-up objects never need scanning again

    def stop(_sig: int, _frame: object) -> None:
        worker.stopping = True

    signal.signal(signal.SIGTERM, stop)
    worker.hello(FIRST_HELLO_S)
    announce_ready(zctx, Path(cfg.run), "business", cfg.index)
    try:
        worker.serve()
    finally:
        worker.close()
        zctx.term()
