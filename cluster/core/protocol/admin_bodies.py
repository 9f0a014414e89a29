"""Admin and register-result bodies: KVTable and TopicList encoders and decoders."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cluster.core.protocol.body_common import _dict, _encode, _load, _str, _str_list, _str_map

# ------------------------------------------------------------------ reply encoders


# The KV namespace RocketMQ keeps order topics' queue layouts in (NamesrvUtil).
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


def encode_kv_table(table: Mapping[str, str | None], five: bool = False) -> bytes:
    """KVTable ``{"table":{...}}`` (§2.4.6), plain mode, null values omitted."""
    obj = {"table": {k: v for k, v in table.items() if v is not None}}
    return _encode(lambda fast: obj, False, five)


def encode_topic_list(topics: Iterable[str], broker_addr: str | None = None,
                      five: bool = False) -> bytes:
    """TopicList (§2.4.5); ``brokerAddr`` omitted when None."""
    obj: dict[str, Any] = {} if broker_addr is None else {"brokerAddr": broker_addr}
    obj["topicList"] = list(topics)
    return _encode(lambda fast: obj, False, five)


# ------------------------------------------------------------------ client-side decoders


def decode_kv_table(body: bytes | None) -> dict[str, str]:
    """KVTable → its ``table`` map."""
    d = _dict(_load(body, "KVTable"), "KVTable")
    return _str_map(d.get("table"), "KVTable.table")


def decode_topic_list(body: bytes | None) -> dict[str, Any]:
    """TopicList → ``{"brokerAddr": str | None, "topicList": [str, ...]}``."""
    d = _dict(_load(body, "TopicList"), "TopicList")
    return {
        "brokerAddr": _str(d.get("brokerAddr"), "brokerAddr"),
        "topicList": _str_list(d.get("topicList"), "topicList"),
    }


def decode_register_result_body(body: bytes | None) -> dict[str, str] | None:
    """REGISTER_BROKER reply body: the ORDER_TOPIC_CONFIG KVTable, or None without a body."""
    return None if not body else decode_kv_table(body)
