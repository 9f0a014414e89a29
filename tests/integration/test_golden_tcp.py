"""The 48 Java 4.9.7 golden captures replayed in order over TCP against a fresh node.

Brokers keep one connection each (as real brokers do), admin requests share one.
A oneway capture is sent as a normal request so the next step can rely on its
effect (requests of different connections are processed concurrently).
"""

from __future__ import annotations

import dataclasses

import pytest

from cluster.core.protocol.codes import FLAG_ONEWAY
from cluster.core.protocol.command import RemotingCommand
from tests.golden_replay import needs_golden, replay_all
from tests.nodeproc import Conn, NodeProcess

pytestmark = [pytest.mark.integration, needs_golden]


def test_golden_replay_over_tcp(node: NodeProcess) -> None:
    conns: dict[str, Conn] = {}

    def send(cmd: RemotingCommand, channel: str) -> RemotingCommand | None:
        conn = conns.setdefault(channel, Conn(node.addr))
        if cmd.is_oneway:
            conn.call(dataclasses.replace(cmd, flag=cmd.flag & ~FLAG_ONEWAY))
            return None
        return conn.call(cmd)

    try:
        failures = replay_all(send)
    finally:
        for c in conns.values():
            c.close()
    assert not failures, "\n".join(failures)
