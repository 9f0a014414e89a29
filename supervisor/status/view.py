"""What the status page shows, as plain values: pure functions of a BoardState.

Every time is the supervisor host's local time, 24-hour ``HH:MM:SS``, on the
page, in ``/status.json`` and after every refresh alike.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cluster.core.divergence import Difference
from cluster.core.divergence_watch import NodeAnswer, Round
from supervisor.render import uptime_text
from supervisor.status.board import BoardState
from supervisor.status.history import history_view

STATE_CLASS = {"running": "ok", "starting": "info", "paused": "paused", "hung": "warn",
               "stopped": "off", "backoff": "warn", "failed": "bad"}
TABLE_NOUN = {"broker": ("broker", "brokers"), "topic": ("topic entry", "topic entries"),
              "kv": ("KV entry", "KV entries"), "cluster": ("cluster", "clusters"),
              "live": ("live broker", "live brokers"), "filter": ("filter server list",
                                                                  "filter server lists")}
SHOWN_ROWS = 20  # differences listed on the page; the rest behind /keys
SHOWN_GROUPS = 20


@dataclass(frozen=True, slots=True)
class Header:
    cluster_file: str
    namesrv_addr: str
    control: str


def clock(t: float | None) -> str:
    return "-" if t is None else time.strftime("%H:%M:%S", time.localtime(t))


def plural(n: int, table: str) -> str:
    return _n(n, *TABLE_NOUN[table])


def _names(nodes: list[str] | tuple[str, ...]) -> str:
    return nodes[0] if len(nodes) == 1 else ", ".join(nodes[:-1]) + " and " + nodes[-1]


def counts(summary: Mapping[str, Any] | None) -> dict[str, int] | None:
    """What a node holds: broker names, broker addresses (clusterList's rows), live
    brokers (``pynamesrv_live_brokers``), topics, KV entries."""
    if summary is None:
        return None
    t = summary["tables"]
    return {"brokers": t["broker"]["keys"], "rows": t["broker"].get("rows", 0),
            "live": t["live"]["keys"], "topics": t["topic"]["keys"], "kv": t["kv"]["units"]}


def _answer(n: dict[str, Any], a: NodeAnswer | None, odd: int) -> dict[str, Any]:
    if not n.get("pid"):
        return {"text": "not running", "cls": "off"}
    if a is None:
        return {"text": "not asked yet", "cls": "off"}
    if not a.answered:
        return {"text": f"not answering: {a.error}", "cls": "bad"}
    size = f"{a.received / 1024:.1f} KiB" if a.received >= 1024 else f"{a.received} B"
    text = f"answering ({a.took_s * 1000:.0f} ms, {size})"
    if odd:
        return {"text": f"{text}; odd on {odd:,}", "cls": "bad"}
    return {"text": text, "cls": "ok"}


def node_rows(state: BoardState) -> list[dict[str, Any]]:
    rnd = state.round
    rows = []
    for n in state.nodes:
        a = rnd.answers.get(n["name"]) if rnd else None
        odd = rnd.comparison.per_node.get(n["name"], 0) if rnd else 0
        rows.append({
            "name": n["name"], "addr": f"{n['host']}:{n['port']}", "pid": n.get("pid") or "-",
            "state": n["state"], "state_cls": STATE_CLASS.get(n["state"], "off"),
            "uptime": uptime_text(n.get("uptime_s") or 0) if n.get("pid") else "-",
            "restarts": n.get("restarts", 0), "last_exit": n.get("last_exit") or "-",
            "answer": _answer(n, a, odd),
            "counts": counts(a.summary) if a is not None and a.answered else None})
    return rows


def child_rows(state: BoardState) -> list[dict[str, Any]]:
    return [{"name": c["name"], "pid": c.get("pid") or "-", "state": c["state"],
             "state_cls": STATE_CLASS.get(c["state"], "off"),
             "uptime": uptime_text(c.get("uptime_s") or 0) if c.get("pid") else "-",
             "restarts": c.get("restarts", 0), "last_exit": c.get("last_exit") or "-"}
            for c in state.children]


def silent_nodes(state: BoardState) -> list[str]:
    """Nodes that should answer (running, paused, hung) and did not, last round."""
    rnd = state.round
    if rnd is None:
        return []
    return [n for n in state.expected if not ((a := rnd.answers.get(n)) and a.answered)]


def _not_running(state: BoardState) -> list[str]:
    return [n["name"] for n in state.nodes if n["name"] not in state.expected]


def _n(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def _held(rnd: Round, node: str) -> str:
    c = counts(rnd.answers[node].summary)
    assert c is not None
    return (f"{_n(c['brokers'], 'broker', 'brokers')} ({_n(c['rows'], 'address', 'addresses')}"
            f", {c['live']:,} live), {_n(c['topics'], 'topic', 'topics')}, "
            f"{_n(c['kv'], 'KV entry', 'KV entries')}")


def banner(state: BoardState) -> dict[str, str]:
    """One sentence on agreement right now, and its class (ok, warn, bad, info). It says
    "All N nodes agree" only when every node that should answer did, and they agree."""
    rnd = state.round
    if rnd is None:
        return {"cls": "info", "text": "Asking the nodes for their digests..."}
    c = rnd.comparison
    silent = silent_nodes(state)
    off = _not_running(state)
    tail = "".join([f" {_names(silent)} {'is' if len(silent) == 1 else 'are'} not answering: "
                    "whether it agrees is unknown." if silent else "",
                    f" {_names(off)} {'is' if len(off) == 1 else 'are'} not running."
                    if off else ""])
    if c.differences:
        parts = ", ".join(plural(n, t) for t, n in c.by_table.items() if n)
        odd = [f"{n} on {k:,}" for n, k in c.per_node.items() if k]
        return {"cls": "bad", "text": f"The nodes disagree on {parts} (odd: {'; '.join(odd)})."
                                      f"{tail}"}
    if len(c.nodes) < 2:
        who = c.nodes[0] if c.nodes else "no node"
        return {"cls": "warn", "text": f"Only {who} answers: nothing to compare.{tail}"}
    who = f"All {len(c.nodes)} nodes" if not silent else _names(list(c.nodes))
    return {"cls": "warn" if silent else "ok",
            "text": f"{who} agree: {_held(rnd, c.nodes[0])}.{tail}"}


def difference_row(d: Difference, rnd: Round) -> dict[str, Any]:
    return {"table": d.table, "key": d.key, "sub": d.sub, "present": d.present,
            "missing": d.missing, "odd": d.odd, "what": rnd.note(d) or (
                "content differs" if d.differs else f"missing on {', '.join(d.missing)}"),
            "majority": len(d.odd) < len(d.present) + len(d.missing)}


def difference_rows(rnd: Round | None, limit: int = SHOWN_ROWS) -> list[dict[str, Any]]:
    if rnd is None:
        return []
    return [difference_row(d, rnd) for d in rnd.comparison.differences[:limit]]


def group_rows(state: BoardState, limit: int = SHOWN_GROUPS) -> list[dict[str, Any]]:
    return [{"table": g.table, "group": g.group, "count": g.count,
             "odd": [f"{n} ({k:,})" for n, k in g.odd]} for g in state.groups[:limit]]


def broker_rows(state: BoardState) -> list[dict[str, Any]]:
    now_ms = (state.gathered_at or time.time()) * 1000
    out = []
    for b in state.brokers:
        beats = [{"node": n, "text": "-" if ms is None else f"{max(0, now_ms - ms) / 1000:.0f} s",
                  "at": clock(ms / 1000) if ms is not None else "not live"}
                 for n, ms in b.heartbeats]
        out.append({"cluster": b.cluster, "name": b.name, "role": b.role, "addr": b.addr,
                    "version": b.version or "-", "on": b.on, "beats": beats})
    return out


def report_rows(state: BoardState) -> list[dict[str, Any]]:
    return [{"kind": r.kind, "href": f"/reports/{r.kind}", "path": str(r.path),
             "when": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.mtime)),
             "cls": "info" if r.ok is None else ("ok" if r.ok else "bad"),
             "summary": r.summary or "verdict not readable"} for r in state.reports]


def context(state: BoardState, header: Header, refresh_ms: int) -> dict[str, Any]:
    """Everything the page's templates use."""
    rnd = state.round
    c = rnd.comparison if rnd else None
    return {"h": header, "refresh_ms": refresh_ms, "updated": clock(state.published_at),
            "gathered": clock(state.gathered_at), "shutting_down": state.shutting_down,
            "nodes": node_rows(state), "children": child_rows(state),
            "banner": banner(state), "diffs": difference_rows(rnd),
            "diffs_total": len(c.differences) if c else 0,
            "groups": group_rows(state), "groups_total": len(state.groups),
            "brokers": broker_rows(state), "history": history_view(state),
            "reports": report_rows(state)}
