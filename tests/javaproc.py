"""Test support: the real Apache RocketMQ releases (``cluster.peers``) as processes.

NameServers, brokers, proxies and ``mqadmin`` are started through the installed
``pynamesrv peer`` commands, which ``exec`` the JVM: the process a test starts is the
JVM itself, in a new session, so teardown kills the whole group. Everything listens on
127.0.0.1 only. ``RELEASE_4`` is the 4.9 line (NameServer and broker 4.9.7, tools and
client 4.9.8: Maven Central does not serve 4.9.8's NameServer and broker), ``RELEASE_5``
the newest 5.x release that resolves.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
from pathlib import Path

from cluster.peers import java as peers_java
from cluster.peers.catalog import release
from tests.nodeproc import PYNAMESRV, poll_until

RELEASE_4 = "4.9"
RELEASE_5 = "5.5"
RELEASES = (RELEASE_4, RELEASE_5)
BOOT_TIMEOUT_S = 90.0


def java_missing(rel: str = RELEASE_4) -> str:
    """Why RocketMQ ``rel`` cannot run here (not installed, and why), or "" when it can."""
    return peers_java.missing(release(rel))


class JavaProcess:
    """One peer started by ``pynamesrv peer ...``; ``stop()`` kills its group and reaps."""

    def __init__(self, argv: list[str], workdir: Path, boot_marker: str, log_name: str,
                 env: dict[str, str] | None = None) -> None:
        self.argv = argv
        self.workdir = workdir
        self.boot_marker = boot_marker
        self.log = workdir / log_name
        self.env = env or {}
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> JavaProcess:
        return self.launch().booted()

    def launch(self) -> JavaProcess:
        """Start the JVM without waiting for it (``booted`` waits)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         env={**os.environ, **self.env})
        return self

    def booted(self) -> JavaProcess:
        """Wait until the process printed its boot line (stopped and failed if it does not)."""
        try:
            poll_until(self._booted, timeout=BOOT_TIMEOUT_S, interval=0.1,
                       what=f"{self.boot_marker!r} in {self.log}")
        except AssertionError:
            self.stop()
            raise AssertionError(
                f"{' '.join(self.argv[:4])} did not boot:\n{self.output()[-3000:]}") from None
        return self

    def _booted(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"{' '.join(self.argv[:4])} exited with "
                                 f"{self.proc.returncode}:\n{self.output()[-3000:]}")
        return self.boot_marker in self.output()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self.proc = None


def _sets(values: dict[str, str] | None) -> list[str]:
    return [arg for key, value in (values or {}).items() for arg in ("--set", f"{key}={value}")]


class JavaNamesrv(JavaProcess):
    """The real NameServer of ``release`` on 127.0.0.1:``port``."""

    def __init__(self, workdir: Path, port: int | None = None, heap: str = "256m",
                 release: str = RELEASE_4, props: dict[str, str] | None = None) -> None:
        self.port = port or free_late_port()
        self.release = release
        argv = [PYNAMESRV, "peer", "namesrv", "--release", release, "--port", str(self.port),
                "--dir", str(workdir), "--heap", heap, *_sets(props)]
        super().__init__(argv, workdir, "The Name Server boot success", "namesrv.out")

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"


class JavaBroker(JavaProcess):
    """A real broker (id 0 = master, else slave); ports ``port``, ``port``-2, ``port``+1."""

    def __init__(self, workdir: Path, namesrv: str, name: str, cluster: str, broker_id: int,
                 port: int, heap: str = "512m", settings: dict[str, str] | None = None,
                 release: str = RELEASE_4, jvm_options: list[str] | None = None) -> None:
        self.port = port
        self.release = release
        argv = [PYNAMESRV, "peer", "broker", "--release", release, "--namesrv", namesrv,
                "--dir", str(workdir), "--name", name, "--cluster", cluster,
                "--id", str(broker_id), "--port", str(port), "--heap", heap, *_sets(settings)]
        argv += [f"--jvm-option={option}" for option in jvm_options or []]
        super().__init__(argv, workdir, "boot success", "broker.out")

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.workdir / "logs" / "rocketmqlogs" / "broker.log"


