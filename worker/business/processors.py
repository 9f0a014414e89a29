"""Request processors: one small function per request code (DefaultRequestProcessor).

`handle` never raises. Unknown codes get REQUEST_CODE_NOT_SUPPORTED (5.x; 4.9
sends nothing and the caller times out), exceptions get SYSTEM_ERROR with
"ExceptionName: message", oneway requests run and get no reply, and frames
that are themselves responses are ignored. Each handler uses one LMDB
transaction, so a reply reflects one consistent state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from cluster.core.protocol import admin_bodies, body_common, digest_body, route_bodies
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand, response_to
from cluster.core.protocol.lenient import loads_lenient
from cluster.core.protocol.properties import PropertiesError, parse_properties
from state import digest, housekeeping, kvconfig, nsconfig, queries, route
from state.snapshot import take_snapshot
from worker.business import processors5
from worker.business.context import NodeContext
from worker.business.failures import failed
from worker.business.handler_kit import (
    MissingField,
    crc_ok,
    field,
    jstr,
    long_field,
    ok,
    order_kv_body,
    present,
    registration_body,
)
from worker.business.route_lookup import get_routeinfo_by_topic

Handler = Callable[[NodeContext, RemotingCommand, str, str], RemotingCommand]

RC = ResponseCode


# ---------------------------------------------------------------- KV config

def put_kv_config(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                  ) -> RemotingCommand:
    ns, key = cmd.field("namespace"), cmd.field("key")
    if ns is None or key is None:
        return response_to(cmd, RC.SYSTEM_ERROR, "namespace or key is null")
    with ctx.store.write() as t:
        kvconfig.put(t, nsconfig.get(t, "kvConfigPath"), ns, key, cmd.field("value"))
    return ok(cmd)


def get_kv_config(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                  ) -> RemotingCommand:
    ns, key = cmd.field("namespace"), cmd.field("key")
    with ctx.store.read() as t:
        value = kvconfig.get(t, ns, key) if ns is not None and key is not None else None
    if value is None:
        remark = f"No config item, Namespace: {jstr(ns)} Key: {jstr(key)}"
        return response_to(cmd, RC.QUERY_NOT_FOUND, remark, ext_fields={})
    return ok(cmd, {"value": value})


def delete_kv_config(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                     ) -> RemotingCommand:
    ns, key = cmd.field("namespace"), cmd.field("key")
    with ctx.store.write() as t:
        path = nsconfig.get(t, "kvConfigPath")
        if ns is not None and key is not None:
            kvconfig.delete(t, path, ns, key)
        else:
            kvconfig.persist(t, path)
    return ok(cmd)


def get_kvlist_by_namespace(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                            ) -> RemotingCommand:
    ns = cmd.field("namespace")
    with ctx.store.read() as t:
        body = None if ns is None else ctx.route_cache.keep(  # kept until the tables change
            t.generation(), ("kvlist", ns), lambda: _kv_body(t, ns, ctx.dialect.five))
    if body is None:
        return response_to(cmd, RC.QUERY_NOT_FOUND, f"No config item, Namespace: {jstr(ns)}")
    return ok(cmd, body=body)


def _kv_body(t: Any, ns: str, five: bool) -> bytes | None:
    table = kvconfig.get_namespace(t, ns)
    return None if table is None else admin_bodies.encode_kv_table(table, five)


# ---------------------------------------------------------------- broker registration

def _int(text: str | None) -> int | None:
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


def without_state_version(dv: dict[str, Any]) -> dict[str, Any]:
    """A DataVersion as 4.9.8 reads it: its class has no ``stateVersion`` (5.x brokers send
    one), which fastjson drops, so it is neither kept, compared nor answered."""
    return {k: v for k, v in dv.items() if k != "stateVersion"}


def register_broker(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                    ) -> RemotingCommand:
    if not crc_ok(cmd):  # the reply was made with RegisterBrokerResponseHeader: extFields {}
        return response_to(cmd, RC.SYSTEM_ERROR, "crc32 not match", ext_fields={})
    now = ctx.clock()
    parts = registration_body(cmd, now)
    dv = without_state_version(parts.data_version)
    route.decode_ahead(ctx.store, cmd.field("brokerName"), _int(cmd.field("brokerId")),
                       cmd.field("brokerAddr"), dv, parts.table)
    timeout = cmd.field("heartbeatTimeoutMillis")
    with ctx.store.write() as t:
        result = route.register_broker(
            t, field(cmd, "clusterName"), field(cmd, "brokerAddr"), field(cmd, "brokerName"),
            long_field(cmd, "brokerId"), cmd.field("haServerAddr"), dv,
            parts.table, parts.filters, channel, now, int(timeout) if timeout else None)
        body = order_kv_body(t, ctx.dialect.five)
    return ok(cmd, present(result), body)


def unregister_broker(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                      ) -> RemotingCommand:
    with ctx.store.write() as t:
        route.unregister_broker(t, field(cmd, "clusterName"), field(cmd, "brokerAddr"),
                                field(cmd, "brokerName"), long_field(cmd, "brokerId"))
    return ok(cmd)


def query_data_version(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                       ) -> RemotingCommand:
    if not cmd.body:
        raise MissingField("QUERY_DATA_VERSION body (DataVersion) is null")
    dv = loads_lenient(cmd.body)
    if isinstance(dv, dict):
        dv = without_state_version(dv)
    addr = cmd.field("brokerAddr")
    if addr is None:  # Java looks up a null address: no live entry, so changed, no body
        return ok(cmd, {"changed": "true"})
    with ctx.store.write() as t:
        changed, stored = route.query_data_version(t, addr, dv, ctx.clock())
    body = body_common.encode_data_version(stored) if stored is not None else None
    return ok(cmd, {"changed": "true" if changed else "false"}, body)


def broker_heartbeat(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                     ) -> RemotingCommand:
    with ctx.store.write() as t:
        route.broker_heartbeat(t, field(cmd, "brokerAddr"), ctx.clock())
    return ok(cmd)


# ---------------------------------------------------------------- route queries

def get_broker_cluster_info(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                            ) -> RemotingCommand:
    five = ctx.dialect.five
    with ctx.store.read() as t:
        body = ctx.route_cache.keep(t.generation(), ("cluster_info",), lambda: (
            route_bodies.encode_cluster_info(*queries.cluster_info(t), five)))
    return ok(cmd, body=body)


def get_broker_member_group(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                            ) -> RemotingCommand:
    cluster, name = cmd.field("clusterName"), cmd.field("brokerName")
    with ctx.store.read() as t:
        addrs = queries.broker_member_group(t, name) if name is not None else {}
    return ok(cmd, body=route_bodies.encode_broker_member_group(cluster, name, addrs))


# ---------------------------------------------------------------- topic lists

def _disabled(cmd: RemotingCommand) -> RemotingCommand:
    return response_to(cmd, RC.SYSTEM_ERROR, "disable")


def _list_body(ctx: NodeContext, t: Any, key: tuple[Any, ...],
               build: Callable[[], bytes]) -> bytes:
    """A topic list's body, kept with the route bodies for the store generation: ordering a
    big cluster's topics as Java's maps iterate them takes a second for 70,000 topics."""
    body = ctx.route_cache.get(t.generation(), key)
    if body is None:
        body = build()
        ctx.route_cache.put(key, body)
    return body


def get_all_topic_list(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                       ) -> RemotingCommand:
    with ctx.store.read() as t:
        if not nsconfig.get_bool(t, "enableAllTopicList"):
            return _disabled(cmd)
        five = ctx.dialect.five
        body = _list_body(ctx, t, ("all topics",), lambda: admin_bodies.encode_topic_list(
            queries.all_topics(t, five), five=five))
    return ok(cmd, body=body)


def get_topics_by_cluster(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                          ) -> RemotingCommand:
    cluster = cmd.field("cluster")
    with ctx.store.read() as t:
        if not nsconfig.get_bool(t, "enableTopicList"):
            return _disabled(cmd)
        five = ctx.dialect.five
        body = _list_body(ctx, t, ("cluster topics", cluster), lambda: admin_bodies.
                          encode_topic_list(queries.topics_by_cluster(t, cluster, five)
                                            if cluster is not None else [], five=five))
    return ok(cmd, body=body)


def get_system_topic_list(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                          ) -> RemotingCommand:
    with ctx.store.read() as t:
        topics, addr = queries.system_topics(t, ctx.dialect.five)
    return ok(cmd, body=admin_bodies.encode_topic_list(topics, addr, ctx.dialect.five))


def get_unit_topic_list(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                        ) -> RemotingCommand:
    with ctx.store.read() as t:
        if not nsconfig.get_bool(t, "enableTopicList"):
            return _disabled(cmd)
        five = ctx.dialect.five
        body = _list_body(ctx, t, ("unit topics", cmd.code), lambda: admin_bodies.
                          encode_topic_list(queries.unit_topics(t, UNIT_LISTS[cmd.code], five),
                                            five=five))
    return ok(cmd, body=body)


# ---------------------------------------------------------------- admin writes

def _change_write_perm(ctx: NodeContext, cmd: RemotingCommand, add: bool, answer: str
                       ) -> RemotingCommand:
    name = cmd.field("brokerName")  # Java counts the topics of a null name: none
    count = 0
    if name is not None:
        with ctx.store.write() as t:
            count = route.change_write_perm(t, name, add=add)
    return ok(cmd, {answer: str(count)})


def wipe_write_perm(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                    ) -> RemotingCommand:
    return _change_write_perm(ctx, cmd, False, "wipeTopicCount")


def add_write_perm(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                   ) -> RemotingCommand:
    return _change_write_perm(ctx, cmd, True, "addTopicCount")


def delete_topic(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                 ) -> RemotingCommand:
    topic = cmd.field("topic")  # Java removes the null key: nothing
    if topic is not None:
        with ctx.store.write() as t:
            route.delete_topic(t, topic, cmd.field("clusterName"))
    return ok(cmd)


def register_topic(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                   ) -> RemotingCommand:
    """5.x's code: a missing topic fails inside registerTopic, which Java catches (SUCCESS)."""
    topic = cmd.field("topic")
    data = loads_lenient(cmd.body) if cmd.body else None
    queue_datas = (data or {}).get("queueDatas") or []
    if queue_datas and topic is not None:
        with ctx.store.write() as t:
            route.register_topic(t, topic, queue_datas)
    return ok(cmd)


