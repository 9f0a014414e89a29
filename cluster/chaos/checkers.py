"""Invariants checked over a finished history (see ``history`` for its vocabulary).

Every checker is a pure function ``(HistoryView, CheckConfig) -> CheckResult``.

Vocabulary used here:

* fault phases: process ``nemesis``, ``op`` = fault name, ``node`` = target,
  ``value = {"phase": "apply"|"undo", "event": i, ...}``;
* broker operations: ``register``/``unregister`` from process ``<broker>``
  with ``value["broker"]``;
* observations (what a node routes to): ``route`` reads and ``snapshot``
  samples with ``value["brokers"]`` (sorted broker names);
* KV: ``kv_put`` with ``value = {"ns","key","value"}``; ``kv_read`` and
  ``snapshot`` carry ``value["kv"] = {ns: {key: value}}``;
* run facts from process ``runner``: ``start`` (nodes, brokers, timing, the
  number of ``planned`` faults), ``orphans`` (``value["alive"]``), ``audit``
  (outcome = verdict).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster.chaos.history import NEMESIS, RUNNER, Op
from cluster.chaos.schedule import BROKER_FAULTS, INSTANT_FAULTS, NODE_FAULTS, Timing

SILENT_FAULTS: frozenset[str] = frozenset(
    {"pause_node", "net_blackhole", "net_cut", "net_slow", "net_lossy"})
OBSERVATIONS: frozenset[str] = frozenset({"route", "snapshot"})
WORKLOAD_OPS: frozenset[str] = frozenset({"register", "unregister", "route", "kv_put", "kv_read"})
MAX_EVIDENCE = 10


@dataclass(frozen=True, slots=True)
class CheckConfig:
    timing: Timing = field(default_factory=Timing)
    grace_s: float = 5.0
    min_route_success: float = 0.95
    min_load_answered: float = 0.999
    unregister_lag_s: float = 0.0


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    kind: str
    ok: bool
    summary: str
    evidence: list[Any] = field(default_factory=list)
    skipped: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "ok": self.ok, "skipped": self.skipped,
                "summary": self.summary, "evidence": self.evidence}


@dataclass(frozen=True, slots=True)
class Window:
    fault: str
    target: str
    start: float
    end: float
    event: int


def _windows(ops: Sequence[Op]) -> list[Window]:
    applied: dict[int, Op] = {}
    undone: dict[int, float] = {}
    for op in ops:
        if op.process != NEMESIS or not isinstance(op.value, dict) or "event" not in op.value:
            continue
        if op.value.get("phase") == "apply":
            applied[int(op.value["event"])] = op
        elif op.value.get("phase") == "undo" and op.outcome != "fail":
            undone[int(op.value["event"])] = op.t
    out = []
    for idx, op in applied.items():
        end = undone.get(idx, op.t if op.op in INSTANT_FAULTS else math.inf)
        out.append(Window(op.op, str(op.node), op.began, max(end, op.t), idx))
    return sorted(out, key=lambda w: w.start)


REGISTER = "register"
ABANDONED = "register_abandoned"  # in flight when the broker crashed; may have been applied


class HistoryView:
    """Indexes over a history, built once and shared by the checkers."""

    def __init__(self, ops: Iterable[Op]) -> None:
        self.ops = sorted(ops, key=lambda o: (o.t, o.began))
        self.windows = _windows(self.ops)
        self.start = next((o for o in self.ops if o.process == RUNNER and o.op == "start"), None)
        self.node_windows: dict[str, list[Window]] = defaultdict(list)
        self.broker_windows: dict[str, list[Window]] = defaultdict(list)
        for w in self.windows:
            if w.fault in NODE_FAULTS:
                self.node_windows[w.target].append(w)
            elif w.fault in BROKER_FAULTS:
                self.broker_windows[w.target].append(w)
        self.by_node: dict[str, list[Op]] = defaultdict(list)
        for op in self.ops:
            if op.node is not None and (op.op in WORKLOAD_OPS | OBSERVATIONS or op.op == ABANDONED):
                self.by_node[op.node].append(op)

    @property
    def nodes(self) -> list[str]:
        if self.start is not None and isinstance(self.start.value, dict):
            return list(self.start.value.get("nodes", []))
        return sorted(n for n, ops in self.by_node.items() if any(_is_obs(o) for o in ops))

    @property
    def brokers(self) -> list[str]:
        if self.start is not None and isinstance(self.start.value, dict):
            return list(self.start.value.get("brokers", []))
        return sorted({str(o.value["broker"]) for o in self.ops
                       if o.op == "register" and isinstance(o.value, dict)})

    @property
    def last_heal(self) -> float:
        return max((w.end for w in self.windows), default=0.0)

    def faulted(self, node: str, began: float, end: float, grace: float,
                only: frozenset[str] | None = None) -> bool:
        return any(w.start <= end and began <= w.end + grace
                   for w in self.node_windows.get(node, ()) if only is None or w.fault in only)

    def observations(self, node: str) -> list[Op]:
        return [o for o in self.by_node.get(node, ()) if _is_obs(o)]


def _is_obs(op: Op) -> bool:
    return (op.op in OBSERVATIONS and op.outcome == "ok" and isinstance(op.value, dict)
            and "brokers" in op.value)


def _brief(op: Op) -> dict[str, Any]:
    return {"t": op.t, "start": op.began, "process": op.process, "op": op.op, "node": op.node,
            "outcome": op.outcome, "value": op.value}


def _result(name: str, kind: str, violations: list[Any], summary_ok: str,
            summary_fail: str) -> CheckResult:
    ok = not violations
    return CheckResult(name, kind, ok, summary_ok if ok else summary_fail,
                       violations[:MAX_EVIDENCE])


def _workload(view: HistoryView) -> list[Op]:
    return [o for o in view.ops if o.op in WORKLOAD_OPS and o.node is not None
            and o.process != NEMESIS]


def check_unfaulted_nodes_answered(view: HistoryView, cfg: CheckConfig) -> CheckResult:
    """Safety: a request to a node outside its fault windows got an answer."""
    ops = [o for o in _workload(view) if not view.faulted(str(o.node), o.began, o.t, cfg.grace_s)]
    bad = [_brief(o) for o in ops if not o.answered]
    return _result("unfaulted_nodes_answered", "safety", bad,
                   f"{len(ops)} requests to unfaulted nodes, all answered",
                   f"{len(bad)} of {len(ops)} requests to unfaulted nodes were not answered")


def check_answered_or_closed(view: HistoryView, cfg: CheckConfig) -> CheckResult:
    """Safety: a request that timed out did so only where silence was injected."""
    timeouts = [o for o in _workload(view) if o.outcome == "unknown"]
    bad = [_brief(o) for o in timeouts
           if not view.faulted(str(o.node), o.began, o.t, cfg.grace_s, SILENT_FAULTS)]
    return _result("answered_or_closed", "safety", bad,
                   f"{len(timeouts)} timeouts, all during pause/blackhole/cut/slow/lossy faults",
                   f"{len(bad)} requests were neither answered nor closed outside silent faults")


def _kv_tables(op: Op) -> dict[str, dict[str, str]] | None:
    if op.outcome != "ok" or not isinstance(op.value, dict):
        return None
    kv = op.value.get("kv")
    return kv if isinstance(kv, dict) else None


def _allowed_values(puts: list[Op], read: Op) -> set[str] | None:
    """Values the read may show for a key, or None when no write was acknowledged before it."""
    acked = [p for p in puts if p.outcome == "ok" and p.t < read.began]
    if not acked:
        return None
    last = max(acked, key=lambda p: p.t)
    later = [p for p in puts if p.t > last.began and p.began < read.t and p is not last]
    return {str(p.value["value"]) for p in [last, *later]}


def check_acked_kv_writes_survive(view: HistoryView, cfg: CheckConfig) -> CheckResult:
    """Safety: an acknowledged KV write is read back on its node, also after restarts."""
    puts: dict[tuple[str, str, str], list[Op]] = defaultdict(list)
    for o in view.ops:
        if o.op == "kv_put" and o.node is not None and isinstance(o.value, dict):
            puts[(o.node, o.value["ns"], o.value["key"])].append(o)
    bad: list[Any] = []
    reads = 0
    for node, ops in view.by_node.items():
        for read in ops:
            tables = _kv_tables(read)
            if tables is None or read.op not in ("kv_read", "snapshot"):
                continue
            reads += 1
            bad.extend(_missing_keys(node, read, tables, puts))
    acked = sum(1 for ps in puts.values() for p in ps if p.outcome == "ok")
    return _result("acked_kv_writes_survive", "safety", bad,
                   f"{acked} acknowledged writes, none lost in {reads} reads",
                   f"{len(bad)} acknowledged KV writes missing from later reads")


def _missing_keys(node: str, read: Op, tables: dict[str, dict[str, str]],
                  puts: dict[tuple[str, str, str], list[Op]]) -> list[dict[str, Any]]:
    out = []
    namespaces = read.value.get("namespaces") if isinstance(read.value, dict) else None
    for (pnode, ns, key), ps in puts.items():
        if pnode != node or (namespaces is not None and ns not in namespaces):
            continue
        allowed = _allowed_values(ps, read)
        if allowed is None:
            continue
        found = tables.get(ns, {}).get(key)
        if found not in allowed:
            out.append({"node": node, "ns": ns, "key": key, "expected": sorted(allowed),
                        "found": found, "read_at": read.t, "read_op": read.op})
    return out


def _clear_time(view: HistoryView, broker: str, node: str, after: float) -> float:
    """When ``broker`` may be routed by ``node`` again: its first register that could land."""
    starts = [o.began for o in view.by_node.get(node, ())
              if o.op == "register" and _broker_of(o) == broker and o.t > after]
    return min(starts, default=math.inf)


def _broker_of(op: Op) -> str | None:
    if isinstance(op.value, dict) and "broker" in op.value:
        return str(op.value["broker"])
    return None


def check_unregister_respected(view: HistoryView, cfg: CheckConfig) -> CheckResult:
    """Safety: after an acknowledged unregister a node never routes to the broker until
    it registers again."""
    bad: list[Any] = []
    count = 0
    for node, ops in view.by_node.items():
        for un in ops:
            if un.op != "unregister" or un.outcome != "ok" or _broker_of(un) is None:
                continue
            count += 1
            broker = str(_broker_of(un))
            clear = _clear_time(view, broker, node, un.began)
            since = un.t + cfg.unregister_lag_s
            bad.extend({"node": node, "broker": broker, "unregistered_at": un.t,
                        "seen_at": o.t, "by": o.op}
                       for o in view.observations(node)
                       if o.began > since and o.t < clear and broker in o.value["brokers"])
    return _result("unregister_respected", "safety", bad,
                   f"{count} acknowledged unregisters, none routed afterwards",
                   f"{len(bad)} observations routed to an unregistered broker")


def check_no_orphans(view: HistoryView, cfg: CheckConfig) -> CheckResult:
    """Safety: no process of the run is alive after it."""
    recs = [o for o in view.ops if o.process == RUNNER and o.op == "orphans"]
    if not recs:
        return CheckResult("no_orphans", "safety", False, "the run did not record a process check")
    alive = list(recs[-1].value.get("alive", [])) if isinstance(recs[-1].value, dict) else []
    checked = recs[-1].value.get("checked", 0) if isinstance(recs[-1].value, dict) else 0
    return _result("no_orphans", "safety", alive,
                   f"{checked} processes seen during the run, none left behind",
                   f"{len(alive)} processes left behind")


def _last_heard(view: HistoryView, broker: str, node: str, at: float) -> float | None:
    """When the node may last have applied a heartbeat: any registration that reached it.

    An error reply (e.g. SYSTEM_ERROR for a lost business worker) does not prove
    the registration was not applied; only a refused or closed connection does.
    """
    times = [o.t for o in view.by_node.get(node, ())
             if o.op in (REGISTER, ABANDONED) and _broker_of(o) == broker and o.began <= at
             and (o.outcome != "fail" or o.answered)]
    return max(times, default=None)


def _expiry_verdict(view: HistoryView, cfg: CheckConfig, w: Window,
                    node: str) -> dict[str, Any] | None:
    heard = _last_heard(view, w.target, node, w.start)
    if heard is None:
        return None
    deadline = heard + cfg.timing.expire_within_s
    back = _clear_time(view, w.target, node, w.start)
    if deadline >= back or view.faulted(node, w.start, deadline, cfg.grace_s):
        return None
    gone = next((o for o in view.observations(node)
                 if o.began >= w.start and w.target not in o.value["brokers"]), None)
    ev = {"broker": w.target, "node": node, "crashed_at": w.start, "last_heard": heard,
          "deadline": round(deadline, 3), "gone_at": None if gone is None else gone.t}
    ev["ok"] = gone is not None and gone.t <= deadline
    return ev


def check_crashed_broker_expires(view: HistoryView, cfg: CheckConfig) -> CheckResult:
    """Liveness: a crashed broker disappears from every live node within expiry + scan."""
    verdicts = [_expiry_verdict(view, cfg, w, node) for w in view.windows
                if w.fault == "broker_crash" for node in view.nodes]
    return _tally("crashed_broker_expires", verdicts, "broker crash",
                  "(crash, node) pairs expired in time",
                  "(crash, node) pairs did not expire in time")


def _tally(name: str, verdicts: list[dict[str, Any] | None], what: str, ok_text: str,
           bad_text: str) -> CheckResult:
    """A liveness result from per-case verdicts; None marks an inconclusive (skipped) case."""
    done = [v for v in verdicts if v is not None]
    skipped = len(verdicts) - len(done)
    if not done:
        return CheckResult(name, "liveness", True, f"no conclusive {what} ({skipped} skipped)",
                           [], skipped=True)
    bad = [v for v in done if not v["ok"]]
    return _result(name, "liveness", bad, f"{len(done)} {ok_text} ({skipped} skipped)",
                   f"{len(bad)} of {len(done)} {bad_text}")


def _expected_brokers(view: HistoryView, start: float, end: float) -> set[str]:
    return {b for b in view.brokers
            if not any(w.start <= end and start <= w.end for w in view.broker_windows.get(b, ()))}


def _recovery_verdict(view: HistoryView, cfg: CheckConfig, w: Window) -> dict[str, Any] | None:
    deadline = w.end + cfg.timing.recover_within_s
    later = [x for x in view.node_windows.get(w.target, ()) if w.end < x.start <= deadline]
    expected = _expected_brokers(view, w.end, deadline)
    if later or not expected or math.isinf(w.end):
        return None
    seen = next((o for o in view.observations(w.target)
                 if o.began >= w.end and expected <= set(o.value["brokers"])), None)
    return {"node": w.target, "fault": w.fault, "healed_at": w.end,
            "deadline": round(deadline, 3), "expected": sorted(expected),
            "complete_at": None if seen is None else seen.t,
            "ok": seen is not None and seen.t <= deadline}


def check_node_recovers(view: HistoryView, cfg: CheckConfig) -> CheckResult:
    """Liveness: a node back from a fault has every live broker within one heartbeat."""
    verdicts = [_recovery_verdict(view, cfg, w) for w in view.windows if w.fault in NODE_FAULTS]
    return _tally("node_recovers", verdicts, "node recovery",
                  "node recoveries complete in time", "recoveries incomplete by the deadline")


def check_converged_after_heal(view: HistoryView, cfg: CheckConfig) -> CheckResult:
    """Liveness: after the last fault heals, every node routes to the same live brokers."""
    since = view.last_heal + cfg.timing.converge_s
    expected = _expected_brokers(view, since, math.inf)
    finals = {}
    for node in view.nodes:
        obs = [o for o in view.observations(node) if o.began >= since]
        finals[node] = None if not obs else sorted(obs[-1].value["brokers"])
    bad = [{"node": n, "brokers": b, "expected": sorted(expected)}
           for n, b in finals.items() if b is None or set(b) != expected]
    if not finals:
        bad = [{"error": "no nodes in the history"}]
    return _result("converged_after_heal", "liveness", bad,
                   f"all {len(finals)} nodes route to {sorted(expected)} after {since:.1f}s",
                   f"{len(bad)} nodes did not converge after the last heal ({since:.1f}s)")


def check_audit_verdict(view: HistoryView, cfg: CheckConfig) -> CheckResult:
    """Liveness: the consistency audit over the final snapshots passes."""
    recs = [o for o in view.ops if o.process == RUNNER and o.op == "audit"]
    if not recs:
        return CheckResult("audit_verdict", "liveness", True, "audit not run", [], skipped=True)
    last = recs[-1]
    ok = last.outcome == "ok"
    value = last.value if isinstance(last.value, dict) else {}
    detail = value.get("summary") or value.get("error")
    summary = "audit verdict passed" if ok else "audit verdict failed"
    return CheckResult("audit_verdict", "liveness", ok,
                       f"{summary}: {detail}" if detail else summary, [last.value])


def check_route_success_rate(view: HistoryView, cfg: CheckConfig) -> CheckResult:
    """Liveness: route reads on healthy nodes kept a minimum success rate."""
    reads = [o for o in view.ops if o.op == "route" and o.process != "observer"
             and o.node is not None
             and not view.faulted(o.node, o.began, o.t, cfg.grace_s)]
    ok = sum(1 for o in reads if o.outcome == "ok")
    rate = ok / len(reads) if reads else 0.0
    bad: list[Any] = []
    if not reads or rate < cfg.min_route_success:
        bad.append({"reads": len(reads), "ok": ok, "rate": round(rate, 4),
                    "min": cfg.min_route_success})
        bad.extend(_brief(o) for o in reads if o.outcome != "ok")
    return _result("route_success_rate", "liveness", bad,
                   f"{ok}/{len(reads)} route reads on healthy nodes succeeded ({rate:.1%})",
                   f"route reads on healthy nodes: {ok}/{len(reads)} ({rate:.1%}) "
                   f"< {cfg.min_route_success:.0%}")


def check_faults_applied(view: HistoryView, cfg: CheckConfig) -> CheckResult:
    """The run tested something: at least one fault of its schedule was applied."""
    applies = [o for o in view.ops if o.process == NEMESIS and isinstance(o.value, dict)
               and o.value.get("phase") == "apply"]
    done = sum(1 for o in applies if o.outcome == "ok")
    start = view.start.value if view.start is not None else None
    planned = start.get("planned", len(applies)) if isinstance(start, dict) else len(applies)
    failed = [_brief(o) for o in applies if o.outcome != "ok"]
    text = f"{done} of {planned} planned faults applied"
    if done:
        return CheckResult("faults_applied", "run", True, text, failed[:MAX_EVIDENCE])
    return CheckResult("faults_applied", "run", False,
                       f"no fault was applied ({text}): the run tested nothing",
                       [{"planned": planned, "applied": 0}, *failed[:MAX_EVIDENCE]])


CHECKERS: tuple[Callable[[HistoryView, CheckConfig], CheckResult], ...] = (
    check_faults_applied,
    check_unfaulted_nodes_answered,
    check_answered_or_closed,
    check_acked_kv_writes_survive,
    check_unregister_respected,
    check_no_orphans,
    check_crashed_broker_expires,
    check_node_recovers,
    check_converged_after_heal,
    check_audit_verdict,
    check_route_success_rate,
)


def config_from_history(view: HistoryView, **overrides: Any) -> CheckConfig:
    """The check config implied by the run's ``start`` record, with overrides."""
    timing, recorded = Timing(), {}
    if view.start is not None and isinstance(view.start.value, dict):
        timing = Timing(**view.start.value.get("timing", {}))
        recorded = dict(view.start.value.get("check", {}))
    return CheckConfig(timing=timing, **{**recorded, **overrides})
