"""Chaos audit input and audit step: observer rounds to rows + manifest, verdict to history."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import psutil
import pytest

from cluster.audit.rows import BoundInputs, Manifest, entry_rows, rows_file_name
from cluster.chaos import audit as chaos_audit
from cluster.chaos.audit import AuditInput, Observed, run_audit, verdict_value
from cluster.chaos.history import HistoryWriter, Op
from cluster.chaos.workload import Workload, WorkloadOptions
from cluster.client.errors import CallTimeout, ClientError
from cluster.client.fanout import FanoutResult, NodeOutcome, Status
from cluster.core.errors import UserError
from tests.unit.test_chaos_checkers import Run, results

NODES = {"n1": "127.0.0.1:9876", "n2": "127.0.0.1:9877"}
BOUND = BoundInputs(heartbeat_period_ms=2000, scan_interval_ms=1000, expiry_ms=6000)


def snapshot(node: str, taken_at: int, brokers: list[str]) -> dict[str, Any]:
    return {"node": node, "seq": 1, "takenAt": taken_at,
            "tables": {"broker": {b: {"cluster": "C", "brokerAddrs": {"0": f"{b}:1"}}
                                  for b in brokers},
                       "kv": {"CHAOS": {"k1": "v1"}}}}


def read_rows(out: Path, node: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (out / rows_file_name(node)).read_bytes().splitlines()]


def read_manifest(out: Path) -> Manifest:
    return Manifest.from_json((out / "manifest.json").read_bytes())


@pytest.fixture
def audit_dir(tmp_path: Path) -> Path:
    return tmp_path / "audit"


def test_observer_rounds_become_the_collectors_rows(audit_dir: Path) -> None:
    sink = AuditInput(audit_dir, NODES, 0.5, BOUND)
    up = snapshot("n1", 1_000, ["b1", "b2"])
    assert sink.add_round(0, [Observed("n1", 990, up), Observed("n2", 991, None, "timeout")])
    assert sink.add_round(1, [Observed("n1", 1_490, snapshot("n1", 1_500, ["b1"])),
                              Observed("n2", 1_491, {"takenAt": 1_500})])
    n1, n2 = read_rows(audit_dir, "n1"), read_rows(audit_dir, "n2")
    assert n1[:len(entry_rows("n1", 0, up))] == entry_rows("n1", 0, up)
    assert [(r["round"], r["table"], r["key"]) for r in n1 if r["table"]] == [
        (0, "broker", "b1"), (0, "broker", "b2"), (0, "kv", "CHAOS/k1"),
        (1, "broker", "b1"), (1, "kv", "CHAOS/k1")]
    assert n2 == [
        {"node": "n2", "round": 0, "taken_at": 991, "available": False, "table": None,
         "key": None, "digest": None, "value": None, "error": "timeout"},
        {"node": "n2", "round": 1, "taken_at": 1_491, "available": False, "table": None,
         "key": None, "digest": None, "value": None, "error": "snapshot has no 'tables' object"}]


def test_manifest_carries_timing_and_fault_end(audit_dir: Path) -> None:
    sink = AuditInput(audit_dir, NODES, 0.5, BOUND)
    started = read_manifest(audit_dir)
    assert started.rounds == 0 and started.fault_end is None and started.started_at
    sink.add_round(0, [Observed(n, 5, snapshot(n, 10, [])) for n in NODES])
    done = sink.close(fault_end=1_234)
    on_disk = read_manifest(audit_dir)
    assert on_disk == done
    assert on_disk.node_names == ["n1", "n2"] and on_disk.nodes[1].address == NODES["n2"]
    assert on_disk.interval_ms == 500 and on_disk.bound_inputs == BOUND
    assert on_disk.fault_end == 1_234 and on_disk.rounds == 1 and on_disk.ended_at
    assert not sink.add_round(1, [Observed(n, 5, snapshot(n, 10, [])) for n in NODES])
    assert {r["round"] for r in read_rows(audit_dir, "n1")} == {0}


def test_audit_input_refuses_a_used_directory(audit_dir: Path) -> None:
    AuditInput(audit_dir, NODES, 0.5, BOUND).close(None)
    with pytest.raises(UserError):
        AuditInput(audit_dir, NODES, 0.5, BOUND)


class FakeSnapshots:
    """Answers ``read_node``: n1 always, n2 once and then not; stops the observer after
    ``calls`` requests. Each node's thread calls it (one lock for the counts)."""

    def __init__(self, workload: Workload, calls: int) -> None:
        self.workload = workload
        self.left = calls
        self.calls: list[str] = []
        self.lock = threading.Lock()

    def read_node(self, node: str) -> dict[str, Any]:
        addr = NODES[node]
        with self.lock:
            self.calls.append(addr)
            self.left -= 1
            if self.left == 0:
                self.workload._stop_observing.set()
            n2_again = addr == NODES["n2"] and self.calls.count(addr) > 1
        if n2_again:
            raise CallTimeout("no reply within 1s", addr)
        return snapshot("n1" if addr == NODES["n1"] else "n2", 7_000, ["b1"])

    def close(self) -> None:
        pass


@pytest.fixture
def workload(audit_dir: Path) -> Iterator[Workload]:
    history = HistoryWriter(None, lambda: 0.0)
    sink = AuditInput(audit_dir, NODES, 0.01, BOUND)
    w = Workload(history, NODES, NODES, WorkloadOptions(observe_interval_s=0.01), sink)
    yield w
    w.stop()


