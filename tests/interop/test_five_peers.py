"""Real RocketMQ 5.x software against a ``pynamesrv up`` cluster, side by side with the Java
5.5.0 NameServer (marker ``java``).

One deployment for the module: two nodes following 5.x (``supportActingMaster``,
``enableShutdownGracefully``) and a Java 5.5.0 NameServer with the same settings; every
broker registers to all three. Group broker-a is a master/slave pair and broker-b a
master, all with ``enableSlaveActingMaster=true`` and ``compatibleWithOldNameSrv=false``
(BROKER_HEARTBEAT, GET_BROKER_MEMBER_GROUP), in zones zoneA and zoneB; broker-big, in a
cluster of its own, holds 70,000 topics and registers them with ``enableSplitRegistration``.
The Java client programs are ``java5/FiveProbe.java``. The tests run in file order: the last
one stops a node.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest

from cluster.core.protocol.codes import V5_5_0, RequestCode
from cluster.core.protocol.command import RemotingCommand
from cluster.core.protocol.lenient import loads_lenient
from tests.conftest import Reaper
from tests.interop.harness import PYNAMESRV, show, tail
from tests.java_diff.normalize import canonical
from tests.java_diff.sides import Outcome
from tests.javaproc import (
    RELEASE_5,
    JavaBroker,
    JavaNamesrv,
    free_broker_port,
    java_client_argv,
    java_missing,
    javac,
    mqadmin,
)
from tests.nodeproc import Conn, free_port, poll_until

pytestmark = [pytest.mark.java]
CLUSTER, BIG_CLUSTER = "C5", "C5big"
BIG_TOPICS = 70_000
SETTINGS = {"supportActingMaster": "true", "enableShutdownGracefully": "true",
            "shutdownWaitTimeSeconds": "3"}
FIVE_BROKER = {"enableSlaveActingMaster": "true", "compatibleWithOldNameSrv": "false",
               "slaveReadEnable": "true"}  # the acting master serves what its group stored
JAVA_SRC = Path(__file__).resolve().parent / "java5"
BOOT_S = 180.0  # brokers boot in parallel on two shared cores; broker-big reads 70,000 topics
# A consume probe's bound, in seconds (it ends once every message arrived): a broker refuses a
# new push consumer's pulls ("subscription is not latest") until a heartbeat carries the
# client's new subscription version; when the client skips the one it sends at once (another
# heartbeat under way), that is its next, 30 s later.
CONSUME_S = "90"
GET_ALL_TOPIC_CONFIG = 21  # a broker's request code: its topic configs


@dataclass
class Five:
    root: Path
    reaper: Reaper
    config: Path = field(init=False)
    node_addrs: list[str] = field(default_factory=list)
    java: JavaNamesrv | None = None
    brokers: dict[str, JavaBroker] = field(default_factory=dict)
    classes: Path | None = None
    up: subprocess.Popen[bytes] | None = None
    ports: set[int] = field(default_factory=set)

    @property
    def servers(self) -> list[str]:
        assert self.java is not None
        return [*self.node_addrs, self.java.addr]

    @property
    def namesrv(self) -> str:
        return ";".join(self.servers)

    def call(self, addr: str, code: int, ext: dict[str, str] | None = None) -> RemotingCommand:
        conn = Conn(addr, timeout=30.0)  # ordering 70,000 topics takes a second or two
        try:
            return conn.call(RemotingCommand(code=code, version=V5_5_0, ext_fields=ext))
        finally:
            conn.close()

    def canonical(self, addr: str, code: int, ext: dict[str, str] | None = None) -> Any:
        """A reply as the differential suite compares it (header fields and parsed body)."""
        out = canonical(Outcome("reply", self.call(addr, code, ext)))
        out.pop("flag", None)
        return out

    def probe(self, *args: str, jvm: tuple[str, ...] = (), timeout: float = 180.0
              ) -> subprocess.CompletedProcess[str]:
        assert self.classes is not None
        home = self.root / "probe-home"
        argv = java_client_argv("FiveProbe", self.classes, home, *args, rel=RELEASE_5)
        argv[1:1] = list(jvm)
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, cwd=self.root)

    def mqadmin(self, *args: str) -> subprocess.CompletedProcess[str]:
        return mqadmin(*args, home=self.root / "mqadmin-home", timeout=180.0, release=RELEASE_5)


def _start_cluster(five: Five) -> None:
    ports = [free_port(), free_port(), free_port()]
    five.ports.update(ports)
    five.node_addrs = [f"127.0.0.1:{p}" for p in ports[1:]]
    defaults = "".join(f"  {k}: {v}\n" for k, v in SETTINGS.items())
    nodes = "".join(f"  - {{name: n{i + 1}, port: {p}}}\n" for i, p in enumerate(ports[1:]))
    five.config.write_text(f"control: tcp://127.0.0.1:{ports[0]}\n"
                           f"data_dir: {json.dumps(str(five.root / 'data'))}\n"
                           f"defaults:\n{defaults}nodes:\n{nodes}")
    with (five.root / "up.log").open("wb") as out:
        five.up = five.reaper.spawn([str(PYNAMESRV), "up", "-c", str(five.config)], stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    for addr in five.node_addrs:
        poll_until(lambda a=addr: _answers(a), timeout=60.0, interval=0.5,
                   what=f"node {addr} answering (up.log: {five.root / 'up.log'})")


def _answers(addr: str) -> bool:
    with contextlib.suppress(OSError, ConnectionError):
        conn = Conn(addr, timeout=2.0)
        try:
            return conn.call(RemotingCommand(code=RequestCode.GET_NAMESRV_CONFIG)).code == 0
        finally:
            conn.close()
    return False


def big_topics(store: Path, count: int) -> None:
    """broker-big's topic table: `count` topics in its config store, read at boot."""
    table = {f"BigTopic-{i:05d}": {
        "attributes": {}, "order": False, "perm": 6, "readQueueNums": 1,
        "topicFilterType": "SINGLE_TAG", "topicName": f"BigTopic-{i:05d}", "topicSysFlag": 0,
        "writeQueueNums": 1} for i in range(count)}
    (store / "config").mkdir(parents=True, exist_ok=True)
    (store / "config" / "topics.json").write_text(json.dumps(
        {"dataVersion": {"counter": 1, "stateVersion": 0, "timestamp": 1700000000000},
         "topicConfigTable": table}))


