"""Test support: a loopback proxy in front of a node that makes it look like a Java NameServer.

Every frame is forwarded whole in both directions, except GET_NODE_SNAPSHOT (60001):
``silent`` drops it (Java 4.9.x sends no reply for a code it does not know),
``unsupported`` answers it REQUEST_CODE_NOT_SUPPORTED itself (Java 5.x). Runs an
asyncio loop in a daemon thread; ``close`` ends it and every connection.
"""

from __future__ import annotations

import asyncio
import threading

from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import response_to
from cluster.core.protocol.frame import FrameReader, decode_command, encode_command
from cluster.core.protocol.peek import peek_code

MODES = ("silent", "unsupported")


class HideSnapshot:
    def __init__(self, upstream: str, mode: str) -> None:
        assert mode in MODES
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.mode = mode
        self.loop = asyncio.new_event_loop()
        self.hidden = 0
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), daemon=True)
        self._thread.start()
        ready.wait(10)

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = int(self.server.sockets[0].getsockname()[1])
        ready.set()
        self.loop.run_forever()

    async def _client(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        try:
            s_reader, s_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            c_writer.close()
            return
        lock = asyncio.Lock()  # whole frames only towards the client
        await asyncio.gather(self._up(c_reader, s_writer, c_writer, lock),
                             self._down(s_reader, c_writer, lock), return_exceptions=True)
        for w in (c_writer, s_writer):
            w.close()

    async def _up(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                  back: asyncio.StreamWriter, lock: asyncio.Lock) -> None:
        frames = FrameReader()
        while data := await src.read(65536):
            for frame in frames.feed(data):
                if peek_code(frame) != RequestCode.GET_NODE_SNAPSHOT:
                    dst.write(len(frame).to_bytes(4, "big") + frame)
                    continue
                self.hidden += 1
                if self.mode == "unsupported":
                    cmd = decode_command(frame)
                    reply = response_to(cmd, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                                        f" request type {cmd.code} not supported")
                    async with lock:
                        back.write(encode_command(reply))
            await dst.drain()
        dst.close()

    async def _down(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter,
                    lock: asyncio.Lock) -> None:
        frames = FrameReader()
        while data := await src.read(65536):
            whole = b"".join(len(f).to_bytes(4, "big") + f for f in frames.feed(data))
            if whole:
                async with lock:
                    dst.write(whole)
                await dst.drain()
        dst.close()

    def close(self) -> None:
        async def stop() -> None:
            self.server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
