"""Test support: run real node processes on free loopback ports and talk to them."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, TypeVar

import psutil

from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.frame import FrameReader, decode_command, encode_command

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[1]
PYNAMESRV = str(Path(sys.executable).with_name("pynamesrv"))  # the installed entry point


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports."""
    ports: list[int] = []
    while len(ports) < n:
        if (p := free_port()) not in ports:
            ports.append(p)
    return ports


def poll_until(fn: Callable[[], T], timeout: float = 10.0, interval: float = 0.02,
               what: str = "condition") -> T:
    """Call ``fn`` until it returns a truthy value; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: T = fn()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
        last = fn()
    return last


def gone(proc: psutil.Process) -> bool:
    """Exited: no such process, or a zombie its parent has not reaped yet (a node's
    worker or resource tracker whose node has exited waits for init to reap it)."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def start_all(nodes: Iterable[NodeProcess], timeout: float = 30.0) -> list[NodeProcess]:
    """Start several nodes at once (they boot side by side); every one is stopped when
    one fails to boot."""
    nodes = list(nodes)
    for n in nodes:
        n.launch()
    try:
        for n in nodes:
            n.wait_boot(timeout)
    except BaseException:
        stop_all(nodes)
        raise
    return nodes


def stop_all(nodes: Iterable[NodeProcess]) -> list[str]:
    """Stop several nodes at once (SIGTERM to all, then each is reaped); their stderr."""
    nodes = list(nodes)
    kids = [n.begin_stop() for n in nodes]
    return [n.finish_stop(k) for n, k in zip(nodes, kids, strict=True)]


def _name(proc: psutil.Process) -> str:
    try:
        return proc.name()
    except psutil.NoSuchProcess:  # exited between the listing and the read
        return ""


# The release a test node follows unless its settings say otherwise. A node follows 5.5.0 by
# default; these tests check its mechanics (processes, limits, ACL, restarts, metrics) with
# the answers of 4.9.8, which the golden recordings hold and whose registrations take a
# single topic (5.x refuses one before the broker's first full registration). 5.x answers are
# checked against the real Java 5.5.0 in tests/java_diff and tests/interop.
TEST_RELEASE = "4.9.8"


