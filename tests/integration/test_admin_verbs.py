"""Admin verbs against live nodes; and every verb beside the real mqadmin 4.9.8 and 5.5.0.

The ``java`` tests share one cluster: two pynamesrv nodes with a real 5.5.0 broker
(``DefaultCluster``) and a real 4.9.7 broker (``OldCluster``) registered to both. Each
verb is run by mqadmin and by the installed ``pynamesrv`` for the same nodes, and their
stdout must be equal byte for byte, except for:

* ``clusterList``'s TPS, queue, timer, page-cache wait, hour and disk columns, which
  change between two calls: each is replaced by its column's name in both outputs (the
  rest of the row, its layout included, is compared);
* ``wipeWritePerm`` / ``addWritePerm``'s line order: mqadmin shuffles its NameServer
  list (``Collections.shuffle`` in ``NettyRemotingClient.updateNameServerAddressList``),
  so its lines come in any order; pynamesrv's come in the order given.

Reads go to one node (mqadmin picks a random node of ``-n``). ``topicRoute`` and
``clusterList``, which differ between the releases, are compared with both; the other
verbs' commands are the same code in both, so mqadmin 5.5.0 is run alone (the Java
collections both releases decode into are checked with each release's own classes in
the last test). mqadmin calls run at most three at a time.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from cluster.cli.main import main
from cluster.client.admin_json import route_json
from cluster.client.admin_requests import broker_runtime_stats
from cluster.client.errors import ClientError, RemoteError
from cluster.client.nsclient import NameServerClient
from cluster.core.javaorder import hashmap_order, long_hash, properties_order
from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.conftest import Reaper
from tests.integration.test_audit_e2e import BROKER, TOPIC_BODY
from tests.nodeproc import PYNAMESRV, Conn, NodeProcess, poll_until, start_all, stop_all
from tests.unit.client_fakes import FakeNameServer, reply

pytestmark = pytest.mark.integration
JAVA_DIR = Path(__file__).resolve().parent / "java"
PARALLEL_JVMS = 3


@pytest.fixture
def nodes(tmp_path: Path) -> Iterator[list[NodeProcess]]:
    started = start_all(NodeProcess(tmp_path / name, name=name) for name in ("n1", "n2"))
    try:
        yield started
    finally:
        stop_all(n for n in started if n.proc is not None and n.proc.poll() is None)


def ns_addr(nodes: Sequence[NodeProcess]) -> str:
    return ";".join(n.addr for n in nodes)


def out_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.splitlines()


def perms(client: NameServerClient, nodes: list[NodeProcess], topic: str) -> list[int]:
    return [client.get_route(topic, addr=n.addr)["queueDatas"][0]["perm"] for n in nodes]


def test_verbs_change_every_node(nodes: list[NodeProcess],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    broker = FakeNameServer(lambda c: reply()).start()  # answers DELETE_TOPIC_IN_BROKER
    conns = [Conn(n.addr) for n in nodes]  # kept open: a closed one unregisters the broker
    client = NameServerClient(ns_addr(nodes))
    try:
        register = RemotingCommand(code=RequestCode.REGISTER_BROKER, version=409,
                                   ext_fields={**BROKER, "brokerAddr": broker.addr},
                                   body=TOPIC_BODY)
        assert all(c.call(register).code == ResponseCode.SUCCESS for c in conns)
        ns = ns_addr(nodes)

        assert main(["wipeWritePerm", "-n", ns, "-b", "broker-a"]) == 0
        assert out_lines(capsys) == [
            f"wipe write perm of broker[broker-a] in name server[{n.addr}] OK, 1" for n in nodes]
        assert perms(client, nodes, "TopicTest") == [4, 4]
        assert main(["addWritePerm", "-n", ns, "-b", "broker-a"]) == 0
        assert out_lines(capsys)[1].endswith("OK, 1")
        assert perms(client, nodes, "TopicTest") == [6, 6]

        assert main(["topicClusterList", "-n", ns, "-t", "TopicTest"]) == 0
        assert out_lines(capsys) == ["DefaultCluster"]
        assert main(["getBrokerMemberGroup", "-n", ns, "-c", "DefaultCluster",
                     "-b", "broker-a"]) == 0
        lines = out_lines(capsys)
        assert lines.count(f"{'DefaultCluster':<16}  {'broker-a':<22}  {0:<4}  {broker.addr}") \
            == 2
        assert main(["clusterList", "-n", ns, "--no-broker-stats"]) == 0
        assert out_lines(capsys)[1].split()[:4] == ["DefaultCluster", "broker-a", "0",
                                                    broker.addr]

        assert main(["deleteTopic", "-n", ns, "-t", "TopicTest", "-c", "DefaultCluster"]) == 0
        assert out_lines(capsys) == [
            "delete topic [TopicTest] from cluster [DefaultCluster] success.",
            "delete topic [TopicTest] from NameServer success."]
        assert [(r.code, r.field("topic")) for r in broker.requests] == [(215, "TopicTest")]
        for n in nodes:
            with pytest.raises(RemoteError) as exc:
                client.get_route("TopicTest", addr=n.addr)
            assert exc.value.code == ResponseCode.TOPIC_NOT_EXIST
    finally:
        client.close()
        for c in conns:
            c.close()
        broker.stop()


def test_a_stopped_node_is_reported_and_the_others_still_change(
        nodes: list[NodeProcess], capsys: pytest.CaptureFixture[str]) -> None:
    nodes[1].stop()
    ns = ns_addr(nodes)
    assert main(["updateKvConfig", "-n", ns, "-s", "ns", "-k", "k", "-v", "v",
                 "--timeout", "2"]) == 1
    out = capsys.readouterr()
    assert out.out == ""  # mqadmin prints its one line only when every node succeeded
    failed = out.err.splitlines()  # one line per failed node, its address once
    assert len(failed) == 1 and failed[0].startswith(f"pynamesrv: {nodes[1].addr}: failed"), \
        out.err
    assert failed[0].count(nodes[1].addr) == 1, out.err
    assert main(["getKvConfig", "-n", nodes[0].addr, "-s", "ns", "-k", "k"]) == 0
    assert out_lines(capsys) == ["v"]
    assert main(["getNamesrvConfig", "-n", nodes[0].addr, "--all"]) == 0
    lines = out_lines(capsys)
    assert lines[0] == f"============{nodes[0].addr}============"
    assert any(line.startswith("listenPort ") for line in lines)


# ------------------------------------------------------- against mqadmin

MQADMIN = {"4.9": "4.9", "5": "5.5"}  # --mqadmin value -> the installed release
# The columns that change between two calls, per layout; the rest of a row is compared.
ROW_4 = re.compile(r"(?P<head>.*?)(?P<in> *-?[\d.]+\([^)]*\)) (?P<out> *-?[\d.]+\([^)]*\)) "
                   r"(?P<pcwait> *\S*) (?P<hour> *\S+) (?P<space> *\S+)")
ROW_5 = re.compile(r"(?P<head>.*?)(?P<in> *-?[\d.]+\([^)]*\))  (?P<out> *-?[\d.]+\([^)]*\))  "
                   r"(?P<timer>\d+-\d+\([^)]*\) *)  (?P<pcwait> *\S*)  (?P<hour>\S+ *)  "
                   r"(?P<space>\S+ *)  (?P<tail> *(true|false))")


def masked_cluster_list(text: str, release: str) -> str:
    """Every volatile column of every row replaced by ``<name>``; a row of another
    shape fails the test."""
    row = ROW_4 if release == "4.9" else ROW_5
    lines = text.split("\n")
    for i in range(1, len(lines) - 1):
        m = row.fullmatch(lines[i])
        assert m, f"not a {release} clusterList row: {lines[i]!r}"
        lines[i] = "".join(v if k in ("head", "tail") else f"<{k}>"
                           for k, v in m.groupdict().items() if v is not None)
    return "\n".join(lines)


@dataclass
class Cluster:
    nodes: list[NodeProcess]
    five: str  # the 5.5.0 broker's address (DefaultCluster, broker-five)
    four: str  # the 4.9.7 broker's address (OldCluster, broker-four)
    home: Path
    client: NameServerClient

    @property
    def ns(self) -> str:
        return ns_addr(self.nodes)

    def mqadmin(self, calls: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
        """mqadmin ``(release, argv)`` calls, at most PARALLEL_JVMS at a time; stdouts."""
        from tests.javaproc import mqadmin

        def one(call: tuple[str, Sequence[str]]) -> str:
            done = mqadmin(*call[1], home=self.home / call[0], release=MQADMIN[call[0]])
            assert done.returncode == 0, (call, done.stdout, done.stderr[-2000:])
            return done.stdout

        with ThreadPoolExecutor(PARALLEL_JVMS) as pool:
            return list(pool.map(one, calls))


def ours(*argv: str) -> str:
    """The installed pynamesrv's stdout, waiting for each call as long as mqadmin does
    (DefaultMQAdminExt's 5 s), so a slow broker shows the same in both."""
    done = subprocess.run([PYNAMESRV, *argv, "--timeout", "5s"], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    assert done.stderr == "", (argv, done.stderr)
    return done.stdout


def create_topic(client: NameServerClient, broker: str, topic: str) -> None:
    """UPDATE_AND_CREATE_TOPIC (17) on a broker, as mqadmin updateTopic sends it."""
    ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4",
           "writeQueueNums": "4", "perm": "6", "topicFilterType": "SINGLE_TAG",
           "topicSysFlag": "0", "order": "false"}
    resp = client.invoke(RemotingCommand(code=17, version=409, ext_fields=ext), addr=broker)
    assert resp.code == ResponseCode.SUCCESS, resp.remark


def route_brokers(client: NameServerClient, addr: str, topic: str) -> set[str]:
    try:
        return {b["brokerName"] for b in client.get_route(topic, addr=addr)["brokerDatas"]}
    except ClientError:
        return set()


def broker_names(client: NameServerClient, addr: str) -> set[str]:
    try:
        return set(client.get_cluster_info(addr=addr)["brokerAddrTable"])
    except ClientError:
        return set()


def cluster_topics(client: NameServerClient, addr: str, cluster: str) -> frozenset[str]:
    try:
        return frozenset(client.get_topics_by_cluster(cluster, addr=addr)["topicList"])
    except ClientError:
        return frozenset()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    from tests.javaproc import RELEASES, JavaBroker, free_broker_port, java_missing

    for rel in RELEASES:
        if why := java_missing(rel):
            pytest.skip(why)
    tmp = tmp_path_factory.mktemp("admin-vs-mqadmin")
    reaper = Reaper()
    nodes: list[NodeProcess] = []
    brokers: list[JavaBroker] = []
    client = None
    try:
        reaper.markers.append(str(tmp))
        nodes += [NodeProcess(tmp / n, name=n).start() for n in ("n1", "n2")]
        ns = ns_addr(nodes)
        taken: set[int] = set()
        brokers += [JavaBroker(tmp / name, ns, name, cluster, 0, free_broker_port(taken),
                               release=rel)
                    for name, cluster, rel in (("broker-five", "DefaultCluster", "5.5"),
                                               ("broker-four", "OldCluster", "4.9"))]
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda b: b.start(), brokers))
        client = NameServerClient(ns)
        five, four = (b.addr for b in brokers)
        # Each broker's own registration first: a created topic's registration reaching a
        # node before it would be the broker's first table there, and a node following 4.9.8
        # then applies none of its later tables of the same data version (nor does Java
        # 4.9.8). A 5.5 broker starting registers only with the NameServers its client has
        # connected to by then; the others get its table at its next heartbeat.
        poll_until(lambda: all(broker_names(client, n.addr) >= {"broker-five", "broker-four"}
                               for n in nodes),
                   timeout=60, interval=0.2, what="each broker's registration on every node")
        for broker, topic in ((five, "AdminT"), (four, "AdminT"), (four, "DelA"), (four, "DelB")):
            create_topic(client, broker, topic)
        wanted = {"AdminT": {"broker-five", "broker-four"}, "DelA": {"broker-four"},
                  "DelB": {"broker-four"}}
        poll_until(lambda: all(route_brokers(client, n.addr, t) == b
                               for n in nodes for t, b in wanted.items()),
                   timeout=60, interval=0.5, what="the brokers' topics on every node")
        # and each broker's whole table on every node (a created topic's route comes with
        # that topic's registration; the rest of the table with the broker's own)
        poll_until(lambda: all(len({cluster_topics(client, n.addr, c) for n in nodes}) == 1
                               for c in ("DefaultCluster", "OldCluster")),
                   timeout=60, interval=0.5, what="the same topic tables on every node")
        # and each broker's runtime info, which clusterList asks the brokers for: a cold
        # broker's first answer can take longer than mqadmin's 5 s on a loaded machine
        poll_until(lambda: None not in broker_runtime_stats(client, [five, four], 5.0).values(),
                   timeout=60, interval=0.5, what="the brokers' runtime info")
        yield Cluster(nodes, five, four, tmp / "mqadmin", client)
    finally:
        if client is not None:
            client.close()
        for b in brokers:
            b.stop()
        for n in nodes:
            if n.proc is not None and n.proc.poll() is None:
                n.stop()
        reaper.reap()


