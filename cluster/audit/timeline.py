"""The report timeline as data: one lane per node, fault lanes, a key-count series, marks.

Built from an audit report document (``report.to_document``, the content of
``audit-report.json``) and, for a chaos run, its faults on the same clock.
A node lane is available by default; spans mark where it diverged (its
node intervals with a key cause) and where it did not answer, named after
the fault that explains it (``paused`` for pause_node, ``down`` for kills
and stops, ``cut off`` for network faults). Pure: no I/O, no rendering.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster.core.clock import clock_text

MAX_TIP_KEYS = 12
DOWN_STATE = {"pause_node": "paused", "kill_node": "down", "stop_node": "down",
              "kill_worker": "down"}


@dataclass(frozen=True, slots=True)
class Span:
    start: int
    end: int
    kind: str
    label: str
    tip: tuple[str, ...]
    ident: str = ""


@dataclass(frozen=True, slots=True)
class Lane:
    label: str
    kind: str  # "node" or "fault"
    spans: tuple[Span, ...] = ()
    available: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Mark:
    """A moment drawn as a dashed line. ``bound`` marks (where the convergence bound ends)
    do not stretch the timeline: one past its end is a note with an arrow at the edge."""

    at: int
    label: str
    tip: str
    bound: bool = False


@dataclass(frozen=True, slots=True)
class Fault:
    """One applied fault on the timeline's clock (ms); ``end == start`` for an instant one."""

    start: int
    end: int
    fault: str
    target: str
    lane: str
    tip: tuple[str, ...]
    ok: bool = True


@dataclass(frozen=True, slots=True)
class Timeline:
    t0: int
    t1: int
    clock: bool  # True: times are epoch ms (ticks show UTC); False: ms from the start
    lanes: tuple[Lane, ...]
    series: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    marks: tuple[Mark, ...] = ()


def secs(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f}s"


def _until(item: Mapping[str, Any], t1: int) -> int:
    end = item.get("end")
    if end is None:
        end = item.get("last_seen")
    return int(end if end is not None else t1)


def _when(item: Mapping[str, Any]) -> str:
    end = ("still open at the end" if item.get("end") is None
           else f"to {clock_text(item['end'])}")
    return f"from {clock_text(item['start'])} {end} ({secs(item.get('duration_ms'))})"


def _overlaps(a0: int, a1: int, b0: int, b1: int) -> bool:
    return a0 <= b1 and b0 <= a1


def _key_lines(node: str, start: int, end: int, intervals: Sequence[Mapping[str, Any]],
               t1: int) -> list[str]:
    hits = [i for i in intervals if node in (i.get("nodes") or [])
            and _overlaps(start, end, int(i["start"]), _until(i, t1))]
    lines = [f"{i['table']} {i['key']}: {i['kind']} ({secs(i.get('duration_ms'))}"
             f"{', open' if i.get('open') else ''})" for i in hits[:MAX_TIP_KEYS]]
    if len(hits) > MAX_TIP_KEYS:
        lines.append(f"... and {len(hits) - MAX_TIP_KEYS} more keys")
    return lines or ["(keys beyond the report's interval list)"]


def _down_state(node: str, start: int, end: int, faults: Sequence[Fault]) -> tuple[str, str]:
    for f in faults:
        if f.target == node and _overlaps(start, end, f.start, f.end) and f.lane == "node":
            state = DOWN_STATE.get(f.fault, "cut off" if f.fault.startswith("net_") else "")
            if state:
                return state, f"fault: {f.fault} {f.target}"
    return "unavailable", ""


def _diverging(node: str, doc: Mapping[str, Any], t1: int) -> list[Span]:
    out = []
    for n, item in enumerate(doc.get("node_intervals") or []):
        causes = [c for c in item.get("causes") or [] if c != "unavailable"]
        if item["node"] != node or not causes:
            continue
        start, end = int(item["start"]), _until(item, t1)
        tip = (f"{node} diverging {_when(item)}", f"causes: {', '.join(causes)}",
               *_key_lines(node, start, end, doc.get("intervals") or [], t1))
        out.append(Span(start, end, "diverging", "diverging", tip, f"div-{node}-{n}"))
    return out


