"""The chaos workload: brokers, route readers, KV writers and a snapshot observer.

Every operation becomes one history record per node. Brokers and clients go
through the fault proxies (``client_addrs``); the observer reads snapshots
straight from the nodes (``node_addrs``) so it sees what a node holds even
while its network is faulted. Each node has its own route readers and its own
observer thread, so a paused node costs the others nothing; each observer round
also goes, whole, to the audit input when there is one (``observer``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from cluster.audit.reader import ClusterReader, NodeFailed, ReadLimits
from cluster.chaos.audit import AuditInput, Observed
from cluster.chaos.checkers import ABANDONED
from cluster.chaos.history import OBSERVER, HistoryWriter
from cluster.chaos.load.plan import LoadPlan, load_observation
from cluster.chaos.observer import Observer
from cluster.client.broker_sim import SimBroker, SimOptions, SimStats, broker_identity, make_topics
from cluster.client.connection import ConnectionPool, IoLoop
from cluster.client.errors import CallTimeout, ClientError, ProtocolError, RemoteError
from cluster.client.fanout import FanoutResult, NodeOutcome, Status
from cluster.client.heartbeat import UNCHANGED
from cluster.client.nsclient import NameServerClient
from cluster.core.clock import wall_ms
from cluster.core.protocol.codes import ResponseCode

KV_NAMESPACE = "CHAOS"
ROUTE_TOPIC = "SimTopic-0"
MAX_KV_KEYS = 5000


@dataclass(frozen=True, slots=True)
class WorkloadOptions:
    brokers: int = 2
    readers: int = 1  # per node
    kv_writers: int = 1
    heartbeat_s: float = 30.0
    timeout_s: float = 3.0
    read_interval_s: float = 0.25
    kv_interval_s: float = 0.5
    observe_interval_s: float = 0.5
    kv_every_rounds: int = 10
    seed: int = 0
    load: LoadPlan | None = None


def client_error_value(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, RemoteError):
        return {"code": exc.code, "remark": exc.remark}
    kind = getattr(exc, "kind", type(exc).__name__)
    return {"error": kind, "detail": str(exc)[:200]}


def outcome_of(exc: BaseException | None) -> str:
    if exc is None:
        return "ok"
    return "unknown" if isinstance(exc, CallTimeout) else "fail"


class _BrokerStats(SimStats):
    """Turns each per-node heartbeat outcome into a ``register`` history record."""

    def __init__(self, workload: Workload, broker: str) -> None:
        super().__init__()
        self._workload = workload
        self._broker = broker
        self._round: list[NodeOutcome] = []

    def record(self, outcome: NodeOutcome) -> None:
        """Called on the I/O loop once per node after a round; a round is flushed together."""
        super().record(outcome)
        if outcome.value == UNCHANGED:
            return
        if not self._round:
            asyncio.get_running_loop().call_soon(self._flush)
        self._round.append(outcome)

    def _flush(self) -> None:
        outcomes, self._round = self._round, []
        started = self._workload.history.now() - max(o.elapsed for o in outcomes)
        for o in outcomes:
            self._workload.record_outcome(self._broker, "register", o,
                                          {"broker": self._broker}, started)


class Workload:
    """Runs until ``stop``; thread-safe broker faults for the nemesis."""

    def __init__(self, history: HistoryWriter, client_addrs: Mapping[str, str],
                 node_addrs: Mapping[str, str], opts: WorkloadOptions,
                 audit: AuditInput | None = None) -> None:
        self.history = history
        self.audit = audit
        self.opts = opts
        self.client_addrs = dict(client_addrs)
        self.node_addrs = dict(node_addrs)
        self._node_of = {a: n for n, a in self.client_addrs.items()}
        self._stop = threading.Event()
        self._stop_observing = threading.Event()
        self._threads: list[threading.Thread] = []
        self._io = IoLoop("chaos-brokers")
        self._lock = threading.Lock()
        self.brokers: dict[str, SimBroker] = {}
        self._crashed: list[SimBroker] = []
        self._kv_seq = 0

    # ------------------------------------------------------------ recording

    def node_of(self, addr: str) -> str:
        return self._node_of.get(addr, addr)

    def record_outcome(self, process: str, op: str, outcome: NodeOutcome,
                       value: dict[str, Any], started: float) -> None:
        """One node's part of a fan-out that began at ``started`` (history time)."""
        node, done = self.node_of(outcome.addr), started + outcome.elapsed
        if outcome.status in (Status.OK, Status.SENT):
            self.history.record(process, op, node, "ok", value, started, done)
            return
        kind = "unknown" if outcome.status is Status.TIMED_OUT else "fail"
        err = {} if outcome.error is None else client_error_value(outcome.error)
        self.history.record(process, op, node, kind, {**value, **err}, started, done)

    def record_fanout(self, process: str, op: str, result: FanoutResult,
                      value: dict[str, Any]) -> None:
        started = self.history.now() - result.elapsed
        for outcome in result.outcomes.values():
            self.record_outcome(process, op, outcome, value, started)

    # ---------------------------------------------------------------- brokers

    def broker_names(self) -> list[str]:
        return [f"chaos-broker-{i}" for i in range(self.opts.brokers)]

    def _new_broker(self, index: int) -> SimBroker:
        who = broker_identity("ChaosCluster", index, 0, prefix="chaos-broker-",
                              base_port=20911)
        hb = self.opts.heartbeat_s
        opts = SimOptions(period=hb, clamp=(min(hb, 10.0), max(hb, 60.0)),
                          timeout=min(self.opts.timeout_s, hb), retry_interval=min(1.0, hb))
        return SimBroker(self._io, list(self.client_addrs.values()), who,
                         make_topics(2, 4, 6), opts, _BrokerStats(self, who.broker_name))

    def start_broker(self, name: str) -> None:
        index = self.broker_names().index(name)
        broker = self._new_broker(index)
        with self._lock:
            self.brokers[name] = broker
        broker.start()

    def crash_broker(self, name: str, close_connections: bool = False) -> None:
        """Heartbeats stop; connections stay open unless asked (so expiry must act)."""
        with self._lock:
            broker = self.brokers.pop(name)
        pending = broker.heartbeat.in_flight_since()
        broker.crash(close_connections)
        self._record_abandoned(name, pending)
        if not close_connections:
            with self._lock:
                self._crashed.append(broker)

    def _record_abandoned(self, name: str, pending: dict[str, float]) -> None:
        """Registrations unanswered when a broker crashed: the node may have applied them.

        A fan-out reports its nodes together, so a node that answered while
        another one hung is also still pending here: recorded as a fact, not as
        a request outcome.
        """
        now_loop, now = time.monotonic(), self.history.now()  # the loop's clock is monotonic
        for addr, sent in pending.items():
            started = max(0.0, now - (now_loop - sent))
            self.history.record(name, ABANDONED, self.node_of(addr), "info",
                                {"broker": name}, started, now)

    def unregister_broker(self, name: str) -> FanoutResult:
        with self._lock:
            broker = self.brokers.pop(name)
        broker.heartbeat.stop()
        result = broker.api.unregister_broker_all(broker.who, timeout=self.opts.timeout_s)
        self.record_fanout(name, "unregister", result, {"broker": name})
        broker.api.pool.close()
        broker.state = "unregistered"
        return result

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        for name in self.broker_names():
            self.start_broker(name)
        loops: list[tuple[str, Callable[[], None]]] = []
        for node, addr in self.client_addrs.items():
            suffix = "" if self.opts.readers == 1 else "-{i}"
            loops += [(f"reader-{node}{suffix.format(i=i)}", partial(self._reader, node, addr))
                      for i in range(self.opts.readers)]
        loops += [(f"kv-{i}", partial(self._kv_writer, f"kv-{i}"))
                  for i in range(self.opts.kv_writers)]
        loops.append((OBSERVER, self._observer))
        for name, fn in loops:
            t = threading.Thread(target=fn, name=f"chaos-{name}", daemon=True)
            self._threads.append(t)
            t.start()

    def stop(self, join_timeout: float = 10.0) -> None:
        """Stop every loop; brokers stop heartbeating without unregistering."""
        self._stop.set()
        for t in self._threads:
            if t.name != f"chaos-{OBSERVER}":
                t.join(join_timeout)
        self._stop_observing.set()  # the observer's last round sees the writers' last writes
        for t in self._threads:
            t.join(join_timeout)
        with self._lock:
            brokers = list(self.brokers.values()) + self._crashed
            self.brokers.clear()
            self._crashed = []
        for b in brokers:
            b.heartbeat.stop()
            b.api.pool.close()
        self._io.close()

    # ----------------------------------------------------------------- loops

    def _client(self, addrs: list[str]) -> NameServerClient:
        pool = ConnectionPool(IoLoop(f"chaos-client-{len(self._threads)}"),
                              connect_timeout=self.opts.timeout_s)
        return NameServerClient(addrs, timeout=self.opts.timeout_s, pool=pool)

    def _call(self, process: str, op: str, node: str, value: dict[str, Any],
              fn: Callable[[], dict[str, Any]]) -> ClientError | None:
        """Run and record one request; returns its client error, if any."""
        start = self.history.now()
        try:
            result = fn()
        except ClientError as exc:
            self.history.record(process, op, node, outcome_of(exc),
                                {**value, **client_error_value(exc)}, start)
            return exc
        self.history.record(process, op, node, "ok", {**value, **result}, start)
        return None

    def _reader(self, node: str, addr: str) -> None:
        """Route reads of one node, at its own pace."""
        process = threading.current_thread().name.removeprefix("chaos-")
        client = self._client([addr])
        try:
            while not self._stop.is_set():
                self._call(process, "route", node, {"topic": ROUTE_TOPIC},
                           partial(_route_brokers, client, addr))
                self._stop.wait(self.opts.read_interval_s)
        finally:
            client.close()

    def _kv_writer(self, process: str) -> None:
        """Writes new keys; like a careful admin, re-puts a write on every node that did
        not acknowledge it until it does (the nodes never copy KV from each other)."""
        client = self._client(list(self.client_addrs.values()))
        unsynced: dict[str, tuple[str, set[str]]] = {}
        try:
            while not self._stop.is_set():
                self.repair_kv(client, process, unsynced)
                if self._kv_seq < MAX_KV_KEYS:
                    self.put_kv(client, process, unsynced)
                self._stop.wait(self.opts.kv_interval_s)
        finally:
            client.close()

    def put_kv(self, client: NameServerClient, process: str,
               unsynced: dict[str, tuple[str, set[str]]] | None = None) -> None:
        with self._lock:
            self._kv_seq += 1
            seq = self._kv_seq
        key, value = f"{process}-{seq}", f"v{seq}-s{self.opts.seed}"
        result = self._put(client, key, value, list(self.client_addrs.values()))
        self.record_fanout(process, "kv_put", result,
                           {"ns": KV_NAMESPACE, "key": key, "value": value})
        missed = self._unacknowledged(result)
        if missed and unsynced is not None:
            unsynced[key] = (value, missed)

    def repair_kv(self, client: NameServerClient, process: str,
                  unsynced: dict[str, tuple[str, set[str]]]) -> None:
        """Re-put unacknowledged writes, oldest first, to the nodes that missed them;
        stops at the first re-put that reaches none of its nodes."""
        for key, (value, nodes) in list(unsynced.items()):
            addrs = [self.client_addrs[n] for n in sorted(nodes)]
            result = self._put(client, key, value, addrs)
            self.record_fanout(process, "kv_put", result,
                               {"ns": KV_NAMESPACE, "key": key, "value": value, "repair": True})
            missed = self._unacknowledged(result)
            if missed:
                unsynced[key] = (value, missed)
            else:
                del unsynced[key]
            if missed == nodes or self._stop.is_set():
                return

    @staticmethod
    def _put(client: NameServerClient, key: str, value: str, addrs: list[str]) -> FanoutResult:
        """One KV fan-out; when the fan-out as a whole overran its time (a starved machine),
        every node's outcome is unknown, and the writer goes on."""
        try:
            return client.put_kv(KV_NAMESPACE, key, value, addrs=addrs)
        except CallTimeout as exc:
            return FanoutResult({a: NodeOutcome(a, Status.TIMED_OUT, error=exc) for a in addrs},
                                client.timeout)

    def _unacknowledged(self, result: FanoutResult) -> set[str]:
        return {self.node_of(o.addr) for o in result.outcomes.values()
                if o.status is not Status.OK}

    def read_kv_all(self, process: str = "verifier") -> None:
        """One ``kv_read`` of the chaos namespace from every node (through the proxies)."""
        client = self._client(list(self.client_addrs.values()))
        try:
            for node, addr in self.client_addrs.items():
                self._call(process, "kv_read", node, {"namespaces": [KV_NAMESPACE]},
                           partial(_kv_table, client, addr))
        finally:
            client.close()

    def _node_reader(self, node: str, addr: str) -> ClusterReader:
        """One node's reads: the snapshot where it answers it, else RocketMQ's own request
        codes (``cluster.audit.reader``)."""
        return ClusterReader({node: addr}, ReadLimits(timeout_s=self.opts.timeout_s))

    def _observer(self) -> None:
        """Snapshot rounds, each node on a thread and a reader of its own (``observer``)."""
        readers = {node: self._node_reader(node, addr) for node, addr in self.node_addrs.items()}

        def fetch(node: str, addr: str, with_kv: bool) -> Observed:
            return self._observe_node(OBSERVER, readers[node], node, with_kv)

        sink = (lambda _r, _obs: None) if self.audit is None else self.audit.add_round
        observer = Observer(self.node_addrs, fetch, sink, self.opts.observe_interval_s,
                            self.opts.kv_every_rounds)
        try:
            observer.run(self._stop_observing)
        finally:
            for reader in readers.values():
                reader.close()

    def _observe_node(self, process: str, reader: ClusterReader, node: str,
                      with_kv: bool) -> Observed:
        """One ``snapshot`` record; the full snapshot (or the error) for the audit."""
        seen = Observed(node, wall_ms())

        def fetch() -> dict[str, Any]:
            try:
                snapshot = reader.read_node(node)
            except NodeFailed as exc:  # not a client error: an unreadable answer
                raise ProtocolError(str(exc), self.node_addrs[node]) from None
            load = self.opts.load
            seen.snapshot = snapshot if load is None else load.audit_snapshot(snapshot)
            return observation(snapshot, with_kv, load)

        exc = self._call(process, "snapshot", node, {}, fetch)
        if exc is not None:
            seen.error = f"{type(exc).__name__}: {exc}"
        return seen


