"""``pynamesrv broker-sim`` beside a real node: addresses that cannot be a real broker's,
SIGTERM in the background, nonsense refused."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.audit.reader import ClusterReader, ReadLimits
from cluster.client.broker_sim import choose_base_port, sim_ports
from cluster.core.protocol.codes import RequestCode
from tests.conftest import Reaper
from tests.nodeproc import PYNAMESRV, NodeProcess, poll_until
from tests.unit.client_fakes import FakeNameServer
from tests.unit.test_client_nsclient import namesrv

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    n = NodeProcess(tmp_path_factory.mktemp("sim-node") / "n1", name="n1").start()
    yield n
    n.stop()


def brokers(node: NodeProcess, prefix: str) -> dict[str, dict[str, str]]:
    """Broker name -> {id: address} on the node, for the names starting with ``prefix``."""
    with ClusterReader({node.name: node.addr}, ReadLimits(timeout_s=5.0)) as reader:
        table = reader.read_node(node.name)["tables"]["broker"]
    return {name: b["brokerAddrs"] for name, b in table.items() if name.startswith(prefix)}


def sim(node: NodeProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYNAMESRV, "broker-sim", "-n", node.addr, *args],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def listener() -> Iterator[int]:
    """A listening socket on the block the simulator would take by default (a real broker)."""
    port = choose_base_port(2, 0)
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
        yield port


def test_simulated_brokers_move_past_a_port_with_a_listener(node: NodeProcess, listener: int,
                                                            tmp_path: Path) -> None:
    reaper = Reaper()
    out = tmp_path / "sim.out"
    try:
        with out.open("w") as f:
            proc = reaper.spawn([PYNAMESRV, "broker-sim", "-n", node.addr, "--brokers", "2",
                                 "--broker-prefix", "moved-"], stdout=f, stderr=f)
        found = poll_until(lambda: len(b := brokers(node, "moved-")) == 2 and b, 30, 0.05,
                           "two simulated brokers registered")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        reaper.reap()
    addrs = {a for b in found.values() for a in b.values()}
    assert f"127.0.0.1:{listener}" not in addrs and len(addrs) == 2
    base = min(int(a.rpartition(":")[2]) for a in addrs)
    assert listener not in sim_ports(2, 0, base)
    assert f"(base port {base})" in out.read_text()


def test_a_base_port_with_a_listener_is_refused(node: NodeProcess, listener: int) -> None:
    done = sim(node, "--base-port", str(listener), "--brokers", "2", "--duration", "1")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and f"127.0.0.1:{listener} is in use" in done.stderr
    assert brokers(node, "broker-") == {}


def test_sigterm_unregisters_a_simulator_started_in_the_background(tmp_path: Path) -> None:
    """``sim &`` in a script: the shell makes it ignore SIGINT; SIGTERM still unregisters."""
    out = tmp_path / "sim.out"
    reaper = Reaper()
    with FakeNameServer(namesrv) as fake:
        script = (f"{PYNAMESRV} broker-sim -n {fake.addr} --brokers 1 --slaves 1 "
                  f"--broker-prefix bg- > {out} 2>&1 & echo $!; wait $!; echo rc=$?")
        shell = reaper.spawn(["sh", "-c", script], stdout=subprocess.PIPE, text=True)
        try:
            assert shell.stdout is not None
            pid = int(shell.stdout.readline())
            poll_until(lambda: len(addrs(fake, RequestCode.REGISTER_BROKER)) == 2, 30, 0.05,
                       "master and slave registered")
            ignored = Path(f"/proc/{pid}/status").read_text().split("SigIgn:")[1].split()[0]
            assert int(ignored, 16) & (1 << (signal.SIGINT - 1)), "the shell ignores SIGINT"
            os.kill(pid, signal.SIGTERM)
            rest, _ = shell.communicate(timeout=30)
        finally:
            reaper.reap()
        assert rest.strip() == "rc=0", out.read_text()
        assert addrs(fake, RequestCode.UNREGISTER_BROKER) == addrs(
            fake, RequestCode.REGISTER_BROKER)
    assert "SIGTERM: stopping" in out.read_text()


def addrs(fake: FakeNameServer, code: int) -> set[str]:
    return {str(r.field("brokerAddr")) for r in list(fake.requests) if r.code == code}


@pytest.mark.parametrize("args", [
    ["--brokers", "-1"], ["--brokers", "0"], ["--slaves", "9"], ["--queues", "0"],
    ["--perm", "8"], ["--duration", "120x"], ["--period", "0"], ["--base-port", "70000"],
    ["--cluster", ""], ["--crash-count", "0"], ["--report-every", "-1s"],
])
def test_nonsense_is_one_line_and_exit_2(args: list[str]) -> None:
    done = subprocess.run([PYNAMESRV, "broker-sim", "-n", "127.0.0.1:1", *args],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("pynamesrv broker-sim: error: argument")