def _start_brokers(five: Five) -> None:
    specs = [("broker-a", 0, CLUSTER, "zoneA", {}), ("broker-a", 1, CLUSTER, "zoneA", {}),
             ("broker-b", 0, CLUSTER, "zoneB", {}),
             ("broker-big", 0, BIG_CLUSTER, "zoneB", {"enableSplitRegistration": "true"})]
    for name, bid, cluster, zone, extra in specs:
        workdir = five.root / f"{name}-{bid}"
        if name == "broker-big":
            big_topics(workdir / "store", BIG_TOPICS)
        five.brokers[f"{name}/{bid}"] = JavaBroker(
            workdir, five.namesrv, name, cluster, bid, free_broker_port(five.ports),
            heap="512m" if name == "broker-big" else "384m",
            settings={**FIVE_BROKER, **extra}, release=RELEASE_5,
            jvm_options=[f"-Drocketmq.zone={zone}"])
    with ThreadPoolExecutor(len(five.brokers)) as pool:
        started = [pool.submit(b.start) for b in five.brokers.values()]
    for b in five.brokers.values():
        if b.proc is not None:
            five.reaper.track_pgid(b.proc.pid)
    for f in started:
        f.result()


@pytest.fixture(scope="module")
def five(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Five]:
    if why := java_missing(RELEASE_5):
        pytest.skip(why)
    root = tmp_path_factory.mktemp("five-")
    reaper = Reaper()
    reaper.track_marker(str(root))
    five = Five(root, reaper)
    five.config = root / "cluster.yaml"
    try:
        five.classes = root / "classes"
        javac(sorted(JAVA_SRC.glob("*.java")), five.classes, RELEASE_5)
        _start_cluster(five)
        five.java = JavaNamesrv(root / "java-ns", release=RELEASE_5, props=SETTINGS)
        five.java.start()
        reaper.track_pgid(five.java.proc.pid)  # type: ignore[union-attr]
        _start_brokers(five)
        yield five
    finally:
        for b in five.brokers.values():
            b.stop()
        if five.java is not None:
            five.java.stop()
        if five.up is not None and five.up.poll() is None:
            subprocess.run([str(PYNAMESRV), "stop", "-c", str(five.config)],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                five.up.wait(30)
        reaper.reap()


def same_everywhere(five: Five, code: int, ext: dict[str, str] | None = None,
                    ready: Any = None) -> Any:
    """Poll until every node answers as the Java NameServer (and `ready(java answer)` holds);
    the answers at the deadline otherwise, for the assertion to show."""
    last: dict[str, Any] = {}

    def check() -> bool:
        last.clear()
        last.update({a: five.canonical(a, code, ext) for a in five.servers})
        java = last[five.servers[-1]]
        return (ready is None or ready(java)) and all(last[a] == java for a in five.node_addrs)

    with contextlib.suppress(AssertionError):
        poll_until(check, timeout=90.0, interval=1.0, what="the same answer everywhere")
    return last


def assert_same(answers: dict[str, Any], five: Five) -> Any:
    java = answers[five.servers[-1]]
    for addr in five.node_addrs:
        assert answers[addr] == java, f"node {addr} differs from the Java NameServer:\n" \
                                      f"node: {answers[addr]}\njava: {java}"
    return java


def _groups(answer: Any) -> set[str]:
    return {bd["brokerName"] for bd in (answer.get("body") or {}).get("brokerDatas", [])}


def test_brokers_register_as_with_java(five: Five) -> None:
    def complete(java: Any) -> bool:
        table = (java.get("body") or {}).get("brokerAddrTable", {})
        return {"broker-a", "broker-b", "broker-big"} <= set(table) and \
            len(table["broker-a"]["brokerAddrs"]) == 2
    info = assert_same(same_everywhere(five, RequestCode.GET_BROKER_CLUSTER_INFO, None,
                                       complete), five)
    assert complete(info), info
    assert info["body"]["brokerAddrTable"]["broker-a"]["enableActingMaster"] is True
    group = same_everywhere(five, RequestCode.GET_BROKER_MEMBER_GROUP,
                            {"clusterName": CLUSTER, "brokerName": "broker-a"})
    assert_same(group, five)


def test_split_registration_of_70000_topics(five: Five) -> None:
    def all_there(java: Any) -> bool:
        return len((java.get("body") or {}).get("topicList", [])) >= BIG_TOPICS

    answers = same_everywhere(five, RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": BIG_CLUSTER},
                              all_there)
    java = assert_same(answers, five)
    assert {f"BigTopic-{i:05d}" for i in range(BIG_TOPICS)} <= set(java["body"]["topicList"])


def _create_topic(five: Five, topic: str) -> None:
    done = five.mqadmin("updateTopic", "-n", five.namesrv, "-c", CLUSTER, "-t", topic)
    assert done.returncode == 0, show(done)
    same_everywhere(five, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic},
                    lambda java: _groups(java) == {"broker-a", "broker-b"})


