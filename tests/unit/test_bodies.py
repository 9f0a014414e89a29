import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from cluster.core.protocol import bodies, fastjson
from cluster.core.protocol.bodies import (
    BodyError,
    RegisterBody,
    crc32_java,
    data_version_equal,
    decode_cluster_info,
    decode_data_version,
    decode_kv_table,
    decode_register_body,
    decode_register_result_body,
    decode_topic_list,
    decode_topic_route,
    encode_broker_member_group,
    encode_cluster_info,
    encode_data_version,
    encode_kv_table,
    encode_register_body,
    encode_topic_list,
    encode_topic_route,
    topic_config,
)

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
REFERENCE = SHARED / "reference"
GOLDEN = REFERENCE / "java-4.9.7-golden"

needs_reference = pytest.mark.skipif(
    not REFERENCE.is_dir(), reason=f"reference material not found at {REFERENCE}"
)


def _golden_index() -> list[dict[str, Any]]:
    if not GOLDEN.is_dir():
        return []
    return json.loads((GOLDEN / "index.json").read_text())  # type: ignore[no-any-return]


def _vectors() -> dict[str, dict[str, Any]]:
    data = json.loads((REFERENCE / "vectors.json").read_text())
    return {v["name"]: v for v in data["vectors"]}


def _frame_body(prefix: str, kind: str) -> bytes:
    frame = bytes.fromhex((GOLDEN / f"{prefix}.{kind}.hex").read_text().strip())
    (total, word) = struct.unpack_from(">ii", frame, 0)
    assert total == len(frame) - 4
    return frame[8 + (word & 0xFFFFFF) :]


INDEX = _golden_index()
REGISTER_CASES = [e for e in INDEX if e["request"]["header"]["code"] == 103]
RESPONSE_CASES = [e for e in INDEX if (e.get("response") or {}).get("body_len")]


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [e["file_prefix"] for e in cases]


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


@needs_reference
@pytest.mark.parametrize("entry", REGISTER_CASES, ids=_ids(REGISTER_CASES))
def test_golden_register_body_round_trip(entry: dict[str, Any]) -> None:
    header = entry["request"]["header"]
    ext = header["extFields"]
    body = _frame_body(entry["file_prefix"], "request")
    compressed = ext["compressed"] == "true"
    assert crc32_java(body) == int(ext["bodyCrc32"])
    decoded = decode_register_body(body, compressed, header["version"])
    assert decoded.filter_servers == []
    for name, cfg in decoded.topic_configs.items():
        assert cfg["topicName"] == name
    again = encode_register_body(
        decoded.data_version, decoded.topic_configs, decoded.filter_servers, compressed
    )
    assert again == body
    if not compressed:
        assert body.decode() == entry["request"]["body_text"]


@needs_reference
def test_golden_compressed_register_loses_sysflag_and_order() -> None:
    body = _frame_body("05_register_broker_compressed", "request")
    decoded = decode_register_body(body, True, 407)
    assert decoded.data_version == {"counter": 0, "timestamp": 1795281875463}
    assert list(decoded.topic_configs)[:2] == ["SCHEDULE_TOPIC_XXXX", "DefaultCluster_REPLY_TOPIC"]
    tbw = decoded.topic_configs["TBW102"]
    assert tbw == topic_config("TBW102", read_queue_nums=4, write_queue_nums=4, perm=7)
    assert "attributes" not in tbw


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
@pytest.mark.parametrize("entry", RESPONSE_CASES, ids=_ids(RESPONSE_CASES))
def test_golden_response_body_reencodes_byte_for_byte(entry: dict[str, Any]) -> None:
    body = _frame_body(entry["file_prefix"], "response")
    assert body.decode() == entry["response"]["body_text"]
    assert _reencode_response(entry, body) == body


@needs_reference
def test_golden_response_cases_cover_every_encoder() -> None:
    codes = {e["request"]["header"]["code"] for e in RESPONSE_CASES}
    assert {103, 105, 106, 206, 219, 224, 304, 311, 322} <= codes


