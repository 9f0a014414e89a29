"""Read-only route queries (RouteInfoManager's getters), each within the caller's transaction.

Route pickup, cluster info, the topic lists and broker member groups; the
writes and housekeeping are in `state.route`.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from cluster.core.javaorder import hashmap_order
from state.route import java_order, public_broker_data
from state.store import Txn

FLAG_UNIT = 1  # TopicSysFlag bits
FLAG_UNIT_SUB = 2


def pickup_topic_route_data(t: Txn, topic: str, memo: dict[str, Any] | None = None
                            ) -> dict[str, Any] | None:
    """TopicRouteData of `topic` (without orderTopicConf), or None when it has no live broker.

    `memo` (broker name → entry) may carry broker entries between calls of the
    same store generation; the returned BrokerData objects are then shared.
    """
    qmap = t.get("topic", topic)
    if not qmap:
        return None
    memo = {} if memo is None else memo
    broker_datas = []
    filters: dict[str, list[str]] = {}
    for name in qmap:
        entry = memo.get(name)
        if entry is None:
            entry = memo[name] = _broker_entry(t, name)
        if entry:
            broker_datas.append(entry[0])
            filters.update(entry[1])
    if not broker_datas:
        return None
    return {"brokerDatas": broker_datas, "filterServerTable": filters,
            "orderTopicConf": None, "queueDatas": list(qmap.values())}


def _broker_entry(t: Txn, name: str) -> tuple[dict[str, Any], dict[str, list[str]]] | tuple[()]:
    """(public BrokerData, filter servers of its addresses), or () for an unknown broker."""
    bd = t.get("broker", name)
    if bd is None:
        return ()
    filters = {}
    for addr in bd["brokerAddrs"].values():
        fs = t.get("filter", addr)
        if fs:
            filters[addr] = fs
    return public_broker_data(bd), filters


def cluster_info(t: Txn) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """(brokerAddrTable, clusterAddrTable) in Java HashMap order."""
    brokers = dict(t.items("broker"))
    clusters = dict(t.items("cluster"))
    bat = {n: public_broker_data(brokers[n]) for n in java_order(t, "broker", brokers)}
    cat = {c: hashmap_order(clusters[c]) for c in java_order(t, "cluster", clusters)}
    return bat, cat


def all_topics(t: Txn) -> list[str]:
    return hashmap_order(t.keys("topic"))


def topics_by_cluster(t: Txn, cluster: str) -> list[str]:
    names = set(t.get("cluster", cluster) or ())
    if not names:
        return []
    return hashmap_order(topic for topic, qmap in t.items("topic") if names.intersection(qmap))


def system_topics(t: Txn) -> tuple[list[str], str | None]:
    """Every cluster name and the broker names of its set (clusterAddrTable), plus the first
    address of the first broker."""
    brokers = dict(t.items("broker"))
    names: set[str] = set()
    for cluster, members in t.items("cluster"):
        names.add(cluster)
        names.update(members)
    first_addr = None
    for name in java_order(t, "broker", brokers):
        addrs = public_broker_data(brokers[name])["brokerAddrs"]
        if addrs:
            first_addr = next(iter(addrs.values()))
            break
    return hashmap_order(names), first_addr


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


def unit_topics(t: Txn, which: UnitList) -> list[str]:
    """Topics whose first QueueData has the topicSysFlag of list `which`."""
    keep = _UNIT_FILTERS[which]
    out = [topic for topic, qmap in t.items("topic")
           if qmap and keep(_first_queue_data(qmap)["topicSysFlag"])]
    return hashmap_order(out)


def _first_queue_data(qmap: dict[str, Any]) -> dict[str, Any]:
    """The QueueData Java's HashMap (keyed by broker name) iterates first."""
    if len(qmap) == 1:
        return next(iter(qmap.values()))
    return qmap[hashmap_order(qmap)[0]]


def broker_member_group(t: Txn, name: str) -> dict[int, str]:
    bd = t.get("broker", name)
    return public_broker_data(bd)["brokerAddrs"] if bd else {}
