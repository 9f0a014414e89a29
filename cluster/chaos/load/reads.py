"""Cheap route reads at a fixed rate: pre-encoded requests pipelined on few connections.

Each ``ReadClient`` stands for one Java ``MQClientInstance``: one connection
to the node it chose, shared by many threads, so its reads are pipelined.
Every tick it writes its share of the rate as one batch (a single ``write``
of pre-encoded frames; only the opaque differs, always ten digits so a
template is two byte strings). Replies are matched by opaque from the JSON
header alone; one reply in ``VERIFY_EVERY`` also has its route body checked
(it must name the topic's broker group).

Node choice and failover follow the project's ``NameServerClient`` (and
Java's ``NettyRemotingClient``): a client keeps its node while the
connection is healthy; a read without a reply within the timeout closes the
connection (``clientCloseSocketIfTimeout``) and fails the reads still in
flight on it; a lost or refused connection moves the client on to the next
node of its own (shuffled) list. Each move is reported once the client has
a successful read again, as a failover event.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import orjson

from cluster.chaos.load.plan import VERIFY_EVERY, WINDOW, LoadPlan
from cluster.chaos.load.stats import ReadCounters
from cluster.client.connection import parse_addr
from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameError, FrameReader, encode_command

OPAQUE_BASE = 1_000_000_000  # opaques stay ten digits: BASE .. 2*BASE-1 (< 2**31)
_SENTINEL = b"1999999999"
_U32 = struct.Struct(">I")
CREDIT_CAP_S = 1.0  # reads a client may catch up on after a stall, in seconds of its rate

Emit = Callable[[dict[str, Any]], None]


def request_template(topic: str, version: int = 409) -> tuple[bytes, bytes]:
    """GET_ROUTEINFO_BY_TOPIC for ``topic`` as (bytes before the opaque, bytes after)."""
    frame = encode_command(RemotingCommand(
        code=int(RequestCode.GET_ROUTEINFO_BY_TOPIC), opaque=int(_SENTINEL), version=version,
        ext_fields={"topic": topic}))
    head, sep, tail = frame.partition(_SENTINEL)
    if not sep or _SENTINEL in tail:
        raise ValueError("request template: opaque not found once in the frame")
    return head, tail


@dataclass(slots=True)
class Failover:
    client: int
    source: str
    reason: str
    failed_at: float
    lost: int = 0

    def done(self, target: str, ok_at: float | None) -> dict[str, Any]:
        return {"kind": "failover", "client": self.client, "from": self.source,
                "to": target, "reason": self.reason, "failed_at": self.failed_at,
                "ok_at": ok_at, "lost": self.lost}


class ReadClient(asyncio.Protocol):
    """One client instance: a node list of its own, at most one connection."""

    def __init__(self, engine: ReadLoad, index: int, order: Sequence[str]) -> None:
        self.engine = engine
        self.index = index
        self.order = list(order)  # node names; the first is the initial choice
        self.pos = -1
        self.node: str | None = None
        self.transport: asyncio.Transport | None = None
        self.connecting = False
        self.reader = FrameReader()
        self.pending: dict[int, tuple[float, int]] = {}
        self.credit = 0.0
        self.failover: Failover | None = None

    # -------------------------------------------------------------- connect

    def choose(self) -> None:
        """Connect to the next node of the list (Java: ``namesrvIndex + 1``)."""
        self.pos = (self.pos + 1) % len(self.order)
        self.node = self.order[self.pos]
        self.connecting = True
        self.engine.loop.create_task(self._connect(self.node))

    async def _connect(self, node: str) -> None:
        host, port = parse_addr(self.engine.addrs[node])
        try:
            async with asyncio.timeout(self.engine.plan.read_timeout_s):
                await self.engine.loop.create_connection(lambda: self, host, port)
        except (OSError, TimeoutError) as exc:
            self.connecting = False
            self.engine.counters(node).connect_failed += 1
            self.fail(node, "refused" if isinstance(exc, OSError) else "connect_timeout")
            self.node = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        self.connecting = False
        self.reader = FrameReader()
        self.credit = 0.0

    def connection_lost(self, exc: Exception | None) -> None:
        node = self.node
        self.transport = None
        self.node = None
        if node is None:
            return
        lost = len(self.pending)
        self.engine.counters(node).closed += lost
        self.pending.clear()
        self.fail(node, "closed", lost)

    def fail(self, node: str, reason: str, lost: int = 0) -> None:
        if self.failover is None:
            self.failover = Failover(self.index, node, reason, time.monotonic())
        self.failover.lost += lost

    def close(self) -> None:
        """Stop for good: reads still in flight are not counted."""
        self.node = None
        self.pending.clear()
        if self.transport is not None:
            self.transport.abort()

    # ----------------------------------------------------------------- send

    def tick(self, now: float, dt: float) -> None:
        if self.transport is None:
            if not self.connecting:
                self.choose()
            return
        if self._expired(now):
            return
        rate = self.engine.plan.reads_per_client
        self.credit = min(self.credit + rate * dt, rate * CREDIT_CAP_S)
        n = int(self.credit)
        room = WINDOW - len(self.pending)
        if n > room:
            self.engine.behind += n - max(room, 0)
            n = max(room, 0)
        if n <= 0:
            return
        self.credit -= n
        self.transport.write(self.engine.batch(self, n, now))
        assert self.node is not None
        self.engine.counters(self.node).sent += n

    def _expired(self, now: float) -> bool:
        """Whether the oldest read without a reply is past the timeout: it closes the
        connection."""
        if not self.pending:
            return False
        opaque, (sent, _) = next(iter(self.pending.items()))
        if now - sent < self.engine.plan.read_timeout_s:
            return False
        assert self.node is not None and self.transport is not None
        del self.pending[opaque]
        self.engine.counters(self.node).timeout += 1
        self.fail(self.node, "timeout", 1)
        self.transport.abort()
        return True

    # -------------------------------------------------------------- receive

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.reader.feed(data)
        except FrameError:
            self.close()
            return
        now = time.monotonic()
        for frame in frames:
            self._reply(frame, now)

    def _reply(self, frame: bytes, now: float) -> None:
        hlen = _U32.unpack_from(frame, 0)[0] & 0xFFFFFF
        header = orjson.loads(frame[4:4 + hlen])
        entry = self.pending.pop(int(header.get("opaque", -1)), None)
        if entry is None or self.node is None:
            return
        sent, topic_index = entry
        code = int(header.get("code", -1))
        counters = self.engine.counters(self.node)
        counters.reply(code, now - sent)
        if code == 0:
            if topic_index % VERIFY_EVERY == 0:
                self.engine.verify(counters, topic_index, frame[4 + hlen:])
            if self.failover is not None:
                self.engine.emit(self.failover.done(self.node, now))
                self.failover = None


class ReadLoad:
    """Every client of the plan on the running loop; stats are emitted once a second."""

    def __init__(self, plan: LoadPlan, addrs: dict[str, str], emit: Emit, seed: int) -> None:
        self.plan = plan
        self.addrs = addrs
        self.emit = emit
        self.loop = asyncio.get_running_loop()
        self.templates = [request_template(plan.topic(i)[0]) for i in range(plan.topic_count)]
        self.wrong_samples: list[dict[str, Any]] = []
        self.behind = 0
        self._opaque = itertools.count()
        self._topic = itertools.count()
        self._counters: dict[str, ReadCounters] = {n: ReadCounters() for n in addrs}
        rng = random.Random(f"load-reads:{seed}")
        names = list(addrs)
        self.clients = []
        for i in range(plan.clients):
            first = names[i % len(names)]
            rest = [n for n in names if n != first]
            rng.shuffle(rest)
            self.clients.append(ReadClient(self, i, [first, *rest]))

    def counters(self, node: str) -> ReadCounters:
        return self._counters[node]

    def batch(self, client: ReadClient, n: int, now: float) -> bytes:
        parts: list[bytes] = []
        count = self.plan.topic_count
        for _ in range(n):
            opaque = OPAQUE_BASE + next(self._opaque) % OPAQUE_BASE
            topic_index = (next(self._topic) * 7919) % count
            head, tail = self.templates[topic_index]
            parts += (head, str(opaque).encode(), tail)
            client.pending[opaque] = (now, topic_index)
        return b"".join(parts)

    def verify(self, counters: ReadCounters, topic_index: int, body: bytes) -> None:
        topic, group = self.plan.topic(topic_index)
        counters.verified += 1
        try:
            route = orjson.loads(body)
            names = {bd.get("brokerName") for bd in route.get("brokerDatas", [])}
        except (orjson.JSONDecodeError, AttributeError, TypeError):
            names = set()
        if self.plan.group_name(group) not in names:
            counters.wrong += 1
            if len(self.wrong_samples) < 10:
                self.wrong_samples.append({"topic": topic, "brokers": sorted(map(str, names)),
                                           "body": body[:300].decode("utf-8", "replace")})

    def flush(self, interval: float) -> None:
        """Emit and reset this interval's counters, one ``reads`` line for all nodes."""
        nodes = {n: c.as_dict() for n, c in self._counters.items()}
        on = {n: 0 for n in self.addrs}
        for c in self.clients:
            if c.node is not None and c.transport is not None:
                on[c.node] += 1
        self.emit({"kind": "reads", "t": time.monotonic(), "interval": interval, "nodes": nodes,
                   "clients": on, "behind": self.behind})
        self._counters = {n: ReadCounters() for n in self.addrs}
        self.behind = 0

    async def run(self, stop: asyncio.Event, flush_every: float = 1.0) -> None:
        tick = self.plan.tick_s
        last = last_flush = time.monotonic()
        try:
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), tick)
                now = time.monotonic()
                for client in self.clients:
                    client.tick(now, now - last)
                last = now
                if now - last_flush >= flush_every:
                    self.flush(now - last_flush)
                    last_flush = now
        finally:
            for client in self.clients:
                client.close()
            await asyncio.sleep(0)
            self.flush(time.monotonic() - last_flush)
            for client in self.clients:
                if client.failover is not None:
                    self.emit(client.failover.done("", None))
            self.emit({"kind": "wrong", "samples": self.wrong_samples})