@pytest.mark.java
@pytest.mark.differential
def test_reads_print_what_mqadmin_prints(cluster: Cluster) -> None:
    one = cluster.nodes[0].addr
    reads: list[tuple[str, list[str]]] = [
        (rel, argv) for rel in ("5", "4.9") for argv in (
            ["topicRoute", "-t", "AdminT", "-n", one], ["clusterList", "-n", one])]
    reads += [("5", ["topicList", "-n", one]), ("5", ["getNamesrvConfig", "-n", cluster.ns]),
              ("5", ["topicRoute", "-t", "AdminT", "-l", "-n", one]),
              ("5", ["clusterList", "-m", "-n", one]),
              ("5", ["topicClusterList", "-t", "AdminT", "-n", one])]
    with ThreadPoolExecutor(PARALLEL_JVMS) as pool:
        mine = list(pool.map(lambda read: ours(*read[1], "--mqadmin", read[0]), reads))
    java = cluster.mqadmin(reads)
    for (rel, argv), theirs, text in zip(reads, java, mine, strict=True):
        if argv[0] == "clusterList" and "-m" not in argv:
            theirs, text = masked_cluster_list(theirs, rel), masked_cluster_list(text, rel)
        assert text == theirs, (rel, argv, theirs, text)
    # the route holds both brokers, and 5.x's output differs from 4.9's
    assert java[0] != java[2] and java[0].count('"brokerName"') == 4


