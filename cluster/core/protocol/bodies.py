"""NameServer request and reply bodies (reference §2.3.4, §2.4): plain dicts in, bytes out.

Data model (all plain dicts, keys in fastjson bean order, i.e. alphabetical):

* DataVersion ``{"counter": int, ["stateVersion": int,] "timestamp": int}``;
* TopicConfig ``{["attributes": {str: str},] "order", "perm", "readQueueNums",
  "topicFilterType", "topicName", "topicSysFlag", "writeQueueNums"}``;
* BrokerData ``{"brokerAddrs": {int: str}, "brokerName", "cluster"}`` (5.x adds
  ``enableActingMaster`` / ``zoneName``, kept when present);
* QueueData ``{"brokerName", "perm", "readQueueNums", "topicSysFlag", "writeQueueNums"}``.

Encoders write fastjson text (§1.9). The hot reply encoders serialize with orjson
and keep the result only when no string needed escaping (then orjson and fastjson
agree byte for byte); otherwise they fall back to :mod:`cluster.core.protocol.fastjson`.
Decoders accept fastjson's bare integer keys and raise :class:`BodyError`.
"""

from __future__ import annotations

import gc
import hashlib
import operator
import re
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from cluster.core.protocol import fastjson
from cluster.core.protocol.lenient import loads_lenient

V3_0_11 = 37
V5_0_0 = 413
MAX_INFLATED = 64 * 1024 * 1024
TOPIC_FILTER_TYPES = ("SINGLE_TAG", "MULTI_TAG")
DEFAULT_QUEUE_NUMS = 16
DEFAULT_PERM = 6

_I32 = struct.Struct(">i")
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_PLAIN_RISK = re.compile(rb"\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]")
_MISSING: Any = object()
_T = TypeVar("_T")


class BodyError(ValueError):
    """A body that cannot be decoded (the server answers SYSTEM_ERROR)."""


def crc32_java(data: bytes | None) -> int:
    """``UtilAll.crc32``: CRC-32 masked to 31 bits, 0 for a null or empty body."""
    return zlib.crc32(data) & 0x7FFFFFFF if data else 0


# ------------------------------------------------------------------ coercion


def _int(v: Any, what: str, default: int = 0) -> int:
    if type(v) is int:
        return v
    if v is None:
        return default
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and _INT_TEXT.fullmatch(v.strip()):
        return _parse_int(v.strip(), what)
    raise BodyError(f"{what}: expected an integer, got {v!r:.60}")


def _parse_int(text: str, what: str) -> int:
    """``int(text)`` of a text already matched by ``_INT_TEXT``; BodyError, not Python's
    ValueError, for one too long to convert (over ``sys.get_int_max_str_digits()``)."""
    try:
        return int(text)
    except ValueError:
        raise BodyError(f"{what}: number {text!r:.40} has too many digits") from None


def _bool(v: Any, what: str) -> bool:
    if v is None or v is False:
        return False
    if v is True:
        return True
    if isinstance(v, int):
        return v != 0
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    raise BodyError(f"{what}: expected a boolean, got {v!r:.60}")


def _str(v: Any, what: str) -> str | None:
    if v is None or type(v) is str:
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    raise BodyError(f"{what}: expected a string, got {type(v).__name__}")


def _dict(v: Any, what: str, default: Any = _MISSING) -> dict[str, Any]:
    if type(v) is dict:
        return v
    if v is None and default is not _MISSING:
        return default  # type: ignore[no-any-return]
    raise BodyError(f"{what}: expected a JSON object, got {type(v).__name__}")


def _list(v: Any, what: str) -> list[Any]:
    if v is None:
        return []
    if type(v) is list:
        return v
    raise BodyError(f"{what}: expected a JSON array, got {type(v).__name__}")


def _str_list(v: Any, what: str) -> list[str]:
    return [s for s in (_str(x, what) for x in _list(v, what)) if s is not None]


def _str_map(v: Any, what: str) -> dict[str, str]:
    d = _dict(v, what, {})
    return {k: s for k, x in d.items() if (s := _str(x, what)) is not None}


def _id_key(k: str, what: str) -> int:
    if _INT_TEXT.fullmatch(k):
        return _parse_int(k, what)
    raise BodyError(f"{what}: broker id {k!r:.40} is not an integer")


def _load(body: bytes | None, what: str) -> Any:
    if not body:
        raise BodyError(f"{what}: empty body")
    try:
        return loads_lenient(body)
    except ValueError as exc:
        raise BodyError(f"{what}: {exc}") from None


# ------------------------------------------------------------------ DataVersion


def _clock(now_ms: int | None) -> int:
    return int(time.time() * 1000) if now_ms is None else now_ms