def test_zone_mode_routes(five: Five) -> None:
    _create_topic(five, "FiveZone")
    for zone, groups in (("zoneA", {"broker-a"}), ("ZONEB", {"broker-b"}), ("nowhere", set())):
        ext = {"topic": "FiveZone", "__ZONE_MODE": "true", "__ZONE_NAME": zone}
        java = assert_same(same_everywhere(five, RequestCode.GET_ROUTEINFO_BY_TOPIC, ext), five)
        assert _groups(java) == groups, java
    for addr in (five.node_addrs[0], five.servers[-1]):  # the 5.x client asks for its zone
        done = five.probe("route", addr, "FiveZone",
                          jvm=("-Drocketmq.zone=zoneB", "-Drocketmq.zone.mode=true"))
        assert done.returncode == 0, show(done)
        route = loads_lenient(done.stdout.split("ROUTE ", 1)[1])
        assert {bd["brokerName"] for bd in route["brokerDatas"]} == {"broker-b"}, show(done)


def test_static_topic_made_with_mqadmin_is_consumed(five: Five) -> None:
    done = five.mqadmin("updateStaticTopic", "-n", five.namesrv, "-c", CLUSTER,
                        "-t", "FiveStatic", "-qn", "4")
    assert done.returncode == 0, show(done)

    def mapped(java: Any) -> bool:
        return set((java.get("body") or {}).get("topicQueueMappingByBroker") or {}) == {
            "broker-a", "broker-b"}

    route = assert_same(same_everywhere(five, RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                        {"topic": "FiveStatic"}, mapped), five)
    assert mapped(route), route
    namesrv = ";".join(five.node_addrs)
    sent = five.probe("send", namesrv, "FiveStatic", "8", "static")
    assert sent.returncode == 0, show(sent)
    got = five.probe("consume", namesrv, "FiveStatic", "five-static-group", "static", "8",
                     CONSUME_S)
    assert got.returncode == 0, show(got)


def _acting(java: Any) -> bool:
    datas = {bd["brokerName"]: bd for bd in (java.get("body") or {}).get("brokerDatas", [])}
    a = datas.get("broker-a")
    return a is not None and list(a["brokerAddrs"]) == ["0"]