@needs_reference
def test_golden_legacy_route_has_bare_int_ids() -> None:
    body = _frame_body("20_get_routeinfo_old_client_v399", "response")
    route = decode_topic_route(body)
    assert route["brokerDatas"][0]["brokerAddrs"] == {0: "127.0.0.1:10911", 1: "127.0.0.1:10931"}
    assert route["orderTopicConf"] == "broker-a:4"
    assert b'{0:"127.0.0.1:10911",1:' in encode_topic_route(route, False)
    assert b'{"0":"127.0.0.1:10911","1":' in encode_topic_route(route, True)


@needs_reference
def test_golden_register_result_kv_table() -> None:
    body = _frame_body("06_register_broker_resp_with_order_kvtable", "response")
    assert decode_register_result_body(body) == {"TopicTest": "broker-a:4"}


# ------------------------------------------------------------------ vectors.json


@needs_reference
def test_vector_register_broker_request_json() -> None:
    vec = _vectors()["register_broker_request_json"]
    body = vec["body_text"].encode()
    assert crc32_java(body) == vec["body_crc32"] == int(vec["fields"]["extFields"]["bodyCrc32"])
    decoded = decode_register_body(body, False, vec["fields"]["version"])
    assert list(decoded.topic_configs) == vec["topic_table_order"]
    assert decoded.data_version == {"counter": 2, "timestamp": 1700000000000}
    assert encode_register_body(decoded.data_version, decoded.topic_configs, [], False) == body


@needs_reference
def test_vector_register_broker_compressed_body() -> None:
    vectors = _vectors()
    source = decode_register_body(vectors["register_broker_request_json"]["body_text"].encode(),
                                  False, 409)
    vec = vectors["register_broker_compressed_body"]
    deflated = encode_register_body(source.data_version, source.topic_configs, [], True)
    assert zlib.decompress(deflated).hex() == vec["plaintext_hex"]
    assert deflated.hex() == vec["deflated_hex"]
    assert crc32_java(deflated) == vec["body_crc32_of_deflated"]
    back = decode_register_body(bytes.fromhex(vec["deflated_hex"]), True, 409)
    assert back == RegisterBody(source.data_version, source.topic_configs, [])


@needs_reference
def test_vector_route_standard_and_legacy() -> None:
    vec = _vectors()["get_routeinfo_by_topic_success_response_json"]
    route = decode_topic_route(vec["body_text"].encode())
    assert encode_topic_route(route, True).decode() == vec["body_text"]
    legacy = vec["legacy_body_text_for_request_version_below_401"]
    assert encode_topic_route(route, False).decode() == legacy
    assert decode_topic_route(legacy.encode()) == route


@needs_reference
def test_vector_route_5x_keeps_enable_acting_master() -> None:
    vec = _vectors()["get_routeinfo_by_topic_success_response_json_5x"]
    route = decode_topic_route(vec["body_text"].encode())
    assert route["brokerDatas"][0]["enableActingMaster"] is False
    assert encode_topic_route(route, True).decode() == vec["body_text"]


# ------------------------------------------------------------------ crc


def test_crc32_java_masks_to_31_bits() -> None:
    assert zlib.crc32(b"a") > 0x7FFFFFFF
    assert crc32_java(b"a") == zlib.crc32(b"a") & 0x7FFFFFFF == 0x68B7BE43
    assert crc32_java(b"123456789") == 0x4BF43926


def test_crc32_java_null_and_empty_are_zero() -> None:
    assert crc32_java(None) == 0
    assert crc32_java(b"") == 0


# ------------------------------------------------------------------ DataVersion


def test_data_version_state_version_round_trip() -> None:
    body = b'{"counter":3,"stateVersion":7,"timestamp":5}'
    dv = decode_data_version(body)
    assert list(dv) == ["counter", "stateVersion", "timestamp"]
    assert encode_data_version(dv) == body
    assert encode_data_version({"timestamp": 5, "counter": 3}) == b'{"counter":3,"timestamp":5}'


def test_data_version_missing_timestamp_uses_now() -> None:
    assert decode_data_version(b'{"counter":1}', now_ms=42) == {"counter": 1, "timestamp": 42}


