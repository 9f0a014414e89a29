"""Broker requests built by the fan-out client are byte-identical to a Java 4.9.7 broker's.

Each golden REGISTER_BROKER / UNREGISTER_BROKER / QUERY_DATA_VERSION request is
rebuilt from its decoded content (identity, data version, topic table in the
broker's order) with the golden opaque and version 407, then compared byte for
byte, header and body, plain and compressed.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest

from cluster.client.fanout import (
    BrokerIdentity,
    RegisterPayload,
    parse_data_version,
    parse_register,
    query_data_version_command,
    register_command,
    unregister_command,
)
from cluster.core.protocol.codes import FLAG_ONEWAY
from cluster.core.protocol.frame import decode_frame, encode_command

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
GOLDEN = SHARED / "reference" / "java-4.9.7-golden"


def _index() -> dict[str, dict[str, Any]]:
    if not GOLDEN.is_dir():
        pytest.skip(f"golden captures not found at {GOLDEN}")
    return {e["file_prefix"]: e for e in json.loads((GOLDEN / "index.json").read_text())}


def _frame(prefix: str, kind: str = "request") -> bytes:
    return bytes.fromhex((GOLDEN / f"{prefix}.{kind}.hex").read_text().strip())


def _identity(ext: dict[str, str]) -> BrokerIdentity:
    return BrokerIdentity(ext["clusterName"], ext["brokerName"], ext["brokerAddr"],
                          int(ext["brokerId"]), ext.get("haServerAddr", ""))


def _plain_content(body: bytes) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
    wrapper = orjson.loads(body)["topicConfigSerializeWrapper"]
    return wrapper["dataVersion"], wrapper["topicConfigTable"]


def _compressed_content(body: bytes) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
    data, pos = zlib.decompress(body), 0

    def block() -> bytes:
        nonlocal pos
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4 + n
        return data[pos - n:pos]

    dv = orjson.loads(block())
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    topics = {}
    for _ in range(count):
        name, rq, wq, perm, ftype = block().decode().split(" ")
        topics[name] = {"topicName": name, "readQueueNums": int(rq), "writeQueueNums": int(wq),
                        "perm": int(perm), "topicFilterType": ftype}
    return dv, topics


@pytest.mark.parametrize("prefix", [
    "01_register_broker_master_first",
    "02_register_broker_increment",
    "03_register_broker_oneway",
    "04_register_broker_slave_first",
    "05_register_broker_compressed",
])
def test_register_request_matches_java(prefix: str) -> None:
    header = _index()[prefix]["request"]["header"]
    golden = _frame(prefix)
    sent = decode_frame(golden)
    compressed = header["extFields"]["compressed"] == "true"
    content = _compressed_content if compressed else _plain_content
    dv, topics = content(sent.body or b"")
    payload = RegisterPayload.build(dv, topics, [], compressed)
    cmd = register_command(_identity(header["extFields"]), payload, version=407,
                           oneway=bool(header["flag"] & FLAG_ONEWAY))
    cmd.opaque = header["opaque"]
    if compressed:
        assert zlib.decompress(payload.body) == zlib.decompress(sent.body or b"")
    assert encode_command(cmd) == golden
    assert payload.crc32 == int(header["extFields"]["bodyCrc32"])


def test_register_ext_fields_are_in_java_broker_order() -> None:
    payload = RegisterPayload.build({"counter": 1, "timestamp": 2}, {}, [], False)
    who = BrokerIdentity("c", "b", "127.0.0.1:10911", 0, "127.0.0.1:10912")
    cmd = register_command(who, payload)
    assert list(cmd.ext_fields or {}) == ["brokerId", "bodyCrc32", "clusterName", "brokerAddr",
                                          "haServerAddr", "compressed", "brokerName"]
    assert cmd.version == 409


@pytest.mark.parametrize("prefix", ["10_unregister_broker_master", "11_unregister_broker_slave"])
def test_unregister_request_matches_java(prefix: str) -> None:
    header = _index()[prefix]["request"]["header"]
    ext = header["extFields"]
    cmd = unregister_command(_identity(ext), version=407)
    cmd.opaque = header["opaque"]
    assert encode_command(cmd) == _frame(prefix)


@pytest.mark.parametrize("prefix", ["07_query_data_version_unchanged",
                                    "09_query_data_version_stale"])
def test_query_data_version_request_matches_java(prefix: str) -> None:
    header = _index()[prefix]["request"]["header"]
    golden = _frame(prefix)
    dv = orjson.loads(decode_frame(golden).body or b"")
    cmd = query_data_version_command(_identity(header["extFields"]), dv, version=407)
    cmd.opaque = header["opaque"]
    assert encode_command(cmd) == golden


def test_java_register_replies_parse() -> None:
    _index()
    master = parse_register(decode_frame(_frame("01_register_broker_master_first", "response")),
                            "n")
    assert (master.ha_server_addr, master.master_addr, master.kv_table) == (None, None, None)
    slave = parse_register(
        decode_frame(_frame("06_register_broker_resp_with_order_kvtable", "response")), "n")
    assert slave.master_addr == "127.0.0.1:10911"
    assert slave.ha_server_addr == "127.0.0.1:10912"
    assert slave.kv_table == {"TopicTest": "broker-a:4"}


def test_java_data_version_replies_parse() -> None:
    _index()
    same = parse_data_version(
        decode_frame(_frame("07_query_data_version_unchanged", "response")), "n")
    assert not same.changed and same.data_version == {"counter": 1, "timestamp": 1795281885843}
    unknown = parse_data_version(
        decode_frame(_frame("08_query_data_version_unknown_broker", "response")), "n")
    assert unknown.changed and unknown.data_version is None
