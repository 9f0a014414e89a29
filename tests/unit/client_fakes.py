"""A scriptable in-process NameServer double for the client tests.

``FakeNameServer(handler)`` listens on a free loopback port, decodes every
request and asks ``handler(cmd)`` what to do:

* a ``RemotingCommand`` - send it (its opaque is set to the request's);
* ``None`` - never answer;
* ``bytes`` - write these raw bytes;
* ``CLOSE`` - close the connection;
* ``Delay(seconds, action)`` - do ``action`` after ``seconds``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from cluster.client.connection import IoLoop
from cluster.core.protocol.codes import FLAG_RESPONSE
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameReader, decode_command, encode_command

CLOSE = "close"


@dataclass(frozen=True)
class Delay:
    seconds: float
    action: Any


Handler = Callable[[RemotingCommand], Any]


def reply(code: int = 0, remark: str | None = None, ext: dict[str, str] | None = None,
          body: bytes | None = None) -> RemotingCommand:
    return RemotingCommand(code=code, flag=FLAG_RESPONSE, version=409, remark=remark,
                           ext_fields=ext, body=body)


def ok(_: RemotingCommand) -> RemotingCommand:
    return reply()


class _ServerProtocol(asyncio.Protocol):
    def __init__(self, server: FakeNameServer) -> None:
        self.server = server
        self.reader = FrameReader()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.connections += 1
        self.server.transports.add(transport)

    def data_received(self, data: bytes) -> None:
        for frame in self.reader.feed(data):
            cmd = decode_command(frame)
            self.server.record(cmd)
            self.act(cmd, self.server.handler(cmd))

    def act(self, cmd: RemotingCommand, action: Any) -> None:
        assert self.transport is not None
        if action is None or self.transport.is_closing():
            return
        if isinstance(action, Delay):
            asyncio.get_running_loop().call_later(action.seconds, self.act, cmd, action.action)
        elif action == CLOSE:
            self.transport.close()
        elif isinstance(action, bytes):
            self.transport.write(action)
        else:
            self.transport.write(encode_command(replace(action, opaque=cmd.opaque)))


class FakeNameServer:
    """A loopback server driven by ``handler``; records every request it decodes."""

    def __init__(self, handler: Handler = ok, port: int = 0) -> None:
        self.handler = handler
        self.port = port
        self.requests: list[RemotingCommand] = []
        self.connections = 0
        self.transports: set[asyncio.Transport] = set()
        self._lock = threading.Lock()
        self._io = IoLoop("fake-namesrv")
        self._server: asyncio.Server | None = None
        self.addr = ""

    def record(self, cmd: RemotingCommand) -> None:
        with self._lock:
            self.requests.append(cmd)

    def start(self) -> FakeNameServer:
        async def listen() -> asyncio.Server:
            loop = asyncio.get_running_loop()
            return await loop.create_server(lambda: _ServerProtocol(self), "127.0.0.1",
                                            self.port, reuse_address=True)

        self._server = self._io.run(listen(), 5.0)
        self.port = self._server.sockets[0].getsockname()[1]
        self.addr = f"127.0.0.1:{self.port}"
        return self

    def stop(self) -> None:
        async def shutdown() -> None:
            if self._server is not None:
                self._server.close()
            for transport in self.transports:
                transport.abort()

        self._io.run(shutdown(), 5.0)
        self._io.close()

    def __enter__(self) -> FakeNameServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
