"""Which business worker gets which request: fair queues, lanes, credit windows, liveness.

Pure logic (no sockets, time passed in), used by the I/O worker. Requests wait in four
queues, each fair per peer address and per connection (``worker.io.fair_queue``), in two
lanes:

* the read lane, for what changes nothing: ``routes`` (route lookups, code 105, the I/O
  worker could not answer itself) and ``reads`` (KV reads, topic lists, cluster info,
  config, ...). It is served by the read-only business workers (``businessReadWorkers``,
  not niced); route lookups also go to a worker taking writes when it has none in
  flight, and every read does when no read-only worker is alive.
* the write lane, served only by workers announced as "all" (niced by
  ``businessWriteNice``): ``brokers`` (what keeps a broker alive: REGISTER_BROKER,
  UNREGISTER_BROKER, BROKER_HEARTBEAT, QUERY_DATA_VERSION) and ``writes`` (everything
  else that changes state).

So no client's reads ever queue on a worker ahead of a live broker's heartbeat, and
a storm of registrations cannot starve route reads. Within a lane the first class gets
four times the second one's time while both are backlogged (route lookups before other
reads, brokers before other writes) and a class that waited starts level.

Every request is priced by the business-pool time its code is expected to take
(``worker.io.pricing``). A request is sent to a worker only while the worker's expected
work from this I/O worker stays within its class's limit (a costlier request goes
alone) and it holds fewer than ``window`` requests: ``cost_window`` microseconds for
every class but ``brokers``, whose limit is ``write_window`` (a niced write worker gets
the CPU in slices while the cores are busy and must find registrations queued whenever
it does, or a storm of them crawls). So what a request waits for once sent is bounded
in time, not in count: behind registrations, up to ``write_window``; behind anything
else, about ``cost_window``. A class whose turn it is but whose limit is reached holds
its lane back until the worker has drained that far, so it is never starved. When the
queues hold ``max_pending`` requests, the newest request of the longest queue of the
busiest address is refused (SYSTEM_BUSY), not the one that comes in, unless it is
that one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.peek import peek_code, without_body
from worker.io.fair_queue import FairQueue
from worker.io.pricing import Prices
from worker.wire import LANE_ALL, LANE_READ

RQ = RequestCode
ROUTE_CODE = int(RQ.GET_ROUTEINFO_BY_TOPIC)
BROKER_CODES = frozenset(int(c) for c in (RQ.REGISTER_BROKER, RQ.UNREGISTER_BROKER,
                                          RQ.BROKER_HEARTBEAT, RQ.QUERY_DATA_VERSION))
# Every other code that writes the store (a snapshot counts its sequence number); a code
# not named here (unknown ones too) writes nothing and takes the read lane.
WRITE_CODES = BROKER_CODES | frozenset(int(c) for c in (
    RQ.PUT_KV_CONFIG, RQ.DELETE_KV_CONFIG, RQ.WIPE_WRITE_PERM_OF_BROKER,
    RQ.ADD_WRITE_PERM_OF_BROKER, RQ.DELETE_TOPIC_IN_NAMESRV, RQ.REGISTER_TOPIC_IN_NAMESRV,
    RQ.UPDATE_NAMESRV_CONFIG, RQ.GET_NODE_SNAPSHOT))
FIRST_SHARE = 4  # a lane's first class gets this many times its second's time
COST_WINDOW_US = 10_000  # expected work a business worker holds from one I/O worker ...
WRITE_WINDOW_US = 200_000  # ... when what is sent is a broker's (registrations)
MAX_BATCH = 64            # requests per ZeroMQ message
MAX_BATCH_BYTES = 1 << 20  # a batch stops growing past this many frame bytes
# An in-flight request larger than this is remembered without its body (what answering it
# on its worker's loss needs), so a registration storm does not hold every body twice.
KEEP_WHOLE_BYTES = 64 << 10

# (conn id, frame); a large frame is a memoryview of the message it was read into
Item = tuple[bytes, bytes | memoryview]
# (…, the caller's tag, handed back on reply, request code)
Queued = tuple[bytes, bytes | memoryview, Any, int]
# conn id, the frame or its head, a write, tag, frame size, price, request code
InFlight = tuple[bytes, bytes | memoryview, bool, Any, int, int, int]


@dataclass(eq=False)
class Class:
    """One queue of a lane, with its share of the lane and its virtual time there."""

    queue: FairQueue
    share: int
    write: bool
    limit: int  # expected microseconds a worker may hold when one of these is sent to it
    vt: int = 0
    lane: Lane | None = field(default=None, repr=False)


@dataclass(eq=False)
class Lane:
    """Two classes; lanes that share workers (no read-only worker is alive) take equal
    turns by their own virtual times."""

    classes: list[Class]
    vt: int = 0


Spec = list[tuple[Lane, list[Class]]]  # lanes to serve, each with the classes allowed


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
    writes: int = 0  # write-lane requests in flight
    cost: int = 0  # prices of the requests in flight, summed (microseconds expected)
    inflight: deque[InFlight] = field(default_factory=deque)


class Dispatcher:
    """Queues, credit and liveness of the business workers one I/O worker talks to.

    A silent worker is failed (its in-flight requests handed back to be answered)
    only when it is not merely slow: its process is stopped for ``stopped_after``
    seconds, or it has been silent for ``hung_after`` seconds while running. A
    worker whose process exited is dropped at once by the caller (``drop``).
    """

    def __init__(self, window: int, max_pending: int, stopped_after: float,
                 hung_after: float, forget_after: float, owner: FrameOwner | None = None,
                 cost_window: int = COST_WINDOW_US, write_window: int = WRITE_WINDOW_US
                 ) -> None:
        self.owner: FrameOwner = owner or _NoOwner()
        self.window = window
        self.cost_window = cost_window
        self.write_window = max(write_window, cost_window)
        self.max_pending = max_pending
        self.stopped_after = stopped_after
        self.hung_after = hung_after
        self.forget_after = forget_after
        self.routes, self.reads = FairQueue(), FairQueue()
        self.brokers, self.writes = FairQueue(), FairQueue()
        self.read_lane = _lane((self.routes, self.cost_window), (self.reads, self.cost_window),
                               write=False)
        self.write_lane = _lane((self.brokers, self.write_window),
                                (self.writes, self.cost_window), write=True)
        self._lanes = (self.write_lane, self.read_lane)
        self.prices = Prices()
        self.peers: dict[bytes, Peer] = {}

    @property
    def queues(self) -> tuple[FairQueue, ...]:
        return self.routes, self.reads, self.brokers, self.writes

    @property
    def pending(self) -> int:
        return sum(len(q) for q in self.queues)

    def queued(self) -> list[Queued]:
        """Every queued request, in no particular order."""
        return [item for q in self.queues for item in q]

    def idle(self) -> bool:
        """Nothing in flight and nothing that could be sent (requests of connections whose
        replies cannot be written wait for them, not for a drain), or no business worker
        left to send it to (a stopping node starts none again)."""
        if not any(p.alive for p in self.peers.values()):
            return True
        return all(q.peek() is None for q in self.queues) and \
            all(not p.inflight for p in self.peers.values())

    def submit(self, conn: bytes, frame: bytes | memoryview, tag: Any = None,
               code: int | None = None, address: str = "") -> Queued | None:
        """Queue a request of ``conn`` (from ``address``); returns the request to answer
        SYSTEM_BUSY because the queues are full (this one or a queued one), else None.

        ``tag`` comes back from ``finish`` with the request's reply; ``code``, when not
        given, is read from the frame's header.
        """
        if code is None:
            code = peek_code(frame)  # type: ignore[arg-type]
            code = -1 if code is None else code
        item: Queued = (conn, frame, tag, code)
        refused = None
        if self.pending >= self.max_pending:
            refused = self._push_out(conn)
            if refused is None:
                return item
        cls = self._class_of(code)
        lane = cast(Lane, cls.lane)
        if not cls.queue:  # a class (a lane) that waited starts level with the others
            cls.vt = max(c.vt for c in lane.classes)
            if not any(c.queue for c in lane.classes):
                lane.vt = max(ln.vt for ln in self._lanes)
        cls.queue.push(conn, address, item, self.prices.cost(code, len(frame)))
        return refused

    def _class_of(self, code: int) -> Class:
        if code in WRITE_CODES:
            return self.write_lane.classes[0 if code in BROKER_CODES else 1]
        return self.read_lane.classes[0 if code == ROUTE_CODE else 1]

    def _push_out(self, conn: bytes) -> Queued | None:
        """Room for a request of ``conn``: the newest request of the longest queue of the
        busiest address, taken back to be refused; None when that queue is ``conn``'s."""
        heaviest = max(((q, h) for q in self.queues if (h := q.heaviest()) is not None),
                       key=lambda qh: qh[1][1], default=None)
        if heaviest is None or heaviest[1][0] == conn:
            return None
        return cast(Queued, heaviest[0].evict_newest(heaviest[1][0]))

    def park(self, conn: bytes, address: str) -> None:
        """Run nothing of ``conn`` until ``unpark``: its replies cannot be written."""
        for q in self.queues:
            q.park(conn, address)

    def unpark(self, conn: bytes) -> None:
        for q in self.queues:
            q.unpark(conn)

    def discard(self, conn: bytes) -> int:
        """Drop the queued (not yet dispatched) requests of a closed connection."""
        dropped = 0
        for q in self.queues:
            for item in q.discard(conn):
                self.release(item[1])
                dropped += 1
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
        lost = [(entry[0], entry[1]) for entry in peer.inflight]
        owns = self.owner.owns
        peer.stale.extend(cast(memoryview, frame) if owns(frame) else None for _, frame in lost)
        peer.inflight.clear()
        peer.writes = peer.cost = 0
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

    def finish(self, peer: Peer, took_us: int | None = None, reply_size: int = 0
               ) -> tuple[bool, Any, int]:
        """``completed``, the tag its request was submitted with and the request's size;
        ``took_us``, the business worker's time for it, and the size of its reply price its
        code."""
        if peer.stale:
            held = peer.stale.popleft()
            if held is not None:
                self.owner.release(held)
            return False, None, 0
        if not peer.inflight:
            return True, None, 0
        _, frame, write, tag, size, cost, code = peer.inflight.popleft()
        if write:
            peer.writes -= 1
        peer.cost -= cost
        self.release(frame)
        if took_us is not None:
            self.prices.observe(code, took_us, reply_size)
        return True, tag, size

    # -- dispatch ----------------------------------------------------------

    def batches(self) -> list[tuple[Peer, list[Item]]]:
        """Assign queued requests to workers with free credit."""
        out: list[tuple[Peer, list[Item]]] = []
        write, read = self.write_lane, self.read_lane
        if any(p.alive and p.lane == LANE_READ for p in self.peers.values()):
            self._fill(out, [(write, write.classes)], lambda p: p.lane == LANE_ALL)
            self._fill(out, [(read, read.classes)], lambda p: p.lane == LANE_READ)
            self._fill(out, [(read, read.classes[:1])],
                       lambda p: p.lane == LANE_ALL and not p.writes)
        else:  # the workers that take writes serve everything, the lanes taking turns
            self._fill(out, [(write, write.classes), (read, read.classes)], lambda p: True)
        return out

    def _fill(self, out: list[tuple[Peer, list[Item]]], spec: Spec,
              ok: Callable[[Peer], bool]) -> None:
        limit = max(c.limit for _, classes in spec for c in classes)
        while any(c.queue for _, classes in spec for c in classes):
            peer = self._pick(ok, limit)
            batch = [] if peer is None else self._take(peer, spec)
            if not batch:
                return
            out.append((cast(Peer, peer), batch))

    def _pick(self, ok: Callable[[Peer], bool], limit: int) -> Peer | None:
        """The least loaded live worker ``ok`` accepts that has credit left (requests, and
        expected microseconds below ``limit``)."""
        best: Peer | None = None
        for p in self.peers.values():
            if p.alive and len(p.inflight) < self.window and p.cost < limit \
                    and ok(p) and (best is None or p.cost < best.cost):
                best = p
        return best

    @staticmethod
    def _next(spec: Spec) -> Class | None:
        """Whose turn it is: of the lane of least virtual time that has work to hand out,
        its class of least virtual time that has."""
        best: Class | None = None
        best_lane: Lane | None = None
        for lane, classes in spec:
            for c in classes:
                if c.queue.peek() is None:
                    continue
                if best is None or (lane is best_lane and c.vt < best.vt) or (
                        lane is not best_lane and lane.vt < cast(Lane, best_lane).vt):
                    best, best_lane = c, lane
        return best

    def _take(self, peer: Peer, spec: Spec) -> list[Item]:
        batch: list[Item] = []
        size = 0
        room = min(self.window - len(peer.inflight), MAX_BATCH)
        owns = self.owner.owns
        while len(batch) < room and size < MAX_BATCH_BYTES:
            cls = self._next(spec)
            if cls is None:
                break
            _, cost = cast(tuple[Queued, int], cls.queue.peek())
            if peer.inflight and peer.cost + cost > cls.limit:  # its turn waits for a drain
                break
            conn, frame, tag, code = cast(Queued, cls.queue.pop())
            batch.append((conn, frame))
            n = len(frame)
            kept = frame if n <= KEEP_WHOLE_BYTES or owns(frame) else without_body(frame)
            peer.inflight.append((conn, kept, cls.write, tag, n, cost, code))
            peer.cost += cost
            peer.writes += cls.write
            cls.vt += cost * FIRST_SHARE // cls.share
            cast(Lane, cls.lane).vt += cost
            size += n
        return batch


def _lane(first: tuple[FairQueue, int], second: tuple[FairQueue, int], write: bool) -> Lane:
    """A lane of two classes, each a queue and its limit; the first has FIRST_SHARE."""
    lane = Lane([Class(first[0], FIRST_SHARE, write, first[1]),
                 Class(second[0], 1, write, second[1])])
    for c in lane.classes:
        c.lane = lane
    return lane
