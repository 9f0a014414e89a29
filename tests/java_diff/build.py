"""Requests as brokers, clients and mqadmin send them (4.9.8 field names and encodings)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from cluster.core.protocol import body_common
from cluster.core.protocol.codes import FLAG_ONEWAY, RequestCode, SerializeType
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.register_body import encode_register_body, topic_config

RQ = RequestCode
JSON, BINARY = SerializeType.JSON, SerializeType.ROCKETMQ
CLIENT_VERSION = 409
_opaques = itertools.count(1)


def cmd(code: int, ext: Mapping[str, str] | None = None, body: bytes | None = None,
        stype: SerializeType = JSON, oneway: bool = False,
        version: int = CLIENT_VERSION) -> RemotingCommand:
    return RemotingCommand(code=int(code), opaque=next(_opaques),
                           flag=FLAG_ONEWAY if oneway else 0, version=version,
                           ext_fields=None if ext is None else dict(ext), body=body,
                           serialize_type=stype)


def topic(name: str, queues: int = 4, perm: int = 6, sysflag: int = 0,
          order: bool = False) -> dict[str, Any]:
    return topic_config(name, read_queue_nums=queues, write_queue_nums=queues,
                        perm=perm, topic_sys_flag=sysflag, order=order)


def register_body(topics: list[dict[str, Any]], dv: Mapping[str, int],
                  compressed: bool = False, filters: list[str] | None = None) -> bytes:
    table = {t["topicName"]: t for t in topics}
    return encode_register_body(dv, table, [] if filters is None else filters, compressed)


def register(cluster: str, name: str, addr: str, broker_id: int = 0,
             topics: list[dict[str, Any]] | None = None,
             dv: Mapping[str, int] | None = None, *, compressed: bool = False,
             crc: str | None = None, filters: list[str] | None = None,
             stype: SerializeType = JSON, oneway: bool = False,
             body: bytes | None = None, extra: Mapping[str, str] | None = None,
             version: int = CLIENT_VERSION) -> RemotingCommand:
    """REGISTER_BROKER; `crc` overrides the computed bodyCrc32 text."""
    if body is None:
        body = register_body(topics or [], dv or {"counter": 1, "timestamp": 1},
                             compressed, filters)
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": cluster,
           "haServerAddr": _ha(addr), "brokerId": str(broker_id),
           "compressed": "true" if compressed else "false",
           "bodyCrc32": str(body_common.crc32_java(body)) if crc is None else crc,
           **(extra or {})}
    return cmd(RQ.REGISTER_BROKER, ext, body or None, stype, oneway, version)


def _ha(addr: str) -> str:
    host, port = addr.rsplit(":", 1)
    return f"{host}:{int(port) + 1}"


def unregister(cluster: str, name: str, addr: str, broker_id: int = 0,
               stype: SerializeType = JSON, oneway: bool = False) -> RemotingCommand:
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": cluster,
           "brokerId": str(broker_id)}
    return cmd(RQ.UNREGISTER_BROKER, ext, stype=stype, oneway=oneway)


def query_data_version(cluster: str, name: str, addr: str, broker_id: int,
                       dv: Mapping[str, int] | None,
                       stype: SerializeType = JSON) -> RemotingCommand:
    ext = {"brokerName": name, "brokerAddr": addr, "clusterName": cluster,
           "brokerId": str(broker_id)}
    body = None if dv is None else body_common.encode_data_version(dv)
    return cmd(RQ.QUERY_DATA_VERSION, ext, body, stype)


def route(name: str, stype: SerializeType = JSON, version: int = CLIENT_VERSION,
          standard: bool | None = None) -> RemotingCommand:
    ext = {"topic": name}
    if standard is not None:
        ext["acceptStandardJsonOnly"] = "true" if standard else "false"
    return cmd(RQ.GET_ROUTEINFO_BY_TOPIC, ext, stype=stype, version=version)


def cluster_info(stype: SerializeType = JSON) -> RemotingCommand:
    return cmd(RQ.GET_BROKER_CLUSTER_INFO, stype=stype)


def plain(code: int, stype: SerializeType = JSON, **ext: str) -> RemotingCommand:
    """A request whose header fields are given as keywords (none: no extFields)."""
    return cmd(code, ext or None, stype=stype)


def put_kv(ns: str, key: str, value: str, stype: SerializeType = JSON,
           oneway: bool = False) -> RemotingCommand:
    return cmd(RQ.PUT_KV_CONFIG, {"namespace": ns, "key": key, "value": value}, stype=stype,
               oneway=oneway)
