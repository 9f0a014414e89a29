"""BrokerHousekeepingService: how brokers leave a node's tables without unregistering.

RocketMQ's NameServer forgets a broker when the connection it registered over closes
(``BrokerHousekeepingService`` calling ``RouteInfoManager.onChannelDestroy``) and when it
has not been heard of within its timeout (``scanNotActiveBroker``, which
``NamesrvController`` runs every 5 s). A node, being several processes, has one way more:
the connections of an I/O worker that died go with it (``io_worker_gone``).

These are the entry points; the node's controller and business workers call them. Each
takes the Store, decides in a read transaction and writes only when something is to be
removed (brokers disconnecting together cost one commit). The table rules are the
release's (``five``: the node follows 5.x): ``state.route`` for 4.9.8 (brokers removed by
address at once) and ``state.route5`` for 5.x (unregistrations batched and fenced, so a
stale one never removes a fresh registration).
"""

from __future__ import annotations

from collections.abc import Sequence

from state import live, route, route5
from state.store import Store

Closed = tuple[str, str | None]  # (channel id, peer address to fall back to (4.9) or None)


def channels_closed(store: Store, closed: Sequence[Closed], five: bool) -> list[str]:
    """onChannelDestroy for connections closed together, in order; the broker addresses
    removed. 5.x finds a connection's brokers by its channel only; 4.9 falls back to the
    peer address given (the caller decides when it may)."""
    if five:
        channels = [ch for ch, _ in closed]
        with store.read() as t:
            if not any(t.get("channel", ch) for ch in channels):
                return []
        with store.write() as t:
            batch = [u for ch in channels for u in route5.channel_unregistrations(t, ch)]
            return route5.apply_unregistrations(t, batch)
    with store.read() as t:
        pending = [(ch, peer) for ch, peer in closed if route.channel_targets(t, ch, peer)]
    if not pending:
        return []
    with store.write() as t:
        return route.on_channels_destroyed_txn(t, pending)


def io_worker_gone(store: Store, prefix: str, five: bool) -> int:
    """Every broker registered over a dead I/O worker's connections (channel ids starting
    with ``prefix``, its ``<index>.<pid>.``) removed; their count."""
    with store.read() as t:
        channels = [ch for ch, _ in t.items("channel", prefix)]
    return len(channels_closed(store, [(ch, None) for ch in channels], five)) if channels else 0


def scan_not_active(store: Store, now: int, timeout_ms: int, five: bool) -> int:
    """The expiry scan (scanNotActiveBroker): brokers silent for longer than their timeout
    (a 5.x broker's own ``heartbeatTimeoutMillis``, else ``timeout_ms``) removed; how many."""
    if five:
        with store.read() as t:
            batch = route5.expired_unregistrations(t, now, timeout_ms)
        if not batch:
            return 0
        with store.write() as t:
            return len(route5.apply_unregistrations(t, batch))
    with store.read() as t:
        if not live.expired(t, now, timeout_ms):
            return 0
    with store.write() as t:  # re-checked inside the write
        return route.scan_not_active_txn(t, now, timeout_ms)
