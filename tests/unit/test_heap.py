"""Workers reuse freed heap memory for large messages instead of faulting in fresh pages."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

from worker.controller.zygote import Zygote

ROUNDS, BLOCKS, SIZE = 20, 4, 2 << 20  # four 2 MB replies at once, twenty times
PAGES = ROUNDS * BLOCKS * SIZE // resource.getpagesize()


def churn() -> int:
    """Minor page faults of allocating and freeing BLOCKS blocks of SIZE, ROUNDS times."""
    blocks = [b"x" * SIZE for _ in range(BLOCKS)]  # the first round may fault
    del blocks
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(ROUNDS):
        blocks = [b"x" * SIZE for _ in range(BLOCKS)]
        del blocks
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def _in_fresh_interpreter(keep: bool) -> int:
    keep_it = "from worker.heap import keep_heap; assert keep_heap(); " if keep else ""
    code = f"{keep_it}from tests.unit.test_heap import churn; print(churn())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parents[2])
    return int(out.stdout)


def test_glibc_defaults_fault_every_page_of_large_blocks_again() -> None:
    # what keep_heap is for: without it, the heap's top is given back and faulted in again
    assert _in_fresh_interpreter(keep=False) > PAGES // 2


def test_keep_heap_reuses_freed_blocks() -> None:
    assert _in_fresh_interpreter(keep=True) < PAGES // 20


def _churn_to(path: str) -> None:
    Path(path).write_text(str(churn()))


def test_workers_forked_by_the_zygote_keep_their_heap(tmp_path: Path) -> None:
    out = tmp_path / "faults"
    zygote = Zygote.start({"churn": _churn_to})
    try:
        pid = zygote.spawn("churn", str(out))
        assert zygote.exit_code(pid, timeout=30.0) == 0
    finally:
        zygote.close()
    assert int(out.read_text()) < PAGES // 20
