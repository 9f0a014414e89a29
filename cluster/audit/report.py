"""Render an AuditResult: terminal summary, JSON document, self-contained HTML page."""

from __future__ import annotations

import html
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from cluster.audit.job import AuditResult

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
HTML_INTERVALS = 200


def clock(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]


def secs(ms: int | float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f}s"


def to_document(result: AuditResult) -> dict[str, Any]:
    m = result.manifest
    return {
        "source": result.source,
        "manifest": asdict(m),
        "verdict": result.verdict.to_dict(),
        "rows": result.row_count,
        "rounds": result.rounds,
        "unavailability": result.unavailability,
        "node_intervals": result.node_intervals,
        "intervals": result.intervals,
        "intervals_total": result.intervals_total,
        "intervals_truncated": result.intervals_total - len(result.intervals),
        "never_converged": [i for i in result.intervals if i["open"]],
        "worst_keys": result.worst_keys,
        "timeline": result.timeline,
        "timings": result.timings,
    }


def write_json(result: AuditResult, path: Path) -> None:
    path.write_bytes(orjson.dumps(to_document(result),
                                  option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))


def _interval_line(i: dict[str, Any]) -> str:
    end = "still open" if i["open"] else f"closed after {secs(i['duration_ms'])}"
    return (f"  {i['table']:<8} {i['key']}  {i['kind']} on {','.join(i['nodes'])}"
            f"  from {clock(i['start'])}, {end}")


def summary_text(result: AuditResult) -> str:
    m, v = result.manifest, result.verdict
    lines = [f"audit of {result.source}: {len(m.nodes)} nodes ({', '.join(m.node_names)}), "
             f"{len(result.rounds)} rounds every {secs(m.interval_ms)}, {result.row_count} rows "
             "(times UTC)"]
    for u in result.unavailability:
        end = "until the end" if u["open"] else f"for {secs(u['duration_ms'])}"
        lines.append(f"unavailable: {u['node']} from {clock(u['start'])} {end} "
                     f"({u['rounds']} rounds)")
    for n in result.node_intervals:
        end = "until the end" if n["open"] else f"for {secs(n['duration_ms'])}"
        lines.append(f"node {n['node']} diverged from {clock(n['start'])} {end} "
                     f"({', '.join(n['causes'])})")
    open_ = [i for i in result.intervals if i["open"]]
    lines.append(f"divergence intervals: {result.intervals_total}, never converged: "
                 f"{v.never_converged_count}, closed late: {v.late_count}")
    lines += [_interval_line(i) for i in open_[:10]]
    if result.worst_keys:
        lines.append("worst keys:")
        lines += [f"  {w['table']:<8} {w['key']}  {secs(w['total_ms'])} in {w['intervals']} "
                  f"interval(s) on {','.join(w['nodes'])}" for w in result.worst_keys[:5]]
    lines.append(_verdict_line(result))
    return "\n".join(lines)


def _verdict_line(result: AuditResult) -> str:
    v = result.verdict
    basis = (f"bound {secs(v.bound_ms)}, faults stopped {clock(v.fault_end)} "
             f"({v.fault_end_source})")
    if v.holds:
        return f"verdict: EVENTUALLY CONSISTENT ({basis})"
    return f"verdict: NOT eventually consistent: {'; '.join(v.reasons)} ({basis})"


# ------------------------------------------------------------------- HTML


def _series(result: AuditResult) -> tuple[list[int], dict[str, list[int]]]:
    times = [r["round_time"] for r in result.rounds]
    pos = {r["round"]: i for i, r in enumerate(result.rounds)}
    tables = sorted({t["table"] for t in result.timeline})
    series = {t: [0] * len(times) for t in tables}
    for t in result.timeline:
        series[t["table"]][pos[t["round"]]] = t["divergent"]
    return times, series


