"""Draw a Timeline as inline SVG: real time ticks, swimlanes, hoverable bars, a key-count chart.

Every bar carries ``data-tip`` (lines for the page's tooltip), a ``<title>``
for readers without script, ``tabindex`` so it can be focused, and an ``id``
that ``page.html#tip=ID`` opens with its tooltip shown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from cluster.audit.html_kit import esc
from cluster.audit.timeline import Lane, Mark, Span, Timeline, secs
from cluster.core.clock import clock_text

WIDTH = 1200
LABEL_W = 118
RIGHT = 18
AXIS_H = 28
MARKS_H = 18  # a band above the ticks for the marks' labels, clear of the data
LANE_H = 24
ROW_H = 20
GAP = 10
CHART_H = 84
TICK_STEPS_MS = (100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000,
                 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000)
MAX_TICKS = 12
CHAR_W = 6.6
COLORS = {
    "available": "#c6f7e2", "diverging": "#f7c948", "paused": "#8662c7", "down": "#e12d39",
    "cut off": "#f0803c", "unavailable": "#9aa5b1", "failed": "#cbd2d9",
    "pause_node": "#8662c7", "kill_node": "#e12d39", "stop_node": "#ab091e",
    "kill_worker": "#ab091e", "broker_crash": "#2186eb", "broker_unregister": "#47a3f3",
    "hostile_client": "#323f4b",
}
NET_COLOR = "#f0803c"
SERIES = ("#d64545", "#2186eb", "#8662c7", "#27ab83", "#cb6e17", "#616e7c")
DARK_TEXT = {"diverging", "available", "failed", "unavailable"}
LEGEND = (("available", "node answering, agrees"), ("diverging", "node diverging"),
          ("paused", "paused"), ("down", "down (killed or stopped)"),
          ("cut off", "cut off (network fault)"), ("unavailable", "not answering"))


def color(kind: str) -> str:
    return COLORS.get(kind, NET_COLOR if kind.startswith("net_") else "#616e7c")


class _Scale:
    def __init__(self, tl: Timeline) -> None:
        self.t0, self.t1 = tl.t0, tl.t1

    def x(self, t: float) -> float:
        return LABEL_W + (t - self.t0) / (self.t1 - self.t0) * (WIDTH - LABEL_W - RIGHT)


def tick_step(span_ms: int) -> int:
    return next((s for s in TICK_STEPS_MS if span_ms / s <= MAX_TICKS), TICK_STEPS_MS[-1])


def tick_label(t: int, step: int, clock: bool) -> str:
    if not clock:
        s = t / 1000
        return f"+{s:.1f}s" if step < 1000 else f"+{s:.0f}s"
    text = clock_text(t)
    return text[:-2] if step < 1000 else text[:8]


def _ticks(tl: Timeline, sc: _Scale, top: float, bottom: float) -> list[str]:
    step = tick_step(tl.t1 - tl.t0)
    out = []
    t = math.ceil(tl.t0 / step) * step
    while t <= tl.t1:
        x = sc.x(t)
        anchor = "end" if x > WIDTH - RIGHT - 30 else "middle"
        out.append(f'<line x1="{x:.1f}" y1="{top + AXIS_H - 6}" x2="{x:.1f}" y2="{bottom:.1f}" '
                   f'stroke="#e4e7eb"/><text x="{x:.1f}" y="{top + AXIS_H - 10}" font-size="11" '
                   f'text-anchor="{anchor}" fill="#52606d" class="tick">'
                   f"{tick_label(t, step, tl.clock)}</text>")
        t += step
    return out


def _rows(spans: Sequence[Span]) -> list[int]:
    """Sub-row of each span so that spans in one row never overlap (greedy, by start)."""
    ends: list[int] = []
    rows = [0] * len(spans)
    for i in sorted(range(len(spans)), key=lambda i: spans[i].start):
        s = spans[i]
        row = next((r for r, end in enumerate(ends) if end < s.start), len(ends))
        if row == len(ends):
            ends.append(s.end)
        ends[row] = max(s.end, s.start + 1)
        rows[i] = row
    return rows


def _bar(s: Span, sc: _Scale, y: float, h: float) -> str:
    x0 = sc.x(s.start)
    w = max(4.0, sc.x(s.end) - x0)
    tip = "\n".join(s.tip)
    return (f'<rect id="{esc(s.ident)}" x="{x0:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h}" '
            f'rx="3" fill="{color(s.kind)}" tabindex="0" data-tip="{esc(tip)}">'
            f"<title>{esc(tip)}</title></rect>")


def _label(s: Span, sc: _Scale, y: float, h: float, others: Sequence[Span]) -> str:
    """The span's label inside its bar, when it fits and no other bar covers that part."""
    x0 = sc.x(s.start)
    need = CHAR_W * len(s.label) + 10
    if sc.x(s.end) - x0 < need:
        return ""
    if any(o is not s and sc.x(o.start) < x0 + need and sc.x(o.end) > x0 for o in others):
        return ""
    fill = "#102a43" if s.kind in DARK_TEXT else "#fff"
    return (f'<text x="{x0 + 5:.1f}" y="{y + h / 2 + 4:.1f}" font-size="11" fill="{fill}" '
            f'pointer-events="none">{esc(s.label)}</text>')


