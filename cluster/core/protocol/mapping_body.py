"""Static topics: the TopicQueueMappingInfo entries a 5.x broker registers
(``topicQueueMappingInfoMap`` of its RegisterBrokerBody), in the form the route replies
print them (``topicQueueMappingByBroker``).

An info is kept as Java's ``TopicQueueMappingInfo`` holds it: ``bname``, ``currIdMap``
(logical → physical queue id), ``dirty``, ``epoch``, ``scope`` (``__global__`` when
absent), ``topic``, ``totalQueues``; unknown fields are dropped, as Java drops them.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from cluster.core.protocol import fastjson
from cluster.core.protocol.body_common import (
    BodyError,
    _bool,
    _dict,
    _int,
    _load,
    _str,
)
from cluster.core.protocol.register_layout import MAX_TAIL

GLOBAL_SCOPE = "__global__"
_I32 = struct.Struct(">i")
_KEY = b'"topicQueueMappingInfoMap"'


def mapping_info(obj: Any) -> dict[str, Any]:
    """One TopicQueueMappingInfo as Java decodes it. Raises BodyError."""
    d = _dict(obj, "topic queue mapping")
    ids = _dict(d.get("currIdMap"), "currIdMap", {})
    scope = d.get("scope", GLOBAL_SCOPE)
    return {
        "bname": _str(d.get("bname"), "bname"),
        "currIdMap": {str(_int(k, "currIdMap")): _int(v, "currIdMap") for k, v in ids.items()},
        "dirty": _bool(d.get("dirty"), "dirty"),
        "epoch": _int(d.get("epoch"), "epoch"),
        "scope": _str(scope, "scope"),
        "topic": _str(d.get("topic"), "topic"),
        "totalQueues": _int(d.get("totalQueues"), "totalQueues"),
    }


def plain_mappings(body: bytes | memoryview | None) -> dict[str, dict[str, Any]]:
    """topic → info of a plain JSON RegisterBrokerBody (none when it has no static topics;
    the body is parsed again only when it names some)."""
    if not body or _empty_or_absent(body):
        return {}
    raw = body if type(body) is bytes else bytes(body)
    doc = _dict(_load(raw, "RegisterBrokerBody"), "RegisterBrokerBody")
    wrapper = _dict(doc.get("topicConfigSerializeWrapper"), "topicConfigSerializeWrapper", {})
    infos = _dict(wrapper.get("topicQueueMappingInfoMap"), "topicQueueMappingInfoMap", {})
    return {topic: mapping_info(info) for topic, info in infos.items()}


def _empty_or_absent(body: bytes | memoryview) -> bool:
    """Whether the body has no ``topicQueueMappingInfoMap`` or its last one (the wrapper's:
    a broker writes it after the topic table, and a topic name holds no quote) is ``{}``.
    Searched from the end, in the tail first: a search from the start of a 2 MB table
    costs milliseconds (every topic entry begins with the key's first and last byte)."""
    tail = bytes(body[-MAX_TAIL:])
    at = tail.rfind(_KEY)
    if at < 0 and len(body) > MAX_TAIL:
        tail = body if type(body) is bytes else bytes(body)
        at = tail.rfind(_KEY)
    if at < 0:
        return True
    at += len(_KEY)
    return tail[at:at + 3] == b":{}"


def compressed_mapping(block: bytes) -> tuple[str, dict[str, Any]]:
    """One entry of a compressed body's static-topic section, keyed by its topic."""
    info = mapping_info(_load(block, "topic queue mapping"))
    if info["topic"] is None:
        raise BodyError("topic queue mapping without a topic")
    return info["topic"], info


# ------------------------------------------------------------------ encoders (tests, tools)


def compressed_section(mappings: Mapping[str, Mapping[str, Any]] | None) -> bytes:
    """The static-topic section a 5.x broker appends to a compressed body (none: b"")."""
    if mappings is None:
        return b""
    blocks = [fastjson.dumpb(dict(m)) for m in mappings.values()]
    return _I32.pack(len(blocks)) + b"".join(_I32.pack(len(b)) + b for b in blocks)


def wrapper_fields(mappings: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    """The fields a 5.x broker's plain body adds to its topicConfigSerializeWrapper."""
    if mappings is None:
        return {}
    return {"topicQueueMappingDetailMap": {},
            "topicQueueMappingInfoMap": {t: dict(m) for t, m in mappings.items()}}
