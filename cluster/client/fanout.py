"""Broker-side fan-out to every NameServer: the twin of Java's BrokerOuterAPI.

``register_broker_all`` builds one REGISTER_BROKER frame, sends it to every
configured node in parallel and waits like a ``CountDownLatch`` with a timeout:
it returns when every node has answered or the timeout has passed, whichever is
first. Unlike Java it reports each node's outcome (ok / failed / timed out /
sent for oneway), so a slow node can be told from a dead one.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from cluster.client.connection import ConnectionPool, PooledClient, split_addrs
from cluster.client.errors import CallTimeout, ClientError, ProtocolError, RemoteError
from cluster.core.protocol import admin_bodies, body_common, register_body
from cluster.core.protocol.acl import Credentials
from cluster.core.protocol.codes import FLAG_ONEWAY, RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand

T = TypeVar("T")
CLIENT_VERSION = 409
REGISTER_TIMEOUT = 6.0  # registerBrokerTimeoutMills (4.9)
UNREGISTER_TIMEOUT = 3.0
QUERY_TIMEOUT = 6.0
# How much later than the deadline the latch gives up on a node's task.
LATCH_SLACK = 0.05

Parser = Callable[[RemotingCommand, str], Any]


class Status(enum.Enum):
    OK = "ok"
    SENT = "sent"
    FAILED = "failed"
    TIMED_OUT = "timed_out"


@dataclass(frozen=True, slots=True)
class NodeOutcome:
    """What one node did with one fan-out request."""

    addr: str
    status: Status
    value: Any = None
    error: ClientError | None = None
    elapsed: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in (Status.OK, Status.SENT)


@dataclass(frozen=True, slots=True)
class FanoutResult:
    """Per-node outcomes of one fan-out, in the configured node order."""

    outcomes: dict[str, NodeOutcome]
    elapsed: float

    def with_status(self, *statuses: Status) -> list[str]:
        return [a for a, o in self.outcomes.items() if o.status in statuses]

    @property
    def ok(self) -> list[str]:
        return self.with_status(Status.OK, Status.SENT)

    @property
    def failed(self) -> list[str]:
        return self.with_status(Status.FAILED)

    @property
    def timed_out(self) -> list[str]:
        return self.with_status(Status.TIMED_OUT)

    @property
    def all_ok(self) -> bool:
        return all(o.ok for o in self.outcomes.values())

    def first_value(self) -> Any:
        """The first successful node's value (Java uses ``list.get(0)``)."""
        for outcome in self.outcomes.values():
            if outcome.status is Status.OK:
                return outcome.value
        return None

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Status}
        for outcome in self.outcomes.values():
            out[outcome.status.value] += 1
        return out


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    """The header fields that name one broker (master: ``broker_id`` 0)."""

    cluster_name: str
    broker_name: str
    broker_addr: str
    broker_id: int = 0
    ha_server_addr: str = ""


@dataclass(frozen=True, slots=True)
class RegisterBrokerResult:
    """A REGISTER_BROKER reply: HA/master address (slaves) and ORDER_TOPIC_CONFIG."""

    ha_server_addr: str | None = None
    master_addr: str | None = None
    kv_table: dict[str, str] | None = None


@dataclass(frozen=True, slots=True)
class DataVersionReply:
    """A QUERY_DATA_VERSION reply: ``changed`` and the node's stored version."""

    changed: bool
    data_version: Any = None


@dataclass(frozen=True, slots=True)
class RegisterPayload:
    """A RegisterBrokerBody encoded once for every node, with its masked CRC32."""

    body: bytes
    crc32: int
    compressed: bool
    topic_count: int = 0

    @classmethod
    def build(cls, data_version: Mapping[str, int],
              topic_configs: Mapping[str, Mapping[str, Any]],
              filter_servers: Sequence[str] = (), compressed: bool = False) -> RegisterPayload:
        """``topic_configs``: name -> TopicConfig dict, in the order the broker sends them."""
        body = register_body.encode_register_body(data_version, topic_configs,
                                                  list(filter_servers), compressed)
        return cls(body, body_common.crc32_java(body), compressed, len(topic_configs))


# ------------------------------------------------------------------ commands


def register_command(who: BrokerIdentity, payload: RegisterPayload, *,
                     version: int = CLIENT_VERSION, oneway: bool = False) -> RemotingCommand:
    """REGISTER_BROKER with extFields in the Java broker's order."""
    ext = {
        "brokerId": str(who.broker_id),
        "bodyCrc32": str(payload.crc32),
        "clusterName": who.cluster_name,
        "brokerAddr": who.broker_addr,
        "haServerAddr": who.ha_server_addr,
        "compressed": "true" if payload.compressed else "false",
        "brokerName": who.broker_name,
    }
    return RemotingCommand(code=RequestCode.REGISTER_BROKER, version=version,
                           flag=FLAG_ONEWAY if oneway else 0, ext_fields=ext, body=payload.body)


