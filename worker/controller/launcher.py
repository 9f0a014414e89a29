"""``python -P -m worker.controller.launcher``: the supervisor's node launcher.

Each node started as an interpreter of its own imports the whole node (about 0.35 s of
CPU); three nodes starting at once on two cores spent most of ``pynamesrv up``'s start-up
on it. The supervisor starts this process once; it imports the node, then forks every node
the supervisor asks for: a node is a fork of an interpreter that imported everything
already and opened nothing, as a worker is a fork of its node's zygote.

A launched node must be what a node started by ``exec`` is: the supervisor's child (it
reaps it, and the node dies with the supervisor, not with the launcher), the leader of
its own process group, with the stdout, stderr, working directory and environment the
supervisor gave. So the launcher forks an intermediate process that forks the node and
exits at once: the orphaned node is handed to the supervisor, a child subreaper
(``PR_SET_CHILD_SUBREAPER``). The node waits for that before it sets its parent-death
signal and runs ``worker.controller.main`` with the request's arguments.

Its stdin is one end of a ``SOCK_SEQPACKET`` socket pair (``cluster.core.launch_wire``);
it ends when the supervisor closes the other end, and dies with the supervisor.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Sequence
from typing import Any

from cluster.core import launch_wire
from cluster.core.procs import (
    exit_with_parent,
    python_module,
    set_command_line,
    set_process_name,
)
from worker import compiled

NODE_MODULE = "worker.controller"
LAUNCHER_MODULE = "worker.controller.launcher"
HANDOVER_S = 5.0  # how long a node waits to become the supervisor's child


def node_args(argv: Sequence[str]) -> list[str] | None:
    """The node's own arguments of a node command line (``python -P -m worker.controller
    ARGS``, ``cluster.core.procs.python_module``); None for any other command."""
    prefix = python_module(NODE_MODULE, sys.executable)
    if list(argv[: len(prefix)]) != prefix:
        return None
    return list(argv[len(prefix):])


def main() -> int:
    compiled.install()  # before the node is imported (worker.compiled)
    from worker.controller import controller  # noqa: F401 - imported once, for every node

    set_process_name("pns-launcher")
    set_command_line(python_module(LAUNCHER_MODULE, sys.executable))
    supervisor = os.getppid()
    exit_with_parent(signal.SIGKILL, parent=supervisor)
    sock = socket.socket(fileno=os.dup(0))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # a node's stdin, as procs.spawn gives it
    os.close(devnull)
    while True:
        got = launch_wire.recv(sock)
        if got is None:
            return 0  # the supervisor closed its end
        msg, fds = got
        try:
            reply = _launch(msg, fds, supervisor, sock)
        except OSError as exc:
            reply = {"error": f"cannot fork the node: {exc.strerror or exc}"}
        finally:
            for fd in fds:
                os.close(fd)
        launch_wire.send(sock, reply)


def _launch(msg: dict[str, Any], fds: list[int], supervisor: int,
            sock: socket.socket) -> dict[str, Any]:
    args = node_args(msg.get("argv") or [])
    if args is None or len(fds) != 2:
        return {"error": "not a node command line with its stdout and stderr"}
    pid_r, pid_w = os.pipe()
    middle = os.fork()
    if middle == 0:  # pragma: no cover - the intermediate process
        os.close(pid_r)
        _intermediate(pid_w, msg, args, fds, supervisor, sock)
    os.close(pid_w)
    try:
        data = b""
        while chunk := os.read(pid_r, 64):
            data += chunk
    finally:
        os.close(pid_r)
        os.waitpid(middle, 0)  # once it is reaped, the node is the supervisor's child
    if not data:
        return {"error": "the node could not be forked"}
    return {"pid": int(data)}


def _intermediate(pid_w: int, msg: dict[str, Any], args: list[str], fds: list[int],
                  supervisor: int, sock: socket.socket) -> None:  # pragma: no cover
    try:
        middle = os.getpid()
        node = os.fork()
        if node == 0:
            os.close(pid_w)
            _node(msg, args, fds, supervisor, middle, sock)
        os.write(pid_w, str(node).encode())
    finally:
        os._exit(0)


def _node(msg: dict[str, Any], args: list[str], fds: list[int], supervisor: int,
          middle: int, sock: socket.socket) -> None:  # pragma: no cover - the node
    code = 1
    try:
        os.setpgid(0, 0)
        set_command_line(msg["argv"])
        _handed_over(supervisor, middle)
        exit_with_parent(signal.SIGKILL, parent=supervisor)  # as procs.spawn's children
        sock.close()
        os.dup2(fds[0], 1)
        os.dup2(fds[1], 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.chdir(msg["cwd"])
        os.environ.clear()
        os.environ.update(msg.get("env") or {})
        from worker.controller import controller

        sys.argv = [controller.__file__, *args]
        code = controller.main(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - as an interpreter would: print and exit 1
        traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _handed_over(supervisor: int, middle: int) -> None:  # pragma: no cover - the node
    """Wait until the intermediate process is gone and this one the supervisor's child."""
    deadline = time.monotonic() + HANDOVER_S
    while os.getppid() == middle and time.monotonic() < deadline:
        time.sleep(0.0005)
    if os.getppid() != supervisor:
        os._exit(1)


if __name__ == "__main__":
    sys.exit(main())
