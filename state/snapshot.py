"""Point-in-time snapshot of one node's tables (GET_NODE_SNAPSHOT, docs/architecture.md).

All tables are read in one LMDB read transaction; volatile fields (heartbeat
timestamps, channel ids) are left out and lists are sorted, so two nodes with
the same routes produce equal snapshots.
"""

from __future__ import annotations

from typing import Any

from state import live
from state.store import Store, Txn


def next_seq(store: Store, now: int) -> tuple[int, int]:
    """Increment this node run's snapshot sequence number; returns it and the run's id,
    the ``takenAt`` of the run's first snapshot (the store is made anew by each run)."""
    with store.write() as t:
        seq = (t.get("meta", "snapshot_seq") or 0) + 1
        t.put("meta", "snapshot_seq", seq)
        run = t.get("meta", "snapshot_run")
        if run is None:
            run = now
            t.put("meta", "snapshot_run", run)
    return seq, int(run)


def _brokers(t: Txn) -> dict[str, Any]:
    out = {}
    for name, bd in t.items("broker"):
        addrs = sorted(bd["brokerAddrs"].items(), key=lambda kv: int(kv[0]))
        out[name] = {"cluster": bd["cluster"], "brokerAddrs": dict(addrs)}
    return out


def _topics(t: Txn) -> dict[str, Any]:
    out = {}
    for topic, qmap in t.items("topic"):
        out[topic] = {
            name: {k: qd[k] for k in ("perm", "readQueueNums", "topicSysFlag", "writeQueueNums")}
            for name, qd in sorted(qmap.items())}
    return out


def _live(t: Txn) -> dict[str, Any]:
    """Keyed by broker address (a node following 5.x keys its live table by cluster too: an
    address live in two clusters is shown once)."""
    return {live.addr_of(key): {"dataVersion": entry["dataVersion"],
                                "haServerAddr": entry.get("haServerAddr")}
            for key, entry in t.items("live")}


def tables(t: Txn) -> dict[str, Any]:
    return {
        "cluster": {c: sorted(names) for c, names in t.items("cluster")},
        "broker": _brokers(t),
        "topic": _topics(t),
        "filter": {live.addr_of(key): sorted(fs) for key, fs in t.items("filter")},
        "live": _live(t),
        "kv": {ns: dict(sorted(kv.items())) for ns, kv in t.items("kv")},
    }


def take_snapshot(store: Store, node_name: str, now: int) -> dict[str, Any]:
    """{"node", "run", "seq", "takenAt", "tables"}; `seq` increases by one per call, `run`
    is the same for every snapshot of one node run."""
    seq, run = next_seq(store, now)
    with store.read() as t:
        return {"node": node_name, "run": run, "seq": seq, "takenAt": now, "tables": tables(t)}
