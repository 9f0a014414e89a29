"""A short run of the fuzz harness (``python -m tests.fuzz.run``); the long run is by hand."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.fuzz import run
from tests.fuzz.targets import Escaped, guard, run_input, seed_inputs

ROOT = Path(__file__).resolve().parents[2]
SMOKE_INPUTS = 20_000


def test_smoke_run_has_no_crash(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.run", "--inputs", str(SMOKE_INPUTS), "--seed", "7",
         "--keep", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=240)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr[-3000:]
    assert f"inputs run: {SMOKE_INPUTS}\n" in out, out
    assert "crashes: 0 (0 distinct)" in out, out
    if run.have_atheris():
        m = re.search(r"coverage: cov (\d+) edges, ft (\d+) features", out)
        assert m and int(m[1]) > 100, out  # the codec was instrumented and reached
    assert len(list((tmp_path / "corpus").iterdir())) >= len(seed_inputs()) // 2


def test_a_crash_is_counted_and_fails_the_run(tmp_path: Path) -> None:
    def leaky() -> None:
        raise KeyError("missing")

    crashes = run.CrashLog(tmp_path)
    for data in (b"\x01a", b"\x01b"):
        try:
            guard("decoder", (ValueError,), leaky)
        except Escaped as exc:
            crashes.record(data, exc.exc)
    summary = run.Summary("test", 1, 0, inputs=2, finished=True)
    run._count_crashes(summary, tmp_path)
    assert summary.crashes == 2 and len(summary.signatures) == 1
    assert not summary.ok
    assert "input: 0161" in summary.examples[0] and "KeyError" in summary.examples[0]
    assert "crashes: 2 (1 distinct)" in summary.lines()


def test_every_seed_input_passes() -> None:
    for data in seed_inputs():
        run_input(data)
