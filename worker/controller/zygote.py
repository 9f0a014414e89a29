"""The process the node's workers are forked from.

A fresh interpreter per worker (``spawn``) imported the whole node again in every worker:
about 0.45 s of CPU each, most of a node's start-up (three nodes starting together on two
cores waited seconds for it). The controller forks this process once, after its imports and
before it opens the store or ZeroMQ (neither survives a fork), and asks it for each worker,
first start or restart: the worker is a fork of an interpreter that has imported everything
already and opened nothing.

The zygote dies with the controller (``PR_SET_PDEATHSIG``, and the end of its request pipe)
and the workers with the zygote, so no worker outlives its node. It ignores SIGINT and
SIGTERM (the controller stops the workers in its own order), reaps the workers and reports
each exit status. Messages on the pipes are length-prefixed pickles: requests
``(kind, config)``, replies ``("pid", pid)`` and ``("exit", pid, code)``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import pickle
import select
import signal
import struct
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from cluster.core.procs import exit_with_parent, set_process_name
from worker.heap import keep_heap

_LEN = struct.Struct(">I")
Target = Callable[[Any], None]


class ZygoteGone(Exception):
    """The zygote died: no worker can be started any more."""


def _write(fd: int, msg: object) -> None:
    data = pickle.dumps(msg)
    os.write(fd, _LEN.pack(len(data)) + data)  # a pipe write this short is atomic


def _read_exact(fd: int, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _read(fd: int) -> Any:
    (n,) = _LEN.unpack(_read_exact(fd, _LEN.size))
    return pickle.loads(_read_exact(fd, n))


class Zygote:
    """The controller's side: ``spawn`` a worker, learn its ``exit_code``."""

    def __init__(self, pid: int, requests: int, replies: int) -> None:
        self.pid = pid
        self._requests = requests
        self._replies = replies
        self._exits: dict[int, int] = {}

    @classmethod
    def start(cls, targets: dict[str, Target], close: tuple[int, ...] = ()) -> Zygote:
        """Fork the zygote now; ``close``: descriptors of the controller it must not hold."""
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the forked process
            os.close(req_w)
            os.close(rep_r)
            for fd in close:
                os.close(fd)
            _serve(req_r, rep_w, targets, parent)
        os.close(req_r)
        os.close(rep_w)
        return cls(pid, req_w, rep_r)

    def spawn(self, kind: str, config: Any) -> int:
        """Fork a worker running ``targets[kind](config)``; its pid."""
        try:
            _write(self._requests, (kind, config))
            while True:
                msg = _read(self._replies)
                if msg[0] == "pid":
                    return int(msg[1])
                self._exits[msg[1]] = msg[2]
        except (OSError, EOFError) as exc:
            raise ZygoteGone(f"the worker zygote is gone: {exc}") from None

    def exit_code(self, pid: int, timeout: float = 1.0) -> int:
        """The exit code of a worker that ended (-signal when a signal ended it), or -1 when
        the zygote did not say within ``timeout``."""
        deadline = time.monotonic() + timeout
        while pid not in self._exits:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._replies], [], [], left)[0]:
                return -1
            try:
                msg = _read(self._replies)
            except (OSError, EOFError):
                return -1
            if msg[0] == "exit":
                self._exits[msg[1]] = msg[2]
        return self._exits.pop(pid)

    def close(self) -> None:
        """End the zygote (and with it any worker still running)."""
        for fd in (self._requests, self._replies):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def _serve(requests: int, replies: int, targets: dict[str, Target],
           parent: int) -> None:  # pragma: no cover - runs in the forked process
    code = 0
    try:
        exit_with_parent(parent=parent)
        set_process_name("pns-zygote")
        keep_heap()  # for every worker forked from here
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        _loop(requests, replies, wake_r, targets)
    except BaseException:  # noqa: BLE001 - the zygote reports and ends
        traceback.print_exc()
        code = 1
    os._exit(code)


def _loop(requests: int, replies: int, wake: int,
          targets: dict[str, Target]) -> None:  # pragma: no cover - runs in the zygote
    while True:
        ready = select.select([requests, wake], [], [])[0]
        if wake in ready:
            os.read(wake, 4096)
        _reap(replies)
        if requests in ready:
            try:
                kind, config = _read(requests)
            except EOFError:
                return  # the controller is gone
            _write(replies, ("pid", _fork(kind, config, targets, (requests, replies, wake))))


def _reap(replies: int) -> None:  # pragma: no cover - runs in the zygote
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _write(replies, ("exit", pid, os.waitstatus_to_exitcode(status)))


def _fork(kind: str, config: Any, targets: dict[str, Target],
          fds: tuple[int, ...]) -> int:  # pragma: no cover - runs in the zygote
    if dataclasses.is_dataclass(config) and not isinstance(config, type) \
            and hasattr(config, "parent"):
        config = dataclasses.replace(config, parent=os.getpid())  # the worker's parent is here
    pid = os.fork()
    if pid:
        return pid
    code = 0
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        for fd in fds:
            os.close(fd)
        logging.root.handlers.clear()  # the worker configures its own
        targets[kind](config)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - as a spawned process would, print and exit 1
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
