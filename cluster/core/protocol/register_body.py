"""REGISTER_BROKER bodies: TopicConfig, RegisterBrokerBody decode (plain, compressed) and encode.

Also the registration shortcuts: the head of a fastjson body without its topic table, and
the topic table as QueueFields. A TopicConfig is ``{["attributes": {str: str},] "order",
"perm", "readQueueNums", "topicFilterType", "topicName", "topicSysFlag", "writeQueueNums"}``
(reference §2.4.8), keys in fastjson bean order (alphabetical).
"""

from __future__ import annotations

import gc
import re
import struct
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

from cluster.core.protocol import fastjson
from cluster.core.protocol.body_common import (
    _INT_TEXT,
    _MISSING,
    BodyError,
    _bool,
    _clock,
    _data_version,
    _data_version_bean,
    _dict,
    _int,
    _load,
    _str,
    _str_list,
    _str_map,
)
from cluster.core.protocol.lenient import loads_lenient
from cluster.core.protocol.mapping_body import (
    compressed_mapping,
    compressed_section,
    wrapper_fields,
)
from cluster.core.protocol.plain_config import QueueFields as QueueFields
from cluster.core.protocol.plain_config import plain_queue_table

V3_0_11 = 37
V5_0_0 = 413
MAX_INFLATED = 64 * 1024 * 1024
TOPIC_FILTER_TYPES = ("SINGLE_TAG", "MULTI_TAG")
DEFAULT_QUEUE_NUMS = 16
DEFAULT_PERM = 6

_I32 = struct.Struct(">i")
_T = TypeVar("_T")


# ------------------------------------------------------------------ TopicConfig


