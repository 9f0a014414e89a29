"""Broker topology replies: TopicRouteData, ClusterInfo, BrokerMemberGroup encoders and decoders.

BrokerData is ``{"brokerAddrs": {int: str}, "brokerName", "cluster"}`` (5.x adds
``enableActingMaster`` / ``zoneName``, kept when present); QueueData is ``{"brokerName",
"perm", "readQueueNums", "topicSysFlag", "writeQueueNums"}``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson

from cluster.core.protocol import fastjson
from cluster.core.protocol.body_common import (
    _bool,
    _dict,
    _encode,
    _id_key,
    _int,
    _list,
    _load,
    _str,
    _str_list,
)

# ------------------------------------------------------------------ reply encoders


def _addrs_plain_fragment(addrs: Mapping[int, str | None]) -> orjson.Fragment:
    items = ",".join(f"{k}:{fastjson.quote(v)}" for k, v in addrs.items() if v is not None)
    return orjson.Fragment("{" + items + "}")


def _addrs_standard(addrs: Mapping[int, str | None]) -> dict[str, str]:
    return {str(k): v for k, v in sorted(addrs.items()) if v is not None}


def _addrs_raw(addrs: Mapping[int, str | None]) -> Mapping[int, str | None]:
    return addrs


def _addrs_renderer(fast: bool, standard: bool) -> _AddrsRenderer:
    if not fast:
        return _addrs_raw
    return _addrs_standard if standard else _addrs_plain_fragment


def _list_map(table: Mapping[str, Iterable[str] | None], sort: bool) -> dict[str, list[str]]:
    items = sorted(table.items()) if sort else table.items()
    return {k: list(v) for k, v in items if v is not None}


_AddrsRenderer = Callable[[Mapping[int, Any]], Any]


def _broker_bean(bd: Mapping[str, Any], addrs: _AddrsRenderer) -> dict[str, Any]:
    bean = {"brokerAddrs": addrs(bd.get("brokerAddrs") or {})}
    for key in ("brokerName", "cluster", "enableActingMaster", "zoneName"):
        value = bd.get(key)
        if value is not None:
            bean[key] = value
    return bean


def _queue_bean(q: Mapping[str, Any]) -> dict[str, Any]:
    bean = {
        "brokerName": q.get("brokerName"),
        "perm": q.get("perm", 0),
        "readQueueNums": q.get("readQueueNums", 0),
        "topicSysFlag": q.get("topicSysFlag", 0),
        "writeQueueNums": q.get("writeQueueNums", 0),
    }
    if bean["brokerName"] is None:
        del bean["brokerName"]
    return bean


def _route_obj(route: Mapping[str, Any], fast: bool, standard: bool) -> dict[str, Any]:
    addrs = _addrs_renderer(fast, standard)
    obj: dict[str, Any] = {
        "brokerDatas": [_broker_bean(bd, addrs) for bd in route.get("brokerDatas") or ()],
        "filterServerTable": _list_map(route.get("filterServerTable") or {}, fast and standard),
    }
    if route.get("orderTopicConf") is not None:
        obj["orderTopicConf"] = route["orderTopicConf"]
    obj["queueDatas"] = [_queue_bean(q) for q in route.get("queueDatas") or ()]
    if route.get("topicQueueMappingByBroker") is not None:
        obj["topicQueueMappingByBroker"] = route["topicQueueMappingByBroker"]
    return obj


def encode_topic_route(route: Mapping[str, Any], standard: bool, five: bool = False) -> bytes:
    """TopicRouteData (§2.4.1); ``standard`` = BrowserCompatible + MapSortField mode."""
    if five:
        return _encode(lambda fast: _route_obj5(route, standard), standard, True)
    if route.get("topicQueueMappingByBroker") is not None:
        return fastjson.dumpb(_route_obj(route, False, standard), standard)
    return _encode(lambda fast: _route_obj(route, fast, standard), standard)


# ------------------------------------------------------------------ 5.x (fastjson2)


def _int_map(m: Mapping[Any, Any], standard: bool) -> orjson.Fragment:
    """A map with integer keys as fastjson2 writes it: keys bare (standard: quoted), in
    ascending order (a HashMap of small ids, or MapSortField)."""
    items = sorted((int(k), v) for k, v in m.items() if v is not None)
    if standard:
        return orjson.Fragment(orjson.dumps({str(k): v for k, v in items}))
    return orjson.Fragment("{" + ",".join(f"{k}:" + orjson.dumps(v).decode()
                                          for k, v in items) + "}")


def _broker_bean5(bd: Mapping[str, Any], standard: bool) -> dict[str, Any]:
    bean: dict[str, Any] = {"brokerAddrs": _int_map(bd.get("brokerAddrs") or {}, standard)}
    for key in ("brokerName", "cluster"):
        if bd.get(key) is not None:
            bean[key] = bd[key]
    bean["enableActingMaster"] = bool(bd.get("enableActingMaster"))
    if bd.get("zoneName") is not None:
        bean["zoneName"] = bd["zoneName"]
    return bean


def _mapping_bean5(info: Mapping[str, Any], standard: bool) -> dict[str, Any]:
    bean = {k: v for k, v in info.items() if v is not None and k != "currIdMap"}
    bean["currIdMap"] = _int_map(info.get("currIdMap") or {}, standard)
    return dict(sorted(bean.items()))


def _route_obj5(route: Mapping[str, Any], standard: bool) -> dict[str, Any]:
    filters = route.get("filterServerTable") or {}
    obj: dict[str, Any] = {
        "brokerDatas": [_broker_bean5(bd, standard) for bd in route.get("brokerDatas") or ()],
        "filterServerTable": {a: list(f) for a, f in filters.items() if f is not None},
    }
    if route.get("orderTopicConf") is not None:
        obj["orderTopicConf"] = route["orderTopicConf"]
    obj["queueDatas"] = [_queue_bean(q) for q in route.get("queueDatas") or ()]
    mapping = route.get("topicQueueMappingByBroker")
    if mapping is not None:
        obj["topicQueueMappingByBroker"] = {n: _mapping_bean5(info, standard)
                                            for n, info in mapping.items()}
    return obj


def encode_cluster_info(
    broker_addr_table: Mapping[str, Mapping[str, Any]],
    cluster_addr_table: Mapping[str, Iterable[str]],
    five: bool = False,
) -> bytes:
    """ClusterInfo (§2.4.4), always plain mode (bare integer broker ids)."""
    if five:
        return orjson.dumps({
            "brokerAddrTable": {n: _broker_bean5(b, False)
                                for n, b in broker_addr_table.items() if b is not None},
            "clusterAddrTable": _list_map(cluster_addr_table, False)})

    def build(fast: bool) -> dict[str, Any]:
        addrs = _addrs_renderer(fast, False)
        brokers = {n: _broker_bean(b, addrs) for n, b in broker_addr_table.items() if b is not None}
        clusters = _list_map(cluster_addr_table, False)
        return {"brokerAddrTable": brokers, "clusterAddrTable": clusters}

    return _encode(build, False)


def encode_broker_member_group(
    cluster: str | None, broker_name: str | None, addrs: Mapping[int, str | None],
    five: bool = False,
) -> bytes:
    """GET_BROKER_MEMBER_GROUP reply (§2.3.19), plain mode."""
    if five:
        group: dict[str, Any] = {"brokerAddrs": _int_map(addrs, False)}
        for key, value in (("brokerName", broker_name), ("cluster", cluster)):
            if value is not None:
                group[key] = value
        return orjson.dumps({"brokerMemberGroup": group})

    def build(fast: bool) -> dict[str, Any]:
        group = _broker_bean(
            {"brokerAddrs": addrs, "brokerName": broker_name, "cluster": cluster},
            _addrs_renderer(fast, False),
        )
        return {"brokerMemberGroup": group}

    return _encode(build, False)


# ------------------------------------------------------------------ client-side decoders


def _broker_data(obj: Any, what: str) -> dict[str, Any]:
    d = _dict(obj, what)
    addrs = _dict(d.get("brokerAddrs"), f"{what}.brokerAddrs", {})
    bd: dict[str, Any] = {
        "brokerAddrs": {
            _id_key(k, what): a for k, v in addrs.items() if (a := _str(v, what)) is not None
        },
        "brokerName": _str(d.get("brokerName"), what),
        "cluster": _str(d.get("cluster"), what),
    }
    if d.get("enableActingMaster") is not None:
        bd["enableActingMaster"] = _bool(d["enableActingMaster"], what)
    if d.get("zoneName") is not None:
        bd["zoneName"] = _str(d["zoneName"], what)
    return bd


def _queue_data(obj: Any, what: str) -> dict[str, Any]:
    d = _dict(obj, what)
    return {
        "brokerName": _str(d.get("brokerName"), what),
        "perm": _int(d.get("perm"), what),
        "readQueueNums": _int(d.get("readQueueNums"), what),
        "topicSysFlag": _int(d.get("topicSysFlag"), what),
        "writeQueueNums": _int(d.get("writeQueueNums"), what),
    }


def decode_topic_route(body: bytes | None) -> dict[str, Any]:
    """TopicRouteData with int broker ids; ``orderTopicConf`` None when absent."""
    d = _dict(_load(body, "TopicRouteData"), "TopicRouteData")
    filters = _dict(d.get("filterServerTable"), "filterServerTable", {})
    brokers = _list(d.get("brokerDatas"), "brokerDatas")
    queues = _list(d.get("queueDatas"), "queueDatas")
    route: dict[str, Any] = {
        "brokerDatas": [_broker_data(x, "brokerDatas") for x in brokers],
        "filterServerTable": {k: _str_list(v, "filterServerTable") for k, v in filters.items()},
        "orderTopicConf": _str(d.get("orderTopicConf"), "orderTopicConf"),
        "queueDatas": [_queue_data(x, "queueDatas") for x in queues],
    }
    if d.get("topicQueueMappingByBroker") is not None:
        route["topicQueueMappingByBroker"] = _dict(d["topicQueueMappingByBroker"], "mapping")
    return route


def decode_cluster_info(body: bytes | None) -> dict[str, Any]:
    """ClusterInfo: ``{"brokerAddrTable": {name: BrokerData}, "clusterAddrTable": {c: [..]}}``."""
    d = _dict(_load(body, "ClusterInfo"), "ClusterInfo")
    brokers = _dict(d.get("brokerAddrTable"), "brokerAddrTable", {})
    clusters = _dict(d.get("clusterAddrTable"), "clusterAddrTable", {})
    return {
        "brokerAddrTable": {n: _broker_data(b, f"broker {n}") for n, b in brokers.items()},
        "clusterAddrTable": {c: _str_list(v, "clusterAddrTable") for c, v in clusters.items()},
    }