# ---------------------------------------------------------------- namesrv config

def update_namesrv_config(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                          ) -> RemotingCommand:
    if not cmd.body:
        return ok(cmd)
    try:
        props = parse_properties(cmd.body.decode("utf-8"))
    except (PropertiesError, UnicodeDecodeError):
        return response_to(cmd, RC.SYSTEM_ERROR, nsconfig.PARSE_REMARK)
    with ctx.store.write() as t:
        refused = nsconfig.update(t, props)
    if refused is not None:
        return response_to(cmd, REFUSAL_CODES[refused.reason], refused.message)
    return ok(cmd)


def get_namesrv_config(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                       ) -> RemotingCommand:
    """Java 4.9.8's keys in Java's order; extField `all=true` (pynamesrv extension): every key."""
    everything = (cmd.field("all") or "").strip().lower() == "true"
    with ctx.store.read() as t:
        text = nsconfig.properties_text(t, everything)
    return ok(cmd, body=text.encode("utf-8") if text else None)


def get_node_snapshot(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                      ) -> RemotingCommand:
    snap = take_snapshot(ctx.store, ctx.node_name, ctx.clock())
    return ok(cmd, body=orjson.dumps(snap))


def get_node_digest(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                    ) -> RemotingCommand:
    try:
        query = digest_body.parse_query(cmd.body)
    except digest_body.DigestQueryError as exc:
        return response_to(cmd, RC.SYSTEM_ERROR, f"GET_NODE_DIGEST: {exc}")
    reply = digest.answer(ctx.store, ctx.node_name, ctx.clock(), query, ctx.digest_cache)
    return ok(cmd, body=orjson.dumps(reply))


