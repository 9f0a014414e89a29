from typing import Any

import pytest

from cluster.core.protocol.admin_bodies import (
    decode_kv_table,
    decode_register_result_body,
    decode_topic_list,
    encode_kv_table,
    encode_topic_list,
)
from cluster.core.protocol.body_common import BodyError
from tests.unit.body_vectors import frame_body, needs_reference

# ------------------------------------------------------------------ golden captures


@needs_reference
def test_golden_register_result_kv_table() -> None:
    body = frame_body("06_register_broker_resp_with_order_kvtable", "response")
    assert decode_register_result_body(body) == {"TopicTest": "broker-a:4"}


# ------------------------------------------------------------------ reply encoders


def test_kv_table_and_topic_list() -> None:
    assert encode_kv_table({"a": "1", "b": None}) == b'{"table":{"a":"1"}}'
    assert encode_kv_table({}) == b'{"table":{}}'
    assert encode_topic_list(["t1", "t2"]) == b'{"topicList":["t1","t2"]}'
    assert encode_topic_list(("c",), "h:1") == b'{"brokerAddr":"h:1","topicList":["c"]}'
    assert encode_topic_list(set()) == b'{"topicList":[]}'
    assert encode_kv_table({"k": "v\u2029"}) == b'{"table":{"k":"v\\u2029"}}'


# ------------------------------------------------------------------ client decoders


def test_decode_topic_list_and_kv() -> None:
    assert decode_topic_list(b'{"topicList":["a"]}') == {"brokerAddr": None, "topicList": ["a"]}
    assert decode_topic_list(b'{"brokerAddr":"h","topicList":[]}')["brokerAddr"] == "h"
    assert decode_kv_table(b'{"table":{"a":"1"}}') == {"a": "1"}
    assert decode_kv_table(b"{}") == {}
    assert decode_register_result_body(None) is None
    assert decode_register_result_body(b"") is None


@pytest.mark.parametrize(
    ("decoder", "body"),
    [
        (decode_kv_table, b'{"table":[]}'),
        (decode_kv_table, b'{"table":{"a":{}}}'),
        (decode_topic_list, b'{"topicList":"a"}'),
        (decode_register_result_body, b"{"),
    ],
)
def test_decoders_raise_body_error(decoder: Any, body: bytes | None) -> None:
    with pytest.raises(BodyError):
        decoder(body)
