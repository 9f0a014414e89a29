"""The live table: one entry per live broker, keyed by its address (4.9) or by its cluster
and address (5.x), with the channel index that finds the entries of a closed connection.

Stored shapes: live → {lastUpdateTimestamp, dataVersion, channel, haServerAddr[,
heartbeatTimeoutMillis][, cluster, brokerAddr (5.x)]}; channel → [live key]. A 5.x key
is the address, a NUL and the cluster, so the entries of one address share a prefix.
"""

from __future__ import annotations

from typing import Any

from state.store import Txn

SEP = "\x00"


def key(cluster: str, addr: str, five: bool) -> str:
    """The live (and filter) table key of a broker address in `cluster`."""
    return f"{addr}{SEP}{cluster}" if five else addr


def addr_of(live_key: str) -> str:
    """The broker address a live key names."""
    return live_key.split(SEP, 1)[0]


def cluster_of(live_key: str) -> str | None:
    """The cluster of a 5.x live key; None for a 4.9 one."""
    parts = live_key.split(SEP, 1)
    return parts[1] if len(parts) == 2 else None


def put(t: Txn, live_key: str, live: dict[str, Any], heartbeat_timeout: int | None) -> None:
    """Store `live` under `live_key`, moving the channel index to its channel."""
    if heartbeat_timeout is not None:
        live["heartbeatTimeoutMillis"] = heartbeat_timeout
    old = t.get("live", live_key)
    old_channel = old.get("channel") if old else None
    if old_channel != live["channel"]:
        if old_channel is not None:
            unbind_channel(t, old_channel, live_key)
        bind_channel(t, live["channel"], live_key)
    t.put("live", live_key, live)


def remove(t: Txn, live_key: str) -> bool:
    """Drop the live and filter entries of `live_key`; True if it was live."""
    live = t.get("live", live_key)
    if live is not None:
        if live.get("channel") is not None:
            unbind_channel(t, live["channel"], live_key)
        t.delete("live", live_key)
    t.delete("filter", live_key)
    return live is not None


def bind_channel(t: Txn, channel: str, live_key: str) -> None:
    keys = t.get("channel", channel) or []
    if live_key not in keys:
        t.put("channel", channel, [*keys, live_key])


def unbind_channel(t: Txn, channel: str, live_key: str) -> None:
    keys = [k for k in (t.get("channel", channel) or []) if k != live_key]
    if keys:
        t.put("channel", channel, keys)
    else:
        t.delete("channel", channel)


def touch(t: Txn, live_key: str, now: int) -> bool:
    """A heartbeat: the entry's lastUpdateTimestamp becomes `now`; False if not live."""
    live = t.get("live", live_key)
    if live is None:
        return False
    live["lastUpdateTimestamp"] = now
    t.put("live", live_key, live)
    return True


def expired(t: Txn, now: int, timeout_ms: int) -> list[str]:
    """Keys whose last heartbeat is strictly older than their timeout (the entry's own
    `heartbeatTimeoutMillis`, else `timeout_ms`)."""
    out = []
    for live_key, live in t.items("live"):
        timeout = live.get("heartbeatTimeoutMillis") or timeout_ms
        if live["lastUpdateTimestamp"] + timeout < now:
            out.append(live_key)
    return out