def _route_brokers(client: NameServerClient, addr: str) -> dict[str, Any]:
    try:
        route = client.get_route(ROUTE_TOPIC, addr=addr)
    except RemoteError as exc:
        if exc.code == ResponseCode.TOPIC_NOT_EXIST:
            return {"brokers": []}
        raise
    return {"brokers": sorted({str(b["brokerName"]) for b in route["brokerDatas"]})}


def _kv_table(client: NameServerClient, addr: str) -> dict[str, Any]:
    return {"kv": {KV_NAMESPACE: client.get_kv_list(KV_NAMESPACE, addr=addr) or {}}}


def observation(snapshot: Mapping[str, Any], with_kv: bool = True,
                load: LoadPlan | None = None) -> dict[str, Any]:
    """The compact view of a node snapshot the checkers use (KV only when asked).

    With a load plan, the load's brokers are summed up under ``load`` and left
    out of ``brokers`` and ``live``, which stay the chaos workload's.
    """
    tables = snapshot.get("tables", {})
    brokers, live = tables.get("broker", {}), tables.get("live", {})
    out: dict[str, Any] = {"seq": snapshot.get("seq")}
    if load is None:
        out.update(brokers=sorted(brokers), live=sorted(live))
    else:
        addrs = load.broker_addrs()
        out.update(brokers=sorted(b for b in brokers if not load.owns_broker(b)),
                   live=sorted(a for a in live if a not in addrs),
                   load=load_observation(load, tables))
    if with_kv:
        out["kv"] = tables.get("kv", {})
    return out