def _broker_key_fields(who: BrokerIdentity) -> dict[str, str]:
    return {
        "brokerId": str(who.broker_id),
        "clusterName": who.cluster_name,
        "brokerAddr": who.broker_addr,
        "brokerName": who.broker_name,
    }


def unregister_command(who: BrokerIdentity, *, version: int = CLIENT_VERSION) -> RemotingCommand:
    return RemotingCommand(code=RequestCode.UNREGISTER_BROKER, version=version,
                           ext_fields=_broker_key_fields(who))


def query_data_version_command(who: BrokerIdentity, data_version: Any, *,
                               version: int = CLIENT_VERSION) -> RemotingCommand:
    return RemotingCommand(code=RequestCode.QUERY_DATA_VERSION, version=version,
                           ext_fields=_broker_key_fields(who),
                           body=body_common.encode_data_version(data_version))


# ------------------------------------------------------------------- parsers


def expect_success(resp: RemotingCommand, addr: str) -> RemotingCommand:
    if resp.code != ResponseCode.SUCCESS:
        raise RemoteError(resp.code, resp.remark, addr)
    return resp


def decode_body(decoder: Callable[[bytes], T], body: bytes, addr: str) -> T:
    try:
        return decoder(body)
    except body_common.BodyError as exc:
        raise ProtocolError(f"bad reply body: {exc}", addr) from None


def parse_register(resp: RemotingCommand, addr: str) -> RegisterBrokerResult:
    expect_success(resp, addr)
    kv = (decode_body(admin_bodies.decode_register_result_body, resp.body, addr)
          if resp.body else None)
    return RegisterBrokerResult(resp.field("haServerAddr"), resp.field("masterAddr"), kv)


def parse_unregister(resp: RemotingCommand, addr: str) -> None:
    expect_success(resp, addr)


def parse_data_version(resp: RemotingCommand, addr: str) -> DataVersionReply:
    expect_success(resp, addr)
    changed = (resp.field("changed") or "").lower() == "true"
    dv = decode_body(body_common.decode_data_version, resp.body, addr) if resp.body else None
    return DataVersionReply(changed, dv)


# ------------------------------------------------------------------- fan-out


async def _one(pool: ConnectionPool, addr: str, opaque: int, frame: bytes, deadline: float,
               parse: Parser | None) -> NodeOutcome:
    loop = asyncio.get_running_loop()
    start = loop.time()
    try:
        if parse is None:
            await pool.oneway_frame(addr, frame, deadline)
            return NodeOutcome(addr, Status.SENT, elapsed=loop.time() - start)
        resp = await pool.request_frame(addr, opaque, frame, deadline)
        value = parse(resp, addr)
        return NodeOutcome(addr, Status.OK, value, elapsed=loop.time() - start)
    except CallTimeout as exc:
        return NodeOutcome(addr, Status.TIMED_OUT, error=exc, elapsed=loop.time() - start)
    except ClientError as exc:
        return NodeOutcome(addr, Status.FAILED, error=exc, elapsed=loop.time() - start)
    except Exception as exc:  # a reply the parser could not make sense of
        err = ProtocolError(f"unexpected reply: {exc!r}", addr)
        return NodeOutcome(addr, Status.FAILED, error=err, elapsed=loop.time() - start)