def test_acting_master_after_the_master_dies(five: Five) -> None:
    _create_topic(five, "FiveActing")
    namesrv = ";".join(five.node_addrs)
    before = five.probe("send", namesrv, "FiveActing", "12", "before")
    assert before.returncode == 0, show(before)
    assert " broker-a " in before.stdout, show(before)
    master, slave = five.brokers["broker-a/0"], five.brokers["broker-a/1"]
    # A slave learns its master's topics every 10 s (SlaveSynchronize); one that never learned
    # the topic refuses pulls of it ("topic not exist") once it acts as master.
    poll_until(lambda: b'"FiveActing"' in (five.call(slave.addr, GET_ALL_TOPIC_CONFIG).body
                                           or b""),
               timeout=60.0, interval=0.5, what="FiveActing on broker-a's slave")
    master.stop()  # SIGKILL: its connections close; the slave becomes the acting master
    route = assert_same(same_everywhere(five, RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                        {"topic": "FiveActing"}, _acting), five)
    a = next(bd for bd in route["body"]["brokerDatas"] if bd["brokerName"] == "broker-a")
    assert a["brokerAddrs"] == {"0": slave.addr} and a["enableActingMaster"] is True, route
    queue = next(q for q in route["body"]["queueDatas"] if q["brokerName"] == "broker-a")
    assert queue["perm"] & 2 == 0, route  # the acting master is read-only
    after = five.probe("send", namesrv, "FiveActing", "12", "after")
    assert after.returncode == 0, show(after)  # the producer keeps sending, to broker-b now
    assert " broker-a " not in after.stdout, show(after)
    # Consumers through the nodes and through the Java NameServer get the same messages.
    runs = {"nodes": (namesrv, "five-acting-nodes"), "java": (five.servers[-1], "five-acting-java")}
    with ThreadPoolExecutor(2) as pool:
        futures = {k: pool.submit(five.probe, "consume", ns, "FiveActing", group, "", "24",
                                       CONSUME_S)
                   for k, (ns, group) in runs.items()}
        got = {k: f.result() for k, f in futures.items()}
    received = {k: {tuple(line.split()[1::2]) for line in v.stdout.splitlines()
                    if line.startswith("RECEIVED")} for k, v in got.items()}  # (broker, body)
    sent = {(f[2], f[4]) for probe in (before, after) for line in probe.stdout.splitlines()
            if (f := line.split())[0] == "SENT"}  # (broker, body)
    assert received["nodes"] == sent, show(got["nodes"])  # broker-a's from its acting master
    assert received["nodes"] == received["java"], (show(got["nodes"]), show(got["java"]))


def _connected_node(pid: int, five: Five) -> str | None:
    ports = {int(a.rsplit(":", 1)[1]): a for a in five.node_addrs}
    with contextlib.suppress(psutil.Error):
        for c in psutil.Process(pid).net_connections("tcp"):
            if c.raddr and c.raddr.port in ports and c.status == psutil.CONN_ESTABLISHED:
                return ports[c.raddr.port]
    return None


def test_go_away_moves_a_5x_client_to_another_node(five: Five) -> None:
    assert five.classes is not None
    home = five.root / "go-away-home"
    argv = java_client_argv("FiveProbe", five.classes, home, "lookups",
                            ";".join(five.node_addrs), "FiveActing", "40", rel=RELEASE_5)
    out_path = five.root / "go-away.out"
    with out_path.open("w") as out:
        proc = five.reaper.spawn(argv, stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
    try:
        poll_until(lambda: out_path.read_text().count("OK ") >= 3, timeout=90.0, interval=0.2,
                   what=f"the client's first lookups ({out_path})")
        used = poll_until(lambda: _connected_node(proc.pid, five), timeout=20.0,
                          what="the node the client uses")
        name = f"n{five.node_addrs.index(used) + 1}"
        stop = subprocess.run([str(PYNAMESRV), "stop", name, "-c", str(five.config)],
                              capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        assert stop.returncode == 0, show(stop)
        other = next(a for a in five.node_addrs if a != used)
        poll_until(lambda: _connected_node(proc.pid, five) == other, timeout=60.0,
                   interval=0.2, what=f"the client on {other}")
        ok_after = out_path.read_text().count("OK ")
        poll_until(lambda: out_path.read_text().count("OK ") >= ok_after + 5, timeout=60.0,
                   interval=0.2, what="lookups answered by the other node")
    finally:
        proc.kill()
        proc.wait(10)
    lookups = out_path.read_text()
    client_log = tail(home / "logs" / "rocketmqlogs" / "rocketmq_client.log", 2_000_000)
    assert "GO_AWAY" in lookups or "go away" in client_log.lower(), \
        f"no GO_AWAY seen by the client:\n{lookups[-3000:]}\n{client_log[-3000:]}"
