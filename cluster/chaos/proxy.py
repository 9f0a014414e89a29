"""Fault-injecting TCP proxy placed between the workload and one node.

Each direction (``up`` = client to node, ``down`` = node to client) can be
slowed (latency, jitter), made lossy (a lost segment is delivered after a
retransmission delay, as TCP would) or blackholed (bytes vanish; a FIN still
passes, so a closed connection is seen as closed). The proxy
can also reset every open connection and refuse new ones. Faults change at
run time; buffers are bounded (a full queue stops reading from the sender).

``FaultProxy`` lives in the caller's event loop; ``ProxyHost`` runs several
proxies in a background thread with a thread-safe control API.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import struct
import threading
from collections.abc import Callable, Coroutine
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar

_T = TypeVar("_T")
_LINGER_RST = struct.pack("ii", 1, 0)


@dataclass(frozen=True, slots=True)
class LinkFaults:
    """Faults of one direction of a link."""

    latency_ms: float = 0.0
    jitter_ms: float = 0.0
    loss: float = 0.0
    retransmit_ms: float = 200.0
    blackhole: bool = False

    def delay_s(self, rng: random.Random) -> float:
        ms = self.latency_ms
        if self.jitter_ms > 0:
            ms += rng.uniform(0.0, self.jitter_ms)
        if self.loss > 0 and rng.random() < self.loss:
            ms += self.retransmit_ms
        return ms / 1000.0

    @property
    def clean(self) -> bool:
        return self == CLEAN


CLEAN = LinkFaults()


@dataclass(frozen=True, slots=True)
class ProxyFaults:
    """Faults of a whole proxy: both directions plus refusal of new connections."""

    up: LinkFaults = CLEAN
    down: LinkFaults = CLEAN
    refuse: bool = False

    @classmethod
    def slow(cls, latency_ms: float, jitter_ms: float = 0.0) -> ProxyFaults:
        link = LinkFaults(latency_ms=latency_ms, jitter_ms=jitter_ms)
        return cls(up=link, down=link)

    @classmethod
    def lossy(cls, loss: float, retransmit_ms: float = 200.0) -> ProxyFaults:
        link = LinkFaults(loss=loss, retransmit_ms=retransmit_ms)
        return cls(up=link, down=link)

    @classmethod
    def blackhole(cls) -> ProxyFaults:
        hole = LinkFaults(blackhole=True)
        return cls(up=hole, down=hole)

    @classmethod
    def cut(cls, direction: str) -> ProxyFaults:
        """One-way cut: ``up`` drops requests, ``down`` drops replies."""
        hole = LinkFaults(blackhole=True)
        if direction == "up":
            return cls(up=hole)
        if direction == "down":
            return cls(down=hole)
        raise ValueError(f"direction must be 'up' or 'down', not {direction!r}")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProxyFaults:
        return cls(up=LinkFaults(**d.get("up", {})), down=LinkFaults(**d.get("down", {})),
                   refuse=bool(d.get("refuse", False)))


@dataclass(slots=True)
class ProxyStats:
    accepted: int = 0
    refused: int = 0
    reset: int = 0
    upstream_failed: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    dropped_up: int = 0
    dropped_down: int = 0

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def _abort_with_rst(writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
    writer.transport.abort()


def _abort_on_error(task: asyncio.Task[None], link: _Link) -> None:
    if not task.cancelled() and task.exception() is not None:
        link.abort()


@dataclass(eq=False)
class _Link:
    """One proxied connection: two pumps, each a reader task and a writer task."""

    client: tuple[asyncio.StreamReader, asyncio.StreamWriter]
    server: tuple[asyncio.StreamReader, asyncio.StreamWriter]
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def abort(self) -> None:
        _abort_with_rst(self.client[1])
        _abort_with_rst(self.server[1])
        for task in self.tasks:
            task.cancel()


class FaultProxy:
    """Listens on 127.0.0.1:``listen_port`` and forwards to ``upstream``."""

    def __init__(self, upstream: tuple[str, int], *, listen_port: int = 0, name: str = "proxy",
                 seed: int = 0, max_connections: int = 256, queue_chunks: int = 64,
                 chunk_size: int = 65536, connect_timeout_s: float = 2.0) -> None:
        self.name = name
        self.upstream = upstream
        self.faults = ProxyFaults()
        self.stats = ProxyStats()
        self._listen_port = listen_port
        self._rng = random.Random(seed)
        self._max_connections = max_connections
        self._queue_chunks = queue_chunks
        self._chunk_size = chunk_size
        self._connect_timeout_s = connect_timeout_s
        self._links: set[_Link] = set()
        self._pending: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self._closing = False

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("proxy not started")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def open_connections(self) -> int:
        return len(self._links)

    async def start(self) -> None:
        self._server = await asyncio.start_server(
            self._accept, "127.0.0.1", self._listen_port, reuse_address=True,
            limit=self._chunk_size)

    def set_faults(self, faults: ProxyFaults) -> None:
        self.faults = faults

    def heal(self) -> None:
        self.faults = ProxyFaults()

    def reset_connections(self) -> int:
        """Reset (RST) every open connection on both sides; returns how many."""
        links = list(self._links)
        for link in links:
            link.abort()
        self._links.clear()
        self.stats.reset += len(links)
        return len(links)

    async def close(self) -> None:
        """Stop accepting, reset every connection and wait for the handlers to finish."""
        self._closing = True
        if self._server is not None:
            self._server.close()
        self.reset_connections()
        if self._pending:
            _, late = await asyncio.wait(set(self._pending), timeout=self._connect_timeout_s + 1)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._pending.add(task)
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            _abort_with_rst(writer)
        finally:
            self._pending.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.faults.refuse or len(self._links) >= self._max_connections:
            self.stats.refused += 1
            _abort_with_rst(writer)
            return
        server = await self._connect_upstream()
        if server is None or self._closing:
            _abort_with_rst(writer)
            if server is not None:
                _abort_with_rst(server[1])
            return
        self.stats.accepted += 1
        link = _Link((reader, writer), server)
        self._links.add(link)
        link.tasks = [asyncio.ensure_future(c) for c in (
            self._pump(link, reader, server[1], "up"),
            self._pump(link, server[0], writer, "down"))]
        try:
            await asyncio.gather(*link.tasks, return_exceptions=True)
        finally:
            self._links.discard(link)
            for w in (writer, server[1]):
                w.close()

    async def _connect_upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        host, port = self.upstream
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(host, port, limit=self._chunk_size),
                self._connect_timeout_s)
        except (OSError, TimeoutError):
            self.stats.upstream_failed += 1
            return None

    async def _pump(self, link: _Link, src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                    direction: str) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(self._queue_chunks)
        writer = asyncio.ensure_future(self._deliver(queue, dst))
        writer.add_done_callback(lambda t: _abort_on_error(t, link))
        link.tasks.append(writer)
        try:
            await self._read_into(src, queue, direction)
            await writer
        except (ConnectionError, OSError):
            link.abort()
        finally:
            writer.cancel()

    async def _read_into(self, src: asyncio.StreamReader,
                         queue: asyncio.Queue[tuple[float, bytes]], direction: str) -> None:
        loop = asyncio.get_running_loop()
        last_due = 0.0
        while True:
            data = await src.read(self._chunk_size)
            link_faults = self.faults.up if direction == "up" else self.faults.down
            if data and link_faults.blackhole:
                self._count(direction, dropped=len(data))
                continue
            last_due = max(last_due, loop.time() + link_faults.delay_s(self._rng))
            await queue.put((last_due, data))
            if not data:
                return None
            self._count(direction, sent=len(data))

    def _count(self, direction: str, sent: int = 0, dropped: int = 0) -> None:
        s = self.stats
        if direction == "up":
            s.bytes_up += sent
            s.dropped_up += dropped
        else:
            s.bytes_down += sent
            s.dropped_down += dropped

    @staticmethod
    async def _deliver(queue: asyncio.Queue[tuple[float, bytes]],
                       dst: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not data:
                if dst.can_write_eof():
                    dst.write_eof()
                return
            dst.write(data)
            await dst.drain()


@dataclass(frozen=True, slots=True)
class ProxySpec:
    name: str
    upstream: tuple[str, int]
    listen_port: int = 0


class ProxyHost:
    """Several FaultProxy objects served by one event loop in a daemon thread."""

    def __init__(self, specs: list[ProxySpec], *, seed: int = 0,
                 call_timeout_s: float = 5.0, max_connections: int = 256) -> None:
        self._specs = specs
        self._seed = seed
        self._max_connections = max_connections
        self._call_timeout_s = call_timeout_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="chaos-proxy",
                                        daemon=True)
        self.proxies: dict[str, FaultProxy] = {}

    def start(self) -> dict[str, int]:
        """Start the thread and every proxy; returns name -> listening port."""
        self._thread.start()
        for i, spec in enumerate(self._specs):
            proxy = FaultProxy(spec.upstream, listen_port=spec.listen_port, name=spec.name,
                               seed=self._seed * 1000 + i,
                               max_connections=self._max_connections)
            self._call(proxy.start())
            self.proxies[spec.name] = proxy
        return self.ports()

    def ports(self) -> dict[str, int]:
        return {name: p.port for name, p in self.proxies.items()}

    def set_faults(self, name: str, faults: ProxyFaults) -> None:
        self._run_sync(lambda: self.proxies[name].set_faults(faults))

    def heal(self, name: str) -> None:
        self._run_sync(self.proxies[name].heal)

    def reset_connections(self, name: str) -> int:
        return self._run_sync(self.proxies[name].reset_connections)

    def faults(self, name: str) -> ProxyFaults:
        return self._run_sync(lambda: self.proxies[name].faults)

    def stats(self) -> dict[str, dict[str, int]]:
        return self._run_sync(lambda: {n: p.stats.as_dict() for n, p in self.proxies.items()})

    def update(self, name: str, **changes: Any) -> None:
        proxy = self.proxies[name]
        self._run_sync(lambda: proxy.set_faults(replace(proxy.faults, **changes)))

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        for proxy in self.proxies.values():
            with contextlib.suppress(Exception):
                self._call(proxy.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self._call_timeout_s)
        if not self._thread.is_alive():
            self._loop.close()

    def __enter__(self) -> ProxyHost:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, coro: Coroutine[Any, Any, _T]) -> _T:
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return fut.result(self._call_timeout_s)

    def _run_sync(self, fn: Callable[[], _T]) -> _T:
        async def _wrap() -> _T:
            return fn()
        return self._call(_wrap())
