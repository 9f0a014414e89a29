"""One supervised process and its life cycle: spawn, readiness, probes, death, restart.

States (docs/architecture.md): starting, running, paused, hung, stopped,
backoff, failed. All methods take ``now`` (monotonic seconds) and never block;
the supervisor loop calls ``tick`` and forwards pidfd, stdout and probe events.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from supervisor import procs
from supervisor.policy import RestartPolicy
from supervisor.probe import Probe

Emit = Callable[..., None]
Launch = Callable[["ChildSpec"], "procs.Proc | None"]  # a fork instead of exec, when it can
STARTING_PROBE_S = 0.1
LINE_TAIL = 4096


@dataclass(frozen=True)
class Timing:
    readiness_s: float
    probe_interval_s: float
    probe_timeout_s: float
    hung_after: int
    stop_grace_s: float
    log_max_bytes: int


@dataclass
class ChildSpec:
    name: str
    argv: list[str]
    cwd: Path
    log_path: Path
    env: dict[str, str]
    host: str | None = None
    port: int | None = None
    ready_marker: bytes | None = None
    kind: str = "node"


@dataclass
class _Run:
    """What belongs to one process incarnation."""
    proc: procs.Proc
    started: float
    marker_seen: bool = False
    ready: bool = False
    tail: bytes = b""
    probe: Probe | None = None
    next_probe: float = 0.0
    probe_failures: int = 0
    ready_deadline: float = 0.0
    stop_deadline: float | None = None
    hard_killed: bool = False
    note: str = ""


class Child:
    def __init__(self, spec: ChildSpec, policy: RestartPolicy, timing: Timing,
                 emit: Emit, launch: Launch | None = None) -> None:
        self.spec = spec
        self.launch = launch
        self.policy = policy
        self.timing = timing
        self.emit = emit
        self.state = "stopped"
        self.want_up = False
        self.restarts = 0  # starts by the supervisor itself after a death (crash or kill)
        self.last_exit = ""
        self.probe_s: float | None = None  # how long the last answered probe took
        self.run: _Run | None = None
        self.restart_at: float | None = None
        self._requested_death = False

    # ------------------------------------------------------------ queries

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def alive(self) -> bool:
        return self.run is not None

    def status(self, now: float) -> dict[str, Any]:
        r = self.run
        return {
            "name": self.name, "host": self.spec.host, "port": self.spec.port,
            "pid": r.proc.pid if r else None, "pgid": r.proc.pgid if r else None,
            "state": self.state,
            "uptime_s": round(now - r.started, 1) if r else 0.0,
            "restarts": self.restarts, "last_exit": self.last_exit or None,
            "probe_s": self.probe_s,
        }

    def deadline(self) -> float | None:
        """The earliest moment ``tick`` has something to do."""
        r = self.run
        if r is None:
            return self.restart_at
        if r.hard_killed:
            return None
        if r.stop_deadline is not None:
            return r.stop_deadline
        times = [None if r.ready or self.state == "paused" else r.ready_deadline,
                 r.probe.deadline if r.probe else (r.next_probe if self._probing() else None)]
        present = [t for t in times if t is not None]
        return min(present) if present else None

    def _probing(self) -> bool:
        return (self.run is not None and self.spec.port is not None
                and self.run.stop_deadline is None
                and self.state in ("starting", "running", "hung"))

    # ------------------------------------------------------------ actions

    def start(self, now: float) -> None:
        self.want_up = True
        self.policy.reset()
        self.restart_at = None
        if self.run is None:
            self._spawn(now)

    def stop(self, now: float, restart: bool = False) -> None:
        self.want_up = restart
        self.restart_at = None
        if restart:
            self.policy.reset()
        if self.run is None:
            if restart:
                self._spawn(now)
            else:
                self._set_state("stopped", "stop requested")
            return
        if self.run.stop_deadline is None:
            self._close_probe()
            self.run.stop_deadline = now + self.timing.stop_grace_s
            self.run.note = "restart requested" if restart else "stop requested"
            self._requested_death = True
            procs.signal_group(self.run.proc.pgid, signal.SIGTERM)
            procs.signal_group(self.run.proc.pgid, signal.SIGCONT)
            if not restart:
                self._set_state("stopped", "stopping")

    def kill(self, sig: int) -> None:
        assert self.run is not None
        self.run.note = f"sent {signal.Signals(sig).name} by control"
        self._requested_death = True
        procs.signal_group(self.run.proc.pgid, sig)

    def pause(self) -> None:
        assert self.run is not None
        procs.signal_group(self.run.proc.pgid, signal.SIGSTOP)
        self._close_probe()
        self._set_state("paused", "SIGSTOP by control")

    def resume(self, now: float) -> None:
        assert self.run is not None
        procs.signal_group(self.run.proc.pgid, signal.SIGCONT)
        self.run.probe_failures = 0
        self.run.next_probe = now
        if not self.run.ready:
            self.run.ready_deadline = now + self.timing.readiness_s
        self._set_state("running" if self.run.ready else "starting", "SIGCONT by control")

    # ------------------------------------------------------------ events

    def on_output(self) -> None:
        """The child's stdout is readable: copy it to the log, watch for the marker."""
        r = self.run
        if r is None or r.proc.stdout_fd is None:
            return
        data = procs.read_available(r.proc.stdout_fd)
        if data is None:
            procs.close_stdout(r.proc)
            return
        if not data:
            return
        with open(self.spec.log_path, "ab") as log:
            log.write(data)
        marker = self.spec.ready_marker
        if marker and not r.marker_seen:
            r.tail = (r.tail + data)[-LINE_TAIL:]
            r.marker_seen = marker in r.tail
            if r.marker_seen:
                r.next_probe = 0.0  # it serves from its boot line on: ask now, not in 0.1 s

    def on_exit(self, now: float) -> None:
        """The pidfd is readable: reap, then restart, give up or stay stopped."""
        r = self.run
        assert r is not None
        self._close_probe()
        reason = procs.reap(r.proc)
        self.run = None
        uptime = now - r.started
        requested, self._requested_death = self._requested_death, False
        self.last_exit = f"{reason}, {r.note}" if r.note else reason
        self.emit("exit", node=self.name, reason=self.last_exit, uptime_s=round(uptime, 1))
        if not self.want_up:
            self._set_state("stopped", self.last_exit)
        elif r.stop_deadline is not None:
            self._spawn(now)
        elif requested:
            self._schedule(now, self.policy.initial_s, "restart after control signal")
        else:
            self._after_crash(now, uptime)

    def on_probe(self) -> None:
        r = self.run
        if r is not None and r.probe is not None:
            r.probe.on_event()

    def tick(self, now: float) -> None:
        if self.run is None:
            if self.restart_at is not None and now >= self.restart_at:
                self.restart_at = None
                self.restarts += 1
                self._spawn(now)
            return
        self._tick_stop(now)
        self._tick_readiness(now)
        self._tick_probe(now)

    # ------------------------------------------------------------ internals

    def _after_crash(self, now: float, uptime: float) -> None:
        decision = self.policy.on_exit(now, uptime)
        if decision.restart:
            self._schedule(now, decision.delay_s, decision.reason)
        else:
            self.want_up = False
            self._set_state("failed", decision.reason)

    def _schedule(self, now: float, delay: float, why: str) -> None:
        self.restart_at = now + delay
        self._set_state("backoff", why)

    def _spawn(self, now: float) -> None:
        spec = self.spec
        _rotate(spec.log_path, self.timing.log_max_bytes)
        try:
            proc = (self.launch and self.launch(spec)) or \
                procs.spawn(spec.argv, spec.cwd, spec.log_path, spec.env)
        except OSError as exc:
            self.last_exit = f"spawn failed: {exc.strerror or exc}"
            self.want_up = False
            self._set_state("failed", self.last_exit)
            return
        self.want_up = True
        ready = spec.port is None and spec.ready_marker is None
        self.run = _Run(proc, now, ready=ready, next_probe=now,
                        ready_deadline=now + self.timing.readiness_s)
        self._set_state("running" if ready else "starting", f"pid {proc.pid}")

    def _tick_stop(self, now: float) -> None:
        r = self.run
        if r and r.stop_deadline is not None and now >= r.stop_deadline and not r.hard_killed:
            r.hard_killed = True
            r.note = f"SIGKILL after {self.timing.stop_grace_s:g}s grace"
            procs.signal_group(r.proc.pgid, signal.SIGKILL)

    def _tick_readiness(self, now: float) -> None:
        r = self.run
        if r is None or r.ready or r.stop_deadline is not None or self.state == "paused":
            return
        if now >= r.ready_deadline and not r.hard_killed:
            r.hard_killed = True
            r.note = f"not ready within {self.timing.readiness_s:g}s"
            procs.signal_group(r.proc.pgid, signal.SIGKILL)

    def _tick_probe(self, now: float) -> None:
        r = self.run
        if r is None or not self._probing():
            return
        if r.probe is None:
            if now >= r.next_probe:
                assert self.spec.host is not None and self.spec.port is not None
                r.probe = Probe(self.spec.host, self.spec.port,
                                now + self.timing.probe_timeout_s)
            return
        r.probe.check(now)
        if r.probe.done:
            if r.probe.ok:
                self.probe_s = now - (r.probe.deadline - self.timing.probe_timeout_s)
            self._probe_result(now, bool(r.probe.ok), r.probe.error)

    def _probe_result(self, now: float, ok: bool, error: str) -> None:
        r = self.run
        assert r is not None
        self._close_probe()
        r.next_probe = now + (self.timing.probe_interval_s if r.ready else STARTING_PROBE_S)
        if ok:
            r.probe_failures = 0
            if not r.ready and r.marker_seen:
                r.ready = True
            if r.ready and self.state != "running":
                self._set_state("running", "answering requests")
            return
        r.probe_failures += 1
        if r.ready and r.probe_failures >= self.timing.hung_after and self.state != "hung":
            self._set_state("hung", f"{r.probe_failures} probes failed: {error}")

    def _close_probe(self) -> None:
        r = self.run
        if r is not None and r.probe is not None:
            r.probe.close()
            r.probe = None

    def _set_state(self, state: str, why: str) -> None:
        if state != self.state:
            self.state = state
            self.emit("state", node=self.name, state=state, why=why)


def _rotate(path: Path, max_bytes: int) -> None:
    try:
        if path.stat().st_size > max_bytes:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass

