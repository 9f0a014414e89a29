"""Single-client attacks against a node run by ``pynamesrv up``: it never leaves ``running``.

One supervised node (probes every 200 ms, ``hung`` after three failures) whose data dir
holds planted modules: a config bomb is refused, a config file made oversized by an
older version starts and is probed healthy, a flood of heavy reads costs it nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from state.nsconfig import VALUE_MAX_CHARS
from tests.conftest import Reaper
from tests.integration.test_floods import flood
from tests.integration.test_planted_modules import plant
from tests.integration.test_supervisor import BOOT_S, Cluster
from tests.nodeproc import Conn, poll_until

pytestmark = pytest.mark.integration

WATCH_S = 3.0  # fifteen probe intervals: five times what makes a node hung
BOMB = "A" * (2 << 20)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    reaper = Reaper()
    root = tmp_path_factory.mktemp("attacked")
    c = Cluster(root, reaper, nodes=1)
    plant(root / "data" / "n1", marker(c))
    try:
        yield c.up()
    finally:
        c.close()
        reaper.reap()


def marker(cluster: Cluster) -> Path:
    """The file a planted module writes to if it ever runs."""
    return cluster.root / "planted-ran.txt"


def stays_running(cluster: Cluster, seconds: float) -> dict[str, object]:
    """The node's status, after checking it every 50 ms for ``seconds``: always running,
    never restarted."""
    first = cluster.node("n1")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = cluster.node("n1")
        assert now["state"] == "running", (now, cluster.diagnostics())
        assert now["restarts"] == first["restarts"], now
        time.sleep(0.05)
    return now


def config_request(code: int, body: bytes | None = None) -> RemotingCommand:
    return RemotingCommand(code=code, version=409, body=body)


def test_modules_planted_in_the_data_dir_do_not_run(cluster: Cluster) -> None:
    assert cluster.node("n1")["state"] == "running"
    assert not marker(cluster).exists(), marker(cluster).read_text()


def test_a_config_bomb_is_refused_and_the_node_stays_running(cluster: Cluster) -> None:
    conn = Conn(cluster.addr("n1"))
    try:
        bomb = f"productEnvName={BOMB}\n".encode()
        reply = conn.call(config_request(RequestCode.UPDATE_NAMESRV_CONFIG, bomb))
        assert reply.code == ResponseCode.SYSTEM_ERROR
        assert f"at most {VALUE_MAX_CHARS}" in (reply.remark or "")
        config = conn.call(config_request(RequestCode.GET_NAMESRV_CONFIG))
        assert config.code == ResponseCode.SUCCESS and len(config.body or b"") < 4096
    finally:
        conn.close()
    stays_running(cluster, WATCH_S)
    assert BOMB[:100] not in (cluster.root / "data/n1/namesrv.properties").read_text()


def test_an_oversized_config_on_disk_starts_and_is_probed_healthy(cluster: Cluster) -> None:
    cluster.client.stop("n1")
    cluster.wait_state("n1", "stopped")
    props = cluster.root / "data/n1/namesrv.properties"
    props.write_text(props.read_text() + f"productEnvName={BOMB}\n")  # an older version's
    cluster.client.start("n1")
    cluster.wait_state("n1", "running", BOOT_S)
    stays_running(cluster, WATCH_S)
    log = (cluster.root / "data/n1/node.log").read_text(errors="replace")
    assert "event=config_oversized" in log
    conn = Conn(cluster.addr("n1"))
    try:  # an update that shrinks it is taken
        reply = conn.call(config_request(RequestCode.UPDATE_NAMESRV_CONFIG,
                                         b"productEnvName=center\n"))
        assert reply.code == ResponseCode.SUCCESS, reply.remark
    finally:
        conn.close()
    poll_until(lambda: BOMB[:100] not in props.read_text(), 10, what="the file shrunk")


@pytest.mark.parametrize("read", [False, True], ids=["not-reading", "reading"])
def test_a_flood_of_heavy_reads_leaves_the_node_running(cluster: Cluster, read: bool) -> None:
    before = cluster.node("n1")
    sent = flood(cluster.addr("n1"), config_request(RequestCode.GET_NAMESRV_CONFIG), read,
                 WATCH_S)
    after = stays_running(cluster, 1.0)
    assert sent > 1000 and after["pid"] == before["pid"]
    assert not marker(cluster).exists()


def test_planted_modules_stay_unrun_across_restarts(cluster: Cluster) -> None:
    cluster.client.restart("n1")
    poll_until(lambda: cluster.node("n1")["state"] == "running", BOOT_S, 0.1, "n1 running")
    assert not marker(cluster).exists()
