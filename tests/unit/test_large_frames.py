"""Large frames (registrations of megabytes): read straight into shared memory, else into
the one-part ZeroMQ message that takes them to the business pool, sent in order with the
frames around them."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import zmq

from cluster.core.protocol import body_common, register_body
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameReader, decode_frame, encode_command
from cluster.core.protocol.peek import without_body
from state import applied
from state.store import Store
from tests.unit.test_io_route_hits import connection, request
from worker import wire
from worker.business import processors
from worker.business.process import BusinessConfig, BusinessWorker
from worker.frame_arena import FrameArena
from worker.io.connection import LARGE_FRAME, LARGE_SHARE
from worker.procs import TRIM_AFTER_BYTES, Trim, io_endpoint


def registration(topics: int, opaque: int = 1, counter: int = 1, name: str = "b") -> bytes:
    configs = {f"T{i:05d}": register_body.topic_config(f"T{i:05d}") for i in range(topics)}
    body = register_body.encode_register_body({"counter": counter, "timestamp": 1}, configs, [],
                                              False)
    ext = {"brokerName": name, "brokerAddr": "10.0.0.1:10911", "clusterName": "C",
           "brokerId": "0", "haServerAddr": "", "compressed": "false",
           "bodyCrc32": str(body_common.crc32_java(body))}
    return encode_command(RemotingCommand(code=103, opaque=opaque, version=409,
                                          ext_fields=ext, body=body))


@pytest.fixture(scope="module")
def big() -> bytes:
    frame = registration(3000)
    assert len(frame) > LARGE_FRAME
    return frame


def test_the_reader_hands_over_the_frame_it_collects(big: bytes) -> None:
    reader = FrameReader()
    assert reader.feed(big[:2]) == [] and reader.collecting() == (0, 0)  # no header word yet
    assert reader.feed(big[2:100]) == []  # its length word came in two reads
    assert reader.collecting() == (len(big) - 4, 96)
    buf = bytearray(3 + len(big) - 4)
    assert reader.detach_into(buf, 3) == 96
    buf[3 + 96 :] = big[100:]
    assert bytes(buf[3:]) == big[4:]
    assert reader.buffered == 0 and reader.collecting() == (0, 0)
    small = request("A", 1)
    assert reader.feed(small) == [small[4:]]  # the reader starts afresh


def test_a_frame_is_read_into_its_message_once_a_share_is_in(big: bytes) -> None:
    hub, conn, _ = connection([b"1"])
    share = (len(big) - 4) // LARGE_SHARE
    conn.data_received(big[:share])
    assert conn.get_buffer(-1).obj is hub.read_view.obj  # not yet: the read buffer
    conn.data_received(big[share : share + 8])
    rest = conn.get_buffer(-1)
    assert rest.obj is not hub.read_view.obj
    assert len(rest) == len(big) - share - 8  # the rest goes straight into place


def test_a_small_frame_is_never_read_into_a_message_of_its_own() -> None:
    _, conn, _ = connection([b"1"])
    frame = registration(10)
    conn.data_received(frame[:-1])
    assert conn.reader.buffered == len(frame) - 1


def reads(conn: Any, data: bytes, size: int) -> None:
    """``data`` through the buffered-protocol calls, at most ``size`` bytes per read."""
    pos = 0
    while pos < len(data):
        buf = conn.get_buffer(-1)
        n = min(size, len(buf), len(data) - pos)
        buf[:n] = data[pos : pos + n]
        conn.buffer_updated(n)
        pos += n


def test_a_large_frame_between_small_ones_keeps_its_place(big: bytes) -> None:
    hub, conn, transport = connection([b"1"])
    other = encode_command(RemotingCommand(code=206, opaque=9))  # GET_ALL_TOPIC_LIST
    reads(conn, request("A", 7) + big + other, 65536)
    assert len(transport.writes) == 1  # the route lookup, answered from its template
    queued = [frame for _, frame, _, _ in [*hub.lanes.brokers, *hub.lanes.reads]]
    assert [type(f) for f in queued] == [memoryview, bytes]
    assert queued[0] == big[4:] and queued[1] == other[4:]
    # the message it was read into is the batch of one pack_pairs would make
    assert queued[0].obj == wire.pack_pairs([(conn.conn_id, big[4:])], wire.REQUESTS)
    assert conn.partial_since is None and conn.reader.buffered == 0


def test_a_large_frame_in_progress_is_partial(big: bytes) -> None:
    hub, conn, _ = connection([b"1"])
    reads(conn, big[: len(big) // 2], 65536)
    assert conn.partial_since is not None
    reads(conn, big[len(big) // 2 :], 65536)
    assert conn.partial_since is None
    assert [f for _, f, _, _ in hub.lanes.queued()] == [big[4:]]


class Router:
    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []

    def send_multipart(self, parts: tuple[Any, ...], flags: int = 0, copy: bool = True) -> None:
        self.sent.append(parts)


def test_a_batch_is_split_around_its_large_frames(big: bytes) -> None:
    hub, conn, _ = connection([b"1"])
    router = Router()
    hub.router = router  # type: ignore[assignment]
    hub._schedule_read = lambda: None  # type: ignore[method-assign]
    peer, _ = hub.lanes.seen(b"b0", 0.0, wire.LANE_ALL, 0)
    assert peer is not None
    buf, at = wire.pair_buffer(wire.REQUESTS, b"c1", len(big) - 4)
    buf[at:] = big[4:]
    large = memoryview(buf)[at:]
    hub._send_batch(peer, [(b"c1", b"x"), (b"c1", large), (b"c2", b"y"), (b"c2", b"z")])
    assert router.sent == [
        (b"b0", wire.pack_pairs([(b"c1", b"x")], wire.REQUESTS)),
        (b"b0", buf),
        (b"b0", wire.pack_pairs([(b"c2", b"y"), (b"c2", b"z")], wire.REQUESTS)),
    ]
    assert buf == wire.pack_pairs([(b"c1", big[4:])], wire.REQUESTS)
    router.sent.clear()
    hub._send_batch(peer, [(b"c1", b"x"), (b"c2", b"y")])
    assert router.sent == [(b"b0", wire.pack_pairs([(b"c1", b"x"), (b"c2", b"y")],
                                                   wire.REQUESTS))]


class Pool:
    """One business worker on a real ZeroMQ pair, driven by hand, as I/O worker 0 sees it."""

    def __init__(self, tmp_path: Path) -> None:
        Store.create(tmp_path / "store").close()
        self.zctx = zmq.Context()
        self.router = self.zctx.socket(zmq.ROUTER)
        self.router.setsockopt(zmq.LINGER, 0)
        self.router.bind(io_endpoint(tmp_path, 0))
        self.worker = BusinessWorker(BusinessConfig(
            index=0, parent=0, run=str(tmp_path), io_workers=1,
            store_path=str(tmp_path / "store"), node_name="n"), self.zctx)
        deadline = time.monotonic() + 10
        while not self.router.poll(50):  # a hello is dropped until the connection is up
            assert time.monotonic() < deadline, "no hello from the business worker"
            self.worker.hello()
        self.ident, hello = self.router.recv_multipart()
        assert hello.startswith(wire.HELLO)

    def send(self, message: bytes | bytearray) -> None:
        self.router.send_multipart((self.ident, message), copy=False)

    def answers(self, n: int) -> list[tuple[bytes, bytes]]:
        out: list[tuple[bytes, bytes]] = []
        deadline = time.monotonic() + 10
        while len(out) < n:
            assert time.monotonic() < deadline, out
            self.worker._drain(self.worker.sockets[0])
            if self.router.poll(50):
                _, message = self.router.recv_multipart()
                if message.startswith(wire.REPLIES):
                    out += wire.unpack_replies(message[1:])[0]
        return out

    def close(self) -> None:
        for sock in self.worker.sockets:
            sock.close(0)
        self.worker.pusher.close()
        self.worker.store.close()
        self.router.close(0)
        self.zctx.term()


ALL_TOPICS = encode_command(RemotingCommand(code=206, opaque=9))[4:]


def test_the_business_worker_answers_a_large_frame_in_order(tmp_path: Path, big: bytes
                                                             ) -> None:
    pool = Pool(tmp_path)
    try:
        buf, at = wire.pair_buffer(wire.REQUESTS, b"c1@p", len(big) - 4)
        buf[at:] = big[4:]
        pool.send(buf)
        pool.send(wire.pack_pairs([(b"c1@p", ALL_TOPICS)], wire.REQUESTS))
        answers = pool.answers(2)
        assert [conn for conn, _ in answers] == [b"c1@p", b"c1@p"]
        replies = [decode_frame(reply) for _, reply in answers]
        assert [(r.opaque, r.code) for r in replies] == [(1, ResponseCode.SUCCESS),
                                                         (9, ResponseCode.SUCCESS)]
        assert b"\"T02999\"" in (replies[1].body or b"")  # it sees the registration
    finally:
        pool.close()


def test_the_business_worker_gives_heap_pages_back_after_a_registration(tmp_path: Path
                                                                        ) -> None:
    pool = Pool(tmp_path)
    trims: list[int] = []
    pool.worker.trim = Trim(lambda: 0.0, lambda: trims.append(1))
    try:
        pool.send(wire.pack_pairs([(b"c1@p", ALL_TOPICS)], wire.REQUESTS))
        assert [decode_frame(r).code for _, r in pool.answers(1)] == [ResponseCode.SUCCESS]
        assert trims == []  # a small batch
        frame = registration(400)[4:]
        assert len(frame) >= TRIM_AFTER_BYTES
        pool.send(wire.pack_pairs([(b"c1@p", frame)], wire.REQUESTS))
        assert [decode_frame(r).code for _, r in pool.answers(1)] == [ResponseCode.SUCCESS]
        assert trims == [1]
    finally:
        pool.close()


def test_the_business_worker_reads_a_large_frame_in_shared_memory(tmp_path: Path, big: bytes
                                                                  ) -> None:
    pool = Pool(tmp_path)
    arena = FrameArena(tmp_path / "store", 0, 64 << 20)  # where the pool's worker looks
    try:
        hub, conn, _ = connection([b"1"], arena)
        router = Router()
        hub.router = router  # type: ignore[assignment]
        hub._schedule_read = lambda: None  # type: ignore[method-assign]
        reads(conn, big, 65536)  # read by the I/O worker's connection, as on a socket
        [(_, frame, _, _)] = hub.lanes.queued()
        assert arena.owns(frame) and frame == big[4:]
        peer, _ = hub.lanes.seen(pool.ident, 0.0, wire.LANE_ALL, 0)
        assert peer is not None
        [(_, batch)] = hub.lanes.batches()
        hub._send_batch(peer, batch)
        [(_, ref)] = router.sent  # a reference, not the megabytes
        assert ref == wire.shared_ref(os.getpid(), 0, len(big) - 4, conn.conn_id)
        pool.send(ref)
        pool.send(wire.pack_pairs([(conn.conn_id, ALL_TOPICS)], wire.REQUESTS))
        replies = [decode_frame(reply) for _, reply in pool.answers(2)]
        assert [(r.opaque, r.code) for r in replies] == [(1, ResponseCode.SUCCESS),
                                                         (9, ResponseCode.SUCCESS)]
        assert b"\"T02999\"" in (replies[1].body or b"")
        assert arena.used  # in use until the I/O worker has the reply
        hub.lanes.finish(peer)
        assert not arena.used
        pool.send(wire.shared_ref(os.getpid() + 1, 0, 10, b"c9@p"))  # its worker is gone
        assert pool.answers(1) == [(b"c9@p", wire.CLOSE)]
    finally:
        arena.close()
        pool.close()


def test_a_registration_in_shared_memory_is_read_where_it_lies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its body reaches the handler as a view of the file, not copied; the pieces of its
    table kept for the next registration are bytes; other codes get their body as bytes."""
    bodies: list[tuple[int, type]] = []
    for table in (processors.HANDLERS, processors.HANDLERS5):  # 4.9.8 and 5.x
        for code in (RequestCode.REGISTER_BROKER, RequestCode.PUT_KV_CONFIG):
            def spy(ctx: Any, cmd: RemotingCommand, channel: str, peer: str,
                    handler: Any = table[code]) -> Any:
                bodies.append((cmd.code, type(cmd.body)))
                return handler(ctx, cmd, channel, peer)
            monkeypatch.setitem(table, code, spy)
    pool = Pool(tmp_path)
    arena = FrameArena(tmp_path / "store", 0, 64 << 20)
    kv = encode_command(RemotingCommand(code=RequestCode.PUT_KV_CONFIG, opaque=7, ext_fields={
        "namespace": "N", "key": "k", "value": "v"}, body=b"x" * LARGE_FRAME))
    try:
        for frame in (registration(3000, 1, 1), registration(3001, 2, 2),
                      registration(3002, 3, 3), kv):
            extent = arena.alloc(len(frame) - 4)
            assert extent is not None
            extent[:] = frame[4:]
            pool.send(wire.shared_ref(os.getpid(), arena.offset(extent), len(extent), b"c1@p"))
            [(_, reply)] = pool.answers(1)
            assert decode_frame(reply).code == ResponseCode.SUCCESS
            arena.release(extent)
        memo = applied._APPLIED_MEMO["b"]  # the third table was read piece by piece
        assert len(memo.queues) == 3002 and list(memo.delta_queues) == ["T03001"]
        assert memo.pieces is not None and type(memo.pieces.body) is bytes
        assert decode_frame(registration(3002, 3, 3)).body == memo.pieces.body
        assert bodies == [(103, memoryview)] * 3 + [(100, bytes)]
    finally:
        arena.close()
        pool.close()


