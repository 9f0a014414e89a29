"""The chaos workload beside a node that answers nothing: the healthy node keeps its samples."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from cluster.audit.rows import BoundInputs, Manifest
from cluster.chaos.audit import AuditInput
from cluster.chaos.history import OBSERVER, HistoryWriter
from cluster.chaos.workload import Workload, WorkloadOptions
from tests.nodeproc import NodeProcess, poll_until

pytestmark = pytest.mark.integration


@pytest.fixture
def silent_addr() -> Iterator[str]:
    """A port whose connections the kernel accepts and nobody serves: what a client of a
    SIGSTOPped node sees (its requests wait out their timeout)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield f"127.0.0.1:{s.getsockname()[1]}"


def counts(history: HistoryWriter, op: str, process_prefix: str) -> dict[str, int]:
    out = {"n1": 0, "n2": 0}
    for o in history.records():
        if o.op == op and o.process.startswith(process_prefix) and o.node in out:
            out[str(o.node)] += 1
    return out


def ok_count(history: HistoryWriter, op: str, node: str) -> int:
    return sum(1 for o in history.records() if o.op == op and o.node == node and o.outcome == "ok")


def test_a_silent_node_stalls_neither_reads_nor_snapshots_of_a_healthy_one(
        tmp_path: Path, silent_addr: str) -> None:
    node = NodeProcess(tmp_path / "n1", name="n1").start()
    history = HistoryWriter(None, time.monotonic)
    addrs = {"n1": node.addr, "n2": silent_addr}
    opts = WorkloadOptions(brokers=1, heartbeat_s=1.0, timeout_s=1.0, read_interval_s=0.05,
                           observe_interval_s=0.05, kv_interval_s=0.2)
    audit = AuditInput(tmp_path / "audit", addrs, opts.observe_interval_s, BoundInputs())
    workload = Workload(history, addrs, addrs, opts, audit)
    try:
        workload.start()
        poll_until(lambda: ok_count(history, "route", "n1") >= 40
                   and ok_count(history, "snapshot", "n1") >= 40, 60, 0.05,
                   "40 route reads and 40 snapshots answered by n1")
    finally:
        workload.stop()
        audit.close(None)
        node.stop()
    reads, snapshots = counts(history, "route", "reader-"), counts(history, "snapshot", OBSERVER)
    # Each request to n2 waits out its 1 s timeout; n1 is asked every 50 ms meanwhile. With
    # one thread for both nodes, n1 would get one read per n2 timeout (equal counts).
    assert reads["n1"] >= 4 * reads["n2"], reads
    assert snapshots["n1"] >= 4 * snapshots["n2"], snapshots
    assert all(o.outcome != "ok" for o in history.records() if o.node == "n2"
               and o.op in ("route", "snapshot"))
    manifest = Manifest.from_json((tmp_path / "audit" / "manifest.json").read_bytes())
    rows = {n: [orjson.loads(x) for x in (tmp_path / "audit" / f"rows-{n}.jsonl")
                .read_bytes().splitlines()] for n in addrs}
    status = {n: [r for r in rs if r["table"] is None] for n, rs in rows.items()}
    assert [r["round"] for r in status["n1"]] == list(range(manifest.rounds))
    assert [r["round"] for r in status["n2"]] == list(range(manifest.rounds))
    assert sum(r["available"] for r in status["n1"]) >= 40
    assert not any(r["available"] for r in status["n2"])