def timeline_svg(result: AuditResult, width: int = 900, height: int = 260) -> str:
    times, series = _series(result)
    left, right, top, bottom = 50, 120, 15, 35
    t0, t1 = times[0], max(times[-1], times[0] + 1)
    peak = max([1] + [max(s) for s in series.values()])

    def x(t: float) -> float:
        return left + (t - t0) / (t1 - t0) * (width - left - right)

    def y(v: float) -> float:
        return height - bottom - v / peak * (height - top - bottom)

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'role="img" aria-label="disagreement over time">']
    parts += _down_bands(result, x, top, height - bottom)
    parts.append(f'<line x1="{left}" y1="{y(0)}" x2="{width - right}" y2="{y(0)}" stroke="#444"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{y(0)}" stroke="#444"/>')
    parts.append(f'<text x="{left - 6}" y="{top + 4}" text-anchor="end" '
                 f'font-size="11">{peak}</text>')
    parts.append(f'<text x="{left - 6}" y="{y(0)}" text-anchor="end" font-size="11">0</text>')
    parts.append(f'<text x="{width - right}" y="{height - 12}" text-anchor="end" font-size="11">'
                 f'+{(t1 - t0) / 1000:.0f}s</text>')
    parts.append(f'<text x="{left}" y="{height - 12}" font-size="11">{clock(t0)} UTC</text>')
    if not series:
        parts.append(f'<text x="{left + 10}" y="{y(0) - 10}" font-size="12">'
                     'every available node agreed on every key in every round</text>')
    for i, (table, values) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        pts = " ".join(f"{x(a):.1f},{y(v):.1f} {x(b):.1f},{y(v):.1f}"
                       for a, b, v in zip(times, [*times[1:], t1], values, strict=True))
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{pts}"/>')
        parts.append(f'<text x="{width - right + 8}" y="{top + 14 * (i + 1)}" font-size="12" '
                     f'fill="{color}">{html.escape(table)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _down_bands(result: AuditResult, x: Any, y0: float, y1: float) -> list[str]:
    out = []
    for u in result.unavailability:
        end = u["end"] if u["end"] is not None else u["last_seen"]
        out.append(f'<rect x="{x(u["start"]):.1f}" y="{y0}" '
                   f'width="{max(1.0, x(end) - x(u["start"])):.1f}" height="{y1 - y0}" '
                   f'fill="#d62728" fill-opacity="0.12"><title>{html.escape(u["node"])} '
                   f'unavailable {secs(u["duration_ms"])}</title></rect>')
    return out


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = ("body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
        "table{border-collapse:collapse;margin:.5em 0 1.5em}"
        "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}"
        ".ok{color:#2ca02c}.bad{color:#d62728}")


def _sections(result: AuditResult) -> list[str]:
    v = result.verdict
    cls, word = ("ok", "eventually consistent") if v.holds else ("bad", "NOT eventually consistent")
    out = [f'<h2 class="{cls}">Verdict: {word}</h2>',
           f"<p>{html.escape(_verdict_line(result))}</p>",
           "<h3>Disagreeing keys per table (red bands: a node unavailable)</h3>",
           timeline_svg(result),
           "<h3>Unavailable nodes</h3>",
           _table(["node", "start", "end", "duration", "rounds"],
                  [[u["node"], clock(u["start"]), clock(u["end"]), secs(u["duration_ms"]),
                    u["rounds"]] for u in result.unavailability]),
           "<h3>Node divergence (unavailable, or involved in a disagreeing key)</h3>",
           _table(["node", "start", "end", "duration", "rounds", "causes"],
                  [[n["node"], clock(n["start"]), clock(n["end"]), secs(n["duration_ms"]),
                    n["rounds"], ",".join(n["causes"])] for n in result.node_intervals]),
           "<h3>Worst keys</h3>",
           _table(["table", "key", "total", "intervals", "kinds", "nodes", "open"],
                  [[w["table"], w["key"], secs(w["total_ms"]), w["intervals"],
                    ",".join(w["kinds"]), ",".join(w["nodes"]), w["open"]]
                   for w in result.worst_keys]),
           f"<h3>Divergence intervals ({result.intervals_total}, first {HTML_INTERVALS})</h3>",
           _table(["table", "key", "kind", "nodes", "start", "end", "duration", "open"],
                  [[i["table"], i["key"], i["kind"], ",".join(i["nodes"]), clock(i["start"]),
                    clock(i["end"]), secs(i["duration_ms"]), i["open"]]
                   for i in result.intervals[:HTML_INTERVALS]])]
    return out


def html_page(result: AuditResult) -> str:
    m = result.manifest
    title = f"pynamesrv consistency audit: {html.escape(result.source)}"
    intro = (f"<p>{len(m.nodes)} nodes ({html.escape(', '.join(m.node_names))}), "
             f"{len(result.rounds)} rounds every {secs(m.interval_ms)}, "
             f"{result.row_count} rows. Times are UTC.</p>")
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title>"
            f"<style>{_CSS}</style></head><body><h1>{title}</h1>{intro}"
            + "".join(_sections(result)) + "</body></html>")


def write_html(result: AuditResult, path: Path) -> None:
    path.write_text(html_page(result), encoding="utf-8")