@pytest.fixture
def arena(tmp_path: Path):  # type: ignore[no-untyped-def]
    a = FrameArena(tmp_path, 0, 64 << 20)
    yield a
    a.close()


def test_a_large_frame_cut_short_gives_its_shared_memory_back(arena: FrameArena, big: bytes
                                                              ) -> None:
    _, conn, _ = connection([b"1"], arena)
    reads(conn, big[: len(big) // 2], 65536)
    assert arena.used
    conn.connection_lost(None)
    assert not arena.used


def test_a_refused_large_frame_gives_its_shared_memory_back(arena: FrameArena, big: bytes
                                                            ) -> None:
    hub, conn, transport = connection([b"1"], arena)
    hub.lanes.max_pending = 0  # the queue is full: SYSTEM_BUSY
    reads(conn, big, 65536)
    assert decode_frame(transport.writes[-1]).code == ResponseCode.SYSTEM_BUSY
    assert not arena.used


def test_a_large_frame_in_flight_is_kept_as_its_header_alone(big: bytes) -> None:
    hub, conn, _ = connection([b"1"])
    reads(conn, big, 65536)
    peer, _ = hub.lanes.seen(b"b0", 0.0, wire.LANE_ALL, 0)
    assert peer is not None
    [(_, [(_, sent)])] = hub.lanes.batches()
    assert type(sent) is memoryview
    kept = peer.inflight[0][1]
    assert type(kept) is bytes and kept == without_body(big[4:]) and len(kept) < 300