# ---------------------------------------------------------------- outcomes and codes

RQ = RequestCode
# Codes whose handlers read a body in an I/O worker's shared memory where it lies (as a
# memoryview, valid only until the reply) and copy what they keep: a registration's table
# is copied only when it is decoded, not when its digest shows it applied already.
BODY_IN_PLACE = frozenset({RQ.REGISTER_BROKER})
REFUSAL_CODES: dict[nsconfig.Refusal, ResponseCode] = {
    nsconfig.Refusal.BLACK_LIST: RC.NO_PERMISSION,
    nsconfig.Refusal.LINE_BREAK: RC.SYSTEM_ERROR,
    nsconfig.Refusal.NOT_UPDATABLE: RC.SYSTEM_ERROR,
    nsconfig.Refusal.INVALID_VALUE: RC.SYSTEM_ERROR,
    nsconfig.Refusal.TOO_LARGE: RC.SYSTEM_ERROR,
}
UNIT_LISTS: dict[int, queries.UnitList] = {
    RQ.GET_UNIT_TOPIC_LIST: queries.UnitList.UNIT,
    RQ.GET_HAS_UNIT_SUB_TOPIC_LIST: queries.UnitList.HAS_UNIT_SUB,
    RQ.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: queries.UnitList.HAS_UNIT_SUB_UNUNIT,
}