class NodeProcess:
    """One ``python -m worker.controller`` process; ``stop()`` always reaps it and its workers."""

    def __init__(self, data_dir: Path, port: int | None = None, name: str = "t",
                 props: dict[str, str] | None = None) -> None:
        self.port = port or free_port()
        self.data_dir = data_dir
        self.name = name
        self.config = data_dir / "namesrv.properties"
        data_dir.mkdir(parents=True, exist_ok=True)
        if props is not None or not self.config.exists():
            settings = {"rocketmqVersion": TEST_RELEASE, **(props or {})}
            lines = [f"{k}={v}" for k, v in settings.items()]
            self.config.write_text("\n".join(lines) + "\n")
        self.proc: subprocess.Popen[str] | None = None
        self.err_file: IO[bytes] | None = None  # its stderr while it runs: ``log()``
        self.boot_line = ""
        self.stopped_err = ""

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "worker.controller", "--exit-with-parent",
                "--port", str(self.port),
                "--data-dir", str(self.data_dir), "--config", str(self.config),
                "--name", self.name]

    def start(self, timeout: float = 30.0) -> NodeProcess:
        self.launch()
        return self.wait_boot(timeout)

    def launch(self) -> None:
        """Start the process; ``wait_boot`` waits for its boot line. Its stderr goes to an
        unnamed temporary file, not a pipe: nothing reads it while the node runs (``log()``
        does on demand), and a node that logged more than a pipe holds would block."""
        self.err_file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by finish_stop
        self.proc = subprocess.Popen(self.argv(), cwd=ROOT, stdout=subprocess.PIPE,
                                     stderr=self.err_file, text=True,
                                     start_new_session=True)

    def log(self) -> str:
        """What the node wrote to stderr so far (all of it once it stopped)."""
        if self.err_file is None:
            return self.stopped_err
        fd = self.err_file.fileno()
        return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")

    def wait_boot(self, timeout: float = 30.0) -> NodeProcess:
        assert self.proc is not None and self.proc.stdout is not None
        line = _readline_with_deadline(self.proc, timeout)
        if "boot success" not in line:
            err = self.stop()
            raise AssertionError(f"node did not boot: {line!r} {err}")
        self.boot_line = line
        return self

    def children(self) -> list[psutil.Process]:
        assert self.proc is not None
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def workers(self, kind: str) -> list[psutil.Process]:
        """Live worker processes of one kind: "io" or "biz" (one that exits while being
        listed is left out)."""
        return [c for c in self.children() if _name(c).startswith(f"pns-{kind}-")]

    def terminate(self, timeout: float = 20.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def stop(self) -> str:
        """Kill the whole process group, reap, return stderr (again on later calls)."""
        return self.finish_stop(self.begin_stop())

    def _stopped(self) -> bool:
        return self.proc is None or self.err_file is None

    def begin_stop(self) -> list[psutil.Process]:
        """SIGTERM (unless stopped already); the workers to reap in ``finish_stop``."""
        if self._stopped():
            return []
        assert self.proc is not None
        kids = self.children()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return kids

    def finish_stop(self, kids: list[psutil.Process]) -> str:
        """Wait for the node (SIGKILL to its group after 10 s) and ``kids``; its stderr."""
        if self._stopped():
            return self.stopped_err
        assert self.proc is not None
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        for k in kids:
            if not gone(k):
                with contextlib.suppress(psutil.NoSuchProcess):
                    k.kill()
        deadline = time.monotonic() + 5
        while not all(map(gone, kids)) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.stopped_err = self.log()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if self.err_file is not None:
            self.err_file.close()
            self.err_file = None
        return self.stopped_err


class ShellStartedNode:
    """A node started the way users start one by hand: ``pynamesrv node ... &`` from a shell
    that exits at once. Its output goes to ``DATA/node.log``; ``stop()`` always reaps it."""

    def __init__(self, data_dir: Path, port: int | None = None, *extra: str,
                 cwd: Path | None = None) -> None:
        self.port = port or free_port()
        self.data_dir = data_dir
        self.log = data_dir / "node.log"
        self.extra = extra
        self.cwd = cwd  # where the shell runs the command (default: this process's)
        self.pid = 0
        self.pgid = 0

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> ShellStartedNode:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        words = [PYNAMESRV, "node", "--port", str(self.port), "--data-dir", str(self.data_dir),
                 *self.extra]
        command = " ".join(shlex.quote(w) for w in words)
        script = f"{command} > {shlex.quote(str(self.log))} 2>&1 & echo $!"
        shell = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                               timeout=30, start_new_session=True, check=True, cwd=self.cwd)
        self.pid = int(shell.stdout.strip())  # the shell has exited; the node is an orphan now
        self.pgid = os.getpgid(self.pid)
        poll_until(self._booted, timeout=timeout, what=f"boot line in {self.log}")
        return self

    def _booted(self) -> bool:
        if not self.alive():
            raise AssertionError(f"node exited during start-up:\n{self.output()}")
        return "boot success" in self.output()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def alive(self) -> bool:
        try:
            return psutil.Process(self.pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    def stop(self) -> None:
        """SIGTERM, then SIGKILL for the whole group after a grace period."""
        if not self.pid:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        with contextlib.suppress(AssertionError):  # then killed below
            poll_until(lambda: not self.alive(), timeout=15, what="node exit")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pgid, signal.SIGKILL)
        poll_until(lambda: not self.alive(), timeout=10, what="node killed")


def _readline_with_deadline(proc: subprocess.Popen[str], timeout: float) -> str:
    import selectors

    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    ready = sel.select(timeout)
    sel.close()
    return proc.stdout.readline() if ready else ""


class Conn:
    """A blocking remoting connection for tests: send commands, read replies."""

    def __init__(self, addr: str, timeout: float = 5.0) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.reader = FrameReader()
        self.frames: list[bytes] = []
        self._opaque = 0

    def send(self, cmd: RemotingCommand) -> int:
        if not cmd.opaque:
            self._opaque += 1
            cmd.opaque = self._opaque
        self.sock.sendall(encode_command(cmd))
        return cmd.opaque

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self) -> RemotingCommand:
        while not self.frames:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("connection closed by the node")
            self.frames.extend(self.reader.feed(data))
        return decode_command(self.frames.pop(0))

    def call(self, cmd: RemotingCommand) -> RemotingCommand:
        opaque = self.send(cmd)
        reply = self.recv()
        assert reply.opaque == opaque, (reply.opaque, opaque)
        return reply

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1 << 16) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()
