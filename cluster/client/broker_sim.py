"""Simulated brokers that register to every NameServer node on a heartbeat schedule.

A ``BrokerSimulation`` runs B broker groups (a master and optional slaves each),
every broker with its own connections (as a real broker process has), its own
``BrokerOuterAPI`` and ``HeartbeatLoop``, all on one shared ``IoLoop``. Brokers
can bump their data version, gain or lose topics, crash (stop heartbeating,
with or without closing their connections) or unregister cleanly. ``SimStats``
counts outcomes per node for the live summary.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster.client.connection import ConnectionPool, IoLoop
from cluster.client.errors import ClientError
from cluster.client.fanout import (
    CLIENT_VERSION,
    BrokerIdentity,
    BrokerOuterAPI,
    FanoutResult,
    NodeOutcome,
    RegisterPayload,
    Status,
)
from cluster.client.heartbeat import (
    DEFAULT_RETRY_INTERVAL,
    MAX_PERIOD,
    MIN_PERIOD,
    UNCHANGED,
    HeartbeatLoop,
)
from cluster.core.clock import wall_ms
from cluster.core.config import port_in_use
from cluster.core.protocol.acl import Credentials

PERM_READ_WRITE = 6
MAX_SLAVES = 4
# Simulated brokers take addresses from here up: RocketMQ's own defaults are 9876 (NameServer),
# 10909-10912 (broker), 8080-8081 (proxy) and 40911 (dLedger); the chaos harness uses 20911
# and 30911. Linux hands out outgoing ports from 32768 up.
DEFAULT_BASE_PORT = 25911
GROUP_PORTS = 10  # group g uses base + 10 g ...
SLAVE_PORTS = 2  # ... + 2 per slave, and the port after each broker's for its HA address
MAX_PORT = 65535


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One topic as a broker's TopicConfig (4.9 fields)."""

    name: str
    read_queues: int = 4
    write_queues: int = 4
    perm: int = PERM_READ_WRITE
    sys_flag: int = 0
    order: bool = False

    def to_config(self) -> dict[str, Any]:
        """The TopicConfig bean, properties in fastjson's (alphabetical) order."""
        return {"order": self.order, "perm": self.perm, "readQueueNums": self.read_queues,
                "topicFilterType": "SINGLE_TAG", "topicName": self.name,
                "topicSysFlag": self.sys_flag, "writeQueueNums": self.write_queues}


@dataclass(frozen=True, slots=True)
class SimOptions:
    """Everything a simulated broker needs besides its identity and topics."""

    period: float = 30.0
    clamp: tuple[float, float] = (MIN_PERIOD, MAX_PERIOD)
    timeout: float | None = None
    retry_interval: float = DEFAULT_RETRY_INTERVAL
    version: int = CLIENT_VERSION
    compressed: bool = False
    oneway: bool = False
    force_register: bool = True
    connect_timeout: float = 3.0
    credentials: Credentials | None = None  # sign every request (ACL)


@dataclass(slots=True)
class NodeCounters:
    ok: int = 0
    sent: int = 0
    failed: int = 0
    timed_out: int = 0
    skipped: int = 0
    last_error: str = ""


@dataclass
class SimStats:
    """Outcome counters per node, safe to read from any thread."""

    nodes: dict[str, NodeCounters] = field(default_factory=dict)
    registrations: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, outcome: NodeOutcome) -> None:
        with self._lock:
            c = self.nodes.setdefault(outcome.addr, NodeCounters())
            if outcome.value == UNCHANGED:
                c.skipped += 1
                return
            if outcome.status is Status.OK:
                c.ok += 1
                self.registrations += 1
            elif outcome.status is Status.SENT:
                c.sent += 1
                self.registrations += 1
            elif outcome.status is Status.TIMED_OUT:
                c.timed_out += 1
            else:
                c.failed += 1
            if outcome.error is not None:
                c.last_error = f"{outcome.error.kind}: {outcome.error}"

    def snapshot(self) -> tuple[int, dict[str, NodeCounters]]:
        with self._lock:
            copies = {a: NodeCounters(**_fields(c)) for a, c in self.nodes.items()}
            return self.registrations, copies


def _fields(c: NodeCounters) -> dict[str, Any]:
    return {k: getattr(c, k) for k in NodeCounters.__slots__}


