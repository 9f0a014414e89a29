"""GET_ROUTEINFO_BY_TOPIC: ClientRequestProcessor and, for 5.x, its ZoneRouteRPCHook.

The reply body is cached per business worker (``RouteCache``) under everything it depends
on besides the store's generation: the topic's stored queue datas (shared by the topics
of equal ones: ``queries.route_key``), JSON flavour, order-topic config, and for 5.x
whether acting masters are shown and the zone asked for.

5.x only: ``needWaitForService`` answers SYSTEM_ERROR "name server not ready" until
``waitSecondsForService`` after the node started; with ``supportActingMaster`` a group
without its master shows its acting master; a request with ``__ZONE_MODE=true`` and a
``__ZONE_NAME`` gets the groups of that zone only, always in plain JSON (the hook
re-encodes the route with fastjson's defaults).
"""

from __future__ import annotations

from typing import Any

from cluster.core.protocol import route_bodies
from cluster.core.protocol.admin_bodies import ORDER_TOPIC_CONFIG
from cluster.core.protocol.codes import V4_9_4, ResponseCode
from cluster.core.protocol.command import RemotingCommand, response_to
from state import kvconfig, nsconfig, queries
from worker.business.context import NodeContext
from worker.business.handler_kit import flag, jstr, ok

ZONE_MODE = "__ZONE_MODE"
ZONE_NAME = "__ZONE_NAME"
NOT_READY = "name server not ready"


def zone_of(cmd: RemotingCommand) -> str | None:
    """The zone a 5.x client asks for: ``__ZONE_MODE`` true and a non-blank ``__ZONE_NAME``."""
    if (cmd.field(ZONE_MODE) or "").lower() != "true":
        return None
    name = cmd.field(ZONE_NAME)
    return name if name is not None and name.strip() else None


def route_body(ctx: NodeContext, t: Any, topic: str, standard: bool,
               zone: str | None = None) -> bytes | None:
    five = ctx.dialect.five
    order = kvconfig.get(t, ORDER_TOPIC_CONFIG, topic) \
        if nsconfig.get_bool(t, "orderMessageEnable") else None
    acting = (five and nsconfig.get_bool(t, "supportActingMaster")
              and queries.shows_acting_masters(topic))
    shared = queries.route_key(t, topic, five)
    if shared is None:
        return None
    key = (shared, standard, order, acting, zone)  # topics of equal queue datas share a body
    body = ctx.route_cache.get(t.generation(), key)
    if body is None:
        data = queries.pickup_topic_route_data(t, topic, ctx.route_cache.brokers, five)
        if data is None:
            return None
        data["orderTopicConf"] = order
        if acting:
            data = queries.with_acting_masters(data, topic)
        if zone is not None:
            data, standard = queries.zone_filtered(data, zone), False
        body = route_bodies.encode_topic_route(data, standard, five)
        ctx.route_cache.put(key, body)
    return body


def _not_ready(ctx: NodeContext, t: Any) -> bool:
    if not ctx.dialect.five or not nsconfig.get_bool(t, "needWaitForService"):
        return False
    wait_ms = nsconfig.get_int(t, "waitSecondsForService") * 1000
    return ctx.clock() - ctx.started_at < wait_ms


def get_routeinfo_by_topic(ctx: NodeContext, cmd: RemotingCommand, channel: str, peer: str
                           ) -> RemotingCommand:
    topic = cmd.field("topic")
    standard = cmd.version >= V4_9_4 or flag(cmd, "acceptStandardJsonOnly")
    zone = zone_of(cmd) if ctx.dialect.five else None
    with ctx.store.read() as t:
        if _not_ready(ctx, t):
            return response_to(cmd, ResponseCode.SYSTEM_ERROR, NOT_READY)
        body = None if topic is None else route_body(ctx, t, topic, standard, zone)
    if body is None:
        remark = (f"No topic route info in name server for the topic: {jstr(topic)}"
                  f"\nSee {ctx.dialect.faq_url} for further details.")
        return response_to(cmd, ResponseCode.TOPIC_NOT_EXIST, remark)
    return ok(cmd, body=body)
