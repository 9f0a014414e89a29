"""A node's tables as RocketMQ's own request codes show them (the *standard view*), pure.

A NameServer that does not answer GET_NODE_SNAPSHOT is read through the codes every
release answers: GET_BROKER_CLUSTER_INFO (106) gives the ``cluster`` and ``broker``
tables, GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206) the topics, GET_ROUTEINFO_BY_TOPIC
(105) each topic's queue data (the ``topic`` table), GET_KVLIST_BY_NAMESPACE (219) the
``kv`` table of the namespaces asked for. The result has the snapshot's format
(docs/architecture.md), so the audit's rows and job are the same. ``live`` (data
versions, HA addresses) and ``filter`` have no standard request: a collection that reads
any node this way compares every node in this view (``project`` cuts a snapshot to it).

Routes cost one request per topic, so a round reads at most a budget of them:
``TopicRotation`` picks the same topics on every node, and ``TopicCache`` keeps each
node's last reading of the others (README "Auditing any NameServer").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

QUEUE_FIELDS = ("perm", "readQueueNums", "topicSysFlag", "writeQueueNums")


def cluster_tables(info: Mapping[str, Any]) -> dict[str, Any]:
    """``cluster`` and ``broker`` tables from a decoded ClusterInfo (106)."""
    brokers = {}
    for name, bd in info.get("brokerAddrTable", {}).items():
        addrs = sorted(bd.get("brokerAddrs", {}).items(), key=lambda kv: int(kv[0]))
        brokers[name] = {"cluster": bd.get("cluster"),
                         "brokerAddrs": {str(bid): addr for bid, addr in addrs}}
    clusters = {c: sorted(names) for c, names in info.get("clusterAddrTable", {}).items()}
    return {"cluster": clusters, "broker": brokers}


def route_queues(route: Mapping[str, Any]) -> dict[str, Any]:
    """One ``topic`` table entry from a decoded TopicRouteData (105): {brokerName: fields}."""
    return {qd["brokerName"]: {k: qd[k] for k in QUEUE_FIELDS}
            for qd in sorted(route.get("queueDatas", []), key=lambda q: q["brokerName"])}


def routable(queues: Mapping[str, Any], brokers: Mapping[str, Any]) -> bool:
    """A node answers a route for a topic only when one of its brokers is known (else 17)."""
    return any(name in brokers for name in queues)


def project(tables: Mapping[str, Any], namespaces: Iterable[str]) -> dict[str, Any]:
    """A snapshot's tables cut to the standard view: what 106/206/105/219 would show."""
    brokers = tables.get("broker") or {}
    kv = tables.get("kv") or {}
    return {
        "cluster": dict(tables.get("cluster") or {}),
        "broker": dict(brokers),
        "topic": {t: q for t, q in (tables.get("topic") or {}).items() if routable(q, brokers)},
        "kv": {ns: kv[ns] for ns in namespaces if kv.get(ns)},
    }


class TopicCache:
    """One node's last reading of each topic it lists: its queues, or None (no route)."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, Any] | None] = {}

    def update(self, listed: Iterable[str], fresh: Mapping[str, dict[str, Any] | None]) -> None:
        """Keep only the topics the node lists now; take this round's readings."""
        keep = set(listed)
        self.values = {t: v for t, v in self.values.items() if t in keep}
        self.values.update((t, v) for t, v in fresh.items() if t in keep)

    def clear(self) -> None:
        self.values.clear()


class TopicRotation:
    """Which topics' routes a round reads, the same on every node.

    First the topics whose reading is missing somewhere (new, or a node lists a topic
    it has no reading of) or whose set of listing nodes changed since they were last
    read, by name; then the ones read longest ago. So a change of presence is read at
    the next round and a change of content within one pass (topics / room rounds).
    """

    def __init__(self) -> None:
        self._read_at: dict[str, int] = {}
        self._seen_on: dict[str, frozenset[str]] = {}

    def pick(self, presence: Mapping[str, frozenset[str]], missing: set[str], room: int,
             round_no: int) -> list[str]:
        for gone in [t for t in self._read_at if t not in presence]:
            del self._read_at[gone], self._seen_on[gone]
        due = sorted(t for t, nodes in presence.items() if t in missing
                     or t not in self._read_at or self._seen_on[t] != nodes)
        due_set = set(due)
        rest = sorted((t for t in presence if t not in due_set),
                      key=lambda t: (self._read_at[t], t))
        chosen = (due + rest)[:max(0, room)]
        for t in chosen:
            self._read_at[t] = round_no
            self._seen_on[t] = presence[t]
        return chosen


def presence_of(listed: Mapping[str, Iterable[str]]) -> dict[str, frozenset[str]]:
    """topic → the nodes that list it, from node → listed topics."""
    out: dict[str, set[str]] = {}
    for node, topics in listed.items():
        for t in topics:
            out.setdefault(t, set()).add(node)
    return {t: frozenset(nodes) for t, nodes in out.items()}


def topic_tables(presence: Mapping[str, frozenset[str]],
                 caches: Mapping[str, TopicCache]) -> dict[str, dict[str, Any]]:
    """Each node's ``topic`` table: a topic is compared only once every node that lists it
    has a reading of it (read in the same round everywhere), so a topic not yet read
    anywhere is never mistaken for one missing on some node."""
    out: dict[str, dict[str, Any]] = {node: {} for node in caches}
    for topic, nodes in presence.items():
        if not all(topic in caches[n].values for n in nodes if n in caches):
            continue
        for n in nodes:
            value = caches[n].values.get(topic) if n in caches else None
            if value:
                out[n][topic] = value
    return out
