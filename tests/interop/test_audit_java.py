"""The consistency audit of real Java NameServers, and of Java and pynamesrv nodes together.

Three Java NameServers (4.9.7, 4.9.7 behind a loopback proxy, 5.5.0), one pynamesrv node
and one real Java broker registering with all four. ``pynamesrv audit collect`` reads
the Java nodes through RocketMQ's own request codes (4.9 never answers the snapshot code,
5.x answers it REQUEST_CODE_NOT_SUPPORTED). While it collects, the proxy cuts the broker
off the second Java node (its connection reset, new ones refused) and lets it back:
``audit run`` names the broker, that node and the interval. A second collection over the
two other Java nodes and the pynamesrv node, the same time, finds them agreeing.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest

from cluster.audit.reader import ClusterReader, Kind, ReadLimits
from cluster.chaos.proxy import ProxyFaults, ProxyHost, ProxySpec
from tests.conftest import Reaper
from tests.javaproc import (
    RELEASE_4,
    RELEASE_5,
    JavaBroker,
    JavaNamesrv,
    free_broker_port,
    java_missing,
)
from tests.nodeproc import PYNAMESRV, ROOT, NodeProcess, poll_until

pyspark = pytest.importorskip("pyspark")

from cluster.audit.session import build_session, has_active_session  # noqa: E402
from cluster.cli.main import main  # noqa: E402

pytestmark = [pytest.mark.java, pytest.mark.spark]

BROKER = "broker-j"
HEARTBEAT_S = 10.0  # registerNameServerPeriod: the broker's shortest heartbeat
CUT_S = 8.0


class Deployment:
    def __init__(self, root: Path, reaper: Reaper) -> None:
        self.root = root
        self.reaper = reaper
        self.java = {"j1": JavaNamesrv(root / "j1", release=RELEASE_4),
                     "j2": JavaNamesrv(root / "j2", release=RELEASE_4),
                     "j3": JavaNamesrv(root / "j3", release=RELEASE_5)}
        self.py = NodeProcess(root / "py", name="py")
        self.proxies = ProxyHost([ProxySpec("j2", ("127.0.0.1", self.java["j2"].port))])
        self.broker: JavaBroker | None = None

    @property
    def addrs(self) -> dict[str, str]:
        return {**{n: j.addr for n, j in self.java.items()}, "py": self.py.addr}

    def start(self) -> None:
        with ThreadPoolExecutor(3) as pool:
            for f in [pool.submit(j.start) for j in self.java.values()]:
                f.result()
        for j in self.java.values():
            assert j.proc is not None
            self.reaper.track_pgid(j.proc.pid)
        self.py.start()
        via = f"127.0.0.1:{self.proxies.start()['j2']}"
        namesrv = ";".join([self.java["j1"].addr, via, self.java["j3"].addr, self.py.addr])
        self.broker = JavaBroker(self.root / "broker", namesrv, BROKER, "C1", 0,
                                 free_broker_port(set()), heap="384m", release=RELEASE_4,
                                 settings={"registerNameServerPeriod": str(int(HEARTBEAT_S
                                                                               * 1000))})
        self.broker.start()
        assert self.broker.proc is not None
        self.reaper.track_pgid(self.broker.proc.pid)

    def close(self) -> None:
        if self.broker is not None:
            self.broker.stop()
        self.proxies.close()
        self.py.stop()
        for j in self.java.values():
            j.stop()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    for rel in (RELEASE_4, RELEASE_5):
        if why := java_missing(rel):
            pytest.skip(why)
    reaper = Reaper()
    dep = Deployment(tmp_path_factory.mktemp("audit-java"), reaper)
    try:
        dep.start()
        yield dep
    finally:
        dep.close()
        reaper.reap()


def _tables(reader: ClusterReader) -> dict[str, Any]:
    reads = reader.read_round()
    return {n: r.snapshot["tables"] if r.snapshot else None for n, r in reads.items()}


def _has_broker(tables: dict[str, Any] | None) -> bool:
    return tables is not None and BROKER in tables["broker"] and len(tables["topic"]) > 0


def _collect(out: Path, nodes: dict[str, str], seconds: float) -> subprocess.Popen[str]:
    argv = [str(PYNAMESRV), "audit", "collect", "--interval", "1s", "--duration",
            f"{seconds:g}s", "--timeout", "1s", "--heartbeat-period", f"{HEARTBEAT_S:g}s",
            "--out", str(out)]
    for name, addr in nodes.items():
        argv += ["--node", f"{name}={addr}"]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _rounds(path: Path) -> int:
    try:
        return len({orjson.loads(x)["round"] for x in path.read_bytes().splitlines()})
    except (OSError, ValueError):
        return 0


def test_the_audit_names_the_broker_the_node_and_the_interval(
        deployment: Deployment, spark_session: None, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    dep = deployment
    java_nodes = {n: dep.addrs[n] for n in ("j1", "j2", "j3")}
    mixed = {n: dep.addrs[n] for n in ("j1", "j3", "py")}
    with ClusterReader(dep.addrs, ReadLimits(timeout_s=3.0)) as reader:
        poll_until(lambda: all(map(_has_broker, _tables(reader).values())), 90, 0.5,
                   "the broker on every node")
        assert {n: reader.kind(n) for n in dep.addrs} == {
            "j1": Kind.STANDARD, "j2": Kind.STANDARD, "j3": Kind.STANDARD, "py": Kind.SNAPSHOT}
        poll_until(lambda: len({orjson.dumps(t, option=orjson.OPT_SORT_KEYS)
                                for t in _tables(reader).values()}) == 1, 60, 0.5,
                   "every node with the same tables")
        cut_out, mixed_out = tmp_path / "cut", tmp_path / "mixed"
        total_s = 3 + CUT_S + HEARTBEAT_S + 12
        collectors = [_collect(cut_out, java_nodes, total_s), _collect(mixed_out, mixed, total_s)]
        poll_until(lambda: _rounds(cut_out / "rows-j2.jsonl") >= 3, 30, 0.1, "three rounds")
        dep.proxies.set_faults("j2", ProxyFaults(refuse=True))
        dep.proxies.reset_connections("j2")
        cut_at = time.monotonic()
        poll_until(lambda: not _has_broker(_tables(reader)["j2"]), 20, 0.2,
                   "j2 forgot the broker whose connection closed")
        poll_until(lambda: time.monotonic() - cut_at >= CUT_S, CUT_S + 5, 0.2, "the cut")
        dep.proxies.heal("j2")
        poll_until(lambda: _has_broker(_tables(reader)["j2"]), HEARTBEAT_S + 20, 0.2,
                   "the broker back on j2 at its next heartbeat")
        back_s = time.monotonic() - cut_at
    for c in collectors:
        _, err = c.communicate(timeout=total_s + 60)
        assert c.returncode == 0, err

    assert main(["audit", "run", str(cut_out)]) == 0, capsys.readouterr()
    doc = orjson.loads((cut_out / "audit-report.json").read_bytes())
    broker = [i for i in doc["intervals"] if i["table"] == "broker" and i["key"] == BROKER]
    assert len(broker) == 1, doc["intervals"]
    seen = broker[0]
    assert seen["nodes"] == ["j2"] and seen["kind"] == "missing" and not seen["open"], seen
    # the node missed the broker from the cut until its first heartbeat after the heal
    assert CUT_S - 1.5 <= seen["duration_ms"] / 1000 <= back_s + 2.5, (seen, back_s)
    text = capsys.readouterr().out
    assert f"broker   {BROKER}" in text and "on j2" in text, text

    assert main(["audit", "run", str(mixed_out)]) == 0, capsys.readouterr()
    doc = orjson.loads((mixed_out / "audit-report.json").read_bytes())
    assert doc["intervals"] == [] and doc["verdict"]["holds"], doc["intervals"]
    assert all(r["agree"] > 0 and r["missing"] == r["extra"] == r["different"] == 0
               for r in doc["rounds"]), doc["rounds"]


@pytest.fixture(scope="module")
def spark_session() -> Iterator[None]:
    """One Spark session for both ``audit run``s (each would start its own otherwise)."""
    owned = not has_active_session()
    session = build_session("local[2]", "pynamesrv-audit-java")
    yield
    if owned:
        session.stop()
