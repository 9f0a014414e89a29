"""A business worker's first hello reaches an I/O worker that binds after it connects.

Business workers start before the I/O workers, and their DEALERs are IMMEDIATE: a message
sent while no connection exists is dropped, so the first hello used to be lost and a fresh
node's first requests waited for the next one (``wire.HEARTBEAT_S``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from worker.business.process import connected


@pytest.fixture()
def zctx() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


def test_the_first_hello_waits_for_an_io_worker_that_binds_later(
        zctx: zmq.Context[zmq.Socket[bytes]], tmp_path: Path) -> None:
    endpoint = f"ipc://{tmp_path}/io-0.ipc"
    dealer = zctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.IMMEDIATE, 1)
    dealer.setsockopt(zmq.RECONNECT_IVL, 10)
    dealer.connect(endpoint)
    assert not connected(dealer, time.monotonic())
    with pytest.raises(zmq.Again):  # what a hello sent now would meet: dropped
        dealer.send(b"lost", zmq.NOBLOCK)

    router = zctx.socket(zmq.ROUTER)
    router.bind(endpoint)
    assert connected(dealer, time.monotonic() + 10)
    dealer.send(b"hello", zmq.NOBLOCK)
    assert router.poll(10_000)
    assert router.recv_multipart()[1:] == [b"hello"]


def test_an_io_worker_that_never_listens_bounds_the_wait(
        zctx: zmq.Context[zmq.Socket[bytes]], tmp_path: Path) -> None:
    dealer = zctx.socket(zmq.DEALER)
    dealer.setsockopt(zmq.IMMEDIATE, 1)
    dealer.connect(f"ipc://{tmp_path}/nobody.ipc")
    assert not connected(dealer, time.monotonic() + 0.05)  # False, not a hang
