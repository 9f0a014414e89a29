"""The supervisor with real node processes on free loopback ports.

Covers readiness, restart after kill -9, flapping, pause/resume and hang
detection, the control endpoint and CLI, clean stops and no orphans when the
supervisor itself is SIGKILLed. Every process is reaped by the Reaper.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
import zmq

from cluster.client.fanout import BrokerIdentity, BrokerOuterAPI, RegisterPayload
from cluster.client.nsclient import NameServerClient
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from supervisor.control_client import ControlClient, ControlUnavailable
from tests.conftest import Reaper, group_members
from tests.nodeproc import ROOT, TEST_RELEASE, Conn, free_ports, poll_until

pytestmark = pytest.mark.integration

BOOT_S = 90.0


class Cluster:
    """A `pynamesrv up` process on a generated cluster.yaml, driven over its control endpoint."""

    def __init__(self, root: Path, reaper: Reaper, nodes: int, **supervisor: int) -> None:
        self.root = root
        self.reaper = reaper
        self.ports = free_ports(nodes + 1)
        self.control = f"tcp://127.0.0.1:{self.ports[0]}"
        self.path = root / "cluster.yaml"
        self.path.write_text(_yaml(self.control, self.ports[1:], supervisor))
        reaper.track_marker(str(root))
        self.proc: subprocess.Popen[bytes] | None = None
        self.client = ControlClient(self.control, timeout=5.0)

    def up(self, *extra: str) -> Cluster:
        self.log = open(self.root / "up.log", "wb")  # noqa: SIM115 - closed in close()
        self.proc = self.reaper.spawn(
            [sys.executable, "-m", "cluster.cli", "up", "-c", str(self.path), *extra],
            cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            poll_until(lambda: self._all("running"), BOOT_S, 0.1, "every node running")
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.diagnostics()}") from None
        return self

    def diagnostics(self) -> str:
        parts = [f"--- up.log\n{_tail(self.root / 'up.log')}"]
        for log in sorted((self.root / "data").glob("*/node.log")):
            parts.append(f"--- {log.parent.name}/node.log\n{_tail(log)}")
        return "\n".join(parts)

    def _all(self, state: str) -> bool:
        try:
            return all(n["state"] == state for n in self.client.status())
        except ControlUnavailable:
            assert self.proc is not None and self.proc.poll() is None, self.output()
            return False

    def node(self, name: str) -> dict[str, Any]:
        return self.client.node_status(name)

    def addr(self, name: str) -> str:
        n = self.node(name)
        return f"{n['host']}:{n['port']}"

    def wait_state(self, name: str, state: str, timeout: float = BOOT_S) -> dict[str, Any]:
        return poll_until(lambda: (n := self.node(name))["state"] == state and n,
                          timeout, 0.05, f"{name} {state}")

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cluster.cli", *args, "-c", str(self.path)],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)

    def pgids(self) -> list[int]:
        return [n["pgid"] for n in self.client.status() if n["pgid"]]

    def output(self) -> str:
        return (self.root / "up.log").read_text(errors="replace")

    def close(self) -> None:
        self.client.close()
        if getattr(self, "log", None):
            self.log.close()


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(none)"


def _yaml(control: str, ports: list[int], supervisor: dict[str, int]) -> str:
    sup = {"readiness_timeout_s": 60, "probe_interval_ms": 200, "probe_timeout_ms": 1000,
           "hung_after_failures": 3, "backoff_initial_ms": 100, "backoff_max_ms": 1000,
           "stop_grace_s": 10, **supervisor}
    lines = [f"control: {control}", "data_dir: data", "supervisor:"]
    lines += [f"  {k}: {v}" for k, v in sup.items()]
    lines += ["defaults:", f"  rocketmqVersion: \"{TEST_RELEASE}\"", "  ioWorkers: 1",
              "  businessWorkers: 1", "nodes:"]
    lines += [f"  - {{name: n{i + 1}, port: {p}}}" for i, p in enumerate(ports)]
    return "\n".join(lines) + "\n"


def cluster_info(addr: str, timeout: float = 5.0) -> RemotingCommand:
    conn = Conn(addr, timeout)
    try:
        return conn.call(RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO, version=409))
    finally:
        conn.close()


def serves(addr: str) -> bool:
    try:
        return cluster_info(addr, 2.0).code == ResponseCode.SUCCESS
    except OSError:
        return False


def no_members(pgids: list[int]) -> bool:
    return not any(group_members(g) for g in pgids)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reaper = Reaper()
    c = Cluster(tmp_path_factory.mktemp("cluster3"), reaper, nodes=3)
    try:
        yield c.up()
        pgids = c.pgids()
        assert c.cli("stop").returncode == 0
        assert c.proc is not None and c.proc.wait(30) == 0, c.output()
        poll_until(lambda: no_members(pgids), 10, 0.05, "no node process left")
    finally:
        c.close()
        reaper.reap()


@pytest.fixture
def small(tmp_path: Path, reaper: Reaper) -> Iterator[Cluster]:
    c = Cluster(tmp_path, reaper, nodes=2, flap_max_restarts=3, stable_after_s=30)
    yield c
    c.close()


# ------------------------------------------------------------- shared cluster


def test_every_node_answers_a_rocketmq_request(cluster: Cluster) -> None:
    for name in ("n1", "n2", "n3"):
        reply = cluster_info(cluster.addr(name))
        assert reply.code == ResponseCode.SUCCESS
        assert reply.opaque == 1


def test_status_reports_every_node(cluster: Cluster) -> None:
    nodes = cluster.client.status()
    assert [n["name"] for n in nodes] == ["n1", "n2", "n3"]
    for n in nodes:
        assert n["pid"] and n["pgid"] == n["pid"]
        assert set(n) >= {"host", "port", "state", "uptime_s", "restarts", "last_exit"}


def test_kill_9_of_a_controller_is_restarted_and_serves(cluster: Cluster) -> None:
    before = cluster.node("n1")
    os.kill(before["pid"], signal.SIGKILL)
    after = poll_until(lambda: (n := cluster.node("n1"))["pid"] != before["pid"]
                       and n["state"] == "running" and n, BOOT_S, 0.05, "n1 restarted")
    assert after["restarts"] == before["restarts"] + 1
    assert "SIGKILL" in after["last_exit"]
    poll_until(lambda: no_members([before["pgid"]]), 10, 0.05, "old process group gone")
    assert serves(cluster.addr("n1"))


def test_routes_survive_a_kill_9_and_the_supervisors_restart(cluster: Cluster) -> None:
    addr = cluster.addr("n3")
    who = BrokerIdentity("DefaultCluster", "broker-kept", "127.0.0.1:32911", 0, "127.0.0.1:32912")
    table = {"KeptTopic": {"topicName": "KeptTopic", "readQueueNums": 2, "writeQueueNums": 2,
                           "perm": 6}}
    payload = RegisterPayload.build({"counter": 1, "timestamp": 1}, table, [], False)
    with BrokerOuterAPI([addr]) as api:  # open: a closed broker connection removes the broker
        assert api.register_broker_all(who, payload, timeout=5.0).all_ok
        before = cluster.node("n3")
        cluster.client.kill("n3")
        poll_until(lambda: (n := cluster.node("n3"))["pid"] != before["pid"]
                   and n["state"] == "running", BOOT_S, 0.05, "n3 restarted")
        with NameServerClient([addr], timeout=2.0) as client:
            route = client.get_route("KeptTopic", addr=addr)
    assert [b["brokerName"] for b in route["brokerDatas"]] == ["broker-kept"]


def test_pause_and_resume_over_control(cluster: Cluster) -> None:
    addr = cluster.addr("n2")
    assert cluster.client.pause("n2")["node"]["state"] == "paused"
    assert not serves(addr)
    cluster.client.resume("n2")
    cluster.wait_state("n2", "running")
    assert serves(addr)


def test_pause_and_resume_with_the_cli(cluster: Cluster) -> None:
    out = cluster.cli("pause", "n3", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["node"]["state"] == "paused"
    table = cluster.cli("status")
    assert table.returncode == 0
    assert any(line.startswith("n3") and "paused" in line for line in table.stdout.splitlines())
    out = cluster.cli("resume", "n3")
    assert out.returncode == 0 and "n3:" in out.stdout
    cluster.wait_state("n3", "running")
    assert serves(cluster.addr("n3"))


def test_external_sigstop_is_reported_hung(cluster: Cluster) -> None:
    pgid = cluster.node("n2")["pgid"]
    os.killpg(pgid, signal.SIGSTOP)
    try:
        cluster.wait_state("n2", "hung", 30)
    finally:
        os.killpg(pgid, signal.SIGCONT)
    cluster.wait_state("n2", "running", 30)


def test_stop_and_start_a_node_with_the_cli(cluster: Cluster) -> None:
    addr = cluster.addr("n3")
    restarts = cluster.node("n3")["restarts"]
    out = cluster.cli("stop", "n3")
    assert out.returncode == 0, out.stderr
    assert cluster.node("n3")["state"] == "stopped" and not cluster.node("n3")["pid"]
    assert not serves(addr)
    out = cluster.cli("start", "n3")
    assert out.returncode == 0, out.stderr
    assert "running" in out.stdout
    assert serves(addr)
    assert cluster.node("n3")["restarts"] == restarts  # asked for, not a restart


def test_restart_with_the_cli_waits_for_a_new_process(cluster: Cluster) -> None:
    before = cluster.node("n1")
    out = cluster.cli("restart", "n1", "--json")
    assert out.returncode == 0, out.stderr
    after = json.loads(out.stdout)["node"]
    assert after["state"] == "running" and after["pid"] != before["pid"]
    assert "restart requested" in after["last_exit"]
    assert after["restarts"] == before["restarts"]
    assert serves(cluster.addr("n1"))


def test_kill_with_the_cli_shows_the_node_after_the_kill(cluster: Cluster) -> None:
    before = cluster.node("n2")
    out = cluster.cli("kill", "n2")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"n2: sent SIGKILL to process group {before['pgid']}; now ")
    assert f"pid {before['pid']}," not in out.stdout
    assert "last exit: killed by SIGKILL" in out.stdout
    after = cluster.wait_state("n2", "running")
    assert after["restarts"] == before["restarts"] + 1  # the supervisor brought it back
    out = cluster.cli("kill", "n2", "--signal", "WINCH", "--wait-timeout", "300ms")  # ignored
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (f"n2: sent SIGWINCH to process group {after['pgid']}; still "
                                  f"running (pid {after['pid']}) after 0.3s")


def test_bad_requests_get_an_error_not_a_hang(cluster: Cluster) -> None:
    c = cluster.client
    assert "unknown command" in c.request("fly")["error"]
    assert "no node named" in c.request("stop", "zz")["error"]
    assert "node name is required" in c.request("pause")["error"]
    assert "unknown signal" in c.request("kill", "n1", signal="NOPE")["error"]
    assert "use pause" in c.request("kill", "n1", signal="STOP")["error"]
    assert "not paused" in c.request("resume", "n1")["error"]
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 5000)
    sock.connect(cluster.control)
    try:
        sock.send(b"{not json")
        assert json.loads(sock.recv())["ok"] is False
        sock.send(b"[1, 2]")
        assert json.loads(sock.recv())["ok"] is False
    finally:
        sock.close()


# ------------------------------------------------------------- own clusters


def test_a_node_that_keeps_dying_is_failed_and_the_rest_serve(small: Cluster) -> None:
    small.up()
    port = small.node("n2")["port"]
    small.client.stop("n2")
    poll_until(lambda: not small.node("n2")["pid"], 30, 0.05, "n2 stopped")
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", port))
        squatter.listen()
        small.client.start("n2")
        failed = small.wait_state("n2", "failed", 60)
    assert "flapping" in small.output()
    assert failed["last_exit"] and "exit code 2" in failed["last_exit"]
    assert small.node("n1")["state"] == "running"
    assert serves(small.addr("n1"))


def _children(proc: subprocess.Popen[bytes] | None, name: str) -> list[psutil.Process]:
    assert proc is not None
    return [p for p in psutil.Process(proc.pid).children() if p.name() == name]


def _zombies(proc: subprocess.Popen[bytes] | None) -> list[psutil.Process]:
    assert proc is not None
    return [p for p in psutil.Process(proc.pid).children()
            if p.status() == psutil.STATUS_ZOMBIE]


def test_nodes_forked_by_the_launcher_are_the_supervisors_and_work_without_it(
        small: Cluster) -> None:
    small.up()
    [launcher] = _children(small.proc, "pns-launcher")
    for name in ("n1", "n2"):
        node = small.node(name)
        proc = psutil.Process(node["pid"])
        assert proc in _children(small.proc, "pns-node")
        assert node["pgid"] == node["pid"]
        line = proc.cmdline()  # the node's own, as if it had been started by exec
        assert line[1:4] == ["-P", "-m", "worker.controller"], line
        assert line[-4:] == ["--name", name, "--host", "127.0.0.1"], line
        assert line[line.index("--port") + 1] == str(node["port"]), line
    before = small.node("n1")
    os.kill(before["pid"], signal.SIGKILL)  # its zygote and workers are handed to the supervisor
    poll_until(lambda: (n := small.node("n1"))["pid"] != before["pid"]
               and n["state"] == "running", BOOT_S, 0.05, "n1 restarted by the launcher")
    assert serves(small.addr("n1"))
    poll_until(lambda: not _zombies(small.proc), 10, 0.05, "what n1 left behind reaped")

    launcher.kill()
    poll_until(lambda: "event=launcher_gone" in small.output(), 10, 0.05, "launcher gone")
    assert serves(small.addr("n1")) and serves(small.addr("n2"))
    before = small.node("n2")
    os.kill(before["pid"], signal.SIGKILL)
    poll_until(lambda: (n := small.node("n2"))["pid"] != before["pid"]
               and n["state"] == "running", BOOT_S, 0.05, "n2 restarted by exec")
    assert serves(small.addr("n2"))
    poll_until(lambda: not _zombies(small.proc), 10, 0.05, "the launcher and n2's rest reaped")


def test_sigkill_of_the_supervisor_leaves_no_orphans(small: Cluster) -> None:
    small.up()
    pgids = small.pgids()
    assert small.proc is not None
    small.proc.kill()
    small.proc.wait(10)
    poll_until(lambda: no_members(pgids), 15, 0.1, "nodes gone after supervisor SIGKILL")


def test_sigint_stops_everything_cleanly(small: Cluster) -> None:
    small.up()
    pgids = small.pgids()
    assert small.proc is not None
    small.proc.send_signal(signal.SIGINT)
    assert small.proc.wait(30) == 0, small.output()
    poll_until(lambda: no_members(pgids), 10, 0.05, "no node process left")
    assert "cluster stopped" in small.output()


def test_up_with_brokers_runs_the_simulator_as_a_managed_child(small: Cluster) -> None:
    small.up("--brokers", "1")

    def sim_running() -> bool:
        children = small.client.call("status")["children"]
        return bool(children) and children[0]["state"] == "running"

    poll_until(sim_running, 30, 0.1, "broker-sim running")

    def registered() -> bool:
        body = cluster_info(small.addr("n1")).body or b""
        return b"brokerAddrTable" in body and b"brokerName" in body

    poll_until(registered, 30, 0.2, "a simulated broker registered on n1")
    started = time.monotonic()
    assert small.cli("stop", "--timeout", "30s").returncode == 0
    # It returns once the supervisor is gone, not after the control timeout (it waited for
    # that on its last status request).
    assert time.monotonic() - started < 20
    assert small.proc is not None and small.proc.wait(30) == 0


# ------------------------------------------------------------- bad configuration


def _up(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cluster.cli", "up", "-c", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


BAD_EDITS = {
    "unknown key": lambda t, p: (t + "colour: blue\n", "colour: unknown key"),
    "duplicate port": lambda t, p: (t.replace(f"port: {p[2]}", f"port: {p[1]}"),
                                    f"nodes[1].port: {p[1]} is also used by nodes[0]"),
    "uncreatable dir": lambda t, p: (t.replace("data_dir: data", "data_dir: blocker/data"),
                                     "data_dir: cannot create"),
}


@pytest.mark.parametrize("case", sorted(BAD_EDITS))
def test_bad_cluster_yaml_exits_2_with_one_line(tmp_path: Path, reaper: Reaper,
                                                 case: str) -> None:
    (tmp_path / "blocker").write_text("a file, not a directory")
    c = Cluster(tmp_path, reaper, nodes=2)
    text, key = BAD_EDITS[case](c.path.read_text(), c.ports)
    c.path.write_text(text)
    out = _up(c.path)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(c.path) in lines[0] and key in lines[0], out.stderr
    assert not (tmp_path / "data" / "n1" / "node.log").exists()
    c.close()


def test_port_in_use_exits_2_and_starts_nothing(tmp_path: Path, reaper: Reaper) -> None:
    c = Cluster(tmp_path, reaper, nodes=2)
    reaper.track_marker(str(tmp_path))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", c.ports[2]))
        busy.listen()
        out = _up(c.path)
    assert out.returncode == 2
    assert f"nodes[1].port: 127.0.0.1:{c.ports[2]} is in use" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "data" / "n1" / "node.log").exists()
    c.close()


def test_cli_without_a_supervisor_says_so(tmp_path: Path, reaper: Reaper) -> None:
    c = Cluster(tmp_path, reaper, nodes=1)
    out = c.cli("status", "--timeout", "0.5")
    assert out.returncode == 2
    assert "no supervisor answered" in out.stderr
    c.close()
