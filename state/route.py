"""RouteInfoManager: the NameServer's route tables and their algorithms (4.9.8 semantics).

Functions take a `state.store.Txn` (read or write, opened by the caller, so one
request sees one consistent view) and `now` in milliseconds where time matters.
Read-only queries are in `state.queries`; the housekeeping entry points (a closed
connection, the expiry scan, a dead I/O worker) are in `state.housekeeping`.

Stored shapes: topic → {brokerName: QueueData} (as `Txn` reads and writes it; stored as
`state.topicsets` lays it out); broker → BrokerData with
`brokerAddrs` keyed by the id as a decimal string; cluster → [brokerName];
live → {lastUpdateTimestamp, dataVersion, channel, haServerAddr[,
heartbeatTimeoutMillis]}; filter → [addr]; channel → [brokerAddr];
applied, applied_queues, applied_delta, applied_stamp → `state.applied`.

Deliberate choices where 4.9 and 5.x differ (5.x fixes adopted):
* onChannelDestroy removes every broker registered over the closed channel
  (4.9 and 5.x remove only the first one found; the rest would linger until
  expiry). With no broker bound to the channel, the 4.9 fallback to the peer
  address applies.
* QUERY_DATA_VERSION without a body answers changed=true (5.x) instead of
  failing with a NullPointerException (4.9).
* A live entry keeps a 5.x broker's `heartbeatTimeoutMillis`; expiry uses it
  instead of the node-wide timeout when present (5.x).
* REGISTER_TOPIC_IN_NAMESRV and GET_BROKER_MEMBER_GROUP are served (5.x codes).
Everything else follows 4.9: topic configs only from the master (id 0) on a
first registration or a data-version change, unregistration by id, and a topic's
queue data removed only when its broker name disappears entirely.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from state import live
from state.applied import (
    TopicTable as TopicTable,  # the processors build one per registration
)
from state.applied import (
    already_applied,
    apply_topic_table,
    forget_applied,
    last_applied,
)
from state.store import Store, Txn, dumps
from state.tableorder import hm_added as _hm_added
from state.tableorder import hm_removed as _hm_removed
from state.tableorder import java_order
from state.topicsets import VALUES_KEPT

PERM_WRITE = 2
PERM_READ = 4
MASTER_ID = "0"


def dv_equal(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """DataVersion equality: counter and timestamp (and 5.x stateVersion when sent)."""
    if a is None or b is None:
        return False
    return (a.get("counter"), a.get("timestamp"), a.get("stateVersion", 0)) == (
        b.get("counter"), b.get("timestamp"), b.get("stateVersion", 0))


def queue_data(name: str, tc: dict[str, Any]) -> dict[str, Any]:
    return {"brokerName": name, "perm": int(tc.get("perm", 6)),
            "readQueueNums": int(tc.get("readQueueNums", 16)),
            "topicSysFlag": int(tc.get("topicSysFlag", 0)),
            "writeQueueNums": int(tc.get("writeQueueNums", 16))}


def public_broker_data(bd: dict[str, Any]) -> dict[str, Any]:
    """BrokerData as the body encoders want it: integer ids in ascending order (and, as a
    5.x node stores them, `enableActingMaster` and `zoneName`)."""
    addrs = {int(k): v for k, v in bd["brokerAddrs"].items()}
    out = {"brokerAddrs": dict(sorted(addrs.items())), "brokerName": bd["brokerName"],
           "cluster": bd["cluster"]}
    for extra in ("enableActingMaster", "zoneName"):
        if extra in bd:
            out[extra] = bd[extra]
    return out


# ---------------------------------------------------------------- registration


def register_broker(t: Txn, cluster: str, addr: str, name: str, broker_id: int,
                    ha_addr: str | None, data_version: dict[str, Any],
                    topic_configs: Mapping[str, Any] | TopicTable | None,
                    filter_servers: list[str] | None, channel: str, now: int,
                    heartbeat_timeout: int | None = None) -> dict[str, str | None]:
    """4.9 registerBroker; returns {"haServerAddr", "masterAddr"} (None unless a live master).

    `topic_configs` is the wrapper's topicConfigTable ({key: TopicConfig}) or a TopicTable;
    None stands for a null wrapper.
    """
    table = (topic_configs if isinstance(topic_configs, TopicTable) or topic_configs is None
             else TopicTable.of_configs(topic_configs))
    apply = table is not None and wants_topic_table(t, name, broker_id, addr, data_version)
    _add_to_cluster(t, cluster, name)
    _put_broker_addr(t, cluster, name, str(broker_id), addr)
    if apply and table is not None:
        apply_topic_table(t, name, table)
    live.put(t, addr, {"lastUpdateTimestamp": now, "dataVersion": data_version,
                       "channel": channel, "haServerAddr": ha_addr}, heartbeat_timeout)
    if filter_servers is not None:
        if filter_servers:
            t.put("filter", addr, list(filter_servers))
        else:
            t.delete("filter", addr)
    return _slave_result(t, name, broker_id)


def _add_to_cluster(t: Txn, cluster: str, name: str) -> None:
    names = t.get("cluster", cluster)
    if names is None:
        t.put("cluster", cluster, [name])
        _hm_added(t, "cluster", cluster)
    elif name not in names:
        t.put("cluster", cluster, [*names, name])


def wants_topic_table(t: Txn, name: str, broker_id: int, addr: str,
                      data_version: dict[str, Any]) -> bool:
    """4.9: only the master applies its topic table, and only on a first registration of
    its name or id, or when its DataVersion differs from the one stored for `addr`."""
    if broker_id != 0:
        return False
    bd = t.get("broker", name)
    if bd is None or MASTER_ID not in bd["brokerAddrs"]:
        return True
    entry = t.get("live", addr)
    return entry is None or not dv_equal(entry["dataVersion"], data_version)


def decode_ahead(store: Store, name: str | None, broker_id: int | None, addr: str | None,
                 data_version: dict[str, Any], table: TopicTable) -> None:
    """The registration's costly part before the write lock: decode `table` now when
    `register_broker` will read it whole; leave it undecoded when the stored records show
    it unchanged or to be read piece by piece. Without the broker's name, id or address
    (the write then fails as Java does) it is decoded."""
    if name is not None and broker_id is not None and addr is not None:
        with store.read() as t:
            if not needs_topic_queues(t, name, broker_id, addr, data_version, table):
                return
    table.queues()


def needs_topic_queues(t: Txn, name: str, broker_id: int, addr: str,
                       data_version: dict[str, Any], table: TopicTable) -> bool:
    """Whether register_broker, run on this state, would decode `table` whole (so a caller
    can decode it before taking the write lock); a table it would read piece by piece has
    its pieces compared here."""
    if not wants_topic_table(t, name, broker_id, addr, data_version):
        return False
    if already_applied(t, name, table):
        return False
    applied = last_applied(t, name)
    return applied is None or table.diff(applied) is None


def _put_broker_addr(t: Txn, cluster: str, name: str, bid: str, addr: str) -> None:
    """Id switch + put."""
    bd = t.get("broker", name)
    created = bd is None
    if bd is None:
        bd = {"brokerAddrs": {}, "brokerName": name, "cluster": cluster}
    addrs = {k: v for k, v in bd["brokerAddrs"].items() if not (v == addr and k != bid)}
    addrs[bid] = addr
    bd["brokerAddrs"] = dict(sorted(addrs.items(), key=lambda kv: int(kv[0])))
    t.put("broker", name, bd)
    if created:
        _hm_added(t, "broker", name)


def _slave_result(t: Txn, name: str, broker_id: int) -> dict[str, str | None]:
    result: dict[str, str | None] = {"haServerAddr": None, "masterAddr": None}
    if broker_id == 0:
        return result
    master = t.get("broker", name)["brokerAddrs"].get(MASTER_ID)
    master_live = t.get("live", master) if master else None
    if master_live is not None:
        result = {"haServerAddr": master_live.get("haServerAddr"), "masterAddr": master}
    return result


# ---------------------------------------------------------------- removal

def _remove_broker_name(t: Txn, name: str, cluster: str | None, gone: set[str]) -> None:
    """A broker name vanished: drop it from its cluster and add it to ``gone``, the names
    the caller drops from the topics at once (``remove_queue_datas``): brokers leaving
    together cost one pass over the topic table, not one each. Nothing between reads the
    topic table."""
    if cluster is None:  # the first cluster holding it, in Java's iteration order
        holding = [c for c, names in t.items("cluster") if name in names]
        cluster = java_order(t, "cluster", holding)[0] if holding else None
    names = t.get("cluster", cluster) if cluster is not None else None
    if cluster is not None and names is not None and name in names:
        rest = [n for n in names if n != name]
        if rest:
            t.put("cluster", cluster, rest)
        else:
            t.delete("cluster", cluster)
            _hm_removed(t, "cluster", cluster)
    gone.add(name)
    forget_applied(t, name)


def remove_queue_datas(t: Txn, names: set[str]) -> None:
    """Remove the QueueData of `names` from every topic; drop topics left empty.

    A topic's value is a map keyed by broker name, so a value that holds none of the names
    as a key (encoded as stored, then a colon) is passed over without being decoded: a
    broker leaving a table of 40,000 topics costs a byte search per topic, not a decode."""
    if not names:
        return
    marks = [dumps(n) + b":" for n in names]
    edits: dict[bytes, bytes | None] = {}  # a value → without `names` (None: unchanged)
    moves: dict[tuple[bytes | None, bytes], list[bytes]] = {}
    emptied = []
    for topic, group, raw in t.topics.entries():
        if raw not in edits:  # the topics of a group (`state.topicsets`) share its edit
            if len(edits) >= VALUES_KEPT:
                edits.clear()
            edits[raw] = _without(raw, names, marks)
        rest = edits[raw]
        if rest == b"{}":
            emptied.append(topic.decode())
        elif rest is not None:
            moves.setdefault((group, rest), []).append(topic)
    for gone in emptied:
        t.delete("topic", gone)
    t.put_topics(moves, registering=False)


def _without(raw: bytes, names: set[str], marks: list[bytes]) -> bytes | None:
    """Topic value `raw` without the QueueData of `names` (encoded), None when it holds
    none of them."""
    if not any(m in raw for m in marks):
        return None
    qmap = orjson.loads(raw)
    if not names.intersection(qmap):
        return None
    return dumps({n: q for n, q in qmap.items() if n not in names})


def unregister_broker(t: Txn, cluster: str, addr: str, name: str, broker_id: int) -> None:
    """4.9 unregisterBroker: live/filter by address, BrokerData entry by id."""
    live.remove(t, addr)
    bd = t.get("broker", name)
    if bd is None:
        return
    bd["brokerAddrs"].pop(str(broker_id), None)
    if bd["brokerAddrs"]:
        t.put("broker", name, bd)
        return
    t.delete("broker", name)
    _hm_removed(t, "broker", name)
    gone: set[str] = set()
    _remove_broker_name(t, name, cluster, gone)
    remove_queue_datas(t, gone)


def destroy_addr(t: Txn, addr: str, gone: set[str]) -> bool:
    """4.9 onChannelDestroy for one broker address; True if anything was removed. Broker
    names that vanish are left in the topics and added to ``gone``."""
    found = t.get("live", addr) is not None or t.get("filter", addr) is not None
    live.remove(t, addr)
    holding = {name: bd for name, bd in t.items("broker") if addr in bd["brokerAddrs"].values()}
    for name in java_order(t, "broker", holding)[:1]:  # the first BrokerData holding it
        bd = holding[name]
        ids = [k for k, v in bd["brokerAddrs"].items() if v == addr]
        bd["brokerAddrs"].pop(ids[0])
        if bd["brokerAddrs"]:
            t.put("broker", name, bd)
        else:
            t.delete("broker", name)
            _hm_removed(t, "broker", name)
            _remove_broker_name(t, name, None, gone)
        return True
    return found


def channel_targets(t: Txn, channel: str, peer: str | None) -> list[str]:
    """Broker addresses an onChannelDestroy of `channel` would remove (peer as fallback)."""
    addrs = t.get("channel", channel)
    if addrs:
        return list(addrs)
    if peer and (t.get("live", peer) is not None or _addr_in_brokers(t, peer)):
        return [peer]
    return []


def _addr_in_brokers(t: Txn, addr: str) -> bool:
    return any(addr in bd["brokerAddrs"].values() for _, bd in t.items("broker"))


def on_channels_destroyed_txn(t: Txn, closed: list[tuple[str, str | None]]) -> list[str]:
    """Remove every broker bound to each closed channel (or the one at its peer), in order;
    returns their addresses. The broker names that vanish leave the topics in one pass."""
    gone: set[str] = set()
    removed = []
    for channel, peer in closed:
        for addr in channel_targets(t, channel, peer):
            destroy_addr(t, addr, gone)
            removed.append(addr)
    remove_queue_datas(t, gone)
    return removed


def scan_not_active_txn(t: Txn, now: int, timeout_ms: int) -> int:
    """Expire brokers (4.9 scanNotActiveBroker); returns the number of removed live entries."""
    addrs = live.expired(t, now, timeout_ms)
    gone: set[str] = set()
    for addr in addrs:
        destroy_addr(t, addr, gone)
    remove_queue_datas(t, gone)
    return len(addrs)


# ---------------------------------------------------------------- heartbeats

def query_data_version(t: Txn, addr: str, dv: dict[str, Any] | None, now: int
                       ) -> tuple[bool, dict[str, Any] | None]:
    """(changed, stored DataVersion); the heartbeat is refreshed only when unchanged (4.9)."""
    entry = t.get("live", addr)
    stored = entry["dataVersion"] if entry else None
    changed = entry is None or not dv_equal(stored, dv)
    if not changed:
        live.touch(t, addr, now)
    return changed, stored


def broker_heartbeat(t: Txn, addr: str, now: int) -> bool:
    return live.touch(t, addr, now)


# ---------------------------------------------------------------- admin writes

def change_write_perm(t: Txn, name: str, add: bool) -> int:
    """Wipe (perm &= ~W) or add (perm = R|W) the write bit on every topic of `name`."""
    updates = []
    for topic, qmap in t.items("topic"):
        qd = qmap.get(name)
        if qd is None:
            continue
        qd["perm"] = PERM_READ | PERM_WRITE if add else qd["perm"] & ~PERM_WRITE
        updates.append((topic, qmap))
    for topic, qmap in updates:
        t.put("topic", topic, qmap)
    return len(updates)


def delete_topic(t: Txn, topic: str, cluster: str | None = None) -> None:
    """Remove the topic, or only its queue data on the brokers of `cluster`."""
    if not cluster:
        t.delete("topic", topic)
        return
    names = set(t.get("cluster", cluster) or ())
    qmap = t.get("topic", topic)
    if not names or qmap is None:
        return
    rest = {n: q for n, q in qmap.items() if n not in names}
    if rest:
        t.put("topic", topic, rest)
    else:
        t.delete("topic", topic)


def register_topic(t: Txn, topic: str, queue_datas: Iterable[dict[str, Any]]) -> None:
    """5.x registerTopic: stops at the first QueueData whose broker is unknown."""
    existing = t.get("topic", topic)
    qmap = dict(existing or {})
    for qd in queue_datas:
        name = qd.get("brokerName")
        if not name or t.get("broker", name) is None:
            break
        qmap[name] = queue_data(name, qd)
    else:
        if qmap:
            t.put("topic", topic, qmap)
        return
    if existing is not None and qmap != existing:
        t.put("topic", topic, qmap)
