"""Pooled, multiplexed remoting connections driven by one private asyncio loop.

``IoLoop`` runs an asyncio event loop in a daemon thread, so synchronous
callers wait on ``concurrent.futures`` with hard deadlines. ``ConnectionPool``
keeps one connection per node (``host:port``); many requests share it and
replies are matched by ``opaque``. A dead node costs a refused connect, a
paused one costs exactly the caller's timeout, and neither delays calls to
other nodes.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import os
import ssl
import threading
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any, TypeVar, cast

from cluster.client.errors import (
    CallTimeout,
    ClientError,
    ConnectError,
    ConnectionLost,
    ProtocolError,
)
from cluster.core.closing import Closing
from cluster.core.protocol.acl import Credentials, sign
from cluster.core.protocol.codes import DEFAULT_MAX_FRAME
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameReader, decode_command, encode_command

T = TypeVar("T")

DEFAULT_CONNECT_TIMEOUT = 3.0
DEFAULT_MAX_INFLIGHT = 4096
WRITE_HIGH_WATER = 8 * 1024 * 1024
# Extra time a synchronous caller waits beyond its own timeout for the loop
# thread to hand back the (already timed-out) result.
SYNC_GRACE = 0.25


def parse_addr(addr: str) -> tuple[str, int]:
    """``host:port`` -> (host, port). Raises ValueError on anything else."""
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"bad address {addr!r}, expected host:port")
    return host.strip("[]"), int(port)


def split_addrs(text: str) -> list[str]:
    """``"h1:p1;h2:p2"`` (RocketMQ ``namesrvAddr`` syntax) -> validated list."""
    addrs = [a.strip() for a in text.replace(",", ";").split(";") if a.strip()]
    for addr in addrs:
        parse_addr(addr)
    return addrs


class IoLoop:
    """A private asyncio event loop running in a daemon thread."""

    def __init__(self, name: str = "pynamesrv-client-io") -> None:
        self.loop = asyncio.new_event_loop()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self._cancel_leftovers()
            self.loop.close()

    def _cancel_leftovers(self) -> None:
        tasks = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            gather = asyncio.gather(*tasks, return_exceptions=True)
            self.loop.run_until_complete(gather)

    @property
    def closed(self) -> bool:
        return self._closed

    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._thread.ident

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        if self._closed:
            coro.close()
            raise ClientError("client is closed")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        """Run ``coro`` on the loop; never wait longer than ``timeout + SYNC_GRACE``."""
        if self.in_loop_thread():
            coro.close()
            raise RuntimeError("blocking client call from the client's own event loop")
        fut = self.submit(coro)
        try:
            return fut.result(max(0.0, timeout) + SYNC_GRACE)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            raise CallTimeout(f"no result within {timeout:.3f}s") from None
        except concurrent.futures.CancelledError:
            raise CallTimeout("call cancelled") from None

    def close(self, timeout: float = 2.0) -> None:
        if self._closed:
            return
        self._closed = True
        self.loop.call_soon_threadsafe(self.loop.stop)
        if not self.in_loop_thread():
            self._thread.join(timeout)


class _Connection(asyncio.Protocol):
    """One TCP connection to a node; replies are matched to requests by opaque."""

    def __init__(self, addr: str, max_frame: int, max_inflight: int,
                 traffic: list[int]) -> None:
        self.addr = addr
        self.max_inflight = max_inflight
        self.traffic = traffic  # [bytes sent, bytes received] of every connection to addr
        self.reader = FrameReader(max_frame)
        self.pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.error: ClientError | None = None
        self._writable = asyncio.Event()
        self._writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)

    def data_received(self, data: bytes) -> None:
        self.traffic[1] += len(data)
        try:
            for frame in self.reader.feed(data):
                self._dispatch(decode_command(frame))
        except ValueError as exc:
            self.abort(ProtocolError(f"bad frame from server: {exc}", self.addr))

    def _dispatch(self, cmd: RemotingCommand) -> None:
        if not cmd.is_response:
            return
        fut = self.pending.pop(cmd.opaque, None)
        if fut is not None and not fut.done():
            fut.set_result(cmd)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.error is None:
            reason = f": {exc}" if exc else ""
            self.error = ConnectionLost(f"connection closed by peer{reason}", self.addr)
        self._fail_all(self.error)
        self._writable.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def _fail_all(self, err: ClientError) -> None:
        pending, self.pending = self.pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(err)

    def expect(self, opaque: int) -> asyncio.Future[RemotingCommand]:
        if len(self.pending) >= self.max_inflight:
            raise ClientError(f"{self.max_inflight} requests already in flight", self.addr)
        fut: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self.pending[opaque] = fut
        return fut

    def forget(self, opaque: int) -> None:
        self.pending.pop(opaque, None)

    async def send(self, frame: bytes) -> None:
        """Write one frame once the transport is below its high-water mark."""
        await self._writable.wait()
        if self.closed or self.transport is None:
            raise self.error or ConnectionLost("connection closed", self.addr)
        self.transport.write(frame)
        self.traffic[0] += len(frame)

    def abort(self, err: ClientError) -> None:
        if self.closed:
            return
        self.closed = True
        self.error = err
        self._fail_all(err)
        if self.transport is not None:
            self.transport.abort()


def tls_client_context(ca_file: str | None = None, cert: str | None = None,
                       key: str | None = None) -> ssl.SSLContext:
    """A client TLS context. With ``ca_file`` the node's certificate must chain to it;
    without, any certificate is accepted, as RocketMQ's clients do in their default test
    mode (``tls.test.mode.enable=true``). ``cert``/``key``: a client certificate."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False  # nodes are addressed by IP, as RocketMQ clients do
    if ca_file:
        ctx.load_verify_locations(ca_file)
    else:
        ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