@pytest.mark.java
@pytest.mark.differential
def test_writes_print_what_mqadmin_prints_and_change_every_node(cluster: Cluster) -> None:
    ns, client = cluster.ns, cluster.client
    n_order = [n.addr for n in cluster.nodes]
    # (release, mqadmin's argv, ours); a round's calls touch different state (the KV pair
    # may run in any order: ours run in turn after the round)
    rounds: list[list[tuple[str, list[str], list[str]]]] = [
        [("5", ["wipeWritePerm", "-b", "broker-five"], ["wipeWritePerm", "-b", "broker-five"]),
         ("5", ["updateKvConfig", "-s", "NS", "-k", "k", "-v", "v"],
          ["updateKvConfig", "-s", "NS", "-k", "k", "-v", "v"]),
         ("5", ["deleteKvConfig", "-s", "NS", "-k", "k"],
          ["deleteKvConfig", "-s", "NS", "-k", "k"])],
        [("5", ["addWritePerm", "-b", "broker-five"], ["addWritePerm", "-b", "broker-five"]),
         ("5", ["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"],
          ["updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true"]),
         ("5", ["deleteTopic", "-t", "DelA", "-c", "OldCluster"],
          ["deleteTopic", "-t", "DelB", "-c", "OldCluster"])],
    ]
    for calls in rounds:
        java = cluster.mqadmin([(rel, [*argv, "-n", ns]) for rel, argv, _ in calls])
        for (rel, argv, mine_argv), theirs in zip(calls, java, strict=True):
            text = ours(*mine_argv, "-n", ns, "--mqadmin", rel)
            if argv[0].endswith("WritePerm"):
                verb = argv[0][:-len("WritePerm")]
                assert text.splitlines() == [
                    f"{verb} write perm of broker[broker-five] in name server[{a}] OK, "
                    f"{text.splitlines()[0].rsplit(' ', 1)[1]}" for a in n_order]
                assert sorted(theirs.splitlines()) == sorted(text.splitlines()), (theirs, text)
            else:
                theirs = theirs.replace(argv[2], mine_argv[2])  # the other topic's name
                assert text == theirs, (argv, theirs, text)
    # what ours changed: the KV item is gone again, the topic is off its broker and the nodes
    assert all(client.get_kv("NS", "k", addr=a) is None for a in n_order)
    assert not any(route_brokers(client, a, "DelB") for a in n_order)
    table = client.invoke(RemotingCommand(code=21, version=409), addr=cluster.four)  # its topics
    assert "DelB" not in json.loads(table.body or b"{}")["topicConfigTable"]


