"""The cluster under test as a child process (``pynamesrv up``) and the processes it spawns.

The supervisor runs in its own process group and dies with the harness
(``PR_SET_PDEATHSIG``); its nodes die with it in turn. ``ProcessTracker``
remembers every process seen under it so the run can prove none is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from cluster.core.config import ClusterConfig
from cluster.core.errors import UserError
from cluster.core.procs import die_with_this_process
from supervisor.control_client import ControlClient, ControlUnavailable

POLL_S = 0.1


def control_answers(addr: str, timeout: float = 0.5) -> bool:
    with ControlClient(addr, timeout) as c:
        try:
            c.request("status")
        except ControlUnavailable:
            return False
    return True


class ClusterProcess:
    """``python -m cluster.cli up -c FILE`` with its output in ``log_path``."""

    def __init__(self, cfg: ClusterConfig, log_path: Path) -> None:
        self.cfg = cfg
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> None:
        if control_answers(self.cfg.control):
            raise UserError(f"a cluster already answers at {self.cfg.control}; "
                            "stop it or give chaos its own cluster.yaml")
        argv = [sys.executable, "-m", "cluster.cli", "up", "-c", str(self.cfg.path)]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                process_group=0, preexec_fn=die_with_this_process())

    def exited(self) -> bool:
        return self.proc is None or self.proc.poll() is not None

    def wait_ready(self, control: ControlClient, answers: Callable[[str], bool],
                   timeout_s: float) -> float:
        """Wait until every node is running and answers; returns how long it took."""
        start = time.monotonic()
        names = [n.name for n in self.cfg.nodes]
        while True:
            if self.exited():
                raise UserError(f"the cluster exited during start-up; see {self.log_path}")
            if self._all_running(control) and all(answers(n) for n in names):
                return round(time.monotonic() - start, 3)
            if time.monotonic() - start > timeout_s:
                raise UserError(f"the cluster was not ready within {timeout_s:g}s; "
                                f"see {self.log_path}")
            time.sleep(POLL_S)

    @staticmethod
    def _all_running(control: ControlClient) -> bool:
        try:
            return all(n["state"] == "running" for n in control.status())
        except ControlUnavailable:
            return False

    def shutdown(self, control: ControlClient, grace_s: float) -> str:
        """Stop the cluster: control ``shutdown``, then SIGTERM, then SIGKILL the group."""
        if self.proc is None or self.exited():
            return "not running"
        with contextlib.suppress(UserError):
            control.shutdown()
        if self._wait_exit(grace_s):
            return "shutdown"
        self._signal(signal.SIGTERM)
        if self._wait_exit(5.0):
            return "terminated"
        self._signal(signal.SIGKILL)
        self._wait_exit(5.0)
        return "killed"

    def _signal(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def _wait_exit(self, timeout_s: float) -> bool:
        assert self.proc is not None
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True


class ProcessTracker:
    """Every process seen under a root pid, identified by (pid, create_time)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[int, float], str] = {}

    def sample(self, root_pid: int) -> None:
        try:
            root = psutil.Process(root_pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        for p in procs:
            with contextlib.suppress(psutil.Error):
                self.seen.setdefault((p.pid, p.create_time()), p.name())

    def alive(self) -> list[dict[str, Any]]:
        out = []
        for (pid, created), name in sorted(self.seen.items()):
            try:
                p = psutil.Process(pid)
                if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                    out.append({"pid": pid, "name": name})
            except psutil.Error:
                continue
        return out

    def wait_gone(self, timeout_s: float) -> list[dict[str, Any]]:
        """Poll until no tracked process is alive; the survivors at the deadline."""
        deadline = time.monotonic() + timeout_s
        while (left := self.alive()) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        return left

    def kill_survivors(self) -> None:
        for rec in self.alive():
            with contextlib.suppress(psutil.Error, OSError):
                psutil.Process(rec["pid"]).kill()