def _data_version(obj: Any, what: str, now_ms: int | None) -> dict[str, int]:
    """A DataVersion from parsed JSON; a missing timestamp is "now" as in Java."""
    d = _dict(obj, what)
    dv = {"counter": _int(d.get("counter"), what)}
    state = d.get("stateVersion")
    if state is not None:
        dv["stateVersion"] = _int(state, what)
    ts = d.get("timestamp")
    dv["timestamp"] = _clock(now_ms) if ts is None else _int(ts, what)
    return dv


def _data_version_bean(dv: Mapping[str, int]) -> dict[str, int]:
    bean = {"counter": int(dv.get("counter", 0))}
    if dv.get("stateVersion") is not None:
        bean["stateVersion"] = int(dv["stateVersion"])
    bean["timestamp"] = int(dv.get("timestamp", 0))
    return bean


def data_version_equal(a: Mapping[str, int] | None, b: Mapping[str, int] | None) -> bool:
    """4.9 ``DataVersion.equals``: timestamp and counter; ``stateVersion`` is ignored.

    The NameServer follows 4.9 semantics, where a 5.x broker's stateVersion never
    decides whether its topic configs changed. Either side None → not equal.
    """
    if a is None or b is None:
        return False
    return a.get("timestamp") == b.get("timestamp") and a.get("counter") == b.get("counter")


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

# What a QueueData takes from a TopicConfig: (perm, readQueueNums, topicSysFlag, writeQueueNums).
QueueFields = tuple[int, int, int, int]

_HEAD = re.compile(
    rb'\{"filterServerList":(null|\[[^\[\]{}]*\]),'
    rb'"topicConfigSerializeWrapper":\{"dataVersion":(\{[^{}]*\})(?=[,}])'
)
_QUEUE_ROW = operator.itemgetter(
    "order", "perm", "readQueueNums", "topicFilterType", "topicName", "topicSysFlag",
    "writeQueueNums",
)
_QUEUE_ROW_TYPES = (bool, int, int, str, str, int, int)


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
    body: bytes | None, compressed: bool, version: int, *, now_ms: int | None = None
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


def topic_table_digest(body: bytes, head: RegisterHead) -> str:
    """Digest of the body after the head's DataVersion: equal digests, equal topic tables."""
    return hashlib.sha256(memoryview(body)[head.table_offset :]).hexdigest()


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
    plain 4.9 TopicConfig keyed by the topic it names (so topics and keys are one)."""
    if version < V3_0_11 or not body:
        return decode_register_queues(body, False, version, now_ms=now_ms), False
    return _register_json(body, now_ms, _named_queue_table)[1]


def _queue_table(obj: Any, what: str) -> dict[str, QueueFields]:
    return _named_queue_table(obj, what)[0]


def _named_queue_table(obj: Any, what: str) -> tuple[dict[str, QueueFields], bool]:
    table = _dict(obj, what, {})
    fast = _plain_queue_table(table)
    if fast is None:
        return queue_fields(_topic_table(table, what)), False
    return fast, len(fast) == len(table) and list(fast) == list(table)


def _plain_queue_table(table: dict[str, Any]) -> dict[str, QueueFields] | None:
    """QueueFields when every config is a plain 4.9 TopicConfig (exactly its seven fields,
    each of the type a broker writes), checked column by column; None otherwise."""
    configs = list(table.values())
    if not configs:
        return {}
    if set(map(type, configs)) != {dict} or set(map(len, configs)) != {len(_QUEUE_ROW_TYPES)}:
        return None
    try:
        columns = list(zip(*map(_QUEUE_ROW, configs), strict=True))
    except KeyError:
        return None
    typed = zip(columns, _QUEUE_ROW_TYPES, strict=True)
    if any(set(map(type, col)) != {typ} for col, typ in typed):
        return None
    _, perm, read, _, names, flag, write = columns
    topics = names if all(names) else [n or k for n, k in zip(names, table, strict=True)]
    return dict(zip(topics, zip(perm, read, flag, write, strict=True), strict=True))


def plain_entry(key: str, cfg: Any) -> QueueFields | None:
    """QueueFields of one topicConfigTable entry when :func:`_plain_queue_table` would take it
    as a plain 4.9 TopicConfig and its topic is its key; None otherwise."""
    if type(cfg) is not dict or len(cfg) != len(_QUEUE_ROW_TYPES):
        return None
    try:
        row = _QUEUE_ROW(cfg)
    except KeyError:
        return None
    if any(type(v) is not typ for v, typ in zip(row, _QUEUE_ROW_TYPES, strict=True)):
        return None
    _, perm, read, _, name, flag, write = row
    return (perm, read, flag, write) if (name or key) == key else None


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
    if version >= V5_0_0 and not cur.at_end():
        _skip_queue_mappings(cur)
    return RegisterBody(dv, topics, filters)


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


def _skip_queue_mappings(cur: _Cursor) -> None:
    """5.x static-topic section: parsed for well-formedness, contents unused."""
    for _ in range(cur.int32("topic queue mapping count")):
        _dict(_load(cur.block("topic queue mapping"), "topic queue mapping"), "mapping")


def encode_register_body(
    data_version: Mapping[str, int],
    topic_configs: Mapping[str, Mapping[str, Any]],
    filter_servers: list[str] | None,
    compressed: bool,
    *,
    with_attributes: bool = False,
) -> bytes:
    """``RegisterBrokerBody.encode(compressed)`` as a 4.9 broker sends it, topics in the
    given order; ``with_attributes`` adds 5.x ``attributes`` (JSON field / 6th line field)."""
    if compressed:
        plain = _compressed_plaintext(data_version, topic_configs, filter_servers, with_attributes)
        return zlib.compress(plain, 9)
    table = {k: _topic_config_bean(c, with_attributes) for k, c in topic_configs.items()}
    obj = {
        "filterServerList": None if filter_servers is None else list(filter_servers),
        "topicConfigSerializeWrapper": {
            "dataVersion": _data_version_bean(data_version),
            "topicConfigTable": table,
        },
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


# ------------------------------------------------------------------ reply encoders


def _fast_dump(obj: Any, standard: bool) -> bytes | None:
    """orjson output when it is byte-identical to fastjson's, else None."""
    try:
        out = orjson.dumps(obj)
    except TypeError:
        return None
    if b"\\" in out or b"\x7f" in out:
        return None
    if out.isascii():
        return None if standard and b"/" in out else out
    return None if standard or _PLAIN_RISK.search(out) else out


