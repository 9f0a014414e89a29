"""Real Java brokers and clients that know their NameServers only through the address service.

``pynamesrv up`` runs two nodes and the address service. A real 5.x broker started with
``-Drocketmq.namesrv.domain=127.0.0.1:PORT`` (its subgroup ``nsaddr-brokers``; no
``namesrvAddr``) and a real producer and push consumer started with only
``-Drocketmq.namesrv.domain`` keep sending and receiving while a node is stopped; a node
added to cluster.yaml and ``pynamesrv reload``ed is taken by the broker at once (it
registers there) and by the clients at their next periodic fetch once it has caught up,
so with the first two nodes stopped they go on through the new one, nobody restarted.
When the new node catches up is held by one KV entry only the first nodes have until the
test copies it (as an operator must: nodes never copy KV), so the clients' first periodic
fetch, 10 s after they start, is the one that brings it.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cluster.audit.reader import ClusterReader, ReadLimits
from tests.conftest import Reaper
from tests.interop.conftest import compiled
from tests.javaproc import (
    RELEASE_5,
    JavaBroker,
    free_broker_port,
    java_client_argv,
    java_missing,
    mqadmin,
)
from tests.nodeproc import PYNAMESRV, ROOT, free_port, poll_until

pytestmark = [pytest.mark.java, pytest.mark.timeout(900)]

TOPIC = "AddrTopic"
LATE_TOPIC = "AddrTopicLate"  # created when only the added node runs: its route is only there
BROKER = "broker-addr"
# MQClientInstance fetches 10 s after start, then every 2 minutes: normally the first fetch
# brings the new list; on a machine too slow for that, the next one does
CLIENT_REFRESH_S = 130.0


def _yaml(control: int, addr_port: int, ports: dict[str, int]) -> str:
    lines = [f"control: tcp://127.0.0.1:{control}", "data_dir: data", "supervisor:",
             "  probe_interval_ms: 200", "  backoff_initial_ms: 100",
             f"  addr_service: 127.0.0.1:{addr_port}", "defaults:", "  ioWorkers: 1",
             "  businessWorkers: 1", "nodes:"]
    lines += [f"  - {{name: {name}, port: {p}}}" for name, p in ports.items()]
    return "\n".join(lines) + "\n"


class Client:
    """The AddrClient JVM; its stdout lines collected by a thread."""

    def __init__(self, argv: list[str], reaper: Reaper) -> None:
        self.proc = reaper.spawn(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def received(self) -> int:
        return sum(1 for line in list(self.lines) if line.startswith("RECEIVED "))

    def nslist(self) -> list[str]:
        lists = [line.split(" ", 1)[1] if " " in line else "" for line in list(self.lines)
                 if line.startswith("NSLIST")]
        return sorted(lists[-1].split(";")) if lists and lists[-1] else []

    def more_received(self, count: int, timeout: float, what: str) -> None:
        start = self.received()
        poll_until(lambda: self.received() >= start + count, timeout, 0.2,
                   f"{count} more messages received {what}")

    def sent_to(self, topic: str) -> int:
        return sum(1 for line in list(self.lines) if line.startswith("SENT ")
                   and line.endswith(f" {topic}"))

    def send_to(self, topic: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(topic + "\n")
        self.proc.stdin.flush()

    def stop(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(60)


@dataclass
class Cluster:
    """A ``pynamesrv up`` with the address service on ``addr_port``."""

    path: Path
    control: int
    addr_port: int
    ports: dict[str, int]

    @property
    def addr(self) -> dict[str, str]:
        return {n: f"127.0.0.1:{p}" for n, p in self.ports.items()}

    def write(self) -> None:
        self.path.write_text(_yaml(self.control, self.addr_port, self.ports))

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(PYNAMESRV), *args, "-c", str(self.path)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)

    def kv(self, *nodes: str) -> subprocess.CompletedProcess[str]:
        """``updateKvConfig`` of the order topic's layout to ``nodes`` only."""
        return subprocess.run([str(PYNAMESRV), "updateKvConfig", "-n",
                               ";".join(self.addr[n] for n in nodes), "-s", "ORDER_TOPIC_CONFIG",
                               "-k", TOPIC, "-v", f"{BROKER}:8"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)

    def listed(self, subgroup: str = "nsaddr") -> list[str]:
        url = f"http://127.0.0.1:{self.addr_port}/rocketmq/{subgroup}"
        try:
            with urllib.request.urlopen(url, timeout=5) as r:  # noqa: S310 - loopback URL
                return sorted(r.read().decode().split(";"))
        except OSError:
            return []


@pytest.fixture
def cluster(tmp_path: Path, reaper: Reaper, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    if why := java_missing(RELEASE_5):
        pytest.skip(why)
    monkeypatch.delenv("NAMESRV_ADDR", raising=False)  # nothing but the address service
    c = Cluster(tmp_path / "cluster.yaml", free_port(), free_port(),
                {"n1": free_port(), "n2": free_port()})
    c.write()
    reaper.track_marker(str(tmp_path))
    with open(tmp_path / "up.log", "wb") as log:
        up = reaper.spawn([sys.executable, "-m", "cluster.cli", "up", "-c", str(c.path)],
                          cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield c
        finally:
            c.cli("stop")
            up.wait(60)


def test_java_broker_and_clients_follow_the_address_service(
        cluster: Cluster, tmp_path: Path, reaper: Reaper, java_classes: dict[str, Path],
        tmp_path_factory: pytest.TempPathFactory) -> None:
    c = cluster
    domain = f"-Drocketmq.namesrv.domain=127.0.0.1:{c.addr_port}"
    poll_until(lambda: c.listed() == sorted(c.addr.values()), 90, 0.2, "both nodes listed")
    broker = _broker_of_the_address_service(tmp_path / "broker", domain, reaper)
    reader = ClusterReader({}, ReadLimits(timeout_s=3.0))

    def has(node: str, topic: str | None = None) -> bool:
        reader.set_nodes({node: c.addr[node]})
        snap = reader.read_round()[node].snapshot
        tables = snap["tables"] if snap else {}
        return BROKER in tables.get("broker", {}) and (topic is None or topic in tables["topic"])

    def create(topic: str, via: str) -> None:
        done = mqadmin("updateTopic", "-b", broker.addr, "-t", topic, "-n", c.addr[via],
                       home=tmp_path / "mqadmin", release=RELEASE_5)
        assert done.returncode == 0, done.stdout + done.stderr

    try:
        poll_until(lambda: has("n1") and has("n2"), 90, 0.5, "the broker on n1 and n2")
        create(TOPIC, "n1")
        poll_until(lambda: has("n1", TOPIC) and has("n2", TOPIC), 60, 0.5, "the topic routed")
        assert c.kv("n1", "n2").returncode == 0  # the cluster's KV: an order topic's layout

        _add_n3(c, lambda: has("n3", TOPIC))

        classes = compiled(java_classes, RELEASE_5, tmp_path_factory)
        argv = java_client_argv("AddrClient", classes, tmp_path / "client", TOPIC,
                                rel=RELEASE_5)
        argv.insert(argv.index("AddrClient"), domain)  # a JVM option, before the main class
        client = Client(argv, reaper)
        poll_until(lambda: client.nslist() != [], 90, 0.1, "the clients started")
        # their first periodic fetch comes 10 s after start
        assert client.nslist() == sorted([c.addr["n1"], c.addr["n2"]])
        assert c.cli("stop", "n1").returncode == 0
        assert c.kv("n3").returncode == 0  # the operator copies the KV: n3 has caught up
        poll_until(lambda: c.listed() == sorted([c.addr["n2"], c.addr["n3"]]), 10, 0.1,
                   "n1 unlisted, n3 listed")
        client.more_received(10, 60, "with n1 stopped")
        poll_until(lambda: client.nslist() == sorted([c.addr["n2"], c.addr["n3"]]),
                   CLIENT_REFRESH_S + 20, 0.2, "the clients took the new list")

        assert c.cli("stop", "n2").returncode == 0
        client.more_received(10, 90, "with only n3 running")
        create(LATE_TOPIC, "n3")  # only n3 runs: only n3 has its route
        poll_until(lambda: has("n3", LATE_TOPIC), 60, 0.5, "the late topic on n3")
        client.send_to(LATE_TOPIC)
        poll_until(lambda: client.sent_to(LATE_TOPIC) >= 3, 60, 0.2,
                   "sends to a topic only n3 routes")
        assert client.stop() == 0
    finally:
        reader.close()
        broker.stop()


def _broker_of_the_address_service(home: Path, domain: str, reaper: Reaper) -> JavaBroker:
    """A 5.x broker that takes its NameServers from the address service's brokers' list."""
    broker = JavaBroker(home, "", BROKER, "C1", 0, free_broker_port(set()),
                        heap="384m", release=RELEASE_5,
                        settings={"fetchNamesrvAddrByAddressServer": "true",
                                  "fetchNamesrvAddrInterval": "1000",
                                  "registerNameServerPeriod": "10000"},
                        jvm_options=[domain,
                                     "-Drocketmq.namesrv.domain.subgroup=nsaddr-brokers"])
    broker.start()
    assert broker.proc is not None
    reaper.track_pgid(broker.proc.pid)
    return broker


def _add_n3(c: Cluster, registered: Callable[[], bool]) -> None:
    """n3 is added: the brokers register with it; it lacks the KV entry (nodes never copy
    KV), so it differs from the majority and is not in the clients' list yet."""
    c.ports["n3"] = free_port()
    c.write()
    out = c.cli("reload")
    assert out.returncode == 0 and "added n3" in out.stdout, out.stdout + out.stderr
    poll_until(registered, 60, 0.5, "the broker registered with n3")
    assert c.listed() == sorted([c.addr["n1"], c.addr["n2"]])
    assert c.listed("nsaddr-brokers") == sorted(c.addr.values())
