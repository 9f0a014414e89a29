"""An I/O worker process: its ZeroMQ router, listening socket (or hand-off receiver),
timers and orderly shutdown around the hub (``worker.io.hub``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import uvloop
import zmq

from cluster.core.protocol.dialect import dialect_of
from state import nsconfig, queries
from state.store import Store
from worker import wire
from worker.frame_arena import open_arena
from worker.io.connection import IoConfig
from worker.io.handoff import HandoffSender, handoff_path
from worker.io.hub import Hub
from worker.io.route_replies import RouteReplies
from worker.io.sources import accept, receive_handoffs, stop_receiving
from worker.metrics import Pusher
from worker.procs import (
    TRIM_EVERY_S,
    announce_ready,
    give_back_memory,
    io_endpoint,
    start_worker_process,
)

log = logging.getLogger("pynamesrv.io")


async def _every(period: float, fn) -> None:  # type: ignore[no-untyped-def]
    while True:
        await asyncio.sleep(period)
        fn()


async def _serve(cfg: IoConfig, zctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    loop = asyncio.get_running_loop()
    router = zctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.ROUTER_MANDATORY, 1)
    router.setsockopt(zmq.LINGER, 0)
    router.setsockopt(zmq.SNDHWM, 100_000)
    router.setsockopt(zmq.RCVHWM, 100_000)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(Path(cfg.run) / f"io-{cfg.index}.ipc")
    router.bind(io_endpoint(Path(cfg.run), cfg.index))
    store = Store.open(Path(cfg.store_path))
    five = dialect_of(cfg.dialect).five
    hub = Hub(cfg, loop, router, RouteReplies(store.generation_token, _shared_route(store, five)),
              open_arena(Path(cfg.store_path), cfg.index, cfg.frame_max))
    loop.add_reader(router.fileno(), hub.on_router_readable)
    server = None if cfg.large else await accept(cfg, loop, hub)
    receiver = receive_handoffs(Path(cfg.run), loop, hub) if cfg.large else None
    if cfg.hand_off:
        hub.handoff = HandoffSender(handoff_path(Path(cfg.run)), hub.now)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    timers = [asyncio.ensure_future(_every(wire.HEARTBEAT_S, hub.tick)),
              asyncio.ensure_future(_every(min(1.0, cfg.idle_timeout_s / 4),
                                           hub.check_connections)),
              # the frames read and the replies built leave free heap pages behind
              asyncio.ensure_future(_every(TRIM_EVERY_S, give_back_memory))]
    announce_ready(zctx, Path(cfg.run), "io", cfg.index)
    hub.pusher = Pusher(zctx, Path(cfg.run))
    await stop.wait()
    await _go_away_window(hub, store)
    if server is not None:
        server.close()
    if receiver is not None:
        stop_receiving(loop, receiver)
    hub.stop_reading()  # the drain answers what was read; a client sees the close
    await _drain(hub, cfg.drain_ms / 1000)
    hub.closing = True
    for t in timers:
        t.cancel()
    for conn in list(hub.conns.values()):
        conn.close()
    loop.remove_reader(router.fileno())
    hub.unwatch_all()
    if hub.handoff is not None:
        hub.handoff.close()
    if hub.pusher is not None:
        hub.pusher.close()
    router.close(0)
    store.close()
    if hub.arena is not None:
        hub.arena.close()


def _shared_route(store: Store, five: bool) -> Callable[[str, bytes | None], bytes | None]:
    """``queries.shared_route`` of a topic in the store at a generation (None once the store
    moved on), for ``RouteReplies``; the settings it depends on are read once a generation."""
    held: list[Any] = [_NEVER, False]  # a generation, and whether its routes are shareable

    def shared(topic: str, generation: bytes | None) -> bytes | None:
        with store.read() as t:
            if t.get_raw("meta", "gen") != generation:
                return None
            if held[0] != generation:
                held[:] = generation, queries.routes_shareable(t)
            return queries.topic_group(t, topic, five) if held[1] else None
    return shared


_NEVER = object()  # no generation read yet


def go_away_seconds(store: Store) -> float:
    """How long a node shutting down answers GO_AWAY: ``shutdownWaitTimeSeconds`` when
    ``enableShutdownGracefully`` is set, else 0."""
    with store.read() as t:
        if not nsconfig.get_bool(t, "enableShutdownGracefully"):
            return 0.0
        return float(nsconfig.get_int(t, "shutdownWaitTimeSeconds"))


async def _go_away_window(hub: Hub, store: Store) -> None:
    """5.x graceful shutdown: the port stays open and new clients get GO_AWAY for a while
    (``worker.io.go_away``), so they move to another NameServer before this one goes."""
    seconds = go_away_seconds(store)
    if seconds > 0:
        log.warning("event=going_away seconds=%.0f", seconds)
        hub.going_away = True
        await asyncio.sleep(seconds)


async def _drain(hub: Hub, bound_s: float) -> None:
    deadline = hub.now() + bound_s
    while not hub.lanes.idle() and hub.now() < deadline:
        await asyncio.sleep(0.01)
    if not hub.lanes.idle():
        log.warning("event=drain_timeout pending=%d", hub.lanes.pending)


def run(cfg: IoConfig) -> None:
    """Process entry point."""
    start_worker_process(cfg.parent, f"pns-io-{cfg.index}")
    if cfg.nice:
        os.nice(cfg.nice)
    zctx = zmq.Context()
    try:
        uvloop.run(_serve(cfg, zctx))
    finally:
        zctx.term()
