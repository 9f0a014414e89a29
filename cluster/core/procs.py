"""Process plumbing shared by every long-lived process: parent-death signal, name, liveness."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_PR_SET_CHILD_SUBREAPER = 36
ARG_START_FIELD, ARG_END_FIELD = 48, 49  # of /proc/PID/stat (proc(5)), since Linux 3.5


def _prctl(option: int, arg: int | ctypes.c_char_p) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    return int(libc.prctl(option, arg, 0, 0, 0))


def python_module(module: str, python: str = sys.executable) -> list[str]:
    """The command line that runs ``module`` with ``python`` without the working directory
    on the module path (``-P``; the worker processes it spawns inherit the flag): a file
    planted there, such as an ``lmdb.py`` in a node's data dir, is never imported."""
    return [python, "-P", "-m", module]


def set_process_name(name: str) -> None:
    """Set the kernel's short process name (``ps -o comm``, psutil ``name()``), 15 bytes max."""
    if sys.platform.startswith("linux"):
        _prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]))


def set_command_line(argv: Sequence[str]) -> None:
    """Show ``argv`` as this process's command line (``ps``, ``/proc/PID/cmdline``, psutil),
    as setproctitle(3) does: written over the process's own argument strings, cut to their
    length, its last byte left non-NUL so the kernel reads the line up to its first NUL.
    A process that needs room for a longer line is started with a blank argument (the
    supervisor's node launcher, ``worker.controller.launcher``)."""
    if not sys.platform.startswith("linux"):
        return
    stat = Path("/proc/self/stat").read_bytes()
    fields = stat[stat.rfind(b")") + 2:].split()  # fields 3 (state) onwards
    start, end = int(fields[ARG_START_FIELD - 3]), int(fields[ARG_END_FIELD - 3])
    room = end - start
    if room < 2:
        return
    line = " ".join(argv).encode()[: room - 2]
    ctypes.memmove(start, line + b"\0" * (room - 1 - len(line)) + b" ", room)


def exit_with_parent(sig: int = signal.SIGKILL, parent: int | None = None) -> None:
    """Ask the kernel to send ``sig`` when the parent dies.

    With ``parent`` (the pid the caller expects as its parent), exit at once if
    the parent is already gone, closing the race before prctl took effect.
    """
    if sys.platform.startswith("linux") and _prctl(_PR_SET_PDEATHSIG, int(sig)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def become_subreaper() -> None:
    """Orphaned descendants of this process become its children (``PR_SET_CHILD_SUBREAPER``),
    not init's: a process forked by one of its children can be handed over to it."""
    if _prctl(_PR_SET_CHILD_SUBREAPER, 1) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def die_with_this_process() -> Callable[[], None]:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child is SIGKILLed when the caller dies."""
    parent = os.getpid()
    return lambda: exit_with_parent(parent=parent)


def alive(pid: int) -> bool:
    """True while a process ``pid`` exists (a zombie counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stopped_or_gone(pid: int) -> bool:
    """True when process ``pid`` is stopped (SIGSTOP, tracing stop), a zombie, or gone.

    A running, sleeping or CPU-starved process is none of these: it is slow, not lost.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True
    end = stat.rfind(b")")  # the command name may itself contain ") "
    return stat[end + 2 : end + 3] in (b"T", b"t", b"Z", b"X")
