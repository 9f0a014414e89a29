from typing import Any

import pytest

from cluster.core.protocol import fastjson
from cluster.core.protocol.admin_bodies import (
    decode_kv_table,
    decode_topic_list,
    encode_kv_table,
    encode_topic_list,
)
from cluster.core.protocol.body_common import BodyError, decode_data_version, encode_data_version
from cluster.core.protocol.route_bodies import (
    decode_cluster_info,
    decode_topic_route,
    encode_broker_member_group,
    encode_cluster_info,
    encode_topic_route,
)
from tests.unit.body_vectors import (
    RESPONSE_CASES,
    case_ids,
    frame_body,
    load_vectors,
    needs_reference,
)


def _route(
    addrs: dict[int, str | None] | None = None,
    name: str = "broker-a",
    filters: dict[str, list[str]] | None = None,
    order_conf: str | None = None,
) -> dict[str, Any]:
    return {
        "brokerDatas": [
            {
                "brokerAddrs": {0: "127.0.0.1:10911"} if addrs is None else addrs,
                "brokerName": name,
                "cluster": "DefaultCluster",
            }
        ],
        "filterServerTable": filters or {},
        "orderTopicConf": order_conf,
        "queueDatas": [
            {"brokerName": name, "perm": 6, "readQueueNums": 4, "topicSysFlag": 0,
             "writeQueueNums": 4}
        ],
    }


# ------------------------------------------------------------------ golden captures


def _reencode_response(entry: dict[str, Any], body: bytes) -> bytes:
    header = entry["request"]["header"]
    code = header["code"]
    if code == 105:
        ext = header.get("extFields") or {}
        standard = header["version"] >= 401 or ext.get("acceptStandardJsonOnly") == "true"
        return encode_topic_route(decode_topic_route(body), standard)
    if code == 106:
        info = decode_cluster_info(body)
        return encode_cluster_info(info["brokerAddrTable"], info["clusterAddrTable"])
    if code in (103, 219):
        return encode_kv_table(decode_kv_table(body))
    if code == 322:
        return encode_data_version(decode_data_version(body))
    if code in (206, 224, 304, 311, 312, 313):
        topics = decode_topic_list(body)
        return encode_topic_list(topics["topicList"], topics["brokerAddr"])
    raise AssertionError(f"no encoder for response of request code {code}")


@needs_reference
@pytest.mark.parametrize("entry", RESPONSE_CASES, ids=case_ids(RESPONSE_CASES))
def test_golden_response_body_reencodes_byte_for_byte(entry: dict[str, Any]) -> None:
    body = frame_body(entry["file_prefix"], "response")
    assert body.decode() == entry["response"]["body_text"]
    assert _reencode_response(entry, body) == body


@needs_reference
def test_golden_response_cases_cover_every_encoder() -> None:
    codes = {e["request"]["header"]["code"] for e in RESPONSE_CASES}
    assert {103, 105, 106, 206, 219, 224, 304, 311, 322} <= codes


@needs_reference
def test_golden_legacy_route_has_bare_int_ids() -> None:
    body = frame_body("20_get_routeinfo_old_client_v399", "response")
    route = decode_topic_route(body)
    assert route["brokerDatas"][0]["brokerAddrs"] == {0: "127.0.0.1:10911", 1: "127.0.0.1:10931"}
    assert route["orderTopicConf"] == "broker-a:4"
    assert b'{0:"127.0.0.1:10911",1:' in encode_topic_route(route, False)
    assert b'{"0":"127.0.0.1:10911","1":' in encode_topic_route(route, True)


# ------------------------------------------------------------------ vectors.json


@needs_reference
def test_vector_route_standard_and_legacy() -> None:
    vec = load_vectors()["get_routeinfo_by_topic_success_response_json"]
    route = decode_topic_route(vec["body_text"].encode())
    assert encode_topic_route(route, True).decode() == vec["body_text"]
    legacy = vec["legacy_body_text_for_request_version_below_401"]
    assert encode_topic_route(route, False).decode() == legacy
    assert decode_topic_route(legacy.encode()) == route


@needs_reference
def test_vector_route_5x_keeps_enable_acting_master() -> None:
    vec = load_vectors()["get_routeinfo_by_topic_success_response_json_5x"]
    route = decode_topic_route(vec["body_text"].encode())
    assert route["brokerDatas"][0]["enableActingMaster"] is False
    assert encode_topic_route(route, True).decode() == vec["body_text"]


# ------------------------------------------------------------------ reply encoders


def test_route_standard_sorts_maps_numerically_and_by_key() -> None:
    route = _route(addrs={10: "h:10", 2: "h:2", 0: "h:0"},
                   filters={"b:1": ["f:2"], "a:1": ["f:1"]})
    std = encode_topic_route(route, True)
    assert b'"brokerAddrs":{"0":"h:0","2":"h:2","10":"h:10"}' in std
    assert b'"filterServerTable":{"a:1":["f:1"],"b:1":["f:2"]}' in std
    plain = encode_topic_route(route, False)
    assert b'"brokerAddrs":{10:"h:10",2:"h:2",0:"h:0"}' in plain
    assert b'"filterServerTable":{"b:1":["f:2"],"a:1":["f:1"]}' in plain