# ------------------------------------------------ Java's orders, by Java


def _names(rng: random.Random, n: int) -> list[str]:
    alphabet = "abcXYZ019_-%|"
    return [f"{rng.choice('TCb')}{''.join(rng.choices(alphabet, k=rng.randint(1, 12)))}"
            for _ in range(n)]


def _text(lines: Iterable[object]) -> str:
    return "".join(f"{line}\n" for line in lines)


def order_cases(rng: random.Random) -> dict[str, tuple[bytes, str | None]]:
    """Inputs for AdminOrder.java and what our emulation says Java prints for each (None
    for a route: the release's route_json, in the test)."""
    cases: dict[str, tuple[bytes, str | None]] = {}
    for i, size in enumerate((0, 13, 300)):
        topics = list(dict.fromkeys(_names(rng, size)))
        cases[f"t{i}.topics"] = (json.dumps({"topicList": topics}).encode(),
                                 _text(hashmap_order(topics)))
    for i, size in enumerate((3, 40)):
        clusters = list(dict.fromkeys(_names(rng, size)))
        ids = {f"b-{c}": rng.sample([0, 1, 2, 16, 17, 32, 48, -1, 1 << 32], rng.randint(1, 5))
               for c in clusters}
        body = {"brokerAddrTable": {f"b-{c}": {"brokerAddrs": {str(k): "h:1" for k in
                                                               ids[f"b-{c}"]},
                                               "brokerName": f"b-{c}", "cluster": c}
                                    for c in clusters},
                "clusterAddrTable": {c: [f"b-{c}"] for c in clusters}}
        said = [f"cluster {c}" for c in hashmap_order(clusters)] + [
            f"broker {b} [{', '.join(map(str, hashmap_order(ids[b], long_hash)))}]"
            for b in hashmap_order(ids)]
        cases[f"c{i}.cluster"] = (json.dumps(body).encode(), _text(said))
    for i, size in enumerate((5, 30, 200)):
        keys = list(dict.fromkeys(_names(rng, size)))
        cases[f"p{i}.props"] = (_text(f"{k}=v" for k in keys).encode(),
                                _text(f"{k}=v" for k in properties_order(keys)))
    for i, size in enumerate((1, 3, 4, 7)):
        addrs = list(dict.fromkeys(f"127.0.0.1:{rng.randint(1024, 65535)}"
                                   for _ in range(size)))
        cases[f"a{i}.addrs"] = ("\n".join(addrs).encode(),
                                _text(hashmap_order(addrs, initial=4)))
    for i, route in enumerate(_routes(rng)):
        cases[f"r{i}.route"] = (route, None)
    return cases