def test_observer_writes_each_round_and_records_history(workload: Workload,
                                                        audit_dir: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeSnapshots(workload, calls=6)
    monkeypatch.setattr(workload, "_node_reader", lambda node, addr: fake)
    workload._observer()
    assert workload.audit is not None
    workload.audit.close(None)
    ops = workload.history.records()
    by_node = {n: [o for o in ops if o.node == n] for n in NODES}
    assert {o.outcome for o in by_node["n1"]} == {"ok"}
    assert [o.outcome for o in by_node["n2"]] == ["ok"] + ["unknown"] * (len(by_node["n2"]) - 1)
    # The final round, taken once the writers have stopped, reads KV; the others do not.
    assert ["kv" in o.value for o in by_node["n1"]] == [True] + [False] * (
        len(by_node["n1"]) - 2) + [True]
    rounds = read_manifest(audit_dir).rounds
    for node in NODES:
        status = [r for r in read_rows(audit_dir, node) if r["table"] is None]
        assert [r["round"] for r in status] == list(range(rounds))
    n2 = [r for r in read_rows(audit_dir, "n2") if r["table"] is None]
    assert n2[0]["available"] and not any(r["available"] for r in n2[1:])
    assert "CallTimeout" in n2[-1]["error"]


def report_doc(holds: bool) -> dict[str, Any]:
    late = [] if holds else [{"table": "broker", "key": "b1", "kind": "extra",
                              "start": 1, "end": 20_000, "late_by_ms": 11_000}]
    return {"rows": 40, "rounds": [{}, {}], "intervals_total": 3, "never_converged": [],
            "verdict": {"holds": holds, "bound_ms": 9000, "fault_end": 5, "late": late,
                        "fault_end_source": "manifest fault_end",
                        "reasons": [] if holds else ["1 divergence(s) closed later"]}}


@pytest.mark.parametrize(("holds", "code", "outcome"), [
    (True, 0, "ok"), (False, 1, "fail"), (True, 1, "fail")])
def test_verdict_value_from_the_report(tmp_path: Path, holds: bool, code: int,
                                       outcome: str) -> None:
    path = tmp_path / "audit-report.json"
    path.write_bytes(orjson.dumps(report_doc(holds)))
    got, value = verdict_value(path, code)
    assert got == outcome
    assert value["report"] == str(path) and value["html"].endswith("audit-report.html")
    assert value["summary"].startswith("eventually consistent" if holds else "not eventually")
    assert value["rounds"] == 2 and value["bound_ms"] == 9000 and value["exit"] == code


def test_audit_of_bad_input_is_a_failure_with_the_reason(tmp_path: Path) -> None:
    empty = tmp_path / "audit"
    empty.mkdir()
    outcome, value = run_audit(empty, timeout_s=60)
    assert outcome == "fail" and value["exit"] == 2
    assert "without a verdict" in value["error"] and "is empty" in value["output"]


def test_audit_that_hangs_is_killed_with_its_group(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "started"
    script = (f"import subprocess, sys, time; p = subprocess.Popen([sys.executable, '-c', "
              f"'import time; time.sleep(60)']); open({str(marker)!r}, 'w').write(str(p.pid)); "
              "time.sleep(60)")
    monkeypatch.setattr(chaos_audit, "pynamesrv_command",
                        lambda args: [sys.executable, "-c", script])
    outcome, value = run_audit(tmp_path, timeout_s=3)
    assert outcome == "fail" and "timed out" in value["error"]
    child = int(marker.read_text())
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE


def test_audit_verdict_check_shows_the_summary() -> None:
    value = {"summary": "not eventually consistent: 2 key(s) disagree", "report": "r.json"}
    res = results(Run(extra=[Op(39.0, "runner", "audit", None, "fail", value)]))
    assert not res["audit_verdict"].ok
    assert res["audit_verdict"].summary.endswith("2 key(s) disagree")
    assert res["audit_verdict"].evidence == [value]


class FakeKv:
    """``put_kv`` fan-out where the nodes in ``down`` refuse the connection."""

    def __init__(self) -> None:
        self.down: set[str] = set()
        self.calls: list[tuple[str, list[str]]] = []

    def put_kv(self, ns: str, key: str, value: str,
               addrs: list[str] | None = None) -> FanoutResult:
        targets = list(NODES.values()) if addrs is None else addrs
        self.calls.append((key, targets))
        outcomes = {a: NodeOutcome(a, Status.FAILED if a in self.down else Status.OK,
                                   error=ClientError("refused", a) if a in self.down else None)
                    for a in targets}
        return FanoutResult(outcomes, 0.001)


def test_kv_writes_a_node_missed_are_put_again_until_acknowledged(workload: Workload) -> None:
    kv: Any = FakeKv()
    unsynced: dict[str, tuple[str, set[str]]] = {}
    kv.down = {NODES["n2"]}
    workload.put_kv(kv, "kv-0", unsynced)
    workload.put_kv(kv, "kv-0", unsynced)
    assert unsynced == {"kv-0-1": ("v1-s0", {"n2"}), "kv-0-2": ("v2-s0", {"n2"})}
    workload.repair_kv(kv, "kv-0", unsynced)
    assert kv.calls[2:] == [("kv-0-1", [NODES["n2"]])] and len(unsynced) == 2
    kv.down.clear()
    workload.repair_kv(kv, "kv-0", unsynced)
    assert kv.calls[3:] == [("kv-0-1", [NODES["n2"]]), ("kv-0-2", [NODES["n2"]])]
    assert unsynced == {}
    repairs = [o for o in workload.history.records() if o.value.get("repair")]
    assert [(o.node, o.outcome, o.value["key"]) for o in repairs] == [
        ("n2", "fail", "kv-0-1"), ("n2", "ok", "kv-0-1"), ("n2", "ok", "kv-0-2")]
