"""Checks and figures of a ``--load`` run, over the same history as every other checker.

The load's facts in the history (see ``load``): the runner's ``load`` record
(the plan), ``load_ready``, ``load_reads`` per node and second,
``load_failover`` events, ``load_wrong`` samples, the load brokers'
``register`` records (``value["load"]``) and the observer's ``load``
summary in every snapshot observation. ``load_report`` turns them into the
achieved figures; the four checks judge them:

* ``load_reached`` — brokers and topics on every node, and successful route
  reads per second, reach the plan's targets;
* ``load_reads_answered`` — on nodes outside their fault windows every read
  was answered and found its route, and no sampled reply named a wrong broker;
* ``load_reads_fail_over`` — a client whose node failed moved to another
  node, as the Java client does, and read again within the grace;
* ``load_brokers_kept`` — a node never lost a live load broker except where
  a fault on that node closed the brokers' connections, restarted it or kept
  heartbeats away for an expiry.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cluster.chaos.checkers import (
    CheckConfig,
    CheckResult,
    HistoryView,
    Window,
    _is_obs,
    _result,
)
from cluster.chaos.history import NEMESIS, RUNNER, Op
from cluster.chaos.load.plan import LoadPlan
from cluster.chaos.load.stats import ReadCounters, merged

# Faults on a node that may legitimately cost it brokers: the brokers' connections
# closed (the node drops a broker whose channel closes, as Java's onChannelDestroy)
# or the node's process restarted.
CONNECTION_FAULTS: frozenset[str] = frozenset(
    {"kill_node", "stop_node", "net_reset", "net_blackhole", "net_cut"})


@dataclass(frozen=True, slots=True)
class LoadView:
    plan: LoadPlan
    ready: Op | None
    reads: dict[str, list[Op]]
    failovers: list[Op]
    wrong: list[Op]
    registers: list[Op]

    @property
    def ready_at(self) -> float:
        return self.ready.t if self.ready is not None else 0.0

    @property
    def end_at(self) -> float:
        return max((o.t for ops in self.reads.values() for o in ops), default=self.ready_at)

    @property
    def window_s(self) -> float:
        return max(0.0, self.end_at - self.ready_at)


def load_view(view: HistoryView) -> LoadView | None:
    """The load part of a history, or None when the run had no ``--load``."""
    rec = next((o for o in view.ops if o.process == RUNNER and o.op == "load"), None)
    if rec is None or not isinstance(rec.value, dict):
        return None
    reads: dict[str, list[Op]] = defaultdict(list)
    failovers, wrong, registers, ready = [], [], [], None
    for o in view.ops:
        if o.op == "load_reads" and o.node is not None:
            reads[o.node].append(o)
        elif o.op == "load_failover":
            failovers.append(o)
        elif o.op == "load_wrong":
            wrong.append(o)
        elif o.op == "load_ready" and ready is None:
            ready = o
        elif o.op == "register" and isinstance(o.value, dict) and o.value.get("load"):
            registers.append(o)
    return LoadView(LoadPlan.from_dict(rec.value["plan"]), ready, dict(reads), failovers,
                    wrong, registers)


def _load_obs(view: HistoryView, node: str) -> list[Op]:
    return [o for o in view.observations(node) if _is_obs(o) and "load" in o.value]


def _per_s(n: float, secs: float) -> float:
    return round(n / secs, 1) if secs > 0 else 0.0


# ------------------------------------------------------------------- report


def _reads_report(lv: LoadView) -> dict[str, Any]:
    secs = lv.window_s
    per_node: dict[str, Any] = {}
    for node, ops in sorted(lv.reads.items()):
        c = merged(o.value for o in ops)
        per_node[node] = {"ok_per_s": _per_s(c.ok, secs),
                          "answered_per_s": _per_s(c.answered, secs),
                          "latency_ms": c.latency_ms(), **_counts(c)}
    total = merged(o.value for ops in lv.reads.values() for o in ops)
    per_second = _per_second_ok(lv)
    return {"target_per_s": lv.plan.reads_per_s, "offered_per_s": lv.plan.offered_reads_per_s,
            "window_s": round(secs, 1), "ok_per_s": _per_s(total.ok, secs),
            "answered_per_s": _per_s(total.answered, secs),
            "lowest_second_ok": min(per_second, default=0),
            "latency_ms": total.latency_ms(), **_counts(total), "nodes": per_node}


def _counts(c: ReadCounters) -> dict[str, Any]:
    return {"sent": c.sent, "ok": c.ok, "not_found": c.not_found, "error": c.error,
            "codes": dict(c.codes), "timeout": c.timeout, "closed": c.closed,
            "connect_failed": c.connect_failed, "verified": c.verified, "wrong": c.wrong}


def _per_second_ok(lv: LoadView) -> list[int]:
    """Successful reads of each whole reporting interval, all nodes together."""
    by_t: dict[float, int] = Counter()
    for ops in lv.reads.values():
        for o in ops:
            if o.value.get("interval", 0) >= 0.9:
                by_t[o.t] += int(o.value.get("ok", 0))
    return [n for _, n in sorted(by_t.items())][1:-1]


def _brokers_report(view: HistoryView, lv: LoadView) -> dict[str, Any]:
    nodes: dict[str, Any] = {}
    for node in view.nodes:
        obs = [o for o in _load_obs(view, node) if o.t >= lv.ready_at]
        last = obs[-1].value["load"] if obs else None
        nodes[node] = {"registered_max": max((o.value["load"]["live"] for o in obs), default=0),
                       "topics_max": max((o.value["load"]["topics"] for o in obs), default=0),
                       "registered_at_end": None if last is None else last["live"],
                       "topics_at_end": None if last is None else last["topics"]}
    return {"target": lv.plan.brokers, "run": lv.plan.broker_count,
            "topics_target": lv.plan.topic_count, "topics_per_broker": lv.plan.topics_per_broker,
            "nodes": nodes}


def _registrations_report(lv: LoadView) -> dict[str, Any]:
    by_node: dict[str, Counter[str]] = defaultdict(Counter)
    for o in lv.registers:
        by_node[str(o.node)][o.outcome] += 1
    total = sum((c for c in by_node.values()), Counter())
    secs = lv.end_at if lv.end_at > 0 else 0.0
    return {"heartbeat_s": lv.plan.heartbeat_s, "planned_per_s": round(
        lv.plan.registrations_per_s, 1), "per_s": _per_s(sum(total.values()), secs),
        "outcomes": dict(total), "nodes": {n: dict(c) for n, c in sorted(by_node.items())}}


def _failovers_report(lv: LoadView) -> dict[str, Any]:
    took = [o.value["ok_at"] - o.value["failed_at"] for o in lv.failovers
            if o.value.get("ok_at") is not None]
    return {"count": len(lv.failovers),
            "reasons": dict(Counter(str(o.value.get("reason")) for o in lv.failovers)),
            "reads_lost": sum(int(o.value.get("lost", 0)) for o in lv.failovers),
            "max_recover_s": round(max(took), 3) if took else None}


def load_report(view: HistoryView) -> dict[str, Any] | None:
    """The achieved load of a run (None without ``--load``)."""
    lv = load_view(view)
    if lv is None:
        return None
    ready = None if lv.ready is None else lv.ready.value
    return {"plan": lv.plan.as_dict(), "ready": ready, "ready_at": round(lv.ready_at, 3),
            "brokers": _brokers_report(view, lv), "reads": _reads_report(lv),
            "registrations": _registrations_report(lv), "failovers": _failovers_report(lv)}


def report_lines(rep: dict[str, Any]) -> list[str]:
    """The load figures of a report as summary lines."""
    b, r, g, f = rep["brokers"], rep["reads"], rep["registrations"], rep["failovers"]
    lines = [f"load: target {b['target']} brokers x {b['topics_per_broker']} topics, "
             f"{r['target_per_s']:g} reads/s; ready at {rep['ready_at']:.1f}s"]
    for node, n in b["nodes"].items():
        lines.append(f"  {node}: brokers {n['registered_max']}/{b['run']} "
                     f"(at end {n['registered_at_end']}), topics {n['topics_max']}/"
                     f"{b['topics_target']}")
    lat = r["latency_ms"]
    lines.append(f"  reads: {r['ok_per_s']:g}/s ok ({r['answered_per_s']:g}/s answered) over "
                 f"{r['window_s']:g}s, lowest second {r['lowest_second_ok']}; latency ms "
                 f"p50 {lat['p50']} p90 {lat['p90']} p99 {lat['p99']} p99.9 {lat['p99.9']} "
                 f"max {lat['max']}")
    for node, n in r["nodes"].items():
        nl = n["latency_ms"]
        lines.append(f"    {node}: {n['ok_per_s']:g}/s ok, p50 {nl['p50']} p99 {nl['p99']} ms, "
                     f"not found {n['not_found']}, errors {n['error']}, timeouts "
                     f"{n['timeout']}, closed {n['closed']}, wrong {n['wrong']}/"
                     f"{n['verified']} checked")
    lines.append(f"  registrations: {g['per_s']:g}/s (planned {g['planned_per_s']:g}/s), "
                 f"outcomes {g['outcomes']}")
    lines.append(f"  failovers: {f['count']} {f['reasons']}, {f['reads_lost']} reads lost, "
                 f"slowest recovery {f['max_recover_s']}s")
    return lines


# ------------------------------------------------------------------- checks


def check_load_reached(view: HistoryView, lv: LoadView, cfg: CheckConfig) -> CheckResult:
    """The plan's targets were reached: brokers and topics on every node, reads/s."""
    rep = load_report(view)
    assert rep is not None
    b, r = rep["brokers"], rep["reads"]
    bad: list[Any] = []
    if lv.ready is None or not lv.ready.value.get("complete"):
        bad.append({"ready": None if lv.ready is None else lv.ready.value})
    for node, n in b["nodes"].items():
        if n["registered_max"] < b["target"] or n["topics_max"] < b["topics_target"]:
            bad.append({"node": node, "brokers": n["registered_max"], "target": b["target"],
                        "topics": n["topics_max"], "topics_target": b["topics_target"]})
    if r["ok_per_s"] < r["target_per_s"]:
        bad.append({"reads_ok_per_s": r["ok_per_s"], "target_per_s": r["target_per_s"]})
    fewest = min((n["registered_max"] for n in b["nodes"].values()), default=0)
    figures = (f"{fewest} brokers (target {b['target']}) and "
               f"{min((n['topics_max'] for n in b['nodes'].values()), default=0)} topics "
               f"(target {b['topics_target']}) on every node; {r['ok_per_s']:g} reads/s ok "
               f"(target {r['target_per_s']:g})")
    return _result("load_reached", "load", bad, figures, f"below target: {figures}")


