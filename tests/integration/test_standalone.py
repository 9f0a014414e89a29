"""A node run by hand, as RocketMQ users run ``mqnamesrv``: through the installed
``pynamesrv node``, from a shell that exits at once, left idle for long stretches."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from cluster.core.protocol.codes import FLAG_ONEWAY, RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.conftest import Reaper
from tests.integration.test_node import kv_get, kv_put, register, route
from tests.nodeproc import PYNAMESRV, TEST_RELEASE, Conn, ShellStartedNode, free_port, poll_until
from worker.wire import PEER_STOPPED_S

pytestmark = pytest.mark.integration

# Several times the longest a silent business worker may go unnoticed.
IDLE_S = 3 * PEER_STOPPED_S + 1


def stay_idle(seconds: float) -> None:
    """The node gets no traffic at all for ``seconds``: the condition under test, not a wait."""
    time.sleep(seconds)


def cluster_info() -> RemotingCommand:
    return RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO, version=409)


def burst(conn: Conn, count: int) -> list[int]:
    """``count`` pipelined route lookups on one connection; the reply codes by request.

    Replies are matched by opaque, as RocketMQ clients do: two business workers may
    answer a pipelined burst out of order."""
    sent = [conn.send(route(f"T{i}")) for i in range(count)]
    replies = {r.opaque: r.code for r in (conn.recv() for _ in sent)}
    assert sorted(replies) == sent
    return [replies[opaque] for opaque in sent]


@pytest.fixture
def standalone(tmp_path: Path, reaper: Reaper) -> ShellStartedNode:
    config = tmp_path / "namesrv.properties"  # single-topic registrations, as 4.9.8 takes them
    config.write_text(f"rocketmqVersion={TEST_RELEASE}\n")
    node = ShellStartedNode(tmp_path / "n", None, "--config", str(config)).start()
    reaper.track_pgid(node.pgid)
    return node


def test_node_help_through_the_installed_command() -> None:
    out = subprocess.run([PYNAMESRV, "node", "--help"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0, out.stderr
    for option in ("--port", "--data-dir", "--config", "--name", "--host", "--exit-with-parent"):
        assert option in out.stdout


def test_node_rejects_an_unknown_option_in_one_line(tmp_path: Path) -> None:
    out = subprocess.run([PYNAMESRV, "node", "--data-dir", str(tmp_path), "--bogus"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert "unrecognized arguments: --bogus" in out.stderr and "Traceback" not in out.stderr


def test_idle_node_keeps_answering_every_traffic_pattern(standalone: ShellStartedNode) -> None:
    """Idle gaps several times the worker-loss timeout, between singles, bursts and oneways."""
    first = Conn(standalone.addr)
    assert first.call(cluster_info()).code == ResponseCode.SUCCESS

    stay_idle(IDLE_S)
    assert first.call(cluster_info()).code == ResponseCode.SUCCESS  # same connection
    second = Conn(standalone.addr)
    assert burst(second, 200) == [ResponseCode.TOPIC_NOT_EXIST] * 200

    stay_idle(IDLE_S)
    oneway = kv_put("NS", "k", "v")
    oneway.flag |= FLAG_ONEWAY
    second.send(oneway)
    # a oneway write has no reply to wait for, and a read sent after it may overtake it
    # (README, "Lanes"): the value shows once the write worker has applied it
    poll_until(lambda: (second.call(kv_get("NS", "k")).ext_fields or {}).get("value") == "v",
               what="the oneway KV put to be applied")

    broker = Conn(standalone.addr)
    assert broker.call(register("IdleTopic")).code == ResponseCode.SUCCESS
    stay_idle(IDLE_S)
    assert Conn(standalone.addr).call(route("IdleTopic")).code == ResponseCode.SUCCESS
    assert burst(first, 50) == [ResponseCode.TOPIC_NOT_EXIST] * 50
    assert "business_worker_lost" not in standalone.output()
    for conn in (first, second, broker):
        conn.close()


def test_node_started_by_hand_outlives_its_shell(standalone: ShellStartedNode) -> None:
    """The shell that started it has exited; the node is orphaned, alive and answering."""
    assert standalone.alive()
    assert Conn(standalone.addr).call(cluster_info()).code == ResponseCode.SUCCESS


def test_exit_with_parent_ties_the_node_to_its_parent(tmp_path: Path, reaper: Reaper) -> None:
    log = tmp_path / "node.log"
    shell = reaper.spawn(["bash", "-c", f"'{PYNAMESRV}' node --exit-with-parent "
                          f"--port {free_port()} "
                          f"--data-dir '{tmp_path}' > '{log}' 2>&1 & echo $!; wait"],
                         stdout=subprocess.PIPE, text=True)
    assert shell.stdout is not None
    node_pid = int(shell.stdout.readline())
    poll_until(lambda: log.exists() and "boot success" in log.read_text(), timeout=30,
               what="boot line")
    shell.send_signal(signal.SIGKILL)
    shell.wait(10)
    poll_until(lambda: not _alive(node_pid), timeout=10, what="node death with its parent")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
