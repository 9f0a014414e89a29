"""Request processors of a node following 5.x (``rocketmqVersion`` 5.5.0) where 5.5.0
answers differently from 4.9.8 (`worker.business.processors` holds the others and the dispatch).

Header fields are read as 5.x reads them: a field a header class requires (``@CFNotNull``)
is not checked at all (its check is swallowed), so a missing field is null and fails only
where Java dereferences it (SYSTEM_ERROR, as Java's NullPointerException), or is passed
over where Java catches the failure itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from cluster.core.protocol import body_common, route_bodies
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand, response_to
from cluster.core.protocol.lenient import loads_lenient
from state import nsconfig, queries, route5
from worker.business.context import NodeContext
from worker.business.handler_kit import (
    MissingField,
    crc_ok,
    ok,
    order_kv_body,
    present,
    registration_body,
)

RC = ResponseCode
REGISTER_FAILED = "register broker failed"
# GetBrokerMemberGroup's response is made with no header class, whose remark 5.x keeps.
UNSET_REMARK = "not set any response code"


_LONG = re.compile(r"[+-]?[0-9]{1,19}")


def _java_long(text: str | None) -> int | None:
    """``Long.parseLong`` of a header value; None when absent or when Java's parse fails
    (the field then stays null)."""
    if text is None or not _LONG.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _registration(ctx: NodeContext, cmd: RemotingCommand, now: int, broker_id: int
                  ) -> route5.Registration | None:
    cluster, addr, name = (cmd.field(k) for k in ("clusterName", "brokerAddr", "brokerName"))
    if cluster is None or addr is None or name is None:
        return None  # Java fails inside registerBroker, catches it and answers SUCCESS
    parts = registration_body(cmd, now)
    acting = cmd.field("enableActingMaster")
    return route5.Registration(
        cluster=cluster, addr=addr, name=name, broker_id=broker_id,
        ha_addr=cmd.field("haServerAddr"), data_version=route5.data_version(parts.data_version),
        table=parts.table, filters=parts.filters, channel="", zone=cmd.field("__ZONE_NAME"),
        timeout=_java_long(cmd.field("heartbeatTimeoutMillis")),
        acting=None if acting is None else acting.lower() == "true", mappings=parts.mappings)


def register_broker(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                    ) -> RemotingCommand:
    if not crc_ok(cmd):
        return response_to(cmd, RC.SYSTEM_ERROR, "crc32 not match", ext_fields={})
    broker_id = _java_long(cmd.field("brokerId"))
    if broker_id is None:
        raise MissingField("header field brokerId is null")
    now = ctx.clock()
    reg = _registration(ctx, cmd, now, broker_id)
    if reg is None:
        return ok(cmd, {})
    reg.channel = channel
    route5.decode_ahead(ctx.store, reg)
    with ctx.store.write() as t:
        result = route5.register_broker(
            t, reg, now, nsconfig.get_bool(t, "deleteTopicWithBrokerRegistration"))
        body = order_kv_body(t, True)
    if result is None:  # a single topic before the broker's first registration
        return response_to(cmd, RC.SYSTEM_ERROR, REGISTER_FAILED, ext_fields={})
    return ok(cmd, present(result), body)


def unregister_broker(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                      ) -> RemotingCommand:
    """Answered at once, as 5.x answers when it queues the request; applied before."""
    cluster, addr = cmd.field("clusterName"), cmd.field("brokerAddr")
    if cluster is not None and addr is not None:
        with ctx.store.write() as t:
            route5.apply_unregistrations(
                t, [route5.Unregistration(cluster, addr, cmd.field("brokerName"))])
    return ok(cmd)


def _live_key_fields(cmd: RemotingCommand) -> tuple[str, str]:
    """(cluster, address): 5.x hashes both into the live table's key and fails on null."""
    cluster, addr = cmd.field("clusterName"), cmd.field("brokerAddr")
    if cluster is None or addr is None:
        raise MissingField("header field clusterName or brokerAddr is null")
    return cluster, addr


def query_data_version(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                       ) -> RemotingCommand:
    dv = body_common._data_version(loads_lenient(cmd.body), "DataVersion", ctx.clock()) \
        if cmd.body else None
    cluster, addr = _live_key_fields(cmd)
    with ctx.store.write() as t:
        changed, stored = route5.query_data_version(t, cluster, addr, dv, ctx.clock())
    body = body_common.encode_data_version(stored, True) if stored is not None else None
    return ok(cmd, {"changed": "true" if changed else "false"}, body)


def broker_heartbeat(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                     ) -> RemotingCommand:
    cluster, addr = _live_key_fields(cmd)
    with ctx.store.write() as t:
        route5.broker_heartbeat(t, cluster, addr, ctx.clock())
    return ok(cmd)


def get_broker_member_group(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                            ) -> RemotingCommand:
    cluster, name = cmd.field("clusterName"), cmd.field("brokerName")
    with ctx.store.read() as t:
        addrs = queries.broker_member_group(t, name) if name is not None else {}
    body = route_bodies.encode_broker_member_group(cluster, name, addrs, True)
    return response_to(cmd, RC.SUCCESS, UNSET_REMARK, body=body)


Handler = Callable[[NodeContext, RemotingCommand, str, str], RemotingCommand]
RQ = RequestCode
OVERRIDES: dict[int, Handler] = {
    RQ.REGISTER_BROKER: register_broker,
    RQ.UNREGISTER_BROKER: unregister_broker,
    RQ.QUERY_DATA_VERSION: query_data_version,
    RQ.BROKER_HEARTBEAT: broker_heartbeat,
    RQ.GET_BROKER_MEMBER_GROUP: get_broker_member_group,
}