def check_load_reads_answered(view: HistoryView, lv: LoadView,
                              cfg: CheckConfig) -> CheckResult:
    """On nodes outside their fault windows every read was answered and found its route."""
    recover = lv.plan.heartbeat_s + cfg.timing.margin_s
    answered = failed = found = asked = 0
    bad: list[Any] = []
    for node, ops in lv.reads.items():
        for o in ops:
            if o.began < lv.ready_at or view.faulted(node, o.began, o.t, cfg.grace_s):
                continue
            c = merged([o.value])
            answered, failed = answered + c.answered, failed + c.failed
            if not view.faulted(node, o.began, o.t, max(cfg.grace_s, recover)):
                found, asked = found + c.ok, asked + c.answered
                if c.answered - c.ok:
                    bad.append({"node": node, "t": o.t, "not_found": c.not_found,
                                "codes": c.codes})
            if c.failed:
                bad.append({"node": node, "t": o.t, "timeout": c.timeout, "closed": c.closed})
    wrong = sum(int(o.value.get("wrong", 0)) for ops in lv.reads.values() for o in ops)
    ratio = answered / (answered + failed) if answered + failed else 0.0
    found_ratio = found / asked if asked else 0.0
    ok = (answered > 0 and wrong == 0 and ratio >= cfg.min_load_answered
          and found_ratio >= cfg.min_load_answered)
    summary = (f"{answered}/{answered + failed} reads on unfaulted nodes answered "
               f"({ratio:.4%}), {found}/{asked} found their route ({found_ratio:.4%}), "
               f"{wrong} wrong replies")
    evidence = [{"wrong_samples": o.value.get("samples")} for o in lv.wrong] + bad
    return CheckResult("load_reads_answered", "load", ok, summary,
                       [] if ok else evidence[:10])


