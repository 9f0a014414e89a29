"""Read every node of a cluster in rounds, as snapshots, whatever NameServer it is.

A pynamesrv node answers GET_NODE_SNAPSHOT (60001) with its tables in one read
transaction. Any other NameServer is read through RocketMQ's own codes
(``cluster.audit.standard_view``): Java 4.9.x never answers an unknown code (the caller
times out), 5.x answers REQUEST_CODE_NOT_SUPPORTED (3). The first contact with a node
sends 60001 and GET_NAMESRV_CONFIG with ``all=true`` together: a snapshot, or code 3,
settles it; a config without pynamesrv's own settings settles it at once (no wait for a
60001 that 4.9 never answers); otherwise the snapshot is waited for, and a node that
answers the config but never the snapshot is read the standard way too, and so is a
pynamesrv node whose snapshot does not fit in a frame (16 MiB). The kind is
remembered per node until the node fails to answer (it may come back as another
NameServer).

A snapshot keeps its own fields (``node``, ``run``, ``seq``, ``takenAt``: the node's clock);
a node read the standard way is dated by the reader's clock when it was asked.

Every request of a node goes over one connection with at most ``concurrency`` in flight,
and a round sends a node at most ``budget`` requests; its cost (requests, bytes) is in
each ``NodeRead``. Once any node is read the standard way, every node's tables are
compared in that view (snapshots are cut to it), so the nodes stay comparable.

``ClusterReader(nodes, limits, origin=...).read_round()`` -> {node name: NodeRead}; the
reads of one round are concurrent. ``origin`` goes with every request as the
``pynamesrvOrigin`` extField (README "Metrics"; Java ignores it).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from cluster.audit import standard_view as sv
from cluster.client.connection import ConnectionPool, PooledClient
from cluster.client.errors import ClientError, ProtocolError
from cluster.core.clock import wall_ms
from cluster.core.protocol import admin_bodies, route_bodies
from cluster.core.protocol.acl import Credentials
from cluster.core.protocol.admin_bodies import ORDER_TOPIC_CONFIG
from cluster.core.protocol.codes import ORIGIN_FIELD, RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.properties import parse_properties
from cluster.core.settings_schema import BY_KEY

T = TypeVar("T")
RQ = RequestCode
# A setting only pynamesrv reports (GET_NAMESRV_CONFIG with all=true): the node answers 60001.
EXTENSION_KEY = BY_KEY["ioWorkers"].key
FIXED_REQUESTS = 2  # 106 and 206 each round, besides one 219 per namespace
CLIENT_VERSION = 409


class Kind(enum.Enum):
    SNAPSHOT = "snapshot"  # answers GET_NODE_SNAPSHOT (pynamesrv)
    STANDARD = "standard"  # read through RocketMQ's own request codes


@dataclass(frozen=True)
class ReadLimits:
    """How a node is read: per-request timeout, requests in flight, requests per round,
    the KV namespaces asked for, and ``force`` (None: detect the kind per node)."""

    timeout_s: float = 3.0
    concurrency: int = 4
    budget: int = 2000
    namespaces: tuple[str, ...] = (ORDER_TOPIC_CONFIG,)
    force: Kind | None = None

    def __post_init__(self) -> None:
        if self.timeout_s <= 0 or self.concurrency < 1:
            raise ValueError("timeout and concurrency must be positive")
        if self.budget < FIXED_REQUESTS + len(self.namespaces) + 1:
            raise ValueError(f"a budget of {self.budget} requests leaves no room for routes "
                             f"({FIXED_REQUESTS + len(self.namespaces)} are fixed per round)")


@dataclass
class NodeRead:
    """One node's answer to one round: a snapshot-shaped body, or why there is none."""

    node: str
    addr: str
    asked_at: int
    kind: Kind | None = None
    snapshot: dict[str, Any] | None = None
    error: str | None = None
    requests: int = 0
    sent_bytes: int = 0
    received_bytes: int = 0
    routes_read: int = 0
    listed: list[str] = field(default_factory=list)
    failure: NodeFailed | None = None
    meta: dict[str, Any] = field(default_factory=dict)  # a snapshot's own fields but tables


class NodeFailed(Exception):
    """The node's read failed this round; str() says why, ``cause`` is the client error
    (timeout, lost connection, ...) when there was one."""

    def __init__(self, why: str, cause: ClientError | None = None) -> None:
        super().__init__(why)
        self.cause = cause


