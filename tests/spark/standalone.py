"""Test support: a Spark standalone cluster (one master, one worker) from the pyspark package.

Both daemons run ``bin/spark-class`` in the foreground, each in its own
session (so ``stop`` kills every JVM of the group), bound to 127.0.0.1 with
free ports, logs in the test's directory. Ready when the master's log shows
the worker registered.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

import pyspark

from tests.nodeproc import free_port, poll_until

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
BOOT_TIMEOUT_S = 90.0
REGISTERED = "Registering worker"


def daemon_env(workdir: Path) -> dict[str, str]:
    """Loopback only, small daemon heaps, work and logs under ``workdir``."""
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": "256m", "SPARK_WORKER_DIR": str(workdir / "work"),
            "SPARK_LOG_DIR": str(workdir / "logs"), "SPARK_NO_DAEMONIZE": "1"}


class SparkStandalone:
    """``spark://127.0.0.1:PORT`` with one worker (1 core, 1g); ``stop()`` reaps both JVMs."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.procs: list[subprocess.Popen[bytes]] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, argv: list[str]) -> Path:
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            self.procs.append(subprocess.Popen(
                [str(SPARK_CLASS), *argv], stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True, cwd=self.workdir,
                env=daemon_env(self.workdir)))
        return log

    def _log_has(self, log: Path, text: str) -> bool:
        for proc in self.procs:
            if proc.poll() is not None:
                raise AssertionError(f"a Spark daemon exited with {proc.returncode}:\n"
                                     f"{self.logs()[-3000:]}")
        return log.exists() and text in log.read_text(errors="replace")

    def start(self) -> SparkStandalone:
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            master = self._spawn("master", [
                "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                "--port", str(self.port), "--webui-port", str(free_port())])
            poll_until(lambda: self._log_has(master, "I have been elected leader"),
                       timeout=BOOT_TIMEOUT_S, interval=0.2, what="the Spark master")
            self._spawn("worker", [
                "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                "--webui-port", str(free_port()), "--cores", "1", "--memory", "1g"])
            poll_until(lambda: self._log_has(master, REGISTERED), timeout=BOOT_TIMEOUT_S,
                       interval=0.2, what="the Spark worker registered with the master")
        except BaseException:
            self.stop()
            raise
        return self

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in sorted(self.workdir.glob("*.log")))

    def stop(self) -> None:
        """SIGKILL each daemon's whole group (executors included) and reap."""
        for proc in reversed(self.procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        self.procs.clear()
