"""Point-in-time snapshot of one node's tables (GET_NODE_SNAPSHOT, docs/architecture.md).

All tables are read in one LMDB read transaction; volatile fields (heartbeat
timestamps, channel ids) are left out and lists are sorted, so two nodes with
the same routes produce equal snapshots. ``CANONICAL`` turns one stored entry
into its snapshot form; the digests (``state.digest``) hash the same forms.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from state import live
from state.store import Store, Txn

QUEUE_FIELDS = ("perm", "readQueueNums", "topicSysFlag", "writeQueueNums")


def next_seq(store: Store, now: int) -> tuple[int, int]:
    """Increment this node run's snapshot sequence number; returns it and the run's id,
    the ``takenAt`` of the run's first snapshot (a run starts both anew: a store kept from
    the previous run forgets them, ``state.restore``)."""
    with store.write() as t:
        seq = (t.get("meta", "snapshot_seq") or 0) + 1
        t.put("meta", "snapshot_seq", seq)
        run = t.get("meta", "snapshot_run")
        if run is None:
            run = now
            t.put("meta", "snapshot_run", run)
    return seq, int(run)


def broker_entry(bd: dict[str, Any]) -> dict[str, Any]:
    addrs = sorted(bd["brokerAddrs"].items(), key=lambda kv: int(kv[0]))
    return {"cluster": bd["cluster"], "brokerAddrs": dict(addrs)}


def topic_entry(qmap: dict[str, Any]) -> dict[str, Any]:
    return {name: {k: qd[k] for k in QUEUE_FIELDS} for name, qd in sorted(qmap.items())}


def live_entry(entry: dict[str, Any]) -> dict[str, Any]:
    return {"dataVersion": entry["dataVersion"], "haServerAddr": entry.get("haServerAddr")}


def kv_entry(kv: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(kv.items()))


CANONICAL: dict[str, Callable[[Any], Any]] = {
    "cluster": sorted, "broker": broker_entry, "topic": topic_entry, "filter": sorted,
    "live": live_entry, "kv": kv_entry,
}


BY_ADDRESS = frozenset({"live", "filter"})  # keyed by address and cluster in 5.x mode


def public_key(table: str, key: str) -> str:
    """The key a snapshot or digest shows: a broker address for the live and filter tables
    (a node following 5.x keys them by cluster too: an address live in two clusters is
    shown once)."""
    return live.addr_of(key) if table in BY_ADDRESS else key


def tables(t: Txn) -> dict[str, Any]:
    return {table: {public_key(table, key): canon(value) for key, value in t.items(table)}
            for table, canon in CANONICAL.items()}


def take_snapshot(store: Store, node_name: str, now: int) -> dict[str, Any]:
    """{"node", "run", "seq", "takenAt", "tables"}; `seq` increases by one per call, `run`
    is the same for every snapshot of one node run."""
    seq, run = next_seq(store, now)
    with store.read() as t:
        return {"node": node_name, "run": run, "seq": seq, "takenAt": now, "tables": tables(t)}
