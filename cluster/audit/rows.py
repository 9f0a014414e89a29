"""The audit's on-disk format: one JSON line per table entry, plus a manifest.

Row fields: ``node``, ``round``, ``taken_at`` (ms), ``available`` (bool),
``table``, ``key``, ``digest``, ``value`` (canonical JSON text of the entry).
Every node gets one *status row* per round with ``table``/``key`` null:
``available=false`` (plus an ``error`` text) when it did not answer, else
``available=true`` so that a node with empty tables is still seen answering.

Key granularity: cluster → clusterName; broker → brokerName; topic →
``topic/brokerName``; filter and live → brokerAddr; kv → ``namespace/key``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import orjson

NESTED_TABLES = frozenset({"topic", "kv"})
MANIFEST_NAME = "manifest.json"
ROWS_PREFIX = "rows-"
ROWS_SUFFIX = ".jsonl"
FORMAT = "pynamesrv-audit/1"


class SnapshotError(ValueError):
    """A snapshot body does not have the documented shape."""


def canonical(value: Any) -> str:
    """Compact JSON with sorted keys: equal values give equal text."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _entries(table: str, content: Any) -> Iterator[tuple[str, Any]]:
    if not isinstance(content, Mapping):
        raise SnapshotError(f"table {table!r} is not an object")
    for key, value in content.items():
        if table in NESTED_TABLES:
            if not isinstance(value, Mapping):
                raise SnapshotError(f"table {table!r} entry {key!r} is not an object")
            for sub, inner in value.items():
                yield f"{key}/{sub}", inner
        else:
            yield str(key), value


def entry_rows(node: str, round_no: int, snapshot: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The status row and one row per table entry of one snapshot reply body."""
    tables = snapshot.get("tables")
    taken_at = snapshot.get("takenAt")
    if not isinstance(tables, Mapping):
        raise SnapshotError("snapshot has no 'tables' object")
    if not isinstance(taken_at, int) or isinstance(taken_at, bool):
        raise SnapshotError("snapshot has no integer 'takenAt'")
    rows = [status_row(node, round_no, taken_at, available=True)]
    for table in sorted(tables):
        for key, value in _entries(table, tables[table]):
            text = canonical(value)
            rows.append({"node": node, "round": round_no, "taken_at": taken_at,
                         "available": True, "table": table, "key": key,
                         "digest": digest(text), "value": text})
    return rows


def observed_rows(node: str, round_no: int, asked_at: int, snapshot: Mapping[str, Any] | None,
                  error: str | None = None) -> list[dict[str, Any]]:
    """One node's rows for one round: its snapshot's rows, or a single unavailable row.

    ``asked_at`` (ms) dates the unavailable row; a snapshot without the documented
    shape counts as no answer, with the shape problem as the reason.
    """
    if snapshot is not None:
        try:
            return entry_rows(node, round_no, snapshot)
        except SnapshotError as exc:
            error = str(exc)
    return [status_row(node, round_no, asked_at, available=False,
                       error=error or "no snapshot")]


def status_row(node: str, round_no: int, taken_at: int, *, available: bool,
               error: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"node": node, "round": round_no, "taken_at": taken_at,
                           "available": available, "table": None, "key": None,
                           "digest": None, "value": None}
    if error is not None:
        row["error"] = error
    return row


def rows_file_name(node: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in node)
    return f"{ROWS_PREFIX}{safe}{ROWS_SUFFIX}"


@dataclass(slots=True)
class BoundInputs:
    """The cluster timings that bound how long a divergence may last (ms)."""

    heartbeat_period_ms: int = 30_000
    scan_interval_ms: int = 5_000
    expiry_ms: int = 120_000

    def default_bound_ms(self) -> int:
        """A node that missed updates is repaired by the next heartbeat; a node
        holding a dead broker drops it after the expiry plus one scan."""
        return self.heartbeat_period_ms + self.scan_interval_ms + self.expiry_ms


@dataclass(slots=True)
class NodeRef:
    name: str
    address: str  # host:port


@dataclass(slots=True)
class Manifest:
    nodes: list[NodeRef]
    interval_ms: int
    bound_inputs: BoundInputs = field(default_factory=BoundInputs)
    started_at: int | None = None
    ended_at: int | None = None
    rounds: int = 0
    fault_end: int | None = None

    @property
    def node_names(self) -> list[str]:
        return [n.name for n in self.nodes]

    def to_json(self) -> bytes:
        doc = {"format": FORMAT, **asdict(self)}
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS)

    @classmethod
    def from_json(cls, data: bytes | str) -> Manifest:
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"manifest is not JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise ValueError("manifest is not a JSON object")
        return _manifest_from_doc(doc)


def _int_or_none(doc: Mapping[str, Any], name: str) -> int | None:
    v = doc.get(name)
    if v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool):
        raise ValueError(f"manifest field {name!r} is not an integer")
    return v


def _manifest_from_doc(doc: Mapping[str, Any]) -> Manifest:
    nodes = doc.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise ValueError("manifest has no 'nodes' list")
    refs = []
    for n in nodes:
        if not isinstance(n, Mapping) or not isinstance(n.get("name"), str):
            raise ValueError("manifest node entry without a 'name'")
        refs.append(NodeRef(name=n["name"], address=str(n.get("address", ""))))
    if len({r.name for r in refs}) != len(refs):
        raise ValueError("manifest lists a node name twice")
    interval = _int_or_none(doc, "interval_ms")
    if interval is None or interval <= 0:
        raise ValueError("manifest field 'interval_ms' must be a positive integer")
    bi = doc.get("bound_inputs") or {}
    if not isinstance(bi, Mapping):
        raise ValueError("manifest field 'bound_inputs' is not an object")
    defaults = BoundInputs()
    bound = BoundInputs(**{k: _int_or_none(bi, k) or getattr(defaults, k)
                           for k in ("heartbeat_period_ms", "scan_interval_ms", "expiry_ms")})
    return Manifest(nodes=refs, interval_ms=interval, bound_inputs=bound,
                    started_at=_int_or_none(doc, "started_at"),
                    ended_at=_int_or_none(doc, "ended_at"),
                    rounds=_int_or_none(doc, "rounds") or 0,
                    fault_end=_int_or_none(doc, "fault_end"))
