"""Where an I/O worker's connections come from: the node's port (plain, or TLS as
configured), or, for the large-frame worker, the connections other I/O workers hand over
(``worker.io.handoff``)."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from worker.io import tls
from worker.io.connection import Connection, IoConfig
from worker.io.handoff import bind_receiver, handoff_path, receive

if TYPE_CHECKING:
    from worker.io.hub import Hub

log = logging.getLogger("pynamesrv.io")


def _listen_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


async def accept(cfg: IoConfig, loop: asyncio.AbstractEventLoop, hub: Hub
                 ) -> asyncio.AbstractServer | tls.TlsAcceptor:
    """Accept the node's connections on its port (plain, or TLS as configured)."""
    listener = _listen_socket(cfg.host, cfg.port)
    if cfg.tls_mode == tls.DISABLED:
        return await loop.create_server(lambda: Connection(hub), sock=listener)
    ctx = tls.server_context(cfg.tls_cert, cfg.tls_key, cfg.tls_client_auth, cfg.tls_trust)
    return tls.TlsAcceptor(loop, listener, ctx, cfg.tls_mode == tls.ENFORCING,
                           lambda: Connection(hub), hub.hits.hit, cfg.frame_timeout_s)


def receive_handoffs(run: Path, loop: asyncio.AbstractEventLoop, hub: Hub) -> socket.socket:
    """The large-frame worker's end of the hand-offs, read by ``loop``."""
    receiver = bind_receiver(handoff_path(run))
    loop.add_reader(receiver.fileno(), _take_handoffs, hub, receiver)
    return receiver


def stop_receiving(loop: asyncio.AbstractEventLoop, receiver: socket.socket) -> None:
    """No more hand-offs: what is still queued closes with the receiver."""
    loop.remove_reader(receiver.fileno())
    receiver.close()


def _take_handoffs(hub: Hub, receiver: socket.socket) -> None:
    """Serve the connections other I/O workers handed over, each from the bytes they read."""
    for sock, raw in receive(receiver):
        asyncio.ensure_future(_adopt(hub, sock, raw))


async def _adopt(hub: Hub, sock: socket.socket, raw: bytes) -> None:
    try:
        await hub.loop.connect_accepted_socket(lambda: Connection(hub, raw), sock)
    except OSError as exc:  # the peer went meanwhile
        log.info("event=handoff_adopt_failed error=%r", str(exc))
        sock.close()
