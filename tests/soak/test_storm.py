"""The registration storm (rmqload ``mixed``): the niced write worker is busy and starved of
CPU, never declared lost; the node never aborts; every request is answered.

Short form in every full run; ``--soak-seconds 600`` gives the 10-minute storm soak.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.bench.runner import find_rmqload, run_rmqload
from cluster.bench.workloads import WORKLOADS
from tests.nodeproc import NodeProcess

pytestmark = pytest.mark.soak


def test_storm_loses_no_business_worker(tmp_path: Path, soak_seconds: float) -> None:
    node = NodeProcess(tmp_path / "n").start()
    try:
        pid = node.proc.pid if node.proc else 0
        workers = {p.pid for p in node.children()}
        result = run_rmqload(find_rmqload(None), WORKLOADS["mixed"], node.addr, "2s",
                             f"{int(soak_seconds)}s")
        assert node.proc is not None and node.proc.poll() is None, "node died under the storm"
        assert {p.pid for p in node.children()} == workers, "a worker was restarted"
    finally:
        err = node.stop()
    assert pid
    assert result["errors"] == 0, result
    reads, regs = result["route"], result["register"]
    assert reads["responses"] > 0 and reads["validation"]["lost"] == 0, reads
    assert regs["regs_per_s"] > 0 and set(regs["codes"]) == {"0"}, regs
    assert set(reads["codes"]) <= {"0", "17"}, reads["codes"]
    assert "business_worker_lost" not in err, err[-3000:]
    assert "Assertion failed" not in err and "Traceback" not in err, err[-3000:]
