"""A hostile client: sends corrupt remoting traffic to one node and reports what the node did.

Kinds: ``garbage`` (random bytes), ``oversize`` (a length word far above the
frame limit), ``bad_header`` (an unknown serialize type), ``truncated`` (a
frame cut short, then EOF) and ``slowloris`` (a frame trickled byte by byte,
then abandoned). A correct node closes the connection or waits for the rest,
and keeps serving everyone else.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from typing import Any

MAX_BYTES = 64 * 1024
TRICKLE_S = 0.02
MAX_TRICKLE_S = 1.0


def _frame(total: int, header_word: int, filler: bytes) -> bytes:
    return struct.pack(">iI", total, header_word) + filler


def payload(kind: str, frames: int, rng: random.Random) -> bytes:
    """The bytes a hostile client of ``kind`` sends (bounded by MAX_BYTES)."""
    if kind == "garbage":
        return rng.randbytes(min(MAX_BYTES, 64 * frames))
    if kind == "oversize":
        return _frame(0x7FFFFFF0, 0x0000000A, b"{" * 16)
    if kind == "bad_header":
        return b"".join(_frame(20, 0x07000010, rng.randbytes(16)) for _ in range(frames))
    if kind in ("truncated", "slowloris"):
        return _frame(1000, 0x00000010, b'{"code":105,"fl')
    raise ValueError(f"unknown hostile kind {kind!r}")


def _send(sock: socket.socket, kind: str, data: bytes, frames: int) -> None:
    if kind != "slowloris":
        sock.sendall(data)
        return
    end = time.monotonic() + MAX_TRICKLE_S
    for i in range(min(len(data), frames)):
        if time.monotonic() > end:
            break
        sock.sendall(data[i : i + 1])
        time.sleep(TRICKLE_S)


def _await_close(sock: socket.socket, timeout: float) -> tuple[bool, int]:
    """Read until the node closes (True) or the timeout passes (False); bytes received."""
    received = 0
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            break
        except ConnectionError:
            return True, received
        if not chunk:
            return True, received
        received += len(chunk)
    return False, received


def attack(host: str, port: int, kind: str, frames: int, seed: int,
           timeout: float = 2.0) -> dict[str, Any]:
    """Run one hostile connection against ``host:port``; never raises for network errors."""
    data = payload(kind, frames, random.Random(seed))
    out: dict[str, Any] = {"kind": kind, "bytes": len(data)}
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            _send(sock, kind, data, frames)
            if kind == "truncated":
                sock.shutdown(socket.SHUT_WR)
            closed, received = _await_close(sock, timeout)
    except OSError as exc:
        out.update(error=type(exc).__name__, closed_by_node=True)
        return out
    out.update(closed_by_node=closed, replied_bytes=received)
    return out