def _routes(rng: random.Random) -> list[bytes]:
    names = _names(rng, 6) + ["q\"\\\t\x01\x7f\x85\u2028é😀/"]
    routes = []
    for _ in range(4):
        brokers = rng.sample(names, rng.randint(0, 4))
        route = {"brokerDatas": [{"brokerAddrs": {str(k): f"h:{k}" for k in rng.sample(
            [0, 1, 2, 16, 17, 33], rng.randint(0, 4))}, "brokerName": b, "cluster": "C",
            **({"zoneName": "z"} if rng.random() < 0.5 else {})} for b in brokers],
            "queueDatas": [{"brokerName": b, "perm": rng.choice([2, 4, 6]),
                            "readQueueNums": 8, "topicSysFlag": 0, "writeQueueNums": 4}
                           for b in brokers]}
        if rng.random() < 0.5:
            route["filterServerTable"] = {n: [n] for n in rng.sample(names, 3)}
        if rng.random() < 0.5:
            route["orderTopicConf"] = "a:1;b:2"
        routes.append(json.dumps(route).encode())  # fastjson2 reads no raw UTF-8 map key
    return routes


@pytest.fixture(scope="module")
def order_probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """AdminOrder.java compiled once: it uses only the JDK (the release's classes are found
    by name at run time), so one class serves both releases."""
    from tests.javaproc import RELEASE_5, java_missing, javac

    if why := java_missing(RELEASE_5):
        pytest.skip(why)
    classes = tmp_path_factory.mktemp("admin-order-classes")
    javac([JAVA_DIR / "AdminOrder.java"], classes, RELEASE_5)
    return classes


@pytest.mark.java
@pytest.mark.differential
@pytest.mark.parametrize("release", sorted(MQADMIN))
def test_java_orders_and_route_json_match_the_releases_classes(
        release: str, order_probe: Path, tmp_path: Path) -> None:
    """AdminOrder.java puts random inputs through the release's own classes."""
    from tests.javaproc import java_client_argv, java_missing

    if why := java_missing(MQADMIN[release]):
        pytest.skip(why)
    cases = order_cases(random.Random(32))
    inputs = tmp_path / "cases"
    inputs.mkdir()
    for name, (body, _) in cases.items():
        (inputs / name).write_bytes(body)
    argv = java_client_argv("AdminOrder", order_probe, tmp_path / "home", str(inputs),
                            rel=MQADMIN[release])
    done = subprocess.run(argv, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    printed = dict(re.findall(r"=== (\S+)\n(.*?)(?==== |\Z)", done.stdout.decode(), re.S))
    assert sorted(printed) == sorted(cases)
    for name, (body, said) in cases.items():
        expected = route_json(json.loads(body), release) + "\n" if said is None else said
        assert printed[name] == expected, name