def test_data_version_equal_is_timestamp_and_counter() -> None:
    a = {"counter": 1, "timestamp": 10}
    assert data_version_equal(a, {"counter": 1, "stateVersion": 9, "timestamp": 10})
    assert not data_version_equal(a, {"counter": 2, "timestamp": 10})
    assert not data_version_equal(a, {"counter": 1, "timestamp": 11})
    assert not data_version_equal(a, None)
    assert not data_version_equal(None, None)


@pytest.mark.parametrize("body", [None, b"", b"[]", b'"x"', b"{", b'{"counter":"abc"}', b"null"])
def test_decode_data_version_rejects_garbage(body: bytes | None) -> None:
    with pytest.raises(BodyError):
        decode_data_version(body)


# ------------------------------------------------------------------ register body decoding


def test_register_no_body_by_version() -> None:
    assert decode_register_body(None, False, 407) == RegisterBody(
        {"counter": 0, "timestamp": 0}, {}, []
    )
    assert decode_register_body(b"", True, 36) == RegisterBody(
        {"counter": 0, "timestamp": 0}, {}, None
    )


def test_register_old_version_is_bare_wrapper() -> None:
    wrapper = (b'{"dataVersion":{"counter":1,"timestamp":2},"topicConfigTable":'
               b'{"T":{"perm":6,"readQueueNums":2,"topicName":"T","writeQueueNums":2}}}')
    decoded = decode_register_body(wrapper, True, 36)
    assert decoded.filter_servers is None
    assert decoded.data_version == {"counter": 1, "timestamp": 2}
    assert decoded.topic_configs["T"] == topic_config("T", read_queue_nums=2, write_queue_nums=2)


def test_register_negative_version_is_an_error() -> None:
    with pytest.raises(BodyError, match="version"):
        decode_register_body(b"{}", False, -1)


def test_register_json_defaults_match_java() -> None:
    decoded = decode_register_body(b'{"topicConfigSerializeWrapper":{"topicConfigTable":'
                                   b'{"K":{"topicName":"T"}}}}', False, 407, now_ms=99)
    assert decoded.data_version == {"counter": 0, "timestamp": 99}
    assert decoded.filter_servers == []
    assert decoded.topic_configs == {"K": topic_config("T")}
    empty = decode_register_body(b"{}", False, 407, now_ms=5)
    assert empty == RegisterBody({"counter": 0, "timestamp": 5}, {}, [])


def test_register_json_null_filter_list_stays_none() -> None:
    assert decode_register_body(b'{"filterServerList":null}', False, 407).filter_servers is None
    got = decode_register_body(b'{"filterServerList":["a:1",2]}', False, 407)
    assert got.filter_servers == ["a:1", "2"]


def test_register_json_5x_extras_and_bare_keys() -> None:
    body = (
        b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,'
        b'"stateVersion":0,"timestamp":3},"mappingDataVersion":{"counter":0,"timestamp":1},'
        b'"topicConfigTable":{"T":{"attributes":{"+message.type":"NORMAL"},"order":true,"perm":6,'
        b'"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":1,'
        b'"writeQueueNums":4}},"topicQueueMappingInfoMap":{"T":{"bname":"b","currIdMap":'
        b'{0:0,1:1},"epoch":1,"topic":"T","totalQueues":2}}}}'
    )
    decoded = decode_register_body(body, False, 479)
    assert decoded.data_version == {"counter": 1, "stateVersion": 0, "timestamp": 3}
    cfg = decoded.topic_configs["T"]
    assert cfg["attributes"] == {"+message.type": "NORMAL"}
    assert cfg["order"] is True and cfg["topicSysFlag"] == 1
    assert list(cfg) == ["attributes", "order", "perm", "readQueueNums", "topicFilterType",
                         "topicName", "topicSysFlag", "writeQueueNums"]


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"null",
        b"[]",
        b'{"topicConfigSerializeWrapper":[]}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":[]}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":null}}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"perm":"rw"}}}}',
        b'{"topicConfigSerializeWrapper":{"dataVersion":5}}',
        b'{"filterServerList":"a"}',
        b"\xff\xfe",
    ],
)
def test_register_json_garbage_raises(body: bytes) -> None:
    with pytest.raises(BodyError):
        decode_register_body(body, False, 407)


# ------------------------------------------------------------------ compressed layout