def _unavailable(node: str, doc: Mapping[str, Any], faults: Sequence[Fault],
                 t1: int) -> list[Span]:
    out = []
    for n, item in enumerate(doc.get("unavailability") or []):
        if item["node"] != node:
            continue
        start, end = int(item["start"]), _until(item, t1)
        state, why = _down_state(node, start, end, faults)
        tip = (f"{node} not answering ({state}) {_when(item)}",
               f"{item.get('rounds', '?')} rounds without a snapshot", *([why] if why else []))
        out.append(Span(start, end, state, state, tip, f"down-{node}-{n}"))
    return out


def _series(doc: Mapping[str, Any]) -> dict[str, list[tuple[int, int]]]:
    times = [int(r["round_time"]) for r in sorted(doc.get("rounds") or [],
                                                  key=lambda r: r["round"])]
    pos = {r["round"]: i for i, r in enumerate(sorted(doc.get("rounds") or [],
                                                      key=lambda r: r["round"]))}
    series: dict[str, list[int]] = {}
    for t in doc.get("timeline") or []:
        series.setdefault(t["table"], [0] * len(times))[pos[t["round"]]] = int(t["divergent"])
    return {table: list(zip(times, counts, strict=True))
            for table, counts in sorted(series.items())}


def _marks(doc: Mapping[str, Any]) -> tuple[Mark, ...]:
    v = doc.get("verdict") or {}
    end, bound = v.get("fault_end"), v.get("bound_ms")
    if end is None:
        return ()
    marks = [Mark(int(end), "faults stopped",
                  f"faults stopped at {clock_text(end)} ({v.get('fault_end_source', '')})")]
    if bound is not None:
        marks.append(Mark(int(end) + int(bound), f"bound {secs(bound)}",
                          f"every divergence must have closed by {clock_text(end + bound)}",
                          bound=True))
    return tuple(marks)


def fault_lanes(faults: Sequence[Fault]) -> list[Lane]:
    lanes: dict[str, list[Span]] = {}
    for n, f in enumerate(faults):
        label = f"{f.fault.replace('_', ' ')} {f.target}"
        lanes.setdefault(f.lane, []).append(
            Span(f.start, f.end, f.fault if f.ok else "failed", label, f.tip, f"fault-{n}"))
    return [Lane(f"{name} faults", "fault", tuple(spans)) for name, spans in lanes.items()]


def _range(times: Iterable[int]) -> tuple[int, int]:
    ts = list(times)
    lo, hi = (min(ts), max(ts)) if ts else (0, 1000)
    return lo, max(hi, lo + 1000)


def from_audit(doc: Mapping[str, Any], faults: Sequence[Fault] = ()) -> Timeline:
    """The timeline of an audit report document, with a chaos run's faults if given: it
    spans the rounds, the faults and where they stopped, not the bound beyond them."""
    rounds = [int(r["round_time"]) for r in doc.get("rounds") or []]
    first, last = _range(rounds)
    marks = _marks(doc)
    t0, t1 = _range([first, last, *(f.start for f in faults), *(f.end for f in faults),
                     *(m.at for m in marks if not m.bound)])
    names = [n["name"] for n in (doc.get("manifest") or {}).get("nodes") or []]
    lanes = [Lane(node, "node", tuple(_diverging(node, doc, last)
                                      + _unavailable(node, doc, faults, last)), (first, last))
             for node in names]
    return Timeline(t0, t1, True, (*fault_lanes(faults), *lanes), _series(doc), marks)


def from_faults(faults: Sequence[Fault], duration_ms: int) -> Timeline:
    """Faults alone, in ms from the start of the run (no audit to draw the nodes from)."""
    t1 = max([duration_ms, *(f.end for f in faults)])
    return Timeline(0, max(t1, 1000), False, tuple(fault_lanes(faults)))