def check_load_reads_fail_over(view: HistoryView, lv: LoadView,
                               cfg: CheckConfig) -> CheckResult:
    """A client whose node failed moved on to another node and read again within the grace."""
    single = len(view.nodes) <= 1
    bad: list[Any] = []
    for o in lv.failovers:
        v = o.value
        source, failed_at, ok_at = str(v["from"]), float(v["failed_at"]), v.get("ok_at")
        why = []
        if not view.faulted(source, failed_at, failed_at, cfg.grace_s):
            why.append("failed on an unfaulted node")
        if ok_at is None:
            if failed_at < lv.end_at - cfg.grace_s:
                why.append("never read again")
        else:
            if v["to"] == source and not single:
                why.append("stayed on the failed node")
            if ok_at - failed_at > cfg.grace_s:
                why.append(f"read again only after {ok_at - failed_at:.2f}s")
        if why:
            bad.append({**v, "why": why})
    took = [o.value["ok_at"] - o.value["failed_at"] for o in lv.failovers
            if o.value.get("ok_at") is not None]
    slowest = f", slowest {max(took):.2f}s" if took else ""
    return _result("load_reads_fail_over", "load", bad,
                   f"{len(lv.failovers)} client failovers, each to another node and reading "
                   f"again within {cfg.grace_s:g}s{slowest}",
                   f"{len(bad)} of {len(lv.failovers)} failovers did not behave as the Java "
                   f"client's")


