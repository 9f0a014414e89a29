"""The harness side of ``--load``: the load process and its reports turned into history.

``LoadProcess`` starts ``python -m cluster.chaos.load.gen`` (its own process
group, dies with the harness), reads its JSON lines in a thread and records
them: every registration outcome as a ``register`` record of its broker
(so the run's answered/closed checkers cover the load's brokers too), and
``load_ready``, ``load_reads`` (one per node and second), ``load_failover``
and ``load_wrong`` records of process ``load``. The load process reports
``time.monotonic()`` times; they become history times here.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import orjson

from cluster.chaos.history import HistoryWriter
from cluster.chaos.load.plan import LoadPlan
from cluster.core.procs import die_with_this_process

LOAD = "load"
SPEC_NAME = "load-spec.json"
LOG_NAME = "load.log"
STOP_GRACE_S = 10.0
DEADLINE_SLACK_S = 120.0


class LoadProcess:
    """One load process for one run; ``stop`` always reaps it."""

    def __init__(self, out_dir: Path, plan: LoadPlan, client_addrs: Mapping[str, str],
                 history: HistoryWriter, run_s: float, seed: int) -> None:
        self.out_dir = out_dir
        self.plan = plan
        self.history = history
        self.spec = {"plan": plan.as_dict(), "nodes": dict(client_addrs), "seed": seed,
                     "deadline_s": run_s + DEADLINE_SLACK_S}
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready = threading.Event()
        self.ready_value: dict[str, Any] = {}
        self.ended = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def start(self) -> None:
        spec_path = self.out_dir / SPEC_NAME
        spec_path.write_bytes(orjson.dumps(self.spec, option=orjson.OPT_INDENT_2))
        argv = [sys.executable, "-m", "cluster.chaos.load.gen", str(spec_path)]
        with (self.out_dir / LOG_NAME).open("ab") as log:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                process_group=0, preexec_fn=die_with_this_process())
        assert self.proc.stdout is not None
        self._thread = threading.Thread(target=self._read, args=(self.proc.stdout,),
                                        name="chaos-load-reader", daemon=True)
        self._thread.start()

    def wait_ready(self, timeout_s: float) -> dict[str, Any]:
        """Block until the load reports ``ready`` (or exits); raises on the deadline."""
        deadline = time.monotonic() + timeout_s
        while not self.ready.wait(0.2):
            if self.proc is not None and self.proc.poll() is not None:
                if self._thread is not None:
                    self._thread.join(2.0)  # its last lines may still be on their way
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the load was not ready within {timeout_s:g}s")
        if not self.ready_value:
            raise RuntimeError(f"the load process exited before it was ready; "
                               f"see {self.out_dir / LOG_NAME}")
        return self.ready_value

    def stop(self) -> str:
        """Close its stdin (it stops), then SIGTERM, then SIGKILL; join the reader."""
        if self.proc is None:
            return "not started"
        how = "stopped"
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            how = "terminated"
            self.proc.terminate()
            try:
                self.proc.wait(5.0)
            except subprocess.TimeoutExpired:
                how = "killed"
                self.proc.kill()
                self.proc.wait(5.0)
        if self._thread is not None:
            self._thread.join(5.0)
        return how

    # ------------------------------------------------------------- records

    def _hist_t(self, mono: float) -> float:
        return max(0.0, self.history.now() - (time.monotonic() - mono))

    def _read(self, stream: IO[bytes]) -> None:
        try:
            for line in stream:
                with contextlib.suppress(orjson.JSONDecodeError, KeyError, TypeError):
                    self._handle(orjson.loads(line))
        finally:
            self.ended.set()
            self.ready.set()

    def _handle(self, msg: dict[str, Any]) -> None:
        kind = msg["kind"]
        if kind == "register":
            for item in msg["items"]:
                self._register(item)
        elif kind == "reads":
            t = self._hist_t(msg["t"])
            for node, counters in msg["nodes"].items():
                value = {**counters, "interval": msg["interval"],
                         "clients": msg["clients"].get(node, 0)}
                self.history.record(LOAD, "load_reads", node, "info", value,
                                    round(t - msg["interval"], 4), t)
            if msg.get("behind"):
                self.history.record(LOAD, "load_behind", None, "info", {"reads": msg["behind"]},
                                    None, t)
        elif kind == "ready":
            value = {k: v for k, v in msg.items() if k not in ("kind", "t")}
            self.history.record(LOAD, "load_ready", None, "info", value, None,
                                self._hist_t(msg["t"]))
            self.ready_value = value
            self.ready.set()
        elif kind == "failover":
            value = {k: v for k, v in msg.items() if k != "kind"}
            value["failed_at"] = self._hist_t(msg["failed_at"])
            value["ok_at"] = None if msg["ok_at"] is None else self._hist_t(msg["ok_at"])
            self.history.record(LOAD, "load_failover", msg["from"], "info", value,
                                value["failed_at"], value["ok_at"] or self.history.now())
        elif kind == "wrong" and msg["samples"]:
            self.history.record(LOAD, "load_wrong", None, "info", {"samples": msg["samples"]})

    def _register(self, item: list[Any]) -> None:
        start, end, broker, broker_id, node, status, err = item
        value: dict[str, Any] = {"broker": broker, "broker_id": broker_id, "load": True}
        if status in ("ok", "sent"):
            outcome = "ok"
        else:
            outcome = "unknown" if status == "timed_out" else "fail"
            value.update(err or {})
        self.history.record(f"{broker}/{broker_id}", "register", node, outcome, value,
                            self._hist_t(start), self._hist_t(end))
