"""Test support: the real Apache RocketMQ 4.9.8 (../shared/java-rocketmq) as processes.

NameServer, broker and ``mqadmin`` are started through the package's own
scripts, in the foreground (``exec java``) inside a new session, so a test's
teardown kills the whole group. Everything listens on 127.0.0.1 only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

from tests.nodeproc import ROOT, free_port, poll_until

JAVA_ROCKETMQ = Path(os.environ.get("PYNAMESRV_JAVA_ROCKETMQ",
                                    ROOT.parent / "shared" / "java-rocketmq"))
BOOT_TIMEOUT_S = 60.0


def java_rocketmq_missing() -> str:
    """Why the Java RocketMQ tests cannot run here, or "" when they can."""
    if not (JAVA_ROCKETMQ / "bin" / "run-namesrv.sh").is_file():
        return f"no Java RocketMQ at {JAVA_ROCKETMQ}"
    if shutil.which("java") is None and not os.environ.get("JAVA"):
        return "no java on PATH"
    return ""


class JavaProcess:
    """One Java process started by a ``bin/`` script; ``stop()`` kills its group and reaps."""

    def __init__(self, argv: list[str], workdir: Path, boot_marker: str, log_name: str) -> None:
        self.argv = argv
        self.workdir = workdir
        self.boot_marker = boot_marker
        self.log = workdir / log_name
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> JavaProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True,
                                         env={**os.environ, "BINDLO": "1"})
        try:
            poll_until(self._booted, timeout=BOOT_TIMEOUT_S, interval=0.1,
                       what=f"{self.boot_marker!r} in {self.log}")
        except AssertionError:
            self.stop()
            raise AssertionError(
                f"{self.argv[0]} did not boot:\n{self.output()[-3000:]}") from None
        return self

    def _booted(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.argv[0]} exited with {self.proc.returncode}:\n"
                                 f"{self.output()[-3000:]}")
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


class JavaNamesrv(JavaProcess):
    """The real NameServer 4.9.8 on 127.0.0.1:``port``."""

    def __init__(self, workdir: Path, port: int | None = None, heap: str = "256m") -> None:
        self.port = port or free_port()
        argv = [str(JAVA_ROCKETMQ / "bin" / "run-namesrv.sh"), "--port", str(self.port),
                "--dir", str(workdir), "--heap", heap]
        super().__init__(argv, workdir, "The Name Server boot success", "namesrv.out")

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"


class JavaBroker(JavaProcess):
    """A real broker 4.9.8 (id 0 = master, 1 = slave); ports ``port``, ``port``-2, ``port``+1."""

    def __init__(self, workdir: Path, namesrv: str, name: str, cluster: str, broker_id: int,
                 port: int, heap: str = "512m", settings: dict[str, str] | None = None) -> None:
        self.port = port
        argv = [str(JAVA_ROCKETMQ / "bin" / "run-broker.sh"), "--namesrv", namesrv,
                "--dir", str(workdir), "--name", name, "--cluster", cluster,
                "--id", str(broker_id), "--port", str(port), "--heap", heap]
        for key, value in (settings or {}).items():
            argv += ["--set", f"{key}={value}"]
        super().__init__(argv, workdir, "boot success", "broker.out")

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"


def mqadmin(*args: str, home: Path, timeout: float = 60.0,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``bin/mqadmin ARGS`` (logs under ``home``); returns the finished process."""
    env = {**os.environ, "MQADMIN_USER_HOME": str(home), **(extra_env or {})}
    return subprocess.run([str(JAVA_ROCKETMQ / "bin" / "mqadmin"), *args], capture_output=True,
                          text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def port_is_free(port: int) -> bool:
    """True when ``port`` can be bound on 127.0.0.1 right now."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_broker_port(taken: set[int], timeout: float = 10.0) -> int:
    """A listen port P for ``JavaBroker``: P, P-2 and P+1 free and not in ``taken``.

    The three ports are added to ``taken``, so brokers of one test never share one.
    """

    def pick() -> int:
        port = free_port()
        group = {port, port - 2, port + 1}
        if port < 1026 or group & taken or not all(port_is_free(p) for p in group):
            return 0
        taken.update(group)
        return port

    return poll_until(pick, timeout=timeout, what="three free ports P, P-2, P+1 for a broker")


def terminate(java: JavaProcess, timeout: float = 60.0) -> int:
    """Stop a Java process gracefully (SIGTERM, shutdown hooks run); its exit code.

    The scripts ``exec`` java in the foreground, so the process is the JVM itself.
    """
    assert java.proc is not None, "not started"
    java.proc.send_signal(signal.SIGTERM)
    return java.proc.wait(timeout)


def rmq_java_base_opts() -> list[str]:
    """``RMQ_JAVA_BASE_OPTS`` of ``bin/env.sh``: the JVM options every 4.9.8 JVM here needs."""
    script = f'. "{JAVA_ROCKETMQ}/bin/env.sh" && printf "%s\\n" "${{RMQ_JAVA_BASE_OPTS[@]}}"'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30,
                         check=True, stdin=subprocess.DEVNULL)
    return [line for line in out.stdout.splitlines() if line]


def java_client_classpath(*dirs: Path) -> str:
    """``dirs`` followed by every jar of the package's ``lib/`` (the client classpath)."""
    return os.pathsep.join([*map(str, dirs), str(JAVA_ROCKETMQ / "lib" / "*")])


def javac(sources: list[Path], out_dir: Path, timeout: float = 120.0) -> None:
    """Compile ``sources`` against the package's jars into ``out_dir``; fails with the output."""
    out_dir.mkdir(parents=True, exist_ok=True)
    javac_bin = shutil.which("javac")
    assert javac_bin, "no javac on PATH"
    done = subprocess.run([javac_bin, "-encoding", "UTF-8", "-d", str(out_dir),
                           "-cp", java_client_classpath(), *map(str, sources)],
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"javac failed:\n{done.stdout}\n{done.stderr}"


def java_client_argv(main_class: str, class_dir: Path, home: Path, *args: str,
                     heap: str = "256m") -> list[str]:
    """argv running ``main_class`` (compiled into ``class_dir``) as a RocketMQ client JVM.

    Client logs go under ``home`` (``user.home``), as for ``mqadmin``.
    """
    java = os.environ.get("JAVA") or shutil.which("java") or "java"
    return [java, "-Xms64m", f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            *rmq_java_base_opts(), f"-Duser.home={home}",
            f"-Drocketmq.home.dir={JAVA_ROCKETMQ}",
            "-cp", java_client_classpath(class_dir), main_class, *args]
