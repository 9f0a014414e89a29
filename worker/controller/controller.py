"""Node controller: ``python -m worker.controller --port P --data-dir DIR [--config F]``.

Creates the shared state, spawns the I/O and business workers, restarts any
that die, runs the broker expiry scan once per node, cleans up the brokers of a
dead I/O worker, and shuts everything down on SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import shutil
import signal
import socket
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import zmq

from cluster.core.clock import wall_ms
from cluster.core.errors import UserError
from cluster.core.procs import exit_with_parent, set_process_name
from state import housekeeping, nsconfig
from state.store import Store
from worker import compiled, wire
from worker.business.process import BusinessConfig
from worker.business.process import run as run_business
from worker.controller import store_home
from worker.controller.bootstrap import open_state
from worker.controller.children import Child
from worker.controller.metrics_book import MetricsBook
from worker.controller.settings import NodeSettings, load_settings
from worker.controller.zygote import Zygote, ZygoteGone
from worker.io import tls
from worker.io.connection import IoConfig
from worker.io.process import go_away_seconds
from worker.io.process import run as run_io
from worker.metrics import parse_snapshot
from worker.procs import (
    control_endpoint,
    run_dir,
    store_base,
    store_dir,
    sweep_stale,
)

if TYPE_CHECKING:
    from worker.controller import metrics_server

log = logging.getLogger("pynamesrv.node")
READY_DEADLINE_S = 60.0


class Controller:
    def __init__(self, settings: NodeSettings, guard: socket.socket, zygote: Zygote,
                 clock: Callable[[], int] = wall_ms) -> None:
        self.s = settings
        self.guard = guard
        self.zygote = zygote
        self.clock = clock
        self.run_path = run_dir(settings.name, os.getpid())
        self.store_home = store_dir(settings.data_dir)
        self.store_path = store_home.lmdb_dir(self.store_home)
        self.store_lock: int | None = None
        self.children: list[Child] = []
        self.stopping = False
        self.failed = False  # it ends because it cannot go on (exit code 1)
        self.zctx = zmq.Context()
        self.pull = self.zctx.socket(zmq.PULL)
        self.poller = zmq.Poller()
        self.store: Store | None = None
        self.last_scan = 0.0
        self.metrics = MetricsBook()
        self.metrics_http: metrics_server.MetricsServer | None = None

    def serve_metrics(self) -> None:
        """Serve ``/metrics`` on ``metricsPort`` (none when 0); UserError if it cannot bind."""
        s = self.s
        if not s.metrics_port:
            return
        # prometheus_client and psutil, imported only here (worker.controller.metrics_book)
        from worker.controller.metrics_server import MetricsServer, NodeCollector

        collector = NodeCollector(self.metrics, lambda: self.store, self._pids, self._restarts)
        try:
            self.metrics_http = MetricsServer(s.metrics_host, s.metrics_port, collector)
        except OSError as exc:
            raise UserError(f"metricsPort: cannot serve on {s.metrics_host}:{s.metrics_port}: "
                            f"{exc.strerror or exc}") from None

    def _pids(self) -> dict[str, int]:
        pids = {"controller": os.getpid()}
        pids.update({c.name: c.pid for c in list(self.children) if c.alive})
        return pids

    def _restarts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in list(self.children):
            out[c.kind] = out.get(c.kind, 0) + c.restarts
        return out

    # -- start-up ----------------------------------------------------------

    def start(self) -> None:
        sweep_stale(self.run_path.parent)
        shutil.rmtree(self.run_path, ignore_errors=True)
        self.run_path.mkdir(parents=True)
        self._open_store()
        self.pull.setsockopt(zmq.LINGER, 0)
        self.pull.bind(control_endpoint(self.run_path))
        self.poller.register(self.pull, zmq.POLLIN)
        self.children = self._business_children() + self._io_children()
        now = time.monotonic()
        for child in self.children:
            child.start(now)
            self.poller.register(child.pidfd, zmq.POLLIN)

    def _open_store(self) -> None:
        """Claim the data dir's store (kept across runs: ``store_home``) and open it."""
        s = self.s
        self.store_lock = store_home.claim(self.store_home)
        store_home.sweep(store_base(), keep=self.store_home)
        expiry = int(s.config.get("brokerChannelExpiredTime") or 0)
        store_home.write_owner(self.store_home, s.data_dir, s.name, s.port, expiry)
        self.store = open_state(self.store_path, s, self.clock())

    def _business_children(self) -> list[Child]:
        s = self.s
        readers = min(s.business_read_workers, s.business_workers - 1)
        return [Child("business", i, BusinessConfig(
            index=i, parent=os.getpid(), run=str(self.run_path),
            io_workers=s.io_workers + int(s.io_large_worker),
            store_path=str(self.store_path), node_name=s.name,
            read_only=i >= s.business_workers - readers,
            nice=0 if i >= s.business_workers - readers else s.business_write_nice),
            self.zygote) for i in range(s.business_workers)]

    def _io_children(self) -> list[Child]:
        """The I/O workers on the node's port, and the large-frame worker after them (a
        niced one taking the connections they hand over: worker.io.handoff)."""
        s = self.s
        children = [Child("io", i, self._io_config(i, hand_off=s.io_large_worker), self.zygote)
                    for i in range(s.io_workers)]
        if s.io_large_worker:
            children.append(Child("io", s.io_workers, self._io_config(
                s.io_workers, large=True, nice=s.business_write_nice), self.zygote))
        return children

    def _io_config(self, index: int, **role: Any) -> IoConfig:
        s = self.s
        return IoConfig(
            index=index, parent=os.getpid(), host=s.host, port=s.port, run=str(self.run_path),
            store_path=str(self.store_path),
            frame_max=s.frame_max, header_max=s.header_max,
            max_connections=-(-s.max_connections // s.io_workers),
            max_connections_per_address=s.max_connections_per_address,
            pending_max=s.pending_max, requests_max=s.requests_max,
            frame_timeout_s=float(s.frame_timeout_s),
            write_timeout_s=float(s.write_timeout_s),
            tls_mode=s.tls_mode, tls_cert=_tls_files(s)[0], tls_key=_tls_files(s)[1],
            tls_client_auth=s.tls_client_auth, tls_trust=_tls_files(s)[3],
            dialect=s.rocketmq_version,
            idle_timeout_s=float(s.idle_timeout_s), max_pending=s.io_max_pending,
            window=s.business_window, drain_ms=s.shutdown_drain_ms, **role)

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_DEADLINE_S
        while not all(c.ready for c in self.children):
            if time.monotonic() > deadline:
                raise UserError("workers did not become ready within "
                                f"{READY_DEADLINE_S:.0f} s")
            self._poll(200)
            dead = [c for c in self.children if not c.alive]
            if dead:
                raise UserError(f"{dead[0].name} exited during start-up")

    # -- main loop ---------------------------------------------------------

    def serve(self) -> None:
        self.last_scan = time.monotonic()
        while not self.stopping:
            self._poll(self._timeout_ms())
            now = time.monotonic()
            self._restart_due(now)
            if now >= self._next_scan():
                self._scan()
                self.last_scan = now

    def _next_scan(self) -> float:
        """When the expiry scan is due. The interval is read from the shared config each
        time (at least once a second), so an UPDATE_NAMESRV_CONFIG applies at once."""
        assert self.store is not None
        with self.store.read() as t:
            interval_ms = nsconfig.get_int(t, "scanNotActiveBrokerInterval")
        return self.last_scan + interval_ms / 1000

    def _timeout_ms(self) -> int:
        due = [self._next_scan()] + [c.restart_at for c in self.children if c.restart_at]
        return max(0, min(1000, int((min(due) - time.monotonic()) * 1000) + 1))

    def _poll(self, timeout_ms: int) -> None:
        for item, _ in self.poller.poll(timeout_ms):
            if item is self.pull:
                self._on_ready_messages()
            else:
                self._on_child_exit(item)

    def _on_ready_messages(self) -> None:
        while True:
            try:
                msg = self.pull.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            if msg[:1] == wire.METRICS:
                self._on_snapshot(msg)
                continue
            parsed = wire.parse_ready(msg)
            for child in self.children:
                if parsed and (child.kind, child.index, child.pid) == parsed:
                    child.ready = True

    def _on_snapshot(self, msg: bytes) -> None:
        """Keep a worker's totals; a snapshot of a process already reaped is ignored."""
        doc = parse_snapshot(msg)
        if doc is not None and any((c.kind, c.index, c.pid) == (doc["kind"], doc["index"],
                                                                  doc["pid"]) and c.alive
                                   for c in self.children):
            self.metrics.update(doc)

    def _on_child_exit(self, pidfd: int) -> None:
        child = next((c for c in self.children if c.pidfd == pidfd), None)
        if child is None:
            return
        self.poller.unregister(pidfd)
        self._on_ready_messages()  # its last totals may be queued still
        pid = child.pid
        code = child.reap(time.monotonic())
        self.metrics.retire(child.kind, child.index, pid)
        if self.stopping:
            return
        log.warning("event=worker_exit worker=%s pid=%d code=%s restart_in=%.1fs",
                    child.name, pid, code, child.backoff_s)
        self._after_exit(child, pid)

    def _after_exit(self, child: Child, pid: int) -> None:
        assert self.store is not None
        self.store.reader_check()
        if child.kind == "io":
            removed = housekeeping.io_worker_gone(self.store, f"{child.index}.{pid}.",
                                                  self._five())
            log.warning("event=io_worker_cleanup worker=%s brokers_removed=%d", child.name, removed)

    def _restart_due(self, now: float) -> None:
        for child in self.children:
            if child.restart_at is not None and now >= child.restart_at and not self.stopping:
                try:
                    child.start(now)
                except ZygoteGone as exc:
                    log.error("event=zygote_gone error=%r", str(exc))
                    self.failed = self.stopping = True  # no worker can start: the node ends
                    return
                self.poller.register(child.pidfd, zmq.POLLIN)

    def _scan(self) -> None:
        assert self.store is not None
        with self.store.read() as t:
            expired_ms = nsconfig.get_int(t, "brokerChannelExpiredTime")
        removed = housekeeping.scan_not_active(self.store, self.clock(), expired_ms,
                                               self._five())
        if removed:
            log.warning("event=brokers_expired count=%d", removed)

    def _five(self) -> bool:
        assert self.store is not None
        with self.store.read() as t:
            return nsconfig.dialect(t).five

    # -- shutdown ----------------------------------------------------------

    def shutdown(self) -> None:
        self.stopping = True
        if self.metrics_http is not None:
            self.metrics_http.close()
        io = [c for c in self.children if c.kind == "io"]
        going_away = go_away_seconds(self.store) if self.store is not None else 0.0
        self._stop_group(io, going_away + self.s.shutdown_drain_ms / 1000 + 2.0)
        self._stop_group([c for c in self.children if c.kind != "io"], 3.0)
        if self.store is not None:
            self.store.close()  # kept: a restart on this data dir reopens it
        if self.store_lock is not None:
            os.close(self.store_lock)
        self.pull.close(0)
        self.zctx.term()
        self.zygote.close()
        shutil.rmtree(self.run_path, ignore_errors=True)
        self.guard.close()

    def _stop_group(self, group: list[Child], grace_s: float) -> None:
        for child in group:
            child.restart_at = None
            child.signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while any(c.alive for c in group) and time.monotonic() < deadline:
            self._poll(50)
        for child in group:
            if child.alive:
                log.warning("event=worker_kill worker=%s pid=%d", child.name, child.pid)
                child.signal(signal.SIGKILL)
                self.poller.unregister(child.pidfd)
                child.reap(time.monotonic())


def _tls_files(s: NodeSettings) -> tuple[str, str, str, str]:
    """(cert, key, client auth, trust) with relative paths resolved against the data dir."""
    return (tls.resolve(s.tls_cert, s.data_dir), tls.resolve(s.tls_key, s.data_dir),
            s.tls_client_auth, tls.resolve(s.tls_trust, s.data_dir))


def bind_guard(host: str, port: int) -> socket.socket:
    """Hold the port (bound, not listening) so a foreign process cannot take it.

    A plain bind first proves nobody holds the port, not even another node
    whose SO_REUSEPORT sockets would otherwise silently share it with us.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    probe = socket.socket(family, socket.SOCK_STREAM)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no owner
    _bind_or_fail(probe, host, port)
    probe.close()
    guard = socket.socket(family, socket.SOCK_STREAM)
    guard.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    guard.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    _bind_or_fail(guard, host, port)
    return guard


def _bind_or_fail(sock: socket.socket, host: str, port: int) -> None:
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UserError(f"port {port} on {host} is already in use") from None
        raise UserError(f"cannot bind {host}:{port}: {exc.strerror}") from None


def _prepare_data_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"data dir {path}: cannot create: {exc.strerror}") from None
    if not os.access(path, os.W_OK):
        raise UserError(f"data dir {path}: not writable")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="pynamesrv node", description="run one NameServer node")
    p.add_argument("--port", type=int, help="TCP port (default 9876 or listenPort)")
    p.add_argument("--data-dir", type=Path, required=True, help="kvConfig.json and config")
    p.add_argument("--config", type=Path, help="Java-style properties file (namesrv.properties)")
    p.add_argument("--name", help="node name in logs and snapshots")
    p.add_argument("--host", help="listen address (default 127.0.0.1)")
    p.add_argument("--exit-with-parent", action="store_true",
                   help="die with the process that started this one (for supervisors and "
                        "test harnesses); without it a node outlives the shell that started it")
    return p.parse_args(argv)


def _stop_on_signals(controller: Controller) -> None:
    def stop(_sig: int, _frame: object) -> None:
        controller.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=os.environ.get("PYNAMESRV_LOG", "WARNING"), stream=sys.stderr,
                        format="%(asctime)s level=%(levelname)s proc=controller %(message)s")
    try:
        settings = load_settings(args.data_dir, args.config, args.port, args.host, args.name)
        _prepare_data_dir(settings.data_dir)
        if settings.tls_mode != tls.DISABLED:  # a bad certificate stops the node here, in one line
            tls.server_context(*_tls_files(settings))
            for problem in tls.certificate_warnings(_tls_files(settings)[0], time.time()):
                log.warning("event=tls_certificate file=%s problem=%r", _tls_files(settings)[0],
                            problem)
        guard = bind_guard(settings.host, settings.port)
    except UserError as exc:
        print(f"pynamesrv node: error: {exc}", file=sys.stderr)
        return exc.exit_code
    if args.exit_with_parent:
        # SIGKILL, not SIGTERM: a paused (SIGSTOPped) node must not outlive its parent either
        exit_with_parent(signal.SIGKILL)
    set_process_name("pns-node")
    log.info("event=modules state=%r", compiled.status())
    # before the store and ZeroMQ are opened: the workers are forks of this interpreter
    zygote = Zygote.start({"business": run_business, "io": run_io}, close=(guard.fileno(),))
    return _run(Controller(settings, guard, zygote))


def _announce(line: str) -> None:
    """The boot line on stdout; a node whose stdout is gone (its shell exited) keeps serving."""
    try:
        print(line, flush=True)
    except OSError as exc:
        log.warning("event=stdout_unwritable error=%r", str(exc))


def _run(controller: Controller) -> int:
    _stop_on_signals(controller)
    try:
        controller.serve_metrics()
        controller.start()
        controller.wait_ready()
    except UserError as exc:
        print(f"pynamesrv node: error: {exc}", file=sys.stderr)
        controller.shutdown()
        return exc.exit_code
    s = controller.s
    _announce(f"The Name Server boot success. serializeType=JSON, address {s.address}, "
              f"node {s.name}")
    controller.serve()
    controller.shutdown()
    log.info("event=stopped node=%s", s.name)
    return 1 if controller.failed else 0


if __name__ == "__main__":
    sys.exit(main())
