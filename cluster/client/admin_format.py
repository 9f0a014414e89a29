"""Text output of the admin verbs, in ``mqadmin`` 4.9.8's formats so scripts keep working.

Pure functions from decoded replies to lines; no I/O. Where mqadmin iterates a
Java hash map the order here is sorted (clusters, broker names, ids, keys).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from cluster.core.clock import wall_ms

# ClusterListSubCommand.printClusterBaseInfo
BASE_FMT = "{:<16}  {:<22}  {:<4}  {:<22} {:<16} {:>19} {:>19} {:>10} {:>5} {:>6}"
BASE_HEAD = ("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
             "#OutTPS(LOAD)", "#PCWait(ms)", "#Hour", "#SPACE")
# ClusterListSubCommand.printClusterMoreStats
MORE_FMT = "{:<16}  {:<32} {:>14} {:>14} {:>14} {:>14}"
MORE_HEAD = ("#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest",
             "#InTotalToday", "#OutTotalToday")
# The first four columns of the base layout, for member groups.
MEMBER_FMT = "{:<16}  {:<22}  {:<4}  {}"


def node_header(addr: str) -> str:
    """GetNamesrvConfigCommand's per-node header."""
    return f"============{addr}============"


def config_lines(addr: str, props: Mapping[str, str]) -> list[str]:
    return [node_header(addr)] + [f"{k:<50}=  {props[k]}" for k in sorted(props)]


def java_list(items: Sequence[str]) -> str:
    """``List.toString()``: ``[a, b]``."""
    return "[" + ", ".join(items) + "]"


# ------------------------------------------------------------- broker perms


def perm_line(verb: str, broker: str, addr: str, count: int | None) -> str:
    """WipeWritePermSubCommand / AddWritePermSubCommand; ``count`` None = failed."""
    head = f"{verb} write perm of broker[{broker}] in name server[{addr}]"
    return f"{head} Failed" if count is None else f"{head} OK, {count}"


# ------------------------------------------------------------------ topics


def delete_topic_node_line(topic: str, addr: str, ok: bool) -> str:
    state = "OK" if ok else "Failed"
    return f"delete topic [{topic}] in name server[{addr}] {state}"


def delete_topic_done(topic: str) -> str:
    """DeleteTopicSubCommand's NameServer line."""
    return f"delete topic [{topic}] from NameServer success."


def topic_clusters(route: Mapping[str, Any], info: Mapping[str, Any]) -> list[str]:
    """Clusters holding any broker that serves the topic (mqadmin looks at the first only)."""
    names = {b.get("brokerName") for b in route.get("brokerDatas") or []}
    clusters = info.get("clusterAddrTable") or {}
    return sorted(c for c, brokers in clusters.items() if names & set(brokers or ()))


# ------------------------------------------------------------ cluster list


def broker_rows(info: Mapping[str, Any]) -> list[tuple[str, str, int, str]]:
    """``(cluster, broker name, broker id, address)`` in printing order."""
    rows = []
    brokers = info.get("brokerAddrTable") or {}
    for cluster, names in sorted((info.get("clusterAddrTable") or {}).items()):
        for name in sorted(names or ()):
            bd = brokers.get(name)
            if bd is None:
                continue
            addrs = bd.get("brokerAddrs") or {}
            for bid in sorted(addrs, key=int):
                rows.append((cluster, name, int(bid), addrs[bid]))
    return rows


def _first_float(text: str | None) -> float:
    try:
        return float((text or "").split(" ")[0])
    except ValueError:
        return 0.0


def _load(tps: str | None, queue: str | None, wait: str | None) -> str:
    return f"{_first_float(tps):9.2f}({queue or ''},{wait or ''}ms)"


def base_line(row: tuple[str, str, int, str], stats: Mapping[str, str] | None,
              now_ms: int | None = None) -> str:
    """One broker of ``clusterList``; ``stats`` is its runtime KVTable (None: unreachable)."""
    s = stats or {}
    now = wall_ms() if now_ms is None else now_ms
    hour = 0.0
    if s.get("earliestMessageTimeStamp"):
        hour = (now - int(s["earliestMessageTimeStamp"])) / 1000.0 / 60.0 / 60.0
    space = float(s["commitLogDiskRatio"]) if s.get("commitLogDiskRatio") else 0.0
    cluster, name, bid, addr = row
    return BASE_FMT.format(
        cluster, name, bid, addr, s.get("brokerVersionDesc", ""),
        _load(s.get("putTps"), s.get("sendThreadPoolQueueSize"),
              s.get("sendThreadPoolQueueHeadWaitTimeMills")),
        _load(s.get("getTransferedTps"), s.get("pullThreadPoolQueueSize"),
              s.get("pullThreadPoolQueueHeadWaitTimeMills")),
        s.get("pageCacheLockTimeMills", ""), f"{hour:2.2f}", f"{space:.4f}")


def _delta(s: Mapping[str, str], later: str, earlier: str) -> int:
    try:
        return int(s[later]) - int(s[earlier])
    except (KeyError, ValueError):
        return 0


def more_line(row: tuple[str, str, int, str], stats: Mapping[str, str] | None) -> str:
    """One broker of ``clusterList -m``: message totals of yesterday and today."""
    s = stats or {}
    return MORE_FMT.format(
        row[0], row[1],
        _delta(s, "msgPutTotalTodayMorning", "msgPutTotalYesterdayMorning"),
        _delta(s, "msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning"),
        _delta(s, "msgPutTotalTodayNow", "msgPutTotalTodayMorning"),
        _delta(s, "msgGetTotalTodayNow", "msgGetTotalTodayMorning"))


def cluster_list_lines(info: Mapping[str, Any], stats: Mapping[str, Mapping[str, str] | None],
                       more: bool = False, now_ms: int | None = None) -> list[str]:
    """The whole ``clusterList`` (or ``-m``) table; ``stats`` by broker address."""
    rows = broker_rows(info)
    if more:
        return [MORE_FMT.format(*MORE_HEAD)] + [more_line(r, stats.get(r[3])) for r in rows]
    return [BASE_FMT.format(*BASE_HEAD)] + [base_line(r, stats.get(r[3]), now_ms)
                                            for r in rows]


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