class JavaProxy(JavaProcess):
    """The 5.x proxy in cluster mode: gRPC on ``grpc_port``, remoting on ``remoting_port``."""

    def __init__(self, workdir: Path, namesrv: str, cluster: str, grpc_port: int,
                 remoting_port: int, release: str = RELEASE_5, heap: str = "512m") -> None:
        self.grpc_port = grpc_port
        argv = [PYNAMESRV, "peer", "proxy", "--release", release, "--namesrv", namesrv,
                "--dir", str(workdir), "--cluster", cluster, "--grpc-port", str(grpc_port),
                "--remoting-port", str(remoting_port), "--heap", heap]
        super().__init__(argv, workdir, "rocketmq-proxy startup successfully", "proxy.out")

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"


def mqadmin(*args: str, home: Path, timeout: float = 90.0, release: str = RELEASE_4,
            keys: bool = True, extra_env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    """``mqadmin ARGS`` of ``release`` (logs under ``home``; signs with conf/tools.yml unless
    ``keys`` is False); returns the finished process."""
    argv = [PYNAMESRV, "peer", "mqadmin", "--release", release, "--home", str(home)]
    if not keys:
        argv.append("--no-keys")
    return subprocess.run([*argv, "--", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(extra_env or {})},
                          stdin=subprocess.DEVNULL)


def port_is_free(port: int) -> bool:
    """True when ``port`` can be bound on 127.0.0.1 right now."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_broker_port(taken: set[int], timeout: float = 10.0) -> int:
    """A listen port P for ``JavaBroker``: P, P-2 and P+1 free and not in ``taken``
    (``late_ports``; a broker binds P+1, its HA port, only once its store is loaded).

    The three ports are added to ``taken``, so brokers of one test never share one.
    """
    return _free_late((0, -2, 1), taken, timeout)


def free_late_port() -> int:
    """A free port from ``late_ports``, for a server that binds it seconds after start."""
    return _free_late((0,), set(), 10.0)


def _free_late(offsets: tuple[int, ...], taken: set[int], timeout: float) -> int:
    """A port P of ``late_ports`` with P + each offset free and not in ``taken`` (added)."""
    choices = late_ports()

    def pick() -> int:
        port = random.choice(choices)
        group = {port + d for d in offsets}
        if group & taken or not all(port_is_free(p) for p in group):
            return 0
        taken.update(group)
        return port

    return poll_until(pick, timeout=timeout, what=f"a free port P with P + {offsets} free")


def late_ports() -> range:
    """Ports for servers that bind them seconds after they were picked (a JVM that boots
    first): outside the kernel's range of ports for outgoing connections
    (``ip_local_port_range``), any of which a connection on the machine could be handed
    meanwhile; P, P-2 and P+1 all outside it."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        low, high = 32_768, 60_999
    below = range(LATE_PORTS_FROM, low - 1)
    return below if len(below) >= 1000 else range(max(high + 1, 1026) + 2, 65_535)


LATE_PORTS_FROM = 10_002


def terminate(java: JavaProcess, timeout: float = 60.0) -> int:
    """Stop a Java process gracefully (SIGTERM, shutdown hooks run); its exit code.

    ``pynamesrv peer`` ``exec``s the JVM, so the process is the JVM itself.
    """
    assert java.proc is not None, "not started"
    java.proc.send_signal(signal.SIGTERM)
    return java.proc.wait(timeout)


def javac(sources: list[Path], out_dir: Path, rel: str = RELEASE_4,
          timeout: float = 180.0) -> None:
    """Compile ``sources`` against the release's client and admin jars into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(peers_java.javac_argv(release(rel), sources, out_dir),
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"javac failed:\n{done.stdout}\n{done.stderr}"


def java_client_argv(main_class: str, class_dir: Path, home: Path, *args: str,
                     heap: str = "256m", rel: str = RELEASE_4) -> list[str]:
    """argv running ``main_class`` (compiled into ``class_dir``) as a RocketMQ client JVM.

    Client logs go under ``home`` (``user.home``), as for ``mqadmin``.
    """
    return peers_java.client_program(release(rel), main_class, class_dir, home, args,
                                     heap).argv
