"""ZeroMQ message kinds between I/O workers, business workers and the controller.

See docs/architecture.md ("Inside one node") for the multipart layouts.
"""

from __future__ import annotations

HELLO = b"H"      # heartbeat / hello, both directions
REQUESTS = b"Q"   # I/O -> business: conn, frame, conn, frame, ...
EVENT = b"E"      # I/O -> business: conn, peer (channel destroyed)
REPLIES = b"P"    # business -> I/O: conn, reply, conn, reply, ... (empty reply: none)
CLOSE = b"\x00"   # a reply that is no frame: the header was malformed, close the connection

HEARTBEAT_S = 0.25
PEER_DEAD_S = 1.5      # a business worker silent this long is dead (or stopped)
MAX_BATCH = 64         # requests per ZeroMQ message


def ready_message(kind: str, index: int, pid: int) -> bytes:
    return f"ready {kind} {index} {pid}".encode()


def parse_ready(msg: bytes) -> tuple[str, int, int] | None:
    parts = msg.decode(errors="replace").split()
    if len(parts) != 4 or parts[0] != "ready":
        return None
    try:
        return parts[1], int(parts[2]), int(parts[3])
    except ValueError:
        return None
