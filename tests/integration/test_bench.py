"""``pynamesrv bench`` end to end: a short run against a fresh node and the baseline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.nodeproc import ROOT

pytestmark = pytest.mark.integration


def _bench(tmp_path: Path, *args: str) -> tuple[dict, subprocess.CompletedProcess[str]]:
    out = tmp_path / "bench.json"
    res = subprocess.run(
        [sys.executable, "-m", "cluster.cli", "bench", "-w", "route-latency", "--warmup", "1s",
         "--duration", "1s", "--out", str(out), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return json.loads(out.read_text()), res


def _ratio(data: dict, other: str) -> float:
    found = [r["ratio"] for r in data["ratios"]
             if (r["other"], r["side"], r["metric"]) == (other, "route", "rate")]
    assert len(found) == 1, data["ratios"]
    return float(found[0])


def test_bench_reports_rates_cpu_memory_and_alternates_rounds(tmp_path: Path) -> None:
    png = tmp_path / "cost.png"
    data, res = _bench(tmp_path, "--baseline", "--rounds", "2", "--plot", str(png))
    results = data["results"]
    assert [(r["target"], r["round"]) for r in results] == [
        ("node", 0), ("baseline", 0), ("baseline", 1), ("node", 1)]
    for r in results:
        assert r["route"]["rate"] > 0 and r["errors"] == 0 and "register" not in r
        assert r["server_peak_pss_mb"] > 0
    assert _ratio(data, "baseline") > 0
    assert "route-latency: node route rate =" in res.stderr and "2 rounds" in res.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.java
def test_bench_measures_both_java_releases_in_the_same_run(tmp_path: Path) -> None:
    from tests.javaproc import RELEASES, java_missing

    for release in RELEASES:
        if why := java_missing(release):
            pytest.skip(why)
    data, res = _bench(tmp_path, "--java", "--java-warmup", "1s", "--java-heap", "256m",
                       *(f"--java-release={r}" for r in RELEASES), "--java-release=5.5@384m")
    targets = {r["target"]: r for r in data["results"]}
    names = [*(f"java-{r}" for r in RELEASES), "java-5.5@384m"]
    assert set(targets) == {"node", *names}
    for name in names:
        java = targets[name]
        assert java["route"]["rate"] > 0 and java["errors"] == 0, java
        assert set(java["route"]["codes"]) == {"0"}, java
        assert _ratio(data, name) > 0
        assert f"x {name}" in res.stderr


@pytest.mark.java
def test_bench_measures_the_rust_namesrv_in_the_same_run(tmp_path: Path) -> None:
    """Only where ``pynamesrv peer install --rust`` ran: it compiles for minutes."""
    from cluster.peers import rust

    if why := rust.missing():
        pytest.skip(why)
    data, _ = _bench(tmp_path, "--rust")
    targets = {r["target"]: r for r in data["results"]}
    assert targets["rust"]["route"]["rate"] > 0 and targets["rust"]["errors"] == 0
    assert set(targets["rust"]["route"]["codes"]) == {"0"}  # it took the brokers' bodies
    assert _ratio(data, "rust") > 0