def topic_config(
    topic_name: str,
    *,
    read_queue_nums: int = DEFAULT_QUEUE_NUMS,
    write_queue_nums: int = DEFAULT_QUEUE_NUMS,
    perm: int = DEFAULT_PERM,
    topic_filter_type: str = "SINGLE_TAG",
    topic_sys_flag: int = 0,
    order: bool = False,
    attributes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A TopicConfig dict with Java's defaults (reference §2.4.8)."""
    cfg: dict[str, Any] = {} if attributes is None else {"attributes": dict(attributes)}
    cfg["order"] = order
    cfg["perm"] = perm
    cfg["readQueueNums"] = read_queue_nums
    cfg["topicFilterType"] = topic_filter_type
    cfg["topicName"] = topic_name
    cfg["topicSysFlag"] = topic_sys_flag
    cfg["writeQueueNums"] = write_queue_nums
    return cfg


def _topic_config(obj: Any, what: str) -> dict[str, Any]:
    d = _dict(obj, what)
    g = d.get
    cfg: dict[str, Any] = {}
    if g("attributes") is not None:
        cfg["attributes"] = _str_map(g("attributes"), what)
    cfg["order"] = _bool(g("order"), what)
    cfg["perm"] = _int(g("perm"), what, DEFAULT_PERM)
    cfg["readQueueNums"] = _int(g("readQueueNums"), what, DEFAULT_QUEUE_NUMS)
    cfg["topicFilterType"] = _str(g("topicFilterType"), what) or "SINGLE_TAG"
    cfg["topicName"] = _str(g("topicName"), what)
    cfg["topicSysFlag"] = _int(g("topicSysFlag"), what, 0)
    cfg["writeQueueNums"] = _int(g("writeQueueNums"), what, DEFAULT_QUEUE_NUMS)
    return cfg


def _topic_config_bean(cfg: Mapping[str, Any], with_attributes: bool) -> dict[str, Any]:
    bean: dict[str, Any] = {}
    if with_attributes:
        bean["attributes"] = dict(cfg.get("attributes") or {})
    bean["order"] = bool(cfg.get("order", False))
    bean["perm"] = int(cfg.get("perm", DEFAULT_PERM))
    bean["readQueueNums"] = int(cfg.get("readQueueNums", DEFAULT_QUEUE_NUMS))
    bean["topicFilterType"] = cfg.get("topicFilterType") or "SINGLE_TAG"
    bean["topicName"] = cfg.get("topicName")
    bean["topicSysFlag"] = int(cfg.get("topicSysFlag", 0))
    bean["writeQueueNums"] = int(cfg.get("writeQueueNums", DEFAULT_QUEUE_NUMS))
    return bean


def _topic_table(obj: Any, what: str) -> dict[str, dict[str, Any]]:
    table = _dict(obj, what, {})
    return {name: _topic_config(cfg, f"{what}[{name}]") for name, cfg in table.items()}


# ------------------------------------------------------------------ RegisterBrokerBody


@dataclass(slots=True)
class RegisterBody:
    """A decoded REGISTER_BROKER body; ``filter_servers`` None leaves the filter table alone."""

    data_version: dict[str, int]
    topic_configs: dict[str, dict[str, Any]]
    filter_servers: list[str] | None
    mappings: dict[str, dict[str, Any]] = field(default_factory=dict)  # static topics (5.x)


def is_compressed(flag: bool, body: bytes | memoryview | None) -> bool:
    """The header's ``compressed``, or a body that is a zlib stream rather than JSON.

    A 5.x broker with ``compressedRegister=true`` deflates its RegisterBrokerBody but sends
    ``compressed=false`` (``BrokerOuterAPI.registerBrokerAll`` sets it so), and the Java
    5.x NameServer then fails to decode it; a JSON body starts with ``{`` (or blank), a
    zlib stream with a header whose 16-bit value is a multiple of 31, method 8.
    """
    if flag:
        return True
    if body is None or len(body) < 2:
        return False
    cmf, flg = body[0], body[1]
    return cmf & 0x0F == 8 and cmf >> 4 <= 7 and (cmf << 8 | flg) % 31 == 0


def decode_register_body(
    body: bytes | None, compressed: bool, version: int, *, now_ms: int | None = None
) -> RegisterBody:
    """Decode per reference §2.3.4 step 3. ``now_ms`` stands in for Java's clock when
    a body omits its DataVersion timestamp. Raises BodyError."""
    if version < 0:
        raise BodyError(f"invalid request version {version}")
    if not body:
        filters: list[str] | None = [] if version >= V3_0_11 else None
        return RegisterBody({"counter": 0, "timestamp": 0}, {}, filters)
    if version < V3_0_11:
        dv, topics = _wrapper(_load(body, "TopicConfigSerializeWrapper"), now_ms, _topic_table)
        return RegisterBody(dv, topics, None)
    if compressed:
        return _decode_compressed(body, version, now_ms)
    return _decode_register_json(body, now_ms)


def _wrapper(
    obj: Any, now_ms: int | None, table: Callable[[Any, str], _T]
) -> tuple[dict[str, int], _T]:
    d = _dict(obj, "topicConfigSerializeWrapper")
    raw_dv = d.get("dataVersion")
    dv = (
        {"counter": 0, "timestamp": _clock(now_ms)}
        if raw_dv is None
        else _data_version(raw_dv, "dataVersion", now_ms)
    )
    return dv, table(d.get("topicConfigTable"), "topicConfigTable")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic collector while a large body becomes many acyclic containers:
    collections triggered by those allocations would only rescan them."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _register_json(
    body: bytes, now_ms: int | None, table: Callable[[Any, str], _T]
) -> tuple[dict[str, int], _T, list[str] | None]:
    with _gc_paused():
        obj = _dict(_load(body, "RegisterBrokerBody"), "RegisterBrokerBody")
        raw_wrapper = obj.get("topicConfigSerializeWrapper")
        dv, topics = _wrapper({} if raw_wrapper is None else raw_wrapper, now_ms, table)
    raw_filters = obj.get("filterServerList", _MISSING)
    if raw_filters is _MISSING:
        filters: list[str] | None = []
    elif raw_filters is None:
        filters = None
    else:
        filters = _str_list(raw_filters, "filterServerList")
    return dv, topics, filters


def _decode_register_json(body: bytes, now_ms: int | None) -> RegisterBody:
    return RegisterBody(*_register_json(body, now_ms, _topic_table))


# ------------------------------------------------------------------ registration shortcuts

_HEAD = re.compile(
    rb'\{"filterServerList":(null|\[[^\[\]{}]*\]),'
    rb'"topicConfigSerializeWrapper":\{"dataVersion":(\{[^{}]*\})(?=[,}])'
)


@dataclass(frozen=True, slots=True)
class RegisterHead:
    """The head of a plain JSON RegisterBrokerBody: everything but the topic table.

    ``table_offset`` is where the bytes after the DataVersion object start; they
    hold the topic table, so equal tails decode to equal topic tables.
    """

    data_version: dict[str, int]
    filter_servers: list[str] | None
    table_offset: int


