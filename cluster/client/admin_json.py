"""``topicRoute`` as mqadmin prints it: the reply decoded into the release's TopicRouteData
and written back, pretty, by the release's JSON library.

mqadmin 4.9.8 uses fastjson 1.2.69, 5.5.0 fastjson2. Both write a bean's non-null
properties in name order, one per line, indented with tabs, and integer map keys bare
(``{0:"..."}``); the decoded maps are Java ``HashMap``s, so their keys come out in
``HashMap`` order, not the reply's. They differ in:

* fastjson keeps an integer-keyed map's entries on its opening line and escapes
  ``\\x7f``-``\\x9f``, U+2028 and U+2029 (upper-case hex); fastjson2 writes every
  entry on its own line, escapes only control characters (lower-case hex) and writes
  an empty list property as ``[``, a blank indented line, ``]``;
* 5.x's TopicRouteData starts with empty broker and queue lists and filter table
  (so they are printed even when the reply lacks them), its BrokerData has
  ``enableActingMaster`` (false unless set) and ``zoneName``, and it keeps
  ``topicQueueMappingByBroker``; 4.9 drops what it has no field for.

``-l`` prints mqadmin's table instead (the same in both releases).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cluster.client.java_text import jstr, map_str
from cluster.core.javaorder import hashmap_order, long_hash, utf16_key
from cluster.core.protocol import fastjson

RELEASES = ("4.9", "5")
# TopicQueueMappingInfo's default scope (MixAll.METADATA_SCOPE_GLOBAL).
GLOBAL_SCOPE = "__global__"
# TopicRouteSubCommand's -l table.
LIST_FMT = "%-45s %-32s %-50s %-10s %-11s %-5s"
LIST_HEAD = ("#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
LIST_RULE = "-" * 158


@dataclass(frozen=True, slots=True)
class Bean:
    """A Java object: its non-null properties in the order they are written."""

    fields: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, slots=True)
class JMap:
    """A Java map: entries in iteration order (string or integer keys)."""

    entries: tuple[tuple[str | int, Any], ...]


@dataclass(frozen=True, slots=True)
class BeanList:
    """A ``List`` property of beans (fastjson2 writes an empty one on three lines)."""

    items: tuple[Bean, ...]


# ------------------------------------------------------------------ writers

_F2_UNSAFE = re.compile(r'["\\\x00-\x1f]')
_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f",
          "\r": "\\r"}


def _quote2(s: str) -> str:
    """A string as fastjson2 writes it."""
    return '"' + _F2_UNSAFE.sub(
        lambda m: _SHORT.get(m.group()) or f"\\u{ord(m.group()):04x}", s) + '"'


class _Writer:
    def __init__(self, five: bool) -> None:
        self.five = five
        self.quote: Callable[[str], str] = _quote2 if five else fastjson.quote
        self.out: list[str] = []

    def value(self, v: Any, level: int) -> None:
        if isinstance(v, Bean):
            self.block("{", "}", [(self.quote(k) + ":", x) for k, x in v.fields], level)
        elif isinstance(v, JMap):
            self.map(v, level)
        elif isinstance(v, BeanList):
            if self.five and not v.items:
                self.out.append("[\n" + "\t" * (level + 1) + "\n" + "\t" * level + "]")
            else:
                self.block("[", "]", [("", x) for x in v.items], level)
        elif isinstance(v, (list, tuple)):
            self.block("[", "]", [("", x) for x in v], level)
        elif isinstance(v, str):
            self.out.append(self.quote(v))
        else:
            self.out.append(jstr(v))

    def block(self, open_: str, close: str, items: Sequence[tuple[str, Any]],
              level: int, inline: Callable[[int], bool] = lambda i: False) -> None:
        if not items:
            self.out.append(open_ + close)
            return
        self.out.append(open_)
        for i, (head, item) in enumerate(items):
            if i:
                self.out.append(",")
            if not inline(i):
                self.out.append("\n" + "\t" * (level + 1))
            self.out.append(head)
            self.value(item, level + 1)
        self.out.append("\n" + "\t" * level + close)

    def map(self, m: JMap, level: int) -> None:
        items = [(self.quote(k) if isinstance(k, str) else str(k)) + ":" for k, _ in m.entries]
        # fastjson 1 starts no new line before an entry whose key is not a string.
        self.block("{", "}", list(zip(items, (v for _, v in m.entries), strict=True)), level,
                   inline=lambda i: not self.five and not isinstance(m.entries[i][0], str))


def pretty(value: Any, release: str) -> str:
    """``value`` as the release's JSON library writes it with PrettyFormat."""
    w = _Writer(release != "4.9")
    w.value(value, 0)
    return "".join(w.out)


# -------------------------------------------------------------- the beans

_ABSENT = object()


def _int(v: Any) -> int:
    return 0 if v is None else int(v)


