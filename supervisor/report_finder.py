"""Find the latest audit and chaos reports near the cluster, for the status page's links.

Looked for under each root (the cluster file's directory and the supervisor's
working directory) at a few fixed depths only, so the search stays cheap:
``audit-report.html`` wherever ``pynamesrv audit run`` or ``chaos run`` writes
it, and ``chaos-report.html`` in ``chaos-out/<run>/``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

PATTERNS: dict[str, tuple[str, ...]] = {
    "audit": ("audit-report.html", "*/audit-report.html", "*/*/audit-report.html",
              "chaos-out/*/audit/audit-report.html"),
    "chaos": ("chaos-report.html", "*/chaos-report.html", "chaos-out/*/chaos-report.html"),
}
MAX_VERDICT_BYTES = 64 << 20


@dataclass(frozen=True, slots=True)
class Report:
    kind: str
    path: Path
    mtime: float
    ok: bool | None
    summary: str


def _candidates(roots: Iterable[Path], patterns: Sequence[str]) -> set[Path]:
    found: set[Path] = set()
    for root in roots:
        for pattern in patterns:
            with contextlib.suppress(OSError):
                found.update(p.resolve() for p in root.glob(pattern) if p.is_file())
    return found


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def _load(path: Path) -> dict[str, Any] | None:
    try:
        if path.stat().st_size > MAX_VERDICT_BYTES:
            return None
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


def _verdict(kind: str, html: Path) -> tuple[bool | None, str]:
    if kind == "audit":
        doc = _load(html.with_name("audit-report.json"))
        verdict = (doc or {}).get("verdict") or {}
        if "holds" not in verdict:
            return None, ""
        holds = bool(verdict["holds"])
        return holds, ("eventually consistent" if holds else
                       "NOT eventually consistent: " + "; ".join(verdict.get("reasons") or []))
    doc = _load(html.with_name("result.json"))
    if doc is None or "ok" not in doc:
        return None, ""
    checks = doc.get("checks") or []
    failed = [c.get("name", "?") for c in checks if not c.get("ok")]
    text = (f"{doc.get('scenario')} seed {doc.get('seed')}: "
            + ("PASS" if doc["ok"] else "FAIL" + (f" ({', '.join(failed)})" if failed else "")))
    return bool(doc["ok"]), text


def latest_reports(roots: Sequence[Path]) -> list[Report]:
    """The newest report of each kind found under ``roots``, with its verdict when readable."""
    out = []
    for kind, patterns in PATTERNS.items():
        found = _candidates(roots, patterns)
        if not found:
            continue
        newest = max(found, key=_mtime)
        ok, summary = _verdict(kind, newest)
        out.append(Report(kind, newest, _mtime(newest), ok, summary))
    return out
