"""Admin requests the ``NameServerClient`` has no method for, sent with its fan-out.

* GET_BROKER_MEMBER_GROUP (901) to every node: one broker group's members.
* GET_NAMESRV_CONFIG (319) with ``all=true``: the node adds its own pynamesrv settings.
* GET_BROKER_RUNTIME_INFO (28) to brokers (not nodes): the runtime KVTable that
  ``clusterList`` shows, as mqadmin does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cluster.client.fanout import FanoutResult, Status, decode_body, expect_success
from cluster.client.nsclient import NameServerClient, _properties
from cluster.core.protocol import admin_bodies, body_common
from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.lenient import loads_lenient

# A broker request code (RequestCode.GET_BROKER_RUNTIME_INFO in Java); nodes never see it.
GET_BROKER_RUNTIME_INFO = 28
# How long clusterList waits for a broker's runtime info; brokers that do not
# answer (e.g. simulated ones) get empty columns, as in mqadmin.
BROKER_STATS_TIMEOUT = 1.5


def _command(client: NameServerClient, code: int,
             ext: dict[str, str] | None = None) -> RemotingCommand:
    return RemotingCommand(code=int(code), version=client.version, ext_fields=ext)


def decode_member_group(body: bytes) -> dict[str, Any]:
    """BrokerMemberGroup reply -> ``{"cluster", "brokerName", "brokerAddrs": {id: addr}}``."""
    try:
        doc = loads_lenient(body)
    except ValueError as exc:
        raise body_common.BodyError(f"not JSON: {exc}") from None
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
                         timeout: float = BROKER_STATS_TIMEOUT
                         ) -> dict[str, dict[str, str] | None]:
    """Each broker's runtime KVTable, or None when it did not give one in time."""
    if not broker_addrs:
        return {}
    cmd = _command(client, GET_BROKER_RUNTIME_INFO)
    result = client.fanout(cmd, _kv_table, addrs=sorted(set(broker_addrs)), timeout=timeout)
    return {a: o.value if o.status is Status.OK else None for a, o in result.outcomes.items()}
