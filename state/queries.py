"""Read-only route queries (RouteInfoManager's getters), each within the caller's transaction.

Route pickup, cluster info, the topic lists and broker member groups; the
writes and housekeeping are in `state.route`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any, Final

import orjson

from cluster.core.javaorder import (
    concurrent_capacity,
    concurrent_order,
    hashmap_order,
    java_hash,
)
from state import live, nsconfig
from state.route import public_broker_data
from state.store import Txn
from state.tableorder import java_order

FLAG_UNIT = 1  # TopicSysFlag bits
FLAG_UNIT_SUB = 2


def pickup_topic_route_data(t: Txn, topic: str, memo: dict[str, Any] | None = None,
                            five: bool = False) -> dict[str, Any] | None:
    """TopicRouteData of `topic` (without orderTopicConf), or None when it has no live broker.

    Queue and broker datas come in the order of Java's HashMap of broker names. `memo`
    (broker name → entry) may carry broker entries between calls of the same store
    generation; the returned BrokerData objects are then shared. `five`: filter servers
    keyed by (cluster, address), and the topic's static-topic mapping infos.
    """
    qmap = t.get("topic", topic)
    if not qmap:
        return None
    memo = {} if memo is None else memo
    names = hashmap_order(qmap) if len(qmap) > 1 else list(qmap)
    broker_datas = []
    filters: dict[str, list[str]] = {}
    for name in names:
        entry = memo.get(name)
        if entry is None:
            entry = memo[name] = _broker_entry(t, name, five)
        if entry:
            broker_datas.append(entry[0])
            filters.update(entry[1])
    if not broker_datas:
        return None
    if len(filters) > 1:  # a HashMap of addresses
        filters = {a: filters[a] for a in hashmap_order(filters)}
    route = {"brokerDatas": broker_datas, "filterServerTable": filters,
             "orderTopicConf": None, "queueDatas": [qmap[n] for n in names]}
    mapping = t.get("mapping", topic) if five else None
    if mapping is not None:
        route["topicQueueMappingByBroker"] = {n: mapping[n] for n in hashmap_order(mapping)}
    return route


def route_key(t: Txn, topic: str, five: bool = False) -> bytes | str | None:
    """What `topic`'s route is made of besides its brokers' entries: the group of its stored
    queue datas, which every topic of the group shares (``state.topicsets``: their routes
    are equal), or the topic itself when a 5.x static-topic mapping is in its route; None
    when the topic is absent."""
    ref = t.topics.ref(topic.encode())
    if ref is None:
        return None
    return topic if five and t.get_raw("mapping", topic) is not None else ref


# `shared_route` of a topic the store does not hold (a group's key is 8 bytes)
ABSENT: Final = b""


def shared_route(t: Txn, topic: str, five: bool = False) -> bytes | None:
    """The group of `topic`'s stored queue datas when every request's route reply for it is
    the one for any other topic of that group (only the opaque differs); ``ABSENT`` when the
    topic is absent (every request's reply is TOPIC_NOT_EXIST, the same for every absent
    topic but for the name its remark gives); else None: its route has a part of its own
    (a 5.x static-topic mapping, an order config, the no-acting-masters rule of a sync
    topic), or a read's answer depends on its signature (ACL on reads)."""
    return topic_group(t, topic, five) if routes_shareable(t) else None


def routes_shareable(t: Txn) -> bool:
    """Whether the node's settings let topics share route replies (no order configs in
    them, no ACL on reads); a change of them is a new store generation."""
    return not (nsconfig.get_bool(t, "orderMessageEnable") or (
        nsconfig.get_bool(t, "aclEnable") and nsconfig.get_bool(t, "aclReadsToo")))


def topic_group(t: Txn, topic: str, five: bool = False) -> bytes | None:
    """`shared_route` of `topic` where `routes_shareable` holds."""
    shared = route_key(t, topic, five)
    if shared is None:
        return ABSENT
    if not isinstance(shared, bytes) or not shows_acting_masters(topic):
        return None
    return shared


