"""A connection pipelining thousands of route lookups is read a turn at a time
(``worker.io.connection.TURN_BYTES``): each of its lookups is answered, in the order sent,
and the other connections are served meanwhile."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from cluster.core.protocol.codes import ResponseCode
from cluster.core.protocol.frame import encode_command
from tests.integration.test_node import route
from tests.nodeproc import Conn, NodeProcess

pytestmark = pytest.mark.integration

PIPELINED = 6000  # 137 bytes each, 822,000 in all: about a hundred turns


def test_a_deep_pipeline_is_answered_whole_and_in_order_beside_another_client(tmp_path: Path
                                                                              ) -> None:
    node = NodeProcess(tmp_path / "n").start()
    try:
        deep, other = Conn(node.addr, timeout=30), Conn(node.addr)
        assert deep.call(route("Missing")).code == ResponseCode.TOPIC_NOT_EXIST  # learned
        burst = []
        for opaque in range(1000, 1000 + PIPELINED):
            cmd = route("Missing")
            cmd.opaque = opaque
            burst.append(encode_command(cmd))
        sender = threading.Thread(target=deep.send_raw, args=(b"".join(burst),), daemon=True)
        sender.start()  # the node stops reading while its replies cannot be written: read them
        others = [other.call(route("Missing")).code for _ in range(20)]
        replies = [deep.recv() for _ in range(PIPELINED)]
        sender.join(30)
        assert not sender.is_alive()
        assert [r.opaque for r in replies] == list(range(1000, 1000 + PIPELINED))
        assert {r.code for r in replies} == {ResponseCode.TOPIC_NOT_EXIST}
        assert others == [ResponseCode.TOPIC_NOT_EXIST] * 20
        assert deep.call(route("Missing")).code == ResponseCode.TOPIC_NOT_EXIST
    finally:
        node.stop()
