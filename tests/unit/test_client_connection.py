"""ConnectionPool / IoLoop against an in-process fake server: reuse, multiplexing,
timeouts, garbage, closes, refused connections, and hard deadlines for callers."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator

import pytest

from cluster.client.connection import ConnectionPool, IoLoop, parse_addr, split_addrs
from cluster.client.errors import (
    CallTimeout,
    ClientError,
    ConnectError,
    ConnectionLost,
    ProtocolError,
)
from cluster.core.protocol.codes import FLAG_ONEWAY
from cluster.core.protocol.command import RemotingCommand
from tests.nodeproc import poll_until
from tests.unit.client_fakes import CLOSE, Delay, FakeNameServer, reply

MARGIN = 0.3


@pytest.fixture
def pool() -> Iterator[ConnectionPool]:
    io = IoLoop()
    p = ConnectionPool(io, connect_timeout=1.0)
    yield p
    p.close()
    io.close()


def _cmd(code: int = 105, **ext: str) -> RemotingCommand:
    return RemotingCommand(code=code, version=409, ext_fields=dict(ext) or None)


def _dead_addr() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def test_round_trip_reuses_one_connection(pool: ConnectionPool) -> None:
    with FakeNameServer(lambda c: reply(ext={"echo": c.field("topic") or ""})) as srv:
        for i in range(3):
            resp = pool.call(srv.addr, _cmd(topic=f"t{i}"), 2.0)
            assert resp.code == 0 and resp.field("echo") == f"t{i}"
        assert srv.connections == 1
        assert [r.opaque for r in srv.requests] == sorted({r.opaque for r in srv.requests})


def test_replies_out_of_order_reach_their_callers(pool: ConnectionPool) -> None:
    def handler(c: RemotingCommand) -> Delay:
        n = int(c.field("n") or 0)
        return Delay(0.2 - n * 0.01, reply(ext={"n": str(n)}))

    async def many() -> list[str | None]:
        calls = [pool.request(srv.addr, _cmd(n=str(i)), 2.0) for i in range(10)]
        return [r.field("n") for r in await asyncio.gather(*calls)]

    with FakeNameServer(handler) as srv:
        assert pool.io.run(many(), 3.0) == [str(i) for i in range(10)]
        assert srv.connections == 1


def test_silent_node_times_out_within_the_timeout(pool: ConnectionPool) -> None:
    with FakeNameServer(lambda c: None) as srv:
        start = time.monotonic()
        with pytest.raises(CallTimeout) as info:
            pool.call(srv.addr, _cmd(), 0.3)
        assert time.monotonic() - start < 0.3 + MARGIN
        assert info.value.addr == srv.addr
        assert not pool.is_connected(srv.addr)  # closed after the timeout, like Java


def test_reconnects_after_a_timeout(pool: ConnectionPool) -> None:
    answers = iter([None, reply()])
    with FakeNameServer(lambda c: next(answers)) as srv:
        with pytest.raises(CallTimeout):
            pool.call(srv.addr, _cmd(), 0.2)
        assert pool.call(srv.addr, _cmd(), 2.0).code == 0
        assert srv.connections == 2


def test_garbage_is_a_protocol_error(pool: ConnectionPool) -> None:
    with FakeNameServer(lambda c: b"\x00\x00\x00\x08\x07\x00\x00\x00garbage!") as srv:
        start = time.monotonic()
        with pytest.raises(ProtocolError):
            pool.call(srv.addr, _cmd(), 2.0)
        assert time.monotonic() - start < 1.0


def test_negative_length_is_a_protocol_error(pool: ConnectionPool) -> None:
    with FakeNameServer(lambda c: b"\xff\xff\xff\xff") as srv, pytest.raises(ProtocolError):
        pool.call(srv.addr, _cmd(), 2.0)


def test_close_is_a_lost_connection(pool: ConnectionPool) -> None:
    with FakeNameServer(lambda c: CLOSE) as srv:
        with pytest.raises(ConnectionLost) as info:
            pool.call(srv.addr, _cmd(), 2.0)
        assert isinstance(info.value, ConnectError)


def test_refused_connection_fails_fast(pool: ConnectionPool) -> None:
    start = time.monotonic()
    with pytest.raises(ConnectError) as info:
        pool.call(_dead_addr(), _cmd(), 2.0)
    assert time.monotonic() - start < 1.0
    assert "connect failed" in str(info.value)


def test_unknown_opaque_and_server_requests_are_ignored(pool: ConnectionPool) -> None:
    stray = reply()
    stray.opaque = 999_999
    server_request = RemotingCommand(code=905, opaque=5)

    def handler(c: RemotingCommand) -> bytes:
        from cluster.core.protocol.frame import encode_command

        return encode_command(stray) + encode_command(server_request)

    with FakeNameServer(handler) as srv, pytest.raises(CallTimeout):
        pool.call(srv.addr, _cmd(), 0.3)


def test_oneway_sends_the_oneway_flag(pool: ConnectionPool) -> None:
    with FakeNameServer(lambda c: None) as srv:
        pool.call_oneway(srv.addr, RemotingCommand(code=103, flag=FLAG_ONEWAY), 1.0)
        poll_until(lambda: srv.requests, timeout=2.0, what="the oneway request")
        assert srv.requests[0].is_oneway


def test_blocking_caller_never_waits_past_its_timeout(pool: ConnectionPool) -> None:
    async def hog() -> None:
        time.sleep(0.8)  # the loop thread is stuck

    pool.io.submit(hog())
    start = time.monotonic()
    with pytest.raises(CallTimeout):
        pool.call(_dead_addr(), _cmd(), 0.1)
    assert time.monotonic() - start < 0.1 + MARGIN


def test_in_flight_requests_are_bounded() -> None:
    io = IoLoop()
    pool = ConnectionPool(io, max_inflight=2)
    try:
        with FakeNameServer(lambda c: None) as srv:
            async def three() -> list[object]:
                calls = [pool.request(srv.addr, _cmd(), 0.3) for _ in range(3)]
                return await asyncio.gather(*calls, return_exceptions=True)

            results = io.run(three(), 2.0)
            kinds = sorted(type(r).__name__ for r in results)
            assert kinds == ["CallTimeout", "CallTimeout", "ClientError"]
    finally:
        pool.close()
        io.close()


def test_closed_loop_refuses_work() -> None:
    io = IoLoop()
    io.close()
    with pytest.raises(ClientError):
        ConnectionPool(io).call("127.0.0.1:1", _cmd(), 0.1)


def test_opaque_wraps_like_a_java_int(pool: ConnectionPool) -> None:
    import itertools

    pool._opaque = itertools.count(0x7FFFFFFF)
    assert [pool.next_opaque() for _ in range(2)] == [0x7FFFFFFF, -0x80000000]


def test_addresses() -> None:
    assert parse_addr("127.0.0.1:9876") == ("127.0.0.1", 9876)
    assert split_addrs(" a:1; b:2;") == ["a:1", "b:2"]
    for bad in ("nohost", "h:0", "h:99999", ":1", "h:x"):
        with pytest.raises(ValueError):
            parse_addr(bad)
