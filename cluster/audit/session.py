"""Build the audit's SparkSession: quiet embedded local[2] by default, any master on demand."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
DRIVER_MEMORY_ENV = "PYNAMESRV_AUDIT_DRIVER_MEMORY"
DEFAULT_DRIVER_MEMORY = "512m"
# The serial collector needs a fraction of G1's native bookkeeping on a small heap.
_DRIVER_JVM_OPTS = "-XX:+UseSerialGC"

_LOG4J2 = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""


def _log4j2_file() -> Path:
    path = Path(tempfile.gettempdir()) / f"pynamesrv-audit-log4j2-{os.getuid()}.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J2)
        tmp.replace(path)
    return path


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


# Spark's launcher always adds --add-modules=jdk.incubator.vector; the JVM then
# prints this line on every start. Everything else on the JVM's stderr is kept.
_JVM_NOISE = (b"WARNING: Using incubator modules",)


def _forward(stream: IO[bytes]) -> None:
    for line in stream:
        if not line.startswith(_JVM_NOISE):
            sys.stderr.buffer.write(line)
            sys.stderr.flush()


def _start_context(conf: SparkConf) -> None:
    """Start the JVM with its stderr filtered, then the SparkContext on it."""
    gateway = launch_gateway(  # type: ignore[no-untyped-call]  # pyspark: no annotations
        conf, popen_kwargs={"stderr": subprocess.PIPE})
    threading.Thread(target=_forward, args=(gateway.proc.stderr,), daemon=True,
                     name="spark-stderr").start()
    SparkContext(conf=conf, gateway=gateway)


def driver_memory(explicit: str | None = None) -> str:
    """The driver JVM's heap: ``explicit``, else ``$PYNAMESRV_AUDIT_DRIVER_MEMORY``, else 512m."""
    return explicit or os.environ.get(DRIVER_MEMORY_ENV) or DEFAULT_DRIVER_MEMORY


def session_conf(master: str, app_name: str, memory: str | None = None) -> SparkConf:
    """UI off, 4 shuffle partitions, ERROR logs, a bounded driver heap (``driver_memory``).

    Local masters bind to 127.0.0.1 only.
    """
    java_opts = f"-Dlog4j2.configurationFile=file:{_log4j2_file()} {_DRIVER_JVM_OPTS}"
    conf = (SparkConf().setMaster(master).setAppName(app_name)
            .set("spark.ui.enabled", "false")
            .set("spark.ui.showConsoleProgress", "false")
            .set("spark.sql.shuffle.partitions", "4")
            .set("spark.driver.memory", driver_memory(memory))
            .set("spark.driver.extraJavaOptions", java_opts))
    if is_local(master):
        conf.set("spark.driver.host", "127.0.0.1").set("spark.driver.bindAddress", "127.0.0.1")
    return conf


def has_active_session() -> bool:
    return SparkContext._active_spark_context is not None


def build_session(master: str = DEFAULT_MASTER, app_name: str = "pynamesrv-audit",
                  memory: str | None = None) -> SparkSession:
    """The active session if there is one, else a new one for ``master``.

    ``memory`` (e.g. ``768m``, ``2g``) is the driver heap, which only takes
    effect when this call starts the JVM. A cluster master keeps Spark's own
    driver address so executors can reach it.
    """
    if is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf = session_conf(master, app_name, memory)
    if SparkContext._active_spark_context is None and SparkContext._gateway is None:
        _start_context(conf)
    spark = SparkSession.builder.config(conf=conf).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# Off a terminal, the stage status is written at most this often (and once at the end).
QUIET_EVERY_S = 10.0


class StageProgress:
    """Shows the Spark stages (``SparkStatusTracker``) while a job runs.

    The status is the number of stages done and each running stage's tasks. On
    a terminal it is one line rewritten in place every ``period``; otherwise a
    line at most every ``QUIET_EVERY_S`` while stages run. Either way a last
    line gives the total. Use as a context manager around the job; it polls
    from a daemon thread.
    """

    def __init__(self, sc: SparkContext, stream: IO[str] | None = None,
                 period: float = 0.5) -> None:
        self.sc = sc
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.period = period
        self.seen: set[int] = set()
        self._last_line = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="spark-progress")

    def __enter__(self) -> StageProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        if self.seen:
            self._write(f"spark: {len(self.seen)} stages done", end="\n")

    def _loop(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.poll()
            except Exception:  # the JVM went away under us; the job reports its own error
                return

    def _write(self, line: str, end: str = "") -> None:
        self.stream.write(f"\r\x1b[K{line}{end}" if self.tty else f"{line}\n")
        self.stream.flush()

    def poll(self) -> None:
        tracker = self.sc.statusTracker()
        running = []
        for sid in sorted(tracker.getActiveStageIds()):
            info = tracker.getStageInfo(sid)
            if info is not None:
                self.seen.add(sid)
                running.append(f"stage {sid} {info.numCompletedTasks}/{info.numTasks} tasks")
        now = time.monotonic()
        if not running or (not self.tty and now - self._last_line < QUIET_EVERY_S):
            return
        self._last_line = now
        self._write(f"spark: {len(self.seen) - len(running)} stages done; "
                    + ", ".join(running))
