"""NameServer client: route lookup, cluster info, topic lists, KV and config admin.

Reads go to one node chosen like Java's ``NettyRemotingClient``: stick to the
chosen node while its connection is healthy; otherwise try the next nodes in
turn (a random start index) until one connects. A call that fails on the
chosen node (timeout, lost connection, garbage) drops that choice, so the next
call moves on to the next node. Writes that Java's admin tools send to every
NameServer (KV puts/deletes, config updates) fan out to all nodes and report
each node's outcome.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from cluster.client.connection import ConnectionPool, PooledClient, split_addrs
from cluster.client.errors import ClientError, ConnectError, RemoteError
from cluster.client.fanout import (
    CLIENT_VERSION,
    FanoutResult,
    Parser,
    decode_body,
    expect_success,
    fanout_frame,
)
from cluster.core.protocol import admin_bodies, route_bodies
from cluster.core.protocol.acl import Credentials
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.properties import format_properties, parse_properties

DEFAULT_TIMEOUT = 3.0  # mqClientApiTimeout


def _command(code: int, ext: dict[str, str] | None = None, body: bytes | None = None,
             version: int = CLIENT_VERSION) -> RemotingCommand:
    return RemotingCommand(code=int(code), version=version, ext_fields=ext, body=body)


class NameServerClient(PooledClient):
    """Talks to a list of NameServer nodes; blocking methods, safe from any thread.

    Owns a ``ConnectionPool`` (and its ``IoLoop``, signing with ``credentials``) unless
    one is passed in. Raises the ``cluster.client.errors`` tree: ``ConnectError`` when no node
    could be reached, ``CallTimeout``, ``RemoteError(code, remark)`` for a
    non-SUCCESS reply, ``ProtocolError`` for an unreadable reply.
    """

    def __init__(self, addrs: str | Iterable[str], *, timeout: float = DEFAULT_TIMEOUT,
                 pool: ConnectionPool | None = None, version: int = CLIENT_VERSION,
                 connect_timeout: float = 3.0, rng: random.Random | None = None,
                 credentials: Credentials | None = None) -> None:
        super().__init__(pool, connect_timeout=connect_timeout, credentials=credentials)
        self.timeout = timeout
        self.version = version
        self._rng = rng or random.Random()
        self._index = self._rng.randrange(999)
        self._chosen: str | None = None
        self._addrs: list[str] = []
        self.update_addrs(addrs)

    # --------------------------------------------------------- selection

    @property
    def addrs(self) -> list[str]:
        return list(self._addrs)

    @property
    def chosen(self) -> str | None:
        return self._chosen

    def update_addrs(self, addrs: str | Iterable[str]) -> None:
        """Java ``updateNameServerAddressList``: shuffle a changed list, keep a valid choice."""
        new = split_addrs(addrs) if isinstance(addrs, str) else split_addrs(";".join(addrs))
        if not new:
            raise ValueError("no NameServer address given")
        if set(new) == set(self._addrs):
            return
        self._rng.shuffle(new)
        self._addrs = new
        if self._chosen not in new:
            self._chosen = None

    async def _select(self, deadline: float) -> str:
        chosen = self._chosen
        if chosen is not None and self.pool.is_connected(chosen):
            return chosen
        errors: list[str] = []
        for _ in range(len(self._addrs)):
            self._index = (self._index + 1) % (1 << 31)
            addr = self._addrs[self._index % len(self._addrs)]
            try:
                await self.pool.connection(addr, deadline)
            except ConnectError as exc:
                errors.append(str(exc))
                continue
            self._chosen = addr
            return addr
        raise ConnectError("no NameServer reachable: " + "; ".join(errors))

    async def _invoke_any(self, cmd: RemotingCommand, timeout: float
                          ) -> tuple[str, RemotingCommand]:
        deadline = self.pool.deadline(timeout)
        addr = await self._select(deadline)
        opaque, frame = self.pool.prepare(cmd)
        try:
            return addr, await self.pool.request_frame(addr, opaque, frame, deadline)
        except ClientError:
            if self._chosen == addr:
                self._chosen = None
            self.pool.drop(addr, "dropped after a failed call")
            raise

    # ------------------------------------------------------------- calls

    def invoke(self, cmd: RemotingCommand, *, addr: str | None = None,
               timeout: float | None = None) -> RemotingCommand:
        """Send ``cmd`` to ``addr`` (or the chosen node) and return the raw reply."""
        t = self.timeout if timeout is None else timeout
        if addr is not None:
            return self.pool.call(addr, cmd, t)

        async def run() -> RemotingCommand:
            return (await self._invoke_any(cmd, t))[1]

        return self.io.run(run(), t)

    def _query(self, cmd: RemotingCommand, decoder: Callable[[bytes], Any] | None,
               addr: str | None = None) -> Any:
        resp = self.invoke(cmd, addr=addr)
        where = addr or self._chosen or "?"
        expect_success(resp, where)
        if decoder is None:
            return resp
        return decode_body(decoder, resp.body or b"", where) if resp.body else None

    def fanout(self, cmd: RemotingCommand, parse: Parser, *, addrs: Sequence[str] | None = None,
               timeout: float | None = None) -> FanoutResult:
        """Send ``cmd`` to every node (or ``addrs``) in parallel; per-node outcomes."""
        t = self.timeout if timeout is None else timeout
        opaque, frame = self.pool.prepare(cmd)
        targets = self.addrs if addrs is None else list(addrs)
        coro = fanout_frame(self.pool, targets, opaque, frame, self.pool.deadline(t), parse)
        return self.io.run(coro, t + 0.05)

    # ------------------------------------------------------------ routes

    def get_route(self, topic: str, *, addr: str | None = None) -> Any:
        """TopicRouteData of ``topic``; ``RemoteError`` code 17 when it has no route."""
        cmd = _command(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, version=self.version)
        route = self._query(cmd, route_bodies.decode_topic_route, addr)
        if route is None:
            raise RemoteError(ResponseCode.TOPIC_NOT_EXIST, "empty route body", addr)
        return route

    def get_cluster_info(self, *, addr: str | None = None) -> Any:
        cmd = _command(RequestCode.GET_BROKER_CLUSTER_INFO, version=self.version)
        return self._query(cmd, route_bodies.decode_cluster_info, addr)

    def get_all_topics(self, *, addr: str | None = None) -> Any:
        cmd = _command(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, version=self.version)
        return self._query(cmd, admin_bodies.decode_topic_list, addr)

    def get_topics_by_cluster(self, cluster: str, *, addr: str | None = None) -> Any:
        cmd = _command(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": cluster},
                       version=self.version)
        return self._query(cmd, admin_bodies.decode_topic_list, addr)

    # ---------------------------------------------------------------- KV

    def get_kv(self, namespace: str, key: str, *, addr: str | None = None) -> str | None:
        """The value, or None when the node answers QUERY_NOT_FOUND."""
        cmd = _command(RequestCode.GET_KV_CONFIG, {"namespace": namespace, "key": key},
                       version=self.version)
        resp = self.invoke(cmd, addr=addr)
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        expect_success(resp, addr or self._chosen or "?")
        return resp.field("value")

    def get_kv_list(self, namespace: str, *, addr: str | None = None) -> dict[str, str] | None:
        """The namespace's table, or None when the node does not know the namespace."""
        cmd = _command(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": namespace},
                       version=self.version)
        resp = self.invoke(cmd, addr=addr)
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        where = addr or self._chosen or "?"
        expect_success(resp, where)
        return (decode_body(admin_bodies.decode_kv_table, resp.body or b"", where)
                if resp.body else {})

    def put_kv(self, namespace: str, key: str, value: str, **kw: Any) -> FanoutResult:
        """PUT_KV_CONFIG to every node (as mqadmin updateKvConfig does)."""
        cmd = _command(RequestCode.PUT_KV_CONFIG,
                       {"namespace": namespace, "key": key, "value": value}, version=self.version)
        return self.fanout(cmd, _success, **kw)

    def delete_kv(self, namespace: str, key: str, **kw: Any) -> FanoutResult:
        cmd = _command(RequestCode.DELETE_KV_CONFIG, {"namespace": namespace, "key": key},
                       version=self.version)
        return self.fanout(cmd, _success, **kw)

    # ------------------------------------------------------------ config

    def get_namesrv_config(self, **kw: Any) -> FanoutResult:
        """GET_NAMESRV_CONFIG from every node; each OK value is a ``dict[str, str]``."""
        cmd = _command(RequestCode.GET_NAMESRV_CONFIG, version=self.version)
        return self.fanout(cmd, _properties, **kw)

    def update_namesrv_config(self, props: dict[str, str], **kw: Any) -> FanoutResult:
        body = format_properties(props).encode("utf-8")
        cmd = _command(RequestCode.UPDATE_NAMESRV_CONFIG, body=body, version=self.version)
        return self.fanout(cmd, _success, **kw)

    # ----------------------------------------------------- broker admin

    def wipe_write_perm(self, broker_name: str, **kw: Any) -> FanoutResult:
        cmd = _command(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": broker_name},
                       version=self.version)
        return self.fanout(cmd, _count_field("wipeTopicCount"), **kw)

    def add_write_perm(self, broker_name: str, **kw: Any) -> FanoutResult:
        cmd = _command(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": broker_name},
                       version=self.version)
        return self.fanout(cmd, _count_field("addTopicCount"), **kw)

    def delete_topic(self, topic: str, cluster: str | None = None, **kw: Any) -> FanoutResult:
        ext = {"topic": topic} if cluster is None else {"topic": topic, "clusterName": cluster}
        cmd = _command(RequestCode.DELETE_TOPIC_IN_NAMESRV, ext, version=self.version)
        return self.fanout(cmd, _success, **kw)


def _success(resp: RemotingCommand, addr: str) -> None:
    expect_success(resp, addr)


def _properties(resp: RemotingCommand, addr: str) -> dict[str, str]:
    expect_success(resp, addr)
    return parse_properties(resp.body.decode("utf-8", "replace")) if resp.body else {}


def _count_field(name: str) -> Parser:
    def parse(resp: RemotingCommand, addr: str) -> int:
        expect_success(resp, addr)
        return int(resp.field(name) or 0)
    return parse