def _block(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def _plain(lines: list[bytes], filters: bytes = b"[]", tail: bytes = b"") -> bytes:
    head = _block(b'{"counter":1,"timestamp":2}') + struct.pack(">i", len(lines))
    return head + b"".join(_block(x) for x in lines) + _block(filters) + tail


def _decode_plain(plain: bytes, version: int = 407) -> RegisterBody:
    return decode_register_body(zlib.compress(plain, 9), True, version)


def test_compressed_accepts_5x_six_field_lines() -> None:
    got = _decode_plain(_plain([b'T 4 4 6 SINGLE_TAG {"+message.type":"FIFO"}',
                                b"U 1 2 7 MULTI_TAG {}"]), 479)
    assert got.topic_configs["T"]["attributes"] == {"+message.type": "FIFO"}
    assert got.topic_configs["U"] == topic_config("U", read_queue_nums=1, write_queue_nums=2,
                                                  perm=7, topic_filter_type="MULTI_TAG",
                                                  attributes={})


def test_compressed_unparsable_attributes_are_dropped_like_5x() -> None:
    got = _decode_plain(_plain([b"T 4 4 6 SINGLE_TAG {oops"]), 479)
    assert got.topic_configs["T"]["attributes"] == {}


def test_compressed_trailing_space_is_ignored_like_java_split() -> None:
    assert _decode_plain(_plain([b"T 4 4 6 SINGLE_TAG "])).topic_configs["T"]["perm"] == 6


@pytest.mark.parametrize(
    "line",
    [b"T 4 4 6", b"T 4 4 6 SINGLE_TAG {} extra", b"T four 4 6 SINGLE_TAG", b"T 4 4 6 ONE_TAG",
     b"T 4  4 6 SINGLE_TAG", b"T 4 4 99999999999 SINGLE_TAG", b"T 4 4 6_0 SINGLE_TAG", b""],
)
def test_compressed_bad_topic_line_raises(line: bytes) -> None:
    with pytest.raises(BodyError, match="compressed body"):
        _decode_plain(_plain([line]))


def test_compressed_filter_list_follows_java() -> None:
    assert _decode_plain(_plain([], b'["10.0.0.1:20000"]')).filter_servers == ["10.0.0.1:20000"]
    assert _decode_plain(_plain([], b"null")).filter_servers is None
    assert _decode_plain(_plain([], b"{garbage")).filter_servers == []


def test_compressed_static_topic_section_read_only_from_5_0_0() -> None:
    mapping = b'{"bname":"b","currIdMap":{0:0},"epoch":1,"topic":"T","totalQueues":1}'
    section = struct.pack(">i", 1) + _block(mapping)
    plain = _plain([b"T 1 1 6 SINGLE_TAG {}"], tail=section)
    assert list(_decode_plain(plain, 479).topic_configs) == ["T"]
    assert list(_decode_plain(plain, 412).topic_configs) == ["T"]
    assert _decode_plain(_plain([]), 479).topic_configs == {}
    with pytest.raises(BodyError):
        _decode_plain(_plain([], tail=struct.pack(">i", 1) + _block(b"[1]")), 479)
    with pytest.raises(BodyError):
        _decode_plain(_plain([], tail=struct.pack(">i", 2) + _block(mapping)), 479)
    assert _decode_plain(_plain([], tail=b"\x00\x00\x00\x07junk"), 412).topic_configs == {}


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"plainly not zlib", "not a zlib stream"),
        (zlib.compress(b"\x00\x00"), "truncated"),
        (zlib.compress(b"\x00\x00\x00\x10{}"), "exceeds"),
        (zlib.compress(b"\xff\xff\xff\xff"), "exceeds"),
        (zlib.compress(_block(b"[]") + b"\x00\x00\x00\x00" + _block(b"[]")), "DataVersion|object"),
        (zlib.compress(_plain([b"T 1 1 6 SINGLE_TAG"]))[:-12], "truncated|exceeds"),
    ],
)
def test_compressed_malformed_raises(body: bytes, match: str) -> None:
    with pytest.raises(BodyError, match=match):
        decode_register_body(body, True, 407)


