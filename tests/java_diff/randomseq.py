"""Seeded random request sequences over a small name space (property-based differential test).

`sequence(seed, prefix)` draws registrations (master or slave, JSON or binary
header, plain or compressed body, new or repeated DataVersion), unregistrations,
write-permission changes, topic deletions, KV writes, connection closes and
every query, over two clusters, three broker names, four addresses, five topics
and two KV namespaces, all carrying `prefix`. The same seed always gives the
same steps, so a failure is replayed by its seed alone.

Each address is one broker's connection and always registers under the same
broker name, as a real broker does (the ids may switch). Connection closes are
drawn only for addresses that are the sole broker of their connection (for 5.x,
which keys brokers by cluster and address, registered in one cluster); several
brokers on one connection are a documented difference (README), checked by a
scenario of its own.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from cluster.core.protocol.codes import SerializeType
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.lenient import loads_lenient
from tests.java_diff import build as b
from tests.java_diff.scenarios import contains, unregister_step
from tests.java_diff.sides import Step

RQ = b.RQ
STEPS_PER_SEQUENCE = 40
FIRST_5X_VERSION = 500  # replies of a 4.9 NameServer carry 40x, of a 5.x one 5xx


class Space:
    """The name space of one sequence."""

    def __init__(self, seed: int, prefix: str) -> None:
        self.clusters = [f"{prefix}c{i}" for i in range(2)]
        self.names = [f"{prefix}b{i}" for i in range(3)]
        self.addrs = [f"10.{200 + seed // 250 % 50}.{seed % 250}.{i}:{10911 + i}"
                      for i in range(4)]
        self.owner = {addr: self.names[i % 3] for i, addr in enumerate(self.addrs)}
        self.topics = [f"{prefix}t{i}" for i in range(5)]
        self.namespaces = [f"{prefix}ns", "ORDER_TOPIC_CONFIG"]
        self.keys = [f"{prefix}k0", f"{prefix}k1", self.topics[0]]


class Gen:
    def __init__(self, seed: int, prefix: str) -> None:
        self.rnd = random.Random(seed)
        self.s = Space(seed, prefix)
        self.counter = {addr: 1 for addr in self.s.addrs}
        self.opened: set[str] = set()  # addresses whose connection carries a registration
        self.clusters_of: dict[str, set[str]] = {}  # the clusters each address registered in

    def dv(self, addr: str) -> dict[str, int]:
        return {"counter": self.counter[addr], "timestamp": 1_700_000_000_000 + self.counter[addr]}

    def st(self) -> SerializeType:
        return self.rnd.choice((b.JSON, b.BINARY))

    def topic_configs(self) -> list[dict[str, Any]]:
        r = self.rnd
        chosen = r.sample(self.s.topics, r.randint(0, len(self.s.topics)))
        return [b.topic(t, queues=r.choice((1, 4, 8)), perm=r.choice((2, 4, 6, 7)),
                        sysflag=r.randint(0, 3)) for t in chosen]

    def register(self) -> Step:
        r = self.rnd
        addr = r.choice(self.s.addrs)
        if r.random() < 0.6:
            self.counter[addr] += 1
        dv = self.dv(addr)
        broker_id = r.choice((0, 0, 1, 2))
        oneway = r.random() < 0.1
        self.opened.add(addr)
        cluster = r.choice(self.s.clusters)
        self.clusters_of.setdefault(addr, set()).add(cluster)
        topics = self.topic_configs()
        if oneway and len(topics) == 1:  # 5.x may refuse one topic: it would never settle
            topics += [b.topic(t) for t in self.s.topics if t != topics[0]["topicName"]][:1]
        cmd = b.register(cluster, self.s.owner[addr], addr, broker_id, topics, dv,
                         compressed=r.random() < 0.3, stype=self.st(), oneway=oneway)
        step = Step(f"register {self.s.owner[addr]} {addr} id {broker_id}", cmd, conn=addr)
        if oneway:
            step.settle = ((b.cluster_info(), contains(addr)),)
        return step

    def unregister(self) -> Step:
        r = self.rnd
        addr = r.choice(self.s.addrs)
        broker_id = r.choice((0, 1, 2))
        return unregister_step(f"unregister {addr} id {broker_id}", r.choice(self.s.clusters),
                               self.s.owner[addr], addr, broker_id, self.st())

    def close(self) -> Step:
        # an address registered in two clusters is two brokers of one connection in 5.x
        alone = sorted(a for a in self.opened if len(self.clusters_of[a]) == 1)
        if not alone:
            return self.query()
        addr = self.rnd.choice(alone)
        self.opened.discard(addr)
        # settled once the address has no live entry (the route tables change with it).
        # 5.x unregisters a closed connection's broker only when a BrokerData of its cluster
        # holds the address at that moment (RouteInfoManager.setupUnRegisterRequest), else
        # the live entry stays and nothing changes: looked at before the close
        cluster = next(iter(self.clusters_of.pop(addr)))
        probe = b.query_data_version(cluster, self.s.owner[addr], addr, 0, self.dv(addr))
        return Step(f"close {addr}", conn=addr, close=True,
                    settle=((probe, lambda reply: reply.body is None),), precheck=b.cluster_info(),
                    settles_if=lambda info: info.version < FIRST_5X_VERSION
                    or held(info, cluster, addr))

    def perm(self) -> Step:
        code = self.rnd.choice((RQ.WIPE_WRITE_PERM_OF_BROKER, RQ.ADD_WRITE_PERM_OF_BROKER))
        name = self.rnd.choice(self.s.names)
        return Step(f"perm {int(code)} {name}", b.plain(code, self.st(), brokerName=name))

    def delete_topic(self) -> Step:
        ext = {"topic": self.rnd.choice(self.s.topics)}
        if self.rnd.random() < 0.5:
            ext["clusterName"] = self.rnd.choice(self.s.clusters)
        return Step(f"delete topic {ext}", b.cmd(RQ.DELETE_TOPIC_IN_NAMESRV, ext, stype=self.st()))

    def kv(self) -> Step:
        r = self.rnd
        ns, key = r.choice(self.s.namespaces), r.choice(self.s.keys)
        roll = r.random()
        if roll < 0.4:
            value = f"{r.choice(self.s.names)}:{r.randint(1, 8)}"
            return Step(f"put kv {ns} {key}", b.put_kv(ns, key, value, self.st()))
        if roll < 0.6:
            return Step(f"delete kv {ns} {key}",
                        b.plain(RQ.DELETE_KV_CONFIG, self.st(), namespace=ns, key=key))
        if roll < 0.8:
            return Step(f"get kv {ns} {key}",
                        b.plain(RQ.GET_KV_CONFIG, self.st(), namespace=ns, key=key))
        return Step(f"kv list {ns}", b.plain(RQ.GET_KVLIST_BY_NAMESPACE, self.st(), namespace=ns))

    def query(self) -> Step:
        r = self.rnd
        roll = r.randrange(6)
        if roll == 0:
            t = r.choice(self.s.topics)
            version = r.choice((0, 409))
            return Step(f"route {t} v{version}", b.route(t, self.st(), version=version))
        if roll == 1:
            return Step("cluster info", b.cluster_info(self.st()))
        if roll == 2:
            c = r.choice(self.s.clusters)
            return Step(f"topics by {c}", b.plain(RQ.GET_TOPICS_BY_CLUSTER, self.st(), cluster=c))
        if roll == 3:
            addr = r.choice(self.s.addrs)
            dv = self.dv(addr)
            return Step(f"query data version {addr}", b.query_data_version(
                r.choice(self.s.clusters), self.s.owner[addr], addr, 0, dv, self.st()))
        code = r.choice((RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, RQ.GET_SYSTEM_TOPIC_LIST_FROM_NS,
                         RQ.GET_UNIT_TOPIC_LIST, RQ.GET_HAS_UNIT_SUB_TOPIC_LIST,
                         RQ.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST))
        return Step(f"list {int(code)}", b.plain(code, self.st()))


_WEIGHTS: list[tuple[Callable[[Gen], Step], int]] = [
    (Gen.register, 30), (Gen.unregister, 8), (Gen.close, 4), (Gen.perm, 6),
    (Gen.delete_topic, 5), (Gen.kv, 12), (Gen.query, 35),
]


def held(info: RemotingCommand, cluster: str, addr: str) -> bool:
    """Whether a BrokerData of `cluster` in a cluster-info reply holds `addr`."""
    if info.body is None:
        return False
    brokers = loads_lenient(info.body).get("brokerAddrTable") or {}
    return any(bd.get("cluster") == cluster and addr in (bd.get("brokerAddrs") or {}).values()
               for bd in brokers.values())


def sequence(seed: int, prefix: str, length: int = STEPS_PER_SEQUENCE) -> list[Step]:
    gen = Gen(seed, prefix)
    ops, weights = zip(*_WEIGHTS, strict=True)
    steps = [gen.rnd.choices(ops, weights)[0](gen) for _ in range(length)]
    return [*steps, Step("final cluster info", b.cluster_info()),
            Step("final topic list", b.plain(RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))]
