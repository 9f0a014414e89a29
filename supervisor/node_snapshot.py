"""Ask one node for its tables (GET_NODE_SNAPSHOT, code 60001) within a deadline.

Blocking, for the status page's gathering threads only (never the supervisor
loop). A SIGSTOPped node accepts the connection but never answers, so the
whole exchange, connect included, shares one deadline.
"""

from __future__ import annotations

import itertools
import socket
import time
from typing import Any

import orjson

from cluster.core.protocol.codes import DEFAULT_MAX_FRAME, RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameError, FrameReader, decode_command, encode_command

_opaques = itertools.count(1)
RECV_CHUNK = 1 << 16


class NotAnswering(Exception):
    """The node gave no usable snapshot before the deadline; str() says why."""


def fetch_snapshot(host: str, port: int, timeout: float) -> dict[str, Any]:
    """The node's snapshot body as a dict, or NotAnswering with the reason."""
    opaque = next(_opaques) & 0x7FFFFFFF
    deadline = time.monotonic() + timeout
    request = encode_command(RemotingCommand(code=RequestCode.GET_NODE_SNAPSHOT, opaque=opaque,
                                             language="PYTHON"))
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(request)
            reply = _await_reply(sock, opaque, deadline, timeout)
    except TimeoutError as exc:
        raise NotAnswering(f"no answer within {timeout:g}s") from exc
    except (OSError, FrameError) as exc:
        raise NotAnswering(exc.strerror or str(exc) if isinstance(exc, OSError)
                           else f"bad reply: {exc}") from exc
    return _body(reply)


def _await_reply(sock: socket.socket, opaque: int, deadline: float,
                 timeout: float) -> RemotingCommand:
    reader = FrameReader(DEFAULT_MAX_FRAME)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        data = sock.recv(RECV_CHUNK)
        if not data:
            raise NotAnswering("connection closed before the reply")
        for frame in reader.feed(data):
            cmd = decode_command(frame)
            if cmd.opaque == opaque and cmd.is_response:
                return cmd


def _body(reply: RemotingCommand) -> dict[str, Any]:
    if reply.code != ResponseCode.SUCCESS:
        raise NotAnswering(f"response code {reply.code} {reply.remark or ''}".strip())
    try:
        body = orjson.loads(reply.body or b"")
    except orjson.JSONDecodeError as exc:
        raise NotAnswering(f"snapshot is not JSON: {exc}") from exc
    if not isinstance(body, dict) or not isinstance(body.get("tables"), dict):
        raise NotAnswering("snapshot has no tables")
    return body
