"""The I/O worker's hit path: pipelined lookups answered in one write, counted per chunk."""

from __future__ import annotations

import dataclasses
from typing import Any

from cluster.core.protocol.codes import ResponseCode, SerializeType
from cluster.core.protocol.command import RemotingCommand, response_to
from cluster.core.protocol.frame import encode_command
from state.queries import ABSENT
from tests.unit.test_route_replies import not_found
from worker.frame_arena import FrameArena
from worker.io.connection import READ_SIZE, TURN_BYTES, Connection, IoConfig
from worker.io.hub import Hub
from worker.io.route_replies import RouteReplies, header_key

CFG = IoConfig(index=0, parent=0, host="127.0.0.1", port=0, run="", store_path="",
               frame_max=1 << 20, header_max=1 << 16, max_connections=10,
               max_connections_per_address=10, pending_max=1 << 20,
               requests_max=1000, frame_timeout_s=10.0,
               write_timeout_s=10.0, tls_mode="disabled", tls_cert="", tls_key="",
               tls_client_auth="", tls_trust="", idle_timeout_s=60.0, max_pending=100,
               window=8, drain_ms=0, dialect="4.9.8")  # binary requests, binary replies


class Loop:
    def time(self) -> float:
        return 0.0

    def call_soon(self, *args: Any) -> None:
        pass


class Transport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 40000) if name == "peername" else None

    def get_write_buffer_size(self) -> int:
        return 0

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def request(topic: str, opaque: int, stype: SerializeType = SerializeType.JSON) -> bytes:
    return encode_command(RemotingCommand(code=105, opaque=opaque, ext_fields={"topic": topic},
                                          serialize_type=stype))


def reply(opaque: int, code: int, stype: SerializeType = SerializeType.JSON) -> bytes:
    req = RemotingCommand(code=105, opaque=opaque, serialize_type=stype)
    body = b'{"x":1}' if code == ResponseCode.SUCCESS else None
    remark = None if code == ResponseCode.SUCCESS else "No topic route info"
    return encode_command(response_to(req, code, remark, body=body))


def connection(generation: list[bytes], arena: FrameArena | None = None,
               loop: Loop | None = None, transport: Transport | None = None
               ) -> tuple[Hub, Connection, Transport]:
    replies = RouteReplies(lambda: generation[0])
    hub = Hub(CFG, loop or Loop(), None, replies, arena)  # type: ignore[arg-type]
    conn, transport = Connection(hub), transport or Transport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    replies.refresh()
    for topic, code, stype in (("A", ResponseCode.SUCCESS, SerializeType.JSON),
                               ("B", ResponseCode.TOPIC_NOT_EXIST, SerializeType.JSON),
                               ("A", ResponseCode.SUCCESS, SerializeType.ROCKETMQ)):
        key = header_key(request(topic, 1, stype)[4:])
        assert key is not None
        replies.learn(key[0], replies.generation, reply(1, code, stype))
    return hub, conn, transport


def test_a_chunk_of_hits_is_one_write_counted_by_result() -> None:
    hub, conn, transport = connection([b"1"])
    chunk = b"".join((request("A", 7), request("B", 8), request("A", 9, SerializeType.ROCKETMQ),
                      request("A", 123456)))
    conn.data_received(chunk)
    assert transport.writes == [b"".join((
        reply(7, ResponseCode.SUCCESS), reply(8, ResponseCode.TOPIC_NOT_EXIST),
        reply(9, ResponseCode.SUCCESS, SerializeType.ROCKETMQ),
        reply(123456, ResponseCode.SUCCESS)))]
    assert hub.m.requests == {(105, 0, "client"): 3, (105, 17, "client"): 1}
    assert hub.m.counters["route_template_hits"] == 4
    assert sum(hub.m.latency[105].counts) == 4


def test_missing_topics_are_answered_with_their_own_names() -> None:
    hub, conn, transport = connection([b"1"])
    names = ("Xy-1", "Zw-2", "Missing-topic-3")
    for name in names:
        key = header_key(request(name, 1)[4:])
        assert key is not None
        hub.replies.learn(key[0], hub.replies.generation, not_found(1, name))
    conn.data_received(b"".join(request(name, 50 + i) for i, name in enumerate(names)))
    assert transport.writes == [b"".join(not_found(50 + i, name) for i, name in enumerate(names))]
    assert hub.m.requests == {(105, 17, "client"): 3}


def test_only_unusual_results_are_counted_alone() -> None:
    hub, conn, transport = connection([b"1"])
    conn.data_received(request("B", 5))
    assert hub.m.requests == {(105, 17, "client"): 1}
    conn.data_received(b"".join((request("B", 6), request("A", 7), request("B", 8))))
    assert hub.m.requests == {(105, 17, "client"): 3, (105, 0, "client"): 1}


def test_a_new_generation_is_seen_by_the_next_chunk() -> None:
    gen = [b"1"]
    hub, conn, transport = connection(gen)
    gen[0] = b"2"
    conn.data_received(request("A", 7))
    assert transport.writes == [] and hub.lanes.pending == 1
    assert hub.m.counters.get("route_template_hits") is None
    assert hub.m.counters["route_template_misses"] == 1


class PausingTransport(Transport):
    def __init__(self) -> None:
        super().__init__()
        self.paused = False

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


