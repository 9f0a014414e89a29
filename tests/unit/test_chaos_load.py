"""The ``--load`` profile: plan arithmetic, request templates, counters and the load checks."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.chaos.checkers import CheckConfig, HistoryView
from cluster.chaos.history import NEMESIS, OBSERVER, RUNNER, Op
from cluster.chaos.load.checks import load_report, run_load_checks
from cluster.chaos.load.plan import LoadPlan, load_observation
from cluster.chaos.load.reads import OPAQUE_BASE, request_template
from cluster.chaos.load.run import LOAD
from cluster.chaos.load.stats import BOUNDS, ReadCounters, merged
from cluster.chaos.schedule import Timing
from cluster.core.protocol.codes import RequestCode
from cluster.core.protocol.frame import decode_frame

PLAN = LoadPlan(heartbeat_s=30.0)
SMALL = LoadPlan(brokers=4, topics_per_broker=3, heartbeat_s=2.0, reads_per_s=100.0,
                 nodes=2)
CFG = CheckConfig(timing=Timing(heartbeat_s=2, scan_s=1, expiry_s=15, margin_s=2),
                  grace_s=4.0)


def test_default_plan_is_the_production_profile() -> None:
    assert (PLAN.groups, PLAN.broker_count, PLAN.topic_count) == (100, 200, 10_000)
    assert PLAN.registrations_per_s == pytest.approx(200 * 3 / 30)
    assert PLAN.clients == 12
    assert PLAN.offered_reads_per_s == pytest.approx(6000)
    assert PLAN.reads_per_client == pytest.approx(6000 / 12)
    assert PLAN.batch == pytest.approx(6000 / 12 * 0.02)
    assert "10000 in all" in "\n".join(PLAN.describe())


def test_brokers_come_in_master_slave_pairs() -> None:
    odd = LoadPlan(brokers=201)
    assert (odd.groups, odd.broker_count) == (101, 202)
    ids = odd.identities()
    assert len({w.broker_addr for w in ids}) == len(ids) == 202
    assert [(w.broker_name, w.broker_id) for w in ids[:2]] == [
        ("load-broker-0", 0), ("load-broker-0", 1)]
    assert odd.broker_addrs() == frozenset(w.broker_addr for w in ids)


@pytest.mark.parametrize("kwargs", [{"brokers": 1}, {"topics_per_broker": 0},
                                    {"reads_per_s": 0}, {"heartbeat_s": -1}, {"nodes": 0}])
def test_bad_plans_are_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        LoadPlan(**kwargs)


def test_topic_index_names_topic_and_group() -> None:
    assert PLAN.topic(0) == ("LoadTopic-0-0", 0)
    assert PLAN.topic(199) == ("LoadTopic-1-99", 1)
    assert set(PLAN.topics(7)) == {f"LoadTopic-7-{k}" for k in range(100)}
    assert LoadPlan.from_dict(PLAN.as_dict()) == PLAN


def test_request_template_is_a_route_request_with_a_ten_digit_opaque() -> None:
    head, tail = request_template("LoadTopic-3-7")
    opaque = OPAQUE_BASE + 42
    cmd = decode_frame(head + str(opaque).encode() + tail)
    assert (cmd.code, cmd.opaque, cmd.field("topic")) == (
        RequestCode.GET_ROUTEINFO_BY_TOPIC, opaque, "LoadTopic-3-7")


def test_counters_merge_and_give_percentiles() -> None:
    a, b = ReadCounters(), ReadCounters()
    for ms in range(1, 101):
        a.reply(0, ms / 1000)
    b.reply(17, 0.5)
    b.reply(2, 0.5)
    b.timeout += 1
    total = merged([a.as_dict(), b.as_dict()])
    assert (total.ok, total.not_found, total.error, total.codes) == (100, 1, 1, {"2": 1})
    assert (total.answered, total.failed) == (102, 1)
    p50 = total.percentile(0.5)
    assert p50 is not None and 0.05 <= p50 <= 0.05 * 1.13
    assert total.latency_ms()["max"] == pytest.approx(min(b for b in BOUNDS if b >= 0.5) * 1000)


def test_observation_and_audit_view_of_a_snapshot() -> None:
    live = {w.broker_addr: {} for w in SMALL.identities()[1:]}
    topics = {SMALL.topic(i)[0]: {} for i in range(SMALL.topic_count)} | {"SimTopic-0": {}}
    tables = {"broker": {"load-broker-0": {}, "load-broker-1": {}, "chaos-broker-0": {}},
              "live": live, "topic": topics}
    obs = load_observation(SMALL, tables)
    assert obs == {"brokers": 2, "live": 3, "topics": 6, "missing": ["127.0.0.1:30911"],
                   "missing_count": 1}
    audit = SMALL.audit_snapshot({"seq": 1, "tables": tables})
    assert set(audit["tables"]["topic"]) == {"LoadTopic-0-0", "LoadTopic-1-0", "SimTopic-0"}
    assert audit["tables"]["live"] is live


# ------------------------------------------------------------------ checks


def reads(node: str, t: float, ok: int, **extra: int) -> Op:
    value = {"ok": ok, "sent": ok, "interval": 1.0, "hist": {"10": ok}, **extra}
    return Op(t, LOAD, "load_reads", node, "info", value, t - 1.0)


def snapshot(node: str, t: float, missing: list[str]) -> Op:
    load = {"brokers": 2, "live": 4 - len(missing), "topics": 6, "missing": missing,
            "missing_count": len(missing)}
    return Op(t, OBSERVER, "snapshot", node, "ok", {"brokers": [], "live": [], "load": load}, t)


def history(*extra: Op, rate: int = 120) -> list[Op]:
    ops = [Op(0.0, RUNNER, "start", None, "info", {"nodes": ["n1", "n2"], "brokers": []}),
           Op(0.0, RUNNER, "load", None, "info", {"plan": SMALL.as_dict()}),
           Op(1.0, LOAD, "load_ready", None, "info", {"complete": True, "registered": 8})]
    for t in range(2, 12):
        ops += [reads("n1", t, rate // 2), reads("n2", t, rate // 2),
                snapshot("n1", t, []), snapshot("n2", t, [])]
    return ops + list(extra)


def verdicts(ops: list[Op]) -> dict[str, bool]:
    return {r.name: r.ok for r in run_load_checks(HistoryView(ops), CFG)}


def window(fault: str, node: str, start: float, end: float, event: int = 0,
           params: dict[str, Any] | None = None) -> list[Op]:
    base = {"event": event, "params": params or {}}
    return [Op(start, NEMESIS, fault, node, "ok", {**base, "phase": "apply"}, start),
            Op(end, NEMESIS, fault, node, "ok", {**base, "phase": "undo"}, end)]


def test_a_clean_load_history_passes_and_reports_its_figures() -> None:
    ops = history()
    assert verdicts(ops) == {"load_reached": True, "load_reads_answered": True,
                             "load_reads_fail_over": True, "load_brokers_kept": True}
    rep = load_report(HistoryView(ops))
    assert rep is not None
    assert rep["reads"]["ok_per_s"] == pytest.approx(1200 / 10, rel=0.01)
    assert rep["brokers"]["nodes"]["n1"]["registered_max"] == 4
    assert run_load_checks(HistoryView(ops[:1]), CFG) == []


def test_below_the_read_target_fails() -> None:
    assert not verdicts(history(rate=80))["load_reached"]


def test_unanswered_reads_count_only_outside_fault_windows() -> None:
    lost = reads("n2", 7.0, 10, timeout=5)
    assert not verdicts(history(lost))["load_reads_answered"]
    assert verdicts(history(lost, *window("pause_node", "n2", 5.0, 6.0)))["load_reads_answered"]
    wrong = reads("n1", 8.0, 1, wrong=1)
    assert not verdicts(history(wrong))["load_reads_answered"]


def failover(source: str, to: str, failed_at: float, ok_at: float | None) -> Op:
    value = {"client": 0, "from": source, "to": to, "reason": "timeout",
             "failed_at": failed_at, "ok_at": ok_at, "lost": 3}
    return Op(ok_at or failed_at, LOAD, "load_failover", source, "info", value, failed_at)


def test_failover_must_follow_a_fault_move_on_and_recover() -> None:
    fault = window("net_blackhole", "n1", 3.0, 6.0)
    assert verdicts(history(*fault, failover("n1", "n2", 5.0, 5.1)))["load_reads_fail_over"]
    assert not verdicts(history(failover("n1", "n2", 5.0, 5.1)))["load_reads_fail_over"]
    assert not verdicts(history(*fault, failover("n1", "n1", 5.0, 5.1)))["load_reads_fail_over"]
    assert not verdicts(history(*fault, failover("n1", "n2", 5.0, None)))["load_reads_fail_over"]


def test_a_node_may_lose_load_brokers_only_to_faults_that_close_their_connections() -> None:
    gone = snapshot("n2", 8.0, ["127.0.0.1:30911"])
    assert not verdicts(history(gone))["load_brokers_kept"]
    assert verdicts(history(gone, *window("net_reset", "n2", 6.0, 7.0)))["load_brokers_kept"]
    slow = window("net_slow", "n2", 6.0, 7.0)
    assert not verdicts(history(gone, *slow))["load_brokers_kept"]
    io = window("kill_worker", "n2", 6.0, 7.0, params={"role": "io"})
    assert verdicts(history(gone, *io))["load_brokers_kept"]
    business = window("kill_worker", "n2", 6.0, 7.0, params={"role": "business"})
    assert not verdicts(history(gone, *business))["load_brokers_kept"]
