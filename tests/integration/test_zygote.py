"""A node's workers are forked by its zygote (no interpreter started per worker): first
starts and restarts alike; a node whose zygote died cannot start a worker any more and ends
as a crash, leaving no worker behind; `pynamesrv up` becomes ready through it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.conftest import Reaper
from tests.nodeproc import PYNAMESRV, ROOT, Conn, NodeProcess, free_port, poll_until

pytestmark = pytest.mark.integration


def _zygote(node: NodeProcess) -> psutil.Process:
    [z] = [p for p in node.children() if p.name() == "pns-zygote"]
    return z


def _answers(node: NodeProcess) -> bool:
    conn = Conn(node.addr)
    try:
        reply = conn.call(RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO, version=409))
        return reply.code == ResponseCode.SUCCESS
    finally:
        conn.close()


def test_workers_are_forked_by_the_zygote_also_when_restarted(tmp_path: Path) -> None:
    node = NodeProcess(tmp_path / "n").start()
    try:
        zygote = _zygote(node)
        assert zygote.ppid() == node.proc.pid if node.proc else False
        workers = node.workers("io") + node.workers("biz")
        assert len(workers) == 4 and all(w.ppid() == zygote.pid for w in workers)
        before = {w.pid for w in node.workers("biz")}
        node.workers("biz")[0].kill()
        again = poll_until(lambda: [w for w in node.workers("biz") if w.pid not in before],
                           20.0, 0.05, "the worker restarted")
        assert again[0].ppid() == zygote.pid
        assert poll_until(lambda: _answers(node), 20.0, 0.1, "the node answers")
    finally:
        err = node.stop()
    assert "Traceback" not in err, err[-2000:]


def test_a_node_whose_zygote_died_ends_as_a_crash(tmp_path: Path) -> None:
    node = NodeProcess(tmp_path / "n").start()
    try:
        workers = node.workers("io") + node.workers("biz")
        os.kill(_zygote(node).pid, signal.SIGKILL)  # its workers die with it
        assert node.proc is not None
        code = node.proc.wait(30)
        assert code == 1
        assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
    finally:
        err = node.stop()
    assert "event=zygote_gone" in err, err[-2000:]


def test_up_becomes_ready_through_the_cli(tmp_path: Path, reaper: Reaper) -> None:
    control, *ports = (free_port() for _ in range(4))
    cfg = tmp_path / "cluster.yaml"
    cfg.write_text(f"control: tcp://127.0.0.1:{control}\ndata_dir: data\nnodes:\n" + "".join(
        f"  - name: n{i}\n    port: {port}\n" for i, port in enumerate(ports, 1)))
    reaper.track_marker(str(tmp_path))
    with open(tmp_path / "up.log", "wb") as log:
        up = reaper.spawn([PYNAMESRV, "up", "-c", str(cfg)], cwd=ROOT, stdout=log,
                          stderr=subprocess.STDOUT)

    def states() -> list[str]:
        done = subprocess.run([PYNAMESRV, "status", "--json", "-c", str(cfg)],
                              capture_output=True, text=True, timeout=30)
        if done.returncode != 0:
            assert up.poll() is None, (tmp_path / "up.log").read_text()
            return []
        return [n["state"] for n in json.loads(done.stdout)["nodes"]]

    poll_until(lambda: states() == ["running"] * 3, 90.0, 0.1, "every node running")
    assert "cluster ready" in (tmp_path / "up.log").read_text()
    stopped = subprocess.run([PYNAMESRV, "stop", "-c", str(cfg)], capture_output=True,
                             text=True, timeout=60)
    assert stopped.returncode == 0, stopped.stderr
    assert up.wait(60) == 0
    assert sys.executable  # the CLI under test is this environment's
