"""``/keys``: the disagreeing entries, filtered, the first ``LIMIT`` of them.

Filters come from the query string: ``table``, ``group`` (a topic's broker, a
KV namespace, a key), ``node`` (only entries on which that node is odd), ``q``
(a substring of the key); with ``lane`` and ``at`` the page shows the sample
kept for that past divergent segment of the agreement history instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

from cluster.core.divergence import Difference
from supervisor.status.board import BoardState
from supervisor.status.view import clock, difference_row

LIMIT = 200
MAX_FIELD = 200


@dataclass(frozen=True, slots=True)
class KeyFilter:
    table: str = ""
    group: str = ""
    node: str = ""
    q: str = ""
    lane: str = ""
    at: int | None = None

    def matches(self, d: Difference) -> bool:
        return ((not self.table or d.table == self.table)
                and (not self.group or d.group == self.group)
                and (not self.node or self.node in d.odd)
                and (not self.q or self.q in d.label))

    def link(self, **changes: str) -> str:
        fields = {"table": self.table, "group": self.group, "node": self.node, "q": self.q,
                  **changes}
        return "/keys?" + urlencode({k: v for k, v in fields.items() if v})


def parse_filter(query: str) -> KeyFilter:
    """A filter from a query string; unknown fields are ignored, long values cut."""
    raw = {k: v[0][:MAX_FIELD] for k, v in parse_qs(query, keep_blank_values=False).items()}
    at = raw.get("at", "")
    return KeyFilter(raw.get("table", ""), raw.get("group", ""), raw.get("node", ""),
                     raw.get("q", ""), raw.get("lane", ""), int(at) if at.isdigit() else None)


def _segment(state: BoardState, f: KeyFilter) -> dict[str, Any]:
    segs = state.history.lanes.get("*" if f.lane == "all nodes" else f.lane, [])
    seg = next((s for s in segs if int(s.start) == f.at), None)
    if seg is None:
        return {"title": f"{f.lane or 'that lane'}: no divergent segment at that time in the "
                         "last hour", "rows": [], "shown": 0, "total": 0}
    rows = [{"table": r.table, "key": r.label, "sub": "", "present": (), "missing": (),
             "odd": r.odd, "what": r.note or "", "majority": True} for r in seg.sample]
    return {"title": f"{f.lane}: diverged {clock(seg.start)}–{clock(seg.end)}, up to "
                     f"{seg.worst:,} entries; the first {len(rows)} at its worst round",
            "rows": rows, "shown": len(rows), "total": seg.worst}


def keys_context(state: BoardState, f: KeyFilter) -> dict[str, Any]:
    rnd = state.round
    base = {"f": f, "nodes": [n["name"] for n in state.nodes], "gathered": clock(
        state.gathered_at), "tables": sorted({g.table for g in state.groups}), "limit": LIMIT}
    if f.lane and f.at is not None:
        return {**base, **_segment(state, f), "past": True}
    found = [d for d in rnd.comparison.differences if f.matches(d)] if rnd else []
    rows = [difference_row(d, rnd) for d in found[:LIMIT]] if rnd else []
    total = len(rnd.comparison.differences) if rnd else 0
    return {**base, "title": "Disagreement right now", "rows": rows, "shown": len(rows),
            "matched": len(found), "total": total, "past": False}