class SimBroker:
    """One simulated broker process: topics, data version, heartbeat, connections."""

    def __init__(self, io: IoLoop, addrs: Sequence[str], who: BrokerIdentity,
                 topics: dict[str, TopicSpec], opts: SimOptions, stats: SimStats) -> None:
        self.who = who
        self.opts = opts
        self.topics = dict(topics)
        self.data_version = {"counter": 0, "timestamp": wall_ms()}
        self.state = "new"
        self._lock = threading.Lock()
        self._payload: RegisterPayload | None = None
        pool = ConnectionPool(io, connect_timeout=opts.connect_timeout,
                              credentials=opts.credentials)
        self.api = BrokerOuterAPI(addrs, pool=pool, version=opts.version)
        self.heartbeat = HeartbeatLoop(
            self.api, who, self.payload, period=opts.period, clamp=opts.clamp,
            timeout=opts.timeout, retry_interval=opts.retry_interval,
            force_register=opts.force_register, data_version_fn=self.current_version,
            oneway=opts.oneway, on_outcome=stats.record)

    @property
    def name(self) -> str:
        return f"{self.who.broker_name}/{self.who.broker_id}"

    @property
    def alive(self) -> bool:
        return self.state == "running"

    def current_version(self) -> dict[str, int]:
        with self._lock:
            return dict(self.data_version)

    def payload(self) -> RegisterPayload:
        """The registration body, rebuilt only after the topics or version changed."""
        with self._lock:
            if self._payload is None:
                configs = {name: t.to_config() for name, t in self.topics.items()}
                self._payload = RegisterPayload.build(
                    dict(self.data_version), configs, [], self.opts.compressed)
            return self._payload

    def _changed(self) -> None:
        """DataVersion.nextVersion(): counter + 1, timestamp = now."""
        self.data_version = {"counter": self.data_version["counter"] + 1, "timestamp": wall_ms()}
        self._payload = None

    def bump(self) -> None:
        with self._lock:
            self._changed()
        self.heartbeat.trigger()

    def add_topic(self, spec: TopicSpec) -> None:
        with self._lock:
            self.topics[spec.name] = spec
            self._changed()
        self.heartbeat.trigger()

    def remove_topic(self, name: str) -> bool:
        with self._lock:
            if self.topics.pop(name, None) is None:
                return False
            self._changed()
        self.heartbeat.trigger()
        return True

    def start(self) -> None:
        self.state = "running"
        self.heartbeat.start()

    def crash(self, close_connections: bool = True) -> None:
        """Stop heartbeating; a killed process also loses its connections."""
        self.heartbeat.stop()
        if close_connections:
            self.api.pool.close()
        self.state = "crashed"

    def unregister(self, timeout: float = 3.0) -> FanoutResult:
        """Stop heartbeating and UNREGISTER_BROKER from every node."""
        self.heartbeat.stop()
        result = self.api.unregister_broker_all(self.who, timeout=timeout)
        self.api.pool.close()
        self.state = "unregistered"
        return result


def broker_identity(cluster: str, group: int, slave: int, host: str = "127.0.0.1",
                    base_port: int = DEFAULT_BASE_PORT, prefix: str = "broker-") -> BrokerIdentity:
    """Deterministic names/addresses: group g listens on base+10g (+2 per slave)."""
    port = base_port + GROUP_PORTS * group + SLAVE_PORTS * slave
    return BrokerIdentity(cluster, f"{prefix}{group}", f"{host}:{port}", slave,
                          f"{host}:{port + 1}")


def sim_ports(groups: int, slaves: int, base_port: int) -> list[int]:
    """Every port the brokers of ``groups`` x (1 + ``slaves``) name: addresses and HA."""
    return [base_port + GROUP_PORTS * g + SLAVE_PORTS * s + ha
            for g in range(groups) for s in range(slaves + 1) for ha in (0, 1)]


def check_base_port(groups: int, slaves: int, base_port: int, host: str = "127.0.0.1") -> None:
    """ValueError (one line) when a port of the block is out of range or has a listener:
    a real broker there would share its address with a simulated one."""
    ports = sim_ports(groups, slaves, base_port)
    if base_port < 1 or max(ports) > MAX_PORT:
        raise ValueError(f"base port {base_port}: {groups} group(s) with {slaves} slave(s) "
                         f"need ports {base_port}-{max(ports)}, beyond 1-{MAX_PORT}")
    busy = next((p for p in ports if port_in_use(host, p)), None)
    if busy is not None:
        raise ValueError(f"base port {base_port}: {host}:{busy} is in use (a broker listens "
                         "there?); simulated brokers must not take a real one's address")