# ---------------------------------------------------------------- dispatch

HANDLERS: dict[int, Handler] = {  # a node following 4.9.8
    RQ.PUT_KV_CONFIG: put_kv_config,
    RQ.GET_KV_CONFIG: get_kv_config,
    RQ.DELETE_KV_CONFIG: delete_kv_config,
    RQ.REGISTER_BROKER: register_broker,
    RQ.UNREGISTER_BROKER: unregister_broker,
    RQ.GET_ROUTEINFO_BY_TOPIC: get_routeinfo_by_topic,
    RQ.GET_BROKER_CLUSTER_INFO: get_broker_cluster_info,
    RQ.WIPE_WRITE_PERM_OF_BROKER: wipe_write_perm,
    RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: get_all_topic_list,
    RQ.DELETE_TOPIC_IN_NAMESRV: delete_topic,
    RQ.REGISTER_TOPIC_IN_NAMESRV: register_topic,
    RQ.GET_KVLIST_BY_NAMESPACE: get_kvlist_by_namespace,
    RQ.GET_TOPICS_BY_CLUSTER: get_topics_by_cluster,
    RQ.GET_SYSTEM_TOPIC_LIST_FROM_NS: get_system_topic_list,
    RQ.GET_UNIT_TOPIC_LIST: get_unit_topic_list,
    RQ.GET_HAS_UNIT_SUB_TOPIC_LIST: get_unit_topic_list,
    RQ.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: get_unit_topic_list,
    RQ.UPDATE_NAMESRV_CONFIG: update_namesrv_config,
    RQ.GET_NAMESRV_CONFIG: get_namesrv_config,
    RQ.QUERY_DATA_VERSION: query_data_version,
    RQ.ADD_WRITE_PERM_OF_BROKER: add_write_perm,
    RQ.GET_BROKER_MEMBER_GROUP: get_broker_member_group,
    RQ.BROKER_HEARTBEAT: broker_heartbeat,
    RQ.GET_NODE_SNAPSHOT: get_node_snapshot,
    RQ.GET_NODE_DIGEST: get_node_digest,
}
HANDLERS5: dict[int, Handler] = {**HANDLERS, **processors5.OVERRIDES}  # following 5.x


def _dispatch(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
              ) -> RemotingCommand:
    handler = (HANDLERS5 if ctx.dialect.five else HANDLERS).get(cmd.code)
    if handler is None:
        return response_to(cmd, RC.REQUEST_CODE_NOT_SUPPORTED,
                           f" request type {cmd.code} not supported")
    try:
        return handler(ctx, cmd, channel, peer)
    except Exception as exc:
        return failed(cmd, exc)


def handle(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
           ) -> RemotingCommand | None:
    """The reply to one request, or None (responses and oneway requests get none).

    With ACL on, a request the node's ``AclGuard`` refuses is answered NO_PERMISSION
    and not run."""
    if cmd.is_response:
        return None
    refused = ctx.acl.check(cmd, peer) if ctx.acl is not None else None
    if refused is not None:
        reply = response_to(cmd, RC.NO_PERMISSION, refused)
    else:
        reply = _dispatch(ctx, cmd, channel, peer)
    return None if cmd.is_oneway else ctx.dialect.stamp(reply)


def on_channel_destroy(ctx: NodeContext, closed: list[tuple[str, str]]) -> None:
    """Connections closed: forget the brokers registered over them (one write). 5.x finds
    them by their channel only; 4.9 also by the connection's peer address: a connection
    that registered none removes the broker at its own address, with ACL on only when a
    registration from that address needs no signature either (``globalWhiteRemoteAddresses``)."""
    guard = ctx.acl
    housekeeping.channels_closed(ctx.store, [
        (ch, peer if peer and (guard is None or guard.unsigned_may_register(peer)) else None)
        for ch, peer in closed], ctx.dialect.five)
