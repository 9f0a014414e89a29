"""Process plumbing: stale per-node directories of dead nodes are swept, live ones kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from worker.procs import TRIM_AFTER_BYTES, TRIM_AFTER_WORK_S, Trim, sweep_stale


def test_sweep_removes_only_directories_of_dead_pids(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    (tmp_path / f"n1-9876-{dead.stdout.strip()}").mkdir()
    (tmp_path / f"n1-9877-{os.getpid()}").mkdir()
    (tmp_path / "unrelated").mkdir()
    assert sweep_stale(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"n1-9877-{os.getpid()}", "unrelated"])


def test_sweep_of_a_missing_base_is_a_no_op(tmp_path: Path) -> None:
    assert sweep_stale(tmp_path / "absent") == 0


def test_heap_pages_go_back_after_large_work_at_most_once_a_period() -> None:
    now = [100.0]
    trims: list[float] = []
    trim = Trim(lambda: now[0], lambda: trims.append(now[0]))
    trim.after(TRIM_AFTER_BYTES - 1)  # a batch of route lookups: nothing to give back
    assert trims == []
    trim.after(TRIM_AFTER_BYTES)
    assert trims == [100.0]
    now[0] += TRIM_AFTER_WORK_S / 2
    trim.after(10 * TRIM_AFTER_BYTES)  # too soon
    assert trims == [100.0]
    now[0] = 100.0 + TRIM_AFTER_WORK_S
    trim.after(TRIM_AFTER_BYTES)
    assert trims == [100.0, 100.0 + TRIM_AFTER_WORK_S]
