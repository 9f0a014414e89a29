"""The load process of ``chaos run --load``: ``python -m cluster.chaos.load.gen SPEC.json``.

One process runs the plan's brokers (``SimBroker``: compressed
registrations, own connections, a heartbeat loop each, all on one I/O
thread) and, once every broker is registered on every node, its route reads
(``ReadLoad``, on the main event loop). It reports on stdout, one JSON
object per line: ``register`` batches (one item per node outcome),
``ready``, ``reads`` once a second, ``failover`` events, ``wrong`` samples
and a final ``end``. It stops when stdin closes, on SIGTERM or SIGINT, or by
itself at the spec's ``deadline_s``; brokers stop heartbeating without
unregistering, as the chaos workload's do.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import orjson
import uvloop

from cluster.chaos.load.plan import LoadPlan
from cluster.chaos.load.reads import ReadLoad
from cluster.chaos.workload import client_error_value
from cluster.client.broker_sim import SimBroker, SimOptions, SimStats
from cluster.client.connection import IoLoop
from cluster.client.fanout import NodeOutcome, Status

FLUSH_S = 0.25


class Emitter:
    """JSON lines on ``out``, from any thread; register outcomes go out in batches."""

    def __init__(self, out: IO[bytes]) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._registers: list[list[Any]] = []

    def emit(self, obj: dict[str, Any]) -> None:
        line = orjson.dumps(obj) + b"\n"
        with self._lock:
            self._out.write(line)
            self._out.flush()

    def register(self, item: list[Any]) -> None:
        with self._lock:
            self._registers.append(item)

    def flush_registers(self) -> None:
        with self._lock:
            items, self._registers = self._registers, []
        if items:
            self.emit({"kind": "register", "items": items})


class BrokerStats(SimStats):
    """Each node outcome of one broker as ``[start, end, broker, id, node, status, error]``
    (``error``: the history's error value, with ``code`` when the node answered)."""

    def __init__(self, gen: LoadGen, broker: str, broker_id: int) -> None:
        super().__init__()
        self._gen = gen
        self._broker = broker
        self._id = broker_id

    def record(self, outcome: NodeOutcome) -> None:
        super().record(outcome)
        end = time.monotonic()
        node = self._gen.node_of[outcome.addr]
        err = None if outcome.error is None else client_error_value(outcome.error)
        self._gen.emitter.register([round(end - outcome.elapsed, 4), round(end, 4),
                                    self._broker, self._id, node, outcome.status.value, err])
        if outcome.status is Status.OK:
            self._gen.registered((self._broker, self._id, node))


class LoadGen:
    def __init__(self, spec: dict[str, Any], out: IO[bytes]) -> None:
        self.plan = LoadPlan.from_dict(spec["plan"])
        self.addrs: dict[str, str] = dict(spec["nodes"])
        self.node_of = {a: n for n, a in self.addrs.items()}
        self.seed = int(spec.get("seed", 0))
        self.deadline = time.monotonic() + float(spec["deadline_s"])
        self.emitter = Emitter(out)
        self.io = IoLoop("load-brokers")
        self._needed = self.plan.broker_count * len(self.addrs)
        self._ok: set[tuple[str, int, str]] = set()
        self._ok_lock = threading.Lock()
        self.ready = threading.Event()
        self.brokers = [self._broker(g, s) for g in range(self.plan.groups) for s in (0, 1)]

    def _broker(self, group: int, slave: int) -> SimBroker:
        who = self.plan.identity(group, slave)
        hb = self.plan.heartbeat_s
        opts = SimOptions(period=hb, clamp=(min(hb, 10.0), max(hb, 60.0)),
                          timeout=min(self.plan.register_timeout_s, hb),
                          retry_interval=min(1.0, hb), compressed=True)
        return SimBroker(self.io, list(self.addrs.values()), who, self.plan.topics(group), opts,
                         BrokerStats(self, who.broker_name, who.broker_id))

    def registered(self, key: tuple[str, int, str]) -> None:
        with self._ok_lock:
            self._ok.add(key)
            if len(self._ok) >= self._needed:
                self.ready.set()

    def registered_count(self) -> int:
        with self._ok_lock:
            return len(self._ok)

    async def run(self, stop: asyncio.Event) -> None:
        started = time.monotonic()
        for broker in self.brokers:
            broker.start()
        flusher = asyncio.get_running_loop().create_task(self._flush_loop(stop))
        try:
            await self._wait_ready(stop, started)
            if not stop.is_set():
                await ReadLoad(self.plan, self.addrs, self.emitter.emit, self.seed).run(stop)
        finally:
            for broker in self.brokers:
                with contextlib.suppress(Exception):
                    broker.heartbeat.stop()
            stop.set()
            await flusher
            self.emitter.flush_registers()

    async def _wait_ready(self, stop: asyncio.Event, started: float) -> None:
        """Until every broker is registered on every node, or stop; then ``ready``."""
        while not stop.is_set() and not self.ready.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.1)
        self.emitter.flush_registers()
        self.emitter.emit({"kind": "ready", "t": time.monotonic(),
                           "took_s": round(time.monotonic() - started, 3),
                           "registered": self.registered_count(), "needed": self._needed,
                           "complete": self.ready.is_set()})

    async def _flush_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            if time.monotonic() >= self.deadline:
                stop.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), FLUSH_S)
            self.emitter.flush_registers()

    def close(self) -> None:
        for broker in self.brokers:
            with contextlib.suppress(Exception):
                broker.api.pool.close()
        self.io.close()


def _watch_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Stop when the harness closes our stdin (or dies)."""
    with contextlib.suppress(OSError):
        while os.read(0, 4096):
            pass
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(stop.set)


async def main_async(spec: dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    threading.Thread(target=_watch_stdin, args=(loop, stop), name="load-stdin",
                     daemon=True).start()
    gen = LoadGen(spec, sys.stdout.buffer)
    try:
        await gen.run(stop)
    finally:
        gen.close()
        gen.emitter.emit({"kind": "end", "t": time.monotonic()})


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m cluster.chaos.load.gen SPEC.json", file=sys.stderr)
        return 2
    spec = orjson.loads(Path(args[0]).read_bytes())
    uvloop.install()
    asyncio.run(main_async(spec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
