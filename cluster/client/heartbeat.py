"""A broker's registration heartbeat: register to every NameServer each period.

As in ``BrokerController``, a full fan-out runs every period, clamped to
``10 s <= period <= 60 s`` (the clamp is a parameter so tests can run fast).
The first round always registers (Java's forced start-up registration); later
rounds with ``force_register=False`` first ask every node whether the data
version changed and register only if one did (``needRegister``).
Unlike Java, a node whose registration failed or timed out is retried every
``retry_interval`` on its own, so a node that comes back is registered again
without waiting for the next period, and a slow node never delays the rest:
each node has at most one registration in flight.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cluster.client.fanout import (
    BrokerIdentity,
    BrokerOuterAPI,
    FanoutResult,
    NodeOutcome,
    RegisterPayload,
    Status,
    needs_registration,
)

log = logging.getLogger(__name__)

MIN_PERIOD = 10.0
MAX_PERIOD = 60.0
DEFAULT_PERIOD = 30.0
DEFAULT_RETRY_INTERVAL = 1.0
UNCHANGED = "unchanged"  # outcome value of a node skipped by needRegister


def clamp_period(period: float, lo: float = MIN_PERIOD, hi: float = MAX_PERIOD) -> float:
    """``max(lo, min(period, hi))``: RocketMQ's registerNameServerPeriod clamp."""
    return max(lo, min(period, hi))


@dataclass(slots=True)
class NodeStats:
    """Heartbeat counters for one node."""

    ok: int = 0
    failed: int = 0
    timed_out: int = 0
    skipped: int = 0
    last: NodeOutcome | None = None
    last_ok_at: float | None = None

    def add(self, outcome: NodeOutcome, now: float) -> None:
        self.last = outcome
        if outcome.ok:
            self.ok += 1
            self.last_ok_at = now
        elif outcome.status is Status.TIMED_OUT:
            self.timed_out += 1
        else:
            self.failed += 1


@dataclass(slots=True)
class HeartbeatState:
    """What the loop knows: per-node stats (every node from the start), retry times,
    registrations in flight."""

    stats: dict[str, NodeStats] = field(default_factory=dict)
    retry_at: dict[str, float] = field(default_factory=dict)
    in_flight: set[str] = field(default_factory=set)
    sent_at: dict[str, float] = field(default_factory=dict)  # loop time of the last send
    rounds: int = 0


