"""The start of a plain connection to a 5.x node: an optional PROXY protocol header.

A Java 5.x NameServer first looks for a HAProxy PROXY protocol header (v1 text or v2
binary) at the start of every connection (Netty's ``HAProxyMessageDecoder.detectProtocol``):
it holds the first bytes until 12 have arrived, takes a PROXY header off when there is
one, and reads frames from what follows. So does a node following 5.x. The header's
source address is reported (``source``); a malformed header closes the connection.
"""

from __future__ import annotations

import ipaddress
import struct

DETECT_BYTES = 12  # what detection needs before it decides
V1_PREFIX = b"PROXY"
V1_MAX = 108  # the longest v1 line, CRLF included
V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
_V2_HEAD = struct.Struct(">BBH")  # version/command, family/protocol, length


class ProxyError(ValueError):
    """A PROXY protocol header that cannot be read: the connection is closed."""


class Prelude:
    """Feed the first bytes of a connection; `feed` returns what follows the PROXY header
    (everything, when there is none) once detection is done, None while it needs more."""

    __slots__ = ("_held", "source")

    def __init__(self) -> None:
        self._held = b""
        self.source: str | None = None  # "host:port" a PROXY header named

    def feed(self, data: bytes) -> bytes | None:
        held = self._held + data
        if len(held) < DETECT_BYTES:
            self._held = held
            return None
        if held.startswith(V2_SIGNATURE):
            return self._v2(held)
        if held.startswith(V1_PREFIX):
            return self._v1(held)
        self._held = b""
        return held

    def _v1(self, held: bytes) -> bytes | None:
        end = held.find(b"\r\n", 0, V1_MAX)
        if end < 0:
            if len(held) >= V1_MAX:
                raise ProxyError("PROXY v1 header longer than 107 bytes")
            self._held = held
            return None
        self.source = _v1_source(held[:end].decode("ascii", "replace"))
        self._held = b""
        return held[end + 2 :]

    def _v2(self, held: bytes) -> bytes | None:
        if len(held) < DETECT_BYTES + _V2_HEAD.size:
            self._held = held
            return None
        ver_cmd, family, length = _V2_HEAD.unpack_from(held, DETECT_BYTES)
        if ver_cmd >> 4 != 2 or ver_cmd & 0x0F > 1:
            raise ProxyError(f"PROXY v2 header with version/command {ver_cmd:#x}")
        end = DETECT_BYTES + _V2_HEAD.size + length
        if len(held) < end:
            self._held = held
            return None
        self.source = _v2_source(family, held[DETECT_BYTES + _V2_HEAD.size : end])
        self._held = b""
        return held[end:]


def _v1_source(line: str) -> str | None:
    """"PROXY TCP4 src dst sport dport" → "src:sport"; UNKNOWN → None."""
    parts = line.split(" ")
    if len(parts) >= 2 and parts[1] == "UNKNOWN":
        return None
    if len(parts) != 6 or parts[1] not in ("TCP4", "TCP6"):
        raise ProxyError(f"bad PROXY v1 line {line!r:.110}")
    try:
        ipaddress.ip_address(parts[2])
        port = int(parts[4])
    except ValueError:
        raise ProxyError(f"bad PROXY v1 line {line!r:.110}") from None
    if not 0 <= port <= 65535:
        raise ProxyError(f"bad PROXY v1 source port {port}")
    return f"{parts[2]}:{port}"


def _v2_source(family: int, addresses: bytes) -> str | None:
    """The source of a v2 TCP/UDP over IPv4 or IPv6 address block; None for others."""
    sizes = {0x1: 4, 0x2: 16}
    size = sizes.get(family >> 4)
    if size is None:
        return None
    if len(addresses) < 2 * size + 4:
        raise ProxyError("PROXY v2 address block too short")
    host = ipaddress.ip_address(addresses[:size])
    (port,) = struct.unpack_from(">H", addresses, 2 * size)
    return f"{host}:{port}"
