"""Sample report inputs for page tests: an audit report document and a chaos run's files.

``audit_doc`` has the shape of ``audit-report.json`` for three nodes over 30 s:
n3 paused from +10 s to +16 s, then missing broker-<a> until +19 s.
``chaos_run`` writes a chaos run's files around it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from cluster.audit.timeline import Fault

T0 = 1_700_000_000_000
ROUND_MS = 500


def at(s: float) -> int:
    return T0 + round(s * 1000)


def audit_doc(holds: bool = True, diverge: bool = True) -> dict[str, Any]:
    rounds = [{"round": r, "round_time": at(r * ROUND_MS / 1000)} for r in range(61)]
    down = {"node": "n3", "start": at(10), "end": at(16), "last_seen": at(15.5),
            "duration_ms": 6000, "rounds": 12, "open": False}
    key = {"table": "broker", "key": "broker-<a>", "kind": "missing", "kinds": ["missing"],
           "nodes": ["n3"], "start": at(16), "end": at(19), "last_seen": at(18.5),
           "duration_ms": 3000, "rounds": 6, "open": False}
    node_iv = [{**down, "causes": ["unavailable"]},
               {"node": "n3", "start": at(16), "end": at(19), "last_seen": at(18.5),
                "duration_ms": 3000, "rounds": 6, "open": False, "causes": ["missing"]}]
    verdict = {"holds": holds, "bound_ms": 9000, "fault_end": at(16),
               "fault_end_source": "manifest fault_end", "late_count": 0,
               "never_converged_count": 0, "last_round": 60, "last_round_divergent": 0,
               "last_round_unavailable": [], "reasons": [] if holds else ["1 key(s) disagree"],
               "late": []}
    return {"source": "/runs/<x>", "rows": 999, "rounds": rounds,
            "manifest": {"nodes": [{"name": f"n{i}", "address": f"127.0.0.1:{9875 + i}"}
                                   for i in (1, 2, 3)],
                         "interval_ms": ROUND_MS, "started_at": T0, "fault_end": at(16)},
            "verdict": verdict, "unavailability": [down],
            "node_intervals": node_iv if diverge else [node_iv[0]],
            "intervals": [key] if diverge else [], "intervals_total": 1 if diverge else 0,
            "never_converged": [], "worst_keys": [],
            "timeline": [{"round": r, "round_time": at(r / 2), "table": "broker",
                          "divergent": 1} for r in range(32, 38)] if diverge else []}


PAUSE = Fault(at(10), at(16), "pause_node", "n3", "node", ("pause_node n3", "applied +10.0s"))


def _write(path: Path, doc: Any) -> None:
    path.write_bytes(orjson.dumps(doc))


def chaos_run(out: Path, with_audit: bool = True) -> Path:
    (out / "audit").mkdir(parents=True)
    events = [{"at": 10.0, "fault": "pause_node", "target": "n3", "params": {}, "undo_at": 16.0},
              {"at": 12.0, "fault": "broker_crash", "target": "b-0", "params": {},
               "undo_at": 14.0},
              {"at": 20.0, "fault": "hostile_client", "target": "n1",
               "params": {"kind": "garbage"}, "undo_at": None}]
    _write(out / "schedule.json", {"scenario": "pause-node", "seed": 7, "duration_s": 30.0,
                                   "events": events})
    checks = [{"name": "node_recovers", "kind": "liveness", "ok": False, "skipped": False,
               "summary": "1 recovery late", "evidence": [{"node": "n3", "late_by_s": 1.5}]},
              {"name": "no_orphans", "kind": "safety", "ok": True, "skipped": False,
               "summary": "none left behind", "evidence": []}]
    _write(out / "result.json", {"scenario": "pause-node", "seed": 7, "fingerprint": "abc",
                                 "duration_s": 30.0, "ok": False, "interrupted": False,
                                 "error": None, "checks": checks})
    recs = [{"t": 10.01, "start": 10.002, "process": "nemesis", "op": "pause_node", "node": "n3",
             "outcome": "ok", "value": {"phase": "apply", "event": 0}},
            {"t": 1.0, "process": "router", "op": "route", "node": "n1", "outcome": "ok"},
            {"t": 16.2, "start": 16.1, "process": "nemesis", "op": "pause_node", "node": "n3",
             "outcome": "ok", "value": {"phase": "undo", "event": 0}},
            {"t": 12.0, "start": 12.0, "process": "nemesis", "op": "broker_crash",
             "node": "b-0", "outcome": "fail", "value": {"phase": "apply", "event": 1,
                                                           "error": "boom"}},
            {"t": 12.0, "process": "nemesis", "op": "broker_crash", "node": "b-0",
             "outcome": "info", "value": {"phase": "undo", "event": 1, "skipped": "x"}}]
    (out / "history.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    _write(out / "audit" / "manifest.json", {"started_at": T0, "nodes": []})
    if with_audit:
        _write(out / "audit" / "audit-report.json", audit_doc())
    return out
