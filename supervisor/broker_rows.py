"""The status page's brokers: one row per broker address, as clusterList and dashboards show.

Each node's broker table is read (a drill-down and its values) only when the
node's broker digest moved; the last heartbeat per node comes with every digest
summary. A broker's version is its own answer to GET_BROKER_RUNTIME_INFO (28,
``brokerVersionDesc``), asked at most once a minute per address, at most
``VERSION_ASKS`` addresses per round, each within one second; a broker that
does not answer (a simulated one) has no version.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from cluster.core.digest_source import DigestSource
from cluster.core.divergence_watch import Round
from cluster.core.node_link import NodeLink, NotAnswering
from cluster.core.protocol import admin_bodies
from cluster.core.protocol.body_common import BodyError

GET_BROKER_RUNTIME_INFO = 28  # a broker's code (Java's RequestCode); nodes never see it
VERSION_EVERY_S = 60.0
VERSION_DEADLINE_S = 1.0
VERSION_ASKS = 16


@dataclass(frozen=True, slots=True)
class BrokerRow:
    cluster: str
    name: str
    broker_id: int
    addr: str
    version: str  # "" when the broker did not say
    on: tuple[str, ...]  # nodes whose broker table holds this address
    heartbeats: tuple[tuple[str, int | None], ...]  # (node, last heartbeat ms or None)

    @property
    def role(self) -> str:
        return "master" if self.broker_id == 0 else f"slave {self.broker_id}"


def broker_version(addr: str, timeout: float = VERSION_DEADLINE_S) -> str:
    """``brokerVersionDesc`` of the broker at ``addr``, or "" when it does not answer."""
    host, _, port = addr.rpartition(":")
    link = NodeLink(host, int(port), "status")
    try:
        reply = link.call(GET_BROKER_RUNTIME_INFO, timeout)
        table = admin_bodies.decode_kv_table(reply.body)
    except (NotAnswering, BodyError, ValueError):
        return ""
    finally:
        link.close()
    return table.get("brokerVersionDesc") or table.get("brokerVersion") or ""


class BrokerBook:
    def __init__(self, version_of: Callable[[str], str] = broker_version,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.version_of = version_of
        self.clock = clock
        self._tables: dict[str, tuple[str, dict[str, Any]]] = {}  # node -> (digest, table)
        self._versions: dict[str, tuple[float, str]] = {}  # addr -> (asked at, version)
        self._pool = ThreadPoolExecutor(VERSION_ASKS, thread_name_prefix="broker-version")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def update(self, rnd: Round, sources: Mapping[str, DigestSource],
               timeout: float) -> tuple[BrokerRow, ...]:
        tables = {}
        for node, a in rnd.answers.items():
            if a.summary is not None and "broker" in a.summary["tables"]:
                table = self._broker_table(node, a.summary, sources[node], timeout)
                if table is not None:
                    tables[node] = table
        rows = _rows(tables, {n: a.summary.get("heartbeats") or {} for n, a in rnd.answers.items()
                              if a.summary is not None})
        self._ask_versions([r.addr for r in rows])
        return tuple(BrokerRow(r.cluster, r.name, r.broker_id, r.addr,
                               self._versions.get(r.addr, (0.0, ""))[1], r.on, r.heartbeats)
                     for r in rows)

    def _broker_table(self, node: str, summary: Mapping[str, Any], src: DigestSource,
                      timeout: float) -> dict[str, Any] | None:
        doc = summary["tables"]["broker"]
        cached = self._tables.get(node)
        if cached is not None and cached[0] == doc["digest"]:
            return cached[1]
        try:
            buckets = frozenset(int(b) for b in doc.get("buckets") or {})
            keys = list(src.drill("broker", buckets, timeout)) if buckets else []
            values = src.values("broker", [(k, "") for k in keys], timeout) if keys else []
        except NotAnswering:
            return None
        table = {key: value for key, _, value in values}
        self._tables[node] = (doc["digest"], table)
        return table

    def _ask_versions(self, addrs: Sequence[str]) -> None:
        now = self.clock()
        due = [a for a in dict.fromkeys(addrs)
               if now - self._versions.get(a, (-VERSION_EVERY_S, ""))[0] >= VERSION_EVERY_S]
        due = due[:VERSION_ASKS]
        for addr, version in zip(due, self._pool.map(self.version_of, due), strict=True):
            self._versions[addr] = (now, version)
        for gone in set(self._versions) - set(addrs):
            del self._versions[gone]


def _rows(tables: Mapping[str, Mapping[str, Any]],
          beats: Mapping[str, Mapping[str, int]]) -> list[BrokerRow]:
    """One row per (broker name, id, address) any node holds, sorted as clusterList is."""
    found: dict[tuple[str, str, int, str], list[str]] = {}
    for node, table in tables.items():
        for name, bd in table.items():
            for bid, addr in (bd.get("brokerAddrs") or {}).items():
                found.setdefault((bd.get("cluster", ""), name, int(bid), addr), []).append(node)
    nodes = list(beats)
    return [BrokerRow(c, name, bid, addr, "", tuple(on),
                      tuple((n, beats[n].get(addr)) for n in nodes))
            for (c, name, bid, addr), on in sorted(found.items())]