def _truthy(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.lower() == "true")


def _id_map(raw: Mapping[Any, Any], hash_of: Callable[[int], int]) -> JMap:
    """A map with integer keys as a HashMap holds it (null values are not written)."""
    table = {int(k): v for k, v in raw.items()}
    return JMap(tuple((k, table[k]) for k in hashmap_order(table, hash_of)
                      if table[k] is not None))


def _bean(*fields: tuple[str, Any]) -> Bean:
    return Bean(tuple((k, v) for k, v in fields if v is not None))


def broker_bean(d: Mapping[str, Any], five: bool) -> Bean:
    addrs = d.get("brokerAddrs")
    fields = [("brokerAddrs", None if addrs is None else _id_map(addrs, long_hash)),
              ("brokerName", d.get("brokerName")), ("cluster", d.get("cluster"))]
    if five:
        fields += [("enableActingMaster", _truthy(d.get("enableActingMaster"))),
                   ("zoneName", d.get("zoneName"))]
    return _bean(*fields)


def queue_bean(q: Mapping[str, Any]) -> Bean:
    return _bean(("brokerName", q.get("brokerName")), ("perm", _int(q.get("perm"))),
                 ("readQueueNums", _int(q.get("readQueueNums"))),
                 ("topicSysFlag", _int(q.get("topicSysFlag"))),
                 ("writeQueueNums", _int(q.get("writeQueueNums"))))


def _mapping_bean(m: Mapping[str, Any]) -> Bean:
    """5.x TopicQueueMappingInfo."""
    ids = m.get("currIdMap", {})
    return _bean(("bname", m.get("bname")),
                 ("currIdMap", None if ids is None else _id_map(ids, lambda k: k)),
                 ("dirty", _truthy(m.get("dirty"))), ("epoch", _int(m.get("epoch"))),
                 ("scope", m.get("scope", GLOBAL_SCOPE)), ("topic", m.get("topic")),
                 ("totalQueues", _int(m.get("totalQueues"))))


def _str_map(raw: Mapping[str, Any], convert: Callable[[Any], Any]) -> JMap:
    return JMap(tuple((k, convert(raw[k])) for k in hashmap_order(raw) if raw[k] is not None))


def route_bean(doc: Mapping[str, Any], release: str) -> Bean:
    """A TopicRouteData reply as the release's TopicRouteData holds it."""
    five = release != "4.9"

    def get(name: str, default_5x: Any) -> Any:
        value = doc.get(name, _ABSENT)
        return (default_5x if five else None) if value is _ABSENT else value

    brokers, queues = get("brokerDatas", []), get("queueDatas", [])
    filters, mapping = get("filterServerTable", {}), doc.get("topicQueueMappingByBroker")
    return _bean(
        ("brokerDatas", None if brokers is None else
         BeanList(tuple(broker_bean(b, five) for b in brokers if isinstance(b, dict)))),
        ("filterServerTable", None if filters is None else _str_map(filters, list)),
        ("orderTopicConf", doc.get("orderTopicConf")),
        ("queueDatas", None if queues is None else
         BeanList(tuple(queue_bean(q) for q in queues if isinstance(q, dict)))),
        ("topicQueueMappingByBroker",
         _str_map(mapping, _mapping_bean) if five and isinstance(mapping, dict) else None))


def route_json(doc: Mapping[str, Any], release: str) -> str:
    """What ``mqadmin topicRoute -t T`` of the release prints (without the last newline)."""
    return pretty(route_bean(doc, release), release)


# --------------------------------------------------------------- -l table


def route_table(doc: Mapping[str, Any]) -> Iterator[str]:
    """``topicRoute -l``: brokers by name with their queues, then the totals.

    Raises KeyError (the broker's name) at a broker without queue data, where mqadmin
    fails after printing the lines before it.
    """
    queues = {q.get("brokerName"): q for q in doc.get("queueDatas") or () if isinstance(q, dict)}
    brokers = sorted((b for b in doc.get("brokerDatas") or () if isinstance(b, dict)),
                     key=lambda b: utf16_key(b.get("brokerName") or ""))
    yield LIST_FMT % LIST_HEAD
    reads = writes = 0
    for b in brokers:
        name = b.get("brokerName")
        if name not in queues:
            raise KeyError(name)
        q = queues[name]
        reads += _int(q.get("readQueueNums"))
        writes += _int(q.get("writeQueueNums"))
        addrs = _id_map(b.get("brokerAddrs") or {}, long_hash)
        yield LIST_FMT % (jstr(b.get("cluster")), jstr(name), map_str(addrs.entries),
                          _int(q.get("readQueueNums")), _int(q.get("writeQueueNums")),
                          _int(q.get("perm")))
    yield LIST_RULE
    yield LIST_FMT % ("Total:", len(queues), "", reads, writes, "")
