"""A chaos run as one self-contained HTML page: ``chaos-report.html`` next to its JSON.

Read back from the run's files (``schedule.json``, ``result.json``, the
nemesis records of ``history.jsonl``, ``audit/manifest.json`` and, when the
audit ran, ``audit/audit-report.json``): a verdict line, the faults as
applied drawn on the audit's timeline (one lane per node), the checks with
their evidence, the schedule and the audit's details.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from cluster.audit.html_kit import esc, page, table_or_none, verdict_block
from cluster.audit.report_html import details_html, timeline_section, verdict_headline
from cluster.audit.timeline import Fault, from_faults
from cluster.audit.timeline_svg import legend, render
from cluster.chaos.schedule import BROKER_FAULTS, NODE_FAULTS
from cluster.core.clock import clock_text

REPORT_HTML = "chaos-report.html"
NEMESIS_MARK = b'"process":"nemesis"'
MAX_EVIDENCE = 5
EVIDENCE_CHARS = 4000


def _json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def _nemesis(history: Path) -> dict[int, dict[str, dict[str, Any]]]:
    """Per schedule event, its ``apply`` and ``undo`` records (streamed; other lines skipped)."""
    steps: dict[int, dict[str, dict[str, Any]]] = {}
    try:
        with history.open("rb") as f:
            for line in f:
                if NEMESIS_MARK not in line:
                    continue
                rec = orjson.loads(line)
                value = rec.get("value") or {}
                if isinstance(value.get("event"), int) and value.get("phase"):
                    steps.setdefault(value["event"], {})[value["phase"]] = rec
    except OSError:
        return {}
    return steps


def _lane(fault: str) -> str:
    return "node" if fault in NODE_FAULTS else ("broker" if fault in BROKER_FAULTS else "client")


def _fault(idx: int, e: dict[str, Any], steps: dict[str, dict[str, Any]], origin: int,
           clock: bool) -> Fault:
    apply, undo = steps.get("apply"), steps.get("undo")
    at = float(apply.get("start") or apply["t"]) if apply else float(e["at"])
    until = (float(undo.get("start") or undo["t"]) if undo and undo.get("outcome") != "info"
             else float(e["undo_at"] if e.get("undo_at") is not None else at))
    ok = apply is None or apply.get("outcome") == "ok"

    def when(t: float) -> str:
        return f"+{t:.1f}s" + (f" ({clock_text(origin + round(t * 1000))} UTC)" if clock else "")

    tip = [f"{e['fault']} {e['target']} (event {idx})", f"applied {when(at)}"
           + ("" if ok else f", FAILED: {(apply or {}).get('value', {}).get('error', '')}")]
    if e.get("undo_at") is not None:
        tip.append(f"undone {when(until)}")
    if e.get("params"):
        tip.append("params " + orjson.dumps(e["params"]).decode())
    return Fault(origin + round(at * 1000), origin + round(until * 1000), e["fault"],
                 e["target"], _lane(e["fault"]), tuple(tip), ok)


def faults(out_dir: Path, origin: int, clock: bool) -> list[Fault]:
    """The run's faults as applied (history), else as scheduled, on the timeline's clock."""
    schedule = _json(out_dir / "schedule.json") or {}
    steps = _nemesis(out_dir / "history.jsonl")
    return [_fault(i, e, steps.get(i, {}), origin, clock)
            for i, e in enumerate(schedule.get("events") or [])]


def _pretty(item: Any) -> str:
    return orjson.dumps(item, option=orjson.OPT_INDENT_2).decode()[:EVIDENCE_CHARS]


def _check_rows(checks: list[dict[str, Any]]) -> str:
    if not checks:
        return '<p class="none">none: the run ended before its checks</p>'
    rows = []
    for c in checks:
        tag, cls = (("SKIP", "skip") if c.get("skipped") else
                    ("PASS", "ok") if c.get("ok") else ("FAIL", "bad"))
        ev = c.get("evidence") or []
        shown = "".join(f"<pre>{esc(_pretty(x))}</pre>" for x in ev[:MAX_EVIDENCE])
        more = f" (first {MAX_EVIDENCE} of {len(ev)})" if len(ev) > MAX_EVIDENCE else ""
        evidence = (f"<details{'' if c.get('ok') else ' open'}><summary>{len(ev)} item(s)"
                    f"{more}</summary>{shown}</details>" if ev else "")
        rows.append(f'<tr><td><span class="pill {cls}">{tag}</span></td><td>{esc(c["kind"])}'
                    f'</td><td class="mono">{esc(c["name"])}</td><td>{esc(c["summary"])}'
                    f"{evidence}</td></tr>")
    return ("<table><thead><tr><th></th><th>kind</th><th>check</th><th>result and evidence"
            "</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _schedule_rows(schedule: dict[str, Any], applied: list[Fault]) -> str:
    events = schedule.get("events") or []
    return table_or_none(
        ["#", "at", "fault", "target", "until", "params", "applied"],
        [[i, f"+{e['at']:.1f}s", e["fault"], e["target"],
          "" if e.get("undo_at") is None else f"+{e['undo_at']:.1f}s",
          orjson.dumps(e.get("params") or {}).decode(), "ok" if f.ok else "FAILED"]
         for i, (e, f) in enumerate(zip(events, applied, strict=True))],
        none="none: no fault was scheduled, so the run tested nothing")


def _verdict(result: dict[str, Any], audit: dict[str, Any] | None) -> str:
    failed = [c["name"] for c in result.get("checks") or [] if not c.get("ok")]
    scenario, seed = result.get("scenario"), result.get("seed")
    head = (f"PASS: every check held in {scenario} (seed {seed})" if result.get("ok") else
            f"FAIL: {scenario} (seed {seed})"
            + (f": {', '.join(failed)}" if failed else "")
            + (f": {result['error']}" if result.get("error") else "")
            + (" (interrupted)" if result.get("interrupted") else ""))
    audit_line = f"Audit: {verdict_headline(audit)[1]}. " if audit else "Audit: not run. "
    replay = (f"Replay: pynamesrv chaos run --scenario {scenario} --seed {seed} "
              f"--duration {result.get('duration_s', 0):g}s")
    return verdict_block(bool(result.get("ok")), head, audit_line + replay)


def html_page(out_dir: Path) -> str:
    result = _json(out_dir / "result.json") or {}
    schedule = _json(out_dir / "schedule.json") or {}
    audit = _json(out_dir / "audit" / "audit-report.json")
    started = (_json(out_dir / "audit" / "manifest.json") or {}).get("started_at")
    if audit is not None and isinstance(started, int):
        applied = faults(out_dir, started, True)
        timeline = timeline_section(audit, applied)
    else:
        applied = faults(out_dir, 0, False)
        tl = from_faults(applied, round(float(schedule.get("duration_s") or 0) * 1000))
        timeline = ('<section id="timeline"><h2>Faults (seconds from the start; no audit to '
                    "draw the nodes from)</h2>" + render(tl) + legend(tl) + "</section>")
    meta = (f"{out_dir} \u00b7 schedule {result.get('fingerprint', '?')} \u00b7 "
            f"{len(schedule.get('events') or [])} faults over {schedule.get('duration_s', '?')}s")
    body = [_verdict(result, audit), timeline,
            f'<section id="checks"><h2>Checks</h2>{_check_rows(result.get("checks") or [])}'
            "</section>",
            f'<section id="schedule"><h2>Schedule</h2>{_schedule_rows(schedule, applied)}'
            "</section>"]
    if audit is not None:
        body.append(f'<section id="details"><h2>Audit details</h2>{details_html(audit)}'
                    "</section>")
    title = f"pynamesrv chaos run: {result.get('scenario', '?')} seed {result.get('seed', '?')}"
    return page(title, meta, "".join(body))


def write_report(out_dir: Path) -> Path:
    """Write ``chaos-report.html`` into the run's directory from its files; returns the path."""
    path = out_dir / REPORT_HTML
    path.write_text(html_page(out_dir), encoding="utf-8")
    return path
