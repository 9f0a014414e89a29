"""The supervisor loop: spawn the cluster's nodes, watch them, answer control, stop cleanly.

Single-threaded: one zmq.Poller over the control socket, every child's pidfd,
stdout pipe and health probe, and a signal wake-up pipe. Timers are the
children's own deadlines, so the poll timeout is exact and bounded.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import zmq

from cluster.core.config import ClusterConfig, NodeConfig
from cluster.core.procs import python_module
from supervisor import commands, procs
from supervisor.child import Child, ChildSpec, Timing
from supervisor.launcher import Launcher
from supervisor.nodefiles import write_properties
from supervisor.policy import RestartPolicy
from supervisor.reload import Reloads
from supervisor.server import ControlServer

if TYPE_CHECKING:
    from supervisor.status.page import StatusPage

READY_MARKER = b"boot success"
MAX_WAIT_S = 0.25
KILL_MARGIN_S = 2.0
log = logging.getLogger("pynamesrv.supervisor")


def node_argv(python: str, node: NodeConfig) -> list[str]:
    return [*python_module("worker.controller", python), "--exit-with-parent",
            "--port", str(node.port),
            "--data-dir", str(node.data_dir), "--config", str(node.properties_path),
            "--name", node.name, "--host", node.host]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Supervisor:
    def __init__(self, cfg: ClusterConfig, emit: Callable[..., None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg = cfg
        self.clock = clock
        self.events = emit or _log_event
        self._children: list[Child] = []
        self.reloads = Reloads(self, self.events)
        self._shutdown_deadline: float | None = None
        self._killed_all = False
        self.ready_announced = False
        self._signals: list[int] = []
        self.server = ControlServer(cfg.control, lambda req: commands.dispatch(self, req))
        self.launcher = _launcher(cfg, self.events)  # first: its imports overlap the page's
        self.status_page = _status_page(cfg)  # None unless supervisor.status_http is set
        self._wake_r, self._wake_w = os.pipe()
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)

    # ------------------------------------------------------------- Host protocol

    def now(self) -> float:
        return self.clock()

    def children(self) -> list[Child]:
        return list(self._children)

    def nodes(self) -> list[Child]:
        return [c for c in self._children if c.spec.kind == "node"]

    @property
    def shutting_down(self) -> bool:
        return self._shutdown_deadline is not None

    def begin_shutdown(self, why: str) -> None:
        if self.shutting_down:
            return
        now = self.now()
        self.events("shutdown", why=why)
        self._shutdown_deadline = now + self.cfg.supervisor.stop_grace_s + KILL_MARGIN_S
        for c in self._children:
            c.stop(now)

    # ------------------------------------------------------------- set-up

    def add_child(self, spec: ChildSpec) -> Child:
        s = self.cfg.supervisor
        policy = RestartPolicy(s.backoff_initial_ms / 1000, s.backoff_max_ms / 1000,
                               s.stable_after_s, s.flap_window_s, s.flap_max_restarts)
        timing = Timing(s.readiness_timeout_s, s.probe_interval_ms / 1000,
                        s.probe_timeout_ms / 1000, s.hung_after_failures, s.stop_grace_s,
                        s.log_max_bytes)
        launch = self._launch if spec.kind == "node" and self.launcher is not None else None
        child = Child(spec, policy, timing, self.events, launch)
        self._children.append(child)
        return child

    def add_nodes(self) -> None:
        for node in self.cfg.nodes:
            self.add_node(node)

    def add_node(self, node: NodeConfig) -> Child:
        """A child for ``node`` (not started); its properties file written from the entry."""
        write_properties(node)
        return self.add_child(ChildSpec(
            name=node.name, argv=node_argv(sys.executable, node), cwd=node.data_dir,
            log_path=node.data_dir / "node.log", env=child_env(),
            host=node.host, port=node.port, ready_marker=READY_MARKER))

    def _launch(self, spec: ChildSpec) -> procs.Proc | None:
        """The node forked by the launcher; None (exec it) when the launcher cannot."""
        launcher = self.launcher
        if launcher is None or not launcher.alive:
            return None
        proc = launcher.spawn(spec.argv, spec.cwd, spec.log_path, spec.env)
        if launcher.gone_why:
            self.events("launcher_gone", why=launcher.gone_why)
        return proc

    def forget(self, child: Child) -> None:
        """Drop a child that is no longer alive (a node removed by a reload)."""
        assert not child.alive
        self._children.remove(child)

    def start_all(self) -> None:
        now = self.now()
        for c in self._children:
            if not c.alive:
                c.start(now)

    # ------------------------------------------------------------- loop

    def run(self, on_tick: Callable[[Supervisor], None] | None = None) -> int:
        """Run until shut down; 0 if the cluster was stopped on request, 1 if all nodes failed."""
        old = _install_signals(self._wake_w, self._on_signal)
        if self.status_page is not None:
            self.status_page.start()
            self.events("status_page", url=self.status_page.url)
        try:
            while not self._finished():
                self._step()
                if on_tick is not None:
                    on_tick(self)
        finally:
            self._kill_everything()
            if self.launcher is not None:
                self.launcher.close()
            self.server.close()
            if self.status_page is not None:
                self.status_page.close()
            _restore_signals(old)
            os.close(self._wake_r)
            os.close(self._wake_w)
        return 1 if self._all_failed() else 0

    def _finished(self) -> bool:
        return self.shutting_down and not any(c.alive for c in self._children)

    def _all_failed(self) -> bool:
        nodes = self.nodes()
        return bool(nodes) and all(c.state == "failed" for c in nodes)

    def _step(self) -> None:
        self._handle_signals()
        now = self.now()
        self._reap_strays()
        for c in self._children:
            c.tick(now)
        self.reloads.tick(now)
        self._check_cluster(now)
        if self.status_page is not None:
            self.status_page.publish(self)
        poller, handlers = self._poller()
        timeout = self._timeout(now)
        for sock, _ in poller.poll(int(timeout * 1000)):
            handlers[sock if isinstance(sock, int) else id(sock)]()

    def _reap_strays(self) -> None:
        """What nodes left behind and was handed to this process (the launcher makes it a
        child subreaper): reaped here; the children themselves are reaped by their pidfd."""
        launcher = self.launcher
        if launcher is None:
            return
        was_alive = launcher.alive
        launcher.poll()
        if was_alive and not launcher.alive:
            self.events("launcher_gone", why=launcher.gone_why)
        keep = {c.run.proc.pid for c in self._children if c.run is not None}
        procs.reap_strays(keep | {launcher.pid})

    def _check_cluster(self, now: float) -> None:
        if self.shutting_down:
            assert self._shutdown_deadline is not None
            if now >= self._shutdown_deadline and not self._killed_all:
                self._kill_everything()
            return
        if not self.ready_announced and self._settled():
            self.ready_announced = True
            states = {c.name: c.state for c in self.nodes()}
            self.events("cluster_ready", **states)
        if self._all_failed():
            self.begin_shutdown("every node failed")

    def _settled(self) -> bool:
        return all(c.state in ("running", "failed") for c in self.nodes())

    def _poller(self) -> tuple[zmq.Poller, dict[Any, Callable[[], None]]]:
        poller = zmq.Poller()
        handlers: dict[Any, Callable[[], None]] = {}

        def add(obj: Any, events: int, fn: Callable[[], None]) -> None:
            poller.register(obj, events)
            handlers[obj if isinstance(obj, int) else id(obj)] = fn

        add(self.server.sock, zmq.POLLIN, self.server.serve_ready)
        add(self._wake_r, zmq.POLLIN, self._drain_wake)
        for c in self._children:
            self._register_child(c, add)
        return poller, handlers

    def _register_child(self, c: Child, add: Callable[..., None]) -> None:
        r = c.run
        if r is None:
            return
        pidfd = r.proc.pidfd
        add(pidfd, zmq.POLLIN, lambda: self._exited(c, pidfd))
        if r.proc.stdout_fd is not None:
            add(r.proc.stdout_fd, zmq.POLLIN, c.on_output)
        if r.probe is not None and not r.probe.done:
            add(r.probe.fileno(), r.probe.events(), c.on_probe)

    def _exited(self, c: Child, pidfd: int) -> None:
        if c.run is not None and c.run.proc.pidfd == pidfd:
            c.on_exit(self.now())

    def _timeout(self, now: float) -> float:
        deadlines = [d for d in (c.deadline() for c in self._children) if d is not None]
        if self._shutdown_deadline is not None:
            deadlines.append(self._shutdown_deadline)
        nearest = min(deadlines, default=now + MAX_WAIT_S)
        return max(0.0, min(MAX_WAIT_S, nearest - now))

    # ------------------------------------------------------------- signals

    def _drain_wake(self) -> None:
        while procs.read_available(self._wake_r, 512):
            pass

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self._signals.append(signum)

    def _handle_signals(self) -> None:
        while self._signals:
            signum = self._signals.pop(0)
            if self.shutting_down and signum == signal.SIGINT:
                self.events("shutdown", why="second SIGINT, killing now")
                self._kill_everything()
            self.begin_shutdown(f"received {signal.Signals(signum).name}")

    def _kill_everything(self) -> None:
        self._killed_all = True
        for c in self._children:
            if c.run is not None:
                procs.signal_group(c.run.proc.pgid, signal.SIGKILL)
                procs.signal_group(c.run.proc.pgid, signal.SIGCONT)
        for c in self._children:
            if c.run is not None:
                c.want_up = False
                c.on_exit(self.now())


def _install_signals(wake_fd: int, handler: Callable[[int, Any], None]) -> dict[int, Any]:
    old: dict[int, Any] = {int(s): signal.signal(s, handler)
                           for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    old[-1] = signal.set_wakeup_fd(wake_fd, warn_on_full_buffer=False)
    return old


def _restore_signals(old: dict[int, Any]) -> None:
    signal.set_wakeup_fd(old.pop(-1))
    for s, h in old.items():
        signal.signal(s, h)


def _log_event(event: str, **fields: Any) -> None:
    log.info("event=%s %s", event, format_fields(fields))


def format_fields(fields: dict[str, Any]) -> str:
    return " ".join(f"{k}={_quote(v)}" for k, v in fields.items())


def _quote(v: Any) -> str:
    text = str(v)
    return f'"{text}"' if (" " in text or not text) else text


def _launcher(cfg: ClusterConfig, emit: Callable[..., None]) -> Launcher | None:
    """The node launcher (``supervisor.launcher``), or None if it cannot start (nodes are
    then started by ``exec``)."""
    try:
        launcher = Launcher.start(sys.executable, cfg.data_dir,
                                  cfg.data_dir / "launcher.log", child_env())
    except OSError as exc:
        emit("launcher_gone", why=f"cannot start: {exc.strerror or exc}")
        return None
    emit("launcher", pid=launcher.pid)
    return launcher


def _status_page(cfg: ClusterConfig) -> StatusPage | None:
    """The status page when the cluster file asks for one; imported only then (Jinja2 and the
    page's modules are a good part of a supervisor's start-up)."""
    if not cfg.supervisor.status_http:
        return None
    from supervisor.status.page import StatusPage

    return StatusPage.open(cfg)
