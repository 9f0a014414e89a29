"""One blocking request at a time to one node over a kept TCP connection, within a deadline.

For monitoring threads (the status page's gatherer, ``audit watch``), never an
event loop. A SIGSTOPped node accepts connections but never answers, so the
whole exchange, connect included, shares one deadline; any failure closes the
connection and the next request opens a new one. Requests carry the extField
``pynamesrvOrigin`` so the node counts them apart from client traffic
(README "Metrics").
"""

from __future__ import annotations

import itertools
import socket
import time

import orjson

from cluster.core.protocol.codes import DEFAULT_MAX_FRAME, ORIGIN_FIELD, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameError, FrameReader, decode_command, encode_command

RECV_CHUNK = 1 << 16
_opaques = itertools.count(1)


class NotAnswering(Exception):
    """The node gave no usable answer before the deadline; str() says why.

    ``unsupported``: it answered REQUEST_CODE_NOT_SUPPORTED (a node that does not
    know the code, e.g. a Java NameServer 5.x); ``silent``: the connection stayed up
    but nothing came back in time (a Java NameServer 4.9 leaves unknown codes
    unanswered; a paused node too). Neither: the connection failed or the reply was bad.
    """

    def __init__(self, reason: str, unsupported: bool = False, silent: bool = False) -> None:
        super().__init__(reason)
        self.unsupported = unsupported
        self.silent = silent


class NodeLink:
    """Requests to ``host:port``; ``received`` counts the reply bytes read so far."""

    def __init__(self, host: str, port: int, origin: str = "",
                 max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.host = host
        self.port = port
        self.origin = origin
        self.max_frame = max_frame
        self.received = 0
        self._sock: socket.socket | None = None
        self._reader = FrameReader(max_frame)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def call(self, code: int, timeout: float, body: bytes | None = None,
             ext: dict[str, str] | None = None) -> RemotingCommand:
        """The SUCCESS reply to one request, or NotAnswering."""
        opaque = next(_opaques) & 0x7FFFFFFF
        fields = dict(ext or {})
        if self.origin:
            fields[ORIGIN_FIELD] = self.origin
        request = encode_command(RemotingCommand(code=code, opaque=opaque, language="PYTHON",
                                                 ext_fields=fields or None, body=body))
        deadline = time.monotonic() + timeout
        try:
            reply = self._exchange(request, opaque, deadline, timeout)
        except TimeoutError as exc:
            self.close()
            raise NotAnswering(f"no answer within {timeout:g}s", silent=True) from exc
        except (OSError, FrameError) as exc:
            self.close()
            raise NotAnswering(exc.strerror or str(exc) if isinstance(exc, OSError)
                               else f"bad reply: {exc}") from exc
        if reply.code != ResponseCode.SUCCESS:
            raise NotAnswering(f"response code {reply.code} {reply.remark or ''}".strip(),
                               unsupported=reply.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED)
        return reply

    def call_json(self, code: int, timeout: float, body: bytes | None = None) -> dict[str, object]:
        """The SUCCESS reply's body as a JSON object, or NotAnswering."""
        reply = self.call(code, timeout, body)
        try:
            doc = orjson.loads(reply.body or b"")
        except orjson.JSONDecodeError as exc:
            raise NotAnswering(f"reply body is not JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise NotAnswering("reply body is not a JSON object")
        return doc

    def _exchange(self, request: bytes, opaque: int, deadline: float,
                  timeout: float) -> RemotingCommand:
        if self._sock is None:
            self._sock = socket.create_connection((self.host, self.port), timeout=timeout)
            self._reader = FrameReader(self.max_frame)
        sock = self._sock
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        sock.sendall(request)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            sock.settimeout(left)
            data = sock.recv(RECV_CHUNK)
            if not data:
                raise ConnectionError("connection closed before the reply")
            self.received += len(data)
            for frame in self._reader.feed(data):
                cmd = decode_command(frame)
                if cmd.opaque == opaque and cmd.is_response:
                    return cmd