def register_head(
    body: bytes | memoryview | None, compressed: bool, version: int, *, now_ms: int | None = None
) -> RegisterHead | None:
    """DataVersion and filter servers of a body laid out as fastjson writes it
    (``{"filterServerList":…,"topicConfigSerializeWrapper":{"dataVersion":{…},…``),
    without decoding the topic table. None for any other body (compressed, older
    than V3_0_11, other key order or spacing, unparsable fragments): decode it fully."""
    if compressed or version < V3_0_11 or not body:
        return None
    m = _HEAD.match(body)
    if m is None:
        return None
    try:
        raw_filters = orjson.loads(m.group(1))
        dv = _data_version(orjson.loads(m.group(2)), "dataVersion", now_ms)
        filters = None if raw_filters is None else _str_list(raw_filters, "filterServerList")
    except (orjson.JSONDecodeError, BodyError):
        return None
    return RegisterHead(dv, filters, m.end())


def queue_fields(configs: Mapping[str, Mapping[str, Any]]) -> dict[str, QueueFields]:
    """topic → QueueFields of TopicConfigs; the topic is the config's topicName, else its key.
    A topic named twice keeps its last config."""
    return {
        (cfg.get("topicName") or key): (
            int(cfg.get("perm", DEFAULT_PERM)),
            int(cfg.get("readQueueNums", DEFAULT_QUEUE_NUMS)),
            int(cfg.get("topicSysFlag", 0)),
            int(cfg.get("writeQueueNums", DEFAULT_QUEUE_NUMS)),
        )
        for key, cfg in configs.items()
    }


def decode_register_queues(
    body: bytes | None, compressed: bool, version: int, *, now_ms: int | None = None
) -> dict[str, QueueFields]:
    """The topic table of a REGISTER_BROKER body as QueueFields, validated exactly as
    :func:`decode_register_body` validates the whole body (same BodyErrors)."""
    if compressed or version < V3_0_11 or not body:
        rb = decode_register_body(body, compressed, version, now_ms=now_ms)
        return queue_fields(rb.topic_configs)
    return _register_json(body, now_ms, _queue_table)[1]


def decode_register_named_queues(
    body: bytes, version: int, *, now_ms: int | None = None
) -> tuple[dict[str, QueueFields], bool]:
    """:func:`decode_register_queues` of a plain JSON body, and whether every config is a
    plain TopicConfig (4.9's or 5.x's) keyed by the topic it names (so topics and keys are
    one)."""
    if version < V3_0_11 or not body:
        return decode_register_queues(body, False, version, now_ms=now_ms), False
    return _register_json(body, now_ms, _named_queue_table)[1]


def _queue_table(obj: Any, what: str) -> dict[str, QueueFields]:
    return _named_queue_table(obj, what)[0]


def _named_queue_table(obj: Any, what: str) -> tuple[dict[str, QueueFields], bool]:
    table = _dict(obj, what, {})
    fast = plain_queue_table(table)
    if fast is None:
        return queue_fields(_topic_table(table, what)), False
    return fast, len(fast) == len(table) and list(fast) == list(table)


