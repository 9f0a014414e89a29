"""The head of a REGISTER_BROKER body read without its topic table (``register_head``), and
the topic table read as QueueFields (``decode_register_queues``), against the full decode."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from cluster.core.protocol import register_body
from cluster.core.protocol.body_common import BodyError
from tests.unit.test_register_fast import DV1, configs, plain_body

# ---------------------------------------------------------------- register_head


def test_head_of_a_fastjson_body() -> None:
    body = plain_body(configs(T=4), {"counter": 7, "timestamp": 9}, ["f:1", "f:2"])
    head = register_body.register_head(body, False, 409)
    assert head is not None
    assert head.data_version == {"counter": 7, "timestamp": 9}
    assert head.filter_servers == ["f:1", "f:2"]
    assert body[head.table_offset:].startswith(b',"topicConfigTable":')


def test_head_keeps_state_version_null_filters_and_missing_timestamp() -> None:
    body = (b'{"filterServerList":null,"topicConfigSerializeWrapper":'
            b'{"dataVersion":{"counter":3,"stateVersion":5},"topicConfigTable":{}}}')
    head = register_body.register_head(body, False, 409, now_ms=42)
    assert head is not None and head.filter_servers is None
    assert head.data_version == {"counter": 3, "stateVersion": 5, "timestamp": 42}
    assert head.data_version == register_body.decode_register_body(body, False, 409, now_ms=42
                                                                   ).data_version


@pytest.mark.parametrize("body", [
    b'{"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},'
    b'"topicConfigTable":{}},"filterServerList":[]}',
    b'{"filterServerList": [],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1}}}',
    b'{"filterServerList":[],"topicConfigSerializeWrapper":null}',
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{counter:1}}}',
    b'{"filterServerList":[{}],"topicConfigSerializeWrapper":{"dataVersion":{}}}',
    b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":"x"}}}',
    b"",
])
def test_head_refuses_other_shapes(body: bytes) -> None:
    assert register_body.register_head(body, False, 409) is None


def test_head_needs_the_filter_list_first() -> None:
    body = plain_body(configs(T=4), filters=None)
    assert not body.startswith(b'{"filterServerList"')
    assert register_body.register_head(body, False, 409) is None


def test_head_refuses_compressed_and_old_versions() -> None:
    body = plain_body(configs(T=4))
    assert register_body.register_head(body, False, 409) is not None
    assert register_body.register_head(body, True, 409) is None
    assert register_body.register_head(body, False, 36) is None


# ---------------------------------------------------------------- decode_register_queues


def _expected(body: bytes, compressed: bool = False, version: int = 409
              ) -> dict[str, register_body.QueueFields]:
    return register_body.queue_fields(register_body.decode_register_body(body, compressed, version,
                                                                         now_ms=1).topic_configs)


def test_queues_of_plain_attribute_compressed_and_old_bodies() -> None:
    cfgs = configs(A=4, B=8)
    cfgs["B"]["perm"], cfgs["B"]["topicSysFlag"] = 4, 2
    want = {"A": (6, 4, 0, 4), "B": (4, 8, 2, 8)}
    plain = plain_body(cfgs)
    assert register_body.decode_register_queues(plain, False, 409) == want == _expected(plain)
    attrs = plain_body(cfgs, with_attributes=True)
    assert register_body.decode_register_queues(attrs, False, 409) == want
    packed = register_body.encode_register_body(DV1, cfgs, [], True)
    assert register_body.decode_register_queues(packed, True, 409) == _expected(packed, True)
    assert register_body.decode_register_queues(packed, True, 409)["B"] == (4, 8, 0, 8)
    old = orjson.dumps({"dataVersion": DV1, "topicConfigTable": cfgs})
    assert register_body.decode_register_queues(old, False, 36) == want
    assert register_body.decode_register_queues(None, False, 409) == {}


def _raw_table(table: dict[str, Any]) -> bytes:
    return orjson.dumps({"filterServerList": [], "topicConfigSerializeWrapper": {
        "dataVersion": DV1, "topicConfigTable": table}})


def test_queues_of_unusual_configs_match_the_full_decode() -> None:
    base = register_body.topic_config("T", read_queue_nums=3, write_queue_nums=5)
    table = {
        "keyed": {**base, "topicName": ""},
        "text": {**base, "topicName": "text", "perm": "4", "order": "true"},
        "sparse": {"topicName": "sparse"},
        "dup1": {**base, "topicName": "same", "perm": 2},
        "dup2": {**base, "topicName": "same", "perm": 4},
    }
    body = _raw_table(table)
    got = register_body.decode_register_queues(body, False, 409)
    assert got == _expected(body)
    assert got == {"keyed": (6, 3, 0, 5), "text": (4, 3, 0, 5), "sparse": (6, 16, 0, 16),
                   "same": (4, 3, 0, 5)}


@pytest.mark.parametrize("bad", [
    {"order": "maybe"}, {"perm": {}}, {"topicFilterType": []}, {"attributes": 3},
])
def test_queues_raise_the_full_decodes_error(bad: dict[str, Any]) -> None:
    body = _raw_table({"T": {**register_body.topic_config("T"), **bad}})
    with pytest.raises(BodyError) as full:
        register_body.decode_register_body(body, False, 409)
    with pytest.raises(BodyError) as fast:
        register_body.decode_register_queues(body, False, 409)
    assert str(fast.value) == str(full.value)
