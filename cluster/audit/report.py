"""Render an AuditResult: terminal summary, JSON document, self-contained HTML page."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson

from cluster.audit.job import AuditResult
from cluster.audit.report_html import audit_page
from cluster.audit.timeline import secs
from cluster.core.clock import clock_text


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
            f"  from {clock_text(i['start'])}, {end}")


def summary_text(result: AuditResult) -> str:
    m, v = result.manifest, result.verdict
    lines = [f"audit of {result.source}: {len(m.nodes)} nodes ({', '.join(m.node_names)}), "
             f"{len(result.rounds)} rounds every {secs(m.interval_ms)}, {result.row_count} rows "
             "(times UTC)"]
    for u in result.unavailability:
        end = "until the end" if u["open"] else f"for {secs(u['duration_ms'])}"
        lines.append(f"unavailable: {u['node']} from {clock_text(u['start'])} {end} "
                     f"({u['rounds']} rounds)")
    for n in result.node_intervals:
        end = "until the end" if n["open"] else f"for {secs(n['duration_ms'])}"
        lines.append(f"node {n['node']} diverged from {clock_text(n['start'])} {end} "
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
    basis = (f"bound {secs(v.bound_ms)}, faults stopped {clock_text(v.fault_end)} "
             f"({v.fault_end_source})")
    if v.holds:
        return f"verdict: EVENTUALLY CONSISTENT ({basis})"
    return f"verdict: NOT eventually consistent: {'; '.join(v.reasons)} ({basis})"


# ------------------------------------------------------------------- HTML


def html_page(result: AuditResult) -> str:
    return audit_page(to_document(result))


def write_html(result: AuditResult, path: Path) -> None:
    path.write_text(html_page(result), encoding="utf-8")
