"""A node's route tables across a restart: what a store left by the previous run keeps.

The route tables (topic, broker, cluster, live, filter) are kept, each broker with
the time of its last heartbeat, so it expires on the normal bound from that heartbeat
unless it registers again (the caller runs the expiry scan once the node's settings
are loaded, before anything is served). Everything else belonged to the previous run
and is forgotten: its connections (channel ids; the brokers re-bind theirs when they
register), the business workers' applied-table digests, the snapshot run and sequence
(so a snapshot still tells a new run: ``state.snapshot``), and
the KV and config tables, which the caller reloads from their files as at a fresh start.
A node that follows another release than the previous run (``rocketmqVersion``: 4.9.8
and 5.x key the live table differently) starts with empty route tables.
"""

from __future__ import annotations

from dataclasses import dataclass

from state import nsconfig
from state.store import APPLIED_TABLES, Store, Txn

KEPT_TABLES = ("topic", "broker", "cluster", "live", "filter", "mapping")
ORDER_META = "hashmap:"  # Java map orders of the route tables (state.tableorder)
FORGOTTEN_TABLES = ("channel", "kv", "config", *APPLIED_TABLES)
FORGOTTEN_META = ("snapshot_seq", "snapshot_run")  # a new run: snapshots say so (run, seq)


@dataclass(frozen=True, slots=True)
class Restored:
    """What a restart found: live broker addresses, topics, and the newest heartbeat (ms)."""

    brokers: int
    topics: int
    newest_heartbeat: int | None


def restore_routes(store: Store, five: bool) -> Restored:
    """Forget the previous run's volatile state in one write transaction; keep the routes
    unless the previous run followed the other release line than ``five`` says."""
    with store.write() as t:
        if nsconfig.dialect(t).five != five:
            _forget_routes(t)
        for table in FORGOTTEN_TABLES:
            t.clear(table)
        for key in FORGOTTEN_META:
            t.delete("meta", key)
        newest = _unbind_channels(t)
        return Restored(brokers=t.count("live"), topics=t.count("topic"),
                        newest_heartbeat=newest)


def _forget_routes(t: Txn) -> None:
    for table in KEPT_TABLES:
        t.clear(table)
    for key in [k for k in t.keys("meta") if k.startswith(ORDER_META)]:
        t.delete("meta", key)


def _unbind_channels(t: Txn) -> int | None:
    """Drop each live entry's channel id (a connection of the previous run); returns the
    newest heartbeat time."""
    newest: int | None = None
    for addr, live in list(t.items("live")):
        stamp = live.get("lastUpdateTimestamp")
        if isinstance(stamp, int) and (newest is None or stamp > newest):
            newest = stamp
        if live.pop("channel", None) is not None:
            t.put("live", addr, live)
    return newest