class HeartbeatLoop:
    """Keeps one broker registered to every node of ``api.addrs``.

    ``payload_fn`` returns the current ``RegisterPayload`` (called off the
    event loop, so building a large body does not stall other I/O).
    ``data_version_fn`` is needed only with ``force_register=False``: each
    period first asks every node whether the version changed (Java
    ``needRegister``) and skips the registration when none did.
    """

    def __init__(
        self,
        api: BrokerOuterAPI,
        who: BrokerIdentity,
        payload_fn: Callable[[], RegisterPayload],
        *,
        period: float = DEFAULT_PERIOD,
        clamp: tuple[float, float] = (MIN_PERIOD, MAX_PERIOD),
        timeout: float | None = None,
        retry_interval: float = DEFAULT_RETRY_INTERVAL,
        force_register: bool = True,
        data_version_fn: Callable[[], Any] | None = None,
        oneway: bool = False,
        on_outcome: Callable[[NodeOutcome], None] | None = None,
    ) -> None:
        if not force_register and data_version_fn is None:
            raise ValueError("force_register=False needs data_version_fn")
        self.api = api
        self.who = who
        self.payload_fn = payload_fn
        self.period = clamp_period(period, *clamp)
        self.timeout = timeout if timeout is not None else min(api.register_timeout, self.period)
        self.retry_interval = retry_interval
        self.force_register = force_register
        self.data_version_fn = data_version_fn
        self.oneway = oneway
        self.on_outcome = on_outcome
        self.state = HeartbeatState(stats={a: NodeStats() for a in api.addrs})
        self._future: concurrent.futures.Future[None] | None = None
        self._main: asyncio.Task[Any] | None = None
        self._next_full = 0.0
        self._wake: asyncio.Event | None = None
        self._rounds: set[asyncio.Task[None]] = set()

    # ---------------------------------------------------------- control

    @property
    def running(self) -> bool:
        return self._future is not None and not self._future.done()

    def start(self) -> None:
        if not self.running:
            self._future = self.api.io.submit(self._run())

    def stop(self, timeout: float = 2.0) -> None:
        """Stop heartbeating (a crash, from the nodes' point of view)."""
        if self._future is None or self.api.io.closed:
            return
        self.api.io.run(self._cancel(), timeout)

    async def _cancel(self) -> None:
        tasks = [t for t in (self._main, *self._rounds) if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def in_flight_since(self) -> dict[str, float]:
        """Nodes with a registration still unanswered, and when it was sent (loop time)."""
        return {a: self.state.sent_at[a] for a in list(self.state.in_flight)
                if a in self.state.sent_at}

    def trigger(self) -> None:
        """Run a full round now (e.g. after the topic set changed)."""
        if self._wake is not None:
            self.api.io.loop.call_soon_threadsafe(self._force_now)

    # ------------------------------------------------------------- loop

    def _force_now(self) -> None:
        self._next_full = 0.0
        if self._wake is not None:
            self._wake.set()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        self._main = asyncio.current_task()
        self._wake = asyncio.Event()
        self._next_full = loop.time() + self.period
        self._spawn(self.api.addrs, check_version=False)  # the forced start-up registration
        while True:
            await self._sleep_until(min(self._next_full, self._next_retry()))
            now = loop.time()
            if now >= self._next_full:
                self._next_full = now + self.period
                self._spawn(self.api.addrs, check_version=not self.force_register)
            due = [a for a, t in self.state.retry_at.items() if t <= now]
            if due:
                self._spawn(due, check_version=False)

    def _next_retry(self) -> float:
        waiting = [t for a, t in self.state.retry_at.items() if a not in self.state.in_flight]
        return min(waiting, default=math.inf)

    async def _sleep_until(self, when: float) -> None:
        assert self._wake is not None
        delay = max(0.0, when - asyncio.get_running_loop().time())
        self._wake.clear()
        try:
            async with asyncio.timeout(delay):
                await self._wake.wait()
        except TimeoutError:
            pass

    def _spawn(self, addrs: list[str], *, check_version: bool) -> None:
        targets = [a for a in addrs if a not in self.state.in_flight]
        if not targets:
            return
        self.state.in_flight.update(targets)
        now = asyncio.get_running_loop().time()
        for addr in targets:
            self.state.retry_at.pop(addr, None)
            self.state.sent_at[addr] = now
        task = asyncio.get_running_loop().create_task(self._round(targets, check_version))
        self._rounds.add(task)
        task.add_done_callback(self._rounds.discard)

    async def _round(self, targets: list[str], check_version: bool) -> None:
        try:
            result = await self._register(targets, check_version)
            self._record(result)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("event=heartbeat_round_error broker=%s", self.who.broker_name)
            self._schedule_retry(targets)
        finally:
            self.state.in_flight.difference_update(targets)
            self.state.rounds += 1
            if self._wake is not None:
                self._wake.set()

    async def _register(self, targets: list[str], check_version: bool) -> FanoutResult:
        if check_version:
            assert self.data_version_fn is not None
            dv = await asyncio.to_thread(self.data_version_fn)
            query = await self.api.query_data_version_async(
                self.who, dv, timeout=self.timeout, addrs=targets)
            if not needs_registration(query, dv):
                return _skipped(query)
        payload = await asyncio.to_thread(self.payload_fn)
        return await self.api.register_broker_all_async(
            self.who, payload, oneway=self.oneway, timeout=self.timeout, addrs=targets)

    def _record(self, result: FanoutResult) -> None:
        now = asyncio.get_running_loop().time()
        for addr, outcome in result.outcomes.items():
            stats = self.state.stats.setdefault(addr, NodeStats())
            if outcome.value == UNCHANGED:
                stats.skipped += 1
                stats.last, stats.last_ok_at = outcome, now
            else:
                stats.add(outcome, now)
            if not outcome.ok:
                self.state.retry_at[addr] = now + self.retry_interval
            if self.on_outcome is not None:
                self.on_outcome(outcome)

    def _schedule_retry(self, targets: list[str]) -> None:
        now = asyncio.get_running_loop().time()
        for addr in targets:
            self.state.retry_at[addr] = now + self.retry_interval


def _skipped(query: FanoutResult) -> FanoutResult:
    """A round that needed no registration: every node reports ``unchanged``."""
    outcomes = {a: NodeOutcome(a, o.status, UNCHANGED if o.ok else o.value, o.error, o.elapsed)
                for a, o in query.outcomes.items()}
    return FanoutResult(outcomes, query.elapsed)