def _lane(lane: Lane, sc: _Scale, y: float) -> tuple[list[str], float]:
    rows = _rows(lane.spans) if lane.kind == "fault" else [0] * len(lane.spans)
    height = ROW_H * (max(rows, default=0) + 1) if lane.kind == "fault" else LANE_H
    out = [f'<text x="{LABEL_W - 10}" y="{y + min(height, LANE_H) / 2 + 4:.1f}" font-size="12.5" '
           f'text-anchor="end" font-weight="600" fill="#323f4b">{esc(lane.label)}</text>']
    if lane.available is not None:
        a0, a1 = lane.available
        out.append(f'<rect x="{sc.x(a0):.1f}" y="{y:.1f}" width="{sc.x(a1) - sc.x(a0):.1f}" '
                   f'height="{LANE_H}" rx="3" fill="{COLORS["available"]}"/>')
    order = sorted(range(len(lane.spans)), key=lambda i: lane.spans[i].kind != "diverging")
    h = ROW_H - 4 if lane.kind == "fault" else LANE_H
    out += [_bar(lane.spans[i], sc, y + rows[i] * ROW_H, h) for i in order]
    for i in order:
        peers = [lane.spans[j] for j in range(len(lane.spans)) if rows[j] == rows[i]]
        out.append(_label(lane.spans[i], sc, y + rows[i] * ROW_H, h, peers))
    return out, height


def _chart(tl: Timeline, sc: _Scale, y: float) -> list[str]:
    peak = max([1] + [c for pts in tl.series.values() for _, c in pts])
    base = y + CHART_H

    def cy(v: float) -> float:
        return base - v / peak * (CHART_H - 8)

    out = [f'<text x="{LABEL_W - 26}" y="{y + CHART_H / 2:.1f}" font-size="12" '
           f'text-anchor="end" fill="#323f4b" font-weight="600">keys</text>'
           f'<text x="{LABEL_W - 26}" y="{y + CHART_H / 2 + 14:.1f}" font-size="11" '
           f'text-anchor="end" fill="#7b8794">disagreeing</text>'
           f'<text x="{LABEL_W - 6}" y="{cy(peak) + 4:.1f}" font-size="10.5" text-anchor="end" '
           f'fill="#7b8794">{peak}</text><text x="{LABEL_W - 6}" y="{base + 4:.1f}" '
           f'font-size="10.5" text-anchor="end" fill="#7b8794">0</text>'
           f'<line x1="{LABEL_W}" y1="{base:.1f}" x2="{WIDTH - RIGHT}" y2="{base:.1f}" '
           f'stroke="#9aa5b1"/>']
    if not tl.series:
        out.append(f'<text x="{LABEL_W + 8}" y="{base - 8:.1f}" font-size="12" fill="#7b8794">'
                   "no key disagreed among the answering nodes in any round</text>")
    for i, (table, pts) in enumerate(tl.series.items()):
        c = SERIES[i % len(SERIES)]
        ends = [t for t, _ in pts[1:]] + [tl.t1]
        path = " ".join(f"{sc.x(t):.1f},{cy(v):.1f} {sc.x(e):.1f},{cy(v):.1f}"
                        for (t, v), e in zip(pts, ends, strict=True))
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{path}" '
                   f'stroke-opacity="0.85"><title>{esc(table)}: disagreeing keys per round'
                   "</title></polyline>")
    return out


