"""The servers a benchmark measures, each a fresh process on a free loopback port with a
directory of its own, which can be restarted on the same port and directory.

Targets: ``node``, ``baseline`` (the fixed-response uvloop server), ``rust`` (the Rust
NameServer), ``java-<release>`` (the Java NameServer of that release with the heap of
``--java-heap``) and ``java-<release>@<heap>`` (with that heap).
"""

from __future__ import annotations

import contextlib
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from cluster.core.errors import UserError
from cluster.peers import java as peers_java
from cluster.peers import rust
from cluster.peers.catalog import release

JAVA_PREFIX = "java-"  # "java-5.5" is the Java NameServer of release 5.5
JAVA_HEAP = "4g"  # RocketMQ's bin/runserver.sh, 4.9 and 5.x alike
BOOT_S = 90.0
STOP_S = 30.0


@dataclass(frozen=True)
class Target:
    kind: str  # node, baseline, rust, java
    release: str = ""
    heap: str = ""

    @property
    def name(self) -> str:
        if self.kind != "java":
            return self.kind
        return f"{JAVA_PREFIX}{self.release}" + (f"@{self.heap}" if self.heap else "")


def parse_target(name: str) -> Target:
    """``node``, ``baseline``, ``rust``, ``java-5.5`` or ``java-5.5@512m``; UserError else."""
    if name in ("node", "baseline", "rust"):
        return Target(name)
    if name.startswith(JAVA_PREFIX):
        rel, _, heap = name.removeprefix(JAVA_PREFIX).partition("@")
        try:
            release(rel)
        except ValueError as exc:
            raise UserError(str(exc)) from None
        return Target("java", rel, heap)
    raise UserError(f"unknown bench target {name!r} (node, baseline, rust, java-RELEASE[@HEAP])")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One target's process on ``port`` with its files in ``workdir``; ``start`` again after
    ``stop`` is a restart on the same port and directory (a node keeps its routes)."""

    def __init__(self, target: Target, workdir: Path, props: dict[str, str],
                 java_heap: str = JAVA_HEAP) -> None:
        self.target = target
        self.workdir = workdir
        self.props = props
        self.java_heap = target.heap or java_heap
        self.port = free_port()
        self.proc: subprocess.Popen[str] | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> float:
        """Spawn and wait until it serves; returns the seconds that took."""
        t0 = time.monotonic()
        argv, env = self._argv()
        kind = self.target.kind
        self.proc = subprocess.Popen(
            argv, cwd=self.workdir, stdout=subprocess.PIPE, text=True, env=env,
            stderr=subprocess.DEVNULL if kind == "rust" else (
                subprocess.STDOUT if kind == "java" else None))
        try:
            self._wait_boot()
        except BaseException:
            self.stop()
            raise
        return time.monotonic() - t0

    def stop(self) -> float:
        """SIGTERM, and SIGKILL after 30 s; returns the seconds until it was gone."""
        t0 = time.monotonic()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        return time.monotonic() - t0

    def _argv(self) -> tuple[list[str], dict[str, str] | None]:
        kind, tmp = self.target.kind, self.workdir
        if kind == "node":
            cfg = tmp / "namesrv.properties"
            if not cfg.exists():
                cfg.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
            return [sys.executable, "-m", "worker.controller", "--exit-with-parent", "--port",
                    str(self.port), "--data-dir", str(tmp), "--config", str(cfg),
                    "--name", "bench"], None
        if kind == "java":
            rel = release(self.target.release)
            why = peers_java.missing(rel, "namesrv")
            if why:
                raise UserError(f"--java: {why}")
            cmd = peers_java.namesrv(rel, self.port, tmp / "java", heap=self.java_heap,
                                     gc="script")
            return cmd.argv, cmd.environ()
        if kind == "rust":
            _install_rust()
            return rust.namesrv_argv(self.port, tmp / "rust"), None
        return [sys.executable, "-m", "cluster.bench.baseline", str(self.port)], None

    def _wait_boot(self) -> None:
        """Until the boot line (a line with "success" or "ready"), or, for the Rust
        NameServer, which prints no such line, until its port takes connections."""
        if self.target.kind == "rust":
            self._wait_port()
            return
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        seen: list[str] = []
        deadline = time.monotonic() + BOOT_S
        while time.monotonic() < deadline:
            if not select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]:
                break
            line = proc.stdout.readline()
            if not line:
                break
            if "success" in line or "ready" in line:
                # its output is not read any more: let it go
                threading.Thread(target=_drain, args=(proc.stdout,), daemon=True).start()
                return
            seen.append(line.strip())
        raise UserError(f"{self.target.name} server did not start: {' | '.join(seen[-5:])!r}")

    def _wait_port(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + BOOT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise UserError(f"the Rust NameServer exited with {self.proc.returncode}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.02)
        raise UserError(f"the Rust NameServer did not listen on {self.port} within "
                        f"{BOOT_S:.0f} s")


def _drain(stream: IO[str]) -> None:
    with contextlib.suppress(ValueError, OSError):  # closed by stop()
        stream.read()


def _install_rust() -> None:
    if rust.installed() is not None:
        return
    print("bench: installing the Rust NameServer first (cargo install; about 12 minutes on "
          "2 cores)", file=sys.stderr, flush=True)
    try:
        rust.install()
    except rust.RustInstallFailed as exc:
        raise UserError(f"--rust: {exc}") from None


@contextmanager
def running(target: Target, props: dict[str, str],
            java_heap: str = JAVA_HEAP) -> Iterator[Server]:
    """A fresh server of ``target`` in a temporary directory, stopped on the way out."""
    with tempfile.TemporaryDirectory(prefix="pynamesrv-bench-") as tmp:
        server = Server(target, Path(tmp), props, java_heap)
        server.start()
        try:
            yield server
        finally:
            server.stop()
