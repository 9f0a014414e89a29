"""The supervisor's side of the node launcher (``worker.controller.launcher``).

The launcher imports the node once and forks every node the supervisor starts, first
starts and restarts alike; the forked node is handed over to the supervisor (a child
subreaper), so it is watched, signalled and reaped as a node started by ``exec`` is
(``procs.spawn``). Whenever the launcher cannot start a node (it is gone, it refused, it
did not answer in time), ``spawn`` returns None and the caller starts the node by
``exec`` as before: the launcher saves start-up time, it is never needed.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Sequence
from pathlib import Path

from cluster.core import launch_wire
from cluster.core.procs import become_subreaper, die_with_this_process, python_module
from supervisor import procs

LAUNCHER_MODULE = "worker.controller.launcher"
# a node is forked within milliseconds; the first request also waits for the launcher's
# imports (a second or two on a loaded machine)
REPLY_TIMEOUT_S = 10.0
# a blank argument of the launcher: the room a node forked from it has to show its own
# command line in (``worker.controller.launcher.set_command_line``)
COMMAND_LINE_ROOM = 4096


class Launcher:
    def __init__(self, popen: subprocess.Popen[bytes], sock: socket.socket) -> None:
        self.popen = popen
        self.sock: socket.socket | None = sock
        self.gone_why = ""

    @classmethod
    def start(cls, python: str, cwd: Path, log_path: Path, env: dict[str, str]) -> Launcher:
        """Start the launcher; from now on this process adopts what its children orphan."""
        become_subreaper()
        ours, theirs = launch_wire.socket_pair()
        try:
            with open(log_path, "ab", buffering=0) as log:
                popen = subprocess.Popen(
                    [*python_module(LAUNCHER_MODULE, python), " " * COMMAND_LINE_ROOM],
                    cwd=cwd, env=env, stdin=theirs.fileno(), stdout=subprocess.DEVNULL,
                    stderr=log, close_fds=True, process_group=0,
                    preexec_fn=die_with_this_process())
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.settimeout(REPLY_TIMEOUT_S)
        return cls(popen, ours)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def alive(self) -> bool:
        return self.sock is not None

    def spawn(self, argv: Sequence[str], cwd: Path, log_path: Path,
              env: dict[str, str]) -> procs.Proc | None:
        """Node ``argv`` forked by the launcher, this process's child like ``procs.spawn``'s
        (stderr to ``log_path``, stdout on a pipe); None when the launcher cannot."""
        if self.sock is None:
            return None
        out_r, out_w = os.pipe()
        try:
            with open(log_path, "ab", buffering=0) as log:
                launch_wire.send(self.sock, {"argv": list(argv), "cwd": str(cwd), "env": env},
                                 (out_w, log.fileno()))
            got = launch_wire.recv(self.sock)
        except (OSError, ValueError) as exc:  # a timeout too: the next reply would be stale
            got = None
            self._gone(f"{type(exc).__name__}: {exc}")
        finally:
            os.close(out_w)
        pid = _pid(got)
        if pid is None:
            os.close(out_r)
            if got is None and self.sock is not None:
                self._gone("it closed the connection")
            return None
        os.set_blocking(out_r, False)
        return procs.Proc(pid, pid, os.pidfd_open(pid), out_r, None)

    def poll(self) -> None:
        """Reap the launcher if it ended; it starts nothing any more."""
        if self.popen.poll() is not None and self.sock is not None:
            self._gone(f"it ended with return code {self.popen.returncode}")

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()  # the launcher ends at the end of its input
            self.sock = None
        try:
            self.popen.wait(2.0)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.popen.wait()

    def _gone(self, why: str) -> None:
        self.gone_why = why
        if self.sock is not None:
            self.sock.close()
            self.sock = None


def _pid(got: tuple[dict[str, object], list[int]] | None) -> int | None:
    if got is None:
        return None
    msg, fds = got
    for fd in fds:
        os.close(fd)
    pid = msg.get("pid")
    return pid if isinstance(pid, int) and pid > 0 else None
