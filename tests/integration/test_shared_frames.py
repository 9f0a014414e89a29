"""Large frames through shared memory on a real node: one frame file per I/O worker
process, in the node's store directory; a restarted I/O worker replaces its predecessor's,
and the node leaves none behind."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from cluster.core.protocol.codes import RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.nodeproc import Conn, NodeProcess, poll_until
from tests.unit.test_large_frames import registration
from worker.controller.store_home import lmdb_dir
from worker.frame_arena import PREFIX
from worker.procs import store_dir

pytestmark = pytest.mark.integration


def frame_files(store: Path) -> list[str]:
    return sorted(p.name for p in store.glob(f"{PREFIX}*"))


def register(node: NodeProcess, topics: int, opaque: int) -> None:
    conn = Conn(node.addr, timeout=30)
    try:
        conn.send_raw(registration(topics, opaque))
        reply = conn.recv()
        assert (reply.opaque, reply.code) == (opaque, ResponseCode.SUCCESS)
        route = conn.call(RemotingCommand(code=RequestCode.GET_ROUTEINFO_BY_TOPIC, version=409,
                                          ext_fields={"topic": f"T{topics - 1:05d}"}))
        assert route.code == ResponseCode.SUCCESS
    finally:
        conn.close()


def test_frame_files_follow_the_io_workers(tmp_path: Path) -> None:
    node = NodeProcess(tmp_path / "n").start()
    try:
        assert node.proc is not None
        store = lmdb_dir(store_dir(node.data_dir))
        # the port's worker, and the large-frame worker that reads the registrations below
        port, large = sorted(node.workers("io"), key=lambda p: p.name())
        assert frame_files(store) == [f"{PREFIX}0-{port.pid}", f"{PREFIX}1-{large.pid}"]
        for opaque in range(1, 4):  # registrations of megabytes, one after another
            register(node, 10_000 + opaque, opaque)
        large.send_signal(signal.SIGKILL)
        [again] = poll_until(lambda: [p for p in node.workers("io")
                                      if p.pid not in (port.pid, large.pid)],
                             timeout=20, what="I/O worker restarted")
        poll_until(lambda: frame_files(store) == [f"{PREFIX}0-{port.pid}",
                                                  f"{PREFIX}1-{again.pid}"],
                   what="the killed worker's file replaced")
        poll_until(lambda: _registers(node), timeout=20, what="registrations served again")
    finally:
        node.stop()
    assert frame_files(store) == []  # the store is kept for a restart, its frames are not


def _registers(node: NodeProcess) -> bool:
    try:
        register(node, 12_000, 9)
    except OSError:  # the port not served yet
        return False
    return True
