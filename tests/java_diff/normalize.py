"""Replies reduced to what must be equal between Java and pynamesrv.

Removed, because they differ by construction: the opaque (each side numbers its
own probes), DataVersion timestamps a server takes from its own clock, and the
order of collections Java does not fix (sets and HashMap values: topic lists,
a cluster's broker names, a route's broker and queue datas, which broker address
the system topic list names). Everything else is
kept, including the JSON flavour of map keys: a bare key `{0:"a"}` is marked
so that it never equals the quoted `{"0":"a"}`.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from cluster.core.protocol.codes import SerializeType
from tests.java_diff.sides import Outcome

BARE = "\u00b7bare\u00b7"  # prefix marking a key written without quotes
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z0-9_$.+-]+)(\s*:)")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
UNORDERED_LISTS = frozenset({"topicList", "brokerDatas", "queueDatas"})
UNORDERED_LIST_MAPS = frozenset({"clusterAddrTable"})
CLOCK_WINDOW_MS = 15 * 60 * 1000
NOW = "<server clock>"
ADDRESS = "<a registered broker address>"


def _mark_bare_keys(text: str) -> str:
    out, pos = [], 0
    for m in _STRING.finditer(text):
        out.append(_BARE_KEY.sub(rf'\1"{BARE}\2"\3', text[pos:m.start()]))
        out.append(m.group())
        pos = m.end()
    out.append(_BARE_KEY.sub(rf'\1"{BARE}\2"\3', text[pos:]))
    return "".join(out)


def parse_body(body: bytes | None) -> Any:
    """The body as JSON with bare keys marked; non-JSON text as {"text": ...}."""
    if not body:
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return {"bytes": body.hex()}
    try:
        return json.loads(_mark_bare_keys(text))
    except ValueError:
        return {"text": text}


def _sorted_list(items: list[Any]) -> list[Any]:
    return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))


def _canon(value: Any, key: str | None = None, parent: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: _canon(v, k, key) for k, v in value.items()}
    if isinstance(value, list):
        items = [_canon(v) for v in value]
        unordered = key in UNORDERED_LISTS or parent in UNORDERED_LIST_MAPS
        return _sorted_list(items) if unordered else items
    if key == "timestamp" and isinstance(value, int) and _recent(value):
        return NOW
    return value


def _recent(ms: int) -> bool:
    return abs(time.time() * 1000 - ms) < CLOCK_WINDOW_MS


def _topic_list(body: Any) -> Any:
    """GET_SYSTEM_TOPIC_LIST_FROM_NS names "the first" broker address in Java HashMap order,
    which Java does not fix: only its presence is compared."""
    if isinstance(body, dict) and set(body) == {"brokerAddr", "topicList"}:
        return {**body, "brokerAddr": ADDRESS if isinstance(body["brokerAddr"], str) else None}
    return body


def canonical(out: Outcome, body: bool = True) -> dict[str, Any]:
    """The comparable form of an outcome; `body=False` leaves the body out."""
    if out.reply is None:
        return {"kind": out.kind}
    r = out.reply
    ext = r.ext_fields
    if r.serialize_type is SerializeType.ROCKETMQ and not ext:
        ext = None  # the binary header cannot tell an empty map from none
    canon = {"kind": out.kind, "code": r.code, "flag": r.flag, "version": r.version,
             "language": r.language, "serializeType": r.serialize_type.name,
             "remark": r.remark, "extFields": ext}
    if body:
        canon["body"] = _topic_list(_canon(parse_body(r.body)))
    return canon


def describe(out: Outcome) -> str:
    """One outcome for a failure message: decoded header and body."""
    if out.reply is None:
        return f"<{out.kind}>"
    r = out.reply
    head = {"code": r.code, "flag": r.flag, "opaque": r.opaque, "version": r.version,
            "language": r.language, "serializeType": r.serialize_type.name,
            "remark": r.remark, "extFields": r.ext_fields}
    text = "<none>" if r.body is None else r.body[:2000].decode("utf-8", "replace")
    return f"header {json.dumps(head)}\n      body   {text}"


def differing_fields(java: dict[str, Any], ours: dict[str, Any]) -> list[str]:
    return sorted(k for k in java.keys() | ours.keys() if java.get(k) != ours.get(k))