def _encode(build: Callable[[bool], Any], standard: bool) -> bytes:
    """``build(fast)`` returns the object; fast=True shapes it for orjson."""
    out = _fast_dump(build(True), standard)
    return out if out is not None else fastjson.dumpb(build(False), standard)


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


def encode_topic_route(route: Mapping[str, Any], standard: bool) -> bytes:
    """TopicRouteData (§2.4.1); ``standard`` = BrowserCompatible + MapSortField mode."""
    if route.get("topicQueueMappingByBroker") is not None:
        return fastjson.dumpb(_route_obj(route, False, standard), standard)
    return _encode(lambda fast: _route_obj(route, fast, standard), standard)


def encode_cluster_info(
    broker_addr_table: Mapping[str, Mapping[str, Any]],
    cluster_addr_table: Mapping[str, Iterable[str]],
) -> bytes:
    """ClusterInfo (§2.4.4), always plain mode (bare integer broker ids)."""

    def build(fast: bool) -> dict[str, Any]:
        addrs = _addrs_renderer(fast, False)
        brokers = {n: _broker_bean(b, addrs) for n, b in broker_addr_table.items() if b is not None}
        clusters = _list_map(cluster_addr_table, False)
        return {"brokerAddrTable": brokers, "clusterAddrTable": clusters}

    return _encode(build, False)


def encode_kv_table(table: Mapping[str, str | None]) -> bytes:
    """KVTable ``{"table":{...}}`` (§2.4.6), plain mode, null values omitted."""
    obj = {"table": {k: v for k, v in table.items() if v is not None}}
    return _encode(lambda fast: obj, False)


def encode_topic_list(topics: Iterable[str], broker_addr: str | None = None) -> bytes:
    """TopicList (§2.4.5); ``brokerAddr`` omitted when None."""
    obj: dict[str, Any] = {} if broker_addr is None else {"brokerAddr": broker_addr}
    obj["topicList"] = list(topics)
    return _encode(lambda fast: obj, False)


def encode_data_version(dv: Mapping[str, int]) -> bytes:
    """DataVersion (§2.4.7)."""
    return fastjson.dumpb(_data_version_bean(dv))


def encode_broker_member_group(
    cluster: str | None, broker_name: str | None, addrs: Mapping[int, str | None]
) -> bytes:
    """GET_BROKER_MEMBER_GROUP reply (§2.3.19), plain mode."""

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


def decode_data_version(body: bytes | None, *, now_ms: int | None = None) -> dict[str, int]:
    """DataVersion; a missing timestamp becomes ``now_ms`` (Java: construction time)."""
    return _data_version(_load(body, "DataVersion"), "DataVersion", now_ms)


def decode_register_result_body(body: bytes | None) -> dict[str, str] | None:
    """REGISTER_BROKER reply body: the ORDER_TOPIC_CONFIG KVTable, or None without a body."""
    return None if not body else decode_kv_table(body)