def choose_base_port(groups: int, slaves: int, host: str = "127.0.0.1") -> int:
    """The first block from DEFAULT_BASE_PORT up, in steps of its own size, with no listener."""
    span = groups * GROUP_PORTS
    base = DEFAULT_BASE_PORT
    while base + span <= MAX_PORT:
        try:
            check_base_port(groups, slaves, base, host)
            return base
        except ValueError:
            base += span
    raise ValueError(f"no block of {span} ports from {DEFAULT_BASE_PORT} up is free of "
                     "listeners; give --base-port")


def make_topics(count: int, queues: int, perm: int,
                prefix: str = "SimTopic-") -> dict[str, TopicSpec]:
    return {f"{prefix}{k}": TopicSpec(f"{prefix}{k}", queues, queues, perm) for k in range(count)}


class BrokerSimulation:
    """B broker groups on one IoLoop, with the operations the CLI and chaos tests use."""

    def __init__(self, addrs: Sequence[str], *, groups: int = 1, slaves: int = 0,
                 cluster: str = "DefaultCluster", topics: int = 4, queues: int = 4,
                 perm: int = PERM_READ_WRITE, opts: SimOptions | None = None,
                 seed: int | None = None, prefix: str = "broker-",
                 base_port: int = DEFAULT_BASE_PORT) -> None:
        if not 0 <= slaves <= MAX_SLAVES:
            raise ValueError(f"slaves must be within 0..{MAX_SLAVES}")
        self.io = IoLoop("broker-sim-io")
        self.stats = SimStats()
        self.rng = random.Random(seed)
        self.opts = opts or SimOptions()
        self.brokers: list[SimBroker] = []
        self._extra = 0
        shared = make_topics(topics, queues, perm)
        for g in range(groups):
            for s in range(slaves + 1):
                who = broker_identity(cluster, g, s, prefix=prefix, base_port=base_port)
                self.brokers.append(SimBroker(self.io, addrs, who, shared, self.opts, self.stats))

    def start(self) -> None:
        for broker in self.brokers:
            broker.start()

    def live(self) -> list[SimBroker]:
        return [b for b in self.brokers if b.alive]

    def group(self, broker_name: str) -> list[SimBroker]:
        return [b for b in self.brokers if b.who.broker_name == broker_name and b.alive]

    def _pick(self, count: int, masters_only: bool = False) -> list[SimBroker]:
        pool = [b for b in self.live() if not masters_only or b.who.broker_id == 0]
        return self.rng.sample(pool, min(count, len(pool)))

    def bump_random(self) -> SimBroker | None:
        picked = self._pick(1, masters_only=True)
        for b in picked:
            self.bump_group(b.who.broker_name)
        return picked[0] if picked else None

    def bump_group(self, broker_name: str) -> None:
        for b in self.group(broker_name):
            b.bump()

    def churn(self) -> str | None:
        """Add a new topic to a random group, or remove one added earlier (alternately)."""
        picked = self._pick(1, masters_only=True)
        if not picked:
            return None
        name = picked[0].who.broker_name
        members = self.group(name)
        added = [t for t in members[0].topics if t.startswith(f"{name}-extra-")]
        if added and self.rng.random() < 0.5:
            for b in members:
                b.remove_topic(added[0])
            return f"-{added[0]}"
        self._extra += 1
        spec = TopicSpec(f"{name}-extra-{self._extra}")
        for b in members:
            b.add_topic(spec)
        return f"+{spec.name}"

    def crash(self, count: int, close_connections: bool = True) -> list[SimBroker]:
        picked = self._pick(count)
        for b in picked:
            b.crash(close_connections)
        return picked

    def unregister(self, count: int) -> list[SimBroker]:
        picked = self._pick(count)
        for b in picked:
            b.unregister()
        return picked

    def stop(self, unregister: bool = True, timeout: float = 3.0) -> None:
        """Stop every live broker; with ``unregister`` all unregister in parallel."""
        live = self.live()
        for b in live:
            b.heartbeat.stop()
        if unregister and live:
            with contextlib.suppress(ClientError):
                self.io.run(_unregister_all(live, timeout), timeout)
        for b in live:
            b.api.pool.close()
            b.state = "unregistered" if unregister else "crashed"
        self.io.close()


async def _unregister_all(brokers: list[SimBroker], timeout: float) -> list[FanoutResult]:
    calls = [b.api.unregister_broker_all_async(b.who, timeout=timeout) for b in brokers]
    return list(await asyncio.gather(*calls))


def every(seconds: float, action: Callable[[], object]) -> Callable[[float], None]:
    """A tick function that runs ``action`` once per ``seconds`` of elapsed time."""
    state = {"next": seconds}

    def tick(elapsed: float) -> None:
        while seconds > 0 and elapsed >= state["next"]:
            state["next"] += seconds
            action()
    return tick
