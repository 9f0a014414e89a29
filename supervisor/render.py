"""Status as people read it: a fixed-width table of nodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

COLUMNS = (("NODE", "name"), ("ADDRESS", "addr"), ("PID", "pid"), ("STATE", "state"),
           ("UPTIME", "uptime"), ("RESTARTS", "restarts"), ("LAST EXIT", "last_exit"))


def uptime_text(seconds: float) -> str:
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _cells(n: dict[str, Any]) -> dict[str, str]:
    addr = f"{n['host']}:{n['port']}" if n.get("port") else "-"
    return {
        "name": str(n["name"]), "addr": addr,
        "pid": str(n["pid"]) if n.get("pid") else "-",
        "state": str(n["state"]),
        "uptime": uptime_text(n.get("uptime_s") or 0) if n.get("pid") else "-",
        "restarts": str(n.get("restarts", 0)),
        "last_exit": str(n.get("last_exit") or "-"),
    }


def format_table(nodes: Sequence[dict[str, Any]]) -> str:
    rows = [_cells(n) for n in nodes]
    widths = {k: max([len(h)] + [len(r[k]) for r in rows]) for h, k in COLUMNS}
    head = "  ".join(h.ljust(widths[k]) for h, k in COLUMNS)
    body = ["  ".join(r[k].ljust(widths[k]) for _, k in COLUMNS) for r in rows]
    return "\n".join([head.rstrip()] + [b.rstrip() for b in body])
