"""``pynamesrv bench`` end to end: a short run against a fresh node and the baseline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.bench.runner import RMQLOAD_SRC
from tests.nodeproc import ROOT

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not (RMQLOAD_SRC / "rmqload.c").is_file(),
                                 reason=f"rmqload sources not found at {RMQLOAD_SRC}")]


def test_bench_reports_rates_cpu_and_memory(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    res = subprocess.run(
        [sys.executable, "-m", "cluster.cli", "bench", "-w", "route-latency", "--baseline",
         "--warmup", "1s", "--duration", "1s", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr
    results = {r["target"]: r for r in json.loads(out.read_text())}
    node, base = results["node"], results["baseline"]
    assert node["route"]["rate"] > 0 and base["route"]["rate"] > 0
    assert node["errors"] == 0 and "register" not in node
    assert node["server_peak_pss_mb"] > 0 and node["fraction_of_baseline"] > 0


@pytest.mark.java
def test_bench_measures_java_in_the_same_run(tmp_path: Path) -> None:
    from tests.javaproc import java_rocketmq_missing

    if java_rocketmq_missing():
        pytest.skip(java_rocketmq_missing())
    out = tmp_path / "bench.json"
    res = subprocess.run(
        [sys.executable, "-m", "cluster.cli", "bench", "-w", "route-latency", "--java",
         "--java-warmup", "1s", "--warmup", "1s", "--duration", "1s", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr
    results = {r["target"]: r for r in json.loads(out.read_text())}
    assert results["java"]["route"]["rate"] > 0 and results["java"]["errors"] == 0
    assert results["node"]["ratio_to_java"] > 0 and "x java" in res.stderr
