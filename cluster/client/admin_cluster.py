"""``clusterList`` in mqadmin's layouts: 4.9.8's and 5.x's base table, and ``-m`` (both).

Pure functions from the ClusterInfo reply and each broker's runtime KVTable to lines.
Rows follow mqadmin's loops: clusters in the decoded ``HashMap``'s order, broker names
sorted (a ``TreeSet``), broker ids in ``HashMap<Long, String>`` order. Each row's values
are taken from the KVTable the way the release's ``ClusterListSubCommand`` takes them:
a key the broker does not send prints as ``null``, a value Java cannot parse leaves the
numbers after it at 0, and a broker that does not answer gets empty columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from cluster.client.java_text import as_float32, fixed, jstr, parse_double, parse_long
from cluster.core.clock import wall_ms
from cluster.core.javaorder import hashmap_order, java_sorted, long_hash

Stats = Mapping[str, str]
Row = tuple[str, str, int, str]  # cluster, broker name, broker id, address

# printClusterBaseInfo, 4.9.8
BASE_4 = "%-16s  %-22s  %-4s  %-22s %-16s %19s %19s %10s %5s %6s"
HEAD_4 = ("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
          "#OutTPS(LOAD)", "#PCWait(ms)", "#Hour", "#SPACE")
# printClusterBaseInfo, 5.x: its header and its rows have different alignments.
HEAD_FMT_5 = ("%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %-11s  %-12s  %-8s  "
              "%-10s")
BASE_5 = "%-22s  %-22s  %-4s  %-22s %-16s  %16s  %30s  %-22s  %11s  %-12s  %-8s  %10s"
HEAD_5 = ("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
          "#OutTPS(LOAD)", "#Timer(Progress)", "#PCWait(ms)", "#Hour", "#SPACE", "#ACTIVATED")
# printClusterMoreStats, both releases
MORE = "%-16s  %-32s %14s %14s %14s %14s"
MORE_HEAD = ("#Cluster Name", "#Broker Name", "#InTotalYest", "#OutTotalYest",
             "#InTotalToday", "#OutTotalToday")


def rows(info: Mapping[str, Any], only: str | None = None) -> Iterator[Row]:
    """Every broker of every cluster (or of cluster ``only``, as 5.x's ``-c``)."""
    clusters = info.get("clusterAddrTable") or {}
    brokers = info.get("brokerAddrTable") or {}
    for cluster in [only] if only is not None else hashmap_order(clusters):
        for name in java_sorted(clusters.get(cluster) or ()):
            addrs = (brokers.get(name) or {}).get("brokerAddrs")
            if addrs is None:
                continue
            table = {int(k): v for k, v in addrs.items()}
            for bid in hashmap_order(table, long_hash):
                yield cluster, name, bid, table[bid]


def _first_number(tps: str | None) -> float:
    """The first of a TPS string's numbers (``"12.5 10.0 9.0"``); ValueError as in Java."""
    if tps is None:
        raise ValueError("null")
    return parse_double(tps.split(" ")[0])


def _hours(earliest: str | None, now_ms: int) -> float:
    if not earliest:
        return 0.0
    try:
        return (now_ms - parse_long(earliest)) / 1000.0 / 60.0 / 60.0
    except ValueError:
        return 0.0


def _ratio(text: str | None) -> float:
    try:
        return parse_double(text) if text else 0.0
    except ValueError:
        return 0.0


def _tps_4(s: Stats) -> tuple[float, float]:
    """4.9.8 splits putTps, then getTransferedTps; the first failure ends both."""
    values = [0.0, 0.0]
    try:
        values[0] = _first_number(s.get("putTps"))
        values[1] = _first_number(s.get("getTransferedTps"))
    except ValueError:
        pass
    return values[0], values[1]


def line_4(row: Row, s: Stats | None, now_ms: int) -> str:
    """One broker of 4.9.8's table; ``s`` None: the broker did not answer."""
    if s is None:
        text: dict[str, str | None] = dict.fromkeys(_KEYS_4, "")
        tps = (0.0, 0.0)
    else:
        text = {k: s.get(k) for k in _KEYS_4}
        tps = _tps_4(s)
    return BASE_4 % (
        row[0], row[1], row[2], row[3], jstr(text["brokerVersionDesc"]),
        f"{fixed(tps[0], 2):>9}({jstr(text['sendThreadPoolQueueSize'])},"
        f"{jstr(text['sendThreadPoolQueueHeadWaitTimeMills'])}ms)",
        f"{fixed(tps[1], 2):>9}({jstr(text['pullThreadPoolQueueSize'])},"
        f"{jstr(text['pullThreadPoolQueueHeadWaitTimeMills'])}ms)",
        jstr(text["pageCacheLockTimeMills"]),
        fixed(_hours(text["earliestMessageTimeStamp"], now_ms), 2),
        fixed(_ratio(text["commitLogDiskRatio"]), 4))


_KEYS_4 = ("brokerVersionDesc", "sendThreadPoolQueueSize", "pullThreadPoolQueueSize",
           "sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills",
           "pageCacheLockTimeMills", "earliestMessageTimeStamp", "commitLogDiskRatio")
_KEYS_5 = (*_KEYS_4, "ackThreadPoolQueueSize", "ackThreadPoolQueueHeadWaitTimeMills")
_TIMERS: tuple[tuple[str, Callable[[str | None], float]], ...] = (
    ("timerReadBehind", parse_long), ("timerOffsetBehind", parse_long),
    ("timerCongestNum", parse_long),
    ("timerEnqueueTps", lambda t: as_float32(parse_double(t))),
    ("timerDequeueTps", lambda t: as_float32(parse_double(t))))


def _timers(s: Stats) -> list[float]:
    """5.x reads the timer values in turn; the first it cannot parse leaves the rest 0."""
    values = [0.0] * len(_TIMERS)
    for i, (key, parse) in enumerate(_TIMERS):
        try:
            values[i] = parse(s.get(key))
        except ValueError:
            break
    return values


def _tps_5(s: Stats) -> tuple[float, float]:
    """5.x skips a blank TPS string; a value it cannot parse ends both."""
    values = [0.0, 0.0]
    try:
        for i, key in enumerate(("putTps", "getTransferredTps")):
            if (s.get(key) or "").strip():
                values[i] = _first_number(s.get(key))
    except ValueError:
        pass
    return values[0], values[1]


def line_5(row: Row, s: Stats | None, now_ms: int) -> str:
    """One broker of 5.x's table; ``s`` None: the broker did not answer."""
    if s is None:
        text: dict[str, str | None] = dict.fromkeys(_KEYS_5, "")
        tps, timers, active = (0.0, 0.0), [0.0] * len(_TIMERS), False
    else:
        text = {k: s.get(k) for k in _KEYS_4}
        text.update({k: s.get(k, "N") for k in _KEYS_5[len(_KEYS_4):]})
        tps, timers = _tps_5(s), _timers(s)
        active = (s.get("brokerActive") or "").lower() == "true"
    read_behind, offset_behind, congest, enqueue, dequeue = timers
    return BASE_5 % (
        row[0], row[1], row[2], row[3], jstr(text["brokerVersionDesc"]),
        f"{fixed(tps[0], 2):>9}({jstr(text['sendThreadPoolQueueSize'])},"
        f"{jstr(text['sendThreadPoolQueueHeadWaitTimeMills'])}ms)",
        f"{fixed(tps[1], 2):>9}({jstr(text['pullThreadPoolQueueSize'])},"
        f"{jstr(text['pullThreadPoolQueueHeadWaitTimeMills'])}ms|"
        f"{jstr(text['ackThreadPoolQueueSize'])},"
        f"{jstr(text['ackThreadPoolQueueHeadWaitTimeMills'])}ms)",
        f"{int(read_behind)}-{int(offset_behind)}("
        f"{fixed(as_float32(as_float32(congest) / 10000.0), 1)}w, {fixed(enqueue, 1)}, "
        f"{fixed(dequeue, 1)})",
        jstr(text["pageCacheLockTimeMills"]),
        fixed(_hours(text["earliestMessageTimeStamp"], now_ms), 2),
        fixed(_ratio(text["commitLogDiskRatio"]), 4), jstr(active))


_TOTALS = (("msgPutTotalTodayMorning", "msgPutTotalYesterdayMorning"),
           ("msgGetTotalTodayMorning", "msgGetTotalYesterdayMorning"),
           ("msgPutTotalTodayNow", "msgPutTotalTodayMorning"),
           ("msgGetTotalTodayNow", "msgGetTotalTodayMorning"))


def more_line(row: Row, s: Stats | None) -> str:
    """One broker of ``-m``: yesterday's and today's totals, each a later count minus an
    earlier one, computed in turn until one fails to parse."""
    totals = [0, 0, 0, 0]
    try:
        for i, (later, earlier) in enumerate(_TOTALS):
            totals[i] = parse_long((s or {}).get(later)) - parse_long((s or {}).get(earlier))
    except ValueError:
        pass
    return MORE % (row[0], row[1], *totals)


def lines(info: Mapping[str, Any], stats: Mapping[str, Stats | None], release: str,
          more: bool = False, only: str | None = None, now_ms: int | None = None) -> list[str]:
    """The whole table; ``stats`` by broker address (None or missing: no answer)."""
    now = wall_ms() if now_ms is None else now_ms
    table = list(rows(info, only))
    if more:
        return [MORE % MORE_HEAD] + [more_line(r, stats.get(r[3])) for r in table]
    if release == "4.9":
        return [BASE_4 % HEAD_4] + [line_4(r, stats.get(r[3]), now) for r in table]
    return [HEAD_FMT_5 % HEAD_5] + [line_5(r, stats.get(r[3]), now) for r in table]
