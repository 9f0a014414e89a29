"""Spawn a child in its own process group, watch it with a pidfd, signal and reap it.

The child gets ``PR_SET_PDEATHSIG`` (SIGKILL) before exec, so it dies with the
supervisor even when the supervisor is SIGKILLed. The group is signalled as a
whole: a node's workers share its process group.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cluster.core.procs import die_with_this_process


@dataclass
class Proc:
    pid: int
    pgid: int
    pidfd: int
    stdout_fd: int | None
    popen: subprocess.Popen[bytes] | None  # None: forked by the node launcher


def spawn(argv: Sequence[str], cwd: Path, log_path: Path, env: dict[str, str]) -> Proc:
    """Start ``argv`` as the leader of a new process group; stderr goes to ``log_path``."""
    with open(log_path, "ab", buffering=0) as log:
        popen = subprocess.Popen(
            list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=log, close_fds=True,
            process_group=0, preexec_fn=die_with_this_process())
    assert popen.stdout is not None
    fd = popen.stdout.fileno()
    os.set_blocking(fd, False)
    return Proc(popen.pid, popen.pid, os.pidfd_open(popen.pid), fd, popen)


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a whole process group; False if the group no longer exists."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    return True


def reap(proc: Proc) -> str:
    """Collect an exited child (its pidfd is readable) and describe how it ended.

    The rest of its process group is SIGKILLed first, while the zombie still
    holds the group id, so no stray worker survives its controller.
    """
    signal_group(proc.pgid, signal.SIGKILL)
    try:
        _, status = os.waitpid(proc.pid, 0)
    except ChildProcessError:
        status = -1
    if proc.popen is not None:  # so that subprocess never waits for it again
        proc.popen.returncode = 0 if status == -1 else os.waitstatus_to_exitcode(status)
    close_proc(proc)
    return describe_status(status)


def close_proc(proc: Proc) -> None:
    if proc.pidfd >= 0:
        os.close(proc.pidfd)
        proc.pidfd = -1
    close_stdout(proc)


def close_stdout(proc: Proc) -> None:
    if proc.popen is None:
        if proc.stdout_fd is not None:
            os.close(proc.stdout_fd)
    elif proc.popen.stdout is not None:
        proc.popen.stdout.close()
    proc.stdout_fd = None


def reap_strays(keep: set[int]) -> list[int]:
    """Reap the children that ended and are none of ``keep`` (the pids watched elsewhere):
    processes a node left behind (its zygote, its workers), which its death hands over to
    this process when it is a child subreaper. Returns their pids."""
    reaped: list[int] = []
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return reaped
        if info is None or info.si_pid in keep:  # a watched child: its own handler reaps it
            return reaped
        os.waitpid(info.si_pid, 0)
        reaped.append(info.si_pid)


def describe_status(status: int) -> str:
    if status == -1:
        return "exit status lost"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(sig).name}"
        except ValueError:
            return f"killed by signal {sig}"
    return f"exit code {os.WEXITSTATUS(status)}"


def read_available(fd: int, limit: int = 65536) -> bytes | None:
    """Read what is there without blocking; None at end of file."""
    try:
        data = os.read(fd, limit)
    except BlockingIOError:
        return b""
    return data or None
