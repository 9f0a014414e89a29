"""ZeroMQ messages between I/O workers, business workers and the controller.

Every message is ONE ZeroMQ frame: a kind byte, then the payload (the ROUTER
adds and strips the routing id). No reader is ever between the parts of a
message, so a peer that disconnects mid-stream cannot leave libzmq's fair queue
half way through one (it aborts the process: ``Assertion failed: !_more
(src/fq.cpp:80)``). See docs/architecture.md ("Inside one node") for the layouts.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TypeVar

import zmq

HELLO = b"H"      # heartbeat / hello, both directions; business -> I/O: b"H<lane> <pid>"
LANE_ALL = b"all"    # serves every request
LANE_READ = b"read"  # serves route lookups (code 105) only
REQUESTS = b"Q"   # I/O -> business: b"Q" + pack_pairs([(conn, frame), ...])
SHARED = b"S"     # I/O -> business: b"S" + shared_ref(...): one large frame in shared memory
EVENT = b"E"      # I/O -> business: b"E" + pack_pairs([(conn, peer)]) (channel destroyed)
REPLIES = b"P"    # business -> I/O: b"P" + pack_replies(...): replies and the time each took
CLOSE = b"\x00"   # a reply that is no frame: the header was malformed, close the connection
METRICS = b"M"    # worker -> controller (PUSH): b"M" + JSON totals (worker.metrics), ~1/s

HEARTBEAT_S = 0.25
# A business worker's death is seen at once (pidfd). Silence alone means little: a
# worker that is busy or starved of CPU is late, not lost. So a silent worker is
# bypassed only when its process is stopped (SIGSTOP) for this long ...
PEER_STOPPED_S = 3.0
# ... or when it has been silent this long while running: hung, not merely slow.
PEER_HUNG_S = 60.0


def hello(lane: bytes = b"", pid: int = 0) -> bytes:
    return HELLO + (lane + b" %d" % pid if lane else b"")


def parse_hello(payload: bytes) -> tuple[bytes | None, int]:
    """(lane, pid) of a business worker's hello payload; (None, 0) when it names none."""
    lane, _, pid = payload.partition(b" ")
    if lane not in (LANE_ALL, LANE_READ):
        return None, 0
    return lane, int(pid) if pid.isdigit() else 0


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

# zmq constants as plain ints: the enum versions cost microseconds per use.
NOBLOCK = int(zmq.NOBLOCK)
POLLIN = int(zmq.POLLIN)
EVENTS = int(zmq.EVENTS)

_PAIR = struct.Struct(">HI")
_COUNT = struct.Struct(">H")
_MICROS = struct.Struct(">I")
MAX_MICROS = 0xFFFFFFFF
_SHARED = struct.Struct(">IQIH")  # I/O worker pid, offset, length, len(conn); then conn
Buf = TypeVar("Buf", bytes, memoryview)


def pack_pairs(pairs: Sequence[tuple[bytes | memoryview, bytes | memoryview]],
               kind: bytes = b"") -> bytes:
    """``kind`` then (conn, payload) pairs, as one frame: u16 len, u32 len, conn, payload, ..."""
    return b"".join(_pair_parts([kind], pairs))


def _pair_parts(parts: list[bytes | memoryview],
                pairs: Sequence[tuple[bytes | memoryview, bytes | memoryview | list[bytes]]]
                ) -> list[bytes | memoryview]:
    """``parts`` followed by the pieces of ``pack_pairs``, to be joined once; a payload given
    as a list of parts (a reply's head and body) goes in as those parts."""
    pack = _PAIR.pack
    for conn, payload in pairs:
        if payload.__class__ is list:
            parts.append(pack(len(conn), sum(map(len, payload))))
            parts.append(conn)
            parts.extend(payload)
        else:
            parts.append(pack(len(conn), len(payload)))
            parts.append(conn)
            parts.append(payload)  # type: ignore[arg-type]
    return parts


def pair_buffer(kind: bytes, conn: bytes, size: int) -> tuple[bytearray, int]:
    """A buffer laid out as ``pack_pairs([(conn, payload)], kind)`` for a payload of ``size``
    bytes not written yet, and the offset where the payload goes: a large payload is read
    into place and the buffer sent as it is."""
    head = kind + _PAIR.pack(len(conn), size) + conn
    buf = bytearray(len(head) + size)
    buf[: len(head)] = head
    return buf, len(head)


def unpack_pairs(blob: Buf) -> list[tuple[Buf, Buf]]:
    """The pairs of ``pack_pairs`` (without its kind byte); a memoryview gives memoryviews."""
    out: list[tuple[Buf, Buf]] = []
    unpack = _PAIR.unpack_from
    pos, end = 0, len(blob)
    while pos < end:
        clen, plen = unpack(blob, pos)
        pos += 6
        out.append((blob[pos : pos + clen], blob[pos + clen : pos + clen + plen]))
        pos += clen + plen
    return out


Reply = bytes | list[bytes]  # a reply frame, or its parts in order (joined only here)


def pack_replies(pairs: Sequence[tuple[bytes | memoryview, Reply]], micros: Sequence[int]
                 ) -> bytes:
    """``REPLIES``: u16 n, n times u32 microseconds (what each request took the business
    worker), then ``pack_pairs`` of the n (conn, reply) pairs."""
    times = b"".join(_MICROS.pack(min(us, MAX_MICROS)) for us in micros)
    return b"".join(_pair_parts([REPLIES, _COUNT.pack(len(pairs)), times], pairs))


VIEW_FROM = 64 << 10  # a reply this long is handed on as a view of its message, not copied


def unpack_replies(payload: bytes | memoryview
                   ) -> tuple[list[tuple[bytes, bytes | memoryview]], list[int]]:
    """The pairs and times of ``pack_replies`` (without its kind byte). A reply shorter than
    ``VIEW_FROM`` is copied out of ``payload``; a longer one (a topic list) stays a view of
    it, so the message lives until its last such reply is written."""
    (n,) = _COUNT.unpack_from(payload, 0)
    end = _COUNT.size + n * _MICROS.size
    times = [_MICROS.unpack_from(payload, _COUNT.size + i * _MICROS.size)[0] for i in range(n)]
    return [(bytes(conn), reply if len(reply) >= VIEW_FROM else bytes(reply))
            for conn, reply in unpack_pairs(memoryview(payload)[end:])], times


def shared_ref(pid: int, offset: int, length: int, conn: bytes) -> bytes:
    """A frame at ``offset`` in the frame file of I/O worker ``pid`` (``worker.frame_arena``)
    for connection ``conn``; the business worker answers it as a batch of one."""
    return SHARED + _SHARED.pack(pid, offset, length, len(conn)) + conn


def parse_shared(payload: bytes | memoryview) -> tuple[int, int, int, bytes]:
    """(pid, offset, length, conn) of ``shared_ref`` (without its kind byte); ValueError when
    it is cut short."""
    if len(payload) < _SHARED.size:
        raise ValueError("shared frame reference cut short")
    pid, offset, length, clen = _SHARED.unpack_from(payload, 0)
    conn = bytes(payload[_SHARED.size : _SHARED.size + clen])
    if len(conn) != clen:
        raise ValueError("shared frame reference cut short")
    return pid, offset, length, conn
