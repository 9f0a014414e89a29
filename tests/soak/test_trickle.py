"""A standalone node serving a slow trickle with random idle gaps: every request answered.

Short form in every full run; the long form is ``scripts/test.sh -m soak --soak-seconds 600``.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path

import pytest

from cluster.core.protocol.codes import FLAG_ONEWAY, RequestCode, ResponseCode
from cluster.core.protocol.command import RemotingCommand
from tests.conftest import Reaper
from tests.integration.test_node import kv_get, kv_put, register, route
from tests.nodeproc import TEST_RELEASE, Conn, ShellStartedNode

pytestmark = pytest.mark.soak

SEED = 20261124
# seconds of silence before each step: mostly short, now and then longer than the
# time after which a stopped business worker is bypassed
GAPS = (0.0, 0.01, 0.2, 1.0, 4.0, 7.0)
GAP_WEIGHTS = (20, 20, 20, 15, 10, 5)


class Trickle:
    """One random step at a time against a node; counts what was sent and answered."""

    def __init__(self, addr: str, rng: random.Random) -> None:
        self.addr = addr
        self.rng = rng
        self.conn = Conn(addr)
        self.done: Counter[str] = Counter()
        self.step_no = 0

    def step(self) -> None:
        self.step_no += 1
        kind = self.rng.choice(("single", "fresh", "burst", "oneway", "register"))
        getattr(self, f"_{kind}")()
        self.done[kind] += 1

    def _single(self) -> None:
        self._expect(self.conn.call(route("Soak")), ResponseCode.SUCCESS,
                     ResponseCode.TOPIC_NOT_EXIST)

    def _fresh(self) -> None:
        conn = Conn(self.addr)
        try:
            info = RemotingCommand(code=RequestCode.GET_BROKER_CLUSTER_INFO, version=409)
            self._expect(conn.call(info), ResponseCode.SUCCESS)
        finally:
            conn.close()

    def _burst(self) -> None:
        sent = {self.conn.send(route(f"S{i}")) for i in range(self.rng.randint(10, 200))}
        got = {self.conn.recv().opaque for _ in sent}
        assert got == sent, f"step {self.step_no}: burst answered {len(got)}/{len(sent)}"

    def _oneway(self) -> None:
        value = str(self.step_no)
        cmd = kv_put("SOAK", "k", value)
        cmd.flag |= FLAG_ONEWAY
        self.conn.send(cmd)
        reply = self.conn.call(kv_get("SOAK", "k"))
        self._expect(reply, ResponseCode.SUCCESS)
        assert reply.ext_fields["value"] == value, f"step {self.step_no}: oneway not applied"

    def _register(self) -> None:
        self._expect(self.conn.call(register("Soak")), ResponseCode.SUCCESS)

    def _expect(self, reply: RemotingCommand, *codes: int) -> None:
        assert reply.code in codes, f"step {self.step_no}: code {reply.code} {reply.remark!r}"


def test_trickle_with_idle_gaps(tmp_path: Path, reaper: Reaper, soak_seconds: float) -> None:
    config = tmp_path / "namesrv.properties"  # single-topic registrations, as 4.9.8 takes them
    config.write_text(f"rocketmqVersion={TEST_RELEASE}\n")
    node = ShellStartedNode(tmp_path / "n", None, "--config", str(config)).start()
    reaper.track_pgid(node.pgid)
    rng = random.Random(SEED)
    trickle = Trickle(node.addr, rng)
    deadline = time.monotonic() + soak_seconds
    idle_total = 0.0
    while time.monotonic() < deadline:
        gap = min(rng.choices(GAPS, GAP_WEIGHTS)[0], max(0.0, deadline - time.monotonic()))
        time.sleep(gap)  # the idle gap is the traffic pattern under test
        idle_total += gap
        trickle.step()
    assert trickle.step_no > 0 and idle_total > soak_seconds / 3
    assert node.alive() and "business_worker_lost" not in node.output(), node.output()[-2000:]
    node.stop()