def test_compressed_inflate_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bodies, "MAX_INFLATED", 1000)
    with pytest.raises(BodyError, match="inflates beyond"):
        decode_register_body(zlib.compress(b"\x00" * 5000), True, 407)


def test_compressed_trailing_bytes_after_zlib_stream_ignored() -> None:
    body = zlib.compress(_plain([b"T 1 1 6 SINGLE_TAG"])) + b"trailing"
    assert list(decode_register_body(body, True, 407).topic_configs) == ["T"]


# ------------------------------------------------------------------ register body encoding


def test_encode_register_body_with_attributes() -> None:
    dv = {"counter": 1, "timestamp": 2}
    topics = {"T": topic_config("T", attributes={"k": "v"}, order=True, topic_sys_flag=3)}
    text = encode_register_body(dv, topics, ["f:1"], False, with_attributes=True).decode()
    assert text == (
        '{"filterServerList":["f:1"],"topicConfigSerializeWrapper":{"dataVersion":'
        '{"counter":1,"timestamp":2},"topicConfigTable":{"T":{"attributes":{"k":"v"},'
        '"order":true,"perm":6,"readQueueNums":16,"topicFilterType":"SINGLE_TAG",'
        '"topicName":"T","topicSysFlag":3,"writeQueueNums":16}}}}'
    )
    plain = zlib.decompress(encode_register_body(dv, topics, [], True, with_attributes=True))
    assert _block(b'T 16 16 6 SINGLE_TAG {"k":"v"}') in plain
    back = decode_register_body(encode_register_body(dv, topics, [], True, with_attributes=True),
                                True, 479)
    assert back.topic_configs["T"]["attributes"] == {"k": "v"}
    assert back.topic_configs["T"]["order"] is False
    assert back.topic_configs["T"]["topicSysFlag"] == 0


def test_encode_register_body_4x_drops_attributes() -> None:
    topics = {"T": topic_config("T", attributes={"k": "v"})}
    out = encode_register_body({"counter": 0, "timestamp": 0}, topics, [], False)
    assert b"attributes" not in out


def test_encode_register_body_keeps_map_order() -> None:
    topics = {n: topic_config(n) for n in ("b", "a", "c")}
    out = encode_register_body({"counter": 0, "timestamp": 0}, topics, [], False)
    decoded = decode_register_body(out, False, 407)
    assert list(decoded.topic_configs) == ["b", "a", "c"]
    compressed = encode_register_body({"counter": 0, "timestamp": 0}, topics, [], True)
    assert list(decode_register_body(compressed, True, 407).topic_configs) == ["b", "a", "c"]


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


def test_kv_table_and_topic_list() -> None:
    assert encode_kv_table({"a": "1", "b": None}) == b'{"table":{"a":"1"}}'
    assert encode_kv_table({}) == b'{"table":{}}'
    assert encode_topic_list(["t1", "t2"]) == b'{"topicList":["t1","t2"]}'
    assert encode_topic_list(("c",), "h:1") == b'{"brokerAddr":"h:1","topicList":["c"]}'
    assert encode_topic_list(set()) == b'{"topicList":[]}'
    assert encode_kv_table({"k": "v\u2029"}) == b'{"table":{"k":"v\\u2029"}}'


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


def test_decode_topic_list_and_kv() -> None:
    assert decode_topic_list(b'{"topicList":["a"]}') == {"brokerAddr": None, "topicList": ["a"]}
    assert decode_topic_list(b'{"brokerAddr":"h","topicList":[]}')["brokerAddr"] == "h"
    assert decode_kv_table(b'{"table":{"a":"1"}}') == {"a": "1"}
    assert decode_kv_table(b"{}") == {}
    assert decode_register_result_body(None) is None
    assert decode_register_result_body(b"") is None


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
        (decode_kv_table, b'{"table":[]}'),
        (decode_kv_table, b'{"table":{"a":{}}}'),
        (decode_topic_list, b'{"topicList":"a"}'),
        (decode_register_result_body, b"{"),
    ],
)
def test_decoders_raise_body_error(decoder: Any, body: bytes | None) -> None:
    with pytest.raises(BodyError):
        decoder(body)


def test_body_error_is_value_error() -> None:
    assert issubclass(BodyError, ValueError)