class _Cursor:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def int32(self, what: str) -> int:
        if self.pos + 4 > len(self.data):
            raise BodyError(f"compressed body: truncated before {what}")
        (n,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(n)

    def block(self, what: str) -> bytes:
        """One int32-length-prefixed block."""
        n = self.int32(f"{what} length")
        if n < 0 or self.pos + n > len(self.data):
            raise BodyError(f"compressed body: {what} length {n} exceeds the data")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def _inflate(body: bytes) -> bytes:
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(body, MAX_INFLATED + 1)
    except zlib.error as exc:
        raise BodyError(f"compressed body: not a zlib stream ({exc})") from None
    if len(data) > MAX_INFLATED:
        raise BodyError(f"compressed body inflates beyond {MAX_INFLATED} bytes")
    return data


def _decode_compressed(body: bytes, version: int, now_ms: int | None) -> RegisterBody:
    cur = _Cursor(_inflate(body))
    dv = _data_version(_load(cur.block("dataVersion"), "dataVersion"), "dataVersion", now_ms)
    topics: dict[str, dict[str, Any]] = {}
    for _ in range(cur.int32("topic count")):
        cfg = _topic_line(cur.block("topic config").decode("utf-8", "replace"))
        topics[cfg["topicName"]] = cfg
    filters = _filter_list_text(cur.block("filterServerList"))
    mappings = {}
    if version >= V5_0_0 and not cur.at_end():
        for _ in range(cur.int32("topic queue mapping count")):
            topic, info = compressed_mapping(cur.block("topic queue mapping"))
            mappings[topic] = info
    return RegisterBody(dv, topics, filters, mappings)


def _java_int32(text: str, line: str) -> int:
    if _INT_TEXT.fullmatch(text):
        try:
            value = int(text)
        except ValueError:  # more digits than Python converts: not an int32 either
            value = 2**31
        if -(2**31) <= value < 2**31:
            return value
    raise BodyError(f"compressed body: bad number {text!r:.20} in topic line {line!r:.80}")


def _topic_line(line: str) -> dict[str, Any]:
    """``TopicConfig.decode``: 5 fields (4.9) or 6 with an attributes JSON (5.x)."""
    parts = line.split(" ")
    while parts and parts[-1] == "":
        parts.pop()
    if not 5 <= len(parts) <= 6:
        raise BodyError(f"compressed body: topic line needs 5 or 6 fields: {line!r:.80}")
    name, read, write, perm, filter_type = parts[:5]
    if filter_type not in TOPIC_FILTER_TYPES:
        raise BodyError(f"compressed body: unknown topicFilterType {filter_type!r:.40}")
    attributes = _attributes_text(parts[5]) if len(parts) == 6 else None
    return topic_config(
        name,
        read_queue_nums=_java_int32(read, line),
        write_queue_nums=_java_int32(write, line),
        perm=_java_int32(perm, line),
        topic_filter_type=filter_type,
        attributes=attributes,
    )


def _attributes_text(text: str) -> dict[str, str]:
    """5.x logs and ignores an unparsable attributes field, keeping an empty map."""
    try:
        return _str_map(loads_lenient(text), "attributes")
    except ValueError:
        return {}


def _filter_list_text(raw: bytes) -> list[str] | None:
    """``JSON.parseArray``; Java logs a parse failure and keeps an empty list."""
    try:
        value = loads_lenient(raw) if raw else []
        return None if value is None else _str_list(value, "filterServerList")
    except ValueError:
        return []


def encode_register_body(
    data_version: Mapping[str, int],
    topic_configs: Mapping[str, Mapping[str, Any]],
    filter_servers: list[str] | None,
    compressed: bool,
    *,
    with_attributes: bool = False,
    mappings: Mapping[str, Mapping[str, Any]] | None = None,
) -> bytes:
    """``RegisterBrokerBody.encode(compressed)`` as a 4.9 broker sends it, topics in the
    given order; ``with_attributes`` adds 5.x ``attributes`` (JSON field / 6th line field);
    ``mappings`` (topic → TopicQueueMappingInfo) the 5.x static-topic section, which a
    NameServer reads from a compressed body of a request version V5_0_0 or above."""
    if compressed:
        plain = _compressed_plaintext(data_version, topic_configs, filter_servers, with_attributes)
        return zlib.compress(plain + compressed_section(mappings), 9)
    table = {k: _topic_config_bean(c, with_attributes) for k, c in topic_configs.items()}
    wrapper: dict[str, Any] = {"dataVersion": _data_version_bean(data_version),
                               "topicConfigTable": table}
    wrapper.update(wrapper_fields(mappings))
    obj = {
        "filterServerList": None if filter_servers is None else list(filter_servers),
        "topicConfigSerializeWrapper": wrapper,
    }
    return fastjson.dumpb(obj)


def _topic_line_text(cfg: Mapping[str, Any], with_attributes: bool) -> str:
    bean = _topic_config_bean(cfg, with_attributes)
    name = "null" if bean["topicName"] is None else bean["topicName"]
    line = (
        f"{name} {bean['readQueueNums']} {bean['writeQueueNums']} {bean['perm']} "
        f"{bean['topicFilterType']}"
    )
    return f"{line} {fastjson.dumps(bean['attributes'])}" if with_attributes else line


def _block(data: bytes) -> bytes:
    return _I32.pack(len(data)) + data


def _compressed_plaintext(
    data_version: Mapping[str, int],
    topic_configs: Mapping[str, Mapping[str, Any]],
    filter_servers: list[str] | None,
    with_attributes: bool,
) -> bytes:
    parts = [_block(fastjson.dumpb(_data_version_bean(data_version)))]
    parts.append(_I32.pack(len(topic_configs)))
    parts += [_block(_topic_line_text(c, with_attributes).encode()) for c in topic_configs.values()]
    filters = None if filter_servers is None else list(filter_servers)
    parts.append(_block(fastjson.dumpb(filters)))
    return b"".join(parts)
