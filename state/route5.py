"""RouteInfoManager's 5.x registration and unregistration rules (node setting
``rocketmqVersion`` 5.5.0); the shared tables and 4.9.8's rules are in `state.route`.

What 5.x does differently, and is followed here:

* The live and filter tables are keyed by (cluster, address) (`state.live`); a
  registration's ``heartbeatTimeoutMillis`` is that broker's expiry timeout.
* BrokerData carries ``enableActingMaster`` (a 5.x broker sends the header field; a 4.9
  broker does not, and is an "old version broker") and ``zoneName`` (``__ZONE_NAME``).
* A registration naming a broker id whose slot holds another address is ignored when the
  live entry of that address has a higher ``stateVersion``; a registration of exactly
  one topic for a broker id not registered yet is refused (a 5.x broker registers a
  single new topic that way, and must not register it before its whole table).
* The master, or the "prime slave" (the lowest id of a 5.x group without its master),
  applies its topic table: every topic on a first registration or a new DataVersion,
  else only the topics lacking this broker. A prime slave of a group with acting master
  enabled applies them without write permission. ``deleteTopicWithBrokerRegistration``
  drops the topics the table lacks. Static-topic mapping infos are kept per topic.
* Unregistration removes the address from its BrokerData under any id; a group left
  without its master loses write permission where acting master is enabled.

5.x queues unregistrations (BatchUnregistrationService) and applies them later without
looking again, so a broker that re-registered in between is wiped
(apache/rocketmq#11043). Here a batch of unregistrations decided from the live table
(expiry, a closed connection) carries each entry's `Fence`, and `apply_unregistrations`
skips an entry that was registered again since: none can be lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from state import live, nsconfig
from state.applied import (
    TopicTable,
    already_applied,
    apply_read_only,
    apply_topic_table,
    forget_applied,
    last_applied,
    put_missing_queues,
    put_missing_table,
    topic_count,
)
from state.route import (
    PERM_WRITE,
    _add_to_cluster,
    remove_queue_datas,
)
from state.store import Store, Txn, dumps
from state.tableorder import hm_added, hm_removed, java_order

MASTER = "0"


def data_version(dv: Mapping[str, Any] | None) -> dict[str, int]:
    """A DataVersion as 5.x holds it: counter, stateVersion (0 when absent), timestamp."""
    dv = dv or {}
    return {"counter": int(dv.get("counter") or 0),
            "stateVersion": int(dv.get("stateVersion") or 0),
            "timestamp": int(dv.get("timestamp") or 0)}


def dv_equal(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """DataVersion.equals: stateVersion, timestamp and counter."""
    return a is not None and b is not None and data_version(a) == data_version(b)


@dataclass(slots=True)
class Registration:
    """One REGISTER_BROKER request of a 5.x node, its body decoded as far as needed."""

    cluster: str
    addr: str
    name: str
    broker_id: int
    ha_addr: str | None
    data_version: dict[str, int]
    table: TopicTable
    filters: list[str] | None
    channel: str
    zone: str | None = None
    timeout: int | None = None
    acting: bool | None = None  # None: the header field is absent (a 4.9 broker)
    mappings: dict[str, dict[str, Any]] = field(default_factory=dict)  # topic → mapping info


# ---------------------------------------------------------------- registration


def register_broker(t: Txn, reg: Registration, now: int, delete_missing: bool = False
                    ) -> dict[str, str | None] | None:
    """5.x registerBroker: {"haServerAddr", "masterAddr"} (None unless a live master), {}
    when a stale registration is ignored, None when it is refused (single topic first)."""
    _add_to_cluster(t, reg.cluster, reg.name)
    bd, created = _broker_data(t, reg)
    addrs: dict[str, str] = {k: v for k, v in bd["brokerAddrs"].items()
                             if not (v == reg.addr and k != str(reg.broker_id))}
    bd["brokerAddrs"] = addrs
    bid = str(reg.broker_id)
    if _stale(t, reg, addrs.get(bid)):
        _put_broker_data(t, bd, created)
        live.remove(t, live.key(reg.cluster, reg.addr, True))
        return {}
    if bid not in addrs and topic_count(t, reg.name, reg.table) == 1:
        _put_broker_data(t, bd, created)
        return None
    first = created or not addrs.get(bid)
    addrs[bid] = reg.addr
    bd["brokerAddrs"] = dict(sorted(addrs.items(), key=lambda kv: int(kv[0])))
    _put_broker_data(t, bd, created)
    _apply_table(t, reg, bd, first, delete_missing)
    lkey = live.key(reg.cluster, reg.addr, True)
    live.put(t, lkey, {"lastUpdateTimestamp": now, "dataVersion": reg.data_version,
                       "channel": reg.channel, "haServerAddr": reg.ha_addr}, reg.timeout)
    if reg.filters is not None:
        if reg.filters:
            t.put("filter", lkey, list(reg.filters))
        else:
            t.delete("filter", lkey)
    return _master_of(t, reg.cluster, bd, reg.broker_id)


def _broker_data(t: Txn, reg: Registration) -> tuple[dict[str, Any], bool]:
    """The BrokerData of `reg`'s name (a new one when absent) with the registration's
    acting-master flag and zone; whether it is new."""
    bd = t.get("broker", reg.name)
    first = bd is None
    if bd is None:
        bd = {"brokerAddrs": {}, "brokerName": reg.name, "cluster": reg.cluster}
    bd["enableActingMaster"] = bool(reg.acting)
    if reg.zone is None:
        bd.pop("zoneName", None)
    else:
        bd["zoneName"] = reg.zone
    return bd, first


def _put_broker_data(t: Txn, bd: dict[str, Any], created: bool) -> None:
    t.put("broker", bd["brokerName"], bd)
    if created:
        hm_added(t, "broker", bd["brokerName"])


def _stale(t: Txn, reg: Registration, old_addr: str | None) -> bool:
    """Another address holds this id and its live entry has a higher stateVersion."""
    if old_addr is None or old_addr == reg.addr:
        return False
    old = t.get("live", live.key(reg.cluster, old_addr, True))
    if old is None:
        return False
    return data_version(old["dataVersion"])["stateVersion"] > reg.data_version["stateVersion"]


def is_prime_slave(reg: Registration, addrs: Mapping[str, str]) -> bool:
    """A 5.x slave holding the lowest id of its group (whose master is absent)."""
    return (reg.acting is not None and reg.broker_id != 0
            and reg.broker_id == min(int(k) for k in addrs))


def _apply_table(t: Txn, reg: Registration, bd: dict[str, Any], first: bool,
                 delete_missing: bool) -> None:
    prime = is_prime_slave(reg, bd["brokerAddrs"])
    if reg.broker_id != 0 and not prime:
        return
    entry = t.get("live", live.key(reg.cluster, reg.addr, True))
    changed = entry is None or not dv_equal(entry["dataVersion"], reg.data_version)
    if delete_missing and not reg.mappings:
        _delete_missing(t, reg.name, reg.table)
    if prime and bd["enableActingMaster"]:
        if first or changed:
            apply_read_only(t, reg.name, reg.table.queues())
        else:
            put_missing_queues(t, reg.name, reg.table.queues(), read_only=True)
    elif first or changed:
        apply_topic_table(t, reg.name, reg.table)
    elif not already_applied(t, reg.name, reg.table):
        put_missing_table(t, reg.name, reg.table)
    if first or changed:
        for topic, info in reg.mappings.items():
            infos = t.get("mapping", topic) or {}
            infos[str(info.get("bname"))] = info
            t.put("mapping", topic, infos)


def _delete_missing(t: Txn, name: str, table: TopicTable) -> None:
    """deleteTopicWithBrokerRegistration: `name` leaves the topics its table lacks."""
    keep = table.queues()
    gone = [topic for topic in topics_holding(t, name) if topic not in keep]
    for topic in gone:
        qmap = t.get("topic", topic)
        del qmap[name]
        if qmap:
            t.put("topic", topic, qmap)
        else:
            t.delete("topic", topic)


def topics_holding(t: Txn, name: str) -> list[str]:
    """The topics with a QueueData of broker `name` (values without the name as a key are
    passed over undecoded)."""
    mark = dumps(name) + b":"
    return [topic for topic, raw in t.items_raw("topic")
            if mark in raw and name in orjson.loads(raw)]


def _master_of(t: Txn, cluster: str, bd: dict[str, Any], broker_id: int
               ) -> dict[str, str | None]:
    result: dict[str, str | None] = {"haServerAddr": None, "masterAddr": None}
    if broker_id == 0:
        return result
    master = bd["brokerAddrs"].get(MASTER)
    entry = t.get("live", live.key(cluster, master, True)) if master else None
    if entry is not None:
        result = {"haServerAddr": entry.get("haServerAddr"), "masterAddr": master}
    return result


def decode_ahead(store: Store, reg: Registration) -> None:
    """The registration's costly part before the write lock: the topic table decoded now
    when `register_broker` will read it whole; left undecoded when the stored records show
    it unchanged or to be read piece by piece (its pieces compared here)."""
    with store.read() as t:
        if not needs_topic_queues(t, reg):
            return
    reg.table.queues()


def needs_topic_queues(t: Txn, reg: Registration) -> bool:
    """Whether `register_broker`, run on this state, would decode the topic table whole (so
    the caller decodes it before taking the write lock). A master applying a table that
    differs from the one its name applied last in a few pieces reads only those
    (`apply_topic_table`, the pieces compared here); deleteTopicWithBrokerRegistration and a
    prime slave of a group with acting master read the whole table."""
    if reg.broker_id != 0:
        if reg.acting is None:
            return False  # a 4.9 slave applies nothing
        bd = t.get("broker", reg.name)
        addrs = {k: v for k, v in (bd["brokerAddrs"] if bd else {}).items() if v != reg.addr}
        if not is_prime_slave(reg, {**addrs, str(reg.broker_id): reg.addr}):
            return False
        if reg.acting:
            return True
    if not reg.mappings and nsconfig.get_bool(t, "deleteTopicWithBrokerRegistration"):
        return True
    if already_applied(t, reg.name, reg.table):
        return False
    applied = last_applied(t, reg.name)
    return applied is None or reg.table.diff(applied) is None


# ---------------------------------------------------------------- unregistration


@dataclass(frozen=True, slots=True)
class Fence:
    """What the live entry looked like when its unregistration was decided."""

    channel: str | None
    last_update: int


@dataclass(frozen=True, slots=True)
class Unregistration:
    """One broker to unregister; `fence` set when decided from its live entry (expiry, a
    closed connection), None for an UNREGISTER_BROKER request."""

    cluster: str
    addr: str
    name: str | None
    fence: Fence | None = None


def apply_unregistrations(t: Txn, batch: Iterable[Unregistration]) -> list[str]:
    """5.x unRegisterBroker over a batch, in one pass over the topic table; returns the
    addresses unregistered. A fenced entry whose broker registered again since (its live
    entry changed) is skipped."""
    removed: set[str] = set()
    reduced: set[str] = set()
    done = []
    for req in batch:
        if not _still(t, req):
            continue
        done.append(req.addr)
        live.remove(t, live.key(req.cluster, req.addr, True))
        if req.name is not None:  # 5.x fails on a null name after the live entry went
            (removed if _drop_addr(t, req, req.name) else reduced).add(req.name)
    remove_queue_datas(t, removed)
    _wipe_without_master(t, reduced - removed)
    return done


def _still(t: Txn, req: Unregistration) -> bool:
    if req.fence is None:
        return True
    entry = t.get("live", live.key(req.cluster, req.addr, True))
    return entry is not None and Fence(entry.get("channel"),
                                       entry["lastUpdateTimestamp"]) == req.fence


def _drop_addr(t: Txn, req: Unregistration, name: str) -> bool:
    """Remove the address from its BrokerData under any id; True when the name is gone."""
    bd = t.get("broker", name)
    if bd is None:
        return False
    bd["brokerAddrs"] = {k: v for k, v in bd["brokerAddrs"].items() if v != req.addr}
    if bd["brokerAddrs"]:
        t.put("broker", name, bd)
        return False
    t.delete("broker", name)
    hm_removed(t, "broker", name)
    names = t.get("cluster", req.cluster)
    if names is not None and name in names:
        rest = [n for n in names if n != name]
        if rest:
            t.put("cluster", req.cluster, rest)
        else:
            t.delete("cluster", req.cluster)
            hm_removed(t, "cluster", req.cluster)
    forget_applied(t, name)
    return True


def _wipe_without_master(t: Txn, names: set[str]) -> None:
    """Groups still present but without their master lose write permission where acting
    master is enabled."""
    wipe = set()
    for name in names:
        bd = t.get("broker", name)
        if bd is not None and bd.get("enableActingMaster") and _no_master(bd):
            wipe.add(name)
    if not wipe:
        return
    for topic, qmap in list(t.items("topic")):
        hit = wipe.intersection(qmap)
        if hit:
            for name in hit:
                qmap[name]["perm"] &= ~PERM_WRITE
            t.put("topic", topic, qmap)


def _no_master(bd: Mapping[str, Any]) -> bool:
    addrs = bd["brokerAddrs"]
    return not addrs or min(int(k) for k in addrs) > 0


def unregistration_of(t: Txn, live_key: str) -> Unregistration | None:
    """setupUnRegisterRequest for a live entry: the BrokerData of its cluster holding its
    address (the first in Java's order), fenced by the entry; None when none holds it."""
    cluster, addr = live.cluster_of(live_key), live.addr_of(live_key)
    entry = t.get("live", live_key)
    if cluster is None or entry is None:
        return None
    holders = {name: bd for name, bd in t.items("broker")
               if bd["cluster"] == cluster and addr in bd["brokerAddrs"].values()}
    for name in java_order(t, "broker", holders):
        return Unregistration(cluster, addr, name,
                              Fence(entry.get("channel"), entry["lastUpdateTimestamp"]))
    return None


def channel_unregistrations(t: Txn, channel: str) -> list[Unregistration]:
    """The unregistrations a closed connection asks for: every broker registered over it."""
    found = (unregistration_of(t, k) for k in t.get("channel", channel) or ())
    return [u for u in found if u is not None]


def expired_unregistrations(t: Txn, now: int, timeout_ms: int) -> list[Unregistration]:
    found = (unregistration_of(t, k) for k in live.expired(t, now, timeout_ms))
    return [u for u in found if u is not None]


# ---------------------------------------------------------------- heartbeats


def query_data_version(t: Txn, cluster: str, addr: str, dv: Mapping[str, Any] | None,
                       now: int) -> tuple[bool, dict[str, Any] | None]:
    """(changed, stored DataVersion); the heartbeat is refreshed either way (5.x)."""
    lkey = live.key(cluster, addr, True)
    entry = t.get("live", lkey)
    stored = entry["dataVersion"] if entry else None
    changed = entry is None or not dv_equal(stored, dv)
    live.touch(t, lkey, now)
    return changed, stored


def broker_heartbeat(t: Txn, cluster: str, addr: str, now: int) -> bool:
    return live.touch(t, live.key(cluster, addr, True), now)
