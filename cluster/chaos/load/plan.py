"""The ``--load`` profile as data: how many brokers, topics, registrations and reads.

A ``LoadPlan`` is pure arithmetic over a few inputs (target brokers, topics
per broker, heartbeat period, target reads/s, node count) and fixes every
name the load uses, so the load process, the observer and the checkers agree
on them. Brokers come in master/slave pairs (a group): a group has one
master (id 0) and one slave (id 1) sharing the group's topics, so the target
broker count is rounded up to an even number.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from cluster.client.broker_sim import TopicSpec, broker_identity, make_topics
from cluster.client.fanout import BrokerIdentity

LOAD_CLUSTER = "LoadCluster"
LOAD_PREFIX = "load-broker-"
LOAD_TOPIC_PREFIX = "LoadTopic-"
LOAD_BASE_PORT = 30911
QUEUES = 4
PERM_READ_WRITE = 6
SLAVES_PER_GROUP = 1
MAX_BROKERS = 5000

DEFAULT_BROKERS = 200
DEFAULT_TOPICS = 100
DEFAULT_READS = 5000.0
# Offered reads over the target: absorbs the seconds a client spends failing over.
DEFAULT_HEADROOM = 1.2
CLIENTS_PER_NODE = 4
TICK_S = 0.02
WINDOW = 2048
READ_TIMEOUT_S = 3.0  # mqClientApiTimeout
REGISTER_TIMEOUT_S = 3.0
VERIFY_EVERY = 64  # one reply in this many has its route body checked
MAX_MISSING_SHOWN = 20


@dataclass(frozen=True, slots=True)
class LoadPlan:
    """Inputs of the profile; every other figure is derived from them."""

    brokers: int = DEFAULT_BROKERS
    topics_per_broker: int = DEFAULT_TOPICS
    heartbeat_s: float = 30.0
    reads_per_s: float = DEFAULT_READS
    nodes: int = 3
    headroom: float = DEFAULT_HEADROOM
    clients_per_node: int = CLIENTS_PER_NODE
    tick_s: float = TICK_S
    read_timeout_s: float = READ_TIMEOUT_S
    register_timeout_s: float = REGISTER_TIMEOUT_S

    def __post_init__(self) -> None:
        if not 2 <= self.brokers <= MAX_BROKERS:
            raise ValueError(f"load brokers must be within 2..{MAX_BROKERS}")
        if self.topics_per_broker < 1:
            raise ValueError("load topics per broker must be at least 1")
        if self.reads_per_s <= 0:
            raise ValueError("load reads/s must be positive")
        if self.heartbeat_s <= 0:
            raise ValueError("load heartbeat must be positive")
        if self.nodes < 1:
            raise ValueError("a load plan needs at least one node")

    # ------------------------------------------------------------- brokers

    @property
    def groups(self) -> int:
        return math.ceil(self.brokers / (1 + SLAVES_PER_GROUP))

    @property
    def broker_count(self) -> int:
        """Brokers actually run: every group is a master and its slave."""
        return self.groups * (1 + SLAVES_PER_GROUP)

    @property
    def topic_count(self) -> int:
        return self.groups * self.topics_per_broker

    @property
    def registrations_per_s(self) -> float:
        """REGISTER_BROKER requests per second over all nodes."""
        return self.broker_count * self.nodes / self.heartbeat_s

    def group_name(self, group: int) -> str:
        return f"{LOAD_PREFIX}{group}"

    def identity(self, group: int, slave: int) -> BrokerIdentity:
        return broker_identity(LOAD_CLUSTER, group, slave, prefix=LOAD_PREFIX,
                               base_port=LOAD_BASE_PORT)

    def identities(self) -> list[BrokerIdentity]:
        return [self.identity(g, s) for g in range(self.groups)
                for s in range(1 + SLAVES_PER_GROUP)]

    def broker_addrs(self) -> frozenset[str]:
        return _broker_addrs(self)

    @staticmethod
    def owns_broker(name: str) -> bool:
        return name.startswith(LOAD_PREFIX)

    def topics(self, group: int) -> dict[str, TopicSpec]:
        return make_topics(self.topics_per_broker, QUEUES, PERM_READ_WRITE,
                           prefix=self.topic_prefix(group))

    @staticmethod
    def audit_snapshot(snapshot: Mapping[str, Any]) -> dict[str, Any]:
        """``snapshot`` with only the first topic of each load group in its topic table.

        Every load topic in the audit input would be ten thousand rows per node
        and round; the first topic of a group stands for the group's topics.
        """
        tables = dict(snapshot.get("tables") or {})
        topics = tables.get("topic")
        if isinstance(topics, Mapping):
            tables["topic"] = {t: v for t, v in topics.items()
                               if not t.startswith(LOAD_TOPIC_PREFIX) or t.endswith("-0")}
        return {**snapshot, "tables": tables}

    @staticmethod
    def topic_prefix(group: int) -> str:
        return f"{LOAD_TOPIC_PREFIX}{group}-"

    def topic(self, index: int) -> tuple[str, int]:
        """The ``index``-th topic over all groups (0 <= index < topic_count) and its group."""
        group, k = divmod(index, self.topics_per_broker)
        return f"{self.topic_prefix(group)}{k}", group

    # --------------------------------------------------------------- reads

    @property
    def clients(self) -> int:
        return self.nodes * self.clients_per_node

    @property
    def offered_reads_per_s(self) -> float:
        return self.reads_per_s * self.headroom

    @property
    def reads_per_client(self) -> float:
        return self.offered_reads_per_s / self.clients

    @property
    def batch(self) -> float:
        """Reads one client writes per tick (one write, pipelined on its connection)."""
        return self.reads_per_client * self.tick_s

    def as_dict(self) -> dict[str, Any]:
        derived = {k: getattr(self, k) for k in (
            "groups", "broker_count", "topic_count", "registrations_per_s", "clients",
            "offered_reads_per_s", "reads_per_client", "batch")}
        return {**asdict(self), **derived}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LoadPlan:
        fields = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in fields})

    def describe(self) -> list[str]:
        return [
            f"brokers   {self.broker_count} ({self.groups} master/slave pairs, target "
            f"{self.brokers}), cluster {LOAD_CLUSTER}, compressed registrations",
            f"topics    {self.topics_per_broker} per broker, {self.topic_count} in all",
            f"heartbeat every {self.heartbeat_s:g}s to each of {self.nodes} nodes: "
            f"{self.registrations_per_s:.1f} registrations/s",
            f"reads     target {self.reads_per_s:g}/s, offered {self.offered_reads_per_s:g}/s "
            f"by {self.clients} clients ({self.reads_per_client:.0f}/s each, "
            f"{self.batch:.1f} pipelined per {self.tick_s * 1000:g} ms tick), "
            f"timeout {self.read_timeout_s:g}s",
        ]


@functools.lru_cache(maxsize=4)
def _broker_addrs(plan: LoadPlan) -> frozenset[str]:
    return frozenset(who.broker_addr for who in plan.identities())


def load_observation(plan: LoadPlan, tables: Mapping[str, Any]) -> dict[str, Any]:
    """What one node snapshot holds of the load: counts, and which brokers are missing."""
    live = tables.get("live", {})
    missing = sorted(plan.broker_addrs().difference(live))
    return {"brokers": sum(1 for b in tables.get("broker", {}) if plan.owns_broker(b)),
            "live": plan.broker_count - len(missing),
            "topics": sum(1 for t in tables.get("topic", {})
                          if t.startswith(LOAD_TOPIC_PREFIX)),
            "missing": missing[:MAX_MISSING_SHOWN], "missing_count": len(missing)}