def _broker_entry(t: Txn, name: str, five: bool
                  ) -> tuple[dict[str, Any], dict[str, list[str]]] | tuple[()]:
    """(public BrokerData, filter servers of its addresses), or () for an unknown broker."""
    bd = t.get("broker", name)
    if bd is None:
        return ()
    filters = {}
    for addr in bd["brokerAddrs"].values():
        fs = t.get("filter", live.key(bd["cluster"], addr, five))
        if fs:
            filters[addr] = fs
    return public_broker_data(bd), filters


SYNC_BROKER_MEMBER_GROUP_PREFIX = "rmq_sys_SYNC_BROKER_MEMBER_"  # TopicValidator
PERM_WRITE = 2


def shows_acting_masters(topic: str) -> bool:
    """Whether `topic`'s route may show acting masters (a broker-member sync topic's never)."""
    return not topic.startswith(SYNC_BROKER_MEMBER_GROUP_PREFIX)


def with_acting_masters(route: dict[str, Any], topic: str) -> dict[str, Any]:
    """5.x with supportActingMaster: a group without its master whose QueueData of this topic
    is not writeable shows its lowest-id broker as id 0 (a copy; `route` is unchanged)."""
    if not shows_acting_masters(topic):
        return route
    datas = route["brokerDatas"]
    if not any(bd["brokerAddrs"] and 0 not in bd["brokerAddrs"] for bd in datas):
        return route
    perms: dict[str, int] = {}
    for qd in route["queueDatas"]:
        perms.setdefault(qd["brokerName"], qd["perm"])
    out = []
    for bd in datas:
        addrs = bd["brokerAddrs"]
        acting = (addrs and 0 not in addrs and bd.get("enableActingMaster")
                  and bd["brokerName"] in perms and not perms[bd["brokerName"]] & PERM_WRITE)
        if acting:
            lowest = min(addrs)
            rest = {k: v for k, v in addrs.items() if k != lowest}
            bd = {**bd, "brokerAddrs": dict(sorted({**rest, 0: addrs[lowest]}.items()))}
        out.append(bd)
    return {**route, "brokerDatas": out}


def zone_filtered(route: dict[str, Any], zone: str) -> dict[str, Any]:
    """ZoneRouteRPCHook: keep the groups of `zone` (case-insensitive) and those whose master
    is gone; their queue datas and filter servers with them."""
    kept: list[dict[str, Any]] = []
    gone: list[dict[str, Any]] = []
    for bd in route["brokerDatas"]:
        master_gone = bd["brokerAddrs"].get(0) is None
        same = (bd.get("zoneName") or "").lower() == zone.lower() and "zoneName" in bd
        (kept if master_gone or same else gone).append(bd)
    gone_names = {bd["brokerName"] for bd in gone}
    gone_addrs = {a for bd in gone for a in bd["brokerAddrs"].values()}
    return {**route, "brokerDatas": kept,
            "queueDatas": [q for q in route["queueDatas"] if q["brokerName"] not in gone_names],
            "filterServerTable": {a: f for a, f in route["filterServerTable"].items()
                                  if a not in gone_addrs}}


def cluster_info(t: Txn) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """(brokerAddrTable, clusterAddrTable) in Java HashMap order."""
    brokers = dict(t.items("broker"))
    clusters = dict(t.items("cluster"))
    bat = {n: public_broker_data(brokers[n]) for n in java_order(t, "broker", brokers)}
    cat = {c: hashmap_order(clusters[c]) for c in java_order(t, "cluster", clusters)}
    return bat, cat


# A 5.x TopicList holds a ConcurrentHashMap key set (4.9: a HashSet), filled in the
# iteration order of topicQueueTable, a ConcurrentHashMap created with 1024 (4.9: a HashMap).
TOPIC_TABLE_BINS = concurrent_capacity(1024)


def _topic_list(topics: Iterable[str], five: bool, spreads: dict[str, int] | None = None
                ) -> list[str]:
    """`topics` (in topicQueueTable's order) in the order Java's TopicList prints them;
    ``spreads`` as :func:`_table_order` filled it for them."""
    return concurrent_order(topics, spreads=spreads) if five \
        else hashmap_order(dict.fromkeys(topics), java_hash)


def _table_order(topics: list[str], five: bool, spreads: dict[str, int] | None = None
                 ) -> list[str]:
    """`topics` (in key order) in topicQueueTable's iteration order (5.x; 4.9: key order,
    which the TopicList's HashSet reorders anyway). Their hashes go into ``spreads``, for
    the TopicList made of them next."""
    return concurrent_order(topics, TOPIC_TABLE_BINS, spreads) if five else topics


