"""``chaos run --scenario mixed --load`` end to end, short (``-m chaos``).

The full profile's broker side (200 brokers in master/slave pairs, 100 topics
each, compressed registrations to every node) runs as in the 10-minute
command; only the read target is reduced (``--load-reads 2000`` instead of
5,000) so the test passes on a two-core machine busy with other test runs,
and the load brokers heartbeat every 5 s (``--heartbeat 5s``; the cluster
file's 15 s expiry leaves them room on a slow machine). The run lasts 30 s
plus start-up, teardown and the audit.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from cluster.chaos.history import RUNNER, read_history
from cluster.chaos.load.checks import LOAD_CHECKERS
from tests.chaos.conftest import write_cluster
from tests.chaos.test_scenarios import processes_under
from tests.conftest import Reaper

pytestmark = pytest.mark.chaos
BROKERS, TOPICS, READS = 200, 100, 2000.0
WALL_LIMIT_S = 240


def run_cli(cluster: Path, out: Path, reaper: Reaper) -> tuple[int, str]:
    argv = [sys.executable, "-m", "cluster.cli", "chaos", "run", "--scenario", "mixed",
            "--seed", "21", "--duration", "30s", "--load", "--heartbeat", "5s",
            "--load-brokers", str(BROKERS), "--load-reads", f"{READS:g}",
            "-c", str(cluster), "--out", str(out)]
    proc = reaper.spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text, _ = proc.communicate(timeout=WALL_LIMIT_S)
    print(text)
    return proc.returncode, text


def test_mixed_under_load_passes_and_reports_the_load(tmp_path: Path, port_factory: Any,
                                                      chaos_reaper: Reaper) -> None:
    cluster = write_cluster(tmp_path, port_factory,
                            defaults={"brokerChannelExpiredTime": 15000})
    out = tmp_path / "out"
    code, text = run_cli(cluster, out, chaos_reaper)
    assert code == 0, text
    assert processes_under(str(tmp_path)) == []
    doc = orjson.loads((out / "result.json").read_bytes())
    checks = {c["name"]: c for c in doc["checks"]}
    assert {c.__name__.removeprefix("check_") for c in LOAD_CHECKERS} <= set(checks)
    assert [n for n, c in checks.items() if not c["ok"]] == []
    assert not checks["audit_verdict"]["skipped"]
    load = doc["load"]
    assert load["plan"]["broker_count"] == BROKERS
    for node in load["brokers"]["nodes"].values():
        assert node["registered_max"] >= BROKERS
        assert node["topics_max"] >= BROKERS // 2 * TOPICS
    reads = load["reads"]
    assert reads["ok_per_s"] >= READS and reads["target_per_s"] == READS
    assert set(reads["nodes"]) == {"n1", "n2", "n3"}
    assert reads["latency_ms"]["p50"] is not None and reads["latency_ms"]["p99"] is not None
    assert reads["wrong"] == 0 and reads["verified"] > 0
    assert load["registrations"]["outcomes"]["ok"] > 0
    history = read_history(out / "history.jsonl")
    assert [o.value for o in history if o.process == RUNNER and o.op == "load_report"] == [load]
    summary = (out / "summary.txt").read_text()
    assert f"reads: {reads['ok_per_s']:g}/s ok" in summary
    assert "RESULT: PASS" in summary
