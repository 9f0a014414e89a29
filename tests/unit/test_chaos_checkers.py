"""Checkers over hand-made histories: each passes on a correct run and catches its bug."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from cluster.chaos.all_checks import run_checks
from cluster.chaos.checkers import CheckResult
from cluster.chaos.history import Op
from cluster.chaos.schedule import Timing

FAST = Timing(heartbeat_s=2, scan_s=1, expiry_s=6, margin_s=2, restart_s=3)
NODES = ("n1", "n2", "n3")
BROKERS = ("a", "b")
Presence = Callable[[str, float], set[str]]


def next_beat(t: float) -> float:
    """When the first register at or after ``t`` has been answered (beats at 0.5 + 2k)."""
    return 0.5 + 2 * math.ceil((t - 0.5) / 2) + 0.01


@dataclass
class Run:
    """A synthetic run: faults, a workload and observations at fixed steps."""

    duration: float = 40.0
    faults: Sequence[tuple[str, str, float, float]] = (("hostile_client", "n1", 1.0, 1.0),)
    presence: Presence | None = None
    orphans: list[dict[str, object]] = field(default_factory=list)
    extra: list[Op] = field(default_factory=list)
    drop: Callable[[Op], bool] = lambda op: False

    def window(self, kind: str, target: str, t: float) -> bool:
        return any(f == kind and g == target and s <= t < e for f, g, s, e in self.faults)

    def node_down(self, node: str, t: float) -> bool:
        return any(self.window(k, node, t) for k in ("kill_node", "stop_node"))

    def default_presence(self, node: str, t: float) -> set[str]:
        out = set()
        for b in BROKERS:
            crashed = any(f == "broker_crash" and g == b and s + 6.5 <= t < next_beat(e)
                          for f, g, s, e in self.faults)
            unreg = any(f == "broker_unregister" and g == b and s <= t < next_beat(e)
                        for f, g, s, e in self.faults)
            restarted = any(f in ("kill_node", "stop_node") and g == node and e <= t < e + 0.5
                            for f, g, s, e in self.faults)
            if not (crashed or unreg or restarted):
                out.add(b)
        return out

    def ops(self) -> list[Op]:
        out = [Op(0.0, "runner", "start", None, "info",
                  {"nodes": list(NODES), "brokers": list(BROKERS), "timing": FAST.as_dict()})]
        for i, (kind, target, s, e) in enumerate(self.faults):
            out.append(Op(s, "nemesis", kind, target, "ok", {"phase": "apply", "event": i}))
            out.append(Op(e, "nemesis", kind, target, "ok", {"phase": "undo", "event": i}))
        out += self._registers() + self._reads() + self._kv() + self.extra
        out.append(Op(self.duration, "runner", "orphans", None, "info",
                      {"alive": self.orphans, "checked": 12}))
        return [o for o in out if not self.drop(o)]

    def _answer(self, node: str, t: float, op: str, process: str, value: dict) -> Op:
        if self.node_down(node, t):
            return Op(t + 0.01, process, op, node, "fail", {**value, "error": "refused"}, t)
        return Op(t + 0.01, process, op, node, "ok", value, t)

    def _registers(self) -> list[Op]:
        out = []
        for k in range(int(self.duration / 2)):
            t = 0.5 + 2 * k
            for b in BROKERS:
                if self.window("broker_crash", b, t) or self.window("broker_unregister", b, t):
                    continue
                out += [self._answer(n, t, "register", b, {"broker": b}) for n in NODES]
        for kind, target, s, _ in self.faults:
            if kind == "broker_unregister":
                out += [self._answer(n, s, "unregister", target, {"broker": target})
                        for n in NODES]
        return out

    def _reads(self) -> list[Op]:
        presence = self.presence or self.default_presence
        out = []
        for k in range(int(self.duration * 2)):
            t = 0.25 + k / 2
            for n in NODES:
                brokers = sorted(presence(n, t))
                out.append(self._answer(n, t, "route", "reader-1", {"brokers": brokers}))
                if not self.node_down(n, t):
                    out.append(Op(t + 0.02, "observer", "snapshot", n, "ok",
                                  {"brokers": brokers, "kv": self._kv_at(n, t)}, t))
        return out

    def _kv_at(self, node: str, t: float) -> dict[str, dict[str, str]]:
        return {"CHAOS": {f"{node}-k{i}": str(i) for i in range(5) if i + 1.01 < t}}

    def _kv(self) -> list[Op]:
        out = []
        for n in NODES:
            for i in range(5):
                out.append(Op(i + 1.01, "kv-1", "kv_put", n, "ok",
                              {"ns": "CHAOS", "key": f"{n}-k{i}", "value": str(i)}, i + 1.0))
            out.append(Op(self.duration - 0.5, "kv-1", "kv_read", n, "ok",
                          {"kv": self._kv_at(n, self.duration)}, self.duration - 0.6))
        return out


def results(run: Run) -> dict[str, CheckResult]:
    return {r.name: r for r in run_checks(run.ops())}


def failing(run: Run) -> set[str]:
    return {name for name, r in results(run).items() if not r.ok}


def test_a_run_without_faults_holds_every_invariant_but_fails_for_testing_nothing() -> None:
    res = results(Run(faults=()))
    assert failing(Run(faults=())) == {"faults_applied"}
    assert res["faults_applied"].summary.startswith("no fault was applied")
    assert res["audit_verdict"].skipped


def test_a_run_whose_faults_all_failed_to_apply_fails() -> None:
    refused = Op(5.0, "nemesis", "kill_node", "n1", "fail",
                 {"phase": "apply", "event": 0, "error": "ControlError: not running"})
    start = Op(0.0, "runner", "start", None, "info",
               {"nodes": list(NODES), "brokers": list(BROKERS), "timing": FAST.as_dict(),
                "planned": 1})
    run = Run(faults=(), extra=[refused], drop=lambda op: op.op == "start")
    res = {r.name: r for r in run_checks([start, *run.ops()])}
    assert not res["faults_applied"].ok
    assert "0 of 1 planned faults applied" in res["faults_applied"].summary
    assert res["faults_applied"].evidence[1]["value"]["error"].startswith("ControlError")


def test_faulty_but_correct_run_passes() -> None:
    run = Run(duration=60, faults=[("kill_node", "n1", 5, 8), ("pause_node", "n2", 14, 17),
                                   ("broker_crash", "b", 10, 22),
                                   ("broker_unregister", "a", 26, 30)])
    res = results(run)
    assert all(r.ok for r in res.values()), [r.as_dict() for r in res.values() if not r.ok]
    assert not res["crashed_broker_expires"].skipped
    assert not res["node_recovers"].skipped
    assert res["faults_applied"].summary == "4 of 4 planned faults applied"


def test_timeout_on_an_unfaulted_node_fails_both_answer_checks() -> None:
    hang = Op(20.5, "reader-1", "route", "n3", "unknown", None, 17.5)
    assert failing(Run(extra=[hang])) == {"unfaulted_nodes_answered", "answered_or_closed"}


def test_timeout_during_a_pause_is_expected() -> None:
    hang = Op(16.0, "reader-1", "route", "n2", "unknown", None, 14.5)
    assert failing(Run(faults=[("pause_node", "n2", 14, 17)], extra=[hang])) == set()


def test_timeout_during_a_kill_is_a_request_neither_answered_nor_closed() -> None:
    hang = Op(7.0, "reader-1", "route", "n1", "unknown", None, 5.5)
    assert failing(Run(faults=[("kill_node", "n1", 5, 8)], extra=[hang])) == {
        "answered_or_closed"}


def test_lost_acknowledged_kv_write_is_caught() -> None:
    def lose(op: Op) -> bool:
        if op.op == "kv_read" and op.node == "n2":
            op.value["kv"]["CHAOS"].pop("n2-k3")
        return False
    res = results(Run(faults=[("kill_node", "n2", 10, 13)], drop=lose))
    assert not res["acked_kv_writes_survive"].ok
    assert res["acked_kv_writes_survive"].evidence[0]["key"] == "n2-k3"
    assert res["acked_kv_writes_survive"].evidence[0]["found"] is None


def test_unacknowledged_kv_write_may_be_lost() -> None:
    maybe = Op(7.0, "kv-1", "kv_put", "n1", "unknown",
               {"ns": "CHAOS", "key": "maybe", "value": "x"}, 6.0)
    assert "acked_kv_writes_survive" not in failing(Run(extra=[maybe]))


def test_overwritten_kv_value_may_show_either_concurrent_value() -> None:
    first = Op(6.5, "kv-1", "kv_put", "n1", "ok", {"ns": "N", "key": "x", "value": "1"}, 6.0)
    racing = Op(9.0, "kv-2", "kv_put", "n1", "unknown", {"ns": "N", "key": "x", "value": "2"}, 6.2)
    read = Op(10.0, "kv-1", "kv_read", "n1", "ok", {"kv": {"N": {"x": "2"}}}, 9.5)
    stale = Op(10.0, "kv-1", "kv_read", "n1", "ok", {"kv": {"N": {"x": "0"}}}, 9.5)
    start = Run().ops()[0]

    def kv_ok(*ops: Op) -> bool:
        return {r.name: r for r in run_checks([start, *ops])}["acked_kv_writes_survive"].ok
    assert kv_ok(first, racing, read)
    assert not kv_ok(first, racing, stale)


def test_routing_to_an_unregistered_broker_is_caught() -> None:
    faults = [("broker_unregister", "a", 20, 26)]

    base = Run(faults=faults)

    def ghost(node: str, t: float) -> set[str]:
        return {"a", "b"} if node == "n3" else base.default_presence(node, t)
    res = results(Run(faults=faults, presence=ghost))
    assert not res["unregister_respected"].ok
    assert {e["node"] for e in res["unregister_respected"].evidence} == {"n3"}
    assert results(Run(faults=faults))["unregister_respected"].ok


def test_re_registration_clears_an_unregister() -> None:
    faults = [("broker_unregister", "a", 20, 26)]
    again = [Op(21.0, "a", "register", n, "ok", {"broker": "a"}, 20.9) for n in NODES]

    def back(node: str, t: float) -> set[str]:
        return {"b"} if 20 <= t < 21 else {"a", "b"}
    assert "unregister_respected" not in failing(Run(faults=faults, presence=back, extra=again))


def test_node_that_never_expires_brokers_fails_liveness() -> None:
    faults = [("broker_crash", "b", 10, 30)]
    res = results(Run(faults=faults, presence=lambda n, t: {"a", "b"}))
    check = res["crashed_broker_expires"]
    assert not check.ok and not check.skipped
    assert {e["node"] for e in check.evidence} == set(NODES)
    assert all(e["gone_at"] is None for e in check.evidence)


def test_one_slow_node_fails_expiry_with_its_evidence() -> None:
    faults = [("broker_crash", "b", 10, 30)]
    base = Run(faults=faults)

    def slow_n2(node: str, t: float) -> set[str]:
        return {"a", "b"} if node == "n2" and t < 25 else base.default_presence(node, t)
    check = results(Run(faults=faults, presence=slow_n2))["crashed_broker_expires"]
    assert not check.ok
    assert [e["node"] for e in check.evidence] == ["n2"]
    assert check.evidence[0]["gone_at"] > check.evidence[0]["deadline"]


def test_restarted_node_missing_a_broker_fails_recovery() -> None:
    faults = [("kill_node", "n1", 10, 13)]

    def forgets(node: str, t: float) -> set[str]:
        return {"a"} if node == "n1" and t >= 13 else {"a", "b"}
    res = results(Run(faults=faults, presence=forgets))
    assert not res["node_recovers"].ok
    assert res["node_recovers"].evidence[0]["complete_at"] is None
    assert not res["converged_after_heal"].ok


def test_flapping_node_recovery_is_skipped_not_failed() -> None:
    faults = [("kill_node", "n1", 10, 13), ("pause_node", "n1", 14, 16)]
    res = results(Run(faults=faults))["node_recovers"]
    assert res.ok and res.evidence == [] and "1 skipped" in res.summary


def test_failed_route_reads_on_healthy_nodes_fail_the_rate() -> None:
    def flaky(op: Op) -> bool:
        return op.op == "route" and op.node == "n3" and int(op.t * 4) % 3 == 0
    ops = [o if not flaky(o) else Op(o.t, o.process, o.op, o.node, "fail", {"code": 1}, o.start)
           for o in Run().ops()]
    res = {r.name: r for r in run_checks(ops)}
    assert not res["route_success_rate"].ok
    assert res["unfaulted_nodes_answered"].ok


def test_orphans_and_a_missing_process_check_fail() -> None:
    assert "no_orphans" in failing(Run(orphans=[{"pid": 4242, "name": "python"}]))
    assert "no_orphans" in failing(Run(drop=lambda op: op.op == "orphans"))


def test_audit_verdict_is_reported() -> None:
    ok = Op(39.0, "runner", "audit", None, "ok", {"verdict": "PASS"})
    bad = Op(39.0, "runner", "audit", None, "fail", {"verdict": "FAIL"})
    assert results(Run(extra=[ok]))["audit_verdict"].ok
    assert not results(Run(extra=[bad]))["audit_verdict"].ok


def test_interrupted_fault_never_healed_keeps_the_node_faulted() -> None:
    def no_undo(op: Op) -> bool:
        return op.process == "nemesis" and op.value["phase"] == "undo"
    hang = Op(30.0, "reader-1", "route", "n2", "unknown", None, 29.0)
    res = results(Run(faults=[("pause_node", "n2", 14, 17)], drop=no_undo, extra=[hang]))
    assert res["answered_or_closed"].ok
    assert not res["converged_after_heal"].ok


def test_failed_undo_leaves_the_node_faulted() -> None:
    def undo_failed(op: Op) -> bool:
        if op.process == "nemesis" and op.value["phase"] == "undo":
            object.__setattr__(op, "outcome", "fail")
        return False
    hang = Op(30.0, "reader-1", "route", "n1", "unknown", None, 29.0)
    res = results(Run(faults=[("pause_node", "n1", 14, 17)], drop=undo_failed, extra=[hang]))
    assert res["unfaulted_nodes_answered"].ok
    assert res["answered_or_closed"].ok


def test_instant_faults_need_no_undo() -> None:
    hostile = Op(12.0, "nemesis", "hostile_client", "n1", "ok",
                 {"phase": "apply", "event": 9, "kind": "garbage", "closed_by_node": True}, 11.9)
    res = results(Run(extra=[hostile]))
    assert all(r.ok for r in res.values()), [r.as_dict() for r in res.values() if not r.ok]


def test_heartbeat_answered_with_an_error_may_still_have_been_applied() -> None:
    from cluster.chaos.checkers import HistoryView, _last_heard

    ok = Op(5.0, "b", "register", "n2", "ok", {"broker": "b"}, 4.9)
    errored = Op(7.0, "b", "register", "n2", "fail", {"broker": "b", "code": 1}, 6.9)
    refused = Op(8.0, "b", "register", "n2", "fail", {"broker": "b", "error": "refused"}, 7.9)
    view = HistoryView([ok, errored, refused])
    assert _last_heard(view, "b", "n2", at=10.0) == 7.0


def test_registration_abandoned_by_a_crash_counts_as_possibly_applied() -> None:
    from cluster.chaos.checkers import ABANDONED, HistoryView, _last_heard

    ok = Op(22.0, "b", "register", "n2", "ok", {"broker": "b"}, 21.9)
    abandoned = Op(25.0, "b", ABANDONED, "n2", "info", {"broker": "b"}, 24.0)
    assert _last_heard(HistoryView([ok, abandoned]), "b", "n2", at=25.0) == 25.0
