"""One Spark session for the audits of a test session, instead of a JVM per audit.

``python -m tests.chaos.audit_worker`` starts the audit's default local session,
then reads one JSON list of ``pynamesrv`` arguments per line on stdin, runs that
command in-process (``audit run`` uses the active session and leaves it running)
and answers one JSON line ``{"code": ..., "output": ...}`` (the command's stdout;
its stderr is the worker's). ``AuditWorker`` is the chaos runs' ``AuditJob`` on
such a worker: the same command and report code as ``pynamesrv audit run``.
"""

from __future__ import annotations

import contextlib
import io
import os
import selectors
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

import orjson

from tests.conftest import Reaper

ROOT = Path(__file__).resolve().parents[2]
STOP_S = 15.0


def serve() -> None:
    from cluster.audit.session import build_session
    from cluster.cli.main import main

    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else written to fd 1 (the JVM's) stays off the answers
    spark = build_session()
    for line in sys.stdin:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            try:
                code = main(orjson.loads(line))
            except SystemExit as exc:  # argparse
                code = exc.code if isinstance(exc.code, int) else 2
            except Exception:  # as a process of its own would: the traceback, exit code 1
                traceback.print_exc(file=out)
                code = 1
        answers.write(orjson.dumps({"code": code, "output": out.getvalue()}) + b"\n")
        answers.flush()
    spark.stop()


class AuditWorker:
    """Starts the worker at once (its JVM starts while a scenario runs) and again after
    it died or timed out; ``__call__`` is an ``AuditJob``."""

    def __init__(self, reaper: Reaper, log: Path) -> None:
        self.reaper = reaper
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = self.reaper.spawn(
                [sys.executable, "-m", "tests.chaos.audit_worker"], cwd=ROOT,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)

    def __call__(self, args: Sequence[str], timeout_s: float) -> tuple[int | None, str]:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(list(args)) + b"\n")
        self.proc.stdin.flush()
        line = self._answer(timeout_s)
        if line is None:
            self.kill()
            return None, f"no answer from the audit worker; see {self.log}"
        if not line:
            return self.proc.wait(), f"the audit worker exited; see {self.log}"
        doc = orjson.loads(line)
        return int(doc["code"]), str(doc["output"])

    def _answer(self, timeout_s: float) -> bytes | None:
        """The next answer line (b"" at EOF), or None when none came within ``timeout_s``."""
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while not sel.select(max(0.0, deadline - time.monotonic())):
                if time.monotonic() >= deadline:
                    return None
        return self.proc.stdout.readline()

    def kill(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        """Close its stdin (the session stops, the worker exits); kill it if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            self.kill()


if __name__ == "__main__":
    serve()
