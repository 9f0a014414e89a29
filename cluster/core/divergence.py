"""Where nodes' tables differ, from their GET_NODE_DIGEST answers: pure functions.

``mismatched_buckets`` compares summaries and says which buckets of which
tables to drill into; ``compare_units`` turns the drilled unit digests into
``Difference`` rows; ``Comparison`` sums them up. A node is *odd* on a
difference when it is outside the strict majority of the compared nodes (same
digest, or missing on more than half of them); with no strict majority every
compared node is odd. ``describe`` says what differs between values.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster.core.protocol.digest_body import TABLES

Summary = Mapping[str, Any]  # a GET_NODE_DIGEST summary reply body
Units = Mapping[str, Mapping[str, str]]  # {key: {sub: digest}}
DESCRIBE_PATHS = 3


@dataclass(frozen=True, slots=True)
class Difference:
    table: str
    key: str
    sub: str
    groups: tuple[tuple[str | None, tuple[str, ...]], ...]  # (digest or None: missing, nodes)
    odd: tuple[str, ...]

    @property
    def present(self) -> tuple[str, ...]:
        return tuple(n for d, nodes in self.groups if d is not None for n in nodes)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(n for d, nodes in self.groups if d is None for n in nodes)

    @property
    def differs(self) -> bool:
        """At least two nodes hold the unit with different content."""
        return sum(1 for d, _ in self.groups if d is not None) > 1

    @property
    def label(self) -> str:
        return f"{self.key}/{self.sub}" if self.sub else self.key

    @property
    def group(self) -> str:
        """What the page groups it under: a topic's broker, a KV entry's namespace, a key."""
        return self.sub if self.table == "topic" else self.key


def majority(groups: Sequence[tuple[str | None, tuple[str, ...]]], n: int) -> tuple[str, ...]:
    """The nodes outside the strict majority group (all of them when there is none)."""
    best = max(groups, key=lambda g: len(g[1]))
    if len(best[1]) * 2 > n:
        return tuple(x for d, nodes in groups if d != best[0] for x in nodes)
    return tuple(x for _, nodes in groups for x in nodes)


def _bucket_digests(summary: Summary, table: str) -> Mapping[str, str]:
    return summary["tables"][table].get("buckets") or {}


def compared_tables(summaries: Mapping[str, Summary]) -> tuple[str, ...]:
    """The tables every summary has (a reader that cannot see a table leaves it out)."""
    return tuple(t for t in TABLES if all(t in s.get("tables", {}) for s in summaries.values()))


def mismatched_buckets(summaries: Mapping[str, Summary]) -> dict[str, frozenset[int]]:
    """Per table whose digests differ, the buckets whose digests differ."""
    out: dict[str, frozenset[int]] = {}
    if len(summaries) < 2:
        return out
    for table in compared_tables(summaries):
        docs = [s["tables"][table] for s in summaries.values()]
        if len({(d.get("digest"), d.get("units")) for d in docs}) == 1:
            continue
        per_node = [_bucket_digests(s, table) for s in summaries.values()]
        names = set().union(*per_node)
        odd = frozenset(int(b) for b in names if len({p.get(b) for p in per_node}) > 1)
        if odd:
            out[table] = odd
    return out


def compare_units(table: str, units_by_node: Mapping[str, Units]) -> list[Difference]:
    """Every unit not held alike by all nodes given (node order kept), sorted by key, sub."""
    nodes = list(units_by_node)
    keys = sorted(set().union(*units_by_node.values())) if nodes else []
    out = []
    for key in keys:
        per = [units_by_node[n].get(key) or {} for n in nodes]
        for sub in sorted(set().union(*per)):
            digests = [p.get(sub) for p in per]
            if len(set(digests)) == 1:
                continue
            groups: dict[str | None, list[str]] = {}
            for node, d in zip(nodes, digests, strict=True):
                groups.setdefault(d, []).append(node)
            g = tuple((d, tuple(ns)) for d, ns in groups.items())
            out.append(Difference(table, key, sub, g, majority(g, len(nodes))))
    return out


@dataclass(frozen=True, slots=True)
class Comparison:
    nodes: tuple[str, ...] = ()
    tables: tuple[str, ...] = ()
    differences: tuple[Difference, ...] = ()
    by_table: dict[str, int] = field(default_factory=dict)
    per_node: dict[str, int] = field(default_factory=dict)
    topics: int = 0
    brokers: int = 0

    @property
    def agrees(self) -> bool:
        return not self.differences

    @classmethod
    def of(cls, nodes: Sequence[str], tables: Sequence[str],
           differences: Sequence[Difference]) -> Comparison:
        by_table = {t: 0 for t in TABLES}
        per_node = dict.fromkeys(nodes, 0)
        for d in differences:
            by_table[d.table] += 1
            for n in d.odd:
                per_node[n] += 1
        topics = len({d.key for d in differences if d.table == "topic"})
        brokers = len({d.key for d in differences if d.table == "broker"}
                      | {d.sub for d in differences if d.table == "topic"})
        return cls(tuple(nodes), tuple(tables), tuple(differences), by_table, per_node,
                   topics, brokers)


# ---------------------------------------------------------------- what differs

def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping) and value:
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k))
    else:
        yield path, value


def describe(values: Mapping[str, Any]) -> str:
    """What differs between nodes' values of one unit, e.g. ``perm: 4 on n3; 6 on n1, n2``
    (the odd value first), at most DESCRIBE_PATHS paths; "" when nothing differs."""
    flat = {node: dict(_leaves(v)) for node, v in values.items()}
    paths = sorted(set().union(*flat.values())) if flat else []
    parts = []
    for path in paths:
        by_value: dict[str, list[str]] = {}
        for node, leaves in flat.items():
            text = "absent" if path not in leaves else _short(leaves[path])
            by_value.setdefault(text, []).append(node)
        if len(by_value) > 1:
            ordered = sorted(by_value.items(), key=lambda kv: (len(kv[1]), kv[0]))
            text = "; ".join(f"{v} on {', '.join(ns)}" for v, ns in ordered)
            parts.append(f"{path}: {text}" if path else text)
    kept = parts[:DESCRIBE_PATHS]
    if len(parts) > DESCRIBE_PATHS:
        kept.append(f"and {len(parts) - DESCRIBE_PATHS} more")
    return " · ".join(kept)


def _short(v: Any, limit: int = 40) -> str:
    if isinstance(v, str):
        text = v
    elif isinstance(v, list):
        text = ",".join(map(str, v))
    else:
        text = "null" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"
