import struct
import zlib
from typing import Any

import pytest

from cluster.core.protocol import register_body
from cluster.core.protocol.body_common import BodyError, crc32_java
from cluster.core.protocol.register_body import (
    RegisterBody,
    decode_register_body,
    encode_register_body,
    topic_config,
)
from tests.unit.body_vectors import (
    REGISTER_CASES,
    case_ids,
    frame_body,
    load_vectors,
    needs_reference,
)

# ------------------------------------------------------------------ golden captures


@needs_reference
@pytest.mark.parametrize("entry", REGISTER_CASES, ids=case_ids(REGISTER_CASES))
def test_golden_register_body_round_trip(entry: dict[str, Any]) -> None:
    header = entry["request"]["header"]
    ext = header["extFields"]
    body = frame_body(entry["file_prefix"], "request")
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
    body = frame_body("05_register_broker_compressed", "request")
    decoded = decode_register_body(body, True, 407)
    assert decoded.data_version == {"counter": 0, "timestamp": 1795281875463}
    assert list(decoded.topic_configs)[:2] == ["SCHEDULE_TOPIC_XXXX", "DefaultCluster_REPLY_TOPIC"]
    tbw = decoded.topic_configs["TBW102"]
    assert tbw == topic_config("TBW102", read_queue_nums=4, write_queue_nums=4, perm=7)
    assert "attributes" not in tbw


# ------------------------------------------------------------------ vectors.json


@needs_reference
def test_vector_register_broker_request_json() -> None:
    vec = load_vectors()["register_broker_request_json"]
    body = vec["body_text"].encode()
    assert crc32_java(body) == vec["body_crc32"] == int(vec["fields"]["extFields"]["bodyCrc32"])
    decoded = decode_register_body(body, False, vec["fields"]["version"])
    assert list(decoded.topic_configs) == vec["topic_table_order"]
    assert decoded.data_version == {"counter": 2, "timestamp": 1700000000000}
    assert encode_register_body(decoded.data_version, decoded.topic_configs, [], False) == body


@needs_reference
def test_vector_register_broker_compressed_body() -> None:
    vectors = load_vectors()
    source = decode_register_body(vectors["register_broker_request_json"]["body_text"].encode(),
                                  False, 409)
    vec = vectors["register_broker_compressed_body"]
    deflated = encode_register_body(source.data_version, source.topic_configs, [], True)
    assert zlib.decompress(deflated).hex() == vec["plaintext_hex"]
    assert deflated.hex() == vec["deflated_hex"]
    assert crc32_java(deflated) == vec["body_crc32_of_deflated"]
    back = decode_register_body(bytes.fromhex(vec["deflated_hex"]), True, 409)
    assert back == RegisterBody(source.data_version, source.topic_configs, [])


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
    monkeypatch.setattr(register_body, "MAX_INFLATED", 1000)
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


def test_a_deflated_body_is_compressed_whatever_the_header_says() -> None:
    """5.x brokers with compressedRegister=true send compressed=false with a zlib body."""
    configs = {"T": {"topicName": "T", "perm": 6, "readQueueNums": 4, "writeQueueNums": 4}}
    dv = {"counter": 3, "timestamp": 1700000000000}
    deflated = register_body.encode_register_body(dv, configs, [], True)
    plain = register_body.encode_register_body(dv, configs, [], False)
    assert register_body.is_compressed(False, deflated)
    assert not register_body.is_compressed(False, plain)
    assert not register_body.is_compressed(False, b" {}") and not register_body.is_compressed(
        False, b"")
    assert register_body.is_compressed(True, plain)  # the header still wins
    got = register_body.decode_register_body(deflated, register_body.is_compressed(
        False, deflated), 513)
    assert got.data_version == dv and set(got.topic_configs) == {"T"}


def test_static_topics_are_read_from_a_body_in_shared_memory_too() -> None:
    from cluster.core.protocol.mapping_body import plain_mappings

    body = (b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,'
            b'"stateVersion":0,"timestamp":3},"topicConfigTable":{},"topicQueueMappingInfoMap":'
            b'{"T":{"bname":"b","currIdMap":{"0":0},"epoch":1,"topic":"T","totalQueues":1}}}}')
    infos = plain_mappings(body)
    assert infos["T"]["bname"] == "b" and infos["T"]["totalQueues"] == 1
    assert plain_mappings(memoryview(body)) == infos  # a large frame arrives as a view


def test_static_topics_are_found_wherever_the_map_is_and_whatever_the_topics_are_named() -> None:
    from cluster.core.protocol.mapping_body import plain_mappings
    from cluster.core.protocol.register_layout import MAX_TAIL

    info = b'{"bname":"b","currIdMap":{"0":0},"epoch":1,"topic":"T","totalQueues":1}'
    named = b'"topicQueueMappingInfoMap":{"topicName":"topicQueueMappingInfoMap","perm":6}'
    filler = b",".join(b'"F%d":{"topicName":"F%d","perm":6}' % (i, i) for i in range(4000))
    assert len(filler) > MAX_TAIL

    def body(table: bytes, infos: bytes, infos_first: bool = False) -> bytes:
        table_part, map_part = b'"topicConfigTable":{%s}' % table, \
            b'"topicQueueMappingInfoMap":{%s}' % infos
        parts = (map_part, table_part) if infos_first else (table_part, map_part)
        return b'{"topicConfigSerializeWrapper":{%s,%s}}' % parts

    # a topic named like the map, with the broker's map empty or not
    assert plain_mappings(body(named + b"," + filler, b"")) == {}
    assert plain_mappings(body(named, b'"T":' + info))["T"]["epoch"] == 1
    # the map before a table longer than the tail searched first
    got = plain_mappings(memoryview(body(filler, b'"T":' + info, infos_first=True)))
    assert got["T"]["bname"] == "b"
    assert plain_mappings(body(filler, b"", infos_first=True)) == {}
    assert plain_mappings(body(filler, b"")) == {}
