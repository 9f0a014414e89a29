"""The audit on a real Spark standalone cluster gives the same verdict and report as local[2]."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from pyspark.sql import SparkSession

from cluster.cli.main import main
from tests.conftest import Reaper
from tests.nodeproc import ROOT
from tests.spark.standalone import SparkStandalone
from tests.spark.test_audit_job import healthy, write_collection

pytestmark = pytest.mark.spark

AUDIT_TIMEOUT_S = 240.0
# Report fields that depend on where and when the job ran.
VOLATILE = ("timings", "source", "generated_at")


@pytest.fixture
def standalone(tmp_path: Path, reaper: Reaper) -> Iterator[SparkStandalone]:
    cluster = SparkStandalone(tmp_path / "spark")
    reaper.track_marker(str(cluster.workdir))
    try:
        cluster.start()
        for proc in cluster.procs:
            reaper.track_pgid(proc.pid)
        yield cluster
    finally:
        cluster.stop()


def stable(report: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in report.items() if k not in VOLATILE}


def test_audit_on_a_standalone_cluster_matches_local(
        standalone: SparkStandalone, spark: SparkSession, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = write_collection(tmp_path / "collection", healthy())
    local_dir, remote_dir = tmp_path / "local", tmp_path / "remote"
    assert main(["audit", "run", str(data), "--report-dir", str(local_dir)]) == 0
    local_text = capsys.readouterr().out

    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [sys.executable, "-m", "cluster.cli", "audit", "run", str(data), "--master",
         standalone.master_url, "--report-dir", str(remote_dir)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=AUDIT_TIMEOUT_S,
        stdin=subprocess.DEVNULL, start_new_session=True)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:] + standalone.logs()[-3000:]
    assert re.search(r"^spark: \d+ stages done$", done.stderr, re.M)  # progress, off a terminal

    local = orjson.loads((local_dir / "audit-report.json").read_bytes())
    remote = orjson.loads((remote_dir / "audit-report.json").read_bytes())
    assert stable(remote) == stable(local)
    assert remote["verdict"]["holds"] is True
    verdict = [line for line in local_text.splitlines() if line.startswith("verdict:")]
    assert verdict and verdict[0] in done.stdout.splitlines()
    # the executors ran on the worker, not in the driver
    assert "Launching executor" in standalone.logs() or "Asked to launch executor" in \
        standalone.logs()
