"""What the status page shows, as plain values: pure functions of a BoardState."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from supervisor.agreement import Agreement, counts
from supervisor.render import uptime_text
from supervisor.status_board import BoardState, Reading

STATE_CLASS = {"running": "ok", "starting": "info", "paused": "paused", "hung": "warn",
               "stopped": "off", "backoff": "warn", "failed": "bad"}
TABLE_NOUN = {"broker": ("broker", "brokers"), "topic": ("topic", "topics"),
              "kv": ("KV entry", "KV entries")}


@dataclass(frozen=True, slots=True)
class Header:
    cluster_file: str
    namesrv_addr: str
    control: str


def clock(t: float | None) -> str:
    return "-" if t is None else time.strftime("%H:%M:%S", time.localtime(t))


def _plural(n: int, table: str) -> str:
    one, many = TABLE_NOUN[table]
    return f"{n} {one if n == 1 else many}"


def _answer(n: dict[str, Any], r: Reading | None) -> dict[str, Any]:
    if not n.get("pid"):
        return {"text": "not running", "cls": "off", "counts": None, "stale": False}
    if r is None:
        return {"text": "not asked yet", "cls": "off", "counts": None, "stale": False}
    if r.answered:
        return {"text": f"answering ({r.took_s * 1000:.0f} ms)", "cls": "ok",
                "counts": counts(r.tables or {}), "stale": False}
    if r.stale:
        return {"text": f"not answering: {r.error}; tables as of {clock(r.tables_at)}",
                "cls": "bad", "counts": counts(r.tables or {}), "stale": True}
    return {"text": f"not answering: {r.error}", "cls": "bad", "counts": None, "stale": False}


def node_rows(state: BoardState) -> list[dict[str, Any]]:
    rows = []
    for n in state.nodes:
        rows.append({
            "name": n["name"], "addr": f"{n['host']}:{n['port']}", "pid": n.get("pid") or "-",
            "state": n["state"], "state_cls": STATE_CLASS.get(n["state"], "off"),
            "uptime": uptime_text(n.get("uptime_s") or 0) if n.get("pid") else "-",
            "restarts": n.get("restarts", 0), "last_exit": n.get("last_exit") or "-",
            "answer": _answer(n, state.readings.get(n["name"]))})
    return rows


def child_rows(state: BoardState) -> list[dict[str, Any]]:
    return [{"name": c["name"], "pid": c.get("pid") or "-", "state": c["state"],
             "state_cls": STATE_CLASS.get(c["state"], "off"),
             "uptime": uptime_text(c.get("uptime_s") or 0) if c.get("pid") else "-",
             "restarts": c.get("restarts", 0), "last_exit": c.get("last_exit") or "-"}
            for c in state.children]


def silent_nodes(state: BoardState) -> list[str]:
    return [n["name"] for n in state.nodes
            if n.get("pid") and (r := state.readings.get(n["name"])) is not None
            and not r.answered]


def _silence(state: BoardState) -> str:
    """A sentence on the nodes that do not answer, and which are compared as last seen."""
    out = []
    for name in silent_nodes(state):
        r = state.readings[name]
        out.append(f"{name} is not answering (compared with its tables as of "
                   f"{clock(r.tables_at)})." if r.stale else f"{name} is not answering.")
    return (" " + " ".join(out)) if out else ""


def banner(state: BoardState) -> dict[str, str]:
    """One sentence on agreement right now, and its class (ok, warn, bad, info)."""
    a = state.agreement
    tail = _silence(state)
    if a is None:
        return {"cls": "info", "text": "Asking the nodes for their tables..."}
    if len(a.compared) < 2:
        who = a.compared[0] if a.compared else "no node"
        return {"cls": "warn", "text": f"Only {who} can be compared: nothing to compare.{tail}"}
    if a.agrees:
        c = counts(state.readings[a.compared[0]].tables or {})
        return {"cls": "warn" if tail else "ok",
                "text": f"All {len(a.compared)} nodes agree: {_plural(c.brokers, 'broker')}, "
                        f"{_plural(c.topics, 'topic')}, {_plural(c.kv, 'kv')}.{tail}"}
    parts = ", ".join(_plural(n, t) for t, n in a.by_table.items())
    return {"cls": "bad", "text": f"The nodes disagree on {parts}.{tail}"}


def difference_rows(a: Agreement | None) -> list[dict[str, Any]]:
    if a is None:
        return []
    return [{"table": d.table, "key": d.key, "present": d.present, "missing": d.missing,
             "stale": a.stale, "note": "content differs" if d.differs else ""}
            for d in a.differences]


def report_rows(state: BoardState) -> list[dict[str, Any]]:
    return [{"kind": r.kind, "href": f"/reports/{r.kind}", "path": str(r.path),
             "when": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.mtime)),
             "cls": "info" if r.ok is None else ("ok" if r.ok else "bad"),
             "summary": r.summary or "verdict not readable"} for r in state.reports]


def context(state: BoardState, header: Header, refresh_ms: int) -> dict[str, Any]:
    """Everything the templates use."""
    a = state.agreement
    return {"h": header, "refresh_ms": refresh_ms, "updated": clock(state.published_at),
            "gathered": clock(state.gathered_at), "shutting_down": state.shutting_down,
            "nodes": node_rows(state), "children": child_rows(state),
            "banner": banner(state), "diffs": difference_rows(a),
            "diffs_total": a.total if a else 0, "reports": report_rows(state)}