@dataclass
class _Node:
    name: str
    addr: str
    kind: Kind | None = None
    cache: sv.TopicCache = field(default_factory=sv.TopicCache)
    slots: asyncio.Semaphore | None = None  # requests in flight (made on the loop)


class ClusterReader(PooledClient):
    """Reads the nodes ``{name: "host:port"}`` in rounds; blocking, for one thread at a time."""

    def __init__(self, nodes: Mapping[str, str], limits: ReadLimits | None = None, *,
                 origin: str = "", pool: ConnectionPool | None = None,
                 credentials: Credentials | None = None,
                 clock: Callable[[], int] = wall_ms) -> None:
        super().__init__(pool, connect_timeout=(limits or ReadLimits()).timeout_s,
                         credentials=credentials)
        self.limits = limits or ReadLimits()
        # a pynamesrv node counts requests with this extField apart from client traffic
        self._origin = {ORIGIN_FIELD: origin} if origin else {}
        self.clock = clock
        self._nodes = {name: _Node(name, addr) for name, addr in nodes.items()}
        self._rotation = sv.TopicRotation()
        self._round = 0
        self.standard_view = self.limits.force is Kind.STANDARD

    def kind(self, node: str) -> Kind | None:
        return self._nodes[node].kind

    def set_nodes(self, nodes: Mapping[str, str]) -> None:
        """Read these nodes from now on; a node kept (same name and address) keeps its kind
        and readings."""
        self._nodes = {name: old if (old := self._nodes.get(name)) and old.addr == addr
                       else _Node(name, addr) for name, addr in nodes.items()}

    def read_round(self) -> dict[str, NodeRead]:
        """Read every node once; a node that fails is a NodeRead with ``error``."""
        lim = self.limits
        bound = lim.timeout_s * (4 + lim.budget / lim.concurrency)
        reads = self.io.run(self._read_all(), bound)
        self._round += 1
        return reads

    def read_node(self, node: str) -> dict[str, Any]:
        """One node's snapshot-shaped body (a round of that node alone). Raises the client
        error that failed it (``cluster.client.errors``), else NodeFailed."""
        lim = self.limits
        bound = lim.timeout_s * (4 + lim.budget / lim.concurrency)
        read = self.io.run(self._read_all([node]), bound)[node]
        self._round += 1
        if read.snapshot is None:
            failure = read.failure or NodeFailed(read.error or "no answer")
            raise failure.cause or failure
        return read.snapshot

    # ------------------------------------------------------------------ one round

    async def _read_all(self, names: list[str] | None = None) -> dict[str, NodeRead]:
        nodes = [self._nodes[n] for n in (names or self._nodes)]
        reads = {n.name: NodeRead(n.name, n.addr, self.clock()) for n in nodes}
        before = {n.name: self.pool.traffic(n.addr) for n in nodes}
        firsts = await asyncio.gather(*(self._first(n, reads[n.name]) for n in nodes))
        answered = {n.name: tables for n, tables in zip(nodes, firsts, strict=True)
                    if tables is not None}
        if any(n.kind is Kind.STANDARD for n in nodes):
            self.standard_view = True
        if self.standard_view:
            await self._routes(nodes, reads, answered)
        for n in nodes:
            read = reads[n.name]
            if n.name in answered and read.error is None:
                meta = read.meta or {"node": n.name, "takenAt": read.asked_at}
                read.snapshot = {**meta, "tables": answered[n.name]}
            sent, received = self.pool.traffic(n.addr)
            read.sent_bytes = sent - before[n.name][0]
            read.received_bytes = received - before[n.name][1]
        return reads

    async def _first(self, node: _Node, read: NodeRead) -> dict[str, Any] | None:
        """The node's kind, then its snapshot tables or its standard tables without routes."""
        try:
            snapshot = await self._settle_kind(node, read)
            if node.kind is Kind.SNAPSHOT and snapshot is None:
                snapshot = await self._snapshot_or_none(node, read)
            read.kind = node.kind
            if node.kind is Kind.SNAPSHOT:
                assert snapshot is not None
                tables = snapshot.get("tables")
                if not isinstance(tables, dict):
                    raise NodeFailed("snapshot has no tables")
                read.listed = list(tables.get("topic") or {})
                read.meta = {k: v for k, v in snapshot.items() if k != "tables"}
                return tables
            return await self._standard_base(node, read)
        except NodeFailed as exc:
            self._failed(node, read, exc)
            return None

    def _failed(self, node: _Node, read: NodeRead, exc: NodeFailed) -> None:
        read.error = str(exc)
        read.failure = exc
        node.kind = None  # it may come back as another NameServer
        node.cache.clear()

    # ------------------------------------------------------------------ requests

    async def _call(self, node: _Node, read: NodeRead, code: int,
                    ext: dict[str, str] | None = None) -> RemotingCommand:
        """One request within the node's ``concurrency``."""
        if node.slots is None:
            node.slots = asyncio.Semaphore(self.limits.concurrency)
        async with node.slots:
            return await self._send(node, read, code, ext)

    async def _send(self, node: _Node, read: NodeRead, code: int,
                    ext: dict[str, str] | None = None) -> RemotingCommand:
        read.requests += 1
        fields = {**(ext or {}), **self._origin}
        cmd = RemotingCommand(code=int(code), version=CLIENT_VERSION, ext_fields=fields or None)
        try:
            return await self.pool.request(node.addr, cmd, self.limits.timeout_s)
        except ClientError as exc:
            raise NodeFailed(f"{RQ(code).name}: {exc}", exc) from None

    async def _decoded(self, node: _Node, read: NodeRead, code: int,
                       decode: Callable[[bytes | None], T], ext: dict[str, str] | None = None,
                       ok: tuple[int, ...] = ()) -> T | None:
        """The decoded body of a SUCCESS reply; None for a code in ``ok``; else NodeFailed."""
        reply = await self._call(node, read, code, ext)
        if reply.code in ok:
            return None
        if reply.code != ResponseCode.SUCCESS:
            raise NodeFailed(f"{RQ(code).name}: response code {reply.code} "
                             f"{reply.remark or ''}".strip())
        try:
            return decode(reply.body)
        except ValueError as exc:  # BodyError included
            raise NodeFailed(f"{RQ(code).name}: unreadable body: {exc}") from None

    async def _snapshot_or_none(self, node: _Node, read: NodeRead) -> dict[str, Any] | None:
        """The snapshot; None (and the node read the standard way from now on) when its
        frame cannot be read, e.g. larger than the frame limit."""
        try:
            body = await self._decoded(node, read, RQ.GET_NODE_SNAPSHOT, _json_object)
        except NodeFailed as exc:
            if not isinstance(exc.cause, ProtocolError):
                raise
            node.kind = Kind.STANDARD
            return None
        assert body is not None
        return body

    # ------------------------------------------------------------------ kind

    async def _settle_kind(self, node: _Node, read: NodeRead) -> dict[str, Any] | None:
        """Decide the node's kind if unknown; returns the snapshot the probe got, if any."""
        if node.kind is not None:
            return None
        if self.limits.force is not None:
            node.kind = self.limits.force
            return None
        # the two go together, outside the node's slots: 4.9 never answers the first
        snap = asyncio.ensure_future(self._send(node, read, RQ.GET_NODE_SNAPSHOT))
        conf = asyncio.ensure_future(self._send(node, read, RQ.GET_NAMESRV_CONFIG,
                                                {"all": "true"}))
        try:
            return await self._probe(node, read, snap, conf)
        finally:
            for task in (snap, conf):
                if not task.done():
                    task.cancel()
            await asyncio.gather(snap, conf, return_exceptions=True)

    async def _probe(self, node: _Node, read: NodeRead, snap: asyncio.Future[RemotingCommand],
                     conf: asyncio.Future[RemotingCommand]) -> dict[str, Any] | None:
        await asyncio.wait([snap, conf], return_when=asyncio.FIRST_COMPLETED)
        if not snap.done() and _is_foreign(conf):
            node.kind = Kind.STANDARD  # Java: no need to wait for a 60001 4.9 never answers
            return None
        await asyncio.wait([snap])
        failed = snap.exception()
        if isinstance(failed, NodeFailed) and isinstance(failed.cause, ProtocolError):
            node.kind = Kind.STANDARD  # a snapshot it cannot send whole (too large)
            return None
        if failed is None:
            reply = snap.result()
            if reply.code != ResponseCode.SUCCESS:
                node.kind = Kind.STANDARD  # 5.x: REQUEST_CODE_NOT_SUPPORTED
                return None
            node.kind = Kind.SNAPSHOT
            try:
                return _json_object(reply.body)
            except ValueError as exc:
                raise NodeFailed(f"snapshot is not a JSON object: {exc}") from None
        if conf.done() and conf.exception() is None and conf.result().code == 0:
            node.kind = Kind.STANDARD  # answers, but not 60001
            return None
        raise failed if isinstance(failed, NodeFailed) else NodeFailed(str(failed))

    # ------------------------------------------------------------------ standard reads

    async def _standard_base(self, node: _Node, read: NodeRead) -> dict[str, Any]:
        """106, 206 and one 219 per namespace, together; the topic table comes later."""
        ns = self.limits.namespaces
        info, topics, *kvs = await _all([
            self._decoded(node, read, RQ.GET_BROKER_CLUSTER_INFO,
                          route_bodies.decode_cluster_info),
            self._decoded(node, read, RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
                          admin_bodies.decode_topic_list),
            *(self._decoded(node, read, RQ.GET_KVLIST_BY_NAMESPACE, admin_bodies.decode_kv_table,
                            {"namespace": n}, ok=(ResponseCode.QUERY_NOT_FOUND,)) for n in ns)])
        assert info is not None and topics is not None
        read.listed = list(topics["topicList"])
        tables = sv.cluster_tables(info)
        tables["kv"] = {n: dict(sorted(kv.items())) for n, kv in zip(ns, kvs, strict=True) if kv}
        return tables

    async def _routes(self, nodes: list[_Node], reads: dict[str, NodeRead],
                      answered: dict[str, dict[str, Any]]) -> None:
        """This round's slice of routes on every node that answered; the topic tables."""
        listed = {n: reads[n].listed for n in answered}
        presence = sv.presence_of(listed)
        missing = {t for t, on in presence.items()
                   if any(t not in self._nodes[n].cache.values for n in on)}
        room = self.limits.budget - FIXED_REQUESTS - len(self.limits.namespaces)
        chosen = self._rotation.pick(presence, missing, room, self._round)
        ok = await asyncio.gather(*(self._fresh_routes(n, reads[n.name], answered[n.name],
                                                       chosen) for n in nodes
                                    if n.name in answered))
        done = {name for name, fine in zip([n.name for n in nodes if n.name in answered], ok,
                                           strict=True) if fine}
        caches = {name: self._nodes[name].cache for name in done}
        topics = sv.topic_tables({t: on & done for t, on in presence.items()}, caches)
        for name in done:
            answered[name] = {**sv.project(answered[name], self.limits.namespaces),
                              "topic": topics[name]}

    async def _fresh_routes(self, node: _Node, read: NodeRead, tables: dict[str, Any],
                            chosen: list[str]) -> bool:
        listed = set(read.listed)
        wanted = [t for t in chosen if t in listed]
        try:
            if node.kind is Kind.SNAPSHOT:
                brokers, queues = tables.get("broker") or {}, tables.get("topic") or {}
                fresh = {t: queues[t] if sv.routable(queues[t], brokers) else None
                         for t in wanted}
            else:
                fresh = await self._read_routes(node, read, wanted, tables.get("broker") or {})
        except NodeFailed as exc:
            self._failed(node, read, exc)
            return False
        node.cache.update(listed, fresh)
        read.routes_read = len(wanted)
        return True

    async def _read_routes(self, node: _Node, read: NodeRead, topics: list[str],
                           brokers: Mapping[str, Any]) -> dict[str, dict[str, Any] | None]:
        queue = iter(topics)
        fresh: dict[str, dict[str, Any] | None] = {}

        async def worker() -> None:
            for topic in queue:
                route = await self._decoded(node, read, RQ.GET_ROUTEINFO_BY_TOPIC,
                                            route_bodies.decode_topic_route, {"topic": topic},
                                            ok=(ResponseCode.TOPIC_NOT_EXIST,))
                fresh[topic] = None if route is None else sv.route_queues(route)

        await _all([worker() for _ in range(min(self.limits.concurrency, len(topics)))])
        return fresh


def _is_foreign(conf: asyncio.Future[RemotingCommand]) -> bool:
    """The GET_NAMESRV_CONFIG reply came and does not list pynamesrv's own settings."""
    if not conf.done() or conf.exception() is not None:
        return False
    reply = conf.result()
    if reply.code != ResponseCode.SUCCESS:
        return False
    text = (reply.body or b"").decode("utf-8", "replace")
    return EXTENSION_KEY not in parse_properties(text)


def _json_object(body: bytes | None) -> dict[str, Any]:
    try:
        obj = orjson.loads(body or b"")
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    return obj


async def _all(aws: list[Awaitable[Any]]) -> list[Any]:
    """gather that cancels the rest when one fails (a failed node stops at once)."""
    tasks = [asyncio.ensure_future(a) for a in aws]
    try:
        return list(await asyncio.gather(*tasks))
    finally:
        for t in tasks:
            if not t.done():
                t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