def _mark_text(x: float, anchor: str, label: str, tip: str) -> str:
    return (f'<text x="{x:.1f}" y="{MARKS_H - 5}" font-size="11" fill="#102a43" '
            f'text-anchor="{anchor}" tabindex="0" data-tip="{esc(tip)}">{esc(label)}'
            f"<title>{esc(tip)}</title></text>")


def _beyond(m: Mark, tl: Timeline) -> str:
    """A mark past the end of the data: a note with an arrow at the right edge."""
    x = WIDTH - RIGHT
    late = secs(m.at - tl.t1)
    return (f'<path d="M{x - 9:.1f},{MARKS_H - 13} L{x:.1f},{MARKS_H - 8} '
            f'L{x - 9:.1f},{MARKS_H - 3} z" fill="#102a43"/>'
            + _mark_text(x - 12, "end", f"{m.label} ends {late} after the last round",
                         m.tip))


def _marks(tl: Timeline, sc: _Scale, bottom: float) -> list[str]:
    """Each mark's dashed line through the lanes, its label in the band above the ticks
    (left of the line when it would not fit right of it, or when another mark's label
    is to its right)."""
    out = []
    inside = [m for m in tl.marks if LABEL_W <= sc.x(m.at) <= WIDTH - RIGHT]
    for i, m in enumerate(inside):
        x = sc.x(m.at)
        right_room = (sc.x(inside[i + 1].at) if i + 1 < len(inside) else WIDTH - RIGHT) - x
        left = right_room < CHAR_W * len(m.label) + 8 and x - LABEL_W > right_room
        out.append(f'<line x1="{x:.1f}" y1="{MARKS_H - 2}" x2="{x:.1f}" y2="{bottom:.1f}" '
                   f'stroke="#102a43" stroke-dasharray="4 3" stroke-width="1.2"/>'
                   + _mark_text(x - 4 if left else x + 4, "end" if left else "start",
                                m.label, m.tip))
    out += [_beyond(m, tl) for m in tl.marks if sc.x(m.at) > WIDTH - RIGHT]
    return out


def render(tl: Timeline) -> str:
    sc = _Scale(tl)
    body: list[str] = []
    top = MARKS_H if tl.marks else 0
    y = float(top + AXIS_H)
    for lane in tl.lanes:
        parts, height = _lane(lane, sc, y)
        body += parts
        y += height + GAP
    chart = _chart(tl, sc, y) if tl.clock else []
    bottom = y + (CHART_H + 6 if chart else 0)
    parts = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" '
             f'viewBox="0 0 {WIDTH} {bottom + 4:.0f}" role="img" '
             f'aria-label="timeline of nodes and faults">',
             *_ticks(tl, sc, top, bottom), *body, *chart, *_marks(tl, sc, bottom), "</svg>"]
    return "".join(parts)


def legend(tl: Timeline) -> str:
    kinds = {s.kind for lane in tl.lanes for s in lane.spans}
    items = [(k, text) for k, text in LEGEND
             if k == "available" and any(lane.kind == "node" for lane in tl.lanes) or k in kinds]
    items += [(k, k.replace("_", " ")) for k in sorted(kinds)
              if k not in dict(LEGEND) and k != "failed"]
    if "failed" in kinds:
        items.append(("failed", "fault that failed to apply"))
    keys = [(SERIES[i % len(SERIES)], f"{table} keys") for i, table in enumerate(tl.series)]
    return '<div class="legend">' + "".join(
        f'<span><i style="background:{color(k)}"></i>{esc(text)}</span>' for k, text in items
    ) + "".join(f'<span><i style="background:{c};height:3px"></i>{esc(text)}</span>'
                for c, text in keys) + "</div>"
