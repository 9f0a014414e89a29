"""Which business worker gets which request: two lanes, credit windows, liveness.

Pure logic (no sockets, time passed in), used by the I/O worker. As in
RocketMQ 5.x, route lookups (code 105) have a lane of their own: they go
preferably to business workers with no other work in flight, and the
read-only workers never take writes, so a storm of large registrations
cannot starve route reads. Everything else (writes, admin) uses the default
lane, served only by workers announced as "all".
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.peek import peek_code, without_body
from worker.wire import LANE_ALL, LANE_READ

ROUTE_CODE = int(RequestCode.GET_ROUTEINFO_BY_TOPIC)
MAX_BATCH = 64            # requests per ZeroMQ message
MAX_BATCH_BYTES = 1 << 20  # a batch stops growing past this many frame bytes
# An in-flight request larger than this is remembered without its body (what answering it
# on its worker's loss needs), so a registration storm does not hold every body twice.
KEEP_WHOLE_BYTES = 64 << 10

# (conn id, frame); a large frame is a memoryview of the message it was read into
Item = tuple[bytes, bytes | memoryview]
Queued = tuple[bytes, bytes | memoryview, Any]  # (…, the caller's tag, handed back on reply)


class FrameOwner(Protocol):
    """Where some frames live (``worker.frame_arena``): such a frame is kept whole while in
    flight and handed back once nobody can read it any more."""

    def owns(self, frame: object) -> bool: ...

    def release(self, frame: memoryview) -> None: ...


class _NoOwner:
    def owns(self, frame: object) -> bool:
        return False

    def release(self, frame: memoryview) -> None:
        raise AssertionError("no frame is owned")


def is_route_read(frame: bytes) -> bool:
    """GET_ROUTEINFO_BY_TOPIC, read from the header without decoding it (frame = header
    word + header); a frame whose code cannot be peeked is not one."""
    return peek_code(frame) == ROUTE_CODE


@dataclass
class Peer:
    """A business worker; ``stale`` has one entry per reply owed for a request already
    failed, in order: the owned frame it answers (released when that reply comes or the
    worker exits), else None."""

    ident: bytes
    last_seen: float
    lane: bytes = LANE_ALL
    pid: int = 0  # 0 until its hello names it
    alive: bool = True
    exited: bool = False  # its process is gone: anything still queued from it is ignored
    stale: deque[memoryview | None] = field(default_factory=deque)
    others: int = 0  # default-lane requests in flight
    # (conn id, the frame or its head, is a route read, tag, frame size)
    inflight: deque[tuple[bytes, bytes, bool, Any, int]] = field(default_factory=deque)


class Dispatcher:
    """Queues, credit and liveness of the business workers one I/O worker talks to.

    A silent worker is failed (its in-flight requests handed back to be answered)
    only when it is not merely slow: its process is stopped for ``stopped_after``
    seconds, or it has been silent for ``hung_after`` seconds while running. A
    worker whose process exited is dropped at once by the caller (``drop``).
    """

    def __init__(self, window: int, max_pending: int, stopped_after: float,
                 hung_after: float, forget_after: float, owner: FrameOwner | None = None
                 ) -> None:
        self.owner: FrameOwner = owner or _NoOwner()
        self.window = window
        self.max_pending = max_pending
        self.stopped_after = stopped_after
        self.hung_after = hung_after
        self.forget_after = forget_after
        self.reads: deque[Queued] = deque()
        self.others: deque[Queued] = deque()
        self.peers: dict[bytes, Peer] = {}

    @property
    def pending(self) -> int:
        return len(self.reads) + len(self.others)

    def idle(self) -> bool:
        return not self.pending and all(not p.inflight for p in self.peers.values())

    def submit(self, conn: bytes, frame: bytes | memoryview, tag: Any = None,
               is_read: bool | None = None) -> bool:
        """Queue a request; False when the queue is full (the caller answers SYSTEM_BUSY).

        ``tag`` comes back from ``finish`` with the request's reply; ``is_read`` (a route
        lookup), when not given, is read from the frame's header.
        """
        reads, others = self.reads, self.others
        if len(reads) + len(others) >= self.max_pending:
            return False
        if is_read is None:
            is_read = peek_code(frame) == ROUTE_CODE  # type: ignore[arg-type]
        (reads if is_read else others).append((conn, frame, tag))
        return True

    def discard(self, conn: bytes) -> int:
        """Drop the queued (not yet dispatched) requests of a closed connection."""
        dropped = 0
        for name in ("reads", "others"):
            queue: deque[Queued] = getattr(self, name)
            kept: deque[Queued] = deque()
            for item in queue:
                if item[0] != conn:
                    kept.append(item)
                else:
                    self.release(item[1])
                    dropped += 1
            setattr(self, name, kept)
        return dropped

    def release(self, frame: object) -> None:
        """A frame nobody will read any more: what holds it, if owned, gets it back."""
        if self.owner.owns(frame):
            self.owner.release(frame)  # type: ignore[arg-type]

    # -- peers -------------------------------------------------------------

    def seen(self, ident: bytes, now: float, lane: bytes | None = None,
             pid: int = 0) -> tuple[Peer | None, bool]:
        """Record a message from a worker; returns (peer, came back after being failed).

        The peer is None for a worker whose process exited: its message is ignored.
        """
        peer = self.peers.get(ident)
        if peer is None:
            peer = self.peers[ident] = Peer(ident, now)
        elif peer.exited:
            return None, False
        back = not peer.alive
        peer.alive = True
        peer.last_seen = now
        if lane in (LANE_ALL, LANE_READ):
            peer.lane = lane
        if pid > 0:
            peer.pid = pid
        return peer, back

    def fail(self, peer: Peer) -> list[Item]:
        """Mark a worker dead; returns its in-flight requests (the caller answers them)."""
        if not peer.alive:
            return []
        peer.alive = False
        lost = [(conn, frame) for conn, frame, _, _, _ in peer.inflight]
        owns = self.owner.owns
        peer.stale.extend(cast(memoryview, frame) if owns(frame) else None for _, frame in lost)
        peer.inflight.clear()
        peer.others = 0
        return lost

    def drop(self, peer: Peer, now: float) -> list[Item]:
        """The worker's process exited: fail it for good; returns its in-flight requests."""
        lost = self.fail(peer)
        peer.exited = True
        self._release_stale(peer)
        peer.last_seen = now  # forgotten ``forget_after`` from now
        return lost

    def expire(self, now: float,
               stopped: Callable[[int], bool]) -> tuple[list[Peer], list[Peer]]:
        """(workers to fail, workers to greet); forgets long-failed ones.

        ``stopped(pid)`` tells whether a worker's process is stopped or gone; it is
        asked only about workers silent for longer than ``stopped_after``.
        """
        fail, greet = [], []
        for peer in list(self.peers.values()):
            quiet = now - peer.last_seen
            if quiet > self.forget_after:
                del self.peers[peer.ident]
                if peer.exited:  # a process that still runs may yet read what it holds
                    self._release_stale(peer)
            elif not peer.alive:
                continue
            elif quiet > self.hung_after or (
                    quiet > self.stopped_after and (peer.pid <= 0 or stopped(peer.pid))):
                fail.append(peer)
            else:
                greet.append(peer)
        return fail, greet

    def _release_stale(self, peer: Peer) -> None:
        """Nothing more will be read by ``peer`` (its process exited): its owned frames go
        back. A worker forgotten while its process still runs keeps them for good: they
        are never rewritten, and the frame file falls back to ZeroMQ when full."""
        stale, peer.stale = peer.stale, deque()
        for frame in stale:
            if frame is not None:
                self.owner.release(frame)

    def completed(self, peer: Peer) -> bool:
        """One reply arrived from ``peer``; False when it answers an already-failed request."""
        return self.finish(peer)[0]

    def finish(self, peer: Peer) -> tuple[bool, Any, int]:
        """``completed``, the tag its request was submitted with and the request's size."""
        if peer.stale:
            held = peer.stale.popleft()
            if held is not None:
                self.owner.release(held)
            return False, None, 0
        if not peer.inflight:
            return True, None, 0
        _, frame, is_read, tag, size = peer.inflight.popleft()
        if not is_read:
            peer.others -= 1
        self.release(frame)
        return True, tag, size

    # -- dispatch ----------------------------------------------------------

    def batches(self) -> list[tuple[Peer, list[Item]]]:
        """Assign queued requests to workers with free credit."""
        out = []
        while self.others:
            peer = self._pick(lambda p: p.lane == LANE_ALL)
            if peer is None:
                break
            out.append((peer, self._take(peer, self.others, False)))
        while self.reads:
            peer = self._pick_reader()
            if peer is None:
                break
            out.append((peer, self._take(peer, self.reads, True)))
        return out

    def _pick(self, ok) -> Peer | None:  # type: ignore[no-untyped-def]
        best: Peer | None = None
        for p in self.peers.values():
            if p.alive and len(p.inflight) < self.window and ok(p) and (
                    best is None or len(p.inflight) < len(best.inflight)):
                best = p
        return best

    def _pick_reader(self) -> Peer | None:
        """Workers without default-lane work first, then the least loaded."""
        return self._pick(lambda p: p.others == 0) or self._pick(lambda p: True)

    def _take(self, peer: Peer, queue: deque[Queued], is_read: bool) -> list[Item]:
        batch: list[Item] = []
        size = 0
        room = min(self.window - len(peer.inflight), MAX_BATCH)
        owns = self.owner.owns
        while queue and len(batch) < room and size < MAX_BATCH_BYTES:
            conn, frame, tag = queue.popleft()
            batch.append((conn, frame))
            n = len(frame)
            kept = frame if n <= KEEP_WHOLE_BYTES or owns(frame) else without_body(frame)
            peer.inflight.append((conn, kept, is_read, tag, n))
            size += n
        if not is_read:
            peer.others += len(batch)
        return batch
