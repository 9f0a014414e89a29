"""The messages between the supervisor and its node launcher (``worker.controller.launcher``).

One message is one datagram of a ``SOCK_SEQPACKET`` socket pair: a JSON object, with file
descriptors passed alongside (``SCM_RIGHTS``). Requests: ``{"argv", "cwd", "env"}`` with
the new node's stdout (a pipe's write end) and stderr (its log) as the two descriptors;
replies: ``{"pid": N}`` or ``{"error": "..."}``.
"""

from __future__ import annotations

import socket
from typing import Any

import orjson

MAX_MESSAGE = 1 << 20  # a request is the node's argv and environment: a few KiB
MAX_FDS = 2


def socket_pair() -> tuple[socket.socket, socket.socket]:
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


def send(sock: socket.socket, msg: dict[str, Any], fds: list[int] | tuple[int, ...] = ()) -> None:
    socket.send_fds(sock, [orjson.dumps(msg)], list(fds))


def recv(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The next message and its descriptors; None when the peer closed its end."""
    data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, MAX_FDS)
    if not data:
        for fd in fds:
            socket.close(fd)
        return None
    msg = orjson.loads(data)
    if not isinstance(msg, dict):
        raise ValueError("a launcher message is a JSON object")
    return msg, fds
