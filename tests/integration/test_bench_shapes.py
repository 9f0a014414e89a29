"""The load generator of the production shapes, at tiny sizes against real nodes: rmqload
built from the repository, master/slave pairs, topics spread over brokers, 5.x split
registration, the topic-list reads, a registration over the frame limit, and the time to
serve again after a restart while the brokers keep registering."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.bench.runner import find_rmqload, layout, measure, run_rmqload
from cluster.bench.servers import Target
from cluster.bench.workloads import Workload
from tests.golden_replay import GOLDEN, needs_golden
from tests.nodeproc import NodeProcess

pytestmark = pytest.mark.integration
V5 = ("--body-5x",)


@pytest.fixture(scope="module")
def rmqload() -> Path:
    return find_rmqload(None)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    """frameMaxLength 1 MiB: an 8,000-topic registration is over it."""
    n = NodeProcess(tmp_path_factory.mktemp("node"), props={"frameMaxLength": "1048576"})
    n.start()
    yield n
    n.stop()


def _run(rmqload: Path, node: NodeProcess, *args: str) -> dict:
    return run_rmqload(rmqload, Workload("t", "route", args), node.addr, "200ms", "500ms")


def test_rmqload_from_the_repository_passes_its_selftest(rmqload: Path) -> None:
    done = subprocess.run([str(rmqload), "selftest"], capture_output=True, text=True)
    assert done.returncode == 0 and "0 failed" in done.stdout, done.stdout


@needs_golden
def test_rmqload_frames_are_byte_identical_to_java_captures(rmqload: Path) -> None:
    route = subprocess.run([str(rmqload), "encode-route", "TopicTest", "32", "-V", "407"],
                           capture_output=True, text=True, check=True).stdout.strip()
    want = (GOLDEN / "22_get_routeinfo_unsigned_probe.request.hex").read_text().split()
    assert route == "".join(want)
    reg = subprocess.run(
        [str(rmqload), "encode-register", "-V", "407", "--cluster-fmt", "DefaultCluster",
         "--broker-fmt", "broker-a", "--broker-port", "10911", "-T", "1", "--reg-pattern",
         "TopicTest", "--queues", "4", "--counter", "1", "--timestamp", "1795281860443",
         "--opaque", "10"], capture_output=True, text=True, check=True).stdout.strip()
    assert reg == "".join((GOLDEN / "02_register_broker_increment.request.hex").read_text().split())


def test_layout_counts_pairs_and_spread_topics(rmqload: Path) -> None:
    pairs = layout(rmqload, Workload("a", "route", ("-B", "3", "--slaves", "1", "-T", "5",
                                                    "--shared")), sample=2)
    assert (pairs["names"], pairs["brokers"], pairs["topics"], pairs["topic_configs"]) == (
        3, 6, 5, 30)
    assert [(s["names"], s["addrs"]) for s in pairs["sample"]] == [(3, 6), (3, 6)]
    spread = layout(rmqload, Workload("c", "route", ("-B", "10", "-T", "8", "--width", "4")),
                    sample=3)
    assert spread["topics"] == 20 and spread["sample"][0]["names"] == 4


def test_pairs_spread_topics_and_split_registration_route_whole(rmqload: Path,
                                                                node: NodeProcess) -> None:
    pairs = _run(rmqload, node, "-B", "3", "--slaves", "1", "-T", "30", "--shared", *V5,
                 "--reg-pattern", "Pair-%d", "-c", "2", "-D", "2")
    assert pairs["errors"] == 0 and set(pairs["route"]["codes"]) == {"0"}, pairs
    assert pairs["register"]["setup"]["registrations"] == 6
    split = _run(rmqload, node, "-B", "1", "-T", "2000", "--split", "800", *V5,
                 "--reg-pattern", "Split-%d", "-c", "2", "-D", "2")
    reg = split["register"]
    assert split["errors"] == 0 and set(split["route"]["codes"]) == {"0"}, split
    assert reg["requests_per_registration"] == 3 and reg["setup"]["codes"] == {"0": 1}


@pytest.mark.parametrize("code", ["206", "224"])
def test_topic_lists_are_read_over_the_layout(rmqload: Path, node: NodeProcess,
                                              code: str) -> None:
    got = _run(rmqload, node, "-B", "8", "-T", "20", "--width", "4", *V5, "--reg-pattern",
               f"List{code}-%d", "--code", code, "-c", "1", "-D", "1")
    reads = got["route"]
    assert got["errors"] == 0 and reads["code"] == int(code) and set(reads["codes"]) == {"0"}
    assert reads["avg_body_bytes"] > 40 * len("List206-0")  # all 40 topics listed


def test_a_registration_over_the_frame_limit_is_refused_and_said(rmqload: Path,
                                                                 node: NodeProcess) -> None:
    got = _run(rmqload, node, "-B", "1", "-T", "8000", *V5, "--reg-pattern", "Big-%d",
               "-c", "1", "-D", "1")
    assert got["register"]["body_bytes_max"] > 1 << 20
    assert got["register"]["validation"]["conn_closed"] == 1 and got["errors"] >= 1
    assert set(got["route"]["codes"]) == {"17"}  # nothing registered: TOPIC_NOT_EXIST


def test_a_restarted_node_serves_the_layout_again_while_brokers_register(
        rmqload: Path) -> None:
    w = Workload("tiny-a", "route", ("-B", "3", "--slaves", "1", "-T", "40", "--shared", *V5,
                                     "--heartbeat", "1s", "--reg-conc", "2", "-c", "2", "-D",
                                     "2"), restart=True)
    r = measure(rmqload, w, Target("node"), {}, "200ms", "500ms")
    assert r["errors"] == 0 and set(r["route"]["codes"]) == {"0"}, json.dumps(r)[:2000]
    assert r["setup"]["rate"] > 0 and r["layout"]["brokers"] == 6
    rs = r["restart"]
    assert rs["serve_s"] is not None and rs["serve_s"] >= rs["boot_s"], rs
    assert rs["topics"] == 40 and rs["brokers"]["connections_lost"] == 6, rs
