"""Process plumbing: stale per-node directories of dead nodes are swept, live ones kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from worker.procs import sweep_stale


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
