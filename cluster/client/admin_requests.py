"""Admin requests the ``NameServerClient`` has no method for, sent with its fan-out.

* GET_BROKER_MEMBER_GROUP (901) to every node: one broker group's members.
* GET_NAMESRV_CONFIG (319) with ``all=true``: the node adds its own pynamesrv settings.
* GET_BROKER_RUNTIME_INFO (28) to brokers (not nodes): the runtime KVTable that
  ``clusterList`` shows, as mqadmin does.
* DELETE_TOPIC_IN_BROKER (215) to a cluster's masters, as mqadmin's ``deleteTopic``.
* GET_ROUTEINFO_BY_TOPIC (105) read as it came (``route_doc``), for ``topicRoute``,
  which prints what the reply holds the way mqadmin's TopicRouteData holds it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cluster.client.errors import RemoteError
from cluster.client.fanout import FanoutResult, Status, decode_body, expect_success
from cluster.client.nsclient import NameServerClient, _properties
from cluster.core.protocol import admin_bodies, body_common
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.lenient import loads_lenient

# Broker request codes (RequestCode in Java); nodes never see them.
GET_BROKER_RUNTIME_INFO = 28
DELETE_TOPIC_IN_BROKER = 215


def _command(client: NameServerClient, code: int,
             ext: dict[str, str] | None = None) -> RemotingCommand:
    return RemotingCommand(code=int(code), version=client.version, ext_fields=ext)


def _json_doc(body: bytes) -> Any:
    try:
        return loads_lenient(body)
    except ValueError as exc:
        raise body_common.BodyError(f"not JSON: {exc}") from None


def route_doc(client: NameServerClient, topic: str) -> dict[str, Any]:
    """The TopicRouteData reply of one node, as parsed JSON; RemoteError 17 without one."""
    resp = client.invoke(_command(client, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
    where = client.chosen or "?"
    expect_success(resp, where)
    doc = decode_body(_json_doc, resp.body or b"", where) if resp.body else None
    if not isinstance(doc, dict):
        raise RemoteError(ResponseCode.TOPIC_NOT_EXIST, "no route body", where)
    return doc


def _ok(resp: RemotingCommand, addr: str) -> None:
    expect_success(resp, addr)


def delete_topic_in_brokers(client: NameServerClient, brokers: Sequence[str],
                            topic: str) -> FanoutResult:
    """DELETE_TOPIC_IN_BROKER to each of ``brokers`` (addresses), in parallel."""
    cmd = _command(client, DELETE_TOPIC_IN_BROKER, {"topic": topic})
    return client.fanout(cmd, _ok, addrs=list(brokers))


def decode_member_group(body: bytes) -> dict[str, Any]:
    """BrokerMemberGroup reply -> ``{"cluster", "brokerName", "brokerAddrs": {id: addr}}``."""
    doc = _json_doc(body)
    group = doc.get("brokerMemberGroup") if isinstance(doc, dict) else None
    if not isinstance(group, dict):
        raise body_common.BodyError("no brokerMemberGroup object")
    addrs = group.get("brokerAddrs") or {}
    if not isinstance(addrs, dict):
        raise body_common.BodyError("brokerAddrs is not an object")
    try:
        members = {int(k): str(v) for k, v in addrs.items() if v is not None}
    except ValueError:
        raise body_common.BodyError("a broker id is not a number") from None
    return {"cluster": group.get("cluster"), "brokerName": group.get("brokerName"),
            "brokerAddrs": members}


def _member_group(resp: RemotingCommand, addr: str) -> dict[str, Any]:
    expect_success(resp, addr)
    return decode_body(decode_member_group, resp.body or b"", addr)


def broker_member_group(client: NameServerClient, cluster: str, broker: str) -> FanoutResult:
    cmd = _command(client, RequestCode.GET_BROKER_MEMBER_GROUP,
                   {"clusterName": cluster, "brokerName": broker})
    return client.fanout(cmd, _member_group)


def namesrv_config(client: NameServerClient, include_all: bool) -> FanoutResult:
    """GET_NAMESRV_CONFIG from every node; ``include_all`` sends extField ``all=true``."""
    ext = {"all": "true"} if include_all else None
    return client.fanout(_command(client, RequestCode.GET_NAMESRV_CONFIG, ext), _properties)


def _kv_table(resp: RemotingCommand, addr: str) -> dict[str, str]:
    expect_success(resp, addr)
    return decode_body(admin_bodies.decode_kv_table, resp.body or b"", addr)


def broker_runtime_stats(client: NameServerClient, broker_addrs: Sequence[str],
                         timeout: float) -> dict[str, dict[str, str] | None]:
    """Each broker's runtime KVTable, or None when it did not give one within ``timeout``
    (clusterList then prints empty columns for it, as mqadmin does)."""
    if not broker_addrs:
        return {}
    cmd = _command(client, GET_BROKER_RUNTIME_INFO)
    result = client.fanout(cmd, _kv_table, addrs=sorted(set(broker_addrs)), timeout=timeout)
    return {a: o.value if o.status is Status.OK else None for a, o in result.outcomes.items()}
