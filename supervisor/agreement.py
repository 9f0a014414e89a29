"""Live agreement across nodes: which brokers, topics and KV entries not every node has.

Pure functions over the ``tables`` of GET_NODE_SNAPSHOT replies (format in
docs/architecture.md). An entry every compared node has, with the same
content, agrees. A node that stopped answering is compared with the tables it
last answered with, and named in ``stale``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

TABLES = ("broker", "topic", "kv")
MAX_SHOWN = 200


@dataclass(frozen=True, slots=True)
class Counts:
    brokers: int
    topics: int
    kv: int


@dataclass(frozen=True, slots=True)
class Difference:
    table: str
    key: str
    present: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def differs(self) -> bool:
        """Every compared node has the entry, but not with the same content."""
        return not self.missing


@dataclass(frozen=True, slots=True)
class Agreement:
    compared: tuple[str, ...]
    stale: tuple[str, ...] = ()
    differences: tuple[Difference, ...] = ()
    total: int = 0
    by_table: dict[str, int] = field(default_factory=dict)

    @property
    def agrees(self) -> bool:
        return self.total == 0


def counts(tables: Mapping[str, Any]) -> Counts:
    return Counts(brokers=len(tables.get("broker") or {}), topics=len(tables.get("topic") or {}),
                  kv=sum(1 for _ in _entries("kv", tables)))


def _entries(table: str, tables: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    content = tables.get(table) or {}
    if not isinstance(content, Mapping):
        return
    for key, value in content.items():
        if table == "kv" and isinstance(value, Mapping):
            for sub, inner in value.items():
                yield f"{key}/{sub}", inner
        else:
            yield str(key), value


def _fingerprints(table: str, tables: Mapping[str, Any]) -> dict[str, bytes]:
    return {k: orjson.dumps(v, option=orjson.OPT_SORT_KEYS) for k, v in _entries(table, tables)}


def _table_differences(table: str, per_node: Mapping[str, Mapping[str, Any]]
                       ) -> list[Difference]:
    prints = {node: _fingerprints(table, tables) for node, tables in per_node.items()}
    keys = sorted(set().union(*prints.values())) if prints else []
    out = []
    for key in keys:
        present = tuple(n for n in per_node if key in prints[n])
        missing = tuple(n for n in per_node if key not in prints[n])
        if missing or len({prints[n][key] for n in present}) > 1:
            out.append(Difference(table, key, present, missing))
    return out


def compare(per_node: Mapping[str, Mapping[str, Any]], stale: Sequence[str] = ()) -> Agreement:
    """Differences among the nodes' tables (node order kept), at most MAX_SHOWN.

    ``stale`` names the nodes whose tables are the last they answered with.
    """
    kept = tuple(n for n in stale if n in per_node)
    if len(per_node) < 2:
        return Agreement(tuple(per_node), kept)
    found = [d for t in TABLES for d in _table_differences(t, per_node)]
    by_table = {t: sum(1 for d in found if d.table == t) for t in TABLES}
    return Agreement(tuple(per_node), kept, tuple(found[:MAX_SHOWN]), len(found),
                     {t: n for t, n in by_table.items() if n})
