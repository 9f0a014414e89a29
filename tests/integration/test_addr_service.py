"""The address service with real nodes, through the installed ``pynamesrv`` command.

Standalone (``addr-service -n``): a node that misses a broker leaves the clients' list
after ``--diverged-after`` and comes back once the broker registers with it; a paused
node leaves at once. Under ``pynamesrv up`` (``supervisor.addr_service``): a node added to
cluster.yaml and ``pynamesrv reload``ed joins once it has caught up, one removed leaves
both lists, one stopped leaves the clients' list.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from cluster.client.fanout import BrokerIdentity, BrokerOuterAPI, RegisterPayload
from supervisor.control_client import ControlClient, ControlUnavailable
from tests.conftest import Reaper
from tests.nodeproc import (
    ROOT,
    TEST_RELEASE,
    NodeProcess,
    free_port,
    poll_until,
    start_all,
    stop_all,
)

pytestmark = pytest.mark.integration

PYNAMESRV = str(ROOT / ".venv" / "bin" / "pynamesrv")
DIVERGED_AFTER_S = 3.0
PERIOD_S = 0.5


def _who(name: str, port: int) -> BrokerIdentity:
    return BrokerIdentity("DefaultCluster", name, f"127.0.0.1:{port}", 0, f"127.0.0.1:{port + 1}")


def _payload(topic: str) -> RegisterPayload:
    table = {topic: {"topicName": topic, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6}}
    return RegisterPayload.build({"counter": 1, "timestamp": 1}, table, [], False)


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:  # noqa: S310 - loopback test URL
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def listed(base: str, suffix: str = "") -> list[str]:
    status, body = get(f"{base}/rocketmq/nsaddr{suffix}")
    return sorted(body.split(";")) if status == 200 and body else []


def nodes(base: str) -> dict[str, dict[str, Any]]:
    status, body = get(f"{base}/status.json")
    return {n["name"]: n for n in orjson.loads(body)["nodes"]} if status == 200 else {}


def reasons(base: str) -> dict[str, str]:
    return {name: n["reason"] for name, n in nodes(base).items()}


@pytest.fixture
def three(tmp_path: Path) -> Iterator[list[NodeProcess]]:
    nodes = start_all(NodeProcess(tmp_path / f"n{i + 1}", name=f"n{i + 1}") for i in range(3))
    try:
        yield nodes
    finally:
        for n in nodes:
            if n.proc is not None and n.proc.poll() is None:
                os.killpg(n.proc.pid, signal.SIGCONT)
        stop_all(nodes)


def test_a_diverged_or_paused_node_leaves_the_list_and_returns_once_it_agrees(
        three: list[NodeProcess], reaper: Reaper, tmp_path: Path) -> None:
    n1, n2, n3 = (n.addr for n in three)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "addr.log", "wb")  # noqa: SIM115 - closed below
    reaper.spawn([PYNAMESRV, "addr-service", "-n", f"{n1};{n2};{n3}", "--listen",
                  f"127.0.0.1:{port}", "--period", f"{PERIOD_S}s", "--timeout", "0.4s",
                  "--diverged-after", f"{DIVERGED_AFTER_S}s"], stdout=log,
                 stderr=subprocess.STDOUT)
    every = sorted([n1, n2, n3])
    with BrokerOuterAPI([n1, n2, n3]) as api:
        try:
            assert api.register_broker_all(_who("broker-a", 20911), _payload("A")).all_ok
            poll_until(lambda: listed(base) == every, 30, 0.1, "every node listed")
            assert listed(base, "-brokers") == every
            # broker-b never reaches n2 (as if its connection to n2 were cut)
            cut_at = time.monotonic()
            assert api.register_broker_all(_who("broker-b", 21911), _payload("B"),
                                           addrs=[n1, n3]).all_ok
            poll_until(lambda: n2 not in listed(base), DIVERGED_AFTER_S + 10, 0.05,
                       "the diverged node unlisted")
            left_after = time.monotonic() - cut_at
            print(f"diverged node left the list after {left_after:.2f}s "
                  f"(--diverged-after {DIVERGED_AFTER_S}s, --period {PERIOD_S}s)")
            assert left_after >= DIVERGED_AFTER_S
            assert "broker broker-b" in reasons(base)["127.0.0.1:" + n2.split(":")[1]]
            assert listed(base, "-brokers") == every  # brokers still register everywhere

            paused = three[2].proc
            assert paused is not None
            os.killpg(paused.pid, signal.SIGSTOP)
            poll_until(lambda: listed(base) == [n1], 10, 0.05, "the paused node unlisted")
            os.killpg(paused.pid, signal.SIGCONT)
            poll_until(lambda: listed(base) == sorted([n1, n3]), 10, 0.05, "n3 back")

            assert api.register_broker_all(_who("broker-b", 21911), _payload("B"),
                                           addrs=[n2]).all_ok
            poll_until(lambda: listed(base) == every, 10, 0.05, "n2 back once it agrees")
        finally:
            log.close()


def _yaml(control: int, addr_port: int, ports: dict[str, int]) -> str:
    lines = [f"control: tcp://127.0.0.1:{control}", "data_dir: data", "supervisor:",
             "  probe_interval_ms: 200", "  backoff_initial_ms: 100", "  stop_grace_s: 10",
             f"  addr_service: 127.0.0.1:{addr_port}", "defaults:",
             f"  rocketmqVersion: \"{TEST_RELEASE}\"", "  ioWorkers: 1",
             "  businessWorkers: 1", "nodes:"]
    lines += [f"  - {{name: {name}, port: {p}}}" for name, p in ports.items()]
    return "\n".join(lines) + "\n"


def _cli(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYNAMESRV, *args, "-c", str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_reload_adds_and_removes_nodes_and_the_lists_follow(tmp_path: Path,
                                                             reaper: Reaper) -> None:
    control, addr_port = free_port(), free_port()
    ports = {"n1": free_port(), "n2": free_port()}
    path = tmp_path / "cluster.yaml"
    path.write_text(_yaml(control, addr_port, ports))
    reaper.track_marker(str(tmp_path))
    log = open(tmp_path / "up.log", "wb")  # noqa: SIM115 - closed below
    up = reaper.spawn([sys.executable, "-m", "cluster.cli", "up", "-c", str(path)], cwd=ROOT,
                      stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{addr_port}"
    addr = {n: f"127.0.0.1:{p}" for n, p in ports.items()}
    client = ControlClient(f"tcp://127.0.0.1:{control}", timeout=2.0)
    try:
        poll_until(lambda: listed(base) == sorted(addr.values()), 90, 0.1, "both nodes listed")
        with BrokerOuterAPI(list(addr.values())) as api:
            assert api.register_broker_all(_who("broker-a", 22911), _payload("A")).all_ok
            ports["n3"] = free_port()
            addr["n3"] = f"127.0.0.1:{ports['n3']}"
            path.write_text(_yaml(control, addr_port, ports))
            out = _cli(path, "reload")
            assert out.returncode == 0 and "added n3" in out.stdout, out.stdout + out.stderr
            poll_until(lambda: addr["n3"] in listed(base, "-brokers"), 60, 0.1, "n3 for brokers")
            poll_until(lambda: "catching up" in reasons(base).get("n3", ""), 60, 0.1,
                       "n3 running, not caught up yet")
            assert addr["n3"] not in listed(base)
            assert api.register_broker_all(_who("broker-a", 22911), _payload("A"),
                                           addrs=[addr["n3"]]).all_ok
            poll_until(lambda: listed(base) == sorted(addr.values()), 10, 0.05, "n3 joined")

            _killed_node_leaves_and_returns(path, base, addr, client)
            del ports["n1"]
            path.write_text(_yaml(control, addr_port, ports))
            _removed_node_leaves(path, base, addr, client)

            assert _cli(path, "stop", "n2").returncode == 0
            poll_until(lambda: listed(base) == [addr["n3"]], 10, 0.05, "stopped n2 unlisted")
        assert _cli(path, "stop").returncode == 0
        assert up.wait(60) == 0
    except (AssertionError, ControlUnavailable):
        log.flush()
        print((tmp_path / "up.log").read_text(errors="replace")[-4000:])
        print((tmp_path / "data" / "addr-service.log").read_text(errors="replace")[-4000:])
        raise
    finally:
        client.close()
        log.close()


def _killed_node_leaves_and_returns(path: Path, base: str, addr: dict[str, str],
                                    client: ControlClient) -> None:
    """A node SIGKILLed and restarted by the supervisor leaves the list and comes back once it
    agrees: with its routes kept, at once (nothing here registers again)."""
    killed = client.node_status("n2")["pid"]
    assert _cli(path, "kill", "n2").returncode == 0
    poll_until(lambda: addr["n2"] not in listed(base), 10, 0.05, "killed n2 unlisted")
    poll_until(lambda: (n := client.node_status("n2"))["pid"] != killed
               and n["state"] == "running", 60, 0.1, "n2 restarted")
    poll_until(lambda: listed(base) == sorted(addr.values()), 10, 0.05, "n2 back")
    assert nodes(base)["n2"]["read"] == "digest"  # the dropped connection changed nothing


def _removed_node_leaves(path: Path, base: str, addr: dict[str, str],
                         client: ControlClient) -> None:
    """n1 taken out of the cluster file: a reload unlists it and the supervisor forgets it."""
    out = _cli(path, "reload")
    assert "removed n1" in out.stdout, out.stdout + out.stderr
    poll_until(lambda: listed(base) == sorted([addr["n2"], addr["n3"]]), 10, 0.05,
               "n1 unlisted")
    poll_until(lambda: [n["name"] for n in client.status()] == ["n2", "n3"], 30, 0.1,
               "n1 forgotten")
    assert listed(base, "-brokers") == sorted([addr["n2"], addr["n3"]])