def _topic_table(t: Txn, five: bool) -> list[tuple[str, Any]]:
    """(topic, queue datas) in topicQueueTable's iteration order."""
    qmaps = dict(t.items("topic"))
    return [(topic, qmaps[topic]) for topic in _table_order(list(qmaps), five)]


def all_topics(t: Txn, five: bool = False) -> list[str]:
    spreads: dict[str, int] = {}
    topics = [topic for topic, _ in t.items_raw("topic")]
    return _topic_list(_table_order(topics, five, spreads), five, spreads)


def topics_by_cluster(t: Txn, cluster: str, five: bool = False) -> list[str]:
    """Java adds, for each broker name of the cluster (in its set's order), every topic of
    topicQueueTable (in its order) that the broker carries, so a topic's place is that of
    its first add. Found in one pass over the table, each distinct stored value decoded
    once (the topics of a group share its bytes, ``state.topicsets``), not a pass a broker."""
    rank = {name: i for i, name in enumerate(hashmap_order(t.get("cluster", cluster) or ()))}
    if not rank:
        return []
    ranks: dict[bytes | memoryview, int | None] = {}
    first: dict[str, int] = {}  # topic -> rank of the first of the cluster's brokers on it
    topics: list[str] = []
    for topic, raw in t.items_raw("topic"):
        topics.append(topic)
        if raw not in ranks:
            ranks[raw] = min((rank[n] for n in orjson.loads(raw) if n in rank), default=None)
        r = ranks[raw]
        if r is not None:
            first[topic] = r
    spreads: dict[str, int] = {}
    adds = sorted((topic for topic in _table_order(topics, five, spreads) if topic in first),
                  key=first.__getitem__)
    return _topic_list(adds, five, spreads)


def system_topics(t: Txn, five: bool = False) -> tuple[list[str], str | None]:
    """Every cluster name and the broker names of its set (clusterAddrTable), plus the first
    address of the first broker."""
    brokers = dict(t.items("broker"))
    clusters = dict(t.items("cluster"))
    names: list[str] = []
    for cluster in java_order(t, "cluster", clusters):
        names.append(cluster)
        names.extend(hashmap_order(clusters[cluster]))
    first_addr = None
    for name in java_order(t, "broker", brokers):
        addrs = public_broker_data(brokers[name])["brokerAddrs"]
        if addrs:
            first_addr = next(iter(addrs.values()))
            break
    return _topic_list(dict.fromkeys(names), five), first_addr


class UnitList(Enum):
    """Which unit topic list: topics whose topicSysFlag is a unit topic, has a unit
    subscription, or has a unit subscription without being a unit topic."""

    UNIT = "unit"
    HAS_UNIT_SUB = "has unit sub"
    HAS_UNIT_SUB_UNUNIT = "has unit sub, ununit"


_UNIT_FILTERS: dict[UnitList, Callable[[int], bool]] = {
    UnitList.UNIT: lambda f: bool(f & FLAG_UNIT),
    UnitList.HAS_UNIT_SUB: lambda f: bool(f & FLAG_UNIT_SUB),
    UnitList.HAS_UNIT_SUB_UNUNIT: lambda f: bool(f & FLAG_UNIT_SUB) and not f & FLAG_UNIT,
}


def unit_topics(t: Txn, which: UnitList, five: bool = False) -> list[str]:
    """Topics whose first QueueData has the topicSysFlag of list `which`."""
    keep = _UNIT_FILTERS[which]
    out = [topic for topic, qmap in _topic_table(t, five)
           if qmap and keep(_first_queue_data(qmap)["topicSysFlag"])]
    return _topic_list(out, five)


def _first_queue_data(qmap: dict[str, Any]) -> dict[str, Any]:
    """The QueueData Java's HashMap (keyed by broker name) iterates first."""
    if len(qmap) == 1:
        return next(iter(qmap.values()))
    first: dict[str, Any] = qmap[hashmap_order(qmap)[0]]
    return first


def broker_member_group(t: Txn, name: str) -> dict[int, str]:
    bd = t.get("broker", name)
    return public_broker_data(bd)["brokerAddrs"] if bd else {}