class ConnectionPool:
    """One multiplexed connection per node, created on demand, replaced when it dies.

    All ``async`` methods run on ``io.loop``; the plain methods are their
    blocking twins for other threads. Deadlines are ``io.loop.time()`` values.
    """

    def __init__(
        self,
        io: IoLoop,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        max_frame: int = DEFAULT_MAX_FRAME,
        close_on_timeout: bool = True,
        tls: ssl.SSLContext | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self.io = io
        self.credentials = credentials  # sign every request (RocketMQ ACL 1.0)
        self.tls = tls  # connect with TLS (see ``tls_client_context``)
        self.connect_timeout = connect_timeout
        self.max_inflight = max_inflight
        self.max_frame = max_frame
        self.close_on_timeout = close_on_timeout
        self._conns: dict[str, _Connection] = {}
        self._connecting: dict[str, asyncio.Task[_Connection]] = {}
        self._traffic: dict[str, list[int]] = {}
        self._opaque = itertools.count()

    # ------------------------------------------------------------ helpers

    def next_opaque(self) -> int:
        """Java's AtomicInteger: 0, 1, 2, ... wrapping to negative int32 values."""
        v = next(self._opaque) & 0xFFFFFFFF
        return v - 0x100000000 if v >= 0x80000000 else v

    def deadline(self, timeout: float) -> float:
        return self.io.loop.time() + timeout

    def traffic(self, addr: str) -> tuple[int, int]:
        """(bytes sent, bytes received) to and from ``addr`` since the pool was made."""
        sent, received = self._traffic.get(addr, (0, 0))
        return sent, received

    def is_connected(self, addr: str) -> bool:
        conn = self._conns.get(addr)
        return conn is not None and not conn.closed

    def prepare(self, cmd: RemotingCommand) -> tuple[int, bytes]:
        """Give ``cmd`` a fresh opaque (and a signature, with ``credentials``) and encode it:
        (opaque, frame). The opaque is a header field, not signed, so one signed frame can
        go to every node."""
        if self.credentials is not None:
            cmd = sign(cmd, self.credentials)
        opaque = self.next_opaque()
        return opaque, encode_command(replace(cmd, opaque=opaque))

    # --------------------------------------------------------- connecting

    async def connection(self, addr: str, deadline: float) -> _Connection:
        conn = self._conns.get(addr)
        if conn is not None and not conn.closed:
            return conn
        task = self._connecting.get(addr)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._connect(addr))
            self._connecting[addr] = task
            task.add_done_callback(lambda t: self._connected(addr, t))
        try:
            async with asyncio.timeout_at(deadline):
                return await asyncio.shield(task)
        except TimeoutError:
            raise CallTimeout("connect did not complete within the timeout", addr) from None

    async def _connect(self, addr: str) -> _Connection:
        try:
            host, port = parse_addr(addr)
        except ValueError as exc:
            raise ConnectError(str(exc), addr) from None
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.connect_timeout):
                traffic = self._traffic.setdefault(addr, [0, 0])
                _, proto = await loop.create_connection(
                    lambda: _Connection(addr, self.max_frame, self.max_inflight, traffic),
                    host, port,
                    ssl=self.tls, server_hostname=host if self.tls else None)
        except TimeoutError:
            raise CallTimeout(f"connect timed out after {self.connect_timeout}s", addr) from None
        except ssl.SSLError as exc:
            raise ConnectError(f"TLS handshake failed: {exc}", addr) from None
        except OSError as exc:  # asyncio's text names the address only: say why
            why = os.strerror(exc.errno) if exc.errno else (exc.strerror or str(exc))
            raise ConnectError(f"connect failed: {why}", addr) from None
        return proto

    def _connected(self, addr: str, task: asyncio.Task[_Connection]) -> None:
        if self._connecting.get(addr) is task:
            del self._connecting[addr]
        if task.cancelled() or task.exception() is not None:
            return
        self._conns[addr] = task.result()

    def drop(self, addr: str, reason: str = "closed by client") -> None:
        conn = self._conns.pop(addr, None)
        if conn is not None:
            conn.abort(ConnectionLost(reason, addr))

    # ----------------------------------------------------------- requests

    async def request_frame(self, addr: str, opaque: int, frame: bytes,
                            deadline: float) -> RemotingCommand:
        """Send a pre-encoded request and wait for its reply until ``deadline``."""
        conn = await self.connection(addr, deadline)
        fut = conn.expect(opaque)
        try:
            async with asyncio.timeout_at(deadline):
                await conn.send(frame)
                return await fut
        except TimeoutError:
            conn.forget(opaque)
            if self.close_on_timeout:
                conn.abort(ConnectionLost("connection closed after a call timed out", addr))
            raise CallTimeout("no reply within the timeout", addr) from None
        finally:
            conn.forget(opaque)

    async def oneway_frame(self, addr: str, frame: bytes, deadline: float) -> None:
        """Send a pre-encoded oneway request; returns once it is written."""
        conn = await self.connection(addr, deadline)
        try:
            async with asyncio.timeout_at(deadline):
                await conn.send(frame)
        except TimeoutError:
            raise CallTimeout("send blocked until the timeout", addr) from None

    async def request(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        opaque, frame = self.prepare(cmd)
        return await self.request_frame(addr, opaque, frame, self.deadline(timeout))

    async def oneway(self, addr: str, cmd: RemotingCommand, timeout: float) -> None:
        _, frame = self.prepare(cmd)
        await self.oneway_frame(addr, frame, self.deadline(timeout))

    def call(self, addr: str, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Blocking request/reply from any thread other than the loop's."""
        return self.io.run(self.request(addr, cmd, timeout), timeout)

    def call_oneway(self, addr: str, cmd: RemotingCommand, timeout: float) -> None:
        self.io.run(self.oneway(addr, cmd, timeout), timeout)

    # ------------------------------------------------------------ closing

    async def aclose(self) -> None:
        for task in list(self._connecting.values()):
            task.cancel()
        for addr in list(self._conns):
            self.drop(addr)

    def close(self, timeout: float = 1.0) -> None:
        if self.io.closed:
            return
        with contextlib.suppress(ClientError):
            self.io.run(self.aclose(), timeout)


class PooledClient(Closing):
    """A client on a ``ConnectionPool``: its own (with its own ``IoLoop``, signing with
    ``credentials``) unless one is passed in; ``close`` ends only what it owns."""

    def __init__(self, pool: ConnectionPool | None, *,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
                 credentials: Credentials | None = None) -> None:
        self._owns_io = pool is None
        self.pool = pool or ConnectionPool(IoLoop(), connect_timeout=connect_timeout,
                                           credentials=credentials)
        self.io = self.pool.io

    def close(self) -> None:
        self.pool.close()
        if self._owns_io:
            self.io.close()
