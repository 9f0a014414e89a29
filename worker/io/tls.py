"""TLS on a node's listen port, as RocketMQ's ``tls.server.*`` settings describe it.

``disabled``: plain TCP only. ``permissive``: each connection is told apart by its
first byte (a TLS handshake record starts with 0x16; a remoting frame's length
never does for frames under 352 MiB), so TLS and plain clients share the port.
``enforcing``: a connection that does not start a TLS handshake is closed.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable
from pathlib import Path

from cluster.core.errors import ConfigError
from worker import limits

DISABLED, PERMISSIVE, ENFORCING = "disabled", "permissive", "enforcing"
HANDSHAKE = 0x16  # TLS record type of a ClientHello
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "optional": ssl.CERT_OPTIONAL,
                "require": ssl.CERT_REQUIRED}


def resolve(path: str, data_dir: Path) -> str:
    """A setting's path, relative ones against the node's data dir; "" stays ""."""
    return str(data_dir / path) if path else ""


EXPIRES_SOON_S = 14 * 86400


def certificate_warnings(cert: str, now: float) -> list[str]:
    """What is wrong with the node's certificate (the first of ``cert``) though TLS works
    with it: expired, not valid yet, expiring within 14 days, self-signed. ``now``: epoch
    seconds. Read with CPython's certificate decoder; none where it is missing."""
    decode = getattr(ssl._ssl, "_test_decode_cert", None)  # type: ignore[attr-defined]
    if decode is None:
        return []
    try:
        info = decode(cert)
        not_before = ssl.cert_time_to_seconds(info["notBefore"])
        not_after = ssl.cert_time_to_seconds(info["notAfter"])
    except (OSError, ssl.SSLError, KeyError, ValueError):
        return []
    out = []
    if not_after < now:
        out.append(f"expired on {info['notAfter']}: clients that verify it refuse the node")
    elif not_after < now + EXPIRES_SOON_S:
        out.append(f"expires on {info['notAfter']}")
    if not_before > now:
        out.append(f"not valid before {info['notBefore']}")
    if info.get("subject") == info.get("issuer"):
        out.append("self-signed: only clients that trust this very certificate (or check "
                   "none, as RocketMQ's test mode) accept it")
    return out


def server_context(cert: str, key: str, client_auth: str, trust: str) -> ssl.SSLContext:
    """The node's TLS context; ConfigError naming the setting when a file is missing or bad."""
    if not cert or not key:
        raise ConfigError("tls.server.certPath and tls.server.keyPath are needed when "
                          "tls.server.mode is not disabled")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"tls.server.certPath/keyPath ({cert}, {key}): {exc}") from None
    ctx.verify_mode = _CLIENT_AUTH[client_auth]
    if ctx.verify_mode != ssl.CERT_NONE:
        if not trust:
            raise ConfigError("tls.server.trustCertPath is needed when "
                              "tls.server.need.client.auth is not none")
        try:
            ctx.load_verify_locations(trust)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"tls.server.trustCertPath ({trust}): {exc}") from None
    return ctx


Hit = Callable[[str, str, str], None]  # (limit, peer address, detail): counted, logged once


class TlsAcceptor:
    """Accepts connections itself and tells TLS from plain ones by their first byte."""

    def __init__(self, loop: asyncio.AbstractEventLoop, listener: socket.socket,
                 ctx: ssl.SSLContext, enforcing: bool,
                 protocol: Callable[[], asyncio.BaseProtocol], hit: Hit, timeout_s: float) -> None:
        self.loop = loop
        self.listener = listener
        self.ctx = ctx
        self.enforcing = enforcing
        self.protocol = protocol
        self.hit = hit
        self.timeout_s = timeout_s  # for the first byte and for the handshake
        self.task = asyncio.ensure_future(self._accept())

    async def _accept(self) -> None:
        while True:
            sock, _ = await self.loop.sock_accept(self.listener)
            asyncio.ensure_future(self._classify(sock))

    async def _classify(self, sock: socket.socket) -> None:
        address = str(sock.getpeername()[0]) if sock.family != socket.AF_UNIX else ""
        try:
            first = await asyncio.wait_for(_peek(self.loop, sock), self.timeout_s)
        except (TimeoutError, OSError):
            self.hit(limits.FRAME_READ_TIMEOUT, address, "no first byte")
            sock.close()
            return
        is_tls = first[:1] == bytes([HANDSHAKE])
        if not is_tls and self.enforcing:
            self.hit(TLS_REQUIRED, address, "")
            sock.close()
            return
        try:
            await self.loop.connect_accepted_socket(
                self.protocol, sock, ssl=self.ctx if is_tls else None,
                ssl_handshake_timeout=self.timeout_s if is_tls else None)
        except (OSError, ssl.SSLError, TimeoutError) as exc:
            self.hit(TLS_HANDSHAKE, address, str(exc))
            sock.close()

    def close(self) -> None:
        self.task.cancel()
        self.listener.close()


TLS_REQUIRED = "tls.server.mode=enforcing"
TLS_HANDSHAKE = "tls handshake"


async def _peek(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> bytes:
    """The first byte a peer sent, left in the socket; b"" when it closed first."""
    ready: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(sock.fileno(), readable)
    try:
        await ready
    finally:
        loop.remove_reader(sock.fileno())
    return sock.recv(1, socket.MSG_PEEK)