def test_route_omits_nulls() -> None:
    route = _route(addrs={0: "h:0", 1: None})
    assert encode_topic_route(route, True) == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"h:0"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":'
        b'"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )
    assert b'"orderTopicConf":"x:1"' in encode_topic_route(_route(order_conf="x:1"), False)


@pytest.mark.parametrize(
    "text",
    ["a/b", "caf\u00e9", "tab\there", 'q"uote', "back\\slash", "del\x7f", "c1\x85",
     "ls\u2028", "emoji\U0001f600", "\u4e2d\u6587", "ctl\x01"],
)
@pytest.mark.parametrize("standard", [True, False])
def test_route_escaping_matches_fastjson_writer(text: str, standard: bool) -> None:
    route = _route(addrs={0: text}, name=text, filters={text: [text]}, order_conf=text)
    assert encode_topic_route(route, standard) == fastjson.dumpb(route, standard)


def test_route_escaping_examples() -> None:
    route = _route(name="a/\u00e9")
    assert b'"brokerName":"a\\/\\u00E9"' in encode_topic_route(route, True)
    assert '"brokerName":"a/\u00e9"'.encode() in encode_topic_route(route, False)
    assert b'"brokerName":"x\\u0085"' in encode_topic_route(_route(name="x\x85"), False)


def test_route_5x_mapping_falls_back_to_fastjson_writer() -> None:
    route = _route()
    route["topicQueueMappingByBroker"] = {"broker-a": {"bname": "broker-a", "currIdMap": {1: 0}}}
    assert b'"currIdMap":{"1":0}' in encode_topic_route(route, True)
    assert b'"currIdMap":{1:0}' in encode_topic_route(route, False)


def test_cluster_info_plain_bare_keys_and_sets() -> None:
    brokers = {"broker-a": {"brokerAddrs": {0: "h:1", 1: "h:2"}, "brokerName": "broker-a",
                            "cluster": "C"}}
    out = encode_cluster_info(brokers, {"C": {"broker-a"}})
    assert out == (b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"h:1",1:"h:2"},'
                   b'"brokerName":"broker-a","cluster":"C"}},"clusterAddrTable":{"C":["broker-a"]}}')
    assert encode_cluster_info({}, {}) == b'{"brokerAddrTable":{},"clusterAddrTable":{}}'


def test_cluster_info_escapes_like_fastjson() -> None:
    brokers = {"b\u2028": {"brokerAddrs": {0: "h\x01"}, "brokerName": "b\u2028", "cluster": "C"}}
    expected = fastjson.dumpb({"brokerAddrTable": brokers, "clusterAddrTable": {"C": ["b\u2028"]}})
    assert encode_cluster_info(brokers, {"C": ["b\u2028"]}) == expected
    assert b"\\u2028" in expected and b"\\u0001" in expected


def test_broker_member_group() -> None:
    out = encode_broker_member_group("C", "broker-a", {0: "h:1", 2: "h:3"})
    assert out == (b'{"brokerMemberGroup":{"brokerAddrs":{0:"h:1",2:"h:3"},'
                   b'"brokerName":"broker-a","cluster":"C"}}')
    assert encode_broker_member_group("C", "x", {}) == (
        b'{"brokerMemberGroup":{"brokerAddrs":{},"brokerName":"x","cluster":"C"}}'
    )


# ------------------------------------------------------------------ client decoders


def test_decoders_accept_bare_and_quoted_keys() -> None:
    quoted = decode_cluster_info(b'{"brokerAddrTable":{"b":{"brokerAddrs":{"0":"h"},'
                                 b'"brokerName":"b","cluster":"C"}},"clusterAddrTable":{"C":["b"]}}')
    bare = decode_cluster_info(b'{"brokerAddrTable":{"b":{"brokerAddrs":{0:"h"},'
                               b'"brokerName":"b","cluster":"C"}},"clusterAddrTable":{"C":["b"]}}')
    assert quoted == bare
    assert bare["brokerAddrTable"]["b"]["brokerAddrs"] == {0: "h"}


def test_decode_topic_route_defaults() -> None:
    assert decode_topic_route(b"{}") == {
        "brokerDatas": [], "filterServerTable": {}, "orderTopicConf": None, "queueDatas": [],
    }


@pytest.mark.parametrize(
    ("decoder", "body"),
    [
        (decode_topic_route, b"garbage"),
        (decode_topic_route, b"[]"),
        (decode_topic_route, b'{"brokerDatas":[{"brokerAddrs":{"x":"h"}}]}'),
        (decode_topic_route, b'{"brokerDatas":{}}'),
        (decode_topic_route, b'{"queueDatas":[{"perm":[]}]}'),
        (decode_topic_route, None),
        (decode_cluster_info, b'{"brokerAddrTable":[]}'),
        (decode_cluster_info, b""),
    ],
)
def test_decoders_raise_body_error(decoder: Any, body: bytes | None) -> None:
    with pytest.raises(BodyError):
        decoder(body)