def _may_lose(view: HistoryView, lv: LoadView, cfg: CheckConfig, w: Window) -> bool:
    """Whether fault ``w`` may cost its node brokers (see ``CONNECTION_FAULTS``)."""
    if w.fault in CONNECTION_FAULTS:
        return True
    if w.fault == "kill_worker":
        return _params(view, w.event).get("role") == "io"
    if w.fault == "pause_node":
        t = cfg.timing
        return w.end - w.start + lv.plan.heartbeat_s + t.scan_s >= t.expiry_s
    return False


def _params(view: HistoryView, event: int) -> dict[str, Any]:
    for o in view.ops:
        if (o.process == NEMESIS and isinstance(o.value, dict) and o.value.get("event") == event
                and o.value.get("phase") == "apply"):
            return dict(o.value.get("params") or {})
    return {}


def check_load_brokers_kept(view: HistoryView, lv: LoadView, cfg: CheckConfig) -> CheckResult:
    """A node never lost a live load broker unless a fault on it could cost brokers."""
    recover = lv.plan.heartbeat_s + cfg.timing.margin_s
    bad: list[Any] = []
    checked = 0
    for node in view.nodes:
        lossy = [w for w in view.node_windows.get(node, ()) if _may_lose(view, lv, cfg, w)]
        complete = False
        for o in _load_obs(view, node):
            load = o.value["load"]
            if not complete:
                complete = load["missing_count"] == 0
                continue
            if any(w.start <= o.t and o.began <= w.end + recover for w in lossy):
                continue
            checked += 1
            if load["missing_count"]:
                bad.append({"node": node, "t": o.t, "missing_count": load["missing_count"],
                            "missing": load["missing"]})
    return _result("load_brokers_kept", "load", bad,
                   f"{checked} observations of nodes holding every load broker, none lost one",
                   f"{len(bad)} observations of a node missing live load brokers")


LOAD_CHECKERS: tuple[Callable[[HistoryView, LoadView, CheckConfig], CheckResult], ...] = (
    check_load_reached,
    check_load_reads_answered,
    check_load_reads_fail_over,
    check_load_brokers_kept,
)


def run_load_checks(view: HistoryView, cfg: CheckConfig) -> list[CheckResult]:
    """The load checks of a ``--load`` run; nothing for a run without load."""
    lv = load_view(view)
    if lv is None:
        return []
    return [check(view, lv, cfg) for check in LOAD_CHECKERS]
