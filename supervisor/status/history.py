"""Agreement over the last hour, as the page draws it: one strip per node and one for all.

Pure: the geometry of each lane's segments on a 1000-unit wide strip ending at
the last round, a tooltip per segment, and a link from each divergent segment
to the entries it disagreed on (``/keys?lane=NODE&at=START``).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from cluster.core.agreement_history import AGREE, CLUSTER, DIVERGE, SILENT, Segment
from supervisor.status.board import BoardState

WIDTH = 1000.0
TICK_S = 600
STATE_TEXT = {AGREE: "agreed", DIVERGE: "diverged", SILENT: "not answering",
              "off": "not running"}


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def duration(s: float) -> str:
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _bars(lane: str, segs: list[Segment], start: float, end: float) -> list[dict[str, Any]]:
    span = max(1.0, end - start)
    out = []
    for s in _closed(segs, end):
        a, b = max(s.start, start), min(max(s.end, s.start), end)
        x = (a - start) / span * WIDTH
        w = max(2.0, (b - a) / span * WIDTH)
        title = f"{STATE_TEXT.get(s.state, s.state)} {_clock(s.start)}–{_clock(s.end)}"
        title += f" ({duration(s.end - s.start)})"
        if s.state == DIVERGE:
            title += f", up to {s.worst:,} entries; click for them"
        if s.state == SILENT and s.reason:
            title += f": {s.reason}"
        out.append({"x": round(x, 1), "w": round(min(w, WIDTH - x), 1), "cls": s.state,
                    "title": title, "href": f"/keys?lane={lane}&at={int(s.start)}"
                    if s.state == DIVERGE and s.sample else None})
    return out


def _closed(segs: list[Segment], now: float) -> list[Segment]:
    """The segments with the last one lasting until ``now`` (it goes on)."""
    return [*segs[:-1], replace(segs[-1], end=max(segs[-1].end, now))] if segs else []


def _summary(segs: list[Segment], now: float) -> str:
    if not segs:
        return "no rounds yet"
    segs = _closed(segs, now)
    last = segs[-1]
    diverged = [s for s in segs if s.state == DIVERGE]
    text = f"{STATE_TEXT.get(last.state, last.state)} since {_clock(last.start)}"
    if diverged:
        total = sum(max(0.0, s.end - s.start) for s in diverged)
        times = "once" if len(diverged) == 1 else f"{len(diverged)} times"
        text += f"; diverged {times} in the window ({duration(total)} in all)"
    return text


def _ticks(start: float, end: float) -> list[dict[str, Any]]:
    span = max(1.0, end - start)
    first = (int(start) // TICK_S + 1) * TICK_S
    return [{"x": round((t - start) / span * WIDTH, 1),
             "text": time.strftime("%H:%M", time.localtime(t))}
            for t in range(first, int(end) + 1, TICK_S)]


def history_view(state: BoardState) -> dict[str, Any]:
    h = state.history
    end = state.gathered_at or time.time()
    start = end - h.window_s
    if h.started_at is not None:
        start = max(start, h.started_at)
    order = [CLUSTER] + [n["name"] for n in state.nodes]
    lanes = [{"name": "all nodes" if lane == CLUSTER else lane,
              "bars": _bars(lane, h.lanes[lane], start, end),
              "summary": _summary(h.lanes[lane], end)}
             for lane in order if lane in h.lanes]
    return {"lanes": lanes, "ticks": _ticks(start, end), "from": _clock(start),
            "to": _clock(end), "window": duration(end - start),
            "since_agreement": duration(h.seconds_since_agreement(end))
            if h.seconds_since_agreement(end) else ""}
