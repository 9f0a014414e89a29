"""Text output of the admin verbs as mqadmin prints it (``clusterList``: ``admin_cluster``,
``topicRoute``: ``admin_json``), so scripts written for mqadmin keep working.

Pure functions from decoded replies to lines; no I/O. Where mqadmin prints what it
decoded into a Java ``HashMap``, ``HashSet`` or ``Properties``, the order here is that
collection's (``cluster.core.javaorder``), not the reply's and not sorted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cluster.client.java_text import list_str
from cluster.core.javaorder import hashmap_order, properties_order

# The first four columns of 4.9.8's clusterList, for member groups (a pynamesrv verb).
MEMBER_FMT = "{:<16}  {:<22}  {:<4}  {}"
# getNameServerConfig collects the answers in a HashMap made with capacity 4.
CONFIG_MAP_CAPACITY = 4


def node_header(addr: str) -> str:
    """GetNamesrvConfigCommand's per-node header."""
    return f"============{addr}============"


def config_order(addrs: Iterable[str]) -> list[str]:
    """The nodes in the order getNamesrvConfig prints them (its HashMap's)."""
    return hashmap_order(addrs, initial=CONFIG_MAP_CAPACITY)


def config_lines(addr: str, props: Mapping[str, str]) -> list[str]:
    """One node of getNamesrvConfig: the reply read into a Properties, in its order."""
    return [node_header(addr)] + [f"{k:<50}=  {props[k]}" for k in properties_order(props)]


def topic_list(topics: Sequence[str]) -> list[str]:
    """topicList: the reply's topics as the HashSet mqadmin decodes them into holds them."""
    return hashmap_order(dict.fromkeys(topics))


def namesrv_list(namesrv: str | None) -> str:
    """updateNamesrvConfig's list: ``-n`` split at ``;`` as given, "" without ``-n``."""
    return "" if namesrv is None else list_str(namesrv.strip().split(";"))


def update_namesrv_config_done(namesrv: str | None, key: str, value: str) -> list[str]:
    return [f"update name server config success!{namesrv_list(namesrv)}", f"{key} : {value}"]


# ------------------------------------------------------------- broker perms


def perm_line(verb: str, broker: str, addr: str, count: int | None) -> str:
    """WipeWritePermSubCommand / AddWritePermSubCommand; ``count`` None = failed."""
    head = f"{verb} write perm of broker[{broker}] in name server[{addr}]"
    return f"{head} Failed" if count is None else f"{head} OK, {count}"


# ------------------------------------------------------------------ topics

# CommandUtil's message when deleteTopic's cluster is unknown; printed without a line end.
NO_CLUSTER = ("[error] Make sure the specified clusterName exists or the name server "
              "connected to is correct.")


def delete_topic_brokers_done(topic: str, cluster: str) -> str:
    return f"delete topic [{topic}] from cluster [{cluster}] success."


def delete_topic_done(topic: str) -> str:
    """DeleteTopicSubCommand's NameServer line."""
    return f"delete topic [{topic}] from NameServer success."


def cluster_masters(info: Mapping[str, Any], cluster: str) -> list[str] | None:
    """The master (id 0) addresses of the cluster's brokers; None: no such cluster."""
    names = (info.get("clusterAddrTable") or {}).get(cluster)
    if names is None:
        return None
    brokers = info.get("brokerAddrTable") or {}
    masters = []
    for name in names:
        addrs = {int(k): v for k, v in ((brokers.get(name) or {}).get("brokerAddrs")
                                        or {}).items()}
        if addrs.get(0):
            masters.append(addrs[0])
    return hashmap_order(dict.fromkeys(masters))


def topic_clusters(route: Mapping[str, Any], info: Mapping[str, Any]) -> list[str]:
    """topicClusterList: the clusters holding the route's first broker, as mqadmin's
    HashSet holds them; [] when the route has no broker (mqadmin fails there)."""
    brokers = route.get("brokerDatas") or []
    if not brokers:
        return []
    name = brokers[0].get("brokerName")
    clusters = info.get("clusterAddrTable") or {}
    return hashmap_order(c for c in hashmap_order(clusters) if name in (clusters[c] or ()))


# ------------------------------------------------------------ member group


def member_group_lines(cluster: str, broker: str, addrs: Mapping[int, str]) -> list[str]:
    lines = [MEMBER_FMT.format("#Cluster Name", "#Broker Name", "#BID", "#Addr")]
    lines += [MEMBER_FMT.format(cluster, broker, bid, addrs[bid]) for bid in sorted(addrs)]
    return lines


def per_node(sections: Iterable[tuple[str, list[str]]]) -> list[str]:
    """Sections of several nodes, each under ``node_header``."""
    out: list[str] = []
    for addr, lines in sections:
        out.append(node_header(addr))
        out.extend(lines)
    return out