async def fanout_frame(pool: ConnectionPool, addrs: Sequence[str], opaque: int, frame: bytes,
                       deadline: float, parse: Parser | None) -> FanoutResult:
    """Send ``frame`` to every node; return when all answered or at ``deadline``."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    tasks = {a: loop.create_task(_one(pool, a, opaque, frame, deadline, parse)) for a in addrs}
    try:
        if tasks:
            await asyncio.wait(tasks.values(), timeout=max(0.0, deadline - start) + LATCH_SLACK)
    except asyncio.CancelledError:
        for task in tasks.values():
            task.cancel()
        raise
    outcomes = {a: _collect(a, t, loop.time() - start) for a, t in tasks.items()}
    return FanoutResult(outcomes, loop.time() - start)


def _collect(addr: str, task: asyncio.Task[NodeOutcome], elapsed: float) -> NodeOutcome:
    if task.done() and not task.cancelled():
        return task.result()
    task.cancel()
    err = CallTimeout("no outcome by the deadline", addr)
    return NodeOutcome(addr, Status.TIMED_OUT, error=err, elapsed=elapsed)


class BrokerOuterAPI(PooledClient):
    """Fan-out REGISTER/UNREGISTER/QUERY_DATA_VERSION to every configured NameServer.

    Owns a ``ConnectionPool`` (and its ``IoLoop``, signing with ``credentials``) unless
    one is passed in. Every method has a blocking form (safe from any thread but the loop's) and
    an ``_async`` form for code already on ``self.io.loop``.
    """

    def __init__(self, namesrv_addrs: str | Iterable[str], *, pool: ConnectionPool | None = None,
                 version: int = CLIENT_VERSION, register_timeout: float = REGISTER_TIMEOUT,
                 connect_timeout: float = 3.0, credentials: Credentials | None = None) -> None:
        super().__init__(pool, connect_timeout=connect_timeout, credentials=credentials)
        self.version = version
        self.register_timeout = register_timeout
        self.addrs = namesrv_addrs

    @property
    def addrs(self) -> list[str]:
        return list(self._addrs)

    @addrs.setter
    def addrs(self, value: str | Iterable[str]) -> None:
        self._addrs = split_addrs(value) if isinstance(value, str) else split_addrs(";".join(value))

    # -------------------------------------------------------------- core

    def _start(self, cmd: RemotingCommand, timeout: float) -> tuple[int, bytes, float]:
        opaque, frame = self.pool.prepare(cmd)
        return opaque, frame, self.pool.deadline(timeout)

    async def fanout_async(self, cmd: RemotingCommand, timeout: float, parse: Parser | None,
                           addrs: Sequence[str] | None = None) -> FanoutResult:
        opaque, frame, deadline = self._start(cmd, timeout)
        targets = self.addrs if addrs is None else list(addrs)
        return await fanout_frame(self.pool, targets, opaque, frame, deadline, parse)

    def fanout(self, cmd: RemotingCommand, timeout: float, parse: Parser | None,
               addrs: Sequence[str] | None = None) -> FanoutResult:
        """Blocking fan-out; the frame is encoded on the caller's thread."""
        opaque, frame, deadline = self._start(cmd, timeout)
        targets = self.addrs if addrs is None else list(addrs)
        coro = fanout_frame(self.pool, targets, opaque, frame, deadline, parse)
        return self.io.run(coro, timeout + LATCH_SLACK)

    # --------------------------------------------------------- operations

    def register_broker_all(self, who: BrokerIdentity, payload: RegisterPayload, *,
                            oneway: bool = False, timeout: float | None = None,
                            addrs: Sequence[str] | None = None) -> FanoutResult:
        cmd = register_command(who, payload, version=self.version, oneway=oneway)
        return self.fanout(cmd, timeout or self.register_timeout,
                           None if oneway else parse_register, addrs)

    async def register_broker_all_async(self, who: BrokerIdentity, payload: RegisterPayload, *,
                                        oneway: bool = False, timeout: float | None = None,
                                        addrs: Sequence[str] | None = None) -> FanoutResult:
        cmd = register_command(who, payload, version=self.version, oneway=oneway)
        return await self.fanout_async(cmd, timeout or self.register_timeout,
                                       None if oneway else parse_register, addrs)

    def unregister_broker_all(self, who: BrokerIdentity, *, timeout: float = UNREGISTER_TIMEOUT,
                              addrs: Sequence[str] | None = None) -> FanoutResult:
        cmd = unregister_command(who, version=self.version)
        return self.fanout(cmd, timeout, parse_unregister, addrs)

    async def unregister_broker_all_async(self, who: BrokerIdentity, *,
                                          timeout: float = UNREGISTER_TIMEOUT,
                                          addrs: Sequence[str] | None = None) -> FanoutResult:
        cmd = unregister_command(who, version=self.version)
        return await self.fanout_async(cmd, timeout, parse_unregister, addrs)

    def query_data_version(self, who: BrokerIdentity, data_version: Any, *,
                           timeout: float = QUERY_TIMEOUT,
                           addrs: Sequence[str] | None = None) -> FanoutResult:
        cmd = query_data_version_command(who, data_version, version=self.version)
        return self.fanout(cmd, timeout, parse_data_version, addrs)

    async def query_data_version_async(self, who: BrokerIdentity, data_version: Any, *,
                                       timeout: float = QUERY_TIMEOUT,
                                       addrs: Sequence[str] | None = None) -> FanoutResult:
        cmd = query_data_version_command(who, data_version, version=self.version)
        return await self.fanout_async(cmd, timeout, parse_data_version, addrs)

    def need_register(self, who: BrokerIdentity, data_version: Any, *,
                      timeout: float = QUERY_TIMEOUT) -> tuple[bool, FanoutResult]:
        result = self.query_data_version(who, data_version, timeout=timeout)
        return needs_registration(result, data_version), result


def needs_registration(result: FanoutResult, data_version: Any) -> bool:
    """Java ``needRegister``: any node changed, holding another version, or unreachable.

    A node that answered with a non-SUCCESS code counts as unchanged, as in Java.
    """
    for outcome in result.outcomes.values():
        if outcome.status is Status.OK:
            reply: DataVersionReply = outcome.value
            if reply.changed or (reply.data_version is not None
                                 and not body_common.data_version_equal(reply.data_version,
                                                                        data_version)):
                return True
        elif not isinstance(outcome.error, RemoteError):
            return True
    return False
