"""The speed limit of Python here: a uvloop server answering every request with one
pre-encoded route reply (only the opaque is spliced in). ``python -m cluster.bench.baseline PORT``.
"""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import struct
import sys

import uvloop

from cluster.core.protocol import route_bodies
from cluster.core.protocol.codes import ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import encode_command

_OPAQUE = re.compile(rb'"opaque":(-?\d+)')
_I32 = struct.Struct(">i")
ROUTE = {"brokerDatas": [{"brokerAddrs": {0: "127.0.0.1:30911"}, "brokerName": "BenchBroker-0-0",
                          "cluster": "BenchCluster-0"}],
         "filterServerTable": {},
         "queueDatas": [{"brokerName": "BenchBroker-0-0", "perm": 6, "readQueueNums": 8,
                         "topicSysFlag": 0, "writeQueueNums": 8}]}


def _template() -> tuple[bytes, bytes]:
    """Header before and after the opaque digits, and the body."""
    body = route_bodies.encode_topic_route(ROUTE, standard=True)
    frame = encode_command(RemotingCommand(code=ResponseCode.SUCCESS, opaque=0, flag=1,
                                           version=409, body=body))
    header = frame[8 : len(frame) - len(body)]
    before, after = header.split(b'"opaque":0', 1)
    return before + b'"opaque":', after + body


class Fixed(asyncio.Protocol):
    def __init__(self, head: bytes, tail: bytes, body_len: int) -> None:
        self.head, self.tail = head, tail
        self.fixed_hlen = len(head) + len(tail) - body_len  # header bytes besides the digits
        self.body_len = body_len
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        buf = self.buf + data
        out = []
        pos = 0
        while len(buf) - pos >= 4:
            (total,) = _I32.unpack_from(buf, pos)
            if len(buf) - pos - 4 < total:
                break
            m = _OPAQUE.search(buf, pos + 8, pos + 4 + total)
            digits = m.group(1) if m else b"0"
            hlen = self.fixed_hlen + len(digits)
            out.append(_I32.pack(4 + hlen + self.body_len) + _I32.pack(hlen) + self.head
                       + digits + self.tail)
            pos += 4 + total
        self.buf = buf[pos:]
        if out and self.transport is not None:
            self.transport.write(b"".join(out))


async def serve(port: int) -> None:
    head, tail = _template()
    body_len = len(route_bodies.encode_topic_route(ROUTE, standard=True))
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Fixed(head, tail, body_len), "127.0.0.1", port,
                                      reuse_address=True)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    print(f"baseline ready on 127.0.0.1:{port}", flush=True)
    await stop.wait()
    server.close()


def main() -> None:
    uvloop.run(serve(int(sys.argv[1])))


if __name__ == "__main__":
    main()
