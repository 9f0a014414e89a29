"""Interop harness: pynamesrv started through its installed entry point, real RocketMQ peers.

Each deployment runs one RocketMQ release (4.9 or 5.x: brokers, mqadmin, Java client; with
5.x also the proxy in cluster mode), and the Go client probe. Two ways users run pynamesrv
are covered:

* ``cluster``: ``pynamesrv up -c cluster.yaml`` (the supervisor starts three nodes);
* ``standalone``: three ``pynamesrv node --port P --data-dir D`` each started from a shell
  that backgrounds it and exits, as RocketMQ users start ``mqnamesrv``, then left idle.

Every process is tracked by a ``Reaper`` (process groups, plus the run's tmp dir as a
command-line marker for processes that outlived their parent).
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil

from cluster.client.nsclient import NameServerClient
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.conftest import Reaper
from tests.javaproc import RELEASE_5, JavaBroker, JavaProxy, free_broker_port, mqadmin
from tests.nodeproc import Conn, free_port, gone, poll_until

PYNAMESRV = Path(sys.executable).parent / "pynamesrv"
MODES = ("cluster", "standalone")
CLUSTER = "C1"
# A standalone node idle for this long (several times its workers' 3 s loss timeout) must
# still answer: the gap is the point of the standalone mode, not a wait for a condition.
IDLE_GAP_S = 15.0
NODE_BOOT_S = 60.0
# Node 1's shell exits at once; the shells of nodes 2 and 3 first wait for the node's
# "boot success" line (as RocketMQ's start scripts and `tail -f namesrv.log` users do), so
# the node is fully up, with its parent-death handling armed, when its shell goes away.
SHELL_WAITS_FOR_BOOT = ("\nfor _ in $(seq {tries}); do grep -qs 'boot success' {log} && exit 0;"
                        " kill -0 $! 2>/dev/null || exit 3; sleep 0.1; done; exit 4")
REGISTER_S = 60.0
# mqadmin JVMs run at most this many at a time (2 cores, other suites run alongside).
MQADMIN_PARALLEL = 3


def tail(path: Path, chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else f"<no {path}>"


def show(done: subprocess.CompletedProcess[str]) -> str:
    """A finished tool run, for assertion messages."""
    argv = " ".join(shlex.quote(str(a)) for a in done.args)
    return (f"$ {argv}\nexit {done.returncode}\n--- stdout ---\n{done.stdout}"
            f"--- stderr ---\n{done.stderr[-3000:]}")


def answers(addr: str, timeout: float = 5.0) -> str:
    """Why ``addr`` did not answer GET_NAMESRV_CONFIG with SUCCESS on a fresh connection;
    the empty string when it did."""
    try:
        conn = Conn(addr, timeout=timeout)
    except OSError as exc:
        return f"connect: {exc!r}"
    try:
        reply = conn.call(RemotingCommand(code=int(RequestCode.GET_NAMESRV_CONFIG), version=409))
    except (OSError, ConnectionError) as exc:
        return f"no reply: {exc!r}"
    finally:
        conn.close()
    if reply.code != ResponseCode.SUCCESS:
        return f"reply code {reply.code} remark {reply.remark!r}"
    return ""


def parse_fastjson(text: str) -> Any:
    """fastjson output (``toJson``) as Python: bare integer map keys are quoted first."""
    start = text.index("{")
    return json.loads(re.sub(r"([{,]\s*)(-?\d+)(\s*:)", r'\1"\2"\3', text[start:]))


class Deployment:
    """Three pynamesrv nodes plus the Java brokers registered to all of them."""

    def __init__(self, mode: str, release: str, root: Path, reaper: Reaper) -> None:
        assert mode in MODES, mode
        self.mode = mode
        self.release = release
        self.proxy: JavaProxy | None = None
        self.proxy_error = ""  # why the proxy did not start (asserted by its test)
        self.root = root
        self.reaper = reaper
        self.ports: set[int] = set()
        self.node_ports = [self._port() for _ in range(3)]
        self.addrs = [f"127.0.0.1:{p}" for p in self.node_ports]
        self.namesrv = ";".join(self.addrs)
        self.config = root / "cluster.yaml"
        self.mqadmin_home = root / "mqadmin-home"
        self.brokers: dict[str, JavaBroker] = {}
        self.up: subprocess.Popen[bytes] | None = None
        self.shells: list[subprocess.CompletedProcess[str]] = []
        # facts gathered while starting, asserted by the tests
        self.idle_s = 0.0
        self.after_idle: dict[str, str] = {}
        self._client: NameServerClient | None = None
        reaper.track_marker(str(root))

    def _port(self) -> int:
        port = poll_until(lambda: (p := free_port()) not in self.ports and p, what="a free port")
        self.ports.add(port)
        return port

    # ------------------------------------------------------------ nodes

    def start_nodes(self) -> None:
        if self.mode == "cluster":
            self._start_cluster()
        else:
            self._start_standalone()

    def _start_cluster(self) -> None:
        control = self._port()
        nodes = "".join(f"  - {{name: n{i + 1}, host: 127.0.0.1, port: {p}}}\n"
                        for i, p in enumerate(self.node_ports))
        self.config.write_text(
            f"control: tcp://127.0.0.1:{control}\n"
            f"data_dir: {json.dumps(str(self.root / 'data'))}\n"
            f"nodes:\n{nodes}")
        log = self.root / "up.log"
        with log.open("wb") as out:
            self.up = self.reaper.spawn([str(PYNAMESRV), "up", "-c", str(self.config)],
                                        stdout=out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, cwd=self.root)
        poll_until(self._all_running, timeout=NODE_BOOT_S, interval=0.5,
                   what=f"every node running in `pynamesrv status -c {self.config} --json`")

    def status(self) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
        done = subprocess.run([str(PYNAMESRV), "status", "-c", str(self.config), "--json",
                               "--timeout", "3"], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            return done, None
        return done, json.loads(done.stdout)

    def _all_running(self) -> bool:
        assert self.up is not None
        if self.up.poll() is not None:
            raise AssertionError(f"`pynamesrv up` exited with {self.up.returncode}:\n"
                                 f"{tail(self.root / 'up.log')}")
        _, reply = self.status()
        if reply is None:
            return False
        nodes = reply.get("nodes", [])
        return len(nodes) == 3 and all(n["state"] == "running" for n in nodes)

    def _start_standalone(self) -> None:
        for i, port in enumerate(self.node_ports):
            data = self.root / f"node{i + 1}"
            data.mkdir()
            log = shlex.quote(str(data / "out.log"))
            line = (f"{shlex.quote(str(PYNAMESRV))} node --port {port} "
                    f"--data-dir {shlex.quote(str(data))} > {log} 2>&1 &")
            if i > 0:
                line += SHELL_WAITS_FOR_BOOT.format(log=log, tries=int(NODE_BOOT_S * 10))
            shell = self.reaper.spawn(["bash", "-c", line], stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            out, err = shell.communicate(timeout=NODE_BOOT_S + 30)
            self.shells.append(subprocess.CompletedProcess(shell.args, shell.returncode, out, err))
        for addr in self.addrs:
            try:
                poll_until(lambda a=addr: self._standalone_ready(a), timeout=NODE_BOOT_S,
                           interval=0.25, what=f"standalone node {addr} to answer")
            except AssertionError as exc:
                raise AssertionError(f"{exc}\nshells: {self.shells}\n"
                                     f"log of {addr}:\n{self.node_log(addr)}") from None
        last_request = time.monotonic()
        # The documented idle gap: no request reaches any node for IDLE_GAP_S seconds.
        time.sleep(max(0.0, last_request + IDLE_GAP_S - time.monotonic()))
        self.idle_s = time.monotonic() - last_request
        self.after_idle = {addr: answers(addr) for addr in self.addrs}

    def _standalone_ready(self, addr: str) -> bool:
        if not self.node_processes()[addr]:
            raise AssertionError(f"no process of standalone node {addr} is left "
                                 "(its starting shell has exited)")
        return not answers(addr, timeout=2.0)

    def node_processes(self) -> dict[str, list[psutil.Process]]:
        """Per node address, the live processes whose command line names its data dir."""
        found: dict[str, list[psutil.Process]] = {a: [] for a in self.addrs}
        dirs = {a: str(self.root / f"node{i + 1}") for i, a in enumerate(self.addrs)}
        for proc in psutil.process_iter(["cmdline", "status"]):
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            line = proc.info["cmdline"] or []
            for addr, d in dirs.items():
                if d in line:
                    found[addr].append(proc)
        return found

    def stop_standalone(self, timeout: float = 20.0) -> None:
        """SIGTERM each standalone node's controller (it stops its workers), wait for them."""
        procs = [p for ps in self.node_processes().values() for p in ps]
        pids = {p.pid for p in procs}
        roots = []
        for proc in procs:
            try:
                if proc.ppid() not in pids:
                    proc.terminate()
                    roots.append(proc)
            except psutil.NoSuchProcess:
                continue
        # an exited node is a zombie until init reaps it (its starting shell has exited)
        with contextlib.suppress(AssertionError):
            poll_until(lambda: all(map(gone, roots)), timeout, what="standalone nodes exit")

    def node_log(self, addr: str) -> str:
        i = self.addrs.index(addr) + 1
        if self.mode == "cluster":
            return tail(self.root / "data" / f"n{i}" / "node.log")
        return tail(self.root / f"node{i}" / "out.log")

    # ---------------------------------------------------------- brokers

    def start_brokers(self) -> None:
        specs = [("broker-a", 0, {}), ("broker-a", 1, {}),
                 ("broker-b", 0, {"compressedRegister": "true"})]
        brokers = {}
        for name, broker_id, settings in specs:
            key = f"{name}/{broker_id}"
            brokers[key] = JavaBroker(self.root / f"{name}-{broker_id}", self.namesrv, name,
                                      CLUSTER, broker_id, free_broker_port(self.ports),
                                      heap="384m", settings=settings, release=self.release)
        self.brokers = brokers
        with ThreadPoolExecutor(len(brokers)) as pool:
            started = [pool.submit(b.start) for b in brokers.values()]
        for b in brokers.values():
            if b.proc is not None:
                self.reaper.track_pgid(b.proc.pid)
        for f in started:
            f.result()

    def start_proxy(self) -> None:
        """5.x: the proxy in cluster mode. Once the brokers are registered: at start it
        creates its system topics on the cluster's brokers, found through the nodes."""
        if self.release != RELEASE_5:
            return
        proxy = JavaProxy(self.root / "proxy", self.namesrv, CLUSTER, self._port(), self._port(),
                          heap="384m")
        try:
            proxy.start()
        except AssertionError as exc:
            self.proxy_error = str(exc)
            return
        if proxy.proc is not None:
            self.reaper.track_pgid(proxy.proc.pid)
        self.proxy = proxy

    def stop_brokers(self) -> None:
        for b in self.brokers.values():
            b.stop()
        if self.proxy is not None:
            self.proxy.stop()

    def broker_addr(self, key: str) -> str:
        return self.brokers[key].addr

    def expected_brokers(self) -> dict[str, dict[int, str]]:
        """brokerName → {brokerId: address} of the brokers started."""
        out: dict[str, dict[int, str]] = {}
        for key, b in self.brokers.items():
            name, broker_id = key.split("/")
            out.setdefault(name, {})[int(broker_id)] = b.addr
        return out

    # ----------------------------------------------------------- clients

    @property
    def client(self) -> NameServerClient:
        if self._client is None:
            self._client = NameServerClient(self.addrs, timeout=5.0)
        return self._client

    def per_node(self, call: Callable[[str], Any]) -> dict[str, Any]:
        """``call(addr)`` for every node; an exception becomes its text as the value."""
        out: dict[str, Any] = {}
        for addr in self.addrs:
            try:
                out[addr] = call(addr)
            except Exception as exc:  # noqa: BLE001 - reported per node in assertions
                out[addr] = f"<{type(exc).__name__}: {exc}>"
        return out

    def cluster_info(self) -> dict[str, Any]:
        return self.per_node(lambda a: self.client.get_cluster_info(addr=a))

    def routes(self, topic: str) -> dict[str, Any]:
        return self.per_node(lambda a: self.client.get_route(topic, addr=a))

    def mqadmin(self, *args: str) -> subprocess.CompletedProcess[str]:
        return mqadmin(*args, home=self.mqadmin_home, timeout=120.0, release=self.release)

    def mqadmin_batch(self, jobs: dict[str, list[str]],
                      extra: dict[str, Callable[[], subprocess.CompletedProcess[str]]]
                      | None = None) -> dict[str, subprocess.CompletedProcess[str]]:
        """Run independent mqadmin commands (and ``extra`` tool runs) in parallel."""
        with ThreadPoolExecutor(MQADMIN_PARALLEL) as pool:
            futures = {k: pool.submit(fn) for k, fn in (extra or {}).items()}
            futures.update({k: pool.submit(self.mqadmin, *argv) for k, argv in jobs.items()})
            return {k: f.result() for k, f in futures.items()}

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
