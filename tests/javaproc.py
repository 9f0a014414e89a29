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


def mqadmin(*args: str, home: Path, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """Run ``bin/mqadmin ARGS`` (logs under ``home``); returns the finished process."""
    env = {**os.environ, "MQADMIN_USER_HOME": str(home)}
    return subprocess.run([str(JAVA_ROCKETMQ / "bin" / "mqadmin"), *args], capture_output=True,
                          text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)
