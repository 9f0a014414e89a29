"""The fault-injecting TCP proxy against an in-test echo server on free ports."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest

from cluster.chaos.proxy import FaultProxy, LinkFaults, ProxyFaults, ProxyHost, ProxySpec


class EchoServer:
    def __init__(self) -> None:
        self.received = bytearray()
        self.server: asyncio.Server | None = None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def _handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while data := await r.read(65536):
                self.received += data
                w.write(data)
                await w.drain()
        except ConnectionError:
            pass
        finally:
            w.close()

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()


@asynccontextmanager
async def proxied(**kwargs: object) -> AsyncIterator[tuple[FaultProxy, EchoServer]]:
    echo = EchoServer()
    port = await echo.start()
    proxy = FaultProxy(("127.0.0.1", port), name="p", **kwargs)  # type: ignore[arg-type]
    await proxy.start()
    try:
        yield proxy, echo
    finally:
        await proxy.close()
        await echo.close()


async def roundtrip(port: int, payload: bytes, timeout: float = 2.0) -> bytes:
    r, w = await asyncio.open_connection("127.0.0.1", port)
    try:
        w.write(payload)
        await w.drain()
        return await asyncio.wait_for(r.readexactly(len(payload)), timeout)
    finally:
        w.close()


async def poll(cond: Callable[[], bool], deadline_s: float = 2.0) -> None:
    end = time.monotonic() + deadline_s
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not reached before the deadline")
        await asyncio.sleep(0.01)


def run(coro: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(coro(), 20))


def test_passthrough_echo() -> None:
    async def go() -> None:
        async with proxied() as (proxy, echo):
            assert await roundtrip(proxy.port, b"hello" * 1000) == b"hello" * 1000
            assert proxy.stats.bytes_up == 5000
            await poll(lambda: proxy.stats.bytes_down == 5000)
    run(go)


def test_latency_delays_each_direction() -> None:
    async def go() -> None:
        async with proxied() as (proxy, _):
            proxy.set_faults(ProxyFaults(up=LinkFaults(latency_ms=80),
                                         down=LinkFaults(latency_ms=40)))
            t0 = time.monotonic()
            assert await roundtrip(proxy.port, b"x") == b"x"
            assert time.monotonic() - t0 >= 0.12
    run(go)


def test_lossy_link_retransmits_late_but_in_order() -> None:
    async def go() -> None:
        async with proxied(seed=7) as (proxy, _):
            proxy.set_faults(ProxyFaults.lossy(1.0, retransmit_ms=100))
            t0 = time.monotonic()
            assert await roundtrip(proxy.port, b"abc") == b"abc"
            assert time.monotonic() - t0 >= 0.2
    run(go)


def test_blackhole_drops_then_heal_restores() -> None:
    async def go() -> None:
        async with proxied() as (proxy, echo):
            proxy.set_faults(ProxyFaults.blackhole())
            with pytest.raises(TimeoutError):
                await roundtrip(proxy.port, b"lost", timeout=0.3)
            assert echo.received == b""
            assert proxy.stats.dropped_up == 4
            proxy.heal()
            assert await roundtrip(proxy.port, b"back") == b"back"
    run(go)


def test_one_way_cut_down_delivers_requests_but_not_replies() -> None:
    async def go() -> None:
        async with proxied() as (proxy, echo):
            proxy.set_faults(ProxyFaults.cut("down"))
            with pytest.raises(TimeoutError):
                await roundtrip(proxy.port, b"ping", timeout=0.3)
            await poll(lambda: echo.received == b"ping")
            assert proxy.stats.dropped_down == 4
    run(go)


def test_one_way_cut_up_drops_requests() -> None:
    async def go() -> None:
        async with proxied() as (proxy, echo):
            proxy.set_faults(ProxyFaults.cut("up"))
            with pytest.raises(TimeoutError):
                await roundtrip(proxy.port, b"ping", timeout=0.3)
            assert echo.received == b""
    run(go)


def test_reset_connections_sends_rst_to_the_client() -> None:
    async def go() -> None:
        async with proxied() as (proxy, _):
            r, w = await asyncio.open_connection("127.0.0.1", proxy.port)
            w.write(b"a")
            assert await asyncio.wait_for(r.readexactly(1), 2) == b"a"
            assert proxy.reset_connections() == 1
            with pytest.raises(ConnectionResetError):
                for _ in range(50):
                    if not await asyncio.wait_for(r.read(10), 2):
                        break
                    w.write(b"b")
                    await w.drain()
            w.close()
    run(go)


def test_refuse_resets_new_connections() -> None:
    async def go() -> None:
        async with proxied() as (proxy, _):
            proxy.set_faults(ProxyFaults(refuse=True))
            with pytest.raises((ConnectionResetError, asyncio.IncompleteReadError)):
                await roundtrip(proxy.port, b"no")
            assert proxy.stats.refused == 1
    run(go)


def test_connection_limit_is_a_bound() -> None:
    async def go() -> None:
        async with proxied(max_connections=1) as (proxy, _):
            r1, w1 = await asyncio.open_connection("127.0.0.1", proxy.port)
            w1.write(b"1")
            assert await asyncio.wait_for(r1.readexactly(1), 2) == b"1"
            with pytest.raises((ConnectionResetError, asyncio.IncompleteReadError)):
                await roundtrip(proxy.port, b"2")
            w1.close()
    run(go)


def test_unreachable_upstream_resets_client() -> None:
    async def go() -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            dead_port = s.getsockname()[1]
        proxy = FaultProxy(("127.0.0.1", dead_port))
        await proxy.start()
        try:
            with pytest.raises((ConnectionResetError, asyncio.IncompleteReadError)):
                await roundtrip(proxy.port, b"x")
            assert proxy.stats.upstream_failed == 1
        finally:
            await proxy.close()
    run(go)


def test_close_stops_listening_and_drops_links() -> None:
    async def go() -> None:
        async with proxied() as (proxy, _):
            r, w = await asyncio.open_connection("127.0.0.1", proxy.port)
            w.write(b"z")
            await asyncio.wait_for(r.readexactly(1), 2)
            port = proxy.port
            await proxy.close()
            assert proxy.open_connections == 0
            with pytest.raises(OSError):
                await roundtrip(port, b"x")
            w.close()
    run(go)


def test_proxy_host_runs_in_a_thread_with_sync_control() -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    echo = EchoServer()
    port = asyncio.run_coroutine_threadsafe(echo.start(), loop).result(5)

    def sync_roundtrip(p: int, timeout: float) -> bytes:
        with socket.create_connection(("127.0.0.1", p), timeout=timeout) as s:
            s.sendall(b"hi")
            return s.recv(10)

    try:
        with ProxyHost([ProxySpec("n1", ("127.0.0.1", port))], seed=3) as host:
            p = host.ports()["n1"]
            assert sync_roundtrip(p, 2) == b"hi"
            host.set_faults("n1", ProxyFaults.blackhole())
            assert host.faults("n1").up.blackhole
            with pytest.raises(TimeoutError):
                sync_roundtrip(p, 0.3)
            host.heal("n1")
            assert sync_roundtrip(p, 2) == b"hi"
            assert host.stats()["n1"]["accepted"] == 3
    finally:
        asyncio.run_coroutine_threadsafe(echo.close(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