def test_reading_stops_past_the_requests_a_connection_may_have_unanswered() -> None:
    hub = Hub(dataclasses.replace(CFG, requests_max=10, max_pending=1000), Loop(), None,
              RouteReplies(lambda: b"1"))  # type: ignore[arg-type]
    conn, transport = Connection(hub), PausingTransport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    kv = encode_command(RemotingCommand(code=101, opaque=1, ext_fields={"namespace": "n"}))
    conn.data_received(kv * 10)
    assert not transport.paused and conn.outstanding == 10
    conn.data_received(kv)
    assert transport.paused  # the eleventh: the node reads no more from it ...
    for _ in range(5):
        hub._settled(conn.conn_id, len(kv) - 4)
    assert transport.paused
    hub._settled(conn.conn_id, len(kv) - 4)
    assert not transport.paused and conn.outstanding == 5  # ... until half are answered


def test_a_first_lookup_of_a_topic_sharing_a_learned_route_is_answered_here() -> None:
    gen = [b"1"]
    refs = {"A": b"k", "C": b"k"}  # the store: A and C have equal queue datas, D its own
    replies = RouteReplies(lambda: gen[0], lambda topic, g: refs.get(topic) if g == gen[0]
                           else None)
    hub = Hub(CFG, Loop(), None, replies)  # type: ignore[arg-type]
    conn, transport = Connection(hub), Transport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    conn.data_received(request("A", 1))  # a miss: to the pool, with what it shares
    (key, sibling), generation, _, _ = hub.lanes.queued()[0][2]
    replies.learn(key, generation, reply(1, ResponseCode.SUCCESS), sibling)
    conn.data_received(request("C", 7) + request("D", 8))
    assert transport.writes == [reply(7, ResponseCode.SUCCESS)]
    assert hub.m.counters["route_template_shared"] == 1
    assert hub.m.counters["route_template_misses"] == 2  # A, then D


def test_a_first_lookup_of_an_absent_topic_is_answered_here_with_its_own_name() -> None:
    gen = [b"1"]
    refs = {"A": b"k"}  # the store holds A alone
    replies = RouteReplies(lambda: gen[0], lambda topic, g: refs.get(topic, ABSENT)
                           if g == gen[0] else None)
    hub = Hub(CFG, Loop(), None, replies)  # type: ignore[arg-type]
    conn, transport = Connection(hub), Transport()
    conn.connection_made(transport)  # type: ignore[arg-type]
    conn.data_received(request("Xy-1", 1))  # a miss: to the pool, with what it shares
    (key, sibling), generation, _, _ = hub.lanes.queued()[0][2]
    replies.learn(key, generation, not_found(1, "Xy-1"), sibling)
    conn.data_received(request("Zw-2", 7) + request("Missing-topic-3", 8) + request("A", 9))
    assert transport.writes == [not_found(7, "Zw-2")]
    assert hub.m.counters["route_template_shared"] == 1
    assert hub.m.counters["route_template_misses"] == 3  # Xy-1, then the longer name and A


class TurnLoop(Loop):
    """Keeps what is called soon, to run it as the loop's next turn would."""

    def __init__(self) -> None:
        self.soon: list[tuple[Any, tuple[Any, ...]]] = []

    def call_soon(self, callback: Any, *args: Any) -> None:
        self.soon.append((callback, args))

    def next_turn(self) -> None:
        ready, self.soon = self.soon, []
        for callback, args in ready:
            callback(*args)


def turn_connection() -> tuple[Connection, PausingTransport, TurnLoop]:
    loop, transport = TurnLoop(), PausingTransport()
    _, conn, _ = connection([b"1"], loop=loop, transport=transport)
    return conn, transport, loop


def test_a_read_of_a_turns_worth_of_requests_ends_the_connections_turn() -> None:
    conn, transport, loop = turn_connection()
    few = b"".join(request("A", i) for i in range(1, 9))
    conn.data_received(few)
    assert not transport.paused and not loop.soon
    many = b"".join(request("A", i) for i in range(1, TURN_BYTES // len(request("A", 1)) + 2))
    assert len(many) >= TURN_BYTES
    conn.data_received(many)
    assert len(transport.writes) == 2  # every request of the read answered, in one write
    assert transport.paused  # the others are read before this one again ...
    loop.next_turn()
    assert not transport.paused  # ... at the loop's next turn


def test_flow_control_and_turns_resume_reading_only_when_both_allow() -> None:
    conn, transport, loop = turn_connection()
    many = b"".join(request("A", i) for i in range(1, TURN_BYTES // 32))
    conn.data_received(many)
    conn.pause_writing()  # its replies cannot be written: reading must stay stopped
    loop.next_turn()
    assert transport.paused
    conn.resume_writing()
    assert not transport.paused
    conn.data_received(many)
    conn.pause_writing()
    conn.resume_writing()  # replies flow again, but the turn is not over
    assert transport.paused
    loop.next_turn()
    assert not transport.paused


def test_a_long_frame_is_read_whole_a_stream_of_requests_a_turn_at_a_time() -> None:
    conn, transport, loop = turn_connection()
    assert len(conn.get_buffer(-1)) == TURN_BYTES
    big = encode_command(RemotingCommand(code=100, opaque=1, ext_fields={"namespace": "n"},
                                         body=b"x" * (4 * TURN_BYTES)))
    conn.data_received(big[:100])
    assert len(conn.get_buffer(-1)) == len(big) - 100  # its rest, and nothing after it
    conn.data_received(big[100 : len(big) - TURN_BYTES])
    assert len(conn.get_buffer(-1)) == TURN_BYTES  # what is left of it fits in a turn
    huge = encode_command(RemotingCommand(code=100, opaque=2, ext_fields={"namespace": "n"},
                                          body=b"x" * (2 * READ_SIZE)))
    conn.data_received(big[len(big) - TURN_BYTES :] + huge[:100])
    assert len(conn.get_buffer(-1)) == READ_SIZE
